//! The steps that bring a live table to its spec: one walk over the diff's
//! changes, each placed as a draft, then the steps made once for all of them.

use std::collections::BTreeMap;

use super::order::{Draft, StepGroup, draft, merge_checks, number};
use super::prerequisites::{feature_drafts, insert_clone};
use super::put_back::PUT_BACK;
use super::rewrite::rewrite_drafts;
use crate::model::property::{
    COLUMN_MAPPING_MODE, ColumnMapping, ENABLE_TYPE_WIDENING, SCOPE_PROPERTY,
};
use crate::model::{CONSTRAINTS_PROPERTY, DesiredTable, ObservedTable};
use crate::plan::capabilities::{Capabilities, Strategy};
use crate::plan::change::Change;
use crate::plan::diff::matching_live;
use crate::plan::rules::{needs_rewrite, strategy_for};
use crate::plan::steps::{Action, RiskClass, Step};

mod columns;
mod constraints;

pub(super) fn update_steps(
    desired: &DesiredTable,
    live: &ObservedTable,
    changes: &[Change],
    caps: &Capabilities,
) -> Vec<Step> {
    let mut walk = UpdateDrafts::new(desired, live, changes, caps);
    for (i, change) in changes.iter().enumerate() {
        if strategy_for(change, caps) == Strategy::Rewrite {
            walk.rewrite_serves.push(i);
            continue;
        }
        walk.add(i, change);
    }
    let mut steps = number(merge_checks(walk.into_drafts(changes), caps));
    if desired.clone_before_rewrite {
        insert_clone(&mut steps, live);
    }
    steps
}

/// What walking an update's changes (in order) collects: the drafts so far,
/// the changes the rewrite serves, the properties set and unset (one step
/// each, however many keys), and the table features some step needs first.
struct UpdateDrafts<'a> {
    desired: &'a DesiredTable,
    live: &'a ObservedTable,
    caps: &'a Capabilities,
    /// With a rewrite, the rewrite is where renames happen: steps before it
    /// address columns by their live names, and column alterations run after
    /// it (where they usually already hold, since the rewrite writes the
    /// declared nullability and comments).
    rewriting: bool,
    drafts: Vec<Draft>,
    rewrite_serves: Vec<usize>,
    props: BTreeMap<String, String>,
    props_serve: Vec<usize>,
    unset: Vec<String>,
    unset_serve: Vec<usize>,
    need_mapping: bool,
    need_widening: bool,
    need_ntz: bool,
}

impl<'a> UpdateDrafts<'a> {
    fn new(
        desired: &'a DesiredTable,
        live: &'a ObservedTable,
        changes: &[Change],
        caps: &'a Capabilities,
    ) -> Self {
        UpdateDrafts {
            desired,
            live,
            caps,
            rewriting: changes.iter().any(|c| needs_rewrite(c, caps)),
            drafts: Vec::new(),
            rewrite_serves: Vec::new(),
            props: BTreeMap::new(),
            props_serve: Vec::new(),
            unset: Vec::new(),
            unset_serve: Vec::new(),
            need_mapping: false,
            need_widening: false,
            need_ntz: false,
        }
    }

    fn alter_group(&self) -> StepGroup {
        if self.rewriting {
            StepGroup::ColumnMeta
        } else {
            StepGroup::Alter
        }
    }

    fn live_name(&self, declared: &str) -> String {
        match self
            .desired
            .column(declared)
            .and_then(|d| matching_live(d, self.live))
        {
            Some(l) if self.rewriting => l.name.clone(),
            _ => declared.to_string(),
        }
    }

    /// The draft (or bookkeeping) for one change the rewrite does not serve.
    /// The match lists every kind, so a new kind of change must be placed.
    fn add(&mut self, i: usize, change: &Change) {
        match change {
            Change::CreateTable | Change::DropTable { .. } | Change::SetPartitioning { .. } => {}
            Change::RemoveLeftovers { .. }
            | Change::Claim { .. }
            | Change::SetScope { .. }
            | Change::SetTableComment { .. }
            | Change::SetProperty { .. }
            | Change::UnsetProperty { .. }
            | Change::SetTableTag { .. }
            | Change::UnsetTableTag { .. } => self.table_change(i, change),
            Change::AddColumn { .. }
            | Change::RenameColumn { .. }
            | Change::DropColumn { .. }
            | Change::DropField { .. }
            | Change::ChangeType { .. }
            | Change::SetNullability { .. }
            | Change::SetColumnComment { .. }
            | Change::SetColumnTag { .. }
            | Change::UnsetColumnTag { .. }
            | Change::SetMask { .. }
            | Change::SetDefault { .. }
            | Change::DropDefault { .. } => self.column_change(i, change),
            Change::AddCheck { .. }
            | Change::DropCheck { .. }
            | Change::SetPrimaryKey { .. }
            | Change::AddForeignKey { .. }
            | Change::DropForeignKey { .. }
            | Change::SetClustering { .. } => self.constraint_change(i, change),
            Change::Grant { .. } | Change::Revoke { .. } | Change::SetOwner { .. } => {
                self.access_change(i, change)
            }
        }
    }

    /// Leftovers, the claim, and the table's comment, properties and tags.
    fn table_change(&mut self, i: usize, change: &Change) {
        let s = vec![i];
        match change {
            Change::RemoveLeftovers { leftovers } => {
                let mut d = draft(StepGroup::Prerequisite, RiskClass::Meta, Action::RemoveLeftovers { leftovers: leftovers.clone() }, s)
                    .note("they belong to no table: the runs that wrote them were interrupted before finishing");
                for l in leftovers {
                    d = d.note(format!(
                        "{} ({} files, {} bytes)",
                        l.location, l.files, l.bytes
                    ));
                }
                self.drafts.insert(0, d);
            }
            Change::Claim {
                marker,
                constraints,
                scope,
            } => self.drafts.push(
                draft(
                    StepGroup::Claim,
                    RiskClass::Meta,
                    Action::Claim {
                        marker: marker.clone(),
                        constraints: constraints.clone(),
                        scope: *scope,
                    },
                    s,
                )
                .note(if scope.is_full() {
                    "the operator manages this table from now on".to_string()
                } else {
                    format!("the operator governs this table at scope {scope} from now on: only what that scope manages is changed, and the table is never dropped by the operator")
                }),
            ),
            Change::SetScope { from, to } => {
                let action = if to.is_full() {
                    Action::UnsetProperties {
                        keys: vec![SCOPE_PROPERTY.to_string()],
                    }
                } else {
                    Action::SetProperties {
                        properties: BTreeMap::from([(
                            SCOPE_PROPERTY.to_string(),
                            to.marker().to_string(),
                        )]),
                    }
                };
                self.drafts.push(
                    draft(StepGroup::Claim, RiskClass::Meta, action, s).note(format!(
                        "the spec's scope moves from {from} to {to}: from now on the operator changes what {to} manages"
                    )),
                )
            }
            // the replace writes the declared comment itself
            Change::SetTableComment { .. }
                if self.rewriting && !self.caps.replace_keeps_metadata =>
            {
                self.rewrite_serves.push(i)
            }
            Change::SetTableComment { to, .. } => self.drafts.push(draft(
                StepGroup::TableMeta,
                RiskClass::Meta,
                Action::SetTableComment {
                    comment: to.clone(),
                },
                s,
            )),
            Change::SetProperty { .. } | Change::UnsetProperty { .. } => {
                self.property_change(i, change)
            }
            Change::SetTableTag { key, to, .. } => self.drafts.push(draft(
                StepGroup::TableMeta,
                RiskClass::Meta,
                Action::SetTableTags {
                    tags: BTreeMap::from([(key.clone(), to.clone())]),
                },
                s,
            )),
            Change::UnsetTableTag { key, .. } => self.drafts.push(draft(
                StepGroup::TableMeta,
                RiskClass::Meta,
                Action::UnsetTableTags {
                    keys: vec![key.clone()],
                },
                s,
            )),
            _ => unreachable!("not a table change: {change:?}"),
        }
    }

    /// A property set or unset: one step for all of them, a feature step, or
    /// the record of the operator's constraints.
    fn property_change(&mut self, i: usize, change: &Change) {
        let s = vec![i];
        match change {
            // turning on a table feature by property is the feature step itself
            Change::SetProperty { key, to, .. }
                if key == COLUMN_MAPPING_MODE
                    && ColumnMapping::parse(Some(to)) == ColumnMapping::Name =>
            {
                self.need_mapping = true
            }
            Change::SetProperty { key, to, .. }
                if key == ENABLE_TYPE_WIDENING && to == "true" =>
            {
                self.need_widening = true
            }
            // the record of the operator's constraints: its own step after them, so it
            // never names one whose add failed
            Change::SetProperty { key, from, to } if key == CONSTRAINTS_PROPERTY => {
                self.drafts.push(
                    draft(
                        StepGroup::AddKeys,
                        RiskClass::Meta,
                        Action::SetProperties {
                            properties: BTreeMap::from([(key.clone(), to.clone())]),
                        },
                        s,
                    )
                    .note("records the constraints the operator manages: one the spec no longer declares is dropped only if recorded here"),
                )
            }
            Change::SetProperty { key, to, .. } => {
                self.props.insert(key.clone(), to.clone());
                self.props_serve.push(i);
            }
            Change::UnsetProperty { key, .. } => {
                self.unset.push(key.clone());
                self.unset_serve.push(i);
            }
            _ => unreachable!("not a property change: {change:?}"),
        }
    }

    /// The drafts collected, then those made once for all changes: the
    /// property steps, the features needed first, and the rewrite.
    fn into_drafts(self, changes: &[Change]) -> Vec<Draft> {
        let UpdateDrafts {
            desired,
            live,
            caps,
            mut drafts,
            rewrite_serves,
            props,
            props_serve,
            unset,
            unset_serve,
            need_mapping,
            need_widening,
            need_ntz,
            ..
        } = self;
        drafts.extend(set_properties_draft(props, props_serve));
        drafts.extend(unset_properties_draft(unset, unset_serve));
        let mut rewrite = Vec::new();
        if !rewrite_serves.is_empty() {
            // a put-back another step already makes (a declared CHECK, a comment) is not repeated
            let existing: Vec<Action> = drafts.iter().map(|d| d.step.action.clone()).collect();
            rewrite.extend(
                rewrite_drafts(desired, live, changes, rewrite_serves, caps)
                    .into_iter()
                    .filter(|d| {
                        !(d.step.notes.iter().any(|n| n == PUT_BACK)
                            && existing.contains(&d.step.action))
                    }),
            );
        }
        // a default set (declared, or put back after a rewrite) needs the table feature first
        let need_defaults = drafts
            .iter()
            .chain(&rewrite)
            .any(|d| matches!(d.step.action, Action::SetDefault { .. }));
        drafts.extend(feature_drafts(
            live,
            need_mapping,
            need_ntz,
            need_widening,
            need_defaults,
        ));
        drafts.extend(rewrite);
        drafts
    }
}

/// One SET TBLPROPERTIES for every property set.
pub(super) fn set_properties_draft(
    props: BTreeMap<String, String>,
    props_serve: Vec<usize>,
) -> Option<Draft> {
    if props.is_empty() {
        return None;
    }
    Some(draft(
        StepGroup::TableMeta,
        RiskClass::Meta,
        Action::SetProperties { properties: props },
        props_serve,
    ))
}

/// One UNSET TBLPROPERTIES for every property unset.
pub(super) fn unset_properties_draft(unset: Vec<String>, unset_serve: Vec<usize>) -> Option<Draft> {
    if unset.is_empty() {
        return None;
    }
    Some(draft(
        StepGroup::TableMeta,
        RiskClass::Meta,
        Action::UnsetProperties { keys: unset },
        unset_serve,
    ))
}
