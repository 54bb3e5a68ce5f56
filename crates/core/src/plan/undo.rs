//! How to undo one step, as the steps that put back what it changed: a
//! backend compiles them into the statements a person can run where they are
//! (Databricks or Spark SQL), so every undo line in a plan is runnable, not a
//! description. Pure: from the step and the live table before it.
//!
//! A step with no inverse of its own is undone by the table's history
//! (`RESTORE … TO VERSION AS OF`, which the planner's restore hint names) or
//! not at all: a turned-on table feature (Delta never downgrades a
//! protocol), a widened type (Delta cannot narrow in place), a new column
//! (dropping it needs column mapping and is itself destructive).

use std::collections::BTreeMap;

use super::steps::Action;
use crate::model::{DataType, OWNER_PROPERTY, ObservedTable};

/// The steps that undo `action` on `live` (the table as it was before it),
/// in order; None when it has no inverse of its own.
pub fn inverse(action: &Action, live: &ObservedTable) -> Option<Vec<Action>> {
    let steps = match action {
        Action::Claim { constraints, .. } => {
            let mut keys = vec![OWNER_PROPERTY.to_string()];
            if constraints.is_some() {
                keys.push(crate::model::CONSTRAINTS_PROPERTY.to_string());
            }
            let (set, unset) = restore_map(&live.properties, &keys);
            props(set, unset)
        }
        Action::SetTableComment { .. } => vec![Action::SetTableComment {
            comment: live.comment.clone().unwrap_or_default(),
        }],
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
        Action::RenameColumn { from, to } => vec![Action::RenameColumn {
            from: to.clone(),
            to: from.clone(),
        }],
        Action::DropNotNull { path } => vec![Action::SetNotNull { path: path.clone() }],
        Action::SetNotNull { path } => vec![Action::DropNotNull { path: path.clone() }],
        Action::SetColumnComment { path, .. } => vec![Action::SetColumnComment {
            path: path.clone(),
            comment: field_comment(live, path).unwrap_or_default(),
        }],
        Action::SetColumnTags { column, tags } => {
            let have = live
                .column(column)
                .map(|c| c.tags.clone())
                .unwrap_or_default();
            let keys: Vec<String> = tags.keys().cloned().collect();
            let (set, unset) = restore_map(&have, &keys);
            let mut out = Vec::new();
            if !set.is_empty() {
                out.push(Action::SetColumnTags {
                    column: column.clone(),
                    tags: set,
                });
            }
            if !unset.is_empty() {
                out.push(Action::UnsetColumnTags {
                    column: column.clone(),
                    keys: unset,
                });
            }
            out
        }
        Action::UnsetColumnTags { column, keys } => {
            let have = live
                .column(column)
                .map(|c| c.tags.clone())
                .unwrap_or_default();
            let (set, _) = restore_map(&have, keys);
            if set.is_empty() {
                vec![]
            } else {
                vec![Action::SetColumnTags {
                    column: column.clone(),
                    tags: set,
                }]
            }
        }
        Action::SetDefault { column, .. } => vec![Action::SetDefault {
            column: column.clone(),
            expression: live.column(column)?.default.clone()?,
        }],
        Action::SetMask { column, .. } => vec![Action::SetMask {
            column: column.clone(),
            mask: live.column(column)?.mask.clone()?,
        }],
        Action::AddCheck { check } => vec![Action::DropCheck {
            name: check.name.clone(),
        }],
        Action::AddChecks { checks } => vec![Action::DropChecks {
            names: checks.iter().map(|c| c.name.clone()).collect(),
        }],
        Action::DropCheck { name } => vec![Action::AddCheck {
            check: live
                .checks
                .iter()
                .find(|c| c.name.eq_ignore_ascii_case(name))?
                .clone(),
        }],
        Action::DropChecks { names } => vec![Action::AddChecks {
            checks: live
                .checks
                .iter()
                .filter(|c| names.iter().any(|n| n.eq_ignore_ascii_case(&c.name)))
                .cloned()
                .collect(),
        }],
        // a key added where there was none has no action of its own to drop
        // it: the backend writes that undo itself (`DROP PRIMARY KEY`)
        Action::SetPrimaryKey {
            key,
            replaces: Some(old),
        } => vec![Action::SetPrimaryKey {
            key: old.clone(),
            replaces: Some(key.clone()),
        }],
        Action::AddForeignKey { key } => vec![Action::DropForeignKey { key: key.clone() }],
        Action::DropForeignKey { key } => vec![Action::AddForeignKey { key: key.clone() }],
        Action::SetClustering { .. } => vec![Action::SetClustering {
            keys: live.cluster_by.clone().unwrap_or_default(),
        }],
        Action::Grant {
            principal,
            privileges,
        } => vec![Action::Revoke {
            principal: principal.clone(),
            privileges: privileges.clone(),
        }],
        Action::Revoke {
            principal,
            privileges,
        } => vec![Action::Grant {
            principal: principal.clone(),
            privileges: privileges.clone(),
        }],
        Action::SetOwner { .. } => vec![Action::SetOwner {
            owner: live.owner.clone()?,
        }],
        _ => return None,
    };
    (!steps.is_empty()).then_some(steps)
}

/// For `keys`: the live values to set again, and the keys that were absent
/// (to remove).
fn restore_map(
    have: &BTreeMap<String, String>,
    keys: &[String],
) -> (BTreeMap<String, String>, Vec<String>) {
    let mut set = BTreeMap::new();
    let mut unset = Vec::new();
    for k in keys {
        match have.get(k) {
            Some(v) => {
                set.insert(k.clone(), v.clone());
            }
            None => unset.push(k.clone()),
        }
    }
    (set, unset)
}

fn props(set: BTreeMap<String, String>, unset: Vec<String>) -> Vec<Action> {
    let mut out = Vec::new();
    if !set.is_empty() {
        out.push(Action::SetProperties { properties: set });
    }
    if !unset.is_empty() {
        out.push(Action::UnsetProperties { keys: unset });
    }
    out
}

/// The live comment of a column or nested field (`element`, `key` and
/// `value` name what arrays and maps hold).
fn field_comment(live: &ObservedTable, path: &[String]) -> Option<String> {
    let column = live.column(path.first()?)?;
    if path.len() == 1 {
        return column.comment.clone();
    }
    let mut t = &column.data_type;
    let mut comment = None;
    for part in &path[1..] {
        t = match t {
            DataType::Struct { fields } => {
                let f = fields.iter().find(|f| f.name.eq_ignore_ascii_case(part))?;
                comment = f.comment.clone();
                &f.data_type
            }
            DataType::Array { element, .. } if part.eq_ignore_ascii_case("element") => {
                comment = None;
                element
            }
            DataType::Map { key, .. } if part.eq_ignore_ascii_case("key") => {
                comment = None;
                key
            }
            DataType::Map { value, .. } if part.eq_ignore_ascii_case("value") => {
                comment = None;
                value
            }
            _ => return None,
        };
    }
    comment
}
