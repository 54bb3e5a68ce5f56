//! The lake backend on real Delta tables in temp dirs: every in-place and
//! rewrite strategy, with rows counted before and after each rewrite.

mod support;

use std::sync::Arc;

use delta_operator::apply::{ApplyError, StepStatus, run_plan};
use delta_operator::model::{DataType, OWNER_PROPERTY};
use delta_operator::plan::steps::RewritePhase;
use delta_operator::plan::{Action, Outcome, RiskClass, TableAction};
use deltalake::arrow::array::{ArrayRef, Int32Array, Int64Array, StringArray};
use support::*;

fn ints(v: &[Option<i32>]) -> ArrayRef {
    Arc::new(Int32Array::from(v.to_vec()))
}
fn longs(v: &[i64]) -> ArrayRef {
    Arc::new(Int64Array::from(v.to_vec()))
}
fn strs(v: &[Option<&str>]) -> ArrayRef {
    Arc::new(StringArray::from(v.to_vec()))
}

const ORDERS: &str = "  columns:
    - {name: id, type: bigint, nullable: false, comment: the key}
    - {name: amount, type: int}
    - {name: status, type: string}";

async fn orders_with_rows(lake: &Lake) -> delta_operator::engine::Inputs {
    let inputs = manifests(&format!("{SCHEMA}{}", table("orders", ORDERS)));
    lake.apply(&inputs, false).await.unwrap();
    lake.append(
        &tref("orders"),
        vec![
            ("id", longs(&[1, 2, 3, 4, 5])),
            (
                "amount",
                ints(&[Some(10), Some(20), None, Some(40), Some(50)]),
            ),
            (
                "status",
                strs(&[Some("a"), Some("b"), Some("c"), None, Some("e")]),
            ),
        ],
    )
    .await;
    inputs
}

fn steps(plan: &delta_operator::plan::Plan) -> Vec<(String, RiskClass)> {
    plan.tables
        .iter()
        .flat_map(|t| t.steps().iter().map(|s| (s.action.title(), s.class)))
        .collect()
}

#[tokio::test]
async fn create_reads_back_exactly_and_plans_clean() {
    let lake = Lake::new();
    let inputs = manifests(&format!(
        "{SCHEMA}{}",
        table(
            "events",
            "  comment: every event
  columns:
    - {name: id, type: bigint, nullable: false, comment: key}
    - {name: payload, type: 'struct<kind:string not null,tags:array<string>,attrs:map<string,bigint>>'}
    - {name: price, type: 'decimal(18,2)'}
    - {name: code, type: varchar(8)}
    - {name: at, type: timestamp_ntz}
    - {name: day, type: date}
  partitionedBy: [day]
  properties: {delta.appendOnly: 'false', team.owner: data-platform}
  constraints:
    - check: {name: id_positive, expression: id > 0}"
        )
    ));
    let plan = lake.plan(&inputs).await;
    assert_eq!(plan.summary.add, 1);
    lake.apply(&inputs, false).await.unwrap();
    let live = lake.read(&tref("events")).await.expect("created");
    assert_eq!(live.comment.as_deref(), Some("every event"));
    assert_eq!(live.partitioned_by, vec!["day"]);
    assert_eq!(
        live.properties.get("team.owner").map(String::as_str),
        Some("data-platform")
    );
    assert_eq!(
        live.properties.get(OWNER_PROPERTY).map(String::as_str),
        Some("default/events")
    );
    assert_eq!(live.checks.len(), 1);
    assert_eq!(
        live.column("code").unwrap().data_type,
        DataType::Varchar { length: 8 }
    );
    assert_eq!(
        live.column("payload").unwrap().data_type.to_string(),
        "struct<kind:string not null,tags:array<string>,attrs:map<string,bigint>>"
    );
    assert_eq!(live.column("id").unwrap().comment.as_deref(), Some("key"));
    let again = lake.plan(&inputs).await;
    assert!(
        !again.has_changes(),
        "a second plan must be empty:\n{}",
        delta_operator::plan::render::text::render(&again)
    );
    // a second apply is a no-op
    let report = lake.apply(&inputs, false).await.unwrap();
    assert!(report.steps.is_empty());
}

#[tokio::test]
async fn adds_top_level_and_nested_columns_in_place() {
    let lake = Lake::new();
    let v1 = manifests(&format!(
        "{SCHEMA}{}",
        table(
            "people",
            "  columns:\n    - {name: id, type: bigint}\n    - {name: address, type: 'struct<street:string>'}\n    - {name: items, type: 'array<struct<sku:string>>'}"
        )
    ));
    lake.apply(&v1, false).await.unwrap();
    lake.append(&tref("people"), vec![("id", longs(&[1, 2]))])
        .await;
    let v2 = manifests(&format!(
        "{SCHEMA}{}",
        table(
            "people",
            "  columns:\n    - {name: id, type: bigint}\n    - {name: address, type: 'struct<street:string,city:string>'}\n    - {name: items, type: 'array<struct<sku:string,unit_price:double>>'}\n    - {name: note, type: string, comment: free text}"
        )
    ));
    let plan = lake.plan(&v2).await;
    // a field inside an array's structs is added in place too (issue 28: it was a rewrite)
    assert_eq!(
        steps(&plan),
        vec![
            ("ADD COLUMN address.city".into(), RiskClass::Meta),
            (
                "ADD COLUMN items.element.unit_price".into(),
                RiskClass::Meta
            ),
            ("ADD COLUMN note".into(), RiskClass::Meta)
        ]
    );
    let before = lake.version(&tref("people")).await;
    lake.apply(&v2, false).await.unwrap();
    assert_eq!(lake.count(&tref("people")).await, 2);
    let live = lake.read(&tref("people")).await.unwrap();
    assert_eq!(
        live.column("address").unwrap().data_type.to_string(),
        "struct<street:string,city:string>"
    );
    assert_eq!(
        live.column("items").unwrap().data_type.to_string(),
        "array<struct<sku:string,unit_price:double>>"
    );
    assert_eq!(
        live.column("note").unwrap().comment.as_deref(),
        Some("free text")
    );
    assert_eq!(
        lake.version(&tref("people")).await,
        before + 3,
        "three metadata commits, no rewrite"
    );
    assert!(!lake.plan(&v2).await.has_changes());
}

#[tokio::test]
async fn comments_properties_and_checks_in_place_leaving_unmanaged_keys() {
    let lake = Lake::new();
    let v1 = manifests(&format!(
        "{SCHEMA}{}",
        table(
            "t",
            "  comment: old\n  columns:\n    - {name: id, type: bigint, comment: one}\n    - {name: num, type: int, nullable: false}\n  properties: {a.b: '1', gone.key: x}\n  constraints:\n    - check: {name: old_check, expression: num > -100}"
        )
    ));
    lake.apply(&v1, false).await.unwrap();
    // someone else sets a property the spec never names
    let t = deltalake::open_table(lake.url(&tref("t"))).await.unwrap();
    let t = t
        .set_tbl_properties()
        .with_properties([("other.team".to_string(), "keep-me".to_string())].into())
        .with_raise_if_not_exists(false)
        .await
        .unwrap();
    // and a CHECK of its own: the operator did not make it, so it is never dropped
    t.add_constraint()
        .with_constraint("their_check", "num > -1000")
        .await
        .unwrap();
    lake.append(
        &tref("t"),
        vec![("id", longs(&[1])), ("num", ints(&[Some(5)]))],
    )
    .await;
    let v2 = manifests(&format!(
        "{SCHEMA}{}",
        table(
            "t",
            "  comment: new\n  columns:\n    - {name: id, type: bigint, comment: two}\n    - {name: num, type: int, nullable: true}\n  properties: {a.b: '2', gone.key: null}\n  constraints:\n    - check: {name: n_small, expression: num < 1000}"
        )
    ));
    let plan = lake.plan(&v2).await;
    let titles: Vec<String> = steps(&plan)
        .into_iter()
        .map(|(t, c)| {
            assert_eq!(c, RiskClass::Meta, "{t} should be metadata only");
            t
        })
        .collect();
    for expected in [
        "COMMENT ON TABLE",
        "SET TBLPROPERTIES (a.b)",
        "UNSET TBLPROPERTIES (gone.key)",
        "DROP NOT NULL num",
        "COMMENT ON COLUMN id",
        "ADD CONSTRAINT n_small CHECK",
        "DROP CONSTRAINT old_check",
    ] {
        assert!(
            titles.iter().any(|t| t == expected),
            "missing {expected} in {titles:?}"
        );
    }
    assert!(
        plan.tables[0]
            .notes
            .iter()
            .any(|n| n.contains("other.team")),
        "unmanaged keys are reported: {:?}",
        plan.tables[0].notes
    );
    assert!(
        plan.tables[0]
            .notes
            .iter()
            .any(|n| n.contains("CHECK their_check") && n.contains("left untouched")),
        "a CHECK another tool made is reported and left alone: {:?}",
        plan.tables[0].notes
    );
    assert!(
        !titles.iter().any(|t| t.contains("their_check")),
        "{titles:?}"
    );
    lake.apply(&v2, false).await.unwrap();
    let live = lake.read(&tref("t")).await.unwrap();
    assert_eq!(live.comment.as_deref(), Some("new"));
    assert_eq!(live.column("id").unwrap().comment.as_deref(), Some("two"));
    assert!(live.column("num").unwrap().nullable);
    assert_eq!(live.properties.get("a.b").map(String::as_str), Some("2"));
    assert!(!live.properties.contains_key("gone.key"));
    assert_eq!(
        live.properties.get("other.team").map(String::as_str),
        Some("keep-me"),
        "unmanaged property left alone"
    );
    assert_eq!(
        live.checks
            .iter()
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>(),
        vec!["n_small", "their_check"]
    );
    assert_eq!(lake.count(&tref("t")).await, 1);
    assert!(!lake.plan(&v2).await.has_changes());
}

// delta-rs stores a CHECK as DataFusion prints it, not as declared; the plan
// compares parse trees (`engine::observe`), so it converges instead of
// dropping and adding the CHECK on every run.
#[tokio::test]
async fn a_check_stored_in_delta_rs_spelling_plans_clean() {
    let lake = Lake::new();
    let m = manifests(&format!(
        "{SCHEMA}{}",
        table(
            "t",
            "  columns:\n    - {name: id, type: bigint}\n    - {name: s, type: string}\n  constraints:\n    - check: {name: c, expression: \"(id > 0) OR (id < -5)\"}\n    - check: {name: d, expression: \"upper(s) IN ('A','B') or s is null\"}"
        )
    ));
    lake.apply(&m, false).await.unwrap();
    let live = lake.read(&tref("t")).await.unwrap();
    let c = live.checks.iter().find(|c| c.name == "c").unwrap();
    assert_eq!(c.expression, "id > 0 OR id < -5", "delta-rs's own spelling");
    let plan = lake.plan(&m).await;
    assert!(!plan.has_changes(), "{:?}", steps(&plan));
}

#[tokio::test]
async fn a_check_that_rows_violate_fails_at_its_step() {
    let lake = Lake::new();
    let inputs = orders_with_rows(&lake).await;
    let _ = inputs;
    let v2 = manifests(&format!(
        "{SCHEMA}{}",
        table(
            "orders",
            &format!(
                "{ORDERS}\n  constraints:\n    - check: {{name: big, expression: amount > 1000}}"
            )
        )
    ));
    let report = lake.apply_may_fail(&v2, false).await.unwrap();
    assert!(
        matches!(report.steps[0].status, StepStatus::Failed { .. }),
        "{:?}",
        report.steps
    );
    assert!(lake.read(&tref("orders")).await.unwrap().checks.is_empty());
}

#[tokio::test]
async fn claims_a_table_made_outside_and_refuses_one_owned_by_another() {
    let lake = Lake::new();
    let inputs = orders_with_rows(&lake).await;
    // remove the marker: now it looks like a table someone else made
    let t = deltalake::open_table(lake.url(&tref("orders")))
        .await
        .unwrap();
    let _ = t;
    lake.backend_unset_owner(&tref("orders")).await;
    let plan = lake.plan(&inputs).await;
    assert_eq!(
        steps(&plan),
        vec![("CLAIM ownership".into(), RiskClass::Meta)]
    );
    lake.apply(&inputs, false).await.unwrap();
    assert!(!lake.plan(&inputs).await.has_changes());

    // another resource's marker: a law refuses the whole table
    let other = manifests(
        &format!("{SCHEMA}{}", table("orders", ORDERS))
            .replace(
                "metadata: {name: orders}",
                "metadata: {name: orders, namespace: team-b}",
            )
            .replace(
                "metadata: {name: sales}",
                "metadata: {name: sales, namespace: team-b}",
            ),
    );
    let plan = lake.plan(&other).await;
    match &plan.tables[0].outcome {
        Outcome::Rejected { failures } => assert_eq!(failures[0].rule, "OwnedByAnotherResource"),
        o => panic!("expected a refusal, got {o:?}"),
    }
    assert!(matches!(
        lake.apply_may_fail(&other, false).await,
        Err(ApplyError::Rejected)
    ));
}

trait UnsetOwner {
    async fn backend_unset_owner(&self, t: &delta_operator::model::TableRef);
}
impl UnsetOwner for Lake {
    async fn backend_unset_owner(&self, t: &delta_operator::model::TableRef) {
        use deltalake::kernel::transaction::{CommitBuilder, CommitProperties};
        use deltalake::kernel::{Action, MetadataExt};
        let table = deltalake::open_table(self.url(t)).await.unwrap();
        let snap = table.snapshot().unwrap();
        let md = snap
            .metadata()
            .clone()
            .remove_config_key(OWNER_PROPERTY)
            .unwrap();
        CommitBuilder::from(CommitProperties::default())
            .with_actions(vec![Action::Metadata(md)])
            .build(
                Some(snap),
                table.log_store(),
                deltalake::protocol::DeltaOperation::SetTableProperties {
                    properties: Default::default(),
                },
            )
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn lossless_type_change_is_written_once_and_keeps_every_row() {
    let lake = Lake::new();
    orders_with_rows(&lake).await;
    let before_rows = lake
        .query(
            &tref("orders"),
            "SELECT id, amount, status FROM t ORDER BY id",
        )
        .await;
    let v_before = lake.version(&tref("orders")).await;
    let v2 = manifests(&format!(
        "{SCHEMA}{}",
        table(
            "orders",
            &ORDERS.replace("{name: amount, type: int}", "{name: amount, type: bigint}")
        )
    ));
    let plan = lake.plan(&v2).await;
    // int → bigint cannot lose a value: written once, no staging copy
    assert_eq!(
        steps(&plan),
        vec![("REPLACE TABLE (from itself)".into(), RiskClass::Rewrite)]
    );
    let undo = plan.tables[0].steps()[0].undo.clone().unwrap();
    assert_eq!(
        undo,
        format!("delta-operator restore main.sales.orders --version {v_before}")
    );
    let report = lake.apply(&v2, false).await.unwrap();
    assert_eq!(
        report.restore_points().len(),
        1,
        "the replace records one: {:?}",
        report.restore_points()
    );
    assert_eq!(
        report.steps[0].restore_point,
        Some(v_before),
        "the restore point is the version before the rewrite"
    );
    let live = lake.read(&tref("orders")).await.unwrap();
    assert_eq!(live.column("amount").unwrap().data_type, DataType::Long);
    assert_eq!(
        live.column("id").unwrap().comment.as_deref(),
        Some("the key"),
        "comments survive the rewrite"
    );
    assert_eq!(
        lake.query(
            &tref("orders"),
            "SELECT id, amount, status FROM t ORDER BY id"
        )
        .await,
        before_rows,
        "every row and value survives"
    );
    assert!(
        !lake.backend.staging_path(&tref("orders")).exists(),
        "the staging copy is dropped"
    );
    assert!(!lake.plan(&v2).await.has_changes());
    // the history is kept: the restore point still reads the old schema and rows
    let mut old = deltalake::open_table(lake.url(&tref("orders")))
        .await
        .unwrap();
    old.load_version(v_before).await.unwrap();
    assert!(old.snapshot().unwrap().schema().field("amount").is_some());
}

#[tokio::test]
async fn a_lossy_conversion_stops_before_the_original_is_touched() {
    let lake = Lake::new();
    orders_with_rows(&lake).await; // status holds 'a', 'b', ...: not integers
    let files_before = files(&lake.backend.table_path(&tref("orders")));
    let v_before = lake.version(&tref("orders")).await;
    let v2 = manifests(&format!(
        "{SCHEMA}{}",
        table(
            "orders",
            &ORDERS.replace("{name: status, type: string}", "{name: status, type: int}")
        )
    ));
    let report = lake.apply_may_fail(&v2, false).await.unwrap();
    let stage = &report.steps[0];
    assert_eq!(stage.title, "STAGE rewritten data");
    match &stage.status {
        StepStatus::Failed { error } => assert!(
            error.contains("status") && error.contains("untouched"),
            "{error}"
        ),
        s => panic!("the stage must fail, got {s:?}"),
    }
    assert_eq!(
        report.steps[1].status,
        StepStatus::NotRun,
        "nothing after a failed stage runs"
    );
    assert_eq!(
        lake.version(&tref("orders")).await,
        v_before,
        "same Delta version"
    );
    assert_eq!(
        files(&lake.backend.table_path(&tref("orders"))),
        files_before,
        "same files, byte for byte"
    );
}

fn files(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
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
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
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

#[tokio::test]
async fn rename_is_a_write_once_rewrite_keeping_values() {
    let lake = Lake::new();
    orders_with_rows(&lake).await;
    let before = lake
        .query(&tref("orders"), "SELECT id, status FROM t ORDER BY id")
        .await;
    let v2 = manifests(&format!(
        "{SCHEMA}{}",
        table(
            "orders",
            &ORDERS.replace(
                "{name: status, type: string}",
                "{name: state, type: string, renamedFrom: status}"
            )
        )
    ));
    let plan = lake.plan(&v2).await;
    assert_eq!(
        steps(&plan),
        vec![("REPLACE TABLE (from itself)".into(), RiskClass::Rewrite)]
    );
    lake.apply(&v2, false).await.unwrap();
    assert_eq!(
        lake.query(&tref("orders"), "SELECT id, state FROM t ORDER BY id")
            .await,
        before
    );
    assert!(!lake.plan(&v2).await.has_changes());
}

#[tokio::test]
async fn dropping_a_column_needs_approval_of_that_exact_plan() {
    let lake = Lake::new();
    orders_with_rows(&lake).await;
    let v_before = lake.version(&tref("orders")).await;
    let v2 = manifests(&format!(
        "{SCHEMA}{}",
        table(
            "orders",
            "  columns:\n    - {name: id, type: bigint, nullable: false, comment: the key}\n    - {name: amount, type: int}"
        )
    ));
    let plan = lake.plan(&v2).await;
    assert_eq!(
        steps(&plan),
        vec![("REPLACE TABLE (from itself)".into(), RiskClass::Destructive)]
    );
    assert!(plan.tables[0].steps()[0].warnings[0].contains("status"));
    // no approval: refused, nothing changed
    assert!(matches!(
        lake.apply_may_fail(&v2, false).await,
        Err(ApplyError::NeedsApproval { .. })
    ));
    // an approval for another plan approves nothing
    let wrong = delta_operator::apply::apply(
        &lake.backend,
        &v2,
        None,
        Some("0000000000000000"),
        &support::options(),
    )
    .await;
    assert!(matches!(wrong, Err(ApplyError::WrongApproval { .. })));
    assert_eq!(lake.version(&tref("orders")).await, v_before);
    assert!(
        lake.read(&tref("orders"))
            .await
            .unwrap()
            .column("status")
            .is_some()
    );
    // the right id runs it
    let report = lake.apply(&v2, true).await.unwrap();
    assert_eq!(report.steps[0].restore_point, Some(v_before));
    assert!(
        lake.read(&tref("orders"))
            .await
            .unwrap()
            .column("status")
            .is_none()
    );
    assert_eq!(lake.count(&tref("orders")).await, 5);
}

#[tokio::test]
async fn set_not_null_proves_there_are_no_nulls_first() {
    let lake = Lake::new();
    orders_with_rows(&lake).await; // amount has one NULL
    let v_before = lake.version(&tref("orders")).await;
    let strict_amount = manifests(&format!(
        "{SCHEMA}{}",
        table(
            "orders",
            &ORDERS.replace(
                "{name: amount, type: int}",
                "{name: amount, type: int, nullable: false}"
            )
        )
    ));
    let report = lake.apply_may_fail(&strict_amount, false).await.unwrap();
    assert!(
        matches!(&report.steps[0].status, StepStatus::Failed { error } if error.contains("NULL")),
        "{:?}",
        report.steps[0]
    );
    assert_eq!(
        lake.version(&tref("orders")).await,
        v_before,
        "the table is untouched"
    );
    // without NULLs it goes through as one metadata commit (issue 28: it was a rewrite)
    let strict_id = manifests(&format!("{SCHEMA}{}", table("orders", ORDERS)));
    let _ = strict_id;
    let lake2 = Lake::new();
    orders_with_rows(&lake2).await;
    let no_nulls_col = manifests(&format!(
        "{SCHEMA}{}",
        table(
            "orders",
            "  columns:\n    - {name: id, type: bigint, nullable: false, comment: the key}\n    - {name: amount, type: int}\n    - {name: status, type: string}"
        )
    ));
    let _ = no_nulls_col;
    lake2
        .append(
            &tref("orders"),
            vec![
                ("id", longs(&[6])),
                ("amount", ints(&[Some(1)])),
                ("status", strs(&[Some("f")])),
            ],
        )
        .await;
    // id has no NULLs: make it nullable, then NOT NULL again
    let relaxed = manifests(&format!(
        "{SCHEMA}{}",
        table("orders", &ORDERS.replace("nullable: false, ", ""))
    ));
    lake2.apply(&relaxed, false).await.unwrap();
    let strict = manifests(&format!("{SCHEMA}{}", table("orders", ORDERS)));
    let plan = lake2.plan(&strict).await;
    assert_eq!(
        steps(&plan),
        vec![("SET NOT NULL id".into(), RiskClass::Meta)]
    );
    let before = lake2.version(&tref("orders")).await;
    let files_before = files(&lake2.backend.table_path(&tref("orders")));
    lake2.apply(&strict, false).await.unwrap();
    assert_eq!(
        lake2.version(&tref("orders")).await,
        before + 1,
        "one commit"
    );
    let data = |f: &[(String, Vec<u8>)]| -> Vec<String> {
        f.iter()
            .map(|(n, _)| n.clone())
            .filter(|n| n.ends_with(".parquet"))
            .collect()
    };
    assert_eq!(
        data(&files(&lake2.backend.table_path(&tref("orders")))),
        data(&files_before),
        "no data file written"
    );
    assert!(
        !lake2
            .read(&tref("orders"))
            .await
            .unwrap()
            .column("id")
            .unwrap()
            .nullable
    );
    assert_eq!(lake2.count(&tref("orders")).await, 6);
}

#[tokio::test]
async fn partitioning_change_is_a_rewrite_keeping_rows() {
    let lake = Lake::new();
    orders_with_rows(&lake).await;
    let v2 = manifests(&format!(
        "{SCHEMA}{}",
        table("orders", &format!("{ORDERS}\n  partitionedBy: [status]"))
    ));
    let plan = lake.plan(&v2).await;
    assert_eq!(
        steps(&plan),
        vec![("REPLACE TABLE (from itself)".into(), RiskClass::Rewrite)]
    );
    lake.apply(&v2, false).await.unwrap();
    assert_eq!(
        lake.read(&tref("orders")).await.unwrap().partitioned_by,
        vec!["status"]
    );
    assert_eq!(lake.count(&tref("orders")).await, 5);
    assert!(!lake.plan(&v2).await.has_changes());
}

#[tokio::test]
async fn a_rerun_of_applied_steps_skips_them_and_a_moved_table_makes_the_plan_stale() {
    let lake = Lake::new();
    let inputs = orders_with_rows(&lake).await;
    let v2 = manifests(&format!(
        "{SCHEMA}{}",
        table("orders", &format!("{ORDERS}\n  comment: orders"))
    ));
    let plan = lake.plan(&v2).await;
    lake.apply(&v2, false).await.unwrap();
    // running the old plan again: every step already holds
    let report = run_plan(&lake.backend, &plan, &support::options()).await;
    assert!(!report.steps.is_empty());
    assert!(
        report.steps.iter().all(|s| s.status == StepStatus::Skipped),
        "{:?}",
        report.steps
    );
    // rows appended by another writer do not change what the plan does: the same plan
    let id = lake.plan(&inputs).await.id;
    lake.append(&tref("orders"), vec![("id", longs(&[9]))])
        .await;
    assert_eq!(
        lake.plan(&inputs).await.id,
        id,
        "appends are not a new plan"
    );
    // a plan made before someone else changed the table is refused
    let v3 = manifests(&format!(
        "{SCHEMA}{}",
        table(
            "orders",
            &format!(
                "{ORDERS}
  comment: changed outside"
            )
        )
    ));
    lake.apply(&v3, false).await.unwrap();
    let r =
        delta_operator::apply::apply(&lake.backend, &inputs, Some(&id), None, &support::options())
            .await;
    assert!(matches!(r, Err(ApplyError::Stale { .. })), "{r:?}");
}

#[tokio::test]
async fn orphans_are_kept_in_additive_schemas_and_dropped_after_approval_in_strict_ones() {
    let lake = Lake::new();
    let both = manifests(&format!(
        "{SCHEMA}{}{}",
        table("orders", ORDERS),
        table("old", "  columns:\n    - {name: id, type: bigint}")
    ));
    lake.apply(&both, false).await.unwrap();
    let only_orders = manifests(&format!("{SCHEMA}{}", table("orders", ORDERS)));
    let plan = lake.plan(&only_orders).await;
    let old = plan
        .tables
        .iter()
        .find(|t| t.table == tref("old"))
        .expect("the orphan is listed");
    assert_eq!(old.action, TableAction::Keep);
    assert!(old.steps().is_empty());
    assert!(!plan.has_changes());

    let strict = manifests(&format!("{STRICT_SCHEMA}{}", table("orders", ORDERS)));
    let plan = lake.plan(&strict).await;
    let old = plan.tables.iter().find(|t| t.table == tref("old")).unwrap();
    assert_eq!(old.action, TableAction::Destroy);
    assert!(matches!(old.steps()[0].action, Action::DropTable));
    assert!(matches!(
        lake.apply_may_fail(&strict, false).await,
        Err(ApplyError::NeedsApproval { .. })
    ));
    assert!(lake.read(&tref("old")).await.is_some());
    lake.apply(&strict, true).await.unwrap();
    assert!(lake.read(&tref("old")).await.is_none());
    let trash = lake.backend.root().join(".trash/main/sales");
    assert_eq!(
        std::fs::read_dir(trash).unwrap().count(),
        1,
        "the dropped table is kept in the trash"
    );
    // tables nobody manages are never orphans
    assert!(!lake.plan(&strict).await.has_changes());
}

#[tokio::test]
async fn what_the_lake_cannot_do_is_a_named_rule_failure_not_a_skip() {
    let lake = Lake::new();
    let inputs = manifests(&format!(
        "{SCHEMA}{}",
        table(
            "t",
            "  tags: {domain: sales}\n  grants: [{principal: analysts, privileges: [SELECT]}]\n  clusterBy: [id]\n  columns:\n    - {name: id, type: bigint, nullable: false, identity: {}}"
        )
    ));
    let plan = lake.plan(&inputs).await;
    let Outcome::Rejected { failures } = &plan.tables[0].outcome else {
        panic!("must be refused")
    };
    let subjects: Vec<&str> = failures.iter().map(|f| f.subject.as_str()).collect();
    assert!(failures.iter().all(|f| f.rule == "NotSupportedByBackend"));
    for s in [
        "spec.tags",
        "spec.grants",
        "spec.clusterBy",
        "column id.identity",
    ] {
        assert!(subjects.contains(&s), "{s} missing from {subjects:?}");
    }
    assert!(matches!(
        lake.apply_may_fail(&inputs, false).await,
        Err(ApplyError::Rejected)
    ));
    assert!(lake.read(&tref("t")).await.is_none(), "nothing was created");
}

#[tokio::test]
async fn write_once_replace_rewrites_with_the_rewrite_phase_recorded() {
    // the plan's rewrite phases are what the backend runs
    let lake = Lake::new();
    orders_with_rows(&lake).await;
    let v2 = manifests(&format!(
        "{SCHEMA}{}",
        table(
            "orders",
            &ORDERS.replace("{name: amount, type: int}", "{name: amount, type: string}")
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
    // int → string is lossless: one write-once replace
    assert_eq!(phases, vec![RewritePhase::WriteOnce]);
    lake.apply(&v2, false).await.unwrap();
    assert_eq!(
        lake.query(&tref("orders"), "SELECT amount FROM t WHERE id = 2")
            .await,
        vec!["20"]
    );
    // string → int may lose values: staged, checked, replaced, staging dropped
    let v3 = manifests(&format!("{SCHEMA}{}", table("orders", ORDERS)));
    let plan = lake.plan(&v3).await;
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
        ]
    );
    let report = lake.apply(&v3, false).await.unwrap();
    assert_eq!(
        report.restore_points().len(),
        2,
        "stage and replace each record one: {:?}",
        report.restore_points()
    );
    assert_eq!(
        lake.query(&tref("orders"), "SELECT amount FROM t WHERE id = 2")
            .await,
        vec!["20"]
    );
    assert_eq!(
        lake.read(&tref("orders"))
            .await
            .unwrap()
            .column("amount")
            .unwrap()
            .data_type,
        DataType::Int
    );
    assert!(
        !lake.backend.staging_path(&tref("orders")).exists(),
        "the staging copy is dropped"
    );
    let staging = lake.backend.root().join(".staging");
    assert!(
        !staging.exists(),
        "no empty .staging/<catalog>/<schema> folders are left: {:?}",
        walkdir(&staging)
    );
}

/// Every path under a folder (for messages).
fn walkdir(p: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(p).into_iter().flatten().flatten() {
        out.push(e.path());
        out.extend(walkdir(&e.path()));
    }
    out
}

#[tokio::test]
async fn a_table_another_apply_holds_is_left_alone_and_the_others_go_on() {
    use delta_operator::backend::Backend;
    use delta_operator::backend::lake::LakeBackend;
    let lake = Lake::new();
    let two = "  columns:\n    - {name: id, type: bigint}";
    lake.apply(
        &manifests(&format!("{SCHEMA}{}{}", table("a", two), table("b", two))),
        false,
    )
    .await
    .unwrap();
    // another apply (another process, by its writer name) holds table a
    let other = LakeBackend::open(lake.dir.path().to_str().unwrap())
        .unwrap()
        .with_writer("the-other-apply");
    let held = other
        .begin(&tref("a"), std::time::Duration::ZERO)
        .await
        .unwrap();
    let wider = format!("{two}\n    - {{name: note, type: string}}");
    let v2 = manifests(&format!(
        "{SCHEMA}{}{}",
        table("a", &wider),
        table("b", &wider)
    ));
    let report = lake
        .apply_may_fail(&v2, false)
        .await
        .expect("b is applied while a is held");
    assert!(
        lake.read(&tref("b"))
            .await
            .unwrap()
            .column("note")
            .is_some()
    );
    assert!(
        lake.read(&tref("a"))
            .await
            .unwrap()
            .column("note")
            .is_none(),
        "a is left alone"
    );
    assert_eq!(report.locked.len(), 1, "{:?}", report.locked);
    assert_eq!(report.locked[0].table, tref("a"));
    assert!(
        report.locked[0].by.contains("the-other-apply"),
        "names the holder: {}",
        report.locked[0].by
    );
    let a_steps: Vec<_> = report
        .steps
        .iter()
        .filter(|s| s.table == tref("a"))
        .collect();
    assert!(
        !a_steps.is_empty()
            && a_steps.iter().all(|s| s.status == StepStatus::NotRun
                && s.detail
                    .as_deref()
                    .is_some_and(|d| d.contains("the-other-apply"))),
        "{a_steps:?}"
    );
    // held alone: refused as before, naming the holder
    match lake
        .apply_may_fail(
            &manifests(&format!(
                "{SCHEMA}{}{}",
                table("a", &wider),
                table("b", &wider)
            )),
            false,
        )
        .await
    {
        Err(ApplyError::Locked(m)) => assert!(m.contains("the-other-apply"), "{m}"),
        other => panic!("only a has steps and it is held: {other:?}"),
    }
    other.end(held).await;
    lake.apply(&v2, false).await.unwrap();
    assert!(
        lake.read(&tref("a"))
            .await
            .unwrap()
            .column("note")
            .is_some()
    );
}

#[tokio::test]
async fn a_repartition_refuses_rows_whose_new_partition_value_is_empty_and_using_maps_them() {
    let lake = Lake::new();
    orders_with_rows(&lake).await;
    lake.append(
        &tref("orders"),
        vec![
            ("id", longs(&[6, 7, 8])),
            ("amount", ints(&[Some(60), Some(70), Some(80)])),
            ("status", strs(&[Some(""), Some("g"), Some("")])),
        ],
    )
    .await;
    let before = lake
        .query(&tref("orders"), "SELECT id, status FROM t ORDER BY id")
        .await;
    let version = lake.version(&tref("orders")).await;
    // status becomes the partition column: Delta would read '' back as NULL
    let by_status = |column: &str| {
        manifests(&format!(
            "{SCHEMA}{}",
            table(
                "orders",
                &format!(
                    "{}\n  partitionedBy: [status]",
                    ORDERS.replace("{name: status, type: string}", column)
                )
            )
        ))
    };
    let v2 = by_status("{name: status, type: string}");
    let plan = lake.plan(&v2).await;
    let checks: Vec<String> = plan.tables[0]
        .steps()
        .iter()
        .flat_map(|s| s.checks.iter().map(|c| c.refuses.clone()))
        .collect();
    assert!(
        checks
            .iter()
            .any(|c| c.contains("partition column (status) would hold ''")),
        "the plan names the check: {checks:?}"
    );
    let report = lake.apply_may_fail(&v2, false).await.expect("applies");
    let error = report
        .steps
        .iter()
        .find_map(|s| match &s.status {
            StepStatus::Failed { error } => Some(error.clone()),
            _ => None,
        })
        .expect("the rewrite is refused");
    assert!(
        error.contains("2 rows hold '' in partition column status") && error.contains("using:"),
        "{error}"
    );
    assert_eq!(
        lake.version(&tref("orders")).await,
        version,
        "nothing committed"
    );
    assert!(
        lake.read(&tref("orders"))
            .await
            .unwrap()
            .partitioned_by
            .is_empty()
    );
    assert_eq!(
        lake.query(&tref("orders"), "SELECT id, status FROM t ORDER BY id")
            .await,
        before
    );
    // a `using:` that maps '' to a value: the rows keep a value, NULL stays NULL
    let mapped = by_status(
        "{name: status, type: string, using: \"CASE WHEN status = '' THEN '(empty)' ELSE status END\"}",
    );
    lake.apply(&mapped, false).await.unwrap();
    assert_eq!(
        lake.read(&tref("orders")).await.unwrap().partitioned_by,
        vec!["status".to_string()]
    );
    assert_eq!(
        lake.query(
            &tref("orders"),
            "SELECT id, coalesce(status, 'NULL') FROM t ORDER BY id"
        )
        .await,
        [
            "1,a",
            "2,b",
            "3,c",
            "4,NULL",
            "5,e",
            "6,(empty)",
            "7,g",
            "8,(empty)"
        ]
    );
    assert!(!lake.plan(&mapped).await.has_changes(), "converges");
}

#[tokio::test]
async fn many_checks_are_added_and_dropped_in_one_commit_each() {
    let lake = Lake::new();
    orders_with_rows(&lake).await;
    let with_checks = |n: usize| {
        let checks: String = (0..n)
            .map(|i| format!("    - check: {{name: c{i}, expression: id > 0}}\n"))
            .collect();
        manifests(&format!(
            "{SCHEMA}{}",
            table(
                "orders",
                &format!("{ORDERS}\n  constraints:\n{}", checks.trim_end())
            )
        ))
    };
    let v = lake.version(&tref("orders")).await;
    let many = with_checks(300);
    let plan = lake.plan(&many).await;
    let steps = plan.tables[0].steps();
    // one step for the 300 CHECKs, then the operator's record of what it made
    let titles: Vec<String> = steps.iter().map(|s| s.action.title()).collect();
    assert_eq!(steps.len(), 2, "one step for 300 CHECKs: {titles:?}");
    assert_eq!(
        titles[1], "SET TBLPROPERTIES (delta-operator.io/constraints)",
        "{titles:?}"
    );
    assert!(
        matches!(&steps[0].action, Action::AddChecks { checks } if checks.len() == 300),
        "{}",
        steps[0].action.title()
    );
    // what the plan shows is the one commit that runs
    assert_eq!(steps[0].statements.len(), 1, "{:?}", steps[0].statements);
    assert!(
        steps[0].statements[0]
            .to_string()
            .starts_with("commit \"ADD CONSTRAINT\"")
    );
    lake.apply(&many, false).await.unwrap();
    assert_eq!(
        lake.version(&tref("orders")).await,
        v + 2,
        "one commit for the CHECKs, one for the record"
    );
    let live = lake.read(&tref("orders")).await.unwrap();
    assert_eq!(live.checks.len(), 300);
    assert!(!lake.plan(&many).await.has_changes(), "converges");
    // the commit's log entry is what the statement says
    let log = lake
        .backend
        .table_path(&tref("orders"))
        .join(format!("_delta_log/{:020}.json", v + 1));
    let entry = std::fs::read_to_string(&log).unwrap();
    assert!(
        entry.contains("\"operation\":\"ADD CONSTRAINT\""),
        "{entry:.300}"
    );
    // dropping 299 of them: one commit too
    let few = with_checks(1);
    let plan = lake.plan(&few).await;
    let steps = plan.tables[0].steps();
    assert_eq!(steps.len(), 2, "the drops, then the record");
    assert!(
        matches!(&steps[0].action, Action::DropChecks { names } if names.len() == 299),
        "{}",
        steps[0].action.title()
    );
    lake.apply(&few, false).await.unwrap();
    assert_eq!(
        lake.version(&tref("orders")).await,
        v + 4,
        "one commit for the drops, one for the record"
    );
    let live = lake.read(&tref("orders")).await.unwrap();
    assert_eq!(
        live.checks
            .iter()
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>(),
        vec!["c0"]
    );
    assert!(!lake.plan(&few).await.has_changes(), "converges");
    // two CHECKs, one of which a row breaks: nothing is committed
    let bad = manifests(&format!(
        "{SCHEMA}{}",
        table(
            "orders",
            &format!(
                "{ORDERS}\n  constraints:\n    - check: {{name: c0, expression: id > 0}}\n    - check: {{name: ok, expression: id > 0}}\n    - check: {{name: small, expression: id < 3}}"
            )
        )
    ));
    let report = lake.apply_may_fail(&bad, false).await.unwrap();
    assert!(report.failed(), "{:?}", report.steps);
    assert_eq!(
        lake.version(&tref("orders")).await,
        v + 4,
        "nothing committed, not even the record (its step comes after the CHECKs)"
    );
}

/// A nested field is made NOT NULL in place on the lake once no row whose
/// struct has a value lacks it (a NULL struct is fine: Delta asks the field
/// only where its parent is there); one such row refuses it untouched.
#[tokio::test]
async fn nested_set_not_null_counts_only_where_the_parent_is_there() {
    use deltalake::arrow::array::StructArray;
    use deltalake::arrow::buffer::NullBuffer;
    use deltalake::arrow::datatypes::{DataType as ArrowType, Field, Fields};
    let lake = Lake::new();
    let cols = "  columns:\n    - {name: id, type: bigint}\n    - {name: address, type: 'struct<city:string>'}";
    lake.apply(
        &manifests(&format!("{SCHEMA}{}", table("people", cols))),
        false,
    )
    .await
    .unwrap();
    let address = |cities: Vec<Option<&str>>, present: Vec<bool>| -> ArrayRef {
        Arc::new(
            StructArray::try_new(
                Fields::from(vec![Field::new("city", ArrowType::Utf8, true)]),
                vec![strs(&cities)],
                Some(NullBuffer::from(present)),
            )
            .unwrap(),
        )
    };
    lake.append(
        &tref("people"),
        vec![
            ("id", longs(&[1, 2])),
            (
                "address",
                address(vec![Some("Oslo"), None], vec![true, false]),
            ),
        ],
    )
    .await;
    let strict = manifests(&format!(
        "{SCHEMA}{}",
        table(
            "people",
            &cols.replace("struct<city:string>", "struct<city:string not null>")
        )
    ));
    assert_eq!(
        steps(&lake.plan(&strict).await),
        vec![("SET NOT NULL address.city".into(), RiskClass::Meta)]
    );
    // a row whose address is there without a city refuses it, untouched
    lake.append(
        &tref("people"),
        vec![
            ("id", longs(&[3])),
            ("address", address(vec![None], vec![true])),
        ],
    )
    .await;
    let v = lake.version(&tref("people")).await;
    let report = lake.apply_may_fail(&strict, false).await.unwrap();
    assert!(
        matches!(&report.steps[0].status, StepStatus::Failed { error } if error.contains("address.city has no value in 1 rows")),
        "{:?}",
        report.steps[0]
    );
    assert_eq!(lake.version(&tref("people")).await, v, "untouched");
    // without it, one commit
    let lake2 = Lake::new();
    lake2
        .apply(
            &manifests(&format!("{SCHEMA}{}", table("people", cols))),
            false,
        )
        .await
        .unwrap();
    lake2
        .append(
            &tref("people"),
            vec![
                ("id", longs(&[1, 2])),
                (
                    "address",
                    address(vec![Some("Oslo"), None], vec![true, false]),
                ),
            ],
        )
        .await;
    let v = lake2.version(&tref("people")).await;
    lake2.apply(&strict, false).await.unwrap();
    assert_eq!(lake2.version(&tref("people")).await, v + 1);
    assert!(!lake2.plan(&strict).await.has_changes());
    assert_eq!(lake2.count(&tref("people")).await, 2);
}

// The promises every backend keeps (tests/support/scenarios.rs), on the lake.
#[tokio::test]
async fn shared_an_added_column_keeps_every_row_and_a_writers_append() {
    support::scenarios::an_added_column_keeps_every_row_and_a_writers_append(&Lake::new()).await;
}

#[tokio::test]
async fn shared_a_dropped_column_waits_for_the_approval_of_that_plan() {
    support::scenarios::a_dropped_column_waits_for_the_approval_of_that_plan(&Lake::new()).await;
}

#[tokio::test]
async fn shared_a_table_a_job_evolves_is_governed_at_annotations_scope() {
    support::scenarios::a_table_a_job_evolves_is_governed_at_annotations_scope(&Lake::new()).await;
}
