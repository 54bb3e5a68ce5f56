//! How to undo a step, as statements a person can run where the plan runs:
//! the core's typed undo (`core::plan::undo::Undo`) rendered in this dialect,
//! quoted and escaped as any statement is.

use delta_operator_core::model::{ObservedTable, TableRef};
use delta_operator_core::plan::steps::{Action, bound_clone_name};
use delta_operator_core::plan::undo::Undo;

use crate::compile::{alter, compile_for};
use crate::quote::Names;

/// What a plan prints for a step that needs a restore point but has none.
pub const NO_RESTORE_POINT: &str = "no restore point: the table's version could not be read";

/// The undo of `action` as SQL: `live` is the table before the step (None:
/// not known), `version_before` the version the plan read. None: no undo is
/// known (a turned-on table feature, a new column).
pub fn undo(
    names: &Names,
    t: &TableRef,
    action: &Action,
    live: Option<&ObservedTable>,
    version_before: Option<u64>,
) -> Option<String> {
    render(names, t, &action.undo(live, version_before)?, live)
}

/// One typed undo as SQL: inverse steps compiled as any step is, RESTORE to
/// the version the plan read, UNDROP for a dropped table (a path-addressed
/// table has none: its drop is the lake's, which renders its own), DROP
/// PRIMARY KEY, and a DROP of the clone taken.
pub fn render(
    names: &Names,
    t: &TableRef,
    undo: &Undo,
    live: Option<&ObservedTable>,
) -> Option<String> {
    match undo {
        Undo::Steps { steps } => {
            let mut out = Vec::new();
            for s in steps {
                out.extend(compile_for(names, t, s, live, "").ok()?);
            }
            Some(out.join(";\n"))
        }
        Undo::Restore {
            version: Some(v), ..
        } => Some(format!(
            "RESTORE TABLE {} TO VERSION AS OF {v}",
            names.table(t)
        )),
        Undo::Restore { version: None } => Some(NO_RESTORE_POINT.into()),
        Undo::Undrop if *names == Names::Catalog => {
            Some(format!("UNDROP TABLE {}", names.table(t)))
        }
        Undo::Undrop => None,
        Undo::DropPrimaryKey => Some(alter(names, t, "DROP PRIMARY KEY IF EXISTS")),
        Undo::DropClone { name } => {
            let clone = TableRef::new(
                &t.catalog,
                &t.schema,
                &bound_clone_name(name, live.and_then(|l| l.version)),
            );
            Some(format!("DROP TABLE IF EXISTS {}", names.table(&clone)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t() -> TableRef {
        TableRef::new("main", "sales", "orders")
    }

    #[test]
    fn undo_hints() {
        assert_eq!(
            undo(&Names::Catalog, &t(), &Action::DropTable, None, None).as_deref(),
            Some("UNDROP TABLE `main`.`sales`.`orders`")
        );
        assert_eq!(
            undo(
                &Names::Catalog,
                &t(),
                &Action::DropColumn { name: "x".into() },
                None,
                Some(7)
            )
            .as_deref(),
            Some("RESTORE TABLE `main`.`sales`.`orders` TO VERSION AS OF 7")
        );
        assert_eq!(
            undo(
                &Names::Catalog,
                &t(),
                &Action::EnableTypeWidening,
                Some(&ObservedTable::new(t(), vec![])),
                Some(7)
            ),
            None
        );
    }

    #[test]
    fn every_typed_undo_renders() {
        let render = |names: &Names, u: Undo| super::render(names, &t(), &u, None);
        let paths = Names::Paths {
            root: "/data/lake".into(),
        };
        assert_eq!(
            render(&Names::Catalog, Undo::Restore { version: None }).as_deref(),
            Some(NO_RESTORE_POINT)
        );
        // a path-addressed table's drop is the lake's: the lake renders its undrop
        assert_eq!(render(&paths, Undo::Undrop), None);
        assert_eq!(
            render(&Names::Catalog, Undo::DropPrimaryKey).as_deref(),
            Some("ALTER TABLE `main`.`sales`.`orders` DROP PRIMARY KEY IF EXISTS")
        );
        assert_eq!(
            render(
                &Names::Catalog,
                Undo::DropClone {
                    name: "orders__delta_operator_clone_v{version}".into()
                }
            )
            .as_deref(),
            Some("DROP TABLE IF EXISTS `main`.`sales`.`orders__delta_operator_clone_v{version}`")
        );
        // inverse steps compile as any step, quoted, one statement a line
        assert_eq!(
            render(
                &Names::Catalog,
                Undo::Steps {
                    steps: vec![
                        Action::DropCheck { name: "a`b".into() },
                        Action::SetTableComment {
                            comment: "it's".into()
                        },
                    ]
                }
            )
            .as_deref(),
            Some(
                "ALTER TABLE `main`.`sales`.`orders` DROP CONSTRAINT IF EXISTS `a``b`;\nCOMMENT ON TABLE `main`.`sales`.`orders` IS 'it\\'s'"
            )
        );
    }
}
