//! The diff's side of a hand-off (see `model::hand_off`): a change to a part
//! another tool owns never reaches the plan, whichever route made it (a
//! recorded CHECK the spec no longer declares, a spec that slipped past
//! validation). The planner's safety reads the live table whole, so what is
//! handed off is still known to the rules and the rewrite's put-backs.

use super::change::Change;
use super::diff::TableDiff;
use crate::model::{HandOff, Handed};

/// The part of a table a change touches, when another tool may own it.
pub fn handed_part(change: &Change) -> Option<Handed> {
    use Change::*;
    Some(match change {
        SetTableTag { .. } | UnsetTableTag { .. } | SetColumnTag { .. } | UnsetColumnTag { .. } => {
            Handed::Tags
        }
        Grant { .. } | Revoke { .. } => Handed::Grants,
        SetOwner { .. } => Handed::Owner,
        SetTableComment { .. } | SetColumnComment { .. } => Handed::Comments,
        SetMask { .. } => Handed::Masks,
        AddCheck { .. } | DropCheck { .. } => Handed::Checks,
        _ => return None,
    })
}

/// Whether the hand-off covers the change.
pub fn covers(hand_off: &HandOff, change: &Change) -> bool {
    match change {
        Change::SetProperty { key, .. } | Change::UnsetProperty { key, .. } => {
            hand_off.hands_property(key)
        }
        c => handed_part(c).is_some_and(|a| hand_off.hands(a)),
    }
}

/// Drops the changes the hand-off covers and says what is left to whom.
pub fn strip(hand_off: &HandOff, out: &mut TableDiff) {
    if hand_off.is_empty() {
        return;
    }
    out.changes.retain(|c| !covers(hand_off, c));
    out.notes.push(format!(
        "handed off, never planned here: {}",
        hand_off.describe()
    ));
}
