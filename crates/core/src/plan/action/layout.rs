//! How the table's files are laid out: liquid clustering.

use super::{Action, misrouted};
use crate::model::ObservedTable;

pub(super) fn title(action: &Action) -> String {
    match action {
        Action::SetClustering { keys } if keys.is_empty() => "CLUSTER BY NONE".into(),
        Action::SetClustering { keys } => format!("CLUSTER BY ({})", keys.join(", ")),
        other => misrouted(other),
    }
}

pub(super) fn holds(action: &Action, live: &ObservedTable) -> bool {
    match action {
        Action::SetClustering { keys } => live.cluster_by.clone().unwrap_or_default() == *keys,
        other => misrouted(other),
    }
}

pub(super) fn inverse(action: &Action, live: &ObservedTable) -> Option<Vec<Action>> {
    match action {
        Action::SetClustering { .. } => Some(vec![Action::SetClustering {
            keys: live.cluster_by.clone().unwrap_or_default(),
        }]),
        other => misrouted(other),
    }
}
