//! Whether an object step's effect is already true: the executor re-reads the
//! object before each step and skips those (an apply interrupted and run
//! again does not repeat what it did).

use std::collections::BTreeSet;

use super::ObjectAction;
use crate::model::object::split_marker;
use crate::model::{ObjectBody, ObservedObject, Privilege};

/// Whether `action` already holds on the live object (None: absent).
pub fn holds(action: &ObjectAction, live: Option<&ObservedObject>) -> bool {
    let Some(live) = live else {
        // only a drop holds for an absent object
        return matches!(action, ObjectAction::Drop);
    };
    let privileges_of = |principal: &str| -> BTreeSet<&Privilege> {
        live.grants
            .iter()
            .filter(|g| g.principal == principal)
            .flat_map(|g| g.privileges.iter())
            .collect()
    };
    match action {
        // it exists: what the CREATE carried is the later steps' to check
        ObjectAction::CreateView { .. }
        | ObjectAction::CreateFunction { .. }
        | ObjectAction::CreateVolume { .. } => true,
        // whether a replace already ran cannot be told from its text: it runs (it is idempotent)
        ObjectAction::ReplaceView { .. } | ObjectAction::ReplaceFunction { .. } => false,
        ObjectAction::SetComment { comment } => {
            let (user, marker) = split_marker(comment);
            live.comment == user && (marker.is_none() || live.marker == marker)
        }
        ObjectAction::SetColumnComment { column, comment } => match &live.body {
            ObjectBody::View {
                column_comments, ..
            } => column_comment(column_comments, column) == Some(comment.as_str()),
            _ => false,
        },
        ObjectAction::SetProperties { properties } => properties
            .iter()
            .all(|(k, v)| live.properties.get(k) == Some(v)),
        ObjectAction::UnsetProperties { keys } => {
            keys.iter().all(|k| !live.properties.contains_key(k))
        }
        ObjectAction::SetTags { tags } => tags.iter().all(|(k, v)| live.tags.get(k) == Some(v)),
        ObjectAction::UnsetTags { keys } => keys.iter().all(|k| !live.tags.contains_key(k)),
        ObjectAction::Grant {
            principal,
            privileges,
        } => {
            let have = privileges_of(principal);
            privileges.iter().all(|p| have.contains(p))
        }
        ObjectAction::Revoke {
            principal,
            privileges,
        } => {
            let have = privileges_of(principal);
            privileges.iter().all(|p| !have.contains(p))
        }
        ObjectAction::SetOwner { owner } => live.owner.as_deref() == Some(owner.as_str()),
        ObjectAction::Drop => false,
    }
}

/// A column's comment in a view's map, its name matched case-insensitively
/// (the catalog keeps the query's spelling).
pub fn column_comment<'a>(
    comments: &'a std::collections::BTreeMap<String, String>,
    column: &str,
) -> Option<&'a str> {
    comments
        .get(column)
        .or_else(|| {
            comments
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(column))
                .map(|(_, v)| v)
        })
        .map(String::as_str)
}
