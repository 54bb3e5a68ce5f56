//! The CLI as the README shows it, with a Databricks target on the warehouse emulator:
//! `plan -f examples/ --config <file>` (exit 2), `apply` (exit 0), `plan` again (exit 0).
//! Two applies of one table at once (the second refused naming the holder), and an apply killed
//! on "another host" whose tables are free once its lock expires (the lock in a workspace folder).
//! `make test` starts the emulator; without DATABRICKS_* and WAREHOUSE_URL this fails loudly.
//!
//! Its own test binary: it stops the (shared) emulated warehouse to see "warehouse starting" in
//! the output of a read, which must not slow other tests down.

mod support;

use std::path::Path;
use std::process::Command;
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use support::warehouse::{emulator_state, env, faults};

/// The emulated warehouse is one for every test of this binary, and its tests run side by side:
/// the test that stops it and counts its starts holds this for writing, every other test (whose
/// statements would start it) for reading.
static WAREHOUSE: RwLock<()> = RwLock::new(());

fn warehouse_alone() -> RwLockWriteGuard<'static, ()> {
    WAREHOUSE.write().unwrap_or_else(|e| e.into_inner())
}

fn warehouse_shared() -> RwLockReadGuard<'static, ()> {
    WAREHOUSE.read().unwrap_or_else(|e| e.into_inner())
}

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
    /// A blocking JSON GET; the status and the body.
    pub fn blocking_get(url: &str, token: &str) -> (u16, serde_json::Value) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let resp = ::reqwest::Client::new()
                .get(url)
                .bearer_auth(token)
                .send()
                .await
                .unwrap_or_else(|e| panic!("GET {url}: {e}"));
            let status = resp.status().as_u16();
            let text = resp.text().await.unwrap();
            (
                status,
                serde_json::from_str(&text).unwrap_or(serde_json::Value::Null),
            )
        })
    }

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
    let _alone = warehouse_alone();
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

    // sizing a plan that scans the table (a new CHECK validates every row) waits for the
    // warehouse too: the plan says so, with the state and the time waited (it was silent)
    faults(serde_json::json!({"warehouse_state": "STOPPED", "warehouse_start_seconds": 2}));
    let spec = std::fs::read_to_string(&orders).unwrap();
    std::fs::write(
        &orders,
        spec.replace(
            "  constraints:\n",
            "  constraints:\n    - check: {name: order_id_positive, expression: order_id > 0}\n",
        ),
    )
    .unwrap();
    let (code, out, err) = run(&["plan", "-f", f, "--config", c]);
    faults(serde_json::json!({"warehouse_state": "RUNNING"}));
    assert_eq!(code, 2, "{out}\n{err}");
    assert!(
        err.contains("warehouse starting (") && err.contains("waited "),
        "the plan's sizing waited for the warehouse and said so: {err}"
    );
}

/// A fresh catalog with the examples in it and a config naming it (`extra` is added to the
/// Databricks target): the manifests' folder and the config file.
fn dbx_setup(dir: &Path, catalog: &str, extra: &str) -> (String, String) {
    sql(&format!("CREATE CATALOG {catalog}"));
    sql(&format!("CREATE SCHEMA {catalog}.sales"));
    let manifests = dir.join("examples");
    std::fs::create_dir(&manifests).unwrap();
    examples_in(catalog, &manifests);
    let config = dir.join("config.yaml");
    std::fs::write(
        &config,
        format!(
            "targets:\n  dbx:\n    databricks:\n      host: {}\n      warehouseId: {}\n      auth: {{tokenEnv: DATABRICKS_TOKEN}}\n{extra}    schemas: [\"{catalog}.*\"]\ndefaultTarget: dbx\n",
            env("DATABRICKS_HOST"),
            env("DATABRICKS_WAREHOUSE_ID")
        ),
    )
    .unwrap();
    (
        manifests.to_str().unwrap().to_string(),
        config.to_str().unwrap().to_string(),
    )
}

/// Starts an apply that stops for `seconds` before its first step (the slow failpoint), and
/// returns once it is there, holding its tables' locks.
fn start_slow_apply(f: &str, c: &str, seconds: u64, env: &[(&str, &str)]) -> std::process::Child {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_delta-operator"));
    cmd.args(["apply", "-f", f, "--config", c])
        .env("DELTA_OPERATOR_FAILPOINT", "slow-step-1")
        .env("DELTA_OPERATOR_FAILPOINT_SECONDS", seconds.to_string())
        .envs(env.iter().copied());
    support::start_paused(
        cmd,
        "step-1",
        "first apply",
        std::time::Duration::from_secs(180),
    )
}

/// The entries of a table's lock in a workspace folder (`<folder>/<catalog>/sales/<table>`).
fn lock_files(folder: &str, catalog: &str, table: &str) -> Vec<String> {
    let (status, v) = http::blocking_get(
        &format!(
            "{}/api/2.0/workspace/list?path={folder}/{catalog}/sales/{table}",
            env("DATABRICKS_HOST")
        ),
        &env("DATABRICKS_TOKEN"),
    );
    assert_eq!(status, 200, "{v}");
    v["objects"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|o| {
            format!(
                "{} {}",
                o["object_type"].as_str().unwrap_or("?"),
                o["path"].as_str().unwrap_or("?")
            )
        })
        .collect()
}

#[test]
fn two_applies_of_one_databricks_table_at_once_the_second_is_refused_naming_the_holder() {
    let _shared = warehouse_shared();
    let catalog = format!("lockcli_{}", std::process::id());
    let dir = tempfile::tempdir().unwrap();
    let folder = format!("/Shared/delta-operator-test-{}/locks", std::process::id());
    let (f, c) = dbx_setup(
        dir.path(),
        &catalog,
        &format!("      lockFolder: {folder}\n"),
    );
    let first = start_slow_apply(&f, &c, 15, &[]);
    let pid = first.id();
    // the second waits its --lock-wait, then refuses with exit 5, naming the holder and its pid
    let started = std::time::Instant::now();
    let (code, out, err) = run(&["apply", "-f", &f, "--config", &c, "--lock-wait", "2s"]);
    assert_eq!(code, 5, "locked → exit 5\n{out}\n{err}");
    assert!(
        started.elapsed() >= std::time::Duration::from_secs(2),
        "it waited"
    );
    assert!(
        err.contains("is being applied by cli@") && err.contains(&format!("pid {pid}")),
        "names the holder: {err}"
    );
    assert!(err.contains("Nothing was changed"), "{err}");
    // unlock without --force leaves a live holder alone
    let table = format!("{catalog}.sales.orders");
    let (code, out, err) = run(&["unlock", &table, "--config", &c]);
    assert_eq!(code, 5, "{out}\n{err}");
    assert!(err.contains("may still be applying"), "{err}");
    // the first goes on and finishes; its lock is released
    let first = first.wait_with_output().unwrap();
    let said = format!(
        "{}\n{}",
        String::from_utf8_lossy(&first.stdout),
        String::from_utf8_lossy(&first.stderr)
    );
    assert!(first.status.success(), "the first apply: {said}");
    let (code, out, err) = run(&["unlock", &table, "--config", &c]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("is not locked"), "{out}");
    // what stays in the workspace: the newest two entries, no run heartbeat
    let files = lock_files(&folder, &catalog, "orders");
    assert!(
        !files.is_empty()
            && files.len() <= 2
            && files
                .iter()
                .all(|f| f.starts_with("FILE ") && f.ends_with(".json")),
        "{files:?}"
    );
    // and now the table is free: a plan is clean, an apply has nothing to do
    let (code, out, err) = run(&["plan", "-f", &f, "--config", &c]);
    assert_eq!(code, 0, "{out}\n{err}");
}

#[test]
fn a_killed_databricks_apply_on_another_host_frees_its_tables_when_its_lock_expires() {
    let _shared = warehouse_shared();
    let catalog = format!("lockkill_{}", std::process::id());
    let dir = tempfile::tempdir().unwrap();
    // the default lock folder
    let (f, c) = dbx_setup(dir.path(), &catalog, "");
    let ttl = 6;
    let elsewhere = [
        ("DELTA_OPERATOR_TEST_HOST", "another-host"),
        ("DELTA_OPERATOR_LOCK_TTL_SECONDS", "6"),
    ];
    let mut first = start_slow_apply(&f, &c, 120, &elsewhere);
    // while it runs, another apply is refused naming it
    let (code, out, err) = run(&["apply", "-f", &f, "--config", &c, "--lock-wait", "1s"]);
    assert_eq!(code, 5, "{out}\n{err}");
    assert!(err.contains("on another-host pid"), "{err}");
    // killed mid-apply (its statement for step 1 never sent); from here its process
    // cannot be seen, so the lock is free only when it expires
    first.kill().unwrap();
    let _ = first.wait();
    let killed = std::time::Instant::now();
    let table = format!("{catalog}.sales.orders");
    let (code, out, err) = run(&["unlock", &table, "--config", &c]);
    assert_eq!(
        code, 5,
        "a holder elsewhere whose lock has not expired is left alone: {out}\n{err}"
    );
    assert!(err.contains("expires in"), "{err}");
    let (code, out, err) = run(&["apply", "-f", &f, "--config", &c, "--lock-wait", "30s"]);
    assert_eq!(
        code, 0,
        "the next apply proceeds once the lock expires\n{out}\n{err}"
    );
    // `--lock-wait 30s` and exit 0 already bound the wait for the lock; this bounds the whole
    // apply (its CREATE TABLE on the emulator's Spark included, slow on a loaded machine: CI
    // saw 36 s beside a node suite and two builds) well under the killed run's 120 s step
    assert!(
        killed.elapsed() < std::time::Duration::from_secs(ttl + 60),
        "within the expiry: {:?}",
        killed.elapsed()
    );
    assert!(out.contains("CREATE TABLE") && out.contains("ok"), "{out}");
    let (code, out, err) = run(&["plan", "-f", &f, "--config", &c]);
    assert_eq!(code, 0, "{out}\n{err}");
}

#[test]
fn a_databricks_apply_whose_lock_was_force_unlocked_sends_nothing_more() {
    let _shared = warehouse_shared();
    let catalog = format!("lockforce_{}", std::process::id());
    let dir = tempfile::tempdir().unwrap();
    let (f, c) = dbx_setup(dir.path(), &catalog, "");
    // a long lifetime: no background renewal comes before the step, its fence finds the loss
    let first = start_slow_apply(&f, &c, 8, &[("DELTA_OPERATOR_LOCK_TTL_SECONDS", "600")]);
    // a forced unlock breaks a live holder's lock on one of its tables
    let table = format!("{catalog}.sales.orders");
    let (code, out, err) = run(&["unlock", &table, "--config", &c, "--force"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out.contains(&format!("unlocked {table}: it was held by cli@")),
        "{out}"
    );
    // the first wakes up, finds its lock gone before the step and sends nothing of it
    let first = first.wait_with_output().unwrap();
    let said = format!(
        "{}\n{}",
        String::from_utf8_lossy(&first.stdout),
        String::from_utf8_lossy(&first.stderr)
    );
    assert!(!first.status.success(), "{said}");
    assert!(
        said.contains(&format!("this apply lost its lock on {table}")),
        "{said}"
    );
    let (code, out, err) = run(&["plan", "-f", &f, "--config", &c]);
    assert_eq!(code, 2, "orders was not created\n{out}\n{err}");
    assert!(out.contains(&table) && out.contains("+ create"), "{out}");
    // a rerun converges
    let (code, out, err) = run(&["apply", "-f", &f, "--config", &c]);
    assert_eq!(code, 0, "{out}\n{err}");
    let (code, out, err) = run(&["plan", "-f", &f, "--config", &c]);
    assert_eq!(code, 0, "{out}\n{err}");
}

/// `catalog.schema.table` of a table as the JSON report writes it.
fn name(v: &serde_json::Value) -> String {
    format!(
        "{}.{}.{}",
        v["catalog"].as_str().unwrap_or_default(),
        v["schema"].as_str().unwrap_or_default(),
        v["table"].as_str().unwrap_or_default()
    )
}

/// One manifest of a DeltaTable in schema `sales`.
fn table_yaml(name: &str, body: &str) -> String {
    format!(
        "apiVersion: delta-operator.io/v1alpha1\nkind: DeltaTable\nmetadata: {{name: {name}}}\nspec:\n  schemaRef: sales\n{body}"
    )
}

/// Every table carries its own outcome: in one schema, a live table of a type the reader does
/// not know (GEOGRAPHY, as Unity Catalog lists it), a table the rules refuse, a child of the
/// refused one, and a three-level foreign-key chain whose root fails mid-apply. The others are
/// applied; the CLI exits 1 with a report naming each table's status and, for a blocked
/// one, the parents that let it down and the SQL it would run.
#[test]
fn one_table_failing_in_any_phase_leaves_the_others_applied_and_each_says_why() {
    let _shared = warehouse_shared();
    let catalog = format!("pertable_{}", std::process::id());
    let dir = tempfile::tempdir().unwrap();
    let (f, c) = dbx_setup(dir.path(), &catalog, "");
    // a live table with a column Unity Catalog lists as GEOGRAPHY (emulated: Spark here has
    // no such type), not declared; and one declared, read as unreadable
    faults(serde_json::json!({"uc_column_types": {
        format!("{catalog}.sales.places.geo"): {"type_text": "geography(4326)", "type_name": "GEOGRAPHY",
            "type_json": "{\"name\":\"geo\",\"type\":\"geography(4326)\",\"nullable\":true,\"metadata\":{}}"},
        format!("{catalog}.sales.routes.path"): {"type_text": "geometry(4326)", "type_name": "GEOMETRY",
            "type_json": "{\"name\":\"path\",\"type\":\"geometry(4326)\",\"nullable\":true,\"metadata\":{}}"},
    }}));
    sql(&format!(
        "CREATE TABLE {catalog}.sales.places (id BIGINT, geo STRING) USING DELTA"
    ));
    sql(&format!(
        "CREATE TABLE {catalog}.sales.routes (id BIGINT, path STRING) USING DELTA"
    ));
    // a table with rows: adding a NOT NULL column without `using:` is refused by the rules
    sql(&format!(
        "CREATE TABLE {catalog}.sales.refused (id BIGINT NOT NULL) USING DELTA"
    ));
    sql(&format!("INSERT INTO {catalog}.sales.refused VALUES (1)"));
    let m = Path::new(&f);
    let w = |file: &str, text: String| std::fs::write(m.join(file), text).unwrap();
    w(
        "routes.yaml",
        table_yaml("routes", "  columns:\n    - {name: id, type: bigint}\n"),
    );
    w(
        "refused.yaml",
        table_yaml(
            "refused",
            "  columns:\n    - {name: id, type: bigint, nullable: false}\n    - {name: kind, type: string, nullable: false}\n  constraints:\n    - primaryKey: {columns: [id]}\n",
        ),
    );
    w(
        "refusedchild.yaml",
        table_yaml(
            "refusedchild",
            "  columns:\n    - {name: id, type: bigint}\n    - {name: refused_id, type: bigint}\n  constraints:\n    - foreignKey: {columns: [refused_id], references: refused, referencedColumns: [id]}\n",
        ),
    );
    w(
        "chainroot.yaml",
        table_yaml(
            "chainroot",
            "  columns:\n    - {name: id, type: bigint, nullable: false}\n  constraints:\n    - primaryKey: {columns: [id]}\n",
        ),
    );
    w(
        "chainmid.yaml",
        table_yaml(
            "chainmid",
            "  columns:\n    - {name: id, type: bigint, nullable: false}\n    - {name: root_id, type: bigint}\n  constraints:\n    - primaryKey: {columns: [id]}\n    - foreignKey: {columns: [root_id], references: chainroot, referencedColumns: [id]}\n",
        ),
    );
    w(
        "chainleaf.yaml",
        table_yaml(
            "chainleaf",
            "  columns:\n    - {name: id, type: bigint}\n    - {name: mid_id, type: bigint}\n  constraints:\n    - foreignKey: {columns: [mid_id], references: chainmid, referencedColumns: [id]}\n",
        ),
    );
    // the plan: the refused table's child is blocked at plan time and shows its SQL
    let (code, out, err) = run(&["plan", "-f", &f, "--config", &c]);
    assert_eq!(code, 1, "refused tables → exit 1\n{out}\n{err}");
    assert!(
        out.contains("NonNullableColumnAdd")
            && out.contains(&format!(
                "blocked: its foreign keys depend on {catalog}.sales.refused"
            ))
            && out.contains("what would run once they are fixed")
            && out.contains(&format!("CREATE TABLE `{catalog}`.`sales`.`refusedchild`")),
        "{out}"
    );
    assert!(
        out.contains(&format!("{catalog}.sales.routes"))
            && out.contains("TableUnreadable")
            && out.contains("geometry"),
        "the declared table of an unknown type is refused by name, its column and type named: {out}"
    );
    // the root's CREATE fails in the warehouse
    faults(
        serde_json::json!({"fail_pattern": format!("CREATE TABLE `{catalog}`\\.`sales`\\.`chainroot`")}),
    );
    let (code, out, err) = run(&["apply", "-f", &f, "--config", &c, "--format", "json"]);
    faults(serde_json::json!({"fail_pattern": null}));
    assert_eq!(code, 1, "a table failed → exit 1\n{out}\n{err}");
    let report: serde_json::Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    let status = |t: &str| -> serde_json::Value {
        report["tables"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| name(&x["table"]) == format!("{catalog}.sales.{t}"))
            .cloned()
            .unwrap_or_else(|| panic!("{t} in {report}"))
    };
    for t in ["orders", "customers"] {
        assert_eq!(status(t)["status"], "applied", "{t}: {report}");
    }
    assert_eq!(status("routes")["status"], "unreadable", "{report}");
    assert_eq!(status("refused")["status"], "rejected", "{report}");
    assert_eq!(
        status("refused")["failures"][0]["rule"],
        "NonNullableColumnAdd"
    );
    let child = status("refusedchild");
    assert_eq!(child["status"], "blocked", "{report}");
    let names = |v: &serde_json::Value| -> Vec<String> {
        v.as_array().into_iter().flatten().map(name).collect()
    };
    assert_eq!(
        names(&child["by"]),
        vec![format!("{catalog}.sales.refused")]
    );
    assert!(
        child["would_run"][0]
            .as_str()
            .unwrap()
            .contains("CREATE TABLE"),
        "{child}"
    );
    assert_eq!(status("chainroot")["status"], "failed", "{report}");
    assert!(
        status("chainroot")["error"]
            .as_str()
            .unwrap()
            .contains("injected failure"),
        "{report}"
    );
    for (t, parent) in [("chainmid", "chainroot"), ("chainleaf", "chainmid")] {
        let s = status(t);
        assert_eq!(s["status"], "blocked", "{t}: {report}");
        assert_eq!(
            names(&s["by"]),
            vec![format!("{catalog}.sales.{parent}")],
            "{t}"
        );
        assert!(
            s["would_run"][0]
                .as_str()
                .unwrap()
                .contains(&format!("`{t}`")),
            "{s}"
        );
    }
    // each step of a blocked table says which parent let it down
    let mid_steps: Vec<&serde_json::Value> = report["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| name(&s["table"]) == format!("{catalog}.sales.chainmid"))
        .collect();
    assert!(!mid_steps.is_empty(), "{report}");
    for s in mid_steps {
        assert_eq!(s["status"], "not_run", "{s}");
        assert!(
            s["detail"]
                .as_str()
                .unwrap_or_default()
                .contains(&format!("blocked by {catalog}.sales.chainroot")),
            "{s}"
        );
    }
    // what was refused or blocked was not touched; the rest exists
    let (code, out, err) = run(&["plan", "-f", &f, "--config", &c]);
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(
        out.contains(&format!("{catalog}.sales.chainroot   + create"))
            && !out.contains(&format!("{catalog}.sales.orders   + create"))
            && !out.contains(&format!("{catalog}.sales.customers   + create")),
        "{out}"
    );
    // the undeclared table of an unknown type was never in the way
    assert!(
        !out.contains("places") || out.contains("unmanaged"),
        "{out}"
    );
    faults(serde_json::json!({"uc_column_types": {}}));
}

/// `import` writes everything the Databricks reader sees (keys, tags, grants, owner, clustering,
/// identity, generated columns, defaults, masks, CHECKs), so the first plan of the imported
/// manifests is only CLAIM steps, the first apply claims the tables without dropping any
/// constraint (the foreign key survives), and the next plan is empty.
#[test]
fn an_import_round_trips_every_field_so_the_first_plan_only_claims() {
    let _shared = warehouse_shared();
    let catalog = format!("importrt_{}", std::process::id());
    let dir = tempfile::tempdir().unwrap();
    let (_, c) = dbx_setup(dir.path(), &catalog, "");
    for f in support::warehouse::MASK_FUNCTIONS {
        sql(f);
    }
    let built = dir.path().join("built");
    std::fs::create_dir(&built).unwrap();
    std::fs::write(
        built.join("all.yaml"),
        format!(
            "apiVersion: delta-operator.io/v1alpha1\nkind: DeltaSchema\nmetadata: {{name: sales}}\nspec: {{catalog: {catalog}}}\n---\n{}{}",
            table_yaml(
                "customers",
                "  comment: one row per customer
  clusterBy: [id]
  tags: {domain: sales}
  grants: [{principal: analysts, privileges: [SELECT]}]
  owner: data-eng
  constraints:
    - primaryKey: {name: customers_pk, columns: [id]}
  columns:
    - {name: id, type: bigint, nullable: false, identity: {generated: Always, start: 10, increment: 5}, comment: surrogate key}
    - {name: email, type: string, mask: {function: main.sec.mask_email}, tags: {pii: email}}
    - {name: region, type: string, default: \"'EU'\"}
---
"
            ),
            table_yaml(
                "orders",
                "  partitionedBy: [day]
  constraints:
    - check: {name: amount_not_negative, expression: amount >= 0}
    - foreignKey: {name: orders_customer_fk, columns: [customer_id], references: customers, referencedColumns: [id]}
  columns:
    - {name: order_id, type: bigint, nullable: false}
    - {name: customer_id, type: bigint}
    - {name: amount, type: 'decimal(18,2)'}
    - {name: ts, type: timestamp}
    - {name: day, type: date, generated: CAST(ts AS DATE)}
"
            ),
        ),
    )
    .unwrap();
    let b = built.to_str().unwrap();
    let (code, out, err) = run(&["apply", "-f", b, "--config", &c]);
    assert_eq!(code, 0, "{out}\n{err}");
    // the tables as another tool left them: no owner marker, no record of constraints
    for t in ["customers", "orders"] {
        sql(&format!(
            "ALTER TABLE `{catalog}`.`sales`.`{t}` UNSET TBLPROPERTIES IF EXISTS ('delta-operator.io/owner', 'delta-operator.io/constraints')"
        ));
    }
    let imported = dir.path().join("imported");
    let (code, out, err) = run(&[
        "import",
        "--schema",
        &format!("{catalog}.sales"),
        "-o",
        imported.to_str().unwrap(),
        "--config",
        &c,
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    let written: String = std::fs::read_dir(&imported)
        .unwrap()
        .flatten()
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .collect();
    for field in [
        "primaryKey",
        "foreignKey",
        "identity",
        "generated",
        "default",
        "mask",
        "clusterBy",
        "grants",
        "owner: data-eng",
        "pii",
        "amount_not_negative",
    ] {
        assert!(written.contains(field), "import writes {field}:\n{written}");
    }
    let i = imported.to_str().unwrap();
    let (code, out, err) = run(&["plan", "-f", i, "--config", &c]);
    assert_eq!(code, 2, "{out}\n{err}");
    let steps: Vec<&str> = out
        .lines()
        .filter(|l| {
            let t = l.trim_start();
            t.split_once(". ")
                .is_some_and(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
        })
        .collect();
    assert_eq!(steps.len(), 2, "two tables, one step each:\n{out}");
    assert!(
        steps.iter().all(|l| l.contains("CLAIM ownership")),
        "only CLAIM steps after an import:\n{out}"
    );
    let (code, out, err) = run(&["apply", "-f", i, "--config", &c]);
    assert_eq!(code, 0, "{out}\n{err}");
    let (code, out, err) = run(&["plan", "-f", i, "--config", &c]);
    assert_eq!(code, 0, "the claimed tables plan clean:\n{out}\n{err}");
    // the foreign key is still there, and now the operator's: the record names it
    let (status, v) = http::blocking_get(
        &format!(
            "{}/api/2.1/unity-catalog/tables/{catalog}.sales.orders",
            env("DATABRICKS_HOST")
        ),
        &env("DATABRICKS_TOKEN"),
    );
    assert_eq!(status, 200, "{v}");
    assert!(
        v["table_constraints"]
            .to_string()
            .contains("orders_customer_fk"),
        "{v}"
    );
    assert!(
        v["properties"]["delta-operator.io/constraints"]
            .as_str()
            .is_some_and(
                |r| r.contains("fk:customer_id->") && r.contains("check:amount_not_negative")
            ),
        "{v}"
    );
}

/// A shared schema: `import` recognises what another tool makes (a pipeline's table by its
/// `pipelines.*` properties, a streaming table) and writes governance-only specs for
/// them (scope Annotations, only annotated columns, no type), a full spec for the plain table,
/// a DeltaView for the view, and the first plan after the import is only claims: one for the
/// plain table, one at scope Annotations for the pipeline's table, none for the streaming table
/// (it takes no table property), the view's marker property. After the apply, everything plans
/// clean.
#[test]
fn an_import_of_a_shared_schema_writes_governance_only_specs_and_plans_only_claims() {
    let _shared = warehouse_shared();
    let catalog = format!("importshared_{}", std::process::id());
    let dir = tempfile::tempdir().unwrap();
    let (_, c) = dbx_setup(dir.path(), &catalog, "");
    let s = format!("{catalog}.sales");
    sql(&format!(
        "CREATE TABLE {s}.plain (id BIGINT NOT NULL, note STRING COMMENT 'free text') USING delta COMMENT 'ours'"
    ));
    sql(&format!(
        "CREATE TABLE {s}.bronze (id BIGINT, payload STRING) USING delta TBLPROPERTIES ('pipelines.pipelineId' = 'p-1234')"
    ));
    sql(&format!(
        "ALTER TABLE {s}.bronze ALTER COLUMN payload SET TAGS ('pii' = 'true')"
    ));
    sql(&format!(
        "CREATE STREAMING TABLE {s}.events (id BIGINT, amount INT) USING delta"
    ));
    sql(&format!(
        "ALTER STREAMING TABLE {s}.events SET TAGS ('source' = 'kafka')"
    ));
    sql(&format!(
        "CREATE VIEW {s}.recent AS SELECT id FROM {s}.plain"
    ));
    let imported = dir.path().join("imported");
    let (code, out, err) = run(&[
        "import",
        "--schema",
        &s,
        "-o",
        imported.to_str().unwrap(),
        "--config",
        &c,
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    for (table, why) in [
        ("bronze", "pipelines.* properties"),
        ("events", "streaming table"),
    ] {
        assert!(
            err.contains(&format!("governance-only {s}.{table}: ")) && err.contains(why),
            "{table}: {err}"
        );
    }
    let read = |f: &str| std::fs::read_to_string(imported.join(f)).unwrap();
    let bronze = read("bronze.yaml");
    assert!(
        bronze.contains("scope: Annotations")
            && bronze.contains("pii")
            && !bronze.contains("type:"),
        "{bronze}"
    );
    assert!(
        !bronze.contains("pipelines.pipelineId"),
        "the pipeline's properties are its own: {bronze}"
    );
    assert!(read("events.yaml").contains("source: kafka"));
    // the view is a DeltaView (a Unity Catalog has them), not a governance-only DeltaTable
    assert!(
        !err.contains(&format!("governance-only {s}.recent")),
        "{err}"
    );
    assert!(!imported.join("recent.yaml").exists());
    assert!(read("recent.view.yaml").contains("kind: DeltaView"));
    let plain = read("plain.yaml");
    assert!(
        !plain.contains("scope:") && plain.contains("type: bigint"),
        "{plain}"
    );

    let i = imported.to_str().unwrap();
    let (code, out, err) = run(&["plan", "-f", i, "--config", &c]);
    assert_eq!(code, 2, "{out}\n{err}");
    let steps: Vec<&str> = out
        .lines()
        .filter(|l| {
            let t = l.trim_start();
            t.split_once(". ")
                .is_some_and(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
        })
        .collect();
    assert_eq!(steps.len(), 3, "two claims and the view's marker:\n{out}");
    assert_eq!(
        steps
            .iter()
            .filter(|l| l.contains("CLAIM ownership"))
            .count(),
        2,
        "only CLAIM steps after an import:\n{out}"
    );
    assert!(
        steps
            .iter()
            .any(|l| l.contains("SET TBLPROPERTIES (delta-operator.io/owner)")),
        "the view's only step puts its marker on:\n{out}"
    );
    assert!(out.contains("governance at scope Annotations"), "{out}");
    let (code, out, err) = run(&["apply", "-f", i, "--config", &c]);
    assert_eq!(code, 0, "{out}\n{err}");
    let (code, out, err) = run(&["plan", "-f", i, "--config", &c]);
    assert_eq!(code, 0, "the governed tables plan clean:\n{out}\n{err}");
}

/// `import` writes a DeltaView, DeltaFunction or DeltaVolume for each live view, SQL function
/// and volume (never a view as a DeltaTable): every field as live, so the first plan only puts
/// the owner marker on the unmarked ones (the view's property, the volume's comment line, the
/// function's replace with the marker line and what the replace drops put back), nothing for
/// the one a resource already owns; after the apply, everything plans clean. A function named
/// like a table and a volume with quotes, a backtick and accents in its name round trip.
#[test]
fn an_import_writes_views_functions_and_volumes_whose_first_plan_only_claims() {
    let _shared = warehouse_shared();
    let catalog = format!("importobj_{}", std::process::id());
    let dir = tempfile::tempdir().unwrap();
    let (_, c) = dbx_setup(dir.path(), &catalog, "");
    let s = format!("{catalog}.sales");
    // what the operator made before: a table and a volume (its marker names archive-files)
    let built = dir.path().join("built");
    std::fs::create_dir(&built).unwrap();
    std::fs::write(
        built.join("all.yaml"),
        format!(
            "apiVersion: delta-operator.io/v1alpha1\nkind: DeltaSchema\nmetadata: {{name: sales}}\nspec: {{catalog: {catalog}}}\n---\n{}---\napiVersion: delta-operator.io/v1alpha1\nkind: DeltaVolume\nmetadata: {{name: archive-files}}\nspec:\n  schemaRef: sales\n  name: archive\n  comment: old files\n  tags: {{tier: cold}}\n",
            table_yaml(
                "plain",
                "  columns:\n    - {name: id, type: bigint}\n    - {name: email, type: string}\n"
            ),
        ),
    )
    .unwrap();
    let b = built.to_str().unwrap();
    let (code, out, err) = run(&["apply", "-f", b, "--config", &c]);
    assert_eq!(code, 0, "{out}\n{err}");
    // what another tool made: no marker
    for statement in [
        format!(
            "CREATE VIEW {s}.recent (id COMMENT 'the key', email) COMMENT 'recent rows' TBLPROPERTIES ('quality' = 'gold') AS SELECT id, email FROM {s}.plain WHERE id > 10"
        ),
        format!("ALTER VIEW {s}.recent SET TAGS ('domain' = 'sales')"),
        format!("GRANT SELECT ON VIEW {s}.recent TO analysts"),
        format!(
            "CREATE FUNCTION {s}.mask_email(email STRING COMMENT 'the address') RETURNS STRING DETERMINISTIC COMMENT 'masks it' RETURN CASE WHEN email IS NULL THEN NULL ELSE '***' END"
        ),
        format!("GRANT EXECUTE ON FUNCTION {s}.mask_email TO analysts"),
        format!("CREATE FUNCTION {s}.plain(x INT) RETURNS INT RETURN x + 1"),
        format!("CREATE VOLUME {s}.landing COMMENT 'raw files'"),
        format!("ALTER VOLUME {s}.landing SET TAGS ('domain' = 'sales')"),
        format!("CREATE VOLUME {s}.`ünï``co'de\"x` COMMENT 'odd'"),
    ] {
        sql(&statement);
    }
    let hostile = "ünï`co'de\"x";
    let imported = dir.path().join("imported");
    let (code, out, err) = run(&[
        "import",
        "--schema",
        &s,
        "-o",
        imported.to_str().unwrap(),
        "--config",
        &c,
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out.contains("1 views, 2 functions, 3 volumes"),
        "{out}\n{err}"
    );
    assert!(!err.contains("skipped"), "{err}");
    let mut files: Vec<String> = std::fs::read_dir(&imported)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    let docs: Vec<(String, serde_json::Value)> = files
        .iter()
        .map(|f| {
            let text = std::fs::read_to_string(imported.join(f)).unwrap();
            let v: serde_json::Value =
                serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{f}: {e}\n{text}"));
            (f.clone(), v)
        })
        .collect();
    let doc = |kind: &str, name: &str| -> &serde_json::Value {
        let found: Vec<&(String, serde_json::Value)> = docs
            .iter()
            .filter(|(_, d)| {
                d["kind"] == kind
                    && (d["spec"]["name"] == name
                        || (d["spec"]["name"].is_null() && d["metadata"]["name"] == name))
            })
            .collect();
        assert_eq!(found.len(), 1, "one {kind} {name}: {files:?}");
        &found[0].1
    };
    // the view: a DeltaView only, never also a DeltaTable
    assert!(
        docs.iter()
            .all(|(_, d)| !(d["kind"] == "DeltaTable" && d["metadata"]["name"] == "recent")),
        "{files:?}"
    );
    assert!(files.contains(&"recent.view.yaml".to_string()), "{files:?}");
    let v = &doc("DeltaView", "recent")["spec"];
    assert!(
        v["query"]
            .as_str()
            .is_some_and(|q| q.contains("WHERE id > 10")),
        "{v}"
    );
    assert_eq!(v["comment"], "recent rows", "{v}");
    assert_eq!(v["columnComments"], serde_json::json!({"id": "the key"}));
    assert_eq!(v["tags"], serde_json::json!({"domain": "sales"}));
    assert_eq!(v["properties"], serde_json::json!({"quality": "gold"}));
    assert_eq!(
        v["grants"],
        serde_json::json!([{"principal": "analysts", "privileges": ["SELECT"]}])
    );
    assert!(v["owner"].is_string(), "{v}");
    let f = &doc("DeltaFunction", "mask_email");
    assert_eq!(f["metadata"]["name"], "mask-email");
    let f = &f["spec"];
    assert_eq!(
        f["parameters"],
        serde_json::json!([{"name": "email", "type": "string", "comment": "the address"}])
    );
    assert_eq!(f["returns"], "string");
    assert!(
        f["body"].as_str().is_some_and(|b| b.contains("'***'")),
        "{f}"
    );
    assert_eq!(f["deterministic"], true);
    assert_eq!(f["comment"], "masks it");
    assert_eq!(
        f["grants"],
        serde_json::json!([{"principal": "analysts", "privileges": ["EXECUTE"]}])
    );
    // a function named like a table: files apart, each its kind's name
    assert!(
        files.contains(&"plain.yaml".to_string())
            && files.contains(&"plain.function.yaml".to_string()),
        "{files:?}"
    );
    assert_eq!(doc("DeltaTable", "plain")["metadata"]["name"], "plain");
    assert_eq!(doc("DeltaFunction", "plain")["metadata"]["name"], "plain");
    let l = &doc("DeltaVolume", "landing")["spec"];
    assert_eq!(l["comment"], "raw files");
    assert_eq!(l["tags"], serde_json::json!({"domain": "sales"}));
    // the owned volume keeps its owner's name; its marker is not the user's comment
    let a = doc("DeltaVolume", "archive");
    assert_eq!(a["metadata"]["name"], "archive-files", "{a}");
    assert_eq!(a["spec"]["comment"], "old files", "{a}");
    assert_eq!(doc("DeltaVolume", hostile)["spec"]["comment"], "odd");

    let i = imported.to_str().unwrap();
    let (code, out, err) = run(&["plan", "-f", i, "--config", &c, "--format", "json"]);
    assert_eq!(code, 2, "{out}\n{err}");
    let plan: serde_json::Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    for t in plan["tables"].as_array().unwrap() {
        assert!(
            t["steps"].as_array().is_none_or(|s| s.is_empty()),
            "the owned table plans clean: {t}"
        );
    }
    let actions = |name: &str| -> Vec<String> {
        let o = plan["objects"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["object"]["name"] == name)
            .unwrap_or_else(|| panic!("no plan for {name}: {plan}"));
        assert_eq!(o["outcome"], "accepted", "{o}");
        o["steps"]
            .as_array()
            .map(|s| {
                s.iter()
                    .map(|s| s["action"].as_str().unwrap().to_string())
                    .collect()
            })
            .unwrap_or_default()
    };
    let step = |name: &str, n: usize| -> serde_json::Value {
        plan["objects"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["object"]["name"] == name)
            .unwrap()["steps"][n]
            .clone()
    };
    assert_eq!(actions("recent"), ["set_properties"], "{plan}");
    assert_eq!(
        step("recent", 0)["properties"],
        serde_json::json!({"delta-operator.io/owner": "default/recent"})
    );
    // a function's marker is a comment line: the replace, then its grants and owner put back
    assert_eq!(
        actions("mask_email"),
        ["replace_function", "grant", "set_owner"],
        "{plan}"
    );
    // the user's comment, the replace's put-back record (what the steps after it owe), the marker
    let comment = step("mask_email", 0)["comment"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        comment.starts_with("masks it\n[delta-operator.io/put-back=")
            && comment.contains("analysts")
            && comment.ends_with("]\n[delta-operator.io/owner=default/mask-email]"),
        "{comment}"
    );
    assert_eq!(
        actions("plain"),
        ["replace_function", "set_owner"],
        "{plan}"
    );
    assert_eq!(actions("landing"), ["set_comment"], "{plan}");
    assert_eq!(
        step("landing", 0)["comment"],
        "raw files\n[delta-operator.io/owner=default/landing]"
    );
    assert_eq!(actions(hostile), ["set_comment"], "{plan}");
    assert!(actions("archive").is_empty(), "the owned volume: {plan}");

    let (code, out, err) = run(&["apply", "-f", i, "--config", &c]);
    assert_eq!(code, 0, "{out}\n{err}");
    let (code, out, err) = run(&["plan", "-f", i, "--config", &c]);
    assert_eq!(code, 0, "the imported objects plan clean:\n{out}\n{err}");
    // the marker is on, the user's parts are as they were
    let (status, vol) = http::blocking_get(
        &format!(
            "{}/api/2.1/unity-catalog/volumes/{s}.landing",
            env("DATABRICKS_HOST")
        ),
        &env("DATABRICKS_TOKEN"),
    );
    assert_eq!(status, 200, "{vol}");
    assert_eq!(
        vol["comment"], "raw files\n[delta-operator.io/owner=default/landing]",
        "{vol}"
    );
    // `read` keeps the live objects, so an offline `plan --observed` is as clean as the live one
    let state = dir.path().join("state.json");
    let st = state.to_str().unwrap();
    let (code, out, err) = run(&["read", "-f", i, "-o", st, "--config", &c]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out.contains("views, functions or volumes"),
        "read names the objects it kept: {out}"
    );
    let offline = |file: &str| {
        run(&[
            "plan",
            "-f",
            i,
            "--observed",
            file,
            "--backend",
            "databricks",
            "--format",
            "json",
        ])
    };
    let (code, out, err) = offline(st);
    assert_eq!(code, 0, "the offline plan is clean too:\n{out}\n{err}");
    // and it is the objects in the file that make it so: without them, each is created again
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&state).unwrap()).unwrap();
    assert!(
        v["objects"].as_array().is_some_and(|o| o.len() >= 6),
        "{}",
        v["objects"]
    );
    v.as_object_mut().unwrap().remove("objects");
    let bare = dir.path().join("bare.json");
    std::fs::write(&bare, v.to_string()).unwrap();
    let (code, out, _) = offline(bare.to_str().unwrap());
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("create_view"), "{out}");
}

/// A step whose restore point cannot be read still runs, and its line says it had none and why
/// (the reference's promise; it used to fail the step): `DESCRIBE HISTORY` fails in the
/// warehouse while an approved column drop runs.
#[test]
fn a_step_whose_restore_point_cannot_be_read_runs_and_its_line_says_so() {
    let _shared = warehouse_shared();
    let catalog = format!("norestore_{}", std::process::id());
    let dir = tempfile::tempdir().unwrap();
    let (f, c) = dbx_setup(dir.path(), &catalog, "");
    let (code, out, err) = run(&["apply", "-f", &f, "--config", &c]);
    assert_eq!(code, 0, "{out}\n{err}");
    let orders = Path::new(&f).join("orders.yaml");
    let spec = std::fs::read_to_string(&orders).unwrap();
    std::fs::write(
        &orders,
        spec.replace("    - name: status\n      type: string\n", ""),
    )
    .unwrap();
    let (code, out, err) = run(&["plan", "-f", &f, "--config", &c]);
    assert_eq!(code, 2, "{out}\n{err}");
    let id = out
        .lines()
        .find_map(|l| l.strip_prefix("Plan id: "))
        .expect("a plan id")
        .to_string();
    faults(serde_json::json!({"fail_pattern": format!("DESCRIBE HISTORY `{catalog}`")}));
    let (code, out, err) = run(&["apply", "-f", &f, "--config", &c, "--approve", &id]);
    faults(serde_json::json!({"fail_pattern": null}));
    assert_eq!(
        code, 0,
        "the step runs without its restore point\n{out}\n{err}"
    );
    let line = out
        .lines()
        .find(|l| l.contains("DROP COLUMN status"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        line.contains("ok")
            && line.contains("no restore point: the table's version could not be read"),
        "{line}"
    );
    let (code, out, err) = run(&["plan", "-f", &f, "--config", &c]);
    assert_eq!(code, 0, "{out}\n{err}");
}

/// The tables of `<catalog>.sales` as Unity Catalog lists them (REST).
fn listed_tables(catalog: &str) -> Vec<String> {
    let (status, v) = http::blocking_get(
        &format!(
            "{}/api/2.1/unity-catalog/tables?catalog_name={catalog}&schema_name=sales",
            env("DATABRICKS_HOST")
        ),
        &env("DATABRICKS_TOKEN"),
    );
    assert_eq!(status, 200, "{v}");
    v["tables"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_string))
        .collect()
}

/// A staged rewrite paused after its STAGE step: its staging copy is not another apply's
/// leftover while its run may be alive (its process runs on this host and holds the lock), so
/// a plan meanwhile does not offer to remove it. Once the process is killed, the copy is a
/// leftover: the plan shows it and the next apply removes it and converges.
#[test]
fn a_live_runs_databricks_staging_copy_is_not_a_leftover_until_its_run_is_gone() {
    let _shared = warehouse_shared();
    let catalog = format!("livecopy_{}", std::process::id());
    let dir = tempfile::tempdir().unwrap();
    let (f, c) = dbx_setup(dir.path(), &catalog, "");
    // no NOT NULL column: the emulator's OSS Delta cannot put one back after a replace
    let orders = Path::new(&f).join("orders.yaml");
    let spec = std::fs::read_to_string(&orders).unwrap();
    let nullable = spec.replace(
        "    - name: order_id\n      type: bigint\n      nullable: false\n",
        "    - name: order_id\n      type: bigint\n",
    );
    assert_ne!(spec, nullable);
    std::fs::write(&orders, &nullable).unwrap();
    let (code, out, err) = run(&["apply", "-f", &f, "--config", &c]);
    assert_eq!(code, 0, "{out}\n{err}");
    // amount int → smallint: a conversion that could lose values, staged
    let spec = nullable;
    let narrowed = spec.replace(
        "    - name: amount\n      type: int\n",
        "    - name: amount\n      type: smallint\n",
    );
    assert_ne!(spec, narrowed);
    std::fs::write(&orders, narrowed).unwrap();
    let (code, out, err) = run(&["plan", "-f", &f, "--config", &c, "--format", "json"]);
    assert_eq!(code, 2, "{out}\n{err}");
    let plan: serde_json::Value = serde_json::from_str(&out).unwrap();
    let id = plan["id"].as_str().unwrap().to_string();
    let (code, text, err) = run(&["plan", "-f", &f, "--config", &c]);
    assert_eq!(code, 2, "{text}\n{err}");
    let stage = text
        .lines()
        .find(|l| l.contains("STAGE rewritten data"))
        .unwrap_or_else(|| panic!("a staged rewrite: {text}"));
    let number: String = stage
        .trim_start()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    let next = format!("step-{}", number.parse::<u32>().unwrap() + 1);
    // the first apply stops after its STAGE step, holding the lock, its copy made
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_delta-operator"));
    cmd.args(["apply", "-f", &f, "--config", &c, "--approve", &id])
        .env("DELTA_OPERATOR_FAILPOINT", format!("slow-{next}"))
        .env("DELTA_OPERATOR_FAILPOINT_SECONDS", "300");
    let mut first = support::start_paused(
        cmd,
        &next,
        "first apply",
        std::time::Duration::from_secs(180),
    );
    let copy = "orders__delta_operator_staging_";
    let copies: Vec<String> = listed_tables(&catalog)
        .into_iter()
        .filter(|t| t.starts_with(copy))
        .collect();
    assert_eq!(copies.len(), 1, "the first run's copy: {copies:?}");
    let (code, out, err) = run(&["plan", "-f", &f, "--config", &c]);
    assert_eq!(code, 2, "{out}\n{err}");
    assert!(
        !out.contains("interrupted runs") && !out.contains(&copies[0]),
        "a live run's copy is no leftover: {out}"
    );
    // its process is gone: the copy is a leftover now, and the next apply removes it
    first.kill().unwrap();
    let _ = first.wait();
    let (code, out, err) = run(&["plan", "-f", &f, "--config", &c]);
    assert_eq!(code, 2, "{out}\n{err}");
    assert!(
        out.contains("REMOVE leftovers of interrupted runs")
            && out.contains("left by interrupted runs"),
        "a dead run's copy is a leftover: {out}"
    );
    let (code, out, err) = run(&["plan", "-f", &f, "--config", &c, "--format", "json"]);
    assert_eq!(code, 2, "{out}\n{err}");
    let id = serde_json::from_str::<serde_json::Value>(&out).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let (code, out, err) = run(&[
        "apply",
        "-f",
        &f,
        "--config",
        &c,
        "--approve",
        &id,
        "--lock-wait",
        "30s",
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        !listed_tables(&catalog).iter().any(|t| t.starts_with(copy)),
        "the leftover copy is removed"
    );
    let (code, out, err) = run(&["plan", "-f", &f, "--config", &c]);
    assert_eq!(code, 0, "{out}\n{err}");
}
