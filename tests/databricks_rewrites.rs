//! Rewrites on Databricks, against the warehouse emulator (real Delta Lake on
//! Spark): a staged conversion (a non-widening cast and a struct field cast,
//! rebuilt by name) and a write-once rebuild (a new partitioning, a nested
//! field and a column added) keep every value they do not mean to convert, row
//! by row; put-backs restore comments, CHECKs and properties (the plan is
//! empty afterwards); a lossy cast is caught by the staged check with the
//! original at the same Delta version.
//!
//! NOT NULL is not exercised here: the put-back is `ALTER COLUMN … SET NOT
//! NULL`, which Databricks runs in place but OSS Delta (the emulator's engine)
//! refuses ("Cannot change nullable column to non-nullable", pinned in
//! databricks_warehouse.rs), and Spark refuses a column list in REPLACE … AS
//! SELECT ("Schema may not be specified in a Replace Table As Select").
//!
//! `make test` exports DATABRICKS_HOST, DATABRICKS_TOKEN and
//! DATABRICKS_WAREHOUSE_ID; without them every test here fails (never skips).
//! Each test works in its own schema.

mod support;

use delta_operator::apply::{ApplyReport, StepStatus, apply};
use delta_operator::backend::Backend;
use delta_operator::engine::Inputs;
use delta_operator::model::{DataType, ObservedTable};
use delta_operator::plan::render::text::render;
use delta_operator::plan::{Plan, RiskClass};
use support::warehouse::Wh;
use support::{manifests, table};

/// This suite's table `t` and its manifests (additive schema).
trait Suite {
    fn m(&self, body: &str) -> Inputs;
    async fn table(&self) -> ObservedTable;
    async fn run_step(
        &self,
        run: &delta_operator::backend::TableRun,
        plan: &delta_operator::plan::TablePlan,
        step: &delta_operator::plan::Step,
    ) -> Result<delta_operator::backend::StepOutcome, delta_operator::backend::BackendError>;
    async fn staging_tables(&self) -> Vec<String>;
    async fn version(&self) -> u64;
}

impl Suite for Wh {
    fn m(&self, body: &str) -> Inputs {
        self.manifests(Some("additive"), &table("t", body))
    }
    async fn table(&self) -> ObservedTable {
        self.read("t").await.expect("the table exists")
    }
    /// Runs one step of `plan` in `run` as the executor would, against `t` as it is now.
    async fn run_step(
        &self,
        run: &delta_operator::backend::TableRun,
        plan: &delta_operator::plan::TablePlan,
        step: &delta_operator::plan::Step,
    ) -> Result<delta_operator::backend::StepOutcome, delta_operator::backend::BackendError> {
        let now = self.table().await;
        let bound = delta_operator::apply::bind::bind_step(&self.b, run, plan, step, Some(&now))?;
        self.b
            .run(
                run,
                plan,
                step,
                &bound,
                Some(&now),
                delta_operator::backend::StepProgress::unwatched(),
            )
            .await
    }
    /// The staging copies of `t` left in the schema (one per run), as the read reports them.
    async fn staging_tables(&self) -> Vec<String> {
        self.table()
            .await
            .leftovers
            .iter()
            .map(|l| {
                l.location
                    .rsplit('.')
                    .next()
                    .unwrap_or_default()
                    .to_string()
            })
            .collect()
    }
    async fn version(&self) -> u64 {
        self.b
            .version(&self.t("t"))
            .await
            .expect("version")
            .expect("a version")
    }
}

fn steps(plan: &Plan) -> Vec<(String, RiskClass)> {
    plan.tables
        .iter()
        .flat_map(|t| t.steps().iter().map(|s| (s.action.title(), s.class)))
        .collect()
}

fn ok(report: &ApplyReport) {
    if let Some(f) = report
        .steps
        .iter()
        .find(|s| matches!(s.status, StepStatus::Failed { .. } | StepStatus::NotRun))
    {
        panic!("step not done: {f:#?}\n{report:#?}");
    }
}

const V1: &str = "  columns:
    - {name: id, type: bigint, comment: the key}
    - {name: amount, type: bigint, comment: in cents}
    - {name: code, type: string, comment: a number as text}
    - {name: note, type: string}
    - {name: region, type: string}
    - {name: address, type: 'struct<zip:int,city:string>'}
  constraints:
    - check: {name: id_positive, expression: id > 0}";

const ROWS: i64 = 300;

/// Creates `t` from V1 (through the operator), fills it with ROWS rows
/// (every 4th address NULL, every 5th note NULL) and sets a property the spec
/// never names.
async fn seeded(wh: &Wh) {
    ok(&wh.apply_report(&wh.m(V1), false).await);
    wh.sql(&format!(
        "INSERT INTO {} SELECT id, id * 100, CAST(id * 7 AS STRING), CASE WHEN id % 5 = 0 THEN NULL ELSE concat('n''', id) END, \
         concat('r', id % 3), CASE WHEN id % 4 = 0 THEN NULL ELSE named_struct('zip', CAST(10000 + id AS INT), 'city', concat('c', id % 7)) END \
         FROM range(1, {})",
        wh.q("t"),
        ROWS + 1
    ))
    .await;
    wh.sql(&format!(
        "ALTER TABLE {} SET TBLPROPERTIES ('other.team' = 'keep-me')",
        wh.q("t")
    ))
    .await;
}

/// SHA-256 of each row's kept values as JSON, in id order.
async fn sums(wh: &Wh, exprs: &str) -> Vec<String> {
    wh.col(&format!(
        "SELECT sha2(to_json(struct({exprs})), 256) FROM {} ORDER BY id",
        wh.q("t")
    ))
    .await
}

#[tokio::test]
async fn staged_casts_convert_only_what_they_mean_to_and_put_backs_restore_the_metadata() {
    let wh = Wh::new("dr", "staged").await;
    seeded(&wh).await;
    const KEPT: &str = "id, amount, note, region, address.city, address IS NULL";
    let before = sums(&wh, KEPT).await;
    assert_eq!(before.len(), ROWS as usize);
    let codes = wh
        .col(&format!("SELECT code FROM {} ORDER BY id", wh.q("t")))
        .await;
    let zips = wh
        .col(&format!(
            "SELECT CAST(address.zip AS STRING) FROM {} ORDER BY id",
            wh.q("t")
        ))
        .await;
    let v_before = wh.version().await;
    // string → int is no widening (a rewrite on Databricks) and may lose values: staged;
    // the struct's zip int → string inside a struct whose fields are also reordered
    let v2 = wh.m(&V1
        .replace(
            "{name: code, type: string, comment: a number as text}",
            "{name: code, type: int, comment: a number as text}",
        )
        .replace(
            "'struct<zip:int,city:string>'",
            "'struct<city:string,zip:string>'",
        ));
    let plan = wh.plan(&v2).await;
    let s = steps(&plan);
    assert_eq!(
        s.first(),
        Some(&("STAGE rewritten data".to_string(), RiskClass::Rewrite)),
        "{}",
        render(&plan)
    );
    assert_eq!(
        s.get(1),
        Some(&(
            "REPLACE TABLE (from itself, rows checked)".to_string(),
            RiskClass::Rewrite
        )),
        "{}",
        render(&plan)
    );
    assert_eq!(
        s.last(),
        Some(&("DROP staging".to_string(), RiskClass::Meta)),
        "{}",
        render(&plan)
    );
    let report = wh.apply_report(&v2, false).await;
    ok(&report);
    assert!(
        report.steps[0]
            .detail
            .as_deref()
            .unwrap_or("")
            .contains(&format!("staged {ROWS} rows")),
        "{:?}",
        report.steps[0]
    );
    assert_eq!(
        report.steps[1].restore_point,
        Some(v_before),
        "the restore point is the version before the replace"
    );
    assert_eq!(
        sums(&wh, KEPT).await,
        before,
        "every kept value of every row is unchanged"
    );
    assert_eq!(
        wh.col(&format!(
            "SELECT CAST(code AS STRING) FROM {} ORDER BY id",
            wh.q("t")
        ))
        .await,
        codes,
        "the cast kept every code"
    );
    assert_eq!(
        wh.col(&format!(
            "SELECT address.zip FROM {} ORDER BY id",
            wh.q("t")
        ))
        .await,
        zips,
        "the struct was rebuilt by name"
    );
    let live = wh.table().await;
    assert_eq!(live.column("code").expect("code").data_type, DataType::Int);
    assert_eq!(
        live.column("address")
            .expect("address")
            .data_type
            .to_string(),
        "struct<city:string,zip:string>"
    );
    assert_eq!(
        live.column("id").expect("id").comment.as_deref(),
        Some("the key")
    );
    assert_eq!(
        live.column("amount").expect("amount").comment.as_deref(),
        Some("in cents"),
        "a copied column keeps its comment"
    );
    assert_eq!(
        live.column("code").expect("code").comment.as_deref(),
        Some("a number as text"),
        "a converted column's comment put back"
    );
    assert_eq!(
        live.checks.len(),
        1,
        "the CHECK put back: {:?}",
        live.checks
    );
    assert_eq!(
        live.properties.get("other.team").map(String::as_str),
        Some("keep-me"),
        "a property someone else set survives"
    );
    assert!(
        wh.staging_tables().await.is_empty(),
        "the staging copy is dropped"
    );
    let history = wh.sql(&format!("DESCRIBE HISTORY {}", wh.q("t"))).await;
    assert!(
        history.rows.len() as u64 > v_before + 1,
        "the history is kept across the replace"
    );
    let again = wh.plan(&v2).await;
    assert!(!again.has_changes(), "converges:\n{}", render(&again));
}

#[tokio::test]
async fn a_new_partitioning_writes_once_keeps_every_row_and_clones_first() {
    let wh = Wh::new("dr", "once").await;
    seeded(&wh).await;
    let all = "id, amount, code, note, region, address.zip, address.city, address IS NULL";
    let before = sums(&wh, all).await;
    let v_before = wh.version().await;
    // a new partitioning is a rewrite on Databricks; with it, a new nested field and a new
    // column are part of the rebuild (NULL): nothing converts, so it writes once
    let v2 = wh.m(&format!(
        "{}\n  partitionedBy: [region]\n  safety: {{cloneBeforeRewrite: true}}",
        V1.replace(
            "'struct<zip:int,city:string>'",
            "'struct<zip:int,city:string,country:string>'"
        )
        .replace(
            "  constraints:",
            "    - {name: extra, type: date}\n  constraints:"
        )
    ));
    let plan = wh.plan(&v2).await;
    let s = steps(&plan);
    assert!(
        s.iter()
            .any(|(t, c)| t == "REPLACE TABLE (from itself)" && *c == RiskClass::Rewrite),
        "{}",
        render(&plan)
    );
    assert!(
        !s.iter().any(|(t, _)| t.starts_with("STAGE")),
        "nothing converts: no staging\n{}",
        render(&plan)
    );
    let clone_at = s
        .iter()
        .position(|(t, _)| t.starts_with("SHALLOW CLONE"))
        .unwrap_or_else(|| panic!("a clone step:\n{}", render(&plan)));
    let replace_at = s
        .iter()
        .position(|(t, _)| t == "REPLACE TABLE (from itself)")
        .expect("replace");
    assert!(clone_at < replace_at, "the clone comes before the replace");
    let report = wh.apply_report(&v2, false).await;
    ok(&report);
    assert_eq!(report.steps[replace_at].restore_point, Some(v_before));
    assert_eq!(
        sums(&wh, all).await,
        before,
        "every value of every row is unchanged"
    );
    assert_eq!(
        wh.col(&format!("SELECT count(*) FROM {} WHERE extra IS NULL AND (address IS NULL OR address.country IS NULL)", wh.q("t"))).await,
        vec![ROWS.to_string()],
        "the new column and the new field are NULL, and a NULL struct stays NULL"
    );
    assert_eq!(
        wh.col(&format!(
            "SELECT count(*) FROM {} WHERE address IS NULL",
            wh.q("t")
        ))
        .await,
        vec![(ROWS / 4).to_string()]
    );
    let live = wh.table().await;
    assert_eq!(live.partitioned_by, vec!["region".to_string()]);
    assert_eq!(live.checks.len(), 1);
    assert_eq!(
        live.properties.get("other.team").map(String::as_str),
        Some("keep-me")
    );
    // the clone still reads the table as it was: the old schema, every row
    let clone = plan.tables[0].steps()[clone_at].action.clone();
    let delta_operator::plan::Action::CloneTable { name } = clone else {
        panic!("{clone:?}")
    };
    // planned as `…_v{version}`, taken (first step: nothing committed before it) at v_before
    assert!(name.ends_with("{version}"), "{name}");
    let name = delta_operator::plan::steps::bound_clone_name(&name, Some(v_before));
    let cq = format!("main.{}.`{name}`", wh.schema);
    assert_eq!(
        wh.col(&format!(
            "SELECT sha2(to_json(struct({all})), 256) FROM {cq} ORDER BY id"
        ))
        .await,
        before,
        "the clone reads every row as it was"
    );
    let clone_cols = wh.sql(&format!("SELECT * FROM {cq} LIMIT 1")).await.columns;
    assert!(
        !clone_cols.iter().any(|c| c == "extra"),
        "the clone has the old schema: {clone_cols:?}"
    );
    let again = wh.plan(&v2).await;
    assert!(!again.has_changes(), "converges:\n{}", render(&again));
}

/// Partitioning → liquid clustering is one replace written clustered
/// (`CREATE OR REPLACE … CLUSTER BY (…) AS SELECT`), not an unclustered
/// replace and then an `ALTER TABLE … CLUSTER BY` that waits for OPTIMIZE;
/// dropping `partitionedBy` while declaring `clusterBy` is enough.
#[tokio::test]
async fn partitioning_to_clustering_is_one_clustered_replace() {
    let wh = Wh::new("dr", "cluster").await;
    let v1 = wh.m(&format!("{V1}\n  partitionedBy: [region]"));
    ok(&wh.apply_report(&v1, false).await);
    wh.sql(&format!(
        "INSERT INTO {} (id, amount, code, note, region) SELECT id, id, CAST(id AS STRING), 'n', concat('r', id % 3) FROM range(1, 31)",
        wh.q("t")
    ))
    .await;
    let v2 = wh.m(&format!("{V1}\n  clusterBy: [region]"));
    let plan = wh.plan(&v2).await;
    let titles: Vec<String> = steps(&plan).into_iter().map(|(t, _)| t).collect();
    assert!(
        titles.iter().any(|t| t == "REPLACE TABLE (from itself)")
            && !titles
                .iter()
                .any(|t| t.starts_with("CLUSTER BY") || t.contains("CLUSTER")),
        "{}",
        render(&plan)
    );
    let replace = plan.tables[0]
        .steps()
        .iter()
        .find(|s| s.action.title() == "REPLACE TABLE (from itself)")
        .expect("replace");
    assert!(
        replace.statements[0]
            .to_string()
            .contains(" CLUSTER BY (`region`) "),
        "{}",
        replace.statements[0]
    );
    ok(&wh.apply_report(&v2, false).await);
    let live = wh.table().await;
    assert!(live.partitioned_by.is_empty(), "{live:?}");
    assert_eq!(live.cluster_by, Some(vec!["region".to_string()]));
    assert_eq!(
        wh.col(&format!("SELECT count(*) FROM {}", wh.q("t"))).await,
        vec!["30".to_string()]
    );
    let again = wh.plan(&v2).await;
    assert!(!again.has_changes(), "converges:\n{}", render(&again));
}

#[tokio::test]
async fn a_lossy_cast_is_caught_by_the_staged_check_and_the_original_keeps_its_version() {
    let wh = Wh::new("dr", "lossy").await;
    let v1 = "  columns:\n    - {name: id, type: bigint}\n    - {name: num, type: string}";
    ok(&wh.apply_report(&wh.m(v1), false).await);
    wh.sql(&format!(
        "INSERT INTO {} VALUES (1, '1'), (2, '2'), (3, 'abc'), (4, NULL)",
        wh.q("t")
    ))
    .await;
    let v_before = wh.version().await;
    let rows_before = sums(&wh, "id, num").await;
    let v2 = wh.m("  columns:\n    - {name: id, type: bigint}\n    - {name: num, type: int}");
    let plan = wh.plan(&v2).await;
    assert_eq!(
        steps(&plan)[0].0,
        "STAGE rewritten data",
        "{}",
        render(&plan)
    );
    let report = apply(&wh.b, &v2, None, None, &support::options())
        .await
        .map(|(_, r)| r)
        .expect("apply runs");
    match &report.steps[0].status {
        StepStatus::Failed { error } => {
            assert!(error.contains("would turn 1 values into NULL"), "{error}");
            assert!(
                error.contains("untouched") && error.contains("t__delta_operator_staging_"),
                "names the kept staging copy: {error}"
            );
        }
        s => panic!("the stage must fail its check, got {s:?}"),
    }
    assert!(
        report.steps[1..]
            .iter()
            .all(|s| s.status == StepStatus::NotRun),
        "{report:#?}"
    );
    assert_eq!(wh.version().await, v_before, "same Delta version");
    assert_eq!(sums(&wh, "id, num").await, rows_before, "same rows");
    assert_eq!(
        wh.table().await.column("num").expect("num").data_type,
        DataType::String
    );
    // the staging copy is kept to inspect: the value that did not convert is NULL there
    let kept = wh.staging_tables().await;
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!(
        wh.col(&format!(
            "SELECT id FROM {} WHERE num IS NULL ORDER BY id",
            wh.q(&kept[0])
        ))
        .await,
        vec!["3", "4"]
    );
}

/// Delta on Spark silently drops rows appended between a staging copy and a
/// `CREATE OR REPLACE … AS SELECT` from it (measured: docs/reliability.md), so
/// the replace rebuilds the table from itself and checks every row: a row
/// written after the stage is converted too, and one that does not convert
/// stops the replace with nothing changed.
#[tokio::test]
async fn rows_written_after_the_stage_are_converted_and_checked_by_the_replace() {
    let wh = Wh::new("dr", "moved").await;
    ok(&wh
        .apply_report(
            &wh.m("  columns:\n    - {name: id, type: bigint, comment: the key}\n    - {name: num, type: string}"),
            false,
        )
        .await);
    wh.sql(&format!(
        "INSERT INTO {} VALUES (1, '10'), (2, '20'), (3, NULL)",
        wh.q("t")
    ))
    .await;
    // id becomes NOT NULL with the rewrite: the replace checks it for every row
    let v2 = wh.m("  columns:\n    - {name: id, type: bigint, nullable: false, comment: the key}\n    - {name: num, type: int}");
    let plan = wh.plan(&v2).await;
    let table_plan = plan.tables[0].clone();
    let planned = table_plan.steps().to_vec();
    assert_eq!(
        planned[0].action.title(),
        "STAGE rewritten data",
        "{}",
        render(&plan)
    );
    assert_eq!(
        planned[1].action.title(),
        "REPLACE TABLE (from itself, rows checked)"
    );
    // the stage runs, and someone writes a row that does not convert
    let run = delta_operator::backend::TableRun::unlocked(&wh.t("t"));
    wh.run_step(&run, &table_plan, &planned[0])
        .await
        .expect("the stage runs");
    wh.sql(&format!("INSERT INTO {} VALUES (4, 'forty')", wh.q("t")))
        .await;
    let moved = wh.version().await;
    let err = wh
        .run_step(&run, &table_plan, &planned[1])
        .await
        .expect_err("the new row does not convert");
    assert!(
        err.to_string()
            .contains("converting num to num (int) would turn a value into NULL"),
        "{err}"
    );
    assert_eq!(
        wh.version().await,
        moved,
        "the refused replace wrote nothing"
    );
    assert_eq!(
        wh.table().await.column("num").expect("num").data_type,
        DataType::String
    );
    // it is fixed; a row without an id arrives after the stage: refused too
    wh.sql(&format!("UPDATE {} SET num = '40' WHERE id = 4", wh.q("t")))
        .await;
    wh.sql(&format!("INSERT INTO {} VALUES (NULL, '45')", wh.q("t")))
        .await;
    let moved = wh.version().await;
    let err = wh
        .run_step(&run, &table_plan, &planned[1])
        .await
        .expect_err("a NULL id");
    assert!(
        err.to_string()
            .contains("column id is declared NOT NULL but a row has no value"),
        "{err}"
    );
    assert_eq!(
        wh.version().await,
        moved,
        "the refused replace wrote nothing"
    );
    // fixed, and another row arrives after the stage: the replace converts both, loses none
    wh.sql(&format!("DELETE FROM {} WHERE id IS NULL", wh.q("t")))
        .await;
    wh.sql(&format!("INSERT INTO {} VALUES (5, '50')", wh.q("t")))
        .await;
    wh.run_step(&run, &table_plan, &planned[1])
        .await
        .expect("the replace runs");
    assert_eq!(
        wh.col(&format!(
            "SELECT concat(id, ':', coalesce(CAST(num AS STRING), 'NULL')) FROM {} ORDER BY id",
            wh.q("t")
        ))
        .await,
        vec!["1:10", "2:20", "3:NULL", "4:40", "5:50"]
    );
    let after = wh.table().await;
    assert_eq!(after.column("num").expect("num").data_type, DataType::Int);
    // id, NOT NULL-checked but not converted, is selected by name: its comment stays
    assert_eq!(
        after.column("id").expect("id").comment.as_deref(),
        Some("the key"),
        "{after:?}"
    );
    // the run stopped before DROP staging: its copy is shown and removed by the next apply
    assert_eq!(wh.staging_tables().await.len(), 1);
    let plan = wh.plan(&v2).await;
    // (and the NOT NULL put-back the stopped run did not reach)
    assert_eq!(
        steps(&plan),
        vec![
            (
                "REMOVE leftovers of interrupted runs (1)".to_string(),
                RiskClass::Meta
            ),
            ("SET NOT NULL id".to_string(), RiskClass::Meta)
        ],
        "{}",
        render(&plan)
    );
    // the emulator's OSS Delta cannot SET NOT NULL in place (a warehouse
    // can): the key is declared nullable again to finish
    let v3 = wh.m("  columns:\n    - {name: id, type: bigint, comment: the key}\n    - {name: num, type: int}");
    ok(&wh.apply_report(&v3, false).await);
    assert!(wh.staging_tables().await.is_empty());
    assert!(!wh.plan(&v3).await.has_changes());
}

/// Nested changes planned by the operator run in place on real Delta
/// (issue 28: a map value's widening compiled to a whole-map ALTER that
/// Delta refuses, CANNOT_UPDATE_FIELD.MAP_TYPE; a field added inside an
/// array's structs and a struct field dropped under column mapping were
/// whole-table rewrites): the plan has no REPLACE, every row keeps its
/// values, and the re-plan is empty.
#[tokio::test]
async fn nested_widening_adds_and_drops_are_made_in_place() {
    let wh = Wh::new("dr", "nested").await;
    let v1 = "  columns:\n    - {name: id, type: bigint}\n    - {name: counters, type: 'map<string,int>'}\n    - {name: scores, type: 'array<smallint>'}\n    - {name: items, type: 'array<struct<sku:string>>'}\n    - {name: address, type: 'struct<city:string,legacy_code:string>'}\n  properties: {delta.columnMapping.mode: name}";
    ok(&wh.apply_report(&wh.m(v1), false).await);
    wh.sql(&format!(
        "INSERT INTO {} VALUES (1, map('a', 7), array(CAST(3 AS SMALLINT)), array(named_struct('sku', 's1')), named_struct('city', 'Oslo', 'legacy_code', 'x'))",
        wh.q("t")
    ))
    .await;
    let v2 = v1
        .replace("map<string,int>", "map<string,bigint>")
        .replace("array<smallint>", "array<int>")
        .replace(
            "array<struct<sku:string>>",
            "array<struct<sku:string,unit_price:double>>",
        )
        .replace(
            "struct<city:string,legacy_code:string>",
            "struct<city:string>",
        );
    let plan = wh.plan(&wh.m(&v2)).await;
    let got = steps(&plan);
    assert!(
        !got.iter()
            .any(|(t, _)| t.starts_with("REPLACE") || t.starts_with("STAGE")),
        "in place:\n{}",
        render(&plan)
    );
    for want in [
        "ALTER COLUMN counters.value TYPE bigint",
        "ALTER COLUMN scores.element TYPE int",
        "ADD COLUMN items.element.unit_price",
        "DROP COLUMN address.legacy_code",
    ] {
        assert!(
            got.iter().any(|(t, _)| t == want),
            "{want}:\n{}",
            render(&plan)
        );
    }
    ok(&wh.apply_report(&wh.m(&v2), true).await);
    assert_eq!(
        wh.col(&format!(
            "SELECT concat(id, ':', counters['a'], ':', scores[0], ':', items[0].sku, ':', coalesce(CAST(items[0].unit_price AS STRING), 'NULL'), ':', address.city) FROM {}",
            wh.q("t")
        ))
        .await,
        vec!["1:7:3:s1:NULL:Oslo"]
    );
    let again = wh.plan(&wh.m(&v2)).await;
    assert!(!again.has_changes(), "converges:\n{}", render(&again));
}

/// Moving a primary key that a live foreign key references is refused at
/// plan time on a workspace, naming the key (its DROP PRIMARY KEY is
/// RESTRICT: before, the plan passed and the apply failed half way).
#[tokio::test]
async fn a_primary_key_a_live_foreign_key_references_is_not_moved() {
    let wh = Wh::new("dr", "pkmove").await;
    let (c, o) = (wh.q("customers"), wh.q("t"));
    for s in [
        format!("CREATE TABLE {c} (id BIGINT NOT NULL, region STRING NOT NULL) USING DELTA"),
        format!("ALTER TABLE {c} ADD CONSTRAINT customers_pk PRIMARY KEY (id)"),
        format!("CREATE TABLE {o} (id BIGINT, customer_id BIGINT) USING DELTA"),
        format!(
            "ALTER TABLE {o} ADD CONSTRAINT t_customer FOREIGN KEY (customer_id) REFERENCES {c} (id)"
        ),
    ] {
        wh.sql(&s).await;
    }
    let schema = format!(
        "apiVersion: delta-operator.io/v1alpha1\nkind: DeltaSchema\nmetadata: {{name: sales}}\nspec: {{catalog: main, name: {}, mode: additive}}\n",
        wh.schema
    );
    let customers = table(
        "customers",
        "  columns:\n    - {name: id, type: bigint, nullable: false}\n    - {name: region, type: string, nullable: false}\n  constraints:\n    - primaryKey: {name: customers_pk, columns: [id, region]}",
    );
    let t = table(
        "t",
        "  columns:\n    - {name: id, type: bigint}\n    - {name: customer_id, type: bigint}",
    );
    let plan = wh
        .plan(&manifests(&format!("{schema}{customers}{t}")))
        .await;
    let parent = plan
        .tables
        .iter()
        .find(|p| p.table.table == "customers")
        .expect("customers");
    let delta_operator::plan::Outcome::Rejected { failures } = &parent.outcome else {
        panic!("refused at plan time:\n{}", render(&plan))
    };
    assert!(
        failures
            .iter()
            .any(|f| f.rule.as_str() == "PrimaryKeyReferenced" && f.message.contains("t_customer")),
        "{failures:#?}"
    );
}

/// Delta stores an empty partition value as NULL (Databricks as OSS Delta): a new
/// partitioning over a string column holding '' is refused before anything is
/// written, naming the column and the count (the plan shows the count), and the
/// table keeps its version and its '' values; a `using:` mapping '' to a value
/// makes the same change keep every row.
#[tokio::test]
async fn a_new_partitioning_over_empty_strings_is_refused_with_their_count() {
    let wh = Wh::new("dr", "emptypart").await;
    let cols = "  columns:
    - {name: id, type: bigint}
    - {name: day, type: string}";
    ok(&wh.apply_report(&wh.m(cols), false).await);
    wh.sql(&format!(
        "INSERT INTO {} SELECT id, CASE WHEN id % 5 = 0 THEN '' ELSE concat('d', id % 3) END FROM range(0, 60)",
        wh.q("t")
    ))
    .await;
    let v_before = wh.version().await;
    let v2 = wh.m(&format!("{cols}\n  partitionedBy: [day]"));
    let plan = wh.plan(&v2).await;
    let shown = render(&plan);
    assert!(
        shown.contains("count_if(length(`day`) = 0)") && shown.contains("would hold ''"),
        "the plan names the count:\n{shown}"
    );
    let report = wh.apply_report(&v2, true).await;
    let failed = report
        .steps
        .iter()
        .find_map(|st| match &st.status {
            StepStatus::Failed { error } => Some(error.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("the replace must be refused: {report:#?}"));
    assert!(
        failed.contains("12 rows hold '' in partition column day")
            && failed.contains("Delta stores an empty partition value as NULL"),
        "{failed}"
    );
    assert_eq!(wh.version().await, v_before, "nothing committed");
    assert_eq!(
        wh.rows(&format!(
            "SELECT count(*), count_if(day = '') FROM {}",
            wh.q("t")
        ))
        .await,
        ["60 | 12"]
    );
    let mapped = wh.m("  columns:
    - {name: id, type: bigint}
    - {name: day, type: string, using: \"CASE WHEN day = '' THEN '(empty)' ELSE day END\"}
  partitionedBy: [day]");
    ok(&wh.apply_report(&mapped, true).await);
    assert_eq!(wh.table().await.partitioned_by, vec!["day".to_string()]);
    assert_eq!(
        wh.rows(&format!(
            "SELECT count(*), count_if(day = '(empty)'), count_if(day IS NULL) FROM {}",
            wh.q("t")
        ))
        .await,
        ["60 | 12 | 0"]
    );
}
