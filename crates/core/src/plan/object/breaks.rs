//! Column changes that break views: a table step that drops, renames or
//! retypes a column a view reads (or reads `*` of) is raised to Destructive,
//! warning `breaks view c.s.v: it reads column x` for every such view,
//! declared or live in a declared schema, managed or not. A declared view
//! its plan replaces in the same apply with a query that no longer reads the
//! old column gets a note instead (the order runs the replace after the
//! table). Direct readers only: a view over such a view is not followed.

use std::collections::BTreeSet;
use std::sync::Arc;

use super::ObjectPlan;
use crate::model::{ObjectKind, ObservedObject, TableRef};
use crate::plan::planner::{Outcome, TablePlan};
use crate::plan::steps::{Action, RewritePhase, RiskClass, Source, Step};

/// The live columns a step drops, renames or retypes (top-level names).
pub fn changed_columns(step: &Step) -> Vec<String> {
    let mut out: Vec<String> = match &step.action {
        Action::DropColumn { name } => vec![name.clone()],
        Action::RenameColumn { from, .. } => vec![from.clone()],
        Action::DropField { path } | Action::AlterColumnType { path, .. } => {
            path.first().cloned().into_iter().collect()
        }
        Action::Rewrite {
            rewrite,
            phase: RewritePhase::WriteOnce | RewritePhase::Replace | RewritePhase::ReplaceChecked,
        } => {
            let mut cols: Vec<String> = rewrite
                .drops
                .iter()
                .map(|d| d.split('.').next().unwrap_or(d).to_string())
                .collect();
            for p in &rewrite.columns {
                match &p.source {
                    // renamed
                    Source::Copy { from } if !from.eq_ignore_ascii_case(&p.field.name) => {
                        cols.push(from.clone())
                    }
                    Source::Copy { .. } | Source::Null => {}
                    // converted or rebuilt: its type or values change
                    Source::Cast { from, .. }
                    | Source::Struct { from, .. }
                    | Source::Transform { from, .. } => cols.push(from.clone()),
                    Source::Using { .. } => cols.push(p.field.name.clone()),
                }
            }
            cols
        }
        _ => vec![],
    };
    out.sort_by_key(|c| c.to_lowercase());
    out.dedup_by(|a, b| a.eq_ignore_ascii_case(b));
    out
}

/// Raises every table step that breaks a view, naming each view; a declared
/// view replaced in this plan without the old column is noted instead.
/// `observed`: every live object read (the undeclared views among them count).
pub fn class_breaks(
    tables: &mut [TablePlan],
    objects: &[ObjectPlan],
    observed: &[Arc<ObservedObject>],
) {
    let views: Vec<(TableRef, &ObjectPlan)> = objects
        .iter()
        .filter(|o| o.object.kind == ObjectKind::View && o.desired.is_some())
        .map(|o| (o.object.as_table_ref(), o))
        .collect();
    let declared: BTreeSet<&TableRef> = views.iter().map(|(r, _)| r).collect();
    let mut live: Vec<&ObservedObject> = observed
        .iter()
        .map(|o| &**o)
        .filter(|o| o.object.kind == ObjectKind::View)
        .filter(|o| !declared.contains(&o.object.as_table_ref()))
        .collect();
    live.sort_by(|a, b| a.object.cmp(&b.object));
    for t in tables.iter_mut() {
        let Outcome::Accepted { steps } = &mut t.outcome else {
            continue;
        };
        for s in steps.iter_mut() {
            for column in changed_columns(s) {
                let mut broken = false;
                for (name, plan) in &views {
                    let Some(d) = &plan.desired else { continue };
                    if d.reads.reads_column(&t.table, &column) {
                        s.warnings
                            .push(format!("breaks view {name}: it reads column {column}"));
                        broken = true;
                    } else if plan
                        .observed
                        .as_ref()
                        .is_some_and(|o| o.reads.reads_column(&t.table, &column))
                    {
                        if plan.steps().iter().any(|x| x.action.is_replace()) {
                            s.notes
                                .push(format!("view {name} is replaced after this step"));
                        } else {
                            // its replace cannot run (refused or blocked): the live view breaks
                            s.warnings
                                .push(format!("breaks view {name}: it reads column {column}"));
                            broken = true;
                        }
                    }
                }
                for o in &live {
                    if o.reads.reads_column(&t.table, &column) {
                        s.warnings.push(format!(
                            "breaks view {}: it reads column {column}",
                            o.object
                        ));
                        broken = true;
                    }
                }
                if broken {
                    s.class = RiskClass::Destructive;
                }
            }
        }
    }
}
