//! Rewrites on the lake, on real Delta tables: every projection kind keeps
//! every value it does not mean to convert; a lossy cast is caught by the
//! staged check with the original byte-identical; the binary killed between
//! stage and replace, and during the replace, converges on a rerun without
//! losing a row; a shallow clone before the first risky step; a table with a
//! generated column is never rewritten.

mod support;

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use delta_operator::apply::StepStatus;
use delta_operator::backend::lake::LakeBackend;
use delta_operator::model::DataType;
use delta_operator::plan::steps::RewritePhase;
use delta_operator::plan::{Action, Outcome, RiskClass};
use deltalake::arrow::array::{
    ArrayRef, Int32Array, Int64Array, ListArray, StringArray, StructArray,
};
use deltalake::arrow::buffer::{NullBuffer, OffsetBuffer};
use deltalake::arrow::datatypes::{DataType as ArrowType, Field, Fields};
use sha2::{Digest, Sha256};
use support::*;

fn longs(v: impl IntoIterator<Item = i64>) -> ArrayRef {
    Arc::new(Int64Array::from_iter_values(v))
}
fn strs(v: &[Option<&str>]) -> ArrayRef {
    Arc::new(StringArray::from(v.to_vec()))
}

fn steps(plan: &delta_operator::plan::Plan) -> Vec<(String, RiskClass)> {
    plan.tables
        .iter()
        .flat_map(|t| t.steps().iter().map(|s| (s.action.title(), s.class)))
        .collect()
}

/// SHA-256 of each row as text (rows in the query's order).
async fn row_sums(lake: &Lake, sql: &str) -> Vec<String> {
    lake.query(&tref("t"), sql)
        .await
        .iter()
        .map(|r| {
            Sha256::digest(r.as_bytes())
                .iter()
                .take(8)
                .map(|b| format!("{b:02x}"))
                .collect()
        })
        .collect()
}

fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for e in walk(dir) {
        out.push((
            e.strip_prefix(dir).unwrap().display().to_string(),
            std::fs::read(&e).unwrap(),
        ));
    }
    out.sort();
    out
}
fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        if e.path().is_dir() {
            out.extend(walk(&e.path()))
        } else {
            out.push(e.path())
        }
    }
    out
}

const V1: &str = "  columns:
    - {name: id, type: bigint, nullable: false, comment: the key}
    - {name: amount, type: bigint, comment: in cents}
    - {name: qty, type: int}
    - {name: note, type: string}
    - {name: code, type: string}
    - {name: address, type: 'struct<zip:int,city:string>'}
    - {name: items, type: 'array<struct<sku:string,qty:int>>'}
  constraints:
    - check: {name: id_positive, expression: id > 0}";

/// `address` and `items` as Arrow arrays for rows 1..=n: every 4th address is
/// NULL, every 3rd items list is empty and every 5th NULL.
fn nested(n: i64) -> (ArrayRef, ArrayRef) {
    let addr_fields = Fields::from(vec![
        Field::new("zip", ArrowType::Int32, true),
        Field::new("city", ArrowType::Utf8, true),
    ]);
    let zips: Vec<i32> = (1..=n).map(|i| 10000 + i as i32).collect();
    let cities: Vec<String> = (1..=n).map(|i| format!("city{}", i % 7)).collect();
    let addr_nulls = NullBuffer::from((1..=n).map(|i| i % 4 != 0).collect::<Vec<_>>());
    let address = StructArray::try_new(
        addr_fields,
        vec![
            Arc::new(Int32Array::from(zips)),
            Arc::new(StringArray::from(cities)),
        ],
        Some(addr_nulls),
    )
    .unwrap();
    let item_fields = Fields::from(vec![
        Field::new("sku", ArrowType::Utf8, true),
        Field::new("qty", ArrowType::Int32, true),
    ]);
    let mut lens = Vec::new();
    let (mut skus, mut qtys) = (Vec::new(), Vec::new());
    for i in 1..=n {
        let len = if i % 3 == 0 { 0 } else { (i % 2 + 1) as usize };
        for j in 0..len {
            skus.push(format!("sku{i}-{j}"));
            qtys.push((i as i32) * 10 + j as i32);
        }
        lens.push(len);
    }
    let values = StructArray::try_new(
        item_fields.clone(),
        vec![
            Arc::new(StringArray::from(skus)),
            Arc::new(Int32Array::from(qtys)),
        ],
        None,
    )
    .unwrap();
    let items = ListArray::try_new(
        Arc::new(Field::new("element", ArrowType::Struct(item_fields), true)),
        OffsetBuffer::from_lengths(lens),
        Arc::new(values),
        Some(NullBuffer::from(
            (1..=n).map(|i| i % 5 != 0).collect::<Vec<_>>(),
        )),
    )
    .unwrap();
    (Arc::new(address), Arc::new(items))
}

async fn seeded(lake: &Lake, n: i64) {
    lake.apply(&manifests(&format!("{SCHEMA}{}", table("t", V1))), false)
        .await
        .unwrap();
    let (address, items) = nested(n);
    let notes: Vec<Option<String>> = (1..=n)
        .map(|i| (i % 6 != 0).then(|| format!("note {i}")))
        .collect();
    let codes: Vec<Option<String>> = (1..=n).map(|i| Some(format!("c{}", i % 9))).collect();
    lake.append(
        &tref("t"),
        vec![
            ("id", longs(1..=n)),
            ("amount", longs((1..=n).map(|i| i * 100))),
            ("qty", longs((1..=n).map(|i| i % 50))),
            ("note", Arc::new(StringArray::from(notes)) as ArrayRef),
            ("code", Arc::new(StringArray::from(codes)) as ArrayRef),
            ("address", address),
            ("items", items),
        ],
    )
    .await;
    // someone else sets a property the spec never names
    let t = deltalake::open_table(lake.url(&tref("t"))).await.unwrap();
    t.set_tbl_properties()
        .with_properties([("other.team".to_string(), "keep-me".to_string())].into())
        .with_raise_if_not_exists(false)
        .await
        .unwrap();
}

/// Every value of a row except the ones a rewrite converts, as text: the
/// same before and after (`note` may be called `remark`).
const KEPT_BEFORE: &str = "SELECT id, amount, note, code, address['city'], CAST(address['zip'] AS BIGINT), items[1]['sku'], CAST(items[1]['qty'] AS BIGINT), items[2]['sku'], CAST(items[2]['qty'] AS BIGINT), array_length(items), address IS NULL, items IS NULL FROM t ORDER BY id";

#[tokio::test]
async fn write_once_projections_copy_rebuild_by_name_transform_and_null_keep_every_value() {
    let lake = Lake::new();
    seeded(&lake, 3000).await;
    let before = row_sums(&lake, KEPT_BEFORE).await;
    let qty_before = lake
        .query(&tref("t"), "SELECT qty FROM t ORDER BY id")
        .await;
    let v_before = lake.version(&tref("t")).await;
    // a rename (copy), a lossless cast, a struct rebuilt by name (fields
    // reordered, zip widened, a new field), a transform over an array of
    // structs, and a new column (NULL): nothing can lose a value
    let v2 = manifests(&format!(
        "{SCHEMA}{}",
        table(
            "t",
            "  columns:
    - {name: id, type: bigint, nullable: false, comment: the key}
    - {name: amount, type: bigint, comment: in cents}
    - {name: qty, type: bigint}
    - {name: remark, type: string, renamedFrom: note}
    - {name: code, type: string}
    - {name: address, type: 'struct<city:string,zip:bigint,country:string>'}
    - {name: items, type: 'array<struct<qty:bigint,sku:string>>'}
    - {name: extra, type: date}
  constraints:
    - check: {name: id_positive, expression: id > 0}"
        )
    ));
    let plan = lake.plan(&v2).await;
    assert_eq!(
        steps(&plan),
        vec![("REPLACE TABLE (from itself)".into(), RiskClass::Rewrite)],
        "{}",
        delta_operator::plan::render::text::render(&plan)
    );
    let report = lake.apply(&v2, false).await.unwrap();
    assert_eq!(report.steps[0].restore_point, Some(v_before));
    assert_eq!(
        lake.version(&tref("t")).await,
        v_before + 1,
        "one commit: the table rebuilt from itself"
    );
    let after = row_sums(&lake, &KEPT_BEFORE.replace("note", "remark")).await;
    assert_eq!(after.len(), 3000);
    assert_eq!(after, before, "every row's kept values are unchanged");
    assert_eq!(
        lake.query(&tref("t"), "SELECT qty FROM t ORDER BY id")
            .await,
        qty_before,
        "the lossless cast kept every value"
    );
    assert_eq!(
        lake.query(
            &tref("t"),
            "SELECT count(*) FROM t WHERE extra IS NULL OR address['country'] IS NOT NULL"
        )
        .await,
        vec!["3000"],
        "new column and new field are NULL"
    );
    let live = lake.read(&tref("t")).await.unwrap();
    assert_eq!(
        live.column("address").unwrap().data_type.to_string(),
        "struct<city:string,zip:bigint,country:string>"
    );
    assert_eq!(
        live.column("items").unwrap().data_type.to_string(),
        "array<struct<qty:bigint,sku:string>>"
    );
    assert_eq!(
        live.column("id").unwrap().comment.as_deref(),
        Some("the key")
    );
    assert!(!live.column("id").unwrap().nullable, "NOT NULL survives");
    assert_eq!(
        live.properties.get("other.team").map(String::as_str),
        Some("keep-me"),
        "a property someone else set survives"
    );
    assert_eq!(live.checks.len(), 1, "the CHECK survives");
    assert!(
        !lake.backend.staging_path(&tref("t")).exists(),
        "write-once: no staging copy"
    );
    assert!(!lake.plan(&v2).await.has_changes(), "converges");
}

#[tokio::test]
async fn staged_projections_cast_and_using_convert_only_what_they_mean_to() {
    let lake = Lake::new();
    seeded(&lake, 3000).await;
    let before = row_sums(
        &lake,
        &KEPT_BEFORE.replace(" amount,", "").replace(" code,", ""),
    )
    .await;
    let amounts = lake
        .query(&tref("t"), "SELECT amount FROM t ORDER BY id")
        .await;
    let codes: Vec<String> = lake
        .query(&tref("t"), "SELECT upper(code) FROM t ORDER BY id")
        .await;
    // bigint → int may lose values (not here: they fit); `using:` computes the new code
    let v2 = manifests(&format!(
        "{SCHEMA}{}",
        table(
            "t",
            &V1.replace(
                "{name: amount, type: bigint, comment: in cents}",
                "{name: amount, type: int, comment: in cents}"
            )
            .replace(
                "{name: code, type: string}",
                "{name: code, type: varchar(4), using: upper(code)}"
            )
        )
    ));
    let plan = lake.plan(&v2).await;
    assert_eq!(
        steps(&plan),
        vec![
            ("STAGE rewritten data".into(), RiskClass::Rewrite),
            ("REPLACE TABLE (from staging)".into(), RiskClass::Rewrite),
            ("DROP staging".into(), RiskClass::Meta)
        ]
    );
    let report = lake.apply(&v2, false).await.unwrap();
    assert!(
        report.steps[0]
            .detail
            .as_deref()
            .unwrap()
            .contains("checked"),
        "{:?}",
        report.steps[0]
    );
    assert_eq!(
        row_sums(
            &lake,
            &KEPT_BEFORE.replace(" amount,", "").replace(" code,", "")
        )
        .await,
        before,
        "unconverted values unchanged"
    );
    assert_eq!(
        lake.query(&tref("t"), "SELECT amount FROM t ORDER BY id")
            .await,
        amounts,
        "the cast kept every amount"
    );
    assert_eq!(
        lake.query(&tref("t"), "SELECT code FROM t ORDER BY id")
            .await,
        codes,
        "using: computed every code"
    );
    let live = lake.read(&tref("t")).await.unwrap();
    assert_eq!(live.column("amount").unwrap().data_type, DataType::Int);
    assert_eq!(
        live.column("amount").unwrap().comment.as_deref(),
        Some("in cents"),
        "the converted column's comment is put back"
    );
    assert_eq!(
        live.properties.get("other.team").map(String::as_str),
        Some("keep-me")
    );
    assert_eq!(live.checks.len(), 1);
    assert!(
        !lake.backend.staging_path(&tref("t")).exists(),
        "the staging copy is dropped"
    );
    assert!(!lake.plan(&v2).await.has_changes());
}

#[tokio::test]
async fn a_lossy_cast_is_caught_by_the_staged_check_and_the_original_is_byte_identical() {
    let lake = Lake::new();
    lake.apply(
        &manifests(&format!(
            "{SCHEMA}{}",
            table(
                "t",
                "  columns:\n    - {name: id, type: bigint}\n    - {name: num, type: string}"
            )
        )),
        false,
    )
    .await
    .unwrap();
    lake.append(
        &tref("t"),
        vec![
            ("id", longs(1..=4)),
            ("num", strs(&[Some("1"), Some("2"), Some("abc"), None])),
        ],
    )
    .await;
    let table_dir = lake.backend.table_path(&tref("t"));
    let files_before = files(&table_dir);
    let v_before = lake.version(&tref("t")).await;
    let v2 = manifests(&format!(
        "{SCHEMA}{}",
        table(
            "t",
            "  columns:\n    - {name: id, type: bigint}\n    - {name: num, type: int}"
        )
    ));
    let report = lake.apply_may_fail(&v2, false).await.unwrap();
    let staging = lake.backend.staging_path(&tref("t"));
    match &report.steps[0].status {
        StepStatus::Failed { error } => {
            assert!(error.contains("1 values into NULL"), "{error}");
            assert!(
                error.contains("untouched") && error.contains(&staging.display().to_string()),
                "names the kept staging copy: {error}"
            );
        }
        s => panic!("the stage must fail its check, got {s:?}"),
    }
    assert!(
        report.steps[1..]
            .iter()
            .all(|s| s.status == StepStatus::NotRun)
    );
    assert_eq!(
        lake.version(&tref("t")).await,
        v_before,
        "same Delta version"
    );
    assert_eq!(files(&table_dir), files_before, "same files, byte for byte");
    // the staging copy is kept to inspect: the value that did not convert is NULL there
    // one staging copy per run: the kept one is the only folder there
    let runs: Vec<_> = std::fs::read_dir(&staging)
        .expect("the staging folder is kept")
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let kept = deltalake::open_table(url::Url::from_directory_path(&runs[0]).unwrap())
        .await
        .expect("staging copy kept");
    assert!(kept.version().is_some());
    let ctx = deltalake::datafusion::prelude::SessionContext::new();
    ctx.register_table("s", kept.table_provider().await.unwrap())
        .unwrap();
    let b = ctx
        .sql("SELECT id FROM s WHERE num IS NULL ORDER BY id")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let ids: Vec<i64> = b
        .iter()
        .flat_map(|b| {
            b.column(0)
                .as_any()
                .downcast_ref::<Int64Array>()
                .unwrap()
                .values()
                .to_vec()
        })
        .collect();
    assert_eq!(
        ids,
        vec![3, 4],
        "row 3 ('abc') lost its value in the copy; row 4 was NULL already"
    );
}

#[tokio::test]
async fn a_table_with_a_generated_column_is_never_rewritten() {
    let lake = Lake::new();
    let v1 = manifests(&format!(
        "{SCHEMA}{}",
        table(
            "t",
            "  columns:\n    - {name: id, type: bigint}\n    - {name: id2, type: bigint, generated: id * 2}\n    - {name: note, type: string}"
        )
    ));
    lake.apply(&v1, false).await.unwrap();
    let v2 = manifests(&format!(
        "{SCHEMA}{}",
        table(
            "t",
            "  columns:\n    - {name: id, type: bigint}\n    - {name: id2, type: bigint, generated: id * 2}\n    - {name: remark, type: string, renamedFrom: note}"
        )
    ));
    let plan = lake.plan(&v2).await;
    let Outcome::Rejected { failures } = &plan.tables[0].outcome else {
        panic!("must be refused: {:?}", plan.tables[0].outcome)
    };
    assert_eq!(failures[0].rule, "RewriteRefused");
    assert!(
        failures[0].message.contains("generated columns"),
        "{}",
        failures[0].message
    );
}

#[tokio::test]
async fn clone_before_rewrite_takes_a_shallow_clone_of_the_table_as_it_was() {
    let lake = Lake::new();
    seeded(&lake, 100).await;
    let v_before = lake.version(&tref("t")).await;
    let sums = row_sums(&lake, KEPT_BEFORE).await;
    let v2 = manifests(&format!(
        "{SCHEMA}{}",
        table(
            "t",
            &format!(
                "{}\n  safety: {{cloneBeforeRewrite: true}}",
                V1.replace("{name: qty, type: int}", "{name: qty, type: bigint}")
            )
        )
    ));
    let plan = lake.plan(&v2).await;
    // the plan names the version the clone will be taken at; the clone is named by the version it was
    let name = format!("t__delta_operator_clone_v{v_before}");
    assert_eq!(
        steps(&plan),
        vec![
            (
                "SHALLOW CLONE to t__delta_operator_clone_v{version}".to_string(),
                RiskClass::Meta
            ),
            ("REPLACE TABLE (from itself)".into(), RiskClass::Rewrite)
        ]
    );
    let report = lake.apply(&v2, false).await.unwrap();
    assert!(
        report.steps[0]
            .detail
            .as_deref()
            .unwrap()
            .contains("referencing"),
        "{:?}",
        report.steps[0]
    );
    let clone_dir = lake.backend.clone_path(&tref("t"), &name);
    // no data copied: only the log
    assert!(
        walk(&clone_dir)
            .iter()
            .all(|p| p.to_string_lossy().contains("_delta_log")),
        "{:?}",
        walk(&clone_dir)
    );
    let clone = deltalake::open_table(url::Url::from_directory_path(&clone_dir).unwrap())
        .await
        .unwrap();
    let original_files: Vec<String> = {
        let mut t = deltalake::open_table(lake.url(&tref("t"))).await.unwrap();
        t.load_version(v_before).await.unwrap();
        t.snapshot()
            .unwrap()
            .log_data()
            .iter()
            .map(|f| f.size().to_string())
            .collect()
    };
    let clone_files: Vec<String> = clone
        .snapshot()
        .unwrap()
        .log_data()
        .iter()
        .map(|f| f.size().to_string())
        .collect();
    assert_eq!(
        clone_files, original_files,
        "the clone references the files of the version before"
    );
    // it reads back as the table was
    let ctx = deltalake::datafusion::prelude::SessionContext::new();
    clone.update_datafusion_session(&ctx.state()).unwrap();
    ctx.register_table("t", clone.table_provider().await.unwrap())
        .unwrap();
    let b = ctx.sql(KEPT_BEFORE).await.unwrap().collect().await.unwrap();
    let text = deltalake::arrow::util::pretty::pretty_format_batches(&b)
        .unwrap()
        .to_string();
    let rows: Vec<String> = text
        .lines()
        .filter(|l| l.starts_with('|'))
        .skip(1)
        .map(|l| {
            l.split('|')
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .collect::<Vec<_>>()
                .join(",")
        })
        .map(|r| {
            Sha256::digest(r.as_bytes())
                .iter()
                .take(8)
                .map(|b| format!("{b:02x}"))
                .collect()
        })
        .collect();
    assert_eq!(
        rows, sums,
        "the clone reads as the table did before the rewrite"
    );
    // a rerun takes no second clone and plans clean
    assert!(!lake.plan(&v2).await.has_changes());
}

// ---------------------------------------------------------------------------
// Killing the binary mid-rewrite (failpoints, compiled into debug builds only)

const BIN: &str = env!("CARGO_BIN_EXE_delta-operator");
const ROWS: i64 = 20_000;

fn write_spec(dir: &Path, body: &str) -> std::path::PathBuf {
    let p = dir.join("spec.yaml");
    std::fs::write(&p, format!("{SCHEMA}{}", table("t", body))).unwrap();
    p
}

fn run(dir: &Path, spec: &Path, failpoint: Option<&str>) -> std::process::Output {
    let mut c = Command::new(BIN);
    c.current_dir(dir)
        .args(["apply", "-f", spec.to_str().unwrap()])
        .env_remove("DELTA_OPERATOR_CONFIG");
    match failpoint {
        Some(f) => c.env("DELTA_OPERATOR_FAILPOINT", f),
        None => c.env_remove("DELTA_OPERATOR_FAILPOINT"),
    };
    c.output().expect("run the binary")
}

/// A lake at `<dir>/lake` (where the binary puts it without a config) with
/// ROWS rows whose `num` is a string holding an integer.
async fn crash_setup() -> (Lake, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let backend = LakeBackend::open(dir.path().join("lake").to_str().unwrap()).unwrap();
    let lake = Lake { dir, backend };
    let spec = write_spec(
        lake.dir.path(),
        "  columns:\n    - {name: id, type: bigint}\n    - {name: num, type: string}\n    - {name: note, type: string}",
    );
    let out = run(lake.dir.path(), &spec, None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let n: Vec<String> = (1..=ROWS).map(|i| (i * 7).to_string()).collect();
    let notes: Vec<String> = (1..=ROWS).map(|i| format!("row {i}")).collect();
    lake.append(
        &tref("t"),
        vec![
            ("id", longs(1..=ROWS)),
            ("num", Arc::new(StringArray::from(n)) as ArrayRef),
            ("note", Arc::new(StringArray::from(notes)) as ArrayRef),
        ],
    )
    .await;
    let sums = row_sums(
        &lake,
        "SELECT id, CAST(num AS BIGINT), note FROM t ORDER BY id",
    )
    .await;
    (lake, sums)
}

/// Kills the binary at `failpoint` during a staged string → int rewrite, then
/// reruns it: the table converges with every row and value.
async fn killed_then_rerun(failpoint: &str) -> Lake {
    let (lake, sums) = crash_setup().await;
    let v_before = lake.version(&tref("t")).await;
    let files_before = files(&lake.backend.table_path(&tref("t")).join("_delta_log"));
    let spec = write_spec(
        lake.dir.path(),
        "  columns:\n    - {name: id, type: bigint}\n    - {name: num, type: int}\n    - {name: note, type: string}",
    );
    let out = run(lake.dir.path(), &spec, Some(failpoint));
    assert!(!out.status.success(), "the process must die at {failpoint}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(&format!("failpoint {failpoint}")),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // killed before the replace committed: the original is as it was
    assert_eq!(
        lake.version(&tref("t")).await,
        v_before,
        "{failpoint}: no commit to the table"
    );
    assert_eq!(
        files(&lake.backend.table_path(&tref("t")).join("_delta_log")),
        files_before,
        "{failpoint}: the log is untouched"
    );
    assert_eq!(lake.count(&tref("t")).await, ROWS);
    // rerun: converges
    let out = run(lake.dir.path(), &spec, None);
    assert!(
        out.status.success(),
        "rerun: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        lake.read(&tref("t"))
            .await
            .unwrap()
            .column("num")
            .unwrap()
            .data_type,
        DataType::Int
    );
    assert_eq!(lake.count(&tref("t")).await, ROWS, "no row lost");
    assert_eq!(
        row_sums(
            &lake,
            "SELECT id, CAST(num AS BIGINT), note FROM t ORDER BY id"
        )
        .await,
        sums,
        "every row's checksum matches"
    );
    assert!(
        !lake.backend.staging_path(&tref("t")).exists(),
        "the staging copy is dropped"
    );
    let out = Command::new(BIN)
        .current_dir(lake.dir.path())
        .args(["plan", "-f", spec.to_str().unwrap()])
        .env_remove("DELTA_OPERATOR_FAILPOINT")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "plans clean: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    lake
}

#[tokio::test]
async fn killed_between_stage_and_replace_a_rerun_converges_without_losing_a_row() {
    killed_then_rerun("after-stage").await;
}

#[tokio::test]
async fn killed_during_the_replace_a_rerun_converges_without_losing_a_row() {
    killed_then_rerun("during-replace").await;
}

#[tokio::test]
async fn killed_after_a_write_once_replace_committed_a_rerun_is_a_no_op() {
    let (lake, sums) = crash_setup().await;
    let v_before = lake.version(&tref("t")).await;
    // a rename: write-once
    let spec = write_spec(
        lake.dir.path(),
        "  columns:\n    - {name: id, type: bigint}\n    - {name: num, type: string}\n    - {name: remark, type: string, renamedFrom: note}",
    );
    let out = run(lake.dir.path(), &spec, Some("after-replace"));
    assert!(!out.status.success());
    assert_eq!(
        lake.version(&tref("t")).await,
        v_before + 1,
        "the replace committed before the kill"
    );
    let out = run(lake.dir.path(), &spec, None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("No changes"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(
        row_sums(
            &lake,
            "SELECT id, CAST(num AS BIGINT), remark FROM t ORDER BY id"
        )
        .await,
        sums
    );
    // the write-once kill during the replace leaves the table as it was
    let spec = write_spec(
        lake.dir.path(),
        "  columns:\n    - {name: id, type: bigint}\n    - {name: num, type: string}\n    - {name: note2, type: string, renamedFrom: remark}",
    );
    let v = lake.version(&tref("t")).await;
    let out = run(lake.dir.path(), &spec, Some("during-replace"));
    assert!(!out.status.success());
    assert_eq!(lake.version(&tref("t")).await, v);
    assert!(run(lake.dir.path(), &spec, None).status.success());
    assert_eq!(
        row_sums(
            &lake,
            "SELECT id, CAST(num AS BIGINT), note2 FROM t ORDER BY id"
        )
        .await,
        sums
    );
}

#[tokio::test]
async fn the_plan_phases_match_what_the_backend_runs() {
    let lake = Lake::new();
    seeded(&lake, 10).await;
    let v2 = manifests(&format!(
        "{SCHEMA}{}",
        table(
            "t",
            &V1.replace("{name: qty, type: int}", "{name: qty, type: smallint}")
        )
    ));
    let plan = lake.plan(&v2).await;
    let phases: Vec<RewritePhase> = plan.tables[0]
        .steps()
        .iter()
        .filter_map(|s| match &s.action {
            Action::Rewrite { phase, .. } => Some(*phase),
            _ => None,
        })
        .collect();
    assert_eq!(
        phases,
        vec![
            RewritePhase::Stage,
            RewritePhase::Replace,
            RewritePhase::DropStaging
        ],
        "int → smallint may lose values"
    );
    lake.apply(&v2, false).await.unwrap();
    assert_eq!(
        lake.read(&tref("t"))
            .await
            .unwrap()
            .column("qty")
            .unwrap()
            .data_type,
        DataType::Short
    );
}
