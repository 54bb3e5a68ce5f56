//! Maintenance in the controller: which steps of a plan are maintenance
//! (compaction, vacuum, checkpoint), how each run ended (the metrics and
//! status.maintenance), when the next scheduled one is due (the requeue), and
//! which have waited too long (`delta_operator_maintenance_overdue`). Pure:
//! the time is an input, so every rule here is unit-tested.
//!
//! Maintenance is not drift: a plan that holds only maintenance steps leaves
//! the table "in sync with its spec" (no Drifted condition, no DriftDetected
//! under `driftPolicy: Fail`); its steps still wait for an approval under
//! policy Manual and never run under Observe, like any step of their class.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use delta_operator_api::spec::crd::{MaintenanceRun, MaintenanceRunOutcome, MaintenanceStatus};
use delta_operator_backend::apply::{ApplyReport, StepStatus};
use delta_operator_core::model::maintenance::{DAY_MS, Maintenance, TableHealth};
use delta_operator_core::plan::Plan;
use delta_operator_core::plan::steps::{Action, RiskClass};

use crate::metrics::{MaintenanceKind, RunOutcome};

/// A table is reconciled at the latest this long after a schedule comes due,
/// whatever the drift interval: no sooner than this after the last reconcile.
pub const MIN_REQUEUE: Duration = Duration::from_secs(30);

/// The maintenance kind of a step's action, if it is maintenance.
pub fn kind_of(action: &Action) -> Option<MaintenanceKind> {
    match action {
        Action::Compact { .. } => Some(MaintenanceKind::Compact),
        Action::Vacuum { .. } => Some(MaintenanceKind::Vacuum),
        Action::Checkpoint => Some(MaintenanceKind::Checkpoint),
        _ => None,
    }
}

/// Whether the plan differs from the spec: a step that is not maintenance,
/// or a refusal. Maintenance alone is upkeep, not drift.
pub fn spec_drift(plan: &Plan) -> bool {
    plan.summary.rejected > 0 || plan.summary.steps > plan.summary.maintenance
}

/// The maintenance steps `plan` holds, each with how long it may wait
/// (planned and not run) before it is overdue: its schedule's interval,
/// else a day (a threshold alone).
pub fn planned(plan: &Plan) -> Vec<(MaintenanceKind, Duration)> {
    let mut out = Vec::new();
    for t in &plan.tables {
        let m = t.desired.as_ref().and_then(|d| d.maintenance.as_ref());
        for s in t.steps() {
            if s.class != RiskClass::Maintenance {
                continue;
            }
            let Some(kind) = kind_of(&s.action) else {
                continue;
            };
            out.push((kind, patience(m, kind)));
        }
    }
    out
}

/// How long a due `kind` may wait before it is overdue.
fn patience(m: Option<&Maintenance>, kind: MaintenanceKind) -> Duration {
    let every = m.and_then(|m| match kind {
        MaintenanceKind::Compact => m.compaction.as_ref().and_then(|c| c.every_ms),
        MaintenanceKind::Vacuum => m.vacuum.as_ref().map(|v| v.every_ms),
        MaintenanceKind::Checkpoint => None,
    });
    Duration::from_millis(every.unwrap_or(DAY_MS as u64))
}

/// One maintenance step that ran: its kind, how it ended, what it said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ran {
    pub kind: MaintenanceKind,
    pub outcome: RunOutcome,
    pub message: String,
}

/// The maintenance steps of `plan` the executor ran (applied or failed;
/// neither skipped nor left unrun), found by table and step number.
pub fn ran(plan: &Plan, report: &ApplyReport) -> Vec<Ran> {
    let mut out = Vec::new();
    for r in &report.steps {
        if r.class != RiskClass::Maintenance {
            continue;
        }
        let step = plan
            .tables
            .iter()
            .filter(|t| t.table == r.table)
            .flat_map(|t| t.steps())
            .find(|s| s.number == r.number);
        let Some(kind) = step.and_then(|s| kind_of(&s.action)) else {
            continue;
        };
        let (outcome, message) = match &r.status {
            StepStatus::Applied => (
                RunOutcome::Ok,
                r.detail.clone().unwrap_or_else(|| r.title.clone()),
            ),
            StepStatus::Failed { error } => (RunOutcome::Failed, error.clone()),
            StepStatus::Skipped | StepStatus::NotRun => continue,
        };
        out.push(Ran {
            kind,
            outcome,
            message,
        });
    }
    out
}

/// status.maintenance after `runs` ended at `now` (RFC 3339) in plan `plan_id`:
/// each kind's last run replaced, the others kept from `previous`.
pub fn status_after(
    previous: Option<MaintenanceStatus>,
    runs: &[Ran],
    plan_id: &str,
    now: &str,
) -> Option<MaintenanceStatus> {
    if runs.is_empty() {
        return previous;
    }
    let mut s = previous.unwrap_or_default();
    for r in runs {
        let run = Some(MaintenanceRun {
            time: now.to_string(),
            outcome: match r.outcome {
                RunOutcome::Ok => MaintenanceRunOutcome::Succeeded,
                RunOutcome::Failed => MaintenanceRunOutcome::Failed,
            },
            plan_id: plan_id.to_string(),
            message: r.message.chars().take(1024).collect(),
        });
        match r.kind {
            MaintenanceKind::Compact => s.compaction = run,
            MaintenanceKind::Vacuum => s.vacuum = run,
            MaintenanceKind::Checkpoint => s.checkpoint = run,
        }
    }
    Some(s)
}

/// When the next scheduled maintenance comes due after `now_ms` (epoch
/// milliseconds): the earliest `every:` deadline counted from the last run
/// the backend read, or from now for a kind that ran now (`ran_now`). A
/// schedule already due was planned by this very reconcile (it runs, or
/// waits for an approval, a retry, the end of a pause): not scheduled again.
/// Thresholds (small files, versions since a checkpoint) are not scheduled:
/// the drift pass measures them.
pub fn next_due_ms(
    m: &Maintenance,
    h: &TableHealth,
    now_ms: i64,
    ran_now: &[MaintenanceKind],
) -> Option<i64> {
    let deadline = |kind: MaintenanceKind, last: Option<i64>, every: u64| {
        let every = i64::try_from(every).unwrap_or(i64::MAX);
        let last = if ran_now.contains(&kind) {
            Some(now_ms)
        } else {
            last
        };
        last.map(|l| l.saturating_add(every))
            .filter(|d| *d > now_ms)
    };
    let compaction = m
        .compaction
        .as_ref()
        .and_then(|c| c.every_ms)
        .and_then(|e| deadline(MaintenanceKind::Compact, h.last_compaction_ms, e));
    let vacuum = m
        .vacuum
        .as_ref()
        .and_then(|v| deadline(MaintenanceKind::Vacuum, h.last_vacuum_ms, v.every_ms));
    compaction.into_iter().chain(vacuum).min()
}

/// The next due time of the tables `plan` read, if they declare a schedule.
pub fn plan_next_due_ms(plan: &Plan, now_ms: i64, ran: &[Ran]) -> Option<i64> {
    let ran_now: Vec<MaintenanceKind> = ran
        .iter()
        .filter(|r| r.outcome == RunOutcome::Ok)
        .map(|r| r.kind)
        .collect();
    plan.tables
        .iter()
        .filter_map(|t| {
            let m = t.desired.as_ref()?.maintenance.as_ref()?;
            let h = t.observed.as_ref()?.health.as_ref()?;
            next_due_ms(m, h, now_ms, &ran_now)
        })
        .min()
}

/// How long until the table is reconciled again: the drift pass (`settled`),
/// or sooner when a schedule comes due first (never sooner than
/// [`MIN_REQUEUE`]).
pub fn requeue_after(settled: Duration, due_ms: Option<i64>, now_ms: i64) -> Duration {
    let Some(due) = due_ms else {
        return settled;
    };
    let wait = Duration::from_millis(u64::try_from(due.saturating_sub(now_ms)).unwrap_or(0));
    wait.max(MIN_REQUEUE).min(settled)
}

/// Since when each resource's maintenance kinds have been planned and not
/// run, as this process saw it (`Kind/ns/name`).
#[derive(Debug, Default)]
pub struct Watch {
    since: Mutex<BTreeMap<String, BTreeMap<MaintenanceKind, i64>>>,
}

impl Watch {
    /// A reconcile of `key` at `now_ms` planned `planned` and ran `ran`.
    /// Whether any planned kind has now waited longer than its patience:
    /// a kind that ran well, or is no longer due, starts again.
    pub fn observe(
        &self,
        key: &str,
        planned: &[(MaintenanceKind, Duration)],
        ran: &[Ran],
        now_ms: i64,
    ) -> bool {
        let mut all = self.since.lock().unwrap_or_else(PoisonError::into_inner);
        let previous = all.remove(key).unwrap_or_default();
        let mut next = BTreeMap::new();
        let mut overdue = false;
        for (kind, patience) in planned {
            let done = ran
                .iter()
                .any(|r| r.kind == *kind && r.outcome == RunOutcome::Ok);
            if done {
                continue;
            }
            let since = previous.get(kind).copied().unwrap_or(now_ms);
            next.insert(*kind, since);
            let waited = u128::try_from(now_ms.saturating_sub(since)).unwrap_or(0);
            overdue |= waited > patience.as_millis();
        }
        if !next.is_empty() {
            all.insert(key.to_string(), next);
        }
        overdue
    }

    /// The resource is gone (or another replica's).
    pub fn forget(&self, key: &str) {
        self.since
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use delta_operator_core::model::maintenance::{Checkpointing, Compaction, Vacuum};

    const H: i64 = 3_600_000;

    fn maintenance(compact_every: Option<u64>, vacuum_every: Option<u64>) -> Maintenance {
        Maintenance {
            compaction: Some(Compaction {
                when_small_files: 20,
                target_file_bytes: 1 << 27,
                z_order_by: vec![],
                every_ms: compact_every,
            }),
            vacuum: vacuum_every.map(|e| Vacuum {
                retain_hours: 168,
                allow_short_retention: false,
                keep_restore_points_days: 7,
                every_ms: e,
            }),
            checkpoint: Some(Checkpointing { every_versions: 10 }),
        }
    }

    #[test]
    fn the_next_due_time_is_the_earliest_schedule_from_its_last_run() {
        let now = 100 * H;
        let h = TableHealth {
            last_compaction_ms: Some(now - 2 * H),
            last_vacuum_ms: Some(now - 20 * H),
            ..TableHealth::default()
        };
        // compaction every 6h (due in 4h), vacuum every 30h (due in 10h): the earliest
        let m = maintenance(Some(6 * H as u64), Some(30 * H as u64));
        assert_eq!(next_due_ms(&m, &h, now, &[]), Some(now + 4 * H));
        let m = maintenance(Some(6 * H as u64), Some(21 * H as u64));
        assert_eq!(
            next_due_ms(&m, &h, now, &[]),
            Some(now + H),
            "the vacuum first"
        );
        // thresholds alone schedule nothing
        assert_eq!(next_due_ms(&maintenance(None, None), &h, now, &[]), None);
        // never run, or overdue: due now, planned by this reconcile, not scheduled
        let never = TableHealth::default();
        let daily = maintenance(None, Some(24 * H as u64));
        assert_eq!(next_due_ms(&daily, &never, now, &[]), None);
        // ... unless it ran now: then a day from now
        assert_eq!(
            next_due_ms(&daily, &never, now, &[MaintenanceKind::Vacuum]),
            Some(now + 24 * H)
        );
    }

    #[test]
    fn the_requeue_is_bounded_by_the_drift_pass_and_below() {
        let settled = Duration::from_secs(600);
        let now = 1_000_000;
        assert_eq!(requeue_after(settled, None, now), settled);
        assert_eq!(
            requeue_after(settled, Some(now + 120_000), now),
            Duration::from_secs(120)
        );
        // due long ago, or now: not a tight loop
        assert_eq!(
            requeue_after(settled, Some(now - 5_000_000), now),
            MIN_REQUEUE
        );
        // due after the drift pass: the drift pass comes first
        assert_eq!(requeue_after(settled, Some(now + 10 * H), now), settled);
    }

    #[test]
    fn a_kind_planned_and_not_run_is_overdue_after_its_patience_and_cleared_once_run() {
        let w = Watch::default();
        let key = "DeltaTable/ns/t";
        let day = Duration::from_millis(DAY_MS as u64);
        let planned = [(MaintenanceKind::Compact, day)];
        let t0 = 1_000 * H;
        assert!(!w.observe(key, &planned, &[], t0));
        assert!(!w.observe(key, &planned, &[], t0 + 23 * H), "not yet a day");
        let failed = Ran {
            kind: MaintenanceKind::Compact,
            outcome: RunOutcome::Failed,
            message: "boom".into(),
        };
        assert!(
            w.observe(key, &planned, std::slice::from_ref(&failed), t0 + 25 * H),
            "a failed run does not clear it"
        );
        let ok = Ran {
            outcome: RunOutcome::Ok,
            ..failed
        };
        assert!(!w.observe(key, &planned, &[ok], t0 + 26 * H));
        // planned again after the run: counted from then
        assert!(!w.observe(key, &planned, &[], t0 + 27 * H));
        assert!(!w.observe(key, &planned, &[], t0 + 50 * H));
        assert!(w.observe(key, &planned, &[], t0 + 52 * H));
        // no longer due: cleared
        assert!(!w.observe(key, &[], &[], t0 + 53 * H));
        assert!(!w.observe(key, &planned, &[], t0 + 54 * H));
        // a schedule's interval is its patience
        let hourly = [(MaintenanceKind::Vacuum, Duration::from_millis(H as u64))];
        assert!(!w.observe("other", &hourly, &[], t0));
        assert!(w.observe("other", &hourly, &[], t0 + 2 * H));
        w.forget("other");
        assert!(!w.observe("other", &hourly, &[], t0 + 3 * H));
    }

    #[test]
    fn the_patience_is_the_schedule_else_a_day() {
        let m = maintenance(Some(6 * H as u64), Some(2 * H as u64));
        let ms = |k| patience(Some(&m), k).as_millis() as i64;
        assert_eq!(ms(MaintenanceKind::Compact), 6 * H);
        assert_eq!(ms(MaintenanceKind::Vacuum), 2 * H);
        assert_eq!(ms(MaintenanceKind::Checkpoint), DAY_MS);
        let m = maintenance(None, None);
        assert_eq!(
            patience(Some(&m), MaintenanceKind::Compact).as_millis() as i64,
            DAY_MS
        );
    }

    #[test]
    fn a_run_replaces_its_kinds_last_run_and_keeps_the_others() {
        let runs = [Ran {
            kind: MaintenanceKind::Compact,
            outcome: RunOutcome::Ok,
            message: "compacted 40 files into 1".into(),
        }];
        let s = status_after(None, &runs, "p1", "2026-12-06T15:00:00Z").unwrap();
        let c = s.compaction.clone().unwrap();
        assert_eq!(c.outcome, MaintenanceRunOutcome::Succeeded);
        assert_eq!(c.plan_id, "p1");
        assert!(s.vacuum.is_none());
        let runs = [Ran {
            kind: MaintenanceKind::Vacuum,
            outcome: RunOutcome::Failed,
            message: "denied".into(),
        }];
        let s = status_after(Some(s), &runs, "p2", "2026-12-06T16:00:00Z").unwrap();
        assert_eq!(s.compaction, Some(c), "kept");
        assert_eq!(
            s.vacuum.as_ref().map(|v| v.outcome),
            Some(MaintenanceRunOutcome::Failed)
        );
        assert_eq!(status_after(None, &[], "p3", "t"), None);
    }
}
