//! THE PURE CORE: no I/O, no kube, no HTTP, no delta-rs, no tokio.
//!
//! lower (spec) → resolve → read (backend) → **diff → rules → plan** → apply.
//! Everything here is a function of its inputs, so the controller and the CLI
//! plan identically, and a saved observed state reproduces a plan anywhere.

pub mod action;
pub mod capabilities;
pub mod change;
pub mod compile;
pub mod diff;
pub mod gate;
pub mod graph;
pub mod hand_off;
pub mod holds;
pub mod id;
pub mod inputs;
pub mod object;
pub mod planner;
pub mod projection;
pub mod render;
pub mod rules;
pub mod schema;
pub mod scope;
pub mod statement;
pub mod steps;
pub mod undo;
pub mod undo_window;

use std::borrow::Borrow;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

pub use capabilities::{BackendKind, Capabilities, Strategy};
pub use change::{Change, Difference};
pub use compile::{
    CheckWhen, CompileError, Compiled, CompiledObject, Compiler, RunBinding, StepCheck,
};
pub use graph::Node;
pub use id::PlanId;
pub use inputs::Inputs;
pub use object::{
    ObjectAction, ObjectOutcome, ObjectPlan, ObjectStep, plan_objects, plan_orphan_objects,
};

pub use planner::{
    Outcome, TableAction, TablePlan, plan_delete, plan_orphan, plan_orphan_shared, plan_table,
    plan_table_shared,
};
pub use rules::{Rule, RuleFailure};
pub use schema::{SchemaAction, SchemaPlan, SchemaStep, plan_schemas};
pub use statement::{DeltaOperation, Statement};
pub use steps::{Action, RiskClass, Step};

use crate::model::{
    DesiredObject, DesiredTable, ObjectRef, ObservedObject, ObservedTable, ResourceId, SchemaMeta,
    SchemaMode, SchemaRef, TableRef,
};

/// The JSON format's version; bump on any incompatible change.
pub const FORMAT_VERSION: u32 = 1;

/// Totals for the closing line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    pub add: usize,
    pub change: usize,
    pub destroy: usize,
    pub steps: usize,
    pub rewrites: usize,
    pub warnings: usize,
    pub rejected: usize,
    /// Tables a narrow-scope spec waits for (absent, not its to create).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub deferred: usize,
    /// Maintenance steps (compaction, vacuum, checkpoints) among `steps`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub maintenance: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl Summary {
    /// `+1 ~2 -1`, as the status column shows it.
    pub fn short(&self) -> String {
        format!("+{} ~{} -{}", self.add, self.change, self.destroy)
    }
}

/// A whole plan: every declared table, and the orphans of declared schemas.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub format_version: u32,
    pub id: PlanId,
    pub backend: BackendKind,
    pub summary: Summary,
    pub tables: Vec<TablePlan>,
    /// Live tables in declared schemas the operator does not manage: never touched.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unmanaged: Vec<TableRef>,
    /// The declared schemas' own metadata (comment, properties, owner, grants).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub schemas: Vec<SchemaPlan>,
    /// Views, functions and volumes: the declared ones, and the orphans of
    /// declared schemas.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub objects: Vec<ObjectPlan>,
    /// Every table and object plan, dependencies first: the apply's order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub order: Vec<Node>,
    /// Live views, functions and volumes in declared schemas without an
    /// owner marker and without a spec: never touched.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unmanaged_objects: Vec<ObjectRef>,
}

/// The plans of a whole plan before its totals and id are made (once, over
/// the compiled statements: `compile::compile_all`, `finish_parts`).
#[derive(Debug, Clone, Default)]
pub struct Parts {
    pub tables: Vec<TablePlan>,
    pub schemas: Vec<SchemaPlan>,
    pub objects: Vec<ObjectPlan>,
    pub unmanaged: Vec<TableRef>,
    pub unmanaged_objects: Vec<ObjectRef>,
    /// Every table and object, dependencies first (`plan_objects`); empty
    /// when no object was planned (the tables' own order then).
    pub order: Vec<Node>,
}

impl Plan {
    pub fn has_changes(&self) -> bool {
        self.summary.steps > 0 || self.summary.rejected > 0
    }
    /// The highest risk class of any step, a table's or a schema's.
    pub fn risk(&self) -> Option<RiskClass> {
        let tables = self.tables.iter().filter_map(TablePlan::risk);
        tables
            .chain(self.schemas.iter().filter_map(SchemaPlan::risk))
            .chain(self.objects.iter().filter_map(ObjectPlan::risk))
            .max()
    }
    /// The plan with these schema plans, its totals and id counted again.
    pub fn with_schemas(self, schemas: Vec<SchemaPlan>, caps: &Capabilities) -> Plan {
        let parts = Parts {
            schemas,
            ..self.into_parts()
        };
        finish_parts(caps.backend, parts)
    }
    /// Its plans, to be finished again.
    pub fn into_parts(self) -> Parts {
        Parts {
            tables: self.tables,
            schemas: self.schemas,
            objects: self.objects,
            unmanaged: self.unmanaged,
            unmanaged_objects: self.unmanaged_objects,
            order: self.order,
        }
    }
    /// The order the executor runs tables and objects in: `order`, or for a
    /// plan made without objects (whose `order` is empty) its tables as planned.
    pub fn apply_order(&self) -> Vec<Node> {
        if !self.order.is_empty() {
            return self.order.clone();
        }
        self.tables
            .iter()
            .map(|t| Node::Table(t.table.clone()))
            .chain(self.objects.iter().map(|o| Node::Object(o.object.clone())))
            .collect()
    }
    /// Object steps that wait for approval (a strict orphan's drop).
    pub fn destructive_object_steps(&self) -> impl Iterator<Item = (&ObjectPlan, &ObjectStep)> {
        self.objects
            .iter()
            .flat_map(|o| o.steps().iter().map(move |s| (o, s)))
            .filter(|(_, s)| s.class == RiskClass::Destructive)
    }
    pub fn rejected_objects(&self) -> impl Iterator<Item = &ObjectPlan> {
        self.objects.iter().filter(|o| o.is_refused())
    }
    pub fn destructive_steps(&self) -> impl Iterator<Item = (&TablePlan, &Step)> {
        self.tables
            .iter()
            .flat_map(|t| t.steps().iter().map(move |s| (t, s)))
            .filter(|(_, s)| s.class == RiskClass::Destructive)
    }
    pub fn rejected(&self) -> impl Iterator<Item = &TablePlan> {
        self.tables.iter().filter(|t| t.is_refused())
    }
    pub fn deferred(&self) -> impl Iterator<Item = &TablePlan> {
        self.tables.iter().filter(|t| t.is_deferred())
    }
}

/// A declared schema: which live tables in it are orphans, what to do with
/// them, and the schema's own metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaScope {
    pub schema: SchemaRef,
    pub mode: SchemaMode,
    pub meta: SchemaMeta,
}

impl SchemaScope {
    /// A scope whose spec declares no metadata.
    pub fn new(schema: SchemaRef, mode: SchemaMode) -> Self {
        SchemaScope {
            schema,
            mode,
            meta: SchemaMeta::default(),
        }
    }
}

/// Plans everything: declared tables in dependency order (a foreign key's
/// parent first), then orphans. `observed` holds every live table read,
/// including all tables of the declared schemas (for orphans). No clock:
/// no maintenance schedule is due (`plan_at` gives the time).
pub fn plan(
    desired: &[DesiredTable],
    observed: &[ObservedTable],
    schemas: &[SchemaScope],
    caps: &Capabilities,
) -> Plan {
    plan_at(desired, observed, schemas, caps, None)
}

/// `plan` at `now_ms` (epoch milliseconds): the time maintenance schedules
/// (`every:`) and recorded restore points are measured against.
pub fn plan_at(
    desired: &[DesiredTable],
    observed: &[ObservedTable],
    schemas: &[SchemaScope],
    caps: &Capabilities,
    now_ms: Option<i64>,
) -> Plan {
    let desired: Vec<Arc<DesiredTable>> = desired.iter().cloned().map(Arc::new).collect();
    let observed: Vec<Arc<ObservedTable>> = observed.iter().cloned().map(Arc::new).collect();
    let (tables, unmanaged) = plan_tables_at(&desired, &observed, schemas, caps, now_ms);
    finish(caps, tables, unmanaged)
}

/// `plan` over inputs held by `Arc`: the plan shares them instead of copying
/// every table (the engine's path).
pub fn plan_shared(
    desired: &[Arc<DesiredTable>],
    observed: &[Arc<ObservedTable>],
    schemas: &[SchemaScope],
    caps: &Capabilities,
) -> Plan {
    let (tables, unmanaged) = plan_tables(desired, observed, schemas, caps);
    finish(caps, tables, unmanaged)
}

/// The table plans and the unmanaged tables of `plan_shared`, not yet
/// numbered: for a caller that adds schema plans before the id is made once.
pub fn plan_tables(
    desired: &[Arc<DesiredTable>],
    observed: &[Arc<ObservedTable>],
    schemas: &[SchemaScope],
    caps: &Capabilities,
) -> (Vec<TablePlan>, Vec<TableRef>) {
    plan_tables_at(desired, observed, schemas, caps, None)
}

/// `plan_tables` at `now_ms`: with the maintenance steps due then.
pub fn plan_tables_at(
    desired: &[Arc<DesiredTable>],
    observed: &[Arc<ObservedTable>],
    schemas: &[SchemaScope],
    caps: &Capabilities,
    now_ms: Option<i64>,
) -> (Vec<TablePlan>, Vec<TableRef>) {
    let live: BTreeMap<&TableRef, &Arc<ObservedTable>> =
        observed.iter().map(|o| (&o.table, o)).collect();
    let mut tables: Vec<TablePlan> = resolve_order(desired)
        .into_iter()
        .map(|d| {
            let mut t = plan_table_shared(d, live.get(&d.table).copied(), caps);
            planner::add_due_maintenance(&mut t, now_ms);
            t
        })
        .collect();
    if caps.primary_and_foreign_keys {
        let all: Vec<&ObservedTable> = observed.iter().map(|o| &**o).collect();
        rules::check_referenced_keys(&mut tables, &all);
    }
    block_dependents(&mut tables);
    let declared: BTreeSet<&TableRef> = desired.iter().map(|d| &d.table).collect();
    let mut unmanaged = Vec::new();
    let mut observed: Vec<&Arc<ObservedTable>> = observed.iter().collect();
    observed.sort_by(|a, b| a.table.cmp(&b.table));
    for o in observed {
        let in_scope = |s: &&SchemaScope| {
            s.schema.catalog == o.table.catalog && s.schema.schema == o.table.schema
        };
        let Some(scope) = schemas.iter().find(in_scope) else {
            continue;
        };
        if declared.contains(&o.table) {
            continue;
        }
        if o.owner_marker().is_some() {
            tables.push(plan_orphan_shared(
                o,
                scope.mode == SchemaMode::Strict,
                caps,
            ));
        } else {
            unmanaged.push(o.table.clone());
        }
    }
    (tables, unmanaged)
}

/// Tables and objects planned together at `now_ms`: the table plans of
/// `plan_tables_at`, then the views, functions and volumes against
/// `observed_objects` (every live one of the declared schemas, and the
/// declared ones), the graph's cycles refused, the table steps that break
/// views classed, dependants blocked, and the order. Not yet compiled or
/// numbered (`compile::compile_all`, or `finish_parts`).
pub fn plan_all_at(
    desired: &[Arc<DesiredTable>],
    observed: &[Arc<ObservedTable>],
    desired_objects: &[Arc<DesiredObject>],
    observed_objects: &[Arc<ObservedObject>],
    schemas: &[SchemaScope],
    caps: &Capabilities,
    now_ms: Option<i64>,
) -> Parts {
    let (mut tables, unmanaged) = plan_tables_at(desired, observed, schemas, caps, now_ms);
    let (objects, unmanaged_objects, order) = plan_objects(
        desired_objects,
        observed_objects,
        schemas,
        caps,
        &mut tables,
    );
    Parts {
        tables,
        schemas: vec![],
        objects,
        unmanaged,
        unmanaged_objects,
        order,
    }
}

/// A schema's orphans as the cluster knows them: its live tables carrying the
/// marker of a resource in `namespace` that no longer exists (`existing` holds
/// the resources that do). `plan` finds orphans by the tables a manifest set
/// declares; a DeltaSchema's reconcile sees resources instead, and a marker of
/// another namespace belongs to that namespace's schemas. Additive scopes list
/// them (no steps); strict ones drop them.
pub fn plan_orphans(
    scope: &SchemaScope,
    observed: &[ObservedTable],
    namespace: &str,
    existing: &BTreeSet<ResourceId>,
    caps: &Capabilities,
) -> Plan {
    let mut observed: Vec<&ObservedTable> = observed
        .iter()
        .filter(|o| o.table.schema_ref() == scope.schema)
        .filter(|o| {
            o.owner()
                .is_some_and(|r| r.namespace == namespace && !existing.contains(&r))
        })
        .collect();
    observed.sort_by(|a, b| a.table.cmp(&b.table));
    let tables = observed
        .into_iter()
        .map(|o| plan_orphan(o, scope.mode == SchemaMode::Strict, caps))
        .collect();
    finish(caps, tables, vec![])
}

/// Numbers the totals and the id for a set of table plans.
pub fn finish(caps: &Capabilities, tables: Vec<TablePlan>, unmanaged: Vec<TableRef>) -> Plan {
    finish_all(caps, tables, vec![], unmanaged)
}

/// Numbers the totals and the id for table and schema plans.
pub fn finish_all(
    caps: &Capabilities,
    tables: Vec<TablePlan>,
    schemas: Vec<SchemaPlan>,
    unmanaged: Vec<TableRef>,
) -> Plan {
    finish_for(caps.backend, tables, schemas, unmanaged)
}

/// `finish_all` by the backend's kind alone (what the id needs).
pub(crate) fn finish_for(
    backend: BackendKind,
    tables: Vec<TablePlan>,
    schemas: Vec<SchemaPlan>,
    unmanaged: Vec<TableRef>,
) -> Plan {
    finish_parts(
        backend,
        Parts {
            tables,
            schemas,
            unmanaged,
            ..Parts::default()
        },
    )
}

/// Numbers the totals and the id for every part of a plan.
pub fn finish_parts(backend: BackendKind, parts: Parts) -> Plan {
    let Parts {
        tables,
        schemas,
        objects,
        unmanaged,
        unmanaged_objects,
        order,
    } = parts;
    let mut summary = Summary::default();
    for s in &schemas {
        match s.is_accepted() {
            false => summary.rejected += 1,
            true if s.creates() => summary.add += 1,
            true if !s.steps().is_empty() => summary.change += 1,
            true => {}
        }
        summary.steps += s.steps().len();
        summary.warnings += s.steps().iter().map(|x| x.warnings.len()).sum::<usize>();
    }
    for t in &tables {
        let steps = t.steps();
        match t.action {
            _ if !t.is_accepted() => {}
            TableAction::Create => summary.add += 1,
            TableAction::Destroy => summary.destroy += 1,
            TableAction::Update if !steps.is_empty() => summary.change += 1,
            _ => {}
        }
        if t.is_refused() {
            summary.rejected += 1;
        }
        if t.is_deferred() {
            summary.deferred += 1;
        }
        summary.steps += steps.len();
        summary.maintenance += steps
            .iter()
            .filter(|s| s.class == RiskClass::Maintenance)
            .count();
        summary.rewrites += steps
            .iter()
            .filter(|s| {
                matches!(
                    s.action,
                    Action::Rewrite {
                        phase: steps::RewritePhase::WriteOnce
                            | steps::RewritePhase::Replace
                            | steps::RewritePhase::ReplaceChecked,
                        ..
                    }
                )
            })
            .count();
        summary.warnings += steps.iter().map(|s| s.warnings.len()).sum::<usize>();
    }
    for o in &objects {
        let steps = o.steps();
        match o.action {
            _ if !o.is_accepted() => summary.rejected += 1,
            TableAction::Create => summary.add += 1,
            TableAction::Destroy => summary.destroy += 1,
            TableAction::Update if !steps.is_empty() => summary.change += 1,
            _ => {}
        }
        summary.steps += steps.len();
        summary.warnings += steps.iter().map(|s| s.warnings.len()).sum::<usize>();
    }
    let id = id::plan_id_parts(backend, &tables, &schemas, &objects);
    Plan {
        format_version: FORMAT_VERSION,
        id,
        backend,
        summary,
        tables,
        unmanaged,
        schemas,
        objects,
        order,
        unmanaged_objects,
    }
}

/// The plan `maintain` runs: of `plan`, only the maintenance steps due, on
/// the accepted tables `keep` keeps (numbered again from 1; a table with none
/// due is left out), and no schema step; its totals and id counted again. Every other step waits for an
/// `apply`; a table refused or deferred has no maintenance planned anyway.
pub fn maintenance_only(plan: &Plan, keep: impl Fn(&TablePlan) -> bool) -> Plan {
    let tables = plan
        .tables
        .iter()
        .filter(|t| t.is_accepted() && keep(t))
        .map(|t| {
            let mut t = t.clone();
            if let Outcome::Accepted { steps } = &mut t.outcome {
                steps.retain(|s| s.class == RiskClass::Maintenance);
                for (i, s) in steps.iter_mut().enumerate() {
                    s.number = i + 1;
                }
            }
            // what else differs waits for an apply: not this plan's
            t.action = TableAction::Unchanged;
            t.changes.clear();
            t
        })
        .filter(|t| !t.steps().is_empty())
        .collect();
    finish_for(plan.backend, tables, vec![], plan.unmanaged.clone())
}

/// Declared tables ordered so every foreign key's parent comes first; ties by name.
pub fn resolve_order<D: Borrow<DesiredTable>>(desired: &[D]) -> Vec<&D> {
    let tables: Vec<&DesiredTable> = desired.iter().map(Borrow::borrow).collect();
    order_of(&tables).into_iter().map(|i| &desired[i]).collect()
}

/// `resolve_order` as positions in `desired`.
fn order_of(desired: &[&DesiredTable]) -> Vec<usize> {
    let mut sorted: Vec<usize> = (0..desired.len()).collect();
    sorted.sort_by(|&a, &b| desired[a].table.cmp(&desired[b].table));
    let mut done: BTreeSet<&TableRef> = BTreeSet::new();
    let mut out = Vec::new();
    while out.len() < sorted.len() {
        let before = out.len();
        for &i in &sorted {
            let d = desired[i];
            if done.contains(&d.table) {
                continue;
            }
            let ready = d.foreign_keys.iter().all(|fk| {
                fk.references == d.table
                    || done.contains(&fk.references)
                    || !sorted.iter().any(|&x| desired[x].table == fk.references)
            });
            if ready {
                done.insert(&d.table);
                out.push(i);
            }
        }
        if out.len() == before {
            // a cycle (validation reports it): keep the rest in name order
            out.extend(
                sorted
                    .iter()
                    .filter(|&&i| !done.contains(&desired[i].table)),
            );
            break;
        }
    }
    out
}

/// A table whose foreign-key parent (or mask function) was rejected or blocked is blocked too,
/// naming every such parent (to a fixed point: a parent blocked later in the
/// same pass is named as well); the steps it would run are kept for the dry run.
/// Run after planning and again after compiling (a step the backend cannot
/// compile refuses its table then).
pub(crate) fn block_dependents(tables: &mut [TablePlan]) {
    graph::block(tables, &mut []);
}
