//! Nothing lost in a replace, proven on real Delta (issue 12, item 5).
//!
//! On the warehouse emulator (Delta Lake 4.4 on Spark 4.2; Unity Catalog
//! emulated), a realistic table is built through SQL, not through the
//! operator: a table comment, column comments, a column default, change data
//! feed, column mapping, deletion vectors, row tracking, a CHECK, a foreign
//! key to a parent's primary key, and things its spec does not manage: a
//! property another tool set, a table tag, a column tag, a grant. It is
//! declared as a DeltaTable (the first apply only claims it), then every
//! kind of rewrite is applied to its own copy of it, and everything readable
//! before and after is compared: DESCRIBE TABLE EXTENDED, SHOW TBLPROPERTIES,
//! information_schema (columns, tables, constraints, key columns, tags,
//! grants) and every column's values. What the spec changes is written out
//! as the expected edit of the "before" rows (each edited row must exist);
//! nothing else may differ, and the re-plan must be empty.
//!
//! `make test` exports DATABRICKS_HOST, DATABRICKS_TOKEN and
//! DATABRICKS_WAREHOUSE_ID; without them every test here fails (never skips).
//! Each test works in its own schema.

mod support;

use std::collections::BTreeSet;

use delta_operator::apply::{ApplyReport, StepStatus};
use delta_operator::engine::Inputs;
use delta_operator::plan::render::text::render;
use delta_operator::plan::{Action, Plan, TablePlan};
use support::table;
use support::warehouse::Wh;

/// Rows in the table: enough for several files, small enough to be quick.
const ROWS: i64 = 60;

/// This suite's manifests: the schema (additive or strict), the parent `customers` as
/// built, and the table `t` with `body`.
trait Suite {
    fn m(&self, mode: &str, body: &str) -> Inputs;
}

impl Suite for Wh {
    fn m(&self, mode: &str, body: &str) -> Inputs {
        let customers = table(
            "customers",
            "  columns:\n    - {name: id, type: bigint, nullable: false}\n    - {name: name, type: string}\n  constraints:\n    - primaryKey: {name: customers_pk, columns: [id]}",
        );
        self.manifests(Some(mode), &format!("{customers}{}", table("t", body)))
    }
}

/// The plan of `t` (the parent comes first).
fn t_plan(plan: &Plan) -> &TablePlan {
    plan.tables
        .iter()
        .find(|t| t.table.table == "t")
        .unwrap_or_else(|| panic!("no plan for t:\n{}", render(plan)))
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

/// The parent `customers` (its primary key the foreign key's target) and the
/// realistic `t`, built through SQL as another tool would, then filled.
async fn realistic(wh: &Wh, key_not_null: bool) {
    let (t, c) = (wh.q("t"), wh.q("customers"));
    for s in [
        format!("CREATE TABLE {c} (id BIGINT NOT NULL, name STRING) USING DELTA"),
        format!("ALTER TABLE {c} ADD CONSTRAINT customers_pk PRIMARY KEY (id)"),
        format!("INSERT INTO {c} SELECT id, concat('c', id) FROM range(1, 11)"),
        format!(
            "CREATE TABLE {t} (\
               id BIGINT{} COMMENT 'the key', \
               customer_id BIGINT, \
               code STRING COMMENT 'a number as text', \
               qty INT DEFAULT 5, \
               note STRING COMMENT 'free text', \
               region STRING, \
               legacy STRING) \
             USING DELTA COMMENT 'orders as placed' \
             TBLPROPERTIES (\
               'delta.columnMapping.mode' = 'name', \
               'delta.enableChangeDataFeed' = 'true', \
               'delta.enableDeletionVectors' = 'true', \
               'delta.enableRowTracking' = 'true', \
               'delta.feature.allowColumnDefaults' = 'supported', \
               'other.tool.owner' = 'ingest-7')",
            if key_not_null { " NOT NULL" } else { "" }
        ),
        format!("ALTER TABLE {t} ADD CONSTRAINT id_positive CHECK (id > 0)"),
        format!(
            "ALTER TABLE {t} ADD CONSTRAINT t_customer FOREIGN KEY (customer_id) REFERENCES {c} (id)"
        ),
        format!("ALTER TABLE {t} SET TAGS ('domain' = 'sales')"),
        format!("ALTER TABLE {t} ALTER COLUMN note SET TAGS ('pii' = 'maybe')"),
        format!("GRANT SELECT ON TABLE {t} TO analysts"),
        format!(
            "INSERT INTO {t} (id, customer_id, code, qty, note, region, legacy) \
             SELECT id, 1 + id % 10, CAST(id * 7 AS STRING), CAST(id % 9 AS INT), \
                    CASE WHEN id % 5 = 0 THEN NULL ELSE concat('n''', id) END, \
                    concat('r', id % 3), concat('old', id) \
             FROM range(1, {})",
            ROWS + 1
        ),
        // a deletion vector, so the replace has one to deal with
        format!("DELETE FROM {t} WHERE id = {ROWS}"),
    ] {
        wh.sql(&s).await;
    }
}

/// The spec of `t` as built: silent about the table comment, the default,
/// the properties, the table tag, the column tag and the grant.
fn spec(wh: &Wh, columns: &[&str], extra: &str) -> String {
    let mut s = String::from("  columns:\n");
    for c in columns {
        s.push_str(&format!("    - {c}\n"));
    }
    s.push_str(&format!(
        "  constraints:\n    - check: {{name: id_positive, expression: id > 0}}\n    - foreignKey: {{name: t_customer, columns: [customer_id], references: main.{}.customers, referencedColumns: [id]}}",
        wh.schema
    ));
    s.push_str(extra);
    s
}

const ID: &str = "{name: id, type: bigint, comment: the key}";
/// The key NOT NULL and commented: a checked replace must keep its comment
/// without converting it (issue 28: a CASE around it lost the comment).
const ID_NOT_NULL: &str = "{name: id, type: bigint, nullable: false, comment: the key}";
const CUSTOMER: &str = "{name: customer_id, type: bigint}";
const CODE: &str = "{name: code, type: string, comment: a number as text}";
const QTY: &str = "{name: qty, type: int}";
const NOTE: &str = "{name: note, type: string, comment: free text}";
const REGION: &str = "{name: region, type: string}";
const LEGACY: &str = "{name: legacy, type: string}";
const AS_BUILT: [&str; 7] = [ID, CUSTOMER, CODE, QTY, NOTE, REGION, LEGACY];

/// Keys of SHOW TBLPROPERTIES that legitimately move in a replace, left out
/// of the comparison:
/// - `delta.columnMapping.maxColumnId`: Delta gives the replaced schema's
///   fields new column ids and never reuses one, so the highest id grows
///   (Delta refuses the key from a user: DELTA_CANNOT_MODIFY_TABLE_PROPERTY).
///
/// Nothing else is left out: the protocol keys (`delta.minReaderVersion`,
/// `delta.minWriterVersion`, `delta.feature.*`) and row tracking's
/// materialized column names must stay as they were.
const MOVES: &[&str] = &["delta.columnMapping.maxColumnId"];

/// Everything readable about `t`, one row per fact, each prefixed by where
/// it was read.
async fn snapshot(wh: &Wh) -> Vec<String> {
    let t = wh.q("t");
    let sch = &wh.schema;
    let mut out = Vec::new();
    for r in wh.rows(&format!("DESCRIBE TABLE EXTENDED {t}")).await {
        // the properties are compared key by key below (SHOW TBLPROPERTIES)
        if r.starts_with("Table Properties |") {
            continue;
        }
        out.push(format!("describe: {r}"));
    }
    for r in wh.rows(&format!("SHOW TBLPROPERTIES {t}")).await {
        let key = r.split(" | ").next().unwrap_or_default();
        if !MOVES.contains(&key) {
            out.push(format!("property: {r}"));
        }
    }
    let filter = format!("table_schema = '{sch}' AND table_name = 't'");
    let queries = [
        (
            "columns",
            format!(
                "SELECT column_name, ordinal_position, data_type, full_data_type, is_nullable, column_default, comment \
                 FROM main.information_schema.columns WHERE {filter} ORDER BY ordinal_position"
            ),
        ),
        (
            "tables",
            format!(
                "SELECT table_name, table_type, table_owner, comment, data_source_format \
                 FROM main.information_schema.tables WHERE {filter}"
            ),
        ),
        (
            "table_constraints",
            format!(
                "SELECT constraint_name, constraint_type, enforced \
                 FROM main.information_schema.table_constraints WHERE {filter} ORDER BY constraint_name"
            ),
        ),
        (
            "key_column_usage",
            format!(
                "SELECT constraint_name, column_name, ordinal_position \
                 FROM main.information_schema.key_column_usage WHERE {filter} ORDER BY constraint_name, ordinal_position"
            ),
        ),
        (
            "referential_constraints",
            format!(
                "SELECT constraint_name, unique_constraint_name, update_rule, delete_rule \
                 FROM main.information_schema.referential_constraints WHERE constraint_schema = '{sch}' ORDER BY constraint_name"
            ),
        ),
        (
            "table_tags",
            format!(
                "SELECT tag_name, tag_value FROM main.information_schema.table_tags \
                 WHERE schema_name = '{sch}' AND table_name = 't' ORDER BY tag_name"
            ),
        ),
        (
            "column_tags",
            format!(
                "SELECT column_name, tag_name, tag_value FROM main.information_schema.column_tags \
                 WHERE schema_name = '{sch}' AND table_name = 't' ORDER BY column_name, tag_name"
            ),
        ),
        (
            "grants",
            format!(
                "SELECT grantee, privilege_type, inherited_from FROM main.information_schema.table_privileges \
                 WHERE {filter} ORDER BY grantee, privilege_type"
            ),
        ),
    ];
    for (what, q) in queries {
        for r in wh.rows(&q).await {
            out.push(format!("{what}: {r}"));
        }
    }
    // every column's values, in id order, as text (a cast to another type
    // keeps the text of every value it converts)
    let cols: Vec<String> = wh
        .sql(&format!("SELECT * FROM {t} LIMIT 0"))
        .await
        .columns
        .clone();
    for c in cols {
        let q = format!(
            "SELECT sha2(to_json(collect_list(coalesce(CAST(`{c}` AS STRING), 'NULL'))), 256) \
             FROM (SELECT * FROM {t} ORDER BY id)"
        );
        let sum = wh.rows(&q).await.join("");
        out.push(format!("values: {c} | {sum}"));
    }
    out.push(format!(
        "values: rows | {}",
        wh.rows(&format!("SELECT count(*) FROM {t}")).await.join("")
    ));
    out
}

/// The expected snapshot: `before` with each `(row, replacement)` edit
/// applied (None removes the row). Every edited row must be in `before`, so
/// an expectation cannot silently match nothing.
fn edited(before: &[String], edits: &[(String, Option<String>)]) -> Vec<String> {
    for (row, _) in edits {
        assert!(
            before.contains(row),
            "the expected edit names a row that is not there: {row}\nbefore:\n{}",
            before.join("\n")
        );
    }
    before
        .iter()
        .filter_map(|r| match edits.iter().find(|(from, _)| from == r) {
            Some((_, to)) => to.clone(),
            None => Some(r.clone()),
        })
        .collect()
}

/// Equal as sets of rows with their counts (the order of columns is in
/// `ordinal_position`); on failure, says what is missing and what is new.
fn same(after: &[String], expected: &[String], plan: &Plan) {
    let (mut a, mut e) = (after.to_vec(), expected.to_vec());
    a.sort();
    e.sort();
    if a == e {
        return;
    }
    let a: BTreeSet<&String> = after.iter().collect();
    let e: BTreeSet<&String> = expected.iter().collect();
    let lost: Vec<&&String> = e.difference(&a).collect();
    let new: Vec<&&String> = a.difference(&e).collect();
    panic!(
        "the replace changed what it should not\nlost or changed (expected, not found):\n{lost:#?}\nnew (found, not expected):\n{new:#?}\n(if both are empty, a row is repeated)\nplan:\n{}",
        render(plan)
    );
}

/// Builds the table, claims it (the first apply), and returns the snapshot
/// after the claim: the "before" of a rewrite.
async fn claimed(wh: &Wh, mode: &str) -> Vec<String> {
    claimed_as(wh, mode, &AS_BUILT, false).await
}

async fn claimed_as(wh: &Wh, mode: &str, columns: &[&str], key_not_null: bool) -> Vec<String> {
    realistic(wh, key_not_null).await;
    let inputs = wh.m(mode, &spec(wh, columns, ""));
    let plan = wh.plan(&inputs).await;
    let titles: Vec<String> = plan
        .tables
        .iter()
        .flat_map(|t| t.steps().iter().map(|s| s.action.title()))
        .collect();
    assert_eq!(
        titles,
        vec!["CLAIM ownership".to_string(), "CLAIM ownership".to_string()],
        "the specs declare the tables as built: only the claims\n{}",
        render(&plan)
    );
    let note = t_plan(&plan)
        .notes
        .iter()
        .find(|n| n.starts_with("properties not in the spec"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        note,
        "properties not in the spec, left untouched: delta.columnMapping.mode, delta.enableChangeDataFeed, delta.enableDeletionVectors, delta.enableRowTracking, other.tool.owner",
        "the note lists what someone chose, not the protocol or Delta's own keys"
    );
    ok(&wh.apply_report(&inputs, true).await);
    let again = wh.plan(&inputs).await;
    assert!(!again.has_changes(), "claimed:\n{}", render(&again));
    let before = snapshot(wh).await;
    eprintln!("before:\n{}", before.join("\n"));
    before
}

/// Applies `inputs` (a rewrite), then checks the snapshot against the
/// expected edit of `before` (plus the rows the change adds) and that the
/// re-plan is empty.
async fn rewrite_keeps_everything(
    wh: &Wh,
    inputs: &Inputs,
    before: &[String],
    edits: &[(String, Option<String>)],
    added: &[&str],
) -> Plan {
    let plan = wh.plan(inputs).await;
    assert!(
        t_plan(&plan)
            .steps()
            .iter()
            .any(|s| matches!(s.action, Action::Rewrite { .. })),
        "a rewrite is planned:\n{}",
        render(&plan)
    );
    let report = wh.apply_report(inputs, true).await;
    ok(&report);
    let again = wh.plan(inputs).await;
    assert!(
        !again.has_changes(),
        "the re-plan is empty:\n{}",
        render(&again)
    );
    let after = snapshot(wh).await;
    let mut expected = edited(before, edits);
    expected.extend(added.iter().map(|r| r.to_string()));
    same(&after, &expected, &plan);
    plan
}

fn edit(from: &str, to: &str) -> (String, Option<String>) {
    (from.to_string(), Some(to.to_string()))
}

fn gone(row: &str) -> (String, Option<String>) {
    (row.to_string(), None)
}

/// string → int is no widening: a rewrite on Databricks, staged (it may lose values).
fn code_to_int() -> Vec<(String, Option<String>)> {
    vec![
        edit(
            "describe: code | string | a number as text",
            "describe: code | int | a number as text",
        ),
        edit(
            "columns: code | 2 | STRING | string | YES | NULL | a number as text",
            "columns: code | 2 | INT | int | YES | NULL | a number as text",
        ),
    ]
}

#[tokio::test]
async fn a_staged_type_change_keeps_everything_else() {
    let wh = Wh::new("fid", "staged").await;
    let before = claimed(&wh, "additive").await;
    let v2 = wh.m(
        "additive",
        &spec(
            &wh,
            &[
                ID,
                CUSTOMER,
                "{name: code, type: int, comment: a number as text}",
                QTY,
                NOTE,
                REGION,
                LEGACY,
            ],
            "",
        ),
    );
    let plan = rewrite_keeps_everything(&wh, &v2, &before, &code_to_int(), &[]).await;
    assert!(
        t_plan(&plan)
            .steps()
            .iter()
            .any(|s| s.action.title() == "STAGE rewritten data"),
        "{}",
        render(&plan)
    );
}

/// int → string cannot lose a value: one write-once replace. The converted
/// column is a new field to Delta, so its DEFAULT is put back.
#[tokio::test]
async fn a_lossless_write_once_rewrite_keeps_everything_else() {
    let wh = Wh::new("fid", "once").await;
    let before = claimed(&wh, "additive").await;
    let v2 = wh.m(
        "additive",
        &spec(
            &wh,
            &[
                ID,
                CUSTOMER,
                CODE,
                "{name: qty, type: string}",
                NOTE,
                REGION,
                LEGACY,
            ],
            "",
        ),
    );
    let plan = rewrite_keeps_everything(
        &wh,
        &v2,
        &before,
        &[
            edit(
                "describe: qty | int | NULL",
                "describe: qty | string | NULL",
            ),
            edit("describe: qty | int | 5", "describe: qty | string | 5"),
            edit(
                "columns: qty | 3 | INT | int | YES | 5 | NULL",
                "columns: qty | 3 | STRING | string | YES | 5 | NULL",
            ),
        ],
        &[],
    )
    .await;
    let titles: Vec<String> = t_plan(&plan)
        .steps()
        .iter()
        .map(|s| s.action.title())
        .collect();
    assert!(
        titles.iter().any(|t| t == "REPLACE TABLE (from itself)")
            && !titles.iter().any(|t| t.starts_with("STAGE")),
        "written once:\n{}",
        render(&plan)
    );
}

/// A rename and a drop planned with a staged rewrite are made by the
/// rewrite: a RENAME in place first would leave the stage selecting a name
/// that is gone. The renamed column keeps its comment and (put back) its tag.
#[tokio::test]
async fn a_rename_and_a_drop_with_a_rewrite_keep_everything_else() {
    let wh = Wh::new("fid", "rename").await;
    let before = claimed(&wh, "additive").await;
    let v2 = wh.m(
        "additive",
        &spec(
            &wh,
            &[
                ID,
                CUSTOMER,
                "{name: code, type: int, comment: a number as text}",
                QTY,
                "{name: remark, type: string, comment: free text, renamedFrom: note}",
                REGION,
            ],
            "",
        ),
    );
    let note_values = before
        .iter()
        .find(|r| r.starts_with("values: note | "))
        .cloned()
        .expect("note's values");
    let mut edits = code_to_int();
    edits.extend([
        edit(
            "describe: note | string | free text",
            "describe: remark | string | free text",
        ),
        edit(
            "columns: note | 4 | STRING | string | YES | NULL | free text",
            "columns: remark | 4 | STRING | string | YES | NULL | free text",
        ),
        edit(
            "column_tags: note | pii | maybe",
            "column_tags: remark | pii | maybe",
        ),
        edit(
            &note_values,
            &note_values.replace("values: note | ", "values: remark | "),
        ),
        gone("describe: legacy | string | NULL"),
        gone("columns: legacy | 6 | STRING | string | YES | NULL | NULL"),
    ]);
    let legacy_values = before
        .iter()
        .find(|r| r.starts_with("values: legacy | "))
        .cloned()
        .expect("legacy's values");
    edits.push(gone(&legacy_values));
    let plan = rewrite_keeps_everything(&wh, &v2, &before, &edits, &[]).await;
    let titles: Vec<String> = t_plan(&plan)
        .steps()
        .iter()
        .map(|s| s.action.title())
        .collect();
    assert!(
        !titles
            .iter()
            .any(|t| t.starts_with("RENAME COLUMN") || t.starts_with("DROP COLUMN")),
        "the rewrite renames and drops:\n{}",
        render(&plan)
    );
}

/// A new partitioning is a rewrite on Databricks (write-once: nothing converts).
fn partitioned() -> [&'static str; 3] {
    [
        "describe: # Partition Information |  | ",
        "describe: # col_name | data_type | comment",
        "describe: region | string | NULL",
    ]
}

#[tokio::test]
async fn a_new_partitioning_keeps_everything_else() {
    let wh = Wh::new("fid", "part").await;
    let before = claimed(&wh, "additive").await;
    let v2 = wh.m(
        "additive",
        &spec(&wh, &AS_BUILT, "\n  partitionedBy: [region]"),
    );
    rewrite_keeps_everything(&wh, &v2, &before, &[], &partitioned()).await;
}

/// The shallow clone taken before the rewrite is nobody's table: in a strict
/// schema, the re-plan must not drop it as an orphan (the clone copied the
/// owner marker, which the clone step removes from it).
#[tokio::test]
async fn a_clone_before_the_rewrite_is_kept_in_a_strict_schema() {
    let wh = Wh::new("fid", "clone").await;
    let before = claimed(&wh, "strict").await;
    let v2 = wh.m(
        "strict",
        &spec(
            &wh,
            &AS_BUILT,
            "\n  partitionedBy: [region]\n  safety: {cloneBeforeRewrite: true}",
        ),
    );
    let plan = rewrite_keeps_everything(&wh, &v2, &before, &[], &partitioned()).await;
    let name = t_plan(&plan)
        .steps()
        .iter()
        .find_map(|s| match &s.action {
            Action::CloneTable { name } => Some(name.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("a clone step:\n{}", render(&plan)));
    // the plan names the clone by the version it is taken at ({version}, bound when it runs)
    let prefix = name
        .strip_suffix("{version}")
        .unwrap_or_else(|| panic!("a placeholder in {name}"));
    let again = wh.plan(&v2).await;
    let name = again
        .unmanaged
        .iter()
        .find(|u| {
            u.table
                .strip_prefix(prefix)
                .is_some_and(|v| !v.is_empty() && v.chars().all(|c| c.is_ascii_digit()))
        })
        .map(|u| u.table.clone())
        .unwrap_or_else(|| {
            panic!(
                "the clone is listed as unmanaged, left untouched: {:?}",
                again.unmanaged
            )
        });
    // the clone still reads the rows as they were
    assert_eq!(
        wh.rows(&format!(
            "SELECT count(*) FROM {}",
            wh.q(&format!("`{name}`"))
        ))
        .await,
        vec![(ROWS - 1).to_string()]
    );
}

/// The properties and the table comment ride in the replace itself, and a
/// NOT NULL column the replace does not convert keeps its comment (it is
/// selected by name; the row checks are in the WHERE clause): stopped right
/// after the REPLACE (as a refused NOT NULL check or an interruption would
/// stop it), the table has every property, the one another tool set
/// included, and its comment. Change data feed, which Delta refuses in a
/// replace of a column-mapped table, is owed: its record rides in the
/// replace, and the next plan puts it back.
///
/// The emulator's OSS Delta cannot run the SET NOT NULL put-back (a
/// Databricks warehouse does): the test stops before it, and finishes with
/// the key declared nullable.
#[tokio::test]
async fn properties_and_comments_survive_a_stop_right_after_the_replace() {
    let wh = Wh::new("fid", "stop").await;
    let built = [ID_NOT_NULL, CUSTOMER, CODE, QTY, NOTE, REGION, LEGACY];
    let before = claimed_as(&wh, "additive", &built, true).await;
    let code_int = "{name: code, type: int, comment: a number as text}";
    let v2 = wh.m(
        "additive",
        &spec(
            &wh,
            &[ID_NOT_NULL, CUSTOMER, code_int, QTY, NOTE, REGION, LEGACY],
            "",
        ),
    );
    let plan = wh.plan(&v2).await;
    let tp = t_plan(&plan).clone();
    let t = delta_operator::model::TableRef::new("main", &wh.schema, "t");
    let run = delta_operator::backend::TableRun::unlocked(&t);
    let mut replaced = false;
    for step in tp.steps() {
        let live = delta_operator::backend::Backend::read(
            &wh.b,
            std::slice::from_ref(&t),
            &delta_operator::backend::Extras::everything(),
        )
        .await
        .expect("read")
        .pop()
        .flatten();
        let bound = delta_operator::apply::bind::bind_step(&wh.b, &run, &tp, step, live.as_ref())
            .unwrap_or_else(|e| panic!("{}: {e}", step.action.title()));
        delta_operator::backend::Backend::run(
            &wh.b,
            &run,
            &tp,
            step,
            &bound,
            live.as_ref(),
            delta_operator::backend::StepProgress::unwatched(),
        )
        .await
        .unwrap_or_else(|e| panic!("{}: {e}", step.action.title()));
        if step.action.title().starts_with("REPLACE TABLE") {
            replaced = true;
            break;
        }
    }
    assert!(replaced, "a replace in {}", render(&plan));
    let record = r#"property: delta-operator.io/put-back | {"delta.enableChangeDataFeed":"true"}"#;
    let mut expected = edited(
        &before,
        &[
            gone("property: delta.enableChangeDataFeed | true"),
            // a CHECK is put back after the replace (the next plan adds it)
            gone("property: delta.constraints.id_positive | id > 0"),
            // the replace makes columns nullable (put back next); the comment stays
            edit(
                "columns: id | 0 | LONG | bigint | NO | NULL | the key",
                "columns: id | 0 | LONG | bigint | YES | NULL | the key",
            ),
        ],
    );
    expected.push(record.to_string());
    let kept = |r: &String| {
        r.starts_with("property: ")
            || r.starts_with("tables: ")
            || r.starts_with("columns: id ")
            || r.starts_with("describe: id ")
    };
    let after: Vec<String> = snapshot(&wh).await.into_iter().filter(kept).collect();
    let expected: Vec<String> = expected.into_iter().filter(kept).collect();
    assert!(
        expected
            .iter()
            .any(|r| r == "property: other.tool.owner | ingest-7"),
        "{expected:?}"
    );
    same(&after, &expected, &plan);
    // the next plan owes the change data feed from the record
    let v3 = wh.m(
        "additive",
        &spec(
            &wh,
            &[ID, CUSTOMER, code_int, QTY, NOTE, REGION, LEGACY],
            "",
        ),
    );
    let next = wh.plan(&v3).await;
    let titles: Vec<String> = t_plan(&next)
        .steps()
        .iter()
        .map(|s| s.action.title())
        .collect();
    assert!(
        titles
            .iter()
            .any(|t| t == "SET TBLPROPERTIES (delta.enableChangeDataFeed)")
            && titles
                .iter()
                .any(|t| t == "UNSET TBLPROPERTIES (delta-operator.io/put-back)"),
        "{}",
        render(&next)
    );
    ok(&wh.apply_report(&v3, true).await);
    let again = wh.plan(&v3).await;
    assert!(!again.has_changes(), "{}", render(&again));
    let props: Vec<String> = snapshot(&wh)
        .await
        .into_iter()
        .filter(|r| r.starts_with("property: "))
        .collect();
    assert!(
        props
            .iter()
            .any(|r| r == "property: delta.enableChangeDataFeed | true"),
        "{props:#?}"
    );
    assert!(
        !props
            .iter()
            .any(|r| r.starts_with("property: delta-operator.io/put-back")),
        "{props:#?}"
    );
}

/// Every undo line a plan prints is runnable where the user is: on the
/// realistic table, one plan changes the comment, a property another tool
/// set, a table tag, a column comment, a column tag, a default, the
/// clustering, renames a column, adds a CHECK, drops the operator's foreign
/// key and grants; each step's undo is then run as printed, last step
/// first, and the table must read as before (only the protocol's features,
/// which Delta never takes back, may have grown).
#[tokio::test]
async fn every_printed_undo_runs_and_puts_the_table_back() {
    let wh = Wh::new("fid", "undo").await;
    let before = claimed(&wh, "additive").await;
    let columns = [
        ID,
        CUSTOMER,
        "{name: code, type: string, comment: digits}",
        "{name: qty, type: int, default: '6'}",
        NOTE,
        "{name: region, type: string, tags: {pii: 'no'}}",
        "{name: old_code, type: string, renamedFrom: legacy}",
    ];
    let body = format!(
        "  comment: orders v2\n  properties: {{other.tool.owner: ingest-8, team: sales}}\n  tags: {{tier: gold}}\n  clusterBy: [region]\n  grants: [{{principal: analysts, privileges: [SELECT]}}, {{principal: engineers, privileges: [SELECT]}}]\n  columns:\n{}  constraints:\n    - check: {{name: id_positive, expression: id > 0}}\n    - check: {{name: qty_known, expression: qty >= 0}}",
        columns
            .iter()
            .map(|c| format!("    - {c}\n"))
            .collect::<String>()
    );
    let v2 = wh.m("additive", &body);
    let plan = wh.plan(&v2).await;
    let tp = t_plan(&plan).clone();
    let steps = tp.steps().to_vec();
    assert!(steps.len() >= 10, "{}", render(&plan));
    for s in &steps {
        let undo = s.undo.as_deref().unwrap_or_default();
        assert!(
            !undo.is_empty() && !undo.starts_with("RESTORE"),
            "step {} {} has a statement undo: {undo:?}\n{}",
            s.number,
            s.action.title(),
            render(&plan)
        );
    }
    ok(&wh.apply_report(&v2, true).await);
    assert!(!wh.plan(&v2).await.has_changes());
    for s in steps.iter().rev() {
        for statement in s.undo.as_deref().unwrap_or_default().split(";\n") {
            wh.sql(statement).await;
        }
    }
    // the protocol only grows (clustering turns its features on for good)
    let protocol = |r: &String| {
        r.starts_with("property: delta.feature.")
            || r.starts_with("property: delta.minReaderVersion")
            || r.starts_with("property: delta.minWriterVersion")
            || r.starts_with("property: clusteringColumns")
    };
    let after: Vec<String> = snapshot(&wh)
        .await
        .into_iter()
        .filter(|r| !protocol(r))
        .collect();
    let expected: Vec<String> = before.iter().filter(|r| !protocol(r)).cloned().collect();
    same(&after, &expected, &plan);
}
