//! The controller with a Databricks target: a real kube-apiserver + etcd (`e2e/with-controlplane.sh`)
//! and the warehouse emulator (`e2e/warehouse/with-warehouse.sh`), both started by `make test`.
//! The examples become Ready on the emulator, and /metrics counts the statements sent: none for
//! drift checks with the warehouse stopped, some once a change needs the warehouse.

mod support;

use std::path::Path;

use delta_operator::backend::databricks::DatabricksBackend;
use delta_operator::backend::{Backend, Extras};
use delta_operator::config::DatabricksTarget;
use delta_operator::model::TableRef;
use support::e2e::*;

fn backend() -> DatabricksBackend {
    for k in [
        "DATABRICKS_HOST",
        "DATABRICKS_TOKEN",
        "DATABRICKS_WAREHOUSE_ID",
    ] {
        support::warehouse::env(k);
    }
    DatabricksBackend::from_target(&DatabricksTarget::default())
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
    rt.block_on(async {
        for s in [
            format!("CREATE CATALOG {catalog}"),
            format!("CREATE SCHEMA {catalog}.sales"),
        ] {
            b.client()
                .execute(&s, &|_: &str| {})
                .await
                .unwrap_or_else(|e| panic!("{s}: {e}"));
        }
    });
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

/// The emulator's admin endpoint (fault knobs).
fn faults(body: serde_json::Value) {
    let url = format!(
        "{}/_emulator/faults",
        std::env::var("WAREHOUSE_URL").expect("WAREHOUSE_URL: run through `make test`")
    );
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

/// `customers` with a primary key; `broken` adds a CHECK on a column it does not have.
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

/// The reason and message of the condition of `type_` when it is True.
fn true_condition(ns: &str, name: &str, type_: &str) -> Option<(String, String)> {
    let obj = get(ns, "deltatable", name);
    obj["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_ && c["status"] == "True")
        .map(|c| {
            (
                c["reason"].as_str().unwrap_or_default().to_string(),
                c["message"].as_str().unwrap_or_default().to_string(),
            )
        })
}

fn wait_for(ns: &str, name: &str, type_: &str, reason: &str, says: &[&str]) {
    wait_until(
        &format!("{name} {type_} {reason} naming {says:?}"),
        std::time::Duration::from_secs(90),
        || match true_condition(ns, name, type_) {
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
    rt.block_on(async {
        for s in [
            format!("CREATE CATALOG {catalog}"),
            format!("CREATE SCHEMA {catalog}.sales"),
        ] {
            b.client()
                .execute(&s, &|_: &str| {})
                .await
                .unwrap_or_else(|e| panic!("{s}: {e}"));
        }
    });
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
    rt.block_on(async {
        for s in [
            format!("CREATE CATALOG {catalog}"),
            format!("CREATE SCHEMA {catalog}.sales"),
        ] {
            b.client()
                .execute(&s, &|_: &str| {})
                .await
                .unwrap_or_else(|e| panic!("{s}: {e}"));
        }
    });
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
    let (reason, message) = true_condition(&ns, "orders", "Reconciling")
        .unwrap_or_else(|| panic!("{}", left["status"]));
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
