//! The controller with a Databricks target: a real kube-apiserver + etcd (`e2e/with-controlplane.sh`)
//! and the warehouse emulator (`e2e/warehouse/with-warehouse.sh`), both started by `make test`.
//! The examples become Ready on the emulator, and /metrics counts the statements sent: none for
//! drift checks with the warehouse stopped, some once a change needs the warehouse.

mod support;

use std::path::Path;
use std::time::Duration;

use delta_operator::backend::databricks::DatabricksBackend;
use delta_operator::backend::{Backend, Extras};
use delta_operator::config::DatabricksTarget;
use delta_operator::engine::read_and_plan;
use delta_operator::model::TableRef;
use support::e2e::*;
use support::warehouse::{catalog_with_sales, faults, sql};

fn backend() -> DatabricksBackend {
    for k in [
        "DATABRICKS_HOST",
        "DATABRICKS_TOKEN",
        "DATABRICKS_WAREHOUSE_ID",
    ] {
        support::warehouse::env(k);
    }
    delta_operator::backend::open::databricks(&DatabricksTarget::default())
        .expect("a backend from DATABRICKS_*")
}

/// The examples with their catalog renamed: a fresh catalog per run on the shared emulator.
fn examples_in(catalog: &str, dir: &Path) {
    for e in std::fs::read_dir(examples()).unwrap().flatten() {
        let text = std::fs::read_to_string(e.path())
            .unwrap()
            .replace("catalog: main", &format!("catalog: {catalog}"));
        std::fs::write(dir.join(e.file_name()), text).unwrap();
    }
}

/// The value of `delta_operator_statements_total{target="<target>"}` in a /metrics answer.
fn statements_metric(metrics: &str, target: &str) -> Option<u64> {
    metric(
        metrics,
        &format!("delta_operator_statements_total{{target=\"{target}\"}} "),
    )
}

/// The value of the /metrics line starting with `prefix`.
fn metric(metrics: &str, prefix: &str) -> Option<u64> {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(prefix))
        .and_then(|v| v.trim().parse().ok())
}

#[test]
fn examples_become_ready_on_a_databricks_target_and_statements_are_counted() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let b = backend();
    let catalog = format!("ctl_{}", std::process::id());
    rt.block_on(catalog_with_sales(&b, &catalog));
    let ns = namespace("dbx");
    let op = Operator::start_databricks(&ns, "    namespaces: ['*']\n    schemas: ['ctl_*']", &[]);
    let dir = tempfile::tempdir().unwrap();
    examples_in(&catalog, dir.path());
    kubectl_ok(&["apply", "-n", &ns, "-f", dir.path().to_str().unwrap()]);
    let (ok, out, err) = kubectl(&[
        "wait",
        "-n",
        &ns,
        "--for=condition=Ready",
        "deltatable/orders",
        "deltatable/customers",
        "--timeout=240s",
    ]);
    assert!(
        ok,
        "not Ready: {out}{err}\n--- operator log (tail)\n{}",
        op.log()
            .lines()
            .rev()
            .take(40)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect::<Vec<_>>()
            .join("\n")
    );
    wait_condition(&ns, "deltaschema", "sales", "Ready", "True", None);
    let orders = get(&ns, "deltatable", "orders");
    assert_eq!(
        orders["status"]["table"],
        format!("{catalog}.sales.orders"),
        "{}",
        orders["status"]
    );

    // the tables are on the warehouse, marked as owned by their resources
    let live = rt
        .block_on(b.read(
            &[
                TableRef::new(&catalog, "sales", "orders"),
                TableRef::new(&catalog, "sales", "customers"),
            ],
            &Extras::none(),
        ))
        .expect("read");
    let orders = live[0].as_ref().expect("orders exists on the warehouse");
    assert_eq!(orders.owner_marker(), Some(format!("{ns}/orders").as_str()));
    assert_eq!(orders.partitioned_by, vec!["order_date".to_string()]);
    assert_eq!(orders.checks.len(), 1);
    assert!(live[1].is_some(), "customers exists on the warehouse");

    // the metric counts what was sent to this target
    let m = op.http("/metrics");
    let sent = statements_metric(&m, "dbx")
        .unwrap_or_else(|| panic!("no statements metric for dbx:\n{m}"));
    assert!(sent > 0, "{m}");

    // the warehouse stops (auto-stop when idle); drift checks keep reading (every 2 s here)
    // through Unity Catalog REST only: the operator sends no statement, and nothing is applied
    faults(serde_json::json!({"warehouse_state": "STOPPED", "warehouse_start_seconds": 25}));
    let reconciles = |m: &str| metric(m, "delta_operator_reconciles_total ").unwrap_or(0);
    let m = op.http("/metrics");
    let (sent, from) = (statements_metric(&m, "dbx").unwrap_or(0), reconciles(&m));
    // six drift checks of each of the three resources
    wait_until(
        "six rounds of drift checks",
        std::time::Duration::from_secs(120),
        || {
            let now = reconciles(&op.http("/metrics"));
            if now >= from + 18 {
                Ok(())
            } else {
                Err(format!("{} reconciles so far", now - from))
            }
        },
    );
    assert_eq!(
        statements_metric(&op.http("/metrics"), "dbx").unwrap_or(0),
        sent,
        "drift checks send no statement"
    );
    wait_condition(&ns, "deltatable", "orders", "Ready", "True", None);

    // a change whose plan reads a table's size (a new CHECK scans the table: DESCRIBE DETAIL)
    // needs the warehouse: the read starts it and status says so while it waits (Reconciling,
    // reason WarehouseStarting), then the CHECK is added and the table is Ready again
    // (stopped again first: the other tests here share the emulator and may have started it)
    faults(serde_json::json!({"warehouse_state": "STOPPED"}));
    kubectl_ok(&[
        "patch",
        "-n",
        &ns,
        "deltatable/orders",
        "--type=merge",
        "-p",
        r#"{"spec":{"constraints":[{"check":{"name":"amount_not_negative","expression":"amount >= 0"}},{"check":{"name":"order_id_positive","expression":"order_id > 0"}}]}}"#,
    ]);
    let seen = wait_condition(
        &ns,
        "deltatable",
        "orders",
        "Reconciling",
        "True",
        Some("WarehouseStarting"),
    );
    let message = seen["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Reconciling")
        .unwrap()["message"]
        .to_string();
    assert!(message.contains("is starting"), "{message}");
    faults(serde_json::json!({"warehouse_start_seconds": 0}));
    let (ok, out, err) = kubectl(&[
        "wait",
        "-n",
        &ns,
        "--for=condition=Ready",
        "deltatable/orders",
        "--timeout=240s",
    ]);
    assert!(ok, "the CHECK is added: {out}{err}");
    let live = rt
        .block_on(b.read(
            &[TableRef::new(&catalog, "sales", "orders")],
            &Extras::none(),
        ))
        .expect("read");
    assert_eq!(live[0].as_ref().expect("orders").checks.len(), 2);
    assert!(statements_metric(&op.http("/metrics"), "dbx").unwrap_or(0) > sent);
}

/// `customers` with a primary key; `broken` adds a CHECK on a column it does not have.
/// A DeltaSchema whose schema does not exist yet (its catalog does) creates it, and its
/// tables become Ready in it: the schema's reconcile reads an absent schema as absent (the
/// listing's 404), not as a read failure. Found by the examples on the node's warehouse.
#[test]
fn a_deltaschema_creates_its_absent_schema_and_its_tables_become_ready() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let b = backend();
    let catalog = format!("mk_{}", std::process::id());
    rt.block_on(sql(&b, &[format!("CREATE CATALOG {catalog}")]));
    let ns = namespace("dbx-mk");
    let op = Operator::start_databricks(&ns, "    namespaces: ['*']\n    schemas: ['mk_*']", &[]);
    let dir = tempfile::tempdir().unwrap();
    examples_in(&catalog, dir.path());
    kubectl_ok(&["apply", "-n", &ns, "-f", dir.path().to_str().unwrap()]);
    let (ok, out, err) = kubectl(&[
        "wait",
        "-n",
        &ns,
        "--for=condition=Ready",
        "deltaschema/sales",
        "deltatable/orders",
        "deltatable/customers",
        "--timeout=240s",
    ]);
    assert!(
        ok,
        "not Ready: {out}{err}\n{}\n--- operator log (tail)\n{}",
        get(&ns, "deltaschema", "sales")["status"],
        op.log()
            .lines()
            .rev()
            .take(30)
            .collect::<Vec<_>>()
            .join("\n")
    );
    let live = rt
        .block_on(b.read(
            &[TableRef::new(&catalog, "sales", "orders")],
            &Extras::none(),
        ))
        .expect("read");
    assert!(live[0].is_some(), "orders exists in the created schema");
}

fn fk_customers(broken: bool) -> String {
    let check = if broken {
        "    - check: {name: nope, expression: no_such_column > 0}\n"
    } else {
        ""
    };
    format!(
        "apiVersion: delta-operator.io/v1alpha1\nkind: DeltaTable\nmetadata: {{name: customers}}\nspec:\n  schemaRef: sales\n  columns:\n    - {{name: customer_id, type: bigint, nullable: false}}\n  constraints:\n    - primaryKey: {{columns: [customer_id]}}\n{check}"
    )
}

const FK_CHILDREN: &str = "apiVersion: delta-operator.io/v1alpha1
kind: DeltaTable
metadata: {name: orders}
spec:
  schemaRef: sales
  columns:
    - {name: order_id, type: bigint, nullable: false}
    - {name: customer_id, type: bigint}
  constraints:
    - primaryKey: {columns: [order_id]}
    - foreignKey: {columns: [customer_id], references: customers, referencedColumns: [customer_id]}
---
apiVersion: delta-operator.io/v1alpha1
kind: DeltaTable
metadata: {name: lines}
spec:
  schemaRef: sales
  columns:
    - {name: line_id, type: bigint, nullable: false}
    - {name: order_id, type: bigint}
  constraints:
    - foreignKey: {columns: [order_id], references: orders, referencedColumns: [order_id]}
";

/// The reason and message of `name`'s condition of `type_` when it is True.
fn true_of(ns: &str, name: &str, type_: &str) -> Option<(String, String)> {
    true_condition(&get(ns, "deltatable", name), type_)
}

fn wait_for(ns: &str, name: &str, type_: &str, reason: &str, says: &[&str]) {
    wait_until(
        &format!("{name} {type_} {reason} naming {says:?}"),
        std::time::Duration::from_secs(90),
        || match true_of(ns, name, type_) {
            Some((r, m)) if r == reason && says.iter().all(|s| m.contains(s)) => Ok(()),
            other => Err(format!("{other:?}")),
        },
    );
}

/// Foreign keys order resources: a child applied before its parent waits for it
/// (Reconciling, WaitingForParent), a failed parent blocks its children and
/// their children (Stalled, ParentFailed, naming it), and once the parent is
/// Ready the children follow at once: the drift interval here is 300 s, so only
/// the parent's wake-up can bring them in time.
#[test]
fn children_wait_for_their_foreign_key_parent_and_a_failed_parent_blocks_them() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let b = backend();
    let catalog = format!("ctl_fk_{}", std::process::id());
    rt.block_on(catalog_with_sales(&b, &catalog));
    let ns = namespace("dbx-fk");
    let _op = Operator::start_databricks(
        &ns,
        "    namespaces: ['*']\n    schemas: ['ctl_*']",
        &["--drift-interval", "300s"],
    );
    apply_yaml(
        &ns,
        &format!(
            "apiVersion: delta-operator.io/v1alpha1\nkind: DeltaSchema\nmetadata: {{name: sales}}\nspec: {{catalog: {catalog}}}\n"
        ),
    );
    apply_yaml(&ns, FK_CHILDREN);
    wait_for(
        &ns,
        "orders",
        "Reconciling",
        "WaitingForParent",
        &["'customers'", "spec.constraints[1].foreignKey"],
    );
    wait_for(
        &ns,
        "lines",
        "Reconciling",
        "WaitingForParent",
        &["DeltaTable orders", "WaitingForParent"],
    );

    apply_yaml(&ns, &fk_customers(true));
    wait_for(
        &ns,
        "customers",
        "Stalled",
        "InvalidSpec",
        &["no_such_column"],
    );
    wait_for(
        &ns,
        "orders",
        "Stalled",
        "ParentFailed",
        &["DeltaTable customers", "InvalidSpec"],
    );
    // transitively: lines names orders, and through it customers
    wait_for(
        &ns,
        "lines",
        "Stalled",
        "ParentFailed",
        &["DeltaTable orders", "ParentFailed", "customers"],
    );
    let live = rt
        .block_on(b.read(
            &[TableRef::new(&catalog, "sales", "orders")],
            &Extras::none(),
        ))
        .expect("read");
    assert!(live[0].is_none(), "nothing created while its parent failed");

    apply_yaml(&ns, &fk_customers(false));
    let (ok, out, err) = kubectl(&[
        "wait",
        "-n",
        &ns,
        "--for=condition=Ready",
        "deltatable/customers",
        "deltatable/orders",
        "deltatable/lines",
        "--timeout=120s",
    ]);
    assert!(ok, "the children follow their parent: {out}{err}");
    let live = rt
        .block_on(b.read(
            &[
                TableRef::new(&catalog, "sales", "orders"),
                TableRef::new(&catalog, "sales", "lines"),
            ],
            &Extras::none(),
        ))
        .expect("read");
    let orders = live[0].as_ref().expect("orders exists");
    assert_eq!(orders.foreign_keys.len(), 1, "{:?}", orders.foreign_keys);
    assert_eq!(orders.foreign_keys[0].references.table, "customers");
    let lines = live[1].as_ref().expect("lines exists");
    assert_eq!(lines.foreign_keys[0].references.table, "orders");
}

/// SIGTERM while a step's statement runs: the operator asks the warehouse to
/// cancel it, but a cancel may lose the race (the emulator's
/// `uncancellable_pattern` keeps it running). Past the shutdown grace the
/// operator leaves it, and the status says Interrupted, naming the statement
/// that may still be running. The next operator asks for that statement's state
/// before it runs anything on the table: it waits while it is RUNNING, then goes on.
#[test]
fn a_statement_a_shutdown_could_not_cancel_is_named_and_waited_for() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let b = backend();
    let catalog = format!("ctl_int_{}", std::process::id());
    rt.block_on(catalog_with_sales(&b, &catalog));
    let ns = namespace("dbx-int");
    let allow = "    namespaces: ['*']\n    schemas: ['ctl_*']";
    // a grace past the submission's wait (10 s): the statement's id is known by then
    let mut op = Operator::start_databricks(&ns, allow, &["--shutdown-grace", "14s"]);
    let dir = tempfile::tempdir().unwrap();
    examples_in(&catalog, dir.path());
    kubectl_ok(&["apply", "-n", &ns, "-f", dir.path().to_str().unwrap()]);
    kubectl_ok(&[
        "wait",
        "-n",
        &ns,
        "--for=condition=Ready",
        "deltatable/orders",
        "--timeout=240s",
    ]);
    let comment = format!(
        "Orders, with a comment that keeps going {}",
        std::process::id()
    );
    faults(serde_json::json!({"uncancellable_pattern": comment, "uncancellable_seconds": 45}));
    kubectl_ok(&[
        "patch",
        "-n",
        &ns,
        "deltatable/orders",
        "--type=merge",
        "-p",
        &serde_json::json!({"spec": {"comment": comment}}).to_string(),
    ]);
    wait_for(
        &ns,
        "orders",
        "Reconciling",
        "Applying",
        &["COMMENT ON TABLE"],
    );
    std::thread::sleep(std::time::Duration::from_secs(2));
    let status = op.terminate(std::time::Duration::from_secs(40));
    assert!(
        status.is_some_and(|s| s.success()),
        "{status:?}\n{}",
        op.log()
    );
    assert!(
        op.log().contains("asked Databricks to cancel statement"),
        "{}",
        op.log()
    );
    let left = get(&ns, "deltatable", "orders");
    let (reason, message) =
        true_of(&ns, "orders", "Reconciling").unwrap_or_else(|| panic!("{}", left["status"]));
    assert_eq!(reason, "Interrupted", "{message}");
    assert!(message.contains("may still be running"), "{message}");
    let statements = left["status"]["apply"]["statements"].clone();
    let first = statements[0]
        .as_str()
        .unwrap_or_else(|| panic!("no statement named in {}", left["status"]))
        .to_string();
    assert!(message.contains(&first), "{message}");
    // the next operator waits for that statement, then finds the change made by it
    let _op = Operator::start_databricks(&ns, allow, &[]);
    wait_for(
        &ns,
        "orders",
        "Reconciling",
        "Interrupted",
        &[&first, "is still RUNNING"],
    );
    let (ok, out, err) = kubectl(&[
        "wait",
        "-n",
        &ns,
        "--for=condition=Ready",
        "deltatable/orders",
        "--timeout=120s",
    ]);
    assert!(ok, "{out}{err}");
    let state = rt.block_on(b.client().statement_state(&first)).unwrap();
    assert_eq!(
        state, "SUCCEEDED",
        "Ready only once the statement had ended"
    );
    let done = get(&ns, "deltatable", "orders");
    assert!(done["status"]["apply"].is_null(), "{}", done["status"]);
    let live = rt
        .block_on(b.read(
            &[TableRef::new(&catalog, "sales", "orders")],
            &Extras::none(),
        ))
        .expect("read");
    assert_eq!(
        live[0].as_ref().unwrap().comment.as_deref(),
        Some(comment.as_str())
    );
    faults(serde_json::json!({"uncancellable_pattern": null}));
}

/// The `events` table before (`code` a string) and after (`code` an int: no
/// widening, so a staged rewrite whose REPLACE converts every row again).
fn events_yaml(ns: &str, catalog: &str, code: &str) -> String {
    format!(
        "apiVersion: delta-operator.io/v1alpha1
kind: DeltaSchema
metadata: {{name: sales, namespace: {ns}}}
spec: {{catalog: {catalog}}}
---
apiVersion: delta-operator.io/v1alpha1
kind: DeltaTable
metadata: {{name: events, namespace: {ns}}}
spec:
  schemaRef: sales
  comment: Events as sent
  columns:
    - {{name: id, type: bigint, comment: the key}}
    - {{name: amount, type: bigint}}
    - {{name: code, type: {code}, comment: a number as text}}
  constraints:
    - check: {{name: id_positive, expression: id > 0}}
"
    )
}

/// Rows `from..from+n` as an outside writer inserts them through the warehouse.
fn insert_events(catalog: &str, from: i64, n: i64) -> String {
    format!(
        "INSERT INTO {catalog}.sales.events SELECT id, id * 3, CAST(id * 7 AS STRING) FROM range({from}, {})",
        from + n
    )
}

/// Row count and a checksum per column (the values as text, so `code` compares across its cast).
async fn events_fingerprint(b: &DatabricksBackend, catalog: &str) -> Vec<Vec<Option<String>>> {
    let q = format!(
        "SELECT count(*), sum(id), sum(amount), sum(CAST(hash(CAST(code AS STRING)) AS BIGINT)), count(code) FROM {catalog}.sales.events"
    );
    b.client()
        .execute(&q, &|_: &str| {})
        .await
        .unwrap_or_else(|e| panic!("{q}: {e}"))
        .rows
}

/// kill -9 of the operator while the warehouse runs a rewrite's REPLACE (the
/// emulator's `slow_pattern` keeps it RUNNING for 40 s). The dead operator's
/// status names the statement (written as the step sent it); an outside writer
/// appends while no operator runs; the next operator says the apply was cut
/// short, waits for that statement to end, resumes and is Ready: every row,
/// the appended ones too, per-column checksums equal, the re-plan empty, the
/// restore point kept. Status, sampled every second, is never Stalled.
#[test]
fn killed_mid_rewrite_on_databricks_the_next_operator_waits_for_the_statement_and_loses_no_row() {
    let _turn = slow_pattern_turn();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let b = backend();
    let catalog = format!("ctl_kill_{}", std::process::id());
    rt.block_on(catalog_with_sales(&b, &catalog));
    let ns = namespace("dbx-kill");
    let allow = "    namespaces: ['*']\n    schemas: ['ctl_*']";
    let mut op = Operator::start_databricks(&ns, allow, &[]);
    apply_yaml(&ns, &events_yaml(&ns, &catalog, "string"));
    kubectl_ok(&[
        "wait",
        "-n",
        &ns,
        "--for=condition=Ready",
        "deltatable/events",
        "--timeout=240s",
    ]);
    rt.block_on(sql(&b, &[insert_events(&catalog, 1, 2_000)]));
    // only this catalog's REPLACE is slow (other tests share the emulator)
    faults(serde_json::json!({
        "slow_pattern": format!("^\\s*CREATE OR REPLACE TABLE `{catalog}`\\.`sales`\\.`events` "),
        "slow_seconds": 40,
    }));
    let sampler = Sampler::start(&ns, "deltatable", "events", Duration::from_secs(1));
    apply_yaml(&ns, &events_yaml(&ns, &catalog, "int"));
    // the REPLACE runs, and status names its statement (known once the submission answers)
    let mut left = serde_json::Value::Null;
    wait_until(
        "status to name the REPLACE's statement",
        Duration::from_secs(90),
        || {
            left = get(&ns, "deltatable", "events");
            let apply = &left["status"]["apply"];
            match true_condition(&left, "Reconciling") {
                Some((r, m))
                    if r == "Applying"
                        && m.contains("REPLACE TABLE")
                        && apply["statements"]
                            .as_array()
                            .is_some_and(|s| !s.is_empty()) =>
                {
                    Ok(())
                }
                _ => Err(left["status"].to_string()),
            }
        },
    );
    op.kill9();
    faults(serde_json::json!({"slow_pattern": null}));
    let statement = left["status"]["apply"]["statements"][0]
        .as_str()
        .unwrap()
        .to_string();
    let restore_points: Vec<String> = left["status"]["apply"]["restorePoints"]
        .as_array()
        .unwrap_or_else(|| panic!("no restore points in {}", left["status"]))
        .iter()
        .map(|p| p.as_str().unwrap().to_string())
        .collect();
    assert!(!restore_points.is_empty(), "{}", left["status"]);
    assert_eq!(
        rt.block_on(b.client().statement_state(&statement)).unwrap(),
        "RUNNING",
        "the REPLACE outlives the operator"
    );
    // a writer appends while no operator runs (the REPLACE has not read the table yet)
    rt.block_on(sql(&b, &[insert_events(&catalog, 10_001, 500)]));
    let expected = rt.block_on(events_fingerprint(&b, &catalog));
    assert_eq!(expected[0][0].as_deref(), Some("2500"), "{expected:?}");
    let _op = Operator::start_databricks(&ns, allow, &[]);
    wait_for(
        &ns,
        "events",
        "Reconciling",
        "Interrupted",
        &[&statement, "is still RUNNING"],
    );
    let (ok, out, err) = kubectl(&[
        "wait",
        "-n",
        &ns,
        "--for=condition=Ready",
        "deltatable/events",
        "--timeout=180s",
    ]);
    assert!(ok, "{out}{err}");
    assert_eq!(
        rt.block_on(b.client().statement_state(&statement)).unwrap(),
        "SUCCEEDED",
        "Ready only once the statement had ended"
    );
    let samples = sampler.samples();
    never_stalled(&samples);
    let reasons: Vec<String> = samples
        .iter()
        .filter_map(|s| true_condition(s, "Reconciling").map(|(r, _)| r))
        .collect();
    let first = |r: &str| reasons.iter().position(|x| x == r);
    assert!(
        first("Applying").is_some() && first("Applying") < first("Interrupted"),
        "Applying, then Interrupted: {reasons:?}"
    );
    let said = events(&ns, "events");
    assert!(
        said.lines().any(|l| l.starts_with("ApplyInterrupted: ")
            && l.contains("cut short at step ")
            && l.contains("REPLACE TABLE")
            && l.contains("operator running it ended")),
        "{said}"
    );
    assert!(said.contains("ApplyResumed: "), "{said}");
    let done = get(&ns, "deltatable", "events");
    assert!(done["status"]["apply"].is_null(), "{}", done["status"]);
    let kept = done["status"]["lastApplied"]["restorePoints"].to_string();
    for p in &restore_points {
        assert!(kept.contains(p.as_str()), "{p} kept in {kept}");
    }
    assert_eq!(
        rt.block_on(events_fingerprint(&b, &catalog)),
        expected,
        "every row and value, the appended ones too"
    );
    let inputs = support::manifests(&events_yaml(&ns, &catalog, "int"));
    let (again, live) = rt.block_on(read_and_plan(&b, &inputs)).expect("re-plan");
    assert!(
        !again.has_changes(),
        "converged:\n{}",
        delta_operator::plan::render::text::render(&again)
    );
    let live = live.first().expect("events is read");
    assert!(live.leftovers.is_empty(), "{:?}", live.leftovers);
    assert_eq!(
        live.checks.len(),
        1,
        "the CHECK put back: {:?}",
        live.checks
    );
}

/// The emulator's `slow_pattern` is one setting for the whole emulator: the tests of this
/// binary that set it (and clear it after) take turns, or one clears the other's.
fn slow_pattern_turn() -> std::sync::MutexGuard<'static, ()> {
    static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());
    TURN.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Two tables like `events` (`events_a`, `events_b`) whose `code` is `code_type`.
fn two_events_yaml(ns: &str, catalog: &str, code_type: &str) -> String {
    let one = events_yaml(ns, catalog, code_type);
    let table = one.split("---\n").nth(1).expect("the DeltaTable");
    let schema = one.split("---\n").next().expect("the DeltaSchema");
    format!(
        "{schema}---\n{}---\n{}",
        table.replace("name: events,", "name: events-a,").replace(
            "  schemaRef: sales\n",
            "  schemaRef: sales\n  name: events_a\n"
        ),
        table.replace("name: events,", "name: events-b,").replace(
            "  schemaRef: sales\n",
            "  schemaRef: sales\n  name: events_b\n"
        )
    )
}

#[test]
fn two_rewrites_at_once_each_name_only_their_own_statement() {
    let _turn = slow_pattern_turn();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let b = backend();
    let catalog = format!("ctl_pair_{}", std::process::id());
    rt.block_on(catalog_with_sales(&b, &catalog));
    let ns = namespace("dbx-pair");
    let allow = "    namespaces: ['*']\n    schemas: ['ctl_*']";
    let op = Operator::start_databricks(&ns, allow, &[]);
    apply_yaml(&ns, &two_events_yaml(&ns, &catalog, "string"));
    for t in ["events-a", "events-b"] {
        kubectl_ok(&[
            "wait",
            "-n",
            &ns,
            "--for=condition=Ready",
            &format!("deltatable/{t}"),
            "--timeout=240s",
        ]);
    }
    // both tables' REPLACE are slow, so both run at once (the default limit is 4 applies)
    faults(serde_json::json!({
        "slow_pattern": format!("^\\s*CREATE OR REPLACE TABLE `{catalog}`\\.`sales`\\.`events_[ab]` "),
        "slow_seconds": 30,
    }));
    apply_yaml(&ns, &two_events_yaml(&ns, &catalog, "int"));
    let named = |t: &str| -> Vec<String> {
        get(&ns, "deltatable", t)["status"]["apply"]["statements"]
            .as_array()
            .map(|s| {
                s.iter()
                    .filter_map(|x| x.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let (mut a, mut b_named) = (Vec::new(), Vec::new());
    wait_until(
        "both statuses to name their REPLACE",
        Duration::from_secs(120),
        || {
            a = named("events-a");
            b_named = named("events-b");
            if !a.is_empty() && !b_named.is_empty() {
                Ok(())
            } else {
                Err(format!("events-a {a:?}, events-b {b_named:?}"))
            }
        },
    );
    drop(op);
    faults(serde_json::json!({"slow_pattern": null}));
    // one statement each, and not the other's
    assert_eq!(a.len(), 1, "events-a names {a:?}");
    assert_eq!(b_named.len(), 1, "events-b names {b_named:?}");
    assert_ne!(a, b_named, "each names its own statement");
    for id in a.iter().chain(&b_named) {
        assert_eq!(
            rt.block_on(b.client().statement_state(id)).unwrap(),
            "RUNNING",
            "{id} is a running REPLACE"
        );
    }
}

/// Views, functions and volumes on the warehouse emulator, each reconciled on its own:
/// a function, a table, a view over it and a volume become Ready (the view waiting for
/// the table when it comes first), each with its `status.object` and `lastApplied`.
#[test]
fn objects_become_ready_on_a_databricks_target() {
    let (_rt, _b, _catalog, _ns, _op) = objects_ready("ready");
}

/// The setup both tests share: the five resources applied and Ready.
fn objects_ready(
    tag: &str,
) -> (
    tokio::runtime::Runtime,
    DatabricksBackend,
    String,
    String,
    Operator,
) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let b = backend();
    // one catalog per test: the tests of this file run side by side
    let catalog = format!("obj_{tag}_{}", std::process::id());
    rt.block_on(catalog_with_sales(&b, &catalog));
    let ns = namespace(&format!("dbx-obj-{tag}"));
    let op = Operator::start_databricks(&ns, "    namespaces: ['*']\n    schemas: ['obj_*']", &[]);
    apply_yaml(
        &ns,
        &format!(
            "apiVersion: delta-operator.io/v1alpha1
kind: DeltaSchema
metadata: {{name: sales, namespace: {ns}}}
spec: {{catalog: {catalog}, mode: strict}}
---
apiVersion: delta-operator.io/v1alpha1
kind: DeltaView
metadata: {{name: recent, namespace: {ns}}}
spec:
  schemaRef: sales
  query: SELECT order_id, amount FROM orders WHERE amount > 0
  comment: paid orders
---
apiVersion: delta-operator.io/v1alpha1
kind: DeltaFunction
metadata: {{name: redact, namespace: {ns}}}
spec:
  schemaRef: sales
  parameters: [{{name: s, type: string}}]
  returns: string
  body: \"'***'\"
---
apiVersion: delta-operator.io/v1alpha1
kind: DeltaVolume
metadata: {{name: raw, namespace: {ns}}}
spec: {{schemaRef: sales, comment: landing files}}
---
apiVersion: delta-operator.io/v1alpha1
kind: DeltaTable
metadata: {{name: orders, namespace: {ns}}}
spec:
  schemaRef: sales
  columns:
    - {{name: order_id, type: bigint}}
    - {{name: amount, type: int}}
"
        ),
    );
    let (ok, out, err) = kubectl(&[
        "wait",
        "-n",
        &ns,
        "--for=condition=Ready",
        "deltatable/orders",
        "deltaview/recent",
        "deltafunction/redact",
        "deltavolume/raw",
        "--timeout=240s",
    ]);
    assert!(
        ok,
        "not Ready: {out}{err}\n{}\n--- operator log (tail)\n{}",
        kubectl_ok(&[
            "get",
            "deltaviews,deltafunctions,deltavolumes",
            "-n",
            &ns,
            "-o",
            "yaml"
        ]),
        op.log()
    );
    let view = get(&ns, "deltaview", "recent");
    assert_eq!(
        view["status"]["object"],
        format!("{catalog}.sales.recent"),
        "{}",
        view["status"]
    );
    assert!(
        view["status"]["lastApplied"]["planId"].is_string(),
        "{}",
        view["status"]
    );
    (rt, b, catalog, ns, op)
}

/// A DeltaView deleted (Retain) leaves its view, which the strict DeltaSchema lists as
/// an orphan and drops only after the approval of that plan's id.
#[test]

fn a_strict_schema_drops_an_orphan_view_after_approval() {
    let (rt, b, catalog, ns, _op) = objects_ready("orphan");
    // all three are live, each carrying the marker of its resource
    let live = rt
        .block_on(b.read_objects(
            &[delta_operator::model::SchemaRef {
                catalog: catalog.clone(),
                schema: "sales".into(),
            }],
            &[],
        ))
        .unwrap();
    for name in ["recent", "redact", "raw"] {
        let marker = format!("{ns}/{name}");
        assert!(
            live.iter()
                .any(|o| o.object.name == name && o.owner_marker() == Some(marker.as_str())),
            "{name} is not live with the marker {marker}: {live:?}"
        );
    }
    // the DeltaView goes (Retain): its view stays, an orphan the strict schema waits to drop
    kubectl_ok(&["delete", "deltaview", "recent", "-n", &ns, "--wait=true"]);
    let mut s = serde_json::Value::Null;
    wait_until(
        "the orphan view awaiting approval",
        Duration::from_secs(60),
        || {
            s = get(&ns, "deltaschema", "sales");
            match condition(&s, "Stalled") {
                Some((st, r)) if st == "True" && r == "ApprovalRequired" => Ok(()),
                other => {
                    let live = rt.block_on(b.read_objects(
                        &[delta_operator::model::SchemaRef {
                            catalog: catalog.clone(),
                            schema: "sales".into(),
                        }],
                        &[],
                    ));
                    Err(format!("{other:?} in {}; live: {live:?}", s["status"]))
                }
            }
        },
    );
    let orphans = s["status"]["orphans"].to_string();
    assert!(
        orphans.contains(&format!("{catalog}.sales.recent")),
        "{}",
        s["status"]
    );
    let id = s["status"]["plan"]["id"].as_str().unwrap().to_string();
    // still there until approved
    let live = rt.block_on(b.read_objects(
        &[],
        &[delta_operator::model::object::ObjectRef::new(
            delta_operator::model::object::ObjectKind::View,
            &catalog,
            "sales",
            "recent",
        )],
    ));
    assert_eq!(
        live.map(|l| l.len()).unwrap_or(0),
        1,
        "the orphan view was dropped before approval"
    );
    kubectl_ok(&[
        "annotate",
        "deltaschema",
        "sales",
        "-n",
        &ns,
        &format!("delta-operator.io/approve={id}"),
    ]);
    let s = wait_condition(&ns, "deltaschema", "sales", "Ready", "True", None);
    assert!(
        !s["status"]["orphans"].to_string().contains("recent"),
        "{}",
        s["status"]
    );
    let live = rt
        .block_on(b.read_objects(
            &[],
            &[delta_operator::model::object::ObjectRef::new(
                delta_operator::model::object::ObjectKind::View,
                &catalog,
                "sales",
                "recent",
            )],
        ))
        .unwrap();
    assert!(live.is_empty(), "the orphan view is still there: {live:?}");
    // the function and the volume stayed Ready all along
    for (kind, name) in [("deltafunction", "redact"), ("deltavolume", "raw")] {
        let o = get(&ns, kind, name);
        assert_eq!(
            condition(&o, "Ready").map(|c| c.0),
            Some("True".into()),
            "{o}"
        );
    }
}

/// A table whose column mask calls a declared function waits for it (Databricks refuses a mask
/// naming a missing function), naming it, and starts at once when it becomes Ready: the
/// function's `Manual` policy holds it until approved, and the table has waited long enough
/// (70 s) that its retry backoff is at its one-minute ceiling, so only the function's wake-up
/// brings it within 30 s.
#[test]
fn a_table_waits_for_the_function_its_mask_calls_and_starts_when_it_is_ready() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let b = backend();
    let catalog = format!("obj_mask_{}", std::process::id());
    rt.block_on(catalog_with_sales(&b, &catalog));
    let ns = namespace("dbx-obj-mask");
    // the drift interval caps the retry backoff: long here, so the backoff reaches its minute
    let op = Operator::start_databricks(
        &ns,
        "    namespaces: ['*']\n    schemas: ['obj_*']",
        &["--drift-interval", "300s"],
    );
    apply_yaml(
        &ns,
        &format!(
            "apiVersion: delta-operator.io/v1alpha1
kind: DeltaSchema
metadata: {{name: sales, namespace: {ns}}}
spec: {{catalog: {catalog}}}
---
apiVersion: delta-operator.io/v1alpha1
kind: DeltaFunction
metadata: {{name: redact, namespace: {ns}}}
spec:
  schemaRef: sales
  policy: Manual
  parameters: [{{name: s, type: string}}]
  returns: string
  body: \"'***'\"
"
        ),
    );
    let f = wait_condition(
        &ns,
        "deltafunction",
        "redact",
        "Ready",
        "False",
        Some("ApprovalRequired"),
    );
    let id = f["status"]["plan"]["id"].as_str().unwrap().to_string();
    // the table after its function is known (one applied in the same instant may be reconciled
    // before the function reaches the operator's cache, and then fails on ROUTINE_NOT_FOUND)
    apply_yaml(
        &ns,
        &format!(
            "apiVersion: delta-operator.io/v1alpha1
kind: DeltaTable
metadata: {{name: people, namespace: {ns}}}
spec:
  schemaRef: sales
  columns:
    - {{name: id, type: bigint}}
    - {{name: email, type: string, mask: {{function: redact}}}}
"
        ),
    );
    wait_for(
        &ns,
        "people",
        "Reconciling",
        "WaitingForDependency",
        &["DeltaFunction 'redact'", &format!("{catalog}.sales.redact")],
    );
    // nothing was created: the table waits, the function waits for its approval
    let live = rt.block_on(b.read(
        &[TableRef::new(&catalog, "sales", "people")],
        &Extras::default(),
    ));
    assert!(
        live.as_ref().is_ok_and(|l| l.iter().all(Option::is_none)),
        "the table was created before its mask's function: {live:?}"
    );
    std::thread::sleep(Duration::from_secs(70));
    kubectl_ok(&[
        "annotate",
        "deltafunction",
        "redact",
        "-n",
        &ns,
        &format!("delta-operator.io/approve={id}"),
    ]);
    wait_condition(&ns, "deltafunction", "redact", "Ready", "True", None);
    let ready_at = std::time::Instant::now();
    // woken: it stops waiting at once (its apply may then take a while on a busy machine)
    wait_until(
        "the table no longer waiting once its function is Ready",
        Duration::from_secs(30),
        || match condition(&get(&ns, "deltatable", "people"), "Ready") {
            Some((_, r)) if r != "WaitingForDependency" => Ok(()),
            other => Err(format!("{other:?}")),
        },
    );
    eprintln!(
        "the table stopped waiting {:?} after its function was Ready",
        ready_at.elapsed()
    );
    wait_until(
        "the table Ready",
        Duration::from_secs(180),
        || match condition(&get(&ns, "deltatable", "people"), "Ready") {
            Some((s, _)) if s == "True" => Ok(()),
            other => Err(format!(
                "{other:?}\n{}\n--- operator log (tail)\n{}",
                get(&ns, "deltatable", "people")["status"],
                op.log()
                    .lines()
                    .rev()
                    .take(60)
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .collect::<Vec<_>>()
                    .join("\n")
            )),
        },
    );
    let t = rt
        .block_on(b.read(
            &[TableRef::new(&catalog, "sales", "people")],
            &Extras::default(),
        ))
        .unwrap()
        .pop()
        .flatten()
        .expect("the table exists");
    let mask = t.column("email").and_then(|c| c.mask.clone());
    assert!(
        mask.as_ref()
            .is_some_and(|m| m.function.to_lowercase().ends_with("redact")),
        "{mask:?}"
    );
}
