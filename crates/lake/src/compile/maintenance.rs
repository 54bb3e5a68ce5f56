//! Maintenance: compaction (delta-rs's OPTIMIZE), vacuum and checkpoints, as
//! the operations and commits the lake performs for them.

use delta_operator_core::plan::compile::{Compiled, RunBinding};
use delta_operator_core::plan::statement::{
    CommitOperation as Op, DeltaOperation as D, LogAction as L, Statement,
};
use delta_operator_core::plan::steps::size_text;

use super::{commit, version_of};

pub(super) fn compact(
    at: &str,
    target_file_bytes: u64,
    z_order: &[String],
    b: &RunBinding<'_>,
    out: &mut Compiled,
) {
    let order = if z_order.is_empty() {
        "bin-packed".to_string()
    } else {
        format!("Z-ordered by ({})", z_order.join(", "))
    };
    out.statements.push(commit(
        Op::Optimize,
        &[L::Add, L::Remove],
        at,
        format!(
            "the files of version {} {order} into files up to {} (dataChange false; files appended meanwhile are kept)",
            version_of(b),
            size_text(target_file_bytes)
        ),
    ));
}

pub(super) fn vacuum(at: &str, retain_hours: u64, keep_versions: &[u64], out: &mut Compiled) {
    out.statements.push(commit(
        Op::VacuumStart,
        &[],
        at,
        format!("retention {retain_hours} hours"),
    ));
    out.statements.push(Statement::Delta(D::DeleteRemovedFiles {
        table: at.to_string(),
        retain_hours,
        keep_versions: keep_versions.to_vec(),
    }));
    out.statements.push(commit(
        Op::VacuumEnd,
        &[],
        at,
        "the vacuum recorded, with its retention".to_string(),
    ));
}

pub(super) fn checkpoint(at: &str, out: &mut Compiled) {
    out.statements.push(Statement::Delta(D::WriteCheckpoint {
        table: at.to_string(),
    }));
}
