//! What a reconcile does with a plan, decided without I/O: from the plan, the
//! resource's annotations and its previous status, either the status to write
//! (and the events to publish), or "apply". Both controllers (tables,
//! schemas' orphans) and deletes use it, and the gate is the one approval
//! check: the executor is then asked for exactly the plan id decided on.

use delta_operator_api::reason::Reason;
use delta_operator_api::spec::crd::{
    ApplyStatus, ApprovalState, ApprovalStatus, LastApplied, PlanStatus,
};
use delta_operator_backend::BackendError;
use delta_operator_backend::apply::{ApplyError, ApplyReport, StepStatus};
use delta_operator_core::plan::RiskClass;
use delta_operator_core::plan::gate::{Decision, Policy, approves, fresh_approval, gate};
use delta_operator_core::plan::render::text::{render, schema_step_lines, step_lines};
use delta_operator_core::plan::schema::SchemaOutcome;
use delta_operator_core::plan::{Outcome, Plan, RuleFailure};

use super::{APPROVE, PAUSED};

/// At most this many step lines go into status (the object stays far below etcd's limit).
const MAX_STATUS_STEPS: usize = 50;
/// The text rendering in status is cut at this size.
const MAX_STATUS_TEXT: usize = 16 * 1024;

/// An event to publish on the resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    pub warning: bool,
    pub reason: EventReason,
    pub message: String,
}

/// The reasons of the events the controllers publish.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventReason {
    DriftDetected,
    PlanCreated,
    ApprovalRequired,
    ApplyStarted,
    ApplyFinished,
    ApplyFailed,
    ApprovalConsumed,
    ApplyInterrupted,
    ApplyResumed,
    TableDropped,
    OrphansDropped,
}

impl std::fmt::Display for EventReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self:?}")
    }
}

/// What one reconcile found, before it is written.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    pub reason: Reason,
    pub message: String,
    /// The plan summary when the live table differs from the spec.
    pub drifted: Option<String>,
    pub plan: Option<PlanStatus>,
    /// The whole plan text, when status holds a cut of it (written to a ConfigMap).
    pub whole_plan: Option<String>,
    pub last_applied: Option<LastApplied>,
    /// status.apply: an apply cut short keeps it (where it stopped, its restore points).
    pub apply: Option<ApplyStatus>,
    /// status.approval when this apply spent an approval (with the earlier spent values).
    pub approval: Option<ApprovalStatus>,
    pub events: Vec<Note>,
}

impl Report {
    pub fn new(reason: Reason, message: impl Into<String>) -> Self {
        Report {
            reason,
            message: message.into(),
            drifted: None,
            plan: None,
            whole_plan: None,
            last_applied: None,
            apply: None,
            approval: None,
            events: vec![],
        }
    }

    fn note(mut self, warning: bool, reason: EventReason, message: String) -> Self {
        self.events.push(Note {
            warning,
            reason,
            message,
        });
        self
    }

    /// A plan needs a person's approval (the metrics' awaiting gauge).
    pub fn awaiting(&self) -> bool {
        self.reason.awaits_approval()
    }
}

/// What a resource says, beside its plan.
#[derive(Debug, Clone)]
pub struct Seen<'a> {
    /// `deltatable` or `deltaschema` (for the approve command).
    pub kind: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
    pub policy: Policy,
    /// The `delta-operator.io/approve` annotation.
    pub approval: Option<&'a str>,
    /// status.approval: the approvals already spent on this resource.
    pub spent: Option<&'a ApprovalStatus>,
    /// `delta-operator.io/paused: "true"`.
    pub paused: bool,
    /// The plan id in the previous status: events are published once per plan.
    pub previous_plan: Option<&'a str>,
    /// The previous status said in sync with this generation and nothing drifted:
    /// new drift then came from outside, and is announced.
    pub was_in_sync: bool,
    /// What the plan does, in words, before "needs approval" (the orphans dropped).
    pub context: Option<String>,
}

impl<'a> Seen<'a> {
    /// The annotation, unless its value was spent: an approval is spent once.
    pub fn in_force(&self) -> Option<&'a str> {
        self.approval.filter(|a| !self.is_spent(a))
    }

    /// Whether `value` already approved an apply of this resource.
    pub fn is_spent(&self, value: &str) -> bool {
        self.spent.is_some_and(|s| s.spent(value))
    }

    /// The annotations that steer a reconcile.
    pub fn annotations(
        annotations: &'a std::collections::BTreeMap<String, String>,
    ) -> (Option<&'a str>, bool) {
        (
            annotations.get(APPROVE).map(String::as_str),
            annotations.get(PAUSED).is_some_and(|v| v == "true"),
        )
    }
}

/// What to do next.
#[derive(Debug, Clone, PartialEq)]
#[allow(clippy::large_enum_variant)] // one per reconcile, moved once
pub enum Next {
    /// Write this status.
    Report(Report),
    /// Run the executor for exactly this plan (its id and the approval, if any);
    /// these events first.
    Apply { events: Vec<Note> },
}

pub fn approve_command(kind: &str, ns: &str, name: &str, id: &str) -> String {
    format!("kubectl annotate {kind} {name} -n {ns} {APPROVE}={id} --overwrite")
}

/// The plan as written into status.
pub fn plan_status(plan: &Plan, approve: Option<String>) -> PlanStatus {
    let schema_lines = plan.schemas.iter().flat_map(|s| {
        schema_step_lines(s)
            .into_iter()
            .map(move |l| format!("{} {l}", s.schema))
    });
    let mut steps: Vec<String> = schema_lines
        .chain(plan.tables.iter().flat_map(|t| {
            step_lines(t).into_iter().map(move |l| {
                if plan.tables.len() > 1 || !plan.schemas.is_empty() {
                    format!("{} {l}", t.table)
                } else {
                    l
                }
            })
        }))
        .collect();
    let omitted = steps.len().saturating_sub(MAX_STATUS_STEPS);
    steps.truncate(MAX_STATUS_STEPS);
    PlanStatus {
        id: plan.id.to_string(),
        summary: plan.summary.short(),
        risk: plan.risk().map(|r| r.to_string()),
        steps,
        steps_omitted: omitted as i32,
        approve_command: approve,
        approval: None,
        text: Some(cut_text(render(plan), MAX_STATUS_TEXT)),
    }
}

/// Cuts at a line boundary below `max` bytes and says so.
fn cut_text(text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let end = text[..end].rfind('\n').map_or(end, |i| i + 1);
    format!(
        "{}… cut at {} KiB: `kubectl delta plan NAME --full` prints the whole plan (the ConfigMap {})\n",
        &text[..end],
        max / 1024,
        WHOLE_PLAN_NAME
    )
}

/// How the ConfigMap holding a cut plan is named: `delta-plan.<kind>.<name>`.
pub const WHOLE_PLAN_NAME: &str = "delta-plan.<kind>.<name>";

/// The ConfigMap that holds a resource's whole plan when status holds a cut one.
pub fn whole_plan_configmap(kind: &str, name: &str) -> String {
    format!("delta-plan.{kind}.{name}")
}

/// The whole plan text when status can only hold a cut of it (a ConfigMap
/// holds at most 1 MiB: beyond that it is cut too, pointing at the CLI).
pub fn whole_plan(plan: &Plan) -> Option<String> {
    let text = render(plan);
    (text.len() > MAX_STATUS_TEXT).then(|| {
        if text.len() > MAX_WHOLE_PLAN {
            cut_whole(text)
        } else {
            text
        }
    })
}

/// What a ConfigMap's data may hold, with room for the key and metadata.
const MAX_WHOLE_PLAN: usize = 1000 * 1024;

fn cut_whole(text: String) -> String {
    let mut end = MAX_WHOLE_PLAN;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let end = text[..end].rfind('\n').map_or(end, |i| i + 1);
    format!(
        "{}… cut at {} KiB: `delta-operator plan -f <manifests>` prints the whole plan\n",
        &text[..end],
        MAX_WHOLE_PLAN / 1024
    )
}

/// The status, or "apply", for a freshly read plan.
pub fn decide(plan: &Plan, seen: &Seen) -> Next {
    let drifted = plan.has_changes().then(|| plan.summary.short());
    let new_plan = drifted.is_some() && seen.previous_plan != Some(plan.id.as_str());
    let mut events = Vec::new();
    if drifted.is_some() && seen.was_in_sync {
        events.push(Note {
            warning: false,
            reason: EventReason::DriftDetected,
            message: format!(
                "the live table differs from the spec: {}",
                plan.summary.short()
            ),
        });
    }
    if new_plan {
        let schema_steps = plan.schemas.iter().flat_map(schema_step_lines);
        let steps: Vec<String> = schema_steps
            .chain(plan.tables.iter().flat_map(step_lines))
            .collect();
        events.push(Note {
            warning: false,
            reason: EventReason::PlanCreated,
            message: format!(
                "plan {} ({}): {}",
                plan.id,
                plan.summary.short(),
                steps.join("; ")
            ),
        });
    }
    // the value that approves this plan: its id, or `<id>-<n>` once the id was spent
    let value = fresh_approval(plan.id.as_str(), |v| seen.is_spent(v));
    let cmd = approve_command(seen.kind, seen.namespace, seen.name, &value);
    let report = |reason: Reason, message: String, approve: bool| Report {
        reason,
        message,
        drifted: drifted.clone(),
        plan: Some(PlanStatus {
            approval: approve.then(|| value.clone()),
            ..plan_status(plan, approve.then(|| cmd.clone()))
        }),
        whole_plan: whole_plan(plan),
        last_applied: None,
        apply: None,
        approval: None,
        events: events.clone(),
    };
    let refused = |failures: &[RuleFailure]| {
        (
            failures
                .first()
                .map_or(Reason::InvalidSpec, |f| Reason::Refused(f.rule)),
            failures
                .iter()
                .map(|f| format!("{} ({}): {} — fix: {}", f.rule, f.subject, f.message, f.fix))
                .collect::<Vec<_>>()
                .join("; "),
        )
    };
    if let Some(SchemaOutcome::Rejected { failures }) = plan
        .schemas
        .iter()
        .map(|s| &s.outcome)
        .find(|o| matches!(o, SchemaOutcome::Rejected { .. }))
    {
        let (reason, message) = refused(failures);
        return Next::Report(report(reason, message, false));
    }
    if let Some(rejected) = plan.rejected().next() {
        let (reason, message) = match &rejected.outcome {
            Outcome::Rejected { failures } => refused(failures),
            Outcome::Blocked { by, .. } => (
                Reason::Blocked,
                format!(
                    "not planned: the tables it references were refused: {}",
                    by.iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ),
            Outcome::Accepted { .. } => (Reason::InvalidSpec, String::new()),
        };
        return Next::Report(report(reason, message, false));
    }
    if seen.paused {
        return Next::Report(report(
            Reason::Paused,
            format!("{PAUSED} is \"true\": no writes"),
            false,
        ));
    }
    match gate(plan, seen.policy, seen.in_force()) {
        Decision::NothingToDo => Next::Report(Report {
            events,
            ..Report::new(Reason::InSync, "the table matches the spec")
        }),
        Decision::Rejected => Next::Report(report(
            Reason::InvalidSpec,
            "the plan is refused by the safety rules".into(),
            false,
        )),
        Decision::Observe => {
            let mut r = report(
                Reason::Observing,
                "policy Observe: drift is shown, never applied".into(),
                false,
            );
            if new_plan && !seen.was_in_sync {
                r = r.note(
                    false,
                    EventReason::DriftDetected,
                    format!(
                        "observed drift {}; policy Observe never applies",
                        plan.summary.short()
                    ),
                );
            }
            Next::Report(r)
        }
        Decision::NeedsApproval { id, reason }
        | Decision::WrongApproval {
            id,
            approved: reason,
        } => {
            let what = seen
                .context
                .as_ref()
                .map_or(String::new(), |c| format!("{c}: "));
            let message = match seen.approval {
                Some(a) if approves(a, &id) && seen.is_spent(a) => {
                    let when = seen
                        .spent
                        .filter(|s| s.value == a)
                        .map_or(String::new(), |s| {
                            format!(" when plan {} was applied at {}", s.plan_id, s.spent_at)
                        });
                    format!(
                        "{what}plan {id} is planned again, but its approval {a} was spent{when}: an approval is spent once, so it waits for a new one ({reason}): {cmd}"
                    )
                }
                Some(a) if !approves(a, &id) => format!(
                    "{what}the annotation approves {a}, but the plan is now {id}; review it, then: {cmd}"
                ),
                _ => format!("{what}plan {id} needs approval ({reason}): {cmd}"),
            };
            let mut r = report(Reason::ApprovalRequired, message.clone(), true);
            if seen.previous_plan != Some(id.as_str()) {
                r = r.note(true, EventReason::ApprovalRequired, message);
            }
            Next::Report(r)
        }
        Decision::Apply => Next::Apply { events },
    }
}

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
    let pending = |reason: Reason, message: String| Report {
        drifted: Some(plan.summary.short()),
        plan: Some(plan_status(plan, None)),
        whole_plan: whole_plan(plan),
        ..Report::new(reason, message)
    };
    let report = match result {
        Ok((_, report)) => report,
        Err(ApplyError::Locked(message)) => return pending(Reason::Locked, message.clone()),
        Err(ApplyError::Stale { .. }) => {
            return pending(
                Reason::PlanStale,
                "the table moved while applying; planning again".into(),
            );
        }
        Err(ApplyError::Read(e) | ApplyError::Lock(e)) if !e.is_permanent() => {
            let r = read_failed(e);
            return pending(r.reason, r.message);
        }
        Err(e) => {
            return pending(failed, e.to_string()).note(
                true,
                EventReason::ApplyFailed,
                e.to_string(),
            );
        }
    };
    let last_applied = LastApplied {
        plan_id: plan.id.to_string(),
        time: now.into(),
        steps_applied: report.applied() as i32,
        restore_points: report.restore_points(),
    };
    let approval = spent(plan, seen, report, now);
    // the schemas' steps ran first, then the tables'
    let statuses = || {
        let schemas = report
            .schema_steps
            .iter()
            .map(|s| (s.number, &s.title, &s.status));
        schemas.chain(report.steps.iter().map(|s| (s.number, &s.title, &s.status)))
    };
    if let Some(failure) = statuses().find_map(|(number, title, status)| match status {
        StepStatus::Failed { error } => Some(format!("step {number} {title} failed: {error}")),
        _ => None,
    }) {
        return Report {
            last_applied: Some(last_applied),
            approval,
            ..pending(failed, failure.clone())
        }
        .note(true, EventReason::ApplyFailed, failure);
    }
    if !report.locked.is_empty() {
        // another apply held some tables: the others went on, these wait for it
        let by: Vec<&str> = report.locked.iter().map(|l| l.by.as_str()).collect();
        return Report {
            last_applied: Some(last_applied),
            ..pending(Reason::Locked, by.join("; "))
        };
    }
    if statuses().any(|(_, _, status)| *status == StepStatus::NotRun) {
        return Report {
            last_applied: Some(last_applied),
            approval,
            ..pending(
                Reason::LeaseLost,
                "the apply lock was lost; the rest runs in the next reconcile".into(),
            )
        };
    }
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
fn spent(plan: &Plan, seen: &Seen, report: &ApplyReport, now: &str) -> Option<ApprovalStatus> {
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
        message: message.clone(),
        apply: Some(at.clone()),
        events: vec![Note {
            warning: true,
            reason: EventReason::ApplyInterrupted,
            message,
        }],
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
        events: vec![Note {
            warning: true,
            reason: EventReason::ApplyInterrupted,
            message: message.clone(),
        }],
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
    // the status says it only until the resume moves on; the event stays
    Report {
        apply: Some(at.clone()),
        events: vec![Note {
            warning: true,
            reason: EventReason::ApplyInterrupted,
            message: message.clone(),
        }],
        ..Report::new(Reason::Interrupted, message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use delta_operator_backend::apply::StepReport;
    use std::collections::BTreeMap;

    fn cut_short() -> ApplyStatus {
        ApplyStatus {
            plan_id: "p1".into(),
            started_at: "t0".into(),
            step: 2,
            of: 3,
            current: Some("2/3 REPLACE TABLE (from staging)".into()),
            step_started_at: Some("t1".into()),
            restore_points: vec!["main.sales.orders@4".into()],
            statements: vec![],
        }
    }

    #[test]
    fn a_step_left_at_shutdown_names_what_may_still_run() {
        let r = abandoned(&cut_short(), vec!["01ef-stmt".into()]);
        assert_eq!(r.reason, Reason::Interrupted);
        assert!(
            r.message.contains("01ef-stmt") && r.message.contains("may still be running"),
            "{}",
            r.message
        );
        assert_eq!(
            r.apply.as_ref().unwrap().statements,
            vec!["01ef-stmt".to_string()]
        );
        let w = still_running(&cut_short(), "01ef-stmt", "RUNNING", "main.sales.orders");
        assert_eq!(w.reason, Reason::Interrupted);
        assert!(
            w.message.contains("still RUNNING")
                && w.message.contains("nothing runs on main.sales.orders"),
            "{}",
            w.message
        );
    }

    #[test]
    fn a_shutdown_mid_apply_is_interrupted_not_failed_and_says_where() {
        let failed = Report::new(Reason::ApplyFailed, "step 2 failed: statement cancelled");
        let r = interrupted(failed, &cut_short());
        assert_eq!(r.reason, Reason::Interrupted);
        assert_eq!(
            r.reason.phase(),
            delta_operator_api::reason::Phase::Progressing
        );
        assert!(
            r.message
                .contains("at step 2/3 REPLACE TABLE (from staging) of plan p1")
                && r.message.contains("main.sales.orders@4"),
            "{}",
            r.message
        );
        assert_eq!(r.apply, Some(cut_short()));
        // an apply that finished before the shutdown took hold is simply done
        let done = interrupted(Report::new(Reason::InSync, "ok"), &cut_short());
        assert_eq!(done.reason, Reason::InSync);
    }

    #[test]
    fn restore_points_of_an_apply_cut_short_stay_in_last_applied() {
        let last = keep_restore_points(None, &cut_short(), "t9");
        assert_eq!(last.restore_points, vec!["main.sales.orders@4".to_string()]);
        assert_eq!(last.steps_applied, 1);
        let newer = LastApplied {
            plan_id: "p2".into(),
            time: "t9".into(),
            steps_applied: 1,
            restore_points: vec!["main.sales.orders@6".into(), "main.sales.orders@4".into()],
        };
        let last = keep_restore_points(Some(newer), &cut_short(), "t9");
        assert_eq!(last.plan_id, "p2");
        assert_eq!(
            last.restore_points,
            vec![
                "main.sales.orders@4".to_string(),
                "main.sales.orders@6".to_string()
            ]
        );
    }

    use delta_operator_core::model::{
        DataType, DesiredColumn, DesiredTable, OWNER_PROPERTY, ObservedColumn, ObservedTable,
        TableRef,
    };
    use delta_operator_core::plan::{Capabilities, plan};

    fn caps() -> Capabilities {
        Capabilities::lake()
    }

    fn desired(columns: &[&str]) -> DesiredTable {
        DesiredTable::new(
            TableRef::new("main", "sales", "orders"),
            "team/orders",
            columns
                .iter()
                .map(|c| DesiredColumn::new(c, DataType::Long, true))
                .collect(),
        )
    }

    fn observed(columns: &[&str]) -> ObservedTable {
        ObservedTable {
            properties: BTreeMap::from([(OWNER_PROPERTY.to_string(), "team/orders".to_string())]),
            version: Some(3),
            ..ObservedTable::new(
                TableRef::new("main", "sales", "orders"),
                columns
                    .iter()
                    .map(|c| ObservedColumn::new(c, DataType::Long, true))
                    .collect(),
            )
        }
    }

    fn seen<'a>() -> Seen<'a> {
        Seen {
            kind: "deltatable",
            namespace: "team",
            name: "orders",
            policy: Policy::Auto,
            approval: None,
            spent: None,
            paused: false,
            previous_plan: None,
            was_in_sync: false,
            context: None,
        }
    }

    fn report(next: Next) -> Report {
        match next {
            Next::Report(r) => r,
            Next::Apply { .. } => panic!("expected a status, got apply"),
        }
    }

    #[test]
    fn a_matching_table_is_in_sync_and_announces_nothing() {
        let p = plan(&[desired(&["id"])], &[observed(&["id"])], &[], &caps());
        let r = report(decide(&p, &seen()));
        assert_eq!(r.reason, Reason::InSync);
        assert!(r.events.is_empty() && r.drifted.is_none() && r.plan.is_none());
    }

    #[test]
    fn an_additive_change_is_applied_and_a_destructive_one_waits_for_its_id() {
        let add = plan(
            &[desired(&["id", "note"])],
            &[observed(&["id"])],
            &[],
            &caps(),
        );
        match decide(&add, &seen()) {
            Next::Apply { events } => {
                assert_eq!(events.len(), 1);
                assert_eq!(events[0].reason, EventReason::PlanCreated);
            }
            other => panic!("expected apply, got {other:?}"),
        }
        let drop = plan(
            &[desired(&["id"])],
            &[observed(&["id", "note"])],
            &[],
            &caps(),
        );
        let r = report(decide(&drop, &seen()));
        assert_eq!(r.reason, Reason::ApprovalRequired);
        assert!(r.awaiting());
        let cmd = r
            .plan
            .as_ref()
            .and_then(|p| p.approve_command.clone())
            .unwrap();
        assert!(cmd.ends_with(&format!(
            "delta-operator.io/approve={} --overwrite",
            drop.id
        )));
        assert!(
            r.events
                .iter()
                .any(|e| e.warning && e.reason == EventReason::ApprovalRequired)
        );
        // the same plan seen again: no second event
        let again = Seen {
            previous_plan: Some(drop.id.as_str()),
            ..seen()
        };
        assert!(report(decide(&drop, &again)).events.is_empty());
        // another plan's approval approves nothing, and says which plan is current
        let wrong = Seen {
            approval: Some("0000000000000000"),
            ..seen()
        };
        let r = report(decide(&drop, &wrong));
        assert_eq!(r.reason, Reason::ApprovalRequired);
        assert!(
            r.message
                .contains("approves 0000000000000000, but the plan is now"),
            "{}",
            r.message
        );
        let right = Seen {
            approval: Some(drop.id.as_str()),
            ..seen()
        };
        assert!(matches!(decide(&drop, &right), Next::Apply { .. }));
    }

    /// What the executor reports after running every step of `p`.
    fn ran_all(p: &Plan) -> Result<(Plan, ApplyReport), ApplyError> {
        let steps = p
            .tables
            .iter()
            .flat_map(|t| {
                t.steps().iter().map(|st| StepReport {
                    table: t.table.clone(),
                    number: st.number,
                    title: st.action.title(),
                    class: st.class,
                    status: StepStatus::Applied,
                    restore_point: Some(3),
                    detail: None,
                    still_running: None,
                })
            })
            .collect();
        Ok((
            p.clone(),
            ApplyReport {
                plan_id: p.id.clone(),
                steps,
                schema_steps: vec![],
                locked: vec![],
                tables: vec![],
            },
        ))
    }

    #[test]
    fn an_approval_is_spent_once_and_the_same_plan_again_waits_for_a_new_one() {
        let drop = plan(
            &[desired(&["id"])],
            &[observed(&["id", "note"])],
            &[],
            &caps(),
        );
        let id = drop.id.to_string();
        let approved = Seen {
            approval: Some(id.as_str()),
            ..seen()
        };
        assert!(matches!(decide(&drop, &approved), Next::Apply { .. }));
        let done = applied(
            &drop,
            &approved,
            &ran_all(&drop),
            "t1",
            None,
            Reason::ApplyFailed,
        );
        assert_eq!(done.reason, Reason::InSync);
        let spent = done
            .approval
            .clone()
            .expect("the apply spends the approval");
        assert_eq!(
            (spent.plan_id.as_str(), spent.value.as_str(), spent.state),
            (id.as_str(), id.as_str(), ApprovalState::Spent)
        );
        assert_eq!(spent.spent_at, "t1");
        assert!(
            done.events
                .iter()
                .any(|e| e.reason == EventReason::ApprovalConsumed && e.message.contains("spent"))
        );

        // the table was restored: the same plan, the same id, the annotation still there
        let again = Seen {
            approval: Some(id.as_str()),
            spent: Some(&spent),
            previous_plan: None,
            ..seen()
        };
        let r = report(decide(&drop, &again));
        assert_eq!(r.reason, Reason::ApprovalRequired, "{}", r.message);
        assert!(
            r.message.contains(&format!(
                "its approval {id} was spent when plan {id} was applied at t1"
            )),
            "{}",
            r.message
        );
        let status = r.plan.as_ref().unwrap();
        let fresh = format!("{id}-2");
        assert_eq!(status.approval.as_deref(), Some(fresh.as_str()));
        assert!(
            status.approve_command.as_deref().is_some_and(
                |c| c.ends_with(&format!("delta-operator.io/approve={fresh} --overwrite"))
            ),
            "{status:?}"
        );
        assert!(
            r.events
                .iter()
                .any(|e| e.warning && e.reason == EventReason::ApprovalRequired)
        );

        // a new approval runs it, and is spent in turn, remembering the first
        let renewed = Seen {
            approval: Some(fresh.as_str()),
            ..again.clone()
        };
        assert!(matches!(decide(&drop, &renewed), Next::Apply { .. }));
        let done = applied(
            &drop,
            &renewed,
            &ran_all(&drop),
            "t2",
            None,
            Reason::ApplyFailed,
        );
        let spent2 = done.approval.expect("spent again");
        assert_eq!(spent2.value, fresh);
        assert_eq!(spent2.earlier, vec![id.clone()]);
        // Git putting the first value back approves nothing either
        let reverted = Seen {
            approval: Some(id.as_str()),
            spent: Some(&spent2),
            ..seen()
        };
        let r = report(decide(&drop, &reverted));
        assert_eq!(r.reason, Reason::ApprovalRequired);
        assert_eq!(r.plan.unwrap().approval, Some(format!("{id}-3")));
    }

    #[test]
    fn an_approval_is_not_spent_by_an_apply_that_needed_none_or_ran_no_destructive_step() {
        let add = plan(
            &[desired(&["id", "note"])],
            &[observed(&["id"])],
            &[],
            &caps(),
        );
        // an annotation naming an additive plan: nothing needed approving, nothing is spent
        let with = Seen {
            approval: Some(add.id.as_str()),
            ..seen()
        };
        let r = applied(&add, &with, &ran_all(&add), "t", None, Reason::ApplyFailed);
        assert_eq!(r.approval, None);
        // a destructive plan whose step did not run (already true): not spent
        let drop = plan(
            &[desired(&["id"])],
            &[observed(&["id", "note"])],
            &[],
            &caps(),
        );
        let approved = Seen {
            approval: Some(drop.id.as_str()),
            ..seen()
        };
        let mut skipped = ran_all(&drop);
        if let Ok((_, report)) = &mut skipped {
            for s in &mut report.steps {
                s.status = StepStatus::Skipped;
            }
        }
        let r = applied(&drop, &approved, &skipped, "t", None, Reason::ApplyFailed);
        assert_eq!(r.approval, None);
        // Manual: any step that ran spends it
        let manual = Seen {
            policy: Policy::Manual,
            approval: Some(add.id.as_str()),
            ..seen()
        };
        let r = applied(
            &add,
            &manual,
            &ran_all(&add),
            "t",
            None,
            Reason::ApplyFailed,
        );
        assert_eq!(r.approval.map(|a| a.value), Some(add.id.to_string()));
    }

    #[test]
    fn paused_and_observe_never_apply() {
        let add = plan(
            &[desired(&["id", "note"])],
            &[observed(&["id"])],
            &[],
            &caps(),
        );
        let paused = Seen {
            paused: true,
            ..seen()
        };
        let r = report(decide(&add, &paused));
        assert_eq!(r.reason, Reason::Paused);
        assert_eq!(r.drifted.as_deref(), Some("+0 ~1 -0"));
        let observe = Seen {
            policy: Policy::Observe,
            ..seen()
        };
        let r = report(decide(&add, &observe));
        assert_eq!(r.reason, Reason::Observing);
        assert!(r.plan.is_some());
    }

    #[test]
    fn drift_after_being_in_sync_is_announced() {
        let add = plan(
            &[desired(&["id", "note"])],
            &[observed(&["id"])],
            &[],
            &caps(),
        );
        let was = Seen {
            was_in_sync: true,
            paused: true,
            ..seen()
        };
        let r = report(decide(&add, &was));
        assert_eq!(r.events[0].reason, EventReason::DriftDetected);
    }

    #[test]
    fn a_transient_read_failure_is_retried_and_a_failed_step_stalls() {
        let add = plan(
            &[desired(&["id", "note"])],
            &[observed(&["id"])],
            &[],
            &caps(),
        );
        let transient = Err(ApplyError::Read(BackendError::Transient(
            "connection reset".into(),
        )));
        let r = applied(&add, &seen(), &transient, "t", None, Reason::ApplyFailed);
        assert_eq!(r.reason, Reason::ReadRetrying);
        let refused = Err(ApplyError::Read(
            delta_operator_backend::BackendError::Config("no root".into()),
        ));
        let r = applied(&add, &seen(), &refused, "t", None, Reason::ApplyFailed);
        assert_eq!(r.reason, Reason::ApplyFailed);
        assert_eq!(r.events[0].reason, EventReason::ApplyFailed);
    }

    #[test]
    fn long_plan_text_is_cut_at_a_line_and_says_so() {
        let text: String = (0..100).map(|i| format!("line {i} é\n")).collect();
        let cut = cut_text(text.clone(), 100);
        assert!(cut.len() < 300, "{cut}");
        assert!(cut.starts_with("line 0 é\nline 1 é\n"));
        assert!(
            cut.ends_with("`kubectl delta plan NAME --full` prints the whole plan (the ConfigMap delta-plan.<kind>.<name>)\n"),
            "{cut}"
        );
        assert!(
            cut.lines()
                .filter(|l| l.starts_with("line "))
                .all(|l| l.ends_with('é')),
            "{cut}"
        );
        assert_eq!(cut_text("short\n".into(), 100), "short\n");
    }
}
