//! What an apply reports: each step's status (tables, schemas), how each
//! table ended, the tables another apply held; and the table lines a plan
//! shows before anything runs.

use serde::Serialize;

use delta_operator_core::model::{SchemaRef, TableRef};
use delta_operator_core::plan::rules::{Rule, RuleFailure};
use delta_operator_core::plan::{Outcome, Plan, PlanId, RiskClass, Step, TableAction};

use super::ObjectStepReport;

/// What happened to one step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "status")]
pub enum StepStatus {
    Applied,
    /// The change already held; nothing was run.
    Skipped,
    Failed {
        error: String,
    },
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
    /// A statement of the step whose outcome is unknown: it may still be running.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub still_running: Option<String>,
}

/// What happened to one step of a schema's plan.
#[derive(Debug, Clone, Serialize)]
pub struct SchemaStepReport {
    pub schema: SchemaRef,
    pub number: usize,
    pub title: String,
    pub class: RiskClass,
    #[serde(flatten)]
    pub status: StepStatus,
    pub detail: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ApplyReport {
    pub plan_id: PlanId,
    pub steps: Vec<StepReport>,
    /// The declared schemas' metadata steps (run before the tables').
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub schema_steps: Vec<SchemaStepReport>,
    /// The steps of views, functions and volumes, in the order they ran
    /// (the plan's dependency order, between the tables').
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub object_steps: Vec<ObjectStepReport>,
    /// Tables of the plan another apply held (their steps were not run; the
    /// other tables went on): each with who holds it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub locked: Vec<LockedTable>,
    /// Every table of the plan and how it ended: one line each in the CLI's report.
    pub tables: Vec<TableReport>,
}

/// How one table of the plan ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TableReport {
    pub table: TableRef,
    /// What the plan would do to it: create, update, destroy, unchanged, keep.
    pub change: TableAction,
    #[serde(flatten)]
    pub status: TableStatus,
    /// A blocked table's statements, as a dry run shows them: nothing ran them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub would_run: Vec<String>,
}

/// A table's own result, whatever phase decided it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "status")]
pub enum TableStatus {
    /// Nothing to change.
    Unchanged,
    /// Every step ran or already held.
    Applied,
    /// A step failed; the table's later steps were not run.
    Failed { step: usize, error: String },
    /// Refused by the safety rules: untouched.
    Rejected { failures: Vec<RuleFailure> },
    /// The live table cannot be read: untouched.
    Unreadable { why: String },
    /// Tables its foreign keys reference were refused, blocked or failed: untouched.
    Blocked { by: Vec<TableRef> },
    /// Another apply holds it: untouched.
    Locked { by: String },
    /// Not run for a reason of the apply (its lease or lock was lost).
    NotRun { why: String },
    /// Absent, and its spec's scope does not create it: waited for, not failed.
    Deferred { why: String },
}

impl TableStatus {
    /// The table did not reach its spec because of itself or a table it needs
    /// (a table another apply holds is not counted: it is that apply's).
    pub fn is_failure(&self) -> bool {
        !matches!(
            self,
            TableStatus::Unchanged
                | TableStatus::Applied
                | TableStatus::Locked { .. }
                | TableStatus::Deferred { .. }
        )
    }
    pub fn word(&self) -> &'static str {
        match self {
            TableStatus::Unchanged => "unchanged",
            TableStatus::Applied => "applied",
            TableStatus::Failed { .. } => "failed",
            TableStatus::Rejected { .. } => "rejected",
            TableStatus::Unreadable { .. } => "unreadable",
            TableStatus::Blocked { .. } => "blocked",
            TableStatus::Locked { .. } => "locked",
            TableStatus::NotRun { .. } => "not run",
            TableStatus::Deferred { .. } => "deferred",
        }
    }
}

/// A table another apply held: `by` names the holder and how to break a dead one's lock.
#[derive(Debug, Clone, Serialize)]
pub struct LockedTable {
    pub table: TableRef,
    pub by: String,
}

impl ApplyReport {
    fn statuses(&self) -> impl Iterator<Item = &StepStatus> {
        let tables = self.steps.iter().map(|s| &s.status);
        tables
            .chain(self.schema_steps.iter().map(|s| &s.status))
            .chain(self.object_steps.iter().map(|s| &s.status))
    }
    /// Some step failed (a locked table is not a failure: see `locked`).
    pub fn failed(&self) -> bool {
        self.statuses()
            .any(|s| matches!(s, StepStatus::Failed { .. }))
    }
    pub fn applied(&self) -> usize {
        self.statuses()
            .filter(|s| **s == StepStatus::Applied)
            .count()
    }
    pub fn skipped(&self) -> usize {
        self.statuses()
            .filter(|s| **s == StepStatus::Skipped)
            .count()
    }
    /// Some table was refused, blocked or failed (see `tables`).
    pub fn any_table_failed(&self) -> bool {
        self.tables.iter().any(|t| t.status.is_failure())
    }
    /// True when no step of a table, a schema or an object was reported.
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty() && self.schema_steps.is_empty() && self.object_steps.is_empty()
    }
    /// `catalog.schema.table@version` for every restore point taken.
    pub fn restore_points(&self) -> Vec<String> {
        self.steps
            .iter()
            .filter_map(|s| s.restore_point.map(|v| format!("{}@{v}", s.table)))
            .collect()
    }
}

/// Every table of a plan none of whose steps ran, as the report shows it
/// (a plan the gate refused: each refused or blocked table says why).
pub fn planned_tables(plan: &Plan) -> Vec<TableReport> {
    table_reports(plan, &[], &[], &[])
}

/// Every table of `plan` and how it ended, from its plan's outcome and the
/// reports of its steps.
pub(super) fn table_reports(
    plan: &Plan,
    steps: &[StepReport],
    locked: &[LockedTable],
    blocked: &[(TableRef, Vec<TableRef>)],
) -> Vec<TableReport> {
    let statements = |planned: &[Step]| -> Vec<String> {
        planned
            .iter()
            .flat_map(|s| s.statements.iter().map(ToString::to_string))
            .collect()
    };
    plan.tables
        .iter()
        .map(|t| {
            let mut would_run = vec![];
            let status = match &t.outcome {
                Outcome::Rejected { failures } => {
                    match failures.iter().find(|f| f.rule == Rule::TableUnreadable) {
                        Some(f) => TableStatus::Unreadable {
                            why: f.message.clone(),
                        },
                        None => TableStatus::Rejected {
                            failures: failures.clone(),
                        },
                    }
                }
                Outcome::Blocked { by, would_run: w } => {
                    would_run = statements(w);
                    TableStatus::Blocked { by: by.clone() }
                }
                Outcome::Deferred { why } => TableStatus::Deferred { why: why.clone() },
                Outcome::Accepted { steps: planned } if planned.is_empty() => {
                    TableStatus::Unchanged
                }
                Outcome::Accepted { steps: planned } => {
                    let mine: Vec<&StepReport> =
                        steps.iter().filter(|s| s.table == t.table).collect();
                    if let Some(l) = locked.iter().find(|l| l.table == t.table) {
                        TableStatus::Locked { by: l.by.clone() }
                    } else if let Some((_, by)) = blocked.iter().find(|(b, _)| *b == t.table) {
                        would_run = statements(planned);
                        TableStatus::Blocked { by: by.clone() }
                    } else if let Some((step, error)) = mine.iter().find_map(|s| match &s.status {
                        StepStatus::Failed { error } => Some((s.number, error.clone())),
                        _ => None,
                    }) {
                        TableStatus::Failed { step, error }
                    } else if mine.len() < planned.len()
                        || mine.iter().any(|s| s.status == StepStatus::NotRun)
                    {
                        let why = mine
                            .iter()
                            .filter(|s| s.status == StepStatus::NotRun)
                            .find_map(|s| s.detail.clone())
                            .unwrap_or_else(|| "the apply stopped before its steps".into());
                        TableStatus::NotRun { why }
                    } else {
                        TableStatus::Applied
                    }
                }
            };
            TableReport {
                table: t.table.clone(),
                change: t.action,
                status,
                would_run,
            }
        })
        .collect()
}
