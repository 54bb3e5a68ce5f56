//! Statements on a streaming table, a materialized view or a view: only what
//! each accepts, as the Databricks SQL reference documents it (checked
//! 2026-12-05): `ALTER STREAMING TABLE` and `ALTER MATERIALIZED VIEW` take
//! SET/UNSET TAGS, SET OWNER TO and ALTER COLUMN (COMMENT, SET/DROP MASK,
//! SET/UNSET TAGS), and no SET TBLPROPERTIES (sql-ref-syntax-ddl-alter-
//! streaming-table, …-alter-materialized-view); `ALTER VIEW` takes SET/UNSET
//! TAGS, OWNER TO and column tags (…-alter-view, …-alter-view-manage-column);
//! a comment on any of them is `COMMENT ON TABLE` / `COMMENT ON COLUMN`
//! (sql-ref-syntax-ddl-comment: a table, streaming table, view or
//! materialized view); a grant is `GRANT … ON TABLE` for each. A spec governs
//! them at the annotation scopes only (`ScopeTooWideForKind`), so nothing
//! else is planned; anything else reaching here is refused by name.

use delta_operator_core::model::{ObservedTable, TableKind, TableRef};
use delta_operator_core::plan::steps::Action;

use super::{access, table};
use crate::SqlError;
use crate::quote::{Names, ident, literal};

pub(super) fn compile(
    names: &Names,
    t: &TableRef,
    action: &Action,
    live: Option<&ObservedTable>,
    kind: TableKind,
) -> Result<Vec<String>, SqlError> {
    use Action as A;
    match action {
        A::Grant { .. }
        | A::Revoke { .. }
        | A::SetOwner { .. }
        | A::SetTableTags { .. }
        | A::UnsetTableTags { .. }
        | A::SetColumnTags { .. }
        | A::UnsetColumnTags { .. }
        | A::SetMask { .. } => access::compile(names, t, action, kind),
        A::SetTableComment { .. } => table::compile(names, t, action, live),
        A::SetColumnComment { path, comment } if path.len() == 1 => Ok(vec![format!(
            "COMMENT ON COLUMN {}.{} IS {}",
            names.table(t),
            ident(&path[0]),
            if comment.is_empty() {
                "NULL".to_string()
            } else {
                literal(comment)
            }
        )]),
        other => Err(SqlError::Unsupported(format!(
            "{} is {}, which takes no {}: only its pipeline or definition changes that",
            t,
            kind.words(),
            other.title()
        ))),
    }
}
