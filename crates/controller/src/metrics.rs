//! Prometheus metrics and the health endpoints, on one port: GET /metrics,
//! /healthz, /readyz.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
// a panic while a lock is held leaves counters that are still counters: never poison every reconcile
use std::sync::{Arc, Mutex, PoisonError};

use hyper::StatusCode;
use tokio::net::TcpListener;

use crate::http;

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
}

#[derive(Default)]
pub struct Metrics {
    pub reconciles: AtomicU64,
    /// Per target: a counter of SQL statements sent (Databricks targets only).
    pub statement_counters: Mutex<Vec<(String, StatementCounter)>>,
    failures: Mutex<BTreeMap<String, u64>>,
    /// Sum and count of reconcile durations, in seconds.
    duration_sum_ms: AtomicU64,
    /// Per resource (`kind/ns/name`): drifted?, awaiting approval?
    states: Mutex<BTreeMap<String, (bool, bool)>>,
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

    pub fn observe(&self, key: String, millis: u64, drifted: bool, awaiting: bool) {
        self.reconciles.fetch_add(1, Ordering::Relaxed);
        self.duration_sum_ms.fetch_add(millis, Ordering::Relaxed);
        self.states
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key, (drifted, awaiting));
    }

    pub fn forget(&self, key: &str) {
        self.states
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(key);
    }

    pub fn render(&self) -> String {
        let n = self.reconciles.load(Ordering::Relaxed);
        let states = self.states.lock().unwrap_or_else(PoisonError::into_inner);
        let drifted = states.values().filter(|s| s.0).count();
        let awaiting = states.values().filter(|s| s.1).count();
        let mut out = String::new();
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
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

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
