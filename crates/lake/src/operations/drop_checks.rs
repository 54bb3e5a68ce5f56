//! CHECK constraints dropped: one, or several in one metadata commit.

use deltalake::kernel::Action as DeltaAction;
use deltalake::kernel::MetadataExt;
use deltalake::kernel::transaction::CommitBuilder;
use deltalake::protocol::DeltaOperation;

use delta_operator_backend::{BackendError, StepOutcome};
use delta_operator_core::model::TableRef;
use delta_operator_core::plan::Step;

use crate::{LakeBackend, delta_err, refused};

impl LakeBackend {
    /// One CHECK dropped (nothing to do when it is already gone).
    pub(super) async fn drop_check(
        &self,
        t: &TableRef,
        step: &Step,
        name: &str,
    ) -> Result<StepOutcome, BackendError> {
        let table = self.open_table(t).await?;
        table
            .drop_constraints()
            .with_constraint(name.to_string())
            .with_raise_if_not_exists(false)
            .with_commit_properties(self.commit_props(step))
            .await
            .map_err(delta_err)?;
        Ok(StepOutcome::default())
    }

    /// CHECKs dropped in one metadata commit (delta-rs's drop constraint takes one name).
    pub(super) async fn drop_checks(
        &self,
        t: &TableRef,
        step: &Step,
        names: &[String],
    ) -> Result<StepOutcome, BackendError> {
        let table = self.open_table(t).await?;
        let snap = table.snapshot().map_err(delta_err)?;
        let mut md = snap.metadata().clone();
        let mut dropped = Vec::new();
        for name in names {
            let key = md
                .configuration()
                .keys()
                .find(|k| {
                    k.strip_prefix(delta_operator_core::model::property::CONSTRAINTS_PREFIX)
                        .is_some_and(|n| n.eq_ignore_ascii_case(name))
                })
                .cloned();
            if let Some(key) = key {
                md = md.remove_config_key(&key).map_err(refused)?;
                dropped.push(name.clone());
            }
        }
        if dropped.is_empty() {
            return Ok(StepOutcome::default());
        }
        let n = dropped.len();
        let op = DeltaOperation::DropConstraint {
            name: dropped.join(", "),
        };
        CommitBuilder::from(self.commit_props(step))
            .with_actions(vec![DeltaAction::Metadata(md)])
            .build(Some(snap), table.log_store(), op)
            .await
            .map_err(delta_err)?;
        Ok(StepOutcome {
            detail: Some(format!("{n} constraints dropped in one commit")),
        })
    }
}
