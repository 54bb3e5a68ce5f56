//! Whole tables: create, clone, drop, and removing a failed run's leftovers.

use delta_operator_core::model::{DesiredTable, Leftover, TableRef};
use delta_operator_core::plan::compile::{self, Compiled, RunBinding};
use delta_operator_core::plan::statement::{
    CommitOperation as Op, DeltaOperation as D, LogAction as L, Statement,
};

use super::{commit, version_of};
use crate::phases::staging_root;
use crate::{clone_rel, trash_root};

pub(super) fn create(at: &str, d: &DesiredTable, out: &mut Compiled) {
    out.statements.push(commit(
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
    ));
}

pub(super) fn remove_leftovers(leftovers: &[Leftover], out: &mut Compiled) {
    out.statements.extend(leftovers.iter().map(|l| {
        Statement::Delta(D::RemoveLeftover {
            location: l.location.clone(),
            run: l.run.clone(),
        })
    }));
}

pub(super) fn clone(t: &TableRef, at: &str, name: &str, b: &RunBinding<'_>, out: &mut Compiled) {
    out.statements.push(commit(
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

pub(super) fn drop(t: &TableRef, at: &str, out: &mut Compiled) {
    out.statements.push(Statement::Delta(D::MoveToTrash {
        table: at.to_string(),
        trash: trash_root(t),
    }));
    out.statements.push(Statement::Delta(D::RemoveFolder {
        folder: staging_root(t),
    }));
}
