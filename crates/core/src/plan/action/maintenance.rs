//! Upkeep of the table's files and log: compaction, vacuum, checkpoints. None
//! changes what the table holds, so none has an inverse: a compaction is
//! undone by the table's history like any write, a vacuum cannot be undone
//! (its files are gone), and a checkpoint needs no undoing.

use super::{Action, misrouted};
use crate::model::ObservedTable;

/// `128Mi`-style text for a byte count (exact binary units, else bytes).
pub fn size_text(bytes: u64) -> String {
    const UNITS: [(&str, u64); 4] = [
        ("Ti", 1 << 40),
        ("Gi", 1 << 30),
        ("Mi", 1 << 20),
        ("Ki", 1 << 10),
    ];
    for (unit, size) in UNITS {
        if bytes >= size && bytes.is_multiple_of(size) {
            return format!("{}{unit}", bytes / size);
        }
    }
    format!("{bytes}")
}

pub(super) fn title(action: &Action) -> String {
    match action {
        Action::Compact {
            target_file_bytes,
            z_order,
        } if z_order.is_empty() => {
            format!("OPTIMIZE (bin-pack to {})", size_text(*target_file_bytes))
        }
        Action::Compact {
            target_file_bytes,
            z_order,
        } => format!(
            "OPTIMIZE ZORDER BY ({}) (to {})",
            super::few(z_order.iter().map(String::as_str)),
            size_text(*target_file_bytes)
        ),
        Action::Vacuum {
            retain_hours,
            keep_versions,
            ..
        } if keep_versions.is_empty() => format!("VACUUM RETAIN {retain_hours} HOURS"),
        Action::Vacuum {
            retain_hours,
            keep_versions,
            ..
        } => format!(
            "VACUUM RETAIN {retain_hours} HOURS (keeping the files of restore point{} {})",
            if keep_versions.len() == 1 { "" } else { "s" },
            keep_versions
                .iter()
                .map(|v| format!("v{v}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Action::Checkpoint => "CHECKPOINT".into(),
        other => misrouted(other),
    }
}

/// A compaction and a vacuum are never "already done": run again they find
/// little or nothing to do. A checkpoint holds when none is missing.
pub(super) fn holds(action: &Action, live: &ObservedTable) -> bool {
    match action {
        Action::Compact { .. } | Action::Vacuum { .. } => false,
        Action::Checkpoint => {
            live.health
                .as_ref()
                .and_then(|h| h.versions_since_checkpoint)
                == Some(0)
        }
        other => misrouted(other),
    }
}

/// What the step leaves on the table's health for later steps.
pub(super) fn apply_to(action: &Action, live: &mut ObservedTable) {
    let Some(h) = live.health.as_mut() else {
        return;
    };
    match action {
        Action::Checkpoint => h.versions_since_checkpoint = Some(0),
        Action::Compact { .. } => h.small_files = 0,
        Action::Vacuum { .. } => {}
        other => misrouted(other),
    }
}

pub(super) fn inverse(action: &Action) -> Option<Vec<Action>> {
    match action {
        Action::Compact { .. } | Action::Vacuum { .. } | Action::Checkpoint => None,
        other => misrouted(other),
    }
}
