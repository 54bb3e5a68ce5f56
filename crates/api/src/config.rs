//! The operator config: named targets. With no config file, one target,
//! `lake`, is the embedded lake rooted at `./lake`.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

pub const DEFAULT_TARGET: &str = "lake";
pub const DEFAULT_LAKE_ROOT: &str = "./lake";

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub targets: BTreeMap<String, Target>,
    /// The target for schemas that name none; defaults to the only target, or `lake`.
    #[serde(default)]
    pub default_target: Option<String>,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Target {
    /// The embedded lake backend.
    #[serde(default)]
    pub lake: Option<LakeTarget>,
    /// A Databricks workspace (Unity Catalog through a SQL warehouse).
    #[serde(default)]
    pub databricks: Option<DatabricksTarget>,
    /// Namespaces whose resources may use this target (patterns, `*` matches any run of characters).
    #[serde(default = "any")]
    pub namespaces: Vec<String>,
    /// `catalog` or `catalog.schema` patterns this target may touch.
    #[serde(default = "any")]
    pub schemas: Vec<String>,
}

impl Target {
    /// Whether the target may touch this schema (its `schemas:` allow-list:
    /// `catalog` or `catalog.schema` patterns).
    pub fn allows_schema(&self, schema: &delta_operator_core::model::SchemaRef) -> bool {
        let full = schema.to_string();
        self.schemas.iter().any(|p| {
            if p.contains('.') {
                matches(p, &full)
            } else {
                matches(p, &schema.catalog)
            }
        })
    }
}

fn any() -> Vec<String> {
    vec!["*".into()]
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LakeTarget {
    /// A local path or file:// URL.
    pub root: String,
}

/// A Databricks target. What is omitted comes from Databricks' usual
/// environment variables (DATABRICKS_HOST, DATABRICKS_WAREHOUSE_ID,
/// DATABRICKS_TOKEN or DATABRICKS_CLIENT_ID + DATABRICKS_CLIENT_SECRET).
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DatabricksTarget {
    /// `https://<workspace>` (a bare host gets https).
    #[serde(default)]
    pub host: Option<String>,
    /// The SQL warehouse every statement runs on.
    #[serde(default)]
    pub warehouse_id: Option<String>,
    #[serde(default)]
    pub auth: Option<DatabricksAuth>,
    /// How long a stopped warehouse may take to start (default 300).
    #[serde(default)]
    pub warehouse_start_timeout_seconds: Option<u64>,
}

/// Where the credential comes from: a personal access token, or a service
/// principal's OAuth client id and secret. Secrets are named by environment
/// variable or file (a mounted Kubernetes Secret), never written in the config.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DatabricksAuth {
    #[serde(default)]
    pub token_env: Option<String>,
    #[serde(default)]
    pub token_file: Option<String>,
    #[serde(default)]
    pub client_id: Option<String>,
    #[serde(default)]
    pub client_id_env: Option<String>,
    #[serde(default)]
    pub client_secret_env: Option<String>,
    #[serde(default)]
    pub client_secret_file: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("config {file}: {message}")]
    Invalid { file: String, message: String },
    #[error("unknown target '{name}'; the config names: {known}")]
    UnknownTarget { name: String, known: String },
}

impl Default for Config {
    fn default() -> Self {
        let lake = Target {
            lake: Some(LakeTarget {
                root: DEFAULT_LAKE_ROOT.into(),
            }),
            databricks: None,
            namespaces: any(),
            schemas: any(),
        };
        Config {
            targets: BTreeMap::from([(DEFAULT_TARGET.to_string(), lake)]),
            default_target: None,
        }
    }
}

impl Config {
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Invalid {
            file: file.clone(),
            message: e.to_string(),
        })?;
        let c: Config = serde_saphyr::from_str(&text).map_err(|e| ConfigError::Invalid {
            file: file.clone(),
            message: e.to_string(),
        })?;
        for (name, t) in &c.targets {
            match (&t.lake, &t.databricks) {
                (None, None) => {
                    return Err(ConfigError::Invalid {
                        file,
                        message: format!(
                            "target '{name}' names no backend; add `lake: {{root: ./lake}}` or `databricks: {{host: …, warehouseId: …}}`"
                        ),
                    });
                }
                (Some(_), Some(_)) => {
                    return Err(ConfigError::Invalid {
                        file,
                        message: format!(
                            "target '{name}' names two backends; keep one of lake and databricks"
                        ),
                    });
                }
                _ => {}
            }
        }
        if let Some(d) = &c.default_target {
            c.target(d)?;
        }
        Ok(c)
    }

    pub fn target(&self, name: &str) -> Result<&Target, ConfigError> {
        self.targets
            .get(name)
            .ok_or_else(|| ConfigError::UnknownTarget {
                name: name.to_string(),
                known: self.targets.keys().cloned().collect::<Vec<_>>().join(", "),
            })
    }

    /// The target used when none is named.
    pub fn default_target_name(&self) -> String {
        match (&self.default_target, self.targets.len()) {
            (Some(d), _) => d.clone(),
            (None, 1) => self.targets.keys().next().expect("one target").clone(),
            _ => DEFAULT_TARGET.to_string(),
        }
    }
}

/// Glob match with `*` only.
pub fn matches(pattern: &str, s: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern.eq_ignore_ascii_case(s),
        Some((pre, rest)) => {
            let s_l = s.to_lowercase();
            let pre = pre.to_lowercase();
            if !s_l.starts_with(&pre) {
                return false;
            }
            let tail = &s[pre.len()..];
            (0..=tail.len())
                .filter(|i| tail.is_char_boundary(*i))
                .any(|i| matches(rest, &tail[i..]))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn databricks_targets_parse() {
        let text = "targets:\n  dbx:\n    databricks: {host: https://x.cloud.databricks.com, warehouseId: abc, auth: {tokenEnv: MY_TOKEN}}\n    schemas: [\"dev_*\"]\n  lake: {lake: {root: ./lake}}\ndefaultTarget: dbx\n";
        let c: Config = serde_saphyr::from_str(text).expect("parses");
        let d = c.targets["dbx"].databricks.as_ref().expect("databricks");
        assert_eq!(d.warehouse_id.as_deref(), Some("abc"));
        assert_eq!(
            d.auth.as_ref().and_then(|a| a.token_env.as_deref()),
            Some("MY_TOKEN")
        );
        assert!(c.targets["lake"].lake.is_some());
        assert!(
            serde_saphyr::from_str::<Config>("targets:\n  x:\n    databricks: {hots: y}\n")
                .is_err(),
            "unknown keys are refused"
        );
    }

    #[test]
    fn globs() {
        assert!(matches("*", "anything"));
        assert!(matches("dev_*", "dev_sales"));
        assert!(!matches("dev_*", "prod_sales"));
        assert!(matches("main.sales", "MAIN.sales"));
        assert!(matches("a*c*e", "abcde"));
    }
}
