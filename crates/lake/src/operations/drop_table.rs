//! A table dropped: its folder moved into the lake's trash.

use delta_operator_backend::{BackendError, StepOutcome};
use delta_operator_core::model::TableRef;

use crate::{LakeBackend, STAGING, phases, rel, trash_root};

impl LakeBackend {
    /// Moves the table's folder into the lake's trash: recoverable by moving it back.
    pub(super) async fn drop_table(&self, t: &TableRef) -> Result<StepOutcome, BackendError> {
        if !self.root.is_table(&rel(t)).await? {
            return Ok(StepOutcome::default());
        }
        // one folder per table in the trash, one per drop inside it: a long
        // table name never grows past the file-name limit
        let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%S%.3fZ");
        let to = format!("{}/{stamp}", trash_root(t));
        self.root.move_folder(&rel(t), &to).await?;
        // staging copies of a dropped table can never be used
        self.root.remove_folder(&phases::staging_root(t)).await?;
        self.root
            .remove_empty_up_to(&phases::staging_root(t), STAGING);
        Ok(StepOutcome {
            detail: Some(format!("moved to {}", self.root.display(&to))),
        })
    }
}
