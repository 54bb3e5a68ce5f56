//! One table's spec as a whole: its columns, comment, properties, layout
//! (partitioning and clustering), constraints, grants, and what a narrow scope refuses.

use std::collections::BTreeSet;

use super::MAX_CLUSTER_KEYS;
use super::columns::{ColumnRefs, check_column_count, check_columns};
use super::constraints::check_constraints;
use super::objects::{check_comment, check_grants, check_properties};
use crate::spec::crd::{DeletionPolicy, DeltaTable, DeltaTableSpec};
use crate::spec::error::SpecError;
use crate::spec::load::Loaded;
use delta_operator_core::model::privilege;

pub(super) fn check_table(t: &Loaded<DeltaTable>, e: &mut Vec<SpecError>) {
    let spec = &t.resource.spec;
    check_column_count(spec, e);
    check_comment(spec.comment.as_deref(), "spec.comment", e);
    let names = check_columns(spec, e);
    check_properties(&spec.properties, e);
    let refs = ColumnRefs {
        names: &names,
        column_list: spec.columns.iter().map(|c| c.name.as_str()).collect(),
    };
    check_partitioning_and_clustering(spec, &refs, e);
    check_constraints(spec, &refs, e);
    check_grants(&t.resource.spec.grants, privilege::KNOWN, "table", e);
    check_scope(spec, e);
    if let Some(m) = &spec.maintenance {
        let known = |c: &str| (!refs.known(c)).then(|| refs.missing(String::new(), c));
        let cols = crate::spec::maintenance::TableColumns {
            known: &known,
            partitioned_by: spec.partitioned_by.as_deref().unwrap_or_default(),
            clustered: spec.cluster_by.as_ref().is_some_and(|k| !k.is_empty()),
        };
        crate::spec::maintenance::check(m, "spec.maintenance", Some(&cols), e);
    }
}

/// Below `Full`, the spec may not ask for what only a table's maker does:
/// renames, conversions, identity and generated columns, a layout, a safety
/// clone for rewrites it never plans, or a drop when the resource goes.
fn check_scope(spec: &DeltaTableSpec, e: &mut Vec<SpecError>) {
    if spec.scope.is_full() {
        return;
    }
    let scope = format!("{:?}", spec.scope);
    let mut refuse = |path: String, what: &str| {
        e.push(SpecError::new(
            path,
            format!("{what} changes the table's shape, which scope {scope} leaves to the tool that owns the table"),
            "remove it, or set spec.scope: Full to have the operator manage the whole table",
        ))
    };
    for (i, c) in spec.columns.iter().enumerate() {
        let at = |f: &str| format!("spec.columns[{i}].{f}");
        if c.renamed_from.is_some() {
            refuse(at("renamedFrom"), "a rename");
        }
        if c.using.is_some() {
            refuse(at("using"), "a conversion");
        }
        if c.identity.is_some() {
            refuse(at("identity"), "an identity column");
        }
        if c.generated.is_some() {
            refuse(at("generated"), "a generated column");
        }
    }
    if spec.partitioned_by.is_some() {
        refuse("spec.partitionedBy".into(), "partitioning");
    }
    if spec.cluster_by.is_some() {
        refuse("spec.clusterBy".into(), "clustering");
    }
    if spec.safety.as_ref().is_some_and(|s| s.clone_before_rewrite) {
        refuse("spec.safety.cloneBeforeRewrite".into(), "a rewrite's clone");
    }
    if spec.deletion_policy == DeletionPolicy::Delete {
        e.push(SpecError::new(
            "spec.deletionPolicy",
            format!("Delete would drop the table when the resource goes, and scope {scope} never drops a table the operator did not take whole"),
            "use deletionPolicy: Retain (the default), or set spec.scope: Full",
        ));
    }
}

/// partitionedBy and clusterBy: each column once and declared, at least one
/// data column, at most MAX_CLUSTER_KEYS keys, and not both.
pub(super) fn check_partitioning_and_clustering(
    spec: &DeltaTableSpec,
    refs: &ColumnRefs,
    e: &mut Vec<SpecError>,
) {
    for (field, list) in [
        ("partitionedBy", &spec.partitioned_by),
        ("clusterBy", &spec.cluster_by),
    ] {
        let mut seen = BTreeSet::new();
        for (i, col) in list.iter().flatten().enumerate() {
            if !seen.insert(col.to_lowercase()) {
                e.push(SpecError::new(
                    format!("spec.{field}[{i}]"),
                    format!("'{col}' is listed twice"),
                    "list each column once",
                ));
            }
        }
    }
    for (i, col) in spec.partitioned_by.iter().flatten().enumerate() {
        if !refs.known(col) {
            e.push(refs.missing(format!("spec.partitionedBy[{i}]"), col));
        }
    }
    if let Some(parts) = spec.partitioned_by.as_ref().filter(|p| !p.is_empty())
        && spec
            .columns
            .iter()
            .all(|c| parts.iter().any(|p| p.eq_ignore_ascii_case(&c.name)))
    {
        e.push(SpecError::new("spec.partitionedBy", "every column is a partition column", "keep at least one column out of partitionedBy: Delta keeps partition values in folder names, so a table needs one data column"));
    }
    if let Some(keys) = &spec.cluster_by {
        for (i, col) in keys.iter().enumerate() {
            if !refs.known(col) {
                e.push(refs.missing(format!("spec.clusterBy[{i}]"), col));
            }
        }
        if keys.len() > MAX_CLUSTER_KEYS {
            e.push(SpecError::new(
                "spec.clusterBy",
                format!(
                    "{} keys; liquid clustering takes at most {MAX_CLUSTER_KEYS}",
                    keys.len()
                ),
                "keep the 4 most selective keys",
            ));
        }
        if !keys.is_empty() && spec.partitioned_by.as_ref().is_some_and(|p| !p.is_empty()) {
            e.push(SpecError::new(
                "spec.clusterBy",
                "a table is either partitioned or clustered, not both",
                "remove partitionedBy or clusterBy",
            ));
        }
    }
}
