//! The steps of views, SQL functions and volumes, run in the plan's
//! dependency order between the tables' (`Plan::order`): each step re-reads its
//! object, is skipped when it already holds, and is checked to be what the plan
//! shows before it runs (`ObjectAction::holds`, the core's). A failed step stops its object, and blocks every
//! object and table that needs it (a view over it, a table whose mask calls it).

use serde::Serialize;

use delta_operator_core::model::{ObjectRef, TableRef};
use delta_operator_core::plan::{ObjectOutcome, ObjectPlan, ObjectStep, RiskClass};

use super::guard::{blocked_detail, run_guarded};
use super::{Event, Options, StepStatus, bind};
use crate::{Backend, BackendError};

/// What happened to one step of an object's plan.
#[derive(Debug, Clone, Serialize)]
pub struct ObjectStepReport {
    pub object: ObjectRef,
    pub number: usize,
    pub title: String,
    pub class: RiskClass,
    #[serde(flatten)]
    pub status: StepStatus,
    pub detail: Option<String>,
}

/// What an object needs in the same apply: the relations and functions its
/// query or body reads, by name (a view over a table, a view calling a function).
pub fn object_needs(p: &ObjectPlan) -> Vec<TableRef> {
    let mut out: Vec<TableRef> = p
        .desired
        .iter()
        .flat_map(|d| d.reads.relations.iter().chain(d.reads.functions.iter()))
        .filter(|r| **r != p.object.as_table_ref())
        .cloned()
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Runs one object's steps in order; `failed` holds the names (as `TableRef`s:
/// views, functions and tables share the reads' namespace) of what did not
/// reach its spec in this apply, and gets this object's when it fails or is
/// blocked.
pub(super) async fn run_object<B: Backend>(
    backend: &B,
    p: &ObjectPlan,
    failed: &mut Vec<TableRef>,
    opts: &Options<'_>,
) -> Vec<ObjectStepReport> {
    let ObjectOutcome::Accepted { steps } = &p.outcome else {
        if !matches!(p.outcome, ObjectOutcome::Accepted { .. }) {
            failed.push(p.object.as_table_ref());
        }
        return vec![];
    };
    let blocked_by: Vec<TableRef> = object_needs(p)
        .into_iter()
        .filter(|r| failed.contains(r))
        .collect();
    let mut stop = !blocked_by.is_empty();
    if stop {
        failed.push(p.object.as_table_ref());
    }
    let mut out = Vec::with_capacity(steps.len());
    for step in steps {
        let mut report = ObjectStepReport {
            object: p.object.clone(),
            number: step.number,
            title: step.action.title(&p.object),
            class: step.class,
            status: StepStatus::NotRun,
            detail: None,
        };
        if !blocked_by.is_empty() {
            report.detail = Some(blocked_detail(&blocked_by));
        }
        let ran = run_guarded(
            &mut stop,
            opts,
            &mut report.status,
            &mut report.detail,
            run_object_step(backend, p, step),
        )
        .await;
        if ran {
            if matches!(report.status, StepStatus::Failed { .. }) {
                failed.push(p.object.as_table_ref());
            } else {
                // test-only crash points: right after an object's step (a replace
                // whose put-back has not run yet, say)
                crate::failpoint(&format!("after-object-step-{}", step.number));
                crate::failpoint(&format!(
                    "after-object-step-{}-{}",
                    p.object.name, step.number
                ));
            }
            (opts.on_event)(Event::ObjectFinished(&report));
        }
        out.push(report);
    }
    out
}

/// The reports of an object none of whose steps ran (another apply holds it).
pub(super) fn not_run(p: &ObjectPlan, why: &str) -> Vec<ObjectStepReport> {
    p.steps()
        .iter()
        .map(|step| ObjectStepReport {
            object: p.object.clone(),
            number: step.number,
            title: step.action.title(&p.object),
            class: step.class,
            status: StepStatus::NotRun,
            detail: Some(why.to_string()),
        })
        .collect()
}

async fn run_object_step<B: Backend>(
    backend: &B,
    p: &ObjectPlan,
    step: &ObjectStep,
) -> Result<(StepStatus, Option<String>), BackendError> {
    let live = backend
        .read_objects(&[], std::slice::from_ref(&p.object))
        .await?
        .into_iter()
        .find(|o| o.object == p.object);
    if step.action.holds(live.as_ref()) {
        return Ok((StepStatus::Skipped, None));
    }
    let statements = bind::bind_object_step(backend, p, step)?;
    let outcome = backend.run_object(p, step, &statements).await?;
    Ok((StepStatus::Applied, outcome.detail))
}
