//! The steps of views, SQL functions and volumes, run in the plan's
//! dependency order between the tables' (`Plan::order`): each step re-reads its
//! object, is skipped when it already holds, and is checked to be what the plan
//! shows before it runs. A failed step stops its object, and blocks every
//! object and table that needs it (a view over it, a table whose mask calls it).

use serde::Serialize;

use delta_operator_core::model::{ObjectRef, ObservedObject, TableRef};
use delta_operator_core::plan::{ObjectAction, ObjectOutcome, ObjectPlan, ObjectStep, RiskClass};

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
            report.detail = Some(format!(
                "not run: blocked by {}, which did not reach its spec in this apply",
                blocked_by
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        if !stop && !(opts.may_continue)() {
            stop = true;
            report.detail =
                Some("not run: the apply was stopped (interrupted, or its lease lost)".into());
        }
        if !stop {
            report.status = match run_object_step(backend, p, step).await {
                Ok((status, detail)) => {
                    report.detail = detail;
                    status
                }
                Err(e) => {
                    stop = true;
                    failed.push(p.object.as_table_ref());
                    StepStatus::Failed {
                        error: e.to_string(),
                    }
                }
            };
            (opts.on_event)(Event::ObjectFinished(&report));
        }
        out.push(report);
    }
    out
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
    if holds(&step.action, live.as_ref()) {
        return Ok((StepStatus::Skipped, None));
    }
    let statements = bind::bind_object_step(backend, p, step)?;
    let outcome = backend.run_object(p, step, &statements).await?;
    Ok((StepStatus::Applied, outcome.detail))
}

/// Whether the live object already is as the step leaves it (a rerun after a
/// failure skips what the first run did). A replace or a comment always runs:
/// running it again changes nothing.
pub fn holds(action: &ObjectAction, live: Option<&ObservedObject>) -> bool {
    use ObjectAction as A;
    let Some(o) = live else {
        return matches!(action, A::Drop);
    };
    match action {
        A::CreateView { .. } | A::CreateFunction { .. } | A::CreateVolume { .. } => true,
        A::Drop | A::ReplaceView { .. } | A::ReplaceFunction { .. } | A::SetComment { .. } => false,
        A::SetProperties { properties } => properties
            .iter()
            .all(|(k, v)| o.properties.get(k) == Some(v)),
        A::UnsetProperties { keys } => keys.iter().all(|k| !o.properties.contains_key(k)),
        A::SetTags { tags } => tags.iter().all(|(k, v)| o.tags.get(k) == Some(v)),
        A::UnsetTags { keys } => keys.iter().all(|k| !o.tags.contains_key(k)),
        A::Grant {
            principal,
            privileges,
        } => o
            .grants
            .iter()
            .find(|g| &g.principal == principal)
            .is_some_and(|g| privileges.iter().all(|p| g.privileges.contains(p))),
        A::Revoke {
            principal,
            privileges,
        } => o
            .grants
            .iter()
            .find(|g| &g.principal == principal)
            .is_none_or(|g| privileges.iter().all(|p| !g.privileges.contains(p))),
        A::SetOwner { owner } => o.owner.as_deref() == Some(owner.as_str()),
    }
}
