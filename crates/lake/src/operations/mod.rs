//! The lake's in-place operations, one file each, and a step's dispatch to
//! its operation. An operation that commits stamps its commit with the step
//! (`commit_props`); rewrites are `phases.rs` (their phases) and `rewrite.rs`
//! (the rows).

mod add_checks;
mod add_column;
mod checkpoint;
mod clone_table;
mod create;
mod drop_checks;
mod drop_table;
mod metadata;
mod optimize;
mod set_not_null;
mod set_properties;
mod vacuum;

use delta_operator_backend::{BackendError, StepOutcome, StepProgress, TableRun};
use delta_operator_core::model::ObservedTable;
use delta_operator_core::plan::steps::{bound_clone_name, claim_properties};
use delta_operator_core::plan::{Action, BackendKind, Step};

use crate::LakeBackend;

impl LakeBackend {
    /// Carries out one step: the operation its action names (`now` is the
    /// table as read when the step starts: the version a clone is made from).
    pub(crate) async fn run_step(
        &self,
        run: &TableRun,
        step: &Step,
        now: Option<&ObservedTable>,
        progress: StepProgress<'_>,
    ) -> Result<StepOutcome, BackendError> {
        // the restore point the step recorded is stamped on each of its commits
        crate::RESTORE_POINT
            .scope(run.restore_point(), self.dispatch(run, step, now, progress))
            .await
    }

    async fn dispatch(
        &self,
        run: &TableRun,
        step: &Step,
        now: Option<&ObservedTable>,
        progress: StepProgress<'_>,
    ) -> Result<StepOutcome, BackendError> {
        let t = &run.table;
        // every step commits only while this run still holds the table (renewed now)
        run.fence().await?;
        match &step.action {
            Action::CreateTable { table } => self.create(t, table, step).await,
            Action::Claim {
                marker,
                constraints,
                scope,
            } => {
                let properties = claim_properties(marker, constraints.as_deref(), *scope);
                self.set_properties(t, step, properties).await
            }
            Action::SetProperties { properties } => {
                self.set_properties(t, step, properties.clone()).await
            }
            Action::UnsetProperties { keys } => self.unset_properties(t, step, keys).await,
            Action::SetTableComment { comment } => self.set_table_comment(t, step, comment).await,
            Action::AddColumn { path, field } => self.add_column(t, step, path, field).await,
            Action::SetNotNull { path } => self.set_not_null(t, step, path).await,
            Action::DropNotNull { path } => self.drop_not_null(t, step, path).await,
            Action::SetColumnComment { path, comment } => {
                self.set_column_comment(t, step, path, comment).await
            }
            Action::AddCheck { check } => self.add_check(t, step, check).await,
            Action::DropCheck { name } => self.drop_check(t, step, name).await,
            Action::AddChecks { checks } => self.add_checks(t, step, checks).await,
            Action::DropChecks { names } => self.drop_checks(t, step, names).await,
            Action::Rewrite { rewrite, phase } => {
                self.rewrite(run, step, rewrite, *phase, progress).await
            }
            Action::RemoveLeftovers { .. } => self.remove_leftovers(run, step).await,
            Action::CloneTable { name } => {
                let name = bound_clone_name(name, now.and_then(|l| l.version));
                self.clone_table(t, step, &name).await
            }
            Action::DropTable => self.drop_table(t).await,
            Action::Compact {
                target_file_bytes,
                z_order,
            } => {
                self.optimize(t, step, *target_file_bytes, z_order, progress)
                    .await
            }
            Action::Vacuum {
                retain_hours,
                keep_versions,
                ..
            } => self.vacuum(t, step, *retain_hours, keep_versions).await,
            Action::Checkpoint => self.checkpoint(t).await,
            other => Err(BackendError::Unsupported {
                backend: BackendKind::Lake,
                what: other.title(),
            }),
        }
    }
}
