//! Columns and types: nested NOT NULL, identity and generated columns, CHECK at
//! create, which type changes are metadata-only and which need a rewrite, and the
//! nested changes our planner makes in place.

use delta_operator_core::model::widening::can_widen_in_place;
use delta_operator_core::model::{Check, DataType, ObservedTable};
use delta_operator_core::plan::Action;
use delta_operator_core::plan::change::FieldPath;
use delta_operator_sql as sql;

use super::bench::{Bench, Tbl, words_line};
use crate::nested::{NESTED_ROW, NESTED_TABLE, nested_actions, nested_read_back};
use crate::outcome::{Finding, Verdict, Words, differed, held, unknown};
use crate::ty;

pub(super) async fn nested_not_null_alter(b: &Bench) -> Verdict {
    let t = b.table("p_nested_nn");
    b.setup(&format!(
        "CREATE TABLE {} (s STRUCT<x: INT NOT NULL, y: INT>) USING DELTA",
        t.q
    ))
    .await?;
    b.setup(&format!(
        "INSERT INTO {} VALUES (named_struct('x', 1, 'y', 2))",
        t.q
    ))
    .await?;
    let path: FieldPath = vec!["s".to_string(), "x".to_string()].into();
    b.compiled(
        &t,
        &Action::DropNotNull { path: path.clone() },
        None,
        "DROP NOT NULL on a nested field is an ordinary ALTER",
    )
    .await?;
    let after_drop = b.observe(&t).await?;
    if !field_nullable(&after_drop, "s", "x").unwrap_or(false) {
        return Err(differed(
            "s.x nullable after DROP NOT NULL",
            "s.x still reads NOT NULL",
        ));
    }
    b.compiled(
        &t,
        &Action::SetNotNull { path },
        None,
        "SET NOT NULL on a nested field is an ordinary ALTER",
    )
    .await?;
    let after_set = b.observe(&t).await?;
    match field_nullable(&after_set, "s", "x") {
        Some(false) => held("s.x: DROP NOT NULL and SET NOT NULL both in place"),
        _ => Err(differed("s.x NOT NULL again", "s.x reads nullable")),
    }
}

fn field_nullable(t: &ObservedTable, column: &str, field: &str) -> Option<bool> {
    match &t.column(column)?.data_type {
        DataType::Struct { fields } => fields.iter().find(|f| f.name == field).map(|f| f.nullable),
        _ => None,
    }
}

pub(super) async fn identity_generated_not_addable(b: &Bench) -> Verdict {
    let t = b.table("p_kinds");
    // the control: both kinds can be declared at create, so the syntax is right
    b.setup(&format!(
        "CREATE TABLE {} (a INT, g INT GENERATED ALWAYS AS (a + 1), i BIGINT GENERATED ALWAYS AS IDENTITY (START WITH 1 INCREMENT BY 1)) USING DELTA",
        t.q
    ))
    .await?;
    let g = b
        .refused(
            &format!(
                "ALTER TABLE {} ADD COLUMN g2 INT GENERATED ALWAYS AS (a + 2)",
                t.q
            ),
            "adding a generated column is refused",
        )
        .await?;
    let i = b
        .refused(&format!("ALTER TABLE {} ADD COLUMN i2 BIGINT GENERATED ALWAYS AS IDENTITY (START WITH 1 INCREMENT BY 1)", t.q), "adding an identity column is refused")
        .await?;
    held(format!(
        "declared at create; adding later refused ({} / {})",
        words_line(&g),
        words_line(&i)
    ))
}

pub(super) async fn check_not_in_create(b: &Bench) -> Verdict {
    let t = b.table("p_check_create");
    let w = b
        .refused(
            &format!(
                "CREATE TABLE {} (a INT, CONSTRAINT c_pos CHECK (a > 0)) USING DELTA",
                t.q
            ),
            "CREATE TABLE with a CHECK is refused",
        )
        .await?;
    b.setup(&format!("CREATE TABLE {} (a INT) USING DELTA", t.q))
        .await?;
    let check = Check {
        name: "c_pos".into(),
        expression: "a > 0".into(),
    };
    b.compiled(
        &t,
        &Action::AddCheck { check },
        None,
        "ALTER TABLE … ADD CONSTRAINT … CHECK works after the create",
    )
    .await?;
    held(format!(
        "refused inside CREATE ({}), added by ALTER",
        words_line(&w)
    ))
}

const IN_PLACE: &[(&str, &str)] = &[
    ("tinyint", "smallint"),
    ("smallint", "int"),
    ("int", "bigint"),
    ("float", "double"),
    ("tinyint", "double"),
    ("int", "double"),
    ("int", "decimal(10,0)"),
    ("bigint", "decimal(20,0)"),
    ("decimal(5,2)", "decimal(7,3)"),
    ("date", "timestamp_ntz"),
];

const NOT_IN_PLACE: &[(&str, &str)] = &[
    ("tinyint", "decimal(5,0)"),
    ("bigint", "decimal(19,0)"),
    ("bigint", "int"),
    ("double", "float"),
    ("int", "string"),
    ("decimal(10,2)", "decimal(10,3)"),
];

/// A table with one column per pair (`c0`, `c1`, …) of the `from` types, widening on.
pub(super) async fn type_table(
    b: &Bench,
    stem: &str,
    pairs: &[(&str, &str)],
) -> Result<Tbl, Finding> {
    let t = b.table(stem);
    let cols: Vec<String> = pairs
        .iter()
        .enumerate()
        .map(|(i, (from, _))| {
            format!(
                "{} {}",
                sql::ident(&format!("c{i}")),
                sql::sql_type(&ty(from))
            )
        })
        .collect();
    b.setup(&format!(
        "CREATE TABLE {} ({}) USING DELTA",
        t.q,
        cols.join(", ")
    ))
    .await?;
    b.compiled(
        &t,
        &Action::EnableTypeWidening,
        None,
        "type widening can be enabled",
    )
    .await
    .map_err(|o| match o {
        Finding::Differed { workspace, .. } => Finding::Unknown {
            why: "enabling type widening was refused".into(),
            workspace,
        },
        other => other,
    })?;
    Ok(t)
}

pub(super) async fn metadata_widenings_allowed(b: &Bench) -> Verdict {
    for (from, to) in IN_PLACE {
        if !can_widen_in_place(&ty(from), &ty(to)) {
            return Err(unknown(format!(
                "probe list out of date: our matrix no longer calls {from} → {to} in place"
            )));
        }
    }
    let t = type_table(b, "p_widen", IN_PLACE).await?;
    let mut refused = Vec::new();
    let mut first_words = None;
    for (i, (from, to)) in IN_PLACE.iter().enumerate() {
        let action = Action::AlterColumnType {
            path: vec![format!("c{i}")].into(),
            to: ty(to),
        };
        let stmts = sql::compile(&t.r, &action, None).map_err(|e| unknown(e.to_string()))?;
        for s in &stmts {
            if let Err(w) = b.attempt(s).await? {
                refused.push(format!("{from} → {to} ({})", words_line(&w)));
                first_words.get_or_insert_with(|| Words::of(&w, s));
            }
        }
    }
    let live = b.observe(&t).await?;
    let mut wrong = Vec::new();
    for (i, (from, to)) in IN_PLACE.iter().enumerate() {
        let got = live.column(&format!("c{i}")).map(|c| c.data_type.clone());
        if got.as_ref() != Some(&ty(to))
            && !refused
                .iter()
                .any(|r| r.starts_with(&format!("{from} → {to} ")))
        {
            wrong.push(format!(
                "{from} → {to} accepted but reads back as {}",
                got.map(|g| g.to_string())
                    .unwrap_or_else(|| "missing".into())
            ));
        }
    }
    if refused.is_empty() && wrong.is_empty() {
        held(format!(
            "all {} widenings applied in place and read back",
            IN_PLACE.len()
        ))
    } else {
        let mut observed = refused
            .iter()
            .map(|r| format!("refused {r}"))
            .collect::<Vec<_>>();
        observed.extend(wrong);
        Err(Finding::Differed {
            expected: "every in-place widening accepted".into(),
            observed: observed.join("; "),
            workspace: first_words,
        })
    }
}

pub(super) async fn nested_changes_in_place(b: &Bench) -> Verdict {
    let t = b.table("p_nested_changes");
    b.setup(&format!("CREATE TABLE {} {NESTED_TABLE}", t.q))
        .await?;
    b.setup(&format!("INSERT INTO {} VALUES {NESTED_ROW}", t.q))
        .await?;
    for action in nested_actions() {
        let live = b.observe(&t).await?;
        b.compiled(
            &t,
            &action,
            Some(&live),
            "a nested change is an ordinary ALTER",
        )
        .await?;
    }
    let live = b.observe(&t).await?;
    nested_read_back(&live).map_err(|w| differed("the nested changes read back", w))?;
    match b.count(&t).await? {
        1 => held(
            "address.legacy_code dropped, counters.value, ids.key, scores.element widened and items.element.unit_price added in place; 1 row",
        ),
        n => Err(differed("1 row", format!("{n} rows"))),
    }
}

pub(super) async fn rewrite_widenings_refused(b: &Bench) -> Verdict {
    for (from, to) in NOT_IN_PLACE {
        if can_widen_in_place(&ty(from), &ty(to)) {
            return Err(unknown(format!(
                "probe list out of date: our matrix now calls {from} → {to} in place"
            )));
        }
    }
    let t = type_table(b, "p_narrow", NOT_IN_PLACE).await?;
    let mut accepted = Vec::new();
    for (i, (from, to)) in NOT_IN_PLACE.iter().enumerate() {
        let s = format!(
            "ALTER TABLE {} ALTER COLUMN {} TYPE {}",
            t.q,
            sql::ident(&format!("c{i}")),
            sql::sql_type(&ty(to))
        );
        if b.attempt(&s).await?.is_ok() {
            accepted.push(format!("{from} → {to}"));
        }
    }
    if accepted.is_empty() {
        held(format!("all {} refused in place", NOT_IN_PLACE.len()))
    } else {
        Err(differed(
            "refused in place (planned as rewrites)",
            format!("accepted in place: {}", accepted.join(", ")),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The probes refuse to run with a list our widening matrix disagrees with;
    /// this says so before any warehouse is asked.
    #[test]
    fn the_type_change_lists_agree_with_the_widening_matrix() {
        for (from, to) in IN_PLACE {
            assert!(can_widen_in_place(&ty(from), &ty(to)), "{from} -> {to}");
        }
        for (from, to) in NOT_IN_PLACE {
            assert!(!can_widen_in_place(&ty(from), &ty(to)), "{from} -> {to}");
        }
    }
}
