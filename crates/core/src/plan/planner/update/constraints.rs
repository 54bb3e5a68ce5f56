//! Drafts for CHECKs, keys and clustering, and for grants and the owner.

use super::UpdateDrafts;
use crate::plan::change::Change;
use crate::plan::planner::order::{StepGroup, draft};
use crate::plan::steps::{Action, RiskClass};

/// Said on every key a plan adds: what a Unity Catalog key does and does not do.
pub(super) const INFORMATIONAL_KEYS: &str = "Unity Catalog keys are informational: no write is checked against them (query optimizers may rely on them)";

impl UpdateDrafts<'_> {
    /// CHECKs, keys and clustering.
    pub(super) fn constraint_change(&mut self, i: usize, change: &Change) {
        let s = vec![i];
        match change {
            Change::AddCheck { check } => self.drafts.push(
                draft(
                    StepGroup::AddKeys,
                    RiskClass::Meta,
                    Action::AddCheck {
                        check: check.clone(),
                    },
                    s,
                )
                .warn("validates every existing row, which scans the table")
                .bytes(self.live.size_bytes),
            ),
            Change::DropCheck { check } => self.drafts.push(draft(
                StepGroup::DropKeys,
                RiskClass::Meta,
                Action::DropCheck {
                    name: check.name.clone(),
                },
                s,
            )),
            Change::SetPrimaryKey { from, to } => {
                let mut d = draft(
                    StepGroup::AddKeys,
                    RiskClass::Meta,
                    Action::SetPrimaryKey {
                        key: to.clone(),
                        replaces: from.clone(),
                    },
                    s,
                );
                if let Some(old) = from {
                    d = d.warn(format!(
                        "drops the live primary key ({}) first: a table has one",
                        old.columns.join(", ")
                    ));
                }
                d = d.note(INFORMATIONAL_KEYS);
                self.drafts.push(d);
            }
            Change::AddForeignKey { key } => self.drafts.push(
                draft(
                    StepGroup::AddKeys,
                    RiskClass::Meta,
                    Action::AddForeignKey { key: key.clone() },
                    s,
                )
                .note(INFORMATIONAL_KEYS),
            ),
            Change::DropForeignKey { key } => self.drafts.push(draft(
                StepGroup::DropKeys,
                RiskClass::Meta,
                Action::DropForeignKey { key: key.clone() },
                s,
            )),
            // the replace writes the declared clustering itself (CLUSTER BY)
            Change::SetClustering { .. } if self.rewriting && self.caps.clustering => {
                self.rewrite_serves.push(i)
            }
            Change::SetClustering { to, .. } => self.drafts.push(
                draft(
                    StepGroup::Cluster,
                    RiskClass::Meta,
                    Action::SetClustering { keys: to.clone() },
                    s,
                )
                .note("applies to new data; run OPTIMIZE to recluster existing files"),
            ),
            _ => unreachable!("not a constraint change: {change:?}"),
        }
    }

    /// Grants, revokes and the owner.
    pub(super) fn access_change(&mut self, i: usize, change: &Change) {
        let s = vec![i];
        match change {
            Change::Grant {
                principal,
                privileges,
            } => self.drafts.push(draft(
                StepGroup::Access,
                RiskClass::Meta,
                Action::Grant {
                    principal: principal.clone(),
                    privileges: privileges.clone(),
                },
                s,
            )),
            Change::Revoke {
                principal,
                privileges,
            } => self.drafts.push(
                draft(
                    StepGroup::Access,
                    RiskClass::Meta,
                    Action::Revoke {
                        principal: principal.clone(),
                        privileges: privileges.clone(),
                    },
                    s,
                )
                .warn(format!(
                    "{principal} loses {}",
                    crate::model::privilege::list(privileges)
                )),
            ),
            Change::SetOwner { to, .. } => self.drafts.push(
                draft(
                    StepGroup::Owner,
                    RiskClass::Meta,
                    Action::SetOwner { owner: to.clone() },
                    s,
                )
                .warn("the operator may lose the right to change the table"),
            ),
            _ => unreachable!("not an access change: {change:?}"),
        }
    }
}
