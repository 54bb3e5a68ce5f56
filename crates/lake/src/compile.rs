//! The lake compiler. There is no SQL engine on the lake: a step's
//! "statements" are the Delta operations the backend performs, in order —
//! what it reads, what it writes, and each commit (`DeltaOperation`, shown as
//! `commit "<operation>" [<actions>] to <table>: <what changes>`), where the
//! operation and action kinds are exactly what the commit in `_delta_log`
//! records (tests compare them). Pure: from the plan alone.

use std::collections::BTreeMap;

use delta_operator_core::model::{DataType, ObservedTable, TableRef};
use delta_operator_core::plan::compile::{
    self, CheckWhen, CompileError, Compiled, Compiler, RunBinding, StepCheck,
};
use delta_operator_core::plan::statement::{
    Casts, Commit, CommitOperation as Op, DeltaOperation as D, LogAction as L, ReadAt, Statement,
};
use delta_operator_core::plan::steps::{Action, Projection, Rewrite, RewritePhase, Source};
use delta_operator_core::plan::undo::{self, Undo};
use delta_operator_core::plan::{Step, TablePlan, change::path_string};

use crate::phases::{staging_rel, staging_root};
use crate::rewrite::run_folder;
use crate::{clone_rel, rel, trash_root};

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

fn quoted(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
}

fn props(p: &BTreeMap<String, String>) -> String {
    p.iter()
        .map(|(k, v)| format!("{} = {}", quoted(k), quoted(v)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One step's operations, bound as `b` says.
pub fn compile_step(
    t: &TableRef,
    action: &Action,
    b: &RunBinding<'_>,
) -> Result<Compiled, CompileError> {
    let table = rel(t);
    let at = table.as_str();
    let metadata = |what: String| commit(Op::SetTableProperties, &[L::MetaData], at, what);
    let mut out = Compiled::default();
    let s = &mut out.statements;
    match action {
        Action::CreateTable { table: d } => s.push(commit(
            Op::CreateTable,
            &[L::Protocol, L::MetaData],
            at,
            format!(
                "a new table of {} columns ({}){}",
                d.columns.len(),
                d.columns
                    .iter()
                    .map(|c| format!(
                        "{} {}{}",
                        c.name,
                        c.data_type,
                        if c.nullable { "" } else { " NOT NULL" }
                    ))
                    .collect::<Vec<_>>()
                    .join(", "),
                match d.partitioned_by.as_deref() {
                    Some(p) if !p.is_empty() => format!(", partitioned by ({})", p.join(", ")),
                    _ => String::new(),
                }
            ),
        )),
        Action::Claim {
            marker,
            constraints,
        } => s.push(metadata(format!(
            "set {}",
            props(&delta_operator_core::plan::steps::claim_properties(
                marker,
                constraints.as_deref()
            ))
        ))),
        Action::SetProperties { properties } => {
            s.push(metadata(format!("set {}", props(properties))))
        }
        Action::UnsetProperties { keys } => s.push(metadata(format!(
            "remove {}",
            keys.iter()
                .map(|k| quoted(k))
                .collect::<Vec<_>>()
                .join(", ")
        ))),
        Action::SetTableComment { comment } => s.push(commit(
            Op::UpdateTableMetadata,
            &[L::MetaData],
            at,
            format!("description = {}", quoted(comment)),
        )),
        Action::AddColumn { path, field } => s.push(commit(
            Op::AddColumn,
            &[L::MetaData],
            at,
            format!(
                "add {} {}{}",
                path_string(path),
                field.data_type,
                if field.nullable { "" } else { " NOT NULL" }
            ),
        )),
        Action::DropNotNull { path } => {
            s.push(metadata(format!("{} becomes nullable", path_string(path))))
        }
        Action::SetNotNull { path } => {
            s.push(Statement::Delta(D::CountMissing {
                table: at.to_string(),
                field: path_string(path),
            }));
            s.push(metadata(format!(
                "{} becomes NOT NULL, committed only against the version counted (no retry)",
                path_string(path)
            )));
            out.notes.push("refused with nothing changed when a row has no value, or when any commit lands between the count and the commit".into());
        }
        Action::SetColumnComment { path, comment } => s.push(metadata(format!(
            "the comment of {} = {}",
            path_string(path),
            quoted(comment)
        ))),
        Action::AddCheck { check } => {
            // delta-rs writes the protocol with every constraint (writer version 3 at least)
            s.push(commit(
                Op::AddConstraint,
                &[L::MetaData, L::Protocol],
                at,
                format!(
                    "set 'delta.constraints.{}' = {}",
                    check.name,
                    quoted(&check.expression)
                ),
            ));
            out.checks.push(StepCheck {
                when: CheckWhen::Before,
                query: format!("SELECT count(*) FROM {at} WHERE NOT coalesce(({}), false)", check.expression),
                refuses: "any row the expression rejects: delta-rs's add constraint scans every row (DataFusion) before it commits, and commits nothing if one fails".into(),
            });
        }
        Action::DropCheck { name } => s.push(commit(
            Op::DropConstraint,
            &[L::MetaData],
            at,
            format!("remove 'delta.constraints.{name}'"),
        )),
        Action::AddChecks { checks } => {
            // one commit, one scan: delta-rs's add constraint takes them all at once
            s.push(commit(
                Op::AddConstraint,
                &[L::MetaData, L::Protocol],
                at,
                format!(
                    "set {}",
                    checks
                        .iter()
                        .map(|c| format!(
                            "'delta.constraints.{}' = {}",
                            c.name,
                            quoted(&c.expression)
                        ))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
            out.checks.push(StepCheck {
                when: CheckWhen::Before,
                query: format!(
                    "SELECT count(*) FROM {at} WHERE NOT coalesce(({}), false)",
                    checks
                        .iter()
                        .map(|c| format!("({})", c.expression))
                        .collect::<Vec<_>>()
                        .join(" AND ")
                ),
                refuses: "any row one of the expressions rejects: delta-rs's add constraint scans every row once (DataFusion) against all of them before it commits, and commits nothing if one fails".into(),
            });
        }
        Action::DropChecks { names } => s.push(commit(
            Op::DropConstraint,
            &[L::MetaData],
            at,
            format!(
                "remove {}",
                names
                    .iter()
                    .map(|n| format!("'delta.constraints.{n}'"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )),
        Action::Rewrite { rewrite, phase } => rewrite_ops(t, rewrite, *phase, b, &mut out),
        Action::RemoveLeftovers { leftovers } => s.extend(leftovers.iter().map(|l| {
            Statement::Delta(D::RemoveLeftover {
                location: l.location.clone(),
                run: l.run.clone(),
            })
        })),
        Action::CloneTable { name } => {
            s.push(commit(
                Op::CreateTable,
                &[L::Protocol, L::MetaData, L::Add],
                &clone_rel(t, name),
                format!("adds every file of {at} at version {} by its absolute path (no data is copied), its metadata without the owner marker", version_of(b)),
            ));
            out.notes.push(format!(
                "{}: the table's Delta version when the clone is taken",
                compile::VERSION
            ));
        }
        Action::DropTable => {
            s.push(Statement::Delta(D::MoveToTrash {
                table: at.to_string(),
                trash: trash_root(t),
            }));
            s.push(Statement::Delta(D::RemoveFolder {
                folder: staging_root(t),
            }));
        }
        // the lake keeps no column defaults (its capabilities refuse them before a
        // plan is made), so neither a default nor the table feature it needs compiles
        Action::SetDefault { .. } | Action::DropDefault { .. } | Action::EnableColumnDefaults => {
            return Err(CompileError::Unsupported(format!(
                "the lake keeps no column defaults: no operation for {}",
                action.title()
            )));
        }
        other => {
            return Err(CompileError::Unsupported(format!(
                "the lake has no operation for {} (the planner should not have asked for it)",
                other.title()
            )));
        }
    }
    Ok(out)
}

fn rewrite_ops(
    t: &TableRef,
    rw: &Rewrite,
    phase: RewritePhase,
    b: &RunBinding<'_>,
    out: &mut Compiled,
) {
    let at = rel(t);
    let staging = staging_rel(t, b.run);
    let files = format!("{at}/{}/", run_folder(b.run));
    let version = version_of(b);
    let replace = |from: &str| {
        commit(
            Op::Write,
            &[L::MetaData, L::Remove, L::Add],
            &at,
            format!(
                "the new schema; a remove for every file of {from}, an add for every rewritten file; only if no other commit landed since (blind appends since are converted and the commit tried again, up to 20 rounds; anything else commits nothing)"
            ),
        )
    };
    let select = format!("SELECT {} FROM {at}", projection(rw));
    if phase != RewritePhase::DropStaging {
        empty_partition_check(rw, out);
    }
    let s = &mut out.statements;
    match phase {
        RewritePhase::WriteOnce => {
            s.push(Statement::Delta(D::Read {
                table: at.clone(),
                at: ReadAt::Latest,
                select: select.clone(),
            }));
            s.push(Statement::Delta(D::WriteFiles {
                folder: files.clone(),
                casts: Casts::Strict,
            }));
            s.push(replace("the version read"));
            out.notes
                .push(format!("{}: this apply's run id", compile::RUN));
        }
        RewritePhase::Stage => {
            s.push(Statement::Delta(D::Read {
                table: at.clone(),
                at: ReadAt::Version(b.version),
                select: select.clone(),
            }));
            s.push(Statement::Delta(D::WriteFiles {
                folder: format!("{staging}/"),
                casts: Casts::Safe,
            }));
            s.push(commit(
                Op::CreateTable,
                &[L::Protocol, L::MetaData, L::Add],
                &staging,
                format!("the staging copy, naming the files written (fails if it exists); records version {version} as where it came from"),
            ));
            out.checks.push(StepCheck {
                when: CheckWhen::After,
                query: format!("count(*), count(<each converted column>), count(<each NOT NULL column>) of {staging} against {at} at version {version}"),
                refuses: "a copy whose row count differs, a converted column that gained NULLs, or a NULL in a NOT NULL column; the original stays untouched and the copy is kept to inspect".into(),
            });
            out.notes.push(format!(
                "{}: this apply's run id; {}: the table's Delta version when the step starts",
                compile::RUN,
                compile::VERSION
            ));
        }
        RewritePhase::Replace => {
            s.push(Statement::Delta(D::CheckRowCount {
                copy: staging.clone(),
                table: at.clone(),
            }));
            s.push(Statement::Delta(D::CopyRows {
                from: staging.clone(),
                folder: files.clone(),
            }));
            s.push(replace("the version the copy was made from"));
            out.notes
                .push(format!("{}: this apply's run id", compile::RUN));
        }
        RewritePhase::ReplaceChecked => {
            s.push(Statement::Delta(D::ReadChecked {
                table: at.clone(),
                select: select.clone(),
            }));
            s.push(replace("the version read"));
        }
        RewritePhase::DropStaging => {
            s.push(Statement::Delta(D::RemoveFolder {
                folder: format!("{staging}/"),
            }));
            out.notes
                .push(format!("{}: this apply's run id", compile::RUN));
        }
    }
}

/// Delta stores an empty partition value as NULL: a rewritten row whose string
/// (or binary) partition column would hold '' refuses the rewrite, counted
/// while the rows are written, before anything is committed.
fn empty_partition_check(rw: &Rewrite, out: &mut Compiled) {
    let columns: Vec<&str> = rw
        .columns
        .iter()
        .filter(|p| {
            rw.partitioned_by
                .iter()
                .any(|c| c.eq_ignore_ascii_case(&p.field.name))
                && matches!(
                    p.field.data_type,
                    DataType::String
                        | DataType::Varchar { .. }
                        | DataType::Char { .. }
                        | DataType::Binary
                )
        })
        .map(|p| p.field.name.as_str())
        .collect();
    if columns.is_empty() {
        return;
    }
    out.checks.push(StepCheck {
        when: CheckWhen::Before,
        query: format!(
            "count(*) of the rewritten rows WHERE {}",
            columns
                .iter()
                .map(|c| format!("{c} = ''"))
                .collect::<Vec<_>>()
                .join(" OR ")
        ),
        refuses: format!(
            "any row whose partition column ({}) would hold '': Delta stores an empty partition value as NULL, so the rewrite would turn '' into NULL. Counted while the rows are written; nothing is committed, and the message names the column and the count. A `using:` on the column maps '' to a value",
            columns.join(", ")
        ),
    });
}

/// The rewrite's SELECT list as text (the backend builds the same as DataFusion expressions).
fn projection(rw: &Rewrite) -> String {
    rw.columns
        .iter()
        .map(|p| format!("{} AS {}", source(p), p.field.name))
        .collect::<Vec<_>>()
        .join(", ")
}

fn source(p: &Projection) -> String {
    match &p.source {
        Source::Copy { from } => from.clone(),
        Source::Cast { from, .. } => format!("CAST({from} AS {})", p.field.data_type),
        Source::Using { expression } => format!("({expression})"),
        Source::Null => format!("CAST(NULL AS {})", p.field.data_type),
        Source::Struct { from, fields } => format!(
            "named_struct({}) /* from {from} */",
            fields
                .iter()
                .map(|f| format!("'{}', {}", f.field.name, source(f)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Source::Transform { from, fields } => format!(
            "transform({from}, x -> named_struct({}))",
            fields
                .iter()
                .map(|f| format!("'{}', {}", f.field.name, source(f)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}
