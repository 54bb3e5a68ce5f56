//! A schema's metadata steps: re-read, skip what already holds, run.

use crate::{Backend, BackendError};
use delta_operator_core::model::SchemaRef;
use delta_operator_core::plan::schema::holds as schema_holds;
use delta_operator_core::plan::{Plan, SchemaStep};

use super::guard::run_guarded;
use super::{Event, Options, SchemaStepReport, StepStatus, bind};

/// Runs each schema's metadata steps in order: re-read, skip what already
/// holds, run. A failed step stops its schema; the other schemas go on.
pub(super) async fn run_schemas<B: Backend>(
    backend: &B,
    plan: &Plan,
    opts: &Options<'_>,
) -> Vec<SchemaStepReport> {
    let mut out = Vec::new();
    for sp in &plan.schemas {
        let mut stop = false;
        for step in sp.steps() {
            let mut report = SchemaStepReport {
                schema: sp.schema.clone(),
                number: step.number,
                title: step.action.title(),
                class: step.class,
                status: StepStatus::NotRun,
                detail: None,
            };
            let ran = run_guarded(
                &mut stop,
                opts,
                &mut report.status,
                &mut report.detail,
                run_schema_step(backend, &sp.schema, step),
            )
            .await;
            if ran {
                (opts.on_event)(Event::SchemaFinished(&report));
            }
            out.push(report);
        }
    }
    out
}

async fn run_schema_step<B: Backend>(
    backend: &B,
    schema: &SchemaRef,
    step: &SchemaStep,
) -> Result<(StepStatus, Option<String>), BackendError> {
    let live = backend.read_schema(schema).await?;
    if schema_holds(&step.action, live.as_ref()) {
        return Ok((StepStatus::Skipped, None));
    }
    let statements = bind::bind_schema_step(backend, schema, step)?;
    let outcome = backend.run_schema(schema, step, &statements).await?;
    Ok((StepStatus::Applied, outcome.detail))
}
