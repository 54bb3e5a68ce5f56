//! Table properties and table tags.

use std::collections::BTreeMap;

use super::{Action, keys, misrouted, restore_map};
use crate::model::ObservedTable;

pub(super) fn title(action: &Action) -> String {
    match action {
        Action::SetProperties { properties } => {
            format!("SET TBLPROPERTIES ({})", keys(properties.keys()))
        }
        Action::UnsetProperties { keys: k } => {
            format!("UNSET TBLPROPERTIES ({})", keys(k.iter()))
        }
        Action::SetTableTags { tags } => format!("SET TAGS ({})", keys(tags.keys())),
        Action::UnsetTableTags { keys: k } => format!("UNSET TAGS ({})", keys(k.iter())),
        other => misrouted(other),
    }
}

pub(super) fn holds(action: &Action, live: &ObservedTable) -> bool {
    match action {
        Action::SetProperties { properties } => properties
            .iter()
            .all(|(k, v)| live.properties.get(k) == Some(v)),
        Action::UnsetProperties { keys } => keys.iter().all(|k| !live.properties.contains_key(k)),
        Action::SetTableTags { tags } => tags.iter().all(|(k, v)| live.tags.get(k) == Some(v)),
        Action::UnsetTableTags { keys } => keys.iter().all(|k| !live.tags.contains_key(k)),
        other => misrouted(other),
    }
}

pub(super) fn apply_to(action: &Action, live: &mut ObservedTable) {
    let p = &mut live.properties;
    match action {
        Action::SetProperties { properties } => p.extend(properties.clone()),
        Action::UnsetProperties { keys } => keys.iter().for_each(|k| {
            p.remove(k);
        }),
        // tags are not read by a later statement
        _ => {}
    }
}

pub(super) fn inverse(action: &Action, live: &ObservedTable) -> Option<Vec<Action>> {
    Some(match action {
        Action::SetProperties { properties } => {
            let keys: Vec<String> = properties.keys().cloned().collect();
            let (set, unset) = restore_map(&live.properties, &keys);
            props(set, unset)
        }
        Action::UnsetProperties { keys } => {
            let (set, _) = restore_map(&live.properties, keys);
            props(set, vec![])
        }
        Action::SetTableTags { tags } => {
            let keys: Vec<String> = tags.keys().cloned().collect();
            let (set, unset) = restore_map(&live.tags, &keys);
            let mut out = Vec::new();
            if !set.is_empty() {
                out.push(Action::SetTableTags { tags: set });
            }
            if !unset.is_empty() {
                out.push(Action::UnsetTableTags { keys: unset });
            }
            out
        }
        Action::UnsetTableTags { keys } => {
            let (set, _) = restore_map(&live.tags, keys);
            if set.is_empty() {
                vec![]
            } else {
                vec![Action::SetTableTags { tags: set }]
            }
        }
        _ => return None,
    })
}

/// The property steps that set `set` again and remove `unset`.
pub(super) fn props(set: BTreeMap<String, String>, unset: Vec<String>) -> Vec<Action> {
    let mut out = Vec::new();
    if !set.is_empty() {
        out.push(Action::SetProperties { properties: set });
    }
    if !unset.is_empty() {
        out.push(Action::UnsetProperties { keys: unset });
    }
    out
}
