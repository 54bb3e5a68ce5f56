//! A new table: its schema, partitioning, properties (the owner marker
//! among them) and comment, in one CREATE TABLE commit.

use std::collections::HashMap;

use deltalake::DeltaTable;

use delta_operator_backend::{BackendError, StepOutcome};
use delta_operator_core::model::{DesiredTable, StructField, TableRef};
use delta_operator_core::plan::Step;

use crate::{LakeBackend, delta_err, kernel_fields, rel};

impl LakeBackend {
    pub(super) async fn create(
        &self,
        t: &TableRef,
        d: &DesiredTable,
        step: &Step,
    ) -> Result<StepOutcome, BackendError> {
        let fields: Vec<(StructField, Option<String>)> = d
            .columns
            .iter()
            .map(|c| {
                let f = StructField {
                    name: c.name.clone(),
                    data_type: c.data_type.clone(),
                    nullable: c.nullable,
                    comment: c.comment.clone().filter(|s| !s.is_empty()),
                };
                (f, c.generated.clone())
            })
            .collect();
        let mut config: HashMap<String, Option<String>> = d
            .properties
            .iter()
            .filter(|(_, v)| v.is_some())
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        // the owner marker, and the record of the constraints it declares
        config.extend(d.marker_properties().into_iter().map(|(k, v)| (k, Some(v))));
        let table = DeltaTable::try_from_url(self.root.url_for_write(&rel(t))?)
            .await
            .map_err(delta_err)?;
        let mut b = table
            .create()
            .with_table_name(&t.table)
            .with_columns(kernel_fields(&fields)?)
            .with_partition_columns(d.partitioned_by.clone().unwrap_or_default())
            .with_configuration(config)
            .with_raise_if_key_not_exists(false)
            .with_commit_properties(self.commit_props(step));
        if let Some(c) = d.comment.as_ref().filter(|c| !c.is_empty()) {
            b = b.with_comment(c);
        }
        b.await.map_err(delta_err)?;
        Ok(StepOutcome::default())
    }
}
