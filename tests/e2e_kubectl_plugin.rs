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
