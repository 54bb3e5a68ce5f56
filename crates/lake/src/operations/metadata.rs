//! Metadata-only commits: the schema JSON, configuration or description
//! edited and committed as one metaData action (properties removed,
//! nullability dropped, comments), and the table comment.

use std::collections::HashMap;

use deltalake::DeltaTable;
use deltalake::kernel::transaction::{CommitBuilder, CommitProperties};
use deltalake::kernel::{Action as DeltaAction, MetadataExt, StructType};
use deltalake::operations::update_table_metadata::TableMetadataUpdate;
use deltalake::protocol::DeltaOperation;
use serde_json::Value;

use delta_operator_backend::{BackendError, StepOutcome};
use delta_operator_core::model::TableRef;
use delta_operator_core::model::delta_schema as schema;
use delta_operator_core::plan::Step;
use delta_operator_core::plan::change::FieldPath;

use crate::{LakeBackend, delta_err, refused};

impl LakeBackend {
    /// Table properties removed.
    pub(super) async fn unset_properties(
        &self,
        t: &TableRef,
        step: &Step,
        keys: &[String],
    ) -> Result<StepOutcome, BackendError> {
        let keys = keys.to_vec();
        self.commit_metadata(t, step, move |_, remove, _| {
            remove.extend(keys);
            Ok(())
        })
        .await
    }

    /// The table's comment (its description), through delta-rs's metadata update.
    pub(super) async fn set_table_comment(
        &self,
        t: &TableRef,
        step: &Step,
        comment: &str,
    ) -> Result<StepOutcome, BackendError> {
        let table = self.open_table(t).await?;
        let update = TableMetadataUpdate {
            name: None,
            description: Some(comment.to_string()),
        };
        table
            .update_table_metadata()
            .with_update(update)
            .with_commit_properties(self.commit_props(step))
            .await
            .map_err(delta_err)?;
        Ok(StepOutcome::default())
    }

    /// A field becomes nullable (always allowed: no row can break it).
    pub(super) async fn drop_not_null(
        &self,
        t: &TableRef,
        step: &Step,
        path: &FieldPath,
    ) -> Result<StepOutcome, BackendError> {
        let path = path.clone();
        self.commit_metadata(t, step, move |schema, _, _| {
            field_json_mut(schema, &path)?["nullable"] = Value::Bool(true);
            Ok(())
        })
        .await
    }

    /// A field's comment set, or removed when empty.
    pub(super) async fn set_column_comment(
        &self,
        t: &TableRef,
        step: &Step,
        path: &FieldPath,
        comment: &str,
    ) -> Result<StepOutcome, BackendError> {
        let (path, comment) = (path.clone(), comment.to_string());
        self.commit_metadata(t, step, move |schema, _, _| {
            let f = field_json_mut(schema, &path)?;
            if !f["metadata"].is_object() {
                f["metadata"] = Value::Object(Default::default());
            }
            let md = f["metadata"].as_object_mut().expect("set above");
            if comment.is_empty() {
                md.remove(schema::COMMENT_KEY);
            } else {
                md.insert(schema::COMMENT_KEY.into(), Value::String(comment));
            }
            Ok(())
        })
        .await
    }

    /// A metadata-only commit: `edit` changes the schema JSON, configuration or description.
    pub(super) async fn commit_metadata(
        &self,
        t: &TableRef,
        step: &Step,
        edit: impl FnOnce(&mut Value, &mut Vec<String>, &mut Option<String>) -> Result<(), BackendError>,
    ) -> Result<StepOutcome, BackendError> {
        let table = self.open_table(t).await?;
        self.commit_metadata_on(&table, edit, self.commit_props(step))
            .await
    }

    /// `commit_metadata` on a table already open, with these commit properties.
    pub(super) async fn commit_metadata_on(
        &self,
        table: &DeltaTable,
        edit: impl FnOnce(&mut Value, &mut Vec<String>, &mut Option<String>) -> Result<(), BackendError>,
        props: CommitProperties,
    ) -> Result<StepOutcome, BackendError> {
        let snap = table.snapshot().map_err(delta_err)?;
        let mut schema =
            serde_json::to_value(snap.schema().as_ref()).map_err(|e| BackendError::Refused {
                message: e.to_string(),
            })?;
        let mut remove_keys = Vec::new();
        let mut description = None;
        edit(&mut schema, &mut remove_keys, &mut description)?;
        let new_schema: StructType =
            serde_json::from_value(schema).map_err(|e| BackendError::Refused {
                message: format!("schema: {e}"),
            })?;
        let mut md = snap
            .metadata()
            .clone()
            .with_schema(&new_schema)
            .map_err(refused)?;
        for k in &remove_keys {
            md = md.remove_config_key(k).map_err(refused)?;
        }
        if let Some(d) = description {
            md = md.with_description(d).map_err(refused)?;
        }
        let op = DeltaOperation::SetTableProperties {
            properties: HashMap::new(),
        };
        CommitBuilder::from(props)
            .with_actions(vec![DeltaAction::Metadata(md)])
            .build(Some(snap), table.log_store(), op)
            .await
            .map_err(delta_err)?;
        Ok(StepOutcome::default())
    }
}

/// The JSON object of the field at `path` inside a schema JSON.
pub(super) fn field_json_mut<'a>(
    schema: &'a mut Value,
    path: &FieldPath,
) -> Result<&'a mut Value, BackendError> {
    let mut node = schema;
    for (i, name) in path.iter().enumerate() {
        let fields = node
            .get_mut("fields")
            .and_then(Value::as_array_mut)
            .ok_or_else(|| BackendError::Refused {
                message: format!("{} is not a struct", path[..i].join(".")),
            })?;
        let f = fields
            .iter_mut()
            .find(|f| {
                f["name"]
                    .as_str()
                    .is_some_and(|n| n.eq_ignore_ascii_case(name))
            })
            .ok_or_else(|| BackendError::Refused {
                message: format!("no field {}", path.join(".")),
            })?;
        if i + 1 == path.len() {
            return Ok(f);
        }
        node = f.get_mut("type").ok_or_else(|| BackendError::Refused {
            message: "field without type".into(),
        })?;
    }
    Err(BackendError::Refused {
        message: "empty path".into(),
    })
}
