//! Foreign keys across the manifest set: what they reference, and cycles.

use std::collections::{BTreeMap, BTreeSet};

use super::NOT_IN_MANIFESTS;
use super::columns::column_type;
use crate::spec::crd::{DeltaTable, DeltaTableSpec, ForeignKeySpec};
use crate::spec::error::SpecError;
use crate::spec::load::{Loaded, Manifests};
use crate::spec::lower::{qualified_reference, table_ref_of};
use delta_operator_core::model::TableRef;

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
            let Some(to) = resolve_reference(i, fk, from, &declared, &mut refuse) else {
                continue;
            };
            let parent_spec = &declared[&to].resource.spec;
            if referenced_columns_resolve(i, fk, &to, parent_spec, &mut refuse) {
                check_references_the_key(i, fk, &to, parent_spec, &mut refuse);
                check_pair_types(i, fk, &to, &t.resource.spec, parent_spec, &mut refuse);
            }
            if to != *from {
                edges.entry(from.clone()).or_default().insert(to);
            }
        }
    }
    errors.extend(cycle_verdicts(&edges, &declared));
    errors
}

/// Reports one refusal of the table being checked: its path, message and fix.
type Refuse<'r> = dyn FnMut(String, String, &str) + 'r;

/// The table foreign key `i` references, when its name is well formed and the
/// table is declared; else refused at `references`.
fn resolve_reference(
    i: usize,
    fk: &ForeignKeySpec,
    from: &TableRef,
    declared: &BTreeMap<TableRef, &Loaded<DeltaTable>>,
    refuse: &mut Refuse,
) -> Option<TableRef> {
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
        return None;
    };
    if !declared.contains_key(&to) {
        refuse(
            path,
            format!("{to} is not declared {NOT_IN_MANIFESTS}"),
            "declare the referenced table too; foreign keys are resolved within the manifests",
        );
        return None;
    }
    Some(to)
}

/// Whether every referenced column is a column of the parent, spelled as the
/// parent spells it; each one that is not is refused.
fn referenced_columns_resolve(
    i: usize,
    fk: &ForeignKeySpec,
    to: &TableRef,
    parent_spec: &DeltaTableSpec,
    refuse: &mut Refuse,
) -> bool {
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
    resolved
}

/// The referenced columns are the parent's primary key, in its order.
fn check_references_the_key(
    i: usize,
    fk: &ForeignKeySpec,
    to: &TableRef,
    parent_spec: &DeltaTableSpec,
    refuse: &mut Refuse,
) {
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
                None => format!("{to} declares no primary key; a foreign key references one"),
            },
            "reference the parent's primary key columns, in its order (declare one on the parent if it has none)",
        );
    }
}

/// Each column and the one it references hold one type.
fn check_pair_types(
    i: usize,
    fk: &ForeignKeySpec,
    to: &TableRef,
    child_spec: &DeltaTableSpec,
    parent_spec: &DeltaTableSpec,
    refuse: &mut Refuse,
) {
    for (j, (child_col, parent_col)) in fk.columns.iter().zip(&fk.referenced_columns).enumerate() {
        let (Some(cc), Some(pc)) = (
            child_spec
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

/// Every table of a cycle of references is refused: none of them can be created first.
fn cycle_verdicts(
    edges: &BTreeMap<TableRef, BTreeSet<TableRef>>,
    declared: &BTreeMap<TableRef, &Loaded<DeltaTable>>,
) -> Vec<(TableRef, SpecError)> {
    let mut errors = Vec::new();
    for cycle in find_cycles(edges) {
        let names: Vec<String> = cycle.iter().map(ToString::to_string).collect();
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
