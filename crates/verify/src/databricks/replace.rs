//! Rewrites and replacements: a REPLACE reading itself, what it keeps (tags,
//! grants), RESTORE after it, clones outliving it, views and functions replaced.

use delta_operator_core::plan::Action;
use delta_operator_sql as sql;

use super::bench::{Bench, cell};
use crate::outcome::{Finding, Verdict, Words, differed, held, unknown};

pub(super) async fn replace_reads_itself(b: &Bench) -> Verdict {
    let t = b.table("p_self_replace");
    b.setup(&format!(
        "CREATE TABLE {} (a INT, b STRING) USING DELTA",
        t.q
    ))
    .await?;
    b.setup(&format!(
        "INSERT INTO {} VALUES (1, 'x'), (2, 'y'), (3, 'z')",
        t.q
    ))
    .await?;
    b.must(
        &format!(
            "CREATE OR REPLACE TABLE {q} USING DELTA AS SELECT a, upper(b) AS b FROM {q}",
            q = t.q
        ),
        "the REPLACE reads the table it replaces",
    )
    .await?;
    let n = b.count(&t).await?;
    let upper = b
        .scalar(&format!(
            "SELECT count(*) FROM {} WHERE b IN ('X', 'Y', 'Z')",
            t.q
        ))
        .await?;
    if n == 3 && upper.as_deref() == Some("3") {
        held("replaced from itself: 3 rows, all converted")
    } else {
        Err(differed(
            "3 rows, all converted",
            format!("{n} rows, {} converted", upper.unwrap_or_default()),
        ))
    }
}

pub(super) async fn replace_keeps_tags_and_grants(b: &Bench) -> Verdict {
    let t = b.table("p_replace_gov");
    b.setup(&format!(
        "CREATE TABLE {} (a INT, b STRING) USING DELTA",
        t.q
    ))
    .await?;
    b.setup(&format!(
        "ALTER TABLE {} SET TAGS ({} = {})",
        t.q,
        sql::literal("verify_probe"),
        sql::literal("table")
    ))
    .await?;
    b.setup(&format!(
        "ALTER TABLE {} ALTER COLUMN {} SET TAGS ({} = {})",
        t.q,
        sql::ident("a"),
        sql::literal("verify_probe"),
        sql::literal("column")
    ))
    .await?;
    b.setup(&format!(
        "GRANT SELECT ON TABLE {} TO {}",
        t.q,
        sql::ident(&b.principal)
    ))
    .await?;
    b.must(
        &format!(
            "CREATE OR REPLACE TABLE {q} USING DELTA AS SELECT a, b FROM {q}",
            q = t.q
        ),
        "the REPLACE is accepted",
    )
    .await?;
    let mut lost = Vec::new();
    if !b
        .table_tags(&t)
        .await?
        .iter()
        .any(|(k, v)| k == "verify_probe" && v == "table")
    {
        lost.push("the table tag".to_string());
    }
    if !b
        .column_tags(&t)
        .await?
        .iter()
        .any(|(c, k, v)| c.eq_ignore_ascii_case("a") && k == "verify_probe" && v == "column")
    {
        lost.push("the column tag".to_string());
    }
    if !b
        .grants("TABLE", &t.q)
        .await?
        .iter()
        .any(|(p, a)| p == &b.principal && a.eq_ignore_ascii_case("SELECT"))
    {
        lost.push(format!("SELECT granted to {}", b.principal));
    }
    if lost.is_empty() {
        held("table tag, column tag and grant all kept")
    } else {
        Err(differed(
            "tags and grants kept",
            format!("lost: {}", lost.join(", ")),
        ))
    }
}

pub(super) async fn restore_puts_back_replaced(b: &Bench) -> Verdict {
    let t = b.table("p_restore");
    b.setup(&format!(
        "CREATE TABLE {} (a INT, b STRING) USING DELTA",
        t.q
    ))
    .await?;
    b.setup(&format!("INSERT INTO {} VALUES (1, 'x'), (2, 'y')", t.q))
        .await?;
    let v = b.version(&t).await?;
    b.setup(&format!(
        "CREATE OR REPLACE TABLE {} (z BIGINT) USING DELTA",
        t.q
    ))
    .await?;
    // our undo text, as a plan prints it
    let undo = sql::undo(
        &sql::Names::Catalog,
        &t.r,
        &Action::DropColumn { name: "b".into() },
        None,
        Some(v),
    )
    .ok_or_else(|| unknown("our planner writes no undo"))?;
    b.must(&undo, "RESTORE brings back the version before the REPLACE")
        .await?;
    let live = b.observe(&t).await?;
    let names: Vec<&str> = live.columns.iter().map(|c| c.name.as_str()).collect();
    let n = b.count(&t).await?;
    if names == ["a", "b"] && n == 2 {
        held(format!("restored to version {v}: columns a, b and 2 rows"))
    } else {
        Err(differed(
            "columns a, b and 2 rows",
            format!("columns {}, {n} rows", names.join(", ")),
        ))
    }
}

pub(super) async fn clone_outlives_rewrite(b: &Bench) -> Verdict {
    let t = b.table("p_clone_src");
    let c = b.table("p_clone");
    b.setup(&format!("CREATE TABLE {} (a INT) USING DELTA", t.q))
        .await?;
    b.setup(&format!("INSERT INTO {} VALUES (1), (2), (3)", t.q))
        .await?;
    b.must(
        &format!("CREATE TABLE {} SHALLOW CLONE {}", c.q, t.q),
        "a shallow clone can be taken",
    )
    .await?;
    b.setup(&format!(
        "CREATE OR REPLACE TABLE {q} USING DELTA AS SELECT a + 100 AS a FROM {q}",
        q = t.q
    ))
    .await?;
    match b
        .attempt(&format!("SELECT count(*), sum(a) FROM {}", c.q))
        .await?
    {
        Ok(r) => {
            let row = r.rows.first().cloned().unwrap_or_default();
            let (n, s) = (cell(&row, 0), cell(&row, 1));
            if n == "3" && s == "6" {
                held("the clone still reads its 3 original rows after the REPLACE")
            } else {
                Err(differed(
                    "3 rows summing to 6",
                    format!("{n} rows summing to {s}"),
                ))
            }
        }
        Err(w) => Err(Finding::Differed {
            expected: "the clone readable".into(),
            observed: "reading the clone failed".into(),
            workspace: Some(Words::of(&w, "SELECT … FROM clone")),
        }),
    }
}

pub(super) async fn replace_view_drops_governance(b: &Bench) -> Verdict {
    let v = b.view("p_view");
    b.setup(&format!("CREATE VIEW {} AS SELECT 1 AS x", v.q))
        .await?;
    b.setup(&format!(
        "ALTER VIEW {} SET TAGS ({} = {})",
        v.q,
        sql::literal("verify_probe"),
        sql::literal("view")
    ))
    .await?;
    b.setup(&format!(
        "GRANT SELECT ON VIEW {} TO {}",
        v.q,
        sql::ident(&b.principal)
    ))
    .await?;
    b.setup(&format!(
        "ALTER VIEW {} SET TBLPROPERTIES ({} = {})",
        v.q,
        sql::literal("verify.probe"),
        sql::literal("view")
    ))
    .await?;
    // the control: all three are there before the replace
    let tagged = b
        .table_tags(&v)
        .await?
        .iter()
        .any(|(k, _)| k == "verify_probe");
    let granted = b
        .grants("VIEW", &v.q)
        .await?
        .iter()
        .any(|(p, _)| p == &b.principal);
    let before = b.setup(&format!("SHOW TBLPROPERTIES {}", v.q)).await?;
    let property = before.rows.iter().any(|r| cell(r, 0) == "verify.probe");
    if !(tagged && granted && property) {
        return Err(unknown(format!(
            "before the replace: tag {tagged}, grant {granted}, property {property}"
        )));
    }
    b.must(
        &format!("CREATE OR REPLACE VIEW {} AS SELECT 2 AS x", v.q),
        "the view can be replaced",
    )
    .await?;
    let mut kept = Vec::new();
    if b.table_tags(&v)
        .await?
        .iter()
        .any(|(k, _)| k == "verify_probe")
    {
        kept.push("its tag");
    }
    if b.grants("VIEW", &v.q)
        .await?
        .iter()
        .any(|(p, _)| p == &b.principal)
    {
        kept.push("its grant");
    }
    let props = b.setup(&format!("SHOW TBLPROPERTIES {}", v.q)).await?;
    if props.rows.iter().any(|r| cell(r, 0) == "verify.probe") {
        kept.push("its property");
    }
    if kept.is_empty() {
        held("the replaced view lost its tag, grant and property")
    } else {
        Err(differed(
            "tag, grant and property dropped by the replace",
            format!("kept {}", kept.join(", ")),
        ))
    }
}

pub(super) async fn replace_function_drops_grants(b: &Bench) -> Verdict {
    let f = b.function("p_func");
    b.setup(&format!(
        "CREATE FUNCTION {}(x INT) RETURNS INT RETURN x + 1",
        f.q
    ))
    .await?;
    b.setup(&format!(
        "GRANT EXECUTE ON FUNCTION {} TO {}",
        f.q,
        sql::ident(&b.principal)
    ))
    .await?;
    if !b
        .grants("FUNCTION", &f.q)
        .await?
        .iter()
        .any(|(p, _)| p == &b.principal)
    {
        return Err(unknown(
            "the EXECUTE grant did not show in SHOW GRANTS before the replace",
        ));
    }
    b.must(
        &format!(
            "CREATE OR REPLACE FUNCTION {}(x INT) RETURNS INT RETURN x + 2",
            f.q
        ),
        "the function can be replaced",
    )
    .await?;
    if b.grants("FUNCTION", &f.q)
        .await?
        .iter()
        .any(|(p, _)| p == &b.principal)
    {
        Err(differed(
            "the grant dropped by the replace",
            "the grant was kept",
        ))
    } else {
        held("the replaced function lost its EXECUTE grant")
    }
}
