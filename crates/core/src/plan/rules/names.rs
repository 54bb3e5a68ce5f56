//! Rules about names: what Spark would rewrite or refuse in a column name, and
//! a declared table whose name is a live undeclared table's to a reader.

use std::collections::{BTreeMap, BTreeSet};

use super::*;
use crate::model::TableRef;
use crate::model::names::{Lookalikes, printable};

/// Every column and nested field name a type holds, as dotted paths.
pub(super) fn field_names(prefix: &str, t: &DataType, names: &mut Vec<String>) {
    match t {
        DataType::Struct { fields } => {
            for f in fields {
                let path = format!("{prefix}.{}", f.name);
                names.push(path.clone());
                field_names(&path, &f.data_type, names);
            }
        }
        DataType::Array { element, .. } => field_names(prefix, element, names),
        DataType::Map { key, value, .. } => {
            field_names(prefix, key, names);
            field_names(prefix, value, names);
        }
        _ => {}
    }
}

/// Whether a nested field's own name (any depth) satisfies `f`.
pub(super) fn any_field_name(t: &DataType, f: &impl Fn(&str) -> bool) -> bool {
    match t {
        DataType::Struct { fields } => fields
            .iter()
            .any(|x| f(&x.name) || any_field_name(&x.data_type, f)),
        DataType::Array { element, .. } => any_field_name(element, f),
        DataType::Map { key, value, .. } => any_field_name(key, f) || any_field_name(value, f),
        _ => false,
    }
}

/// Column names with characters Spark refuses unless column mapping is on,
/// on a backend that cannot turn it on for them: refused where the table (as
/// it will be) has no column mapping, for the columns this plan would write.
pub(super) fn check_mapping_names(
    desired: &DesiredTable,
    observed: Option<&ObservedTable>,
    diff: &TableDiff,
    out: &mut Vec<RuleFailure>,
) {
    let mapped = ColumnMapping::parse(
        desired
            .properties
            .get(COLUMN_MAPPING_MODE)
            .and_then(|v| v.as_deref()),
    )
    .is_enabled()
        || observed.is_some_and(|o| ColumnMapping::of(&o.properties).is_enabled());
    if mapped {
        return;
    }
    let mut names = Vec::new();
    match observed {
        None => {
            for c in &desired.columns {
                names.push(c.name.clone());
                field_names(&c.name, &c.data_type, &mut names);
            }
        }
        Some(_) => {
            for change in &diff.changes {
                match change {
                    Change::AddColumn { path, field } => {
                        let p = path_string(path);
                        names.push(p.clone());
                        field_names(&p, &field.data_type, &mut names);
                    }
                    Change::RenameColumn { to, .. } => names.push(to.clone()),
                    _ => {}
                }
            }
        }
    }
    for name in names {
        let last = name.rsplit('.').next().unwrap_or(&name);
        if let Some(c) = last
            .chars()
            .find(|c| crate::model::names::NEEDS_COLUMN_MAPPING.contains(c))
        {
            out.push(fail(
                Rule::NameNeedsColumnMapping,
                crate::model::names::printable(&name),
                format!("'{}' contains {c:?}, which Delta refuses in a column name unless column mapping is on", crate::model::names::printable(&name)),
                "rename it (letters, digits and '_' are always safe), or create the table with the property delta.columnMapping.mode: name where the backend supports it",
            ));
        }
    }
}

/// Names Spark would rewrite: `${x}` is substituted even inside backticks, and an
/// identifier has no escape for it.
pub(super) fn check_substitution(desired: &DesiredTable, out: &mut Vec<RuleFailure>) {
    // a dotted path holds '${' only where one of its names does ('.' is neither
    // character): the names are collected only when one does
    let marked = |n: &str| n.contains("${");
    if !marked(&desired.table.table)
        && !desired
            .columns
            .iter()
            .any(|c| marked(&c.name) || any_field_name(&c.data_type, &marked))
    {
        return;
    }
    let mut names = vec![desired.table.table.clone()];
    for c in &desired.columns {
        names.push(c.name.clone());
        field_names(&c.name, &c.data_type, &mut names);
    }
    for name in names.into_iter().filter(|n| n.contains("${")) {
        out.push(fail(
            Rule::NameWouldBeSubstituted,
            &name,
            format!("'{name}' contains '${{': Spark's variable substitution rewrites it even inside backticks, so the name cannot be written as declared"),
            "choose a name without '${' (comments, tags and properties may contain it: literals are escaped)",
        ));
    }
}

/// Declared tables whose name is, to a reader, that of a live table of the same
/// schema that no manifest declares (`оrders` with a Cyrillic `о` beside a live
/// `orders` another tool made): refused naming both, so no plan creates a second
/// table every reader takes for the first; their foreign-key children are
/// blocked. A declared table that is itself live is compared too: two such
/// tables already exist, and the plan says so. `names` compares as a reader
/// does (outside the pure core: `delta_operator_names::Reader`).
pub fn check_lookalike_live_tables(
    tables: &mut [crate::plan::TablePlan],
    observed: &[std::sync::Arc<ObservedTable>],
    names: &dyn Lookalikes,
) {
    let declared: BTreeSet<&TableRef> = tables
        .iter()
        .filter(|p| p.desired.is_some())
        .map(|p| &p.table)
        .collect();
    // the undeclared live tables by schema and name key: each declared table looks up its own
    let mut undeclared: BTreeMap<(&str, &str, String), Vec<&TableRef>> = BTreeMap::new();
    for o in observed.iter().filter(|o| !declared.contains(&o.table)) {
        undeclared
            .entry((&o.table.catalog, &o.table.schema, names.key(&o.table.table)))
            .or_default()
            .push(&o.table);
    }
    if undeclared.is_empty() {
        return;
    }
    let mut refused = false;
    for plan in tables.iter_mut().filter(|p| p.desired.is_some()) {
        let t = &plan.table;
        let at = (t.catalog.as_str(), t.schema.as_str(), names.key(&t.table));
        let found: Vec<RuleFailure> = undeclared
            .get(&at)
            .into_iter()
            .flatten()
            .filter_map(|live| {
                let why = names.clash(&t.table, &live.table)?;
                Some(fail(
                    Rule::NameLooksLikeLiveTable,
                    "table",
                    format!(
                        "table '{}' and the live table '{}' of {}.{}, which no manifest declares, are one name to a reader: {why}",
                        printable(&t.table),
                        printable(&live.table),
                        t.catalog,
                        t.schema,
                    ),
                    format!(
                        "rename the declared table so it differs from '{}' in plain letters, or declare that table by its own name if it is the one meant (`delta-operator import` writes its manifest)",
                        printable(&live.table)
                    ),
                ))
            })
            .collect();
        if found.is_empty() {
            continue;
        }
        refused = true;
        match &mut plan.outcome {
            crate::plan::Outcome::Rejected { failures } => failures.extend(found),
            other => *other = crate::plan::Outcome::Rejected { failures: found },
        }
    }
    if refused {
        crate::plan::block_dependents(tables);
    }
}
