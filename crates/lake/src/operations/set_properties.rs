//! Table properties set (a claim's owner marker too), through delta-rs's
//! SET TBLPROPERTIES.

use std::collections::BTreeMap;

use delta_operator_backend::{BackendError, StepOutcome};
use delta_operator_core::model::TableRef;
use delta_operator_core::plan::Step;

use crate::{LakeBackend, delta_err};

impl LakeBackend {
    pub(super) async fn set_properties(
        &self,
        t: &TableRef,
        step: &Step,
        props: BTreeMap<String, String>,
    ) -> Result<StepOutcome, BackendError> {
        let table = self.open_table(t).await?;
        table
            .set_tbl_properties()
            .with_properties(props.into_iter().collect())
            .with_raise_if_not_exists(false)
            .with_commit_properties(self.commit_props(step))
            .await
            .map_err(delta_err)?;
        Ok(StepOutcome::default())
    }
}
