//! A rebuild of the table from itself, in its phases. It has no inverse
//! step: the table's history (a restore to the version before) undoes it.

use super::{Action, misrouted};
use crate::model::ObservedTable;
use crate::plan::diff::same_shape;
use crate::plan::steps::RewritePhase;
use crate::plan::undo::Undo;

pub(super) fn title(action: &Action) -> String {
    let Action::Rewrite { phase, .. } = action else {
        misrouted(action)
    };
    match phase {
        RewritePhase::WriteOnce => "REPLACE TABLE (from itself)",
        RewritePhase::Stage => "STAGE rewritten data",
        RewritePhase::Replace => "REPLACE TABLE (from staging)",
        RewritePhase::ReplaceChecked => "REPLACE TABLE (from itself, rows checked)",
        RewritePhase::DropStaging => "DROP staging",
    }
    .into()
}

/// A replace is undone by restoring the version the plan read. Staging
/// writes a separate copy and dropping it removes only that copy: the table
/// has nothing to put back.
pub(super) fn undo(action: &Action, version: Option<u64>) -> Option<Undo> {
    let Action::Rewrite { phase, .. } = action else {
        misrouted(action)
    };
    match phase {
        RewritePhase::WriteOnce | RewritePhase::Replace | RewritePhase::ReplaceChecked => {
            Some(Undo::Restore { version })
        }
        RewritePhase::Stage | RewritePhase::DropStaging => None,
    }
}

pub(super) fn holds(action: &Action, live: &ObservedTable) -> bool {
    let Action::Rewrite { rewrite, phase } = action else {
        misrouted(action)
    };
    // the staging copy is not part of the table: dropping it is idempotent in the backend
    if *phase == RewritePhase::DropStaging {
        return false;
    }
    rewrite.columns.len() == live.columns.len()
        && rewrite.columns.iter().all(|p| {
            live.column(&p.field.name).is_some_and(|c| {
                c.name == p.field.name
                    && c.nullable == p.field.nullable
                    && same_shape(&c.data_type, &p.field.data_type)
            })
        })
        && rewrite.partitioned_by.len() == live.partitioned_by.len()
        && rewrite
            .partitioned_by
            .iter()
            .zip(&live.partitioned_by)
            .all(|(a, b)| a.eq_ignore_ascii_case(b))
}
