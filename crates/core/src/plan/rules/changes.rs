//! Rules about one table's creation or update, change by change, and the aspects a backend
//! has no notion of.

use super::rewrite::{
    check_mapped_table_writes, check_rewrite_allowed, check_rewrite_keeps_not_null,
    check_using_reads, conversion_failures, note_missing_conversion,
};
use super::*;

/// An aspect this backend has no notion of.
pub(super) fn unsupported(aspect: &str, subject: &str, caps: &Capabilities) -> RuleFailure {
    fail(
        Rule::NotSupportedByBackend,
        subject,
        format!("the {} backend cannot manage {aspect}", caps.backend),
        format!(
            "remove {subject} from the spec, or use a target whose backend supports {aspect} (databricks)"
        ),
    )
}

pub(super) fn check_create(
    desired: &DesiredTable,
    caps: &Capabilities,
    out: &mut Vec<RuleFailure>,
) {
    let set_tags =
        |m: &std::collections::BTreeMap<String, Option<String>>| m.values().any(Option::is_some);
    if set_tags(&desired.tags) && !caps.tags {
        out.push(unsupported("tags", "spec.tags", caps));
    }
    if !desired.grants.is_empty() && !caps.grants {
        out.push(unsupported("grants", "spec.grants", caps));
    }
    if desired.owner.is_some() && !caps.owner {
        out.push(unsupported("owners", "spec.owner", caps));
    }
    if desired.cluster_by.as_ref().is_some_and(|k| !k.is_empty()) && !caps.clustering {
        out.push(unsupported("liquid clustering", "spec.clusterBy", caps));
    }
    if (desired.primary_key.is_some() || !desired.foreign_keys.is_empty())
        && !caps.primary_and_foreign_keys
    {
        out.push(unsupported(
            "primary and foreign keys",
            "spec.constraints",
            caps,
        ));
    }
    if !desired.checks.is_empty() && !caps.check_constraints {
        out.push(unsupported("CHECK constraints", "spec.constraints", caps));
    }
    for c in &desired.columns {
        let at = |f: &str| format!("column {}.{f}", c.name);
        if set_tags(&c.tags) && !caps.tags {
            out.push(unsupported("tags", &at("tags"), caps));
        }
        if c.mask.is_some() && !caps.masks {
            out.push(unsupported("column masks", &at("mask"), caps));
        }
        if c.identity.is_some() && !caps.identity_columns {
            out.push(unsupported("identity columns", &at("identity"), caps));
        }
        if c.default.is_some() && !caps.default_values {
            out.push(unsupported("default values", &at("default"), caps));
        }
        if c.generated.is_some() && !caps.generated_columns {
            out.push(unsupported("generated columns", &at("generated"), caps));
        }
    }
}

pub(super) fn check_update(
    desired: &DesiredTable,
    live: &ObservedTable,
    diff: &TableDiff,
    caps: &Capabilities,
    out: &mut Vec<RuleFailure>,
) {
    let rewriting = diff.changes.iter().any(|c| needs_rewrite(c, caps));
    let mut no_conversion: Vec<(String, NoConversion)> = Vec::new();
    for change in &diff.changes {
        if strategy_for(change, caps) == Strategy::Unsupported {
            out.push(fail(
                Rule::NotSupportedByBackend,
                describe_subject(change),
                format!("the {} backend cannot {}", caps.backend, verb(change)),
                "leave the column as it is live",
            ));
        }
        out.extend(unsupported_aspect(change, caps));
        check_change(desired, live, change, caps, &mut no_conversion, out);
    }
    check_mapped_table_writes(live, diff, rewriting, caps, out);
    // a backfill writes data from a `using:` over the live rows, as a rewrite does
    let backfilling = caps.backfill_in_place
        && diff.changes.iter().any(|c| {
            matches!(c, Change::AddColumn { path, field } if path.len() == 1 && !field.nullable)
        });
    if rewriting || backfilling {
        check_using_reads(desired, live, out);
    }
    conversion_failures(no_conversion, out);
    if rewriting || backfilling {
        check_rewrite_allowed(live, out);
        check_rewrite_keeps_not_null(desired, caps, out);
    }
}

/// A change to an aspect the backend has no notion of (tags, grants, keys, ...).
pub(super) fn unsupported_aspect(change: &Change, caps: &Capabilities) -> Option<RuleFailure> {
    match change {
        Change::SetTableTag { .. } | Change::UnsetTableTag { .. } if !caps.tags => {
            Some(unsupported("tags", "spec.tags", caps))
        }
        Change::SetColumnTag { column, .. } | Change::UnsetColumnTag { column, .. }
            if !caps.tags =>
        {
            Some(unsupported("tags", &format!("column {column}.tags"), caps))
        }
        Change::Grant { .. } | Change::Revoke { .. } if !caps.grants => {
            Some(unsupported("grants", "spec.grants", caps))
        }
        Change::SetOwner { .. } if !caps.owner => Some(unsupported("owners", "spec.owner", caps)),
        Change::SetMask { column, .. } if !caps.masks => Some(unsupported(
            "column masks",
            &format!("column {column}.mask"),
            caps,
        )),
        Change::SetDefault { column, .. } | Change::DropDefault { column, .. }
            if !caps.default_values =>
        {
            Some(unsupported(
                "default values",
                &format!("column {column}.default"),
                caps,
            ))
        }
        Change::SetPrimaryKey { .. }
        | Change::AddForeignKey { .. }
        | Change::DropForeignKey { .. }
            if !caps.primary_and_foreign_keys =>
        {
            Some(unsupported(
                "primary and foreign keys",
                "spec.constraints",
                caps,
            ))
        }
        Change::SetClustering { .. } if !caps.clustering => {
            Some(unsupported("liquid clustering", "spec.clusterBy", caps))
        }
        Change::AddCheck { .. } | Change::DropCheck { .. } if !caps.check_constraints => {
            Some(unsupported("CHECK constraints", "spec.constraints", caps))
        }
        _ => None,
    }
}

/// What one change would break on this table, beyond the backend's aspects;
/// a type change the rewrite cannot convert by itself is noted in
/// `no_conversion`, reported after the table-wide checks.
pub(super) fn check_change(
    desired: &DesiredTable,
    live: &ObservedTable,
    change: &Change,
    caps: &Capabilities,
    no_conversion: &mut Vec<(String, NoConversion)>,
    out: &mut Vec<RuleFailure>,
) {
    match change {
        Change::AddColumn { path, field } => check_add_column(desired, path, field, caps, out),
        Change::ChangeType { path, .. } if strategy_for(change, caps) == Strategy::Rewrite => {
            note_missing_conversion(desired, live, path, no_conversion)
        }
        Change::SetNullability {
            path,
            nullable: false,
        } if path.len() > 1 && strategy_for(change, caps) == Strategy::Rewrite => {
            out.push(fail(
                Rule::NestedNotNullNeedsInPlaceAlter,
                path_string(path),
                format!(
                    "the {} backend cannot prove a nested field has no NULLs during a rewrite",
                    caps.backend
                ),
                "keep the nested field nullable",
            ));
        }
        Change::SetProperty { key, from, to } if key == COLUMN_MAPPING_MODE => {
            let from = from.as_deref().unwrap_or("none");
            if !(from == "none" && to == "name" && caps.column_mapping_on_existing_tables) {
                out.push(fail(
                    Rule::PropertyTransitionNotSupported,
                    format!("spec.properties.{key}"),
                    format!("{COLUMN_MAPPING_MODE} cannot change from '{from}' to '{to}' on an existing table{}", if caps.column_mapping_on_existing_tables { String::new() } else { format!(" on the {} backend (only at create)", caps.backend) }),
                    format!("keep '{from}'"),
                ));
            }
        }
        Change::UnsetProperty { key, .. } if key == COLUMN_MAPPING_MODE => out.push(fail(
            Rule::PropertyTransitionNotSupported,
            format!("spec.properties.{key}"),
            "column mapping cannot be turned off again",
            "remove the `null` for this key",
        )),
        _ => {}
    }
}

/// A column added to a table that has rows: NOT NULL needs `using:`, and
/// identity, generated, masked or tagged columns need what the backend allows.
pub(super) fn check_add_column(
    desired: &DesiredTable,
    path: &[String],
    field: &StructField,
    caps: &Capabilities,
    out: &mut Vec<RuleFailure>,
) {
    let using = desired.column(&path[0]).and_then(|c| c.using.as_ref());
    if !field.nullable && (path.len() > 1 || using.is_none()) {
        out.push(fail(
            Rule::NonNullableColumnAdd,
            path_string(path),
            "a NOT NULL column cannot be added to a table that has rows: they would have no value",
            "add it nullable first; or, for a top-level column, declare `using:` with the SQL that fills existing rows",
        ));
    }
    let column = desired.column(&path[0]);
    if path.len() == 1 && column.is_some_and(|c| c.generated.is_some() || c.identity.is_some()) {
        out.push(fail(
            Rule::ColumnKindCannotChange,
            path_string(path),
            "identity and generated columns can only be declared when the table is created",
            "add it as a plain column, or recreate the table",
        ));
    }
    if path.len() == 1 && column.is_some_and(|c| c.mask.is_some()) && !caps.masks {
        out.push(unsupported(
            "column masks",
            &format!("column {}.mask", path[0]),
            caps,
        ));
    }
    if path.len() == 1 && column.is_some_and(|c| c.tags.values().any(Option::is_some)) && !caps.tags
    {
        out.push(unsupported(
            "tags",
            &format!("column {}.tags", path[0]),
            caps,
        ));
    }
}
