//! The diff of constraints: CHECKs, the primary key and foreign keys, and
//! the operator's record of the ones it made or claimed (what it may drop).

use super::{TableDiff, normalize_sql};
use crate::model::table::{check_entry, foreign_key_entry};
use crate::model::{Aspect, CONSTRAINTS_PROPERTY, DesiredTable, Handed, ObservedTable};
use crate::plan::change::Change;

pub(super) fn diff_constraints(desired: &DesiredTable, live: &ObservedTable, out: &mut TableDiff) {
    // The declared CHECKs and foreign keys are the operator's; one the spec does not
    // declare is dropped only when the operator's record names it (it made or claimed
    // it), so what another tool made on the table is reported and left alone.
    let owned = live.owned_constraints();
    let mut left_alone: Vec<String> = Vec::new();
    let managed = desired.scope.manages(Aspect::Constraints);
    // CHECKs another tool owns: none dropped, and the record left as it is (a
    // foreign key the spec stops declaring is then left alone too: never a loss)
    let checks_handed = desired.hand_off.hands(Handed::Checks);
    for want in &desired.checks {
        match live
            .checks
            .iter()
            .find(|c| c.name.eq_ignore_ascii_case(&want.name))
        {
            Some(have) if normalize_sql(&have.expression) == normalize_sql(&want.expression) => {}
            Some(have) => {
                out.changes.push(Change::DropCheck {
                    check: have.clone(),
                });
                out.changes.push(Change::AddCheck {
                    check: want.clone(),
                });
            }
            None => out.changes.push(Change::AddCheck {
                check: want.clone(),
            }),
        }
    }
    // mirrored constraints: only what the spec declares is compared, nothing recorded
    let undeclared_checks = live.checks.iter().filter(|_| managed && !checks_handed);
    for have in undeclared_checks {
        if !desired
            .checks
            .iter()
            .any(|c| c.name.eq_ignore_ascii_case(&have.name))
        {
            if owned.contains(&check_entry(&have.name)) {
                out.changes.push(Change::DropCheck {
                    check: have.clone(),
                });
            } else {
                left_alone.push(format!("CHECK {}", have.name));
            }
        }
    }
    if let Some(pk) = &desired.primary_key {
        let same = live
            .primary_key
            .as_ref()
            .is_some_and(|l| eq_names(&l.columns, &pk.columns));
        if !same {
            out.changes.push(Change::SetPrimaryKey {
                from: live.primary_key.clone(),
                to: pk.clone(),
            });
        }
    }
    for fk in &desired.foreign_keys {
        if !live.foreign_keys.iter().any(|l| same_fk(l, fk)) {
            out.changes.push(Change::AddForeignKey { key: fk.clone() });
        }
    }
    for l in live.foreign_keys.iter().filter(|_| managed) {
        if !desired.foreign_keys.iter().any(|d| same_fk(l, d)) {
            if owned.contains(&foreign_key_entry(l)) {
                out.changes.push(Change::DropForeignKey { key: l.clone() });
            } else {
                left_alone.push(format!(
                    "FOREIGN KEY {}",
                    l.name.as_deref().unwrap_or("(unnamed)")
                ));
            }
        }
    }
    if !left_alone.is_empty() {
        out.notes.push(format!(
            "constraints not in the spec and not made by the operator, left untouched: {} (to manage one, declare it; removing it from the spec later drops it)",
            left_alone.join(", ")
        ));
    }
    if managed && !checks_handed {
        constraints_record(desired, live, out);
    }
}

/// The record of what the operator owns follows the spec (the declared ones): written when
/// it differs, and where there is none yet (a table made before the record, or one the spec
/// claims), with the first change of a constraint or the claim.
fn constraints_record(desired: &DesiredTable, live: &ObservedTable, out: &mut TableDiff) {
    let want = desired.constraints_record();
    let have = live.properties.get(CONSTRAINTS_PROPERTY);
    let recorded: Option<Vec<String>> = have.and_then(|v| serde_json::from_str(v).ok());
    let wanted: Option<Vec<String>> = want.as_deref().and_then(|v| serde_json::from_str(v).ok());
    let due = have.is_some()
        || out.changes.iter().any(|c| {
            matches!(
                c,
                Change::Claim { .. }
                    | Change::AddCheck { .. }
                    | Change::DropCheck { .. }
                    | Change::AddForeignKey { .. }
                    | Change::DropForeignKey { .. }
            )
        });
    // a claim writes the record with the marker, in one write
    if let (Some(w), None) = (&want, have)
        && let Some(Change::Claim { constraints, .. }) = out
            .changes
            .iter_mut()
            .find(|c| matches!(c, Change::Claim { .. }))
    {
        *constraints = Some(w.clone());
        return;
    }
    match (want, have) {
        (Some(w), _) if due && recorded != wanted => out.changes.push(Change::SetProperty {
            key: CONSTRAINTS_PROPERTY.to_string(),
            from: have.cloned(),
            to: w,
        }),
        (None, Some(h)) if recorded.is_none_or(|r| !r.is_empty()) => {
            out.changes.push(Change::SetProperty {
                key: CONSTRAINTS_PROPERTY.to_string(),
                from: Some(h.clone()),
                to: "[]".to_string(),
            })
        }
        _ => {}
    }
}

/// Foreign keys match on structure; an unnamed declared key accepts any live name.
pub(crate) fn same_fk(a: &crate::model::ForeignKey, b: &crate::model::ForeignKey) -> bool {
    a.references == b.references
        && eq_names(&a.columns, &b.columns)
        && eq_names(&a.referenced_columns, &b.referenced_columns)
}

pub(crate) fn eq_names(a: &[String], b: &[String]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.eq_ignore_ascii_case(y))
}
