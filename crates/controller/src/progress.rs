//! An apply as it runs, for `status.apply` and the `Applying` condition: which
//! step of how many, since when, and the restore points taken so far. Fed by
//! the executor's events; no I/O.

use std::time::{Duration, Instant};

use delta_operator_api::spec::crd::ApplyStatus;
use delta_operator_backend::RowsDone;
use delta_operator_backend::apply::Event;
use delta_operator_core::plan::Plan;

#[derive(Debug, Clone)]
pub struct ApplyProgress {
    status: ApplyStatus,
    step_started: Option<Instant>,
    /// Rows the running step has written, where its backend counts them.
    rows: Option<RowsDone>,
    /// The apply this one resumes, while the step it was cut short in has not
    /// completed here: that step's interruptions carry over (see `decide::carried_interruptions`).
    resumes: Option<ApplyStatus>,
}

impl ApplyProgress {
    /// Before the first step. `earlier` carries the restore points of an apply
    /// that was cut short (they stay recorded until an apply finishes).
    pub fn new(plan: &Plan, now: &str, earlier: Option<&ApplyStatus>) -> Self {
        let of = plan.tables.iter().map(|t| t.steps().len()).sum::<usize>()
            + plan.schemas.iter().map(|s| s.steps().len()).sum::<usize>();
        ApplyProgress {
            status: ApplyStatus {
                plan_id: plan.id.to_string(),
                started_at: now.into(),
                step: 0,
                of: of as i32,
                current: None,
                step_started_at: None,
                restore_points: earlier
                    .map(|e| e.restore_points.clone())
                    .unwrap_or_default(),
                statements: vec![],
                interruptions: 0,
            },
            step_started: None,
            rows: None,
            resumes: earlier.filter(|e| e.interruptions > 0).cloned(),
        }
    }

    /// Takes in an executor event; true when status should be written again
    /// (a step started or ended), false for what changes nothing shown.
    pub fn record(&mut self, event: &Event<'_>, now: &str) -> bool {
        match event {
            Event::Started { step, .. } => {
                self.status.step += 1;
                self.status.current = Some(format!(
                    "{}/{} {}",
                    self.status.step,
                    self.status.of,
                    step.action.title()
                ));
                self.status.step_started_at = Some(now.into());
                self.status.interruptions = crate::decide::carried_interruptions(
                    self.resumes.as_ref(),
                    &step.action.title(),
                );
                self.step_started = Some(Instant::now());
                self.rows = None;
                true
            }
            // recorded as soon as taken: a kill in the middle of the step still leaves it in status
            Event::RestorePoint { table, version } => {
                let point = format!("{table}@{version}");
                if self.status.restore_points.contains(&point) {
                    return false;
                }
                self.status.restore_points.push(point);
                true
            }
            // the step completed: the interruptions it may have carried are over
            Event::Finished(_) => {
                if self.status.interruptions > 0 {
                    self.resumes = None;
                }
                self.status.interruptions = 0;
                true
            }
            // shown at the next refresh: a write per second per apply would load the apiserver
            Event::Rows { rows, .. } => {
                self.rows = Some(*rows);
                false
            }
            Event::Progress { .. } | Event::SchemaFinished(_) | Event::ObjectFinished(_) => false,
        }
    }

    /// The step's statements running on the warehouse now: in status while they
    /// run, so a kill of this process leaves them named for the next operator to
    /// wait for. True when that changed.
    pub fn running(&mut self, statements: Vec<String>) -> bool {
        if self.status.statements == statements {
            return false;
        }
        self.status.statements = statements;
        true
    }

    pub fn status(&self) -> &ApplyStatus {
        &self.status
    }

    /// `step 2/5 REPLACE TABLE (from staging), running 14m`, and where the backend
    /// counts them `, 1200000 of 2000000 rows (60%), 40000 rows/s, about 20s left`.
    pub fn message(&self) -> String {
        match (&self.status.current, self.step_started) {
            (Some(current), Some(t)) => {
                let rows = self
                    .rows
                    .map(|r| format!(", {}", r.describe(t.elapsed())))
                    .unwrap_or_default();
                format!("step {current}, running {}{rows}", short(t.elapsed()))
            }
            _ => format!(
                "applying plan {} ({} steps): starting",
                self.status.plan_id, self.status.of
            ),
        }
    }
}

/// `12s`, `14m`, `2h05m`.
pub fn short(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m", s / 60),
        _ => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_short() {
        assert_eq!(short(Duration::from_secs(12)), "12s");
        assert_eq!(short(Duration::from_secs(14 * 60 + 59)), "14m");
        assert_eq!(short(Duration::from_secs(2 * 3600 + 5 * 60)), "2h05m");
    }
}
