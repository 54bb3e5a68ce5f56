//! One reconcile's phases, shared by the CLI and the controller:
//! lower (the API crate) → resolve → read → diff → plan. (Apply is `apply::apply`.)

use std::sync::Arc;

use delta_operator_core::model::{
    Check, ObjectBody, ObjectRef, ObservedObject, ObservedSchema, ObservedTable, SchemaRef,
    TableRef,
};
use delta_operator_core::plan::Inputs;
use delta_operator_core::plan::compile::{compile_all, compile_parts};
use delta_operator_core::plan::undo_window;
use delta_operator_core::plan::{
    self, Capabilities, Compiler, Parts, Plan, SchemaScope, TablePlan,
};
use delta_operator_expression::{parse_body, parse_query, same_expression};

use crate::{Backend, BackendError, Extras};

/// Reads every declared table and every table of every declared schema,
/// with the tags and grants each spec declares (none of the others).
pub async fn observe<B: Backend>(
    backend: &B,
    inputs: &Inputs,
) -> Result<Vec<Arc<ObservedTable>>, BackendError> {
    let mut refs: Vec<TableRef> = inputs.tables.iter().map(|t| t.table.clone()).collect();
    for s in &inputs.schemas {
        for t in backend.list_schema(&s.schema).await? {
            if !refs.contains(&t) {
                refs.push(t);
            }
        }
    }
    let extras = Extras::declared(inputs.tables.iter().map(|t| &**t));
    Ok(backend
        .read(&refs, &extras)
        .await?
        .into_iter()
        .flatten()
        .map(|mut o| {
            if let Some(d) = inputs.tables.iter().find(|d| d.table == o.table) {
                align_checks(&d.checks, &mut o.checks);
            }
            Arc::new(o)
        })
        .collect())
}

/// Reads every view, function and volume of the declared schemas and the
/// declared objects (none on a backend without a metastore: its rules refuse
/// the declared ones), each parsed (`parse_live`).
pub async fn observe_objects<B: Backend>(
    backend: &B,
    inputs: &Inputs,
) -> Result<Vec<Arc<ObservedObject>>, BackendError> {
    if !backend.capabilities().catalog_objects {
        return Ok(vec![]);
    }
    let schemas: Vec<SchemaRef> = inputs.schemas.iter().map(|s| s.schema.clone()).collect();
    let declared: Vec<ObjectRef> = inputs.objects.iter().map(|o| o.object.clone()).collect();
    if schemas.is_empty() && declared.is_empty() {
        return Ok(vec![]);
    }
    let mut live = backend.read_objects(&schemas, &declared).await?;
    for o in &mut live {
        parse_live(o);
    }
    Ok(live.into_iter().map(Arc::new).collect())
}

/// A live view's text or function's body parsed as lowering parses the
/// declared ones: its normalised form (what the plan compares) and what it
/// reads, names resolved against the object's own schema. Text that does not
/// parse keeps an empty normalised form and reads nothing known (the plan
/// then replaces a declared one; an undeclared one orders nothing).
pub fn parse_live(o: &mut ObservedObject) {
    let default = o.object.schema_ref();
    match &mut o.body {
        ObjectBody::View {
            query, normalized, ..
        } => {
            if let Ok(p) = parse_query(query) {
                o.reads = p.reads(&default).unwrap_or_default();
                *normalized = p.normalized;
            }
        }
        ObjectBody::Function {
            parameters,
            body,
            normalized,
            ..
        } => {
            let names: Vec<String> = parameters.iter().map(|p| p.name.clone()).collect();
            if let Ok(p) = parse_body(body, &names) {
                o.reads = p.reads(&default).unwrap_or_default();
                *normalized = p.normalized;
            }
        }
        ObjectBody::Volume => {}
    }
}

/// A live CHECK that is the declared one in the engine's own spelling (delta-rs
/// stores `(a > 0) OR b` as `a > 0 OR b`; Databricks re-spaces) is read as the
/// declared text, so the diff sees no change and the plan converges. Equal
/// means equal parse trees (`expression::same_expression`), never looser.
pub fn align_checks(declared: &[Check], live: &mut [Check]) {
    for have in live {
        if let Some(want) = declared
            .iter()
            .find(|c| c.name.eq_ignore_ascii_case(&have.name))
            && want.expression != have.expression
            && same_expression(&want.expression, &have.expression)
        {
            have.expression = want.expression.clone();
        }
    }
}

/// Reads every declared schema: the metadata of one whose spec names some,
/// and only whether it exists for one whose spec is silent (on Databricks the
/// tables' listing already says so: no request of its own). What is returned
/// are the live schemas; a declared schema missing from it does not exist,
/// and the plan creates it.
pub async fn observe_schemas<B: Backend>(
    backend: &B,
    scopes: &[SchemaScope],
) -> Result<Vec<ObservedSchema>, BackendError> {
    let mut out = Vec::new();
    for s in scopes {
        if !s.meta.is_silent() {
            out.extend(backend.read_schema(&s.schema).await?);
        } else if backend.schema_exists(&s.schema).await? {
            out.push(ObservedSchema::new(s.schema.clone()));
        }
    }
    Ok(out)
}

/// The table plans and the unmanaged tables (`plan::plan_tables`), with the
/// declared tables whose name a reader takes for a live undeclared table's refused.
fn plan_tables(
    inputs: &Inputs,
    observed: &[Arc<ObservedTable>],
    caps: &Capabilities,
) -> (Vec<TablePlan>, Vec<TableRef>) {
    let (mut tables, unmanaged) = plan::plan_tables_at(
        &inputs.tables,
        observed,
        &inputs.schemas,
        caps,
        inputs.now_ms,
    );
    plan::rules::check_lookalike_live_tables(&mut tables, observed, &delta_operator_names::Reader);
    (tables, unmanaged)
}

/// The plan for these inputs against this observed state (tables only), compiled.
pub fn plan_against(
    inputs: &Inputs,
    observed: &[Arc<ObservedTable>],
    caps: &Capabilities,
    compiler: &dyn Compiler,
) -> Plan {
    // no schema plans: without a read of the schemas, none is known to be absent
    let (tables, unmanaged) = plan_tables(inputs, observed, caps);
    compile_parts(caps.backend, tables, vec![], unmanaged, compiler)
}

/// The plan for these inputs against the observed tables and schemas, compiled
/// (the declared views, functions and volumes planned against none live:
/// `plan_with_objects` plans them against what was read).
pub fn plan_against_all(
    inputs: &Inputs,
    observed: &[Arc<ObservedTable>],
    schemas: &[ObservedSchema],
    caps: &Capabilities,
    compiler: &dyn Compiler,
) -> Plan {
    plan_with_objects(inputs, observed, schemas, &[], caps, compiler)
}

/// The plan for these inputs against the observed tables, schemas and
/// objects (views, functions, volumes), compiled: the objects' plans, the
/// table steps that break views classed, and the order of the apply.
pub fn plan_with_objects(
    inputs: &Inputs,
    observed: &[Arc<ObservedTable>],
    schemas: &[ObservedSchema],
    objects: &[Arc<ObservedObject>],
    caps: &Capabilities,
    compiler: &dyn Compiler,
) -> Plan {
    let (mut tables, unmanaged) = plan_tables(inputs, observed, caps);
    let (objects, unmanaged_objects, order) =
        plan::plan_objects(&inputs.objects, objects, &inputs.schemas, caps, &mut tables);
    let schemas = plan::plan_schemas(&inputs.schemas, schemas, caps);
    // one id, over the compiled statements (not one for the tables, then the schemas, then these)
    compile_all(
        caps.backend,
        Parts {
            tables,
            schemas,
            objects,
            unmanaged,
            unmanaged_objects,
            order,
        },
        compiler,
    )
}

/// Reads and plans (tables and the declared schemas' metadata). A table the
/// plan scans or rewrites whose read gave no size is measured
/// (`Backend::measure`) and planned again, so its steps show what they will
/// read; the size is not part of the plan id. Likewise a table whose plan
/// shows a restore has its history read (`Backend::history`) and is planned
/// again, so the restore shows until when it works (not in the plan id either).
pub async fn read_and_plan<B: Backend>(
    backend: &B,
    inputs: &Inputs,
) -> Result<(Plan, Vec<Arc<ObservedTable>>), BackendError> {
    let mut observed = observe(backend, inputs).await?;
    let schemas = observe_schemas(backend, &inputs.schemas).await?;
    let objects = observe_objects(backend, inputs).await?;
    let (caps, compiler) = (backend.capabilities(), backend.compiler());
    let plan = plan_with_objects(inputs, &observed, &schemas, &objects, caps, compiler);
    let unmeasured: Vec<TableRef> = plan
        .tables
        .iter()
        .filter(|t| t.observed.as_ref().is_some_and(|o| o.size_bytes.is_none()))
        .filter(|t| t.steps().iter().any(|s| s.action.scans_table()))
        .map(|t| t.table.clone())
        .collect();
    // a restore shown in the plan carries its window, from the table's history
    let unwindowed: Vec<TableRef> = plan
        .tables
        .iter()
        .filter(|t| t.observed.as_ref().is_some_and(|o| o.history.is_none()))
        .filter(|t| undo_window::needs_history(t))
        .map(|t| t.table.clone())
        .collect();
    if unmeasured.is_empty() && unwindowed.is_empty() {
        return Ok((plan, observed));
    }
    let sizes = backend.measure(&unmeasured).await?;
    let mut histories = Vec::with_capacity(unwindowed.len());
    for t in &unwindowed {
        // a history that cannot be read leaves the window unknown (not shown): never the plan's failure
        histories.push(backend.history(t).await.ok().flatten());
    }
    drop(plan); // it shares the observed tables: sized below in place, not copied
    for (t, size) in unmeasured.iter().zip(sizes) {
        if let Some(o) = observed.iter_mut().find(|o| &o.table == t) {
            Arc::make_mut(o).size_bytes = size;
        }
    }
    for (t, history) in unwindowed.iter().zip(histories) {
        if let Some(o) = observed.iter_mut().find(|o| &o.table == t) {
            Arc::make_mut(o).history = history;
        }
    }
    // neither the size nor the history is in the plan id: the same plan, shown with them
    let plan = plan_with_objects(inputs, &observed, &schemas, &objects, caps, compiler);
    Ok((plan, observed))
}

#[cfg(test)]
mod tests {
    use super::align_checks;
    use delta_operator_core::model::Check;

    fn check(name: &str, expression: &str) -> Check {
        Check {
            name: name.into(),
            expression: expression.into(),
        }
    }

    #[test]
    fn a_live_check_in_the_engines_spelling_is_read_as_declared() {
        let declared = [
            check("c", "(id > 0) OR (id < -5)"),
            check("d", "id > 0"),
            check("e", "upper(s) = 'A'"),
        ];
        let mut live = [
            check("C", "id > 0 OR id < -5"),
            check("d", "id > 1"),
            check("e", "UPPER(s) = 'a'"),
            check("f", "id > 0"),
        ];
        align_checks(&declared, &mut live);
        assert_eq!(live[0].expression, "(id > 0) OR (id < -5)");
        // another expression, another literal, an undeclared CHECK: as read
        assert_eq!(live[1].expression, "id > 1");
        assert_eq!(live[2].expression, "UPPER(s) = 'a'");
        assert_eq!(live[3].expression, "id > 0");
    }
}
