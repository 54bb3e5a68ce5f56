//! Maintenance on the lake (issue 34), on real Delta tables: compaction of
//! 500 small files while a writer outside the operator (Python `deltalake`)
//! keeps appending, every acknowledged row checked by that outside reader; a
//! vacuum that keeps the files of the last recorded restore point, so the
//! restore printed by a plan still works after it (and the same vacuum
//! without the keep breaks it: the test can fail); checkpoints by versions;
//! and `delta-operator maintain` / `plan` as a user runs them.

mod support;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use delta_operator::apply::{Event, Options, StepStatus, apply};
use delta_operator::backend::lake::LakeBackend;
use delta_operator::backend::{Backend, Extras};
use delta_operator::engine::Inputs;
use delta_operator::model::{DataType, ObservedTable};
use delta_operator::plan::gate::Policy;
use delta_operator::plan::{Action, RiskClass};
use deltalake::arrow::array::{ArrayRef, Int32Array, Int64Array};

use support::{Lake, SCHEMA, manifests, output_text as text, py, table, tref};

const BIN: &str = env!("CARGO_BIN_EXE_delta-operator");

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// Rows, the sum of ids, distinct ids and data files, as Python `deltalake` reads the table.
fn outside_view(table: &Path) -> (u64, u64, u64, u64) {
    let out = py(
        Path::new("."),
        &format!(
            "import deltalake, pyarrow.compute as pc\n\
d = deltalake.DeltaTable('{}')\n\
t = d.to_pyarrow_table()\n\
print(t.num_rows, pc.sum(t.column('id')).as_py() or 0, pc.count_distinct(t.column('id')).as_py(), len(d.file_uris()))",
            table.display()
        ),
    );
    let n: Vec<u64> = out
        .split_whitespace()
        .map(|x| x.parse().expect("a number"))
        .collect();
    (n[0], n[1], n[2], n[3])
}

fn spec(maintenance: &str) -> String {
    format!(
        "{SCHEMA}{}",
        table(
            "t",
            &format!(
                "  columns:\n    - {{name: id, type: bigint}}\n    - {{name: v, type: string}}\n  maintenance: {maintenance}"
            )
        )
    )
}

/// The steps of the (one) table's plan: `title [class]`.
fn steps_of(plan: &delta_operator::plan::Plan) -> Vec<String> {
    plan.tables
        .iter()
        .flat_map(|t| t.steps())
        .map(|s| format!("{} [{}]", s.action.title(), s.class))
        .collect()
}

// ---------------------------------------------------------------------------
// Compaction beside an outside writer

/// Python `deltalake` appending one row at a time until `stop` exists,
/// printing `<id> <unix time>` for each append that returned (acknowledged).
fn start_appender(table: &Path, stop: &Path, first: i64) -> Child {
    let lines = [
        "import deltalake, pyarrow as pa, os, sys, time".to_string(),
        format!("i = {first}"),
        format!("while not os.path.exists('{}'):", stop.display()),
        "    try:".to_string(),
        format!(
            "        deltalake.write_deltalake('{}', pa.table({{'id': pa.array([i], pa.int64()), 'v': pa.array(['a%d' % i])}}), mode='append')",
            table.display()
        ),
        "        print(i, time.time(), flush=True)".to_string(),
        "    except Exception as e:".to_string(),
        "        print('refused', i, e, file=sys.stderr, flush=True)".to_string(),
        "    i += 1".to_string(),
        "    time.sleep(0.05)".to_string(),
        "sys.stdout.flush()".to_string(),
        "os._exit(0)".to_string(),
    ];
    let script = lines.join("\n");
    Command::new(support::python())
        .arg("-c")
        .arg(script)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python appender")
}

/// Stops the appender; the acknowledged appends, `(id, unix seconds)`.
fn stop_appender(mut child: Child, stop: &Path) -> Vec<(i64, f64)> {
    std::fs::write(stop, b"").unwrap();
    let status = child.wait().unwrap();
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(status.success(), "the appender failed: {err}");
    out.lines()
        .map(|l| {
            let (id, at) = l.split_once(' ').expect("<id> <time>");
            (id.parse().unwrap(), at.parse().unwrap())
        })
        .collect()
}

fn unix_secs(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH).unwrap().as_secs_f64()
}

#[tokio::test(flavor = "multi_thread")]
async fn compaction_of_500_small_files_beside_an_outside_writer_keeps_every_acknowledged_row() {
    let lake = Lake::new();
    let inputs = manifests(&spec(
        "{compaction: {whenSmallFiles: 100, targetFileSize: 64Mi}}",
    ));
    lake.apply(&inputs, false).await.unwrap();
    let path = lake.backend.table_path(&tref("t"));
    // 500 small files in one commit: 500 batches of 1,024 rows, a file each
    const ROWS: u64 = 500 * 1024;
    py(
        Path::new("."),
        &format!(
            "import deltalake, pyarrow as pa\n\
n = 1024\n\
b = [pa.record_batch({{'id': pa.array(range(i*n, (i+1)*n), pa.int64()), 'v': pa.array(['s%d' % j for j in range(n)])}}) for i in range(500)]\n\
deltalake.write_deltalake('{}', pa.Table.from_batches(b), mode='append', target_file_size=1)",
            path.display()
        ),
    );
    let (rows, _, _, files_before) = outside_view(&path);
    assert_eq!(rows, ROWS);
    assert!(
        files_before >= 500,
        "{files_before} files: the test needs 500"
    );
    // the plan compacts, and says why
    let plan = lake.plan(&inputs).await;
    assert_eq!(
        steps_of(&plan),
        vec!["OPTIMIZE (bin-pack to 64Mi) [maintenance]"]
    );
    let step = &plan.tables[0].steps()[0];
    assert!(
        step.notes
            .iter()
            .any(|n| n.contains("500 of 500 files are small")),
        "{:?}",
        step.notes
    );
    // an outside writer appends throughout
    let scratch = tempfile::tempdir().unwrap();
    let stop = scratch.path().join("stop");
    let appender = start_appender(&path, &stop, 10_000_000);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let window: Arc<Mutex<(Option<SystemTime>, Option<SystemTime>)>> = Default::default();
    let w = window.clone();
    let on_event = move |e: Event<'_>| match e {
        Event::Started { step, .. } if step.action.title().starts_with("OPTIMIZE") => {
            w.lock().unwrap().0 = Some(SystemTime::now());
        }
        Event::Finished(r) if r.title.starts_with("OPTIMIZE") => {
            w.lock().unwrap().1 = Some(SystemTime::now());
        }
        _ => {}
    };
    let opts = Options {
        policy: Policy::Auto,
        lock_wait: Duration::from_secs(5),
        on_event: &on_event,
        may_continue: &|| true,
        fence: None,
    };
    let (_, report) = apply(&lake.backend, &inputs, None, None, &opts)
        .await
        .expect("the apply runs");
    tokio::time::sleep(Duration::from_millis(800)).await;
    let acked = stop_appender(appender, &stop);
    assert_eq!(report.steps.len(), 1, "{:?}", report.steps);
    assert_eq!(
        report.steps[0].status,
        StepStatus::Applied,
        "{:?}",
        report.steps[0]
    );
    let (start, end) = *window.lock().unwrap();
    let (start, end) = (unix_secs(start.unwrap()), unix_secs(end.unwrap()));
    let during = acked
        .iter()
        .filter(|(_, at)| *at > start && *at < end)
        .count();
    eprintln!(
        "{} appends acknowledged, {during} while the compaction ran ({:.1}s)",
        acked.len(),
        end - start
    );
    assert!(
        during > 0,
        "no append was acknowledged while the compaction ran ({} in all, {:.1}s of compaction): the test proves nothing",
        acked.len(),
        end - start
    );
    // every acknowledged row, once, as the outside reader sees it; fewer files
    let owed_rows = ROWS + acked.len() as u64;
    let owed_sum = (0..ROWS).sum::<u64>() + acked.iter().map(|(id, _)| *id as u64).sum::<u64>();
    let (rows, sum, distinct, files_after) = outside_view(&path);
    assert_eq!(
        (rows, sum, distinct),
        (owed_rows, owed_sum, owed_rows),
        "rows, id sum and distinct ids: {} appends acknowledged ({during} during the compaction)",
        acked.len()
    );
    assert!(
        files_after < files_before / 4,
        "{files_after} files after compacting {files_before}"
    );
    // the compaction is in the history, committed against the version it read
    let live = read_health(&lake).await;
    let h = live.health.expect("health");
    assert!(h.last_compaction_ms.is_some(), "{h:?}");
    // the small files left are the compacted one(s) and the appends that came after
    assert!(
        h.small_files <= acked.len() as u64 + 2,
        "{h:?} after {} appends",
        acked.len()
    );
}

/// The table `t` as read for a spec declaring maintenance (with its health).
async fn read_health(lake: &Lake) -> ObservedTable {
    let inputs = manifests(&spec("{checkpoint: {}}"));
    let extras = Extras::declared(inputs.tables.iter().map(|t| &**t));
    lake.backend
        .read(&[tref("t")], &extras)
        .await
        .unwrap()
        .pop()
        .flatten()
        .expect("the table")
}

// ---------------------------------------------------------------------------
// Vacuum keeps the recorded restore point

/// A work folder whose `./lake` is the CLI's default target, and the lake in it.
fn world() -> (tempfile::TempDir, Lake) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("lake/main/sales")).unwrap();
    let backend = LakeBackend::open(dir.path().join("lake").to_str().unwrap()).unwrap();
    let lake = Lake {
        dir: tempfile::tempdir().unwrap(),
        backend,
    };
    (dir, lake)
}

fn run(dir: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .env_remove("DELTA_OPERATOR_CONFIG")
        .output()
        .expect("run the binary")
}

fn qty_spec(qty: &str, maintenance: &str) -> String {
    format!(
        "{SCHEMA}{}",
        table(
            "t",
            &format!(
                "  columns:\n    - {{name: id, type: bigint}}\n    - {{name: qty, type: {qty}}}{maintenance}"
            )
        )
    )
}

/// A copy of a folder, files and subfolders.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(e.file_name());
        if e.path().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

fn parquet_files(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "parquet"))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_vacuum_keeps_the_files_of_the_recorded_restore_point_and_restore_works_after_it() {
    let (dir, lake) = world();
    let d = dir.path();
    lake.apply(&manifests(&qty_spec("int", "")), false)
        .await
        .unwrap();
    for k in 0..3i64 {
        let ids: Vec<i64> = (k * 100..(k + 1) * 100).collect();
        let qty: Vec<i32> = ids.iter().map(|i| *i as i32).collect();
        lake.append(
            &tref("t"),
            vec![
                ("id", Arc::new(Int64Array::from(ids)) as ArrayRef),
                ("qty", Arc::new(Int32Array::from(qty)) as ArrayRef),
            ],
        )
        .await;
    }
    // a rewrite (int → bigint on the lake) records a restore point and stamps it
    let report = lake
        .apply(&manifests(&qty_spec("bigint", "")), false)
        .await
        .unwrap();
    let restore_point = report
        .steps
        .iter()
        .find_map(|s| s.restore_point)
        .expect("the rewrite recorded a restore point");
    let h = read_health(&lake).await.health.unwrap();
    assert_eq!(
        h.restore_points
            .iter()
            .map(|r| r.version)
            .collect::<Vec<_>>(),
        vec![restore_point],
        "the rewrite's commit carries delta-operator.restorePoint: {h:?}"
    );
    let path = lake.backend.table_path(&tref("t"));
    let files_before_vacuum = parquet_files(&path).len();
    // the control: the same table, vacuumed the same way without the keep
    let control = d.join("lake/main/sales/t_control");
    copy_dir(&path, &control);
    let control_url = url::Url::from_directory_path(&control).unwrap();
    let (_, m) = deltalake::open_table(control_url)
        .await
        .unwrap()
        .vacuum()
        .with_retention_period(chrono::Duration::hours(0))
        .with_enforce_retention_duration(false)
        .await
        .unwrap();
    assert!(
        !m.files_deleted.is_empty(),
        "a plain vacuum deletes the restore point's files"
    );
    // the operator's vacuum: retention 0 (allowed), restore points of 7 days kept
    let vacuum = "\n  maintenance: {vacuum: {retainHours: 0, allowShortRetention: true, keepRestorePointsDays: 7}}";
    let inputs: Inputs = manifests(&qty_spec("bigint", vacuum)).at(now_ms());
    let plan = lake.plan(&inputs).await;
    let steps = plan.tables[0].steps();
    assert_eq!(steps.len(), 1, "{:?}", steps_of(&plan));
    assert_eq!(steps[0].class, RiskClass::Maintenance);
    let Action::Vacuum { keep_versions, .. } = &steps[0].action else {
        panic!("{:?}", steps[0].action)
    };
    assert_eq!(keep_versions, &vec![restore_point]);
    let report = lake.apply(&inputs, false).await.unwrap();
    assert_eq!(report.steps[0].status, StepStatus::Applied);
    let detail = report.steps[0].detail.clone().unwrap_or_default();
    assert!(
        detail.contains(&format!("kept the files of restore point {restore_point}")),
        "{detail}"
    );
    assert_eq!(
        parquet_files(&path).len(),
        files_before_vacuum,
        "the vacuum deleted files the restore point needs"
    );
    // the vacuum is recorded: the next plan has nothing due
    let again = lake.plan(&inputs).await;
    assert!(steps_of(&again).is_empty(), "{:?}", steps_of(&again));
    // restore works on the kept table, and fails on the control
    let v = restore_point.to_string();
    let o = run(d, &["restore", "main.sales.t", "--version", &v]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let live = lake.read(&tref("t")).await.unwrap();
    assert_eq!(live.column("qty").unwrap().data_type, DataType::Int);
    assert_eq!(lake.count(&tref("t")).await, 300);
    let o = run(d, &["restore", "main.sales.t_control", "--version", &v]);
    assert_ne!(
        o.status.code(),
        Some(0),
        "the control restored without its files: the test proves nothing\n{}",
        text(&o)
    );
}

// ---------------------------------------------------------------------------
// Checkpoints

#[tokio::test(flavor = "multi_thread")]
async fn a_checkpoint_is_written_when_enough_versions_passed_then_nothing_is_due() {
    let lake = Lake::new();
    lake.apply(&manifests(&spec("{checkpoint: {everyVersions: 4}}")), false)
        .await
        .unwrap();
    let inputs = manifests(&spec("{checkpoint: {everyVersions: 4}}"));
    let append = |k: i64| {
        let lake = &lake;
        async move {
            lake.append(
                &tref("t"),
                vec![("id", Arc::new(Int64Array::from(vec![k])) as ArrayRef)],
            )
            .await
        }
    };
    append(1).await;
    append(2).await;
    // versions 0..2: three since the start, below four
    assert!(steps_of(&lake.plan(&inputs).await).is_empty());
    append(3).await;
    let plan = lake.plan(&inputs).await;
    assert_eq!(steps_of(&plan), vec!["CHECKPOINT [maintenance]"]);
    let last = lake
        .backend
        .table_path(&tref("t"))
        .join("_delta_log/_last_checkpoint");
    assert!(!last.exists());
    lake.apply(&inputs, false).await.unwrap();
    assert!(last.exists(), "no _last_checkpoint after the step");
    let again = lake.plan(&inputs).await;
    assert!(!again.has_changes(), "{:?}", steps_of(&again));
    assert_eq!(
        read_health(&lake)
            .await
            .health
            .unwrap()
            .versions_since_checkpoint,
        Some(0)
    );
}

// ---------------------------------------------------------------------------
// The CLI

fn write_spec(d: &Path, name: &str, policy: &str) {
    let body = format!(
        "  policy: {policy}\n  columns:\n    - {{name: id, type: bigint}}\n    - {{name: v, type: string}}\n  maintenance:\n    compaction: {{whenSmallFiles: 3}}\n    checkpoint: {{everyVersions: 3}}"
    );
    std::fs::write(d.join(name), format!("{SCHEMA}{}", table("t", &body))).unwrap();
}

fn append_rows(d: &Path, n: i64) {
    py(
        d,
        &format!(
            "import deltalake, pyarrow as pa\n\
for i in range({n}):\n    deltalake.write_deltalake('lake/main/sales/t', pa.table({{'id': pa.array([i], pa.int64()), 'v': pa.array(['x'])}}), mode='append')"
        ),
    );
}

#[test]
fn maintain_runs_only_the_maintenance_due_and_plan_shows_it_with_its_class() {
    let (dir, _lake) = world();
    let d = dir.path();
    write_spec(d, "t.yaml", "Auto");
    let o = run(d, &["apply", "-f", "t.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    append_rows(d, 4);
    // a comment added too: plan shows it beside the maintenance, maintain leaves it
    let with_comment = std::fs::read_to_string(d.join("t.yaml"))
        .unwrap()
        .replace("  policy: Auto\n", "  policy: Auto\n  comment: orders\n");
    std::fs::write(d.join("c.yaml"), with_comment).unwrap();
    let o = run(d, &["plan", "-f", "c.yaml"]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}");
    assert!(out.contains("OPTIMIZE (bin-pack to 128Mi)"), "{out}");
    assert!(out.contains("[maintenance]"), "{out}");
    assert!(out.contains("CHECKPOINT"), "{out}");
    assert!(out.contains("2 maintenance"), "{out}");
    let o = run(d, &["plan", "-f", "c.yaml", "--format", "json"]);
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let classes: Vec<(String, String)> = json["tables"][0]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["action"].as_str().unwrap().to_string(),
                s["class"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        classes,
        vec![
            ("set_table_comment".to_string(), "meta".to_string()),
            ("compact".to_string(), "maintenance".to_string()),
            ("checkpoint".to_string(), "maintenance".to_string()),
        ]
    );
    let o = run(d, &["maintain", "-f", "c.yaml"]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(
        out.contains("1. OPTIMIZE (bin-pack to 128Mi) [maintenance] ok"),
        "{out}"
    );
    assert!(out.contains("2. CHECKPOINT [maintenance] ok"), "{out}");
    assert!(
        !out.contains("COMMENT"),
        "maintain ran more than maintenance:\n{out}"
    );
    let (rows, sum, _, files) = outside_view(&d.join("lake/main/sales/t"));
    assert_eq!((rows, sum, files), (4, 6, 1));
    // nothing more is due; the comment still waits for an apply
    let o = run(d, &["maintain", "-f", "c.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("No maintenance is due"), "{}", text(&o));
    let o = run(d, &["plan", "-f", "c.yaml"]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}");
    assert!(
        out.contains("COMMENT ON TABLE") && !out.contains("[maintenance]"),
        "{out}"
    );
}

#[test]
fn maintain_keeps_to_each_tables_policy() {
    let (dir, _lake) = world();
    let d = dir.path();
    write_spec(d, "t.yaml", "Auto");
    let o = run(d, &["apply", "-f", "t.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    append_rows(d, 4);
    // Observe: never maintained
    write_spec(d, "observe.yaml", "Observe");
    let o = run(d, &["maintain", "-f", "observe.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("No maintenance is due"), "{}", text(&o));
    // Manual: waits for the plan's approval, then runs
    write_spec(d, "manual.yaml", "Manual");
    let o = run(d, &["maintain", "-f", "manual.yaml"]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(4), "{out}");
    let id = out
        .lines()
        .find_map(|l| l.strip_prefix("Plan id: "))
        .expect("the plan is shown with its id")
        .trim()
        .to_string();
    let o = run(d, &["maintain", "-f", "manual.yaml", "--approve", &id]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(
        out.contains("OPTIMIZE (bin-pack to 128Mi) [maintenance] ok"),
        "{out}"
    );
}
