//! A table's health for maintenance, read from its own files and log: the
//! data files of the current version and how many are small, the versions
//! since the last checkpoint (`_delta_log/_last_checkpoint`), the last
//! compaction and vacuum (history: `OPTIMIZE`, `VACUUM END` and the
//! retention it ran with), and the restore points the operator recorded
//! (commits whose commitInfo carries `delta-operator.restorePoint`).
//!
//! Read only for tables whose spec declares maintenance (`Extras::health`):
//! the history is read back [`HISTORY_COMMITS`] commits at most.

use deltalake::DeltaTable;
use futures::StreamExt;
use serde_json::Value;

use delta_operator_core::model::maintenance::RESTORE_POINT_KEY;
use delta_operator_core::model::{RecordedRestorePoint, TableHealth, TableRef};

use crate::{BackendError, LakeBackend, delta_err, rel};

/// How far back the history is read for the last compaction and vacuum and
/// the recorded restore points: a restore point older than this many commits
/// is not protected by a vacuum (its window is days; a table committing
/// thousands of times a day has its own log retention to think of first).
pub const HISTORY_COMMITS: usize = 2_000;

/// The commitInfo key the operator's vacuum records its retention under
/// (delta-rs records it only in its VACUUM START commit, and not at all when
/// there was nothing to delete).
pub const RETAIN_HOURS_KEY: &str = "delta-operator.retainHours";

/// A commitInfo value as a whole number: a JSON number, or text holding one
/// (delta-rs writes operation parameters as text).
fn as_u64(v: &Value) -> Option<u64> {
    v.as_u64()
        .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
}

impl LakeBackend {
    /// The health of `table` (opened at its latest version); files smaller
    /// than `small_below` bytes count as small.
    pub(crate) async fn health(
        &self,
        t: &TableRef,
        table: &DeltaTable,
        small_below: u64,
    ) -> Result<TableHealth, BackendError> {
        let snap = table.snapshot().map_err(delta_err)?;
        let mut h = TableHealth::default();
        for f in snap.log_data().iter() {
            h.files += 1;
            if u64::try_from(f.size()).unwrap_or(0) < small_below {
                h.small_files += 1;
            }
        }
        let version = table.version();
        let checkpoint = self.last_checkpoint(t).await;
        h.versions_since_checkpoint = version.map(|v| match checkpoint {
            Some(c) => v.saturating_sub(c),
            // no checkpoint yet: every version counts, the first one too
            None => v + 1,
        });
        let mut history = table.history(Some(HISTORY_COMMITS));
        // newest first: the first OPTIMIZE and VACUUM END seen are the last ones
        let mut vacuum_end_pending_retention = false;
        while let Some(info) = history.next().await {
            let info = info.map_err(delta_err)?;
            let Some(ts) = info.timestamp else {
                continue;
            };
            match info.operation.as_deref() {
                Some("OPTIMIZE") if h.last_compaction_ms.is_none() => {
                    h.last_compaction_ms = Some(ts);
                }
                Some("VACUUM END") if h.last_vacuum_ms.is_none() => {
                    h.last_vacuum_ms = Some(ts);
                    h.last_vacuum_retention_hours =
                        info.info.get(RETAIN_HOURS_KEY).and_then(as_u64);
                    vacuum_end_pending_retention = h.last_vacuum_retention_hours.is_none();
                }
                Some("VACUUM START") if vacuum_end_pending_retention => {
                    h.last_vacuum_retention_hours = info
                        .operation_parameters
                        .as_ref()
                        .and_then(|p| p.get("specifiedRetentionMillis"))
                        .and_then(as_u64)
                        .map(|ms| ms / 3_600_000);
                    vacuum_end_pending_retention = false;
                }
                _ => {}
            }
            if let Some(v) = info.info.get(RESTORE_POINT_KEY).and_then(as_u64) {
                h.restore_points.push(RecordedRestorePoint {
                    version: v,
                    recorded_ms: ts,
                });
            }
        }
        h.restore_points.sort();
        h.restore_points.dedup();
        Ok(h)
    }

    /// The version of the table's last checkpoint (`_last_checkpoint`), if any.
    async fn last_checkpoint(&self, t: &TableRef) -> Option<u64> {
        self.root
            .read_file(&format!("{}/_delta_log/_last_checkpoint", rel(t)))
            .await
            .ok()
            .flatten()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .and_then(|v| v.get("version").and_then(as_u64))
    }
}
