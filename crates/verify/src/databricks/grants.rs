//! Grants: how our read sees a table's grants, schema grants against table
//! grants, and where inherited privileges come from.

use delta_operator_databricks::read;
use delta_operator_sql as sql;

use super::bench::{Bench, Tbl, cell};
use crate::outcome::{Finding, Verdict, differed, held, unknown};

/// Our read's grants of one table (the permissions API): (principal, privilege).
pub(super) async fn read_grants(b: &Bench, t: &Tbl) -> Result<Vec<(String, String)>, Finding> {
    b.log
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(format!(
            "GET /api/2.1/unity-catalog/permissions/table/{}",
            t.full
        ));
    let answer = b
        .client()
        .get_permissions("table", &t.full)
        .await
        .map_err(|e| unknown(format!("reading the grants of {}: {e}", t.full)))?;
    Ok(read::grants_from_permissions(&answer)
        .into_iter()
        .flat_map(|g| {
            g.privileges
                .into_iter()
                .map(move |p| (g.principal.clone(), p.as_str().to_string()))
        })
        .collect())
}

pub(super) async fn schema_grant_not_table_grant(b: &Bench) -> Verdict {
    let t = b.table("p_schema_grant");
    b.setup(&format!("CREATE TABLE {} (a INT) USING DELTA", t.q))
        .await?;
    b.setup(&format!(
        "GRANT SELECT ON SCHEMA {} TO {}",
        b.schema_q(),
        sql::ident(&b.principal)
    ))
    .await?;
    b.setup(&format!(
        "GRANT MODIFY ON TABLE {} TO {}",
        t.q,
        sql::ident(&b.principal)
    ))
    .await?;
    let grants = read_grants(b, &t).await?;
    let mine: Vec<&(String, String)> = grants.iter().filter(|(p, _)| p == &b.principal).collect();
    let _ = b
        .setup(&format!(
            "REVOKE SELECT ON SCHEMA {} FROM {}",
            b.schema_q(),
            sql::ident(&b.principal)
        ))
        .await;
    // the control: the direct grant must show, or the read cannot tell anything apart
    if !mine.iter().any(|(_, a)| a.eq_ignore_ascii_case("MODIFY")) {
        return Err(unknown(
            "our read does not show the direct MODIFY grant either, so it cannot tell a schema grant apart (see table_privileges_inherited_from)",
        ));
    }
    if mine.iter().any(|(_, a)| a.eq_ignore_ascii_case("SELECT")) {
        Err(differed(
            "only the direct MODIFY grant",
            "the schema's SELECT grant reads as a grant on the table",
        ))
    } else {
        held("our read shows the direct MODIFY grant and not the schema's SELECT")
    }
}

pub(super) async fn table_privileges_inherited_from(b: &Bench) -> Verdict {
    let t = b.table("p_inherited");
    b.setup(&format!("CREATE TABLE {} (a INT) USING DELTA", t.q))
        .await?;
    b.setup(&format!(
        "GRANT SELECT ON SCHEMA {} TO {}",
        b.schema_q(),
        sql::ident(&b.principal)
    ))
    .await?;
    b.setup(&format!(
        "GRANT MODIFY ON TABLE {} TO {}",
        t.q,
        sql::ident(&b.principal)
    ))
    .await?;
    let r = b
        .setup(&format!(
            "SELECT privilege_type, inherited_from FROM {}.information_schema.table_privileges WHERE table_schema = {} AND table_name = {} AND grantee = {}",
            sql::ident(&b.schema.catalog),
            sql::literal(&b.schema.schema),
            sql::literal(&t.r.table),
            sql::literal(&b.principal)
        ))
        .await?;
    let _ = b
        .setup(&format!(
            "REVOKE SELECT ON SCHEMA {} FROM {}",
            b.schema_q(),
            sql::ident(&b.principal)
        ))
        .await;
    let rows: Vec<(String, Option<String>)> = r
        .rows
        .iter()
        .map(|row| (cell(row, 0), row.get(1).cloned().flatten()))
        .collect();
    let show = |v: &Option<String>| {
        v.clone()
            .map(|s| format!("'{s}'"))
            .unwrap_or_else(|| "NULL".into())
    };
    let direct = rows.iter().find(|(p, _)| p.eq_ignore_ascii_case("MODIFY"));
    let inherited = rows.iter().find(|(p, _)| p.eq_ignore_ascii_case("SELECT"));
    match (direct, inherited) {
        (Some((_, Some(d))), Some((_, Some(i)))) if d == "NONE" && i != "NONE" => held(format!(
            "direct: inherited_from 'NONE'; schema grant: inherited_from '{i}'"
        )),
        (Some((_, d)), Some((_, i))) => Err(differed(
            "direct 'NONE', inherited naming the schema",
            format!("direct {}, inherited {}", show(d), show(i)),
        )),
        (Some((_, d)), None) => Err(differed(
            "both grants listed",
            format!(
                "only the direct grant (inherited_from {}); the schema's grant is not listed",
                show(d)
            ),
        )),
        (None, _) => Err(differed(
            "the direct grant listed",
            format!("rows: {rows:?}"),
        )),
    }
}
