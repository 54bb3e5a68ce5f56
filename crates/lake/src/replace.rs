//! The replace of a rewrite: one Delta commit that removes every file of the
//! version the rows were read from and adds the rewritten ones, with the new
//! schema and partitioning in the same commit. It is conditioned on that
//! version: delta-rs is told not to retry (`max_retries = 0`), so if any commit
//! landed in between, nothing is committed and the caller looks at what landed.
//!
//! Blind appends (commits that only add files) are the normal case beside a
//! live writer: their files are converted too and the commit is tried again
//! against the newer version, so no acknowledged row is lost and no file of
//! the old physical schema survives under the new one. Anything else (a
//! delete, an OPTIMIZE, a schema change) ends the replace: it is reported,
//! nothing is committed, and the next apply plans against the new state.

use deltalake::DeltaTable;
use deltalake::kernel::transaction::{CommitBuilder, CommitProperties};
use deltalake::kernel::{Action as DeltaAction, Add, Metadata, Protocol, StructType};
use deltalake::protocol::{DeltaOperation, SaveMode};
use serde_json::Value;

use super::{BackendError, delta_err};

/// How often a replace converts appends that landed meanwhile and tries again.
pub const MAX_CATCH_UP_ROUNDS: usize = 20;

/// What landed on a table after the version a replace read.
#[derive(Debug)]
pub enum Since {
    /// Only blind appends: these files, up to `latest`.
    Appends { latest: u64, adds: Vec<Add> },
    /// Something a replace cannot absorb.
    Other { version: u64, what: String },
}

/// Reads the commits after `base` and classifies them.
pub async fn since(table: &DeltaTable, base: u64) -> Result<Since, BackendError> {
    let store = table.log_store();
    let latest = store.get_latest_version(base).await.map_err(delta_err)?;
    let mut adds = Vec::new();
    for v in base + 1..=latest {
        let Some(bytes) = store.read_commit_entry(v).await.map_err(delta_err)? else {
            return Ok(Since::Other {
                version: v,
                what: "its commit file is missing".into(),
            });
        };
        let text = String::from_utf8_lossy(&bytes);
        let mut operation = String::from("a commit");
        let mut other: Option<String> = None;
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let action: Value = serde_json::from_str(line).map_err(|e| {
                BackendError::Transient(format!("version {v} of the table is not valid JSON: {e}"))
            })?;
            let Some((kind, body)) = action.as_object().and_then(|o| o.iter().next()) else {
                continue;
            };
            match kind.as_str() {
                "commitInfo" => {
                    if let Some(op) = body.get("operation").and_then(Value::as_str) {
                        operation = format!(
                            "{op} by {}",
                            body.get("engineInfo")
                                .or(body.get("clientVersion"))
                                .and_then(Value::as_str)
                                .unwrap_or("another writer")
                        );
                    }
                }
                "txn" => {}
                "add" => {
                    let add: Add = serde_json::from_value(body.clone()).map_err(|e| {
                        BackendError::Transient(format!(
                            "version {v}: an add action cannot be read: {e}"
                        ))
                    })?;
                    if add.deletion_vector.is_some() || !add.data_change {
                        other.get_or_insert_with(|| "it rearranged files (an add with a deletion vector or without data change)".into());
                    }
                    adds.push(add);
                }
                "remove" => {
                    other.get_or_insert_with(|| {
                        "it removed files (a DELETE, UPDATE, MERGE, OPTIMIZE or overwrite)".into()
                    });
                }
                "metaData" => {
                    other.get_or_insert_with(|| {
                        "it changed the table's schema or properties".into()
                    });
                }
                "protocol" => {
                    other.get_or_insert_with(|| "it changed the table's protocol".into());
                }
                k => {
                    other.get_or_insert_with(|| format!("it wrote a '{k}' action"));
                }
            }
        }
        if let Some(why) = other {
            return Ok(Since::Other {
                version: v,
                what: format!("{operation}: {why}"),
            });
        }
    }
    Ok(Since::Appends { latest, adds })
}

/// Why a conditioned replace did not commit.
#[derive(Debug)]
pub enum NotCommitted {
    /// A commit landed after the version read: nothing was written to the log.
    Moved,
    Failed(BackendError),
}

/// The metadata of the replace: the table's own (its id, description and
/// configuration, CHECKs and owner marker included) with the new schema and
/// partitioning, so nothing else is lost by the replace.
fn replaced_metadata(
    base: &Metadata,
    schema: &StructType,
    partitioned_by: &[String],
) -> Result<Metadata, BackendError> {
    let mut value = serde_json::to_value(base).map_err(|e| BackendError::Refused {
        message: e.to_string(),
    })?;
    value["schemaString"] =
        Value::String(
            serde_json::to_string(schema).map_err(|e| BackendError::Refused {
                message: e.to_string(),
            })?,
        );
    value["partitionColumns"] =
        Value::Array(partitioned_by.iter().cloned().map(Value::String).collect());
    serde_json::from_value(value).map_err(|e| BackendError::Refused {
        message: format!("metadata: {e}"),
    })
}

/// Table features the new schema's types need: (feature, also a reader feature).
fn features_for(schema: &Value, out: &mut Vec<&'static str>) {
    match schema {
        Value::String(s) if s == "timestamp_ntz" => out.push("timestampNtz"),
        Value::String(s) if s == "variant" => out.push("variantType"),
        Value::Object(o) => o.values().for_each(|v| features_for(v, out)),
        Value::Array(a) => a.iter().for_each(|v| features_for(v, out)),
        _ => {}
    }
}

/// Writer features a legacy writer version implies (Delta protocol, "Table Features").
const LEGACY_WRITER: &[(u64, &str)] = &[
    (2, "appendOnly"),
    (2, "invariants"),
    (3, "checkConstraints"),
    (4, "changeDataFeed"),
    (4, "generatedColumns"),
    (5, "columnMapping"),
    (6, "identityColumns"),
];

/// The protocol the replace needs when its schema uses a type the table's
/// protocol does not allow yet (as delta-rs's own schema overwrite upgrades it).
fn upgraded_protocol(
    protocol: &Protocol,
    schema: &StructType,
) -> Result<Option<Protocol>, BackendError> {
    let mut needed = Vec::new();
    features_for(
        &serde_json::to_value(schema).unwrap_or_default(),
        &mut needed,
    );
    needed.sort_unstable();
    needed.dedup();
    let mut p = serde_json::to_value(protocol).map_err(|e| BackendError::Refused {
        message: e.to_string(),
    })?;
    let listed = |p: &Value, key: &str, f: &str| {
        p.get(key)
            .and_then(Value::as_array)
            .is_some_and(|a| a.iter().any(|x| x.as_str() == Some(f)))
    };
    let missing: Vec<&str> = needed
        .into_iter()
        .filter(|f| !listed(&p, "writerFeatures", f))
        .collect();
    if missing.is_empty() {
        return Ok(None);
    }
    let reader = p
        .get("minReaderVersion")
        .and_then(Value::as_u64)
        .unwrap_or(1);
    let writer = p
        .get("minWriterVersion")
        .and_then(Value::as_u64)
        .unwrap_or(2);
    if writer < 7 {
        let implied: Vec<Value> = LEGACY_WRITER
            .iter()
            .filter(|(v, _)| *v <= writer)
            .map(|(_, f)| Value::from(*f))
            .collect();
        p["writerFeatures"] = Value::Array(implied);
        p["minWriterVersion"] = Value::from(7);
    }
    if reader < 3 {
        p["readerFeatures"] = Value::Array(if reader >= 2 {
            vec![Value::from("columnMapping")]
        } else {
            vec![]
        });
        p["minReaderVersion"] = Value::from(3);
    }
    for f in missing {
        for key in ["readerFeatures", "writerFeatures"] {
            if !listed(&p, key, f) {
                p[key]
                    .as_array_mut()
                    .expect("set above")
                    .push(Value::from(f));
            }
        }
    }
    serde_json::from_value(p)
        .map(Some)
        .map_err(|e| BackendError::Refused {
            message: format!("protocol: {e}"),
        })
}

/// Commits the replace against `base`'s version, or reports that it moved.
pub async fn commit(
    base: &DeltaTable,
    schema: &StructType,
    partitioned_by: &[String],
    adds: &[Add],
    props: CommitProperties,
) -> Result<u64, NotCommitted> {
    let fail = NotCommitted::Failed;
    let snap = base.snapshot().map_err(|e| fail(delta_err(e)))?;
    let mut actions = vec![DeltaAction::Metadata(
        replaced_metadata(snap.metadata(), schema, partitioned_by).map_err(fail)?,
    )];
    if let Some(p) = upgraded_protocol(snap.protocol(), schema).map_err(fail)? {
        actions.push(DeltaAction::Protocol(p));
    }
    actions.extend(
        snap.log_data()
            .iter()
            .map(|f| DeltaAction::Remove(f.remove_action(true))),
    );
    actions.extend(adds.iter().cloned().map(DeltaAction::Add));
    let op = DeltaOperation::Write {
        mode: SaveMode::Overwrite,
        partition_by: if partitioned_by.is_empty() {
            None
        } else {
            Some(partitioned_by.to_vec())
        },
        predicate: None,
    };
    let committed = CommitBuilder::from(props.with_max_retries(0))
        .with_actions(actions)
        .build(Some(snap), base.log_store(), op)
        .await;
    committed.map(|done| done.version()).map_err(not_committed)
}

/// A conditioned commit's error: `Moved` when a commit landed after the version
/// it was conditioned on (delta-rs does not retry: `max_retries = 0`), else `Failed`.
pub fn not_committed(e: deltalake::DeltaTableError) -> NotCommitted {
    match e {
        deltalake::DeltaTableError::Transaction {
            source: deltalake::kernel::transaction::TransactionError::MaxCommitAttempts(_),
        }
        | deltalake::DeltaTableError::VersionAlreadyExists(_) => NotCommitted::Moved,
        e => {
            // the same, in the words some versions use
            let s = e.to_string();
            if s.contains("max commit attempts") || s.contains("already exists") {
                NotCommitted::Moved
            } else {
                NotCommitted::Failed(delta_err(e))
            }
        }
    }
}
