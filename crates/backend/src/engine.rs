//! One reconcile's phases, shared by the CLI and the controller:
//! lower (the API crate) → resolve → read → diff → plan. (Apply is `apply::apply`.)

use delta_operator_api::inputs::Inputs;
use delta_operator_core::model::{ObservedTable, TableRef};
use delta_operator_core::plan::{self, Capabilities, Plan};

use crate::{Backend, BackendError};

/// Reads every declared table and every table of every declared schema.
pub async fn observe<B: Backend>(
    backend: &B,
    inputs: &Inputs,
) -> Result<Vec<ObservedTable>, BackendError> {
    let mut refs: Vec<TableRef> = inputs.tables.iter().map(|t| t.table.clone()).collect();
    for s in &inputs.schemas {
        for t in backend.list_schema(&s.schema).await? {
            if !refs.contains(&t) {
                refs.push(t);
            }
        }
    }
    Ok(backend.read(&refs).await?.into_iter().flatten().collect())
}

/// The plan for these inputs against this observed state.
pub fn plan_against(inputs: &Inputs, observed: &[ObservedTable], caps: &Capabilities) -> Plan {
    plan::plan(&inputs.tables, observed, &inputs.schemas, caps)
}

/// Reads and plans.
pub async fn read_and_plan<B: Backend>(
    backend: &B,
    inputs: &Inputs,
) -> Result<(Plan, Vec<ObservedTable>), BackendError> {
    let observed = observe(backend, inputs).await?;
    Ok((
        plan_against(inputs, &observed, backend.capabilities()),
        observed,
    ))
}
