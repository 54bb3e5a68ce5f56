//! Maintenance run by the operator (issue 34) against a real kube-apiserver
//! (`e2e/with-controlplane.sh`, as `make test` runs it): a lake table with 40
//! small files appended by an outside writer (Python `deltalake`) gets
//! `maintenance.compaction.whenSmallFiles: 20`. Under `policy: Manual` and
//! `driftPolicy: Fail` the due compaction waits for its approval without being
//! drift (no DriftDetected, not Drifted, not counted as drifted); approved, the
//! operator compacts it: fewer files, every row kept (read by the outside
//! reader), status.maintenance, a MaintenanceRan Event, and
//! `delta_operator_maintenance_runs_total{kind="compact",outcome="ok"}` on /metrics.
//! Also: a schedule shorter than the drift pass runs at its deadline (the
//! requeue), and maintenance held back past its interval is overdue on
//! /metrics until it runs.

mod support;

use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use support::e2e::*;

/// Runs a Python script (the venv's `deltalake`); its stdout.
fn py(script: &str) -> String {
    support::py(Path::new("."), script)
}

/// Rows, the sum of ids, distinct ids and data files, as Python `deltalake` reads the table.
fn outside_view(table: &Path) -> (u64, u64, u64, u64) {
    let out = py(&format!(
        "import deltalake, pyarrow.compute as pc\n\
d = deltalake.DeltaTable({:?})\n\
t = d.to_pyarrow_table()\n\
print(t.num_rows, pc.sum(t.column('id')).as_py() or 0, pc.count_distinct(t.column('id')).as_py(), len(d.file_uris()))",
        table.to_str().unwrap()
    ));
    let n: Vec<u64> = out
        .split_whitespace()
        .map(|x| x.parse().expect("a number"))
        .collect();
    (n[0], n[1], n[2], n[3])
}

/// The value of one sample of a /metrics answer (0 when absent).
fn sample(metrics: &str, series: &str) -> f64 {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{series} ")))
        .map_or(0.0, |v| v.trim().parse().expect("a number"))
}

const COLUMNS: &str = "  columns:\n    - {name: id, type: bigint}\n    - {name: v, type: string}";

#[test]
fn a_lake_table_with_small_files_is_compacted_by_the_operator_visibly() {
    let ns = namespace("maint");
    let op = Operator::start(&ns, ALL, &[]);
    apply_yaml(&ns, support::SCHEMA);
    apply_yaml(&ns, &support::table("events", COLUMNS));
    wait_condition(&ns, "deltatable", "events", "Ready", "True", None);
    let path = op.table_dir("events");
    // 40 small appends from outside the operator: 40 commits, 40 files of 10 rows
    append(&path, 0, 40);
    const ROWS: u64 = 400;
    const SUM: u64 = 400 * 399 / 2;
    let (rows, sum, distinct, files_before) = outside_view(&path);
    assert_eq!((rows, sum, distinct), (ROWS, SUM, ROWS));
    assert!(
        files_before >= 40,
        "{files_before} files: the test needs 40"
    );

    // Manual + driftPolicy Fail: the due compaction waits for approval, and is not drift
    apply_yaml(
        &ns,
        &support::table(
            "events",
            &format!(
                "{COLUMNS}\n  policy: Manual\n  driftPolicy: Fail\n  maintenance: {{compaction: {{whenSmallFiles: 20}}}}"
            ),
        ),
    );
    let waiting = wait_condition(
        &ns,
        "deltatable",
        "events",
        "Ready",
        "False",
        Some("ApprovalRequired"),
    );
    let text = waiting["status"]["plan"]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        text.contains("OPTIMIZE") && text.contains("[maintenance]"),
        "the plan shows the compaction: {text}"
    );
    assert!(
        text.contains("files are small"),
        "and why it is due: {text}"
    );
    assert_ne!(
        condition(&waiting, "Drifted").map(|(s, _)| s),
        Some("True".into()),
        "maintenance due is not drift: {}",
        waiting["status"]
    );
    let metrics = op.http("/metrics");
    assert_eq!(
        sample(&metrics, "delta_operator_tables_drifted"),
        0.0,
        "{metrics}"
    );
    assert_eq!(sample(&metrics, "delta_operator_tables_drift_failing"), 0.0);
    assert_eq!(
        sample(&metrics, "delta_operator_plans_awaiting_approval"),
        1.0
    );
    assert_eq!(
        outside_view(&path).3,
        files_before,
        "nothing runs before the approval"
    );
    assert!(events_about(&ns, "events", "DriftDetected").is_empty());

    // approved: the operator compacts it
    let approval = waiting["status"]["plan"]["approval"]
        .as_str()
        .expect("status.plan.approval")
        .to_string();
    kubectl_ok(&[
        "annotate",
        "-n",
        &ns,
        "deltatable/events",
        "--overwrite",
        &format!("delta-operator.io/approve={approval}"),
    ]);
    let mut done = Value::Null;
    wait_until(
        "status.maintenance.compaction to say Succeeded",
        Duration::from_secs(120),
        || {
            done = get(&ns, "deltatable", "events");
            match done["status"]["maintenance"]["compaction"]["outcome"].as_str() {
                Some("Succeeded") => Ok(()),
                other => Err(format!("{other:?} in {}", done["status"])),
            }
        },
    );
    let run = &done["status"]["maintenance"]["compaction"];
    assert!(run["time"].as_str().is_some_and(|t| !t.is_empty()), "{run}");
    assert!(
        run["planId"].as_str().is_some_and(|p| !p.is_empty()),
        "{run}"
    );
    let (rows, sum, distinct, files_after) = outside_view(&path);
    assert_eq!(
        (rows, sum, distinct),
        (ROWS, SUM, ROWS),
        "every row is kept"
    );
    assert!(
        files_after < files_before && files_after <= 2,
        "compacted: {files_before} files before, {files_after} after"
    );
    let ran = events_about(&ns, "events", "MaintenanceRan");
    assert!(
        ran.iter().any(|e| e["note"]
            .as_str()
            .is_some_and(|n| n.starts_with("compaction ran (plan "))),
        "a MaintenanceRan event: {ran:?}"
    );
    assert!(!events_about(&ns, "events", "ApplyFinished").is_empty());
    let in_sync = wait_condition(&ns, "deltatable", "events", "Ready", "True", None);
    assert_ne!(
        condition(&in_sync, "Drifted").map(|(s, _)| s),
        Some("True".into())
    );
    let metrics = op.http("/metrics");
    assert!(
        sample(
            &metrics,
            "delta_operator_maintenance_runs_total{kind=\"compact\",outcome=\"ok\"}"
        ) >= 1.0,
        "{metrics}"
    );
    assert_eq!(
        sample(
            &metrics,
            "delta_operator_maintenance_runs_total{kind=\"compact\",outcome=\"failed\"}"
        ),
        0.0
    );
    assert_eq!(sample(&metrics, "delta_operator_maintenance_overdue"), 0.0);
    assert_eq!(sample(&metrics, "delta_operator_tables_drifted"), 0.0);
    // compacted, nothing is due any more: the drift passes (every 2 s) run nothing again
    std::thread::sleep(Duration::from_secs(5));
    let metrics = op.http("/metrics");
    assert_eq!(
        sample(
            &metrics,
            "delta_operator_maintenance_runs_total{kind=\"compact\",outcome=\"ok\"}"
        ),
        1.0,
        "{metrics}"
    );
    assert_eq!(outside_view(&path).3, files_after);
}

/// Appends `n` one-file commits of 10 rows, ids from `first`.
fn append(table: &Path, first: u64, n: u64) {
    py(&format!(
        "import deltalake, pyarrow as pa\n\
for i in range({first}, {first} + {n}):\n    \
deltalake.write_deltalake({:?}, pa.table({{'id': pa.array(range(i*10, i*10+10), pa.int64()), 'v': pa.array(['a%d' % j for j in range(10)])}}), mode='append')",
        table.to_str().unwrap()
    ));
}

/// A schedule shorter than the drift pass runs on time: after a compaction the
/// table is requeued at its next `every:` deadline, so files appended since
/// are compacted again without a spec change and long before the drift
/// re-check (10 minutes here).
#[test]
fn a_compaction_schedule_runs_again_at_its_deadline_not_at_the_drift_pass() {
    let ns = namespace("maintsched");
    let op = Operator::start(&ns, ALL, &["--drift-interval", "600s"]);
    apply_yaml(&ns, support::SCHEMA);
    apply_yaml(&ns, &support::table("events", COLUMNS));
    wait_condition(&ns, "deltatable", "events", "Ready", "True", None);
    let path = op.table_dir("events");
    append(&path, 0, 5);
    // a threshold that is never crossed: only the schedule makes it due
    apply_yaml(
        &ns,
        &support::table(
            "events",
            &format!(
                "{COLUMNS}\n  maintenance: {{compaction: {{whenSmallFiles: 1000, every: 20s}}}}"
            ),
        ),
    );
    let runs = |op: &Operator| {
        sample(
            &op.http("/metrics"),
            "delta_operator_maintenance_runs_total{kind=\"compact\",outcome=\"ok\"}",
        )
    };
    wait_until(
        "the first scheduled compaction",
        Duration::from_secs(60),
        || match runs(&op) {
            n if n >= 1.0 => Ok(()),
            n => Err(format!(
                "{n} runs; status {}",
                get(&ns, "deltatable", "events")["status"]
            )),
        },
    );
    let first = get(&ns, "deltatable", "events")["status"]["maintenance"]["compaction"].clone();
    assert_eq!(first["outcome"], "Succeeded", "{first}");
    assert!(outside_view(&path).3 <= 1, "compacted into one file");
    // more small files, no spec change: the next run comes at the deadline (20 s after the
    // first, and at least 30 s after that reconcile), not at the drift pass 10 minutes away
    append(&path, 5, 5);
    assert!(outside_view(&path).3 >= 5);
    wait_until(
        "the second scheduled compaction",
        Duration::from_secs(120),
        || match runs(&op) {
            n if n >= 2.0 => Ok(()),
            n => Err(format!("{n} runs")),
        },
    );
    let (rows, sum, distinct, files) = outside_view(&path);
    assert_eq!((rows, sum, distinct), (100, 100 * 99 / 2, 100));
    assert!(files <= 1, "compacted again: {files} files");
    let second = get(&ns, "deltatable", "events")["status"]["maintenance"]["compaction"].clone();
    assert_ne!(second["time"], first["time"], "{second}");
    assert_ne!(
        condition(&get(&ns, "deltatable", "events"), "Drifted").map(|(s, _)| s),
        Some("True".into())
    );
}

/// Maintenance planned and not run (policy Observe) past its interval is
/// overdue on /metrics, and not drift; once it runs (policy Auto) it clears.
#[test]
fn maintenance_held_back_past_its_interval_is_overdue_until_it_runs() {
    let ns = namespace("maintoverdue");
    let op = Operator::start(&ns, ALL, &[]);
    apply_yaml(&ns, support::SCHEMA);
    apply_yaml(&ns, &support::table("events", COLUMNS));
    wait_condition(&ns, "deltatable", "events", "Ready", "True", None);
    append(&op.table_dir("events"), 0, 3);
    let with = |policy: &str| {
        support::table(
            "events",
            &format!("{COLUMNS}\n  policy: {policy}\n  maintenance: {{vacuum: {{every: 15s}}}}"),
        )
    };
    // never vacuumed: due at once; Observe shows it and never runs it
    apply_yaml(&ns, &with("Observe"));
    let observed = wait_condition(
        &ns,
        "deltatable",
        "events",
        "Ready",
        "True",
        Some("Observing"),
    );
    let message = condition(&observed, "Ready").unwrap_or_default();
    let text = observed["status"]["plan"]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("VACUUM"), "the plan shows the vacuum: {text}");
    assert_ne!(
        condition(&observed, "Drifted").map(|(s, _)| s),
        Some("True".into()),
        "{message:?}"
    );
    let metric = |name: &str| sample(&op.http("/metrics"), name);
    assert_eq!(metric("delta_operator_maintenance_overdue"), 0.0, "not yet");
    // planned and not run for longer than its 15 s: overdue (the drift pass runs every 2 s)
    wait_until(
        "the vacuum to be overdue",
        Duration::from_secs(60),
        || match metric("delta_operator_maintenance_overdue") {
            1.0 => Ok(()),
            n => Err(format!("{n}")),
        },
    );
    assert_eq!(metric("delta_operator_tables_drifted"), 0.0);
    assert_eq!(
        metric("delta_operator_maintenance_runs_total{kind=\"vacuum\",outcome=\"ok\"}"),
        0.0,
        "Observe never runs it"
    );
    // Auto: it runs, and the gauge clears
    apply_yaml(&ns, &with("Auto"));
    wait_until("the vacuum to run", Duration::from_secs(60), || {
        let runs = metric("delta_operator_maintenance_runs_total{kind=\"vacuum\",outcome=\"ok\"}");
        let overdue = metric("delta_operator_maintenance_overdue");
        if runs >= 1.0 && overdue == 0.0 {
            Ok(())
        } else {
            Err(format!("{runs} runs, overdue {overdue}"))
        }
    });
    let s = get(&ns, "deltatable", "events");
    assert_eq!(
        s["status"]["maintenance"]["vacuum"]["outcome"], "Succeeded",
        "{}",
        s["status"]
    );
    assert!(
        events_about(&ns, "events", "MaintenanceRan")
            .iter()
            .any(|e| e["note"]
                .as_str()
                .is_some_and(|n| n.starts_with("vacuum ran"))),
        "a MaintenanceRan event for the vacuum"
    );
}
