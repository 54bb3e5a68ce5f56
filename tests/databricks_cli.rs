//! The CLI as the README shows it, with a Databricks target on the warehouse emulator:
//! `plan -f examples/ --config <file>` (exit 2), `apply` (exit 0), `plan` again (exit 0).
//! `make test` starts the emulator; without DATABRICKS_* and WAREHOUSE_URL this fails loudly.
//!
//! Its own test binary: it stops the (shared) emulated warehouse to see "warehouse starting" in
//! the output of a read, which must not slow other tests down.

mod support;

use std::path::Path;
use std::process::Command;

use support::warehouse::{emulator_state, env, faults};

/// One statement through the Statement Execution API, waited for; panics unless it succeeds.
fn sql(statement: &str) {
    let body = serde_json::json!({"statement": statement, "warehouse_id": env("DATABRICKS_WAREHOUSE_ID"), "wait_timeout": "50s"});
    let v: serde_json::Value = http::blocking_post(
        &format!("{}/api/2.0/sql/statements", env("DATABRICKS_HOST")),
        &env("DATABRICKS_TOKEN"),
        &body,
    );
    assert_eq!(v["status"]["state"], "SUCCEEDED", "{statement}: {v}");
}

mod http {
    /// A blocking JSON POST (a runtime per call keeps the test free of async plumbing).
    pub fn blocking_post(url: &str, token: &str, body: &serde_json::Value) -> serde_json::Value {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let mut req = ::reqwest::Client::new().post(url).json(body);
            if !token.is_empty() {
                req = req.bearer_auth(token);
            }
            let resp = req
                .send()
                .await
                .unwrap_or_else(|e| panic!("POST {url}: {e}"));
            let status = resp.status();
            let text = resp.text().await.unwrap();
            assert!(status.is_success(), "POST {url}: HTTP {status}: {text}");
            serde_json::from_str(&text).unwrap_or(serde_json::Value::Null)
        })
    }
}

/// The examples with their catalog renamed (every run gets a fresh catalog on the shared emulator).
fn examples_in(catalog: &str, dir: &Path) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    for e in std::fs::read_dir(src).unwrap().flatten() {
        let text = std::fs::read_to_string(e.path()).unwrap();
        let text = text.replace("catalog: main", &format!("catalog: {catalog}"));
        std::fs::write(dir.join(e.file_name()), text).unwrap();
    }
}

fn run(args: &[&str]) -> (i32, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_delta-operator"))
        .args(args)
        .output()
        .expect("run the binary");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn plan_apply_plan_with_a_databricks_target_as_the_readme_shows() {
    let catalog = format!("cli_{}", std::process::id());
    sql(&format!("CREATE CATALOG {catalog}"));
    sql(&format!("CREATE SCHEMA {catalog}.sales"));
    let dir = tempfile::tempdir().unwrap();
    let manifests = dir.path().join("examples");
    std::fs::create_dir(&manifests).unwrap();
    examples_in(&catalog, &manifests);
    // the README's Databricks target: host, warehouse and the credential by environment variable
    let config = dir.path().join("config.yaml");
    std::fs::write(
        &config,
        format!(
            "targets:\n  dbx:\n    databricks:\n      host: {}\n      warehouseId: {}\n      auth: {{tokenEnv: DATABRICKS_TOKEN}}\n    schemas: [\"{catalog}.*\"]\ndefaultTarget: dbx\n",
            env("DATABRICKS_HOST"),
            env("DATABRICKS_WAREHOUSE_ID")
        ),
    )
    .unwrap();
    let (f, c) = (manifests.to_str().unwrap(), config.to_str().unwrap());

    let (code, out, err) = run(&["plan", "-f", f, "--config", c]);
    assert_eq!(code, 2, "changes → exit 2\n{out}\n{err}");
    assert!(
        out.contains(&format!("{catalog}.sales.orders")) && out.contains("+ create"),
        "{out}"
    );
    assert!(
        out.contains("Plan: 2 to add, 0 to change, 0 to destroy"),
        "{out}"
    );

    let (code, out, err) = run(&["apply", "-f", f, "--config", c]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("CREATE TABLE") && out.contains("ok"), "{out}");
    assert!(
        out.contains("statement "),
        "each applied step names its statement id: {out}"
    );

    // a steady re-plan reads through Unity Catalog REST only: a stopped warehouse stays stopped
    faults(serde_json::json!({"warehouse_state": "STOPPED", "warehouse_start_seconds": 1}));
    let starts = emulator_state()["warehouse_starts"].as_u64();
    let (code, out, err) = run(&["plan", "-f", f, "--config", c]);
    assert_eq!(code, 0, "no changes → exit 0\n{out}\n{err}");
    assert!(
        out.contains("Plan: 0 to add, 0 to change, 0 to destroy"),
        "{out}"
    );
    assert!(!err.contains("warehouse starting"), "{err}");
    let now = emulator_state();
    assert_eq!(now["warehouse_state"], "STOPPED", "{now}");
    assert_eq!(now["warehouse_starts"].as_u64(), starts, "{now}");

    // an apply needs it: the warehouse is started for the ALTER, and the output says so
    let orders = manifests.join("orders.yaml");
    let spec = std::fs::read_to_string(&orders).unwrap();
    std::fs::write(
        &orders,
        spec.replace(
            "comment: Orders as placed",
            "comment: Orders as placed, with notes",
        ),
    )
    .unwrap();
    let (code, out, err) = run(&["apply", "-f", f, "--config", c]);
    faults(serde_json::json!({"warehouse_state": "RUNNING"}));
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        err.contains("warehouse starting"),
        "the apply waited for the warehouse and said so: {err}"
    );
}
