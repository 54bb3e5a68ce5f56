//! The table itself: creating and claiming it, its comment, properties and
//! clustering, a clone beside it, dropping it, and the staging copies of runs
//! that stopped.

use delta_operator_core::model::{ObservedTable, TableRef};
use delta_operator_core::plan::steps::{Action, bound_clone_name, claim_properties};

use super::alter;
use crate::ddl::{clone_table, create_table};
use crate::quote::{Names, keys, list, literal, props};
use crate::rewrite::staging_table;
use crate::{SqlError, nonempty};

/// The statements of a table-level step (`compile_for` routes only those here).
pub(super) fn compile(
    names: &Names,
    t: &TableRef,
    action: &Action,
    live: Option<&ObservedTable>,
) -> Result<Vec<String>, SqlError> {
    let one = |s: String| Ok(vec![s]);
    match action {
        Action::CreateTable { table } => one(create_table(names, table)),
        Action::Claim {
            marker,
            constraints,
            scope,
        } => one(alter(
            names,
            t,
            format!(
                "SET TBLPROPERTIES ({})",
                props(&claim_properties(marker, constraints.as_deref(), *scope))
            ),
        )),
        Action::SetTableComment { comment } if comment.is_empty() => {
            one(format!("COMMENT ON TABLE {} IS NULL", names.table(t)))
        }
        Action::SetTableComment { comment } => one(format!(
            "COMMENT ON TABLE {} IS {}",
            names.table(t),
            literal(comment)
        )),
        Action::SetProperties { properties } => {
            nonempty(properties.is_empty(), "SET TBLPROPERTIES").and_then(|_| {
                one(alter(
                    names,
                    t,
                    format!("SET TBLPROPERTIES ({})", props(properties)),
                ))
            })
        }
        Action::UnsetProperties { keys: k } => nonempty(k.is_empty(), "UNSET TBLPROPERTIES")
            .and_then(|_| {
                one(alter(
                    names,
                    t,
                    format!("UNSET TBLPROPERTIES IF EXISTS ({})", keys(k)),
                ))
            }),
        Action::SetClustering { keys: k } if k.is_empty() => {
            one(alter(names, t, "CLUSTER BY NONE"))
        }
        Action::SetClustering { keys: k } => {
            one(alter(names, t, format!("CLUSTER BY ({})", list(k))))
        }
        Action::CloneTable { name } => Ok(clone_table(
            names,
            t,
            &bound_clone_name(name, live.and_then(|l| l.version)),
        )),
        Action::DropTable => one(format!("DROP TABLE IF EXISTS {}", names.table(t))),
        // staging copies of runs that stopped: each its own DROP
        Action::RemoveLeftovers { leftovers } => Ok(leftovers
            .iter()
            .map(|l| {
                format!(
                    "DROP TABLE IF EXISTS {}",
                    names.table(&staging_table(t, &l.run))
                )
            })
            .collect()),
        other => unreachable!("compile_for routed {} to the wrong family", other.title()),
    }
}
