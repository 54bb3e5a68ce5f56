//! diff(desired, observed) → typed changes and unfixable differences.
//! The diff never judges safety (that is `rules`), and never diffs away what
//! the spec is silent about: `None` and unnamed keys are left alone.

use std::collections::{BTreeMap, BTreeSet};

mod constraints;

use super::change::{Change, Difference, FieldPath};
use super::hand_off;
use super::scope;
use crate::model::Privilege;
use crate::model::property;
use crate::model::{
    Aspect, CONSTRAINTS_PROPERTY, DataType, DesiredColumn, DesiredTable, Grant, OWNER_PROPERTY,
    ObservedColumn, ObservedTable, PUT_BACK_PROPERTY, StructField,
};
use constraints::diff_constraints;
pub(crate) use constraints::{eq_names, same_fk};

/// Everything that differs between a declared table and its live state.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TableDiff {
    pub changes: Vec<Change>,
    pub differences: Vec<Difference>,
    /// What exists live but is not managed here (left alone, said out loud).
    pub notes: Vec<String>,
}

/// The live column a declared column corresponds to: same name
/// (case-insensitive), else the column it was renamed from.
pub fn matching_live<'a>(d: &DesiredColumn, live: &'a ObservedTable) -> Option<&'a ObservedColumn> {
    live.column(&d.name)
        .or_else(|| d.renamed_from.as_deref().and_then(|from| live.column(from)))
}

pub fn diff(desired: &DesiredTable, observed: Option<&ObservedTable>) -> TableDiff {
    let Some(live) = observed else {
        return TableDiff {
            changes: vec![Change::CreateTable],
            ..Default::default()
        };
    };
    let mut out = TableDiff::default();
    if let Some(why) = &live.unreadable {
        // nothing of the live table is known: nothing is compared
        out.differences
            .push(Difference::Unreadable { why: why.clone() });
        return out;
    }
    // a narrow-scope spec's unstated column shapes are the live ones
    let stated;
    let desired = match scope::with_live_shape(desired, live) {
        Some(d) => {
            stated = d;
            &stated
        }
        None => desired,
    };
    if !live.leftovers.is_empty() {
        out.changes.push(Change::RemoveLeftovers {
            leftovers: live.leftovers.clone(),
        });
    }
    match live.owner_marker() {
        // a streaming table, materialized view or view takes no table property (its
        // ALTER has no SET TBLPROPERTIES): governed by its spec alone, never marked
        None if !live.kind.is_table() => {}
        None => out.changes.push(Change::Claim {
            marker: desired.owner_marker.to_string(),
            // set by `diff_constraints` when the spec declares constraints
            constraints: None,
            scope: desired.scope,
        }),
        Some(m) if desired.owner_marker != *m => out.differences.push(Difference::OwnedElsewhere {
            owner: m.to_string(),
        }),
        Some(_) if live.governed_scope() != desired.scope => out.changes.push(Change::SetScope {
            from: live.governed_scope(),
            to: desired.scope,
        }),
        Some(_) => {}
    }
    diff_table_aspects(desired, live, &mut out);
    diff_columns(desired, live, &mut out);
    diff_constraints(desired, live, &mut out);
    diff_layout(desired, live, &mut out);
    diff_grants(&desired.grants, &live.grants, &mut out);
    if let Some(owner) = &desired.owner
        && live.owner.as_deref() != Some(owner.as_str())
    {
        out.changes.push(Change::SetOwner {
            from: live.owner.clone(),
            to: owner.clone(),
        });
    }
    hand_off::strip(&desired.hand_off, &mut out);
    scope::mirror(desired.scope, &mut out);
    if !out.changes.is_empty() && !live.unsupported_features.is_empty() {
        out.differences.push(Difference::UnsupportedFeatures {
            features: live.unsupported_features.clone(),
        });
    }
    out
}

fn diff_table_aspects(desired: &DesiredTable, live: &ObservedTable, out: &mut TableDiff) {
    if let Some(c) = &desired.comment
        && live.comment.as_deref().unwrap_or("") != c
    {
        out.changes.push(Change::SetTableComment {
            from: live.comment.clone(),
            to: c.clone(),
        });
    }
    for (key, want) in &desired.properties {
        match (want, live.properties.get(key)) {
            (Some(v), have) if have != Some(v) => out.changes.push(Change::SetProperty {
                key: key.clone(),
                from: have.cloned(),
                to: v.clone(),
            }),
            (None, Some(have)) => out.changes.push(Change::UnsetProperty {
                key: key.clone(),
                from: have.clone(),
            }),
            _ => {}
        }
    }
    let unmanaged: Vec<&String> = live
        .properties
        .keys()
        .filter(|k| {
            !desired.properties.contains_key(*k)
                && *k != OWNER_PROPERTY
                && *k != CONSTRAINTS_PROPERTY
                && *k != PUT_BACK_PROPERTY
                && !is_internal_property(k)
        })
        .collect();
    diff_put_back(desired, live, out);
    if !unmanaged.is_empty() && desired.scope.manages(Aspect::Properties) {
        let names: Vec<&str> = unmanaged.iter().map(|s| s.as_str()).collect();
        out.notes.push(format!(
            "properties not in the spec, left untouched: {}",
            names.join(", ")
        ));
    }
    diff_tags(&desired.tags, &live.tags, None, out);
}

/// A rewrite that stopped between its replace and the put-back of the
/// properties the replace could not carry left their record
/// ([`PUT_BACK_PROPERTY`]): they are set again (unless the spec now says
/// otherwise), and the record removed.
fn diff_put_back(desired: &DesiredTable, live: &ObservedTable, out: &mut TableDiff) {
    let Some(record) = live.properties.get(PUT_BACK_PROPERTY) else {
        return;
    };
    let owed: BTreeMap<String, String> = serde_json::from_str(record).unwrap_or_default();
    for (key, to) in owed {
        if desired.properties.contains_key(&key) || live.properties.get(&key) == Some(&to) {
            continue;
        }
        out.changes.push(Change::SetProperty {
            from: live.properties.get(&key).cloned(),
            key,
            to,
        });
    }
    out.changes.push(Change::UnsetProperty {
        key: PUT_BACK_PROPERTY.to_string(),
        from: record.clone(),
    });
}

/// Properties Delta or a platform manages itself; never reported as unmanaged,
/// never put back after a replace: the protocol (`delta.minReaderVersion`,
/// `delta.minWriterVersion`, `delta.feature.*`, which a replace keeps, since
/// Delta never downgrades a protocol), and keys Delta assigns itself and
/// refuses from a user (`delta.columnMapping.maxColumnId`:
/// DELTA_CANNOT_MODIFY_TABLE_PROPERTY; `delta.rowTracking.*`:
/// DELTA_UNKNOWN_CONFIGURATION, both measured on Delta 4.4).
pub fn is_internal_property(key: &str) -> bool {
    key == property::MIN_READER_VERSION
        || key == property::MIN_WRITER_VERSION
        || key.starts_with(property::FEATURE_PREFIX)
        || key.starts_with(property::CONSTRAINTS_PREFIX)
        || key.starts_with(property::COLUMN_MAPPING_MAX_ID)
        || key.starts_with("io.unitycatalog.")
        || key.starts_with(property::ROW_TRACKING_PREFIX)
        || key.ends_with(".internal")
}

fn diff_tags(
    want: &BTreeMap<String, Option<String>>,
    have: &BTreeMap<String, String>,
    column: Option<&str>,
    out: &mut TableDiff,
) {
    for (key, v) in want {
        let from = have.get(key).cloned();
        match (v, column) {
            (Some(v), None) if from.as_ref() != Some(v) => out.changes.push(Change::SetTableTag {
                key: key.clone(),
                from,
                to: v.clone(),
            }),
            (Some(v), Some(c)) if from.as_ref() != Some(v) => {
                out.changes.push(Change::SetColumnTag {
                    column: c.to_string(),
                    key: key.clone(),
                    from,
                    to: v.clone(),
                })
            }
            (None, None) if from.is_some() => out.changes.push(Change::UnsetTableTag {
                key: key.clone(),
                from: from.unwrap(),
            }),
            (None, Some(c)) if from.is_some() => out.changes.push(Change::UnsetColumnTag {
                column: c.to_string(),
                key: key.clone(),
                from: from.unwrap(),
            }),
            _ => {}
        }
    }
}

fn diff_columns(desired: &DesiredTable, live: &ObservedTable, out: &mut TableDiff) {
    // by position in live.columns: which live columns a declared one matched
    let mut matched = vec![false; live.columns.len()];
    // the live positions of the declared columns, in the spec's order
    let mut order = Vec::new();
    let index = |name: &str| {
        live.columns
            .iter()
            .position(|c| c.name.eq_ignore_ascii_case(name))
    };
    for d in &desired.columns {
        let same_name = index(&d.name);
        let renamed_source = d.renamed_from.as_deref().and_then(index);
        let at = |i: usize| &live.columns[i];
        let (l, li) = match (same_name, renamed_source) {
            (Some(l), Some(src)) => {
                out.differences.push(Difference::RenameConflict {
                    from: at(src).name.clone(),
                    to: d.name.clone(),
                });
                matched[src] = true;
                (at(l), l)
            }
            (Some(li), None) => {
                let l = at(li);
                if l.name != d.name {
                    out.differences.push(Difference::ColumnCaseDrift {
                        declared: d.name.clone(),
                        live: l.name.clone(),
                    });
                }
                (l, li)
            }
            (None, Some(src)) => {
                out.changes.push(Change::RenameColumn {
                    from: at(src).name.clone(),
                    to: d.name.clone(),
                });
                (at(src), src)
            }
            (None, None) if !desired.scope.manages(Aspect::Columns) => {
                out.differences.push(Difference::Unmanaged {
                    aspect: Aspect::Columns,
                    scope: desired.scope,
                    line: format!("{} is declared, but the table has no such column", d.name),
                });
                continue;
            }
            (None, None) => {
                let field = StructField {
                    name: d.name.clone(),
                    data_type: d.data_type.clone(),
                    nullable: d.nullable,
                    comment: d.comment.clone().filter(|c| !c.is_empty()),
                };
                out.changes.push(Change::AddColumn {
                    path: vec![d.name.clone()].into(),
                    field,
                });
                // what ADD COLUMN cannot say comes as its own steps, in the same plan
                diff_tags(&d.tags, &BTreeMap::new(), Some(&d.name), out);
                if let Some(m) = &d.mask {
                    out.changes.push(Change::SetMask {
                        column: d.name.clone(),
                        from: None,
                        to: m.clone(),
                    });
                }
                if let Some(def) = &d.default {
                    out.changes.push(Change::SetDefault {
                        column: d.name.clone(),
                        from: None,
                        to: def.clone(),
                    });
                }
                continue;
            }
        };
        matched[li] = true;
        order.push(li);
        diff_column(d, l, out);
    }
    if !desired.scope.manages(Aspect::Columns) {
        let unlisted = matched.iter().filter(|m| !**m).count();
        if unlisted > 0 {
            out.notes.push(format!(
                "{unlisted} live column(s) the spec does not list, left to the tool that owns them (scope {})",
                desired.scope
            ));
        }
        return;
    }
    if order.windows(2).any(|w| w[0] > w[1]) {
        let live_order: Vec<&str> = order
            .iter()
            .copied()
            .collect::<BTreeSet<usize>>()
            .into_iter()
            .map(|i| live.columns[i].name.as_str())
            .collect();
        out.notes.push(format!(
            "the spec lists the columns in another order than the table ({}); the operator never reorders columns: list them as the table does to silence this note",
            live_order.join(", ")
        ));
    }
    // a live column is kept when its name, lower-cased, is one a declared column matched
    for (j, l) in live.columns.iter().enumerate() {
        let kept = matched[j]
            || (live.columns.iter().zip(&matched))
                .any(|(o, m)| *m && same_lower_case(&o.name, &l.name));
        if !kept {
            out.changes.push(Change::DropColumn { column: l.clone() });
        }
    }
}

/// `a.to_lowercase() == b.to_lowercase()`, without the two strings when both are ASCII.
fn same_lower_case(a: &str, b: &str) -> bool {
    if a.is_ascii() && b.is_ascii() {
        a.eq_ignore_ascii_case(b)
    } else {
        a.to_lowercase() == b.to_lowercase()
    }
}

fn diff_column(d: &DesiredColumn, l: &ObservedColumn, out: &mut TableDiff) {
    // equal types differ nowhere, except a struct's fields, which are matched
    // case-insensitively (and a live struct may spell two fields alike)
    let compare_types = d.data_type != l.data_type || d.data_type.struct_fields().is_some();
    let comment = d
        .comment
        .as_ref()
        .filter(|c| l.comment.as_deref().unwrap_or("") != *c);
    // the path only where a change may name it (most columns have none)
    if compare_types || d.nullable != l.nullable || comment.is_some() {
        let path = FieldPath::column(&d.name);
        if compare_types {
            diff_type(&path, &d.data_type, &l.data_type, out);
        }
        if d.nullable != l.nullable {
            out.changes.push(Change::SetNullability {
                path: path.clone(),
                nullable: d.nullable,
            });
        }
        if let Some(c) = comment {
            out.changes.push(Change::SetColumnComment {
                path,
                from: l.comment.clone(),
                to: c.clone(),
            });
        }
    }
    diff_tags(&d.tags, &l.tags, Some(&d.name), out);
    if let Some(m) = &d.mask
        && l.mask.as_ref() != Some(m)
    {
        out.changes.push(Change::SetMask {
            column: d.name.clone(),
            from: l.mask.clone(),
            to: m.clone(),
        });
    }
    if let Some(def) = &d.default
        && l.default.as_ref() != Some(def)
    {
        out.changes.push(Change::SetDefault {
            column: d.name.clone(),
            from: l.default.clone(),
            to: def.clone(),
        });
    }
    if d.drops_default
        && let Some(from) = &l.default
    {
        out.changes.push(Change::DropDefault {
            column: d.name.clone(),
            from: from.clone(),
        });
    }
    if d.identity.is_some() && d.identity != l.identity {
        out.differences.push(Difference::ColumnKindChange {
            column: d.name.clone(),
            what: "identity".into(),
        });
    }
    if let Some(g) = &d.generated
        && l.generated.as_deref().map(normalize_sql) != Some(normalize_sql(g))
    {
        out.differences.push(Difference::ColumnKindChange {
            column: d.name.clone(),
            what: "generation expression".into(),
        });
    }
}

/// Struct fields are compared by name, recursively: added fields, dropped
/// fields, nullability and comments are their own changes. Any other
/// difference is a type change of the nearest path (arrays and maps are
/// compared whole). Fields in another order alone are no change: the operator
/// never reorders a struct in place (see `same_shape` for a rewrite).
fn diff_type(path: &FieldPath, want: &DataType, have: &DataType, out: &mut TableDiff) {
    match (want, have) {
        (DataType::Struct { fields: w }, DataType::Struct { fields: h }) => {
            let mut nested = TableDiff::default();
            for wf in w {
                let p: FieldPath = path.iter().cloned().chain([wf.name.clone()]).collect();
                match h.iter().find(|hf| hf.name.eq_ignore_ascii_case(&wf.name)) {
                    None => nested.changes.push(Change::AddColumn {
                        path: p,
                        field: wf.clone(),
                    }),
                    Some(hf) => {
                        if hf.name != wf.name {
                            out.differences.push(Difference::ColumnCaseDrift {
                                declared: path_join(&p),
                                live: hf.name.clone(),
                            });
                        }
                        diff_type(&p, &wf.data_type, &hf.data_type, &mut nested);
                        if wf.nullable != hf.nullable {
                            nested.changes.push(Change::SetNullability {
                                path: p.clone(),
                                nullable: wf.nullable,
                            });
                        }
                        if let Some(c) = &wf.comment
                            && hf.comment.as_deref().unwrap_or("") != c
                        {
                            nested.changes.push(Change::SetColumnComment {
                                path: p.clone(),
                                from: hf.comment.clone(),
                                to: c.clone(),
                            });
                        }
                    }
                }
            }
            // a dropped nested field is its own change (in place under column mapping)
            for hf in h {
                if !w.iter().any(|wf| wf.name.eq_ignore_ascii_case(&hf.name)) {
                    nested.changes.push(Change::DropField {
                        path: path.iter().cloned().chain([hf.name.clone()]).collect(),
                        field: hf.clone(),
                    });
                }
            }
            out.changes.extend(nested.changes);
            out.differences.extend(nested.differences);
        }
        _ if same_shape(want, have) => {}
        (DataType::Array { element: we, .. }, DataType::Array { element: he, .. }) => {
            let mut nested = TableDiff::default();
            diff_type(&child(path, "element"), we, he, &mut nested);
            contained(path, want, have, nested, out);
        }
        (
            DataType::Map {
                key: wk, value: wv, ..
            },
            DataType::Map {
                key: hk, value: hv, ..
            },
        ) => {
            let mut nested = TableDiff::default();
            diff_type(&child(path, "key"), wk, hk, &mut nested);
            diff_type(&child(path, "value"), wv, hv, &mut nested);
            contained(path, want, have, nested, out);
        }
        _ => out.changes.push(Change::ChangeType {
            path: path.clone(),
            from: have.clone(),
            to: want.clone(),
        }),
    }
}

fn child(path: &FieldPath, name: &str) -> FieldPath {
    path.iter().cloned().chain([name.to_string()]).collect()
}

/// The changes inside an array's element or a map's key and value, addressed
/// as Delta addresses them (`items.element.price`, `counters.value`): a
/// widening or a nested nullable field added is made in place there
/// (`ALTER COLUMN counters.value TYPE bigint`; a whole-map type is refused:
/// CANNOT_UPDATE_FIELD.MAP_TYPE). Comments inside arrays and maps are not
/// diffed; a nullability change there changes the container's shape.
fn contained(
    path: &FieldPath,
    want: &DataType,
    have: &DataType,
    nested: TableDiff,
    out: &mut TableDiff,
) {
    let changes: Vec<Change> = nested
        .changes
        .into_iter()
        .filter(|c| !matches!(c, Change::SetColumnComment { .. }))
        .collect();
    if changes.iter().any(|c| {
        matches!(c, Change::SetNullability { .. } | Change::DropField { .. })
            || matches!(c, Change::AddColumn { field, .. } if !field.nullable)
    }) || changes.is_empty()
    {
        out.changes.push(Change::ChangeType {
            path: path.clone(),
            from: have.clone(),
            to: want.clone(),
        });
        return;
    }
    out.changes.extend(changes);
    out.differences.extend(nested.differences);
}

/// Equal ignoring `containsNull` flags and nested comments (never diffed inside arrays and maps).
/// Struct fields are compared in order: a struct whose fields the spec lists in
/// another order is not the same shape, so a rewrite rebuilds it by name in the
/// declared order rather than copying it as it is.
pub fn same_shape(a: &DataType, b: &DataType) -> bool {
    match (a, b) {
        (DataType::Array { element: x, .. }, DataType::Array { element: y, .. }) => {
            same_shape(x, y)
        }
        (
            DataType::Map {
                key: k1, value: v1, ..
            },
            DataType::Map {
                key: k2, value: v2, ..
            },
        ) => same_shape(k1, k2) && same_shape(v1, v2),
        (DataType::Struct { fields: f1 }, DataType::Struct { fields: f2 }) => {
            f1.len() == f2.len()
                && f1.iter().zip(f2).all(|(x, y)| {
                    x.name.eq_ignore_ascii_case(&y.name)
                        && x.nullable == y.nullable
                        && same_shape(&x.data_type, &y.data_type)
                })
        }
        _ => a == b,
    }
}

fn path_join(p: &FieldPath) -> String {
    p.join(".")
}

fn diff_layout(desired: &DesiredTable, live: &ObservedTable, out: &mut TableDiff) {
    if let Some(want) = &desired.wanted_partitioning() {
        // compared under the names the columns will have after renames
        let have: Vec<String> = live
            .partitioned_by
            .iter()
            .map(|p| renamed(desired, p))
            .collect();
        if !eq_names(want, &have) {
            out.changes.push(Change::SetPartitioning {
                from: live.partitioned_by.clone(),
                to: want.clone(),
            });
        }
    }
    if let Some(want) = &desired.cluster_by {
        let have = live.cluster_by.clone().unwrap_or_default();
        if !eq_names(want, &have) {
            out.changes.push(Change::SetClustering {
                from: live.cluster_by.clone(),
                to: want.clone(),
            });
        }
    }
}

/// The declared name of a live column (following `renamedFrom`).
pub fn renamed(desired: &DesiredTable, live_name: &str) -> String {
    desired
        .columns
        .iter()
        .find(|c| {
            c.renamed_from
                .as_deref()
                .is_some_and(|f| f.eq_ignore_ascii_case(live_name))
                && !c.name.eq_ignore_ascii_case(live_name)
        })
        .map_or_else(|| live_name.to_string(), |c| c.name.clone())
}

/// A named principal gets exactly the privileges listed; others are untouched.
fn diff_grants(want: &[Grant], have: &[Grant], out: &mut TableDiff) {
    for g in want {
        // both sides in one spelling (model::privilege)
        let live: BTreeSet<&Privilege> = have
            .iter()
            .filter(|h| h.principal.eq_ignore_ascii_case(&g.principal))
            .flat_map(|h| &h.privileges)
            .collect();
        let wanted: BTreeSet<&Privilege> = g.privileges.iter().collect();
        let add: Vec<Privilege> = wanted.difference(&live).map(|p| (*p).clone()).collect();
        let remove: Vec<Privilege> = live.difference(&wanted).map(|p| (*p).clone()).collect();
        if !add.is_empty() {
            out.changes.push(Change::Grant {
                principal: g.principal.clone(),
                privileges: add,
            });
        }
        if !remove.is_empty() {
            out.changes.push(Change::Revoke {
                principal: g.principal.clone(),
                privileges: remove,
            });
        }
    }
}

/// SQL compared ignoring case outside literals and whitespace between tokens: engines
/// store expressions re-spaced (Delta writes `num > -100` as `num > - 100`), so a space
/// is kept only where it separates two words.
pub fn normalize_sql(s: &str) -> String {
    let word = |c: char| c.is_alphanumeric() || c == '_' || c == '`';
    let mut out = String::new();
    let mut in_str: Option<char> = None;
    let mut pending_space = false;
    for c in s.trim().chars() {
        match in_str {
            Some(q) => {
                out.push(c);
                if c == q {
                    in_str = None;
                }
            }
            None if c.is_whitespace() => pending_space = true,
            None => {
                if pending_space && out.chars().last().is_some_and(word) && word(c) {
                    out.push(' ');
                }
                pending_space = false;
                if c == '\'' || c == '"' || c == '`' {
                    in_str = Some(c);
                    out.push(c);
                } else {
                    out.extend(c.to_lowercase());
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod normalize_tests {
    use super::normalize_sql;

    #[test]
    fn spacing_between_tokens_does_not_matter_but_words_stay_apart() {
        assert_eq!(normalize_sql("num > -100"), normalize_sql("num > - 100"));
        assert_eq!(normalize_sql("( a+b )*2"), normalize_sql("(a + b) * 2"));
        assert_eq!(
            normalize_sql("A IS NOT NULL"),
            normalize_sql("a  is not\nnull")
        );
        assert_ne!(
            normalize_sql("a is not null"),
            normalize_sql("a isnot null")
        );
        assert_ne!(normalize_sql("x = 'a b'"), normalize_sql("x = 'ab'"));
        assert_ne!(normalize_sql("x = 'A'"), normalize_sql("x = 'a'"));
        assert_ne!(normalize_sql("`a b` > 1"), normalize_sql("`ab` > 1"));
    }
}
