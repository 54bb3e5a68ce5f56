//! The data-safety suite on the lake, on real Delta tables: every rewrite
//! kind beside a writer that keeps appending, every acknowledged row checked
//! afterwards; two applies at once, identical and conflicting; the binary
//! killed at every step boundary and mid-stream, then rerun; a broken Delta
//! log refused for its table only. Deterministic in what it asserts and
//! bounded in time (each case a few seconds).

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use delta_operator::apply::{ApplyError, Event, Options, StepStatus, apply};
use delta_operator::backend::lake::LakeBackend;

use delta_operator::engine::read_and_plan;
use delta_operator::model::DataType;
use delta_operator::plan::Outcome;
use delta_operator::plan::gate::Policy;
use deltalake::arrow::array::{
    ArrayRef, Int32Array, Int64Array, RecordBatch, StringArray, new_null_array,
};
use deltalake::arrow::datatypes::{Field, Schema};
use deltalake::protocol::SaveMode;

use support::output_text as text;
use support::*;
use url::Url;

const SEEDED: i64 = 60_000;

fn base_spec() -> String {
    "  columns:\n    - {name: id, type: bigint}\n    - {name: qty, type: int}\n    - {name: amount, type: bigint}\n    - {name: note, type: string}\n    - {name: region, type: string}\n    - {name: extra, type: string}".into()
}

/// The value each column holds for row `id`, as text, whatever the column is called now.
fn expected(column: &str, id: i64) -> String {
    match column {
        "qty" => (id % 1000).to_string(),
        "amount" => (id * 3).to_string(),
        "note" | "remark" => format!("note {id}"),
        "region" => format!("r{}", id % 4),
        "extra" => format!("x{id}"),
        other => panic!("no expected value for {other}"),
    }
}

/// One batch of rows `ids`, shaped as the table is now (columns by name, cast to its types).
fn batch_for(schema: &Schema, ids: &[i64]) -> RecordBatch {
    let mut arrays: Vec<ArrayRef> = Vec::new();
    for f in schema.fields() {
        let text: ArrayRef = match f.name().as_str() {
            "id" => Arc::new(Int64Array::from(ids.to_vec())),
            "qty" => Arc::new(Int32Array::from(
                ids.iter().map(|i| (i % 1000) as i32).collect::<Vec<_>>(),
            )),
            "amount" => Arc::new(Int64Array::from(
                ids.iter().map(|i| i * 3).collect::<Vec<_>>(),
            )),
            name @ ("note" | "remark" | "region" | "extra") => Arc::new(StringArray::from(
                ids.iter().map(|i| expected(name, *i)).collect::<Vec<_>>(),
            )),
            _ => new_null_array(f.data_type(), ids.len()),
        };
        let a = if text.data_type() == f.data_type() {
            text
        } else {
            deltalake::arrow::compute::cast(&text, f.data_type()).unwrap()
        };
        arrays.push(a);
    }
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| Field::new(f.name(), f.data_type().clone(), true))
        .collect();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).unwrap()
}

async fn write_rows(url: &Url, ids: &[i64]) -> Result<(), String> {
    use deltalake::kernel::engine::arrow_conversion::TryIntoArrow;
    let table = deltalake::open_table(url.clone())
        .await
        .map_err(|e| e.to_string())?;
    let schema: Schema = table
        .snapshot()
        .map_err(|e| e.to_string())?
        .schema()
        .as_ref()
        .try_into_arrow()
        .map_err(|e: deltalake::arrow::error::ArrowError| e.to_string())?;
    let partitions = table
        .snapshot()
        .map_err(|e| e.to_string())?
        .metadata()
        .partition_columns()
        .to_vec();
    table
        .write(vec![batch_for(&schema, ids)])
        .with_save_mode(SaveMode::Append)
        .with_partition_columns(partitions)
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// A writer outside the operator: appends one row every 100 ms until
/// stopped, each shaped as the table is at that moment. An append that
/// returned Ok is acknowledged; only those are owed.
struct Appender {
    stop: Arc<AtomicBool>,
    acked: Arc<Mutex<Vec<(i64, Instant)>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Appender {
    fn start(url: Url, first: i64) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let acked = Arc::new(Mutex::new(Vec::new()));
        let (s, a) = (stop.clone(), acked.clone());
        let task = tokio::spawn(async move {
            let mut id = first;
            while !s.load(Ordering::SeqCst) {
                if write_rows(&url, &[id]).await.is_ok() {
                    a.lock().unwrap().push((id, Instant::now()));
                }
                id += 1;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        });
        Appender { stop, acked, task }
    }

    async fn stop(self) -> Vec<(i64, Instant)> {
        self.stop.store(true, Ordering::SeqCst);
        self.task.await.unwrap();
        self.acked.lock().unwrap().clone()
    }
}

/// A lake with the table at `base_spec()` and SEEDED rows.
async fn seeded_lake() -> Lake {
    let lake = Lake::new();
    lake.apply(
        &manifests(&format!("{SCHEMA}{}", table("t", &base_spec()))),
        false,
    )
    .await
    .unwrap();
    let ids: Vec<i64> = (1..=SEEDED).collect();
    write_rows(&lake.url(&tref("t")), &ids).await.unwrap();
    lake
}

/// Checks the table against every row owed: the seeded ones and every
/// acknowledged append, each exactly once, each value as written (under the
/// column's current name).
async fn check_rows(lake: &Lake, columns: &[&str], owed: &[i64]) {
    let select = columns.join(", ");
    let rows = lake
        .query(
            &tref("t"),
            &format!("SELECT id, {select} FROM t ORDER BY id"),
        )
        .await;
    let mut seen: BTreeMap<i64, usize> = BTreeMap::new();
    let mut wrong = Vec::new();
    for r in &rows {
        let cells: Vec<&str> = r.split(',').collect();
        let id: i64 = cells[0].parse().unwrap();
        *seen.entry(id).or_default() += 1;
        for (c, v) in columns.iter().zip(&cells[1..]) {
            if *v != expected(c, id) && wrong.len() < 5 {
                wrong.push(format!(
                    "row {id}: {c} = '{v}', written as '{}'",
                    expected(c, id)
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "values changed: {wrong:?}");
    let missing: Vec<&i64> = owed.iter().filter(|i| !seen.contains_key(i)).collect();
    assert!(
        missing.is_empty(),
        "acknowledged rows lost: {} of {} (first {:?})",
        missing.len(),
        owed.len(),
        &missing[..missing.len().min(5)]
    );
    let doubled: Vec<(&i64, &usize)> = seen.iter().filter(|(_, n)| **n > 1).collect();
    assert!(
        doubled.is_empty(),
        "rows doubled: {} (first {:?})",
        doubled.len(),
        &doubled[..doubled.len().min(5)]
    );
    assert_eq!(
        rows.len(),
        owed.len(),
        "the table holds exactly the rows owed"
    );
}

/// No run folder, staging copy or lock is left behind.
/// Every path under `dir`, for a failure message.
fn walkdir(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut all = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            all.push(e.path());
            if e.path().is_dir() {
                todo.push(e.path());
            }
        }
    }
    all
}

async fn check_nothing_left(lake: &Lake) {
    let table = lake.backend.table_path(&tref("t"));
    let live = lake.read(&tref("t")).await.unwrap();
    assert!(live.leftovers.is_empty(), "leftovers: {:?}", live.leftovers);
    assert!(
        !lake.backend.staging_path(&tref("t")).exists(),
        "a staging copy is left at {}",
        lake.backend.staging_path(&tref("t")).display()
    );
    // nor an empty `.staging/<catalog>/<schema>` folder, whichever path removed the copy
    let staging = lake.backend.root().join(".staging");
    assert!(
        !staging.exists(),
        "{} is left behind: {:?}",
        staging.display(),
        walkdir(&staging)
    );
    for e in std::fs::read_dir(&table).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if name.starts_with("delta-operator-rewrite-") {
            let referenced = lake.query(&tref("t"), "SELECT count(*) FROM t").await; // the table reads
            assert!(!referenced.is_empty());
            let log = std::fs::read_dir(table.join("_delta_log"))
                .unwrap()
                .flatten()
                .map(|f| std::fs::read_to_string(f.path()).unwrap_or_default())
                .collect::<String>();
            assert!(
                log.contains(&name),
                "{name} is in the table's folder but no commit names it"
            );
        }
    }
    assert!(
        lake.backend
            .lock_holder(&tref("t"))
            .await
            .unwrap()
            .is_none(),
        "the table lock is released"
    );
}

/// Applies `spec` (approving it when destructive) while an appender writes,
/// and checks every acknowledged row. Returns the step details.
async fn rewrite_beside_an_appender(
    spec: &str,
    columns_after: &[&str],
    expect_staged: bool,
) -> Vec<String> {
    let lake = seeded_lake().await;
    let inputs = manifests(&format!("{SCHEMA}{}", table("t", spec)));
    let plan = lake.plan(&inputs).await;
    let staged = plan.tables[0]
        .steps()
        .iter()
        .any(|s| s.action.title().starts_with("STAGE"));
    assert_eq!(
        staged,
        expect_staged,
        "{:?}",
        plan.tables[0]
            .steps()
            .iter()
            .map(|s| s.action.title())
            .collect::<Vec<_>>()
    );
    let appender = Appender::start(lake.url(&tref("t")), 1_000_000);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let window: Arc<Mutex<(Option<Instant>, Option<Instant>)>> = Default::default();
    let w = window.clone();
    let on_event = move |e: Event<'_>| match e {
        Event::Started { step, .. }
            if step.action.title().starts_with("REPLACE")
                || step.action.title().starts_with("STAGE") =>
        {
            w.lock().unwrap().0.get_or_insert(Instant::now());
        }
        Event::Finished(r) if r.title.starts_with("REPLACE") => {
            w.lock().unwrap().1 = Some(Instant::now())
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
    let (_, report) = apply(&lake.backend, &inputs, None, Some(&plan.id), &opts)
        .await
        .expect("the apply runs");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let acked = appender.stop().await;
    for s in &report.steps {
        assert!(
            matches!(s.status, StepStatus::Applied | StepStatus::Skipped),
            "step {} {}: {:?}",
            s.number,
            s.title,
            s.status
        );
    }
    let (start, end) = *window.lock().unwrap();
    let during = acked
        .iter()
        .filter(|(_, at)| start.is_some_and(|s| *at > s) && end.is_some_and(|e| *at < e))
        .count();
    assert!(
        during > 0,
        "no append was acknowledged while the rewrite ran ({} in all): the test proves nothing",
        acked.len()
    );
    let mut owed: Vec<i64> = (1..=SEEDED).collect();
    owed.extend(acked.iter().map(|(id, _)| *id));
    check_rows(&lake, columns_after, &owed).await;
    check_nothing_left(&lake).await;
    // the table is as declared: planning again finds nothing to do
    let again = lake.plan(&inputs).await;
    assert!(
        !again.has_changes(),
        "re-plan: {}",
        delta_operator::plan::render::text::render(&again)
    );
    report
        .steps
        .iter()
        .filter_map(|s| s.detail.clone())
        .collect()
}

#[tokio::test]
async fn a_write_once_cast_beside_an_appender_keeps_every_acknowledged_row() {
    let details = rewrite_beside_an_appender(
        &base_spec().replace("{name: qty, type: int}", "{name: qty, type: bigint}"),
        &["qty", "amount", "note", "region", "extra"],
        false,
    )
    .await;
    eprintln!("{details:?}");
}

#[tokio::test]
async fn a_staged_cast_beside_an_appender_keeps_every_acknowledged_row() {
    let details = rewrite_beside_an_appender(
        &base_spec().replace("{name: amount, type: bigint}", "{name: amount, type: int}"),
        &["qty", "amount", "note", "region", "extra"],
        true,
    )
    .await;
    eprintln!("{details:?}");
}

#[tokio::test]
async fn a_rename_beside_an_appender_keeps_every_value_under_the_new_name() {
    let spec = base_spec().replace(
        "{name: note, type: string}",
        "{name: remark, type: string, renamedFrom: note}",
    );
    rewrite_beside_an_appender(
        &spec,
        &["qty", "amount", "remark", "region", "extra"],
        false,
    )
    .await;
}

#[tokio::test]
async fn a_dropped_column_beside_an_appender_keeps_every_row() {
    let spec = base_spec().replace("\n    - {name: extra, type: string}", "");
    rewrite_beside_an_appender(&spec, &["qty", "amount", "note", "region"], false).await;
}

#[tokio::test]
async fn a_new_partitioning_beside_an_appender_keeps_every_row() {
    let spec = format!("{}\n  partitionedBy: [region]", base_spec());
    rewrite_beside_an_appender(&spec, &["qty", "amount", "note", "region", "extra"], false).await;
}

/// Two applies of the same staged plan, started together by two writers.
#[tokio::test]
async fn two_identical_staged_applies_at_once_never_double_a_row() {
    let lake = seeded_lake().await;
    let root = lake.backend.root().to_str().unwrap().to_string();
    let inputs = manifests(&format!(
        "{SCHEMA}{}",
        table(
            "t",
            &base_spec().replace("{name: amount, type: bigint}", "{name: amount, type: int}")
        )
    ));
    let a = LakeBackend::open(&root).unwrap().with_writer("writer-a");
    let b = LakeBackend::open(&root).unwrap().with_writer("writer-b");
    let opts = Options {
        policy: Policy::Auto,
        lock_wait: Duration::from_secs(60),
        on_event: &|_| {},
        may_continue: &|| true,
        fence: None,
    };
    let (ra, rb) = tokio::join!(
        apply(&a, &inputs, None, None, &opts),
        apply(&b, &inputs, None, None, &opts)
    );
    let applied = [&ra, &rb]
        .iter()
        .filter(|r| r.as_ref().is_ok_and(|(_, rep)| rep.applied() > 0))
        .count();
    assert_eq!(
        applied,
        1,
        "exactly one apply rewrites: {:?} / {:?}",
        ra.as_ref().map(|r| r.1.applied()),
        rb.as_ref().map(|r| r.1.applied())
    );
    for r in [&ra, &rb] {
        match r {
            Ok((_, rep)) => assert!(!rep.failed(), "{:?}", rep.steps),
            Err(ApplyError::Stale { .. } | ApplyError::Locked(_)) => {}
            Err(e) => panic!("the other apply fails only as stale or locked, not: {e}"),
        }
    }
    check_rows(
        &lake,
        &["qty", "amount", "note"],
        &(1..=SEEDED).collect::<Vec<_>>(),
    )
    .await;
    check_nothing_left(&lake).await;
}

/// Two different plans for one table, started together: one runs, the other
/// is refused, and the table is exactly one of them.
#[tokio::test]
async fn two_conflicting_applies_at_once_leave_the_table_as_one_of_them() {
    let lake = seeded_lake().await;
    let root = lake.backend.root().to_str().unwrap().to_string();
    let narrow = manifests(&format!(
        "{SCHEMA}{}",
        table(
            "t",
            &base_spec().replace("{name: amount, type: bigint}", "{name: amount, type: int}")
        )
    ));
    let rename = manifests(&format!(
        "{SCHEMA}{}",
        table(
            "t",
            &base_spec().replace(
                "{name: note, type: string}",
                "{name: remark, type: string, renamedFrom: note}"
            )
        )
    ));
    let a = LakeBackend::open(&root).unwrap().with_writer("writer-a");
    let b = LakeBackend::open(&root).unwrap().with_writer("writer-b");
    let opts = Options {
        policy: Policy::Auto,
        lock_wait: Duration::from_secs(60),
        on_event: &|_| {},
        may_continue: &|| true,
        fence: None,
    };
    let (ra, rb) = tokio::join!(
        apply(&a, &narrow, None, None, &opts),
        apply(&b, &rename, None, None, &opts)
    );
    let ok = |r: &Result<_, ApplyError>| matches!(r, Ok((_, rep)) if delta_operator::apply::ApplyReport::applied(rep) > 0);
    assert!(
        ok(&ra) ^ ok(&rb),
        "exactly one applies: {:?} / {:?}",
        ra.as_ref().err().map(ToString::to_string),
        rb.as_ref().err().map(ToString::to_string)
    );
    let loser = if ok(&ra) { &rb } else { &ra };
    assert!(
        matches!(loser, Err(ApplyError::Stale { .. } | ApplyError::Locked(_))),
        "the other is refused as stale: {:?}",
        loser.as_ref().err().map(ToString::to_string)
    );
    let live = lake.read(&tref("t")).await.unwrap();
    if ok(&ra) {
        assert_eq!(live.column("amount").unwrap().data_type, DataType::Int);
        assert!(live.column("note").is_some());
        check_rows(
            &lake,
            &["qty", "amount", "note"],
            &(1..=SEEDED).collect::<Vec<_>>(),
        )
        .await;
    } else {
        assert!(live.column("remark").is_some() && live.column("note").is_none());
        check_rows(
            &lake,
            &["qty", "amount", "remark"],
            &(1..=SEEDED).collect::<Vec<_>>(),
        )
        .await;
    }
    check_nothing_left(&lake).await;
}

// ---------------------------------------------------------------------------
// The binary killed at every step boundary and mid-stream (failpoints are
// compiled into debug builds only), then run again.

const BIN: &str = env!("CARGO_BIN_EXE_delta-operator");

fn write_spec(dir: &Path, body: &str) -> std::path::PathBuf {
    let p = dir.join("spec.yaml");
    std::fs::write(&p, format!("{SCHEMA}{}", table("t", body))).unwrap();
    p
}

fn run(dir: &Path, args: &[&str], failpoint: Option<&str>) -> std::process::Output {
    let mut c = Command::new(BIN);
    c.current_dir(dir)
        .args(args)
        .env_remove("DELTA_OPERATOR_CONFIG");
    match failpoint {
        Some(f) => c.env("DELTA_OPERATOR_FAILPOINT", f),
        None => c.env_remove("DELTA_OPERATOR_FAILPOINT"),
    };
    c.output().expect("run the binary")
}

/// Kills `apply` of `spec` at `failpoint`, then runs it again: converged,
/// every row as it was, nothing left behind.
async fn killed_then_rerun(spec_body: &str, failpoint: &str, columns_after: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let backend = LakeBackend::open(dir.path().join("lake").to_str().unwrap()).unwrap();
    let lake = Lake { dir, backend };
    let spec = write_spec(lake.dir.path(), &base_spec());
    let s = spec.to_str().unwrap().to_string();
    assert!(
        run(lake.dir.path(), &["apply", "-f", &s], None)
            .status
            .success()
    );
    write_rows(&lake.url(&tref("t")), &(1..=20_000).collect::<Vec<_>>())
        .await
        .unwrap();
    let spec = write_spec(lake.dir.path(), spec_body);
    let plan_id = {
        let out = run(
            lake.dir.path(),
            &["plan", "-f", &s, "--format", "json"],
            None,
        );
        let v: serde_json::Value =
            serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", text(&out)));
        v["id"].as_str().unwrap().to_string()
    };
    let _ = spec;
    let out = run(
        lake.dir.path(),
        &["apply", "-f", &s, "--approve", &plan_id],
        Some(failpoint),
    );
    assert!(
        !out.status.success(),
        "{failpoint}: the process must die: {}",
        text(&out)
    );
    assert!(
        text(&out).contains(&format!("failpoint {failpoint}")),
        "{failpoint}: {}",
        text(&out)
    );
    // whatever the kill left, the table reads as one of its two states, with every row
    let owed: Vec<i64> = (1..=20_000).collect();
    let live = lake.read(&tref("t")).await.unwrap();
    let cols_now: Vec<&str> = ["qty", "amount", "note", "remark", "region", "extra"]
        .into_iter()
        .filter(|c| live.column(c).is_some())
        .collect();
    check_rows(&lake, &cols_now, &owed).await;
    // run again: whatever is left is shown, removed, and the rest applied
    let plan = run(
        lake.dir.path(),
        &["plan", "-f", &s, "--format", "json"],
        None,
    );
    let id = serde_json::from_slice::<serde_json::Value>(&plan.stdout).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let out = run(
        lake.dir.path(),
        &["apply", "-f", &s, "--approve", &id, "--lock-wait", "5s"],
        None,
    );
    assert!(
        out.status.success(),
        "{failpoint}: the rerun: {}",
        text(&out)
    );
    let out = run(lake.dir.path(), &["plan", "-f", &s], None);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{failpoint}: plans clean after the rerun: {}",
        text(&out)
    );
    check_rows(&lake, columns_after, &owed).await;
    check_nothing_left(&lake).await;
}

#[tokio::test]
async fn a_staged_rewrite_killed_at_every_boundary_and_mid_stream_converges_on_a_rerun() {
    let spec = base_spec().replace("{name: amount, type: bigint}", "{name: amount, type: int}");
    for fp in [
        "during-stage",
        "after-stage",
        "after-step-1",
        "during-replace",
        "before-commit",
        "after-replace",
        "after-step-2",
    ] {
        eprintln!("failpoint {fp}");
        killed_then_rerun(&spec, fp, &["qty", "amount", "note", "region", "extra"]).await;
    }
}

#[tokio::test]
async fn a_write_once_rewrite_killed_at_every_boundary_and_mid_stream_converges_on_a_rerun() {
    let spec = base_spec()
        .replace(
            "{name: note, type: string}",
            "{name: remark, type: string, renamedFrom: note}",
        )
        .replace("\n    - {name: extra, type: string}", "");
    for fp in [
        "during-replace",
        "before-commit",
        "after-replace",
        "after-step-1",
    ] {
        eprintln!("failpoint {fp}");
        killed_then_rerun(&spec, fp, &["qty", "amount", "remark", "region"]).await;
    }
}

// ---------------------------------------------------------------------------
// A broken table is refused alone; reads write nothing.

const TWO: &str = "  columns:\n    - {name: id, type: bigint}\n    - {name: v, type: string}";

#[tokio::test]
async fn a_corrupt_or_empty_commit_is_refused_for_its_table_only_naming_the_file() {
    let lake = Lake::new();
    let both = manifests(&format!("{SCHEMA}{}{}", table("a", TWO), table("b", TWO)));
    lake.apply(&both, false).await.unwrap();
    lake.apply(
        &manifests(&format!(
            "{SCHEMA}{}{}",
            table("a", &format!("{TWO}\n    - {{name: w, type: int}}")),
            table("b", TWO)
        )),
        false,
    )
    .await
    .unwrap();
    // table a: its newest commit is torn
    let log = lake.backend.table_path(&tref("a")).join("_delta_log");
    let newest = std::fs::read_dir(&log)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .max()
        .unwrap();
    std::fs::write(&newest, "{\"commitInfo\": {\"timestamp\": 1").unwrap();
    let next = manifests(&format!(
        "{SCHEMA}{}{}",
        table("a", TWO),
        table("b", &format!("{TWO}\n    - {{name: added, type: int}}"))
    ));
    let plan = lake.plan(&next).await;
    let a = plan.tables.iter().find(|t| t.table == tref("a")).unwrap();
    let Outcome::Rejected { failures } = &a.outcome else {
        panic!("a is refused: {:?}", a.outcome)
    };
    assert_eq!(failures[0].rule, "TableUnreadable");
    assert!(
        failures[0]
            .message
            .contains(&newest.file_name().unwrap().to_string_lossy().to_string()),
        "names the file: {}",
        failures[0].message
    );
    // b goes on
    let b = plan.tables.iter().find(|t| t.table == tref("b")).unwrap();
    assert!(b.is_accepted() && !b.steps().is_empty());
    let (_, report) = apply(&lake.backend, &next, None, None, &options())
        .await
        .expect("the readable table is applied");
    assert!(
        report.steps.iter().all(|s| s.table == tref("b")) && report.applied() > 0,
        "{:?}",
        report.steps
    );
    assert!(
        lake.read(&tref("b"))
            .await
            .unwrap()
            .column("added")
            .is_some()
    );
    // an empty newest commit: refused too, never "a warning"
    std::fs::write(&newest, "").unwrap();
    let plan = lake.plan(&next).await;
    let a = plan.tables.iter().find(|t| t.table == tref("a")).unwrap();
    let Outcome::Rejected { failures } = &a.outcome else {
        panic!("a is refused: {:?}", a.outcome)
    };
    assert!(
        failures[0].message.contains("is empty"),
        "{}",
        failures[0].message
    );
}

#[tokio::test]
async fn plan_read_and_validate_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec.yaml");
    std::fs::write(&spec, format!("{SCHEMA}{}", table("t", TWO))).unwrap();
    let s = spec.to_str().unwrap();
    for args in [
        vec!["plan", "-f", s],
        vec!["read", "-f", s, "-o", "/dev/null"],
        vec!["validate", "-f", s],
    ] {
        let out = run(dir.path(), &args, None);
        assert!(
            out.status.code().is_some_and(|c| c <= 2),
            "{args:?}: {}",
            text(&out)
        );
        assert!(
            !dir.path().join("lake").exists(),
            "{args:?} created the lake root"
        );
    }
    let backend = LakeBackend::open(dir.path().join("lake").to_str().unwrap()).unwrap();
    let plan = read_and_plan(
        &backend,
        &manifests(&format!("{SCHEMA}{}", table("t", TWO))),
    )
    .await
    .unwrap()
    .0;
    // the schema's folder and the table, both only planned
    assert_eq!(plan.summary.add, 2);
    assert!(plan.schemas[0].creates());
    assert!(!dir.path().join("lake").exists());
}

#[tokio::test]
async fn the_cli_keeps_to_the_targets_allow_list_and_import_to_the_root() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.yaml");
    std::fs::write(
        &config,
        "targets:\n  lake:\n    lake: {root: ./lake}\n    schemas: [\"dev\"]\n",
    )
    .unwrap();
    let spec = dir.path().join("spec.yaml");
    std::fs::write(&spec, format!("{SCHEMA}{}", table("t", TWO))).unwrap();
    let (c, s) = (config.to_str().unwrap(), spec.to_str().unwrap());
    for cmd in ["plan", "apply"] {
        let out = run(dir.path(), &["--config", c, cmd, "-f", s], None);
        assert_eq!(out.status.code(), Some(1), "{cmd}: {}", text(&out));
        assert!(
            text(&out).contains("may not touch main.sales"),
            "{cmd}: {}",
            text(&out)
        );
    }
    assert!(!dir.path().join("lake").exists(), "nothing was written");
    for schema in ["../etc.x", "main...", "main./x", "..\\x.y"] {
        let out = run(
            dir.path(),
            &["import", "--schema", schema, "-o", "out"],
            None,
        );
        assert_eq!(out.status.code(), Some(1), "{schema}: {}", text(&out));
    }
    let out = run(
        dir.path(),
        &[
            "--config",
            c,
            "import",
            "--schema",
            "main.sales",
            "-o",
            "out",
        ],
        None,
    );
    assert!(
        text(&out).contains("may not touch main.sales"),
        "{}",
        text(&out)
    );
}

/// A name of the longest length allowed is created, rewritten (staged) and dropped.
#[tokio::test]
async fn a_table_with_the_longest_name_allowed_can_be_rewritten_and_dropped() {
    let lake = Lake::new();
    let name = "t".repeat(delta_operator::model::names::MAX_TABLE_NAME_BYTES);
    let doc = |body: &str| {
        format!(
            "{STRICT_SCHEMA}---\napiVersion: delta-operator.io/v1alpha1\nkind: DeltaTable\nmetadata: {{name: long}}\nspec:\n  schemaRef: sales\n  name: {name}\n{body}\n"
        )
    };
    lake.apply(&manifests(&doc(TWO)), false).await.unwrap();
    let t = delta_operator::model::TableRef::new("main", "sales", &name);
    write_rows(&lake.url(&t), &[1, 2, 3]).await.ok();
    lake.apply(
        &manifests(&doc(
            "  columns:\n    - {name: id, type: int}\n    - {name: v, type: string}",
        )),
        true,
    )
    .await
    .unwrap();
    assert_eq!(
        lake.read(&t).await.unwrap().column("id").unwrap().data_type,
        DataType::Int
    );
    // dropped as an orphan of the strict schema
    lake.apply(&manifests(STRICT_SCHEMA), true).await.unwrap();
    assert!(lake.read(&t).await.is_none());
}

/// How a running apply loses its table's lock in [`a_lost_lock`].
#[derive(Debug, Clone, Copy)]
enum LostBy {
    /// `delta-operator unlock --force` while it runs (a plain `unlock` refuses a live holder).
    ForcedUnlock,
    /// Its process stopped (SIGSTOP) past the lock's expiry, then woken up.
    StalledPastExpiry,
}

/// Starts `apply` of the widened spec in its own process, paused at the
/// `slow-before-commit` failpoint once its rewritten files are written, and
/// returns the child once it is there.
fn start_paused_apply(dir: &Path, spec: &str, env: &[(&str, &str)]) -> std::process::Child {
    let mut c = Command::new(BIN);
    c.current_dir(dir)
        .args(["apply", "-f", spec])
        .env_remove("DELTA_OPERATOR_CONFIG")
        .env("DELTA_OPERATOR_FAILPOINT", "slow-before-commit")
        .env("DELTA_OPERATOR_FAILPOINT_SECONDS", "6")
        .envs(env.iter().copied());
    start_paused(c, "before-commit", "first apply", Duration::from_secs(120))
}

/// The lost-lock reproduction: a write-once widening beside an appender
/// loses its lock while it is about to commit, a second apply of the live
/// state runs meanwhile, then the first goes on. Before fencing, the second
/// removed the first's run folder as a leftover and the first committed adds
/// naming the deleted files: every reader failed. Now the first commits
/// nothing and says it lost its lock, the folder stays while its run may be
/// alive, and every acknowledged row is there and readable.
async fn a_lost_lock(by: LostBy) {
    let dir = tempfile::tempdir().unwrap();
    let backend = LakeBackend::open(dir.path().join("lake").to_str().unwrap()).unwrap();
    let lake = Lake { dir, backend };
    let d = lake.dir.path();
    std::fs::write(
        d.join("live.yaml"),
        format!("{SCHEMA}{}", table("t", &base_spec())),
    )
    .unwrap();
    let widened = base_spec().replace("{name: qty, type: int}", "{name: qty, type: bigint}");
    std::fs::write(
        d.join("widened.yaml"),
        format!("{SCHEMA}{}", table("t", &widened)),
    )
    .unwrap();
    let out = run(d, &["apply", "-f", "live.yaml"], None);
    assert!(out.status.success(), "{}", text(&out));
    write_rows(&lake.url(&tref("t")), &(1..=20_000).collect::<Vec<_>>())
        .await
        .unwrap();
    let appender = Appender::start(lake.url(&tref("t")), 1_000_000);
    let ttl: &[(&str, &str)] = match by {
        LostBy::ForcedUnlock => &[],
        LostBy::StalledPastExpiry => &[("DELTA_OPERATOR_LOCK_TTL_SECONDS", "2")],
    };
    let first = start_paused_apply(d, "widened.yaml", ttl);
    let pid = first.id().to_string();
    match by {
        LostBy::ForcedUnlock => {
            // a plain unlock refuses a holder that is running on this host, and says what forcing risks
            let out = run(d, &["unlock", "main.sales.t"], None);
            assert_eq!(out.status.code(), Some(5), "{}", text(&out));
            assert!(
                text(&out).contains("may still be applying") && text(&out).contains("--force"),
                "{}",
                text(&out)
            );
            let out = run(d, &["unlock", "main.sales.t", "--force"], None);
            assert!(out.status.success(), "{}", text(&out));
        }
        LostBy::StalledPastExpiry => {
            let stop = Command::new("kill").args(["-STOP", &pid]).status().unwrap();
            assert!(stop.success());
            // past the 2 s lifetime and its margin: the lock is anyone's
            tokio::time::sleep(Duration::from_secs(5)).await;
        }
    }
    // a second apply takes the table over (after the unlock, the live state; after the stall,
    // the live state and a table comment, so it has a step and takes the expired lock); it
    // must leave the first run's files alone
    let second_spec = match by {
        LostBy::ForcedUnlock => "live.yaml",
        LostBy::StalledPastExpiry => {
            let commented = format!("  comment: set by the second apply\n{}", base_spec());
            std::fs::write(
                d.join("commented.yaml"),
                format!("{SCHEMA}{}", table("t", &commented)),
            )
            .unwrap();
            "commented.yaml"
        }
    };
    let second = run(d, &["apply", "-f", second_spec, "--lock-wait", "20s"], None);
    assert!(
        second.status.success(),
        "the second apply: {}",
        text(&second)
    );
    let run_folders = || {
        std::fs::read_dir(lake.backend.table_path(&tref("t")))
            .unwrap()
            .flatten()
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with("delta-operator-rewrite-")
            })
            .count()
    };
    assert_eq!(
        run_folders(),
        1,
        "the first apply's run folder is not a leftover while its run may be alive: {}",
        text(&second)
    );
    if let LostBy::StalledPastExpiry = by {
        assert!(
            Command::new("kill")
                .args(["-CONT", &pid])
                .status()
                .unwrap()
                .success()
        );
    }
    let first = first.wait_with_output().unwrap();
    let said = text(&first);
    assert!(!first.status.success(), "the first apply must fail: {said}");
    assert!(said.contains("lost its lock"), "{by:?}: {said}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let acked = appender.stop().await;
    // nothing of the first apply committed: qty is still an int, every row readable by an outside reader
    let live = lake.read(&tref("t")).await.unwrap();
    assert_eq!(live.column("qty").unwrap().data_type, DataType::Int);
    let mut owed: Vec<i64> = (1..=20_000).collect();
    owed.extend(acked.iter().map(|(id, _)| *id));
    check_rows(&lake, &["qty", "amount", "note", "region", "extra"], &owed).await;
    let outside = Command::new(support::python())
        .arg("-c")
        .arg(format!(
            // os._exit: pyarrow's threads can abort the interpreter's own exit under load
            "import deltalake, os; print(deltalake.DeltaTable('{}').to_pyarrow_table().num_rows, flush=True); os._exit(0)",
            lake.backend.table_path(&tref("t")).display()
        ))
        .output()
        .unwrap();
    assert!(
        outside.status.success(),
        "an outside reader fails: {}",
        text(&outside)
    );
    assert_eq!(
        String::from_utf8_lossy(&outside.stdout).trim(),
        owed.len().to_string()
    );
    // the stale run removed its own files; the table plans clean again
    assert_eq!(run_folders(), 0, "the stale run's folder is left behind");
    check_nothing_left(&lake).await;
    let out = run(d, &["plan", "-f", second_spec], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_apply_whose_lock_was_force_unlocked_commits_nothing_and_loses_no_row() {
    a_lost_lock(LostBy::ForcedUnlock).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_apply_stalled_past_its_lock_expiry_commits_nothing_and_loses_no_row() {
    a_lost_lock(LostBy::StalledPastExpiry).await;
}

/// The window the lock's fence leaves: a write-once widening whose holder runs on another
/// host (its process cannot be seen from here) stalls *after* its fence, right before its
/// commit, past the lock's expiry; a second apply of the live state finds its run over and
/// removes its files as leftovers; then the first wakes up. The fence alone cannot stop it
/// (it passed it), and before the fencing commit it committed adds naming the removed files
/// and exited 0: every reader failed. Now the second apply's fencing commit lands first, so
/// the stale commit conflicts, its catch-up round reads the fencing commit as nothing to
/// convert, its next fence finds the lock lost, and nothing of it is committed.
///
/// The appender writes only during the first pass and the first round's pause: an append
/// that lands while the holder is stalled makes its commit conflict by itself (the window is
/// open only on a quiet table). Its rows are converted in a catch-up round, so the second
/// round is where the holder stalls, and every acknowledged row must still be there.
#[tokio::test(flavor = "multi_thread")]
async fn an_apply_stalled_after_its_fence_commits_nothing_once_a_second_removed_its_files() {
    let dir = tempfile::tempdir().unwrap();
    let backend = LakeBackend::open(dir.path().join("lake").to_str().unwrap()).unwrap();
    let lake = Lake { dir, backend };
    let d = lake.dir.path();
    std::fs::write(
        d.join("live.yaml"),
        format!("{SCHEMA}{}", table("t", &base_spec())),
    )
    .unwrap();
    let widened = base_spec().replace("{name: qty, type: int}", "{name: qty, type: bigint}");
    std::fs::write(
        d.join("widened.yaml"),
        format!("{SCHEMA}{}", table("t", &widened)),
    )
    .unwrap();
    let out = run(d, &["apply", "-f", "live.yaml"], None);
    assert!(out.status.success(), "{}", text(&out));
    write_rows(&lake.url(&tref("t")), &(1..=20_000).collect::<Vec<_>>())
        .await
        .unwrap();
    let appender = Appender::start(lake.url(&tref("t")), 1_000_000);
    let mut c = Command::new(BIN);
    c.current_dir(d)
        .args(["apply", "-f", "widened.yaml"])
        .env_remove("DELTA_OPERATOR_CONFIG")
        .env("DELTA_OPERATOR_FAILPOINT", "slow-after-fence")
        .env("DELTA_OPERATOR_FAILPOINT_SECONDS", "4")
        .env("DELTA_OPERATOR_LOCK_TTL_SECONDS", "2")
        // a holder on another machine: only its heartbeat's age says whether it is alive
        .env("DELTA_OPERATOR_TEST_HOST", "another-host");
    let (first, reached) = start_watching(c, "after-fence", "first apply");
    let first = reached_again(
        first,
        &reached,
        "after-fence",
        "first apply",
        Duration::from_secs(120),
    );
    // appends land after the version the first round read: that round's commit conflicts
    tokio::time::sleep(Duration::from_secs(1)).await;
    let acked = appender.stop().await;
    assert!(!acked.is_empty(), "no append was acknowledged");
    let first = reached_again(
        first,
        &reached,
        "after-fence",
        "first apply (its second round)",
        Duration::from_secs(120),
    );
    let pid = first.id().to_string();
    let signal = |sig: &str| {
        assert!(
            Command::new("kill")
                .args([sig, &pid])
                .status()
                .unwrap()
                .success(),
            "kill {sig} {pid}"
        );
    };
    // stalled between its fence and its commit, past the 2 s lifetime and its heartbeat's
    // two lifetimes: from here it looks like a run that died on another host
    signal("-STOP");
    tokio::time::sleep(Duration::from_secs(6)).await;
    let run_folders = || {
        std::fs::read_dir(lake.backend.table_path(&tref("t")))
            .unwrap()
            .flatten()
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with("delta-operator-rewrite-")
            })
            .count()
    };
    assert_eq!(run_folders(), 1, "the first apply's files are written");
    let second = run(d, &["apply", "-f", "live.yaml", "--lock-wait", "20s"], None);
    assert!(
        second.status.success(),
        "the second apply: {}",
        text(&second)
    );
    assert_eq!(
        run_folders(),
        0,
        "the second apply removes the stalled run's files as leftovers: {}",
        text(&second)
    );
    signal("-CONT");
    let first = first.wait_with_output().unwrap();
    let said = text(&first);
    assert!(
        !first.status.success(),
        "the stale apply must fail, not commit files that are gone: {said}"
    );
    assert!(said.contains("lost its lock"), "{said}");
    // nothing of the first apply committed: qty is still an int, every row readable
    let live = lake.read(&tref("t")).await.unwrap();
    assert_eq!(live.column("qty").unwrap().data_type, DataType::Int);
    let mut owed: Vec<i64> = (1..=20_000).collect();
    owed.extend(acked.iter().map(|(id, _)| *id));
    check_rows(&lake, &["qty", "amount", "note", "region", "extra"], &owed).await;
    // an outside reader reads every row too, and the fencing commit in the history
    let outside = Command::new(support::python())
        .arg("-c")
        .arg(format!(
            // os._exit: pyarrow's threads can abort the interpreter's own exit under load
            "import deltalake, os\n\
t = deltalake.DeltaTable('{}')\n\
print(t.to_pyarrow_table().num_rows, flush=True)\n\
print(sum(1 for h in t.history() if h.get('operation') == 'DELTA-OPERATOR FENCE'), flush=True)\n\
os._exit(0)",
            lake.backend.table_path(&tref("t")).display()
        ))
        .output()
        .unwrap();
    assert!(
        outside.status.success(),
        "an outside reader fails: {}",
        text(&outside)
    );
    let printed = String::from_utf8_lossy(&outside.stdout);
    let lines: Vec<&str> = printed.lines().collect();
    assert_eq!(
        lines,
        [owed.len().to_string().as_str(), "1"],
        "rows, and fencing commits in the history"
    );
    assert_eq!(run_folders(), 0, "the stale run's folder is left behind");
    check_nothing_left(&lake).await;
    let out = run(d, &["plan", "-f", "live.yaml"], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}
