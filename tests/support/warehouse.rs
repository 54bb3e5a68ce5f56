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

/// Sets the emulator's fault knobs (`e2e/warehouse/server.py`'s `Faults.FIELDS`) through its
/// admin endpoint; a knob it does not know fails the test.
pub fn faults(body: serde_json::Value) {
    let url = format!("{}/_emulator/faults", env("WAREHOUSE_URL"));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let r = reqwest::Client::new()
            .post(&url)
            .json(&body)
            .send()
            .await
            .expect("the emulator's admin endpoint");
        assert!(r.status().is_success(), "{url}: {}", r.status());
    });
}

/// The emulator's own account of itself (`GET /_emulator/requests` past every entry): its
/// `warehouse_state`, `warehouse_starts`, `statements` and `total_requests`.
pub fn emulator_state() -> serde_json::Value {
    let url = format!(
        "{}/_emulator/requests?since=1000000000",
        env("WAREHOUSE_URL")
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let r = reqwest::Client::new()
            .get(&url)
            .send()
            .await
            .expect("the emulator's admin endpoint");
        assert!(r.status().is_success(), "{url}: {}", r.status());
        r.json().await.expect("the emulator's JSON")
    })
}

/// Runs statements on the emulator as a user outside the operator would, each to its end.
pub async fn sql(b: &DatabricksBackend, statements: &[String]) {
    for s in statements {
        b.client()
            .execute(s, &|_: &str| {})
            .await
            .unwrap_or_else(|e| panic!("{s}: {e}"));
    }
}

/// A fresh catalog with a `sales` schema: each test its own on the shared emulator.
pub async fn catalog_with_sales(b: &DatabricksBackend, catalog: &str) {
    sql(
        b,
        &[
            format!("CREATE CATALOG {catalog}"),
            format!("CREATE SCHEMA {catalog}.sales"),
        ],
    )
    .await;
}
