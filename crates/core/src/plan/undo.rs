//! How to undo one step, typed: the core says *what* puts the table back
//! ([`Undo`]) and each backend renders it into the step's `undo` line in its
//! own terms (SQL a person can run where the plan runs, or the operator's
//! own commands where there is no SQL engine). Pure: from the step and the
//! table before it. Each family of actions knows its own undo (`action/`);
//! this is the entry point.
//!
//! A step with no inverse of its own is undone by the table's history (a
//! restore to the version the plan read) or not at all: a turned-on table
//! feature (Delta never downgrades a protocol), a new column (dropping it
//! needs column mapping and is itself destructive).

use serde::{Deserialize, Serialize};

use super::action::{self, Action};
use super::steps::Step;
use crate::model::ObservedTable;

/// What puts the table back as it was before a step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "undo")]
pub enum Undo {
    /// These steps, in order, on the same table (the step's inverse).
    Steps { steps: Vec<Action> },
    /// Back to the table's own history: the version the plan read, when it
    /// could be read (`None`: there is no restore point to name).
    Restore { version: Option<u64> },
    /// A dropped table brought back.
    Undrop,
    /// The primary key the step added where there was none, dropped (no
    /// action of its own: a key is set, never dropped alone, by a plan).
    DropPrimaryKey,
    /// The shallow clone the step took, dropped: a table named `name` in the
    /// same schema (its version placeholder bound as the clone's is).
    DropClone { name: String },
}

/// The undo of `step`, from the table as observed and the steps before it:
/// each is undone against the table as the earlier steps leave it, and a
/// restore goes back to the version the plan read.
pub fn of_step(observed: Option<&ObservedTable>, earlier: &[Step], step: &Step) -> Option<Undo> {
    let before = action::after(observed, earlier);
    step.action
        .undo(before.as_ref(), observed.and_then(|o| o.version))
}

/// The steps that undo `action` on `live` (the table as it was before it),
/// in order; None when it has no inverse of its own.
pub fn inverse(action: &Action, live: &ObservedTable) -> Option<Vec<Action>> {
    action.inverse(live)
}
