//! One reconcile's phases, shared by the CLI and the controller:
//! lower (the API crate) → resolve → read → diff → plan. (Apply is `apply::apply`.)

use delta_operator_api::inputs::Inputs;
use delta_operator_core::model::{ObservedSchema, ObservedTable, TableRef};
use delta_operator_core::plan::{self, Capabilities, Plan, SchemaScope};

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

/// Reads the metadata of every declared schema whose spec names some (a
/// schema whose spec is silent costs no read).
pub async fn observe_schemas<B: Backend>(
    backend: &B,
    scopes: &[SchemaScope],
) -> Result<Vec<ObservedSchema>, BackendError> {
    let mut out = Vec::new();
    for s in scopes.iter().filter(|s| !s.meta.is_silent()) {
        out.extend(backend.read_schema(&s.schema).await?);
    }
    Ok(out)
}

/// The plan for these inputs against this observed state (tables only).
pub fn plan_against(inputs: &Inputs, observed: &[ObservedTable], caps: &Capabilities) -> Plan {
    plan_against_all(inputs, observed, &[], caps)
}

/// The plan for these inputs against the observed tables and schemas.
pub fn plan_against_all(
    inputs: &Inputs,
    observed: &[ObservedTable],
    schemas: &[ObservedSchema],
    caps: &Capabilities,
) -> Plan {
    plan::plan(&inputs.tables, observed, &inputs.schemas, caps)
        .with_schemas(plan::plan_schemas(&inputs.schemas, schemas, caps), caps)
}

/// Reads and plans (tables and the declared schemas' metadata).
pub async fn read_and_plan<B: Backend>(
    backend: &B,
    inputs: &Inputs,
) -> Result<(Plan, Vec<ObservedTable>), BackendError> {
    let observed = observe(backend, inputs).await?;
    let schemas = observe_schemas(backend, &inputs.schemas).await?;
    Ok((
        plan_against_all(inputs, &observed, &schemas, backend.capabilities()),
        observed,
    ))
}
