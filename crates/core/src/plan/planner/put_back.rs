//! What a replace that rebuilds the table from a query loses and the plan puts
//! back after it, and what the replace writes itself instead.

use std::collections::BTreeMap;

use super::order::{Draft, StepGroup, draft};
use crate::model::property::{ColumnMapping, ENABLE_CHANGE_DATA_FEED};
use crate::model::{Check, DesiredTable, ForeignKey, ObservedTable, PUT_BACK_PROPERTY, PrimaryKey};
use crate::plan::diff::{eq_names, is_internal_property, matching_live, renamed, same_fk};
use crate::plan::steps::{Action, Rewrite, RiskClass};

pub(super) const PUT_BACK: &str = "put back after the replace";

/// What a replace that rebuilds the table from a query loses, put back with
/// ordinary ALTERs: NOT NULL, comments and defaults of converted columns,
/// tags of renamed columns, CHECK constraints (declared or not), the primary
/// and foreign keys. The properties and the table comment are not among
/// them: the replace writes them itself (`Rewrite::properties`, `comment`).
pub(super) fn put_backs(
    desired: &DesiredTable,
    live: &ObservedTable,
    rw: &Rewrite,
    owed: &BTreeMap<String, String>,
    serves: &[usize],
) -> Vec<Draft> {
    let mut out = Vec::new();
    let put =
        |action| draft(StepGroup::Rewrite, RiskClass::Meta, action, serves.to_vec()).note(PUT_BACK);
    for p in &rw.columns {
        if !p.field.nullable {
            out.push(put(Action::SetNotNull {
                path: vec![p.field.name.clone()].into(),
            }));
        }
    }
    for p in rw.converted_columns() {
        if let Some(c) = &p.field.comment {
            out.push(put(Action::SetColumnComment {
                path: vec![p.field.name.clone()].into(),
                comment: c.clone(),
            }));
        }
    }
    // a converted column is a new field: the default in its metadata is gone
    for p in rw.converted_columns() {
        let d = desired.column(&p.field.name);
        // (unless the spec removes it: `default: null`)
        let default = d.and_then(|d| d.default.clone()).or_else(|| {
            d.filter(|d| !d.drops_default)
                .and_then(|d| matching_live(d, live))
                .and_then(|l| l.default.clone())
        });
        if let Some(expression) = default {
            out.push(put(Action::SetDefault {
                column: p.field.name.clone(),
                expression,
            }));
        }
    }
    for d in &desired.columns {
        let Some(from) = d.renamed_from.as_deref().and_then(|f| live.column(f)) else {
            continue;
        };
        if !from.name.eq_ignore_ascii_case(&d.name) && !from.tags.is_empty() {
            out.push(put(Action::SetColumnTags {
                column: d.name.clone(),
                tags: from.tags.clone(),
            }));
        }
    }
    let checks: Vec<&Check> = desired
        .checks
        .iter()
        .chain(live.checks.iter().filter(|c| {
            !desired
                .checks
                .iter()
                .any(|d| d.name.eq_ignore_ascii_case(&c.name))
        }))
        .collect();
    for c in checks {
        out.push(put(Action::AddCheck { check: c.clone() }));
    }
    for key in keys_put_back(desired, live, rw) {
        out.push(put(key));
    }
    if !owed.is_empty() {
        out.push(
            put(Action::SetProperties {
                properties: owed.clone(),
            })
            .note("Delta refuses change data feed in a replace of a column-mapped table (DELTA_BLOCK_COLUMN_MAPPING_AND_CDC_OPERATION, measured on Delta 4.4)"),
        );
        out.push(
            put(Action::UnsetProperties {
                keys: vec![PUT_BACK_PROPERTY.to_string()],
            })
            .note("the replace recorded what it could not carry; a run stopped before this step has it put back by the next plan"),
        );
    }
    out
}

/// The properties a replace cannot carry in its own statement, taken out of
/// `props`: change data feed on a column-mapped table. When there are any,
/// their record ([`PUT_BACK_PROPERTY`]) rides in the replace instead.
pub(super) fn owed_properties(props: &mut BTreeMap<String, String>) -> BTreeMap<String, String> {
    let mapped = ColumnMapping::of(props).is_enabled();
    let mut owed = BTreeMap::new();
    if mapped && let Some(v) = props.remove(ENABLE_CHANGE_DATA_FEED) {
        owed.insert(ENABLE_CHANGE_DATA_FEED.to_string(), v);
    }
    if !owed.is_empty() {
        props.insert(
            PUT_BACK_PROPERTY.to_string(),
            serde_json::to_string(&owed).unwrap_or_default(),
        );
    }
    owed
}

/// The table comment a replace that keeps none writes itself.
pub(super) fn table_comment(desired: &DesiredTable, live: &ObservedTable) -> Option<String> {
    desired
        .comment
        .clone()
        .or_else(|| live.comment.clone())
        .filter(|c| !c.is_empty())
}

/// The properties a replace that keeps none writes itself: the live ones
/// (including those someone else set; not the protocol or keys Delta
/// assigns itself, which the replace keeps or Delta refuses from a user),
/// with the spec's settings and removals.
pub(super) fn replace_properties(
    desired: &DesiredTable,
    live: &ObservedTable,
) -> BTreeMap<String, String> {
    let mut props: BTreeMap<String, String> = live
        .properties
        .iter()
        .filter(|(k, _)| !is_internal_property(k) && *k != PUT_BACK_PROPERTY)
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for (k, v) in &desired.properties {
        match v {
            Some(v) => {
                props.insert(k.clone(), v.clone());
            }
            None => {
                props.remove(k);
            }
        }
    }
    props
}

/// The primary key (declared, or the live one under the columns' new names)
/// and the foreign keys (the declared ones: they are a complete list), each
/// keeping its live name when the spec names none, while all their columns
/// survive the rewrite.
pub(super) fn keys_put_back(
    desired: &DesiredTable,
    live: &ObservedTable,
    rw: &Rewrite,
) -> Vec<Action> {
    let kept = |cols: &[String]| {
        !cols.is_empty()
            && cols.iter().all(|c| {
                rw.columns
                    .iter()
                    .any(|p| p.field.name.eq_ignore_ascii_case(c))
            })
    };
    let mut out = Vec::new();
    let pk = match (&desired.primary_key, &live.primary_key) {
        (Some(k), l) => Some(PrimaryKey {
            name: k.name.clone().or_else(|| {
                l.as_ref()
                    .filter(|l| eq_names(&l.columns, &k.columns))
                    .and_then(|l| l.name.clone())
            }),
            columns: k.columns.clone(),
        }),
        (None, Some(l)) => Some(PrimaryKey {
            name: l.name.clone(),
            columns: l.columns.iter().map(|c| renamed(desired, c)).collect(),
        }),
        (None, None) => None,
    };
    if let Some(key) = pk.filter(|k| kept(&k.columns)) {
        out.push(Action::SetPrimaryKey {
            key,
            replaces: None,
        });
    }
    for fk in &desired.foreign_keys {
        let name = fk.name.clone().or_else(|| {
            live.foreign_keys
                .iter()
                .find(|l| same_fk(l, fk))
                .and_then(|l| l.name.clone())
        });
        if kept(&fk.columns) {
            out.push(Action::AddForeignKey {
                key: ForeignKey { name, ..fk.clone() },
            });
        }
    }
    out
}
