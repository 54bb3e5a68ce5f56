//! One reconcile's phases, shared by the CLI and the controller:
//! lower (the API crate) → resolve → read → diff → plan. (Apply is `apply::apply`.)

use delta_operator_api::inputs::Inputs;
use delta_operator_core::model::{ObservedTable, TableRef};
use delta_operator_core::plan::compile::compile;
use delta_operator_core::plan::{self, Capabilities, Compiler, Plan};

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

/// The plan for these inputs against this observed state, compiled.
pub fn plan_against(
    inputs: &Inputs,
    observed: &[ObservedTable],
    caps: &Capabilities,
    compiler: &dyn Compiler,
) -> Plan {
    compile(
        plan::plan(&inputs.tables, observed, &inputs.schemas, caps),
        compiler,
    )
}

/// Reads and plans. A table the plan scans or rewrites whose read gave no
/// size is measured (`Backend::measure`) and planned again, so its steps
/// show what they will read; the size is not part of the plan id.
pub async fn read_and_plan<B: Backend>(
    backend: &B,
    inputs: &Inputs,
) -> Result<(Plan, Vec<ObservedTable>), BackendError> {
    let mut observed = observe(backend, inputs).await?;
    let plan = plan_against(
        inputs,
        &observed,
        backend.capabilities(),
        backend.compiler(),
    );
    let unmeasured: Vec<TableRef> = plan
        .tables
        .iter()
        .filter(|t| t.observed.as_ref().is_some_and(|o| o.size_bytes.is_none()))
        .filter(|t| t.steps().iter().any(|s| s.action.scans_table()))
        .map(|t| t.table.clone())
        .collect();
    if unmeasured.is_empty() {
        return Ok((plan, observed));
    }
    let sizes = backend.measure(&unmeasured).await?;
    for (t, size) in unmeasured.iter().zip(sizes) {
        if let Some(o) = observed.iter_mut().find(|o| &o.table == t) {
            o.size_bytes = size;
        }
    }
    let plan = plan_against(
        inputs,
        &observed,
        backend.capabilities(),
        backend.compiler(),
    );
    Ok((plan, observed))
}
