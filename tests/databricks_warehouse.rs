//! The Databricks backend against the warehouse emulator (e2e/warehouse/): Delta SQL on real
//! Delta Lake (Spark), Unity Catalog metadata emulated from the public API reference. `make test`
//! starts the emulator and exports DATABRICKS_HOST, DATABRICKS_TOKEN and DATABRICKS_WAREHOUSE_ID;
//! without them every test here fails (it never skips).
//!
//! Each test works in its own schema, so they run in parallel. Every scenario ends with the plan
//! being empty after the apply, and what was applied is read back through the backend's own
//! read path (Unity Catalog REST: the tables listing, tags and grants).

mod support;

use std::time::Duration;

use delta_operator::apply::{ApplyError, StepStatus, apply, run_plan};
use delta_operator::engine::{Inputs, read_and_plan};
use delta_operator::model::{
    DataType, Grant, Identity, Mask, OWNER_PROPERTY, ObservedTable, PrimaryKey,
};

use delta_operator::plan::render::text::render;
use delta_operator::plan::{Action, Plan, RiskClass, TableAction};
use support::table;
use support::warehouse::{Wh, backend};

/// This suite's manifests: the DeltaSchema in `mode`, then the tables.
trait Suite {
    fn m(&self, mode: &str, tables: &[String]) -> Inputs;
}

impl Suite for Wh {
    fn m(&self, mode: &str, tables: &[String]) -> Inputs {
        self.manifests(Some(mode), &tables.concat())
    }
}

fn titles(plan: &Plan) -> Vec<(String, RiskClass)> {
    plan.tables
        .iter()
        .flat_map(|t| t.steps().iter().map(|s| (s.action.title(), s.class)))
        .collect()
}

fn has_step(plan: &Plan, title: &str) -> bool {
    titles(plan).iter().any(|(t, _)| t == title)
}

fn col<'a>(t: &'a ObservedTable, name: &str) -> &'a delta_operator::model::ObservedColumn {
    t.column(name).unwrap_or_else(|| {
        panic!(
            "no column {name} in {:?}",
            t.columns.iter().map(|c| &c.name).collect::<Vec<_>>()
        )
    })
}

// ------------------------------------------------------------------ create

#[tokio::test]
async fn create_with_every_inline_and_follow_up_step_reads_back_and_plans_clean() {
    let wh = Wh::new("dw", "create").await;
    for f in support::warehouse::MASK_FUNCTIONS {
        wh.sql(f).await;
    }
    let sch = wh.schema.clone();
    let customers = table(
        "customers",
        "  comment: one row per customer
  clusterBy: [id]
  tags: {domain: sales, tier: gold}
  grants: [{principal: analysts, privileges: [SELECT]}, {principal: etl, privileges: [SELECT, MODIFY]}]
  owner: data-eng
  constraints:
    - primaryKey: {name: customers_pk, columns: [id]}
  columns:
    - {name: id, type: bigint, nullable: false, identity: {generated: Always, start: 10, increment: 5}, comment: surrogate key}
    - {name: email, type: string, mask: {function: main.sec.mask_email}, tags: {pii: email}}
    - {name: region, type: string, default: \"'EU'\"}",
    );
    let orders = table(
        "orders",
        &format!(
            "  comment: orders as placed
  partitionedBy: [day]
  properties: {{team.owner: data-platform, delta.appendOnly: 'false'}}
  constraints:
    - check: {{name: amount_not_negative, expression: amount >= 0}}
    - foreignKey: {{name: orders_customer_fk, columns: [customer_id], references: main.{sch}.customers, referencedColumns: [id]}}
  columns:
    - {{name: order_id, type: bigint, nullable: false, identity: {{generated: ByDefault}}}}
    - {{name: customer_id, type: bigint}}
    - {{name: amount, type: 'decimal(18,2)', comment: in euros}}
    - {{name: ts, type: timestamp}}
    - {{name: day, type: date, generated: CAST(ts AS DATE)}}
    - {{name: items, type: \"array<struct<sku:string comment 'stock unit',qty:int>>\"}}"
        ),
    );
    let inputs = wh.m("additive", &[customers, orders]);
    let plan = wh.plan(&inputs).await;
    assert_eq!(plan.summary.add, 2, "{}", render(&plan));
    // parents first: the foreign key's target exists before the child's key is added
    assert_eq!(plan.tables[0].table, wh.t("customers"), "{}", render(&plan));
    let creates_before = wh.b.statements();
    let (_, report) = wh.converge(&inputs, false).await;
    assert!(report.applied() >= 10, "{report:#?}");
    assert!(wh.b.statements() > creates_before);

    let c = wh.read("customers").await.expect("customers created");
    assert_eq!(c.comment.as_deref(), Some("one row per customer"));
    assert_eq!(c.cluster_by, Some(vec!["id".to_string()]));
    assert!(c.partitioned_by.is_empty());
    assert_eq!(c.tags.get("domain").map(String::as_str), Some("sales"));
    assert_eq!(c.tags.get("tier").map(String::as_str), Some("gold"));
    assert_eq!(
        c.grants,
        vec![
            Grant {
                principal: "analysts".into(),
                privileges: vec!["SELECT".into()]
            },
            Grant {
                principal: "etl".into(),
                privileges: vec!["MODIFY".into(), "SELECT".into()]
            }
        ]
    );
    assert_eq!(c.owner.as_deref(), Some("data-eng"));
    assert_eq!(
        c.primary_key,
        Some(PrimaryKey {
            name: Some("customers_pk".into()),
            columns: vec!["id".into()]
        })
    );
    assert_eq!(
        c.properties.get(OWNER_PROPERTY).map(String::as_str),
        Some("default/customers")
    );
    let id = col(&c, "id");
    assert_eq!(
        id.identity,
        Some(Identity {
            always: true,
            start: 10,
            increment: 5
        })
    );
    assert!(!id.nullable);
    assert_eq!(id.comment.as_deref(), Some("surrogate key"));
    let email = col(&c, "email");
    assert_eq!(
        email.mask,
        Some(Mask {
            function: "main.sec.mask_email".into(),
            using_columns: vec![]
        })
    );
    assert_eq!(email.tags.get("pii").map(String::as_str), Some("email"));
    assert_eq!(col(&c, "region").default.as_deref(), Some("'EU'"));

    let o = wh.read("orders").await.expect("orders created");
    assert_eq!(o.partitioned_by, vec!["day".to_string()]);
    assert_eq!(o.cluster_by, None);
    assert_eq!(
        o.properties.get("team.owner").map(String::as_str),
        Some("data-platform")
    );
    assert_eq!(o.checks.len(), 1);
    assert_eq!(o.checks[0].expression, "amount >= 0");
    assert_eq!(o.foreign_keys.len(), 1);
    assert_eq!(o.foreign_keys[0].references, wh.t("customers"));
    assert_eq!(o.foreign_keys[0].columns, vec!["customer_id".to_string()]);
    assert_eq!(
        col(&o, "order_id").identity,
        Some(Identity {
            always: false,
            start: 1,
            increment: 1
        })
    );
    assert_eq!(
        col(&o, "day").generated.as_deref(),
        Some("CAST(ts AS DATE)")
    );
    assert_eq!(
        col(&o, "amount").data_type,
        DataType::Decimal {
            precision: 18,
            scale: 2
        }
    );
    assert_eq!(col(&o, "amount").comment.as_deref(), Some("in euros"));
    assert_eq!(
        col(&o, "items").data_type.to_string(),
        "array<struct<sku:string comment 'stock unit',qty:int>>"
    );
    assert!(
        o.version.is_some(),
        "the Delta version comes from the listing (delta.lastUpdateVersion)"
    );
    // the data path works: identity and generated values are computed by Delta
    wh.sql(&format!("INSERT INTO main.{sch}.orders (customer_id, amount, ts) VALUES (1, 12.50, TIMESTAMP'2026-01-02 03:04:05')")).await;
    assert_eq!(
        wh.scalar(&format!(
            "SELECT CAST(day AS STRING) FROM main.{sch}.orders"
        ))
        .await,
        "2026-01-02"
    );
    // a second apply does nothing
    let report = wh.apply_ok(&inputs, false).await;
    assert!(report.steps.is_empty(), "{report:#?}");
    // an unchanged check of the schema costs no statement: the UC listing, and the tags and
    // grants its specs declare, are REST
    let fresh = backend();
    let (plan, _) = read_and_plan(&fresh, &inputs).await.expect("read");
    assert!(!plan.has_changes(), "{}", render(&plan));
    assert_eq!(fresh.statements(), 0, "no statement for the whole schema");
}

// ------------------------------------------------------------------ alter in place

const PEOPLE_V1: &str = "  comment: old
  properties: {a.b: '1', gone.key: x}
  tags: {domain: sales, stale: 'yes'}
  grants: [{principal: analysts, privileges: [SELECT, MODIFY]}]
  constraints:
    - check: {name: old_check, expression: num > 0 - 100}
  columns:
    - {name: id, type: bigint, nullable: false, comment: one, tags: {pii: none, old: x}}
    - {name: num, type: int, nullable: false}
    - {name: address, type: 'struct<street:string>'}";

const PEOPLE_V2: &str = "  comment: new
  clusterBy: [id]
  owner: data-eng
  properties: {a.b: '2', gone.key: null}
  tags: {domain: people, stale: null}
  grants: [{principal: analysts, privileges: [SELECT]}, {principal: auditors, privileges: [SELECT]}]
  constraints:
    - check: {name: n_small, expression: num < 1000}
  columns:
    - {name: id, type: bigint, nullable: false, comment: two, tags: {pii: none, old: null, kind: key}, mask: {function: main.sec.mask_id, usingColumns: [num]}}
    - {name: num, type: bigint, nullable: true}
    - {name: address, type: \"struct<street:string,city:string comment 'the city'>\"}
    - {name: email, type: string, comment: added}";

#[tokio::test]
async fn every_in_place_change_applies_reads_back_and_plans_clean() {
    let wh = Wh::new("dw", "alter").await;
    for f in support::warehouse::MASK_FUNCTIONS {
        wh.sql(f).await;
    }
    let sch = wh.schema.clone();
    let v1 = wh.m("additive", &[table("people", PEOPLE_V1)]);
    wh.converge(&v1, false).await;
    wh.sql(&format!("INSERT INTO main.{sch}.people VALUES (1, 5, named_struct('street', 'Main St')), (2, 7, NULL)")).await;
    // someone else's property is left alone
    wh.sql(&format!(
        "ALTER TABLE main.{sch}.people SET TBLPROPERTIES ('other.team' = 'keep-me')"
    ))
    .await;

    let v2 = wh.m("additive", &[table("people", PEOPLE_V2)]);
    let plan = wh.plan(&v2).await;
    for expected in [
        "COMMENT ON TABLE",
        "SET TBLPROPERTIES (a.b)",
        "UNSET TBLPROPERTIES (gone.key)",
        "SET TAGS (domain)",
        "UNSET TAGS (stale)",
        "enable typeWidening",
        "ALTER COLUMN num TYPE bigint",
        "DROP NOT NULL num",
        "ADD COLUMN address.city",
        "ADD COLUMN email",
        "COMMENT ON COLUMN id",
        "SET TAGS on id",
        "UNSET TAGS on id",
        "SET MASK on id",
        "ADD CONSTRAINT n_small CHECK",
        "DROP CONSTRAINT old_check",
        "CLUSTER BY (id)",
        "GRANT SELECT TO auditors",
        "REVOKE MODIFY FROM analysts",
        "SET OWNER data-eng",
    ] {
        assert!(
            has_step(&plan, expected),
            "missing {expected} in\n{}",
            render(&plan)
        );
    }
    assert!(
        plan.destructive_steps().next().is_none(),
        "nothing here is destructive:\n{}",
        render(&plan)
    );
    // the prerequisite is its own feature step, before what needs it
    let steps = titles(&plan);
    let widen = steps
        .iter()
        .position(|(t, _)| t == "enable typeWidening")
        .unwrap();
    let alter = steps
        .iter()
        .position(|(t, _)| t == "ALTER COLUMN num TYPE bigint")
        .unwrap();
    assert!(
        widen < alter && steps[widen].1 == RiskClass::Feature,
        "{steps:?}"
    );
    wh.apply_ok(&v2, false).await;
    let again = wh.plan(&v2).await;
    assert!(!again.has_changes(), "{}", render(&again));

    let t = wh.read("people").await.unwrap();
    assert_eq!(t.comment.as_deref(), Some("new"));
    assert_eq!(t.cluster_by, Some(vec!["id".to_string()]));
    assert_eq!(t.owner.as_deref(), Some("data-eng"));
    assert_eq!(t.properties.get("a.b").map(String::as_str), Some("2"));
    assert!(!t.properties.contains_key("gone.key"));
    assert_eq!(
        t.properties.get("other.team").map(String::as_str),
        Some("keep-me"),
        "a property the spec never names is left alone"
    );
    assert_eq!(
        t.properties
            .get("delta.enableTypeWidening")
            .map(String::as_str),
        Some("true")
    );
    assert_eq!(t.tags.get("domain").map(String::as_str), Some("people"));
    assert!(!t.tags.contains_key("stale"));
    assert_eq!(
        t.grants,
        vec![
            Grant {
                principal: "analysts".into(),
                privileges: vec!["SELECT".into()]
            },
            Grant {
                principal: "auditors".into(),
                privileges: vec!["SELECT".into()]
            }
        ]
    );
    assert_eq!(
        t.checks.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(),
        vec!["n_small"]
    );
    let id = col(&t, "id");
    assert_eq!(id.comment.as_deref(), Some("two"));
    assert_eq!(id.tags.get("kind").map(String::as_str), Some("key"));
    assert!(!id.tags.contains_key("old"));
    let num = col(&t, "num");
    assert_eq!(num.data_type, DataType::Long);
    assert!(num.nullable);
    assert_eq!(
        col(&t, "address").data_type.to_string(),
        "struct<street:string,city:string comment 'the city'>"
    );
    assert_eq!(
        id.mask,
        Some(Mask {
            function: "main.sec.mask_id".into(),
            using_columns: vec!["num".into()]
        })
    );
    assert_eq!(col(&t, "email").comment.as_deref(), Some("added"));
    // every row and value survived
    assert_eq!(wh.scalar(&format!("SELECT CAST(sum(num) AS STRING) || '/' || count(*) || '/' || max(address.street) FROM main.{sch}.people")).await, "12/2/Main St");
}

// ------------------------------------------------------------------ column mapping, rename, drop

#[tokio::test]
async fn rename_and_drop_need_column_mapping_and_the_drop_needs_approval() {
    let wh = Wh::new("dw", "mapping").await;
    let sch = wh.schema.clone();
    let v1 = wh.m("additive", &[table("orders", "  columns:\n    - {name: id, type: bigint, nullable: false}\n    - {name: status, type: string}\n    - {name: legacy, type: int}")]);
    wh.converge(&v1, false).await;
    wh.sql(&format!(
        "INSERT INTO main.{sch}.orders VALUES (1, 'open', 7), (2, 'done', 8)"
    ))
    .await;
    let v_before = wh.read("orders").await.unwrap().version.expect("a version");

    let v2 = wh.m("additive", &[table("orders", "  columns:\n    - {name: id, type: bigint, nullable: false}\n    - {name: state, type: string, renamedFrom: status}")]);
    let plan = wh.plan(&v2).await;
    let steps = titles(&plan);
    assert_eq!(
        steps[0],
        ("enable columnMapping".to_string(), RiskClass::Feature),
        "{}",
        render(&plan)
    );
    assert!(
        steps.contains(&("RENAME COLUMN status TO state".to_string(), RiskClass::Meta))
            || steps
                .iter()
                .any(|(t, _)| t == "RENAME COLUMN status TO state"),
        "{steps:?}"
    );
    let drop = plan.tables[0]
        .steps()
        .iter()
        .find(|s| matches!(s.action, Action::DropColumn { .. }))
        .expect("a drop step");
    assert_eq!(drop.class, RiskClass::Destructive);
    // no approval: refused, nothing changed
    assert!(matches!(
        wh.apply_may_fail(&v2, false).await,
        Err(ApplyError::NeedsApproval { .. })
    ));
    let unchanged = wh.read("orders").await.unwrap();
    assert!(unchanged.column("legacy").is_some() && unchanged.column("status").is_some());
    assert_eq!(unchanged.version, Some(v_before));
    // an approval for another plan approves nothing
    let wrong = apply(
        &wh.b,
        &v2,
        None,
        Some("0000000000000000"),
        &support::options(),
    )
    .await;
    assert!(
        matches!(wrong, Err(ApplyError::WrongApproval { .. })),
        "{wrong:?}"
    );
    // approved: mapping, rename and drop run in place
    let report = wh.apply_ok(&v2, true).await;
    let dropped = report
        .steps
        .iter()
        .find(|s| s.title == "DROP COLUMN legacy")
        .expect("the drop ran");
    assert!(
        dropped.restore_point.is_some(),
        "a destructive step records its restore point: {dropped:?}"
    );
    let undo = plan.tables[0]
        .steps()
        .iter()
        .find(|s| matches!(s.action, Action::DropColumn { .. }))
        .and_then(|s| s.undo.clone());
    assert!(
        undo.is_some_and(|u| u.starts_with("RESTORE TABLE")),
        "the undo of a drop is RESTORE"
    );
    let t = wh.read("orders").await.unwrap();
    assert!(t.column("legacy").is_none() && t.column("status").is_none());
    assert_eq!(
        t.properties
            .get("delta.columnMapping.mode")
            .map(String::as_str),
        Some("name")
    );
    assert_eq!(
        wh.scalar(&format!(
            "SELECT concat_ws(',', sort_array(collect_list(state))) FROM main.{sch}.orders"
        ))
        .await,
        "done,open",
        "renamed values kept"
    );
    let again = wh.plan(&v2).await;
    assert!(!again.has_changes(), "{}", render(&again));
    // the restore point really restores: the dropped column is back at that version
    let rp = dropped.restore_point.unwrap();
    wh.sql(&format!(
        "RESTORE TABLE main.{sch}.orders TO VERSION AS OF {rp}"
    ))
    .await;
    assert!(wh.read("orders").await.unwrap().column("legacy").is_some());
}

// ------------------------------------------------------------------ NOT NULL

#[tokio::test]
async fn drop_not_null_applies_and_set_not_null_is_reported_as_the_engine_words_it() {
    let wh = Wh::new("dw", "notnull").await;
    let sch = wh.schema.clone();
    let strict = wh.m("additive", &[table("t", "  columns:\n    - {name: id, type: bigint, nullable: false}\n    - {name: v, type: string}")]);
    wh.converge(&strict, false).await;
    wh.sql(&format!("INSERT INTO main.{sch}.t VALUES (1, 'a')"))
        .await;
    let relaxed = wh.m(
        "additive",
        &[table(
            "t",
            "  columns:\n    - {name: id, type: bigint}\n    - {name: v, type: string}",
        )],
    );
    let (plan, _) = wh.converge(&relaxed, false).await;
    assert_eq!(
        titles(&plan),
        vec![("DROP NOT NULL id".to_string(), RiskClass::Meta)]
    );
    assert!(col(&wh.read("t").await.unwrap(), "id").nullable);

    // back to NOT NULL: Databricks runs ALTER COLUMN … SET NOT NULL in place (it scans the data);
    // OSS Delta, which executes the emulator's SQL, refuses it. The refusal must arrive verbatim,
    // with our advice underneath, and leave the table as it was.
    let plan = wh.plan(&strict).await;
    assert!(has_step(&plan, "SET NOT NULL id"), "{}", render(&plan));
    let version = wh.read("t").await.unwrap().version;
    let report = wh.apply_may_fail(&strict, false).await.expect("planned");
    let failed = report
        .steps
        .iter()
        .find(|s| s.title == "SET NOT NULL id")
        .expect("the step ran");
    let StepStatus::Failed { error } = &failed.status else {
        panic!("OSS Delta refuses SET NOT NULL: {failed:?}")
    };
    assert!(
        error.contains("Cannot change nullable column to non-nullable: id"),
        "the engine's own words: {error}"
    );
    assert!(
        error.contains("statement "),
        "the statement id is named: {error}"
    );
    assert!(
        error.contains("advice:"),
        "advice follows the refusal: {error}"
    );
    let t = wh.read("t").await.unwrap();
    assert!(col(&t, "id").nullable);
    assert_eq!(t.version, version, "nothing was written");
}

// ------------------------------------------------------------------ drop table, UNDROP

#[tokio::test]
async fn orphans_are_kept_then_dropped_after_approval_with_undrop_as_the_undo() {
    let wh = Wh::new("dw", "orphans").await;
    let keep = table("kept", "  columns:\n    - {name: id, type: bigint}");
    let both = wh.m(
        "additive",
        &[
            keep.clone(),
            table("old", "  columns:\n    - {name: id, type: bigint}"),
        ],
    );
    wh.converge(&both, false).await;
    // a table nobody manages is never touched
    wh.sql(&format!(
        "CREATE TABLE main.{}.theirs (x INT) USING DELTA",
        wh.schema
    ))
    .await;

    let additive = wh.m("additive", std::slice::from_ref(&keep));
    let plan = wh.plan(&additive).await;
    let old = plan
        .tables
        .iter()
        .find(|t| t.table == wh.t("old"))
        .expect("the orphan is listed");
    assert_eq!(old.action, TableAction::Keep);
    assert!(!plan.has_changes(), "{}", render(&plan));

    let strict = wh.m("strict", &[keep]);
    let plan = wh.plan(&strict).await;
    let old = plan.tables.iter().find(|t| t.table == wh.t("old")).unwrap();
    assert_eq!(old.action, TableAction::Destroy);
    let drop = &old.steps()[0];
    assert!(matches!(drop.action, Action::DropTable));
    assert_eq!(drop.class, RiskClass::Destructive);
    let undo = drop.undo.clone().expect("the drop has an undo");
    assert!(
        undo == format!("UNDROP TABLE `main`.`{}`.`old`", wh.schema),
        "{undo}"
    );
    assert!(
        plan.tables
            .iter()
            .all(|t| t.table != wh.t("theirs") || t.steps().is_empty()),
        "unmanaged tables are left alone"
    );
    assert!(matches!(
        wh.apply_may_fail(&strict, false).await,
        Err(ApplyError::NeedsApproval { .. })
    ));
    assert!(wh.read("old").await.is_some());
    wh.apply_ok(&strict, true).await;
    assert!(wh.read("old").await.is_none());
    assert!(wh.read("theirs").await.is_some());
    assert!(!wh.plan(&strict).await.has_changes());
    // the plan's undo, run as written, brings the table back with its owner marker
    wh.sql(&undo).await;
    let back = wh.read("old").await.expect("UNDROP restores the table");
    assert_eq!(
        back.properties.get(OWNER_PROPERTY).map(String::as_str),
        Some("default/old")
    );
}

// ------------------------------------------------------------------ reruns and staleness

#[tokio::test]
async fn a_rerun_skips_what_holds_and_a_table_moved_by_someone_else_makes_the_plan_stale() {
    let wh = Wh::new("dw", "rerun").await;
    let sch = wh.schema.clone();
    let cols = "  columns:\n    - {name: id, type: bigint}\n    - {name: v, type: string}";
    let v1 = wh.m("additive", &[table("t", cols)]);
    wh.converge(&v1, false).await;
    let v2 = wh.m(
        "additive",
        &[table(
            "t",
            &format!("  comment: second\n  tags: {{k: v}}\n  properties: {{p: '1'}}\n{cols}"),
        )],
    );
    let plan = wh.plan(&v2).await;
    assert_eq!(plan.tables[0].steps().len(), 3, "{}", render(&plan));
    wh.apply_ok(&v2, false).await;
    // the same plan again: every step already holds, nothing is sent
    // (a fresh backend whose shared schema read outlives the check: the emulator is slow under load)
    let b = backend().with_share_window(Duration::from_secs(120));
    let report = run_plan(&b, &plan, &support::options()).await;
    assert_eq!(report.skipped(), 3, "{report:#?}");
    assert_eq!(
        b.statements(),
        0,
        "only the shared re-read (REST: the listing and the declared tags) ran, no write"
    );
    // rows appended by another writer leave the plan as it was
    let id = wh.plan(&v1).await.id;
    wh.sql(&format!("INSERT INTO main.{sch}.t VALUES (9, 'x')"))
        .await;
    assert_eq!(wh.plan(&v1).await.id, id, "appends are not a new plan");
    // a plan made before someone else changed the table is refused as stale
    wh.sql(&format!("ALTER TABLE main.{sch}.t ADD COLUMNS (w int)"))
        .await;
    let r = apply(&wh.b, &v1, Some(&id), None, &support::options()).await;
    assert!(matches!(r, Err(ApplyError::Stale { .. })), "{r:?}");
}

// ------------------------------------------------------------------ hostile text

/// Backticks, quotes, backslashes, `${…}`, newlines and unicode.
const HOSTILE: &str = "it's `quoted` \\ back\\slash ${x} ${env:HOME} \"dq\"\nline 2 ✓ ünï 表";

#[tokio::test]
async fn hostile_names_and_comments_round_trip_exactly() {
    let wh = Wh::new("dw", "hostile").await;
    let yaml_str = |s: &str| serde_json::to_string(s).unwrap(); // JSON strings are YAML flow scalars
    // `${…}` stays out of identifiers: Spark's variable substitution rewrites it even inside
    // backticks, and an identifier has no escape for it (literals do: `$\{`)
    let col_name = "it's a \"col\" \\ ü";
    let tbl = "o'rders_ü";
    let body = |comment: &str| {
        format!(
            "  name: {tname}\n  comment: {c}\n  properties: {{{pk}: {pv}}}\n  tags: {{{tk}: {tv}}}\n  columns:\n    - {{name: id, type: bigint}}\n    - name: {cn}\n      type: {ft}\n      comment: {c}\n      tags: {{{tk}: {tv}}}",
            tname = yaml_str(tbl),
            c = yaml_str(comment),
            pk = yaml_str("team.note"),
            pv = yaml_str(HOSTILE),
            tk = yaml_str("note"),
            tv = yaml_str("a'b\\c ${d} ✓"),
            cn = yaml_str(col_name),
            ft = yaml_str("struct<`odd ``field``'`: string>"),
        )
    };
    let v1 = wh.m("additive", &[table("hostile", &body(HOSTILE))]);
    wh.converge(&v1, false).await;
    let t = wh
        .read(tbl)
        .await
        .expect("the table with a hostile name exists");
    assert_eq!(t.table.table, tbl);
    assert_eq!(t.comment.as_deref(), Some(HOSTILE));
    assert_eq!(
        t.properties.get("team.note").map(String::as_str),
        Some(HOSTILE)
    );
    assert_eq!(
        t.tags.get("note").map(String::as_str),
        Some("a'b\\c ${d} ✓")
    );
    let c = col(&t, col_name);
    assert_eq!(c.comment.as_deref(), Some(HOSTILE));
    assert_eq!(
        c.tags.get("note").map(String::as_str),
        Some("a'b\\c ${d} ✓")
    );
    assert_eq!(c.data_type.to_string(), "struct<`odd ``field``'`:string>");
    // a change through ALTER (not CREATE) on the hostile column round-trips too
    let other = format!("{HOSTILE} — changed");
    let v2 = wh.m("additive", &[table("hostile", &body(&other))]);
    let (plan, _) = wh.converge(&v2, false).await;
    assert!(
        has_step(&plan, &format!("COMMENT ON COLUMN {col_name}")),
        "{}",
        render(&plan)
    );
    let t = wh.read(tbl).await.unwrap();
    assert_eq!(col(&t, col_name).comment.as_deref(), Some(other.as_str()));
    assert_eq!(t.comment.as_deref(), Some(other.as_str()));
}

#[tokio::test]
async fn widening_a_date_to_timestamp_ntz_enables_its_feature_and_keeps_the_values() {
    let wh = Wh::new("dw", "ntz").await;
    let sch = wh.schema.clone();
    let v1 = wh.m(
        "additive",
        &[table(
            "events",
            "  columns:\n    - {name: id, type: bigint}\n    - {name: day, type: date}\n",
        )],
    );
    wh.converge(&v1, false).await;
    wh.sql(&format!(
        "INSERT INTO main.{sch}.events VALUES (1, DATE'2026-11-30'), (2, NULL)"
    ))
    .await;
    let v2 = wh.m(
        "additive",
        &[table(
            "events",
            "  columns:\n    - {name: id, type: bigint}\n    - {name: day, type: timestamp_ntz}\n",
        )],
    );
    let (plan, _) = wh.converge(&v2, false).await;
    let steps = titles(&plan);
    let ntz = steps
        .iter()
        .position(|(t, _)| t == "enable timestampNtz")
        .unwrap_or_else(|| panic!("{steps:?}"));
    let alter = steps
        .iter()
        .position(|(t, _)| t == "ALTER COLUMN day TYPE timestamp_ntz")
        .unwrap_or_else(|| panic!("{steps:?}"));
    assert!(
        ntz < alter && steps[ntz].1 == RiskClass::Feature,
        "{steps:?}"
    );
    let live = wh.read("events").await.expect("the table");
    assert_eq!(
        col(&live, "day").data_type,
        delta_operator::model::DataType::TimestampNtz
    );
    assert_eq!(
        wh.scalar(&format!(
            "SELECT CAST(day AS STRING) FROM main.{sch}.events WHERE id = 1"
        ))
        .await,
        "2026-11-30 00:00:00"
    );
    assert_eq!(
        wh.scalar(&format!(
            "SELECT COUNT(*) FROM main.{sch}.events WHERE day IS NULL"
        ))
        .await,
        "1"
    );
}

/// What another tool made inside a table is not diffed away: a CHECK and a foreign key added
/// outside are reported and left alone, while the CHECK the operator made and the spec no longer
/// declares is dropped (its record, `delta-operator.io/constraints`, names it). A table made
/// outside and claimed keeps its live constraints the spec declares, and the claim records them
/// in the same write (one CLAIM step, nothing else).
#[tokio::test]
async fn constraints_another_tool_made_are_left_alone_and_only_the_operators_are_dropped() {
    let wh = Wh::new("dw", "owned").await;
    let customers = table(
        "customers",
        "  name: customers\n  columns:\n    - {name: id, type: bigint, nullable: false}\n  constraints:\n    - primaryKey: {columns: [id]}\n",
    );
    let orders = |checks: &str| {
        table(
            "orders",
            &format!(
                "  columns:\n    - {{name: id, type: bigint, nullable: false}}\n    - {{name: customer_id, type: bigint}}\n    - {{name: amount, type: int}}\n  constraints:\n{checks}"
            ),
        )
    };
    let both = "    - check: {name: mine, expression: amount >= 0}\n    - check: {name: also_mine, expression: id > 0}\n";
    let v1 = wh.m("additive", &[customers.clone(), orders(both)]);
    wh.converge(&v1, false).await;
    let o = wh.t("orders");
    let live = wh.read("orders").await.expect("orders");
    assert_eq!(
        live.properties
            .get(delta_operator::model::CONSTRAINTS_PROPERTY)
            .map(String::as_str),
        Some(r#"["check:also_mine","check:mine"]"#),
        "the create records the constraints it made"
    );
    // another tool adds a CHECK and a foreign key
    wh.sql(&format!(
        "ALTER TABLE {} ADD CONSTRAINT theirs CHECK (amount < 1000000)",
        delta_operator::backend::sql::table_name(&o)
    ))
    .await;
    wh.sql(&format!(
        "ALTER TABLE {} ADD CONSTRAINT their_fk FOREIGN KEY (customer_id) REFERENCES {} (id)",
        delta_operator::backend::sql::table_name(&o),
        delta_operator::backend::sql::table_name(&wh.t("customers"))
    ))
    .await;
    // the spec drops one of its own CHECKs
    let v2 = wh.m(
        "additive",
        &[
            customers,
            orders("    - check: {name: mine, expression: amount >= 0}\n"),
        ],
    );
    let plan = wh.plan(&v2).await;
    let t: Vec<(String, RiskClass)> = titles(&plan);
    assert!(
        has_step(&plan, "DROP CONSTRAINT also_mine"),
        "the operator's own: {t:?}"
    );
    assert!(
        !t.iter()
            .any(|(s, _)| s.contains("theirs") || s.starts_with("DROP FOREIGN KEY")),
        "what another tool made is never dropped: {t:?}"
    );
    let notes = &plan.tables.iter().find(|p| p.table == o).unwrap().notes;
    assert!(
        notes
            .iter()
            .any(|n| n.contains("CHECK theirs") && n.contains("FOREIGN KEY their_fk")),
        "{notes:?}"
    );
    wh.converge(&v2, false).await;
    let live = wh.read("orders").await.expect("orders");
    let mut checks: Vec<&str> = live.checks.iter().map(|c| c.name.as_str()).collect();
    checks.sort();
    assert_eq!(checks, vec!["mine", "theirs"]);
    assert_eq!(live.foreign_keys.len(), 1, "{:?}", live.foreign_keys);

    // a table made outside, with a CHECK the spec declares: the claim records it in one write
    wh.sql(&format!(
        "CREATE TABLE {} (id BIGINT, amount INT) USING DELTA",
        delta_operator::backend::sql::table_name(&wh.t("made_outside"))
    ))
    .await;
    wh.sql(&format!(
        "ALTER TABLE {} ADD CONSTRAINT positive CHECK (amount > 0)",
        delta_operator::backend::sql::table_name(&wh.t("made_outside"))
    ))
    .await;
    let claimed = wh.m(
        "additive",
        &[table(
            "made-outside",
            "  name: made_outside\n  columns:\n    - {name: id, type: bigint}\n    - {name: amount, type: int}\n  constraints:\n    - check: {name: positive, expression: amount > 0}\n",
        )],
    );
    let plan = wh.plan(&claimed).await;
    let steps: Vec<&delta_operator::plan::Step> =
        plan.tables.iter().flat_map(|t| t.steps()).collect();
    assert_eq!(steps.len(), 1, "{}", render(&plan));
    assert!(
        matches!(&steps[0].action, Action::Claim { constraints: Some(c), .. } if c == r#"["check:positive"]"#),
        "{:?}",
        steps[0].action
    );
    wh.converge(&claimed, false).await;
}

// The promises every backend keeps (tests/support/scenarios.rs), on the warehouse emulator.
#[tokio::test]
async fn shared_an_added_column_keeps_every_row_and_a_writers_append() {
    let wh = Wh::new("shared", "add").await;
    support::scenarios::an_added_column_keeps_every_row_and_a_writers_append(&wh).await;
}

#[tokio::test]
async fn shared_a_dropped_column_waits_for_the_approval_of_that_plan() {
    let wh = Wh::new("shared", "drop").await;
    support::scenarios::a_dropped_column_waits_for_the_approval_of_that_plan(&wh).await;
}

#[tokio::test]
async fn shared_a_table_a_job_evolves_is_governed_at_annotations_scope() {
    let wh = Wh::new("shared", "scope").await;
    support::scenarios::a_table_a_job_evolves_is_governed_at_annotations_scope(&wh).await;
}

/// `default: null` removes a live default: one DROP DEFAULT step (meta, no table feature),
/// rows written before keep their value, new rows get NULL, and its undo sets the old
/// expression again. Omitted, the live default is left alone.
#[tokio::test]
async fn a_default_removed_with_null_is_dropped_and_rows_keep_their_values() {
    let wh = Wh::new("dw", "dropdef").await;
    let spec = |default: &str| {
        table(
            "regions",
            &format!(
                "  columns:\n    - {{name: id, type: bigint}}\n    - {{name: region, type: string{default}}}"
            ),
        )
    };
    let v1 = wh.manifests(None, &spec(", default: \"'EU'\""));
    wh.converge(&v1, false).await;
    let q = wh.q("regions");
    wh.sql(&format!("INSERT INTO {q} (id) VALUES (1)")).await;
    let live = wh.read("regions").await.expect("created");
    assert_eq!(
        live.column("region").and_then(|c| c.default.as_deref()),
        Some("'EU'")
    );
    // silent: the live default stays
    assert!(!wh.plan(&wh.manifests(None, &spec(""))).await.has_changes());

    let v2 = wh.manifests(None, &spec(", default: null"));
    let (plan, _) = wh.converge(&v2, false).await;
    let steps = plan.tables[0].steps();
    assert_eq!(
        steps
            .iter()
            .map(|s| (s.action.title(), s.class))
            .collect::<Vec<_>>(),
        vec![("DROP DEFAULT on region".to_string(), RiskClass::Meta)],
        "{}",
        render(&plan)
    );
    let statements: Vec<String> = steps[0].statements.iter().map(|s| s.to_string()).collect();
    assert_eq!(
        statements,
        vec![format!(
            "ALTER TABLE `main`.`{}`.`regions` ALTER COLUMN `region` DROP DEFAULT",
            wh.schema
        )]
    );
    let undo = steps[0].undo.as_deref().unwrap_or_default();
    assert!(undo.contains("SET DEFAULT 'EU'"), "undo: {undo}");

    wh.sql(&format!("INSERT INTO {q} (id) VALUES (2)")).await;
    assert_eq!(
        wh.rows(&format!("SELECT id, region FROM {q} ORDER BY id"))
            .await,
        vec!["1 | EU", "2 | NULL"]
    );
    let live = wh.read("regions").await.expect("still there");
    assert_eq!(
        live.column("region").and_then(|c| c.default.as_deref()),
        None
    );
}

/// A pipeline's streaming table (the emulator records its type as Unity Catalog reports it)
/// is read as a streaming table: at scope Full it is refused by name (ScopeTooWideForKind)
/// with nothing applied; at Annotations its tags and column comment are set with
/// ALTER STREAMING TABLE and COMMENT ON COLUMN, it takes no claim (its ALTER has no SET
/// TBLPROPERTIES: the emulator refuses one as Databricks documents), and the next plan is
/// empty. It is never an orphan of a strict schema.
#[tokio::test]
async fn a_streaming_table_is_governed_at_annotations_and_refused_wider() {
    let wh = Wh::new("kinds", "st").await;
    wh.sql(&format!(
        "CREATE STREAMING TABLE {} (id BIGINT, amount INT) USING delta",
        wh.q("events")
    ))
    .await;
    let live = wh.read("events").await.expect("the streaming table");
    assert_eq!(live.kind, delta_operator::model::TableKind::StreamingTable);
    let spec = |scope: &str| {
        wh.m(
            "strict",
            &[table(
                "events",
                &format!(
                    "  scope: {scope}\n  tags: {{source: kafka}}\n  columns:\n    - {{name: amount, type: int, comment: in cents, tags: {{pii: \"false\"}}}}\n"
                ),
            )],
        )
    };
    let full = spec("Full");
    let plan = wh.plan(&full).await;
    let rules: Vec<String> = plan
        .rejected()
        .flat_map(|t| match &t.outcome {
            delta_operator::plan::Outcome::Rejected { failures } => {
                failures.iter().map(|f| f.rule.to_string()).collect()
            }
            _ => vec![],
        })
        .collect();
    assert_eq!(rules, ["ScopeTooWideForKind"], "{}", render(&plan));
    assert!(
        render(&plan).contains("a streaming table"),
        "{}",
        render(&plan)
    );

    let annotated = spec("Annotations");
    let plan = wh.plan(&annotated).await;
    let statements: Vec<String> = plan.tables[0]
        .steps()
        .iter()
        .flat_map(|s| s.statements.iter().map(ToString::to_string))
        .collect();
    assert!(
        statements
            .iter()
            .any(|s| s.starts_with("ALTER STREAMING TABLE") && s.contains("SET TAGS")),
        "{statements:#?}"
    );
    assert!(
        statements
            .iter()
            .any(|s| s.starts_with("COMMENT ON COLUMN")),
        "{statements:#?}"
    );
    assert!(
        !statements.iter().any(|s| s.contains("TBLPROPERTIES")),
        "no claim on a streaming table: {statements:#?}"
    );
    wh.apply_ok(&annotated, false).await;
    let live = wh.read("events").await.expect("the streaming table");
    assert_eq!(live.tags.get("source").map(String::as_str), Some("kafka"));
    let amount = col(&live, "amount");
    assert_eq!(amount.comment.as_deref(), Some("in cents"));
    assert_eq!(amount.tags.get("pii").map(String::as_str), Some("false"));
    let again = wh.plan(&annotated).await;
    assert!(!again.has_changes(), "{}", render(&again));
    // never an orphan: a strict schema with no spec for it plans nothing for it
    let none = wh.m("strict", &[]);
    let plan = wh.plan(&none).await;
    assert!(
        plan.tables.iter().all(|t| t.table.table != "events"),
        "{}",
        render(&plan)
    );
    // the emulator refuses what its ALTER does not take, as Databricks documents
    let refused =
        wh.b.client()
            .execute(
                &format!(
                    "ALTER STREAMING TABLE {} SET TBLPROPERTIES ('a' = 'b')",
                    wh.q("events")
                ),
                &|_: &str| {},
            )
            .await;
    assert!(refused.is_err(), "{refused:?}");
}

/// A table an outside SQL job keeps evolving while the operator governs it at scope
/// Annotations: the job adds a column, rewrites the table comment it owns and inserts rows every
/// few hundred milliseconds, on its own client, before, during and after the apply. The
/// operator sets the tags, the column comment and the grants the spec declares, in metadata
/// steps only; no plan ever holds a column change, and the job's own changes never make one;
/// every row the job wrote is there.
#[tokio::test]
async fn a_table_a_sql_job_evolves_meanwhile_is_governed_at_annotations() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    let wh = Wh::new("shared", "job").await;
    let q = wh.q("events");
    wh.sql(&format!(
        "CREATE TABLE {q} (id BIGINT, amount INT) USING delta COMMENT 'the job made it'"
    ))
    .await;
    let stop = Arc::new(AtomicBool::new(false));
    let rows = Arc::new(AtomicUsize::new(0));
    let job = {
        let (stop, rows, q) = (stop.clone(), rows.clone(), q.clone());
        tokio::spawn(async move {
            let b = backend();
            let run = |s: String| {
                let b = &b;
                async move { b.client().execute(&s, &|_: &str| {}).await }
            };
            let mut n = 0usize;
            while !stop.load(Ordering::SeqCst) {
                n += 1;
                if run(format!("INSERT INTO {q} (id, amount) VALUES ({n}, {n})"))
                    .await
                    .is_ok()
                {
                    rows.fetch_add(1, Ordering::SeqCst);
                }
                if n.is_multiple_of(3) {
                    let _ = run(format!("ALTER TABLE {q} ADD COLUMN `c{n}` STRING")).await;
                    let _ = run(format!("COMMENT ON TABLE {q} IS 'the job, round {n}'")).await;
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        })
    };
    let spec = wh.manifests(
        None,
        &table(
            "events",
            "  scope: Annotations\n  tags: {domain: sales, tier: bronze}\n  grants: [{principal: analysts, privileges: [SELECT]}]\n  columns:\n    - {name: amount, comment: in cents, tags: {pii: \"false\"}}\n",
        ),
    );
    let no_column_change = |plan: &Plan| {
        for t in &plan.tables {
            assert!(t.is_accepted(), "{}", render(plan));
            assert!(
                t.changes
                    .iter()
                    .all(|c| c.aspect().is_none_or(|a| !matches!(
                        a,
                        delta_operator::model::Aspect::Columns
                            | delta_operator::model::Aspect::Layout
                    ))),
                "{}",
                render(plan)
            );
            assert!(t.steps().iter().all(|s| s.class == RiskClass::Meta));
        }
    };
    let first = wh.plan(&spec).await;
    no_column_change(&first);
    assert!(first.has_changes());
    wh.apply_ok(&spec, false).await;
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_millis(700)).await;
        let again = wh.plan(&spec).await;
        no_column_change(&again);
        assert!(
            !again.has_changes(),
            "the job's columns and comment never make a plan: {}",
            render(&again)
        );
    }
    stop.store(true, Ordering::SeqCst);
    job.await.unwrap();
    let live = wh.read("events").await.expect("the table");
    assert_eq!(live.tags.get("domain").map(String::as_str), Some("sales"));
    assert!(
        live.grants.iter().any(|g| g.principal == "analysts"),
        "{:?}",
        live.grants
    );
    let amount = col(&live, "amount");
    assert_eq!(amount.comment.as_deref(), Some("in cents"));
    assert_eq!(amount.tags.get("pii").map(String::as_str), Some("false"));
    assert!(
        live.columns.len() > 2,
        "the job added columns meanwhile: {:?}",
        live.columns
    );
    assert!(
        live.comment
            .as_deref()
            .is_some_and(|c| c.starts_with("the job")),
        "the job's comment is its own: {:?}",
        live.comment
    );
    let count = wh.scalar(&format!("SELECT count(*) FROM {q}")).await;
    assert_eq!(
        count,
        rows.load(Ordering::SeqCst).to_string(),
        "every row the job wrote"
    );
}
