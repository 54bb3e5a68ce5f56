//! Steps compiled to SQL: every step's statements and checks, from the
//! observed state its plan was made from (and what the table's earlier steps
//! set), with the placeholders of `core::plan::compile` where only the run
//! knows the value. Pure: text in, text out. The statements of each action
//! family are in their own file; `compile_for` routes an action to its family.

mod access;
mod columns;
mod constraints;
mod features;
pub mod maintenance;
pub mod objects;
mod relation;
mod table;
#[cfg(test)]
mod tests;

use delta_operator_core::model::{ObservedTable, SchemaRef, TableKind, TableRef};
use delta_operator_core::plan::compile::{
    self, CheckWhen, CompileError, Compiled, CompiledObject, Compiler, RunBinding, StepCheck,
};
use delta_operator_core::plan::statement::Statement;
use delta_operator_core::plan::steps::{Action, RewritePhase};
use delta_operator_core::plan::{ObjectPlan, ObjectStep, SchemaStep, Step, TablePlan};

use crate::quote::{Names, field_path};
use crate::{SqlError, rewrite};

/// Compiles steps to Databricks SQL, naming tables as `names` says (Unity
/// Catalog's three parts, or Delta paths for OSS Delta on Spark).
#[derive(Debug, Clone, Default)]
pub struct SqlCompiler {
    pub names: Names,
}

/// The run's values for the placeholders (the core's, named as this crate always did).
pub type Binding<'a> = RunBinding<'a>;

impl From<SqlError> for CompileError {
    fn from(e: SqlError) -> Self {
        match e {
            SqlError::Unsupported(what) => CompileError::Unsupported(what),
            other => CompileError::Invalid(other.to_string()),
        }
    }
}

impl Compiler for SqlCompiler {
    fn bind(
        &self,
        plan: &TablePlan,
        observed: Option<&ObservedTable>,
        earlier: &[Step],
        step: &Step,
        binding: &RunBinding<'_>,
    ) -> Result<Compiled, CompileError> {
        if matches!(
            step.action,
            Action::Compact { .. } | Action::Vacuum { .. } | Action::Checkpoint
        ) {
            let keep_days = plan
                .desired
                .as_ref()
                .and_then(|d| d.maintenance.as_ref())
                .and_then(|m| m.vacuum.as_ref())
                .map(|v| v.keep_restore_points_days);
            let statements =
                maintenance::compile(&self.names, &plan.table, &step.action, keep_days)?;
            return Ok(Compiled {
                statements: statements.into_iter().map(Statement::Sql).collect(),
                notes: maintenance::notes(&self.names, &step.action, keep_days),
                ..Default::default()
            });
        }
        Ok(compile_step(
            &self.names,
            &plan.table,
            observed,
            earlier,
            step,
            *binding,
        )?)
    }

    fn compile_schema(
        &self,
        schema: &SchemaRef,
        step: &SchemaStep,
    ) -> Result<Vec<String>, CompileError> {
        Ok(vec![crate::schema::compile_schema(schema, &step.action)?])
    }

    /// Views, functions and volumes have three-part names only (Unity
    /// Catalog): a compiler naming tables by path has none.
    fn compile_object(
        &self,
        plan: &ObjectPlan,
        step: &ObjectStep,
    ) -> Result<CompiledObject, CompileError> {
        if self.names != Names::Catalog {
            return Err(CompileError::Unsupported(format!(
                "{} needs a Unity Catalog metastore; tables named by path have none",
                step.action.title(&plan.object)
            )));
        }
        objects::compile(plan, step)
    }
}

/// One step's statements and checks, bound as `bind` says.
pub fn compile_step(
    names: &Names,
    t: &TableRef,
    observed: Option<&ObservedTable>,
    earlier: &[Step],
    step: &Step,
    bind: Binding<'_>,
) -> Result<Compiled, SqlError> {
    // the table as the earlier steps leave it, so a plan compiles as it will run
    let mut live = delta_operator_core::plan::action::after(observed, earlier);
    if let Some(l) = live.as_mut() {
        l.version = bind.version;
    }
    let live = live.as_ref();
    let statements = compile_for(names, t, &step.action, live, bind.run)?;
    let mut checks = Vec::new();
    let mut notes = Vec::new();
    match &step.action {
        Action::SetNotNull { path } => checks.push(StepCheck {
            when: CheckWhen::Before,
            query: not_null_violations(names, t, path),
            refuses: "any row with no value, naming how many; the warehouse refuses the ALTER too (DELTA_NOT_NULL_CONSTRAINT_VIOLATED), after scanning the table".into(),
        }),
        Action::AddCheck { check } => checks.push(StepCheck {
            when: CheckWhen::Before,
            query: format!(
                "SELECT count(*) AS `violations` FROM {} WHERE NOT coalesce(({}), false)",
                names.table(t),
                check.expression
            ),
            refuses: "any row the constraint rejects (false or NULL), naming how many; the warehouse refuses the ADD CONSTRAINT too (DELTA_NEW_CHECK_CONSTRAINT_VIOLATION), after scanning the table".into(),
        }),
        Action::Rewrite { rewrite, phase } => {
            // every phase that reads the table counts the rows whose new partition value
            // would be '' (Delta stores it as NULL) before it writes anything
            if !matches!(phase, RewritePhase::DropStaging)
                && let Some(query) = crate::partitions::empty_count(names, t, rewrite)
            {
                checks.push(StepCheck {
                    when: CheckWhen::Before,
                    query,
                    refuses: crate::partitions::refuses(rewrite),
                });
            }
            match phase {
            RewritePhase::Stage => {
                checks.push(StepCheck {
                    when: CheckWhen::After,
                    query: rewrite::stage_check(names, t, rewrite, live, bind.run),
                    refuses: "a copy whose row count differs from the version it was made from, a converted column that gained NULLs, or a NULL in a NOT NULL column; the original stays untouched and the copy is kept to inspect".into(),
                });
                notes.push(format!("{}: this apply's run id (the staging copy is its own); {}: the table's Delta version when the step starts, which the check compares the copy with", compile::RUN, compile::VERSION));
            }
            RewritePhase::ReplaceChecked => notes.push("every row is converted again and checked as the stage checked the copy (raise_error): one bad row fails the statement with nothing replaced; Delta refuses the replace if another writer commits meanwhile (retried)".into()),
            RewritePhase::DropStaging => notes.push(format!("{}: this apply's run id", compile::RUN)),
            RewritePhase::WriteOnce | RewritePhase::Replace => {}
            }
        }
        Action::CloneTable { .. } => notes.push(format!(
            "{}: the table's Delta version when the clone is taken",
            compile::VERSION
        )),
        _ => {}
    }
    let undo = crate::undo::undo(
        names,
        t,
        &step.action,
        live,
        observed.and_then(|o| o.version),
    );
    Ok(Compiled {
        statements: statements.into_iter().map(Statement::Sql).collect(),
        checks,
        notes,
        undo,
    })
}

/// Rows where a NOT NULL field would have no value. A nested field counts
/// only where its parents have values (that is what Delta enforces).
fn not_null_violations(names: &Names, t: &TableRef, path: &[String]) -> String {
    let mut cond: Vec<String> = (1..path.len())
        .map(|i| format!("{} IS NOT NULL", field_path(&path[..i])))
        .collect();
    cond.push(format!("{} IS NULL", field_path(path)));
    format!(
        "SELECT count(*) AS `violations` FROM {} WHERE {}",
        names.table(t),
        cond.join(" AND ")
    )
}

/// The statements that carry out one action, in order. `live` is the table as
/// last read: it decides prerequisites inside a step (protocol versions, a
/// primary key to replace); `None` means unknown.
pub fn compile(
    t: &TableRef,
    action: &Action,
    live: Option<&ObservedTable>,
) -> Result<Vec<String>, SqlError> {
    compile_for(&Names::Catalog, t, action, live, "")
}

/// The statements of a step in one run (the run names its staging copy).
pub fn compile_for(
    names: &Names,
    t: &TableRef,
    action: &Action,
    live: Option<&ObservedTable>,
    run: &str,
) -> Result<Vec<String>, SqlError> {
    use Action as A;
    let kind = live.map(|l| l.kind).unwrap_or_default();
    if !kind.is_table() {
        return relation::compile(names, t, action, live, kind);
    }
    match action {
        A::CreateTable { .. }
        | A::Claim { .. }
        | A::SetTableComment { .. }
        | A::SetProperties { .. }
        | A::UnsetProperties { .. }
        | A::SetClustering { .. }
        | A::CloneTable { .. }
        | A::DropTable
        | A::RemoveLeftovers { .. } => table::compile(names, t, action, live),
        A::EnableColumnMapping
        | A::EnableTypeWidening
        | A::EnableTimestampNtz
        | A::EnableColumnDefaults => features::compile(names, t, action, live),
        A::AddColumn { .. }
        | A::RenameColumn { .. }
        | A::DropColumn { .. }
        | A::DropField { .. }
        | A::AlterColumnType { .. }
        | A::DropNotNull { .. }
        | A::SetNotNull { .. }
        | A::SetColumnComment { .. }
        | A::SetDefault { .. }
        | A::DropDefault { .. }
        | A::Backfill { .. } => columns::compile(names, t, action),
        A::Grant { .. }
        | A::Revoke { .. }
        | A::SetOwner { .. }
        | A::SetTableTags { .. }
        | A::UnsetTableTags { .. }
        | A::SetColumnTags { .. }
        | A::UnsetColumnTags { .. }
        | A::SetMask { .. } => access::compile(names, t, action, kind),
        A::AddCheck { .. }
        | A::DropCheck { .. }
        | A::AddChecks { .. }
        | A::DropChecks { .. }
        | A::SetPrimaryKey { .. }
        | A::AddForeignKey { .. }
        | A::DropForeignKey { .. } => constraints::compile(names, t, action, live),
        A::Rewrite { rewrite, phase } => rewrite::rewrite_sql(names, t, rewrite, *phase, live, run),
        // the spec's keepRestorePointsDays is the plan's: `SqlCompiler::bind` passes it
        A::Compact { .. } | A::Vacuum { .. } | A::Checkpoint => {
            maintenance::compile(names, t, action, None)
        }
    }
}

pub(crate) fn alter(names: &Names, t: &TableRef, rest: impl AsRef<str>) -> String {
    alter_as(names, t, TableKind::Table, rest)
}

/// `ALTER TABLE`, or the ALTER a streaming table, materialized view or view takes.
pub(crate) fn alter_as(
    names: &Names,
    t: &TableRef,
    kind: TableKind,
    rest: impl AsRef<str>,
) -> String {
    let keyword = match kind {
        TableKind::Table => "TABLE",
        TableKind::StreamingTable => "STREAMING TABLE",
        TableKind::MaterializedView => "MATERIALIZED VIEW",
        TableKind::View => "VIEW",
    };
    format!("ALTER {keyword} {} {}", names.table(t), rest.as_ref())
}
