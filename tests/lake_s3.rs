//! The lake backend on an object store: an S3 endpoint served on 127.0.0.1 by
//! moto (a real S3 API implementation from PyPI, installed by `make test`),
//! so the object-store code paths (listing, staging, trash, rewrites) run for real.

mod support;

use support::moto::moto;

use std::process::Command;

use std::sync::Arc;
use std::time::Duration;

use delta_operator::apply::Options;
use delta_operator::apply::{StepStatus, apply};
use delta_operator::backend::lake::LakeBackend;
use delta_operator::backend::{Backend, Extras};
use delta_operator::engine::{lower, read_and_plan};
use delta_operator::model::{DataType, SchemaRef, TableRef};
use delta_operator::plan::gate::Policy;
use delta_operator::spec::load::{Manifests, load_str};
use deltalake::arrow::array::{ArrayRef, Int32Array, Int64Array, RecordBatch, StringArray};
use deltalake::arrow::datatypes::{DataType as ArrowType, Field, Schema};
use deltalake::protocol::SaveMode;

fn manifests(yaml: &str) -> delta_operator::engine::Inputs {
    let mut m = Manifests::default();
    let mut errors = Vec::new();
    load_str("s3.yaml", yaml, &mut m, &mut errors);
    assert!(errors.is_empty(), "{errors:?}");
    lower(&m).unwrap()
}

const V1: &str = "apiVersion: delta-operator.io/v1alpha1
kind: DeltaSchema
metadata: {name: sales}
spec: {catalog: main, mode: strict}
---
apiVersion: delta-operator.io/v1alpha1
kind: DeltaTable
metadata: {name: orders}
spec:
  schemaRef: sales
  comment: orders on S3
  columns:
    - {name: id, type: bigint, nullable: false}
    - {name: amount, type: int}
    - {name: status, type: string}
---
apiVersion: delta-operator.io/v1alpha1
kind: DeltaTable
metadata: {name: old}
spec:
  schemaRef: sales
  columns:
    - {name: id, type: bigint}
";

#[tokio::test(flavor = "multi_thread")]
async fn the_lake_on_s3_creates_rewrites_and_drops_like_on_disk() {
    let (_moto, port) = moto();
    // SAFETY of set_var: this test file holds one test, so no other thread reads the environment
    for (k, v) in support::moto::env(port) {
        unsafe {
            std::env::set_var(k, v);
        }
    }
    let lake = LakeBackend::open("s3://lake/warehouse").expect("an s3 root");
    let run = |inputs: delta_operator::engine::Inputs, approve: bool| {
        let lake = &lake;
        async move {
            let id = if approve {
                Some(read_and_plan(lake, &inputs).await.unwrap().0.id)
            } else {
                None
            };
            let (_, report) = apply(
                lake,
                &inputs,
                None,
                id.as_deref(),
                &Options {
                    policy: Policy::Auto,
                    lock_wait: std::time::Duration::from_secs(5),
                    on_event: &|_| {},
                    may_continue: &|| true,
                    fence: None,
                },
            )
            .await
            .expect("apply");
            assert!(
                report
                    .steps
                    .iter()
                    .all(|s| !matches!(s.status, StepStatus::Failed { .. })),
                "{:?}",
                report.steps
            );
            report
        }
    };
    let v1 = manifests(V1);
    run(v1.clone(), false).await;
    let orders = TableRef::new("main", "sales", "orders");
    assert_eq!(
        lake.list_schema(&SchemaRef {
            catalog: "main".into(),
            schema: "sales".into()
        })
        .await
        .unwrap()
        .len(),
        2
    );
    assert!(
        !read_and_plan(&lake, &v1).await.unwrap().0.has_changes(),
        "plans clean on S3"
    );

    // rows written by delta-rs itself, straight to the bucket
    let url = url::Url::parse("s3://lake/warehouse/main/sales/orders/").unwrap();
    let table = deltalake::open_table(url.clone()).await.unwrap();
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", ArrowType::Int64, false),
        Field::new("amount", ArrowType::Int32, true),
        Field::new("status", ArrowType::Utf8, true),
    ]));
    let cols: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from(vec![1, 2, 3])),
        Arc::new(Int32Array::from(vec![Some(5), None, Some(7)])),
        Arc::new(StringArray::from(vec!["a", "b", "c"])),
    ];
    table
        .write(vec![RecordBatch::try_new(schema, cols).unwrap()])
        .with_save_mode(SaveMode::Append)
        .await
        .unwrap();

    let before_rewrite = lake.version(&orders).await.unwrap().unwrap();
    let schema_before = deltalake::open_table(url.clone())
        .await
        .unwrap()
        .snapshot()
        .unwrap()
        .schema()
        .as_ref()
        .clone();

    // amount int → smallint (a conversion that could lose values: staged), status dropped
    // (destructive), `old` an orphan of a strict schema
    let v2 = manifests(
        V1.replace(
            "{name: amount, type: int}",
            "{name: amount, type: smallint}",
        )
        .replace("    - {name: status, type: string}\n", "")
        .split(
            "---\napiVersion: delta-operator.io/v1alpha1\nkind: DeltaTable\nmetadata: {name: old}",
        )
        .next()
        .unwrap(),
    );
    let report = run(v2.clone(), true).await;
    assert!(
        report
            .steps
            .iter()
            .any(|s| s.title == "STAGE rewritten data"),
        "{:?}",
        report.steps
    );
    let live = lake
        .read(std::slice::from_ref(&orders), &Extras::none())
        .await
        .unwrap()
        .pop()
        .flatten()
        .unwrap();
    assert_eq!(live.column("amount").unwrap().data_type, DataType::Short);
    assert!(live.column("status").is_none());
    assert!(
        !read_and_plan(&lake, &v2).await.unwrap().0.has_changes(),
        "converged on S3"
    );
    // every row survived the rewrite
    let table = deltalake::open_table(url.clone()).await.unwrap();
    let rows: usize = table
        .snapshot()
        .unwrap()
        .log_data()
        .iter()
        .map(|f| f.num_records().unwrap_or(0))
        .sum();
    assert_eq!(rows, 3);
    // the orphan went to the trash prefix, the staging copy is gone
    assert_eq!(
        lake.list_schema(&SchemaRef {
            catalog: "main".into(),
            schema: "sales".into()
        })
        .await
        .unwrap(),
        vec![orders.clone()]
    );
    assert!(
        deltalake::open_table(url::Url::parse("s3://lake/warehouse/main/sales/old/").unwrap())
            .await
            .is_err(),
        "dropped"
    );

    // the undo commands' code on the object store: restore (each file looked up, then
    // one RESTORE commit) and undrop (copy back from the trash prefix, then delete)
    let restored = lake
        .restore(&orders, before_rewrite, Duration::from_secs(5))
        .await
        .expect("restore on S3");
    assert!(
        matches!(restored, delta_operator::backend::lake::undo::Restored::Committed { to, .. } if to == before_rewrite),
        "{restored:?}"
    );
    let table = deltalake::open_table(url.clone()).await.unwrap();
    assert_eq!(
        table.snapshot().unwrap().schema().as_ref(),
        &schema_before,
        "status and amount int again"
    );
    let rows: usize = table
        .snapshot()
        .unwrap()
        .log_data()
        .iter()
        .map(|f| f.num_records().unwrap_or(0))
        .sum();
    assert_eq!(rows, 3);
    let old = TableRef::new("main", "sales", "old");
    let entries = lake.trash_entries(&old).await.unwrap();
    assert_eq!(entries.len(), 1, "{entries:?}");
    let (entry, _) = lake
        .undrop(&old, None, Duration::from_secs(5))
        .await
        .expect("undrop on S3");
    assert_eq!(entry, entries[0]);
    assert_eq!(
        lake.list_schema(&SchemaRef {
            catalog: "main".into(),
            schema: "sales".into()
        })
        .await
        .unwrap(),
        vec![old.clone(), orders.clone()]
    );
    assert!(lake.trash_entries(&old).await.unwrap().is_empty());
    let e = lake
        .undrop(&old, None, Duration::from_secs(5))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("exists"), "{e}");

    // a store without conditional writes (here: turned off): the lock cannot be
    // taken, and the refusal says why and what to change, not "reading the tables failed"
    // SAFETY of set_var: this test file holds one test
    unsafe {
        std::env::set_var("AWS_CONDITIONAL_PUT", "disabled");
    }
    let v3 = manifests(&V1.replace("comment: orders on S3", "comment: orders on S3, v3"));
    let e = apply(
        &lake,
        &v3,
        None,
        None,
        &Options {
            policy: Policy::Auto,
            lock_wait: Duration::from_secs(5),
            on_event: &|_| {},
            may_continue: &|| true,
            fence: None,
        },
    )
    .await
    .map(|(_, r)| r.steps)
    .expect_err("no lock without conditional writes");
    let message = e.to_string();
    assert!(
        message.contains("does not support conditional writes")
            && message.contains("AWS_CONDITIONAL_PUT")
            && !message.contains("reading the tables"),
        "{message}"
    );
    unsafe {
        std::env::remove_var("AWS_CONDITIONAL_PUT");
    }
    assert_eq!(
        deltalake::open_table(url.clone())
            .await
            .unwrap()
            .snapshot()
            .unwrap()
            .metadata()
            .description(),
        Some("orders on S3"),
        "nothing was changed"
    );

    // in the same test (the environment above is this process's): the lock fences on S3 too,
    // whether the holder was force-unlocked or stalled past its lock's expiry
    an_apply_that_lost_its_lock_on_s3_commits_nothing(LostBy::ForcedUnlock, port).await;
    an_apply_that_lost_its_lock_on_s3_commits_nothing(LostBy::StalledPastExpiry, port).await;
    // and a holder stalled after its fence is stopped by the fencing commit of the apply
    // that removes its files
    an_apply_stalled_after_its_fence_on_s3_commits_nothing(port).await;
}

/// How the first apply of [`an_apply_that_lost_its_lock_on_s3_commits_nothing`] loses its lock.
#[derive(Debug, Clone, Copy)]
enum LostBy {
    /// `delta-operator unlock --force` while it runs (a plain `unlock` refuses a live holder).
    ForcedUnlock,
    /// Its process stopped (SIGSTOP) past the lock's 2 s lifetime, then woken up.
    StalledPastExpiry,
}

const BIN: &str = env!("CARGO_BIN_EXE_delta-operator");

fn said(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Every `id` of the table, read from its data files (a file a commit names
/// but that is gone fails the read).
async fn ids(url: &url::Url) -> Vec<i64> {
    use deltalake::datafusion::prelude::SessionContext;
    let table = deltalake::open_table(url.clone()).await.expect("open");
    let ctx = SessionContext::new();
    table.update_datafusion_session(&ctx.state()).unwrap();
    ctx.register_table("t", table.table_provider().await.unwrap())
        .unwrap();
    let batches = ctx
        .sql("SELECT id, qty FROM t")
        .await
        .unwrap()
        .collect()
        .await
        .expect("every file the log names is readable");
    let mut out = Vec::new();
    for b in batches {
        let col = b
            .column(0)
            .as_any()
            .downcast_ref::<Int64Array>()
            .expect("bigint ids");
        out.extend(col.iter().flatten());
    }
    out.sort_unstable();
    out
}

async fn append(url: &url::Url, ids: &[i64]) -> Result<(), String> {
    let table = deltalake::open_table(url.clone())
        .await
        .map_err(|e| e.to_string())?;
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", ArrowType::Int64, true),
        Field::new("qty", ArrowType::Int32, true),
    ]));
    let cols: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from(ids.to_vec())),
        Arc::new(Int32Array::from(
            ids.iter().map(|i| (i % 1000) as i32).collect::<Vec<_>>(),
        )),
    ];
    table
        .write(vec![RecordBatch::try_new(schema, cols).unwrap()])
        .with_save_mode(SaveMode::Append)
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// The lost-lock reproduction on S3 (see tests/data_safety.rs for the disk
/// versions): a widening paused before its commit beside an appender loses its
/// lock (`by`), a second apply runs meanwhile and leaves the first run's files
/// alone; the first commits nothing and says so, every acknowledged row is
/// readable by delta-rs and by Python deltalake.
async fn an_apply_that_lost_its_lock_on_s3_commits_nothing(by: LostBy, port: u16) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let prefix = match by {
        LostBy::ForcedUnlock => "fence",
        LostBy::StalledPastExpiry => "fence-stalled",
    };
    std::fs::write(
        d.join("config.yaml"),
        format!("targets:\n  s3:\n    lake: {{root: s3://lake/{prefix}}}\ndefaultTarget: s3\n"),
    )
    .unwrap();
    let spec = |qty: &str, comment: &str| {
        format!(
            "apiVersion: delta-operator.io/v1alpha1\nkind: DeltaSchema\nmetadata: {{name: sales}}\nspec: {{catalog: main}}\n---\napiVersion: delta-operator.io/v1alpha1\nkind: DeltaTable\nmetadata: {{name: t}}\nspec:\n  schemaRef: sales\n{comment}  columns:\n    - {{name: id, type: bigint}}\n    - {{name: qty, type: {qty}}}\n"
        )
    };
    std::fs::write(d.join("live.yaml"), spec("int", "")).unwrap();
    std::fs::write(d.join("widened.yaml"), spec("bigint", "")).unwrap();
    // after a stall the lock has expired: the second apply needs a step of its own to take it
    std::fs::write(
        d.join("commented.yaml"),
        spec("int", "  comment: set by the second apply\n"),
    )
    .unwrap();
    let cli = |args: &[&str]| {
        Command::new(BIN)
            .current_dir(d)
            .args(args)
            .env("DELTA_OPERATOR_CONFIG", d.join("config.yaml"))
            .env_remove("DELTA_OPERATOR_FAILPOINT")
            .output()
            .unwrap()
    };
    let out = cli(&["apply", "-f", "live.yaml"]);
    assert!(out.status.success(), "{}", said(&out));
    let url = url::Url::parse(&format!("s3://lake/{prefix}/main/sales/t/")).unwrap();
    append(&url, &(1..=2_000).collect::<Vec<_>>())
        .await
        .unwrap();
    // the appender: one row every 100 ms, only acknowledged ones owed
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let acked = Arc::new(std::sync::Mutex::new(Vec::new()));
    let (s, a, u) = (stop.clone(), acked.clone(), url.clone());
    let writer = tokio::spawn(async move {
        let mut id = 1_000_000;
        while !s.load(std::sync::atomic::Ordering::SeqCst) {
            if append(&u, &[id]).await.is_ok() {
                a.lock().unwrap().push(id);
            }
            id += 1;
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    let mut first = Command::new(BIN);
    first
        .current_dir(d)
        .args(["apply", "-f", "widened.yaml"])
        .env("DELTA_OPERATOR_CONFIG", d.join("config.yaml"))
        .env("DELTA_OPERATOR_FAILPOINT", "slow-before-commit")
        .env("DELTA_OPERATOR_FAILPOINT_SECONDS", "6");
    if let LostBy::StalledPastExpiry = by {
        first.env("DELTA_OPERATOR_LOCK_TTL_SECONDS", "2");
    }
    let first = support::start_paused(
        first,
        "before-commit",
        "first apply",
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
    let second_spec = match by {
        LostBy::ForcedUnlock => {
            let out = cli(&["unlock", "main.sales.t"]);
            assert_eq!(out.status.code(), Some(5), "a live holder: {}", said(&out));
            let out = cli(&["unlock", "main.sales.t", "--force"]);
            assert!(out.status.success(), "{}", said(&out));
            "live.yaml"
        }
        LostBy::StalledPastExpiry => {
            signal("-STOP");
            // past the 2 s lifetime and its margin: the lock is anyone's
            tokio::time::sleep(Duration::from_secs(5)).await;
            "commented.yaml"
        }
    };
    let second = cli(&["apply", "-f", second_spec, "--lock-wait", "20s"]);
    assert!(second.status.success(), "{by:?}: {}", said(&second));
    assert_eq!(
        run_folders(port, prefix),
        1,
        "{by:?}: the first apply's run folder is not a leftover while its run may be alive: {}",
        said(&second)
    );
    if let LostBy::StalledPastExpiry = by {
        signal("-CONT");
    }
    let first = first.wait_with_output().unwrap();
    let first_said = said(&first);
    assert!(
        !first.status.success(),
        "{by:?}: the first apply must fail: {first_said}"
    );
    assert!(first_said.contains("lost its lock"), "{by:?}: {first_said}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    writer.await.unwrap();
    let mut owed: Vec<i64> = (1..=2_000).collect();
    owed.extend(acked.lock().unwrap().iter().copied());
    owed.sort_unstable();
    assert!(
        owed.len() > 2_000,
        "no append was acknowledged: the test proves nothing"
    );
    assert_eq!(
        ids(&url).await,
        owed,
        "{by:?}: every acknowledged row, once"
    );
    // a reader outside the project reads every row too
    let outside = Command::new(support::python())
        .arg("-c")
        .arg(format!(
            "import deltalake, os\n\
t = deltalake.DeltaTable('{url}', storage_options={{'AWS_ENDPOINT_URL': 'http://127.0.0.1:{port}', 'AWS_ACCESS_KEY_ID': 'test', 'AWS_SECRET_ACCESS_KEY': 'test', 'AWS_REGION': 'us-east-1', 'AWS_ALLOW_HTTP': 'true'}})\n\
print(t.to_pyarrow_table().num_rows, flush=True)\n\
os._exit(0)"
        ))
        .output()
        .unwrap();
    assert!(
        outside.status.success(),
        "{by:?}: an outside reader fails: {}",
        said(&outside)
    );
    assert_eq!(
        String::from_utf8_lossy(&outside.stdout).trim(),
        owed.len().to_string(),
        "{by:?}"
    );
    // the stale run removed its own files
    assert_eq!(
        run_folders(port, prefix),
        0,
        "{by:?}: the stale run's folder is left behind"
    );
    let out = cli(&["plan", "-f", second_spec]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{by:?}: qty is still an int: {}",
        said(&out)
    );
}

/// How many run folders (`delta-operator-rewrite-<run>/`) the table `t` of the root
/// `s3://lake/<prefix>` holds, listed through moto's S3 API.
fn run_folders(port: u16, prefix: &str) -> usize {
    let out = Command::new(support::python())
        .arg("-c")
        .arg(format!(
            "import boto3\n\
s3 = boto3.client('s3', endpoint_url='http://127.0.0.1:{port}', region_name='us-east-1', aws_access_key_id='test', aws_secret_access_key='test')\n\
keys = [o['Key'] for p in s3.get_paginator('list_objects_v2').paginate(Bucket='lake', Prefix='{prefix}/main/sales/t/delta-operator-rewrite-') for o in p.get('Contents', [])]\n\
print(len({{k.split('/')[4] for k in keys}}))"
        ))
        .output()
        .unwrap();
    assert!(out.status.success(), "list the run folders: {}", said(&out));
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

/// The after-fence window on S3 (see
/// `an_apply_stalled_after_its_fence_commits_nothing_once_a_second_removed_its_files` in
/// tests/data_safety.rs): a widening on "another host" stalls between its fence and its commit
/// past the lock's expiry, a second apply removes its files as leftovers (after its fencing
/// commit), and the first, woken up, commits nothing and says it lost its lock. Appends land
/// only before the stall (one during it would make the stale commit conflict by itself).
async fn an_apply_stalled_after_its_fence_on_s3_commits_nothing(port: u16) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let prefix = "fence-after";
    std::fs::write(
        d.join("config.yaml"),
        format!("targets:\n  s3:\n    lake: {{root: s3://lake/{prefix}}}\ndefaultTarget: s3\n"),
    )
    .unwrap();
    let spec = |qty: &str| {
        format!(
            "apiVersion: delta-operator.io/v1alpha1\nkind: DeltaSchema\nmetadata: {{name: sales}}\nspec: {{catalog: main}}\n---\napiVersion: delta-operator.io/v1alpha1\nkind: DeltaTable\nmetadata: {{name: t}}\nspec:\n  schemaRef: sales\n  columns:\n    - {{name: id, type: bigint}}\n    - {{name: qty, type: {qty}}}\n"
        )
    };
    std::fs::write(d.join("live.yaml"), spec("int")).unwrap();
    std::fs::write(d.join("widened.yaml"), spec("bigint")).unwrap();
    let cli = |args: &[&str]| {
        Command::new(BIN)
            .current_dir(d)
            .args(args)
            .env("DELTA_OPERATOR_CONFIG", d.join("config.yaml"))
            .env_remove("DELTA_OPERATOR_FAILPOINT")
            .output()
            .unwrap()
    };
    let out = cli(&["apply", "-f", "live.yaml"]);
    assert!(out.status.success(), "{}", said(&out));
    let url = url::Url::parse(&format!("s3://lake/{prefix}/main/sales/t/")).unwrap();
    append(&url, &(1..=2_000).collect::<Vec<_>>())
        .await
        .unwrap();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let acked = Arc::new(std::sync::Mutex::new(Vec::new()));
    let (s, a, u) = (stop.clone(), acked.clone(), url.clone());
    let writer = tokio::spawn(async move {
        let mut id = 1_000_000;
        while !s.load(std::sync::atomic::Ordering::SeqCst) {
            if append(&u, &[id]).await.is_ok() {
                a.lock().unwrap().push(id);
            }
            id += 1;
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    let mut first = Command::new(BIN);
    first
        .current_dir(d)
        .args(["apply", "-f", "widened.yaml"])
        .env("DELTA_OPERATOR_CONFIG", d.join("config.yaml"))
        .env("DELTA_OPERATOR_FAILPOINT", "slow-after-fence")
        .env("DELTA_OPERATOR_FAILPOINT_SECONDS", "4")
        .env("DELTA_OPERATOR_LOCK_TTL_SECONDS", "2")
        .env("DELTA_OPERATOR_TEST_HOST", "another-host");
    let (first, reached) = support::start_watching(first, "after-fence", "first apply");
    let within = Duration::from_secs(120);
    let first = support::reached_again(first, &reached, "after-fence", "first apply", within);
    // appends after the version its first round read: that round conflicts and catches up
    tokio::time::sleep(Duration::from_secs(1)).await;
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    writer.await.unwrap();
    let first = support::reached_again(
        first,
        &reached,
        "after-fence",
        "first apply (its second round)",
        within,
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
    signal("-STOP");
    // past the 2 s lifetime and the heartbeat's two: a run that died on another host
    tokio::time::sleep(Duration::from_secs(6)).await;
    assert_eq!(run_folders(port, prefix), 1, "the first apply's files");
    let second = cli(&["apply", "-f", "live.yaml", "--lock-wait", "20s"]);
    assert!(second.status.success(), "{}", said(&second));
    assert_eq!(
        run_folders(port, prefix),
        0,
        "the second apply removes the stalled run's files: {}",
        said(&second)
    );
    signal("-CONT");
    let first = first.wait_with_output().unwrap();
    let first_said = said(&first);
    assert!(
        !first.status.success(),
        "the stale apply must fail, not commit files that are gone: {first_said}"
    );
    assert!(first_said.contains("lost its lock"), "{first_said}");
    let mut owed: Vec<i64> = (1..=2_000).collect();
    owed.extend(acked.lock().unwrap().iter().copied());
    owed.sort_unstable();
    assert!(owed.len() > 2_000, "no append was acknowledged");
    assert_eq!(ids(&url).await, owed, "every acknowledged row, once");
    let outside = Command::new(support::python())
        .arg("-c")
        .arg(format!(
            "import deltalake, os\n\
t = deltalake.DeltaTable('{url}', storage_options={{'AWS_ENDPOINT_URL': 'http://127.0.0.1:{port}', 'AWS_ACCESS_KEY_ID': 'test', 'AWS_SECRET_ACCESS_KEY': 'test', 'AWS_REGION': 'us-east-1', 'AWS_ALLOW_HTTP': 'true'}})\n\
print(t.to_pyarrow_table().num_rows, flush=True)\n\
print(sum(1 for h in t.history() if h.get('operation') == 'DELTA-OPERATOR FENCE'), flush=True)\n\
os._exit(0)"
        ))
        .output()
        .unwrap();
    assert!(
        outside.status.success(),
        "an outside reader fails: {}",
        said(&outside)
    );
    let printed = String::from_utf8_lossy(&outside.stdout);
    let lines: Vec<&str> = printed.lines().collect();
    assert_eq!(
        lines,
        [owed.len().to_string().as_str(), "1"],
        "rows, and fencing commits in the history"
    );
    let out = cli(&["plan", "-f", "live.yaml"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "qty is still an int: {}",
        said(&out)
    );
}
