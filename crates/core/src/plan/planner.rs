//! plan_table: a table's diff, judged by the rules, turned into ordered steps.
//! Total: every input gives Accepted, Rejected or Unchanged; never a partial subset.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::capabilities::{BackendKind, Capabilities, Strategy};
use super::change::{Change, DropReason, FieldPath};
use super::diff::{
    diff, eq_names, is_internal_property, matching_live, renamed, same_fk, same_shape,
};
use super::projection::conversion;
use super::render::human_bytes;
use super::rules::{RuleFailure, check, needs_rewrite, strategy_for};
use super::steps::{
    Action, Projection, Rewrite, RewritePhase, RiskClass, Source, Step, clone_name,
};
use crate::model::{
    CONSTRAINTS_PROPERTY, Check, DataType, DesiredColumn, DesiredTable, ForeignKey, OWNER_PROPERTY,
    ObservedColumn, ObservedTable, PUT_BACK_PROPERTY, PrimaryKey, StructField, TableRef,
};

/// What happens to a table as a whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TableAction {
    Create,
    Update,
    Destroy,
    Unchanged,
    /// An orphan in an additive schema: listed, kept.
    Keep,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "outcome")]
pub enum Outcome {
    Accepted {
        steps: Vec<Step>,
    },
    Rejected {
        failures: Vec<RuleFailure>,
    },
    /// Not run because tables it depends on (its foreign keys' parents) were
    /// refused or are blocked themselves: `by` names every one of them.
    Blocked {
        by: Vec<TableRef>,
        /// The steps it would run once they are fixed: a dry run shows their SQL,
        /// nothing runs them.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        would_run: Vec<Step>,
    },
}

/// One table's plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TablePlan {
    pub table: TableRef,
    pub action: TableAction,
    /// `<namespace>/<name>` of the declaring resource (or the live owner of an orphan).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    pub changes: Vec<Change>,
    #[serde(flatten)]
    pub outcome: Outcome,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_bytes: Option<u64>,
    /// The live Delta version the plan was made against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u64>,
    /// Both sides, so the plan id can be recomputed and a saved plan re-read.
    /// Shared with the caller, not copied: a plan of 1,000 tables × 50 columns
    /// spent a third of its time copying them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub desired: Option<Arc<DesiredTable>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed: Option<Arc<ObservedTable>>,
}

impl TablePlan {
    pub fn steps(&self) -> &[Step] {
        match &self.outcome {
            Outcome::Accepted { steps } => steps,
            _ => &[],
        }
    }
    pub fn is_accepted(&self) -> bool {
        matches!(self.outcome, Outcome::Accepted { .. })
    }
    /// The highest risk class among the steps.
    pub fn risk(&self) -> Option<RiskClass> {
        self.steps().iter().map(|s| s.class).max()
    }
}

/// Plans one declared table against its live state.
pub fn plan_table(
    desired: &DesiredTable,
    observed: Option<&ObservedTable>,
    caps: &Capabilities,
) -> TablePlan {
    let observed = observed.map(|o| Arc::new(o.clone()));
    plan_table_shared(&Arc::new(desired.clone()), observed.as_ref(), caps)
}

/// `plan_table` holding its inputs by `Arc` (what `plan_shared` calls).
pub fn plan_table_shared(
    shared_desired: &Arc<DesiredTable>,
    shared_observed: Option<&Arc<ObservedTable>>,
    caps: &Capabilities,
) -> TablePlan {
    let desired: &DesiredTable = shared_desired;
    let observed: Option<&ObservedTable> = shared_observed.map(|o| &**o);
    let d = diff(desired, observed);
    let failures = check(desired, observed, &d, caps);
    let action = match (observed, d.changes.is_empty() && d.differences.is_empty()) {
        (None, _) => TableAction::Create,
        (Some(_), true) => TableAction::Unchanged,
        (Some(_), false) => TableAction::Update,
    };
    let outcome = if !failures.is_empty() {
        Outcome::Rejected { failures }
    } else {
        Outcome::Accepted {
            steps: match observed {
                None => create_steps(desired, caps),
                Some(live) => update_steps(desired, live, &d.changes, caps),
            },
        }
    };
    TablePlan {
        table: desired.table.clone(),
        action,
        resource: Some(desired.owner_marker.to_string()),
        changes: d.changes,
        outcome,
        notes: d.notes,
        size_bytes: observed.and_then(|o| o.size_bytes),
        version: observed.and_then(|o| o.version),
        desired: Some(Arc::clone(shared_desired)),
        observed: shared_observed.cloned(),
    }
}

/// Plans a live table whose spec is gone: kept (additive) or dropped (strict).
pub fn plan_orphan(live: &ObservedTable, strict: bool, caps: &Capabilities) -> TablePlan {
    plan_orphan_shared(&Arc::new(live.clone()), strict, caps)
}

/// `plan_orphan` holding the live table by `Arc`.
pub fn plan_orphan_shared(
    shared_live: &Arc<ObservedTable>,
    strict: bool,
    caps: &Capabilities,
) -> TablePlan {
    let live: &ObservedTable = shared_live;
    let (action, changes, outcome) = if strict {
        let change = Change::DropTable {
            reason: DropReason::Orphan,
            columns: live.columns.len(),
        };
        let step = drop_table_step(live, caps);
        (
            TableAction::Destroy,
            vec![change],
            Outcome::Accepted { steps: vec![step] },
        )
    } else {
        (
            TableAction::Keep,
            vec![],
            Outcome::Accepted { steps: vec![] },
        )
    };
    // a strict drop says why in its change line; a kept orphan needs the note
    let notes = if strict {
        vec![]
    } else {
        vec!["its spec is gone; the schema is additive, so it is kept".to_string()]
    };
    TablePlan {
        table: live.table.clone(),
        action,
        resource: live.owner_marker().map(str::to_string),
        changes,
        outcome,
        notes,
        size_bytes: live.size_bytes,
        version: live.version,
        desired: None,
        observed: Some(Arc::clone(shared_live)),
    }
}

/// Plans dropping a table whose resource was deleted with `deletionPolicy: Delete`.
pub fn plan_delete(live: &ObservedTable, caps: &Capabilities) -> TablePlan {
    let mut p = plan_orphan(live, true, caps);
    p.changes = vec![Change::DropTable {
        reason: DropReason::Deleted,
        columns: live.columns.len(),
    }];
    p.notes = vec!["its resource was deleted with deletionPolicy Delete".into()];
    p
}

fn drop_table_step(live: &ObservedTable, caps: &Capabilities) -> Step {
    let undo = if matches!(caps.backend, BackendKind::Lake | BackendKind::SparkConnect) {
        // the drop moves the folder into the lake's trash, from where this brings it back
        format!("delta-operator undrop {}", live.table)
    } else {
        format!("UNDROP TABLE {}", live.table)
    };
    Step {
        number: 1,
        class: RiskClass::Destructive,
        action: Action::DropTable,
        serves: vec![0],
        warnings: vec![format!(
            "drops the table and its {} columns",
            live.columns.len()
        )],
        notes: vec![],
        undo: Some(undo),
        est_bytes: live.size_bytes,
        statements: vec![],
        checks: vec![],
    }
}

/// A step before numbering: its place in the order, and the step.
struct Draft {
    order: StepGroup,
    step: Step,
}

fn draft(order: StepGroup, class: RiskClass, action: Action, serves: Vec<usize>) -> Draft {
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
            est_bytes: None,
            statements: vec![],
            checks: vec![],
        },
    }
}

impl Draft {
    fn warn(mut self, w: impl Into<String>) -> Self {
        self.step.warnings.push(w.into());
        self
    }
    fn note(mut self, n: impl Into<String>) -> Self {
        self.step.notes.push(n.into());
        self
    }
    fn undo(mut self, u: impl Into<String>) -> Self {
        self.step.undo = Some(u.into());
        self
    }
    fn bytes(mut self, b: Option<u64>) -> Self {
        self.step.est_bytes = b;
        self
    }
}

/// Where a backend commits a table's CHECK changes at once
/// (`Capabilities::checks_in_one_commit`): every `AddCheck` draft becomes one
/// `AddChecks` step, every `DropCheck` one `DropChecks`, in the place of the
/// first. A single CHECK stays its own step.
fn merge_checks(drafts: Vec<Draft>, caps: &Capabilities) -> Vec<Draft> {
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
        into.undo = match (into.undo.take(), d.step.undo) {
            (Some(a), Some(b)) => Some(format!("{a}; {b}")),
            (a, b) => a.or(b),
        };
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
fn number(mut drafts: Vec<Draft>) -> Vec<Step> {
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
enum StepGroup {
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

fn create_steps(desired: &DesiredTable, caps: &Capabilities) -> Vec<Step> {
    let mut drafts = vec![
        draft(
            StepGroup::Create,
            RiskClass::Meta,
            Action::CreateTable {
                table: Box::new(desired.clone()),
            },
            vec![0],
        )
        .undo(format!("DROP TABLE {}", desired.table))
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
    number(merge_checks(drafts, caps))
}

/// How to go back to the version the plan read: on the lake (no SQL engine)
/// and on path-addressed Spark tables the `delta-operator restore` command (a
/// log-only commit), on Databricks Delta's RESTORE statement.
fn restore_hint(live: &ObservedTable, caps: &Capabilities) -> String {
    match (live.version, caps.backend) {
        (Some(v), BackendKind::Lake | BackendKind::SparkConnect) => {
            format!("delta-operator restore {} --version {v}", live.table)
        }
        (Some(v), _) => format!("RESTORE TABLE {} TO VERSION AS OF {v}", live.table),
        (None, _) => "no restore point: the table's version could not be read".to_string(),
    }
}

fn update_steps(
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

    /// A new NOT NULL column filled in place: one UPDATE with its `using:`,
    /// then SET NOT NULL behind its check. Both costs are shown: the UPDATE
    /// writes the table once, a staged rewrite would write it twice.
    fn backfill(&mut self, i: usize, column: &str) {
        let Some(expression) = self
            .desired
            .columns
            .iter()
            .find(|c| c.name.eq_ignore_ascii_case(column))
            .and_then(|c| c.using.clone())
        else {
            return; // refused by NonNullableColumnAdd: there is nothing to fill it with
        };
        let size = self.live.size_bytes;
        let cost = match size {
            Some(b) => format!(
                "one UPDATE writes the table's files once (about {}); a staged rewrite would write it twice (about {})",
                human_bytes(b),
                human_bytes(b.saturating_mul(2))
            ),
            None => {
                "one UPDATE writes the table's files once; a staged rewrite would write it twice"
                    .into()
            }
        };
        self.drafts.push(
            draft(
                StepGroup::Alter,
                RiskClass::Rewrite,
                Action::Backfill {
                    column: column.to_string(),
                    expression: expression.clone(),
                },
                vec![i],
            )
            .note(format!("{column} = {expression}   (using:), where it is NULL"))
            .note(cost)
            .note("Delta refuses it if another writer commits a conflicting change while it runs; appends meanwhile stay NULL and the next step's check stops on them")
            .bytes(size)
            .undo(restore_hint(self.live, self.caps)),
        );
        self.drafts.push(
            draft(
                StepGroup::Alter,
                RiskClass::Meta,
                Action::SetNotNull {
                    path: FieldPath::column(column),
                },
                vec![i],
            )
            .note("checks first that the column has no NULLs")
            .bytes(size),
        );
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
            | Change::SetDefault { .. } => self.column_change(i, change),
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
            } => self.drafts.push(
                draft(
                    StepGroup::Claim,
                    RiskClass::Meta,
                    Action::Claim {
                        marker: marker.clone(),
                        constraints: constraints.clone(),
                    },
                    s,
                )
                .note("the operator manages this table from now on")
                .undo(format!("UNSET TBLPROPERTIES ('{OWNER_PROPERTY}')")),
            ),
            // the replace writes the declared comment itself
            Change::SetTableComment { .. }
                if self.rewriting && !self.caps.replace_keeps_metadata =>
            {
                self.rewrite_serves.push(i)
            }
            Change::SetTableComment { from, to } => self.drafts.push(
                draft(
                    StepGroup::TableMeta,
                    RiskClass::Meta,
                    Action::SetTableComment {
                        comment: to.clone(),
                    },
                    s,
                )
                .undo(format!(
                    "comment was {}",
                    from.as_deref()
                        .map_or("(none)".into(), |f| format!("'{f}'"))
                )),
            ),
            // turning on a table feature by property is the feature step itself
            Change::SetProperty { key, to, .. }
                if key == "delta.columnMapping.mode" && to == "name" =>
            {
                self.need_mapping = true
            }
            Change::SetProperty { key, to, .. }
                if key == "delta.enableTypeWidening" && to == "true" =>
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
                    .note("records the constraints the operator manages: one the spec no longer declares is dropped only if recorded here")
                    .undo(match from {
                        Some(f) => format!("SET TBLPROPERTIES ('{key}' = '{f}')"),
                        None => format!("UNSET TBLPROPERTIES ('{key}')"),
                    }),
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
            Change::SetTableTag { key, to, .. } => self.drafts.push(draft(
                StepGroup::TableMeta,
                RiskClass::Meta,
                Action::SetTableTags {
                    tags: BTreeMap::from([(key.clone(), to.clone())]),
                },
                s,
            )),
            Change::UnsetTableTag { key, from } => self.drafts.push(
                draft(
                    StepGroup::TableMeta,
                    RiskClass::Meta,
                    Action::UnsetTableTags {
                        keys: vec![key.clone()],
                    },
                    s,
                )
                .undo(format!("SET TAGS ('{key}' = '{from}')")),
            ),
            _ => unreachable!("not a table change: {change:?}"),
        }
    }

    /// Columns: added, renamed, dropped, altered, and their metadata.
    fn column_change(&mut self, i: usize, change: &Change) {
        let s = vec![i];
        match change {
            // with a rewrite, a new column (or nested field) is part of the
            // projection: NULL, or its `using:` for a NOT NULL column
            Change::AddColumn { .. } if self.rewriting => self.rewrite_serves.push(i),
            Change::AddColumn { path, field } => {
                // added nullable; a NOT NULL column with `using:` is filled by the rewrite
                let added = StructField {
                    nullable: true,
                    ..field.clone()
                };
                let mut path = path.clone();
                let top_level = path.len() == 1;
                if !top_level {
                    path[0] = self.live_name(&path[0]);
                }
                // a name Delta refuses without column mapping: mapping is turned on first, where the backend can
                self.need_mapping |= self.caps.column_mapping_for_names
                    && (crate::model::names::needs_column_mapping(&field.name)
                        || crate::model::names::type_needs_column_mapping(&field.data_type));
                let mut d = draft(
                    StepGroup::Add,
                    RiskClass::Meta,
                    Action::AddColumn { path, field: added },
                    s,
                );
                if !field.nullable && self.caps.backfill_in_place && top_level {
                    d = d.note("added nullable; the next step fills it, then it is set NOT NULL");
                    self.drafts.push(d);
                    self.backfill(i, &field.name);
                    return;
                }
                if !field.nullable {
                    d = d.note("added nullable; the rewrite fills it and sets NOT NULL");
                    self.rewrite_serves.push(i);
                }
                self.drafts.push(d);
            }
            // with a rewrite, the rewrite renames (its projection follows
            // renamedFrom) and drops: a RENAME in place before it would leave
            // the rewrite selecting a name that is gone
            Change::RenameColumn { .. } | Change::DropColumn { .. } | Change::DropField { .. }
                if self.rewriting =>
            {
                self.rewrite_serves.push(i)
            }
            Change::DropField { path, .. } => {
                self.need_mapping |= self.caps.rename_drop_need_column_mapping;
                let mut path = path.clone();
                path[0] = self.live_name(&path[0]);
                let shown = path.join(".");
                self.drafts.push(
                    draft(
                        StepGroup::DropColumn,
                        RiskClass::Destructive,
                        Action::DropField { path },
                        s,
                    )
                    .warn(format!("drops field {shown} and its data"))
                    .note("in place under column mapping: no file is rewritten")
                    .undo(restore_hint(self.live, self.caps)),
                );
            }
            Change::RenameColumn { from, to } => {
                self.need_mapping |= self.caps.rename_drop_need_column_mapping;
                let mut d = draft(
                    StepGroup::Rename,
                    RiskClass::Meta,
                    Action::RenameColumn {
                        from: from.clone(),
                        to: to.clone(),
                    },
                    s,
                )
                .undo(format!("RENAME COLUMN {to} TO {from}"))
                .note(format!(
                    "renamedFrom '{from}' can be removed from the spec once applied"
                ));
                if self
                    .live
                    .primary_key
                    .as_ref()
                    .is_some_and(|k| k.columns.iter().any(|c| c.eq_ignore_ascii_case(from)))
                {
                    d = d.warn(format!(
                        "{from} is in the primary key: foreign keys of other tables that reference it follow the rename (their specs must name {to})"
                    ));
                }
                self.drafts.push(d);
            }
            Change::DropColumn { column } => {
                self.need_mapping |= self.caps.rename_drop_need_column_mapping;
                self.drafts.push(
                    draft(
                        StepGroup::DropColumn,
                        RiskClass::Destructive,
                        Action::DropColumn {
                            name: column.name.clone(),
                        },
                        s,
                    )
                    .warn(format!("drops column {} and its data", column.name))
                    .undo(restore_hint(self.live, self.caps)),
                );
            }
            Change::ChangeType { path, from, to } => {
                self.need_widening |= self.caps.widening_needs_feature;
                // Delta refuses date → timestamp_ntz until the feature is enabled by hand
                // (DELTA_FEATURES_REQUIRE_MANUAL_ENABLEMENT, found by `verify`)
                self.need_ntz |=
                    self.caps.widening_needs_feature && mentions_ntz(to) && !mentions_ntz(from);
                self.drafts.push(draft(
                    self.alter_group(),
                    RiskClass::Meta,
                    Action::AlterColumnType {
                        path: path.clone(),
                        to: to.clone(),
                    },
                    s,
                ));
            }
            Change::SetNullability {
                path,
                nullable: true,
            } => self.drafts.push(
                draft(
                    self.alter_group(),
                    RiskClass::Meta,
                    Action::DropNotNull { path: path.clone() },
                    s,
                )
                .undo(format!("SET NOT NULL {}", path.join("."))),
            ),
            Change::SetNullability {
                path,
                nullable: false,
            } => self.drafts.push(
                draft(
                    self.alter_group(),
                    RiskClass::Meta,
                    Action::SetNotNull { path: path.clone() },
                    s,
                )
                .note("checks first that the column has no NULLs")
                .bytes(self.live.size_bytes)
                .undo(restore_hint(self.live, self.caps)),
            ),
            Change::SetColumnComment { path, to, .. } => self.drafts.push(draft(
                StepGroup::ColumnMeta,
                RiskClass::Meta,
                Action::SetColumnComment {
                    path: path.clone(),
                    comment: to.clone(),
                },
                s,
            )),
            Change::SetColumnTag {
                column, key, to, ..
            } => self.drafts.push(draft(
                StepGroup::ColumnMeta,
                RiskClass::Meta,
                Action::SetColumnTags {
                    column: column.clone(),
                    tags: BTreeMap::from([(key.clone(), to.clone())]),
                },
                s,
            )),
            Change::UnsetColumnTag { column, key, .. } => self.drafts.push(draft(
                StepGroup::ColumnMeta,
                RiskClass::Meta,
                Action::UnsetColumnTags {
                    column: column.clone(),
                    keys: vec![key.clone()],
                },
                s,
            )),
            Change::SetMask { column, to, .. } => self.drafts.push(draft(
                StepGroup::ColumnMeta,
                RiskClass::Meta,
                Action::SetMask {
                    column: column.clone(),
                    mask: to.clone(),
                },
                s,
            )),
            Change::SetDefault { column, to, .. } => self.drafts.push(draft(
                StepGroup::ColumnMeta,
                RiskClass::Meta,
                Action::SetDefault {
                    column: column.clone(),
                    expression: to.clone(),
                },
                s,
            )),
            _ => unreachable!("not a column change: {change:?}"),
        }
    }

    /// CHECKs, keys and clustering.
    fn constraint_change(&mut self, i: usize, change: &Change) {
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
                .bytes(self.live.size_bytes)
                .undo(format!("DROP CONSTRAINT {}", check.name)),
            ),
            Change::DropCheck { check } => self.drafts.push(
                draft(
                    StepGroup::DropKeys,
                    RiskClass::Meta,
                    Action::DropCheck {
                        name: check.name.clone(),
                    },
                    s,
                )
                .undo(format!(
                    "ADD CONSTRAINT {} CHECK ({})",
                    check.name, check.expression
                )),
            ),
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
    fn access_change(&mut self, i: usize, change: &Change) {
        let s = vec![i];
        match change {
            Change::Grant {
                principal,
                privileges,
            } => self.drafts.push(
                draft(
                    StepGroup::Access,
                    RiskClass::Meta,
                    Action::Grant {
                        principal: principal.clone(),
                        privileges: privileges.clone(),
                    },
                    s,
                )
                .undo(format!(
                    "REVOKE {} FROM {principal}",
                    crate::model::privilege::list(privileges)
                )),
            ),
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
                ))
                .undo(format!(
                    "GRANT {} TO {principal}",
                    crate::model::privilege::list(privileges)
                )),
            ),
            Change::SetOwner { from, to } => self.drafts.push(
                draft(
                    StepGroup::Owner,
                    RiskClass::Meta,
                    Action::SetOwner { owner: to.clone() },
                    s,
                )
                .warn("the operator may lose the right to change the table")
                .undo(format!(
                    "owner was {}",
                    from.as_deref().unwrap_or("(unknown)")
                )),
            ),
            _ => unreachable!("not an access change: {change:?}"),
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
        drafts.extend(set_properties_draft(live, props, props_serve));
        drafts.extend(unset_properties_draft(live, unset, unset_serve));
        drafts.extend(feature_drafts(live, need_mapping, need_ntz, need_widening));
        if !rewrite_serves.is_empty() {
            // a put-back another step already makes (a declared CHECK, a comment) is not repeated
            let existing: Vec<Action> = drafts.iter().map(|d| d.step.action.clone()).collect();
            drafts.extend(
                rewrite_drafts(desired, live, changes, rewrite_serves, caps)
                    .into_iter()
                    .filter(|d| {
                        !(d.step.notes.iter().any(|n| n == PUT_BACK)
                            && existing.contains(&d.step.action))
                    }),
            );
        }
        drafts
    }
}

/// One SET TBLPROPERTIES for every property set, undone by the live values.
fn set_properties_draft(
    live: &ObservedTable,
    props: BTreeMap<String, String>,
    props_serve: Vec<usize>,
) -> Option<Draft> {
    if props.is_empty() {
        return None;
    }
    let undo = props
        .keys()
        .map(|k| match live.properties.get(k) {
            Some(v) => format!("'{k}'='{v}'"),
            None => format!("unset '{k}'"),
        })
        .collect::<Vec<_>>()
        .join(", ");
    Some(
        draft(
            StepGroup::TableMeta,
            RiskClass::Meta,
            Action::SetProperties { properties: props },
            props_serve,
        )
        .undo(format!("was: {undo}")),
    )
}

/// One UNSET TBLPROPERTIES for every property unset, undone by the live values.
fn unset_properties_draft(
    live: &ObservedTable,
    unset: Vec<String>,
    unset_serve: Vec<usize>,
) -> Option<Draft> {
    if unset.is_empty() {
        return None;
    }
    let undo = unset
        .iter()
        .map(|k| format!("'{k}'='{}'", live.properties[k]))
        .collect::<Vec<_>>()
        .join(", ");
    Some(
        draft(
            StepGroup::TableMeta,
            RiskClass::Meta,
            Action::UnsetProperties { keys: unset },
            unset_serve,
        )
        .undo(format!("SET TBLPROPERTIES ({undo})")),
    )
}

/// The table features a step needs, unless the table has them already:
/// column mapping, then timestamp_ntz, then type widening.
fn feature_drafts(
    live: &ObservedTable,
    need_mapping: bool,
    need_ntz: bool,
    need_widening: bool,
) -> Vec<Draft> {
    let mut drafts = Vec::new();
    if need_mapping
        && live
            .properties
            .get("delta.columnMapping.mode")
            .map(String::as_str)
            != Some("name")
    {
        drafts.push(
            draft(
                StepGroup::Prerequisite,
                RiskClass::Feature,
                Action::EnableColumnMapping,
                vec![],
            )
            .warn("breaks streaming readers — they must be restarted from scratch")
            .note("column mapping cannot be turned off again"),
        );
    }
    if need_ntz
        && live
            .properties
            .get("delta.feature.timestampNtz")
            .map(String::as_str)
            != Some("supported")
    {
        drafts.push(
            draft(
                StepGroup::Prerequisite,
                RiskClass::Feature,
                Action::EnableTimestampNtz,
                vec![],
            )
            .warn("raises the table's protocol version; older clients lose access")
            .note("a table feature cannot be turned off again"),
        );
    }
    if need_widening
        && live
            .properties
            .get("delta.enableTypeWidening")
            .map(String::as_str)
            != Some("true")
    {
        drafts.push(
            draft(
                StepGroup::Prerequisite,
                RiskClass::Feature,
                Action::EnableTypeWidening,
                vec![],
            )
            .warn("raises the table's protocol version; older clients lose access")
            .note("type widening cannot be turned off again"),
        );
    }
    drafts
}

/// True for a step that could lose the table's data: a replace, or anything
/// destructive. (Staging writes a separate copy and is not one.)
fn could_lose_data(s: &Step) -> bool {
    match &s.action {
        Action::Rewrite {
            phase: RewritePhase::Stage | RewritePhase::DropStaging,
            ..
        } => false,
        Action::Rewrite { .. } => true,
        _ => s.class == RiskClass::Destructive,
    }
}

/// Inserts a shallow clone before the first step that could lose data, and renumbers.
fn insert_clone(steps: &mut Vec<Step>, live: &ObservedTable) {
    let Some(at) = steps.iter().position(could_lose_data) else {
        return;
    };
    let name = clone_name(&live.table.table);
    let clone = Step {
        number: 0,
        class: RiskClass::Meta,
        action: Action::CloneTable { name: name.clone() },
        serves: vec![],
        warnings: vec![],
        notes: vec![
            format!("a copy of the table as it is now, readable side by side with the new one as {}.{}.{name}", live.table.catalog, live.table.schema),
            "a shallow clone copies no data: it references the table's current files, so it lasts until a VACUUM removes them".into(),
        ],
        undo: Some(format!("DROP TABLE {}.{}.{name}", live.table.catalog, live.table.schema)),
        est_bytes: None,
        statements: vec![],
        checks: vec![],
    };
    steps.insert(at, clone);
    for (i, s) in steps.iter_mut().enumerate() {
        s.number = i + 1;
    }
}

/// The projection of one declared column: where its values come from.
/// `drops` collects nested live fields the new type leaves out.
pub fn column_source(d: &DesiredColumn, live: &ObservedTable, drops: &mut Vec<String>) -> Source {
    source_from(d, matching_live(d, live), drops)
}

/// `column_source` with the matching live column already found.
fn source_from(
    d: &DesiredColumn,
    from: Option<&ObservedColumn>,
    drops: &mut Vec<String>,
) -> Source {
    match (from, &d.using) {
        // `using:` computes a value only where one is needed: a changed type,
        // or a new column; a leftover `using:` is never re-run
        (Some(l), _) if same_shape(&l.data_type, &d.data_type) => Source::Copy {
            from: l.name.clone(),
        },
        (_, Some(expr)) => Source::Using {
            expression: expr.clone(),
        },
        // no conversion written automatically: the rules refuse the plan
        // (ConversionNeedsUsing), so this fallback is never run
        (Some(l), None) => conversion(&d.name, &l.name, &l.data_type, &d.data_type, drops)
            .unwrap_or_else(|_| Source::Cast {
                from: l.name.clone(),
                from_type: l.data_type.clone(),
            }),
        (None, None) => Source::Null,
    }
}

/// The rewrite steps that carry every change this backend can only make by
/// rebuilding the table: one write-once replace, or stage → replace → drop
/// staging when a conversion could lose values; put-backs after the replace
/// where the backend's replace loses metadata.
fn rewrite_drafts(
    desired: &DesiredTable,
    live: &ObservedTable,
    changes: &[Change],
    serves: Vec<usize>,
    caps: &Capabilities,
) -> Vec<Draft> {
    let mut columns = Vec::new();
    let mut nested_drops = Vec::new();
    let partition = |name: &str, of: &[String]| of.iter().any(|p| p.eq_ignore_ascii_case(name));
    for d in &desired.columns {
        let from = matching_live(d, live);
        let source = match (source_from(d, from, &mut nested_drops), &d.using) {
            // a column becoming a partition column: Delta keeps no '' there (it
            // reads back as NULL, so the lake refuses such rows), and its
            // `using:` is how the spec maps them to a value
            (Source::Copy { .. }, Some(expression))
                if desired
                    .partitioned_by
                    .as_deref()
                    .is_some_and(|p| partition(&d.name, p))
                    && from.is_some_and(|l| !partition(&l.name, &live.partitioned_by)) =>
            {
                Source::Using {
                    expression: expression.clone(),
                }
            }
            (source, _) => source,
        };
        let comment = d
            .comment
            .clone()
            .or_else(|| from.and_then(|l| l.comment.clone()))
            .filter(|c| !c.is_empty());
        let data_type = keep_nested_comments(&d.data_type, from.map(|l| &l.data_type));
        columns.push(Projection {
            field: StructField {
                name: d.name.clone(),
                data_type,
                nullable: d.nullable,
                comment,
            },
            source,
        });
    }
    let mut drops: Vec<String> = changes
        .iter()
        .filter_map(|c| match c {
            Change::DropColumn { column } => Some(column.name.clone()),
            _ => None,
        })
        .collect();
    drops.extend(nested_drops);
    let partitioned_by = desired.wanted_partitioning().unwrap_or_else(|| {
        live.partitioned_by
            .iter()
            .map(|p| renamed(desired, p))
            .collect()
    });
    let cluster_by = if caps.clustering && partitioned_by.is_empty() {
        kept_clustering(desired, live, &columns)
    } else {
        Vec::new()
    };
    let (mut properties, comment) = if caps.replace_keeps_metadata {
        (BTreeMap::new(), None)
    } else {
        (
            replace_properties(desired, live),
            table_comment(desired, live),
        )
    };
    let owed = owed_properties(&mut properties);
    let rewrite = Rewrite {
        columns,
        partitioned_by,
        drops: drops.clone(),
        properties,
        cluster_by,
        comment,
    };
    let replace_class = if drops.is_empty() {
        RiskClass::Rewrite
    } else {
        RiskClass::Destructive
    };
    let step = |phase, class| {
        draft(
            StepGroup::Rewrite,
            class,
            Action::Rewrite {
                rewrite: rewrite.clone(),
                phase,
            },
            serves.clone(),
        )
    };
    let staged = rewrite.converts();
    let mut replace = if staged && caps.replace_from_staging {
        step(RewritePhase::Replace, replace_class)
            .note("the table is replaced from the checked staging copy in one commit")
    } else if staged {
        step(RewritePhase::ReplaceChecked, replace_class)
            .note("the table is rebuilt from itself in one statement, converting every row again")
            .note("each row is checked as the stage checked the copy: a value that would turn into NULL, or a NULL in a NOT NULL column, stops it with nothing replaced")
    } else {
        let mut r = step(RewritePhase::WriteOnce, replace_class)
            .note("the table is rebuilt from itself in one commit, so its data is written once");
        let lossless: Vec<&str> = rewrite
            .converted_columns()
            .map(|p| p.field.name.as_str())
            .collect();
        if !lossless.is_empty() {
            r = r.note(format!(
                "no staging copy: converting {} cannot lose a value",
                lossless.join(", ")
            ));
        }
        r
    };
    replace = replace
        .bytes(live.size_bytes)
        .undo(restore_hint(live, caps))
        .note("the Delta log and history are kept; the version before is recorded as the restore point")
        .note(if caps.replace_from_staging {
            "it commits only against the version it read: rows appended meanwhile are converted too, anything else stops it with nothing replaced"
        } else {
            "Delta refuses it if another writer commits while it runs (nothing is replaced); it is tried again up to 5 times"
        });
    if caps.replace_keeps_metadata {
        replace = replace.note("NOT NULL, comments, CHECK constraints and table properties are carried by the replace itself");
    } else {
        if !rewrite.properties.is_empty() {
            replace = replace.note(format!(
                "carries the table comment and properties in its own statement (TBLPROPERTIES {}), those set outside the spec too: nothing after it can lose them",
                rewrite.properties.keys().cloned().collect::<Vec<_>>().join(", ")
            ));
        }
        replace = replace.note("copied columns keep their comments and defaults (each is selected by name; row checks are in the WHERE clause)");
    }
    if !rewrite.cluster_by.is_empty()
        && live.cluster_by.as_deref().unwrap_or_default() != rewrite.cluster_by.as_slice()
    {
        replace = replace.note(format!(
            "writes the table clustered by {} in the same statement (no OPTIMIZE needed for its files)",
            rewrite.cluster_by.join(", ")
        ));
    }
    if !drops.is_empty() {
        replace = replace.warn(format!("drops {} along with the rewrite", drops.join(", ")));
    }
    let repartitions = rewrite.partitioned_by.len() != live.partitioned_by.len()
        || rewrite
            .partitioned_by
            .iter()
            .zip(&live.partitioned_by)
            .any(|(a, b)| !a.eq_ignore_ascii_case(b));
    if repartitions && caps.clustering {
        replace = replace.note("a partitioning change rewrites the whole table; liquid clustering (spec `clusterBy`) changes in place instead (ALTER TABLE … CLUSTER BY, no rewrite; files are reclustered by later OPTIMIZE runs)");
    }
    let mut out = Vec::new();
    if staged {
        let mut stage = step(RewritePhase::Stage, RiskClass::Rewrite)
            .bytes(live.size_bytes)
            .note("converted rows go to a staging copy beside the table, which is left untouched")
            .note("checked before anything is replaced: the same row count, and no converted column gains NULLs");
        // every user expression is shown where it runs
        for p in &rewrite.columns {
            if let Source::Using { expression } = &p.source {
                stage = stage.note(format!("{} = {expression}   (using:)", p.field.name));
            }
        }
        out.push(stage);
    }
    out.push(replace);
    if !caps.replace_keeps_metadata {
        out.extend(put_backs(desired, live, &rewrite, &owed, &serves));
    }
    if staged {
        out.push(step(RewritePhase::DropStaging, RiskClass::Meta));
    }
    out
}

const PUT_BACK: &str = "put back after the replace";

/// Said on every key a plan adds: what a Unity Catalog key does and does not do.
const INFORMATIONAL_KEYS: &str = "Unity Catalog keys are informational: no write is checked against them (query optimizers may rely on them)";

/// What a replace that rebuilds the table from a query loses, put back with
/// ordinary ALTERs: NOT NULL, comments and defaults of converted columns,
/// tags of renamed columns, CHECK constraints (declared or not), the primary
/// and foreign keys. The properties and the table comment are not among
/// them: the replace writes them itself (`Rewrite::properties`, `comment`).
fn put_backs(
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
        let default = d.and_then(|d| d.default.clone()).or_else(|| {
            d.and_then(|d| matching_live(d, live))
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
fn owed_properties(props: &mut BTreeMap<String, String>) -> BTreeMap<String, String> {
    let mapped = props
        .get("delta.columnMapping.mode")
        .is_some_and(|m| m == "name" || m == "id");
    let mut owed = BTreeMap::new();
    if mapped && let Some(v) = props.remove("delta.enableChangeDataFeed") {
        owed.insert("delta.enableChangeDataFeed".to_string(), v);
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
fn table_comment(desired: &DesiredTable, live: &ObservedTable) -> Option<String> {
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
fn replace_properties(desired: &DesiredTable, live: &ObservedTable) -> BTreeMap<String, String> {
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

/// The clustering a replace writes: the declared keys, else the live ones
/// whose columns survive (under their new names).
fn kept_clustering(
    desired: &DesiredTable,
    live: &ObservedTable,
    columns: &[Projection],
) -> Vec<String> {
    if let Some(k) = &desired.cluster_by {
        return k.clone();
    }
    live.cluster_by
        .iter()
        .flatten()
        .map(|c| renamed(desired, c))
        .filter(|c| columns.iter().any(|p| p.field.name.eq_ignore_ascii_case(c)))
        .collect()
}

/// The primary key (declared, or the live one under the columns' new names)
/// and the foreign keys (the declared ones: they are a complete list), each
/// keeping its live name when the spec names none, while all their columns
/// survive the rewrite.
fn keys_put_back(desired: &DesiredTable, live: &ObservedTable, rw: &Rewrite) -> Vec<Action> {
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

/// The declared type, with nested field comments the spec is silent about
/// taken from the live type (a rewrite must not erase them).
fn keep_nested_comments(want: &DataType, have: Option<&DataType>) -> DataType {
    match (want, have) {
        (DataType::Struct { fields }, Some(DataType::Struct { fields: live })) => {
            DataType::Struct {
                fields: fields
                    .iter()
                    .map(|f| {
                        let l = live.iter().find(|l| l.name.eq_ignore_ascii_case(&f.name));
                        StructField {
                            comment: f
                                .comment
                                .clone()
                                .or_else(|| l.and_then(|l| l.comment.clone())),
                            data_type: keep_nested_comments(&f.data_type, l.map(|l| &l.data_type)),
                            ..f.clone()
                        }
                    })
                    .collect(),
            }
        }
        _ => want.clone(),
    }
}

/// True when the type is or holds a timestamp_ntz.
fn mentions_ntz(t: &DataType) -> bool {
    match t {
        DataType::TimestampNtz => true,
        DataType::Array { element, .. } => mentions_ntz(element),
        DataType::Map { key, value, .. } => mentions_ntz(key) || mentions_ntz(value),
        DataType::Struct { fields } => fields.iter().any(|f| mentions_ntz(&f.data_type)),
        _ => false,
    }
}
