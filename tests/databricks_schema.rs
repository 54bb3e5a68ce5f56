//! A DeltaSchema's own metadata (comment, properties, owner, grants) applied by the CLI on
//! the warehouse emulator, as Unity Catalog REST then reads it back; then planned again: empty.
//! An absent schema is created by a CREATE SCHEMA step before its tables (with its comment,
//! properties and managed location); a missing catalog is named and never created.
//! `make test` starts the emulator; without DATABRICKS_* this fails loudly.

mod support;

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};
use support::warehouse::env;

/// One HTTP call to the emulator with the workspace token, answered with JSON.
fn call(method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let url = format!("{}{path}", env("DATABRICKS_HOST"));
        let mut req = reqwest::Client::new()
            .request(method, &url)
            .bearer_auth(env("DATABRICKS_TOKEN"));
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.unwrap_or_else(|e| panic!("{url}: {e}"));
        let status = resp.status();
        let text = resp.text().await.unwrap();
        assert!(status.is_success(), "{url}: HTTP {status}: {text}");
        serde_json::from_str(&text).unwrap()
    })
}

/// One statement through the Statement Execution API; panics unless it succeeds.
fn sql(statement: &str) {
    let body = json!({"statement": statement, "warehouse_id": env("DATABRICKS_WAREHOUSE_ID"), "wait_timeout": "50s"});
    let v = call(reqwest::Method::POST, "/api/2.0/sql/statements", Some(body));
    assert_eq!(v["status"]["state"], "SUCCEEDED", "{statement}: {v}");
}

/// The emulator's admin endpoint (its request log).
fn admin(path: &str) -> Value {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let url = format!("{}{path}", env("WAREHOUSE_URL"));
        let text = reqwest::get(&url)
            .await
            .unwrap_or_else(|e| panic!("{url}: {e}"))
            .text()
            .await
            .unwrap();
        serde_json::from_str(&text).unwrap()
    })
}

fn uc(path: &str) -> Value {
    call(
        reqwest::Method::GET,
        &format!("/api/2.1/unity-catalog/{path}"),
        None,
    )
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

fn config(dir: &Path, catalog: &str) -> String {
    let config = dir.join("config.yaml");
    std::fs::write(
        &config,
        format!(
            "targets:\n  dbx:\n    databricks:\n      host: {}\n      warehouseId: {}\n      auth: {{tokenEnv: DATABRICKS_TOKEN}}\n    schemas: [\"{catalog}.*\"]\ndefaultTarget: dbx\n",
            env("DATABRICKS_HOST"),
            env("DATABRICKS_WAREHOUSE_ID")
        ),
    )
    .unwrap();
    config.to_string_lossy().into_owned()
}

/// The privileges UC lists for a principal on the schema, sorted.
fn privileges(perms: &Value, principal: &str) -> Vec<String> {
    let mut p: Vec<String> = perms["privilege_assignments"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|pa| pa["principal"] == principal)
        .flat_map(|pa| pa["privileges"].as_array().unwrap().clone())
        .map(|p| p.as_str().unwrap().to_string())
        .collect();
    p.sort();
    p
}

#[test]
fn a_delta_schemas_comment_properties_owner_and_grants_are_applied_then_plan_empty() {
    let catalog = format!("schema_meta_{}", std::process::id());
    let full = format!("{catalog}.sales");
    sql(&format!("CREATE CATALOG {catalog}"));
    sql(&format!("CREATE SCHEMA {full}"));
    // what the spec does not name must survive: a property, a principal
    sql(&format!(
        "ALTER SCHEMA {full} SET DBPROPERTIES ('other' = 'kept')"
    ));
    sql(&format!("GRANT SELECT ON SCHEMA {full} TO `auditors`"));
    // analysts hold MODIFY, which the spec does not list: it is revoked
    sql(&format!("GRANT MODIFY ON SCHEMA {full} TO `analysts`"));

    let dir = tempfile::tempdir().unwrap();
    let manifests = dir.path().join("schema.yaml");
    // a comment that must survive quoting: an apostrophe, a backslash and `${`
    std::fs::write(
        &manifests,
        format!(
            r#"apiVersion: delta-operator.io/v1alpha1
kind: DeltaSchema
metadata: {{name: sales}}
spec:
  catalog: {catalog}
  comment: "Sales' data \\ ${{not_a_var}}"
  properties: {{team: revenue}}
  owner: data-eng
  grants:
    - {{principal: analysts, privileges: [USE SCHEMA, SELECT]}}
"#
        ),
    )
    .unwrap();
    let c = config(dir.path(), &catalog);
    let f = manifests.to_str().unwrap();

    let (code, out, err) = run(&["plan", "-f", f, "--config", &c]);
    assert_eq!(code, 2, "changes → exit 2\n{out}\n{err}");
    for want in [
        &format!("{full}   ~ schema update"),
        "1. COMMENT ON SCHEMA",
        "2. SET DBPROPERTIES (team)",
        "3. GRANT SELECT, USE SCHEMA ON SCHEMA TO analysts",
        "4. REVOKE MODIFY ON SCHEMA FROM analysts",
        "⚠ analysts loses MODIFY",
        &format!("undo: GRANT MODIFY ON SCHEMA {full} TO analysts"),
        "5. OWNER TO data-eng",
        "Plan: 0 to add, 1 to change, 0 to destroy · 5 steps",
    ] {
        assert!(out.contains(want), "missing {want:?} in\n{out}");
    }
    let (code, json_out, _) = run(&["plan", "-f", f, "--config", &c, "--format", "json"]);
    assert_eq!(code, 2);
    let plan: Value = serde_json::from_str(&json_out).unwrap();
    assert_eq!(plan["schemas"][0]["steps"][3]["action"], "revoke");
    let id = plan["id"].as_str().unwrap().to_string();

    // the plan id pins what the schema looked like: a change in between makes it stale
    sql(&format!(
        "GRANT CREATE TABLE ON SCHEMA {full} TO `analysts`"
    ));
    let (code, out, err) = run(&["apply", "-f", f, "--config", &c, "--plan-id", &id]);
    assert_eq!(code, 3, "stale → exit 3\n{out}\n{err}");
    assert_eq!(
        privileges(&uc(&format!("permissions/schema/{full}")), "analysts"),
        ["CREATE_TABLE", "MODIFY"],
        "a stale plan changes nothing"
    );

    // the plan shows every statement; the apply sends exactly those, in order
    let (_, json_out, _) = run(&["plan", "-f", f, "--config", &c, "--format", "json"]);
    let shown: Vec<String> =
        serde_json::from_str::<Value>(&json_out).unwrap()["schemas"][0]["steps"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|s| s["statements"].as_array().unwrap().clone())
            .map(|s| s.as_str().unwrap().to_string())
            .collect();
    assert_eq!(shown.len(), 5, "{shown:#?}");
    let since = admin("/_emulator/requests?since=1000000000")["total_requests"]
        .as_u64()
        .unwrap();
    let (code, out, err) = run(&["apply", "-f", f, "--config", &c]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out.contains("REVOKE CREATE TABLE, MODIFY ON SCHEMA FROM analysts [meta] ok"),
        "{out}"
    );
    let sent: Vec<String> = admin(&format!("/_emulator/requests?since={since}"))["requests"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["statement"].as_str())
        .filter(|s| s.contains(&catalog) && !s.starts_with("SELECT"))
        .map(str::to_string)
        .collect();
    assert_eq!(
        sent, shown,
        "the schema's statements, as the plan showed them"
    );

    // Unity Catalog reads back what the spec declares, and what it does not name is untouched
    let info = uc(&format!("schemas/{full}"));
    assert_eq!(info["comment"], "Sales' data \\ ${not_a_var}", "{info}");
    assert_eq!(info["properties"]["team"], "revenue", "{info}");
    assert_eq!(info["properties"]["other"], "kept", "{info}");
    assert_eq!(info["owner"], "data-eng", "{info}");
    let perms = uc(&format!("permissions/schema/{full}"));
    assert_eq!(
        privileges(&perms, "analysts"),
        ["SELECT", "USE_SCHEMA"],
        "{perms}"
    );
    assert_eq!(privileges(&perms, "auditors"), ["SELECT"], "{perms}");

    let (code, out, err) = run(&["plan", "-f", f, "--config", &c]);
    assert_eq!(code, 0, "no changes → exit 0\n{out}\n{err}");
    assert!(
        out.contains("Plan: 0 to add, 0 to change, 0 to destroy · 0 steps"),
        "{out}"
    );
}

#[test]
fn removing_a_live_schema_property_is_a_named_refusal() {
    let catalog = format!("schema_unset_{}", std::process::id());
    let full = format!("{catalog}.sales");
    sql(&format!("CREATE CATALOG {catalog}"));
    sql(&format!("CREATE SCHEMA {full}"));
    sql(&format!(
        "ALTER SCHEMA {full} SET DBPROPERTIES ('old' = 'x')"
    ));
    let dir = tempfile::tempdir().unwrap();
    let manifests = dir.path().join("schema.yaml");
    std::fs::write(
        &manifests,
        format!("apiVersion: delta-operator.io/v1alpha1\nkind: DeltaSchema\nmetadata: {{name: sales}}\nspec:\n  catalog: {catalog}\n  properties: {{old: null}}\n"),
    )
    .unwrap();
    let c = config(dir.path(), &catalog);
    let (code, out, err) = run(&["apply", "-f", manifests.to_str().unwrap(), "--config", &c]);
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(
        out.contains("✗ NotSupportedByBackend (spec.properties.old)"),
        "{out}"
    );
    assert_eq!(uc(&format!("schemas/{full}"))["properties"]["old"], "x");
}

#[test]
fn an_absent_schema_is_created_first_with_its_comment_and_properties_then_plan_empty() {
    let catalog = format!("schema_create_{}", std::process::id());
    let full = format!("{catalog}.sales");
    sql(&format!("CREATE CATALOG {catalog}"));
    let dir = tempfile::tempdir().unwrap();
    let manifests = dir.path().join("m.yaml");
    std::fs::write(
        &manifests,
        format!(
            r#"apiVersion: delta-operator.io/v1alpha1
kind: DeltaSchema
metadata: {{name: sales}}
spec:
  catalog: {catalog}
  comment: "Sales' data"
  properties: {{team: revenue}}
---
apiVersion: delta-operator.io/v1alpha1
kind: DeltaTable
metadata: {{name: orders}}
spec:
  schemaRef: sales
  columns:
    - {{name: id, type: bigint}}
"#
        ),
    )
    .unwrap();
    let c = config(dir.path(), &catalog);
    let f = manifests.to_str().unwrap();

    let (code, out, err) = run(&["plan", "-f", f, "--config", &c]);
    assert_eq!(code, 2, "changes → exit 2\n{out}\n{err}");
    let create = format!(
        r"CREATE SCHEMA IF NOT EXISTS `{catalog}`.`sales` COMMENT 'Sales\' data' WITH DBPROPERTIES ('team' = 'revenue')"
    );
    for want in [
        format!("{full}   + schema create"),
        "1. CREATE SCHEMA".to_string(),
        format!("> {create}"),
        format!("undo: DROP SCHEMA {full} RESTRICT"),
        "never drops a schema".to_string(),
        "Plan: 2 to add, 0 to change, 0 to destroy".to_string(),
    ] {
        assert!(out.contains(&want), "missing {want:?} in\n{out}");
    }
    // the table reads as absent (not unreadable) and is planned after the schema
    assert!(!out.contains("cannot be read"), "{out}");
    let schema_at = out.find("+ schema create").unwrap();
    let table_at = out.find(&format!("{full}.orders")).unwrap();
    assert!(schema_at < table_at, "{out}");

    let (code, out, err) = run(&["apply", "-f", f, "--config", &c]);
    assert_eq!(code, 0, "{out}\n{err}");
    let info = uc(&format!("schemas/{full}"));
    assert_eq!(info["comment"], "Sales' data", "{info}");
    assert_eq!(info["properties"]["team"], "revenue", "{info}");
    let table = uc(&format!("tables/{full}.orders"));
    assert_eq!(table["name"], "orders", "{table}");

    let (code, out, err) = run(&["plan", "-f", f, "--config", &c]);
    assert_eq!(code, 0, "no changes → exit 0\n{out}\n{err}");
    assert!(
        out.contains("Plan: 0 to add, 0 to change, 0 to destroy · 0 steps"),
        "{out}"
    );
}

#[test]
fn a_missing_catalog_is_named_and_never_created() {
    let catalog = format!("no_such_catalog_{}", std::process::id());
    let dir = tempfile::tempdir().unwrap();
    let manifests = dir.path().join("m.yaml");
    std::fs::write(
        &manifests,
        format!("apiVersion: delta-operator.io/v1alpha1\nkind: DeltaSchema\nmetadata: {{name: sales}}\nspec:\n  catalog: {catalog}\n"),
    )
    .unwrap();
    let c = config(dir.path(), &catalog);
    let (code, out, err) = run(&["apply", "-f", manifests.to_str().unwrap(), "--config", &c]);
    assert_eq!(code, 1, "{out}\n{err}");
    let all = format!("{out}{err}");
    assert!(
        all.contains(&format!("catalog '{catalog}' does not exist")),
        "{all}"
    );
    assert!(all.contains("never catalogs"), "{all}");
    let catalogs = uc("catalogs");
    assert!(
        !catalogs.to_string().contains(&catalog),
        "the catalog was created: {catalogs}"
    );
}

#[test]
fn a_managed_location_goes_into_the_create_and_is_the_schemas_storage_root() {
    let catalog = format!("schema_loc_{}", std::process::id());
    let full = format!("{catalog}.sales");
    sql(&format!("CREATE CATALOG {catalog}"));
    let dir = tempfile::tempdir().unwrap();
    let manifests = dir.path().join("m.yaml");
    let location = "abfss://lake@acct.dfs.core.windows.net/it's/sales";
    std::fs::write(
        &manifests,
        format!("apiVersion: delta-operator.io/v1alpha1\nkind: DeltaSchema\nmetadata: {{name: sales}}\nspec:\n  catalog: {catalog}\n  managedLocation: \"{location}\"\n"),
    )
    .unwrap();
    let c = config(dir.path(), &catalog);
    let f = manifests.to_str().unwrap();
    let (code, out, err) = run(&["plan", "-f", f, "--config", &c]);
    assert_eq!(code, 2, "{out}\n{err}");
    let want = format!(
        r"> CREATE SCHEMA IF NOT EXISTS `{catalog}`.`sales` MANAGED LOCATION 'abfss://lake@acct.dfs.core.windows.net/it\'s/sales'"
    );
    assert!(out.contains(&want), "missing {want:?} in\n{out}");
    let (code, out, err) = run(&["apply", "-f", f, "--config", &c]);
    assert_eq!(code, 0, "{out}\n{err}");
    let info = uc(&format!("schemas/{full}"));
    assert_eq!(info["storage_root"], location, "{info}");
    // the location is the CREATE's alone: the live schema plans nothing more
    let (code, out, err) = run(&["plan", "-f", f, "--config", &c]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out.contains("only when the operator creates the schema"),
        "{out}"
    );
}
