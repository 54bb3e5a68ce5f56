//! Columns and nested fields: adding, renaming and dropping them, their type,
//! nullability, comment and default, and filling their NULLs.

use delta_operator_core::model::TableRef;
use delta_operator_core::plan::steps::Action;

use super::alter;
use crate::SqlError;
use crate::ddl::field_def;
use crate::quote::{Names, field_path, ident, literal};
use crate::types::sql_type;

/// The statements of a column step (`compile_for` routes only those here).
pub(super) fn compile(
    names: &Names,
    t: &TableRef,
    action: &Action,
) -> Result<Vec<String>, SqlError> {
    let one = |s: String| Ok(vec![s]);
    match action {
        Action::AddColumn { path, field } => one(alter(
            names,
            t,
            format!("ADD COLUMN {}", field_def(path, field)),
        )),
        Action::RenameColumn { from, to } => one(alter(
            names,
            t,
            format!("RENAME COLUMN {} TO {}", ident(from), ident(to)),
        )),
        Action::DropColumn { name } => one(alter(names, t, format!("DROP COLUMN {}", ident(name)))),
        Action::DropField { path } => {
            one(alter(names, t, format!("DROP COLUMN {}", field_path(path))))
        }
        Action::AlterColumnType { path, to } => one(alter(
            names,
            t,
            format!("ALTER COLUMN {} TYPE {}", field_path(path), sql_type(to)),
        )),
        Action::DropNotNull { path } => one(alter(
            names,
            t,
            format!("ALTER COLUMN {} DROP NOT NULL", field_path(path)),
        )),
        Action::SetNotNull { path } => one(alter(
            names,
            t,
            format!("ALTER COLUMN {} SET NOT NULL", field_path(path)),
        )),
        // ALTER COLUMN … COMMENT works on nested fields too (COMMENT ON COLUMN does not);
        // warehouses reject UNSET COMMENT, so a cleared comment is ''
        Action::SetColumnComment { path, comment } => one(alter(
            names,
            t,
            format!(
                "ALTER COLUMN {} COMMENT {}",
                field_path(path),
                literal(comment)
            ),
        )),
        // the table feature a default needs is its own step before (EnableColumnDefaults)
        Action::SetDefault { column, expression } => one(alter(
            names,
            t,
            format!("ALTER COLUMN {} SET DEFAULT {expression}", ident(column)),
        )),
        Action::DropDefault { column } => one(alter(
            names,
            t,
            format!("ALTER COLUMN {} DROP DEFAULT", ident(column)),
        )),
        // only the NULLs: a rerun after an interruption fills what is left, nothing more
        Action::Backfill { column, expression } => one(format!(
            "UPDATE {} SET {c} = ({expression}) WHERE {c} IS NULL",
            names.table(t),
            c = ident(column)
        )),
        other => unreachable!("compile_for routed {} to the wrong family", other.title()),
    }
}
