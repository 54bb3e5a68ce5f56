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

/// What of a live table a narrow-scope spec's plan rests on: the columns it lists, and of
/// the table only the comment, tags, grant principals, owner, properties and constraints it
/// declares, with the operator's own records and what the planner must always see (the kind,
/// leftovers, unreadability, unsupported features). The plan id hashes this instead of the
/// whole table, so a job that keeps adding columns or rewriting what it owns does not make a
/// plan stale between its making and its apply, nor void an approval of it.
pub fn governed_view(desired: &DesiredTable, live: &ObservedTable) -> ObservedTable {
    use crate::model::property::OPERATOR_PREFIX;
    let declared = |name: &str| {
        desired.columns.iter().any(|c| {
            c.name.eq_ignore_ascii_case(name)
                || c.renamed_from
                    .as_deref()
                    .is_some_and(|r| r.eq_ignore_ascii_case(name))
        })
    };
    let mut v = ObservedTable::new(live.table.clone(), vec![]);
    v.kind = live.kind;
    v.columns = live
        .columns
        .iter()
        .filter(|c| declared(&c.name))
        .cloned()
        .collect();
    v.properties = live
        .properties
        .iter()
        .filter(|(k, _)| k.starts_with(OPERATOR_PREFIX) || desired.properties.contains_key(*k))
        .map(|(k, val)| (k.clone(), val.clone()))
        .collect();
    v.comment = live.comment.clone().filter(|_| desired.comment.is_some());
    v.tags = live
        .tags
        .iter()
        .filter(|(k, _)| desired.tags.contains_key(*k))
        .map(|(k, val)| (k.clone(), val.clone()))
        .collect();
    v.grants = live
        .grants
        .iter()
        .filter(|g| desired.grants.iter().any(|d| d.principal == g.principal))
        .cloned()
        .collect();
    v.owner = live.owner.clone().filter(|_| desired.owner.is_some());
    v.checks = live
        .checks
        .iter()
        .filter(|c| {
            desired
                .checks
                .iter()
                .any(|d| d.name.eq_ignore_ascii_case(&c.name))
        })
        .cloned()
        .collect();
    v.primary_key = live
        .primary_key
        .clone()
        .filter(|_| desired.primary_key.is_some());
    v.foreign_keys = live
        .foreign_keys
        .iter()
        .filter(|f| {
            desired
                .foreign_keys
                .iter()
                .any(|d| super::diff::same_fk(f, d))
        })
        .cloned()
        .collect();
    v.row_filter = live.row_filter.clone();
    v.unsupported_features = live.unsupported_features.clone();
    v.leftovers = live.leftovers.clone();
    v.unreadable = live.unreadable.clone();
    v
}
