//! Shared by the end-to-end tests: the control plane `e2e/with-controlplane.sh`
//! started, kubectl against it, polling, and operator processes.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

pub const BIN: &str = env!("CARGO_BIN_EXE_delta-operator");

pub fn e2e_dir() -> PathBuf {
    let d = std::env::var_os("DELTA_OPERATOR_E2E_DIR").map(PathBuf::from);
    let d = d.expect("no control plane: run these tests through `make test` (e2e/with-controlplane.sh starts kube-apiserver and etcd)");
    assert!(
        d.join("kubeconfig").exists(),
        "{} has no kubeconfig",
        d.display()
    );
    d
}

/// kubectl against the test control plane: success, stdout, stderr.
pub fn kubectl(args: &[&str]) -> (bool, String, String) {
    let o = Command::new("kubectl")
        .args(args)
        .env("KUBECONFIG", e2e_dir().join("kubeconfig"))
        .output()
        .expect("kubectl");
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// kubectl's stdout; panics with its stderr when it fails.
pub fn kubectl_ok(args: &[&str]) -> String {
    let (ok, out, err) = kubectl(args);
    assert!(ok, "kubectl {args:?} failed: {out}{err}");
    out
}

pub fn get(ns: &str, kind: &str, name: &str) -> Value {
    serde_json::from_str(&kubectl_ok(&["get", kind, name, "-n", ns, "-o", "json"])).unwrap()
}

pub fn condition(obj: &Value, t: &str) -> Option<(String, String)> {
    obj["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == t)
        .map(|c| {
            (
                c["status"].as_str().unwrap_or("").to_string(),
                c["reason"].as_str().unwrap_or("").to_string(),
            )
        })
}

/// The reason and message of the condition of type `t` when it is True.
pub fn true_condition(obj: &Value, t: &str) -> Option<(String, String)> {
    obj["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == t && c["status"] == "True")
        .map(|c| {
            (
                c["reason"].as_str().unwrap_or_default().to_string(),
                c["message"].as_str().unwrap_or_default().to_string(),
            )
        })
}

/// Status never said Stalled (an interruption, a restart, a conflict is Progressing).
pub fn never_stalled(samples: &[Value]) {
    for s in samples {
        assert!(
            true_condition(s, "Stalled").is_none(),
            "Stalled at some moment: {}",
            s["status"]
        );
    }
}

/// `reason: message` of every event on the object named `name` in `ns`.
pub fn events(ns: &str, name: &str) -> String {
    kubectl_ok(&[
        "get",
        "events",
        "-n",
        ns,
        "--field-selector",
        &format!("involvedObject.name={name}"),
        "-o",
        "jsonpath={range .items[*]}{.reason}: {.message}{\"\\n\"}{end}",
    ])
}

/// Reads one resource every `every` in the background: what it said, in order.
pub struct Sampler {
    seen: Arc<Mutex<Vec<Value>>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Sampler {
    pub fn start(ns: &str, kind: &str, name: &str, every: Duration) -> Self {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (s, st) = (seen.clone(), stop.clone());
        let args: Vec<String> = ["get", "-n", ns, kind, name, "-o", "json"]
            .map(String::from)
            .to_vec();
        let thread = std::thread::spawn(move || {
            while !st.load(Ordering::SeqCst) {
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                let (ok, out, _) = kubectl(&args);
                if ok && let Ok(v) = serde_json::from_str::<Value>(&out) {
                    s.lock().unwrap().push(v);
                }
                std::thread::sleep(every);
            }
        });
        Sampler {
            seen,
            stop,
            thread: Some(thread),
        }
    }

    /// Stops sampling: every sample taken.
    pub fn samples(mut self) -> Vec<Value> {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.seen.lock().unwrap().clone()
    }
}

/// Polls until `f` holds (or fails with the last object seen).
pub fn wait_until(what: &str, timeout: Duration, mut f: impl FnMut() -> Result<(), String>) {
    let start = Instant::now();
    let mut last = String::new();
    while start.elapsed() < timeout {
        match f() {
            Ok(()) => return,
            Err(e) => last = e,
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    panic!("timed out after {timeout:?} waiting for {what}: {last}");
}

pub fn wait_condition(
    ns: &str,
    kind: &str,
    name: &str,
    t: &str,
    status: &str,
    reason: Option<&str>,
) -> Value {
    let mut seen = Value::Null;
    wait_until(
        &format!("{kind}/{name} {t}={status}"),
        Duration::from_secs(60),
        || {
            seen = get(ns, kind, name);
            match condition(&seen, t) {
                Some((s, r)) if s == status && reason.is_none_or(|x| x == r) => Ok(()),
                other => Err(format!("{other:?} in {}", seen["status"])),
            }
        },
    );
    seen
}

/// An operator process watching one namespace, with its own config and lake.
pub struct Operator {
    child: Child,
    pub lake: PathBuf,
    pub port: u16,
    dir: Option<tempfile::TempDir>,
}

impl Drop for Operator {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // a failing test shows what its operators said
        if std::thread::panicking() {
            let log = self.log();
            let tail: Vec<&str> = log.lines().rev().take(80).collect();
            eprintln!(
                "--- operator log (port {}, last {} lines)\n{}",
                self.port,
                tail.len(),
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            );
        }
    }
}

impl Operator {
    /// An operator watching `ns`, its lake in a temp dir; `target` is the YAML of the target's allowance.
    pub fn start(ns: &str, allowance: &str, extra: &[&str]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        Self::start_in(ns, allowance, extra, dir)
    }

    pub fn start_in(ns: &str, allowance: &str, extra: &[&str], dir: tempfile::TempDir) -> Self {
        Self::start_in_with_env(ns, allowance, extra, dir, &[])
    }

    /// Like `start_in`, with more environment (a failpoint, say).
    pub fn start_in_with_env(
        ns: &str,
        allowance: &str,
        extra: &[&str],
        dir: tempfile::TempDir,
        env: &[(&str, &str)],
    ) -> Self {
        let lake = dir.path().join("lake");
        let config = format!(
            "targets:\n  lake:\n    lake: {{root: {}}}\n{allowance}\n",
            lake.display()
        );
        Self::start_with_env(ns, &config, extra, dir, env)
    }

    /// kill -9: the process ends at once, in the middle of whatever it does.
    pub fn kill9(&mut self) {
        self.child.kill().expect("kill -9 the operator");
        let _ = self.child.wait();
    }

    /// Sends SIGTERM and waits (up to `timeout`) for the process to end: its exit status.
    pub fn terminate(&mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
        let ok = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "kill -TERM {}", self.child.id());
        let start = Instant::now();
        while start.elapsed() < timeout {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        None
    }

    pub fn log(&self) -> String {
        self.dir
            .as_ref()
            .map(|d| std::fs::read_to_string(d.path().join("operator.log")).unwrap_or_default())
            .unwrap_or_default()
    }

    /// Stops the operator, keeping its lake and config for a restart.
    pub fn stop(mut self) -> tempfile::TempDir {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.dir.take().unwrap()
    }

    pub fn table_dir(&self, name: &str) -> PathBuf {
        self.lake.join("main/sales").join(name)
    }

    pub fn http(&self, path: &str) -> String {
        http_get(self.port, path)
    }
}

/// A GET on 127.0.0.1:`port` (an operator's health port): the whole response.
pub fn http_get(port: u16, path: &str) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).expect("the health port answers");
    s.write_all(format!("GET {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n").as_bytes())
        .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

pub const ALL: &str = "    namespaces: ['*']\n    schemas: ['*']";

pub fn namespace(name: &str) -> String {
    let ns = format!("{name}-{}", std::process::id());
    kubectl_ok(&["create", "namespace", &ns]);
    grant_chart_leases(&ns);
    ns
}

/// The operators run as the chart's ServiceAccount (e2e/chart-identity.sh). The chart
/// grants Leases in its own namespace only; each test keeps its operators' Leases in
/// its namespace, so the chart's Lease Role and RoleBinding are copied there unchanged.
fn grant_chart_leases(ns: &str) {
    let chart_ns = std::fs::read_to_string(e2e_dir().join("chart-namespace"))
        .expect("chart-namespace: run through e2e/with-controlplane.sh");
    for kind in ["role", "rolebinding"] {
        let mut obj: Value = serde_json::from_str(&kubectl_ok(&[
            "get",
            kind,
            "delta-operator-leases",
            "-n",
            chart_ns.trim(),
            "-o",
            "json",
        ]))
        .unwrap();
        let meta = obj["metadata"].as_object_mut().unwrap();
        meta.retain(|k, _| k == "name" || k == "labels");
        meta.insert("namespace".into(), ns.into());
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), obj.to_string()).unwrap();
        kubectl_ok(&["apply", "-f", file.path().to_str().unwrap()]);
    }
}

/// The kubeconfig of the chart's ServiceAccount: what every test operator runs as.
pub fn operator_kubeconfig() -> PathBuf {
    let k = e2e_dir().join("kubeconfig-chart");
    assert!(
        k.exists(),
        "{} is missing: e2e/with-controlplane.sh writes it (e2e/chart-identity.sh)",
        k.display()
    );
    k
}

pub fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples")
}

pub fn apply_yaml(ns: &str, yaml: &str) {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("m.yaml");
    std::fs::write(&f, yaml).unwrap();
    kubectl_ok(&["apply", "-n", ns, "-f", f.to_str().unwrap()]);
}

/// How many commits a Delta table's log holds.
pub fn delta_versions(table: &Path) -> usize {
    std::fs::read_dir(table.join("_delta_log"))
        .map(|d| {
            d.flatten()
                .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
                .count()
        })
        .unwrap_or(0)
}

impl Operator {
    /// An operator watching `ns` whose one target, `dbx`, is the Databricks workspace of the
    /// DATABRICKS_* environment (the warehouse emulator under `make test`): host and warehouse
    /// written into the config, the token named by environment variable, as the README shows.
    pub fn start_databricks(ns: &str, allowance: &str, extra: &[&str]) -> Self {
        let need = super::warehouse::env;
        let config = format!(
            "targets:\n  dbx:\n    databricks:\n      host: {}\n      warehouseId: {}\n      auth: {{tokenEnv: DATABRICKS_TOKEN}}\n{allowance}\ndefaultTarget: dbx\n",
            need("DATABRICKS_HOST"),
            need("DATABRICKS_WAREHOUSE_ID")
        );
        need("DATABRICKS_TOKEN");
        Self::start_with_config(ns, &config, extra, tempfile::tempdir().unwrap())
    }

    /// Like `start_in`, with the whole config file given.
    pub fn start_with_config(
        ns: &str,
        config_yaml: &str,
        extra: &[&str],
        dir: tempfile::TempDir,
    ) -> Self {
        Self::start_with_env(ns, config_yaml, extra, dir, &[])
    }

    /// Like `start_with_config`, with more environment (a failpoint, say).
    pub fn start_with_env(
        ns: &str,
        config_yaml: &str,
        extra: &[&str],
        dir: tempfile::TempDir,
        env: &[(&str, &str)],
    ) -> Self {
        Self::spawn(Some(ns), ns, config_yaml, extra, dir)
            .envs(env)
            .started()
    }

    /// An operator watching every namespace, its Leases in `lease_ns`.
    pub fn start_cluster_wide(
        lease_ns: &str,
        config_yaml: &str,
        extra: &[&str],
        dir: tempfile::TempDir,
    ) -> Self {
        Self::spawn(None, lease_ns, config_yaml, extra, dir).started()
    }

    fn spawn(
        watch: Option<&str>,
        ns: &str,
        config_yaml: &str,
        extra: &[&str],
        dir: tempfile::TempDir,
    ) -> Spawn {
        let lake = dir.path().join("lake");
        let config = dir.path().join("config.yaml");
        std::fs::write(&config, config_yaml).unwrap();
        // port 0: the operator picks a free port and prints it (no race for a port chosen here)
        let mut args = vec!["run", "--listen", "127.0.0.1:0"];
        if let Some(w) = watch {
            args.extend(["--namespace", w]);
        }
        if !extra.contains(&"--drift-interval") {
            args.extend(["--drift-interval", "2s"]);
        }
        if !extra.contains(&"--lease-namespace") {
            args.extend(["--lease-namespace", ns]);
        }
        if !extra.contains(&"--lease-seconds") {
            args.extend(["--lease-seconds", "4"]);
        }
        args.extend(extra);
        let mut command = Command::new(BIN);
        command
            .args(&args)
            .arg("--config")
            .arg(&config)
            .env("KUBECONFIG", operator_kubeconfig())
            .env(
                "DELTA_OPERATOR_LOG",
                "info,kube=warn,buoyant_kernel=warn,deltalake_core=warn,datafusion=warn",
            );
        Spawn { command, lake, dir }
    }
}

/// An operator's command, not started yet.
struct Spawn {
    command: Command,
    lake: PathBuf,
    dir: tempfile::TempDir,
}

impl Spawn {
    fn envs(mut self, env: &[(&str, &str)]) -> Self {
        self.command.envs(env.iter().copied());
        self
    }

    /// Starts it and waits until it listens.
    fn started(self) -> Operator {
        let Spawn {
            mut command,
            lake,
            dir,
        } = self;
        let log_path = dir.path().join("operator.log");
        let log = std::fs::File::create(&log_path).unwrap();
        let child = command
            .stdout(Stdio::from(log.try_clone().unwrap()))
            .stderr(Stdio::from(log))
            .spawn()
            .expect("start the operator");
        let mut port = 0;
        wait_until("the operator to listen", Duration::from_secs(30), || {
            let text = std::fs::read_to_string(&log_path).unwrap_or_default();
            match text
                .lines()
                .find_map(|l| l.strip_prefix("listening on "))
                .and_then(|a| a.rsplit(':').next()?.trim().parse().ok())
            {
                Some(p) => {
                    port = p;
                    Ok(())
                }
                None => Err(text.lines().rev().take(5).collect::<Vec<_>>().join("\n")),
            }
        });
        Operator {
            child,
            lake,
            port,
            dir: Some(dir),
        }
    }
}

/// The example `orders` with a new comment, `amount` widened int → bigint and a
/// new column and a new CHECK: COMMENT ON TABLE, a rewrite (REPLACE TABLE from
/// itself), ADD CONSTRAINT, and the operator's record of its constraints.
pub fn orders_changed() -> String {
    std::fs::read_to_string(examples().join("orders.yaml"))
        .unwrap()
        .replace(
            "comment: Orders as placed",
            "comment: Orders as placed, with notes",
        )
        .replace(
            "    - name: amount\n      type: int\n",
            "    - name: amount\n      type: bigint\n",
        )
        .replace(
            "    - name: order_date\n      type: date\n",
            "    - name: order_date\n      type: date\n    - name: note\n      type: string\n",
        )
        .replace(
            "        expression: amount >= 0\n",
            "        expression: amount >= 0\n    - check:\n        name: order_id_positive\n        expression: order_id > 0\n",
        )
}

/// The example `orders` without its `status` column: a destructive plan.
pub const ORDERS_WITHOUT_STATUS: &str = "apiVersion: delta-operator.io/v1alpha1
kind: DeltaTable
metadata: {name: orders}
spec:
  schemaRef: sales
  comment: Orders as placed
  columns:
    - {name: order_id, type: bigint, nullable: false}
    - {name: customer_id, type: bigint}
    - {name: amount, type: int, comment: Amount in cents}
    - name: items
      type: {array: {struct: [{name: sku, type: string}, {name: quantity, type: int}]}}
    - {name: order_date, type: date}
  partitionedBy: [order_date]
  constraints:
    - check: {name: amount_not_negative, expression: amount >= 0}
";

/// The events.k8s.io Events in `ns` about the object named `name` with this reason.
pub fn events_about(ns: &str, name: &str, reason: &str) -> Vec<Value> {
    let all: Value = serde_json::from_str(&kubectl_ok(&[
        "get",
        "events.events.k8s.io",
        "-n",
        ns,
        "-o",
        "json",
    ]))
    .unwrap();
    all["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["reason"] == reason && e["regarding"]["name"] == name)
        .cloned()
        .collect()
}

/// An operator log without the terminal's colour codes.
pub fn plain_log(log: &str) -> String {
    let mut out = String::with_capacity(log.len());
    let mut chars = log.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // ESC [ … letter
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The log lines at `level` (WARN, DEBUG, …) the operator wrote about the object
/// `ns/name` with this reason (`Context::announce`'s fields).
pub fn said_at(log: &str, level: &str, ns: &str, name: &str, reason: &str) -> Vec<String> {
    let object = format!("object={ns}/{name} ");
    let reason = format!("reason={reason}");
    plain_log(log)
        .lines()
        .filter(|l| {
            l.contains(&format!(" {level} "))
                && l.contains(&object)
                && (l.contains(&format!("{reason} ")) || l.ends_with(&reason))
        })
        .map(str::to_string)
        .collect()
}
