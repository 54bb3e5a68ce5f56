//! CHECK constraints added: one, or several in one commit and one scan.

use std::collections::HashMap;
use std::sync::Arc;

use delta_operator_backend::{BackendError, StepOutcome};
use delta_operator_core::model::{Check, TableRef};
use delta_operator_core::plan::Step;

use crate::rewrite::{session_for, stream_permit};
use crate::{LakeBackend, delta_err, observe};

impl LakeBackend {
    /// One CHECK added (delta-rs scans every row against it before it commits).
    pub(super) async fn add_check(
        &self,
        t: &TableRef,
        step: &Step,
        check: &Check,
    ) -> Result<StepOutcome, BackendError> {
        let table = self.open_table(t).await?;
        // the scan is a stream like a rewrite's: in the budget, one at a time per process
        let session = session_for([check.expression.as_str()])?;
        let _turn = stream_permit().await;
        table
            .add_constraint()
            .with_constraint(check.name.clone(), check.expression.clone())
            .with_session_state(Arc::new(session.state()))
            .with_commit_properties(self.commit_props(step))
            .await
            .map_err(delta_err)?;
        Ok(StepOutcome::default())
    }

    /// CHECKs added in one commit (delta-rs validates every row against all of
    /// them in one scan first). Those already on the table are left out.
    pub(super) async fn add_checks(
        &self,
        t: &TableRef,
        step: &Step,
        checks: &[Check],
    ) -> Result<StepOutcome, BackendError> {
        let table = self.open_table(t).await?;
        let live = observe(t, &table)?;
        let new: HashMap<String, String> = checks
            .iter()
            .filter(|c| {
                !live
                    .checks
                    .iter()
                    .any(|l| l.name.eq_ignore_ascii_case(&c.name))
            })
            .map(|c| (c.name.clone(), c.expression.clone()))
            .collect();
        if new.is_empty() {
            return Ok(StepOutcome::default());
        }
        let n = new.len();
        // the scan is a stream like a rewrite's: in the budget, one at a time per process
        let session = session_for(new.values().map(String::as_str))?;
        let _turn = stream_permit().await;
        table
            .add_constraint()
            .with_constraints(new)
            .with_session_state(Arc::new(session.state()))
            .with_commit_properties(self.commit_props(step))
            .await
            .map_err(delta_err)?;
        Ok(StepOutcome {
            detail: Some(format!("{n} constraints added in one commit")),
        })
    }
}
