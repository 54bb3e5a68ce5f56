//! Layout and session behaviour: clustering keys and `CLUSTER BY AUTO`,
//! partitioning after clustering, INSERT OVERWRITE with a column list, UNDROP,
//! ANSI mode and a missing catalog.

use delta_operator_core::model::OWNER_PROPERTY;
use delta_operator_core::plan::Action;
use delta_operator_databricks::client::ClientError;
use delta_operator_sql as sql;

use super::bench::{Bench, json_list, words_line};
use crate::outcome::{Verdict, differed, held, unknown};

pub(super) async fn cluster_keys_at_most_4(b: &Bench) -> Verdict {
    let five = b.table("p_cluster5");
    let four = b.table("p_cluster4");
    let cols = "a INT, b INT, c INT, d INT, e INT";
    let w = b
        .refused(
            &format!(
                "CREATE TABLE {} ({cols}) USING DELTA CLUSTER BY (a, b, c, d, e)",
                five.q
            ),
            "5 clustering keys are refused",
        )
        .await?;
    b.must(
        &format!(
            "CREATE TABLE {} ({cols}) USING DELTA CLUSTER BY (a, b, c, d)",
            four.q
        ),
        "4 clustering keys are accepted",
    )
    .await?;
    let d = b.detail(&four).await?;
    let keys = json_list(d.get("clusteringColumns"));
    if keys == ["a", "b", "c", "d"] {
        held(format!("4 keys read back; 5 refused ({})", words_line(&w)))
    } else {
        Err(differed(
            "clusteringColumns a, b, c, d",
            format!("clusteringColumns {keys:?}"),
        ))
    }
}

pub(super) async fn cluster_by_auto(b: &Bench) -> Verdict {
    let t = b.table("p_cluster_auto");
    b.must(
        &format!(
            "CREATE TABLE {} (a INT, b STRING) USING DELTA CLUSTER BY AUTO",
            t.q
        ),
        "CLUSTER BY AUTO is accepted",
    )
    .await?;
    let d = b.detail(&t).await?;
    let auto = d.get("clusterByAuto").cloned().flatten();
    match auto.as_deref() {
        Some("true") => held("accepted; DESCRIBE DETAIL clusterByAuto = true"),
        other => Err(differed(
            "DESCRIBE DETAIL clusterByAuto = true",
            format!("clusterByAuto = {}", other.unwrap_or("(absent)")),
        )),
    }
}

pub(super) async fn partition_after_cluster_none(b: &Bench) -> Verdict {
    let t = b.table("p_cluster_part");
    b.setup(&format!(
        "CREATE TABLE {} (a INT, b STRING) USING DELTA CLUSTER BY (a)",
        t.q
    ))
    .await?;
    b.setup(&format!("INSERT INTO {} VALUES (1, 'x'), (2, 'y')", t.q))
        .await?;
    b.compiled(
        &t,
        &Action::SetClustering { keys: vec![] },
        None,
        "CLUSTER BY NONE is accepted",
    )
    .await?;
    b.must(
        &format!(
            "CREATE OR REPLACE TABLE {q} USING DELTA PARTITIONED BY (a) AS SELECT a, b FROM {q}",
            q = t.q
        ),
        "the unclustered table can be replaced as a partitioned one",
    )
    .await?;
    let d = b.detail(&t).await?;
    let parts = json_list(d.get("partitionColumns"));
    let n = b.count(&t).await?;
    if parts == ["a"] && n == 2 {
        held("after CLUSTER BY NONE, replaced as PARTITIONED BY (a) with its 2 rows")
    } else {
        Err(differed(
            "partitionColumns [a] and 2 rows",
            format!("partitionColumns {parts:?}, {n} rows"),
        ))
    }
}

pub(super) async fn insert_overwrite_column_list(b: &Bench) -> Verdict {
    let t = b.table("p_overwrite");
    b.setup(&format!(
        "CREATE TABLE {} (a INT, b STRING) USING DELTA",
        t.q
    ))
    .await?;
    b.setup(&format!("INSERT INTO {} VALUES (1, 'x'), (2, 'y')", t.q))
        .await?;
    b.must(
        &format!(
            "INSERT OVERWRITE {} ({}, {}) SELECT 7, 'z'",
            t.q,
            sql::ident("a"),
            sql::ident("b")
        ),
        "INSERT OVERWRITE with a column list is accepted",
    )
    .await?;
    let v = b
        .scalar(&format!(
            "SELECT concat(count(*), ':', max(a)) FROM {}",
            t.q
        ))
        .await?;
    if v.as_deref() == Some("1:7") {
        held("the rows were replaced by the one written")
    } else {
        Err(differed(
            "1 row (a = 7)",
            format!("count:max = {}", v.unwrap_or_default()),
        ))
    }
}

pub(super) async fn undrop_brings_back(b: &Bench) -> Verdict {
    let t = b.table("p_undrop");
    b.setup(&format!(
        "CREATE TABLE {} (a INT) USING DELTA TBLPROPERTIES ({} = {})",
        t.q,
        sql::literal(OWNER_PROPERTY),
        sql::literal("verify/probe")
    ))
    .await?;
    b.setup(&format!("INSERT INTO {} VALUES (1), (2)", t.q))
        .await?;
    b.compiled(&t, &Action::DropTable, None, "the table can be dropped")
        .await?;
    let undo = sql::undo(&sql::Names::Catalog, &t.r, &Action::DropTable, None, None)
        .ok_or_else(|| unknown("our planner writes no undo for DROP TABLE"))?;
    b.must(&undo, "UNDROP brings the table back").await?;
    let n = b.count(&t).await?;
    let live = b.observe(&t).await?;
    let marker = live.properties.get(OWNER_PROPERTY).cloned();
    if n == 2 && marker.as_deref() == Some("verify/probe") {
        held("undropped with its 2 rows and the owner marker")
    } else {
        Err(differed(
            "2 rows and the owner marker",
            format!(
                "{n} rows, marker {}",
                marker.unwrap_or_else(|| "(absent)".into())
            ),
        ))
    }
}

pub(super) async fn ansi_mode(b: &Bench) -> Verdict {
    let ok = b.scalar("SELECT CAST('12' AS INT)").await?;
    if ok.as_deref() != Some("12") {
        return Err(unknown(format!("the control cast gave {ok:?}")));
    }
    match b.attempt("SELECT CAST('abc' AS INT)").await? {
        Err(w) => held(format!("a failing cast is an error ({})", words_line(&w))),
        Ok(r) => Err(differed(
            "CAST('abc' AS INT) fails",
            format!(
                "it gave {:?}",
                r.rows.first().and_then(|r| r.first()).cloned().flatten()
            ),
        )),
    }
}

pub(super) async fn missing_catalog_is_error(b: &Bench) -> Verdict {
    let cat = format!("verify_missing_{}", b.run_id);
    b.log
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(format!(
            "GET /api/2.1/unity-catalog/tables?catalog_name={cat}&schema_name={}",
            b.schema.schema
        ));
    // the control: the scratch schema lists fine
    if let Err(e) = b
        .client()
        .list_tables(&b.schema.catalog, &b.schema.schema)
        .await
    {
        return Err(unknown(format!("listing the scratch schema failed: {e}")));
    }
    match b.client().list_tables(&cat, &b.schema.schema).await {
        Ok(tables) => Err(differed(
            "an error for a missing catalog",
            format!("an answer with {} tables", tables.len()),
        )),
        Err(ClientError::Workspace(w)) => held(format!(
            "refused: {}",
            w.error_code.clone().unwrap_or_else(|| words_line(&w))
        )),
        Err(e) => Err(unknown(e.to_string())),
    }
}
