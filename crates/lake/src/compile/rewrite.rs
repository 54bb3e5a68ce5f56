//! A rewrite's phases: the rows read through the rewrite's projection, the
//! files written, the staging copy and the commit that replaces the table's files.

use delta_operator_core::model::{DataType, TableRef};
use delta_operator_core::plan::compile::{self, CheckWhen, Compiled, RunBinding, StepCheck};
use delta_operator_core::plan::statement::{
    Casts, CommitOperation as Op, DeltaOperation as D, LogAction as L, ReadAt, Statement,
};
use delta_operator_core::plan::steps::{Projection, Rewrite, RewritePhase, Source};

use super::{commit, version_of};
use crate::phases::staging_rel;
use crate::rel;
use crate::rewrite::run_folder;

pub(super) fn ops(
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
        RewritePhase::Stage => stage(&at, &staging, &version, select, b, out),
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

/// Reads the table at the version bound, writes the rows into the staging
/// folder (safe casts: a failed conversion becomes NULL and the check after
/// counts it) and commits the staging copy.
fn stage(
    at: &str,
    staging: &str,
    version: &str,
    select: String,
    b: &RunBinding<'_>,
    out: &mut Compiled,
) {
    let s = &mut out.statements;
    s.push(Statement::Delta(D::Read {
        table: at.to_string(),
        at: ReadAt::Version(b.version),
        select,
    }));
    s.push(Statement::Delta(D::WriteFiles {
        folder: format!("{staging}/"),
        casts: Casts::Safe,
    }));
    s.push(commit(
        Op::CreateTable,
        &[L::Protocol, L::MetaData, L::Add],
        staging,
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
