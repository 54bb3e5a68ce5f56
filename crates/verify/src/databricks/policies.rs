//! Objects our plans leave alone or only read: materialized views and ABAC
//! policies (their listing's columns, an empty listing, `DESCRIBE POLICY`).

use delta_operator_databricks::read;
use delta_operator_sql as sql;
use delta_operator_sql::StatementResult;
use serde_json::Value;

use super::bench::{Bench, Tbl};
use crate::outcome::{Finding, Verdict, differed, held, unknown};

pub(super) async fn mv_left_alone(b: &Bench) -> Verdict {
    let mv = b.view("p_mv");
    b.setup(&format!(
        "CREATE MATERIALIZED VIEW {} AS SELECT 1 AS x",
        mv.q
    ))
    .await?;
    let listed = b
        .client()
        .list_tables(&b.schema.catalog, &b.schema.schema)
        .await
        .map_err(|e| unknown(format!("listing the schema: {e}")))?;
    let Some(info) = listed
        .iter()
        .find(|i| read::listed_name(i).as_deref() == Some(mv.r.table.as_str()))
    else {
        return Err(unknown(
            "the materialized view is not in the tables listing",
        ));
    };
    let kind = info
        .get("table_type")
        .and_then(Value::as_str)
        .unwrap_or("(none)")
        .to_string();
    let read_as = read::relation_kind(info);
    if kind == "MATERIALIZED_VIEW"
        && !read::is_delta_table(info)
        && read_as == Some(delta_operator_core::model::TableKind::MaterializedView)
    {
        held("listed as MATERIALIZED_VIEW: read as a materialized view, never a table to shape")
    } else {
        Err(differed(
            "table_type MATERIALIZED_VIEW, read as a materialized view",
            format!(
                "table_type {kind}, read as a Delta table: {}, as {read_as:?}",
                read::is_delta_table(info)
            ),
        ))
    }
}

const POLICY_COLUMNS: &[&str] = &[
    "Policy Name",
    "Policy Type",
    "Catalog",
    "Schema",
    "Table",
    "Comment",
];

fn documented_columns(r: &StatementResult) -> Result<(), String> {
    let got: Vec<String> = r
        .columns
        .iter()
        .map(|c| c.to_lowercase().replace('_', " "))
        .collect();
    let missing: Vec<&str> = POLICY_COLUMNS
        .iter()
        .copied()
        .filter(|c| !got.contains(&c.to_lowercase()))
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "columns {:?} (missing {})",
            r.columns,
            missing.join(", ")
        ))
    }
}

/// A row filter function and an ABAC policy on the scratch schema using it.
pub(super) async fn make_policy(b: &Bench, stem: &str) -> Result<(Tbl, String), Finding> {
    let f = b.function(&format!("{stem}_fn"));
    b.setup(&format!(
        "CREATE FUNCTION {}() RETURNS BOOLEAN RETURN true",
        f.q
    ))
    .await?;
    let name = format!("{stem}_{}", b.run_id);
    b.setup(&format!(
        "CREATE POLICY {} ON SCHEMA {} COMMENT {} ROW FILTER {} TO {} FOR TABLES",
        sql::ident(&name),
        b.schema_q(),
        sql::literal("delta-operator verify"),
        f.q,
        sql::ident(&b.principal)
    ))
    .await?;
    Ok((f, name))
}

pub(super) async fn drop_policy(b: &Bench, name: &str) {
    let _ = b
        .attempt(&format!(
            "DROP POLICY {} ON SCHEMA {}",
            sql::ident(name),
            b.schema_q()
        ))
        .await;
}

pub(super) async fn effective_policies_columns(b: &Bench) -> Verdict {
    let t = b.table("p_policy_tbl");
    b.setup(&format!("CREATE TABLE {} (a INT) USING DELTA", t.q))
        .await?;
    let (_, name) = make_policy(b, "p_policy_show").await?;
    let r = b
        .must(
            &format!("SHOW EFFECTIVE POLICIES ON TABLE {}", t.q),
            "SHOW EFFECTIVE POLICIES is accepted",
        )
        .await;
    drop_policy(b, &name).await;
    let r = r?;
    documented_columns(&r).map_err(|e| {
        differed(
            format!("the documented columns {}", POLICY_COLUMNS.join(", ")),
            e,
        )
    })?;
    if r.rows
        .iter()
        .any(|row| row.iter().flatten().any(|c| c == &name))
    {
        held("the schema's policy is listed with the documented columns")
    } else {
        Err(differed(
            "the schema's policy listed",
            format!("{} rows, none naming {name}", r.rows.len()),
        ))
    }
}

pub(super) async fn no_policy_lists_none(b: &Bench) -> Verdict {
    let t = b.table("p_no_policy");
    b.setup(&format!("CREATE TABLE {} (a INT) USING DELTA", t.q))
        .await?;
    let r = b
        .must(
            &format!("SHOW EFFECTIVE POLICIES ON TABLE {}", t.q),
            "SHOW EFFECTIVE POLICIES succeeds on a table under no policy",
        )
        .await?;
    documented_columns(&r).map_err(|e| {
        differed(
            format!("the documented columns {}", POLICY_COLUMNS.join(", ")),
            e,
        )
    })?;
    if r.rows.is_empty() {
        held("no rows, documented columns")
    } else {
        Err(differed("no rows", format!("{} rows", r.rows.len())))
    }
}

pub(super) async fn describe_policy_shape(b: &Bench) -> Verdict {
    let (f, name) = make_policy(b, "p_policy_describe").await?;
    let r = b
        .must(
            &format!(
                "DESCRIBE POLICY {} ON SCHEMA {}",
                sql::ident(&name),
                b.schema_q()
            ),
            "DESCRIBE POLICY is accepted",
        )
        .await;
    drop_policy(b, &name).await;
    let r = r?;
    let text = r
        .rows
        .iter()
        .flatten()
        .flatten()
        .cloned()
        .collect::<Vec<_>>()
        .join(" | ");
    let names_fn = text.to_lowercase().contains(&f.r.table.to_lowercase());
    let names_principal = text.contains(&b.principal);
    if names_fn && names_principal {
        held("DESCRIBE POLICY names the function and the principal")
    } else {
        Err(differed(
            "the function and the principal named",
            format!(
                "function named: {names_fn}, principal named: {names_principal} (columns {:?})",
                r.columns
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(columns: &[&str]) -> StatementResult {
        StatementResult {
            statement_id: "s".into(),
            columns: columns.iter().map(|c| c.to_string()).collect(),
            rows: vec![],
        }
    }

    #[test]
    fn policy_columns_match_spelled_with_spaces_or_underscores_in_any_case() {
        let spaced: Vec<&str> = POLICY_COLUMNS.to_vec();
        assert_eq!(documented_columns(&result(&spaced)), Ok(()));
        let snake: Vec<String> = POLICY_COLUMNS
            .iter()
            .map(|c| c.to_uppercase().replace(' ', "_"))
            .collect();
        let snake: Vec<&str> = snake.iter().map(String::as_str).collect();
        assert_eq!(documented_columns(&result(&snake)), Ok(()));
    }

    #[test]
    fn a_missing_policy_column_is_named() {
        let e = documented_columns(&result(&POLICY_COLUMNS[1..])).unwrap_err();
        assert!(
            e.ends_with(&format!("(missing {})", POLICY_COLUMNS[0])),
            "{e}"
        );
    }
}
