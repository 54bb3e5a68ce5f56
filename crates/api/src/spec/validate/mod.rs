//! Offline validation: every rule a manifest set can break without looking at
//! a live table. All errors are collected; nothing stops at the first.

mod catalog_objects;
mod columns;
mod constraints;
mod foreign_keys;
mod hand_off;
mod lake_functions;
mod mapping;
mod objects;
mod table;

pub use catalog_objects::{
    BODY_FIX, FUNCTION_PRIVILEGES, QUERY_FIX, VIEW_PRIVILEGES, VOLUME_PRIVILEGES, check_function,
    check_objects, check_view, check_volume,
};
pub use columns::{column_type, type_error};
pub(crate) use constraints::CHECK_FIX;
pub use foreign_keys::{find_cycles, foreign_key_verdicts};
pub use hand_off::{declared_hand_offs, handed_off_by_targets};
pub use lake_functions::functions_the_lake_lacks;
pub use mapping::names_needing_column_mapping;
use objects::{
    check_comment, check_grants, check_managed_location, check_name, check_object_name,
    check_properties, lookalike_schemas, lookalike_tables,
};
use table::check_table;

use std::collections::{BTreeMap, HashMap};

use super::crd::{DeltaSchema, DeltaTable};
use super::error::SpecError;
use super::load::{Loaded, Manifests};
use super::lower::{schema_of, table_ref_of};
use delta_operator_core::model::names::{MAX_NAME_BYTES, MAX_TABLE_NAME_BYTES};
use delta_operator_core::model::privilege;
use delta_operator_core::model::{OWNER_PROPERTY, TableRef};

/// Properties a spec may not set: the protocol and our own bookkeeping.
pub const RESERVED_PROPERTIES: &[&str] = &[
    OWNER_PROPERTY,
    delta_operator_core::model::CONSTRAINTS_PROPERTY,
    delta_operator_core::model::PUT_BACK_PROPERTY,
    "delta.minReaderVersion",
    "delta.minWriterVersion",
    "delta.columnMapping.maxColumnId",
];

pub const MAX_CLUSTER_KEYS: usize = 4;

/// The longest comment accepted (bytes).
pub const MAX_COMMENT_BYTES: usize = 16 * 1024;

/// The most columns a table may declare.
pub const MAX_COLUMNS: usize = 4096;

/// The most CHECK constraints a table may declare.
pub const MAX_CHECKS: usize = 1000;

/// How the two errors about a resource that is not there (yet) end: a table's
/// DeltaSchema, a foreign key's table. In a cluster they may arrive later
/// (`kubectl apply -f dir/` goes by file name), so the admission webhook lets
/// them through and the operator reports them (SchemaNotFound, InvalidSpec)
/// until they resolve.
pub const NOT_IN_MANIFESTS: &str = "in these manifests";

/// Whether an error only says another resource is missing (see `NOT_IN_MANIFESTS`).
pub fn names_a_missing_resource(e: &SpecError) -> bool {
    (e.path == "spec.schemaRef" || e.path.ends_with(".foreignKey.references"))
        && e.message.ends_with(NOT_IN_MANIFESTS)
}

/// Every error in the manifest set.
pub fn validate(m: &Manifests) -> Vec<SpecError> {
    let mut errors: Vec<SpecError> = m.schemas.iter().flat_map(check_schema).collect();
    let mut seen: BTreeMap<TableRef, &Loaded<DeltaTable>> = BTreeMap::new();
    for t in &m.tables {
        errors.extend(check_table_entry(m, t, &mut seen));
    }
    errors.extend(lookalike_tables(m));
    errors.extend(lookalike_schemas(m));
    errors.extend(duplicate_schemas(m));
    errors.extend(check_objects(m));
    errors.extend(foreign_key_verdicts(m).into_iter().map(|(_, e)| e));
    errors
}

/// One DeltaSchema on its own: its names, comment, properties and grants.
fn check_schema(s: &Loaded<DeltaSchema>) -> Vec<SpecError> {
    let name = s.resource.spec.name.clone().unwrap_or_else(|| s.name());
    let mut e = Vec::new();
    check_name(
        &s.resource.spec.catalog,
        "spec.catalog",
        MAX_NAME_BYTES,
        &mut e,
    );
    check_name(
        &name,
        if s.resource.spec.name.is_some() {
            "spec.name"
        } else {
            "metadata.name"
        },
        MAX_NAME_BYTES,
        &mut e,
    );
    check_comment(s.resource.spec.comment.as_deref(), "spec.comment", &mut e);
    check_managed_location(s.resource.spec.managed_location.as_deref(), &mut e);
    check_properties(&s.resource.spec.properties, &mut e);
    check_grants(
        &s.resource.spec.grants,
        privilege::SCHEMA_KNOWN,
        "schema",
        &mut e,
    );
    check_object_name(&s.name(), &mut e);
    if let Some(h) = &s.resource.spec.hand_off {
        hand_off::check_hand_off(h, "spec.handOff", &mut e);
    }
    if let Some(m) = &s.resource.spec.maintenance {
        crate::spec::maintenance::check(m, "spec.maintenance", None, &mut e);
    }
    e.into_iter()
        .map(|x| x.in_file(&s.file, Some(&s.label())))
        .collect()
}

/// One DeltaTable: its schema is declared, no earlier table (in `seen`) is the
/// same table, its names, and its spec (`check_table`).
fn check_table_entry<'a>(
    m: &Manifests,
    t: &'a Loaded<DeltaTable>,
    seen: &mut BTreeMap<TableRef, &'a Loaded<DeltaTable>>,
) -> Vec<SpecError> {
    let mut e = Vec::new();
    let spec = &t.resource.spec;
    if schema_of(m, t).is_none() {
        let fix = match m.schemas.iter().find(|s| s.name() == spec.schema_ref) {
            Some(s) => format!(
                "the DeltaSchema '{}' is in namespace '{}'; a table must be in its schema's namespace",
                spec.schema_ref,
                s.namespace()
            ),
            None => format!(
                "add a DeltaSchema named '{}' in namespace '{}', or correct the name",
                spec.schema_ref,
                t.namespace()
            ),
        };
        e.push(SpecError::new(
            "spec.schemaRef",
            format!("no DeltaSchema '{}' {NOT_IN_MANIFESTS}", spec.schema_ref),
            fix,
        ));
    } else if let Some(r) = table_ref_of(m, t) {
        if let Some(other) = seen.get(&r) {
            e.push(SpecError::new(
                "spec.name",
                format!(
                    "table {r} is also declared by {} in {}",
                    other.label(),
                    other.file
                ),
                "declare each table in exactly one manifest",
            ));
        } else {
            seen.insert(r, t);
        }
    }
    check_name(
        spec.name.as_deref().unwrap_or(&t.name()),
        if spec.name.is_some() {
            "spec.name"
        } else {
            "metadata.name"
        },
        MAX_TABLE_NAME_BYTES,
        &mut e,
    );
    check_object_name(&t.name(), &mut e);
    check_table(t, &mut e);
    hand_off::table_and_schema_hand_offs(m, t, &mut e);
    e.into_iter()
        .map(|x| x.in_file(&t.file, Some(&t.label())))
        .collect()
}

/// Two or more DeltaSchemas with one namespace and name: one error per such name.
fn duplicate_schemas(m: &Manifests) -> Vec<SpecError> {
    let mut schemas: HashMap<(String, String), usize> = HashMap::new();
    for s in &m.schemas {
        *schemas.entry((s.namespace(), s.name())).or_default() += 1;
    }
    let mut duplicates: Vec<_> = schemas.into_iter().filter(|(_, n)| *n > 1).collect();
    duplicates.sort();
    let mut errors = Vec::new();
    for ((ns, name), n) in duplicates {
        let files: Vec<&str> = m
            .schemas
            .iter()
            .filter(|s| s.namespace() == ns && s.name() == name)
            .map(|s| s.file.as_str())
            .collect();
        let e = SpecError::new(
            "metadata.name",
            format!(
                "{n} DeltaSchemas named {ns}/{name} (in {})",
                files.join(", ")
            ),
            "keep one",
        );
        errors.push(e.in_file(files[0], Some(&format!("DeltaSchema {ns}/{name}"))));
    }
    errors
}

/// `validate` without the foreign-key verdicts across the manifest set: what
/// refuses the whole set. A foreign-key verdict refuses its own table only
/// (`foreign_key_verdicts`), and its dependents are blocked.
pub fn validate_each(m: &Manifests) -> Vec<SpecError> {
    let verdicts = foreign_key_verdicts(m);
    validate(m)
        .into_iter()
        .filter(|e| !verdicts.iter().any(|(_, v)| v == e))
        .collect()
}
