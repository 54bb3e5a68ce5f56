//! Privileges: grants and revokes, each undone by the other.

use super::{Action, misrouted};
use crate::model::ObservedTable;
use crate::model::privilege;

pub(super) fn title(action: &Action) -> String {
    match action {
        Action::Grant {
            principal,
            privileges,
        } => format!("GRANT {} TO {principal}", privilege::list(privileges)),
        Action::Revoke {
            principal,
            privileges,
        } => format!("REVOKE {} FROM {principal}", privilege::list(privileges)),
        other => misrouted(other),
    }
}

pub(super) fn holds(action: &Action, live: &ObservedTable) -> bool {
    let has = |principal: &str, p| {
        live.grants
            .iter()
            .any(|g| g.principal.eq_ignore_ascii_case(principal) && g.privileges.contains(p))
    };
    match action {
        Action::Grant {
            principal,
            privileges,
        } => privileges.iter().all(|p| has(principal, p)),
        Action::Revoke {
            principal,
            privileges,
        } => privileges.iter().all(|p| !has(principal, p)),
        other => misrouted(other),
    }
}

pub(super) fn inverse(action: &Action) -> Option<Vec<Action>> {
    Some(match action {
        Action::Grant {
            principal,
            privileges,
        } => vec![Action::Revoke {
            principal: principal.clone(),
            privileges: privileges.clone(),
        }],
        Action::Revoke {
            principal,
            privileges,
        } => vec![Action::Grant {
            principal: principal.clone(),
            privileges: privileges.clone(),
        }],
        other => misrouted(other),
    })
}
