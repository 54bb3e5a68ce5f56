//! Columns and nested fields: adding, renaming and dropping them, their type,
//! nullability, comment, tags, mask and default, and filling their NULLs.

use super::{Action, misrouted, restore_map};
use crate::model::{DataType, ObservedTable, StructField};
use crate::plan::change::{FieldPath, path_string};
use crate::plan::diff::same_shape;
use crate::plan::undo::Undo;

pub(super) fn title(action: &Action) -> String {
    match action {
        Action::AddColumn { path, .. } => format!("ADD COLUMN {}", path_string(path)),
        Action::RenameColumn { from, to } => format!("RENAME COLUMN {from} TO {to}"),
        Action::DropColumn { name } => format!("DROP COLUMN {name}"),
        Action::DropField { path } => format!("DROP COLUMN {}", path_string(path)),
        Action::AlterColumnType { path, to } => {
            format!("ALTER COLUMN {} TYPE {to}", path_string(path))
        }
        Action::DropNotNull { path } => format!("DROP NOT NULL {}", path_string(path)),
        Action::SetNotNull { path } => format!("SET NOT NULL {}", path_string(path)),
        Action::SetColumnComment { path, .. } => {
            format!("COMMENT ON COLUMN {}", path_string(path))
        }
        Action::SetColumnTags { column, .. } => format!("SET TAGS on {column}"),
        Action::UnsetColumnTags { column, .. } => format!("UNSET TAGS on {column}"),
        Action::SetMask { column, .. } => format!("SET MASK on {column}"),
        Action::SetDefault { column, .. } => format!("SET DEFAULT on {column}"),
        Action::DropDefault { column } => format!("DROP DEFAULT on {column}"),
        Action::Backfill { column, .. } => format!("BACKFILL {column} (UPDATE)"),
        other => misrouted(other),
    }
}

pub(super) fn holds(action: &Action, live: &ObservedTable) -> bool {
    match action {
        Action::AddColumn { path, .. } => field_at(live, path).is_some(),
        Action::RenameColumn { from, to } => {
            live.column(to).is_some() && live.column(from).is_none()
        }
        Action::DropColumn { name } => live.column(name).is_none(),
        Action::DropField { path } => field_at(live, path).is_none(),
        Action::AlterColumnType { path, to } => {
            field_at(live, path).is_some_and(|f| same_shape(&f.data_type, to))
        }
        Action::DropNotNull { path } => field_at(live, path).is_some_and(|f| f.nullable),
        Action::SetNotNull { path } => field_at(live, path).is_some_and(|f| !f.nullable),
        Action::SetColumnComment { path, comment } => {
            field_at(live, path).is_some_and(|f| f.comment.as_deref().unwrap_or("") == comment)
        }
        Action::SetColumnTags { column, tags } => live
            .column(column)
            .is_some_and(|c| tags.iter().all(|(k, v)| c.tags.get(k) == Some(v))),
        Action::UnsetColumnTags { column, keys } => live
            .column(column)
            .is_none_or(|c| keys.iter().all(|k| !c.tags.contains_key(k))),
        Action::SetMask { column, mask } => live
            .column(column)
            .is_some_and(|c| c.mask.as_ref() == Some(mask)),
        Action::SetDefault { column, expression } => live
            .column(column)
            .is_some_and(|c| c.default.as_ref() == Some(expression)),
        Action::DropDefault { column } => live.column(column).is_none_or(|c| c.default.is_none()),
        // filled and set NOT NULL already: nothing is left to fill
        Action::Backfill { column, .. } => live.column(column).is_some_and(|c| !c.nullable),
        other => misrouted(other),
    }
}

/// A dropped column or field, a changed type and filled NULLs are put back
/// by the table's history; the rest by their inverse.
pub(super) fn undo(action: &Action, version: Option<u64>) -> Option<Undo> {
    match action {
        Action::DropColumn { .. }
        | Action::DropField { .. }
        | Action::AlterColumnType { .. }
        | Action::Backfill { .. } => Some(Undo::Restore { version }),
        _ => None,
    }
}

/// Renames swap back, nullability flips back, comments, tags, masks and
/// defaults are put back as they were. A new column, a dropped one or a
/// changed type has no inverse step: dropping a column needs column mapping
/// and is itself destructive, Delta cannot narrow a type in place, and a
/// dropped column's data is only in the table's history.
pub(super) fn inverse(action: &Action, live: &ObservedTable) -> Option<Vec<Action>> {
    Some(match action {
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
        // a default set where there was none is undone by dropping it again
        Action::SetDefault { column, .. } => match live.column(column)?.default.clone() {
            Some(expression) => vec![Action::SetDefault {
                column: column.clone(),
                expression,
            }],
            None => vec![Action::DropDefault {
                column: column.clone(),
            }],
        },
        Action::DropDefault { column } => vec![Action::SetDefault {
            column: column.clone(),
            expression: live.column(column)?.default.clone()?,
        }],
        Action::SetMask { column, .. } => vec![Action::SetMask {
            column: column.clone(),
            mask: live.column(column)?.mask.clone()?,
        }],
        _ => return None,
    })
}

/// The struct field (or top-level column, as a field) at `path`.
pub fn field_at(live: &ObservedTable, path: &FieldPath) -> Option<StructField> {
    let top = live.column(path.first()?)?;
    let mut field = StructField {
        name: top.name.clone(),
        data_type: top.data_type.clone(),
        nullable: top.nullable,
        comment: top.comment.clone(),
    };
    for name in &path[1..] {
        // inside arrays and maps a path names the element, key or value (as Delta does)
        let inner = match (&field.data_type, name.to_ascii_lowercase().as_str()) {
            (DataType::Array { element, .. }, "element") => Some((**element).clone()),
            (DataType::Map { key, .. }, "key") => Some((**key).clone()),
            (DataType::Map { value, .. }, "value") => Some((**value).clone()),
            _ => None,
        };
        field = match inner {
            Some(data_type) => StructField {
                name: name.clone(),
                data_type,
                nullable: true,
                comment: None,
            },
            None => {
                let DataType::Struct { fields } = &field.data_type else {
                    return None;
                };
                fields
                    .iter()
                    .find(|f| f.name.eq_ignore_ascii_case(name))?
                    .clone()
            }
        };
    }
    Some(field)
}

/// The live comment of a column or nested field (`element`, `key` and
/// `value` name what arrays and maps hold, and have none).
fn field_comment(live: &ObservedTable, path: &FieldPath) -> Option<String> {
    field_at(live, path)?.comment
}
