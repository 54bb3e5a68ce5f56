//! Constraints: CHECKs, the primary key and foreign keys.

use delta_operator_core::model::{ObservedTable, TableRef};
use delta_operator_core::plan::steps::Action;

use super::alter;
use crate::quote::{Names, ident, list};
use crate::{SqlError, nonempty};

/// The statements of a constraint step (`compile_for` routes only those here).
pub(super) fn compile(
    names: &Names,
    t: &TableRef,
    action: &Action,
    live: Option<&ObservedTable>,
) -> Result<Vec<String>, SqlError> {
    let one = |s: String| Ok(vec![s]);
    match action {
        Action::AddCheck { check } => one(alter(
            names,
            t,
            format!(
                "ADD CONSTRAINT {} CHECK ({})",
                ident(&check.name),
                check.expression
            ),
        )),
        Action::DropCheck { name } => one(alter(
            names,
            t,
            format!("DROP CONSTRAINT IF EXISTS {}", ident(name)),
        )),
        // not planned here (one commit per ALTER: `checks_in_one_commit` is false), compiled as what it would run
        Action::AddChecks { checks } => Ok(checks
            .iter()
            .map(|check| {
                alter(
                    names,
                    t,
                    format!(
                        "ADD CONSTRAINT {} CHECK ({})",
                        ident(&check.name),
                        check.expression
                    ),
                )
            })
            .collect()),
        Action::DropChecks { names: dropped } => Ok(dropped
            .iter()
            .map(|name| {
                alter(
                    names,
                    t,
                    format!("DROP CONSTRAINT IF EXISTS {}", ident(name)),
                )
            })
            .collect()),
        Action::SetPrimaryKey { key, .. } => {
            nonempty(key.columns.is_empty(), "PRIMARY KEY")?;
            let mut out = Vec::new();
            // a table has one primary key: a different one goes first (RESTRICT: fails while FKs reference it)
            if live.is_none_or(|l| l.primary_key.is_some()) {
                out.push(alter(names, t, "DROP PRIMARY KEY IF EXISTS"));
            }
            let name = key
                .name
                .clone()
                .unwrap_or_else(|| format!("{}_pk", t.table));
            out.push(alter(
                names,
                t,
                format!(
                    "ADD CONSTRAINT {} PRIMARY KEY ({})",
                    ident(&name),
                    list(&key.columns)
                ),
            ));
            Ok(out)
        }
        Action::AddForeignKey { key } => {
            nonempty(key.columns.is_empty(), "FOREIGN KEY")?;
            let name = key
                .name
                .clone()
                .unwrap_or_else(|| format!("{}_{}_fk", t.table, key.columns.join("_")));
            one(alter(
                names,
                t,
                format!(
                    "ADD CONSTRAINT {} FOREIGN KEY ({}) REFERENCES {} ({})",
                    ident(&name),
                    list(&key.columns),
                    names.table(&key.references),
                    list(&key.referenced_columns)
                ),
            ))
        }
        Action::DropForeignKey { key } => one(alter(
            names,
            t,
            format!("DROP FOREIGN KEY IF EXISTS ({})", list(&key.columns)),
        )),
        other => unreachable!("compile_for routed {} to the wrong family", other.title()),
    }
}
