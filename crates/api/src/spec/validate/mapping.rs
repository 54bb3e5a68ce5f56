//! Names Delta refuses unless column mapping is on.

use crate::spec::crd::{ColumnSpec, DeltaTableSpec};
use crate::spec::error::SpecError;
use crate::spec::load::Manifests;
use crate::spec::lower::schema_of;
use delta_operator_core::model::DataType;
use delta_operator_core::model::names::{NEEDS_COLUMN_MAPPING, printable};
use delta_operator_core::model::type_syntax::type_from_value;

/// A column or field name Delta refuses without column mapping (`NEEDS_COLUMN_MAPPING`),
/// in a table whose spec turns column mapping off (`delta.columnMapping.mode: none`):
/// no backend can hold it, so the plan's `NameNeedsColumnMapping` is given here already.
/// (Where the spec is silent the answer depends on the backend: Databricks and Spark turn
/// mapping on for such a name, the lake refuses it: see `names_needing_column_mapping`.)
pub(super) fn check_mapping_off(
    spec: &DeltaTableSpec,
    c: &ColumnSpec,
    ty: &DataType,
    path: &str,
    e: &mut Vec<SpecError>,
) {
    if mapping_mode(spec).is_some_and(|m| m.eq_ignore_ascii_case("none")) {
        mapping_name_errors(
            c,
            ty,
            path,
            &format!("spec.properties sets {COLUMN_MAPPING_MODE}: none"),
            e,
        );
    }
}

/// The spec's `delta.columnMapping.mode`, when it sets one.
pub(super) fn mapping_mode(spec: &DeltaTableSpec) -> Option<&str> {
    spec.properties
        .get(COLUMN_MAPPING_MODE)
        .and_then(|v| v.as_deref())
}

/// An error for each name of column `c` (and its nested fields) that needs column mapping.
pub(super) fn mapping_name_errors(
    c: &ColumnSpec,
    ty: &DataType,
    path: &str,
    because: &str,
    e: &mut Vec<SpecError>,
) {
    let mut names = vec![c.name.clone()];
    field_paths(&c.name, ty, &mut names);
    for name in names {
        let last = name.rsplit('.').next().unwrap_or(&name);
        if let Some(ch) = last.chars().find(|ch| NEEDS_COLUMN_MAPPING.contains(ch)) {
            e.push(SpecError::new(
                format!("{path}.name"),
                format!(
                    "'{}' contains {ch:?}, which Delta refuses in a column name unless column mapping is on, and {because}",
                    printable(&name)
                ),
                format!("rename it (letters, digits and '_' are always safe), or set {COLUMN_MAPPING_MODE}: name in spec.properties where the backend supports it"),
            ));
        }
    }
}

/// What `plan` refuses as `NameNeedsColumnMapping` on a backend that cannot turn
/// column mapping on for a name (the lake), decided from the manifests and the
/// backend each table's schema targets: names that need column mapping in
/// tables whose spec does not turn it on (`name` or `id`). `cannot_map` says,
/// for a DeltaSchema's `spec.target` (None: the default target), whether its
/// backend is such a one. `validate` on the command line adds these.
pub fn names_needing_column_mapping(
    m: &Manifests,
    cannot_map: impl Fn(Option<&str>) -> bool,
) -> Vec<SpecError> {
    let mut errors = Vec::new();
    for t in &m.tables {
        let spec = &t.resource.spec;
        let Some(s) = schema_of(m, t) else { continue };
        if mapping_mode(spec).is_some_and(|m| m == "name" || m == "id")
            || !cannot_map(s.resource.spec.target.as_deref())
        {
            continue;
        }
        let mut e = Vec::new();
        for (i, c) in spec.columns.iter().enumerate() {
            if let Some(Ok(ty)) = c.data_type.as_ref().map(type_from_value) {
                mapping_name_errors(
                    c,
                    &ty,
                    &format!("spec.columns[{i}]"),
                    "the target's backend (the lake) cannot turn it on for it",
                    &mut e,
                );
            }
        }
        errors.extend(e.into_iter().map(|x| x.in_file(&t.file, Some(&t.label()))));
    }
    errors
}

pub(super) const COLUMN_MAPPING_MODE: &str = "delta.columnMapping.mode";

/// Every nested field name a type holds, as dotted paths under `prefix`.
pub(super) fn field_paths(prefix: &str, t: &DataType, out: &mut Vec<String>) {
    match t {
        DataType::Struct { fields } => {
            for f in fields {
                let p = format!("{prefix}.{}", f.name);
                out.push(p.clone());
                field_paths(&p, &f.data_type, out);
            }
        }
        DataType::Array { element, .. } => field_paths(prefix, element, out),
        DataType::Map { key, value, .. } => {
            field_paths(prefix, key, out);
            field_paths(prefix, value, out);
        }
        _ => {}
    }
}
