//! Vacuum: delta-rs's VACUUM, deleting the files removed from the table
//! longer ago than the retention, except every file the versions in
//! `keep_versions` still need (the restore points the operator recorded in
//! the spec's `keepRestorePointsDays`), so `restore --version N` to any of
//! them keeps working.
//!
//! Delta's retention safety check (the table's `deletedFileRetentionDuration`,
//! 168 hours unless set) stays on, except for a retention below 168 hours,
//! which validation lets through only with `allowShortRetention: true`.
//!
//! delta-rs commits VACUUM START and VACUUM END only when it deletes
//! something; when there is nothing to delete the operator commits the two
//! itself (no file actions), so the table's history records every vacuum,
//! its schedule runs from it, and the plan's commits are always the log's.

use deltalake::kernel::transaction::CommitBuilder;
use deltalake::operations::vacuum::VacuumMode;
use deltalake::protocol::DeltaOperation;
use deltalake::table::config::TablePropertiesExt;
use serde_json::Value;

use delta_operator_backend::{BackendError, StepOutcome};
use delta_operator_core::model::TableRef;
use delta_operator_core::plan::Step;

use crate::health::RETAIN_HOURS_KEY;
use crate::{LakeBackend, delta_err};

/// Delta's retention safety threshold, in hours.
const SAFE_RETAIN_HOURS: u64 = 168;

impl LakeBackend {
    pub(super) async fn vacuum(
        &self,
        t: &TableRef,
        step: &Step,
        retain_hours: u64,
        keep_versions: &[u64],
    ) -> Result<StepOutcome, BackendError> {
        let table = self.open_table(t).await?;
        let hours = i64::try_from(retain_hours).map_err(|_| BackendError::Refused {
            message: format!("a retention of {retain_hours} hours is too long"),
        })?;
        let props = || {
            self.commit_props_with(
                step,
                [(RETAIN_HOURS_KEY.to_string(), Value::from(retain_hours))],
            )
        };
        let mut builder = table
            .clone()
            .vacuum()
            // Lite: only files a commit removed; never a file no commit names (a
            // running rewrite's, which its own run or the leftovers step removes)
            .with_mode(VacuumMode::Lite)
            .with_retention_period(chrono::Duration::hours(hours))
            // below 168 hours only when the spec allowed it (validation refuses it otherwise)
            .with_enforce_retention_duration(retain_hours >= SAFE_RETAIN_HOURS)
            .with_commit_properties(props());
        if !keep_versions.is_empty() {
            builder = builder.with_keep_versions(keep_versions);
        }
        let (_, metrics) = builder.await.map_err(|e| BackendError::Refused {
            message: format!(
                "vacuum of {t} refused, nothing deleted: {}",
                crate::error_text(&e)
            ),
        })?;
        let deleted = metrics.files_deleted.len();
        if deleted == 0 {
            let table = self.open_table(t).await?;
            let retention_ms = hours.saturating_mul(3_600_000);
            let default_ms = table
                .snapshot()
                .map_err(delta_err)?
                .table_config()
                .deleted_file_retention_duration()
                .as_millis();
            for op in [
                DeltaOperation::VacuumStart {
                    retention_check_enabled: retain_hours >= SAFE_RETAIN_HOURS,
                    specified_retention_millis: Some(retention_ms),
                    default_retention_millis: i64::try_from(default_ms).unwrap_or(i64::MAX),
                },
                DeltaOperation::VacuumEnd {
                    status: "COMPLETED".into(),
                },
            ] {
                let table = self.open_table(t).await?;
                let snap = table.snapshot().map_err(delta_err)?;
                CommitBuilder::from(props())
                    .with_actions(vec![])
                    .build(Some(snap), table.log_store(), op)
                    .await
                    .map_err(delta_err)?;
            }
        }
        let kept = match keep_versions {
            [] => String::new(),
            v => format!(
                "; kept the files of restore point{} {}",
                if v.len() == 1 { "" } else { "s" },
                v.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")
            ),
        };
        Ok(StepOutcome {
            detail: Some(format!(
                "{deleted} files deleted (retention {retain_hours} h){kept}"
            )),
        })
    }
}
