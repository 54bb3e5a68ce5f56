//! The table's CHECK constraints, evaluated on every converted batch.

use std::collections::HashMap;
use std::sync::Arc;

use deltalake::arrow::array::{Array, BooleanArray};
use deltalake::arrow::datatypes::SchemaRef;
use deltalake::arrow::record_batch::RecordBatch;
use deltalake::datafusion::common::DFSchema;
use deltalake::datafusion::physical_plan::PhysicalExpr;

use crate::BackendError;

use super::{df_err, session};

/// The table's CHECK constraints, planned against the rewritten schema and
/// evaluated on every batch before it is written.
pub struct Checks {
    checks: Vec<(String, String, Arc<dyn PhysicalExpr>)>,
}

impl Checks {
    /// The most bytes a CHECK's size-making calls make for a row (`ParsedExpr::row_bytes`).
    pub fn row_bytes(&self) -> u64 {
        self.checks
            .iter()
            .map(|(_, sql, _)| super::row_bytes(sql))
            .max()
            .unwrap_or(0)
    }

    /// From the table configuration's `delta.constraints.*` keys. A CHECK that no
    /// longer makes sense against the new schema refuses the rewrite.
    pub fn for_table(
        configuration: &HashMap<String, String>,
        target: &SchemaRef,
    ) -> Result<Self, BackendError> {
        let ctx = session()?;
        let state = ctx.state();
        let schema = DFSchema::try_from(target.as_ref().clone()).map_err(df_err)?;
        let mut checks = Vec::new();
        let mut keys: Vec<_> = configuration
            .iter()
            .filter_map(|(k, v)| {
                k.strip_prefix(delta_operator_core::model::property::CONSTRAINTS_PREFIX)
                    .map(|n| (n.to_string(), v.clone()))
            })
            .collect();
        keys.sort();
        for (name, sql) in keys {
            let planned = state
                .create_logical_expr(&sql, &schema)
                .and_then(|e| state.create_physical_expr(e, &schema));
            match planned {
                Ok(p) => checks.push((name, sql, p)),
                Err(e) => {
                    return Err(BackendError::Refused {
                        message: format!(
                            "CHECK {name} ({sql}) cannot be evaluated against the rewritten columns: {e}; nothing was changed. Drop or change the constraint in the spec together with this change"
                        ),
                    });
                }
            }
        }
        Ok(Checks { checks })
    }

    /// The first CHECK some row of the batch violates.
    pub(super) fn violation(&self, batch: &RecordBatch) -> Option<String> {
        for (name, sql, expr) in &self.checks {
            let result = expr
                .evaluate(batch)
                .and_then(|v| v.into_array(batch.num_rows()));
            let failed = match result {
                Ok(a) => match a.as_any().downcast_ref::<BooleanArray>() {
                    // NULL passes a CHECK, as in SQL
                    Some(b) => b.iter().filter(|v| *v == Some(false)).count(),
                    None => {
                        return Some(format!("CHECK {name} ({sql}) is not a boolean expression"));
                    }
                },
                Err(e) => return Some(format!("CHECK {name} ({sql}) failed to evaluate: {e}")),
            };
            if failed > 0 {
                return Some(format!(
                    "{failed} rewritten rows would violate CHECK {name} ({sql})"
                ));
            }
        }
        None
    }
}
