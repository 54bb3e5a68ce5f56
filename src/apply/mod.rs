//! The executor, shared by the CLI and the controller: re-reads and re-plans,
//! refuses a stale or unapproved plan, then runs each table's steps in order,
//! skipping what already holds and recording a restore point before every
//! rewrite or destructive step.

use serde::Serialize;

use crate::backend::{Backend, BackendError};
use crate::engine::{read_and_plan, Inputs};
use crate::model::TableRef;
use crate::plan::gate::{gate, Decision, Policy};
use crate::plan::holds::holds;
use crate::plan::{Outcome, Plan, RiskClass, Step};

/// What happened to one step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "status")]
pub enum StepStatus {
    Applied,
    /// The change already held; nothing was run.
    Skipped,
    Failed { error: String },
    /// Not run: an earlier step of the table failed.
    NotRun,
}

#[derive(Debug, Clone, Serialize)]
pub struct StepReport {
    pub table: TableRef,
    pub number: usize,
    pub title: String,
    pub class: RiskClass,
    #[serde(flatten)]
    pub status: StepStatus,
    /// The Delta version recorded before the step, for rewrites and destructive steps.
    pub restore_point: Option<u64>,
    pub detail: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ApplyReport {
    pub plan_id: String,
    pub steps: Vec<StepReport>,
}

impl ApplyReport {
    pub fn failed(&self) -> bool {
        self.steps.iter().any(|s| matches!(s.status, StepStatus::Failed { .. }))
    }
    pub fn applied(&self) -> usize {
        self.steps.iter().filter(|s| s.status == StepStatus::Applied).count()
    }
    pub fn skipped(&self) -> usize {
        self.steps.iter().filter(|s| s.status == StepStatus::Skipped).count()
    }
    /// `catalog.schema.table@version` for every restore point taken.
    pub fn restore_points(&self) -> Vec<String> {
        self.steps.iter().filter_map(|s| s.restore_point.map(|v| format!("{}@{v}", s.table))).collect()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    #[error("the plan is stale: it was {expected}, but the tables now plan as {actual}; plan again")]
    Stale { expected: String, actual: String },
    #[error("plan {id} needs approval ({reason}); rerun with --approve {id}")]
    NeedsApproval { id: String, reason: String },
    #[error("--approve {approved} approves nothing: the plan is {id}. Review it, then approve {id}")]
    WrongApproval { id: String, approved: String },
    #[error("the plan is refused by the safety rules; fix the spec and plan again")]
    Rejected,
    #[error("reading the tables failed: {0}")]
    Read(#[from] BackendError),
}

/// Events for progress output.
pub enum Event<'a> {
    Started { table: &'a TableRef, step: &'a Step },
    Progress { table: &'a TableRef, step: &'a Step, message: &'a str },
    Finished(&'a StepReport),
}

/// Re-reads, re-plans and checks the plan id and the gate, then applies.
/// `expected` is the id the caller showed (a stale plan is refused);
/// `approved` approves a plan that needs it.
#[allow(clippy::too_many_arguments)]
pub async fn apply<B: Backend>(
    backend: &B,
    inputs: &Inputs,
    expected: Option<&str>,
    approved: Option<&str>,
    policy: Policy,
    on_event: &(dyn Fn(Event<'_>) + Send + Sync),
    may_continue: &(dyn Fn() -> bool + Send + Sync),
) -> Result<(Plan, ApplyReport), ApplyError> {
    let (plan, _) = read_and_plan(backend, inputs).await?;
    if let Some(e) = expected {
        if e != plan.id {
            return Err(ApplyError::Stale { expected: e.to_string(), actual: plan.id.clone() });
        }
    }
    match gate(&plan, policy, approved) {
        Decision::Rejected => return Err(ApplyError::Rejected),
        Decision::NeedsApproval { id, reason } => return Err(ApplyError::NeedsApproval { id, reason }),
        Decision::WrongApproval { id, approved } => return Err(ApplyError::WrongApproval { id, approved }),
        Decision::NothingToDo | Decision::Observe => return Ok((plan.clone(), ApplyReport { plan_id: plan.id, steps: vec![] })),
        Decision::Apply => {}
    }
    let report = run_plan(backend, &plan, on_event, may_continue).await;
    Ok((plan, report))
}

/// Runs an approved plan's steps. A failing step stops its table; other
/// tables go on, except those whose foreign keys depend on a failed one.
/// `may_continue` is asked before every step (the controller's Lease): when
/// it says no, nothing more runs.
pub async fn run_plan<B: Backend>(
    backend: &B,
    plan: &Plan,
    on_event: &(dyn Fn(Event<'_>) + Send + Sync),
    may_continue: &(dyn Fn() -> bool + Send + Sync),
) -> ApplyReport {
    let mut steps = Vec::new();
    let mut failed_tables: Vec<TableRef> = Vec::new();
    for t in &plan.tables {
        let Outcome::Accepted { steps: planned } = &t.outcome else { continue };
        let blocked = t.desired.as_ref().is_some_and(|d| d.foreign_keys.iter().any(|fk| failed_tables.contains(&fk.references)));
        let mut stop = blocked;
        for step in planned {
            let mut report = StepReport {
                table: t.table.clone(),
                number: step.number,
                title: step.action.title(),
                class: step.class,
                status: StepStatus::NotRun,
                restore_point: None,
                detail: None,
            };
            if !stop && !may_continue() {
                stop = true;
                report.detail = Some("not run: the apply lock was lost".into());
            }
            if !stop {
                on_event(Event::Started { table: &t.table, step });
                report.status = match run_step(backend, &t.table, step, &mut report, on_event).await {
                    Ok(s) => s,
                    Err(e) => {
                        stop = true;
                        failed_tables.push(t.table.clone());
                        StepStatus::Failed { error: e.to_string() }
                    }
                };
                on_event(Event::Finished(&report));
            }
            steps.push(report);
        }
    }
    ApplyReport { plan_id: plan.id.clone(), steps }
}

async fn run_step<B: Backend>(
    backend: &B,
    table: &TableRef,
    step: &Step,
    report: &mut StepReport,
    on_event: &(dyn Fn(Event<'_>) + Send + Sync),
) -> Result<StepStatus, BackendError> {
    let live = backend.read(std::slice::from_ref(table)).await?.pop().flatten();
    if holds(&step.action, live.as_ref()) {
        return Ok(StepStatus::Skipped);
    }
    if step.class >= RiskClass::Rewrite {
        report.restore_point = backend.version(table).await?;
    }
    let progress = |m: &str| on_event(Event::Progress { table, step, message: m });
    let outcome = backend.run(table, step, &progress).await?;
    report.detail = outcome.detail;
    Ok(StepStatus::Applied)
}
