//! A shallow clone taken before a risky step, under `.clones/`.

use std::collections::HashMap;

use deltalake::DeltaTable;
use deltalake::kernel::Action as DeltaAction;

use delta_operator_backend::{BackendError, StepOutcome};
use delta_operator_core::model::{OWNER_PROPERTY, TableRef};
use delta_operator_core::plan::Step;

use crate::{LakeBackend, clone_rel, delta_err, refused};

impl LakeBackend {
    /// A shallow clone on the lake: a new Delta table under `.clones/` whose
    /// first commit adds the table's current files by absolute URI (the Delta
    /// protocol allows absolute paths; no data is copied). Idempotent.
    pub(super) async fn clone_table(
        &self,
        t: &TableRef,
        step: &Step,
        name: &str,
    ) -> Result<StepOutcome, BackendError> {
        let rel = clone_rel(t, name);
        if self.root.is_table(&rel).await? {
            return Ok(StepOutcome {
                detail: Some(format!("already at {}", self.root.display(&rel))),
            });
        }
        let table = self.open_table(t).await?;
        let snap = table.snapshot().map_err(delta_err)?;
        let mut base = self.table_url(t)?;
        if !base.path().ends_with('/') {
            base.set_path(&format!("{}/", base.path()));
        }
        let mut adds = Vec::new();
        for f in snap.log_data().iter() {
            #[allow(deprecated)] // the Add action is exactly what a clone commits
            let mut add = f.add_action();
            add.path = base.join(&add.path).map_err(refused)?.to_string();
            add.data_change = true;
            adds.push(DeltaAction::Add(add));
        }
        let md = snap.metadata();
        let mut config: HashMap<String, Option<String>> = md
            .configuration()
            .iter()
            .filter(|(k, _)| k.as_str() != OWNER_PROPERTY)
            .map(|(k, v)| (k.clone(), Some(v.clone())))
            .collect();
        config.insert(
            "delta-operator.clone-of".into(),
            Some(format!(
                "{t}@{}",
                table.version().map_or("?".into(), |v| v.to_string())
            )),
        );
        let files = adds.len();
        DeltaTable::try_from_url(self.root.url_for_write(&rel)?)
            .await
            .map_err(delta_err)?
            .create()
            .with_table_name(name)
            .with_columns(snap.schema().fields().cloned())
            .with_partition_columns(md.partition_columns().to_vec())
            .with_configuration(config)
            .with_raise_if_key_not_exists(false)
            .with_actions(adds)
            .with_commit_properties(self.commit_props(step))
            .await
            .map_err(delta_err)?;
        Ok(StepOutcome {
            detail: Some(format!(
                "shallow clone at {} referencing {files} files",
                self.root.display(&rel)
            )),
        })
    }
}
