//! CHECK constraints, the primary key and foreign keys.

use super::{Action, few, misrouted, steps};
use crate::model::ObservedTable;
use crate::plan::undo::Undo;

pub(super) fn title(action: &Action) -> String {
    match action {
        Action::AddCheck { check } => format!("ADD CONSTRAINT {} CHECK", check.name),
        Action::DropCheck { name } => format!("DROP CONSTRAINT {name}"),
        Action::AddChecks { checks } => format!(
            "ADD CONSTRAINTS ({}) CHECK",
            few(checks.iter().map(|c| c.name.as_str()))
        ),
        Action::DropChecks { names } => {
            format!(
                "DROP CONSTRAINTS ({})",
                few(names.iter().map(String::as_str))
            )
        }
        Action::SetPrimaryKey {
            key,
            replaces: Some(old),
        } => format!(
            "DROP PRIMARY KEY ({}), ADD PRIMARY KEY ({})",
            old.columns.join(", "),
            key.columns.join(", ")
        ),
        Action::SetPrimaryKey { .. } => "ADD PRIMARY KEY".into(),
        Action::AddForeignKey { key } => format!("ADD FOREIGN KEY → {}", key.references),
        Action::DropForeignKey { key } => format!("DROP FOREIGN KEY → {}", key.references),
        other => misrouted(other),
    }
}

fn has_check(live: &ObservedTable, name: &str) -> bool {
    live.checks
        .iter()
        .any(|c| c.name.eq_ignore_ascii_case(name))
}

pub(super) fn holds(action: &Action, live: &ObservedTable) -> bool {
    match action {
        Action::AddCheck { check } => has_check(live, &check.name),
        Action::DropCheck { name } => !has_check(live, name),
        Action::AddChecks { checks } => checks.iter().all(|c| has_check(live, &c.name)),
        Action::DropChecks { names } => names.iter().all(|n| !has_check(live, n)),
        Action::SetPrimaryKey { key, .. } => live
            .primary_key
            .as_ref()
            .is_some_and(|k| k.columns == key.columns),
        Action::AddForeignKey { key } => live
            .foreign_keys
            .iter()
            .any(|k| k.references == key.references && k.columns == key.columns),
        Action::DropForeignKey { key } => !live
            .foreign_keys
            .iter()
            .any(|k| k.references == key.references && k.columns == key.columns),
        other => misrouted(other),
    }
}

pub(super) fn apply_to(action: &Action, live: &mut ObservedTable) {
    // a later key step drops the key this one set (a table has one)
    if let Action::SetPrimaryKey { key, .. } = action {
        live.primary_key = Some(key.clone());
    }
}

/// The undo that needs no look at the table (a new table's CHECKs have no
/// live table before them): added CHECKs dropped, a primary key added where
/// there was none dropped. The rest is their inverse.
pub(super) fn undo(action: &Action) -> Option<Undo> {
    Some(match action {
        Action::AddCheck { check } => steps(vec![Action::DropCheck {
            name: check.name.clone(),
        }]),
        Action::AddChecks { checks } => steps(vec![Action::DropChecks {
            names: checks.iter().map(|c| c.name.clone()).collect(),
        }]),
        Action::SetPrimaryKey { replaces: None, .. } => Undo::DropPrimaryKey,
        _ => return None,
    })
}

pub(super) fn inverse(action: &Action, live: &ObservedTable) -> Option<Vec<Action>> {
    Some(match action {
        Action::AddCheck { check } => vec![Action::DropCheck {
            name: check.name.clone(),
        }],
        Action::AddChecks { checks } => vec![Action::DropChecks {
            names: checks.iter().map(|c| c.name.clone()).collect(),
        }],
        Action::DropCheck { name } => vec![Action::AddCheck {
            check: live
                .checks
                .iter()
                .find(|c| c.name.eq_ignore_ascii_case(name))?
                .clone(),
        }],
        Action::DropChecks { names } => vec![Action::AddChecks {
            checks: live
                .checks
                .iter()
                .filter(|c| names.iter().any(|n| n.eq_ignore_ascii_case(&c.name)))
                .cloned()
                .collect(),
        }],
        // a key added where there was none has no action of its own to drop
        // it: the backend writes that undo itself (`DROP PRIMARY KEY`)
        Action::SetPrimaryKey {
            key,
            replaces: Some(old),
        } => vec![Action::SetPrimaryKey {
            key: old.clone(),
            replaces: Some(key.clone()),
        }],
        Action::AddForeignKey { key } => vec![Action::DropForeignKey { key: key.clone() }],
        Action::DropForeignKey { key } => vec![Action::AddForeignKey { key: key.clone() }],
        _ => return None,
    })
}
