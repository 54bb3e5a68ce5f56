//! One reconcile's phases, shared by the CLI and the controller:
//! lower → resolve → read → diff → plan. (Apply is `apply::apply`.)

use crate::backend::{Backend, BackendError};
use crate::model::{DesiredTable, ObservedTable, TableRef};
use crate::plan::{self, Capabilities, Plan, SchemaScope};
use crate::spec::lower::{lower_schema, lower_table};
use crate::spec::{validate::validate, Manifests, SpecError};

/// What the manifests declare, lowered.
#[derive(Debug, Clone, Default)]
pub struct Inputs {
    pub tables: Vec<DesiredTable>,
    pub schemas: Vec<SchemaScope>,
}

impl Inputs {
    /// `--clone-before-rewrite`: every table takes a shallow clone before its
    /// first step that could lose data (false leaves each spec's own setting).
    pub fn clone_before_rewrite(&mut self, on: bool) {
        if on {
            for t in &mut self.tables {
                t.clone_before_rewrite = true;
            }
        }
    }
}

/// Validates and lowers a manifest set; every error at once.
pub fn lower(m: &Manifests) -> Result<Inputs, Vec<SpecError>> {
    let mut errors = validate(m);
    let mut tables = Vec::new();
    if errors.is_empty() {
        for t in &m.tables {
            match lower_table(m, t) {
                Ok(d) => tables.push(d),
                Err(e) => errors.extend(e),
            }
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let schemas = m.schemas.iter().map(lower_schema).map(|s| SchemaScope { schema: s.schema, mode: s.mode }).collect();
    Ok(Inputs { tables, schemas })
}

/// Reads every declared table and every table of every declared schema.
pub async fn observe<B: Backend>(backend: &B, inputs: &Inputs) -> Result<Vec<ObservedTable>, BackendError> {
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
pub async fn read_and_plan<B: Backend>(backend: &B, inputs: &Inputs) -> Result<(Plan, Vec<ObservedTable>), BackendError> {
    let observed = observe(backend, inputs).await?;
    Ok((plan_against(inputs, &observed, backend.capabilities()), observed))
}
