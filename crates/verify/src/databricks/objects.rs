//! Views, SQL functions and masks as the plans of DeltaView / DeltaFunction assume them: the
//! query Unity Catalog keeps for a view, how a view's comment is set, a mask naming a
//! function that does not exist yet, and what a function's replace may change.

use delta_operator_sql as sql;

use super::bench::{Bench, Tbl, cell};
use crate::outcome::{Finding, Verdict, Words, differed, held, unknown};

/// `information_schema.views.view_definition` of a view of this run, if listed.
async fn view_definition(b: &Bench, v: &Tbl) -> Result<Option<String>, Finding> {
    let r = b
        .setup(&format!(
            "SELECT view_definition FROM {}.information_schema.views WHERE table_schema = {} AND table_name = {}",
            sql::ident(&b.schema.catalog),
            sql::literal(&b.schema.schema),
            sql::literal(&v.r.table)
        ))
        .await?;
    Ok(r.rows.first().map(|row| cell(row, 0)))
}

/// The view's comment as `information_schema.tables` lists it.
async fn relation_comment(b: &Bench, t: &Tbl) -> Result<Option<String>, Finding> {
    let r = b
        .setup(&format!(
            "SELECT comment FROM {}.information_schema.tables WHERE table_schema = {} AND table_name = {}",
            sql::ident(&b.schema.catalog),
            sql::literal(&b.schema.schema),
            sql::literal(&t.r.table)
        ))
        .await?;
    Ok(r.rows
        .first()
        .and_then(|row| row.first().cloned())
        .flatten())
}

pub(super) async fn view_definition_as_written(b: &Bench) -> Verdict {
    let t = b.table("p_view_src");
    let v = b.view("p_view_text");
    b.setup(&format!(
        "CREATE TABLE {} (a INT, b STRING) USING DELTA",
        t.q
    ))
    .await?;
    let query = format!("SELECT a, upper(b) AS b FROM {} WHERE a > 0", t.q);
    b.must(
        &format!("CREATE VIEW {} AS {query}", v.q),
        "the view is created",
    )
    .await?;
    match view_definition(b, &v).await? {
        Some(text) if text.trim() == query => {
            held(format!("view_definition is the query as sent: {text}"))
        }
        Some(text) => Err(differed(
            format!("the query as sent: {query}"),
            format!("view_definition: {text}"),
        )),
        None => Err(unknown("information_schema.views does not list the view")),
    }
}

pub(super) async fn comment_on_table_names_a_view(b: &Bench) -> Verdict {
    let v = b.view("p_view_comment");
    b.setup(&format!("CREATE VIEW {} AS SELECT 1 AS x", v.q))
        .await?;
    b.must(
        &format!(
            "COMMENT ON TABLE {} IS {}",
            v.q,
            sql::literal("verify probe")
        ),
        "COMMENT ON TABLE takes a view (TABLE relation_name)",
    )
    .await?;
    let got = relation_comment(b, &v).await?;
    if got.as_deref() != Some("verify probe") {
        return Err(differed(
            "the view's comment set",
            format!("comment {got:?}"),
        ));
    }
    b.must(
        &format!("COMMENT ON TABLE {} IS NULL", v.q),
        "COMMENT ON TABLE … IS NULL clears a view's comment",
    )
    .await?;
    match relation_comment(b, &v).await? {
        None => held("COMMENT ON TABLE set and cleared the view's comment"),
        Some(c) if c.is_empty() => held("COMMENT ON TABLE set and cleared the view's comment"),
        Some(c) => Err(differed("the comment cleared", format!("comment {c:?}"))),
    }
}

pub(super) async fn mask_needs_existing_function(b: &Bench) -> Verdict {
    let t = b.table("p_mask_missing");
    let f = b.function("p_mask_fn");
    b.setup(&format!("CREATE TABLE {} (a STRING) USING DELTA", t.q))
        .await?;
    let w = b
        .refused(
            &format!(
                "ALTER TABLE {} ALTER COLUMN {} SET MASK {}",
                t.q,
                sql::ident("a"),
                f.q
            ),
            "a mask naming a function that does not exist is refused",
        )
        .await?;
    let class = w.error_class().unwrap_or_default().to_string();
    // the control: with the function there, the same statement is accepted
    b.setup(&format!(
        "CREATE FUNCTION {}(s STRING) RETURNS STRING RETURN s",
        f.q
    ))
    .await?;
    match b
        .attempt(&format!(
            "ALTER TABLE {} ALTER COLUMN {} SET MASK {}",
            t.q,
            sql::ident("a"),
            f.q
        ))
        .await?
    {
        Ok(_) => held(format!(
            "refused while the function was missing ({class}), accepted once it existed"
        )),
        Err(w) => Err(Finding::Unknown {
            why: "the mask was refused even with its function in place".into(),
            workspace: Some(Words::of(&w, "ALTER TABLE … SET MASK")),
        }),
    }
}

pub(super) async fn replace_function_keeps_signature(b: &Bench) -> Verdict {
    let f = b.function("p_func_sig");
    b.setup(&format!(
        "CREATE FUNCTION {}(x INT) RETURNS INT RETURN x",
        f.q
    ))
    .await?;
    match b
        .attempt(&format!(
            "CREATE OR REPLACE FUNCTION {}(x BIGINT, y BIGINT) RETURNS BIGINT RETURN x + y",
            f.q
        ))
        .await?
    {
        Err(w) => held(format!(
            "a replace with other parameters is refused ({})",
            w.error_class().unwrap_or("no error class")
        )),
        Ok(_) => {
            let n = b.scalar(&format!("SELECT {}(1, 2)", f.q)).await?;
            if n.as_deref() == Some("3") {
                Err(differed(
                    "a replace with other parameters refused (\"You cannot replace an existing function with a different signature\")",
                    "accepted: the function now takes (BIGINT, BIGINT)",
                ))
            } else {
                Err(unknown(format!(
                    "the replace was accepted but the new function answered {n:?}"
                )))
            }
        }
    }
}
