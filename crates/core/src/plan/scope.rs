//! What a narrow scope does to a diff (see `model::scope`): before it, a
//! column's unstated shape is taken from the live column; after it, every
//! change to an aspect the scope only mirrors leaves the plan and becomes an
//! `Unmanaged` difference, which refuses the table by `UnmanagedAspectDrift`.

use super::change::{Change, Difference};
use super::diff::{TableDiff, matching_live};
use crate::model::{DesiredTable, ObservedTable, Scope};

/// The spec with each unstated type or nullability filled from the live
/// column it matches; None when the spec states every column whole.
pub fn with_live_shape(desired: &DesiredTable, live: &ObservedTable) -> Option<DesiredTable> {
    if desired.columns.iter().all(|c| c.unstated.is_none()) {
        return None;
    }
    let mut out = desired.clone();
    for c in &mut out.columns {
        let Some(l) = matching_live(c, live) else {
            continue;
        };
        if c.unstated.data_type {
            c.data_type = l.data_type.clone();
        }
        if c.unstated.nullable {
            c.nullable = l.nullable;
        }
    }
    Some(out)
}

/// Moves the changes to mirrored aspects out of the plan, one difference
/// line each; the bookkeeping (claim, scope, records) stays.
pub fn mirror(scope: Scope, out: &mut TableDiff) {
    if scope.is_full() {
        return;
    }
    let (kept, mirrored): (Vec<Change>, Vec<Change>) = std::mem::take(&mut out.changes)
        .into_iter()
        .partition(|c| c.aspect().is_none_or(|a| scope.manages(a)));
    out.changes = kept;
    for c in mirrored {
        let Some(aspect) = c.aspect() else { continue };
        out.differences.push(Difference::Unmanaged {
            aspect,
            scope,
            line: format!("{} {}", c.marker(), c.describe()),
        });
    }
}
