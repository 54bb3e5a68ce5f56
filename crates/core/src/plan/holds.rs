//! "Is this step's change already true of the live table?" The executor asks
//! before every step and skips what holds, so a rerun is a no-op.

use super::change::FieldPath;
use super::diff::same_shape;
use super::steps::{Action, RewritePhase};
use crate::model::property::{self, ColumnMapping};
use crate::model::{DataType, OWNER_PROPERTY, ObservedTable, StructField};

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

pub fn holds(action: &Action, live: Option<&ObservedTable>) -> bool {
    let Some(live) = live else {
        return matches!(action, Action::DropTable);
    };
    match action {
        Action::CreateTable { .. } => true,
        Action::DropTable => false,
        Action::Claim {
            marker,
            constraints,
        } => {
            live.properties.get(OWNER_PROPERTY) == Some(marker)
                && constraints.as_ref().is_none_or(|c| {
                    live.properties.get(crate::model::CONSTRAINTS_PROPERTY) == Some(c)
                })
        }
        Action::SetTableComment { comment } => live.comment.as_deref().unwrap_or("") == comment,
        Action::SetProperties { properties } => properties
            .iter()
            .all(|(k, v)| live.properties.get(k) == Some(v)),
        Action::UnsetProperties { keys } => keys.iter().all(|k| !live.properties.contains_key(k)),
        Action::SetTableTags { tags } => tags.iter().all(|(k, v)| live.tags.get(k) == Some(v)),
        Action::UnsetTableTags { keys } => keys.iter().all(|k| !live.tags.contains_key(k)),
        Action::EnableColumnMapping => ColumnMapping::of(&live.properties).is_enabled(),
        Action::EnableTypeWidening => {
            property::is_true(&live.properties, property::ENABLE_TYPE_WIDENING)
        }
        Action::EnableTimestampNtz => live
            .properties
            .get(property::FEATURE_TIMESTAMP_NTZ)
            .is_some_and(|v| v == property::FEATURE_SUPPORTED),
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
        Action::AddCheck { check } => live
            .checks
            .iter()
            .any(|c| c.name.eq_ignore_ascii_case(&check.name)),
        Action::DropCheck { name } => !live
            .checks
            .iter()
            .any(|c| c.name.eq_ignore_ascii_case(name)),
        Action::AddChecks { checks } => checks.iter().all(|check| {
            live.checks
                .iter()
                .any(|c| c.name.eq_ignore_ascii_case(&check.name))
        }),
        Action::DropChecks { names } => names.iter().all(|name| {
            !live
                .checks
                .iter()
                .any(|c| c.name.eq_ignore_ascii_case(name))
        }),
        Action::SetPrimaryKey { key, .. } => live
            .primary_key
            .as_ref()
            .is_some_and(|k| k.columns == key.columns),
        Action::AddForeignKey { key } => live
            .foreign_keys
            .iter()
            .any(|k| k.references == key.references && k.columns == key.columns),
        Action::DropForeignKey { key } => !live
            .foreign_keys
            .iter()
            .any(|k| k.references == key.references && k.columns == key.columns),
        Action::SetClustering { keys } => live.cluster_by.clone().unwrap_or_default() == *keys,
        // the staging copy is not part of the table: dropping it is idempotent in the backend
        Action::Rewrite {
            phase: RewritePhase::DropStaging,
            ..
        } => false,
        // the clone is another table: taking it is idempotent in the backend
        Action::CloneTable { .. } => false,
        Action::Rewrite { rewrite, .. } => {
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
        Action::Grant {
            principal,
            privileges,
        } => privileges.iter().all(|p| {
            live.grants
                .iter()
                .any(|g| g.principal.eq_ignore_ascii_case(principal) && g.privileges.contains(p))
        }),
        Action::Revoke {
            principal,
            privileges,
        } => privileges.iter().all(|p| {
            !live
                .grants
                .iter()
                .any(|g| g.principal.eq_ignore_ascii_case(principal) && g.privileges.contains(p))
        }),
        Action::SetOwner { owner } => live.owner.as_deref() == Some(owner.as_str()),
        Action::RemoveLeftovers { .. } => live.leftovers.is_empty(),
        // filled and set NOT NULL already: nothing is left to fill
        Action::Backfill { column, .. } => live.column(column).is_some_and(|c| !c.nullable),
    }
}
