//! The executor, shared by the CLI and the controller: re-reads and re-plans,
//! refuses a stale or unapproved plan, then runs each table's steps in order,
//! skipping what already holds and recording a restore point before every
//! rewrite or destructive step.

pub mod bind;
pub mod objects;

pub use objects::ObjectStepReport;

use futures::future::BoxFuture;
use serde::Serialize;

use std::time::Duration;

use crate::engine::read_and_plan;
use crate::{Backend, BackendError, Extras, TableRun, failpoint};
use delta_operator_core::model::{SchemaRef, TableRef};
use delta_operator_core::plan::Inputs;
use delta_operator_core::plan::gate::{Decision, Policy, gate};
use delta_operator_core::plan::graph::Node;
use delta_operator_core::plan::holds::holds;
use delta_operator_core::plan::rules::{Rule, RuleFailure};
use delta_operator_core::plan::schema::holds as schema_holds;
use delta_operator_core::plan::{
    ObjectPlan, Outcome, Plan, PlanId, RiskClass, SchemaAction, SchemaStep, Step, TableAction,
    TablePlan,
};

/// What happened to one step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "status")]
pub enum StepStatus {
    Applied,
    /// The change already held; nothing was run.
    Skipped,
    Failed {
        error: String,
    },
    /// Not run: an earlier step of the table failed.
    NotRun,
}

#[derive(Debug, Clone, Serialize)]
pub struct StepReport {
    pub table: TableRef,
    pub number: usize,
    pub title: String,
    pub class: RiskClass,
    #[serde(flatten)]
    pub status: StepStatus,
    /// The Delta version recorded before the step, for rewrites and destructive steps.
    pub restore_point: Option<u64>,
    pub detail: Option<String>,
    /// A statement of the step whose outcome is unknown: it may still be running.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub still_running: Option<String>,
}

/// What happened to one step of a schema's plan.
#[derive(Debug, Clone, Serialize)]
pub struct SchemaStepReport {
    pub schema: SchemaRef,
    pub number: usize,
    pub title: String,
    pub class: RiskClass,
    #[serde(flatten)]
    pub status: StepStatus,
    pub detail: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ApplyReport {
    pub plan_id: PlanId,
    pub steps: Vec<StepReport>,
    /// The declared schemas' metadata steps (run before the tables').
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub schema_steps: Vec<SchemaStepReport>,
    /// The steps of views, functions and volumes, in the order they ran
    /// (the plan's dependency order, between the tables').
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub object_steps: Vec<ObjectStepReport>,
    /// Tables of the plan another apply held (their steps were not run; the
    /// other tables went on): each with who holds it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub locked: Vec<LockedTable>,
    /// Every table of the plan and how it ended: one line each in the CLI's report.
    pub tables: Vec<TableReport>,
}

/// How one table of the plan ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TableReport {
    pub table: TableRef,
    /// What the plan would do to it: create, update, destroy, unchanged, keep.
    pub change: TableAction,
    #[serde(flatten)]
    pub status: TableStatus,
    /// A blocked table's statements, as a dry run shows them: nothing ran them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub would_run: Vec<String>,
}

/// A table's own result, whatever phase decided it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "status")]
pub enum TableStatus {
    /// Nothing to change.
    Unchanged,
    /// Every step ran or already held.
    Applied,
    /// A step failed; the table's later steps were not run.
    Failed { step: usize, error: String },
    /// Refused by the safety rules: untouched.
    Rejected { failures: Vec<RuleFailure> },
    /// The live table cannot be read: untouched.
    Unreadable { why: String },
    /// Tables its foreign keys reference were refused, blocked or failed: untouched.
    Blocked { by: Vec<TableRef> },
    /// Another apply holds it: untouched.
    Locked { by: String },
    /// Not run for a reason of the apply (its lease or lock was lost).
    NotRun { why: String },
    /// Absent, and its spec's scope does not create it: waited for, not failed.
    Deferred { why: String },
}

impl TableStatus {
    /// The table did not reach its spec because of itself or a table it needs
    /// (a table another apply holds is not counted: it is that apply's).
    pub fn is_failure(&self) -> bool {
        !matches!(
            self,
            TableStatus::Unchanged
                | TableStatus::Applied
                | TableStatus::Locked { .. }
                | TableStatus::Deferred { .. }
        )
    }
    pub fn word(&self) -> &'static str {
        match self {
            TableStatus::Unchanged => "unchanged",
            TableStatus::Applied => "applied",
            TableStatus::Failed { .. } => "failed",
            TableStatus::Rejected { .. } => "rejected",
            TableStatus::Unreadable { .. } => "unreadable",
            TableStatus::Blocked { .. } => "blocked",
            TableStatus::Locked { .. } => "locked",
            TableStatus::NotRun { .. } => "not run",
            TableStatus::Deferred { .. } => "deferred",
        }
    }
}

/// A table another apply held: `by` names the holder and how to break a dead one's lock.
#[derive(Debug, Clone, Serialize)]
pub struct LockedTable {
    pub table: TableRef,
    pub by: String,
}

impl ApplyReport {
    fn statuses(&self) -> impl Iterator<Item = &StepStatus> {
        let tables = self.steps.iter().map(|s| &s.status);
        tables
            .chain(self.schema_steps.iter().map(|s| &s.status))
            .chain(self.object_steps.iter().map(|s| &s.status))
    }
    /// Some step failed (a locked table is not a failure: see `locked`).
    pub fn failed(&self) -> bool {
        self.statuses()
            .any(|s| matches!(s, StepStatus::Failed { .. }))
    }
    pub fn applied(&self) -> usize {
        self.statuses()
            .filter(|s| **s == StepStatus::Applied)
            .count()
    }
    pub fn skipped(&self) -> usize {
        self.statuses()
            .filter(|s| **s == StepStatus::Skipped)
            .count()
    }
    /// Some table was refused, blocked or failed (see `tables`).
    pub fn any_table_failed(&self) -> bool {
        self.tables.iter().any(|t| t.status.is_failure())
    }
    /// True when no step of a table, a schema or an object was reported.
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty() && self.schema_steps.is_empty() && self.object_steps.is_empty()
    }
    /// `catalog.schema.table@version` for every restore point taken.
    pub fn restore_points(&self) -> Vec<String> {
        self.steps
            .iter()
            .filter_map(|s| s.restore_point.map(|v| format!("{}@{v}", s.table)))
            .collect()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    #[error(
        "the plan is stale: it was {expected}, but the tables now plan as {actual}; plan again"
    )]
    Stale { expected: String, actual: PlanId },
    #[error("plan {id} needs approval ({reason}); rerun with --approve {id}")]
    NeedsApproval { id: PlanId, reason: String },
    #[error(
        "--approve {approved} approves nothing: the plan is {id}. Review it, then approve {id}"
    )]
    WrongApproval { id: PlanId, approved: String },
    #[error("the plan is refused by the safety rules; fix the spec and plan again")]
    Rejected,
    #[error("reading the tables failed: {0}")]
    Read(#[from] BackendError),
    /// A table's lock could not be taken (not because another apply holds it:
    /// the store refused, or the lock object could not be written).
    #[error("taking the table locks failed: {0}")]
    Lock(BackendError),
    /// Another apply holds a table of the plan; nothing was changed.
    #[error("{0}")]
    Locked(String),
}

/// Events for progress output.
pub enum Event<'a> {
    Started {
        table: &'a TableRef,
        step: &'a Step,
    },
    Progress {
        table: &'a TableRef,
        step: &'a Step,
        message: &'a str,
    },
    /// Rows the running step has written so far (a lake rewrite, about every second).
    Rows {
        table: &'a TableRef,
        step: &'a Step,
        rows: crate::RowsDone,
    },
    /// A rewrite or destructive step recorded the version it starts from.
    RestorePoint {
        table: &'a TableRef,
        version: u64,
    },
    Finished(&'a StepReport),
    /// A schema step ended (applied, skipped, failed or not run).
    SchemaFinished(&'a SchemaStepReport),
    /// An object's step ended (applied, skipped or failed).
    ObjectFinished(&'a ObjectStepReport),
}

/// How an apply runs: the policy, how long to wait for a table another apply
/// holds, and the callbacks.
pub struct Options<'a> {
    pub policy: Policy,
    /// How long to wait for a table's lock before refusing (the holder is named).
    pub lock_wait: Duration,
    pub on_event: &'a (dyn Fn(Event<'_>) + Send + Sync),
    /// Asked before every step (the controller's Lease): when it says no, nothing more runs.
    pub may_continue: &'a (dyn Fn() -> bool + Send + Sync),
    /// Asked right before every step, and unlike `may_continue` it checks the
    /// truth outside this process (the controller reads its Lease back): an
    /// error stops the apply there, the step failing with its words.
    pub fence: Option<&'a (dyn Fn() -> BoxFuture<'static, Result<(), String>> + Send + Sync)>,
}

/// Re-reads, re-plans and checks the plan id and the gate; then takes the lock
/// of every table with steps, reads and plans once more under the locks (so
/// what runs is planned from what no other apply can change any more), and
/// applies. `expected` is the id the caller showed (a stale plan is refused);
/// `approved` approves a plan that needs it.
pub async fn apply<B: Backend>(
    backend: &B,
    inputs: &Inputs,
    expected: Option<&str>,
    approved: Option<&str>,
    opts: &Options<'_>,
) -> Result<(Plan, ApplyReport), ApplyError> {
    let read = || async { read_and_plan(backend, inputs).await.map(|(p, _)| p) };
    apply_planned(backend, read, expected, approved, opts).await
}

/// `apply` for any way of planning: `read_plan` reads the live tables and plans
/// (a declared set, a deleted resource's drop, a schema's orphans). It runs
/// before the locks and once more under them, so every apply, whatever its
/// plan, is refused when stale, gated, and run from what no other apply can
/// change any more.
pub async fn apply_planned<B, F, Fut>(
    backend: &B,
    read_plan: F,
    expected: Option<&str>,
    approved: Option<&str>,
    opts: &Options<'_>,
) -> Result<(Plan, ApplyReport), ApplyError>
where
    B: Backend,
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<Plan, BackendError>>,
{
    let plan = read_plan().await?;
    if let Some(e) = expected
        && e != plan.id
    {
        return Err(ApplyError::Stale {
            expected: e.to_string(),
            actual: plan.id.clone(),
        });
    }
    match gate(&plan, opts.policy, approved) {
        Decision::Rejected => return Err(ApplyError::Rejected),
        Decision::NeedsApproval { id, reason } => {
            return Err(ApplyError::NeedsApproval { id, reason });
        }
        Decision::WrongApproval { id, approved } => {
            return Err(ApplyError::WrongApproval { id, approved });
        }
        Decision::NothingToDo | Decision::Observe => {
            let tables = table_reports(&plan, &[], &[], &[]);
            return Ok((
                plan.clone(),
                ApplyReport {
                    plan_id: plan.id,
                    steps: vec![],
                    schema_steps: vec![],
                    object_steps: vec![],
                    locked: vec![],
                    tables,
                },
            ));
        }
        Decision::Apply => {}
    }
    // locks in table order, so two applies never wait on each other; a view,
    // function or volume with steps is locked by its name too (views and tables
    // share one namespace): two applies replacing one view at once would race
    // (a replace is a drop and a create) and each put back what only its own plan read
    let object_names: Vec<TableRef> = plan
        .objects
        .iter()
        .filter(|o| !o.steps().is_empty())
        .map(|o| o.object.as_table_ref())
        .collect();
    let mut tables: Vec<&TableRef> = plan
        .tables
        .iter()
        .filter(|t| !t.steps().is_empty())
        .map(|t| &t.table)
        .chain(object_names.iter())
        .collect();
    tables.sort();
    tables.dedup();
    let mut runs = Vec::new();
    // a table another apply holds is left out; the others go on (all held: refused)
    let mut locked = Vec::new();
    for t in tables {
        match backend.begin(t, opts.lock_wait).await {
            Ok(r) => runs.push(r),
            Err(BackendError::Locked(by)) => locked.push(LockedTable {
                table: t.clone(),
                by,
            }),
            Err(e) => {
                end_all(backend, runs).await;
                return Err(ApplyError::Lock(e));
            }
        }
    }
    if runs.is_empty() && !locked.is_empty() {
        let all: Vec<String> = locked.into_iter().map(|l| l.by).collect();
        return Err(ApplyError::Locked(all.join("; ")));
    }
    let replanned = read_plan().await;
    let locked_plan = match replanned {
        Ok(p) if p.id == plan.id => p,
        Ok(p) => {
            end_all(backend, runs).await;
            return Err(ApplyError::Stale {
                expected: plan.id.into(),
                actual: p.id,
            });
        }
        Err(e) => {
            end_all(backend, runs).await;
            return Err(e.into());
        }
    };
    let report = run_locked(backend, &locked_plan, &mut runs, locked, opts).await;
    end_all(backend, runs).await;
    Ok((locked_plan, report))
}

async fn end_all<B: Backend>(backend: &B, runs: Vec<TableRun>) {
    for r in runs {
        backend.end(r).await;
    }
}

/// Runs an approved plan's steps, taking each table's lock while its steps
/// run. A failing step stops its table; other tables go on, except those
/// whose foreign keys depend on a failed one.
pub async fn run_plan<B: Backend>(backend: &B, plan: &Plan, opts: &Options<'_>) -> ApplyReport {
    let mut runs = Vec::new();
    let report = run_locked(backend, plan, &mut runs, vec![], opts).await;
    end_all(backend, runs).await;
    report
}

/// Runs the steps; `runs` holds the tables already begun, and a table without
/// one is begun here (and added), except the `locked` ones another apply holds:
/// their steps are not run, nor those of tables whose foreign keys need them.
async fn run_locked<B: Backend>(
    backend: &B,
    plan: &Plan,
    runs: &mut Vec<TableRun>,
    locked: Vec<LockedTable>,
    opts: &Options<'_>,
) -> ApplyReport {
    let schema_steps = run_schemas(backend, plan, opts).await;
    let uncreated = uncreated_schemas(plan, &schema_steps);
    let mut steps = Vec::new();
    // tables that did not reach their spec in this run (failed, held by another
    // apply, or blocked in turn): a table whose foreign keys need one is blocked
    let mut failed_tables: Vec<TableRef> = locked.iter().map(|l| l.table.clone()).collect();
    let mut blocked_tables: Vec<(TableRef, Vec<TableRef>)> = Vec::new();
    // tables refused or blocked at plan time do not reach their spec either: objects over them wait
    for t in &plan.tables {
        if matches!(
            t.outcome,
            Outcome::Rejected { .. } | Outcome::Blocked { .. }
        ) {
            failed_tables.push(t.table.clone());
        }
    }
    let mut object_steps = Vec::new();
    for node in run_order(plan) {
        let t = match node {
            Ran::Object(p) => {
                let name = p.object.as_table_ref();
                match locked.iter().find(|l| l.table == name) {
                    Some(l) => {
                        failed_tables.push(name);
                        object_steps.extend(objects::not_run(
                            p,
                            &format!("not run: another apply holds it ({})", l.by),
                        ));
                    }
                    None => object_steps
                        .extend(objects::run_object(backend, p, &mut failed_tables, opts).await),
                }
                continue;
            }
            Ran::Table(t) => t,
        };
        let Outcome::Accepted { steps: planned } = &t.outcome else {
            continue;
        };
        if planned.is_empty() {
            continue;
        }
        let blocked_by = blocked_by(t, &failed_tables);
        let blocked = !blocked_by.is_empty();
        if blocked {
            failed_tables.push(t.table.clone());
            blocked_tables.push((t.table.clone(), blocked_by.clone()));
        }
        let held_by = locked.iter().find(|l| l.table == t.table);
        let mut stop = blocked || held_by.is_some();
        let mut stop_reason: Option<String> = None;
        // a table of a schema this apply was to create, and did not, would only fail
        if !stop && uncreated.contains(&t.table.schema_ref()) {
            stop = true;
            failed_tables.push(t.table.clone());
            stop_reason = Some(format!(
                "its schema {} was not created (see its CREATE SCHEMA step), so nothing of the table was run",
                t.table.schema_ref()
            ));
        }
        if !stop && !runs.iter().any(|r| r.table == t.table) {
            match backend.begin(&t.table, opts.lock_wait).await {
                Ok(r) => runs.push(r),
                Err(e) => {
                    stop = true;
                    failed_tables.push(t.table.clone());
                    stop_reason = Some(e.to_string());
                }
            }
        }
        for step in planned {
            let mut report = not_run_report(t, step, stop_reason.take(), held_by, &blocked_by);
            let run = runs.iter().find(|r| r.table == t.table);
            let mut table_run = TableSteps {
                backend,
                run,
                table: t,
                stop: &mut stop,
                failed_tables: &mut failed_tables,
                opts,
            };
            table_run.guard_and_run(step, &mut report).await;
            steps.push(report);
        }
    }
    let tables = table_reports(plan, &steps, &locked, &blocked_tables);
    ApplyReport {
        plan_id: plan.id.clone(),
        steps,
        schema_steps,
        object_steps,
        locked,
        tables,
    }
}

/// A table's or an object's plan, in the order they run.
enum Ran<'p> {
    Table(&'p TablePlan),
    Object(&'p ObjectPlan),
}

/// The plan's dependency order (`Plan::apply_order`: functions before the
/// tables whose masks call them, views after what they read), then whatever
/// it does not name, in the plan's own order.
fn run_order(plan: &Plan) -> Vec<Ran<'_>> {
    let mut out = Vec::with_capacity(plan.tables.len() + plan.objects.len());
    let mut tables_done = vec![false; plan.tables.len()];
    let mut objects_done = vec![false; plan.objects.len()];
    for node in &plan.apply_order() {
        match node {
            Node::Table(r) => {
                if let Some(i) = plan.tables.iter().position(|t| &t.table == r)
                    && !tables_done[i]
                {
                    tables_done[i] = true;
                    out.push(Ran::Table(&plan.tables[i]));
                }
            }
            Node::Object(r) => {
                if let Some(i) = plan.objects.iter().position(|o| &o.object == r)
                    && !objects_done[i]
                {
                    objects_done[i] = true;
                    out.push(Ran::Object(&plan.objects[i]));
                }
            }
        }
    }
    for (i, t) in plan.tables.iter().enumerate() {
        if !tables_done[i] {
            out.push(Ran::Table(t));
        }
    }
    for (i, o) in plan.objects.iter().enumerate() {
        if !objects_done[i] {
            out.push(Ran::Object(o));
        }
    }
    out
}

/// The tables `t`'s foreign keys reference that did not reach their spec in
/// this run (sorted, once each): `t` is blocked while any is left.
fn blocked_by(t: &TablePlan, failed_tables: &[TableRef]) -> Vec<TableRef> {
    let mut blocked_by: Vec<TableRef> = t
        .desired
        .iter()
        .flat_map(|d| d.foreign_keys.iter())
        .filter(|fk| fk.references != t.table && failed_tables.contains(&fk.references))
        .map(|fk| fk.references.clone())
        .collect();
    // the functions its column masks call (an object of this apply that failed)
    let functions = t.desired.iter().flat_map(|d| {
        d.columns
            .iter()
            .filter_map(|c| c.mask.as_ref().map(|m| m.function.as_str()))
    });
    for f in functions {
        if let Some(r) = function_ref(f, &t.table)
            && failed_tables.contains(&r)
        {
            blocked_by.push(r);
        }
    }
    blocked_by.sort();
    blocked_by.dedup();
    blocked_by
}

/// A function named in a mask or row filter (`f`, `s.f`, `c.s.f`, parts maybe
/// backticked), resolved against the table's catalog and schema.
fn function_ref(name: &str, table: &TableRef) -> Option<TableRef> {
    let parts: Vec<String> = name
        .split('.')
        .map(|p| p.trim().trim_matches('`').to_lowercase())
        .collect();
    match parts.as_slice() {
        [f] => Some(TableRef::new(&table.catalog, &table.schema, f)),
        [s, f] => Some(TableRef::new(&table.catalog, s, f)),
        [c, s, f] => Some(TableRef::new(c, s, f)),
        _ => None,
    }
}

/// A step's report before it runs: not run, failed with `stop_reason` (the
/// table's lock could not be taken), or saying which apply holds the table or
/// which failed tables block it.
fn not_run_report(
    t: &TablePlan,
    step: &Step,
    stop_reason: Option<String>,
    held_by: Option<&LockedTable>,
    blocked_by: &[TableRef],
) -> StepReport {
    let mut report = StepReport {
        table: t.table.clone(),
        number: step.number,
        title: step.action.title(),
        class: step.class,
        status: StepStatus::NotRun,
        restore_point: None,
        detail: None,
        still_running: None,
    };
    if let Some(why) = stop_reason {
        report.status = StepStatus::Failed { error: why };
    }
    if let Some(l) = held_by {
        report.detail = Some(format!("not run: {}", l.by));
    }
    if !blocked_by.is_empty() {
        report.detail = Some(format!(
            "not run: blocked by {}, which did not reach its spec in this apply",
            blocked_by
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    report
}

/// One table's steps as they run: `stop` is set once a step fails or the
/// apply may not go on, and the table is then counted in `failed_tables`
/// when it did not reach its spec.
struct TableSteps<'r, 'o, B> {
    backend: &'r B,
    run: Option<&'r TableRun>,
    table: &'r TablePlan,
    stop: &'r mut bool,
    failed_tables: &'r mut Vec<TableRef>,
    opts: &'r Options<'o>,
}

impl<B: Backend> TableSteps<'_, '_, B> {
    /// Runs `step` unless the table is stopped, the apply may not go on, the
    /// table's lock was lost or the fence refuses; the outcome goes in `report`.
    async fn guard_and_run(&mut self, step: &Step, report: &mut StepReport) {
        let (t, run, opts) = (self.table, self.run, self.opts);
        if !*self.stop && !(opts.may_continue)() {
            *self.stop = true;
            report.detail =
                Some("not run: the apply was stopped (interrupted, or its lease lost)".into());
        }
        // the table's own lock lost (a renewal found another holder's entry):
        // a failure, not a quiet "not run", so the exit code and status say so
        if !*self.stop && run.is_some_and(|r| !r.is_held()) {
            self.fail(report, format!(
                "this apply lost its lock on {} before step {}; nothing more of it was run. Another apply may hold the table now: plan again",
                t.table, step.number
            ));
        }
        if let (false, Some(_), Some(fence)) = (*self.stop, run, opts.fence)
            && let Err(why) = fence().await
        {
            self.fail(report, why);
        }
        if let (false, Some(run)) = (*self.stop, run) {
            (opts.on_event)(Event::Started {
                table: &t.table,
                step,
            });
            match run_step(self.backend, run, t, step, report, opts.on_event).await {
                Ok(s) => report.status = s,
                Err(e) => {
                    if let BackendError::StillRunning { statement, .. } = &e {
                        report.still_running = Some(statement.clone());
                    }
                    self.fail(report, e.to_string());
                }
            }
            (opts.on_event)(Event::Finished(report));
            failpoint(&format!("after-step-{}", step.number));
        }
    }

    /// The step failed with `error`: nothing more of the table runs.
    fn fail(&mut self, report: &mut StepReport, error: String) {
        *self.stop = true;
        self.failed_tables.push(self.table.table.clone());
        report.status = StepStatus::Failed { error };
    }
}

/// Every table of a plan none of whose steps ran, as the report shows it
/// (a plan the gate refused: each refused or blocked table says why).
pub fn planned_tables(plan: &Plan) -> Vec<TableReport> {
    table_reports(plan, &[], &[], &[])
}

/// Every table of `plan` and how it ended, from its plan's outcome and the
/// reports of its steps.
fn table_reports(
    plan: &Plan,
    steps: &[StepReport],
    locked: &[LockedTable],
    blocked: &[(TableRef, Vec<TableRef>)],
) -> Vec<TableReport> {
    let statements = |planned: &[Step]| -> Vec<String> {
        planned
            .iter()
            .flat_map(|s| s.statements.iter().map(ToString::to_string))
            .collect()
    };
    plan.tables
        .iter()
        .map(|t| {
            let mut would_run = vec![];
            let status = match &t.outcome {
                Outcome::Rejected { failures } => {
                    match failures.iter().find(|f| f.rule == Rule::TableUnreadable) {
                        Some(f) => TableStatus::Unreadable {
                            why: f.message.clone(),
                        },
                        None => TableStatus::Rejected {
                            failures: failures.clone(),
                        },
                    }
                }
                Outcome::Blocked { by, would_run: w } => {
                    would_run = statements(w);
                    TableStatus::Blocked { by: by.clone() }
                }
                Outcome::Deferred { why } => TableStatus::Deferred { why: why.clone() },
                Outcome::Accepted { steps: planned } if planned.is_empty() => {
                    TableStatus::Unchanged
                }
                Outcome::Accepted { steps: planned } => {
                    let mine: Vec<&StepReport> =
                        steps.iter().filter(|s| s.table == t.table).collect();
                    if let Some(l) = locked.iter().find(|l| l.table == t.table) {
                        TableStatus::Locked { by: l.by.clone() }
                    } else if let Some((_, by)) = blocked.iter().find(|(b, _)| *b == t.table) {
                        would_run = statements(planned);
                        TableStatus::Blocked { by: by.clone() }
                    } else if let Some((step, error)) = mine.iter().find_map(|s| match &s.status {
                        StepStatus::Failed { error } => Some((s.number, error.clone())),
                        _ => None,
                    }) {
                        TableStatus::Failed { step, error }
                    } else if mine.len() < planned.len()
                        || mine.iter().any(|s| s.status == StepStatus::NotRun)
                    {
                        let why = mine
                            .iter()
                            .filter(|s| s.status == StepStatus::NotRun)
                            .find_map(|s| s.detail.clone())
                            .unwrap_or_else(|| "the apply stopped before its steps".into());
                        TableStatus::NotRun { why }
                    } else {
                        TableStatus::Applied
                    }
                }
            };
            TableReport {
                table: t.table.clone(),
                change: t.action,
                status,
                would_run,
            }
        })
        .collect()
}

/// The schemas the plan creates whose CREATE SCHEMA step neither ran nor
/// already held (it failed, or the apply stopped before it).
fn uncreated_schemas(plan: &Plan, reports: &[SchemaStepReport]) -> Vec<SchemaRef> {
    plan.schemas
        .iter()
        .filter_map(|sp| {
            let create = sp
                .steps()
                .iter()
                .find(|s| matches!(s.action, SchemaAction::Create { .. }))?;
            let done = reports.iter().any(|r| {
                r.schema == sp.schema
                    && r.number == create.number
                    && matches!(r.status, StepStatus::Applied | StepStatus::Skipped)
            });
            (!done).then(|| sp.schema.clone())
        })
        .collect()
}

/// Runs each schema's metadata steps in order: re-read, skip what already
/// holds, run. A failed step stops its schema; the other schemas go on.
async fn run_schemas<B: Backend>(
    backend: &B,
    plan: &Plan,
    opts: &Options<'_>,
) -> Vec<SchemaStepReport> {
    let mut out = Vec::new();
    for sp in &plan.schemas {
        let mut stop = false;
        for step in sp.steps() {
            let mut report = SchemaStepReport {
                schema: sp.schema.clone(),
                number: step.number,
                title: step.action.title(),
                class: step.class,
                status: StepStatus::NotRun,
                detail: None,
            };
            if !stop && !(opts.may_continue)() {
                stop = true;
                report.detail =
                    Some("not run: the apply was stopped (interrupted, or its lease lost)".into());
            }
            if !stop {
                report.status = match run_schema_step(backend, &sp.schema, step).await {
                    Ok((status, detail)) => {
                        report.detail = detail;
                        status
                    }
                    Err(e) => {
                        stop = true;
                        StepStatus::Failed {
                            error: e.to_string(),
                        }
                    }
                };
                (opts.on_event)(Event::SchemaFinished(&report));
            }
            out.push(report);
        }
    }
    out
}

async fn run_schema_step<B: Backend>(
    backend: &B,
    schema: &SchemaRef,
    step: &SchemaStep,
) -> Result<(StepStatus, Option<String>), BackendError> {
    let live = backend.read_schema(schema).await?;
    if schema_holds(&step.action, live.as_ref()) {
        return Ok((StepStatus::Skipped, None));
    }
    let statements = bind::bind_schema_step(backend, schema, step)?;
    let outcome = backend.run_schema(schema, step, &statements).await?;
    Ok((StepStatus::Applied, outcome.detail))
}

async fn run_step<B: Backend>(
    backend: &B,
    run: &TableRun,
    plan: &TablePlan,
    step: &Step,
    report: &mut StepReport,
    on_event: &(dyn Fn(Event<'_>) + Send + Sync),
) -> Result<StepStatus, BackendError> {
    let table = &run.table;
    // the extras the plan was made with, so a step on tags or grants sees them
    let extras = Extras::declared(plan.desired.as_deref());
    let live = backend
        .read(std::slice::from_ref(table), &extras)
        .await?
        .pop()
        .flatten();
    if holds(&step.action, live.as_ref()) {
        return Ok(StepStatus::Skipped);
    }
    // the restore point: a version that cannot be read does not stop the step (the
    // reference's promise); its line says it had none, and why
    let mut no_restore_point = None;
    run.set_restore_point(None);
    if step.class >= RiskClass::Rewrite {
        match backend.version(table).await {
            Ok(v) => {
                report.restore_point = v;
                run.set_restore_point(v);
                if let Some(version) = v {
                    on_event(Event::RestorePoint { table, version });
                }
            }
            Err(e) => {
                no_restore_point = Some(format!(
                    "no restore point: the table's version could not be read ({})",
                    e.to_string().lines().next().unwrap_or_default()
                ))
            }
        }
    }
    let note = |m: &str| {
        on_event(Event::Progress {
            table,
            step,
            message: m,
        })
    };
    let rows = |rows: crate::RowsDone| on_event(Event::Rows { table, step, rows });
    let progress = crate::StepProgress {
        note: &note,
        rows: &rows,
    };
    crate::slow_failpoint(&format!("step-{}", step.number)).await;
    let bound = bind::bind_step(backend, run, plan, step, live.as_ref())?;
    let outcome = backend
        .run(run, plan, step, &bound, live.as_ref(), progress)
        .await?;
    report.detail = match (no_restore_point, outcome.detail) {
        (Some(n), Some(d)) => Some(format!("{n}; {d}")),
        (n, d) => n.or(d),
    };
    Ok(StepStatus::Applied)
}
