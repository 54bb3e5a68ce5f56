//! What a reconcile does with a plan, decided without I/O: from the plan, the
//! resource's annotations and its previous status, either the status to write
//! (and the events to publish), or "apply". Both controllers (tables,
//! schemas' orphans) and deletes use it, and the gate is the one approval
//! check: the executor is then asked for exactly the plan id decided on.
//!
//! mod.rs decides on a freshly read plan (`decide`); status.rs is the plan as
//! status shows it; applied.rs the status after an apply ran, was cut short or
//! was abandoned.

mod applied;
mod status;
#[cfg(test)]
mod tests;
pub mod windows;

pub use applied::{
    abandoned, applied, apply_started, carried_interruptions, crash_loop, found_cut_short,
    interrupted, keep_restore_points, process_ended, read_failed, retry_requested, step_title,
    still_running, still_running_steps,
};
pub use status::{WHOLE_PLAN_NAME, approve_command, plan_status, whole_plan, whole_plan_configmap};

use delta_operator_api::reason::Reason;
use delta_operator_api::spec::crd::{
    ApplyStatus, ApprovalStatus, DriftPolicy, LastApplied, MaintenanceStatus, PlanStatus,
};
use delta_operator_core::plan::gate::{Decision, Policy, approves, fresh_approval, gate};
use delta_operator_core::plan::render::text::{schema_step_lines, step_lines};
use delta_operator_core::plan::schema::SchemaOutcome;
use delta_operator_core::plan::{ObjectOutcome, Outcome, Plan, RuleFailure};

use crate::metrics::{MaintenanceKind, RunOutcome};
use crate::{APPROVE, PAUSED};

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

/// The reasons of the events a decision publishes beside its outcome: what
/// happened. An unhappy outcome's own Event (ApprovalRequired, ApplyFailed,
/// ApplyInterrupted, …) is named by its condition reason, from the report's
/// reason and message (`Context::announce`), never noted here as well.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventReason {
    DriftDetected,
    PlanCreated,
    ApplyStarted,
    ApplyFinished,
    ApprovalConsumed,
    ApplyResumed,
    TableDropped,
    /// A view, function or volume dropped (deletionPolicy Delete).
    ObjectDropped,
    OrphansDropped,
    /// A maintenance step (compaction, vacuum, checkpoint) ran: its outcome.
    MaintenanceRan,
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
    /// status.maintenance when maintenance steps ran in this reconcile.
    pub maintenance: Option<MaintenanceStatus>,
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
            maintenance: None,
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
    /// `spec.driftPolicy` (a table's own, else its schema's): under `Fail`,
    /// drift that is not being applied makes the resource degraded.
    pub drift_policy: DriftPolicy,
    /// The `delta-operator.io/approve` annotation.
    pub approval: Option<&'a str>,
    /// status.approval: the approvals already spent on this resource.
    pub spent: Option<&'a ApprovalStatus>,
    /// `delta-operator.io/paused: "true"`.
    pub paused: bool,
    /// The plan id in the previous status: a plan's PlanCreated is published once.
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

/// The status, or "apply", for a freshly read plan.
pub fn decide(plan: &Plan, seen: &Seen) -> Next {
    // drift is a difference from the spec: maintenance due alone is upkeep, not drift
    let drifted = crate::maintenance::spec_drift(plan).then(|| plan.summary.short());
    let new_plan = plan.has_changes() && seen.previous_plan != Some(plan.id.as_str());
    let events = plan_events(plan, seen, drifted.is_some(), new_plan);
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
        maintenance: None,
        events: events.clone(),
    };
    if let Some((reason, message)) = refusal(plan) {
        return Next::Report(report(reason, message, false));
    }
    // a narrow-scope table not made yet: waited for, whatever else the plan holds
    if plan.summary.steps == 0
        && let Some(Outcome::Deferred { why }) = plan.deferred().next().map(|t| &t.outcome)
    {
        return Next::Report(Report::new(Reason::Deferred, why.clone()));
    }
    // driftPolicy Fail: drift held back (a pause, policy Observe, an approval awaited)
    // degrades the resource; an approval of the plan acknowledges a drift that is never applied
    let acknowledged = seen.in_force().is_some_and(|a| approves(a, &plan.id));
    let fails = seen.drift_policy == DriftPolicy::Fail && drifted.is_some();
    let fail = |why: String| {
        let live = if seen.kind == "deltaschema" {
            "schema"
        } else {
            "table"
        };
        report(
            Reason::DriftDetected,
            format!(
                "driftPolicy Fail: the live {live} differs from the spec ({}) and {why}",
                plan.summary.short()
            ),
            true,
        )
    };
    if seen.paused {
        if fails && !acknowledged {
            return Next::Report(fail(format!(
                "writes are paused ({PAUSED}); to acknowledge the drift, approve plan {}: {cmd}",
                plan.id
            )));
        }
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
            let mut r = if fails && !acknowledged {
                fail(format!(
                    "policy Observe never applies it; to acknowledge the drift, approve plan {}: {cmd}",
                    plan.id
                ))
            } else if drifted.is_none() {
                report(
                    Reason::Observing,
                    "policy Observe: the maintenance due is shown, never run".into(),
                    false,
                )
            } else {
                report(
                    Reason::Observing,
                    "policy Observe: drift is shown, never applied".into(),
                    false,
                )
            };
            if new_plan && drifted.is_some() && !seen.was_in_sync {
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
            // its Event and log line are the outcome's (`Context::announce`), said once per message
            let message = approval_message(seen, &id, &reason, &cmd);
            if fails {
                return Next::Report(fail(format!("its plan is not applied: {message}")));
            }
            Next::Report(report(Reason::ApprovalRequired, message, true))
        }
        Decision::Apply => Next::Apply { events },
    }
}

/// The event of one maintenance step that ran in plan `plan_id` (a Warning when it failed).
pub fn maintenance_note(r: &crate::maintenance::Ran, plan_id: &str) -> Note {
    let what = match r.kind {
        MaintenanceKind::Compact => "compaction",
        MaintenanceKind::Vacuum => "vacuum",
        MaintenanceKind::Checkpoint => "checkpoint",
    };
    let (warning, how) = match r.outcome {
        RunOutcome::Ok => (false, "ran"),
        RunOutcome::Failed => (true, "failed"),
    };
    Note {
        warning,
        reason: EventReason::MaintenanceRan,
        message: format!("{what} {how} (plan {plan_id}): {}", r.message),
    }
}

/// The events a freshly read plan publishes: drift where the table was in sync,
/// and the plan's steps when the plan is new.
fn plan_events(plan: &Plan, seen: &Seen, drifted: bool, new_plan: bool) -> Vec<Note> {
    let mut events = Vec::new();
    if drifted && seen.was_in_sync {
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
    events
}

/// The reason and message when the plan refuses a schema, a table or a view,
/// function or volume (in that order), or None when nothing is refused.
fn refusal(plan: &Plan) -> Option<(Reason, String)> {
    if let Some(SchemaOutcome::Rejected { failures }) = plan
        .schemas
        .iter()
        .map(|s| &s.outcome)
        .find(|o| matches!(o, SchemaOutcome::Rejected { .. }))
    {
        return Some(refused(failures));
    }
    let Some(rejected) = plan.rejected().next() else {
        return object_refusal(plan);
    };
    Some(match &rejected.outcome {
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
        Outcome::Accepted { .. } | Outcome::Deferred { .. } => (Reason::InvalidSpec, String::new()),
    })
}

/// The first view, function or volume the plan refuses: by its rules (on a
/// target without a metastore, `NotSupportedByBackend`), or blocked by what
/// it depends on.
fn object_refusal(plan: &Plan) -> Option<(Reason, String)> {
    let rejected = plan.rejected_objects().next()?;
    Some(match &rejected.outcome {
        ObjectOutcome::Rejected { failures } => refused(failures),
        ObjectOutcome::Blocked { by, .. } => (
            Reason::Blocked,
            format!(
                "not planned: what it depends on was refused or is blocked: {}",
                by.join(", ")
            ),
        ),
        ObjectOutcome::Accepted { .. } => (Reason::InvalidSpec, String::new()),
    })
}

/// The reason (the first rule broken) and the message (every failure with its fix).
fn refused(failures: &[RuleFailure]) -> (Reason, String) {
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
}

/// What status says of a plan that waits for approval: why, and the command
/// that approves it (`cmd`), told apart for a spent approval and one naming
/// another plan.
fn approval_message(seen: &Seen, id: &str, reason: &str, cmd: &str) -> String {
    let what = seen
        .context
        .as_ref()
        .map_or(String::new(), |c| format!("{c}: "));
    match seen.approval {
        Some(a) if approves(a, id) && seen.is_spent(a) => {
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
        Some(a) if !approves(a, id) => format!(
            "{what}the annotation approves {a}, but the plan is now {id}; review it, then: {cmd}"
        ),
        _ => format!("{what}plan {id} needs approval ({reason}): {cmd}"),
    }
}
