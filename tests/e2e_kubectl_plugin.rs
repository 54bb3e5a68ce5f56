//! `kubectl delta …`: the binary installed as `kubectl-delta` on PATH and run
//! through the real kubectl's plugin discovery, against the e2e control plane.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use support::e2e::*;

/// A folder holding only `kubectl-delta`, a link to the built binary.
fn plugin_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(BIN, dir.path().join("kubectl-delta")).unwrap();
    dir
}

/// `kubectl delta ARGS` with the plugin on PATH: exit code, stdout, stderr.
fn kubectl_delta(plugins: &Path, args: &[&str], stdin: &str) -> (i32, String, String) {
    let path = std::env::join_paths(std::iter::once(plugins.to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .unwrap();
    let mut child = Command::new("kubectl")
        .arg("delta")
        .args(args)
        .env("PATH", path)
        .env("KUBECONFIG", e2e_dir().join("kubeconfig"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubectl");
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn kubectl_discovers_the_plugin() {
    let plugins = plugin_dir();
    let path = std::env::join_paths([
        plugins.path().to_path_buf(),
        PathBuf::from("/usr/bin"),
        PathBuf::from("/usr/local/bin"),
    ])
    .unwrap();
    let o = Command::new("kubectl")
        .args(["plugin", "list"])
        .env("PATH", path)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("kubectl-delta"),
        "kubectl plugin list: {out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn plan_then_approve_runs_exactly_the_shown_plan() {
    let plugins = plugin_dir();
    let p = plugins.path();
    let ns = namespace("plugin");
    let op = Operator::start(&ns, ALL, &[]);
    kubectl_ok(&["apply", "-n", &ns, "-f", examples().to_str().unwrap()]);
    kubectl_ok(&[
        "wait",
        "-n",
        &ns,
        "--for=condition=Ready",
        "deltatable/orders",
        "deltatable/customers",
        "deltaschema/sales",
        "--timeout=60s",
    ]);

    // nothing pending: drift says so and exits 0
    let (code, out, err) = kubectl_delta(p, &["drift", "-n", &ns], "");
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("No pending plans"), "{out}");
    let (code, out, _) = kubectl_delta(p, &["plan", "orders", "-n", &ns], "");
    assert_eq!((code, out.contains("no pending plan")), (0, true), "{out}");

    apply_yaml(&ns, ORDERS_WITHOUT_STATUS);
    let obj = wait_condition(
        &ns,
        "deltatable",
        "orders",
        "Stalled",
        "True",
        Some("ApprovalRequired"),
    );
    let id = obj["status"]["plan"]["id"].as_str().unwrap().to_string();

    // plan: the text renderer's output, with the change, the step, its undo and the id
    let (code, out, err) = kubectl_delta(p, &["plan", "orders", "-n", &ns], "");
    assert_eq!(code, 2, "exit 2: a pending plan. {out}{err}");
    assert!(out.contains("main.sales.orders"), "{out}");
    assert!(
        out.contains("- status"),
        "the removed column is shown: {out}"
    );
    assert!(out.contains("[destructive]"), "{out}");
    assert!(out.contains("undo:"), "{out}");
    assert!(out.contains(&format!("Plan id: {id}")), "{out}");
    assert!(out.contains("State: awaiting approval"), "{out}");
    assert!(
        out.contains(&format!("kubectl delta approve deltatable/orders -n {ns}")),
        "{out}"
    );

    // drift lists it with its id and state, exit 2
    let (code, out, _) = kubectl_delta(p, &["drift", "-n", &ns], "");
    assert_eq!(code, 2, "{out}");
    let row = out
        .lines()
        .find(|l| l.contains("deltatable/orders"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        row.contains(&id) && row.contains("awaiting approval") && row.contains("destructive"),
        "{row}"
    );
    assert!(
        !out.contains("deltatable/customers"),
        "only pending plans: {out}"
    );
    let (_, all, _) = kubectl_delta(p, &["drift", "-A"], "");
    assert!(
        all.lines()
            .any(|l| l.starts_with(&ns) && l.contains("deltatable/orders")),
        "{all}"
    );

    // approve without --yes on a non-terminal refuses and annotates nothing
    let (code, out, err) = kubectl_delta(p, &["approve", "orders", "-n", &ns], "yes\n");
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("--yes"), "{err}");
    assert!(
        get(&ns, "deltatable", "orders")["metadata"]["annotations"]["delta-operator.io/approve"]
            .is_null()
    );

    // approve --yes --wait: annotated with exactly the shown id, applied once
    let before = delta_versions(&op.table_dir("orders"));
    let (code, out, err) = kubectl_delta(
        p,
        &[
            "approve",
            "orders",
            "-n",
            &ns,
            "--yes",
            "--wait",
            "--timeout",
            "60s",
        ],
        "",
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains(&format!("Approved plan {id}")) && out.contains(&format!("Applied plan {id}")),
        "{out}"
    );
    let obj = get(&ns, "deltatable", "orders");
    assert_eq!(
        obj["metadata"]["annotations"]["delta-operator.io/approve"],
        id.as_str()
    );
    assert_eq!(obj["status"]["lastApplied"]["planId"], id.as_str());
    assert_eq!(delta_versions(&op.table_dir("orders")), before + 1);
    let (code, out, _) = kubectl_delta(p, &["drift", "-n", &ns], "");
    assert_eq!(code, 0, "{out}");

    // approving when nothing is pending is an error that says so
    let (code, _, err) = kubectl_delta(p, &["approve", "orders", "-n", &ns, "--yes"], "");
    assert_eq!(code, 1);
    assert!(err.contains("nothing to approve"), "{err}");
}

#[test]
fn unknown_names_and_kinds_are_clear_errors() {
    let plugins = plugin_dir();
    let ns = namespace("plugin-missing");
    let (code, _, err) = kubectl_delta(plugins.path(), &["plan", "nope", "-n", &ns], "");
    assert_eq!(code, 1);
    assert!(
        err.contains("deltatable 'nope' not found in namespace"),
        "{err}"
    );
    let (code, _, err) = kubectl_delta(plugins.path(), &["plan", "pod/x", "-n", &ns], "");
    assert_eq!(code, 1);
    assert!(err.contains("unknown kind 'pod'"), "{err}");
}

/// The schema JSON of a lake table's newest version, through delta-rs.
fn schema_json(table: &Path) -> serde_json::Value {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let t = deltalake::open_table(url::Url::from_directory_path(table).unwrap())
            .await
            .unwrap();
        serde_json::to_value(t.snapshot().unwrap().schema().as_ref()).unwrap()
    })
}

#[test]
fn undo_prints_the_restore_that_brings_a_dropped_column_back() {
    let plugins = plugin_dir();
    let p = plugins.path();
    let ns = namespace("plugin-undo");
    let op = Operator::start(&ns, ALL, &[]);
    kubectl_ok(&["apply", "-n", &ns, "-f", examples().to_str().unwrap()]);
    kubectl_ok(&[
        "wait",
        "-n",
        &ns,
        "--for=condition=Ready",
        "deltatable/orders",
        "--timeout=60s",
    ]);
    let table = op.table_dir("orders");
    let before = schema_json(&table);

    // a create records no restore point: nothing to undo, and it says why
    let (code, out, err) = kubectl_delta(p, &["undo", "orders", "-n", &ns], "");
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("recorded no restore point"), "{err}");

    // drop the status column: destructive, approved through the plugin
    apply_yaml(&ns, ORDERS_WITHOUT_STATUS);
    wait_condition(
        &ns,
        "deltatable",
        "orders",
        "Stalled",
        "True",
        Some("ApprovalRequired"),
    );
    let (code, out, err) = kubectl_delta(
        p,
        &[
            "approve",
            "orders",
            "-n",
            &ns,
            "--yes",
            "--wait",
            "--timeout",
            "60s",
        ],
        "",
    );
    assert_eq!(code, 0, "{out}{err}");
    assert_ne!(schema_json(&table), before, "status is gone");
    let obj = get(&ns, "deltatable", "orders");
    let point = obj["status"]["lastApplied"]["restorePoints"][0]
        .as_str()
        .unwrap_or_else(|| panic!("a restore point: {}", obj["status"]))
        .to_string();
    let version = point.strip_prefix("main.sales.orders@").expect(&point);

    // undo: the exact command, the warning, and the annotations around it
    let (code, out, err) = kubectl_delta(p, &["undo", "orders", "-n", &ns], "");
    assert_eq!(code, 0, "{out}{err}");
    let command = format!("delta-operator restore main.sales.orders --version {version}");
    assert!(out.contains(&command), "{out}");
    assert!(out.contains("revert the manifest in Git"), "{out}");
    let pause = format!(
        "kubectl annotate deltatable orders -n {ns} delta-operator.io/paused=true delta-operator.io/approve-"
    );
    assert!(out.contains(&pause), "{out}");
    assert!(
        get(&ns, "deltatable", "orders")["metadata"]["annotations"]["delta-operator.io/paused"]
            .is_null(),
        "undo only prints: it writes nothing"
    );

    // follow it: pause, revert the manifest, run the command, resume
    kubectl_ok(&[
        "annotate",
        "deltatable",
        "orders",
        "-n",
        &ns,
        "delta-operator.io/paused=true",
        "delta-operator.io/approve-",
    ]);
    kubectl_ok(&[
        "apply",
        "-n",
        &ns,
        "-f",
        examples().join("orders.yaml").to_str().unwrap(),
    ]);
    let line = out
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("delta-operator restore"))
        .unwrap();
    let args: Vec<&str> = line.split_whitespace().skip(1).collect();
    // the operator's default target is `lake` at ./lake, so run beside it
    let o = Command::new(BIN)
        .args(&args)
        .current_dir(op.lake.parent().unwrap())
        .env_remove("DELTA_OPERATOR_CONFIG")
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{line}: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(schema_json(&table), before, "the column is back, exactly");
    kubectl_ok(&[
        "annotate",
        "deltatable",
        "orders",
        "-n",
        &ns,
        "delta-operator.io/paused-",
    ]);
    let versions = delta_versions(&table);
    wait_until(
        "orders in sync with the reverted manifest",
        std::time::Duration::from_secs(60),
        || {
            let obj = get(&ns, "deltatable", "orders");
            match (condition(&obj, "Ready"), &obj["status"]["plan"]) {
                (Some((s, r)), plan)
                    if s == "True"
                        && r == "InSync"
                        && plan.is_null()
                        && obj["status"]["observedGeneration"] == obj["metadata"]["generation"] =>
                {
                    Ok(())
                }
                other => Err(format!("{other:?}")),
            }
        },
    );
    assert_eq!(delta_versions(&table), versions, "nothing re-applied");
    assert_eq!(schema_json(&table), before);
}

/// An approval is spent once: restored without reverting the manifest, the same
/// drop is planned again; the plugin shows the annotation as spent, and its
/// `approve` writes a new value (`<id>-2`) and waits for that apply, not the last one.
#[test]
fn a_spent_approval_is_shown_and_approve_gives_a_new_one() {
    let plugins = plugin_dir();
    let p = plugins.path();
    let ns = namespace("plugin-spent");
    let op = Operator::start(&ns, ALL, &[]);
    kubectl_ok(&["apply", "-n", &ns, "-f", examples().to_str().unwrap()]);
    kubectl_ok(&[
        "wait",
        "-n",
        &ns,
        "--for=condition=Ready",
        "deltatable/orders",
        "--timeout=60s",
    ]);
    let table = op.table_dir("orders");
    apply_yaml(&ns, ORDERS_WITHOUT_STATUS);
    wait_condition(
        &ns,
        "deltatable",
        "orders",
        "Stalled",
        "True",
        Some("ApprovalRequired"),
    );
    let approve = [
        "approve",
        "orders",
        "-n",
        &ns,
        "--yes",
        "--wait",
        "--timeout",
        "60s",
    ];
    let (code, out, err) = kubectl_delta(p, &approve, "");
    assert_eq!(code, 0, "{out}{err}");
    let obj = get(&ns, "deltatable", "orders");
    let id = obj["status"]["approval"]["value"]
        .as_str()
        .unwrap_or_else(|| panic!("spent: {}", obj["status"]))
        .to_string();
    let point = obj["status"]["lastApplied"]["restorePoints"][0]
        .as_str()
        .unwrap()
        .to_string();
    let version = point.strip_prefix("main.sales.orders@").expect(&point);
    let o = Command::new(BIN)
        .args(["restore", "main.sales.orders", "--version", version])
        .current_dir(op.lake.parent().unwrap())
        .env_remove("DELTA_OPERATOR_CONFIG")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let restored = delta_versions(&table);
    wait_until(
        "the same plan to wait again",
        std::time::Duration::from_secs(60),
        || {
            let (code, out, err) = kubectl_delta(p, &["plan", "orders", "-n", &ns], "");
            if code == 2 && out.contains("State: awaiting a new approval") {
                Ok(())
            } else {
                Err(format!("{code}: {out}{err}"))
            }
        },
    );
    let (_, out, _) = kubectl_delta(p, &["plan", "orders", "-n", &ns], "");
    assert!(
        out.contains(&format!(
            "Approval: delta-operator.io/approve={id} is spent (by plan {id} applied at"
        )),
        "{out}"
    );
    let (code, out, _) = kubectl_delta(p, &["drift", "-n", &ns], "");
    assert_eq!(code, 2);
    assert!(
        out.contains(&format!("awaiting a new approval ({id} is spent)")),
        "{out}"
    );
    assert_eq!(delta_versions(&table), restored, "nothing dropped again");

    let (code, out, err) = kubectl_delta(p, &approve, "");
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains(&format!("annotated delta-operator.io/approve={id}-2"))
            && out.contains(&format!("Applied plan {id}.")),
        "{out}"
    );
    assert_eq!(delta_versions(&table), restored + 1, "dropped once more");
}

#[test]
fn undo_of_a_strict_schemas_orphan_drop_is_the_undrop_of_that_table() {
    let plugins = plugin_dir();
    let p = plugins.path();
    let ns = namespace("plugin-undrop");
    let op = Operator::start(&ns, ALL, &[]);
    kubectl_ok(&["apply", "-n", &ns, "-f", examples().to_str().unwrap()]);
    kubectl_ok(&[
        "wait",
        "-n",
        &ns,
        "--for=condition=Ready",
        "deltatable/orders",
        "deltatable/customers",
        "--timeout=60s",
    ]);
    kubectl_ok(&[
        "patch",
        "-n",
        &ns,
        "deltaschema/sales",
        "--type=merge",
        "-p",
        "{\"spec\":{\"mode\":\"strict\"}}",
    ]);
    let table = op.table_dir("customers");
    let before = (schema_json(&table), delta_versions(&table));
    kubectl_ok(&["delete", "-n", &ns, "deltatable/customers"]);
    wait_condition(
        &ns,
        "deltaschema",
        "sales",
        "Stalled",
        "True",
        Some("ApprovalRequired"),
    );
    let (code, out, err) = kubectl_delta(
        p,
        &[
            "approve",
            "ds/sales",
            "-n",
            &ns,
            "--yes",
            "--wait",
            "--timeout",
            "60s",
        ],
        "",
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(!table.exists(), "dropped into the trash");

    let (code, out, err) = kubectl_delta(p, &["undo", "ds/sales", "-n", &ns], "");
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("     delta-operator undrop main.sales.customers\n"),
        "{out}"
    );
    // follow it: pause the schema, undrop, bring the DeltaTable back, resume
    kubectl_ok(&[
        "annotate",
        "deltaschema",
        "sales",
        "-n",
        &ns,
        "delta-operator.io/paused=true",
        "delta-operator.io/approve-",
    ]);
    let o = Command::new(BIN)
        .args(["undrop", "main.sales.customers"])
        .current_dir(op.lake.parent().unwrap())
        .env_remove("DELTA_OPERATOR_CONFIG")
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(
        (schema_json(&table), delta_versions(&table)),
        before,
        "the same table, the same history"
    );
    kubectl_ok(&[
        "apply",
        "-n",
        &ns,
        "-f",
        examples().join("customers.yaml").to_str().unwrap(),
    ]);
    kubectl_ok(&[
        "annotate",
        "deltaschema",
        "sales",
        "-n",
        &ns,
        "delta-operator.io/paused-",
    ]);
    kubectl_ok(&[
        "wait",
        "-n",
        &ns,
        "--for=condition=Ready",
        "deltatable/customers",
        "deltaschema/sales",
        "--timeout=60s",
    ]);
    assert_eq!(
        (schema_json(&table), delta_versions(&table)),
        before,
        "adopted as it was: nothing re-created or re-applied"
    );
}

/// A DeltaTable with `n` columns `c0…`, in the namespace's schema `sales`.
fn wide_table(n: usize, without: Option<usize>) -> String {
    let cols: String = (0..n)
        .filter(|i| Some(*i) != without)
        .map(|i| format!("    - {{name: column_with_a_long_name_{i:04}, type: string}}\n"))
        .collect();
    format!(
        "apiVersion: delta-operator.io/v1alpha1\nkind: DeltaTable\nmetadata: {{name: wide}}\nspec:\n  schemaRef: sales\n  columns:\n{cols}"
    )
}

#[test]
fn a_plan_too_long_for_status_is_shown_whole_by_plan_full() {
    let plugins = plugin_dir();
    let p = plugins.path();
    let ns = namespace("plugin-full");
    let _op = Operator::start(&ns, ALL, &[]);
    kubectl_ok(&["apply", "-n", &ns, "-f", examples().to_str().unwrap()]);
    apply_yaml(&ns, &wide_table(600, None));
    kubectl_ok(&[
        "wait",
        "-n",
        &ns,
        "--for=condition=Ready",
        "deltatable/wide",
        "--timeout=90s",
    ]);
    // dropping one column rewrites the table: the statement lists all the others
    apply_yaml(&ns, &wide_table(600, Some(7)));
    let obj = wait_condition(
        &ns,
        "deltatable",
        "wide",
        "Stalled",
        "True",
        Some("ApprovalRequired"),
    );
    let cut = obj["status"]["plan"]["text"].as_str().unwrap().to_string();
    assert!(
        cut.contains("kubectl delta plan NAME --full"),
        "status says how to see the rest: {}",
        &cut[cut.len().saturating_sub(300)..]
    );
    assert!(cut.len() <= 17 * 1024, "status holds a cut: {}", cut.len());
    let (code, out, err) = kubectl_delta(p, &["plan", "wide", "-n", &ns], "");
    assert_eq!(code, 2, "{err}");
    assert!(out.contains("--full"), "{out}");
    let (code, whole, err) = kubectl_delta(p, &["plan", "wide", "-n", &ns, "--full"], "");
    assert_eq!(code, 2, "{err}");
    let id = obj["status"]["plan"]["id"].as_str().unwrap();
    assert!(whole.len() > cut.len(), "{} vs {}", whole.len(), cut.len());
    assert!(
        whole.contains(&format!("Plan id: {id}")),
        "the whole plan ends with its id"
    );
    assert!(
        whole.contains("column_with_a_long_name_0599 AS column_with_a_long_name_0599"),
        "the statement is whole"
    );
    // the ConfigMap belongs to the resource: it goes with it
    let cm = kubectl_ok(&[
        "get",
        "configmap",
        "delta-plan.deltatable.wide",
        "-n",
        &ns,
        "-o",
        "jsonpath={.metadata.ownerReferences[0].kind}",
    ]);
    assert_eq!(cm.trim(), "DeltaTable");
}

/// `kubectl delta approve --wait` on a resource degraded by drift (`driftPolicy: Fail`,
/// reason DriftDetected) waits for the apply as it does for ApprovalRequired (policy
/// Manual), and under policy Observe says the approval acknowledged the drift.
#[test]
fn approve_waits_through_drift_detected_and_acknowledges_under_observe() {
    let plugins = plugin_dir();
    let p = plugins.path();
    let ns = namespace("plugin-driftfail");
    let op = Operator::start(&ns, ALL, &[]);
    kubectl_ok(&["apply", "-n", &ns, "-f", examples().to_str().unwrap()]);
    kubectl_ok(&[
        "wait",
        "-n",
        &ns,
        "--for=condition=Ready",
        "deltatable/orders",
        "deltatable/customers",
        "--timeout=60s",
    ]);
    for (name, policy) in [("orders", "Manual"), ("customers", "Observe")] {
        kubectl_ok(&[
            "patch",
            "-n",
            &ns,
            &format!("deltatable/{name}"),
            "--type=merge",
            "-p",
            &format!(r#"{{"spec":{{"policy":"{policy}","driftPolicy":"Fail"}}}}"#),
        ]);
        // a spec change the policy holds back: the live table differs from the spec
        kubectl_ok(&[
            "patch",
            "-n",
            &ns,
            &format!("deltatable/{name}"),
            "--type=merge",
            "-p",
            r#"{"spec":{"comment":"changed in the spec"}}"#,
        ]);
        wait_condition(
            &ns,
            "deltatable",
            name,
            "Stalled",
            "True",
            Some("DriftDetected"),
        );
    }
    let approve = |name: &str| {
        kubectl_delta(
            p,
            &[
                "approve",
                name,
                "-n",
                &ns,
                "--yes",
                "--wait",
                "--timeout",
                "60s",
            ],
            "",
        )
    };
    let before = delta_versions(&op.table_dir("orders"));
    let (code, out, err) = approve("orders");
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("Applied plan"), "{out}");
    assert_eq!(delta_versions(&op.table_dir("orders")), before + 1);
    wait_condition(&ns, "deltatable", "orders", "Ready", "True", Some("InSync"));
    let before = delta_versions(&op.table_dir("customers"));
    let (code, out, err) = approve("customers");
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("Acknowledged the drift of plan"), "{out}");
    wait_condition(
        &ns,
        "deltatable",
        "customers",
        "Ready",
        "True",
        Some("Observing"),
    );
    assert_eq!(
        delta_versions(&op.table_dir("customers")),
        before,
        "Observe never applies"
    );
}
