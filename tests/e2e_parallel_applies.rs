//! Applies at scale, on a real kube-apiserver + etcd (`e2e/with-controlplane.sh`)
//! and a lake of real Delta tables: one operator runs applies of different tables
//! at once, up to the target's `maxConcurrentApplies`; two operator processes on
//! one target never both apply (the target's Lease, shared by one process's
//! applies); two resources claiming one table never both write it. Each apply is
//! made long with the debug-build failpoint `slow-step-1` (the step waits before
//! it runs), so applies that could overlap do.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use support::e2e::*;

const SLOW: &[(&str, &str)] = &[
    ("DELTA_OPERATOR_FAILPOINT", "slow-step-1"),
    ("DELTA_OPERATOR_FAILPOINT_SECONDS", "3"),
];

fn config(lake: &std::path::Path, limit: usize) -> String {
    format!(
        "targets:\n  lake:\n    lake: {{root: {}}}\n    maxConcurrentApplies: {limit}\n{ALL}\n",
        lake.display()
    )
}

/// A DeltaSchema `sales` and `n` new DeltaTables `t0`… in it.
fn tables_yaml(n: usize) -> String {
    let mut yaml = String::from(
        "apiVersion: delta-operator.io/v1alpha1\nkind: DeltaSchema\nmetadata: {name: sales}\nspec: {catalog: main}\n",
    );
    for i in 0..n {
        yaml.push_str(&format!(
            "---\napiVersion: delta-operator.io/v1alpha1\nkind: DeltaTable\nmetadata: {{name: t{i}}}\nspec:\n  schemaRef: sales\n  columns:\n    - {{name: id, type: bigint}}\n"
        ));
    }
    yaml
}

/// A gauge or counter from the operator's /metrics (0 when absent).
fn metric(op: &Operator, name: &str) -> u64 {
    metric_at(op.port, name)
}

fn metric_at(port: u16, name: &str) -> u64 {
    http_get(port, "/metrics")
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// Whether a status's conditions hold `type` with `status` (and `reason`, when given).
fn has_condition(
    conditions: &serde_json::Value,
    type_: &str,
    status: &str,
    reason: Option<&str>,
) -> bool {
    conditions.as_array().is_some_and(|all| {
        all.iter().any(|c| {
            c["type"] == type_ && c["status"] == status && reason.is_none_or(|r| c["reason"] == r)
        })
    })
}

#[test]
fn applies_of_different_tables_run_at_once_up_to_the_targets_limit() {
    let ns = namespace("parallel");
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    let op = Operator::start_with_env(&ns, &config(&lake, 3), &[], dir, SLOW);
    apply_yaml(&ns, &tables_yaml(9));
    for i in 0..9 {
        wait_condition(&ns, "deltatable", &format!("t{i}"), "Ready", "True", None);
    }
    // three at once, never more: 9 applies of 3 s each, all wanted at the same moment
    assert_eq!(
        metric(&op, "delta_operator_applies_in_flight_max"),
        3,
        "{}",
        op.http("/metrics")
    );
    assert_eq!(metric(&op, "delta_operator_applies_in_flight"), 0);
    // the Delta log agrees: some tables were created within a second of each other,
    // which one apply after another (3 s each) cannot do
    let mut created: Vec<i64> = (0..9)
        .map(|i| {
            let log = lake.join(format!(
                "main/sales/t{i}/_delta_log/00000000000000000000.json"
            ));
            let text = std::fs::read_to_string(&log).unwrap();
            text.lines()
                .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                .find_map(|v| v["commitInfo"]["timestamp"].as_i64())
                .expect("a commitInfo with a timestamp")
        })
        .collect();
    created.sort();
    let closest = created.windows(2).map(|w| w[1] - w[0]).min().unwrap();
    assert!(
        closest < 1000,
        "creations {created:?}: none within 1 s of another"
    );
}

#[test]
fn two_operators_on_one_target_never_apply_at_the_same_time() {
    let ns = namespace("onelease");
    let shared = tempfile::tempdir().unwrap();
    let lake = shared.path().join("lake");
    // no leader election: both reconcile everything, only the target's Lease keeps them apart
    let a = Operator::start_with_env(
        &ns,
        &config(&lake, 4),
        &["--identity", "op-a"],
        tempfile::tempdir().unwrap(),
        SLOW,
    );
    let b = Operator::start_with_env(
        &ns,
        &config(&lake, 4),
        &["--identity", "op-b"],
        tempfile::tempdir().unwrap(),
        SLOW,
    );
    let stop = Arc::new(AtomicBool::new(false));
    let (ports, flag) = ((a.port, b.port), stop.clone());
    // every 100 ms, how many applies each process runs
    let sampler = std::thread::spawn(move || {
        let mut samples = Vec::new();
        while !flag.load(Ordering::SeqCst) {
            let read = |port: u16| metric_at(port, "delta_operator_applies_in_flight");
            samples.push((read(ports.0), read(ports.1)));
            std::thread::sleep(Duration::from_millis(100));
        }
        samples
    });
    apply_yaml(&ns, &tables_yaml(8));
    for i in 0..8 {
        wait_condition(&ns, "deltatable", &format!("t{i}"), "Ready", "True", None);
    }
    stop.store(true, Ordering::SeqCst);
    let samples = sampler.join().unwrap();
    let both: Vec<_> = samples.iter().filter(|(x, y)| *x > 0 && *y > 0).collect();
    assert!(
        both.is_empty(),
        "both operators applied at once in {} of {} samples: {both:?}",
        both.len(),
        samples.len()
    );
    let busy = samples.iter().filter(|(x, y)| x + y > 0).count();
    assert!(busy > 0, "no sample saw an apply: {samples:?}");
    // and one process did run several at once
    let most = metric(&a, "delta_operator_applies_in_flight_max")
        .max(metric(&b, "delta_operator_applies_in_flight_max"));
    assert!(most > 1, "no operator ran two applies at once ({most})");
}

#[test]
fn two_resources_claiming_one_table_at_once_never_both_write_it() {
    let ns = namespace("claim");
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    let _op = Operator::start_with_env(&ns, &config(&lake, 4), &[], dir, SLOW);
    // two DeltaTables, one table name (spec.name), applied in one go
    let mut yaml = String::from(
        "apiVersion: delta-operator.io/v1alpha1\nkind: DeltaSchema\nmetadata: {name: sales}\nspec: {catalog: main}\n",
    );
    for (resource, column) in [("first", "a"), ("second", "b")] {
        yaml.push_str(&format!(
            "---\napiVersion: delta-operator.io/v1alpha1\nkind: DeltaTable\nmetadata: {{name: {resource}}}\nspec:\n  schemaRef: sales\n  name: shared\n  columns:\n    - {{name: {column}, type: bigint}}\n"
        ));
    }
    apply_yaml(&ns, &yaml);
    // one wins; the other is refused for the owner marker, and never writes
    let mut outcomes = Vec::new();
    wait_until("one Ready, one refused", Duration::from_secs(90), || {
        outcomes = ["first", "second"]
            .iter()
            .map(|r| get(&ns, "deltatable", r)["status"]["conditions"].clone())
            .collect();
        let ready = outcomes
            .iter()
            .filter(|c| has_condition(c, "Ready", "True", None))
            .count();
        let refused = outcomes
            .iter()
            .filter(|c| has_condition(c, "Stalled", "True", Some("OwnedByAnotherResource")))
            .count();
        if ready == 1 && refused == 1 {
            Ok(())
        } else {
            Err(format!("{outcomes:?}"))
        }
    });
    let log = lake.join("main/sales/shared/_delta_log");
    let commits = std::fs::read_dir(&log)
        .unwrap()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .count();
    assert_eq!(commits, 1, "one CREATE, nothing else: {outcomes:?}");
}
