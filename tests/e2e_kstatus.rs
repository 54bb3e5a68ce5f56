//! Flux's and Argo CD's health logic against our status. Flux decides
//! "healthy" with kstatus (`status.Compute` from sigs.k8s.io/cli-utils; Flux's
//! fork has the same status package); e2e/kstatus is a small Go program that
//! runs it on `kubectl get … -o json`. Argo CD runs our Lua health checks
//! (gitops/argocd/health/*.lua, the argocd-cm customizations) in gopher-lua;
//! e2e/argo-health runs them the same way. Each check reads the object once and
//! asserts our conditions, kstatus's verdict and Argo CD's health on that same
//! JSON, so they cannot race. Needs the control plane of
//! `e2e/with-controlplane.sh` (as `make test` runs it) and `go`
//! (e2e/kstatus/build.sh, e2e/argo-health/build.sh; instant once cached).

mod support;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use serde_json::Value;
use support::e2e::*;

/// e2e/<name>/build.sh: builds the Go program (or finds it in the cache) and prints its path.
fn built(name: &str) -> PathBuf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("e2e")
        .join(name)
        .join("build.sh");
    let o = Command::new(&script)
        .stderr(Stdio::inherit())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
    assert!(
        o.status.success(),
        "{} failed ({}); it needs `go` and the Go module proxy (its stderr is above)",
        script.display(),
        o.status
    );
    let out = String::from_utf8_lossy(&o.stdout);
    let path = PathBuf::from(
        out.lines()
            .last()
            .unwrap_or_else(|| panic!("{} printed no path", script.display()))
            .trim(),
    );
    assert!(
        path.is_file(),
        "{} printed {}, which is not a file",
        script.display(),
        path.display()
    );
    path
}

/// The kstatus binary, built (or found in the cache) once per test process.
fn kstatus_bin() -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| built("kstatus"))
}

/// The Argo CD health runner (gopher-lua as Argo CD sets it up), built once per test process.
fn argo_health_bin() -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| built("argo-health"))
}

/// One kstatus verdict: `Kind/name`, the status (Current, InProgress, Failed, …) and kstatus's message.
#[derive(Debug, Clone, PartialEq)]
struct Verdict {
    id: String,
    status: String,
    message: String,
    /// What Argo CD shows for the same JSON.
    argo: Health,
}

/// Argo CD's health of one object: Healthy, Progressing, Suspended, Degraded, … and the message.
#[derive(Debug, Clone, PartialEq, Default)]
struct Health {
    status: String,
    message: String,
}

/// Argo CD's health from our Lua check for `kind` (gitops/argocd/health/<kind>.lua) on JSON:
/// one object or a stream of objects of that kind; one health each, in order.
fn argo(kind: &str, json: &str) -> Vec<Health> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("gitops/argocd/health")
        .join(format!("{}.lua", kind.to_lowercase()));
    assert!(
        script.is_file(),
        "no health check for {kind}: {}",
        script.display()
    );
    let mut child = Command::new(argo_health_bin())
        .arg(&script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start argo-health");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(json.as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(
        o.status.success(),
        "{} failed (Argo CD would show Unknown): {}\non: {json}",
        script.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l)
                .unwrap_or_else(|e| panic!("argo-health printed {l:?}: {e}"));
            Health {
                status: v["status"].as_str().unwrap().into(),
                message: v["message"].as_str().unwrap().into(),
            }
        })
        .collect()
}

/// kstatus on JSON: one object, a List, or a stream of objects (`kubectl get -w -o json`); one verdict each, in order.
fn kstatus(json: &str) -> Vec<Verdict> {
    let mut child = Command::new(kstatus_bin())
        .arg("-v")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start kstatus");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(json.as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(
        o.status.success(),
        "kstatus failed: {}\non: {json}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let (head, message) = l.split_once('\t').unwrap_or((l, ""));
            let (id, status) = head
                .split_once(' ')
                .unwrap_or_else(|| panic!("kstatus printed {l:?}"));
            Verdict {
                id: id.into(),
                status: status.into(),
                message: message.into(),
                argo: Health::default(),
            }
        })
        .collect()
}

/// One read of `kubectl get KIND NAME -o json`: the object, and kstatus's verdict and Argo CD's health on that same JSON.
fn read(ns: &str, kind: &str, name: &str) -> (Value, Verdict) {
    let json = kubectl_ok(&["get", kind, name, "-n", ns, "-o", "json"]);
    let obj: Value = serde_json::from_str(&json).unwrap();
    let mut v = kstatus(&json);
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!(
        v[0].id,
        format!("{}/{name}", obj["kind"].as_str().unwrap()),
        "{v:?}"
    );
    let mut health = argo(obj["kind"].as_str().unwrap(), &json);
    assert_eq!(health.len(), 1, "{health:?}");
    v[0].argo = health.remove(0);
    (obj, v[0].clone())
}

/// Reads until condition `t` has `status` (and `reason`), observed for the current generation;
/// returns that read: the object and kstatus's verdict on it.
fn wait_read(
    ns: &str,
    kind: &str,
    name: &str,
    t: &str,
    status: &str,
    reason: Option<&str>,
) -> (Value, Verdict) {
    let mut seen = None;
    wait_until(
        &format!("{kind}/{name} {t}={status}"),
        Duration::from_secs(60),
        || {
            let (obj, v) = read(ns, kind, name);
            let current = obj["status"]["observedGeneration"] == obj["metadata"]["generation"];
            let got = condition(&obj, t);
            let ok = current
                && matches!(&got, Some((s, r)) if s == status && reason.is_none_or(|x| x == r));
            let err = format!(
                "{got:?} (generation {}) in {}",
                obj["metadata"]["generation"], obj["status"]
            );
            seen = Some((obj, v));
            if ok { Ok(()) } else { Err(err) }
        },
    );
    seen.unwrap()
}

/// Asserts kstatus's verdict on a read, showing the whole object when it differs.
fn assert_verdict(read: &(Value, Verdict), want: &str) {
    let (obj, v) = read;
    assert_eq!(
        v.status,
        want,
        "kstatus says {} ({}) for {}",
        v.status,
        v.message,
        serde_json::to_string_pretty(obj).unwrap()
    );
}

/// Asserts Argo CD's health on a read, and that its message contains each of `says`.
fn assert_argo(read: &(Value, Verdict), want: &str, says: &[&str]) {
    let (obj, v) = read;
    let pretty = || serde_json::to_string_pretty(obj).unwrap();
    assert_eq!(
        v.argo.status,
        want,
        "Argo CD says {} ({}) for {}",
        v.argo.status,
        v.argo.message,
        pretty()
    );
    for s in says {
        assert!(
            v.argo.message.contains(s),
            "Argo CD's message {:?} does not say {s:?}, for {}",
            v.argo.message,
            pretty()
        );
    }
}

fn apply_examples(ns: &str) {
    kubectl_ok(&["apply", "-n", ns, "-f", examples().to_str().unwrap()]);
}

/// examples/orders.yaml without its `status` column: a destructive change.
fn orders_without_status() -> String {
    let text = std::fs::read_to_string(examples().join("orders.yaml")).unwrap();
    let edited = text.replace("    - name: status\n      type: string\n", "");
    assert_ne!(
        edited, text,
        "examples/orders.yaml has no `status` column to drop"
    );
    edited
}

/// `kubectl get KIND -w -o json` into a file: every version of every object of a kind, as the API server sends them.
struct Watch {
    child: Child,
    out: PathBuf,
    _dir: tempfile::TempDir,
}

impl Watch {
    fn start(ns: &str, kind: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("watch.json");
        let child = Command::new("kubectl")
            .args(["get", kind, "-n", ns, "-w", "-o", "json"])
            .env("KUBECONFIG", e2e_dir().join("kubeconfig"))
            .stdout(Stdio::from(std::fs::File::create(&out).unwrap()))
            .stderr(Stdio::null())
            .spawn()
            .expect("kubectl get -w");
        Watch {
            child,
            out,
            _dir: dir,
        }
    }

    /// Each version seen, in order, with kstatus's verdict and Argo CD's health on it.
    fn versions(mut self) -> Vec<(Value, Verdict)> {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let text = std::fs::read_to_string(&self.out).unwrap();
        let objects: Vec<Value> = serde_json::Deserializer::from_str(&text)
            .into_iter()
            .collect::<Result<_, _>>()
            .unwrap();
        if objects.is_empty() {
            return vec![];
        }
        let mut verdicts = kstatus(&text);
        assert_eq!(objects.len(), verdicts.len());
        let health = argo(objects[0]["kind"].as_str().unwrap(), &text);
        assert_eq!(objects.len(), health.len());
        for (v, h) in verdicts.iter_mut().zip(health) {
            v.argo = h;
        }
        objects.into_iter().zip(verdicts).collect()
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// (a)
#[test]
fn examples_are_current_once_ready() {
    let ns = namespace("ks-ready");
    let _op = Operator::start(&ns, ALL, &[]);
    apply_examples(&ns);
    for name in ["orders", "customers"] {
        let r = wait_read(&ns, "deltatable", name, "Ready", "True", None);
        assert_verdict(&r, "Current");
        assert_argo(&r, "Healthy", &["the table matches the spec"]);
    }
    let r = wait_read(&ns, "deltaschema", "sales", "Ready", "True", None);
    assert_verdict(&r, "Current");
    assert_argo(&r, "Healthy", &[]);
    // and a List, as `kubectl get` gives it: every item Current
    let list = kubectl_ok(&["get", "deltatables,deltaschemas", "-n", &ns, "-o", "json"]);
    let mut all: Vec<(String, String)> = kstatus(&list)
        .into_iter()
        .map(|v| (v.id, v.status))
        .collect();
    all.sort();
    let want = [
        ("DeltaSchema/sales", "Current"),
        ("DeltaTable/customers", "Current"),
        ("DeltaTable/orders", "Current"),
    ];
    assert_eq!(
        all,
        want.map(|(a, b)| (a.to_string(), b.to_string())),
        "{list}"
    );
    // Argo CD on a List of DeltaTables: every item Healthy
    let list = kubectl_ok(&["get", "deltatables", "-n", &ns, "-o", "json"]);
    let health: Vec<String> = argo("DeltaTable", &list)
        .into_iter()
        .map(|h| h.status)
        .collect();
    assert_eq!(health, ["Healthy", "Healthy"], "{list}");
}

// (b)
#[test]
fn a_dropped_column_is_failed_until_approved_then_current() {
    let ns = namespace("ks-approve");
    let _op = Operator::start(&ns, ALL, &[]);
    apply_examples(&ns);
    assert_verdict(
        &wait_read(&ns, "deltatable", "orders", "Ready", "True", None),
        "Current",
    );
    apply_yaml(&ns, &orders_without_status());
    let r = wait_read(
        &ns,
        "deltatable",
        "orders",
        "Stalled",
        "True",
        Some("ApprovalRequired"),
    );
    assert_verdict(&r, "Failed");
    assert_eq!(condition(&r.0, "Ready").unwrap().0, "False");
    let id = r.0["status"]["plan"]["id"].as_str().unwrap().to_string();
    // Argo CD: Suspended (waiting for a human), and the message says what to run
    let approve = format!("delta-operator.io/approve={id}");
    assert_argo(&r, "Suspended", &["Awaiting approval", &approve]);
    // it stays Failed (Suspended for Argo CD) while it waits (re-checks every drift interval)
    std::thread::sleep(Duration::from_secs(3));
    let r = read(&ns, "deltatable", "orders");
    assert_verdict(&r, "Failed");
    assert_argo(&r, "Suspended", &[&approve]);
    // approving that plan: Current (Healthy) again
    kubectl_ok(&[
        "annotate",
        "-n",
        &ns,
        "deltatable/orders",
        &approve,
        "--overwrite",
    ]);
    let r = wait_read(&ns, "deltatable", "orders", "Ready", "True", None);
    assert_eq!(r.0["status"]["lastApplied"]["planId"], id.as_str());
    assert_verdict(&r, "Current");
    assert_argo(&r, "Healthy", &[]);
}

// (c)
#[test]
fn a_spec_change_not_yet_observed_is_in_progress() {
    let ns = namespace("ks-generation");
    let op = Operator::start(&ns, ALL, &[]);
    apply_examples(&ns);
    assert_verdict(
        &wait_read(&ns, "deltatable", "customers", "Ready", "True", None),
        "Current",
    );
    assert_verdict(
        &wait_read(&ns, "deltaschema", "sales", "Ready", "True", None),
        "Current",
    );
    // no operator: the change stays unobserved
    let dir = op.stop();
    kubectl_ok(&[
        "patch",
        "-n",
        &ns,
        "deltatable/customers",
        "--type=merge",
        "-p",
        r#"{"spec":{"comment":"One row per customer, changed"}}"#,
    ]);
    kubectl_ok(&[
        "patch",
        "-n",
        &ns,
        "deltaschema/sales",
        "--type=merge",
        "-p",
        // strict: every table of the schema is declared, so nothing is dropped (the lake
        // keeps no schema comment: that would be refused)
        r#"{"spec":{"mode":"strict"}}"#,
    ]);
    for kind in ["deltatable/customers", "deltaschema/sales"] {
        let (kind, name) = kind.split_once('/').unwrap();
        let r = read(&ns, kind, name);
        let (obj, v) = &r;
        assert!(
            obj["metadata"]["generation"].as_i64() > obj["status"]["observedGeneration"].as_i64(),
            "{obj}"
        );
        assert_eq!(
            condition(obj, "Ready").unwrap().0,
            "True",
            "the stale Ready=True of the last generation is still there"
        );
        assert_verdict(&r, "InProgress");
        assert!(v.message.contains("latest observed generation"), "{v:?}");
        // Argo CD ignores the stale Ready=True too
        assert_argo(
            &r,
            "Progressing",
            &["observe generation 2 (status is for 1)"],
        );
    }
    // the operator back: the change is applied and observed, Current again
    let _op = Operator::start_in(&ns, ALL, &[], dir);
    let r = wait_read(&ns, "deltatable", "customers", "Ready", "True", None);
    assert_eq!(r.0["status"]["observedGeneration"], 2);
    assert_verdict(&r, "Current");
    assert_argo(&r, "Healthy", &[]);
    let r = wait_read(&ns, "deltaschema", "sales", "Ready", "True", None);
    assert_verdict(&r, "Current");
    assert_argo(&r, "Healthy", &[]);
}

// (d)
#[test]
fn a_table_its_target_forbids_is_failed() {
    let ns = namespace("ks-forbidden");
    let _op = Operator::start(&ns, "    namespaces: ['*']\n    schemas: ['prod']", &[]);
    apply_examples(&ns);
    for name in ["orders", "customers"] {
        let r = wait_read(
            &ns,
            "deltatable",
            name,
            "Stalled",
            "True",
            Some("Forbidden"),
        );
        assert_verdict(&r, "Failed");
        assert_argo(&r, "Degraded", &["Forbidden: "]);
    }
    let r = wait_read(
        &ns,
        "deltaschema",
        "sales",
        "Stalled",
        "True",
        Some("Forbidden"),
    );
    assert_verdict(&r, "Failed");
    assert_argo(&r, "Degraded", &["Forbidden: "]);
}

// (e) What Flux sees of a resource whose writes are held. Paused with pending changes is
// Ready=False with neither Reconciling nor Stalled: kstatus says InProgress (a Flux health
// check waits until the pause is lifted); Argo CD says Suspended from the annotation on.
// Observe has done its job once the drift is in status: Ready=True with Drifted=True, so
// kstatus says Current and Argo CD Healthy (its message names the drift).
#[test]
fn paused_is_in_progress_and_observe_is_current() {
    let ns = namespace("ks-hold");
    let _op = Operator::start(&ns, ALL, &[]);
    apply_examples(&ns);
    assert_verdict(
        &wait_read(&ns, "deltatable", "customers", "Ready", "True", None),
        "Current",
    );
    kubectl_ok(&[
        "annotate",
        "-n",
        &ns,
        "deltatable/customers",
        "delta-operator.io/paused=true",
    ]);
    // nothing pending: still Suspended for Argo CD (writes are off)
    assert_argo(
        &read(&ns, "deltatable", "customers"),
        "Suspended",
        &["Paused"],
    );
    kubectl_ok(&[
        "patch",
        "-n",
        &ns,
        "deltatable/customers",
        "--type=merge",
        "-p",
        r#"{"spec":{"comment":"paused change"}}"#,
    ]);
    let r = wait_read(
        &ns,
        "deltatable",
        "customers",
        "Ready",
        "False",
        Some("Paused"),
    );
    assert_eq!(
        (
            condition(&r.0, "Reconciling").unwrap().0.as_str(),
            condition(&r.0, "Stalled").unwrap().0.as_str()
        ),
        ("False", "False")
    );
    assert_verdict(&r, "InProgress");
    let pending = format!(
        "pending: {}",
        r.0["status"]["plan"]["summary"].as_str().unwrap()
    );
    assert_argo(
        &r,
        "Suspended",
        &["Paused (delta-operator.io/paused=true)", &pending],
    );
    kubectl_ok(&[
        "patch",
        "-n",
        &ns,
        "deltatable/customers",
        "--type=merge",
        "-p",
        r#"{"spec":{"policy":"Observe"}}"#,
    ]);
    kubectl_ok(&[
        "annotate",
        "-n",
        &ns,
        "deltatable/customers",
        "delta-operator.io/paused-",
    ]);
    let r = wait_read(
        &ns,
        "deltatable",
        "customers",
        "Ready",
        "True",
        Some("Observing"),
    );
    assert_eq!(condition(&r.0, "Drifted").unwrap().0, "True");
    assert_verdict(&r, "Current");
    let drift = format!(
        "drift: {}",
        r.0["status"]["plan"]["summary"].as_str().unwrap()
    );
    assert_argo(&r, "Healthy", &["policy Observe", &drift]);
}

/// Reads until the operator has judged the current generation (observedGeneration set to it).
fn wait_observed(ns: &str, kind: &str, name: &str) -> (Value, Verdict) {
    let mut seen = None;
    wait_until(
        &format!("{kind}/{name} observed"),
        Duration::from_secs(60),
        || {
            let (obj, v) = read(ns, kind, name);
            let ok = obj["status"]["observedGeneration"] == obj["metadata"]["generation"];
            let err = obj["status"].to_string();
            seen = Some((obj, v));
            if ok { Ok(()) } else { Err(err) }
        },
    );
    seen.unwrap()
}

// Found by this suite and fixed: a DeltaTable applied before its DeltaSchema was Stalled,
// so kstatus said Failed and Flux's fail-fast health check gave up although the schema was
// on its way (`kubectl apply -f examples/` applies the tables first). It is Reconciling.
#[test]
fn a_table_applied_before_its_schema_is_in_progress_not_failed() {
    let ns = namespace("ks-order");
    let watch = Watch::start(&ns, "deltatables");
    std::thread::sleep(Duration::from_secs(1)); // the watch is open before anything exists
    let _op = Operator::start(&ns, ALL, &[]);
    apply_yaml(
        &ns,
        &std::fs::read_to_string(examples().join("orders.yaml")).unwrap(),
    );
    let r = wait_observed(&ns, "deltatable", "orders");
    assert_verdict(&r, "InProgress");
    assert_argo(
        &r,
        "Progressing",
        &["SchemaNotFound: waiting for DeltaSchema 'sales'"],
    );
    apply_yaml(
        &ns,
        &std::fs::read_to_string(examples().join("sales.yaml")).unwrap(),
    );
    let r = wait_read(&ns, "deltatable", "orders", "Ready", "True", None);
    assert_verdict(&r, "Current");
    assert_argo(&r, "Healthy", &[]);
    std::thread::sleep(Duration::from_secs(1));
    let versions = watch.versions();
    let failed: Vec<&Value> = versions
        .iter()
        .filter(|(_, v)| v.status == "Failed")
        .map(|(o, _)| &o["status"])
        .collect();
    assert!(
        failed.is_empty(),
        "kstatus said Failed on the way to Ready for: {failed:#?}"
    );
    // Argo CD: Progressing until Healthy, never Degraded (or Unknown, a Lua error) on the way
    let seen: Vec<&str> = versions
        .iter()
        .map(|(_, v)| v.argo.status.as_str())
        .collect();
    assert!(
        seen.iter().all(|s| *s == "Progressing" || *s == "Healthy")
            && seen.last() == Some(&"Healthy"),
        "Argo CD said {seen:?} for {:#?}",
        versions
            .iter()
            .map(|(o, _)| &o["status"])
            .collect::<Vec<_>>()
    );
}

// Found by this suite and fixed: before the operator first wrote status, a DeltaTable had
// no status and kstatus said Current, so a Flux health check right after apply passed at
// once. The CRDs default `status: {observedGeneration: 0}`: kstatus says InProgress
// ("generation is 1, but latest observed generation is 0").
#[test]
fn a_new_resource_is_in_progress_until_the_operator_sees_it() {
    let ns = namespace("ks-new");
    apply_examples(&ns); // no operator
    for (kind, name) in [
        ("deltatable", "orders"),
        ("deltatable", "customers"),
        ("deltaschema", "sales"),
    ] {
        let r = read(&ns, kind, name);
        assert_verdict(&r, "InProgress");
        assert_argo(&r, "Progressing", &["Waiting for delta-operator"]);
    }
}

/// A table whose approved plan is running is InProgress (kstatus) and
/// Progressing (Argo CD), with the step the status names; so is one whose
/// apply a SIGTERM cut short (Interrupted), never Failed or Degraded.
#[test]
fn an_applying_or_interrupted_table_is_in_progress() {
    let ns = namespace("ks-applying");
    let op = Operator::start(&ns, ALL, &[]);
    apply_examples(&ns);
    wait_read(&ns, "deltatable", "orders", "Ready", "True", None);
    let dir = op.stop();
    let config = format!(
        "targets:\n  lake:\n    lake: {{root: {}}}\n{ALL}\n",
        dir.path().join("lake").display()
    );
    // step 2 of 3 (the rewrite) waits 20 s before it runs
    let mut op = Operator::start_with_env(
        &ns,
        &config,
        &[],
        dir,
        &[
            ("DELTA_OPERATOR_FAILPOINT", "slow-step-2"),
            ("DELTA_OPERATOR_FAILPOINT_SECONDS", "20"),
        ],
    );
    apply_yaml(&ns, &orders_changed());
    let r = wait_read(
        &ns,
        "deltatable",
        "orders",
        "Reconciling",
        "True",
        Some("Applying"),
    );
    assert_verdict(&r, "InProgress");
    assert_argo(&r, "Progressing", &["Applying: "]);
    let status = op.terminate(Duration::from_secs(60));
    assert!(
        status.is_some_and(|s| s.success()),
        "{status:?}\n{}",
        op.log()
    );
    let r = wait_read(
        &ns,
        "deltatable",
        "orders",
        "Reconciling",
        "True",
        Some("Interrupted"),
    );
    assert_verdict(&r, "InProgress");
    assert_argo(&r, "Progressing", &["interrupted by a shutdown"]);
}

/// A table whose apply step keeps ending the operator process (here one death
/// allowed, `--max-step-interruptions 1`) is Stalled with reason CrashLoop: Failed
/// (kstatus) and Degraded (Argo CD), saying what to do.
#[test]
fn a_step_that_keeps_killing_the_operator_is_failed() {
    let ns = namespace("ks-crashloop");
    let op = Operator::start(&ns, ALL, &[]);
    apply_examples(&ns);
    wait_read(&ns, "deltatable", "orders", "Ready", "True", None);
    let mut dir = op.stop();
    let config = format!(
        "targets:\n  lake:\n    lake: {{root: {}}}\n{ALL}\n",
        dir.path().join("lake").display()
    );
    let crashing = [("DELTA_OPERATOR_FAILPOINT", "before-commit")];
    let flag = ["--max-step-interruptions", "1"];
    apply_yaml(&ns, &orders_changed());
    // the rewrite aborts the process: the one that finds it so stalls it
    let mut op = Operator::start_with_env(&ns, &config, &flag, dir, &crashing);
    wait_until(
        "the operator to die in the rewrite",
        Duration::from_secs(60),
        || {
            if op.log().contains("failpoint before-commit") {
                Ok(())
            } else {
                Err(op
                    .log()
                    .lines()
                    .rev()
                    .take(5)
                    .collect::<Vec<_>>()
                    .join("\n"))
            }
        },
    );
    op.kill9();
    dir = op.stop();
    let _op = Operator::start_with_env(&ns, &config, &flag, dir, &crashing);
    let r = wait_read(
        &ns,
        "deltatable",
        "orders",
        "Stalled",
        "True",
        Some("CrashLoop"),
    );
    assert_verdict(&r, "Failed");
    assert_argo(&r, "Degraded", &["CrashLoop: ", "resources.limits.memory"]);
}

/// Changes a lake table's comment with delta-rs, behind the operator's back.
fn change_comment_outside(table: &Path, comment: &str) {
    let url = url::Url::from_directory_path(table).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let t = deltalake::open_table(url).await.unwrap();
        let update = deltalake::operations::update_table_metadata::TableMetadataUpdate {
            name: None,
            description: Some(comment.into()),
        };
        t.update_table_metadata().with_update(update).await.unwrap();
    });
}

/// The value of an unlabelled gauge in a scrape of the operator's /metrics.
fn gauge(op: &Operator, name: &str) -> Option<String> {
    op.http("/metrics")
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")).map(str::to_string))
}

/// `driftPolicy: Fail` (here the DeltaSchema's, the default of its tables): drift made
/// outside the operator under policy Observe is Stalled with reason DriftDetected, so
/// Failed for kstatus and Degraded for Argo CD, and counted by the metric the alert
/// uses, until its plan is approved (acknowledged: Observe never applies); then it is
/// applied once the policy allows. The same drift on a table that says `driftPolicy:
/// Report` is shown and stays Current and Healthy, as before drift policies.
#[test]
fn drift_under_policy_fail_is_failed_until_approved_and_under_report_is_not() {
    let ns = namespace("ks-driftfail");
    let op = Operator::start(&ns, ALL, &[]);
    apply_examples(&ns);
    for name in ["orders", "customers"] {
        wait_read(&ns, "deltatable", name, "Ready", "True", None);
    }
    let patch = |what: &str, body: &str| {
        kubectl_ok(&["patch", "-n", &ns, what, "--type=merge", "-p", body]);
    };
    patch("deltaschema/sales", r#"{"spec":{"driftPolicy":"Fail"}}"#);
    patch("deltatable/orders", r#"{"spec":{"policy":"Observe"}}"#);
    patch(
        "deltatable/customers",
        r#"{"spec":{"policy":"Observe","driftPolicy":"Report"}}"#,
    );
    for name in ["orders", "customers"] {
        let r = wait_read(&ns, "deltatable", name, "Ready", "True", None);
        assert_verdict(&r, "Current");
    }
    assert_eq!(
        gauge(&op, "delta_operator_tables_drift_failing").as_deref(),
        Some("0")
    );
    for name in ["orders", "customers"] {
        change_comment_outside(&op.table_dir(name), "changed by hand");
    }
    // Fail: degraded, saying why and how to approve
    let r = wait_read(
        &ns,
        "deltatable",
        "orders",
        "Stalled",
        "True",
        Some("DriftDetected"),
    );
    assert_verdict(&r, "Failed");
    assert_eq!(condition(&r.0, "Ready").unwrap().0, "False");
    assert_eq!(condition(&r.0, "Drifted").unwrap().0, "True");
    let id = r.0["status"]["plan"]["id"].as_str().unwrap().to_string();
    let approve = format!("delta-operator.io/approve={id}");
    assert_argo(
        &r,
        "Degraded",
        &[
            "DriftDetected: ",
            "driftPolicy Fail",
            "policy Observe",
            &approve,
        ],
    );
    // Report: shown, healthy
    let r = wait_read(&ns, "deltatable", "customers", "Drifted", "True", None);
    assert_eq!(
        condition(&r.0, "Ready").unwrap(),
        ("True".to_string(), "Observing".to_string())
    );
    assert_verdict(&r, "Current");
    assert_argo(&r, "Healthy", &["policy Observe", "drift: "]);
    wait_until(
        "the metric the DeltaTableDriftFailing alert uses to count orders",
        Duration::from_secs(30),
        || match gauge(&op, "delta_operator_tables_drift_failing").as_deref() {
            Some("1") => Ok(()),
            other => Err(format!("{other:?}")),
        },
    );
    // approving the plan acknowledges the drift: Current and Healthy, nothing applied
    kubectl_ok(&["annotate", "-n", &ns, "deltatable/orders", &approve]);
    let r = wait_read(
        &ns,
        "deltatable",
        "orders",
        "Ready",
        "True",
        Some("Observing"),
    );
    assert_eq!(condition(&r.0, "Drifted").unwrap().0, "True");
    assert_verdict(&r, "Current");
    assert_argo(&r, "Healthy", &["drift: "]);
    wait_until(
        "the drift-failing gauge back to 0",
        Duration::from_secs(30),
        || match gauge(&op, "delta_operator_tables_drift_failing").as_deref() {
            Some("0") => Ok(()),
            other => Err(format!("{other:?}")),
        },
    );
    // the drift resolved by an apply: policy Auto corrects the comment, in sync
    patch("deltatable/orders", r#"{"spec":{"policy":"Auto"}}"#);
    let r = wait_read(&ns, "deltatable", "orders", "Ready", "True", Some("InSync"));
    assert_eq!(condition(&r.0, "Drifted").unwrap().0, "False");
    assert_verdict(&r, "Current");
    assert_argo(&r, "Healthy", &["the table matches the spec"]);
}

/// DeltaView, DeltaFunction and DeltaVolume on the lake: the chart's RBAC lets the
/// operator watch them and write their status; a view reading a DeltaTable that is not
/// Ready waits for it by name (WaitingForDependency: kstatus InProgress, Argo CD
/// Progressing), and every object on a target without a Unity Catalog metastore is
/// refused by name (NotSupportedByBackend: Failed, Degraded), the view once its table is Ready.
#[test]
fn objects_wait_for_what_they_read_then_the_lake_refuses_them_by_name() {
    let ns = namespace("ks-objects");
    let _op = Operator::start(&ns, ALL, &[]);
    apply_yaml(
        &ns,
        &format!(
            "apiVersion: delta-operator.io/v1alpha1
kind: DeltaSchema
metadata: {{name: sales, namespace: {ns}}}
spec: {{catalog: main}}
---
apiVersion: delta-operator.io/v1alpha1
kind: DeltaTable
metadata:
  name: orders
  namespace: {ns}
  annotations: {{delta-operator.io/paused: 'true'}}
spec:
  schemaRef: sales
  columns:
    - {{name: order_id, type: bigint}}
    - {{name: amount, type: int}}
---
apiVersion: delta-operator.io/v1alpha1
kind: DeltaView
metadata: {{name: recent, namespace: {ns}}}
spec:
  schemaRef: sales
  query: SELECT order_id, amount FROM orders WHERE amount > 0
---
apiVersion: delta-operator.io/v1alpha1
kind: DeltaFunction
metadata: {{name: mask, namespace: {ns}}}
spec:
  schemaRef: sales
  parameters: [{{name: s, type: string}}]
  returns: string
  body: \"'***'\"
---
apiVersion: delta-operator.io/v1alpha1
kind: DeltaVolume
metadata: {{name: raw, namespace: {ns}}}
spec: {{schemaRef: sales}}
"
        ),
    );
    // the table is paused (not Ready): the view waits for it, naming it
    let r = wait_read(
        &ns,
        "deltaview",
        "recent",
        "Reconciling",
        "True",
        Some("WaitingForDependency"),
    );
    assert_verdict(&r, "InProgress");
    assert_argo(
        &r,
        "Progressing",
        &["WaitingForDependency", "DeltaTable 'orders'"],
    );
    assert_eq!(
        r.0["status"]["object"], "main.sales.recent",
        "{}",
        r.0["status"]
    );
    // the function and the volume read nothing declared: refused at once on the lake
    for (kind, name) in [("deltafunction", "mask"), ("deltavolume", "raw")] {
        let r = wait_read(
            &ns,
            kind,
            name,
            "Stalled",
            "True",
            Some("NotSupportedByBackend"),
        );
        assert_verdict(&r, "Failed");
        assert_argo(
            &r,
            "Degraded",
            &["NotSupportedByBackend", "Unity Catalog metastore"],
        );
        assert_eq!(
            r.0["status"]["object"],
            format!("main.sales.{name}"),
            "{}",
            r.0["status"]
        );
    }
    // the table resumes and becomes Ready: the view goes on, and is refused by name too
    kubectl_ok(&[
        "annotate",
        "deltatable",
        "orders",
        "-n",
        &ns,
        "delta-operator.io/paused-",
    ]);
    wait_read(&ns, "deltatable", "orders", "Ready", "True", None);
    let r = wait_read(
        &ns,
        "deltaview",
        "recent",
        "Stalled",
        "True",
        Some("NotSupportedByBackend"),
    );
    assert_verdict(&r, "Failed");
    assert_argo(&r, "Degraded", &["Unity Catalog metastore"]);
    // kubectl get shows the printer columns: OBJECT and READY
    let table = kubectl_ok(&["get", "deltaviews,deltafunctions,deltavolumes", "-n", &ns]);
    assert!(
        table.contains("OBJECT") && table.contains("main.sales.recent") && table.contains("RISK"),
        "{table}"
    );
}
