//! Who may see and do what: grants, the owner, tags (table and column) and
//! column masks.

use delta_operator_core::model::{TableKind, TableRef};
use delta_operator_core::plan::steps::Action;

use super::alter_as;
use crate::quote::{Names, dotted, ident, keys, list, privilege, props};
use crate::{SqlError, nonempty};

/// The statements of an access step (`compile_for` routes only those here).
/// `kind` is what the live relation is: a streaming table, materialized view or view
/// takes its own ALTER (`alter_as`).
pub(super) fn compile(
    names: &Names,
    t: &TableRef,
    action: &Action,
    kind: TableKind,
) -> Result<Vec<String>, SqlError> {
    let one = |s: String| Ok(vec![s]);
    let alter = |names: &Names, t: &TableRef, rest: String| alter_as(names, t, kind, rest);
    match action {
        Action::Grant {
            principal,
            privileges,
        } => {
            nonempty(privileges.is_empty(), "GRANT")?;
            let p = privileges
                .iter()
                .map(|p| privilege(p))
                .collect::<Result<Vec<_>, _>>()?;
            one(format!(
                "GRANT {} ON TABLE {} TO {}",
                p.join(", "),
                names.table(t),
                ident(principal)
            ))
        }
        Action::Revoke {
            principal,
            privileges,
        } => {
            nonempty(privileges.is_empty(), "REVOKE")?;
            let p = privileges
                .iter()
                .map(|p| privilege(p))
                .collect::<Result<Vec<_>, _>>()?;
            one(format!(
                "REVOKE {} ON TABLE {} FROM {}",
                p.join(", "),
                names.table(t),
                ident(principal)
            ))
        }
        // ALTER VIEW … OWNER TO (sql-ref-syntax-ddl-alter-view); the others SET OWNER TO
        Action::SetOwner { owner } if kind == TableKind::View => {
            one(alter(names, t, format!("OWNER TO {}", ident(owner))))
        }
        Action::SetOwner { owner } => {
            one(alter(names, t, format!("SET OWNER TO {}", ident(owner))))
        }
        Action::SetTableTags { tags } => nonempty(tags.is_empty(), "SET TAGS")
            .and_then(|_| one(alter(names, t, format!("SET TAGS ({})", props(tags))))),
        Action::UnsetTableTags { keys: k } => nonempty(k.is_empty(), "UNSET TAGS")
            .and_then(|_| one(alter(names, t, format!("UNSET TAGS ({})", keys(k))))),
        Action::SetColumnTags { column, tags } => {
            nonempty(tags.is_empty(), "SET TAGS").and_then(|_| {
                one(alter(
                    names,
                    t,
                    format!("ALTER COLUMN {} SET TAGS ({})", ident(column), props(tags)),
                ))
            })
        }
        Action::UnsetColumnTags { column, keys: k } => nonempty(k.is_empty(), "UNSET TAGS")
            .and_then(|_| {
                one(alter(
                    names,
                    t,
                    format!("ALTER COLUMN {} UNSET TAGS ({})", ident(column), keys(k)),
                ))
            }),
        // ALTER VIEW takes column tags only (sql-ref-syntax-ddl-alter-view-manage-column)
        Action::SetMask { .. } if kind == TableKind::View => Err(SqlError::Unsupported(
            "a view takes no column mask (ALTER VIEW accepts column tags only): mask the table it reads".into(),
        )),
        Action::SetMask { column, mask } => {
            let using = if mask.using_columns.is_empty() {
                String::new()
            } else {
                format!(" USING COLUMNS ({})", list(&mask.using_columns))
            };
            one(alter(
                names,
                t,
                format!(
                    "ALTER COLUMN {} SET MASK {}{using}",
                    ident(column),
                    dotted(&mask.function)
                ),
            ))
        }
        other => unreachable!("compile_for routed {} to the wrong family", other.title()),
    }
}
