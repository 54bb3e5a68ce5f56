//! Compaction: delta-rs's OPTIMIZE, bin-packing small files into files up to
//! the target size (Z-ordered by the declared columns when there are some).
//!
//! It commits against the version it read: its commit removes only files of
//! that version (`dataChange: false`) and adds their rows' new files, and
//! delta-rs's conflict check lets appends committed meanwhile stand beside
//! it (their files are neither read nor removed), so every row a concurrent
//! writer appended is kept. A concurrent delete of a file it compacts fails
//! it instead (nothing committed; the next plan tries again).
//!
//! Memory: the rows pass through DataFusion like a rewrite's, so the session
//! is the rewrite's (`rewrite::session_for`: the budget's pool, one file read
//! at a time), one bin is written at a time, and streams take turns
//! process-wide (`stream_permit`).

use std::num::NonZeroU64;
use std::sync::Arc;

use deltalake::operations::optimize::OptimizeType;

use delta_operator_backend::{BackendError, StepOutcome, StepProgress};
use delta_operator_core::model::TableRef;
use delta_operator_core::plan::Step;
use delta_operator_core::plan::steps::size_text;

use crate::rewrite::{session_for, stream_permit};
use crate::{LakeBackend, delta_err};

impl LakeBackend {
    pub(super) async fn optimize(
        &self,
        t: &TableRef,
        step: &Step,
        target_file_bytes: u64,
        z_order: &[String],
        progress: StepProgress<'_>,
    ) -> Result<StepOutcome, BackendError> {
        let target = NonZeroU64::new(target_file_bytes).ok_or_else(|| BackendError::Refused {
            message: "a compaction's target file size must be above 0".into(),
        })?;
        let table = self.open_table(t).await?;
        let read = table.version();
        let files = table.snapshot().map_err(delta_err)?.log_data().num_files();
        let session = session_for([])?;
        let _turn = stream_permit().await;
        (progress.note)(&format!(
            "compacting {files} files of version {} into files up to {}",
            read.map_or_else(|| "?".into(), |v| v.to_string()),
            size_text(target_file_bytes)
        ));
        let kind = if z_order.is_empty() {
            OptimizeType::Compact
        } else {
            OptimizeType::ZOrder(z_order.to_vec())
        };
        let (_, metrics) = table
            .optimize()
            .with_type(kind)
            .with_target_size(target)
            .with_max_concurrent_tasks(1)
            .with_session_state(Arc::new(session.state()))
            .with_commit_properties(self.commit_props(step))
            .await
            .map_err(delta_err)?;
        Ok(StepOutcome {
            detail: Some(format!(
                "{} files compacted into {} (read at version {})",
                metrics.num_files_removed,
                metrics.num_files_added,
                read.map_or_else(|| "?".into(), |v| v.to_string())
            )),
        })
    }
}
