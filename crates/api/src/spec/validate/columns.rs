//! A table's columns: each column alone (name, comment, `using:`, type, kind,
//! `renamedFrom`), nested struct fields, and the names other places refer to.

use std::collections::HashMap;

use super::mapping::check_mapping_off;
use super::objects::check_comment;
use super::{MAX_COLUMNS, MAX_COMMENT_BYTES};
use crate::spec::crd::{ColumnSpec, DeltaTableSpec};
use crate::spec::error::SpecError;
use delta_operator_core::model::DataType;
use delta_operator_core::model::names::{column_name_problem, printable};
use delta_operator_core::model::type_syntax::{TypeError, type_from_value};

/// Parses a column's type, reporting the error at its path.
pub fn column_type(c: &ColumnSpec, path: &str, e: &mut Vec<SpecError>) -> Option<DataType> {
    let Some(value) = &c.data_type else {
        e.push(SpecError::new(
            format!("{path}.type"),
            "a column needs a type at scope Full",
            "declare its type (e.g. bigint), or set spec.scope: Metadata, Annotations or Tags to annotate a column the tool that owns the table shapes",
        ));
        return None;
    };
    match type_from_value(value) {
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

/// At least one column, and no more than a table can sensibly hold.
pub(super) fn check_column_count(spec: &DeltaTableSpec, e: &mut Vec<SpecError>) {
    if spec.columns.is_empty() && spec.scope.is_full() {
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
pub(super) fn check_columns(
    spec: &DeltaTableSpec,
    e: &mut Vec<SpecError>,
) -> HashMap<String, usize> {
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
    for (i, j, why) in crate::spec::names::clashes(&listed) {
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

/// A `generated:` and a `default:` reach the DDL as written (Delta stores and shows them so,
/// and a live table is compared with them so): each must be exactly one expression, with no
/// comment, by the rules of its kind.
fn check_value_expressions(c: &ColumnSpec, path: &str, e: &mut Vec<SpecError>) {
    if let Some(g) = &c.generated
        && let Err(why) = crate::spec::expression::parse_generated(g)
    {
        e.push(SpecError::new(
            format!("{path}.generated"),
            format!("'{}' {why}", printable(g)),
            "write exactly one SQL expression over the row's other columns with built-in deterministic functions, e.g. CAST(ts AS DATE)",
        ));
    }
    if let Some(Some(d)) = &c.default
        && let Err(why) = crate::spec::expression::parse_default(d)
    {
        e.push(SpecError::new(
            format!("{path}.default"),
            format!("'{}' {why}", printable(d)),
            "write one value: a literal ('EU', 0) or a built-in function such as current_timestamp()",
        ));
    }
}

/// How to fix two names that are one to a reader.
pub(super) const LOOKALIKE_FIX: &str = "rename one of them so they differ in plain letters, or write both with the same characters if they are meant to be one";

/// One column: its name, comment, `using:`, type, kind and `renamedFrom`.
pub(super) fn check_column(
    spec: &DeltaTableSpec,
    c: &ColumnSpec,
    path: &str,
    e: &mut Vec<SpecError>,
) {
    if let Some((message, fix)) = column_name_problem(&c.name) {
        e.push(SpecError::new(format!("{path}.name"), message, fix));
    }
    check_comment(c.comment.as_deref(), &format!("{path}.comment"), e);
    if let Some(u) = &c.using
        && let Err(why) = crate::spec::expression::parse_using(u)
    {
        e.push(SpecError::new(
                format!("{path}.using"),
                format!("'{}' {why}", printable(u)),
                "write exactly one SQL expression over the live row's columns with built-in deterministic functions, e.g. CAST(amount AS BIGINT) or coalesce(note, '')",
            ));
    }
    check_value_expressions(c, path, e);
    if c.data_type.is_none() && !spec.scope.is_full() {
        return; // the live column's type: nothing to check here
    }
    let Some(ty) = column_type(c, path, e) else {
        return;
    };
    check_nested(&ty, &format!("{path}.type"), false, e);
    check_mapping_off(spec, c, &ty, path, e);
    let kinds = [
        c.identity.is_some(),
        c.generated.is_some(),
        matches!(c.default, Some(Some(_))),
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

/// `renamedFrom` names another column than this one, and one not declared too.
pub(super) fn check_renamed_from(
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
pub(super) struct ColumnRefs<'a> {
    /// Lower-cased name → index, from `check_columns`.
    pub(super) names: &'a HashMap<String, usize>,
    /// The names as declared, in order, for suggestions.
    pub(super) column_list: Vec<&'a str>,
}

impl ColumnRefs<'_> {
    pub(super) fn known(&self, n: &str) -> bool {
        self.names.contains_key(&n.to_lowercase())
    }

    pub(super) fn missing(&self, path: String, col: &str) -> SpecError {
        let fix = match crate::spec::schema_check::nearest(col, &self.column_list) {
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

/// NOT NULL is allowed on struct fields, but not anywhere under an array or a map
/// (Delta cannot enforce it there, and ALTER cannot change it later).
pub(super) fn check_nested(
    t: &DataType,
    path: &str,
    under_collection: bool,
    e: &mut Vec<SpecError>,
) {
    match t {
        DataType::Struct { fields } => {
            let listed: Vec<(&str, String)> = fields
                .iter()
                .map(|f| (f.name.as_str(), String::new()))
                .collect();
            for (i, j, why) in crate::spec::names::clashes(&listed) {
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
