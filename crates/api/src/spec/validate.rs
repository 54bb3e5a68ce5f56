//! Offline validation: every rule a manifest set can break without looking at
//! a live table. All errors are collected; nothing stops at the first.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::crd::{
    CheckSpec, ColumnSpec, Constraint, DeltaTable, DeltaTableSpec, ForeignKeySpec, GrantSpec,
    PrimaryKeySpec,
};
use super::error::SpecError;
use super::load::{Loaded, Manifests};
use super::lower::{qualified_reference, schema_of, table_ref_of};
use delta_operator_core::model::names::{
    MAX_NAME_BYTES, MAX_TABLE_NAME_BYTES, NEEDS_COLUMN_MAPPING, column_name_problem,
    object_name_problem, printable,
};
use delta_operator_core::model::privilege::{self, Privilege};
use delta_operator_core::model::suggest::{self, edit_distance};
use delta_operator_core::model::type_syntax::{TypeError, type_from_value};
use delta_operator_core::model::{DataType, OWNER_PROPERTY, TableRef};

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
    let mut errors = Vec::new();
    let mut schemas: HashMap<(String, String), usize> = HashMap::new();
    for s in &m.schemas {
        let key = (s.namespace(), s.name());
        *schemas.entry(key).or_default() += 1;
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
        check_properties(&s.resource.spec.properties, &mut e);
        check_grants(
            &s.resource.spec.grants,
            privilege::SCHEMA_KNOWN,
            "schema",
            &mut e,
        );
        check_object_name(&s.name(), &mut e);
        errors.extend(e.into_iter().map(|x| x.in_file(&s.file, Some(&s.label()))));
    }
    let mut seen: BTreeMap<TableRef, &Loaded<DeltaTable>> = BTreeMap::new();
    for t in &m.tables {
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
        errors.extend(e.into_iter().map(|x| x.in_file(&t.file, Some(&t.label()))));
    }
    errors.extend(lookalike_tables(m));
    let mut duplicates: Vec<_> = schemas.into_iter().filter(|(_, n)| *n > 1).collect();
    duplicates.sort();
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
    errors.extend(foreign_key_verdicts(m).into_iter().map(|(_, e)| e));
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

/// Tables of one schema whose names are one name to a reader (`spec::names`):
/// the later is refused, naming both and where each is declared.
fn lookalike_tables(m: &Manifests) -> Vec<SpecError> {
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
        for (i, j, why) in super::names::clashes(&listed) {
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

/// A catalog, schema or table name: what Unity Catalog accepts, and what is
/// safe as a folder of the lake (`model::names`). Tables leave room for the
/// longest suffix the operator appends (its clone beside the table).
fn check_name(name: &str, path: &str, max_bytes: usize, e: &mut Vec<SpecError>) {
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
fn check_comment(comment: Option<&str>, path: &str, e: &mut Vec<SpecError>) {
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

/// A name the API server accepts for the resource itself (an RFC 1123 subdomain):
/// lowercase letters, digits, '-' and '.', each '.'-separated part starting and
/// ending with a letter or digit, at most 253 characters.
fn check_object_name(name: &str, e: &mut Vec<SpecError>) {
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

fn check_properties(props: &BTreeMap<String, Option<String>>, e: &mut Vec<SpecError>) {
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

/// Parses a column's type, reporting the error at its path.
pub fn column_type(c: &ColumnSpec, path: &str, e: &mut Vec<SpecError>) -> Option<DataType> {
    match type_from_value(&c.data_type) {
        Ok(t) => Some(t),
        Err(err) => {
            e.push(type_error(&format!("{path}.type"), &err));
            None
        }
    }
}

/// A type error at `path`, with the nearest type as the fix when there is one.
pub fn type_error(path: &str, err: &TypeError) -> SpecError {
    let fix = match &err.suggestion {
        Some(s) => format!("did you mean '{s}'?"),
        None => "see the type reference in the README (e.g. bigint, decimal(18,2), array<string>, struct<a:int>)".to_string(),
    };
    SpecError::new(path, err.message.clone(), fix)
}

fn check_table(t: &Loaded<DeltaTable>, e: &mut Vec<SpecError>) {
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
}

/// At least one column, and no more than a table can sensibly hold.
fn check_column_count(spec: &DeltaTableSpec, e: &mut Vec<SpecError>) {
    if spec.columns.is_empty() {
        e.push(SpecError::new(
            "spec.columns",
            "a table needs at least one column",
            "declare its columns",
        ));
    }
    if spec.columns.len() > MAX_COLUMNS {
        e.push(SpecError::new(
            "spec.columns",
            format!("{} columns; the limit is {MAX_COLUMNS}", spec.columns.len()),
            "split the table, or group related columns into structs",
        ));
    }
}

/// Every column on its own, and no two with one name. Returns each declared
/// name, lower-cased, with its index (the last of duplicates).
fn check_columns(spec: &DeltaTableSpec, e: &mut Vec<SpecError>) -> HashMap<String, usize> {
    let mut names: HashMap<String, usize> = HashMap::new();
    for (i, c) in spec.columns.iter().enumerate() {
        let path = format!("spec.columns[{i}]");
        if let Some(j) = names.insert(c.name.to_lowercase(), i) {
            e.push(SpecError::new(format!("{path}.name"), format!("duplicate column '{}' (also spec.columns[{j}]; names compare case-insensitively)", c.name), "rename or remove one"));
        }
        check_column(spec, c, &path, e);
    }
    let listed: Vec<(&str, String)> = spec
        .columns
        .iter()
        .enumerate()
        .map(|(i, c)| (c.name.as_str(), format!("spec.columns[{i}].name")))
        .collect();
    for (i, j, why) in super::names::clashes(&listed) {
        e.push(SpecError::new(
            &listed[i].1,
            format!(
                "column '{}' and column '{}' ({}) are one name to a reader: {why}",
                printable(listed[i].0),
                printable(listed[j].0),
                listed[j].1
            ),
            LOOKALIKE_FIX,
        ));
    }
    names
}

/// How to fix two names that are one to a reader.
const LOOKALIKE_FIX: &str = "rename one of them so they differ in plain letters, or write both with the same characters if they are meant to be one";

/// One column: its name, comment, `using:`, type, kind and `renamedFrom`.
fn check_column(spec: &DeltaTableSpec, c: &ColumnSpec, path: &str, e: &mut Vec<SpecError>) {
    if let Some((message, fix)) = column_name_problem(&c.name) {
        e.push(SpecError::new(format!("{path}.name"), message, fix));
    }
    check_comment(c.comment.as_deref(), &format!("{path}.comment"), e);
    if let Some(u) = &c.using
        && let Err(why) = super::expression::parse_using(u)
    {
        e.push(SpecError::new(
                format!("{path}.using"),
                format!("'{}' {why}", printable(u)),
                "write exactly one SQL expression over the live row's columns with built-in deterministic functions, e.g. CAST(amount AS BIGINT) or coalesce(note, '')",
            ));
    }
    let Some(ty) = column_type(c, path, e) else {
        return;
    };
    check_nested(&ty, &format!("{path}.type"), false, e);
    check_mapping_off(spec, c, &ty, path, e);
    let kinds = [
        c.identity.is_some(),
        c.generated.is_some(),
        c.default.is_some(),
    ];
    if kinds.iter().filter(|k| **k).count() > 1 {
        e.push(SpecError::new(
            path,
            "identity, generated and default exclude each other",
            "keep one of them",
        ));
    }
    if c.identity.is_some() && ty != DataType::Long {
        e.push(SpecError::new(
            format!("{path}.identity"),
            format!("an identity column must be bigint, not {ty}"),
            "change the type to bigint",
        ));
    }
    if let Some(from) = &c.renamed_from {
        check_renamed_from(spec, from, c, path, e);
    }
}

/// A column or field name Delta refuses without column mapping (`NEEDS_COLUMN_MAPPING`),
/// in a table whose spec turns column mapping off (`delta.columnMapping.mode: none`):
/// no backend can hold it, so the plan's `NameNeedsColumnMapping` is given here already.
/// (Where the spec is silent the answer depends on the backend: Databricks and Spark turn
/// mapping on for such a name, the lake refuses it: see `names_needing_column_mapping`.)
fn check_mapping_off(
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
fn mapping_mode(spec: &DeltaTableSpec) -> Option<&str> {
    spec.properties
        .get(COLUMN_MAPPING_MODE)
        .and_then(|v| v.as_deref())
}

/// An error for each name of column `c` (and its nested fields) that needs column mapping.
fn mapping_name_errors(
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
            if let Ok(ty) = type_from_value(&c.data_type) {
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

const COLUMN_MAPPING_MODE: &str = "delta.columnMapping.mode";

/// Every nested field name a type holds, as dotted paths under `prefix`.
fn field_paths(prefix: &str, t: &DataType, out: &mut Vec<String>) {
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

/// `renamedFrom` names another column than this one, and one not declared too.
fn check_renamed_from(
    spec: &DeltaTableSpec,
    from: &str,
    c: &ColumnSpec,
    path: &str,
    e: &mut Vec<SpecError>,
) {
    if from.eq_ignore_ascii_case(&c.name) {
        e.push(SpecError::new(
            format!("{path}.renamedFrom"),
            "names the column itself",
            "remove renamedFrom",
        ));
    } else if let Some(j) = spec
        .columns
        .iter()
        .position(|o| o.name.eq_ignore_ascii_case(from))
    {
        e.push(SpecError::new(
            format!("{path}.renamedFrom"),
            format!("'{from}' is also declared (spec.columns[{j}]), so the rename is ambiguous"),
            "remove renamedFrom or the other column",
        ));
    }
}

/// The declared columns, for the places that name them (partitioning,
/// clustering, constraints): whether a name is one, and the error when not.
struct ColumnRefs<'a> {
    /// Lower-cased name → index, from `check_columns`.
    names: &'a HashMap<String, usize>,
    /// The names as declared, in order, for suggestions.
    column_list: Vec<&'a str>,
}

impl ColumnRefs<'_> {
    fn known(&self, n: &str) -> bool {
        self.names.contains_key(&n.to_lowercase())
    }

    fn missing(&self, path: String, col: &str) -> SpecError {
        let fix = match super::schema_check::nearest(col, &self.column_list) {
            Some(n) => format!("did you mean '{n}'?"),
            None => format!(
                "name one of the declared columns: {}",
                self.column_list.join(", ")
            ),
        };
        SpecError::new(
            path,
            format!("names '{col}', which is not a declared column"),
            fix,
        )
    }
}

/// partitionedBy and clusterBy: each column once and declared, at least one
/// data column, at most MAX_CLUSTER_KEYS keys, and not both.
fn check_partitioning_and_clustering(
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

/// Each constraint item is exactly one of check, primaryKey, foreignKey, and
/// there is at most one primary key.
fn check_constraints(spec: &DeltaTableSpec, refs: &ColumnRefs, e: &mut Vec<SpecError>) {
    let mut pks = 0;
    let mut check_names = BTreeSet::new();
    for (i, c) in spec.constraints.iter().enumerate() {
        let path = format!("spec.constraints[{i}]");
        match c.kind() {
            Err(set) => e.push(SpecError::new(
                &path,
                format!("has {set} of check, primaryKey, foreignKey"),
                "give each constraint item exactly one of them",
            )),
            Ok(Constraint::Check(ch)) => check_check(spec, ch, &path, &mut check_names, refs, e),
            Ok(Constraint::PrimaryKey(pk)) => {
                pks += 1;
                check_primary_key(spec, pk, &path, refs, e);
            }
            Ok(Constraint::ForeignKey(fk)) => check_foreign_key(fk, &path, refs, e),
        }
    }
    if pks > 1 {
        e.push(SpecError::new(
            "spec.constraints",
            format!("{pks} primary keys"),
            "declare at most one primaryKey",
        ));
    }
    if check_names.len() > MAX_CHECKS {
        e.push(SpecError::new(
            "spec.constraints",
            format!(
                "{} CHECK constraints; the limit is {MAX_CHECKS} per table (each is evaluated on every row written, and Delta keeps them all in every metadata commit)",
                check_names.len()
            ),
            "combine related conditions into one CHECK (a AND b), or move some checks into the jobs that write the table",
        ));
    }
}

/// A CHECK: a name not used by another, and exactly one condition over the
/// declared columns, parsed by the rules of `using:` (`expression::parse_check`;
/// lowering stores and plans its printed form).
fn check_check(
    spec: &DeltaTableSpec,
    ch: &CheckSpec,
    path: &str,
    check_names: &mut BTreeSet<String>,
    refs: &ColumnRefs,
    e: &mut Vec<SpecError>,
) {
    if !check_names.insert(ch.name.to_lowercase()) {
        e.push(SpecError::new(
            format!("{path}.check.name"),
            format!("duplicate CHECK name '{}'", ch.name),
            "rename one",
        ));
    }
    let at = format!("{path}.check.expression");
    let parsed = match super::expression::parse_check(&ch.expression) {
        Ok(p) => p,
        Err(why) => {
            e.push(SpecError::new(
                at,
                format!("'{}' {why}", printable(&ch.expression)),
                CHECK_FIX,
            ));
            return;
        }
    };
    for col in &parsed.columns {
        if !refs.known(col) {
            e.push(refs.missing(at.clone(), col));
        }
    }
    if let Some(col) = &parsed.bare_column
        && let Some(&i) = refs.names.get(&col.to_lowercase())
        && let Ok(ty) = type_from_value(&spec.columns[i].data_type)
        && ty != DataType::Boolean
    {
        e.push(SpecError::new(
            at,
            format!("is the {ty} column '{col}', not a condition; a CHECK must be true or false for each row"),
            format!("compare it, e.g. {col} IS NOT NULL"),
        ));
    }
}

/// How to write a CHECK.
pub(crate) const CHECK_FIX: &str = "write exactly one condition over the table's declared columns with built-in deterministic functions, e.g. amount >= 0 AND status IN ('new', 'paid')";

/// A primary key: declared, non-nullable columns, at least one.
fn check_primary_key(
    spec: &DeltaTableSpec,
    pk: &PrimaryKeySpec,
    path: &str,
    refs: &ColumnRefs,
    e: &mut Vec<SpecError>,
) {
    for (j, col) in pk.columns.iter().enumerate() {
        if !refs.known(col) {
            e.push(refs.missing(format!("{path}.primaryKey.columns[{j}]"), col));
        } else if spec
            .columns
            .iter()
            .any(|x| x.name.eq_ignore_ascii_case(col) && x.nullable)
        {
            let k = refs.names[&col.to_lowercase()];
            e.push(SpecError::new(
                format!("spec.columns[{k}].nullable"),
                format!("'{col}' is in the primary key, so it cannot be nullable"),
                "set nullable: false",
            ));
        }
    }
    if pk.columns.is_empty() {
        e.push(SpecError::new(
            format!("{path}.primaryKey.columns"),
            "is empty",
            "name the key's columns",
        ));
    }
}

/// A foreign key: declared columns, paired one to one with the referenced ones.
fn check_foreign_key(fk: &ForeignKeySpec, path: &str, refs: &ColumnRefs, e: &mut Vec<SpecError>) {
    for (j, col) in fk.columns.iter().enumerate() {
        if !refs.known(col) {
            e.push(refs.missing(format!("{path}.foreignKey.columns[{j}]"), col));
        }
    }
    if fk.columns.len() != fk.referenced_columns.len() || fk.columns.is_empty() {
        e.push(SpecError::new(
            format!("{path}.foreignKey"),
            "columns and referencedColumns must be non-empty and the same length",
            "pair each column with the column it references",
        ));
    }
}

/// Every privilege is one GRANT can write on that kind of securable (they
/// are SQL keywords, never quoted).
fn check_grants(grants: &[GrantSpec], known: &[&str], on: &str, e: &mut Vec<SpecError>) {
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

/// NOT NULL is allowed on struct fields, but not anywhere under an array or a map
/// (Delta cannot enforce it there, and ALTER cannot change it later).
fn check_nested(t: &DataType, path: &str, under_collection: bool, e: &mut Vec<SpecError>) {
    match t {
        DataType::Struct { fields } => {
            let listed: Vec<(&str, String)> = fields
                .iter()
                .map(|f| (f.name.as_str(), String::new()))
                .collect();
            for (i, j, why) in super::names::clashes(&listed) {
                e.push(SpecError::new(
                    path,
                    format!(
                        "struct fields '{}' and '{}' are one name to a reader: {why}",
                        printable(listed[i].0),
                        printable(listed[j].0)
                    ),
                    LOOKALIKE_FIX,
                ));
            }
            let mut seen = HashMap::new();
            for f in fields {
                if let Some((message, fix)) = column_name_problem(&f.name) {
                    e.push(SpecError::new(path, format!("struct field {message}"), fix));
                }
                if f.comment
                    .as_deref()
                    .is_some_and(|c| c.len() > MAX_COMMENT_BYTES)
                {
                    e.push(SpecError::new(path, format!("the comment of struct field '{}' is longer than {MAX_COMMENT_BYTES} bytes", printable(&f.name)), "shorten it"));
                }
                if seen.insert(f.name.to_lowercase(), ()).is_some() {
                    e.push(SpecError::new(
                        path,
                        format!(
                            "duplicate struct field '{}' (names compare case-insensitively)",
                            f.name
                        ),
                        "rename or remove one",
                    ));
                }
                if under_collection && !f.nullable {
                    e.push(SpecError::new(
                        path,
                        format!("field '{}' is NOT NULL inside an array or map", f.name),
                        "drop 'not null' on fields inside arrays and maps",
                    ));
                }
                check_nested(&f.data_type, path, under_collection, e);
            }
        }
        DataType::Array { element, .. } => check_nested(element, path, true, e),
        DataType::Map { key, value, .. } => {
            check_nested(key, path, true, e);
            check_nested(value, path, true, e);
        }
        _ => {}
    }
}

/// Foreign keys across the manifest set, each verdict with the table it
/// refuses: the referenced table is declared, the referenced columns exist,
/// are spelled as the parent spells them and are its primary key, each pair of
/// columns has one type, and the references form no cycle (a self-reference is fine).
pub fn foreign_key_verdicts(m: &Manifests) -> Vec<(TableRef, SpecError)> {
    let mut errors: Vec<(TableRef, SpecError)> = Vec::new();
    let declared: BTreeMap<TableRef, &Loaded<DeltaTable>> = m
        .tables
        .iter()
        .filter_map(|t| table_ref_of(m, t).map(|r| (r, t)))
        .collect();
    let mut edges: BTreeMap<TableRef, BTreeSet<TableRef>> = BTreeMap::new();
    for (from, t) in &declared {
        let mut refuse = |path: String, message: String, fix: &str| {
            errors.push((
                from.clone(),
                SpecError::new(path, message, fix).in_file(&t.file, Some(&t.label())),
            ));
        };
        for (i, c) in t.resource.spec.constraints.iter().enumerate() {
            let Some(fk) = &c.foreign_key else { continue };
            let path = format!("spec.constraints[{i}].foreignKey.references");
            let Some(to) = qualified_reference(from, &fk.references) else {
                refuse(
                    path,
                    format!(
                        "'{}' is not table, schema.table or catalog.schema.table",
                        fk.references
                    ),
                    "write the referenced table's name",
                );
                continue;
            };
            let Some(parent) = declared.get(&to) else {
                refuse(
                    path,
                    format!("{to} is not declared {NOT_IN_MANIFESTS}"),
                    "declare the referenced table too; foreign keys are resolved within the manifests",
                );
                continue;
            };
            let parent_spec = &parent.resource.spec;
            let mut resolved = true;
            for (j, col) in fk.referenced_columns.iter().enumerate() {
                let at = format!("spec.constraints[{i}].foreignKey.referencedColumns[{j}]");
                match parent_spec
                    .columns
                    .iter()
                    .find(|c| c.name.eq_ignore_ascii_case(col))
                {
                    None => {
                        resolved = false;
                        refuse(
                            at,
                            format!("'{col}' is not a column of {to}"),
                            "name a column of the referenced table",
                        );
                    }
                    Some(pc) if pc.name != *col => {
                        resolved = false;
                        refuse(
                            at,
                            format!("'{col}' is spelled '{}' in {to}", pc.name),
                            "spell the referenced column as its table declares it",
                        );
                    }
                    Some(_) => {}
                }
            }
            if resolved {
                let key: Option<Vec<String>> = parent_spec
                    .constraints
                    .iter()
                    .find_map(|c| c.primary_key.as_ref())
                    .map(|pk| pk.columns.iter().map(|c| c.to_ascii_lowercase()).collect());
                let named: Vec<String> = fk
                    .referenced_columns
                    .iter()
                    .map(|c| c.to_ascii_lowercase())
                    .collect();
                if key.as_ref() != Some(&named) {
                    refuse(
                        format!("spec.constraints[{i}].foreignKey.referencedColumns"),
                        match &key {
                            Some(k) => format!(
                                "({}) is not the primary key of {to}, which is ({})",
                                fk.referenced_columns.join(", "),
                                k.join(", ")
                            ),
                            None => format!(
                                "{to} declares no primary key; a foreign key references one"
                            ),
                        },
                        "reference the parent's primary key columns, in its order (declare one on the parent if it has none)",
                    );
                }
                // each column and the one it references hold one type
                for (j, (child_col, parent_col)) in
                    fk.columns.iter().zip(&fk.referenced_columns).enumerate()
                {
                    let (Some(cc), Some(pc)) = (
                        t.resource
                            .spec
                            .columns
                            .iter()
                            .find(|c| c.name.eq_ignore_ascii_case(child_col)),
                        parent_spec
                            .columns
                            .iter()
                            .find(|c| c.name.eq_ignore_ascii_case(parent_col)),
                    ) else {
                        continue; // an unknown child column is reported with the constraint
                    };
                    let mut ignored = Vec::new();
                    let (Some(ct), Some(pt)) = (
                        column_type(cc, "", &mut ignored),
                        column_type(pc, "", &mut ignored),
                    ) else {
                        continue; // an unparsable type is reported with its column
                    };
                    if ct != pt {
                        refuse(
                            format!("spec.constraints[{i}].foreignKey.columns[{j}]"),
                            format!("'{child_col}' is {ct} but {to}.{parent_col} is {pt}"),
                            "give the column the type of the column it references",
                        );
                    }
                }
            }
            if to != *from {
                edges.entry(from.clone()).or_default().insert(to);
            }
        }
    }
    for cycle in find_cycles(&edges) {
        let names: Vec<String> = cycle.iter().map(ToString::to_string).collect();
        // every table of the cycle is refused: none of them can be created first
        for member in &cycle {
            let t = declared[member];
            errors.push((
                member.clone(),
                SpecError::new(
                    "spec.constraints",
                    format!(
                        "foreign keys form a cycle: {} -> {}",
                        names.join(" -> "),
                        names[0]
                    ),
                    "break the cycle: one of these tables must not reference the others",
                )
                .in_file(&t.file, Some(&t.label())),
            ));
        }
    }
    errors
}

/// One representative cycle per strongly connected group of two or more tables.
pub fn find_cycles(edges: &BTreeMap<TableRef, BTreeSet<TableRef>>) -> Vec<Vec<TableRef>> {
    let mut cycles = Vec::new();
    let mut done: BTreeSet<TableRef> = BTreeSet::new();
    for start in edges.keys() {
        if done.contains(start) {
            continue;
        }
        // depth-first search for a path back to start
        let mut stack = vec![(start.clone(), vec![start.clone()])];
        let mut visited = BTreeSet::new();
        while let Some((node, path)) = stack.pop() {
            for next in edges.get(&node).into_iter().flatten() {
                if next == start {
                    done.extend(path.iter().cloned());
                    cycles.push(path.clone());
                    stack.clear();
                    break;
                }
                if visited.insert(next.clone()) {
                    let mut p = path.clone();
                    p.push(next.clone());
                    stack.push((next.clone(), p));
                }
            }
        }
    }
    cycles
}
