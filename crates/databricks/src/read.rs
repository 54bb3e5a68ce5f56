//! The live state of a schema's tables, parsed from Unity Catalog REST only
//! (no SQL warehouse has to run for a read):
//!
//! 1. `GET /api/2.1/unity-catalog/tables?catalog_name&schema_name` (paged):
//!    per table its columns (`type_json`: the Spark StructField with its
//!    metadata, so nested types, comments, generation, identity and
//!    defaults), `properties` (CHECKs as `delta.constraints.*`, the Delta
//!    version as `delta.lastUpdateVersion`), comment, owner, partition
//!    indexes, column masks, the row filter and PK/FK constraints.
//! 2. Only for a table whose spec declares them (`delta_operator_backend::Extras`):
//!    its tags (`GET …/entity-tag-assignments/tables/{cat.sch.tbl}/tags`), the
//!    tags of the columns whose spec declares some (`…/columns/{cat.sch.tbl.col}/tags`)
//!    and its direct grants (`GET …/permissions/table/{full_name}`), each paged.
//!
//! So an unchanged check of N tables in one schema costs ⌈N / page size⌉ REST
//! pages, plus one request per declared tag set or grant list, and no
//! statement. Pure functions only; the fixtures in the tests are shaped as
//! the public API reference shows.

use delta_operator_core::model::history::{TableHistory, VacuumCommit};
use delta_operator_core::model::maintenance::TableHealth;
use delta_operator_core::model::property;
use delta_operator_core::plan::undo_window::parse_utc_ms;
use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use delta_operator_core::model::delta_schema::{COMMENT_KEY, GENERATION_KEY, type_from_json};
use delta_operator_core::model::type_syntax::parse_type;
use delta_operator_core::model::{
    Check, ForeignKey, Grant, Identity, Mask, ObservedColumn, ObservedSchema, ObservedTable,
    PrimaryKey, Privilege, SchemaRef, TableKind, TableRef,
};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("reading {table}: {message}")]
pub struct ReadError {
    pub table: String,
    pub message: String,
}

/// Properties the service maintains and that change on every commit: they
/// would make every plan id differ without anything changing.
const VOLATILE: &[&str] = &[
    "delta.lastCommitTimestamp",
    "delta.lastUpdateVersion",
    "clusteringColumns",
    "delta.liquid.clusteringColumns",
];

/// The Delta field-metadata keys Databricks uses for defaults and identity.
const DEFAULT_KEY: &str = "CURRENT_DEFAULT";
const IDENTITY_START: &str = "delta.identity.start";
const IDENTITY_STEP: &str = "delta.identity.step";
const IDENTITY_EXPLICIT: &str = "delta.identity.allowExplicitInsert";

fn s<'a>(v: &'a Value, k: &str) -> Option<&'a str> {
    v.get(k).and_then(Value::as_str)
}

/// What identifies one version of a table's listing: when the Delta version
/// and `updated_at` are both unchanged, the parsed table can be reused.
pub fn stamp(info: &Value) -> String {
    let version = info
        .pointer("/properties/delta.lastUpdateVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let updated = info
        .get("updated_at")
        .map(Value::to_string)
        .unwrap_or_default();
    format!("{version}@{updated}")
}

/// The table's name as listed (lower case: UC lower-cases names).
pub fn listed_name(info: &Value) -> Option<String> {
    s(info, "name").map(str::to_lowercase)
}

/// Whether a listed object is a Delta table the operator can manage (not a
/// view, materialized view, streaming table or foreign table).
pub fn is_delta_table(info: &Value) -> bool {
    let kind = s(info, "table_type").unwrap_or("MANAGED");
    let format = s(info, "data_source_format").unwrap_or("DELTA");
    matches!(kind, "MANAGED" | "EXTERNAL") && format.eq_ignore_ascii_case("DELTA")
}

/// What a listed relation is, when a spec may govern it: a Delta table, or a
/// streaming table, materialized view or view (the annotation scopes only);
/// None for what the operator never reads (foreign or non-Delta tables).
/// `table_type` as the Unity Catalog TableInfo spells it (REST `tables/get`).
pub fn relation_kind(info: &Value) -> Option<TableKind> {
    if is_delta_table(info) {
        return Some(TableKind::Table);
    }
    match s(info, "table_type")? {
        "STREAMING_TABLE" => Some(TableKind::StreamingTable),
        "MATERIALIZED_VIEW" => Some(TableKind::MaterializedView),
        "VIEW" => Some(TableKind::View),
        _ => None,
    }
}

/// A `TableInfo` as our observed model (tags and grants are read apart, and only as asked).
pub fn table_from_info(schema: &SchemaRef, info: &Value) -> Result<ObservedTable, ReadError> {
    let name = s(info, "name").unwrap_or_default();
    let table = TableRef::new(&schema.catalog, &schema.schema, name);
    let err = |m: String| ReadError {
        table: table.to_string(),
        message: m,
    };
    let mut cols: Vec<&Value> = info
        .get("columns")
        .and_then(Value::as_array)
        .map(|c| c.iter().collect())
        .unwrap_or_default();
    cols.sort_by_key(|c| {
        c.get("position")
            .and_then(Value::as_u64)
            .unwrap_or(u64::MAX)
    });
    let mut columns = Vec::with_capacity(cols.len());
    let mut partitions: Vec<(u64, String)> = Vec::new();
    for c in cols {
        let col = column_from_info(c).map_err(err)?;
        if let Some(i) = c.get("partition_index").and_then(Value::as_u64) {
            partitions.push((i, col.name.clone()));
        }
        columns.push(col);
    }
    partitions.sort();
    let mut properties = BTreeMap::new();
    let mut checks = Vec::new();
    let props = info.get("properties").and_then(Value::as_object);
    for (k, v) in props.into_iter().flatten() {
        let Some(v) = v.as_str() else { continue };
        match k.strip_prefix(property::CONSTRAINTS_PREFIX) {
            Some(n) => checks.push(Check {
                name: n.to_string(),
                expression: v.to_string(),
            }),
            None if VOLATILE.contains(&k.as_str()) => {}
            None => {
                properties.insert(k.clone(), v.to_string());
            }
        }
    }
    checks.sort_by(|a, b| a.name.cmp(&b.name));
    let cluster_by = props
        .and_then(|p| p.get("clusteringColumns"))
        .and_then(Value::as_str)
        .map(clustering_columns)
        .transpose()
        .map_err(err)?;
    let (primary_key, foreign_keys) = constraints(info);
    // predictive optimization maintains the table: nothing else to measure for its upkeep
    let health = predictive_optimization(info).then(|| TableHealth {
        predictive_optimization: true,
        ..TableHealth::default()
    });
    Ok(ObservedTable {
        table,
        kind: relation_kind(info).unwrap_or_default(),
        columns,
        partitioned_by: partitions.into_iter().map(|(_, n)| n).collect(),
        cluster_by,
        properties,
        comment: s(info, "comment")
            .filter(|c| !c.is_empty())
            .map(str::to_string),
        tags: BTreeMap::new(),
        grants: vec![],
        owner: s(info, "owner").map(str::to_string),
        checks,
        primary_key,
        foreign_keys,
        row_filter: info
            .pointer("/row_filter/function_name")
            .and_then(Value::as_str)
            .map(str::to_string),
        unsupported_features: vec![],
        version: props
            .and_then(|p| p.get("delta.lastUpdateVersion"))
            .and_then(Value::as_str)
            .and_then(|v| v.parse().ok()),
        size_bytes: None,
        leftovers: vec![],
        unreadable: None,
        history: None,
        health,
    })
}

/// Whether Unity Catalog says predictive optimization is on for the table:
/// `effective_predictive_optimization_flag.value` is `ENABLE` (set on the
/// table, or inherited from its schema, catalog or the account).
pub fn predictive_optimization(info: &Value) -> bool {
    info.pointer("/effective_predictive_optimization_flag/value")
        .and_then(Value::as_str)
        .is_some_and(|v| v.eq_ignore_ascii_case("ENABLE"))
}

/// A table's upkeep from `DESCRIBE DETAIL` (`numFiles`) and `DESCRIBE HISTORY
/// … LIMIT n` (newest first: the last `OPTIMIZE` and `VACUUM END`, and the
/// retention of the `VACUUM START` before it). Restore points are not read
/// here (the SQL steps stamp none in commitInfo), so a vacuum keeps them by its
/// retention alone. SQL shows no
/// file sizes, so no file is counted as small (a compaction is due by its
/// schedule only), and Databricks writes its checkpoints itself
/// (`versions_since_checkpoint` unknown).
pub fn health_of(
    detail_columns: &[String],
    detail_rows: &[Vec<Option<String>>],
    history_columns: &[String],
    history_rows: &[Vec<Option<String>>],
) -> TableHealth {
    let col = |cols: &[String], name: &str| cols.iter().position(|c| c.eq_ignore_ascii_case(name));
    let cell = |row: &Vec<Option<String>>, i: Option<usize>| -> Option<String> {
        row.get(i?).cloned().flatten()
    };
    let mut h = TableHealth {
        files: detail_rows
            .first()
            .and_then(|r| cell(r, col(detail_columns, "numFiles")))
            .and_then(|n| n.parse().ok())
            .unwrap_or(0),
        ..TableHealth::default()
    };
    let (ts, op, params) = (
        col(history_columns, "timestamp"),
        col(history_columns, "operation"),
        col(history_columns, "operationParameters"),
    );
    let mut rows: Vec<(u64, &Vec<Option<String>>)> = history_rows
        .iter()
        .filter_map(|r| {
            let v = cell(r, col(history_columns, "version"))?.parse().ok()?;
            Some((v, r))
        })
        .collect();
    rows.sort_by_key(|r| std::cmp::Reverse(r.0));
    let mut pending_retention = false;
    for (_, r) in rows {
        let Some(at) = cell(r, ts).and_then(|t| parse_utc_ms(&t)) else {
            continue;
        };
        match cell(r, op).as_deref() {
            Some("OPTIMIZE") if h.last_compaction_ms.is_none() => h.last_compaction_ms = Some(at),
            Some("VACUUM END") if h.last_vacuum_ms.is_none() => {
                h.last_vacuum_ms = Some(at);
                pending_retention = true;
            }
            Some("VACUUM START") if pending_retention => {
                let p: Value = cell(r, params)
                    .and_then(|p| serde_json::from_str(&p).ok())
                    .unwrap_or(Value::Null);
                let ms = |name: &str| {
                    p.get(name).and_then(|x| {
                        x.as_u64()
                            .or_else(|| x.as_str().and_then(|s| s.trim().parse().ok()))
                    })
                };
                h.last_vacuum_retention_hours = ms("specifiedRetentionMillis")
                    .or_else(|| ms("defaultRetentionMillis"))
                    .map(|ms| ms / 3_600_000);
                pending_retention = false;
            }
            _ => {}
        }
    }
    h
}

/// One `ColumnInfo`: `type_json` when present (it carries nested types and
/// metadata), else `type_text`.
fn column_from_info(c: &Value) -> Result<ObservedColumn, String> {
    let name = s(c, "name").ok_or("a column without a name")?.to_string();
    let tj: Option<Value> = s(c, "type_json").and_then(|t| serde_json::from_str(t).ok());
    let (data_type, nullable, md) = match &tj {
        Some(f) => {
            let md = f.get("metadata").cloned().unwrap_or(Value::Null);
            let t =
                type_from_json(&f["type"], Some(&md)).map_err(|e| format!("column {name}: {e}"))?;
            (
                t,
                f.get("nullable").and_then(Value::as_bool).unwrap_or(true),
                md,
            )
        }
        None => {
            let text = s(c, "type_text")
                .ok_or_else(|| format!("column {name} has no type_json or type_text"))?;
            let t = parse_type(text).map_err(|e| format!("column {name}: type '{text}': {e}"))?;
            (
                t,
                c.get("nullable").and_then(Value::as_bool).unwrap_or(true),
                Value::Null,
            )
        }
    };
    let comment = s(c, "comment")
        .or_else(|| s(&md, COMMENT_KEY))
        .filter(|c| !c.is_empty())
        .map(str::to_string);
    let identity = md
        .get(IDENTITY_START)
        .and_then(as_i64)
        .map(|start| Identity {
            always: !md
                .get(IDENTITY_EXPLICIT)
                .and_then(Value::as_bool)
                .unwrap_or(false),
            start,
            increment: md.get(IDENTITY_STEP).and_then(as_i64).unwrap_or(1),
        });
    let mask = c.get("mask").filter(|m| !m.is_null()).and_then(|m| {
        Some(Mask {
            function: s(m, "function_name")?.to_string(),
            using_columns: m
                .get("using_column_names")
                .and_then(Value::as_array)
                .map(|u| {
                    u.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default(),
        })
    });
    Ok(ObservedColumn {
        comment,
        tags: BTreeMap::new(),
        mask,
        identity,
        generated: s(&md, GENERATION_KEY).map(str::to_string),
        default: s(&md, DEFAULT_KEY).map(str::to_string),
        ..ObservedColumn::new(&name, data_type, nullable)
    })
}

/// Delta writes numbers in metadata as JSON numbers; accept strings too.
fn as_i64(v: &Value) -> Option<i64> {
    v.as_i64()
        .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
}

/// The `clusteringColumns` property: a JSON list of field paths, `[["a"],["b","c"]]`.
fn clustering_columns(p: &str) -> Result<Vec<String>, String> {
    let v: Value = serde_json::from_str(p).map_err(|e| format!("clusteringColumns '{p}': {e}"))?;
    let paths = v
        .as_array()
        .ok_or_else(|| format!("clusteringColumns '{p}' is not a list"))?;
    Ok(paths
        .iter()
        .map(|path| match path {
            Value::Array(parts) => parts
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join("."),
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect())
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// `cat.sch.tbl` (backticks allowed) as a table reference.
fn table_ref(full: &str) -> Option<TableRef> {
    let parts: Vec<&str> = full.split('.').map(|p| p.trim_matches('`')).collect();
    match parts.as_slice() {
        [c, s, t] => Some(TableRef::new(c, s, t)),
        _ => None,
    }
}

fn constraints(info: &Value) -> (Option<PrimaryKey>, Vec<ForeignKey>) {
    let mut pk = None;
    let mut fks = Vec::new();
    for c in info
        .get("table_constraints")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(p) = c.get("primary_key_constraint") {
            pk = Some(PrimaryKey {
                name: s(p, "name").map(str::to_string),
                columns: strings(p.get("child_columns")),
            });
        }
        if let Some(f) = c.get("foreign_key_constraint")
            && let Some(references) = s(f, "parent_table").and_then(table_ref)
        {
            fks.push(ForeignKey {
                name: s(f, "name").map(str::to_string),
                columns: strings(f.get("child_columns")),
                references,
                referenced_columns: strings(f.get("parent_columns")),
            });
        }
    }
    (pk, fks)
}

/// Tags from the entity tag assignments API: `tag_key` and `tag_value` (a
/// tag without a value has no `tag_value`: an empty one).
pub fn tags_from_assignments(assignments: &[Value]) -> BTreeMap<String, String> {
    assignments
        .iter()
        .filter_map(|a| {
            Some((
                s(a, "tag_key")?.to_string(),
                s(a, "tag_value").unwrap_or_default().to_string(),
            ))
        })
        .collect()
}

/// Direct grants from the permissions API's `privilege_assignments`
/// (privileges spelled `ALL_PRIVILEGES`, `APPLY_TAG`: `Privilege` reads both
/// spellings), by principal, each principal's privileges sorted once.
pub fn grants_from_permissions(permissions: &Value) -> Vec<Grant> {
    let mut by_principal: BTreeMap<String, Vec<Privilege>> = BTreeMap::new();
    for pa in permissions
        .get("privilege_assignments")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(principal) = s(pa, "principal") else {
            continue;
        };
        by_principal
            .entry(principal.to_string())
            .or_default()
            .extend(
                strings(pa.get("privileges"))
                    .iter()
                    .map(|p| Privilege::new(p)),
            );
    }
    by_principal
        .into_iter()
        .filter(|(_, p)| !p.is_empty())
        .map(|(principal, mut privileges)| {
            privileges.sort();
            privileges.dedup();
            Grant {
                principal,
                privileges,
            }
        })
        .collect()
}

/// The `version` column of `DESCRIBE HISTORY … LIMIT 1`.
pub fn history_version(columns: &[String], rows: &[Vec<Option<String>>]) -> Option<u64> {
    let i = columns
        .iter()
        .position(|c| c.eq_ignore_ascii_case("version"))
        .unwrap_or(0);
    rows.first()?.get(i)?.as_deref()?.parse().ok()
}

/// A table's history from a `DESCRIBE HISTORY … LIMIT n` answer (newest
/// first, as it comes): each version's `timestamp` and whether it is a
/// VACUUM's commit (`operation`, with its `operationParameters`, a JSON object
/// of text values). Rows without a version are left out.
pub fn history_of(
    columns: &[String],
    rows: &[Vec<Option<String>>],
    read_at_ms: i64,
) -> TableHistory {
    let col = |name: &str| columns.iter().position(|c| c.eq_ignore_ascii_case(name));
    let (version, timestamp, operation, params) = (
        col("version"),
        col("timestamp"),
        col("operation"),
        col("operationParameters"),
    );
    let cell = |row: &Vec<Option<String>>, i: Option<usize>| -> Option<String> {
        row.get(i?).cloned().flatten()
    };
    let mut read: Vec<(u64, Option<i64>, Option<VacuumCommit>)> = rows
        .iter()
        .filter_map(|row| {
            let v = cell(row, version)?.parse::<u64>().ok()?;
            let at = cell(row, timestamp).and_then(|t| parse_utc_ms(&t));
            let p: Value = cell(row, params)
                .and_then(|p| serde_json::from_str(&p).ok())
                .unwrap_or(Value::Null);
            let vacuum = cell(row, operation).and_then(|op| {
                VacuumCommit::of_operation(&op, |name| {
                    p.get(name).and_then(|x| {
                        x.as_i64()
                            .or_else(|| x.as_str().and_then(|s| s.trim().parse().ok()))
                    })
                })
            });
            Some((v, at, vacuum))
        })
        .collect();
    read.sort_by_key(|r| r.0);
    TableHistory::from_commits(read_at_ms, read)
}

/// `sizeInBytes` of a `DESCRIBE DETAIL` answer.
pub fn detail_size(columns: &[String], rows: &[Vec<Option<String>>]) -> Option<u64> {
    let i = columns
        .iter()
        .position(|c| c.eq_ignore_ascii_case("sizeInBytes"))?;
    rows.first()?.get(i)?.as_deref()?.parse().ok()
}

/// A staging copy in a schema's listing: `<base>__delta_operator_staging_<run>`,
/// `run` the last 8 hex digits of the id of the run that made it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StagingCopy {
    /// Its name in the listing.
    pub name: String,
    /// The table it is a copy of.
    pub base: String,
    pub run: String,
}

/// The staging copies among a schema's listed tables.
pub fn staging_copies(tables: &BTreeMap<String, ObservedTable>) -> Vec<StagingCopy> {
    let marker = "__delta_operator_staging_";
    tables
        .keys()
        .filter_map(|n| {
            let at = n.rfind(marker)?;
            let run = &n[at + marker.len()..];
            (run.len() == 8 && run.chars().all(|c| c.is_ascii_hexdigit())).then(|| StagingCopy {
                name: n.clone(),
                base: n[..at].to_string(),
                run: run.to_string(),
            })
        })
        .collect()
}

/// Staging copies are no tables of their own: each is taken out of the listing
/// and attached to its table as a leftover, which the plan removes (a finished
/// run drops its own copy; one still there was left by a run that stopped).
/// A copy whose run may still be alive (`alive` names those: its run holds the
/// lock, or has a fresh heartbeat, or its process still runs on this host, as
/// the lake and Spark Connect judge it) is taken out but not attached: it is
/// its run's to drop, never another apply's.
pub fn attach_leftovers(
    s: &SchemaRef,
    tables: &mut BTreeMap<String, ObservedTable>,
    copies: &[StagingCopy],
    alive: &BTreeSet<String>,
) {
    for c in copies {
        let Some(copy) = tables.remove(&c.name) else {
            continue;
        };
        if alive.contains(&c.name) {
            continue;
        }
        if let Some(t) = tables.get_mut(&c.base) {
            t.leftovers.push(delta_operator_core::model::Leftover {
                kind: delta_operator_core::model::LeftoverKind::StagingCopy,
                run: c.run.clone(),
                location: format!("{}.{}.{}", s.catalog, s.schema, c.name),
                files: 0,
                bytes: copy.size_bytes.unwrap_or(0),
            });
        }
    }
}

/// A schema's own metadata from Unity Catalog REST: `GET
/// /api/2.1/unity-catalog/schemas/{full_name}` (a SchemaInfo: comment,
/// properties, owner) and `GET /api/2.1/unity-catalog/permissions/schema/{full_name}`
/// (`privilege_assignments`: principal and privileges, spelled `USE_SCHEMA`).
pub fn schema_from_info(schema: &SchemaRef, info: &Value, permissions: &Value) -> ObservedSchema {
    let properties = info
        .get("properties")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
                .collect()
        })
        .unwrap_or_default();
    let grants = grants_from_permissions(permissions);
    ObservedSchema {
        schema: schema.clone(),
        comment: s(info, "comment")
            .filter(|c| !c.is_empty())
            .map(str::to_string),
        properties,
        owner: s(info, "owner").map(str::to_string),
        grants,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_schema_reads_from_its_info_and_privilege_assignments() {
        let info = serde_json::json!({
            "name": "sales", "catalog_name": "main", "full_name": "main.sales",
            "owner": "data-eng", "comment": "Sales data",
            "properties": {"team": "revenue"}, "schema_id": "x"
        });
        let perms = serde_json::json!({"privilege_assignments": [
            {"principal": "analysts", "privileges": ["USE_SCHEMA", "SELECT"]}
        ]});
        let sref = SchemaRef {
            catalog: "main".into(),
            schema: "sales".into(),
        };
        let o = schema_from_info(&sref, &info, &perms);
        assert_eq!(o.comment.as_deref(), Some("Sales data"));
        assert_eq!(o.owner.as_deref(), Some("data-eng"));
        assert_eq!(
            o.properties.get("team").map(String::as_str),
            Some("revenue")
        );
        // sorted once, in the SQL spelling
        assert_eq!(o.grants[0].privileges[0], "SELECT");
        assert_eq!(o.grants[0].privileges[1], "USE SCHEMA");
        let bare = schema_from_info(
            &sref,
            &serde_json::json!({"name": "sales"}),
            &serde_json::json!({}),
        );
        assert_eq!(bare, ObservedSchema::new(sref));
    }
    use delta_operator_core::model::DataType;
    use serde_json::json;

    /// A listing with `orders`, two staging copies of it (one of a run that may still be
    /// alive), a name that only looks like one, and a copy of a table not listed: the copies
    /// leave the listing; only the dead run's is `orders`' leftover.
    #[test]
    fn a_staging_copy_is_a_leftover_only_when_its_run_cannot_be_alive() {
        let s = schema();
        let table = |name: &str| ObservedTable::new(TableRef::new("main", "sales", name), vec![]);
        let names = [
            "orders",
            "orders__delta_operator_staging_0011aabb",
            "orders__delta_operator_staging_deadbeef",
            "orders__delta_operator_staging_not-hex!",
            "gone__delta_operator_staging_12345678",
        ];
        let listing = || -> BTreeMap<String, ObservedTable> {
            names.iter().map(|n| (n.to_string(), table(n))).collect()
        };
        let mut tables = listing();
        let copies = staging_copies(&tables);
        assert_eq!(
            copies,
            vec![
                StagingCopy {
                    name: "gone__delta_operator_staging_12345678".into(),
                    base: "gone".into(),
                    run: "12345678".into()
                },
                StagingCopy {
                    name: "orders__delta_operator_staging_0011aabb".into(),
                    base: "orders".into(),
                    run: "0011aabb".into()
                },
                StagingCopy {
                    name: "orders__delta_operator_staging_deadbeef".into(),
                    base: "orders".into(),
                    run: "deadbeef".into()
                },
            ]
        );
        let alive = BTreeSet::from(["orders__delta_operator_staging_0011aabb".to_string()]);
        attach_leftovers(&s, &mut tables, &copies, &alive);
        assert_eq!(
            tables.keys().collect::<Vec<_>>(),
            vec!["orders", "orders__delta_operator_staging_not-hex!"],
            "every staging copy leaves the listing, alive or not"
        );
        let leftovers = &tables["orders"].leftovers;
        assert_eq!(leftovers.len(), 1, "{leftovers:?}");
        assert_eq!(leftovers[0].run, "deadbeef");
        assert_eq!(
            leftovers[0].location,
            "main.sales.orders__delta_operator_staging_deadbeef"
        );
        // no run alive: both copies are leftovers
        let mut tables = listing();
        attach_leftovers(&s, &mut tables, &copies, &BTreeSet::new());
        let runs: Vec<_> = tables["orders"]
            .leftovers
            .iter()
            .map(|l| l.run.as_str())
            .collect();
        assert_eq!(runs, vec!["0011aabb", "deadbeef"]);
    }

    fn schema() -> SchemaRef {
        SchemaRef {
            catalog: "main".into(),
            schema: "sales".into(),
        }
    }

    /// A `tables` list page shaped as the UC REST reference shows it.
    fn orders() -> Value {
        json!({
            "name": "orders",
            "catalog_name": "main",
            "schema_name": "sales",
            "full_name": "main.sales.orders",
            "table_type": "MANAGED",
            "data_source_format": "DELTA",
            "owner": "data-eng",
            "comment": "Orders ✓ it's",
            "created_at": 1700000000000u64,
            "updated_at": 1700000500000u64,
            "properties": {
                "delta-operator.io/owner": "default/orders",
                "delta.constraints.positive": "amount >= 0",
                "delta.lastUpdateVersion": "12",
                "delta.lastCommitTimestamp": "1700000500000",
                "delta.minReaderVersion": "3",
                "delta.minWriterVersion": "7",
                "delta.columnMapping.mode": "name",
                "clusteringColumns": "[[\"order_id\"]]"
            },
            "columns": [
                {"name": "order_id", "type_text": "bigint", "type_name": "LONG", "position": 0, "nullable": false,
                 "type_json": "{\"name\":\"order_id\",\"type\":\"long\",\"nullable\":false,\"metadata\":{\"delta.identity.start\":1,\"delta.identity.step\":1,\"delta.identity.allowExplicitInsert\":false,\"delta.identity.highWaterMark\":40}}"},
                {"name": "day", "type_text": "date", "type_name": "DATE", "position": 2, "nullable": true, "partition_index": 0,
                 "type_json": "{\"name\":\"day\",\"type\":\"date\",\"nullable\":true,\"metadata\":{\"delta.generationExpression\":\"CAST(ts AS DATE)\"}}"},
                {"name": "email", "type_text": "string", "type_name": "STRING", "position": 1, "nullable": true, "comment": "who's\nthere ${x}",
                 "mask": {"function_name": "main.sec.mask_email", "using_column_names": ["region"]},
                 "type_json": "{\"name\":\"email\",\"type\":\"string\",\"nullable\":true,\"metadata\":{\"comment\":\"who's\\nthere ${x}\",\"CURRENT_DEFAULT\":\"'none'\"}}"},
                {"name": "items", "type_text": "array<struct<sku:string,qty:int>>", "type_name": "ARRAY", "position": 3, "nullable": true,
                 "type_json": "{\"name\":\"items\",\"type\":{\"type\":\"array\",\"elementType\":{\"type\":\"struct\",\"fields\":[{\"name\":\"sku\",\"type\":\"string\",\"nullable\":false,\"metadata\":{\"comment\":\"stock unit\"}},{\"name\":\"qty\",\"type\":\"integer\",\"nullable\":true,\"metadata\":{}}]},\"containsNull\":true},\"nullable\":true,\"metadata\":{}}"},
                {"name": "code", "type_text": "varchar(10)", "type_name": "STRING", "position": 4, "nullable": true}
            ],
            "table_constraints": [
                {"primary_key_constraint": {"name": "orders_pk", "child_columns": ["order_id"]}},
                {"foreign_key_constraint": {"name": "orders_customer_fk", "child_columns": ["customer_id"], "parent_table": "main.sales.customers", "parent_columns": ["id"]}}
            ],
            "row_filter": {"function_name": "main.sec.only_mine", "input_column_names": ["region"]}
        })
    }

    #[test]
    fn parses_a_table_info() {
        let t = table_from_info(&schema(), &orders()).expect("parses");
        assert_eq!(t.table, TableRef::new("main", "sales", "orders"));
        assert_eq!(
            t.columns
                .iter()
                .map(|c| c.name.as_str())
                .collect::<Vec<_>>(),
            vec!["order_id", "email", "day", "items", "code"]
        );
        let id = &t.columns[0];
        assert_eq!(id.data_type, DataType::Long);
        assert!(!id.nullable);
        assert_eq!(
            id.identity,
            Some(Identity {
                always: true,
                start: 1,
                increment: 1
            })
        );
        let email = &t.columns[1];
        assert_eq!(email.comment.as_deref(), Some("who's\nthere ${x}"));
        assert_eq!(email.default.as_deref(), Some("'none'"));
        assert_eq!(
            email.mask,
            Some(Mask {
                function: "main.sec.mask_email".into(),
                using_columns: vec!["region".into()]
            })
        );
        assert_eq!(t.columns[2].generated.as_deref(), Some("CAST(ts AS DATE)"));
        let items = &t.columns[3].data_type;
        let DataType::Array { element, .. } = items else {
            panic!("array")
        };
        let DataType::Struct { fields } = element.as_ref() else {
            panic!("struct")
        };
        assert_eq!(fields[0].comment.as_deref(), Some("stock unit"));
        assert!(!fields[0].nullable);
        assert_eq!(fields[1].data_type, DataType::Int);
        assert_eq!(t.columns[4].data_type, DataType::Varchar { length: 10 });
        assert_eq!(t.partitioned_by, vec!["day".to_string()]);
        assert_eq!(t.cluster_by, Some(vec!["order_id".to_string()]));
        assert_eq!(
            t.checks,
            vec![Check {
                name: "positive".into(),
                expression: "amount >= 0".into()
            }]
        );
        assert_eq!(t.owner_marker(), Some("default/orders"));
        assert!(
            !t.properties.contains_key("delta.lastUpdateVersion")
                && !t.properties.contains_key("clusteringColumns")
        );
        assert_eq!(
            t.properties
                .get("delta.minWriterVersion")
                .map(String::as_str),
            Some("7")
        );
        assert_eq!(t.version, Some(12));
        assert_eq!(t.comment.as_deref(), Some("Orders ✓ it's"));
        assert_eq!(t.owner.as_deref(), Some("data-eng"));
        assert_eq!(
            t.primary_key,
            Some(PrimaryKey {
                name: Some("orders_pk".into()),
                columns: vec!["order_id".into()]
            })
        );
        assert_eq!(
            t.foreign_keys[0].references,
            TableRef::new("main", "sales", "customers")
        );
        assert_eq!(t.row_filter.as_deref(), Some("main.sec.only_mine"));
    }

    #[test]
    fn kinds_and_stamps() {
        assert!(is_delta_table(&orders()));
        assert!(!is_delta_table(&json!({"name": "v", "table_type": "VIEW"})));
        assert!(!is_delta_table(
            &json!({"name": "p", "table_type": "EXTERNAL", "data_source_format": "PARQUET"})
        ));
        let mut moved = orders();
        moved["properties"]["delta.lastUpdateVersion"] = json!("13");
        assert_ne!(stamp(&orders()), stamp(&moved));
        assert_eq!(stamp(&orders()), stamp(&orders()));
        assert_eq!(
            listed_name(&json!({"name": "Orders"})).as_deref(),
            Some("orders")
        );
    }

    #[test]
    fn tags_and_grants_read_from_their_rest_answers() {
        // shaped as the entity tag assignments and permissions references show them
        let tags = tags_from_assignments(&[
            json!({"entity_type": "tables", "entity_name": "main.sales.orders", "tag_key": "domain", "tag_value": "sales",
                   "update_time": "2026-01-14T08:15:00.000Z", "updated_by": "someone"}),
            json!({"entity_type": "tables", "entity_name": "main.sales.orders", "tag_key": "certified"}),
            json!({"tag_value": "no key"}),
        ]);
        assert_eq!(
            tags,
            BTreeMap::from([
                ("certified".to_string(), String::new()),
                ("domain".to_string(), "sales".to_string())
            ])
        );
        let grants = grants_from_permissions(&json!({"privilege_assignments": [
            {"principal": "z-team", "privileges": ["SELECT"]},
            {"principal": "analysts", "privileges": ["SELECT", "MODIFY"]},
            {"principal": "analysts", "privileges": ["ALL_PRIVILEGES", "SELECT"]},
            {"principal": "nobody", "privileges": []},
            {"privileges": ["SELECT"]}
        ], "next_page_token": null}));
        assert_eq!(
            grants,
            vec![
                Grant {
                    principal: "analysts".into(),
                    privileges: vec!["ALL PRIVILEGES".into(), "MODIFY".into(), "SELECT".into()]
                },
                Grant {
                    principal: "z-team".into(),
                    privileges: vec!["SELECT".into()]
                }
            ]
        );
        assert!(grants_from_permissions(&json!({})).is_empty());
    }

    #[test]
    fn predictive_optimization_as_unity_catalog_shows_it() {
        let on = serde_json::json!({"effective_predictive_optimization_flag": {"value": "ENABLE", "inherited_from_type": "CATALOG", "inherited_from_name": "main"}});
        let off =
            serde_json::json!({"effective_predictive_optimization_flag": {"value": "DISABLE"}});
        assert!(predictive_optimization(&on));
        assert!(!predictive_optimization(&off));
        assert!(!predictive_optimization(&serde_json::json!({})));
    }

    #[test]
    fn health_from_detail_and_history() {
        let s = |v: &[&str]| v.iter().map(|c| c.to_string()).collect::<Vec<_>>();
        let dcols = s(&["format", "numFiles", "sizeInBytes"]);
        let drows = vec![vec![
            Some("delta".into()),
            Some("42".into()),
            Some("1000".into()),
        ]];
        let hcols = s(&["version", "timestamp", "operation", "operationParameters"]);
        let row = |v: &str, ts: &str, op: &str, p: &str| {
            vec![
                Some(v.into()),
                Some(ts.into()),
                Some(op.into()),
                Some(p.into()),
            ]
        };
        let hrows = vec![
            row("9", "2026-12-04T12:00:00.000Z", "WRITE", "{}"),
            row(
                "8",
                "2026-12-04T11:00:01.000Z",
                "VACUUM END",
                r#"{"status":"COMPLETED"}"#,
            ),
            row(
                "7",
                "2026-12-04T11:00:00.000Z",
                "VACUUM START",
                r#"{"retentionCheckEnabled":"true","specifiedRetentionMillis":"608400000","defaultRetentionMillis":"604800000"}"#,
            ),
            row(
                "6",
                "2026-12-04T10:00:00.000Z",
                "OPTIMIZE",
                r#"{"predicate":"[]"}"#,
            ),
            row("5", "2026-12-03T10:00:00.000Z", "OPTIMIZE", "{}"),
        ];
        let h = health_of(&dcols, &drows, &hcols, &hrows);
        assert_eq!(h.files, 42);
        assert_eq!(h.small_files, 0);
        assert_eq!(h.versions_since_checkpoint, None);
        assert_eq!(h.last_compaction_ms, parse_utc_ms("2026-12-04T10:00:00Z"));
        assert_eq!(h.last_vacuum_ms, parse_utc_ms("2026-12-04T11:00:01Z"));
        assert_eq!(h.last_vacuum_retention_hours, Some(169));
        assert!(!h.predictive_optimization);
        // nothing read: nothing known
        assert_eq!(health_of(&[], &[], &[], &[]), TableHealth::default());
    }

    #[test]
    fn a_history_with_a_vacuum() {
        let cols: Vec<String> = [
            "version",
            "timestamp",
            "userId",
            "operation",
            "operationParameters",
        ]
        .iter()
        .map(|c| c.to_string())
        .collect();
        let row = |v: &str, ts: &str, op: &str, p: &str| {
            vec![
                Some(v.into()),
                Some(ts.into()),
                None,
                Some(op.into()),
                Some(p.into()),
            ]
        };
        let rows = vec![
            row(
                "5",
                "2026-12-04T14:00:01.000Z",
                "VACUUM END",
                r#"{"status":"COMPLETED"}"#,
            ),
            row(
                "4",
                "2026-12-04T14:00:00.000Z",
                "VACUUM START",
                r#"{"retentionCheckEnabled":"false","specifiedRetentionMillis":"0","defaultRetentionMillis":"604800000"}"#,
            ),
            row(
                "3",
                "2026-12-01T10:00:00.000Z",
                "WRITE",
                r#"{"mode":"Append"}"#,
            ),
            vec![None, None, None, None, None],
        ];
        let h = history_of(&cols, &rows, 9);
        assert_eq!(h.read_at_ms, 9);
        assert_eq!(
            h.commits.iter().map(|c| c.version).collect::<Vec<_>>(),
            [3, 4, 5]
        );
        assert_eq!(h.committed(4), parse_utc_ms("2026-12-04T14:00:00Z"));
        assert_eq!(h.vacuums.len(), 1);
        assert_eq!(h.vacuums[0].retention_ms, Some(0));
        assert!(h.commits[1].vacuum && h.commits[2].vacuum && !h.commits[0].vacuum);
    }

    #[test]
    fn history() {
        let cols = vec!["version".to_string(), "timestamp".to_string()];
        assert_eq!(
            history_version(&cols, &[vec![Some("7".into()), Some("2026-01-01".into())]]),
            Some(7)
        );
        assert_eq!(history_version(&cols, &[]), None);
    }
}
