//! What schemas and tables share: their names (each alone, against the other
//! tables of a schema and the other schemas of a catalog), comments, properties
//! and grants.

use std::collections::BTreeMap;

use super::columns::LOOKALIKE_FIX;
use super::{MAX_COMMENT_BYTES, RESERVED_PROPERTIES};
use crate::spec::crd::{DeltaSchema, DeltaTable, GrantSpec};
use crate::spec::error::SpecError;
use crate::spec::load::{Loaded, Manifests};
use crate::spec::lower::table_ref_of;
use delta_operator_core::model::names::{MAX_NAME_BYTES, object_name_problem, printable};
use delta_operator_core::model::privilege::Privilege;
use delta_operator_core::model::suggest::{self, edit_distance};

/// Tables of one schema whose names are one name to a reader (`spec::names`):
/// the later is refused, naming both and where each is declared.
pub(super) fn lookalike_tables(m: &Manifests) -> Vec<SpecError> {
    type Named<'a> = (&'a Loaded<DeltaTable>, String);
    let mut by_schema: BTreeMap<(String, String), Vec<Named>> = BTreeMap::new();
    for t in &m.tables {
        if let Some(r) = table_ref_of(m, t) {
            let name = t.resource.spec.name.clone().unwrap_or_else(|| t.name());
            by_schema
                .entry((r.catalog.clone(), r.schema.clone()))
                .or_default()
                .push((t, name));
        }
    }
    let mut errors = Vec::new();
    for tables in by_schema.values() {
        let listed: Vec<(&str, String)> = tables
            .iter()
            .map(|(t, n)| {
                let field = if t.resource.spec.name.is_some() {
                    "spec.name"
                } else {
                    "metadata.name"
                };
                (
                    n.as_str(),
                    format!("{field} of {} in {}", t.label(), t.file),
                )
            })
            .collect();
        for (i, j, why) in crate::spec::names::clashes(&listed) {
            let (t, _) = tables[i];
            let field = if t.resource.spec.name.is_some() {
                "spec.name"
            } else {
                "metadata.name"
            };
            errors.push(
                SpecError::new(
                    field,
                    format!(
                        "table '{}' and table '{}' ({}) of the same schema are one name to a reader: {why}",
                        printable(listed[i].0),
                        printable(listed[j].0),
                        listed[j].1
                    ),
                    LOOKALIKE_FIX,
                )
                .in_file(&t.file, Some(&t.label())),
            );
        }
    }
    errors
}

/// DeltaSchemas of one target whose catalog names, or whose schema names in one
/// catalog, are one name to a reader (`spec::names`): the later is refused,
/// naming both and where each is declared. (The same catalog schema declared
/// twice is `duplicate_schemas`' and the controller's; names equal ignoring case
/// are not a clash.)
pub(super) fn lookalike_schemas(m: &Manifests) -> Vec<SpecError> {
    let field = |s: &Loaded<DeltaSchema>| {
        if s.resource.spec.name.is_some() {
            "spec.name"
        } else {
            "metadata.name"
        }
    };
    let name = |s: &Loaded<DeltaSchema>| s.resource.spec.name.clone().unwrap_or_else(|| s.name());
    let mut errors = Vec::new();
    // catalogs of one target: the first schema naming each catalog stands for it
    let mut by_target: BTreeMap<Option<&str>, Vec<&Loaded<DeltaSchema>>> = BTreeMap::new();
    for s in &m.schemas {
        let of_target = by_target
            .entry(s.resource.spec.target.as_deref())
            .or_default();
        if !of_target
            .iter()
            .any(|o| o.resource.spec.catalog == s.resource.spec.catalog)
        {
            of_target.push(s);
        }
    }
    for schemas in by_target.values() {
        let listed: Vec<(&str, String)> = schemas
            .iter()
            .map(|s| {
                (
                    s.resource.spec.catalog.as_str(),
                    format!("spec.catalog of {} in {}", s.label(), s.file),
                )
            })
            .collect();
        for (i, j, why) in crate::spec::names::clashes(&listed) {
            errors.push(
                SpecError::new(
                    "spec.catalog",
                    format!(
                        "catalog '{}' and catalog '{}' ({}) are one name to a reader: {why}",
                        printable(listed[i].0),
                        printable(listed[j].0),
                        listed[j].1
                    ),
                    LOOKALIKE_FIX,
                )
                .in_file(&schemas[i].file, Some(&schemas[i].label())),
            );
        }
    }
    // schemas of one catalog of one target
    type Named<'a> = (&'a Loaded<DeltaSchema>, String);
    let mut by_catalog: BTreeMap<(Option<&str>, &str), Vec<Named>> = BTreeMap::new();
    for s in &m.schemas {
        by_catalog
            .entry((
                s.resource.spec.target.as_deref(),
                s.resource.spec.catalog.as_str(),
            ))
            .or_default()
            .push((s, name(s)));
    }
    for schemas in by_catalog.values() {
        let listed: Vec<(&str, String)> = schemas
            .iter()
            .map(|(s, n)| {
                (
                    n.as_str(),
                    format!("{} of {} in {}", field(s), s.label(), s.file),
                )
            })
            .collect();
        for (i, j, why) in crate::spec::names::clashes(&listed) {
            let (s, _) = schemas[i];
            errors.push(
                SpecError::new(
                    field(s),
                    format!(
                        "schema '{}' and schema '{}' ({}) of the same catalog are one name to a reader: {why}",
                        printable(listed[i].0),
                        printable(listed[j].0),
                        listed[j].1
                    ),
                    LOOKALIKE_FIX,
                )
                .in_file(&s.file, Some(&s.label())),
            );
        }
    }
    errors
}

/// A catalog, schema or table name: what Unity Catalog accepts, and what is
/// safe as a folder of the lake (`model::names`). Tables leave room for the
/// longest suffix the operator appends (its clone beside the table).
pub(super) fn check_name(name: &str, path: &str, max_bytes: usize, e: &mut Vec<SpecError>) {
    if let Some((message, fix)) = object_name_problem(name, max_bytes) {
        let message = if max_bytes < MAX_NAME_BYTES && name.len() > max_bytes {
            format!(
                "{message} (255, less {} for the operator's clone and staging copies beside the table)",
                MAX_NAME_BYTES - max_bytes
            )
        } else {
            message
        };
        e.push(SpecError::new(path, message, fix));
    }
}

/// A comment: at most `MAX_COMMENT_BYTES`, no control characters but newline and tab.
pub(super) fn check_comment(comment: Option<&str>, path: &str, e: &mut Vec<SpecError>) {
    let Some(c) = comment else { return };
    if c.len() > MAX_COMMENT_BYTES {
        e.push(SpecError::new(
            path,
            format!("is {} bytes; the limit is {MAX_COMMENT_BYTES}", c.len()),
            "shorten it, and keep long documentation outside the table (a link in the comment)",
        ));
    } else if let Some(ch) = c
        .chars()
        .find(|ch| ch.is_control() && *ch != '\n' && *ch != '\t')
    {
        e.push(SpecError::new(
            path,
            format!("contains the control character {}", ch.escape_unicode()),
            "remove it (newlines and tabs are fine)",
        ));
    }
}

/// A DeltaSchema's `managedLocation`: a storage URL, `scheme://…` (`abfss://`,
/// `s3://`, `gs://`, …). Anything else (a bare path, `C:\\…`, a typo such as
/// `s3:/bucket`) would reach the CREATE SCHEMA only to be refused there, so it
/// is refused here, at `validate` and admission.
pub(super) fn check_managed_location(location: Option<&str>, e: &mut Vec<SpecError>) {
    let Some(l) = location else { return };
    let path = "spec.managedLocation";
    let fix = "give a storage URL with its scheme, e.g. 'abfss://container@account.dfs.core.windows.net/sales', 's3://bucket/sales' or 'gs://bucket/sales' (a path of an external location you may create managed storage in), or remove spec.managedLocation to use the catalog's";
    let well_formed = l.split_once("://").is_some_and(|(scheme, rest)| {
        let mut chars = scheme.chars();
        scheme.len() >= 2
            && chars.next().is_some_and(|c| c.is_ascii_alphabetic())
            && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
            && !rest.trim_matches('/').is_empty()
    });
    if let Some(ch) = l.chars().find(|c| c.is_control() || c.is_whitespace()) {
        e.push(SpecError::new(
            path,
            format!("contains the character {}", ch.escape_unicode()),
            fix,
        ));
    } else if !well_formed {
        e.push(SpecError::new(
            path,
            format!("'{l}' is not a storage URL (scheme://…)"),
            fix,
        ));
    }
}

/// A name the API server accepts for the resource itself (an RFC 1123 subdomain):
/// lowercase letters, digits, '-' and '.', each '.'-separated part starting and
/// ending with a letter or digit, at most 253 characters.
pub(super) fn check_object_name(name: &str, e: &mut Vec<SpecError>) {
    let alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    let label_ok = |l: &str| {
        l.starts_with(alnum) && l.ends_with(alnum) && l.chars().all(|c| alnum(c) || c == '-')
    };
    if name.len() > 253 || !name.split('.').all(label_ok) {
        e.push(SpecError::new(
            "metadata.name",
            format!("'{name}' is not a valid Kubernetes name (lowercase letters, digits, '-' and '.', starting and ending with a letter or digit, at most 253 characters)"),
            "use a lowercase name like 'order-items' and set spec.name to the table's name",
        ));
    }
}

pub(super) fn check_properties(props: &BTreeMap<String, Option<String>>, e: &mut Vec<SpecError>) {
    for key in props.keys() {
        if RESERVED_PROPERTIES.contains(&key.as_str()) {
            e.push(SpecError::new(
                format!("spec.properties.{key}"),
                "is managed by Delta or by the operator",
                "remove it",
            ));
        }
    }
}

/// Every privilege is one GRANT can write on that kind of securable (they
/// are SQL keywords, never quoted).
pub(super) fn check_grants(grants: &[GrantSpec], known: &[&str], on: &str, e: &mut Vec<SpecError>) {
    for (i, g) in grants.iter().enumerate() {
        for (j, p) in g.privileges.iter().enumerate() {
            let privilege = Privilege::new(p);
            if known.contains(&privilege.as_str()) {
                continue;
            }
            let near = suggest::nearest(
                known.iter().copied(),
                |k| edit_distance(k, privilege.as_str()),
                |_| 2,
            );
            let fix = match near {
                Some(k) => format!("did you mean '{k}'?"),
                None => format!("use one of {}", known.join(", ")),
            };
            e.push(SpecError::new(
                format!("spec.grants[{i}].privileges[{j}]"),
                format!("'{}' is not a {on} privilege", printable(p)),
                fix,
            ));
        }
    }
}
