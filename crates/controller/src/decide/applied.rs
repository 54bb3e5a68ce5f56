//! The status after the executor ran a plan, and after an apply that was cut
//! short, abandoned or is still running.

use delta_operator_api::reason::Reason;
use delta_operator_api::spec::crd::{ApplyStatus, ApprovalState, ApprovalStatus, LastApplied};
use delta_operator_backend::BackendError;
use delta_operator_backend::apply::{ApplyError, ApplyReport, StepStatus};
use delta_operator_core::plan::Plan;
use delta_operator_core::plan::RiskClass;
use delta_operator_core::plan::gate::{Decision, Policy, approves, gate};

use super::status::{plan_status, whole_plan};
use super::{EventReason, Note, Report, Seen};
use crate::APPROVE;

/// A read that failed: retried when it may pass next time, else a person must look.
pub fn read_failed(e: &BackendError) -> Report {
    if e.is_permanent() {
        Report::new(Reason::ReadFailed, e.to_string())
    } else {
        Report::new(
            Reason::ReadRetrying,
            format!("reading the live tables failed; retrying: {e}"),
        )
    }
}

/// The event that says an apply starts.
pub fn apply_started(plan: &Plan) -> Note {
    Note {
        warning: false,
        reason: EventReason::ApplyStarted,
        message: format!("applying plan {} ({} steps)", plan.id, plan.summary.steps),
    }
}

/// The status after the executor ran `plan` (approved by `seen.approval`, if at all).
/// `done` is the event of a successful apply (a table or orphans dropped
/// rather than changed); `failed` the reason of a failed step.
pub fn applied(
    plan: &Plan,
    seen: &Seen,
    result: &Result<(Plan, ApplyReport), ApplyError>,
    now: &str,
    done: Option<(EventReason, String)>,
    failed: Reason,
) -> Report {
    let report = match result {
        Ok((_, report)) => report,
        Err(e) => return apply_failed(plan, e, failed),
    };
    let last_applied = LastApplied {
        plan_id: plan.id.to_string(),
        time: now.into(),
        steps_applied: report.applied() as i32,
        restore_points: report.restore_points(),
        undo_windows: vec![],
    };
    let approval = spent(plan, seen, report, now);
    if let Some(failure) = step_statuses(report).find_map(|(number, title, status)| match status {
        StepStatus::Failed { error } => Some(format!("step {number} {title} failed: {error}")),
        _ => None,
    }) {
        return Report {
            last_applied: Some(last_applied),
            approval,
            ..pending(plan, failed, failure)
        };
    }
    if !report.locked.is_empty() {
        // another apply held some tables: the others went on, these wait for it
        let by: Vec<&str> = report.locked.iter().map(|l| l.by.as_str()).collect();
        return Report {
            last_applied: Some(last_applied),
            ..pending(plan, Reason::Locked, by.join("; "))
        };
    }
    if step_statuses(report).any(|(_, _, status)| *status == StepStatus::NotRun) {
        return Report {
            last_applied: Some(last_applied),
            approval,
            ..pending(
                plan,
                Reason::LeaseLost,
                "the apply lock was lost; the rest runs in the next reconcile".into(),
            )
        };
    }
    finished(plan, report, last_applied, approval, done)
}

/// The status of a plan that is still to be applied: its drift and its plan.
pub(super) fn pending(plan: &Plan, reason: Reason, message: String) -> Report {
    Report {
        drifted: crate::maintenance::spec_drift(plan).then(|| plan.summary.short()),
        plan: Some(plan_status(plan, None)),
        whole_plan: whole_plan(plan),
        ..Report::new(reason, message)
    }
}

/// The status when the executor did not run: locked, stale, a read to retry,
/// or a failure (`failed`).
pub(super) fn apply_failed(plan: &Plan, e: &ApplyError, failed: Reason) -> Report {
    match e {
        ApplyError::Locked(message) => pending(plan, Reason::Locked, message.clone()),
        ApplyError::Stale { .. } => pending(
            plan,
            Reason::PlanStale,
            "the table moved while applying; planning again".into(),
        ),
        ApplyError::Read(e) | ApplyError::Lock(e) if !e.is_permanent() => {
            let r = read_failed(e);
            pending(plan, r.reason, r.message)
        }
        other => pending(plan, failed, other.to_string()),
    }
}

/// Each step's number, title and status: the schemas' steps ran first, then the
/// tables' and the views', functions' and volumes' (a failed CREATE VIEW fails the
/// apply as a failed table step does: never Ready over an object that is not there).
pub(super) fn step_statuses(
    report: &ApplyReport,
) -> impl Iterator<Item = (usize, &String, &StepStatus)> {
    let schemas = report
        .schema_steps
        .iter()
        .map(|s| (s.number, &s.title, &s.status));
    let tables = report.steps.iter().map(|s| (s.number, &s.title, &s.status));
    let objects = report
        .object_steps
        .iter()
        .map(|s| (s.number, &s.title, &s.status));
    schemas.chain(tables).chain(objects)
}

/// The status of an apply whose every step ran: in sync, with the events of the
/// approval it spent and of the apply (`done`, or the steps applied).
pub(super) fn finished(
    plan: &Plan,
    report: &ApplyReport,
    last_applied: LastApplied,
    approval: Option<ApprovalStatus>,
    done: Option<(EventReason, String)>,
) -> Report {
    let mut r = Report {
        last_applied: Some(last_applied.clone()),
        approval: approval.clone(),
        ..Report::new(Reason::InSync, "the table matches the spec")
    };
    if report.is_empty() {
        // nothing ran: the plan was already true, or the table is gone
        return r;
    }
    if let Some(a) = &approval {
        r = r.note(
            false,
            EventReason::ApprovalConsumed,
            format!(
                "plan {} approved ({APPROVE}={}) and applied; that approval is spent and approves nothing again",
                plan.id, a.value
            ),
        );
    }
    let (reason, message) = done.unwrap_or_else(|| {
        (
            EventReason::ApplyFinished,
            format!(
                "plan {}: {} steps applied, {} already true; restore points: {}",
                plan.id,
                report.applied(),
                report.skipped(),
                last_applied.restore_points.join(", ")
            ),
        )
    });
    r.note(false, reason, message)
}

/// The approval an apply spent: the one in force named this plan, the plan
/// needed it (a destructive step, or any step under `policy: Manual`), and a
/// step that needed it ran. With the values spent before, newest first.
pub(super) fn spent(
    plan: &Plan,
    seen: &Seen,
    report: &ApplyReport,
    now: &str,
) -> Option<ApprovalStatus> {
    let value = seen.in_force().filter(|a| approves(a, &plan.id))?;
    if !matches!(
        gate(plan, seen.policy, None),
        Decision::NeedsApproval { .. }
    ) {
        return None;
    }
    let manual = seen.policy == Policy::Manual;
    let ran =
        report.steps.iter().any(|s| {
            s.status == StepStatus::Applied && (manual || s.class == RiskClass::Destructive)
        }) || (manual
            && report
                .schema_steps
                .iter()
                .any(|s| s.status == StepStatus::Applied));
    if !ran {
        return None;
    }
    let now = ApprovalStatus {
        plan_id: plan.id.to_string(),
        value: value.to_string(),
        state: ApprovalState::Spent,
        spent_at: now.to_string(),
        earlier: vec![],
    };
    Some(match seen.spent {
        Some(before) => before.then(now),
        None => now,
    })
}

/// An apply a shutdown cut short (the step running ended or was cancelled, no
/// further one started): Interrupted, which is Progressing, never Stalled. The
/// next operator re-plans and resumes; status.apply keeps where it stopped.
pub fn interrupted(r: Report, at: &ApplyStatus) -> Report {
    if r.reason == Reason::InSync {
        return r;
    }
    let message = format!(
        "interrupted by a shutdown {} of plan {}: {}{}; the next operator re-plans and resumes",
        at.current
            .as_ref()
            .map_or("before its first step".to_string(), |c| format!(
                "at step {c}"
            )),
        at.plan_id,
        r.message,
        if at.restore_points.is_empty() {
            String::new()
        } else {
            format!(" (restore points: {})", at.restore_points.join(", "))
        }
    );
    Report {
        reason: Reason::Interrupted,
        message,
        apply: Some(at.clone()),
        // what the apply noted is void: it did not end; the interruption is the outcome's Event
        events: vec![],
        ..r
    }
}

/// What an apply found cut short says when status.apply goes (the run is over:
/// resumed, or no longer needed): its restore points stay in lastApplied, before
/// the newer ones.
pub fn keep_restore_points(
    last: Option<LastApplied>,
    earlier: &ApplyStatus,
    now: &str,
) -> LastApplied {
    let mut last = last.unwrap_or_else(|| LastApplied {
        plan_id: earlier.plan_id.clone(),
        time: now.into(),
        // the steps before the one that was running ended
        steps_applied: (earlier.step - 1).max(0),
        restore_points: vec![],
        undo_windows: vec![],
    });
    let newer = std::mem::take(&mut last.restore_points);
    last.restore_points = earlier.restore_points.clone();
    for p in newer {
        if !last.restore_points.contains(&p) {
            last.restore_points.push(p);
        }
    }
    last
}

/// A step a shutdown left running past the grace: Interrupted, naming the
/// statements asked to cancel, which may still be running (a cancel's receipt
/// is no guarantee); the next operator waits for each to end first.
pub fn abandoned(at: &ApplyStatus, statements: Vec<String>) -> Report {
    let step = at
        .current
        .as_ref()
        .map_or("before its first step".to_string(), |c| {
            format!("at step {c}")
        });
    let running = if statements.is_empty() {
        String::new()
    } else {
        format!(
            "; asked to cancel, these statements may still be running: {} (the next operator waits for each to end before it runs anything on this table)",
            statements.join(", ")
        )
    };
    let message = format!(
        "interrupted {step} of plan {}: the step did not end (a shutdown's grace ran out, or its statement's state could not be read){running}; the next reconcile re-plans and resumes",
        at.plan_id
    );
    Report {
        apply: Some(ApplyStatus {
            statements,
            ..at.clone()
        }),
        ..Report::new(Reason::Interrupted, message)
    }
}

/// The statements of steps whose outcome is unknown (each may still be running).
pub fn still_running_steps(result: &Result<(Plan, ApplyReport), ApplyError>) -> Vec<String> {
    match result {
        Ok((_, report)) => report
            .steps
            .iter()
            .filter_map(|s| s.still_running.clone())
            .collect(),
        Err(_) => vec![],
    }
}

/// A statement an interrupted apply left is still running: nothing runs on the
/// table until it ends (it could still change the table).
pub fn still_running(at: &ApplyStatus, statement: &str, state: &str, table: &str) -> Report {
    Report {
        apply: Some(at.clone()),
        ..Report::new(
            Reason::Interrupted,
            format!(
                "statement {statement} of the interrupted apply of plan {} is still {state} on the warehouse; nothing runs on {table} until it ends",
                at.plan_id
            ),
        )
    }
}

/// Status for an apply found cut short by a process that ended (a kill, a lost
/// node): said before anything else runs on the table.
pub fn found_cut_short(at: &ApplyStatus) -> Report {
    let message = format!(
        "the apply of plan {} was cut short {} (the operator running it ended); planning again to resume",
        at.plan_id,
        at.current
            .as_ref()
            .map_or("before its first step".to_string(), |c| format!(
                "at step {c}"
            )),
    );
    // the status says it only until the resume moves on; its Event (the outcome's) stays
    Report {
        apply: Some(at.clone()),
        ..Report::new(Reason::Interrupted, message)
    }
}

/// `REPLACE TABLE (from itself)` of `2/3 REPLACE TABLE (from itself)`: a step told
/// apart from the others without its number, which a re-planned resume changes
/// (the steps already done are no longer in the plan).
pub fn step_title(current: &str) -> &str {
    match current.split_once(' ') {
        Some((number, title)) if number.contains('/') => title,
        _ => current,
    }
}

/// The interruptions a resumed apply carries into the step it starts: those of
/// the apply it resumes when that one died in a step of the same title (the same
/// step, re-planned), else none (a different step, or the step completed).
pub fn carried_interruptions(earlier: Option<&ApplyStatus>, starting: &str) -> i32 {
    earlier
        .filter(|e| {
            e.current
                .as_deref()
                .is_some_and(|c| step_title(c) == step_title(starting))
        })
        .map_or(0, |e| e.interruptions)
}

/// An apply found still `Applying`: the operator process running it ended (a
/// kill, out of memory, a lost node), unlike a shutdown, which hands off by
/// writing Interrupted. One more interruption of its step; at `max` in a row the
/// step is taken to be what ends the process, and the table is Stalled (CrashLoop)
/// rather than resumed into the same end again. `name` names the DeltaTable in
/// the retry it says.
pub fn process_ended(at: &ApplyStatus, max: u32, name: &str) -> Report {
    let at = ApplyStatus {
        interruptions: at.interruptions.saturating_add(1),
        ..at.clone()
    };
    if at.current.is_some() && at.interruptions as u32 >= max.max(1) {
        crash_loop(&at, name)
    } else {
        found_cut_short(&at)
    }
}

/// Stalled: the step in `at` ended the operator process `at.interruptions` times
/// in a row. status.apply stays (where it stopped, its restore points, the count).
pub fn crash_loop(at: &ApplyStatus, name: &str) -> Report {
    let step = at.current.as_deref().unwrap_or("before its first step");
    let restore = if at.restore_points.is_empty() {
        String::new()
    } else {
        format!(" (restore points: {})", at.restore_points.join(", "))
    };
    let message = format!(
        "step {step} of plan {} was cut short {} times in a row by the operator process ending (out of memory? killed?); it is not resumed again{restore}. Raise the operator's memory limit (the chart's resources.limits.memory), or move the table to a Spark Connect target; then, to try again: kubectl annotate deltatable {name} reconcile.fluxcd.io/requestedAt=\"$(date +%s)\" --overwrite (or change the spec)",
        at.plan_id, at.interruptions
    );
    Report {
        apply: Some(at.clone()),
        ..Report::new(Reason::CrashLoop, message)
    }
}

/// Whether a person asked to try again since the status was written: a new
/// `reconcile.fluxcd.io/requestedAt` (`requested`, against the `handled` one the
/// status echoes) or a changed spec (`generation` against `observed`).
pub fn retry_requested(
    requested: Option<&str>,
    handled: Option<&str>,
    generation: Option<i64>,
    observed: Option<i64>,
) -> bool {
    requested != handled || generation != observed
}
