//! Views, functions and volumes (`DeltaView`, `DeltaFunction`, `DeltaVolume`):
//! each on its own (names, comment, grants for its kind, tags and properties,
//! the query or the body and parameters), and against the set (its schema is
//! declared, no other resource declares the same object, no view is named
//! like a declared table). `check_view`, `check_function` and `check_volume`
//! are what admission calls for one resource.

use std::collections::BTreeMap;

use super::objects::{
    check_comment, check_grants, check_name, check_object_name, check_properties,
};
use super::{NOT_IN_MANIFESTS, type_error};
use crate::spec::error::SpecError;
use crate::spec::load::{Loaded, Manifests};
use crate::spec::lower::table_ref_of;
use crate::spec::lower_objects::{object_ref_of, object_schema_of, parameter_names};
use crate::spec::objects::{DeltaFunction, DeltaView, DeltaVolume, ObjectResource};
use delta_operator_core::model::names::{MAX_NAME_BYTES, printable};
use delta_operator_core::model::type_syntax::parse_type;
use delta_operator_expression::{parse_body, parse_query};

/// The privileges a DeltaView may grant, as GRANT writes them.
pub const VIEW_PRIVILEGES: &[&str] = &["SELECT", "ALL PRIVILEGES", "APPLY TAG", "MANAGE"];

/// The privileges a DeltaFunction may grant.
pub const FUNCTION_PRIVILEGES: &[&str] = &["EXECUTE", "ALL PRIVILEGES", "MANAGE"];

/// The privileges a DeltaVolume may grant.
pub const VOLUME_PRIVILEGES: &[&str] = &[
    "READ VOLUME",
    "WRITE VOLUME",
    "ALL PRIVILEGES",
    "APPLY TAG",
    "MANAGE",
];

/// The fix of an error in `spec.query`.
pub const QUERY_FIX: &str = "write one query (SELECT … or WITH … SELECT …): the text after AS in CREATE VIEW, without ';' and nothing after it, naming tables and views with at most three parts (catalog.schema.name)";

/// The fix of an error in `spec.body`.
pub const BODY_FIX: &str = "write one SQL expression or one scalar subquery ((SELECT …)): the text after RETURN in CREATE FUNCTION, without ';', naming the parameters by name";

/// Every error of the views, functions and volumes of `m`.
pub fn check_objects(m: &Manifests) -> Vec<SpecError> {
    let mut e: Vec<SpecError> = m.views.iter().flat_map(|v| check_view(m, v)).collect();
    e.extend(m.functions.iter().flat_map(|f| check_function(m, f)));
    e.extend(m.volumes.iter().flat_map(|v| check_volume(m, v)));
    e.extend(lookalike_views(m));
    e
}

/// A view whose name is one name to a reader with a declared table's or an
/// earlier view's of its schema (`spec::names`, as `lookalike_tables`).
fn lookalike_views(m: &Manifests) -> Vec<SpecError> {
    // per schema: the tables, then the views
    type Listed = (String, String, Option<usize>);
    let mut by_schema: BTreeMap<(String, String), Vec<Listed>> = BTreeMap::new();
    for t in &m.tables {
        if let Some(r) = table_ref_of(m, t) {
            let name = t.resource.spec.name.clone().unwrap_or_else(|| t.name());
            by_schema.entry((r.catalog, r.schema)).or_default().push((
                name,
                format!("{} in {}", t.label(), t.file),
                None,
            ));
        }
    }
    for (i, v) in m.views.iter().enumerate() {
        if let Some(r) = object_ref_of(m, v) {
            by_schema.entry((r.catalog, r.schema)).or_default().push((
                v.resource.object_name(),
                format!("{} in {}", v.label(), v.file),
                Some(i),
            ));
        }
    }
    let mut errors = Vec::new();
    for listed in by_schema.values() {
        let names: Vec<(&str, String)> = listed
            .iter()
            .map(|(n, at, _)| (n.as_str(), at.clone()))
            .collect();
        for (i, j, why) in crate::spec::names::clashes(&names) {
            let Some(view) = listed[i].2.map(|k| &m.views[k]) else {
                continue;
            };
            errors.push(
                SpecError::new(
                    view.resource.name_field(),
                    format!(
                        "view '{}' and '{}' ({}) of the same schema are one name to a reader: {why}",
                        printable(listed[i].0.as_str()),
                        printable(listed[j].0.as_str()),
                        listed[j].1
                    ),
                    super::columns::LOOKALIKE_FIX,
                )
                .in_file(&view.file, Some(&view.label())),
            );
        }
    }
    errors
}

/// One DeltaView, in the manifest set `m` (which holds it).
pub fn check_view(m: &Manifests, v: &Loaded<DeltaView>) -> Vec<SpecError> {
    let spec = &v.resource.spec;
    let mut e = common(m, v, &m.views, (VIEW_PRIVILEGES, "view"));
    match parse_query(&spec.query) {
        Ok(q) => {
            if let Some(s) = object_ref_of(m, v)
                && let Err(why) = q.reads(&s.schema_ref())
            {
                e.push(SpecError::new("spec.query", why, QUERY_FIX));
            }
        }
        Err(why) => e.push(SpecError::new("spec.query", why, QUERY_FIX)),
    }
    for (col, comment) in &spec.column_comments {
        if col.trim().is_empty() {
            e.push(SpecError::new(
                "spec.columnComments",
                "names an empty column",
                "key each comment by a column name of the view",
            ));
        }
        check_comment(Some(comment), &format!("spec.columnComments.{col}"), &mut e);
    }
    check_properties(&spec.properties, &mut e);
    // a view and a table of one schema share its names
    if let Some(r) = object_ref_of(m, v) {
        let r = r.as_table_ref();
        for t in &m.tables {
            if table_ref_of(m, t).as_ref() == Some(&r) {
                e.push(SpecError::new(
                    v.resource.name_field(),
                    format!(
                        "view {r} has the name of the table {} declares in {}; a view and a table of one schema cannot share a name",
                        t.label(),
                        t.file
                    ),
                    "rename the view (spec.name) or the table",
                ));
            }
        }
    }
    located(v, e)
}

/// One DeltaFunction, in the manifest set `m` (which holds it).
pub fn check_function(m: &Manifests, f: &Loaded<DeltaFunction>) -> Vec<SpecError> {
    let spec = &f.resource.spec;
    let mut e = common(m, f, &m.functions, (FUNCTION_PRIVILEGES, "function"));
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for (i, p) in spec.parameters.iter().enumerate() {
        let path = format!("spec.parameters[{i}]");
        if p.name.trim().is_empty() || p.name.chars().any(char::is_control) {
            e.push(SpecError::new(
                format!("{path}.name"),
                format!("'{}' is not a parameter name", printable(&p.name)),
                "name the parameter with letters, digits and '_'",
            ));
        }
        if let Some(j) = seen.insert(p.name.to_lowercase(), i) {
            e.push(SpecError::new(
                format!("{path}.name"),
                format!(
                    "'{}' is also the name of spec.parameters[{j}]",
                    printable(&p.name)
                ),
                "give each parameter its own name",
            ));
        }
        if let Err(err) = parse_type(&p.data_type) {
            e.push(type_error(&format!("{path}.type"), &err));
        }
        check_comment(p.comment.as_deref(), &format!("{path}.comment"), &mut e);
    }
    if let Err(err) = parse_type(&f.resource.spec.returns) {
        e.push(type_error("spec.returns", &err));
    }
    match parse_body(&spec.body, &parameter_names(&spec.parameters)) {
        Ok(b) => {
            if let Some(s) = object_ref_of(m, f)
                && let Err(why) = b.reads(&s.schema_ref())
            {
                e.push(SpecError::new("spec.body", why, BODY_FIX));
            }
        }
        Err(why) => e.push(SpecError::new("spec.body", why, BODY_FIX)),
    }
    located(f, e)
}

/// One DeltaVolume, in the manifest set `m` (which holds it).
pub fn check_volume(m: &Manifests, v: &Loaded<DeltaVolume>) -> Vec<SpecError> {
    let e = common(m, v, &m.volumes, (VOLUME_PRIVILEGES, "volume"));
    located(v, e)
}

fn located<T: ObjectResource>(o: &Loaded<T>, e: Vec<SpecError>) -> Vec<SpecError> {
    e.into_iter()
        .map(|x| x.in_file(&o.file, Some(&o.label())))
        .collect()
}

/// What every kind checks: its schema, names, comment, tags, grants, and no
/// earlier resource of `all` (its kind) declaring the same object.
fn common<T: ObjectResource>(
    m: &Manifests,
    o: &Loaded<T>,
    all: &[Loaded<T>],
    privileges: (&[&str], &str),
) -> Vec<SpecError> {
    let mut e = Vec::new();
    let r = &o.resource;
    let noun = T::KIND.noun();
    if object_schema_of(m, o).is_none() {
        let fix = match m.schemas.iter().find(|s| s.name() == r.schema_ref()) {
            Some(s) => format!(
                "the DeltaSchema '{}' is in namespace '{}'; a {noun} must be in its schema's namespace",
                r.schema_ref(),
                s.namespace()
            ),
            None => format!(
                "add a DeltaSchema named '{}' in namespace '{}', or correct the name",
                r.schema_ref(),
                o.namespace()
            ),
        };
        e.push(SpecError::new(
            "spec.schemaRef",
            format!("no DeltaSchema '{}' {NOT_IN_MANIFESTS}", r.schema_ref()),
            fix,
        ));
    } else if let Some(me) = object_ref_of(m, o) {
        let earlier = all
            .iter()
            .take_while(|x| !std::ptr::eq(*x, o))
            .find(|x| object_ref_of(m, x).as_ref() == Some(&me));
        if let Some(other) = earlier {
            e.push(SpecError::new(
                r.name_field(),
                format!(
                    "{noun} {me} is also declared by {} in {}",
                    other.label(),
                    other.file
                ),
                format!("declare each {noun} in exactly one manifest"),
            ));
        }
    }
    check_name(&r.object_name(), r.name_field(), MAX_NAME_BYTES, &mut e);
    check_object_name(&o.name(), &mut e);
    check_comment(r.comment(), "spec.comment", &mut e);
    for key in r.tags().keys() {
        if key.trim().is_empty() || key.chars().any(char::is_control) {
            e.push(SpecError::new(
                "spec.tags",
                format!("'{}' is not a tag key", printable(key)),
                "use a key of printable characters",
            ));
        }
    }
    let (known, on) = privileges;
    check_grants(r.grants(), known, on, &mut e);
    e
}
