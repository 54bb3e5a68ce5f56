//! How to undo a step, as statements a person can run.

use delta_operator_core::model::{ObservedTable, TableRef};
use delta_operator_core::plan::steps::Action;

use crate::compile::{alter, compile_for};
use crate::quote::Names;

/// How to undo a step, as SQL a person can run where the plan runs: the
/// statements of its inverse steps (`undo::inverse`, compiled as any step
/// is: quoted, escaped), DROP PRIMARY KEY for a key that was not there,
/// UNDROP for a dropped table, RESTORE to the version the plan read for
/// steps that change data, drop columns or widen types. `live` is the table
/// before the step; None: no undo is known (the planner's hint stays).
pub fn undo(
    names: &Names,
    t: &TableRef,
    action: &Action,
    live: Option<&ObservedTable>,
    version_before: Option<u64>,
) -> Option<String> {
    if let Some(steps) = live.and_then(|l| delta_operator_core::plan::undo::inverse(action, l)) {
        let mut out = Vec::new();
        for s in &steps {
            out.extend(compile_for(names, t, s, live, "").ok()?);
        }
        return Some(out.join(";\n"));
    }
    match action {
        Action::SetPrimaryKey { replaces: None, .. } => {
            Some(alter(names, t, "DROP PRIMARY KEY IF EXISTS"))
        }
        // a path-addressed table has no UNDROP: the lake's trash keeps it (`undo undrop`)
        Action::DropTable if *names == Names::Catalog => {
            Some(format!("UNDROP TABLE {}", names.table(t)))
        }
        Action::DropColumn { .. }
        | Action::DropField { .. }
        | Action::Rewrite { .. }
        | Action::AlterColumnType { .. } => {
            version_before.map(|v| format!("RESTORE TABLE {} TO VERSION AS OF {v}", names.table(t)))
        }
        _ => None,
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
}
