//! Columns the lake changes in place: add, nullability, comment.

use delta_operator_core::model::StructField;
use delta_operator_core::plan::change::{FieldPath, path_string};
use delta_operator_core::plan::compile::Compiled;
use delta_operator_core::plan::statement::{
    CommitOperation as Op, DeltaOperation as D, LogAction as L, Statement,
};

use super::{commit, metadata, quoted};

pub(super) fn add(at: &str, path: &FieldPath, field: &StructField, out: &mut Compiled) {
    out.statements.push(commit(
        Op::AddColumn,
        &[L::MetaData],
        at,
        format!(
            "add {} {}{}",
            path_string(path),
            field.data_type,
            if field.nullable { "" } else { " NOT NULL" }
        ),
    ));
}

pub(super) fn drop_not_null(at: &str, path: &FieldPath, out: &mut Compiled) {
    out.statements.push(metadata(
        at,
        format!("{} becomes nullable", path_string(path)),
    ));
}

pub(super) fn set_not_null(at: &str, path: &FieldPath, out: &mut Compiled) {
    out.statements.push(Statement::Delta(D::CountMissing {
        table: at.to_string(),
        field: path_string(path),
    }));
    out.statements.push(metadata(
        at,
        format!(
            "{} becomes NOT NULL, committed only against the version counted (no retry)",
            path_string(path)
        ),
    ));
    out.notes.push("refused with nothing changed when a row has no value, or when any commit lands between the count and the commit".into());
}

pub(super) fn comment(at: &str, path: &FieldPath, comment: &str, out: &mut Compiled) {
    out.statements.push(metadata(
        at,
        format!("the comment of {} = {}", path_string(path), quoted(comment)),
    ));
}
