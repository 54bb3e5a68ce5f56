//! How to undo one step, as the steps that put back what it changed: a
//! backend compiles them into the statements a person can run where they are
//! (Databricks or Spark SQL), so every undo line in a plan is runnable, not a
//! description. Pure: from the step and the live table before it. Each
//! family of actions knows its own inverse (`action/`); this is the entry point.
//!
//! A step with no inverse of its own is undone by the table's history
//! (`RESTORE … TO VERSION AS OF`, which the planner's restore hint names) or
//! not at all: a turned-on table feature (Delta never downgrades a
//! protocol), a widened type (Delta cannot narrow in place), a new column
//! (dropping it needs column mapping and is itself destructive).

use super::action::Action;
use crate::model::ObservedTable;

/// The steps that undo `action` on `live` (the table as it was before it),
/// in order; None when it has no inverse of its own.
pub fn inverse(action: &Action, live: &ObservedTable) -> Option<Vec<Action>> {
    action.inverse(live)
}
