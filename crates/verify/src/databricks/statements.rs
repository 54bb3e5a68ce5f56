//! Statements as we write them: hostile names and comments round-trip through
//! quoting, primary keys, the history head a restore point reads, and the owner
//! marker on a clone.

use delta_operator_core::model::{
    DataType, DesiredColumn, DesiredTable, OWNER_PROPERTY, PrimaryKey,
};
use delta_operator_core::plan::Action;
use delta_operator_sql as sql;

use super::bench::{Bench, cell};
use crate::outcome::{Verdict, differed, held};

/// Names and texts that quoting must carry exactly (the sql.rs tests' hostile list).
const HOSTILE_COLUMNS: &[&str] = &[
    "it's",
    "back\\slash",
    "${x}",
    "ünïcødé ✓ 表",
    "semi;colon",
    "two words",
];
const HOSTILE_COMMENTS: &[&str] = &[
    "O'Reilly",
    "back\\slash",
    "${x} and ${env:HOME}",
    "line1\nline2",
    "ünïcødé ✓ 表",
    "'; DROP TABLE x; --",
    "\\'",
];

pub(super) async fn hostile_names_round_trip(b: &Bench) -> Verdict {
    let t = b.table("p_hostile");
    let mut d = DesiredTable::new(t.r.clone(), "verify/hostile", vec![]);
    for (i, name) in HOSTILE_COLUMNS.iter().enumerate() {
        let mut c = DesiredColumn::new(name, DataType::String, true);
        c.comment = Some(HOSTILE_COMMENTS[i % HOSTILE_COMMENTS.len()].to_string());
        d.columns.push(c);
    }
    d.comment = Some(HOSTILE_COMMENTS.join(" | "));
    b.must(
        &sql::create_table(&sql::Names::Catalog, &d),
        "CREATE TABLE with hostile names and comments is accepted",
    )
    .await?;
    let live = b.observe(&t).await?;
    let mut wrong = Vec::new();
    for c in &d.columns {
        match live.columns.iter().find(|l| l.name == c.name) {
            None => wrong.push(format!(
                "column {:?} missing (live: {:?})",
                c.name,
                live.columns.iter().map(|l| &l.name).collect::<Vec<_>>()
            )),
            Some(l) if l.comment != c.comment => wrong.push(format!(
                "comment of {:?}: {:?} read back as {:?}",
                c.name, c.comment, l.comment
            )),
            _ => {}
        }
    }
    if live.comment != d.comment {
        wrong.push(format!(
            "table comment {:?} read back as {:?}",
            d.comment, live.comment
        ));
    }
    // a value written through a literal reads back too
    let value = HOSTILE_COMMENTS.join("|");
    b.setup(&format!(
        "INSERT INTO {} ({}) VALUES ({})",
        t.q,
        sql::ident(HOSTILE_COLUMNS[0]),
        sql::literal(&value)
    ))
    .await?;
    let got = b
        .scalar(&format!(
            "SELECT {} FROM {}",
            sql::ident(HOSTILE_COLUMNS[0]),
            t.q
        ))
        .await?;
    if got.as_deref() != Some(value.as_str()) {
        wrong.push(format!("value {value:?} read back as {got:?}"));
    }
    if wrong.is_empty() {
        held(format!(
            "{} column names, their comments, the table comment and a value round-trip exactly",
            HOSTILE_COLUMNS.len()
        ))
    } else {
        Err(differed(
            "every name and text read back exactly",
            wrong.join("; "),
        ))
    }
}

pub(super) async fn primary_key_statements(b: &Bench) -> Verdict {
    let t = b.table("p_pk");
    b.setup(&format!(
        "CREATE TABLE {} (id INT NOT NULL, v STRING) USING DELTA",
        t.q
    ))
    .await?;
    let key = PrimaryKey {
        name: Some("PK_Mixed_Case".into()),
        columns: vec!["id".into()],
    };
    // live unknown: our compiler sends DROP PRIMARY KEY IF EXISTS first
    b.compiled(
        &t,
        &Action::SetPrimaryKey {
            key,
            replaces: None,
        },
        None,
        "DROP PRIMARY KEY IF EXISTS + ADD CONSTRAINT … PRIMARY KEY are accepted",
    )
    .await?;
    let r = b
        .setup(&format!(
            "SELECT constraint_name FROM {}.information_schema.table_constraints WHERE table_schema = {} AND table_name = {} AND constraint_type = 'PRIMARY KEY'",
            sql::ident(&b.schema.catalog),
            sql::literal(&b.schema.schema),
            sql::literal(&t.r.table)
        ))
        .await?;
    let names: Vec<String> = r.rows.iter().map(|row| cell(row, 0)).collect();
    if names == ["pk_mixed_case"] {
        held("the key was added and its name reads back lower-cased")
    } else {
        Err(differed(
            "one key named pk_mixed_case",
            format!("keys {names:?}"),
        ))
    }
}

pub(super) async fn history_gives_version(b: &Bench) -> Verdict {
    let t = b.table("p_history");
    b.setup(&format!("CREATE TABLE {} (a INT) USING DELTA", t.q))
        .await?;
    let v0 = b.version(&t).await?;
    b.setup(&format!("INSERT INTO {} VALUES (1)", t.q)).await?;
    let v1 = b.version(&t).await?;
    if v1 == v0 + 1 {
        held(format!("version {v0} → {v1} after one commit"))
    } else {
        Err(differed(
            format!("version {}", v0 + 1),
            format!("version {v1}"),
        ))
    }
}

pub(super) async fn clone_copies_owner_marker(b: &Bench) -> Verdict {
    let t = b.table("p_marker_src");
    let c = b.table("p_marker_clone");
    b.setup(&format!(
        "CREATE TABLE {} (a INT) USING DELTA TBLPROPERTIES ({} = {})",
        t.q,
        sql::literal(OWNER_PROPERTY),
        sql::literal("verify/probe")
    ))
    .await?;
    b.setup(&format!("CREATE TABLE {} SHALLOW CLONE {}", c.q, t.q))
        .await?;
    let cloned = b.observe(&c).await?;
    if cloned.properties.get(OWNER_PROPERTY).map(String::as_str) != Some("verify/probe") {
        return Err(differed(
            "the clone carries the owner marker",
            format!("clone marker {:?}", cloned.properties.get(OWNER_PROPERTY)),
        ));
    }
    b.compiled(
        &c,
        &Action::UnsetProperties {
            keys: vec![OWNER_PROPERTY.into()],
        },
        None,
        "the clone's marker can be unset",
    )
    .await?;
    let cloned = b.observe(&c).await?;
    let source = b.observe(&t).await?;
    match (
        cloned.properties.get(OWNER_PROPERTY),
        source.properties.get(OWNER_PROPERTY).map(String::as_str),
    ) {
        (None, Some("verify/probe")) => {
            held("copied to the clone; unset there, kept on the source")
        }
        (cm, sm) => Err(differed(
            "clone unmarked, source marked",
            format!("clone {cm:?}, source {sm:?}"),
        )),
    }
}
