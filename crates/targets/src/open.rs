//! A config target turned into its backend. The config file's types (and the
//! secrets they name) are read here, so no backend crate depends on the API
//! crate: each backend takes a configuration of its own (`ClientConfig` for
//! Databricks, `SparkConnectConfig` for Spark Connect, a root for the lake).

use std::time::Duration;

use delta_operator_api::config::{
    ClientId, DatabricksAuth, DatabricksTarget, SecretSource, SparkConnectTarget,
};
use delta_operator_backend::BackendError;
use delta_operator_databricks::DatabricksBackend;
use delta_operator_databricks::auth::{Credentials, Secret};
use delta_operator_databricks::client::ClientConfig;
use delta_operator_lake::LakeBackend;
use delta_operator_spark::{SparkConnectBackend, SparkConnectConfig};

/// A non-empty, trimmed environment variable.
fn env(k: &str) -> Option<String> {
    std::env::var(k)
        .ok()
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

/// A secret a config names by environment variable or file (a mounted Kubernetes Secret);
/// `what` names it in the error, which never carries the value.
fn secret(source: &SecretSource, what: &str) -> Result<Secret, BackendError> {
    let text = match source {
        SecretSource::Env(e) => env(e).ok_or_else(|| {
            BackendError::Config(format!("{what}: the environment variable {e} is not set"))
        })?,
        SecretSource::File(f) => std::fs::read_to_string(f)
            .map_err(|e| BackendError::Config(format!("{what}: reading {f}: {e}")))?,
    };
    let text = text.trim();
    if text.is_empty() {
        return Err(BackendError::Config(format!("{what} is empty")));
    }
    Ok(Secret::new(text))
}

/// The credential a target names, else the environment's.
fn credentials(t: &DatabricksTarget) -> Result<Credentials, BackendError> {
    match t.auth.as_ref().unwrap_or(&DatabricksAuth::Environment) {
        DatabricksAuth::Environment => Credentials::from_env().map_err(BackendError::Config),
        DatabricksAuth::Token(source) => {
            Ok(Credentials::Token(secret(source, "the Databricks token")?))
        }
        DatabricksAuth::OAuth {
            client_id,
            client_secret,
        } => Ok(Credentials::OAuth {
            client_id: match client_id {
                ClientId::Literal(id) => id.clone(),
                ClientId::Env(e) => env(e).ok_or_else(|| {
                    BackendError::Config(format!(
                        "the OAuth client id: the environment variable {e} is not set"
                    ))
                })?,
            },
            client_secret: secret(client_secret, "the OAuth client secret")?,
        }),
    }
}

/// A Databricks target's backend, filling gaps from the DATABRICKS_* variables.
pub fn databricks(t: &DatabricksTarget) -> Result<DatabricksBackend, BackendError> {
    let host = t
        .host
        .clone()
        .or_else(|| env("DATABRICKS_HOST"))
        .ok_or_else(|| {
            BackendError::Config("no Databricks host: set `host` or DATABRICKS_HOST".into())
        })?;
    let warehouse = t
        .warehouse_id
        .clone()
        .or_else(|| env("DATABRICKS_WAREHOUSE_ID"))
        .ok_or_else(|| {
            BackendError::Config(
                "no SQL warehouse: set `warehouseId` or DATABRICKS_WAREHOUSE_ID".into(),
            )
        })?;
    let mut cfg = ClientConfig::new(&host, &warehouse, credentials(t)?);
    if let Some(s) = t.read_budget_seconds {
        cfg.read_budget = Duration::from_secs(s);
    }
    if let Some(s) = t.warehouse_start_timeout_seconds {
        cfg.warehouse_start_timeout = Duration::from_secs(s);
    }
    let backend = DatabricksBackend::new(cfg)?;
    Ok(match &t.lock_folder {
        Some(folder) => backend.with_lock_folder(folder),
        None => backend,
    })
}

/// A Spark Connect target's backend: the lake at its root (named `writer` in its commits)
/// and a lazy Spark Connect session.
pub fn spark_connect(
    t: &SparkConnectTarget,
    writer: Option<&str>,
) -> Result<SparkConnectBackend, BackendError> {
    let lake = LakeBackend::open(&t.root)?;
    let lake = match writer {
        Some(w) => lake.with_writer(w),
        None => lake,
    };
    // a local root Spark sees as the operator does: absolute, as the lake resolved it
    let spark_root = match (&t.spark_root, lake.local_root()) {
        (None, Some(local)) => local.display().to_string(),
        _ => t.spark_root(),
    };
    let token = t
        .token()
        .map(|s| secret(&s, "the Spark Connect token").map(|t| t.expose().to_string()))
        .transpose()?;
    let cfg = SparkConnectConfig {
        url: t.url.clone(),
        spark_root,
        token,
        conf: t.conf.clone(),
        read_budget: Duration::from_secs(t.read_budget_seconds.unwrap_or(300)),
    };
    SparkConnectBackend::new(lake, cfg)
}
