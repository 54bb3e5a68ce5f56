//! A checkpoint of the table's log at its latest version (delta-rs's
//! `create_checkpoint`): readers then start from it instead of replaying
//! every commit. It writes the checkpoint file and `_last_checkpoint`; no
//! commit, nothing about the data changes.

use delta_operator_backend::{BackendError, StepOutcome};
use delta_operator_core::model::TableRef;

use crate::{LakeBackend, delta_err};

impl LakeBackend {
    pub(super) async fn checkpoint(&self, t: &TableRef) -> Result<StepOutcome, BackendError> {
        let table = self.open_table(t).await?;
        deltalake::checkpoints::create_checkpoint(&table, None)
            .await
            .map_err(delta_err)?;
        Ok(StepOutcome {
            detail: table
                .version()
                .map(|v| format!("checkpoint written at version {v}")),
        })
    }
}
