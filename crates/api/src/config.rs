//! The operator config: named targets. With no config file, one target,
//! `lake`, is the embedded lake rooted at `./lake`.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

pub const DEFAULT_TARGET: &str = "lake";
pub const DEFAULT_LAKE_ROOT: &str = "./lake";

/// The operator config, checked: every target names exactly one backend.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub targets: BTreeMap<String, Target>,
    /// The target for schemas that name none; defaults to the only target, or `lake`.
    pub default_target: Option<String>,
}

/// The config file as written (what serde reads; `Config::parse` checks it).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ConfigFile {
    #[serde(default)]
    targets: BTreeMap<String, TargetFile>,
    #[serde(default)]
    default_target: Option<String>,
}

/// A target as written: one of `lake:`, `databricks:` and `sparkConnect:`, beside its allow-lists.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct TargetFile {
    #[serde(default)]
    lake: Option<LakeTarget>,
    #[serde(default)]
    databricks: Option<DatabricksTarget>,
    #[serde(default)]
    spark_connect: Option<SparkConnectTarget>,
    #[serde(default = "any")]
    namespaces: Vec<String>,
    #[serde(default = "any")]
    schemas: Vec<String>,
    #[serde(default)]
    max_concurrent_applies: Option<usize>,
    #[serde(default)]
    default_schema_mode: delta_operator_core::model::SchemaMode,
    #[serde(default)]
    hand_off: Option<crate::spec::crd::HandOffSpec>,
    #[serde(default)]
    maintenance: Option<crate::spec::crd::MaintenanceSpec>,
}

/// One backend a target can name.
#[derive(Debug, Clone, PartialEq)]
pub enum TargetBackend {
    /// The embedded lake backend.
    Lake(LakeTarget),
    /// A Databricks workspace (Unity Catalog through a SQL warehouse).
    Databricks(DatabricksTarget),
    /// OSS Delta tables under a root, changed by a Spark Connect server.
    SparkConnect(SparkConnectTarget),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    pub backend: TargetBackend,
    /// Namespaces whose resources may use this target (patterns, `*` matches any run of characters).
    pub namespaces: Vec<String>,
    /// `catalog` or `catalog.schema` patterns this target may touch.
    pub schemas: Vec<String>,
    /// How many applies (of different tables) the operator runs at once on this target;
    /// one table never has two. Also bounds the apply statements in flight on a warehouse.
    pub max_concurrent_applies: usize,
    /// The mode of a DeltaSchema on this target whose spec names none (`additive` unless set).
    pub default_schema_mode: delta_operator_core::model::SchemaMode,
    /// Parts of every table on this target another tool owns (`handOff:`).
    pub hand_off: Option<crate::spec::crd::HandOffSpec>,
    /// The maintenance of every table on this target, under its schema's and
    /// its own (`maintenance:`, field by field).
    pub maintenance: Option<crate::spec::crd::MaintenanceSpec>,
}

/// Applies at once per target, unless `maxConcurrentApplies` says otherwise: a few
/// warehouse statements or lake rewrites in flight, not a flood.
pub const DEFAULT_CONCURRENT_APPLIES: usize = 4;
/// The most `maxConcurrentApplies` may say.
pub const MAX_CONCURRENT_APPLIES: usize = 64;

impl TargetFile {
    fn checked(self, name: &str) -> Result<Target, String> {
        let backend = match (self.lake, self.databricks, self.spark_connect) {
            (Some(l), None, None) => TargetBackend::Lake(l),
            (None, Some(d), None) => TargetBackend::Databricks(d),
            (None, None, Some(s)) => TargetBackend::SparkConnect(s.checked(name)?),
            (None, None, None) => {
                return Err(format!(
                    "target '{name}' names no backend; add `lake: {{root: ./lake}}`, `databricks: {{host: …, warehouseId: …}}` or `sparkConnect: {{url: sc://…, root: …}}`"
                ));
            }
            _ => {
                return Err(format!(
                    "target '{name}' names two backends; keep one of lake, databricks and sparkConnect"
                ));
            }
        };
        let max_concurrent_applies = match self.max_concurrent_applies {
            None => DEFAULT_CONCURRENT_APPLIES,
            Some(n @ 1..=MAX_CONCURRENT_APPLIES) => n,
            Some(n) => {
                return Err(format!(
                    "target '{name}': maxConcurrentApplies is {n}; give 1 to {MAX_CONCURRENT_APPLIES} (default {DEFAULT_CONCURRENT_APPLIES})"
                ));
            }
        };
        if let Some(m) = &self.maintenance {
            let mut errors = Vec::new();
            crate::spec::maintenance::check(m, "maintenance", None, &mut errors);
            if let Some(e) = errors.first() {
                return Err(format!(
                    "target '{name}': {}: {} ({})",
                    e.path, e.message, e.fix
                ));
            }
        }
        Ok(Target {
            backend,
            namespaces: self.namespaces,
            schemas: self.schemas,
            max_concurrent_applies,
            default_schema_mode: self.default_schema_mode,
            hand_off: self.hand_off,
            maintenance: self.maintenance,
        })
    }
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
    /// How long a read-only statement may run before it is cancelled (default 300).
    #[serde(default)]
    pub read_budget_seconds: Option<u64>,
    /// The workspace folder of the table locks every applier of this target
    /// takes (default `/Shared/.delta-operator/locks`): the CLI and the operator
    /// must name the same one.
    #[serde(default)]
    pub lock_folder: Option<String>,
}

/// A Spark Connect target: OSS Delta tables at `<root>/<catalog>/<schema>/<table>`
/// (the lake's layout), read by the operator with delta-rs and changed by SQL
/// statements on the server, so no table data flows through the operator.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SparkConnectTarget {
    /// `sc://host:port`, with connection parameters after `/;` (`use_ssl=true`,
    /// `user_id=…`); never the token (see `tokenEnv`, `tokenFile`).
    pub url: String,
    /// Where the tables live, as the operator reads them: a local path,
    /// file:// or s3://bucket/prefix (with the usual AWS_* environment).
    pub root: String,
    /// The same root as the Spark cluster spells it (default: `root`, with
    /// `s3://` written `s3a://`).
    #[serde(default)]
    pub spark_root: Option<String>,
    /// The bearer token, from an environment variable…
    #[serde(default)]
    pub token_env: Option<String>,
    /// …or a file (a mounted Secret). Neither: the server needs none.
    #[serde(default)]
    pub token_file: Option<String>,
    /// Session settings sent before the first statement (`spark.sql.shuffle.partitions: "64"`).
    #[serde(default)]
    pub conf: BTreeMap<String, String>,
    /// How long a read-only statement may run before it is interrupted (default 300).
    #[serde(default)]
    pub read_budget_seconds: Option<u64>,
}

impl SparkConnectTarget {
    fn checked(self, name: &str) -> Result<Self, String> {
        let at = format!("target '{name}': sparkConnect");
        if !self.url.starts_with("sc://") {
            return Err(format!(
                "{at}.url '{}' is not a Spark Connect URL; write sc://host:15002",
                self.url
            ));
        }
        if self.url.to_ascii_lowercase().contains("token=") {
            return Err(format!(
                "{at}.url carries a token; a secret never goes in the config: remove it from the URL and name it with tokenEnv or tokenFile"
            ));
        }
        if self.root.trim().is_empty() {
            return Err(format!(
                "{at}.root is empty; give the folder or s3:// prefix the tables live under"
            ));
        }
        if self.token_env.is_some() && self.token_file.is_some() {
            return Err(format!("{at} names both tokenEnv and tokenFile; keep one"));
        }
        if let Some(k) = self.conf.keys().find(|k| !k.starts_with("spark.")) {
            return Err(format!(
                "{at}.conf '{k}' is not a Spark setting; session settings start with spark."
            ));
        }
        Ok(self)
    }

    /// Where the token comes from, if the server needs one.
    pub fn token(&self) -> Option<SecretSource> {
        match (&self.token_env, &self.token_file) {
            (Some(e), _) => Some(SecretSource::Env(e.clone())),
            (None, Some(f)) => Some(SecretSource::File(f.clone())),
            (None, None) => None,
        }
    }

    /// The root as Spark spells it, without a trailing slash.
    pub fn spark_root(&self) -> String {
        let r = match &self.spark_root {
            Some(r) => r.clone(),
            None => match self.root.strip_prefix("s3://") {
                Some(rest) => format!("s3a://{rest}"),
                None => self.root.clone(),
            },
        };
        r.trim_end_matches('/').to_string()
    }
}

/// Where the credential comes from: a personal access token, or a service
/// principal's OAuth client id and secret. Secrets are named by environment
/// variable or file (a mounted Kubernetes Secret), never written in the config.
/// Written as `auth: {tokenEnv: …}` and so on (`AuthFile`); naming none of
/// them reads the DATABRICKS_* variables.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(try_from = "AuthFile")]
pub enum DatabricksAuth {
    /// DATABRICKS_TOKEN, or DATABRICKS_CLIENT_ID and DATABRICKS_CLIENT_SECRET.
    #[default]
    Environment,
    Token(SecretSource),
    OAuth {
        client_id: ClientId,
        client_secret: SecretSource,
    },
}

/// Where a secret is read from.
#[derive(Debug, Clone, PartialEq)]
pub enum SecretSource {
    /// An environment variable's name.
    Env(String),
    /// A file's path (a mounted Secret).
    File(String),
}

/// An OAuth client id: not a secret, so it may be written in the config.
#[derive(Debug, Clone, PartialEq)]
pub enum ClientId {
    Literal(String),
    /// An environment variable's name.
    Env(String),
}

/// `auth:` as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct AuthFile {
    #[serde(default)]
    token_env: Option<String>,
    #[serde(default)]
    token_file: Option<String>,
    #[serde(default)]
    client_id: Option<String>,
    #[serde(default)]
    client_id_env: Option<String>,
    #[serde(default)]
    client_secret_env: Option<String>,
    #[serde(default)]
    client_secret_file: Option<String>,
}

/// One of an environment variable and a file, or neither.
fn secret_source(
    env: Option<String>,
    file: Option<String>,
    keys: &str,
) -> Result<Option<SecretSource>, String> {
    match (env, file) {
        (Some(_), Some(_)) => Err(format!("auth names both {keys}; keep one")),
        (Some(e), None) => Ok(Some(SecretSource::Env(e))),
        (None, Some(f)) => Ok(Some(SecretSource::File(f))),
        (None, None) => Ok(None),
    }
}

impl TryFrom<AuthFile> for DatabricksAuth {
    type Error = String;

    fn try_from(a: AuthFile) -> Result<Self, String> {
        let token = secret_source(a.token_env, a.token_file, "tokenEnv and tokenFile")?;
        let client_id = match (a.client_id, a.client_id_env) {
            (Some(_), Some(_)) => {
                return Err("auth names both clientId and clientIdEnv; keep one".into());
            }
            (Some(id), None) => Some(ClientId::Literal(id)),
            (None, Some(e)) => Some(ClientId::Env(e)),
            (None, None) => None,
        };
        let secret = secret_source(
            a.client_secret_env,
            a.client_secret_file,
            "clientSecretEnv and clientSecretFile",
        )?;
        match (token, client_id, secret) {
            (Some(_), Some(_), _) | (Some(_), _, Some(_)) => Err(
                "auth names a token and an OAuth client; keep one (a token, or clientId with a client secret)"
                    .into(),
            ),
            (Some(t), None, None) => Ok(DatabricksAuth::Token(t)),
            (None, Some(client_id), Some(client_secret)) => Ok(DatabricksAuth::OAuth {
                client_id,
                client_secret,
            }),
            (None, Some(_), None) => Err(
                "auth names an OAuth client id but no clientSecretEnv or clientSecretFile".into(),
            ),
            (None, None, Some(_)) => {
                Err("auth names an OAuth client secret but no clientId or clientIdEnv".into())
            }
            (None, None, None) => Ok(DatabricksAuth::Environment),
        }
    }
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
            backend: TargetBackend::Lake(LakeTarget {
                root: DEFAULT_LAKE_ROOT.into(),
            }),
            namespaces: any(),
            schemas: any(),
            max_concurrent_applies: DEFAULT_CONCURRENT_APPLIES,
            default_schema_mode: Default::default(),
            hand_off: None,
            maintenance: None,
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
        let c = Config::parse(&text).map_err(|message| ConfigError::Invalid {
            file: file.clone(),
            message,
        })?;
        if let Some(d) = &c.default_target {
            c.target(d)?;
        }
        Ok(c)
    }

    /// A config file's text, checked.
    pub fn parse(text: &str) -> Result<Self, String> {
        let f: ConfigFile = serde_saphyr::from_str(text).map_err(|e| e.to_string())?;
        let mut targets = BTreeMap::new();
        for (name, t) in f.targets {
            let checked = t.checked(&name)?;
            targets.insert(name, checked);
        }
        Ok(Config {
            targets,
            default_target: f.default_target,
        })
    }

    pub fn target(&self, name: &str) -> Result<&Target, ConfigError> {
        self.targets
            .get(name)
            .ok_or_else(|| ConfigError::UnknownTarget {
                name: name.to_string(),
                known: self.targets.keys().cloned().collect::<Vec<_>>().join(", "),
            })
    }

    /// Whether the backend of `target` (None: the default target) cannot turn column
    /// mapping on for a name that needs it (`NEEDS_COLUMN_MAPPING`): the lake cannot, so
    /// `plan` refuses such a name there (`NameNeedsColumnMapping`), and `validate` and
    /// admission refuse it already. An unknown target: false (it is refused elsewhere).
    pub fn cannot_map_names(&self, target: Option<&str>) -> bool {
        self.is_lake(target)
    }

    /// Whether the backend of `target` (None: the default target) is the lake, whose
    /// engine (DataFusion in delta-rs) lacks some functions Delta has: `plan`, `validate`
    /// and admission refuse a CHECK or `using:` calling one (`functions_the_lake_lacks`).
    /// An unknown target: false (it is refused elsewhere).
    pub fn is_lake(&self, target: Option<&str>) -> bool {
        let name = target
            .map(str::to_string)
            .unwrap_or_else(|| self.default_target_name());
        self.target(&name)
            .is_ok_and(|t| matches!(t.backend, TargetBackend::Lake(_)))
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
        let c = Config::parse(text).expect("parses");
        let TargetBackend::Databricks(d) = &c.targets["dbx"].backend else {
            panic!("dbx is a databricks target: {:?}", c.targets["dbx"]);
        };
        assert_eq!(d.warehouse_id.as_deref(), Some("abc"));
        assert_eq!(
            d.auth,
            Some(DatabricksAuth::Token(SecretSource::Env("MY_TOKEN".into())))
        );
        assert!(matches!(c.targets["lake"].backend, TargetBackend::Lake(_)));
        assert!(
            Config::parse("targets:\n  x:\n    databricks: {hots: y}\n").is_err(),
            "unknown keys are refused"
        );
        let none = Config::parse("targets:\n  x:\n    schemas: [a]\n").unwrap_err();
        assert!(none.contains("target 'x' names no backend"), "{none}");
        let two =
            Config::parse("targets:\n  x: {lake: {root: l}, databricks: {host: h}}\n").unwrap_err();
        assert!(two.contains("target 'x' names two backends"), "{two}");
    }

    #[test]
    fn auth_names_one_credential() {
        let auth = |a: &str| {
            Config::parse(&format!(
                "targets:\n  x:\n    databricks: {{host: h, warehouseId: w, auth: {a}}}\n"
            ))
            .map(|c| match &c.targets["x"].backend {
                TargetBackend::Databricks(d) => d.auth.clone(),
                other => panic!("{other:?}"),
            })
        };
        assert_eq!(
            auth("{clientIdEnv: ID, clientSecretFile: /s}"),
            Ok(Some(DatabricksAuth::OAuth {
                client_id: ClientId::Env("ID".into()),
                client_secret: SecretSource::File("/s".into()),
            }))
        );
        assert_eq!(auth("{}"), Ok(Some(DatabricksAuth::Environment)));
        for (bad, says) in [
            ("{clientId: a}", "no clientSecretEnv or clientSecretFile"),
            ("{clientSecretEnv: S}", "no clientId or clientIdEnv"),
            (
                "{tokenEnv: T, tokenFile: /t}",
                "both tokenEnv and tokenFile",
            ),
            (
                "{tokenEnv: T, clientId: a, clientSecretEnv: S}",
                "a token and an OAuth client",
            ),
        ] {
            let e = auth(bad).expect_err(bad);
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn concurrent_applies_default_and_bounds() {
        let limit = |extra: &str| {
            Config::parse(&format!("targets:\n  x:\n    lake: {{root: l}}\n{extra}"))
                .map(|c| c.targets["x"].max_concurrent_applies)
        };
        assert_eq!(limit(""), Ok(DEFAULT_CONCURRENT_APPLIES));
        assert_eq!(limit("    maxConcurrentApplies: 16\n"), Ok(16));
        for bad in ["0", "65"] {
            let e = limit(&format!("    maxConcurrentApplies: {bad}\n")).unwrap_err();
            assert!(
                e.contains(&format!(
                    "target 'x': maxConcurrentApplies is {bad}; give 1 to 64"
                )),
                "{e}"
            );
        }
    }

    #[test]
    fn spark_connect_targets_parse_and_bad_ones_name_the_field() {
        let parse = |t: &str| {
            Config::parse(&format!("targets:\n  sc:\n    sparkConnect: {t}\n")).map(|c| {
                match &c.targets["sc"].backend {
                    TargetBackend::SparkConnect(s) => s.clone(),
                    other => panic!("{other:?}"),
                }
            })
        };
        let s = parse("{url: 'sc://spark:15002/;use_ssl=true', root: 's3://b/lake/', tokenFile: /t, conf: {spark.sql.shuffle.partitions: '8'}}").expect("parses");
        assert_eq!(s.token(), Some(SecretSource::File("/t".into())));
        assert_eq!(s.spark_root(), "s3a://b/lake", "s3:// as Spark spells it");
        assert_eq!(s.conf["spark.sql.shuffle.partitions"], "8");
        let local =
            parse("{url: 'sc://localhost', root: /data/lake/, sparkRoot: 'file:/data/lake/'}")
                .unwrap();
        assert_eq!(local.spark_root(), "file:/data/lake");
        assert_eq!(local.token(), None);
        for (bad, says) in [
            (
                "{url: 'http://x', root: r}",
                "sparkConnect.url 'http://x' is not a Spark Connect URL",
            ),
            (
                "{url: 'sc://x/;token=abc', root: r}",
                "never goes in the config",
            ),
            ("{url: 'sc://x', root: ''}", "sparkConnect.root is empty"),
            (
                "{url: 'sc://x', root: r, tokenEnv: A, tokenFile: /b}",
                "both tokenEnv and tokenFile",
            ),
            (
                "{url: 'sc://x', root: r, conf: {shuffle: '1'}}",
                "'shuffle' is not a Spark setting",
            ),
            ("{url: 'sc://x', root: r, tokn: x}", "unknown field"),
        ] {
            let e = parse(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
            assert!(!e.contains("abc"), "the token is never echoed: {e}");
        }
        let two = Config::parse(
            "targets:\n  x:\n    lake: {root: l}\n    sparkConnect: {url: 'sc://x', root: r}\n",
        )
        .unwrap_err();
        assert!(two.contains("names two backends"), "{two}");
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
