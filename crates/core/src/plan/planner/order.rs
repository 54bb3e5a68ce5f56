//! Drafts (steps before numbering), the groups that order them, numbering, and
//! merging a table's CHECK changes into one commit where the backend allows it.

use crate::plan::capabilities::Capabilities;
use crate::plan::steps::{Action, RiskClass, Step};

/// A step before numbering: its place in the order, and the step.
pub(super) struct Draft {
    pub(super) order: StepGroup,
    pub(super) step: Step,
}

pub(super) fn draft(
    order: StepGroup,
    class: RiskClass,
    action: Action,
    serves: Vec<usize>,
) -> Draft {
    Draft {
        order,
        step: Step {
            number: 0,
            class,
            action,
            serves,
            warnings: vec![],
            notes: vec![],
            undo: None,
            undo_window: None,
            est_bytes: None,
            statements: vec![],
            checks: vec![],
        },
    }
}

impl Draft {
    pub(super) fn warn(mut self, w: impl Into<String>) -> Self {
        self.step.warnings.push(w.into());
        self
    }
    pub(super) fn note(mut self, n: impl Into<String>) -> Self {
        self.step.notes.push(n.into());
        self
    }
    pub(super) fn bytes(mut self, b: Option<u64>) -> Self {
        self.step.est_bytes = b;
        self
    }
}

/// Where a backend commits a table's CHECK changes at once
/// (`Capabilities::checks_in_one_commit`): every `AddCheck` draft becomes one
/// `AddChecks` step, every `DropCheck` one `DropChecks`, in the place of the
/// first. A single CHECK stays its own step.
pub(super) fn merge_checks(drafts: Vec<Draft>, caps: &Capabilities) -> Vec<Draft> {
    let adds = drafts
        .iter()
        .filter(|d| matches!(d.step.action, Action::AddCheck { .. }))
        .count();
    let drops = drafts
        .iter()
        .filter(|d| matches!(d.step.action, Action::DropCheck { .. }))
        .count();
    if !caps.checks_in_one_commit || (adds < 2 && drops < 2) {
        return drafts;
    }
    let mut out: Vec<Draft> = Vec::with_capacity(drafts.len());
    let mut add_at: Option<usize> = None;
    let mut drop_at: Option<usize> = None;
    for d in drafts {
        let (at, merged) = match &d.step.action {
            Action::AddCheck { check } if adds >= 2 => (
                &mut add_at,
                Action::AddChecks {
                    checks: vec![check.clone()],
                },
            ),
            Action::DropCheck { name } if drops >= 2 => (
                &mut drop_at,
                Action::DropChecks {
                    names: vec![name.clone()],
                },
            ),
            _ => {
                out.push(d);
                continue;
            }
        };
        let Some(i) = *at else {
            *at = Some(out.len());
            out.push(Draft {
                order: d.order,
                step: Step {
                    action: merged,
                    ..d.step
                },
            });
            continue;
        };
        let into = &mut out[i].step;
        match (&mut into.action, d.step.action) {
            (Action::AddChecks { checks }, Action::AddCheck { check }) => checks.push(check),
            (Action::DropChecks { names }, Action::DropCheck { name }) => names.push(name),
            _ => {}
        }
        for s in d.step.serves {
            if !into.serves.contains(&s) {
                into.serves.push(s);
            }
        }
        for w in d.step.warnings {
            if !into.warnings.contains(&w) {
                into.warnings.push(w);
            }
        }
        for n in d.step.notes {
            if !into.notes.contains(&n) {
                into.notes.push(n);
            }
        }
    }
    for i in [add_at, drop_at].into_iter().flatten() {
        out[i]
            .step
            .notes
            .push("one commit for all of them: the table's constraints are written once".into());
    }
    out
}

/// Orders drafts (stable within one order) and numbers them from 1.
pub(super) fn number(mut drafts: Vec<Draft>) -> Vec<Step> {
    drafts.sort_by_key(|d| d.order);
    drafts
        .into_iter()
        .enumerate()
        .map(|(i, d)| Step {
            number: i + 1,
            ..d.step
        })
        .collect()
}

/// Where a step goes within a table's plan (delta-engine's precedence, adapted):
/// steps are sorted by group, stably, then numbered from 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum StepGroup {
    /// Removing leftovers, then table features a later step needs.
    Prerequisite,
    Create,
    Claim,
    DropKeys,
    TableMeta,
    Rename,
    Add,
    Alter,
    Rewrite,
    ColumnMeta,
    Cluster,
    DropColumn,
    AddKeys,
    Access,
    Owner,
}
