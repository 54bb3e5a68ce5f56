//! One table's steps: what blocks the table, the guards before each step
//! (stopped, lease, lock, fence), and the step itself: re-read, skip what
//! already holds, record a restore point before a rewrite or destructive
//! step, bind and run.

use crate::{Backend, BackendError, Extras, TableRun, failpoint};
use delta_operator_core::model::TableRef;
use delta_operator_core::plan::holds::holds;
use delta_operator_core::plan::{RiskClass, Step, TablePlan};

use super::guard::{STOPPED, blocked_detail};
use super::{Event, LockedTable, Options, StepReport, StepStatus, bind};

/// The tables `t`'s foreign keys reference that did not reach their spec in
/// this run (sorted, once each): `t` is blocked while any is left.
pub(super) fn blocked_by(t: &TablePlan, failed_tables: &[TableRef]) -> Vec<TableRef> {
    let mut blocked_by: Vec<TableRef> = t
        .desired
        .iter()
        .flat_map(|d| d.foreign_keys.iter())
        .filter(|fk| fk.references != t.table && failed_tables.contains(&fk.references))
        .map(|fk| fk.references.clone())
        .collect();
    // the functions its column masks call (an object of this apply that failed)
    let functions = t.desired.iter().flat_map(|d| {
        d.columns
            .iter()
            .filter_map(|c| c.mask.as_ref().map(|m| m.function.as_str()))
    });
    for f in functions {
        if let Some(r) = function_ref(f, &t.table)
            && failed_tables.contains(&r)
        {
            blocked_by.push(r);
        }
    }
    blocked_by.sort();
    blocked_by.dedup();
    blocked_by
}

/// A function named in a mask or row filter (`f`, `s.f`, `c.s.f`, parts maybe
/// backticked), resolved against the table's catalog and schema.
fn function_ref(name: &str, table: &TableRef) -> Option<TableRef> {
    let parts: Vec<String> = name
        .split('.')
        .map(|p| p.trim().trim_matches('`').to_lowercase())
        .collect();
    match parts.as_slice() {
        [f] => Some(TableRef::new(&table.catalog, &table.schema, f)),
        [s, f] => Some(TableRef::new(&table.catalog, s, f)),
        [c, s, f] => Some(TableRef::new(c, s, f)),
        _ => None,
    }
}

/// A step's report before it runs: not run, failed with `stop_reason` (the
/// table's lock could not be taken), or saying which apply holds the table or
/// which failed tables block it.
pub(super) fn not_run_report(
    t: &TablePlan,
    step: &Step,
    stop_reason: Option<String>,
    held_by: Option<&LockedTable>,
    blocked_by: &[TableRef],
) -> StepReport {
    let mut report = StepReport {
        table: t.table.clone(),
        number: step.number,
        title: step.action.title(),
        class: step.class,
        status: StepStatus::NotRun,
        restore_point: None,
        detail: None,
        still_running: None,
    };
    if let Some(why) = stop_reason {
        report.status = StepStatus::Failed { error: why };
    }
    if let Some(l) = held_by {
        report.detail = Some(format!("not run: {}", l.by));
    }
    if !blocked_by.is_empty() {
        report.detail = Some(blocked_detail(blocked_by));
    }
    report
}

/// One table's steps as they run: `stop` is set once a step fails or the
/// apply may not go on, and the table is then counted in `failed_tables`
/// when it did not reach its spec.
pub(super) struct TableSteps<'r, 'o, B> {
    pub(super) backend: &'r B,
    pub(super) run: Option<&'r TableRun>,
    pub(super) table: &'r TablePlan,
    pub(super) stop: &'r mut bool,
    pub(super) failed_tables: &'r mut Vec<TableRef>,
    pub(super) opts: &'r Options<'o>,
}

impl<B: Backend> TableSteps<'_, '_, B> {
    /// Runs `step` unless the table is stopped, the apply may not go on, the
    /// table's lock was lost or the fence refuses; the outcome goes in `report`.
    pub(super) async fn guard_and_run(&mut self, step: &Step, report: &mut StepReport) {
        let (t, run, opts) = (self.table, self.run, self.opts);
        if !*self.stop && !(opts.may_continue)() {
            *self.stop = true;
            report.detail = Some(STOPPED.into());
        }
        // the table's own lock lost (a renewal found another holder's entry):
        // a failure, not a quiet "not run", so the exit code and status say so
        if !*self.stop && run.is_some_and(|r| !r.is_held()) {
            self.fail(report, format!(
                "this apply lost its lock on {} before step {}; nothing more of it was run. Another apply may hold the table now: plan again",
                t.table, step.number
            ));
        }
        if let (false, Some(_), Some(fence)) = (*self.stop, run, opts.fence)
            && let Err(why) = fence().await
        {
            self.fail(report, why);
        }
        if let (false, Some(run)) = (*self.stop, run) {
            (opts.on_event)(Event::Started {
                table: &t.table,
                step,
            });
            match run_step(self.backend, run, t, step, report, opts.on_event).await {
                Ok(s) => report.status = s,
                Err(e) => {
                    if let BackendError::StillRunning { statement, .. } = &e {
                        report.still_running = Some(statement.clone());
                    }
                    self.fail(report, e.to_string());
                }
            }
            (opts.on_event)(Event::Finished(report));
            failpoint(&format!("after-step-{}", step.number));
        }
    }

    /// The step failed with `error`: nothing more of the table runs.
    fn fail(&mut self, report: &mut StepReport, error: String) {
        *self.stop = true;
        self.failed_tables.push(self.table.table.clone());
        report.status = StepStatus::Failed { error };
    }
}

async fn run_step<B: Backend>(
    backend: &B,
    run: &TableRun,
    plan: &TablePlan,
    step: &Step,
    report: &mut StepReport,
    on_event: &(dyn Fn(Event<'_>) + Send + Sync),
) -> Result<StepStatus, BackendError> {
    let table = &run.table;
    // the extras the plan was made with, so a step on tags or grants sees them
    let extras = Extras::declared(plan.desired.as_deref());
    let live = backend
        .read(std::slice::from_ref(table), &extras)
        .await?
        .pop()
        .flatten();
    if holds(&step.action, live.as_ref()) {
        return Ok(StepStatus::Skipped);
    }
    // the restore point: a version that cannot be read does not stop the step (the
    // reference's promise); its line says it had none, and why
    let mut no_restore_point = None;
    run.set_restore_point(None);
    if step.class >= RiskClass::Rewrite {
        match backend.version(table).await {
            Ok(v) => {
                report.restore_point = v;
                run.set_restore_point(v);
                if let Some(version) = v {
                    on_event(Event::RestorePoint { table, version });
                }
            }
            Err(e) => {
                no_restore_point = Some(format!(
                    "no restore point: the table's version could not be read ({})",
                    e.to_string().lines().next().unwrap_or_default()
                ))
            }
        }
    }
    let note = |m: &str| {
        on_event(Event::Progress {
            table,
            step,
            message: m,
        })
    };
    let rows = |rows: crate::RowsDone| on_event(Event::Rows { table, step, rows });
    let progress = crate::StepProgress {
        note: &note,
        rows: &rows,
    };
    crate::slow_failpoint(&format!("step-{}", step.number)).await;
    let bound = bind::bind_step(backend, run, plan, step, live.as_ref())?;
    let outcome = backend
        .run(run, plan, step, &bound, live.as_ref(), progress)
        .await?;
    report.detail = match (no_restore_point, outcome.detail) {
        (Some(n), Some(d)) => Some(format!("{n}; {d}")),
        (n, d) => n.or(d),
    };
    Ok(StepStatus::Applied)
}
