//! The lake compiler. There is no SQL engine on the lake: a step's
//! "statements" are the Delta operations the backend performs, in order —
//! what it reads, what it writes, and each commit (`DeltaOperation`, shown as
//! `commit "<operation>" [<actions>] to <table>: <what changes>`), where the
//! operation and action kinds are exactly what the commit in `_delta_log`
//! records (tests compare them). Pure: from the plan alone. The operations of
//! each action family are in their own file; `compile_step` routes an action
//! to its family.

mod columns;
mod constraints;
mod maintenance;
mod properties;
mod rewrite;
mod table;

use std::collections::BTreeMap;

use delta_operator_core::model::{ObservedTable, SchemaRef, TableRef};
use delta_operator_core::plan::compile::{self, CompileError, Compiled, Compiler, RunBinding};
use delta_operator_core::plan::statement::{
    Commit, CommitOperation as Op, DeltaOperation as D, LogAction as L, Statement,
};
use delta_operator_core::plan::steps::Action;
use delta_operator_core::plan::undo::{self, Undo};
use delta_operator_core::plan::{SchemaAction, SchemaStep, Step, TablePlan};

use crate::{clone_rel, rel};

/// Compiles steps to the lake's Delta operations.
#[derive(Debug, Clone, Copy, Default)]
pub struct DeltaCompiler;

impl Compiler for DeltaCompiler {
    fn bind(
        &self,
        plan: &TablePlan,
        observed: Option<&ObservedTable>,
        earlier: &[Step],
        step: &Step,
        binding: &RunBinding<'_>,
    ) -> Result<Compiled, CompileError> {
        let mut out = compile_step(&plan.table, &step.action, binding)?;
        out.undo =
            undo::of_step(observed, earlier, step).and_then(|u| render_undo(&plan.table, &u));
        Ok(out)
    }

    /// A schema on the lake is a folder: its CREATE makes the folder (and the
    /// catalog's above it); nothing else of a schema has a place here (the
    /// rules refuse it first).
    fn compile_schema(
        &self,
        schema: &SchemaRef,
        step: &SchemaStep,
    ) -> Result<Vec<String>, CompileError> {
        compile_schema(schema, step)
    }
}

/// The lake's statement for a schema step (shared with Spark Connect, whose
/// schemas are the same folders).
pub fn compile_schema(schema: &SchemaRef, step: &SchemaStep) -> Result<Vec<String>, CompileError> {
    match &step.action {
        SchemaAction::Create { .. } => Ok(vec![format!(
            "create the folder {} (kept as it is when it exists)",
            schema_folder(schema)
        )]),
        other => Err(CompileError::Unsupported(format!(
            "a schema on the lake is a folder: {} has no place to go",
            other.title()
        ))),
    }
}

/// `<catalog>/<schema>/`, the schema's folder under the root.
pub fn schema_folder(schema: &SchemaRef) -> String {
    format!("{}/{}/", schema.catalog, schema.schema)
}

/// A typed undo in the lake's terms. There is no SQL engine: the table's
/// history and the trash are reached through the operator's own commands
/// (`delta-operator restore`, `delta-operator undrop`), and inverse steps are
/// shown as the operations the lake would perform for them. None: nothing
/// the lake can do (a primary key, which the lake has none of).
pub fn render_undo(t: &TableRef, u: &Undo) -> Option<String> {
    match u {
        Undo::Steps { steps } => {
            let mut out = Vec::new();
            for s in steps {
                let compiled = compile_step(t, s, &RunBinding::SHOWN).ok()?;
                out.extend(compiled.statements.iter().map(Statement::to_string));
            }
            Some(out.join(";\n"))
        }
        Undo::Restore { version: Some(v) } => {
            Some(format!("delta-operator restore {t} --version {v}"))
        }
        Undo::Restore { version: None } => {
            Some("no restore point: the table's version could not be read".into())
        }
        // the drop moved the folder into the lake's trash, from where this brings it back
        Undo::Undrop => Some(format!("delta-operator undrop {t}")),
        Undo::DropPrimaryKey => None,
        Undo::DropClone { name } => Some(format!("remove the folder {}", clone_rel(t, name))),
    }
}

/// The version a binding names, or the placeholder.
fn version_of(b: &RunBinding<'_>) -> String {
    b.version
        .map_or_else(|| compile::VERSION.to_string(), |v| v.to_string())
}

/// `commit "<op>" [<actions>] to <table>: <what>`.
fn commit(operation: Op, actions: &[L], t: &str, what: impl Into<String>) -> Statement {
    Statement::Delta(D::Commit(Commit {
        operation,
        actions: actions.to_vec(),
        table: t.to_string(),
        what: what.into(),
    }))
}

/// A metadata-only commit (`SET TBLPROPERTIES`'s kind).
fn metadata(t: &str, what: String) -> Statement {
    commit(Op::SetTableProperties, &[L::MetaData], t, what)
}

fn quoted(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
}

fn props(p: &BTreeMap<String, String>) -> String {
    p.iter()
        .map(|(k, v)| format!("{} = {}", quoted(k), quoted(v)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One step's operations, bound as `b` says. Each action family's operations
/// are in their own file; this routes an action to its family.
pub fn compile_step(
    t: &TableRef,
    action: &Action,
    b: &RunBinding<'_>,
) -> Result<Compiled, CompileError> {
    let table = rel(t);
    let at = table.as_str();
    let mut out = Compiled::default();
    match action {
        Action::CreateTable { table: d } => table::create(at, d, &mut out),
        Action::Claim {
            marker,
            constraints,
            scope,
        } => properties::claim(at, marker, constraints.as_deref(), *scope, &mut out),
        Action::SetProperties { properties } => properties::set(at, properties, &mut out),
        Action::UnsetProperties { keys } => properties::unset(at, keys, &mut out),
        Action::SetTableComment { comment } => properties::table_comment(at, comment, &mut out),
        Action::AddColumn { path, field } => columns::add(at, path, field, &mut out),
        Action::DropNotNull { path } => columns::drop_not_null(at, path, &mut out),
        Action::SetNotNull { path } => columns::set_not_null(at, path, &mut out),
        Action::SetColumnComment { path, comment } => columns::comment(at, path, comment, &mut out),
        Action::AddCheck { check } => constraints::add_check(at, check, &mut out),
        Action::DropCheck { name } => constraints::drop_check(at, name, &mut out),
        Action::AddChecks { checks } => constraints::add_checks(at, checks, &mut out),
        Action::DropChecks { names } => constraints::drop_checks(at, names, &mut out),
        Action::Rewrite { rewrite, phase } => rewrite::ops(t, rewrite, *phase, b, &mut out),
        Action::RemoveLeftovers { leftovers } => table::remove_leftovers(leftovers, &mut out),
        Action::CloneTable { name } => table::clone(t, at, name, b, &mut out),
        Action::DropTable => table::drop(t, at, &mut out),
        // the lake keeps no column defaults (its capabilities refuse them before a
        // plan is made), so neither a default nor the table feature it needs compiles
        Action::SetDefault { .. } | Action::DropDefault { .. } | Action::EnableColumnDefaults => {
            return Err(CompileError::Unsupported(format!(
                "the lake keeps no column defaults: no operation for {}",
                action.title()
            )));
        }
        Action::Compact {
            target_file_bytes,
            z_order,
        } => maintenance::compact(at, *target_file_bytes, z_order, b, &mut out),
        Action::Vacuum {
            retain_hours,
            keep_versions,
            ..
        } => maintenance::vacuum(at, *retain_hours, keep_versions, &mut out),
        Action::Checkpoint => maintenance::checkpoint(at, &mut out),
        other => {
            return Err(CompileError::Unsupported(format!(
                "the lake has no operation for {} (the planner should not have asked for it)",
                other.title()
            )));
        }
    }
    Ok(out)
}
