//! A drift check that never wakes a warehouse (issue 14), on the warehouse
//! emulator (e2e/warehouse/: Delta on Spark, Unity Catalog emulated from the
//! public API reference, the warehouse's states as the Warehouses API shows
//! them). Steady-state reads are Unity Catalog REST only: the tables listing,
//! and tags and grants only of tables whose spec declares them. So a stopped
//! warehouse stays stopped over many checks, and a tag changed out of band is
//! still seen. Counts come from the emulator's request log.
//!
//! `make test` exports DATABRICKS_HOST, DATABRICKS_TOKEN, DATABRICKS_WAREHOUSE_ID
//! and WAREHOUSE_URL; without them every test here fails (never skips). The
//! tests stop the shared warehouse, so they run one at a time.

mod support;

use delta_operator::engine::{Inputs, read_and_plan};
use delta_operator::plan::Change;
use delta_operator::plan::render::text::render;
use serde_json::{Value, json};
use support::table;
use support::warehouse::{Wh, env};

/// The warehouse is one for the whole emulator: one test at a time.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A drift interval of 10 minutes: six checks are an hour of them.
const CHECKS: usize = 6;

/// A blocking HTTP call (its own runtime on its own thread, callable from async tests and Drop).
fn call(method: &str, url: String, token: Option<String>, body: Option<Value>) -> Value {
    let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let mut req = reqwest::Client::new().request(method.clone(), &url);
            if let Some(t) = token {
                req = req.bearer_auth(t);
            }
            if let Some(b) = body {
                req = req.json(&b);
            }
            let resp = req
                .send()
                .await
                .unwrap_or_else(|e| panic!("{method} {url}: {e}"));
            let status = resp.status();
            let text = resp.text().await.expect("body");
            assert!(status.is_success(), "{method} {url}: {status} {text}");
            serde_json::from_str(&text).unwrap_or(Value::Null)
        })
    })
    .join()
    .expect("http thread")
}

fn admin(method: &str, path: &str, body: Option<Value>) -> Value {
    call(
        method,
        format!("{}{path}", env("WAREHOUSE_URL")),
        None,
        body,
    )
}

/// A Unity Catalog REST call as a user of the workspace makes it (no warehouse involved).
fn uc(method: &str, path: &str, body: Value) -> Value {
    call(
        method,
        format!("{}/api/2.1/unity-catalog/{path}", env("DATABRICKS_HOST")),
        Some(env("DATABRICKS_TOKEN")),
        Some(body),
    )
}

fn log_size() -> u64 {
    admin("GET", "/_emulator/requests?since=1000000000", None)["total_requests"]
        .as_u64()
        .expect("total_requests")
}

/// The request log since `since`: its requests' `METHOD path`s, statements and warehouse starts.
struct Log {
    paths: Vec<String>,
    statements: u64,
    starts: u64,
    state: String,
}

fn log_since(since: u64) -> Log {
    let v = admin("GET", &format!("/_emulator/requests?since={since}"), None);
    Log {
        paths: v["requests"]
            .as_array()
            .expect("requests")
            .iter()
            .map(|r| {
                format!(
                    "{} {}",
                    r["method"].as_str().unwrap_or(""),
                    r["path"].as_str().unwrap_or("")
                )
            })
            .collect(),
        statements: v["statements"].as_u64().expect("statements"),
        starts: v["warehouse_starts"].as_u64().expect("warehouse_starts"),
        state: v["warehouse_state"].as_str().unwrap_or("").to_string(),
    }
}

/// Puts the fault knobs back (the warehouse RUNNING) however the test ends.
struct Reset;
impl Drop for Reset {
    fn drop(&mut self) {
        admin("DELETE", "/_emulator/faults", None);
    }
}

/// This suite's manifests: the additive schema, then the tables.
trait Suite {
    fn m(&self, tables: &[String]) -> Inputs;
}

impl Suite for Wh {
    fn m(&self, tables: &[String]) -> Inputs {
        self.manifests(Some("additive"), &tables.concat())
    }
}

const COLUMNS: &str =
    "  columns:\n    - {name: id, type: bigint}\n    - {name: email, type: string}";

#[tokio::test]
async fn an_hour_of_drift_checks_leaves_a_stopped_warehouse_stopped() {
    let _one = SERIAL.lock().await;
    let _reset = Reset;
    let wh = Wh::new("drift", "hour").await;
    let inputs = wh.m(&[
        table(
            "tagged",
            "  tags: {domain: sales}\n  grants: [{principal: analysts, privileges: [SELECT]}]\n  columns:\n    - {name: id, type: bigint}\n    - {name: email, type: string, tags: {pii: email}}",
        ),
        table("granted", &format!("  grants: [{{principal: analysts, privileges: [SELECT, MODIFY]}}]\n{COLUMNS}")),
        table("plain", COLUMNS),
    ]);
    wh.converge(&inputs, false).await;
    // the warehouse auto-stopped; tag listings begin with an empty page carrying a token
    admin(
        "POST",
        "/_emulator/faults",
        Some(json!({"warehouse_state": "STOPPED", "tag_empty_first_page": true})),
    );
    let since = log_size();
    let starts = log_since(since).starts;
    let sent = wh.b.statements();
    for check in 0..CHECKS {
        let (plan, _) = read_and_plan(&wh.b, &inputs).await.expect("read");
        assert!(!plan.has_changes(), "check {check}: {}", render(&plan));
    }
    let log = log_since(since);
    assert_eq!(log.statements, 0, "{:#?}", log.paths);
    assert_eq!(log.starts, starts, "no warehouse start");
    assert_eq!(log.state, "STOPPED");
    assert!(
        log.paths
            .iter()
            .all(|p| p.starts_with("GET /api/2.1/unity-catalog/")),
        "Unity Catalog reads only, not even the Warehouses API: {:#?}",
        log.paths
    );
    // per check: the listing (twice: the schema's tables, then the declared ones, no read
    // being shared here), tagged's tags (2 pages), its column's tags (2 pages) and grants,
    // granted's grants; plain costs nothing of its own; then the schema's views, functions and
    // volumes (issue 33): the listing once more (shared with the tables' when reads are shared,
    // not here), the functions' and the volumes' listings
    let per_check = 2 + 2 + 2 + 1 + 1 + 3;
    assert_eq!(log.paths.len(), CHECKS * per_check, "{:#?}", log.paths);
    assert!(
        !log.paths.iter().any(|p| p.contains(".plain")),
        "{:#?}",
        log.paths
    );

    // someone changes a tag and revokes a grant in the workspace (REST, as the UI does)
    let since = log_size();
    let tagged = wh.q("tagged");
    uc(
        "PATCH",
        &format!("entity-tag-assignments/tables/{tagged}/tags/domain?update_mask=tag_value"),
        json!({"tag_assignment": {"entity_type": "tables", "entity_name": tagged, "tag_key": "domain", "tag_value": "finance"}}),
    );
    uc(
        "PATCH",
        &format!("permissions/table/{}", wh.q("granted")),
        json!({"changes": [{"principal": "analysts", "remove": ["MODIFY"]}]}),
    );
    let (plan, _) = read_and_plan(&wh.b, &inputs).await.expect("read");
    let changes: Vec<&Change> = plan.tables.iter().flat_map(|t| &t.changes).collect();
    assert!(
        changes.iter().any(|c| matches!(c, Change::SetTableTag { key, from: Some(f), to } if key == "domain" && f == "finance" && to == "sales")),
        "the tag's drift is seen: {}",
        render(&plan)
    );
    assert!(
        changes.iter().any(|c| matches!(c, Change::Grant { principal, privileges } if principal == "analysts" && privileges.iter().any(|p| p.as_str() == "MODIFY"))),
        "the grant's drift is seen: {}",
        render(&plan)
    );
    let log = log_since(since);
    assert_eq!(
        log.statements, 0,
        "drift seen without a statement: {:#?}",
        log.paths
    );
    assert_eq!(log.starts, starts);
    assert_eq!(log.state, "STOPPED");
    assert_eq!(
        wh.b.statements(),
        sent,
        "the backend sent no statement since the apply"
    );
}

#[tokio::test]
async fn a_table_whose_spec_is_silent_about_tags_and_grants_costs_no_such_request() {
    let _one = SERIAL.lock().await;
    let _reset = Reset;
    let wh = Wh::new("drift", "silent").await;
    let inputs = wh.m(&[
        table("silent", COLUMNS),
        table("loud", &format!("  tags: {{domain: sales}}\n{COLUMNS}")),
    ]);
    wh.converge(&inputs, false).await;
    // the silent table has tags and grants of its own: they are not the spec's business
    let silent = wh.q("silent");
    wh.sql(&format!("ALTER TABLE {silent} SET TAGS ('team' = 'ops')"))
        .await;
    wh.sql(&format!(
        "ALTER TABLE {silent} ALTER COLUMN email SET TAGS ('pii' = 'yes')"
    ))
    .await;
    wh.sql(&format!("GRANT SELECT ON TABLE {silent} TO `readers`"))
        .await;
    let since = log_size();
    let (plan, _) = read_and_plan(&wh.b, &inputs).await.expect("read");
    assert!(!plan.has_changes(), "{}", render(&plan));
    let log = log_since(since);
    assert_eq!(log.statements, 0, "{:#?}", log.paths);
    let about = |name: &str| {
        log.paths
            .iter()
            .filter(|p| {
                (p.contains("entity-tag-assignments") || p.contains("/permissions/"))
                    && p.contains(&format!("{}.{name}", wh.schema))
            })
            .count()
    };
    assert_eq!(about("silent"), 0, "{:#?}", log.paths);
    // the control: the table that declares tags has its tags read, and nothing more
    assert_eq!(about("loud"), 1, "{:#?}", log.paths);
}
