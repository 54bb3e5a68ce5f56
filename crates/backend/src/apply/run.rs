//! Runs a plan: the schemas' steps first, then tables and objects in the
//! plan's dependency order; a table or object that did not reach its spec
//! blocks what needs it.

use crate::{Backend, TableRun};
use delta_operator_core::model::{SchemaRef, TableRef};
use delta_operator_core::plan::graph::Node;
use delta_operator_core::plan::{ObjectPlan, Outcome, Plan, SchemaAction, TablePlan};

use super::gated::end_all;
use super::report::table_reports;
use super::schemas::run_schemas;
use super::tables::{TableSteps, blocked_by, not_run_report};
use super::{ApplyReport, LockedTable, Options, SchemaStepReport, StepStatus, objects};

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
pub(super) async fn run_locked<B: Backend>(
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
