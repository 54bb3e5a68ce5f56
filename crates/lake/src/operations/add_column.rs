//! A column added, or a nested field added to its struct (in arrays and maps too).

use delta_operator_backend::{BackendError, StepOutcome};
use delta_operator_core::model::{DataType, StructField, TableRef};
use delta_operator_core::plan::Step;
use delta_operator_core::plan::change::FieldPath;

use crate::{LakeBackend, delta_err, kernel_fields, observe};

impl LakeBackend {
    /// Adds a top-level column, or a nested field by merging its whole top-level struct.
    pub(super) async fn add_column(
        &self,
        t: &TableRef,
        step: &Step,
        path: &FieldPath,
        field: &StructField,
    ) -> Result<StepOutcome, BackendError> {
        let table = self.open_table(t).await?;
        let live = observe(t, &table)?;
        let top = if path.len() == 1 {
            field.clone()
        } else {
            let c = live.column(&path[0]).ok_or_else(|| BackendError::Refused {
                message: format!("no column {}", path[0]),
            })?;
            let mut top = StructField {
                name: c.name.clone(),
                data_type: c.data_type.clone(),
                nullable: c.nullable,
                comment: c.comment.clone(),
            };
            insert_field(&mut top.data_type, &path[1..], field)?;
            top
        };
        let fields = kernel_fields(&[(top, None)])?;
        table
            .add_columns()
            .with_fields(fields)
            .with_commit_properties(self.commit_props(step))
            .await
            .map_err(delta_err)?;
        Ok(StepOutcome::default())
    }
}

/// Inserts `field` into the struct at `path` (the last element is the new field's name).
fn insert_field(
    t: &mut DataType,
    path: &[String],
    field: &StructField,
) -> Result<(), BackendError> {
    // inside arrays and maps a path names the element, key or value (as Delta's ADD COLUMNS does)
    match (t, path.first().map(|p| p.to_ascii_lowercase())) {
        (DataType::Array { element, .. }, Some(p)) if p == "element" && path.len() > 1 => {
            insert_field(element, &path[1..], field)
        }
        (DataType::Map { key, .. }, Some(p)) if p == "key" && path.len() > 1 => {
            insert_field(key, &path[1..], field)
        }
        (DataType::Map { value, .. }, Some(p)) if p == "value" && path.len() > 1 => {
            insert_field(value, &path[1..], field)
        }
        (DataType::Struct { fields }, _) if path.len() == 1 => {
            fields.push(field.clone());
            Ok(())
        }
        (DataType::Struct { fields }, _) => {
            let inner = fields
                .iter_mut()
                .find(|f| f.name.eq_ignore_ascii_case(&path[0]))
                .ok_or_else(|| BackendError::Refused {
                    message: format!("no field {}", path[0]),
                })?;
            insert_field(&mut inner.data_type, &path[1..], field)
        }
        _ => Err(BackendError::Refused {
            message: format!(
                "nested fields can only be added to structs (in arrays and maps too), not at {}",
                path.join(".")
            ),
        }),
    }
}
