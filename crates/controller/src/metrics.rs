//! Prometheus metrics and the health endpoints, on one port: GET /metrics,
//! /healthz, /readyz. The chart's alerting rules and Grafana dashboard
//! (charts/delta-operator/templates/prometheusrule.yaml, dashboards/) use
//! these names: e2e/ship/check.sh loads them and checks each name against a
//! scrape of a running operator.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
// a panic while a lock is held leaves counters that are still counters: never poison every reconcile
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use hyper::StatusCode;
use tokio::net::TcpListener;

use crate::decide::Report;
use crate::http;
use delta_operator_api::reason::{Phase, Reason};

/// The content type of every answer (Prometheus' text format).
const CONTENT_TYPE: &str = "text/plain; version=0.0.4";
/// How long a client may take to send its request head.
const HEAD_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// Reads one target's count of warehouse statements.
pub type StatementCounter = Box<dyn Fn() -> u64 + Send + Sync>;

/// Applies running now in this process, and the most seen at once.
#[derive(Debug, Default)]
pub struct InFlight {
    pub now: AtomicUsize,
    pub max: AtomicUsize,
    /// When each running apply began, by the id `begin` gave it.
    started: Mutex<BTreeMap<u64, Instant>>,
    next: AtomicU64,
}

impl InFlight {
    /// An apply begins: counted, and timed until `end` with the id returned.
    pub fn begin(&self) -> u64 {
        let now = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.max.fetch_max(now, Ordering::SeqCst);
        let id = self.next.fetch_add(1, Ordering::SeqCst);
        self.started
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id, Instant::now());
        id
    }

    /// The apply `begin` numbered `id` ended.
    pub fn end(&self, id: u64) {
        self.now.fetch_sub(1, Ordering::SeqCst);
        self.started
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&id);
    }

    /// How long the longest-running apply has run at `now`, in seconds (0: none runs).
    fn oldest_seconds(&self, now: Instant) -> f64 {
        self.started
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .map(|t| now.saturating_duration_since(*t).as_secs_f64())
            .fold(0.0, f64::max)
    }
}

/// A maintenance run's kind (the `kind` label of `delta_operator_maintenance_runs_total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum MaintenanceKind {
    Compact,
    Vacuum,
    Checkpoint,
}

impl MaintenanceKind {
    pub const ALL: [MaintenanceKind; 3] = [
        MaintenanceKind::Compact,
        MaintenanceKind::Vacuum,
        MaintenanceKind::Checkpoint,
    ];

    fn label(self) -> &'static str {
        match self {
            MaintenanceKind::Compact => "compact",
            MaintenanceKind::Vacuum => "vacuum",
            MaintenanceKind::Checkpoint => "checkpoint",
        }
    }
}

/// How a maintenance run ended (the `outcome` label).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum RunOutcome {
    Ok,
    Failed,
}

impl RunOutcome {
    pub const ALL: [RunOutcome; 2] = [RunOutcome::Ok, RunOutcome::Failed];

    fn label(self) -> &'static str {
        match self {
            RunOutcome::Ok => "ok",
            RunOutcome::Failed => "failed",
        }
    }
}

/// What the gauges count of one resource (`Kind/namespace/name`), as its last
/// reconcile found it; the times are when this process first saw the state.
#[derive(Debug, Default, Clone)]
struct State {
    drifted_since: Option<Instant>,
    awaiting_since: Option<Instant>,
    /// Stalled for a fix (any reason but an approval awaited).
    failing: bool,
    /// Reason DriftDetected: drift not applied under `driftPolicy: Fail`.
    drift_failing: bool,
    /// Its maintenance is overdue (set by the maintenance planning).
    maintenance_overdue: bool,
}

/// A state's start: kept while it lasts, `now` when it begins, none once it ends.
fn since(on: bool, was: Option<Instant>, now: Instant) -> Option<Instant> {
    on.then(|| was.unwrap_or(now))
}

#[derive(Default)]
pub struct Metrics {
    pub reconciles: AtomicU64,
    /// Per target: a counter of SQL statements sent (Databricks targets only).
    pub statement_counters: Mutex<Vec<(String, StatementCounter)>>,
    failures: Mutex<BTreeMap<String, u64>>,
    /// Sum and count of reconcile durations, in seconds.
    duration_sum_ms: AtomicU64,
    /// Per resource (`Kind/ns/name`): what its last reconcile found.
    states: Mutex<BTreeMap<String, State>>,
    /// Maintenance runs by kind and outcome.
    maintenance_runs: Mutex<BTreeMap<(MaintenanceKind, RunOutcome), u64>>,
    pub ready: AtomicBool,
    /// The admission webhook is started but cannot answer yet (caches not synced,
    /// or its CA not yet in the webhook configuration): /readyz waits for it too.
    pub webhook_pending: AtomicBool,
    pub lease_targets: Arc<Mutex<Vec<String>>>,
    pub applies: Arc<InFlight>,
    /// Shards whose Lease this process holds (`--shards` above 1).
    pub shards_held: AtomicUsize,
}

impl Metrics {
    pub fn failed(&self, reason: &str) {
        *self
            .failures
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(reason.to_string())
            .or_default() += 1;
    }

    /// A reconcile of `key` (`Kind/namespace/name`) took `millis` and found `report`.
    pub fn observe(&self, key: String, millis: u64, report: &Report) {
        self.observe_at(key, millis, report, Instant::now());
    }

    fn observe_at(&self, key: String, millis: u64, report: &Report, now: Instant) {
        self.reconciles.fetch_add(1, Ordering::Relaxed);
        self.duration_sum_ms.fetch_add(millis, Ordering::Relaxed);
        let mut states = self.states.lock().unwrap_or_else(PoisonError::into_inner);
        let s = states.entry(key).or_default();
        s.drifted_since = since(report.drifted.is_some(), s.drifted_since, now);
        s.awaiting_since = since(report.awaiting(), s.awaiting_since, now);
        s.failing = report.reason.phase() == Phase::Stalled && !report.reason.awaits_approval();
        s.drift_failing = report.reason == Reason::DriftDetected;
    }

    /// Whether `key`'s (`Kind/namespace/name`) maintenance is overdue: due,
    /// planned and not run for longer than its interval.
    pub fn set_maintenance_overdue(&self, key: &str, overdue: bool) {
        self.states
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(key.to_string())
            .or_default()
            .maintenance_overdue = overdue;
    }

    /// A maintenance run ended.
    pub fn maintenance_ran(&self, kind: MaintenanceKind, outcome: RunOutcome) {
        *self
            .maintenance_runs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry((kind, outcome))
            .or_default() += 1;
    }

    pub fn forget(&self, key: &str) {
        self.states
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(key);
    }

    pub fn render(&self) -> String {
        self.render_at(Instant::now())
    }

    fn render_at(&self, now: Instant) -> String {
        let n = self.reconciles.load(Ordering::Relaxed);
        let states = self.states.lock().unwrap_or_else(PoisonError::into_inner);
        let count = |f: fn(&State) -> bool| states.values().filter(|s| f(s)).count();
        let drifted = count(|s| s.drifted_since.is_some());
        let awaiting = count(|s| s.awaiting_since.is_some());
        let oldest = |f: fn(&State) -> Option<Instant>| {
            states
                .values()
                .filter_map(f)
                .map(|t| now.saturating_duration_since(t).as_secs_f64())
                .fold(0.0, f64::max)
        };
        let mut out = String::new();
        let mut gauge = |name: &str, help: &str, value: String| {
            out.push_str(&format!(
                "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {value}\n"
            ));
        };
        gauge(
            "delta_operator_tables_failing",
            "Resources stalled for a fix: any Stalled reason but an approval awaited (DriftDetected included).",
            count(|s| s.failing).to_string(),
        );
        gauge(
            "delta_operator_tables_drift_failing",
            "Resources degraded by drift under driftPolicy Fail (reason DriftDetected).",
            count(|s| s.drift_failing).to_string(),
        );
        gauge(
            "delta_operator_drift_oldest_seconds",
            "How long the resource drifted longest has differed from its spec, as this process saw it (0: none).",
            format!("{:.0}", oldest(|s| s.drifted_since)),
        );
        gauge(
            "delta_operator_approval_oldest_seconds",
            "How long the plan waiting longest for an approval has waited, as this process saw it (0: none).",
            format!("{:.0}", oldest(|s| s.awaiting_since)),
        );
        gauge(
            "delta_operator_apply_oldest_seconds",
            "How long the longest-running apply of this process has run (0: none runs).",
            format!("{:.0}", self.applies.oldest_seconds(now)),
        );
        gauge(
            "delta_operator_maintenance_overdue",
            "Tables whose maintenance has been due, planned and not run for longer than its interval.",
            count(|s| s.maintenance_overdue).to_string(),
        );
        out.push_str("# HELP delta_operator_maintenance_runs_total Maintenance runs (compact, vacuum, checkpoint) by outcome.\n# TYPE delta_operator_maintenance_runs_total counter\n");
        let runs = self
            .maintenance_runs
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        for kind in MaintenanceKind::ALL {
            for outcome in RunOutcome::ALL {
                out.push_str(&format!(
                    "delta_operator_maintenance_runs_total{{kind=\"{}\",outcome=\"{}\"}} {}\n",
                    kind.label(),
                    outcome.label(),
                    runs.get(&(kind, outcome)).copied().unwrap_or(0)
                ));
            }
        }
        out.push_str("# HELP delta_operator_reconciles_total Reconciles run.\n# TYPE delta_operator_reconciles_total counter\n");
        out.push_str(&format!("delta_operator_reconciles_total {n}\n"));
        out.push_str("# HELP delta_operator_reconcile_failures_total Failed reconciles by reason.\n# TYPE delta_operator_reconcile_failures_total counter\n");
        for (reason, count) in self
            .failures
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
        {
            out.push_str(&format!(
                "delta_operator_reconcile_failures_total{{reason=\"{reason}\"}} {count}\n"
            ));
        }
        out.push_str("# HELP delta_operator_reconcile_duration_seconds Time spent reconciling.\n# TYPE delta_operator_reconcile_duration_seconds summary\n");
        out.push_str(&format!(
            "delta_operator_reconcile_duration_seconds_sum {:.3}\n",
            self.duration_sum_ms.load(Ordering::Relaxed) as f64 / 1e3
        ));
        out.push_str(&format!(
            "delta_operator_reconcile_duration_seconds_count {n}\n"
        ));
        out.push_str("# HELP delta_operator_tables_drifted Resources whose live table differs from the spec.\n# TYPE delta_operator_tables_drifted gauge\n");
        out.push_str(&format!("delta_operator_tables_drifted {drifted}\n"));
        out.push_str("# HELP delta_operator_plans_awaiting_approval Plans waiting for an approval annotation.\n# TYPE delta_operator_plans_awaiting_approval gauge\n");
        out.push_str(&format!(
            "delta_operator_plans_awaiting_approval {awaiting}\n"
        ));
        out.push_str("# HELP delta_operator_lease_held Targets whose apply Lease this process holds.\n# TYPE delta_operator_lease_held gauge\n");
        let held = self
            .lease_targets
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        out.push_str(&format!("delta_operator_lease_held {}\n", held.len()));
        out.push_str("# HELP delta_operator_shards_held Shards whose Lease this replica holds (run --shards above 1).\n# TYPE delta_operator_shards_held gauge\n");
        out.push_str(&format!(
            "delta_operator_shards_held {}\n",
            self.shards_held.load(Ordering::Relaxed)
        ));
        out.push_str("# HELP delta_operator_applies_in_flight Applies running now.\n# TYPE delta_operator_applies_in_flight gauge\n");
        out.push_str(&format!(
            "delta_operator_applies_in_flight {}\n",
            self.applies.now.load(Ordering::Relaxed)
        ));
        out.push_str("# HELP delta_operator_applies_in_flight_max The most applies that ran at once since the start.\n# TYPE delta_operator_applies_in_flight_max gauge\n");
        out.push_str(&format!(
            "delta_operator_applies_in_flight_max {}\n",
            self.applies.max.load(Ordering::Relaxed)
        ));
        out.push_str("# HELP delta_operator_statements_total SQL statements sent to a warehouse, by target.\n# TYPE delta_operator_statements_total counter\n");
        for (target, count) in self
            .statement_counters
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
        {
            out.push_str(&format!(
                "delta_operator_statements_total{{target=\"{target}\"}} {}\n",
                count()
            ));
        }
        out
    }
}

/// Serves /metrics, /healthz and /readyz until the process ends.
pub async fn serve(listener: TcpListener, metrics: Arc<Metrics>) {
    loop {
        let Ok((sock, _)) = listener.accept().await else {
            continue;
        };
        let metrics = metrics.clone();
        tokio::spawn(http::serve_connection(sock, HEAD_TIMEOUT, move |req| {
            let answer = route(req.uri().path(), &metrics);
            async move { answer }
        }));
    }
}

/// The answer for a path (any method, as probes and scrapers only GET).
fn route(path: &str, metrics: &Metrics) -> http::Reply {
    let (code, body) = match path {
        "/metrics" => (StatusCode::OK, metrics.render()),
        "/healthz" => (StatusCode::OK, "ok\n".to_string()),
        "/readyz"
            if metrics.ready.load(Ordering::Relaxed)
                && !metrics.webhook_pending.load(Ordering::Relaxed) =>
        {
            (StatusCode::OK, "ok\n".to_string())
        }
        "/readyz" => (StatusCode::SERVICE_UNAVAILABLE, "not ready\n".to_string()),
        _ => (StatusCode::NOT_FOUND, "not found\n".to_string()),
    };
    http::reply(code, CONTENT_TYPE, body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// The value of an unlabelled sample in a rendering.
    fn value(text: &str, name: &str) -> f64 {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no {name} in:\n{text}"))
            .parse()
            .unwrap()
    }

    #[test]
    fn the_gauges_count_each_resource_by_its_last_reconcile_and_time_its_state() {
        let m = Metrics::default();
        let t0 = Instant::now();
        let drifted = |reason: Reason| Report {
            drifted: Some("+0 ~1 -0".into()),
            ..Report::new(reason, "m")
        };
        m.observe_at(
            "DeltaTable/ns/a".into(),
            5,
            &drifted(Reason::DriftDetected),
            t0,
        );
        m.observe_at(
            "DeltaTable/ns/b".into(),
            5,
            &drifted(Reason::ApprovalRequired),
            t0,
        );
        m.observe_at(
            "DeltaTable/ns/c".into(),
            5,
            &Report::new(Reason::ApplyFailed, "m"),
            t0,
        );
        m.observe_at(
            "DeltaTable/ns/d".into(),
            5,
            &Report::new(Reason::InSync, "m"),
            t0,
        );
        let t1 = t0 + Duration::from_secs(90);
        // a's drift goes on: its start is kept
        m.observe_at(
            "DeltaTable/ns/a".into(),
            5,
            &drifted(Reason::DriftDetected),
            t1,
        );
        let out = m.render_at(t1);
        assert_eq!(value(&out, "delta_operator_tables_drifted"), 2.0, "{out}");
        assert_eq!(value(&out, "delta_operator_plans_awaiting_approval"), 1.0);
        assert_eq!(value(&out, "delta_operator_tables_failing"), 2.0, "a and c");
        assert_eq!(value(&out, "delta_operator_tables_drift_failing"), 1.0);
        assert_eq!(value(&out, "delta_operator_drift_oldest_seconds"), 90.0);
        assert_eq!(value(&out, "delta_operator_approval_oldest_seconds"), 90.0);
        assert_eq!(value(&out, "delta_operator_maintenance_overdue"), 0.0);
        // resolved: nothing failing, drifted or awaited any more
        for k in ["a", "b", "c"] {
            m.observe_at(
                format!("DeltaTable/ns/{k}"),
                5,
                &Report::new(Reason::InSync, "m"),
                t1,
            );
        }
        let out = m.render_at(t1 + Duration::from_secs(10));
        for gauge in [
            "delta_operator_tables_drifted",
            "delta_operator_tables_failing",
            "delta_operator_tables_drift_failing",
            "delta_operator_drift_oldest_seconds",
            "delta_operator_approval_oldest_seconds",
        ] {
            assert_eq!(value(&out, gauge), 0.0, "{gauge}: {out}");
        }
        // the maintenance flag survives reconciles and goes with the resource
        m.set_maintenance_overdue("DeltaTable/ns/a", true);
        m.observe_at(
            "DeltaTable/ns/a".into(),
            5,
            &Report::new(Reason::InSync, "m"),
            t1,
        );
        assert_eq!(
            value(&m.render(), "delta_operator_maintenance_overdue"),
            1.0
        );
        m.set_maintenance_overdue("DeltaTable/ns/a", false);
        assert_eq!(
            value(&m.render(), "delta_operator_maintenance_overdue"),
            0.0
        );
        m.set_maintenance_overdue("DeltaTable/ns/a", true);
        m.forget("DeltaTable/ns/a");
        assert_eq!(
            value(&m.render(), "delta_operator_maintenance_overdue"),
            0.0
        );
    }

    #[test]
    fn maintenance_runs_are_counted_by_kind_and_outcome_every_series_present() {
        let m = Metrics::default();
        m.maintenance_ran(MaintenanceKind::Vacuum, RunOutcome::Ok);
        m.maintenance_ran(MaintenanceKind::Vacuum, RunOutcome::Ok);
        m.maintenance_ran(MaintenanceKind::Compact, RunOutcome::Failed);
        let out = m.render();
        let series = |k: &str, o: &str| {
            value(
                &out,
                &format!("delta_operator_maintenance_runs_total{{kind=\"{k}\",outcome=\"{o}\"}}"),
            )
        };
        assert_eq!(series("vacuum", "ok"), 2.0, "{out}");
        assert_eq!(series("compact", "failed"), 1.0);
        assert_eq!(
            series("checkpoint", "ok"),
            0.0,
            "every series is there from the start"
        );
        assert!(out.contains("# TYPE delta_operator_maintenance_runs_total counter"));
    }

    #[test]
    fn the_oldest_apply_is_timed_until_it_ends() {
        let f = InFlight::default();
        let t0 = Instant::now();
        assert_eq!(f.oldest_seconds(t0), 0.0);
        let first = f.begin();
        let second = f.begin();
        assert_eq!(f.now.load(Ordering::SeqCst), 2);
        assert!(f.oldest_seconds(Instant::now() + Duration::from_secs(30)) >= 30.0);
        f.end(first);
        f.end(second);
        assert_eq!(f.now.load(Ordering::SeqCst), 0);
        assert_eq!(f.max.load(Ordering::SeqCst), 2);
        assert_eq!(
            f.oldest_seconds(Instant::now() + Duration::from_secs(30)),
            0.0
        );
    }

    /// A request head split over several segments is read whole before the
    /// answer: answering after "GET " would give 404 and reset the client.
    #[tokio::test]
    async fn a_request_sent_in_pieces_is_answered_for_its_path() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(serve(listener, Arc::new(Metrics::default())));
        let mut sock = tokio::net::TcpStream::connect(addr).await.unwrap();
        sock.set_nodelay(true).unwrap();
        sock.write_all(b"GET ").await.unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        sock.write_all(b"/healthz HTTP/1.1\r\nhost: x\r\n")
            .await
            .unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        sock.write_all(b"\r\n").await.unwrap();
        let mut out = String::new();
        sock.read_to_string(&mut out).await.unwrap();
        assert!(out.starts_with("HTTP/1.1 200 OK"), "{out}");
        assert!(out.ends_with("ok\n"), "{out}");
    }
}
