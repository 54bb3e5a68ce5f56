//! The warehouse emulator (`e2e/warehouse/`, started by `make test`) as tests reach it. A
//! variable it needs and does not find fails the test loudly; it never skips.

use std::time::Duration;

use delta_operator::backend::databricks::DatabricksBackend;
use delta_operator::backend::databricks::auth::{Credentials, Secret};
use delta_operator::backend::databricks::client::ClientConfig;

/// A variable `make test` exports for the emulator: DATABRICKS_HOST, DATABRICKS_TOKEN,
/// DATABRICKS_WAREHOUSE_ID, WAREHOUSE_URL (its admin endpoint).
pub fn env(k: &str) -> String {
    std::env::var(k).ok().filter(|v| !v.trim().is_empty()).unwrap_or_else(|| {
        // the test binary's name, without cargo's hash, for the command to rerun it
        let test = std::env::current_exe().ok().and_then(|p| Some(p.file_stem()?.to_str()?.split('-').next()?.to_string())).unwrap_or_else(|| "NAME".into());
        panic!("{k} is not set: this test needs the warehouse emulator. Run it through `make test`, or `e2e/warehouse/with-warehouse.sh cargo test --test {test}`")
    })
}

/// A backend on the emulator with short polls (statements take 0.1–2 s there).
pub fn backend() -> DatabricksBackend {
    let creds = Credentials::Token(Secret::new(env("DATABRICKS_TOKEN")));
    let mut cfg = ClientConfig::new(
        &env("DATABRICKS_HOST"),
        &env("DATABRICKS_WAREHOUSE_ID"),
        creds,
    );
    cfg.poll_interval = Duration::from_millis(100);
    cfg.warehouse_poll = Duration::from_millis(200);
    cfg.retry_min_delay = Duration::from_millis(100);
    DatabricksBackend::new(cfg).expect("backend")
}
