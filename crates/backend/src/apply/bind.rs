//! What runs is what the plan shows, for every backend alike: before a step
//! runs, its statements are compiled again as the plan shows them and must be
//! the plan's (a plan made by another version of the operator is refused);
//! then they are compiled bound to the run (its id, the table's version when
//! the step starts) and the backend is handed exactly that.

use delta_operator_core::model::{ObservedTable, SchemaRef};
use delta_operator_core::plan::compile::{CompileError, Compiled, RunBinding, pins_version};
use delta_operator_core::plan::{ObjectPlan, ObjectStep, SchemaStep, Step, TablePlan};

use crate::{Backend, BackendError, TableRun};

/// A step's statements bound to `run`, once they are checked to be the plan's.
/// `now` is the table as read when the step starts.
pub fn bind_step<B: Backend>(
    backend: &B,
    run: &TableRun,
    plan: &TablePlan,
    step: &Step,
    now: Option<&ObservedTable>,
) -> Result<Compiled, BackendError> {
    let t = &run.table;
    let compiler = backend.compiler();
    let observed = plan.observed.as_deref();
    let steps = plan.steps();
    let earlier = &steps[..step.number.saturating_sub(1).min(steps.len())];
    let refused = |e| compile_error(backend, e);
    let shown = compiler
        .compile(plan, observed, earlier, step)
        .map_err(refused)?;
    if shown.statements != step.statements || shown.checks != step.checks {
        return Err(not_as_shown(format!("step {} of {t}", step.number)));
    }
    let version = now.and_then(|l| l.version);
    if pins_version(&step.action) && version.is_none() {
        return Err(BackendError::Refused {
            message: format!(
                "{t}: its Delta version could not be read, so {} cannot be pinned to it",
                step.action.title()
            ),
        });
    }
    let binding = RunBinding {
        run: &run.id,
        version,
    };
    compiler
        .bind(plan, observed, earlier, step, &binding)
        .map_err(refused)
}

/// A schema step's statements, once they are checked to be the plan's.
pub fn bind_schema_step<B: Backend>(
    backend: &B,
    schema: &SchemaRef,
    step: &SchemaStep,
) -> Result<Vec<String>, BackendError> {
    let statements = backend
        .compiler()
        .compile_schema(schema, step)
        .map_err(|e| compile_error(backend, e))?;
    if statements != step.statements {
        return Err(not_as_shown(format!(
            "schema {schema} step {}",
            step.number
        )));
    }
    Ok(statements)
}

/// An object step's statements, once they are checked to be the plan's.
pub fn bind_object_step<B: Backend>(
    backend: &B,
    plan: &ObjectPlan,
    step: &ObjectStep,
) -> Result<Vec<String>, BackendError> {
    let compiled = backend
        .compiler()
        .compile_object(plan, step)
        .map_err(|e| compile_error(backend, e))?;
    if compiled.statements != step.statements {
        return Err(not_as_shown(format!(
            "{} {} step {}",
            plan.object.kind, plan.object, step.number
        )));
    }
    Ok(compiled.statements)
}

fn not_as_shown(what: String) -> BackendError {
    BackendError::Refused {
        message: format!(
            "{what}: the plan's statements are not what this operator compiles for it (a plan made by another version?); plan again"
        ),
    }
}

/// A step the backend cannot compile at run time (it compiled when planned:
/// a plan made by another version, or a planning bug).
fn compile_error<B: Backend>(backend: &B, e: CompileError) -> BackendError {
    match e {
        CompileError::Unsupported(what) => BackendError::Unsupported {
            backend: backend.capabilities().backend,
            what,
        },
        other => BackendError::Refused {
            message: other.to_string(),
        },
    }
}
