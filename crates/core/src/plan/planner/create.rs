//! The steps that create a table that does not exist yet.

use std::collections::BTreeMap;

use super::order::{Draft, StepGroup, draft, merge_checks, number};
use crate::model::{DesiredTable, OWNER_PROPERTY};
use crate::plan::capabilities::Capabilities;
use crate::plan::steps::{Action, RiskClass, Step};

/// A new table: the create (which writes its properties and the owner
/// marker), then its metadata, CHECKs, keys and access, in the fixed order.
pub(super) fn create_steps(desired: &DesiredTable, caps: &Capabilities) -> Vec<Step> {
    let mut drafts = vec![
        draft(
            StepGroup::Create,
            RiskClass::Meta,
            Action::CreateTable {
                table: Box::new(desired.clone()),
            },
            vec![0],
        )
        .note(format!(
            "marks the table {OWNER_PROPERTY} = {}",
            desired.owner_marker
        )),
    ];
    for check in &desired.checks {
        drafts.push(draft(
            StepGroup::AddKeys,
            RiskClass::Meta,
            Action::AddCheck {
                check: check.clone(),
            },
            vec![0],
        ));
    }
    let tags: BTreeMap<String, String> = desired
        .tags
        .iter()
        .filter_map(|(k, v)| v.clone().map(|v| (k.clone(), v)))
        .collect();
    if !tags.is_empty() {
        drafts.push(draft(
            StepGroup::TableMeta,
            RiskClass::Meta,
            Action::SetTableTags { tags },
            vec![0],
        ));
    }
    drafts.extend(column_meta(desired));
    drafts.extend(keys_and_access(desired));
    number(merge_checks(drafts, caps))
}

/// The new table's column tags and masks, each its own step after the create.
fn column_meta(desired: &DesiredTable) -> Vec<Draft> {
    let mut drafts = Vec::new();
    for c in &desired.columns {
        let tags: BTreeMap<String, String> = c
            .tags
            .iter()
            .filter_map(|(k, v)| v.clone().map(|v| (k.clone(), v)))
            .collect();
        if !tags.is_empty() {
            drafts.push(draft(
                StepGroup::ColumnMeta,
                RiskClass::Meta,
                Action::SetColumnTags {
                    column: c.name.clone(),
                    tags,
                },
                vec![0],
            ));
        }
        if let Some(m) = &c.mask {
            drafts.push(draft(
                StepGroup::ColumnMeta,
                RiskClass::Meta,
                Action::SetMask {
                    column: c.name.clone(),
                    mask: m.clone(),
                },
                vec![0],
            ));
        }
    }
    drafts
}

/// The new table's keys, grants and owner, after its columns exist.
fn keys_and_access(desired: &DesiredTable) -> Vec<Draft> {
    let mut drafts = Vec::new();
    if let Some(pk) = &desired.primary_key {
        drafts.push(draft(
            StepGroup::AddKeys,
            RiskClass::Meta,
            Action::SetPrimaryKey {
                key: pk.clone(),
                replaces: None,
            },
            vec![0],
        ));
    }
    for fk in &desired.foreign_keys {
        drafts.push(draft(
            StepGroup::AddKeys,
            RiskClass::Meta,
            Action::AddForeignKey { key: fk.clone() },
            vec![0],
        ));
    }
    for g in &desired.grants {
        drafts.push(draft(
            StepGroup::Access,
            RiskClass::Meta,
            Action::Grant {
                principal: g.principal.clone(),
                privileges: g.privileges.clone(),
            },
            vec![0],
        ));
    }
    if let Some(o) = &desired.owner {
        drafts.push(
            draft(
                StepGroup::Owner,
                RiskClass::Meta,
                Action::SetOwner { owner: o.clone() },
                vec![0],
            )
            .warn("the operator may lose the right to change the table"),
        );
    }
    drafts
}
