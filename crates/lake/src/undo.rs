//! Undo on the lake, where there is no SQL engine: `delta-operator restore`
//! (a Delta RESTORE to a version of the table's own history) and
//! `delta-operator undrop` (a dropped table's folder moved back from the
//! lake's trash). Both take the table's lock, as every apply does, so an undo
//! never interleaves with an apply of the same table.

use std::collections::BTreeMap;
use std::time::Duration;

use deltalake::DeltaTable;
use deltalake::kernel::transaction::CommitProperties;
use object_store::ObjectStoreExt as _;
use serde_json::Value;

use super::{LakeBackend, delta_err, lock, rel, trash_root};
use delta_operator_backend::BackendError;
use delta_operator_core::model::TableRef;

/// What `restore` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Restored {
    /// A RESTORE commit: the table now holds exactly what version `to` held.
    Committed {
        /// The table's version before the restore.
        was: u64,
        /// The version restored.
        to: u64,
        /// The version the restore committed.
        now: u64,
        /// Data files the commit added back and removed.
        files_added: usize,
        files_removed: usize,
    },
    /// The table is at that version already: nothing written.
    AlreadyThere { version: u64 },
}

/// One dropped copy of a table in the lake's trash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrashEntry {
    /// The entry's folder name (when it was dropped, UTC): what `--from` takes.
    pub name: String,
    /// Its Delta version, when the copy can be opened.
    pub version: Option<u64>,
    /// Its column count, when the copy can be opened.
    pub columns: Option<usize>,
    /// Where it is, for messages.
    pub location: String,
}

fn refused(message: String) -> BackendError {
    BackendError::Refused { message }
}

/// The parts of a version's metadata a restore must bring back exactly.
fn metadata_of(table: &DeltaTable) -> Result<Value, BackendError> {
    let snap = table.snapshot().map_err(delta_err)?;
    let md = snap.metadata();
    let config: BTreeMap<&String, &String> = md.configuration().iter().collect();
    Ok(serde_json::json!({
        "schema": serde_json::to_value(snap.schema().as_ref()).map_err(|e| refused(e.to_string()))?,
        "configuration": config,
        "partitionColumns": md.partition_columns(),
        "description": md.description(),
    }))
}

impl LakeBackend {
    /// The dropped copies of `t` in the trash, oldest first.
    pub async fn trash_entries(&self, t: &TableRef) -> Result<Vec<TrashEntry>, BackendError> {
        let root = trash_root(t);
        let mut out = Vec::new();
        for name in self.root.folders_under(&root).await? {
            let entry = format!("{root}/{name}");
            if !self.root.is_table(&entry).await? {
                continue;
            }
            let opened = match self.root.url(&entry) {
                Ok(url) => deltalake::open_table(url).await.ok(),
                Err(_) => None,
            };
            let (version, columns) = match &opened {
                Some(table) => (
                    table.version(),
                    table.snapshot().ok().map(|s| s.schema().fields().count()),
                ),
                None => (None, None),
            };
            out.push(TrashEntry {
                name,
                version,
                columns,
                location: self.root.display(&entry),
            });
        }
        Ok(out)
    }

    async fn lock_for_undo(
        &self,
        t: &TableRef,
        wait: Duration,
    ) -> Result<lock::TableLock, BackendError> {
        let run = delta_operator_backend::new_run_id();
        match lock::acquire(&self.root, t, &self.writer, &run, lock::ttl(), wait).await? {
            Ok(held) => Ok(held),
            Err(by) => Err(BackendError::Locked(by.message())),
        }
    }

    fn undo_props(&self, what: String) -> CommitProperties {
        CommitProperties::default().with_metadata(vec![
            ("delta-operator.step".to_string(), Value::String(what)),
            (
                "delta-operator.class".to_string(),
                Value::String("undo".into()),
            ),
            (
                "delta-operator.writer".to_string(),
                Value::String(self.writer.clone()),
            ),
        ])
    }

    /// `delta-operator restore t --version n`: one RESTORE commit that brings
    /// back version `n`'s files and its metadata (schema, properties, CHECK
    /// constraints, partitioning, comment), under the table's lock. Refuses
    /// a table that is not there, a version that is not in its history, and a
    /// version whose data files are gone (a VACUUM removed them), with nothing
    /// written.
    pub async fn restore(
        &self,
        t: &TableRef,
        version: u64,
        lock_wait: Duration,
    ) -> Result<Restored, BackendError> {
        self.refuse_missing(t).await?;
        let held = self.lock_for_undo(t, lock_wait).await?;
        let result = self.restore_locked(t, version).await;
        held.release().await;
        result
    }

    /// A table that is not there: the message says whether `undrop` can bring it back.
    async fn refuse_missing(&self, t: &TableRef) -> Result<(), BackendError> {
        if self.root.is_table(&rel(t)).await? {
            return Ok(());
        }
        let dropped = self.trash_entries(t).await?;
        Err(refused(if dropped.is_empty() {
            format!(
                "no table {t} in the lake at {} (nothing at {}); check the name and --config/--target",
                self.root.display(""),
                self.root.display(&rel(t))
            )
        } else {
            format!(
                "no table {t}: it was dropped ({} cop{} in the trash); bring it back with: delta-operator undrop {t}",
                dropped.len(),
                if dropped.len() == 1 { "y" } else { "ies" }
            )
        }))
    }

    async fn restore_locked(&self, t: &TableRef, version: u64) -> Result<Restored, BackendError> {
        let table = self.open_table(t).await?;
        let newest = table.version().unwrap_or(0);
        if version > newest {
            return Err(refused(format!(
                "--version {version}: {t} has no such version; its history is versions 0 to {newest}"
            )));
        }
        if version == newest {
            return Ok(Restored::AlreadyThere { version });
        }
        let target = self.open_table_at(t, version).await.map_err(|e| {
            refused(format!(
                "--version {version}: version {version} of {t} can no longer be read ({e}); its log entries may have been cleaned up. Restore a later version"
            ))
        })?;
        // every file of that version must still exist: a VACUUM deletes the
        // files of old versions, and a restore without them would lose rows
        let store = target.log_store().object_store(None);
        let snap = target.snapshot().map_err(delta_err)?;
        let mut missing = Vec::new();
        let mut total = 0usize;
        for f in snap.log_data().iter() {
            total += 1;
            match store.head(&f.object_store_path()).await {
                Ok(_) => {}
                Err(object_store::Error::NotFound { .. }) => missing.push(f.path().to_string()),
                Err(e) => return Err(BackendError::Transient(e.to_string())),
            }
        }
        if !missing.is_empty() {
            return Err(refused(format!(
                "--version {version}: {} of the {total} data files of version {version} of {t} are gone (removed by a VACUUM?), e.g. {}; restoring it would lose rows, so nothing was restored. Restore a later version whose files still exist",
                missing.len(),
                missing[0]
            )));
        }
        let expected = metadata_of(&target)?;
        let (restored, metrics) = table
            .restore()
            .with_version_to_restore(version as _)
            .with_commit_properties(self.undo_props(format!("RESTORE to version {version}")))
            .await
            .map_err(|e| match e {
                deltalake::DeltaTableError::VersionAlreadyExists(_) => BackendError::Transient(
                    format!("another writer committed to {t} while it was restored; nothing was restored, run it again"),
                ),
                other => delta_err(other),
            })?;
        let now = restored.version().unwrap_or(0);
        // the restore commit carries the metadata of that version; prove it
        let got = metadata_of(&restored)?;
        if got != expected {
            return Err(refused(format!(
                "the restore of {t} committed version {now}, but its metadata differs from version {version}'s: expected {expected}, found {got}"
            )));
        }
        Ok(Restored::Committed {
            was: newest,
            to: version,
            now,
            files_added: metrics.num_restored_file,
            files_removed: metrics.num_removed_file,
        })
    }

    /// `delta-operator undrop t [--from entry]`: moves a dropped copy back
    /// from the trash, under the table's lock. Refuses when a table (or
    /// anything) is at the name, when there is no dropped copy, and when there
    /// are several and `from` does not name one of them (the message lists them).
    pub async fn undrop(
        &self,
        t: &TableRef,
        from: Option<&str>,
        lock_wait: Duration,
    ) -> Result<(TrashEntry, Option<u64>), BackendError> {
        self.refuse_occupied(t).await?;
        let entry = self.pick_entry(t, from).await?;
        let held = self.lock_for_undo(t, lock_wait).await?;
        let result = self.undrop_locked(t, &entry).await;
        held.release().await;
        result.map(|v| (entry, v))
    }

    async fn refuse_occupied(&self, t: &TableRef) -> Result<(), BackendError> {
        if self.root.is_table(&rel(t)).await? {
            return Err(refused(format!(
                "a table {t} exists at {}; undrop brings a dropped copy back only where there is no table. To go back to an earlier version of it: delta-operator restore {t} --version <n>",
                self.root.display(&rel(t))
            )));
        }
        if !self.root.list_files(&rel(t)).await?.is_empty() {
            return Err(refused(format!(
                "{} holds files but no Delta table; nothing was moved. Move them away first",
                self.root.display(&rel(t))
            )));
        }
        Ok(())
    }

    async fn pick_entry(
        &self,
        t: &TableRef,
        from: Option<&str>,
    ) -> Result<TrashEntry, BackendError> {
        let mut entries = self.trash_entries(t).await?;
        let list = |entries: &[TrashEntry]| {
            entries
                .iter()
                .map(|e| {
                    format!(
                        "  {}  (version {}, {} columns)",
                        e.name,
                        e.version.map_or("?".into(), |v| v.to_string()),
                        e.columns.map_or("?".into(), |c| c.to_string())
                    )
                })
                .collect::<Vec<_>>()
                .join("\n")
        };
        if entries.is_empty() {
            return Err(refused(format!(
                "no dropped copy of {t} in the trash ({}): nothing to undrop",
                self.root.display(&trash_root(t))
            )));
        }
        match from {
            Some(name) => match entries.iter().position(|e| e.name == name) {
                Some(i) => Ok(entries.swap_remove(i)),
                None => Err(refused(format!(
                    "--from '{}': no such dropped copy of {t}; the trash holds:\n{}",
                    delta_operator_core::model::names::printable(name),
                    list(&entries)
                ))),
            },
            None if entries.len() == 1 => Ok(entries.remove(0)),
            None => Err(refused(format!(
                "{t} was dropped {} times; say which copy to bring back with --from <entry> (oldest first):\n{}",
                entries.len(),
                list(&entries)
            ))),
        }
    }

    async fn undrop_locked(
        &self,
        t: &TableRef,
        entry: &TrashEntry,
    ) -> Result<Option<u64>, BackendError> {
        // looked at again under the lock: an apply may have created it meanwhile
        self.refuse_occupied(t).await?;
        let from = format!("{}/{}", trash_root(t), entry.name);
        if self.root.local().is_some() {
            // a rename needs the place to be free, not an empty folder left behind
            self.root.remove_if_empty(&rel(t));
        }
        self.root.move_folder(&from, &rel(t)).await?;
        self.root.remove_if_empty(&trash_root(t));
        Ok(self.open_table(t).await?.version())
    }
}
