//! Table features and the in-place changes our plans make: which change needs
//! which feature (widening, column mapping, defaults), what cannot be undone, and
//! NOT NULL, CHECK, RESTORE, clustering and comments as our compiler writes them.

use delta_operator_core::model::property;
use delta_operator_core::model::{Check, DataType};
use delta_operator_core::plan::Action;
use delta_operator_sql as sql;

use super::bench::{Bench, json_list, words_line};
use crate::outcome::{Finding, Verdict, differed, held, unknown};

pub(super) async fn widening_needs_feature(b: &Bench) -> Verdict {
    let t = b.table("p_widen_feature");
    b.setup(&format!("CREATE TABLE {} (a INT) USING DELTA", t.q))
        .await?;
    b.setup(&format!("INSERT INTO {} VALUES (1)", t.q)).await?;
    let props = b.detail(&t).await?;
    if props
        .get("properties")
        .cloned()
        .flatten()
        .is_some_and(|p| p.contains(property::ENABLE_TYPE_WIDENING))
    {
        return Err(unknown(
            "new tables already have delta.enableTypeWidening set here (a workspace default)",
        ));
    }
    let alter = Action::AlterColumnType {
        path: vec!["a".into()].into(),
        to: DataType::Long,
    };
    let stmt = sql::compile(&t.r, &alter, None)
        .map_err(|e| unknown(e.to_string()))?
        .remove(0);
    let w = b
        .refused(&stmt, "int → bigint refused without type widening")
        .await?;
    b.compiled(
        &t,
        &Action::EnableTypeWidening,
        None,
        "type widening can be enabled",
    )
    .await?;
    b.must(&stmt, "int → bigint accepted after the enable step")
        .await?;
    held(format!(
        "refused before ({}), accepted after the enable step",
        words_line(&w)
    ))
}

pub(super) async fn rename_needs_column_mapping(b: &Bench) -> Verdict {
    let t = b.table("p_rename");
    b.setup(&format!(
        "CREATE TABLE {} (a INT, b STRING) USING DELTA",
        t.q
    ))
    .await?;
    b.setup(&format!("INSERT INTO {} VALUES (1, 'x')", t.q))
        .await?;
    let rename = Action::RenameColumn {
        from: "b".into(),
        to: "b2".into(),
    };
    let stmt = sql::compile(&t.r, &rename, None)
        .map_err(|e| unknown(e.to_string()))?
        .remove(0);
    let w = b
        .refused(&stmt, "RENAME COLUMN refused without column mapping")
        .await?;
    b.compiled(
        &t,
        &Action::EnableColumnMapping,
        None,
        "column mapping enabled by our step (the mode alone)",
    )
    .await?;
    b.must(&stmt, "RENAME COLUMN accepted after column mapping")
        .await?;
    let v = b
        .scalar(&format!("SELECT {} FROM {}", sql::ident("b2"), t.q))
        .await?;
    if v.as_deref() == Some("x") {
        held(format!(
            "refused before ({}); renamed after, values kept",
            words_line(&w)
        ))
    } else {
        Err(differed("b2 = 'x'", format!("b2 = {v:?}")))
    }
}

pub(super) async fn drop_needs_column_mapping(b: &Bench) -> Verdict {
    let t = b.table("p_dropcol");
    b.setup(&format!(
        "CREATE TABLE {} (a INT, b STRING) USING DELTA",
        t.q
    ))
    .await?;
    let drop = Action::DropColumn { name: "b".into() };
    let stmt = sql::compile(&t.r, &drop, None)
        .map_err(|e| unknown(e.to_string()))?
        .remove(0);
    let w = b
        .refused(&stmt, "DROP COLUMN refused without column mapping")
        .await?;
    b.compiled(
        &t,
        &Action::EnableColumnMapping,
        None,
        "column mapping enabled by our step",
    )
    .await?;
    b.must(&stmt, "DROP COLUMN accepted after column mapping")
        .await?;
    let live = b.observe(&t).await?;
    if live.column("b").is_none() {
        held(format!(
            "refused before ({}); dropped after",
            words_line(&w)
        ))
    } else {
        Err(differed("b gone", "b still reads back"))
    }
}

pub(super) async fn column_mapping_irreversible(b: &Bench) -> Verdict {
    let t = b.table("p_mapping_off");
    b.setup(&format!("CREATE TABLE {} (a INT) USING DELTA", t.q))
        .await?;
    b.compiled(
        &t,
        &Action::EnableColumnMapping,
        None,
        "column mapping can be enabled",
    )
    .await
    .map_err(|o| match o {
        Finding::Differed { workspace, .. } => Finding::Unknown {
            why: "enabling column mapping was refused".into(),
            workspace,
        },
        other => other,
    })?;
    let off = format!(
        "ALTER TABLE {} SET TBLPROPERTIES ({} = {})",
        t.q,
        sql::literal(property::COLUMN_MAPPING_MODE),
        sql::literal("none")
    );
    let w = b
        .refused(
            &off,
            "setting delta.columnMapping.mode back to 'none' is refused",
        )
        .await?;
    held(format!("refused ({})", words_line(&w)))
}

pub(super) async fn set_not_null_in_place(b: &Bench) -> Verdict {
    let t = b.table("p_set_nn");
    b.setup(&format!("CREATE TABLE {} (a INT, b INT) USING DELTA", t.q))
        .await?;
    b.setup(&format!("INSERT INTO {} VALUES (1, NULL), (2, 3)", t.q))
        .await?;
    b.compiled(
        &t,
        &Action::SetNotNull {
            path: vec!["a".into()].into(),
        },
        None,
        "SET NOT NULL accepted on a column without NULLs",
    )
    .await?;
    let live = b.observe(&t).await?;
    if live.column("a").is_none_or(|c| c.nullable) {
        return Err(differed("a NOT NULL", "a still reads nullable"));
    }
    let stmt = sql::compile(
        &t.r,
        &Action::SetNotNull {
            path: vec!["b".into()].into(),
        },
        None,
    )
    .map_err(|e| unknown(e.to_string()))?
    .remove(0);
    let w = b
        .refused(&stmt, "SET NOT NULL refused while the column holds NULLs")
        .await?;
    held(format!(
        "in place without NULLs; refused with NULLs ({})",
        words_line(&w)
    ))
}

pub(super) async fn drop_not_null_in_place(b: &Bench) -> Verdict {
    let t = b.table("p_drop_nn");
    b.setup(&format!(
        "CREATE TABLE {} (a INT NOT NULL) USING DELTA",
        t.q
    ))
    .await?;
    b.compiled(
        &t,
        &Action::DropNotNull {
            path: vec!["a".into()].into(),
        },
        None,
        "DROP NOT NULL accepted",
    )
    .await?;
    let live = b.observe(&t).await?;
    if live.column("a").is_some_and(|c| c.nullable) {
        held("a reads nullable")
    } else {
        Err(differed("a nullable", "a still reads NOT NULL"))
    }
}

pub(super) async fn restore_undoes_drop_column(b: &Bench) -> Verdict {
    let t = b.table("p_restore_drop");
    b.setup(&format!(
        "CREATE TABLE {} (a INT, b STRING) USING DELTA TBLPROPERTIES ({} = {})",
        t.q,
        sql::literal(property::COLUMN_MAPPING_MODE),
        sql::literal("name")
    ))
    .await?;
    b.setup(&format!("INSERT INTO {} VALUES (1, 'x'), (2, 'y')", t.q))
        .await?;
    let v = b.version(&t).await?;
    let drop = Action::DropColumn { name: "b".into() };
    b.compiled(&t, &drop, None, "DROP COLUMN accepted")
        .await
        .map_err(|o| match o {
            Finding::Differed { workspace, .. } => Finding::Unknown {
                why: "the DROP COLUMN to undo was refused".into(),
                workspace,
            },
            other => other,
        })?;
    let undo = sql::undo(&sql::Names::Catalog, &t.r, &drop, None, Some(v))
        .ok_or_else(|| unknown("our planner writes no undo for DROP COLUMN"))?;
    b.must(&undo, "RESTORE to the version before the drop is accepted")
        .await?;
    let vals = b
        .scalar(&format!(
            "SELECT concat_ws(',', sort_array(collect_list({}))) FROM {}",
            sql::ident("b"),
            t.q
        ))
        .await?;
    if vals.as_deref() == Some("x,y") {
        held(format!(
            "RESTORE to version {v} brought b back with its values"
        ))
    } else {
        Err(differed("b = x, y", format!("b = {vals:?}")))
    }
}

pub(super) async fn check_validates_existing_rows(b: &Bench) -> Verdict {
    let t = b.table("p_check_rows");
    b.setup(&format!("CREATE TABLE {} (a INT) USING DELTA", t.q))
        .await?;
    b.setup(&format!("INSERT INTO {} VALUES (-1), (5)", t.q))
        .await?;
    let bad = Action::AddCheck {
        check: Check {
            name: "c_nonneg".into(),
            expression: "a >= 0".into(),
        },
    };
    let stmt = sql::compile(&t.r, &bad, None)
        .map_err(|e| unknown(e.to_string()))?
        .remove(0);
    let w = b
        .refused(&stmt, "a CHECK that existing rows break is refused")
        .await?;
    let good = Action::AddCheck {
        check: Check {
            name: "c_floor".into(),
            expression: "a >= -5".into(),
        },
    };
    b.compiled(&t, &good, None, "a CHECK that every row meets is accepted")
        .await?;
    let d = b.detail(&t).await?;
    let props = d.get("properties").cloned().flatten().unwrap_or_default();
    if props.contains("delta.constraints.c_floor") {
        held(format!(
            "refused for breaking rows ({}); stored as delta.constraints.c_floor",
            words_line(&w)
        ))
    } else {
        Err(differed(
            "the property delta.constraints.c_floor",
            format!("properties {props}"),
        ))
    }
}

pub(super) async fn default_needs_feature(b: &Bench) -> Verdict {
    let t = b.table("p_default");
    b.setup(&format!(
        "CREATE TABLE {} (a INT, b STRING) USING DELTA",
        t.q
    ))
    .await?;
    let action = Action::SetDefault {
        column: "b".into(),
        expression: "'n/a'".into(),
    };
    // the plan's two steps: the table feature, then the default
    let mut stmts = sql::compile(&t.r, &Action::EnableColumnDefaults, None)
        .map_err(|e| unknown(e.to_string()))?;
    stmts.extend(sql::compile(&t.r, &action, None).map_err(|e| unknown(e.to_string()))?);
    let Some(set_default) = stmts.last().cloned() else {
        return Err(unknown("no SQL"));
    };
    let w = b
        .refused(
            &set_default,
            "SET DEFAULT refused before the feature is enabled",
        )
        .await?;
    for s in &stmts {
        b.must(
            s,
            "our compiled step (feature, then SET DEFAULT) is accepted",
        )
        .await?;
    }
    b.setup(&format!(
        "INSERT INTO {} ({}) VALUES (1)",
        t.q,
        sql::ident("a")
    ))
    .await?;
    let v = b
        .scalar(&format!("SELECT {} FROM {}", sql::ident("b"), t.q))
        .await?;
    if v.as_deref() == Some("n/a") {
        held(format!(
            "refused alone ({}); our two statements work and the default fills inserts",
            words_line(&w)
        ))
    } else {
        Err(differed(
            "an insert without b gets 'n/a'",
            format!("b = {v:?}"),
        ))
    }
}

pub(super) async fn cluster_by_in_place(b: &Bench) -> Verdict {
    let t = b.table("p_cluster_alter");
    b.setup(&format!(
        "CREATE TABLE {} (a INT, b STRING) USING DELTA",
        t.q
    ))
    .await?;
    b.compiled(
        &t,
        &Action::SetClustering {
            keys: vec!["a".into()],
        },
        None,
        "ALTER TABLE … CLUSTER BY (a) on an unclustered table",
    )
    .await?;
    let keys = json_list(b.detail(&t).await?.get("clusteringColumns"));
    if keys != ["a"] {
        return Err(differed(
            "clusteringColumns [a]",
            format!("clusteringColumns {keys:?}"),
        ));
    }
    b.compiled(
        &t,
        &Action::SetClustering { keys: vec![] },
        None,
        "CLUSTER BY NONE",
    )
    .await?;
    let keys = json_list(b.detail(&t).await?.get("clusteringColumns"));
    if keys.is_empty() {
        held("keys set and cleared in place")
    } else {
        Err(differed(
            "no clustering columns",
            format!("clusteringColumns {keys:?}"),
        ))
    }
}

pub(super) async fn comments_clear(b: &Bench) -> Verdict {
    let t = b.table("p_comments");
    b.setup(&format!(
        "CREATE TABLE {} (a INT COMMENT 'col') USING DELTA COMMENT 'tbl'",
        t.q
    ))
    .await?;
    b.compiled(
        &t,
        &Action::SetTableComment {
            comment: String::new(),
        },
        None,
        "COMMENT ON TABLE … IS NULL accepted",
    )
    .await?;
    b.compiled(
        &t,
        &Action::SetColumnComment {
            path: vec!["a".into()].into(),
            comment: String::new(),
        },
        None,
        "ALTER COLUMN … COMMENT '' accepted",
    )
    .await?;
    let live = b.observe(&t).await?;
    let table = live.comment.clone().unwrap_or_default();
    let column = live
        .column("a")
        .and_then(|c| c.comment.clone())
        .unwrap_or_default();
    if table.is_empty() && column.is_empty() {
        held("both comments read back empty")
    } else {
        Err(differed(
            "no comments",
            format!("table comment {table:?}, column comment {column:?}"),
        ))
    }
}
