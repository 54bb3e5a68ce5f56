//! The Spark Connect backend on a real Spark Connect server with Delta 4.4
//! (`make test` starts it: e2e/spark-connect/with-spark-connect.sh). Tables are
//! folders under a temp root that the server and the operator both see; the
//! operator reads them with delta-rs, Spark changes them. Without the server
//! these tests fail loudly (support::spark::url).

mod support;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use delta_operator::apply::StepStatus;
use delta_operator::backend::Backend;
use delta_operator::plan::RiskClass;
use support::spark::Spark;
use support::{SCHEMA, STRICT_SCHEMA, manifests, table, tref};

/// The table as python deltalake (a reader outside Spark and the operator)
/// sees it: its column names, then its rows sorted, each `a|b|c`. Through
/// its QueryBuilder (delta-rs' own reader): deltalake 1.6.6's pyarrow path
/// reads a column-mapped table's renamed columns as NULLs (measured).
fn python_reads(table: &Path, order_by: &str) -> Vec<String> {
    let script = format!(
        "import deltalake, os, sys, pyarrow as pa\ndt = deltalake.DeltaTable({dir:?})\nt = pa.table(deltalake.QueryBuilder().register('t', dt).execute('SELECT * FROM t').read_all())\nprint(','.join(t.schema.names))\nfor r in sorted(t.to_pylist(), key=lambda r: r[{order_by:?}]):\n    print('|'.join('null' if v is None else str(v) for v in r.values()))\nsys.stdout.flush()\n# no interpreter teardown: deltalake's runtime can abort there after the work is done\nos._exit(0)\n",
        dir = table.display().to_string()
    );
    let o = Command::new(support::python())
        .arg("-c")
        .arg(&script)
        .output()
        .expect("python");
    assert!(
        o.status.success(),
        "python deltalake could not read {}: {}",
        table.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

fn titles(plan: &delta_operator::plan::Plan) -> Vec<String> {
    plan.tables
        .iter()
        .flat_map(|t| t.steps().iter().map(|s| s.action.title()))
        .collect()
}

const V1: &str = "  comment: orders v1
  properties: {team: sales}
  columns:
    - {name: id, type: bigint, nullable: false}
    - {name: name, type: string}
    - {name: amount, type: int}
    - {name: note, type: string}
  constraints:
    - check: {name: amount_not_negative, expression: amount >= 0}";

/// Every in-place change OSS Delta on Spark makes (column mapping renames
/// and drops, widening, a new column, comments, properties, CHECKs), each as
/// the plan's statements name it, then a re-plan with nothing to do; rows
/// kept, and python deltalake reads the result.
/// Tables are named by path here, so a schema is the lake's folder: an absent one
/// is created by a visible CREATE SCHEMA step (the folder), then Spark creates the
/// table in it, and a second plan is empty.
#[tokio::test]
async fn an_absent_schema_is_created_as_its_folder_then_spark_creates_the_table() {
    let s = Spark::empty();
    let inputs = manifests(&format!(
        "{SCHEMA}{}",
        table("orders", "  columns:\n    - {name: id, type: bigint}")
    ));
    let plan = s.plan(&inputs).await;
    let schema = &plan.schemas[0];
    assert!(schema.creates(), "{schema:?}");
    assert_eq!(
        schema.steps()[0].statements,
        ["create the folder main/sales/ (kept as it is when it exists)"]
    );
    assert_eq!(plan.summary.add, 2, "{:?}", plan.summary);
    s.apply(&inputs, false).await;
    assert!(s.dir.path().join("main/sales").is_dir());
    assert_eq!(s.count(&tref("orders")).await, 0);
    let again = s.plan(&inputs).await;
    assert!(!again.has_changes(), "{:?}", again.summary);
    assert!(again.schemas.is_empty(), "{:?}", again.schemas);
}

#[tokio::test]
async fn in_place_steps_apply_on_spark_connect_and_a_re_plan_is_empty() {
    let s = Spark::new();
    let t = tref("t");
    let v1 = manifests(&format!("{SCHEMA}{}", table("t", V1)));
    let plan = s.plan(&v1).await;
    let first = &plan.tables[0].steps()[0];
    assert!(
        first.statements[0]
            .to_string()
            .starts_with(&format!("CREATE TABLE {}", s.name(&t))),
        "the statement names the table by its path: {:?}",
        first.statements
    );
    s.apply(&v1, false).await;
    s.sql(&format!(
        "INSERT INTO {} VALUES (1, 'a', 10, 'x'), (2, 'b', 20, NULL), (3, NULL, 30, 'z')",
        s.name(&t)
    ))
    .await;
    assert!(!s.plan(&v1).await.has_changes(), "steady after create");

    let v2_body = |amount: &str| {
        format!(
            "  comment: orders v2
  properties: {{team: sales, tier: gold}}
  columns:
    - {{name: id, type: bigint, nullable: false, comment: the order}}
    - {{name: amount, type: {amount}}}
    - {{name: remark, type: string, renamedFrom: note}}
    - {{name: region, type: string, comment: where}}
  constraints:
    - check: {{name: id_positive, expression: id > 0}}"
        )
    };
    let v2 = manifests(&format!("{SCHEMA}{}", table("t", &v2_body("int"))));
    let plan = s.plan(&v2).await;
    let steps = titles(&plan);
    for want in [
        "enable columnMapping",
        "RENAME COLUMN note TO remark",
        "DROP COLUMN name",
        "ADD COLUMN region",
    ] {
        assert!(
            steps.iter().any(|s| s.contains(want)),
            "{want:?} in {steps:#?}"
        );
    }
    assert!(
        plan.tables[0]
            .steps()
            .iter()
            .all(|st| st.action.title().contains("DROP COLUMN")
                == (st.class == RiskClass::Destructive)),
        "only the drop is destructive: {:#?}",
        plan.tables[0].steps()
    );
    let report = s.apply(&v2, true).await;
    assert!(
        report
            .steps
            .iter()
            .all(|st| st.status == StepStatus::Applied),
        "{report:#?}"
    );
    let again = s.plan(&v2).await;
    assert!(!again.has_changes(), "re-plan: {:#?}", titles(&again));

    let live = s.read(&t).await.expect("live");
    assert_eq!(live.comment.as_deref(), Some("orders v2"));
    assert_eq!(
        live.properties.get("tier").map(String::as_str),
        Some("gold")
    );
    assert_eq!(
        live.checks
            .iter()
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>(),
        ["id_positive"]
    );
    assert_eq!(
        s.rows(&format!(
            "SELECT id, amount, remark, region FROM {} ORDER BY id",
            s.name(&t)
        ))
        .await,
        ["1,10,x,null", "2,20,null,null", "3,30,z,null"]
    );
    // Spark enforces the new CHECK: a row it rejects is refused
    let bad = s
        .backend
        .client()
        .execute(
            &format!("INSERT INTO {} (id, amount) VALUES (-1, 1)", s.name(&t)),
            &|_: &str| {},
        )
        .await;
    assert!(bad.is_err(), "the CHECK holds on Spark");
    let read = python_reads(&s.path(&t), "id");
    assert_eq!(read[0], "id,amount,remark,region", "{read:?}");
    assert_eq!(&read[1..], ["1|10|x|null", "2|20|null|null", "3|30|z|null"]);

    // widening in place after its [feature] step (python deltalake 1.6.6 cannot read
    // the typeWidening reader feature, so the read back is Spark's and delta-rs')
    let v3 = manifests(&format!("{SCHEMA}{}", table("t", &v2_body("bigint"))));
    let plan = s.plan(&v3).await;
    assert_eq!(
        titles(&plan),
        ["enable typeWidening", "ALTER COLUMN amount TYPE bigint"],
        "{plan:#?}"
    );
    s.apply(&v3, false).await;
    assert!(!s.plan(&v3).await.has_changes());
    let live = s.read(&t).await.unwrap();
    assert_eq!(
        live.column("amount").unwrap().data_type.to_string(),
        "bigint"
    );
    assert_eq!(
        s.rows(&format!(
            "SELECT id, amount FROM {} ORDER BY id",
            s.name(&t)
        ))
        .await,
        ["1,10", "2,20", "3,30"]
    );
}

const NUMS: &str = "  columns:
    - {name: id, type: bigint, comment: the key}
    - {name: num, type: string}";

const NUMS_AS_INT: &str = "  columns:
    - {name: id, type: bigint, comment: the key}
    - {name: num, type: int}";

/// A conversion that would lose a value is caught by the staged check: the
/// table is left as it was (same version, same rows), the staging copy is
/// kept and named; once the value is fixed the same change applies.
#[tokio::test]
async fn a_lossy_conversion_is_caught_by_the_staged_check_and_the_table_is_untouched() {
    let s = Spark::new();
    let t = tref("t");
    s.apply(&manifests(&format!("{SCHEMA}{}", table("t", NUMS))), false)
        .await;
    s.sql(&format!(
        "INSERT INTO {} VALUES (1, '1'), (2, '2'), (3, 'abc'), (4, NULL)",
        s.name(&t)
    ))
    .await;
    let before = s.backend.lake().version(&t).await.unwrap();
    let v2 = manifests(&format!("{SCHEMA}{}", table("t", NUMS_AS_INT)));
    let plan = s.plan(&v2).await;
    let kinds: Vec<_> = plan.tables[0]
        .steps()
        .iter()
        .map(|st| (st.action.title(), st.class))
        .collect();
    assert!(
        kinds[0].0.contains("STAGE") && kinds[0].1 == RiskClass::Rewrite,
        "a staged rewrite: {kinds:?}"
    );
    let report = s.apply_may_fail(&v2, true).await.expect("apply");
    match &report.steps[0].status {
        StepStatus::Failed { error } => {
            assert!(error.contains("1 values into NULL"), "{error}");
            assert!(
                error.contains("untouched") && error.contains("__delta_operator_staging_"),
                "names the kept copy: {error}"
            );
        }
        other => panic!("the stage must fail its check: {other:?}"),
    }
    assert!(
        report.steps[1..]
            .iter()
            .all(|st| st.status == StepStatus::NotRun)
    );
    assert_eq!(
        s.backend.lake().version(&t).await.unwrap(),
        before,
        "no commit"
    );
    assert_eq!(
        s.rows(&format!("SELECT id, num FROM {} ORDER BY id", s.name(&t)))
            .await,
        ["1,1", "2,2", "3,abc", "4,null"]
    );
    let live = s.read(&t).await.unwrap();
    assert_eq!(
        live.leftovers.len(),
        1,
        "the kept copy is a leftover: {live:?}"
    );

    // fixed, the same change converts every row (and the leftover is removed);
    // a property another tool set rides in the replace, and the copied
    // column keeps its comment
    s.sql(&format!("UPDATE {} SET num = '3' WHERE id = 3", s.name(&t)))
        .await;
    s.sql(&format!(
        "ALTER TABLE {} SET TBLPROPERTIES ('other.tool.owner' = 'ingest-7')",
        s.name(&t)
    ))
    .await;
    s.apply(&v2, true).await;
    let live = s.read(&t).await.unwrap();
    assert_eq!(
        live.properties.get("other.tool.owner").map(String::as_str),
        Some("ingest-7"),
        "{:?}",
        live.properties
    );
    assert_eq!(
        live.column("id").and_then(|c| c.comment.as_deref()),
        Some("the key")
    );
    assert_eq!(
        s.rows(&format!("SELECT id, num FROM {} ORDER BY id", s.name(&t)))
            .await,
        ["1,1", "2,2", "3,3", "4,null"]
    );
    let again = s.plan(&v2).await;
    assert!(!again.has_changes(), "re-plan: {:#?}", titles(&again));
    assert_eq!(
        python_reads(&s.path(&t), "id")[1..],
        ["1|1", "2|2", "3|3", "4|null"]
    );
}

/// A partitioning change is a write-once replace on Spark: every row kept,
/// the table partitioned, history kept (RESTORE could go back), re-plan empty.
#[tokio::test]
async fn a_partitioning_change_is_rewritten_by_spark_keeping_every_row_and_the_history() {
    let s = Spark::new();
    let t = tref("t");
    let cols = "  columns:
    - {name: id, type: bigint}
    - {name: day, type: string}";
    s.apply(&manifests(&format!("{SCHEMA}{}", table("t", cols))), false)
        .await;
    s.sql(&format!(
        "INSERT INTO {} SELECT id, concat('d', id % 3) FROM range(0, 1000)",
        s.name(&t)
    ))
    .await;
    let before = s.backend.lake().version(&t).await.unwrap().unwrap();
    let v2 = manifests(&format!(
        "{SCHEMA}{}",
        table("t", &format!("{cols}\n  partitionedBy: [day]"))
    ));
    s.apply(&v2, true).await;
    let live = s.read(&t).await.unwrap();
    assert_eq!(live.partitioned_by, ["day"]);
    assert!(live.version.unwrap() > before);
    assert_eq!(s.count(&t).await, 1000);
    assert_eq!(
        s.rows(&format!(
            "SELECT count(*), sum(id) FROM {} VERSION AS OF {before}",
            s.name(&t)
        ))
        .await,
        ["1000,499500"],
        "the version before the replace is still readable"
    );
    assert_eq!(
        s.rows(&format!("SELECT sum(id) FROM {}", s.name(&t))).await,
        ["499500"]
    );
    assert!(!s.plan(&v2).await.has_changes());
}

/// An outside writer appending one row on its own Spark session every `every`,
/// `rows` times or until stopped; says how many rows it appended. Bounded: a
/// replace that takes longer than `every` (a cold Spark in CI) would otherwise
/// meet a commit in every attempt, which is the next test's case.
fn outside_writer(
    name: String,
    every: Duration,
    rows: i64,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> tokio::task::JoinHandle<i64> {
    let url = support::spark::url();
    tokio::spawn(async move {
        let client = delta_operator::backend::spark::SparkClient::new(
            &url,
            None,
            Default::default(),
            Duration::from_secs(300),
        )
        .unwrap();
        let (mut appended, mut next) = (0i64, 1_000_000i64);
        while appended < rows && !stop.load(std::sync::atomic::Ordering::Relaxed) {
            let ok = client
                .execute(
                    &format!("INSERT INTO {name} VALUES ({next}, '{next}')"),
                    &|_: &str| {},
                )
                .await;
            if ok.is_ok() {
                appended += 1;
                next += 1;
            }
            tokio::time::sleep(every).await;
        }
        appended
    })
}

/// Another writer that never pauses: one-row appends through delta-rs, back to
/// back. Not through Spark: the server's FIFO scheduler can queue a Spark
/// writer's small jobs behind the rewrite's, which leaves the replace a window
/// without a commit (seen once in CI); delta-rs commits beside Spark's jobs.
fn delta_rs_writer(
    table: std::path::PathBuf,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> tokio::task::JoinHandle<i64> {
    use deltalake::arrow::array::{ArrayRef, Int64Array, StringArray};
    tokio::spawn(async move {
        let url = url::Url::from_directory_path(&table).unwrap();
        let mut live = deltalake::open_table(url).await.expect("open");
        let (mut appended, mut next) = (0i64, 2_000_000i64);
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            let id: ArrayRef = std::sync::Arc::new(Int64Array::from(vec![next]));
            let num: ArrayRef = std::sync::Arc::new(StringArray::from(vec![next.to_string()]));
            let batch = support::batch_for(&live, vec![("id", id), ("num", num)]);
            match live
                .clone()
                .write(vec![batch])
                .with_save_mode(deltalake::protocol::SaveMode::Append)
                .await
            {
                Ok(t) => {
                    live = t;
                    appended += 1;
                    next += 1;
                }
                Err(e) => panic!("the outside writer's append failed: {e}"),
            }
        }
        appended
    })
}

/// Rows appended by another writer while Spark rewrites the table are all
/// there afterwards: the replace rebuilds the table from itself in one
/// commit, Delta refuses it when a writer committed meanwhile, and it is tried
/// again until it lands between two appends or after the last.
#[tokio::test]
async fn an_outside_writer_during_a_rewrite_loses_no_row() {
    let s = Spark::new();
    let t = tref("t");
    s.apply(&manifests(&format!("{SCHEMA}{}", table("t", NUMS))), false)
        .await;
    s.sql(&format!(
        "INSERT INTO {} SELECT id, CAST(id AS STRING) FROM range(0, 20000)",
        s.name(&t)
    ))
    .await;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    // ~2 rows before the apply starts, ~3 while it runs; its retries (2, 4, 8, 16 s
    // apart) outlast the writer
    let writer = outside_writer(s.name(&t), Duration::from_secs(2), 5, stop.clone());
    tokio::time::sleep(Duration::from_secs(3)).await;
    let v2 = manifests(&format!("{SCHEMA}{}", table("t", NUMS_AS_INT)));
    let before = s.count(&t).await;
    let report = s.apply(&v2, true).await;
    let during = s.count(&t).await - before;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let appended = writer.await.unwrap();
    assert!(during > 0, "the writer appended while the rewrite ran");
    assert!(
        report
            .steps
            .iter()
            .all(|st| matches!(st.status, StepStatus::Applied | StepStatus::Skipped)),
        "{report:#?}"
    );
    assert_eq!(
        s.count(&t).await,
        20_000 + appended,
        "no row lost or doubled"
    );
    assert_eq!(
        s.rows(&format!(
            "SELECT count(*) FROM {} WHERE num IS NULL OR num <> id",
            s.name(&t)
        ))
        .await,
        ["0"],
        "every value converted, the appended ones too"
    );
    assert!(!s.plan(&v2).await.has_changes());
}

/// A writer that never pauses beats every attempt of the replace: the step
/// fails saying so, nothing is replaced, and every appended row is there.
#[tokio::test]
async fn a_writer_that_never_pauses_gets_the_replace_refused_with_no_row_lost() {
    let s = Spark::new();
    let t = tref("t");
    s.apply(&manifests(&format!("{SCHEMA}{}", table("t", NUMS))), false)
        .await;
    s.sql(&format!(
        "INSERT INTO {} SELECT id, CAST(id AS STRING) FROM range(0, 200000)",
        s.name(&t)
    ))
    .await;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = delta_rs_writer(s.path(&t), stop.clone());
    tokio::time::sleep(Duration::from_secs(2)).await;
    let v2 = manifests(&format!("{SCHEMA}{}", table("t", NUMS_AS_INT)));
    let report = s.apply_may_fail(&v2, true).await.expect("apply");
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let appended = writer.await.unwrap();
    let failed = report
        .steps
        .iter()
        .find_map(|st| match &st.status {
            StepStatus::Failed { error } => Some(error.clone()),
            _ => None,
        })
        .expect("the replace fails");
    assert!(
        failed.contains("DELTA_CONCURRENT_APPEND") && failed.contains("nothing was replaced"),
        "{failed}"
    );
    assert_eq!(s.count(&t).await, 200_000 + appended, "no row lost");
    let live = s.read(&t).await.unwrap();
    assert_eq!(
        live.column("num").unwrap().data_type.to_string(),
        "string",
        "not replaced"
    );
}

/// A rewrite cancelled while Spark runs it (what SIGTERM and Ctrl-C do) is
/// interrupted on the server by its tag: the apply reports it, and the
/// table is as it was.
#[tokio::test]
async fn a_cancelled_rewrite_is_interrupted_on_spark_and_the_table_is_as_it_was() {
    let s = std::sync::Arc::new(Spark::new());
    let t = tref("t");
    s.apply(&manifests(&format!("{SCHEMA}{}", table("t", NUMS))), false)
        .await;
    // enough rows that the staged copy takes a while on 2 cores
    s.sql(&format!(
        "INSERT INTO {} SELECT id, CAST(id AS STRING) FROM range(0, 5000000)",
        s.name(&t)
    ))
    .await;
    let before = s.backend.lake().version(&t).await.unwrap();
    let v2 = manifests(&format!("{SCHEMA}{}", table("t", NUMS_AS_INT)));
    let apply = {
        let (s, v2) = (s.clone(), v2.clone());
        tokio::spawn(async move { s.apply_may_fail(&v2, true).await })
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    while s.backend.client().writes_running().is_empty() {
        assert!(Instant::now() < deadline, "the rewrite never started");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let cancel = s.backend.client().cancel().await;
    assert!(cancel.busy && cancel.statements.len() == 1, "{cancel:?}");
    let report = tokio::time::timeout(Duration::from_secs(60), apply)
        .await
        .expect("the apply ends soon after the interrupt")
        .unwrap()
        .expect("apply");
    let failed = report
        .steps
        .iter()
        .find_map(|st| match &st.status {
            StepStatus::Failed { error } => Some(error.clone()),
            _ => None,
        })
        .expect("a step reports the interrupt");
    assert!(failed.contains("interrupted"), "{failed}");
    assert!(s.backend.client().writes_running().is_empty());
    assert_eq!(
        s.backend.lake().version(&t).await.unwrap(),
        before,
        "no commit"
    );
    assert_eq!(s.count(&t).await, 5_000_000);
}

/// The peak RSS and the bytes read (rchar, page cache included) of a child,
/// sampled from /proc every 20 ms until it exits.
fn watched(mut child: std::process::Child) -> (std::process::ExitStatus, u64, u64) {
    let pid = child.id();
    let field = |text: &str, key: &str| -> Option<u64> {
        text.lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
    };
    let (mut rchar, mut hwm_kb) = (0u64, 0u64);
    loop {
        if let Ok(io) = std::fs::read_to_string(format!("/proc/{pid}/io")) {
            rchar = field(&io, "rchar:").unwrap_or(rchar);
        }
        if let Ok(st) = std::fs::read_to_string(format!("/proc/{pid}/status")) {
            hwm_kb = field(&st, "VmHWM:").unwrap_or(hwm_kb);
        }
        if let Some(status) = child.try_wait().unwrap() {
            return (status, rchar, hwm_kb * 1024);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The binary applies a staged rewrite of a table larger than itself on a
/// Spark Connect target and stays flat while Spark rewrites it: its peak RSS
/// is that of an apply that creates the table, and it reads a small fraction
/// of the table's bytes (the log; no data file).
#[tokio::test]
async fn the_operator_reads_no_table_data_while_spark_rewrites_the_table() {
    let s = Spark::new();
    let t = tref("big");
    let dir = tempfile::tempdir().unwrap();
    let write = |num: &str| {
        let body = format!(
            "  columns:\n    - {{name: id, type: bigint}}\n    - {{name: num, type: {num}}}\n    - {{name: pad, type: string}}"
        );
        std::fs::write(
            dir.path().join("t.yaml"),
            format!("{SCHEMA}{}", table("big", &body)),
        )
        .unwrap()
    };
    write("string");
    let config = dir.path().join("config.yaml");
    std::fs::write(
        &config,
        format!(
            "targets:\n  spark:\n    sparkConnect:\n      url: \"{}\"\n      root: \"{}\"\n",
            support::spark::url(),
            s.dir.path().display()
        ),
    )
    .unwrap();
    let run = |cmd: &str| {
        Command::new(env!("CARGO_BIN_EXE_delta-operator"))
            .args([
                cmd,
                "-f",
                dir.path().to_str().unwrap(),
                "--config",
                config.to_str().unwrap(),
            ])
            .env_remove("DELTA_OPERATOR_CONFIG")
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("the binary")
    };
    // the baseline: an apply that moves no data (a CREATE TABLE on Spark)
    let (status, _, create_peak) = watched(run("apply"));
    assert!(status.success(), "create");
    // incompressible rows: three sha2 digests per row
    s.sql(&format!(
        "INSERT INTO {} SELECT id, CAST(id AS STRING), concat(sha2(CAST(id AS STRING), 256), sha2(CAST(id + 1 AS STRING), 256), sha2(CAST(id + 2 AS STRING), 256)) FROM range(0, 5000000)",
        s.name(&t)
    ))
    .await;
    let table_bytes = s.read(&t).await.unwrap().size_bytes.unwrap();

    write("int");
    let (status, rchar, peak) = watched(run("apply"));
    assert!(status.success(), "the rewrite applied");
    assert_eq!(s.count(&t).await, 5_000_000);
    assert!(!s.plan(&manifests(&format!("{SCHEMA}{}", table("big", "  columns:\n    - {name: id, type: bigint}\n    - {name: num, type: int}\n    - {name: pad, type: string}")))).await.has_changes());
    eprintln!(
        "table {table_bytes} bytes; the rewrite's apply read {rchar} bytes, peak RSS {peak} (the CREATE's {create_peak})"
    );
    assert!(
        table_bytes > 3 * peak,
        "the table ({table_bytes} bytes) is larger than the operator ({peak})"
    );
    assert!(
        rchar < table_bytes / 20,
        "the operator read {rchar} bytes of a {table_bytes}-byte table"
    );
    assert!(
        peak < create_peak + (48 << 20),
        "the rewrite's peak RSS {peak} is flat beside the CREATE's {create_peak}"
    );
}

/// `verify` against a Spark Connect target: every probe of what the plans
/// assume of OSS Delta holds on this server, and the scratch tables are gone.
#[test]
fn verify_probes_hold_on_the_spark_connect_server() {
    let root = tempfile::tempdir().unwrap();
    let config = root.path().join("config.yaml");
    std::fs::write(
        &config,
        format!(
            "targets:\n  spark:\n    sparkConnect:\n      url: \"{}\"\n      root: \"{}/lake\"\n",
            support::spark::url(),
            root.path().display()
        ),
    )
    .unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_delta-operator"))
        .args([
            "verify",
            "--config",
            config.to_str().unwrap(),
            "-t",
            "spark",
        ])
        .args(["--schema", "main.verify", "--json"])
        .env_remove("DELTA_OPERATOR_CONFIG")
        .output()
        .expect("the binary");
    let out = String::from_utf8_lossy(&o.stdout);
    let report: serde_json::Value = serde_json::from_str(&out)
        .unwrap_or_else(|e| panic!("{e}: {out}\n{}", String::from_utf8_lossy(&o.stderr)));
    assert_eq!(o.status.code(), Some(0), "{report:#}");
    assert_eq!(report["held"], 8, "{report:#}");
    for p in report["probes"].as_array().unwrap() {
        assert!(
            p["statements"].as_array().is_some_and(|s| !s.is_empty()),
            "each probe names what it sent: {p:#}"
        );
    }
    let left: Vec<_> = std::fs::read_dir(root.path().join("lake/main/verify"))
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "scratch tables left: {left:?}");
}

/// The remaining step kinds on a Spark Connect target: claim of a table Spark
/// made, DROP NOT NULL, an unset property, and
/// a drop of a table a strict schema no longer declares, which goes to the
/// lake's trash, from where `undrop` brings it back with its rows.
#[tokio::test]
async fn claim_unset_drop_not_null_and_a_drop_undone_on_spark_connect() {
    let s = Spark::new();
    let (t, legacy) = (tref("t"), tref("legacy"));
    s.sql(&format!(
        "CREATE TABLE {} (k BIGINT, v STRING) USING DELTA",
        s.name(&legacy)
    ))
    .await;
    s.sql(&format!(
        "INSERT INTO {} VALUES (1, 'a'), (2, 'b')",
        s.name(&legacy)
    ))
    .await;
    let legacy_spec = table(
        "legacy",
        "  columns:\n    - {name: k, type: bigint}\n    - {name: v, type: string}",
    );
    let t_spec = |body: &str| table("t", body);
    let v1 = manifests(&format!(
        "{STRICT_SCHEMA}{legacy_spec}{}",
        t_spec(
            "  properties: {team: sales}\n  columns:\n    - {name: id, type: bigint, nullable: false}\n    - {name: name, type: string}"
        )
    ));
    let plan = s.plan(&v1).await;
    assert!(
        titles(&plan).iter().any(|x| x.contains("CLAIM")),
        "{:?}",
        titles(&plan)
    );
    s.apply(&v1, false).await;
    s.sql(&format!("INSERT INTO {} VALUES (1, 'x')", s.name(&t)))
        .await;

    let v2 = manifests(&format!(
        "{STRICT_SCHEMA}{legacy_spec}{}",
        t_spec(
            "  properties: {team: null}\n  columns:\n    - {name: id, type: bigint}\n    - {name: name, type: string}"
        )
    ));
    s.apply(&v2, false).await;
    assert!(
        !s.plan(&v2).await.has_changes(),
        "{:?}",
        titles(&s.plan(&v2).await)
    );
    let live = s.read(&t).await.unwrap();
    assert!(live.column("id").unwrap().nullable);
    assert!(!live.properties.contains_key("team"));
    s.sql(&format!("INSERT INTO {} (id) VALUES (NULL)", s.name(&t)))
        .await;
    assert_eq!(
        s.rows(&format!(
            "SELECT id, name FROM {} ORDER BY id NULLS FIRST",
            s.name(&t)
        ))
        .await,
        ["null,null", "1,x"],
        "NULL accepted once NOT NULL is dropped"
    );

    // legacy left out of a strict schema: a destructive drop, into the lake's trash
    let v3 = manifests(&format!(
        "{STRICT_SCHEMA}{}",
        t_spec(
            "  properties: {team: null}\n  columns:\n    - {name: id, type: bigint}\n    - {name: name, type: string}"
        )
    ));
    let plan = s.plan(&v3).await;
    let drop = plan
        .tables
        .iter()
        .flat_map(|p| p.steps())
        .find(|st| st.action == delta_operator::plan::Action::DropTable)
        .expect("a drop of the orphan");
    assert_eq!(drop.class, RiskClass::Destructive);
    assert_eq!(
        drop.undo.as_deref(),
        Some("delta-operator undrop main.sales.legacy")
    );
    s.apply(&v3, true).await;
    assert!(s.read(&legacy).await.is_none(), "dropped");
    let config = s.dir.path().join("config.yaml");
    std::fs::write(
        &config,
        format!(
            "targets:\n  spark:\n    sparkConnect:\n      url: \"{}\"\n      root: \"{}\"\n",
            support::spark::url(),
            s.dir.path().display()
        ),
    )
    .unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_delta-operator"))
        .args([
            "undrop",
            "main.sales.legacy",
            "--config",
            config.to_str().unwrap(),
        ])
        .env_remove("DELTA_OPERATOR_CONFIG")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        s.rows(&format!("SELECT k, v FROM {} ORDER BY k", s.name(&legacy)))
            .await,
        ["1,a", "2,b"],
        "back with its rows, readable by Spark"
    );
}

/// Two CLI applies of one table on the Spark Connect target at once: the second waits its
/// `--lock-wait`, then is refused naming the holder (exit 5); once the holder is killed (-9),
/// the next apply proceeds at once (a holder on this host whose process is gone is not waited
/// for; elsewhere, its lock's expiry) and finishes the work.
#[test]
fn two_cli_applies_on_spark_connect_take_turns_and_a_killed_holder_frees_the_tables() {
    const BIN: &str = env!("CARGO_BIN_EXE_delta-operator");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let root = d.join("lake");
    std::fs::create_dir(&root).unwrap();
    let examples = d.join("examples");
    std::fs::create_dir(&examples).unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    for e in std::fs::read_dir(src).unwrap().flatten() {
        std::fs::copy(e.path(), examples.join(e.file_name())).unwrap();
    }
    let config = d.join("config.yaml");
    std::fs::write(
        &config,
        format!(
            "targets:\n  sc:\n    sparkConnect: {{url: '{}', root: '{}'}}\ndefaultTarget: sc\n",
            support::spark::url(),
            root.display()
        ),
    )
    .unwrap();
    let (f, c) = (examples.to_str().unwrap(), config.to_str().unwrap());
    let mut cmd = Command::new(BIN);
    cmd.args(["apply", "-f", f, "--config", c])
        .env_remove("DELTA_OPERATOR_CONFIG")
        .env("DELTA_OPERATOR_FAILPOINT", "slow-step-1")
        .env("DELTA_OPERATOR_FAILPOINT_SECONDS", "300");
    let mut first = support::start_paused(cmd, "step-1", "first apply", Duration::from_secs(180));
    let second = Command::new(BIN)
        .args(["apply", "-f", f, "--config", c, "--lock-wait", "1s"])
        .env_remove("DELTA_OPERATOR_CONFIG")
        .output()
        .expect("run the binary");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&second.stdout),
        String::from_utf8_lossy(&second.stderr)
    );
    assert_eq!(
        second.status.code(),
        Some(5),
        "the second is refused: {said}"
    );
    assert!(
        said.contains("cli@") && said.contains(&first.id().to_string()),
        "names the holder: {said}"
    );
    first.kill().unwrap();
    first.wait().unwrap();
    let started = Instant::now();
    let third = Command::new(BIN)
        .args(["apply", "-f", f, "--config", c, "--lock-wait", "0s"])
        .env_remove("DELTA_OPERATOR_CONFIG")
        .output()
        .expect("run the binary");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&third.stdout),
        String::from_utf8_lossy(&third.stderr)
    );
    assert_eq!(third.status.code(), Some(0), "{said}");
    assert!(started.elapsed() < Duration::from_secs(120), "{said}");
    let plan = Command::new(BIN)
        .args(["plan", "-f", f, "--config", c])
        .env_remove("DELTA_OPERATOR_CONFIG")
        .output()
        .expect("run the binary");
    assert_eq!(
        plan.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&plan.stdout)
    );
    // import on the Spark Connect target round-trips what it reads: the manifests plan clean
    let imported = d.join("imported");
    let o = Command::new(BIN)
        .args(["import", "--schema", "main.sales", "-o"])
        .arg(&imported)
        .args(["--config", c])
        .env_remove("DELTA_OPERATOR_CONFIG")
        .output()
        .expect("run the binary");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let plan = Command::new(BIN)
        .args(["plan", "-f"])
        .arg(&imported)
        .args(["--config", c])
        .env_remove("DELTA_OPERATOR_CONFIG")
        .output()
        .expect("run the binary");
    assert_eq!(
        plan.status.code(),
        Some(0),
        "imported manifests plan clean: {}{}",
        String::from_utf8_lossy(&plan.stdout),
        String::from_utf8_lossy(&plan.stderr)
    );
}

// The promises every backend keeps (tests/support/scenarios.rs), on OSS Delta over Spark Connect.
#[tokio::test]
async fn shared_an_added_column_keeps_every_row_and_a_writers_append() {
    support::scenarios::an_added_column_keeps_every_row_and_a_writers_append(&Spark::new()).await;
}

#[tokio::test]
async fn shared_a_dropped_column_waits_for_the_approval_of_that_plan() {
    support::scenarios::a_dropped_column_waits_for_the_approval_of_that_plan(&Spark::new()).await;
}

#[tokio::test]
async fn shared_a_table_a_job_evolves_is_governed_at_annotations_scope() {
    support::scenarios::a_table_a_job_evolves_is_governed_at_annotations_scope(&Spark::new()).await;
}

/// Delta stores an empty partition value as NULL: a new partitioning over a
/// string column holding '' would quietly turn those values into NULL. The plan
/// shows the count before the replace; the apply refuses with the column and
/// the count and the table is untouched; a `using:` that maps '' to a value
/// makes the same change keep every row. (Pinned first: Spark's Delta really
/// reads '' back as NULL from a partition column.)
#[tokio::test]
async fn a_new_partitioning_over_empty_strings_is_refused_with_their_count() {
    let s = Spark::new();
    let t = tref("t");
    // the engine's behaviour the check guards against
    let pin = tref("pin");
    s.sql(&format!(
        "CREATE TABLE {} (id bigint, day string) USING DELTA PARTITIONED BY (day)",
        s.name(&pin)
    ))
    .await;
    s.sql(&format!("INSERT INTO {} VALUES (1, '')", s.name(&pin)))
        .await;
    assert_eq!(
        s.rows(&format!("SELECT id, day FROM {}", s.name(&pin)))
            .await,
        ["1,null"],
        "Spark's Delta stores '' in a partition column as NULL"
    );
    let cols = "  columns:
    - {name: id, type: bigint}
    - {name: day, type: string}";
    s.apply(&manifests(&format!("{SCHEMA}{}", table("t", cols))), false)
        .await;
    s.sql(&format!(
        "INSERT INTO {} SELECT id, CASE WHEN id % 4 = 0 THEN '' ELSE concat('d', id % 3) END FROM range(0, 100)",
        s.name(&t)
    ))
    .await;
    let before = s.backend.lake().version(&t).await.unwrap();
    let v2 = manifests(&format!(
        "{SCHEMA}{}",
        table("t", &format!("{cols}\n  partitionedBy: [day]"))
    ));
    let plan = s.plan(&v2).await;
    let replace = plan.tables[0]
        .steps()
        .iter()
        .find(|st| st.action.title() == "REPLACE TABLE (from itself)")
        .unwrap_or_else(|| panic!("a write-once replace: {:#?}", titles(&plan)));
    let check = replace
        .checks
        .iter()
        .find(|c| c.when == delta_operator::plan::CheckWhen::Before)
        .unwrap_or_else(|| panic!("the plan names the count: {replace:#?}"));
    assert!(
        check.query.contains("count_if(length(`day`) = 0)")
            && check.refuses.contains("would hold ''"),
        "{check:?}"
    );
    let report = s.apply_may_fail(&v2, true).await.expect("apply");
    let failed = report
        .steps
        .iter()
        .find_map(|st| match &st.status {
            StepStatus::Failed { error } => Some(error.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("the replace must be refused: {report:#?}"));
    assert!(
        failed.contains("25 rows hold '' in partition column day")
            && failed.contains("Delta stores an empty partition value as NULL")
            && failed.contains("using:"),
        "{failed}"
    );
    assert_eq!(
        s.backend.lake().version(&t).await.unwrap(),
        before,
        "nothing committed"
    );
    assert_eq!(
        s.rows(&format!(
            "SELECT count(*), count_if(day = '') FROM {}",
            s.name(&t)
        ))
        .await,
        ["100,25"]
    );
    assert!(s.read(&t).await.unwrap().partitioned_by.is_empty());
    // a `using:` mapping '' to a value: every row kept, none NULL
    let mapped = manifests(&format!(
        "{SCHEMA}{}",
        table(
            "t",
            "  columns:
    - {name: id, type: bigint}
    - {name: day, type: string, using: \"CASE WHEN day = '' THEN '(empty)' ELSE day END\"}
  partitionedBy: [day]"
        )
    ));
    s.apply(&mapped, true).await;
    assert_eq!(s.read(&t).await.unwrap().partitioned_by, ["day"]);
    assert_eq!(
        s.rows(&format!(
            "SELECT count(*), count_if(day = '(empty)'), count_if(day IS NULL) FROM {}",
            s.name(&t)
        ))
        .await,
        ["100,25,0"]
    );
}

const BIN: &str = env!("CARGO_BIN_EXE_delta-operator");

/// The CLI on this Spark target (its config in the root's parent), with `env`.
fn cli(s: &Spark, args: &[&str], env: &[(&str, &str)]) -> Command {
    let config = s.dir.path().join("config.yaml");
    if !config.exists() {
        std::fs::write(
            &config,
            format!(
                "targets:\n  sc:\n    sparkConnect: {{url: '{}', root: '{}'}}\ndefaultTarget: sc\n",
                support::spark::url(),
                s.dir.path().display()
            ),
        )
        .unwrap();
    }
    let mut c = Command::new(BIN);
    c.current_dir(s.dir.path())
        .args(args)
        .arg("--config")
        .arg(&config)
        .env_remove("DELTA_OPERATOR_CONFIG")
        .envs(env.iter().copied());
    c
}

fn said(o: &std::process::Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The staging copies beside `t` (their folders).
fn staging_folders(s: &Spark) -> Vec<String> {
    std::fs::read_dir(s.dir.path().join("main/sales"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| n.starts_with("t__delta_operator_staging_"))
        .collect()
}

#[derive(Debug, Clone, Copy)]
enum LostBy {
    ForcedUnlock,
    StalledPastExpiry,
}

/// The lost-lock reproduction on Spark Connect (the lake's is in data_safety.rs): a
/// staged conversion has made its staging copy and is about to send its replace
/// when its lock is lost (a forced unlock, or a stall past the lock's expiry while
/// another apply takes the table); another apply runs meanwhile. The staging copy
/// is left alone while its run may be alive; the first apply sends nothing more
/// and fails saying it lost its lock; the table keeps every row, readable from
/// outside; once the first is gone its copy is a leftover the next apply removes.
async fn a_spark_apply_that_lost_its_lock(by: LostBy) {
    let s = Spark::new();
    let t = tref("t");
    std::fs::write(
        s.dir.path().join("live.yaml"),
        format!("{SCHEMA}{}", table("t", NUMS)),
    )
    .unwrap();
    std::fs::write(
        s.dir.path().join("as-int.yaml"),
        format!("{SCHEMA}{}", table("t", NUMS_AS_INT)),
    )
    .unwrap();
    let o = cli(&s, &["apply", "-f", "live.yaml"], &[])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", said(&o));
    s.sql(&format!(
        "INSERT INTO {} SELECT id, CAST(id AS STRING) FROM range(1, 201)",
        s.name(&t)
    ))
    .await;
    let before = s.backend.lake().version(&t).await.unwrap();
    // paused before its replace (step 2), its staging copy made (step 1)
    let ttl = match by {
        LostBy::ForcedUnlock => "60",
        LostBy::StalledPastExpiry => "2",
    };
    let paused = cli(
        &s,
        &["apply", "-f", "as-int.yaml"],
        &[
            ("DELTA_OPERATOR_FAILPOINT", "slow-step-2"),
            ("DELTA_OPERATOR_FAILPOINT_SECONDS", "8"),
            ("DELTA_OPERATOR_LOCK_TTL_SECONDS", ttl),
        ],
    );
    let first = support::start_paused(paused, "step-2", "first apply", Duration::from_secs(240));
    let pid = first.id().to_string();
    assert_eq!(staging_folders(&s).len(), 1, "step 1 made the copy");
    let second_spec = match by {
        LostBy::ForcedUnlock => {
            let o = cli(&s, &["unlock", "main.sales.t"], &[]).output().unwrap();
            assert_eq!(o.status.code(), Some(5), "a live holder here: {}", said(&o));
            let o = cli(&s, &["unlock", "main.sales.t", "--force"], &[])
                .output()
                .unwrap();
            assert!(o.status.success(), "{}", said(&o));
            "live.yaml"
        }
        LostBy::StalledPastExpiry => {
            assert!(
                Command::new("kill")
                    .args(["-STOP", &pid])
                    .status()
                    .unwrap()
                    .success()
            );
            // past the 2 s lifetime and its margin: the lock is anyone's
            tokio::time::sleep(Duration::from_secs(5)).await;
            std::fs::write(
                s.dir.path().join("commented.yaml"),
                format!(
                    "{SCHEMA}{}",
                    table("t", &format!("  comment: set by the second apply\n{NUMS}"))
                ),
            )
            .unwrap();
            "commented.yaml"
        }
    };
    let second = cli(&s, &["apply", "-f", second_spec, "--lock-wait", "30s"], &[])
        .output()
        .unwrap();
    assert!(
        second.status.success(),
        "the second apply: {}",
        said(&second)
    );
    assert_eq!(
        staging_folders(&s).len(),
        1,
        "the first apply's staging copy is not a leftover while its run may be alive: {}",
        said(&second)
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
    let first_said = said(&first);
    assert!(
        !first.status.success(),
        "the first apply must fail: {first_said}"
    );
    assert!(
        first_said.contains("this apply lost its lock on main.sales.t"),
        "{by:?}: {first_said}"
    );
    // nothing of the first committed after the second: num is still a string, every row there
    let live = s.read(&t).await.unwrap();
    assert_eq!(
        live.column("num").unwrap().data_type,
        delta_operator::model::DataType::String
    );
    let v = s.backend.lake().version(&t).await.unwrap().unwrap();
    let expected = match by {
        LostBy::ForcedUnlock => before.unwrap(),
        LostBy::StalledPastExpiry => before.unwrap() + 1,
    };
    assert_eq!(v, expected, "only the second apply committed");
    assert_eq!(
        s.rows(&format!(
            "SELECT count(*), sum(CAST(num AS INT)) FROM {}",
            s.name(&t)
        ))
        .await,
        ["200,20100"]
    );
    let outside = python_reads(&s.path(&t), "id");
    assert_eq!(outside.len(), 201, "{outside:?}");
    // the first is gone: its copy is a leftover now, and the next apply removes it
    let o = cli(&s, &["apply", "-f", second_spec], &[])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", said(&o));
    assert!(staging_folders(&s).is_empty(), "{}", said(&o));
    // and the conversion itself goes through
    let o = cli(&s, &["apply", "-f", "as-int.yaml"], &[])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", said(&o));
    assert_eq!(
        s.rows(&format!("SELECT count(*), sum(num) FROM {}", s.name(&t)))
            .await,
        ["200,20100"]
    );
}

#[tokio::test]
async fn a_spark_apply_whose_lock_was_force_unlocked_commits_nothing_more() {
    a_spark_apply_that_lost_its_lock(LostBy::ForcedUnlock).await;
}

#[tokio::test]
async fn a_spark_apply_stalled_past_its_lock_expiry_commits_nothing_more() {
    a_spark_apply_that_lost_its_lock(LostBy::StalledPastExpiry).await;
}

/// The checks before a step can take as long as a scan: a lock broken while they
/// run stops the step before its statement is sent (each statement is fenced,
/// not only the step). Paused after the count of '' partition values, before the
/// replace; a forced unlock meanwhile; the replace is never sent.
#[tokio::test]
async fn a_lock_broken_after_a_steps_checks_sends_none_of_its_statements() {
    let s = Spark::new();
    let t = tref("t");
    let cols = "  columns:
    - {name: id, type: bigint}
    - {name: day, type: string}";
    std::fs::write(
        s.dir.path().join("live.yaml"),
        format!("{SCHEMA}{}", table("t", cols)),
    )
    .unwrap();
    std::fs::write(
        s.dir.path().join("partitioned.yaml"),
        format!(
            "{SCHEMA}{}",
            table("t", &format!("{cols}\n  partitionedBy: [day]"))
        ),
    )
    .unwrap();
    let o = cli(&s, &["apply", "-f", "live.yaml"], &[])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", said(&o));
    s.sql(&format!(
        "INSERT INTO {} SELECT id, concat('d', id % 3) FROM range(0, 50)",
        s.name(&t)
    ))
    .await;
    let before = s.backend.lake().version(&t).await.unwrap();
    let paused = cli(
        &s,
        &["apply", "-f", "partitioned.yaml"],
        &[
            ("DELTA_OPERATOR_FAILPOINT", "slow-statements"),
            ("DELTA_OPERATOR_FAILPOINT_SECONDS", "6"),
            // no background renewal comes before the statement: its fence finds the loss
            ("DELTA_OPERATOR_LOCK_TTL_SECONDS", "600"),
        ],
    );
    let first = support::start_paused(
        paused,
        "statements",
        "first apply",
        Duration::from_secs(240),
    );
    let o = cli(&s, &["unlock", "main.sales.t", "--force"], &[])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", said(&o));
    let first = first.wait_with_output().unwrap();
    let first_said = said(&first);
    assert!(!first.status.success(), "{first_said}");
    assert!(
        first_said.contains("this apply lost its lock on main.sales.t")
            && first_said.contains("was not sent"),
        "{first_said}"
    );
    assert_eq!(s.backend.lake().version(&t).await.unwrap(), before);
    assert!(s.read(&t).await.unwrap().partitioned_by.is_empty());
    assert_eq!(s.count(&t).await, 50);
}

/// The table's `numFiles` as Spark's `DESCRIBE DETAIL` shows it.
async fn num_files(s: &Spark, t: &delta_operator::model::TableRef) -> u64 {
    let r = s.sql(&format!("DESCRIBE DETAIL {}", s.name(t))).await;
    let i = r
        .columns
        .iter()
        .position(|c| c == "numFiles")
        .expect("numFiles");
    r.rows[0][i].as_deref().unwrap_or("0").parse().unwrap()
}

#[tokio::test]
async fn maintenance_statements_are_in_the_plan_and_run_as_shown_on_spark_connect() {
    use delta_operator::plan::steps::Action;
    let s = Spark::new();
    let t = tref("m");
    let body = |note: bool, maintenance: &str| {
        format!(
            "  columns:\n    - {{name: id, type: bigint}}\n    - {{name: region, type: string}}\n{}{maintenance}",
            if note {
                "    - {name: note, type: string}\n"
            } else {
                ""
            }
        )
    };
    s.apply(
        &manifests(&format!("{SCHEMA}{}", table("m", &body(true, "")))),
        false,
    )
    .await;
    for i in 0..6 {
        s.sql(&format!(
            "INSERT INTO {} VALUES ({i}, '{}', 'n{i}')",
            s.name(&t),
            if i % 2 == 0 { "eu" } else { "us" }
        ))
        .await;
    }
    // a destructive step records a restore point
    let report = s
        .apply(
            &manifests(&format!("{SCHEMA}{}", table("m", &body(false, "")))),
            true,
        )
        .await;
    let restore_point = report
        .steps
        .iter()
        .find_map(|st| st.restore_point)
        .expect("the drop recorded a restore point");
    let before = num_files(&s, &t).await;
    assert!(before >= 2, "{before} files");

    let maintain = "  maintenance: {compaction: {whenSmallFiles: 2, zOrderBy: [region]}, vacuum: {retainHours: 168}, checkpoint: {everyVersions: 2}}\n";
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let inputs = manifests(&format!("{SCHEMA}{}", table("m", &body(false, maintain)))).at(now);
    let plan = s.plan(&inputs).await;
    let steps = plan.tables[0].steps();
    let text = delta_operator::plan::render::text::render(&plan);
    assert!(
        steps.iter().all(|st| st.class == RiskClass::Maintenance) && steps.len() == 3,
        "{text}"
    );
    let statements: Vec<String> = steps
        .iter()
        .flat_map(|st| st.statements.iter().map(|x| x.to_string()))
        .collect();
    let name = s.name(&t);
    assert!(
        statements.contains(&format!("OPTIMIZE {name} ZORDER BY (`region`)")),
        "{statements:?}"
    );
    assert!(
        statements
            .iter()
            .any(|x| x.starts_with(&format!("VACUUM {name} RETAIN ")) && x.ends_with(" HOURS")),
        "{statements:?}"
    );
    // the checkpoint is the lake's (Spark SQL has no statement for it)
    assert!(
        steps
            .iter()
            .any(|st| matches!(st.action, Action::Checkpoint) && !st.statements.is_empty()),
        "{text}"
    );
    for x in &statements {
        assert!(
            text.contains(x.lines().next().unwrap()),
            "shown: {x}\n{text}"
        );
    }
    let report = s.apply(&inputs, false).await;
    assert!(
        report
            .steps
            .iter()
            .all(|st| matches!(st.status, StepStatus::Applied)),
        "{report:?}"
    );
    let after = num_files(&s, &t).await;
    assert!(after < before, "compacted: {before} → {after} files");
    assert!(
        s.path(&t).join("_delta_log/_last_checkpoint").exists(),
        "a checkpoint was written"
    );
    let history = s.sql(&format!("DESCRIBE HISTORY {name}")).await;
    let op = history
        .columns
        .iter()
        .position(|c| c == "operation")
        .expect("operation");
    let ops: Vec<String> = history.rows.iter().filter_map(|r| r[op].clone()).collect();
    assert!(
        ops.iter().any(|o| o == "OPTIMIZE") && ops.iter().any(|o| o == "VACUUM END"),
        "{ops:?}"
    );
    // the restore point still restores after the vacuum: the dropped column comes back
    s.sql(&format!(
        "RESTORE TABLE {name} TO VERSION AS OF {restore_point}"
    ))
    .await;
    let back = s.rows(&format!("SELECT count(note) FROM {name}")).await;
    assert_eq!(back, ["6"]);
}
