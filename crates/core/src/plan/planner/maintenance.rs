//! Maintenance steps: compaction, vacuum and checkpoints, added to a table's
//! plan when they are due, from what the backend measured of the live table
//! ([`TableHealth`]) against the spec's thresholds and schedules. "Now" is
//! an input (epoch milliseconds; None: no clock, so no schedule is due), so
//! the same inputs always give the same plan.
//!
//! Never beside a rewrite of the same table (the rewrite writes every file
//! anew: the maintenance waits for the next plan, and a note says so), never
//! on a table being created or dropped, and never where Databricks'
//! predictive optimization maintains the table itself.

use super::{Outcome, TableAction, TablePlan};
use crate::model::ObservedTable;
use crate::model::maintenance::{DAY_MS, Maintenance, TableHealth};
use crate::plan::steps::{Action, RiskClass, Step};

/// The maintenance steps due on `plan`'s table at `now_ms`, added after its
/// other steps (with the notes that explain what waits or is left alone).
pub(crate) fn add_due(plan: &mut TablePlan, now_ms: Option<i64>) {
    let Some(m) = plan.desired.as_ref().and_then(|d| d.maintenance.clone()) else {
        return;
    };
    let Some(live) = plan.observed.clone() else {
        return; // created by this plan: nothing to maintain yet
    };
    if !live.kind.is_table() || live.unreadable.is_some() {
        return;
    }
    if !matches!(plan.action, TableAction::Update | TableAction::Unchanged) {
        return;
    }
    let Outcome::Accepted { steps } = &plan.outcome else {
        return;
    };
    let Some(health) = live.health.as_ref() else {
        plan.notes.push(
            "maintenance is declared, but the backend did not measure the table's files and log: none is planned"
                .into(),
        );
        return;
    };
    if health.predictive_optimization {
        plan.notes.push(
            "predictive optimization maintains this table (Databricks): its compaction, vacuum and checkpoints are left to it"
                .into(),
        );
        return;
    }
    let due = due_actions(&m, &live, health, now_ms);
    if due.is_empty() {
        return;
    }
    if steps
        .iter()
        .any(|s| matches!(s.action, Action::Rewrite { .. }))
    {
        let what: Vec<String> = due.iter().map(|(a, ..)| a.title()).collect();
        plan.notes.push(format!(
            "maintenance waits for the next plan: this plan rewrites the table ({} due)",
            what.join(", ")
        ));
        return;
    }
    let Outcome::Accepted { steps } = &mut plan.outcome else {
        return;
    };
    for (action, warnings, notes) in due {
        steps.push(Step {
            number: steps.len() + 1,
            class: RiskClass::Maintenance,
            undo_window: None,
            est_bytes: match action {
                Action::Compact { .. } => live.size_bytes,
                _ => None,
            },
            action,
            serves: vec![],
            warnings,
            notes,
            statements: vec![],
            checks: vec![],
            undo: None,
        });
    }
}

type Due = (Action, Vec<String>, Vec<String>);

/// What is due, in the order it runs: compaction (its commit then counts
/// toward the checkpoint), vacuum, checkpoint.
fn due_actions(
    m: &Maintenance,
    live: &ObservedTable,
    h: &TableHealth,
    now_ms: Option<i64>,
) -> Vec<Due> {
    let mut out = Vec::new();
    let older_than = |last: Option<i64>, every: u64| match now_ms {
        None => false,
        Some(now) => {
            last.is_none_or(|l| now.saturating_sub(l) >= i64::try_from(every).unwrap_or(i64::MAX))
        }
    };
    if let Some(c) = &m.compaction {
        // bin-packing needs two files at least to do anything
        let by_count = h.small_files >= c.when_small_files.max(2);
        let by_schedule = h.files >= 2
            && c.every_ms
                .is_some_and(|e| older_than(h.last_compaction_ms, e));
        if by_count || by_schedule {
            let why = if by_count {
                format!(
                    "{} of {} files are small (at least {} make it due)",
                    h.small_files, h.files, c.when_small_files
                )
            } else {
                "its schedule (`every:`) made it due".to_string()
            };
            // a clustered table is laid out by its keys: OPTIMIZE alone
            let z_order = if live.cluster_by.as_ref().is_some_and(|k| !k.is_empty()) {
                vec![]
            } else {
                c.z_order_by.clone()
            };
            out.push((
                Action::Compact {
                    target_file_bytes: c.target_file_bytes,
                    z_order,
                },
                vec![],
                vec![
                    why,
                    "commits against the version it read: rows appended meanwhile are kept".into(),
                ],
            ));
        }
    }
    if let (Some(v), Some(now)) = (&m.vacuum, now_ms)
        && older_than(h.last_vacuum_ms, v.every_ms)
    {
        let keep = h.restore_points_within(v.keep_restore_points_days, now);
        let mut keep_versions: Vec<u64> = keep.iter().map(|r| r.version).collect();
        keep_versions.dedup(); // sorted by version: one restore point stamped on several commits
        let keep_since_ms = keep.iter().map(|r| r.recorded_ms).min();
        let mut notes = vec![match h.last_vacuum_ms {
            None => "no vacuum was recorded on this table".to_string(),
            Some(l) => format!("the last vacuum was {} ago", age(now.saturating_sub(l))),
        }];
        if !keep_versions.is_empty() {
            notes.push(format!(
                "keeps the files of the restore points recorded in the last {} (restore … --version {} works after it)",
                plural_days(v.keep_restore_points_days),
                keep_versions
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        let mut warnings = vec![format!(
            "deletes the files removed from the table more than {} hours ago: time travel to versions older than that ends",
            v.retain_hours
        )];
        if v.retain_hours < 168 {
            warnings.push(format!(
                "retains {} hours, below Delta's 168-hour safety check (allowShortRetention): a reader or writer running longer may fail",
                v.retain_hours
            ));
        }
        out.push((
            Action::Vacuum {
                retain_hours: v.retain_hours,
                keep_versions,
                keep_since_ms,
            },
            warnings,
            notes,
        ));
    }
    if let Some(c) = &m.checkpoint
        && let Some(n) = h.versions_since_checkpoint
        && n >= c.every_versions
    {
        out.push((
            Action::Checkpoint,
            vec![],
            vec![format!(
                "{n} versions since the last checkpoint (at least {} make it due)",
                c.every_versions
            )],
        ));
    }
    out
}

/// `3 days`, `5 h`, `12 min`: how long ago, roughly.
fn age(ms: i64) -> String {
    let h = ms / 3_600_000;
    if ms >= 2 * DAY_MS {
        format!("{} days", ms / DAY_MS)
    } else if h >= 1 {
        format!("{h} h")
    } else {
        format!("{} min", ms / 60_000)
    }
}

fn plural_days(n: u64) -> String {
    if n == 1 {
        "day".into()
    } else {
        format!("{n} days")
    }
}
