//! SET NOT NULL in place: the missing values counted at the version read,
//! the schema committed only against that version.

use serde_json::Value;

use delta_operator_backend::{BackendError, StepOutcome};
use delta_operator_core::model::TableRef;
use delta_operator_core::plan::Step;
use delta_operator_core::plan::change::FieldPath;

use super::metadata::field_json_mut;
use crate::{LakeBackend, rewrite};

impl LakeBackend {
    /// SET NOT NULL without rewriting (the Delta protocol lets a writer
    /// tighten nullability once no row breaks it): the field's missing
    /// values are counted at the version read, and the schema change is
    /// committed only against that version (`max_retries = 0`: any commit
    /// in between, an append that might hold a NULL included, refuses it
    /// with nothing changed; the next apply counts again).
    pub(super) async fn set_not_null(
        &self,
        t: &TableRef,
        step: &Step,
        path: &FieldPath,
    ) -> Result<StepOutcome, BackendError> {
        let table = self.open_table(t).await?;
        let version = table.version().unwrap_or_default();
        let missing = rewrite::missing_values(&table, path).await?;
        if missing > 0 {
            return Err(BackendError::Refused {
                message: format!(
                    "{} has no value in {missing} rows at version {version}: it cannot be NOT NULL; nothing was changed (fill them, or keep it nullable)",
                    path.join(".")
                ),
            });
        }
        let path = path.clone();
        let props = self.commit_props(step).with_max_retries(0);
        self.commit_metadata_on(
            &table,
            move |schema, _, _| {
                field_json_mut(schema, &path)?["nullable"] = Value::Bool(false);
                Ok(())
            },
            props,
        )
        .await
        .map_err(|e| match e {
            BackendError::Refused { message }
                if message.contains("max commit attempts") || message.contains("already exists") || message.contains("MaxCommitAttempts") =>
            {
                BackendError::Refused {
                    message: format!("the table moved past version {version} while its NULLs were counted; nothing was changed (the next apply counts again): {message}"),
                }
            }
            other => other,
        })
    }
}
