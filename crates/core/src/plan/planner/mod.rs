//! plan_table: a table's diff, judged by the rules, turned into ordered steps.
//! Total: every input gives Accepted, Rejected or Unchanged; never a partial subset.
//!
//! By phase: `order` (drafts, step groups, numbering, merged CHECKs), `create`
//! (a new table), `update` (one draft per change of a live table, with
//! `update/columns` and `update/constraints`), `prerequisites` (table features a
//! step needs first, the safety clone), `rewrite` (the replace that rebuilds a
//! table), `put_back` (what that replace loses, restored after it) and
//! `maintenance` (compaction, vacuum and checkpoints, when due).

mod create;
mod maintenance;
mod order;
mod prerequisites;
mod put_back;
mod rewrite;
mod update;

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::capabilities::Capabilities;
use super::change::{Change, DropReason};
use super::diff::diff;
use super::rules::{RuleFailure, check, check_commits};
use super::steps::{Action, RiskClass, Step};
use crate::model::{DesiredTable, ObservedTable, TableRef};
use create::create_steps;
use update::update_steps;

pub(crate) use maintenance::add_due as add_due_maintenance;
pub use rewrite::column_source;

/// What happens to a table as a whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TableAction {
    Create,
    Update,
    Destroy,
    Unchanged,
    /// An orphan in an additive schema: listed, kept.
    Keep,
    /// Absent, and the spec's scope cannot create it: waited for.
    Deferred,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "outcome")]
pub enum Outcome {
    Accepted {
        steps: Vec<Step>,
    },
    Rejected {
        failures: Vec<RuleFailure>,
    },
    /// Not run because tables it depends on (its foreign keys' parents) were
    /// refused or are blocked themselves: `by` names every one of them.
    Blocked {
        by: Vec<TableRef>,
        /// The steps it would run once they are fixed: a dry run shows their SQL,
        /// nothing runs them.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        would_run: Vec<Step>,
    },
    /// The table does not exist and the spec's scope does not create tables:
    /// neither changed nor failed, waited for (the tool that owns it makes it).
    Deferred {
        why: String,
    },
}

/// One table's plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TablePlan {
    pub table: TableRef,
    pub action: TableAction,
    /// `<namespace>/<name>` of the declaring resource (or the live owner of an orphan).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    pub changes: Vec<Change>,
    #[serde(flatten)]
    pub outcome: Outcome,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_bytes: Option<u64>,
    /// The live Delta version the plan was made against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u64>,
    /// Both sides, so the plan id can be recomputed and a saved plan re-read.
    /// Shared with the caller, not copied: a plan of 1,000 tables × 50 columns
    /// spent a third of its time copying them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub desired: Option<Arc<DesiredTable>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed: Option<Arc<ObservedTable>>,
}

impl TablePlan {
    pub fn steps(&self) -> &[Step] {
        match &self.outcome {
            Outcome::Accepted { steps } => steps,
            _ => &[],
        }
    }
    pub fn is_accepted(&self) -> bool {
        matches!(self.outcome, Outcome::Accepted { .. })
    }
    /// Refused by a rule or blocked by a refused parent (a deferred table is neither).
    pub fn is_refused(&self) -> bool {
        matches!(
            self.outcome,
            Outcome::Rejected { .. } | Outcome::Blocked { .. }
        )
    }
    pub fn is_deferred(&self) -> bool {
        matches!(self.outcome, Outcome::Deferred { .. })
    }
    /// The highest risk class among the steps.
    pub fn risk(&self) -> Option<RiskClass> {
        self.steps().iter().map(|s| s.class).max()
    }
}

/// Plans one declared table against its live state.
pub fn plan_table(
    desired: &DesiredTable,
    observed: Option<&ObservedTable>,
    caps: &Capabilities,
) -> TablePlan {
    let observed = observed.map(|o| Arc::new(o.clone()));
    plan_table_shared(&Arc::new(desired.clone()), observed.as_ref(), caps)
}

/// `plan_table` holding its inputs by `Arc` (what `plan_shared` calls).
pub fn plan_table_shared(
    shared_desired: &Arc<DesiredTable>,
    shared_observed: Option<&Arc<ObservedTable>>,
    caps: &Capabilities,
) -> TablePlan {
    let desired: &DesiredTable = shared_desired;
    let observed: Option<&ObservedTable> = shared_observed.map(|o| &**o);
    if observed.is_none() && !desired.scope.can_create() {
        return deferred(shared_desired);
    }
    let d = diff(desired, observed);
    let failures = check(desired, observed, &d, caps);
    let action = match (observed, d.changes.is_empty() && d.differences.is_empty()) {
        (None, _) => TableAction::Create,
        (Some(_), true) => TableAction::Unchanged,
        (Some(_), false) => TableAction::Update,
    };
    let outcome = if !failures.is_empty() {
        Outcome::Rejected { failures }
    } else {
        let steps = match observed {
            None => create_steps(desired, caps),
            Some(live) => update_steps(desired, live, &d.changes, caps),
        };
        // one commit per CHECK where the engine takes one per statement: bounded per plan
        match check_commits(&steps, caps) {
            Some(failure) => Outcome::Rejected {
                failures: vec![failure],
            },
            None => Outcome::Accepted { steps },
        }
    };
    TablePlan {
        table: desired.table.clone(),
        action,
        resource: Some(desired.owner_marker.to_string()),
        changes: d.changes,
        outcome,
        notes: d.notes,
        size_bytes: observed.and_then(|o| o.size_bytes),
        version: observed.and_then(|o| o.version),
        desired: Some(Arc::clone(shared_desired)),
        observed: shared_observed.cloned(),
    }
}

/// An absent table a narrow-scope spec waits for.
fn deferred(desired: &Arc<DesiredTable>) -> TablePlan {
    TablePlan {
        table: desired.table.clone(),
        action: TableAction::Deferred,
        resource: Some(desired.owner_marker.to_string()),
        changes: vec![],
        outcome: Outcome::Deferred {
            why: format!(
                "the table does not exist, and scope {} does not create tables: it is governed once the tool that owns it creates it",
                desired.scope
            ),
        },
        notes: vec![],
        size_bytes: None,
        version: None,
        desired: Some(Arc::clone(desired)),
        observed: None,
    }
}

/// Plans a live table whose spec is gone: kept (additive) or dropped (strict).
pub fn plan_orphan(live: &ObservedTable, strict: bool, caps: &Capabilities) -> TablePlan {
    plan_orphan_shared(&Arc::new(live.clone()), strict, caps)
}

/// `plan_orphan` holding the live table by `Arc`. An orphan's steps are the
/// same on every backend (how a drop is undone is the backend's to render
/// when the plan is compiled), so the capabilities go unread; every planner
/// entry point takes them all the same.
pub fn plan_orphan_shared(
    shared_live: &Arc<ObservedTable>,
    strict: bool,
    _caps: &Capabilities,
) -> TablePlan {
    let live: &ObservedTable = shared_live;
    // a table governed at a narrow scope is another tool's: never dropped
    let governed = live.governed_scope();
    let strict = strict && governed.is_full();
    let (action, changes, outcome) = if strict {
        let change = Change::DropTable {
            reason: DropReason::Orphan,
            columns: live.columns.len(),
        };
        let step = drop_table_step(live);
        (
            TableAction::Destroy,
            vec![change],
            Outcome::Accepted { steps: vec![step] },
        )
    } else {
        (
            TableAction::Keep,
            vec![],
            Outcome::Accepted { steps: vec![] },
        )
    };
    // a strict drop says why in its change line; a kept orphan needs the note
    let notes = if strict {
        vec![]
    } else if !governed.is_full() {
        vec![format!(
            "its spec is gone; it was governed at scope {governed}, and the operator never drops a table it did not take whole: it is kept"
        )]
    } else {
        vec!["its spec is gone; the schema is additive, so it is kept".to_string()]
    };
    TablePlan {
        table: live.table.clone(),
        action,
        resource: live.owner_marker().map(str::to_string),
        changes,
        outcome,
        notes,
        size_bytes: live.size_bytes,
        version: live.version,
        desired: None,
        observed: Some(Arc::clone(shared_live)),
    }
}

/// Plans dropping a table whose resource was deleted with `deletionPolicy: Delete`.
pub fn plan_delete(live: &ObservedTable, caps: &Capabilities) -> TablePlan {
    let mut p = plan_orphan(live, true, caps);
    if p.action == TableAction::Keep {
        return p; // governed at a narrow scope: never dropped
    }
    p.changes = vec![Change::DropTable {
        reason: DropReason::Deleted,
        columns: live.columns.len(),
    }];
    p.notes = vec!["its resource was deleted with deletionPolicy Delete".into()];
    p
}

fn drop_table_step(live: &ObservedTable) -> Step {
    Step {
        number: 1,
        class: RiskClass::Destructive,
        action: Action::DropTable,
        serves: vec![0],
        warnings: vec![format!(
            "drops the table and its {} columns",
            live.columns.len()
        )],
        notes: vec![],
        undo: None,
        undo_window: None,
        est_bytes: live.size_bytes,
        statements: vec![],
        checks: vec![],
    }
}
