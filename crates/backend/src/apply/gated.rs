//! The preamble of every apply: read and plan, refuse a stale plan, gate it
//! (approval, policy), take the locks of the tables with steps, then read and
//! plan once more under them before anything runs.

use crate::engine::read_and_plan;
use crate::{Backend, BackendError, TableRun};
use delta_operator_core::model::TableRef;
use delta_operator_core::plan::Inputs;
use delta_operator_core::plan::Plan;
use delta_operator_core::plan::gate::{Decision, gate};

use super::report::table_reports;
use super::run::run_locked;
use super::{ApplyError, ApplyReport, LockedTable, Options};

/// Re-reads, re-plans and checks the plan id and the gate; then takes the lock
/// of every table with steps, reads and plans once more under the locks (so
/// what runs is planned from what no other apply can change any more), and
/// applies. `expected` is the id the caller showed (a stale plan is refused);
/// `approved` approves a plan that needs it.
pub async fn apply<B: Backend>(
    backend: &B,
    inputs: &Inputs,
    expected: Option<&str>,
    approved: Option<&str>,
    opts: &Options<'_>,
) -> Result<(Plan, ApplyReport), ApplyError> {
    let read = || async { read_and_plan(backend, inputs).await.map(|(p, _)| p) };
    apply_planned(backend, read, expected, approved, opts).await
}

/// `apply` for any way of planning: `read_plan` reads the live tables and plans
/// (a declared set, a deleted resource's drop, a schema's orphans). It runs
/// before the locks and once more under them, so every apply, whatever its
/// plan, is refused when stale, gated, and run from what no other apply can
/// change any more.
pub async fn apply_planned<B, F, Fut>(
    backend: &B,
    read_plan: F,
    expected: Option<&str>,
    approved: Option<&str>,
    opts: &Options<'_>,
) -> Result<(Plan, ApplyReport), ApplyError>
where
    B: Backend,
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<Plan, BackendError>>,
{
    let plan = read_plan().await?;
    if let Some(e) = expected
        && e != plan.id
    {
        return Err(ApplyError::Stale {
            expected: e.to_string(),
            actual: plan.id.clone(),
        });
    }
    match gate(&plan, opts.policy, approved) {
        Decision::Rejected => return Err(ApplyError::Rejected),
        Decision::NeedsApproval { id, reason } => {
            return Err(ApplyError::NeedsApproval { id, reason });
        }
        Decision::WrongApproval { id, approved } => {
            return Err(ApplyError::WrongApproval { id, approved });
        }
        Decision::NothingToDo | Decision::Observe => {
            let tables = table_reports(&plan, &[], &[], &[]);
            return Ok((
                plan.clone(),
                ApplyReport {
                    plan_id: plan.id,
                    steps: vec![],
                    schema_steps: vec![],
                    object_steps: vec![],
                    locked: vec![],
                    tables,
                },
            ));
        }
        Decision::Apply => {}
    }
    // locks in table order, so two applies never wait on each other; a view,
    // function or volume with steps is locked by its name too (views and tables
    // share one namespace): two applies replacing one view at once would race
    // (a replace is a drop and a create) and each put back what only its own plan read
    let object_names: Vec<TableRef> = plan
        .objects
        .iter()
        .filter(|o| !o.steps().is_empty())
        .map(|o| o.object.as_table_ref())
        .collect();
    let mut tables: Vec<&TableRef> = plan
        .tables
        .iter()
        .filter(|t| !t.steps().is_empty())
        .map(|t| &t.table)
        .chain(object_names.iter())
        .collect();
    tables.sort();
    tables.dedup();
    let mut runs = Vec::new();
    // a table another apply holds is left out; the others go on (all held: refused)
    let mut locked = Vec::new();
    for t in tables {
        match backend.begin(t, opts.lock_wait).await {
            Ok(r) => runs.push(r),
            Err(BackendError::Locked(by)) => locked.push(LockedTable {
                table: t.clone(),
                by,
            }),
            Err(e) => {
                end_all(backend, runs).await;
                return Err(ApplyError::Lock(e));
            }
        }
    }
    if runs.is_empty() && !locked.is_empty() {
        let all: Vec<String> = locked.into_iter().map(|l| l.by).collect();
        return Err(ApplyError::Locked(all.join("; ")));
    }
    let replanned = read_plan().await;
    let locked_plan = match replanned {
        Ok(p) if p.id == plan.id => p,
        Ok(p) => {
            end_all(backend, runs).await;
            return Err(ApplyError::Stale {
                expected: plan.id.into(),
                actual: p.id,
            });
        }
        Err(e) => {
            end_all(backend, runs).await;
            return Err(e.into());
        }
    };
    let report = run_locked(backend, &locked_plan, &mut runs, locked, opts).await;
    end_all(backend, runs).await;
    Ok((locked_plan, report))
}

pub(super) async fn end_all<B: Backend>(backend: &B, runs: Vec<TableRun>) {
    for r in runs {
        backend.end(r).await;
    }
}
