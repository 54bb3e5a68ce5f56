//! The Spark Connect probe table and its checks: type widening, nested changes,
//! column mapping, CHECK, NOT NULL, REPLACE, RESTORE and shallow clones on OSS
//! Delta, each on its own scratch table.

use delta_operator_core::model::type_syntax::parse_type;
use delta_operator_core::model::{Check, OWNER_PROPERTY, TableRef};
use delta_operator_core::plan::Action;
use delta_operator_core::plan::steps::{bound_clone_name, clone_name};
use delta_operator_sql as sql;

use super::bench::{SparkBench, SparkProbe, columns, words};
use crate::nested::{NESTED_ROW, NESTED_TABLE, nested_actions, nested_read_back};
use crate::outcome::{Finding, Verdict, differed, held, unknown};

const DOCS: &str = "https://docs.delta.io/latest/delta-batch.html";

pub fn all() -> Vec<SparkProbe> {
    vec![
        SparkProbe {
            name: "type_widening_in_place",
            docs_url: "https://docs.delta.io/latest/delta-type-widening.html",
            assumes: "after delta.enableTypeWidening, ALTER COLUMN … TYPE widens int to bigint in place, rows kept",
            matters: "widening is planned in place after its [feature] step (Capabilities: widen_type InPlace)",
            check: |b| Box::pin(type_widening_in_place(b)),
        },
        SparkProbe {
            name: "nested_changes_in_place",
            docs_url: "https://docs.delta.io/latest/delta-type-widening.html",
            assumes: "map values and keys and array elements widen in place by their path (counters.value, ids.key, scores.element), a nullable field is added inside an array's structs (items.element.unit_price), and a struct field is dropped under column mapping (address.legacy_code)",
            matters: "nested widenings, adds and drops are planned in place, never as a rewrite of the table",
            check: |b| Box::pin(nested_changes_in_place(b)),
        },
        SparkProbe {
            name: "column_mapping_rename_and_drop",
            docs_url: "https://docs.delta.io/latest/delta-column-mapping.html",
            assumes: "after column mapping by name, RENAME COLUMN and DROP COLUMN change only metadata, rows kept",
            matters: "renames and drops are planned in place after their [feature] step",
            check: |b| Box::pin(column_mapping_rename_and_drop(b)),
        },
        SparkProbe {
            name: "check_constraints_enforced",
            docs_url: "https://docs.delta.io/latest/delta-constraints.html",
            assumes: "ADD CONSTRAINT … CHECK is enforced on later writes and DROP CONSTRAINT lifts it",
            matters: "declared CHECKs are added and dropped in place, and the plan's precheck counts violating rows first",
            check: |b| Box::pin(check_constraints_enforced(b)),
        },
        SparkProbe {
            name: "set_not_null_is_not_in_place",
            docs_url: "https://docs.delta.io/latest/delta-constraints.html",
            assumes: "OSS Delta refuses ALTER COLUMN … SET NOT NULL on an existing column",
            matters: "SET NOT NULL is planned as a rewrite on this target (Capabilities: set_not_null Rewrite); were it accepted, the plan could do it in place",
            check: |b| Box::pin(set_not_null_is_not_in_place(b)),
        },
        SparkProbe {
            name: "replace_as_select_keeps_history",
            docs_url: DOCS,
            assumes: "CREATE OR REPLACE TABLE … AS SELECT from the table itself keeps its log: the version before stays readable",
            matters: "rewrites replace the table from itself, and the restore point is the version before",
            check: |b| Box::pin(replace_as_select_keeps_history(b)),
        },
        SparkProbe {
            name: "restore_to_version",
            docs_url: "https://docs.delta.io/latest/delta-utility.html#restore-a-delta-table-to-an-earlier-state",
            assumes: "RESTORE TABLE … TO VERSION AS OF brings back the rows of that version",
            matters: "a step's undo goes back to its restore point",
            check: |b| Box::pin(restore_to_version(b)),
        },
        SparkProbe {
            name: "shallow_clone_beside_the_table",
            docs_url: "https://docs.delta.io/latest/delta-utility.html#shallow-clone-a-delta-table",
            assumes: "CREATE TABLE … SHALLOW CLONE makes a readable copy at a version, and the owner marker can be unset on it",
            matters: "cloneBeforeRewrite takes a shallow clone, left unmanaged",
            check: |b| Box::pin(shallow_clone_beside_the_table(b)),
        },
    ]
}

async fn type_widening_in_place(b: &SparkBench<'_>) -> Verdict {
    let t = b.seeded("widen").await?;
    b.ours(&t, &Action::EnableTypeWidening, None).await?;
    let to = parse_type("bigint").map_err(|e| unknown(e.to_string()))?;
    b.ours(
        &t,
        &Action::AlterColumnType {
            path: vec!["a".into()].into(),
            to: to.clone(),
        },
        None,
    )
    .await?;
    let live = b.read(&t).await?;
    let a = live.column("a").map(|c| c.data_type.clone());
    if a != Some(to) {
        return Err(differed("a bigint", columns(&live)));
    }
    let n = b.count(&t).await?;
    if n != 3 {
        return Err(differed("3 rows", format!("{n} rows")));
    }
    held(format!("a is bigint, 3 rows, version {:?}", live.version))
}

async fn nested_changes_in_place(b: &SparkBench<'_>) -> Verdict {
    let t = b.table("nested");
    let n = b.name(&t);
    b.exec(&format!("CREATE TABLE {n} {NESTED_TABLE}")).await?;
    b.exec(&format!("INSERT INTO {n} VALUES {NESTED_ROW}"))
        .await?;
    for action in nested_actions() {
        let live = b.read(&t).await?;
        b.ours(&t, &action, Some(&live)).await?;
    }
    let live = b.read(&t).await?;
    nested_read_back(&live).map_err(|w| differed("the nested changes read back", w))?;
    match b.count(&t).await? {
        1 => held(
            "address.legacy_code dropped, counters.value, ids.key, scores.element widened and items.element.unit_price added in place; 1 row",
        ),
        n => Err(differed("1 row", format!("{n} rows"))),
    }
}

async fn column_mapping_rename_and_drop(b: &SparkBench<'_>) -> Verdict {
    let t = b.seeded("mapping").await?;
    let live = b.read(&t).await?;
    b.ours(&t, &Action::EnableColumnMapping, Some(&live))
        .await?;
    b.ours(
        &t,
        &Action::RenameColumn {
            from: "b".into(),
            to: "b2".into(),
        },
        None,
    )
    .await?;
    let renamed = b.read(&t).await?;
    if renamed.column("b2").is_none() || renamed.column("b").is_some() {
        return Err(differed("columns a, b2", columns(&renamed)));
    }
    b.ours(&t, &Action::DropColumn { name: "b2".into() }, None)
        .await?;
    let dropped = b.read(&t).await?;
    if dropped.columns.len() != 1 || dropped.column("a").is_none() {
        return Err(differed("column a only", columns(&dropped)));
    }
    let n = b.count(&t).await?;
    if n != 3 {
        return Err(differed("3 rows", format!("{n} rows")));
    }
    held("renamed b → b2, dropped b2; delta-rs reads column a and 3 rows")
}

async fn check_constraints_enforced(b: &SparkBench<'_>) -> Verdict {
    let t = b.seeded("checks").await?;
    let n = b.name(&t);
    let check = Check {
        name: "a_positive".into(),
        expression: "a > 0".into(),
    };
    b.ours(&t, &Action::AddCheck { check }, None).await?;
    let live = b.read(&t).await?;
    if !live.checks.iter().any(|c| c.name == "a_positive") {
        return Err(differed(
            "a_positive among the table's CHECKs",
            format!("{:?}", live.checks),
        ));
    }
    let bad = format!("INSERT INTO {n} VALUES (-1, 'bad')");
    if b.try_exec(&bad).await.is_ok() {
        return Err(differed("a row with a = -1 refused", "accepted"));
    }
    b.ours(
        &t,
        &Action::DropCheck {
            name: "a_positive".into(),
        },
        None,
    )
    .await?;
    b.exec(&bad).await?;
    held("a = -1 refused under the CHECK, accepted after DROP CONSTRAINT")
}

async fn set_not_null_is_not_in_place(b: &SparkBench<'_>) -> Verdict {
    let t = b.seeded("notnull").await?;
    let s = format!(
        "ALTER TABLE {} ALTER COLUMN {} SET NOT NULL",
        b.name(&t),
        sql::ident("a")
    );
    match b.try_exec(&s).await {
        Err(e) => held(format!(
            "refused: {}",
            words(&e, &s).message.lines().next().unwrap_or("")
        )),
        Ok(_) => Err(differed(
            "SET NOT NULL refused",
            "accepted: this Delta can set NOT NULL in place",
        )),
    }
}

async fn replace_as_select_keeps_history(b: &SparkBench<'_>) -> Verdict {
    let t = b.seeded("replace").await?;
    let n = b.name(&t);
    let before = b
        .read(&t)
        .await?
        .version
        .ok_or_else(|| unknown("no version"))?;
    b.exec(&format!(
        "CREATE OR REPLACE TABLE {n} USING DELTA AS SELECT CAST(a AS BIGINT) AS a, b FROM {n}"
    ))
    .await?;
    let after = b.read(&t).await?;
    if after.version <= Some(before) {
        return Err(differed(
            format!("a version after {before}"),
            format!("{:?}", after.version),
        ));
    }
    let old = b
        .exec(&format!("SELECT count(*) FROM {n} VERSION AS OF {before}"))
        .await?;
    let old = old.rows.first().and_then(|r| r.first().cloned().flatten());
    if old.as_deref() != Some("3") {
        return Err(differed("3 rows at the version before", format!("{old:?}")));
    }
    held(format!(
        "replaced at version {:?}; version {before} still reads 3 rows",
        after.version
    ))
}

async fn restore_to_version(b: &SparkBench<'_>) -> Verdict {
    let t = b.seeded("restore").await?;
    let n = b.name(&t);
    let v = b
        .read(&t)
        .await?
        .version
        .ok_or_else(|| unknown("no version"))?;
    b.exec(&format!("DELETE FROM {n} WHERE a > 1")).await?;
    let s = format!("RESTORE TABLE {n} TO VERSION AS OF {v}");
    if let Err(e) = b.try_exec(&s).await {
        return Err(Finding::Differed {
            expected: "RESTORE accepted".into(),
            observed: "refused".into(),
            workspace: Some(words(&e, &s)),
        });
    }
    let c = b.count(&t).await?;
    if c != 3 {
        return Err(differed("3 rows after RESTORE", format!("{c} rows")));
    }
    held(format!("restored to version {v}: 3 rows"))
}

async fn shallow_clone_beside_the_table(b: &SparkBench<'_>) -> Verdict {
    let t = b.seeded("clone").await?;
    b.exec(&format!(
        "ALTER TABLE {} SET TBLPROPERTIES ({} = 'probe')",
        b.name(&t),
        sql::literal(OWNER_PROPERTY)
    ))
    .await?;
    let live = b.read(&t).await?;
    let name = clone_name(&t.table);
    b.ours(&t, &Action::CloneTable { name: name.clone() }, Some(&live))
        .await?;
    let clone = TableRef::new(
        &t.catalog,
        &t.schema,
        &bound_clone_name(&name, live.version),
    );
    let c = b.read(&clone).await?;
    if c.properties.contains_key(OWNER_PROPERTY) {
        return Err(differed(
            "the clone without the owner marker",
            "the marker is there",
        ));
    }
    let rows = b.count(&clone).await?;
    if rows != 3 {
        return Err(differed("3 rows in the clone", format!("{rows} rows")));
    }
    b.made
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(clone.clone());
    held(format!("{clone}: 3 rows, no owner marker"))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    #[test]
    fn every_spark_probe_has_one_name_and_its_sentences() {
        let all = all();
        let names: BTreeSet<&str> = all.iter().map(|p| p.name).collect();
        assert_eq!(names.len(), all.len());
        for p in &all {
            assert!(p.docs_url.starts_with("https://"), "{}", p.name);
            assert!(!p.assumes.is_empty() && !p.matters.is_empty(), "{}", p.name);
        }
    }
}
