//! The table as a whole: creating, claiming, commenting, cloning, owning and
//! dropping it, and removing what interrupted runs left.

use super::{Action, misrouted, restore_map, steps};
use crate::model::{CONSTRAINTS_PROPERTY, OWNER_PROPERTY, ObservedTable};
use crate::plan::undo::Undo;

pub(super) fn title(action: &Action) -> String {
    match action {
        Action::CreateTable { .. } => "CREATE TABLE".into(),
        Action::Claim { .. } => "CLAIM ownership".into(),
        Action::SetTableComment { .. } => "COMMENT ON TABLE".into(),
        Action::CloneTable { name } => format!("SHALLOW CLONE to {name}"),
        Action::SetOwner { owner } => format!("SET OWNER {owner}"),
        Action::DropTable => "DROP TABLE".into(),
        Action::RemoveLeftovers { leftovers } => {
            format!("REMOVE leftovers of interrupted runs ({})", leftovers.len())
        }
        other => misrouted(other),
    }
}

pub(super) fn holds(action: &Action, live: &ObservedTable) -> bool {
    match action {
        Action::CreateTable { .. } => true,
        Action::DropTable => false,
        Action::Claim {
            marker,
            constraints,
            scope,
        } => {
            live.properties.get(OWNER_PROPERTY) == Some(marker)
                && live.governed_scope() == *scope
                && constraints
                    .as_ref()
                    .is_none_or(|c| live.properties.get(CONSTRAINTS_PROPERTY) == Some(c))
        }
        Action::SetTableComment { comment } => live.comment.as_deref().unwrap_or("") == comment,
        // the clone is another table: taking it is idempotent in the backend
        Action::CloneTable { .. } => false,
        Action::SetOwner { owner } => live.owner.as_deref() == Some(owner.as_str()),
        Action::RemoveLeftovers { .. } => live.leftovers.is_empty(),
        other => misrouted(other),
    }
}

pub(super) fn apply_to(action: &Action, live: &mut ObservedTable) {
    if let Action::Claim {
        marker,
        constraints,
        scope,
    } = action
    {
        live.properties.extend(super::claim_properties(
            marker,
            constraints.as_deref(),
            *scope,
        ));
    }
}

/// The undo that needs no look at the table: a created table dropped, a
/// dropped one brought back, a clone dropped. The rest is their inverse.
pub(super) fn undo(action: &Action) -> Option<Undo> {
    Some(match action {
        Action::CreateTable { .. } => steps(vec![Action::DropTable]),
        Action::DropTable => Undo::Undrop,
        Action::CloneTable { name } => Undo::DropClone { name: name.clone() },
        _ => return None,
    })
}

pub(super) fn inverse(action: &Action, live: &ObservedTable) -> Option<Vec<Action>> {
    Some(match action {
        Action::Claim {
            constraints, scope, ..
        } => {
            let mut keys = vec![OWNER_PROPERTY.to_string()];
            if constraints.is_some() {
                keys.push(CONSTRAINTS_PROPERTY.to_string());
            }
            if !scope.is_full() {
                keys.push(crate::model::property::SCOPE_PROPERTY.to_string());
            }
            let (set, unset) = restore_map(&live.properties, &keys);
            super::properties::props(set, unset)
        }
        Action::SetTableComment { .. } => vec![Action::SetTableComment {
            comment: live.comment.clone().unwrap_or_default(),
        }],
        Action::SetOwner { .. } => vec![Action::SetOwner {
            owner: live.owner.clone()?,
        }],
        _ => return None,
    })
}
