//! Maintenance as SQL (Databricks and Spark Connect): `OPTIMIZE` (with
//! `ZORDER BY` where the spec asks), `VACUUM … RETAIN n HOURS`, and what a
//! checkpoint is here. Identifiers quoted as every statement's are.
//!
//! A vacuum keeps the restore points the operator recorded: SQL's VACUUM has
//! no "keep these versions" option, so RETAIN is raised to cover them. A
//! restore point recorded within the last `keepRestorePointsDays` had its files
//! removed (at the earliest) when it was recorded, so a RETAIN of that many
//! days (plus an hour of clock slack) keeps them whenever the vacuum runs:
//! `RETAIN max(retainHours, 24 × days + 1)`. It keeps a little more than
//! "hours since the oldest restore point" would, but it is the same text
//! whenever it is planned (the plan id hashes it; a clock in it would void an
//! approval every hour).

use delta_operator_core::model::TableRef;
use delta_operator_core::model::maintenance::defaults::KEEP_RESTORE_POINTS_DAYS;
use delta_operator_core::plan::steps::Action;

use crate::SqlError;
use crate::quote::{Names, ident};

/// Delta's safety check refuses a RETAIN below this many hours unless it is turned off.
pub const SAFE_RETAIN_HOURS: u64 = 168;

/// The RETAIN a vacuum runs with: its own, raised to keep the restore points
/// of the last `keep_days` days when it keeps any.
pub fn retain_hours(retain_hours: u64, keep_versions: &[u64], keep_days: u64) -> u64 {
    if keep_versions.is_empty() {
        retain_hours
    } else {
        retain_hours.max(keep_days.saturating_mul(24).saturating_add(1))
    }
}

/// The statements of a maintenance action; `keep_days` is the spec's
/// `keepRestorePointsDays` (None: the default).
pub fn compile(
    names: &Names,
    t: &TableRef,
    action: &Action,
    keep_days: Option<u64>,
) -> Result<Vec<String>, SqlError> {
    let table = names.table(t);
    match action {
        Action::Compact { z_order, .. } if z_order.is_empty() => {
            Ok(vec![format!("OPTIMIZE {table}")])
        }
        Action::Compact { z_order, .. } => Ok(vec![format!(
            "OPTIMIZE {table} ZORDER BY ({})",
            z_order
                .iter()
                .map(|c| ident(c))
                .collect::<Vec<_>>()
                .join(", ")
        )]),
        Action::Vacuum {
            retain_hours: own,
            keep_versions,
            ..
        } => {
            let n = retain_hours(
                *own,
                keep_versions,
                keep_days.unwrap_or(KEEP_RESTORE_POINTS_DAYS),
            );
            let vacuum = format!("VACUUM {table} RETAIN {n} HOURS");
            match names {
                // a warehouse runs each statement alone (no session): no SET reaches the
                // VACUUM, so its 168-hour check cannot be turned off (Databricks logs vacuums)
                Names::Catalog if n < SAFE_RETAIN_HOURS => Err(SqlError::Unsupported(format!(
                    "VACUUM RETAIN {n} HOURS: a Databricks SQL warehouse runs each statement in its own session, so Delta's 168-hour retention check cannot be turned off for it; set retainHours to 168 or more on this target"
                ))),
                Names::Catalog => Ok(vec![vacuum]),
                // Spark Connect: one session, so its SETs hold for the VACUUM
                Names::Paths { .. } => {
                    let mut out = vec![
                        // so the history shows the vacuum (VACUUM START/END) and its schedule runs from it
                        "SET spark.databricks.delta.vacuum.logging.enabled = true".to_string(),
                    ];
                    if n < SAFE_RETAIN_HOURS {
                        // allowed by the spec's allowShortRetention only (validation refuses it otherwise)
                        out.push(
                            "SET spark.databricks.delta.retentionDurationCheck.enabled = false"
                                .into(),
                        );
                    }
                    out.push(vacuum);
                    Ok(out)
                }
            }
        }
        // Databricks writes checkpoints itself; Spark Connect's are the lake's (the backend routes them)
        Action::Checkpoint => match names {
            Names::Catalog => Ok(vec![]),
            Names::Paths { .. } => Err(SqlError::Unsupported(
                "Spark SQL has no statement that writes a Delta checkpoint: the lake writes it"
                    .into(),
            )),
        },
        other => Err(SqlError::Unsupported(format!(
            "{} is not a maintenance step",
            other.title()
        ))),
    }
}

/// What a reviewer needs beside the statements.
pub fn notes(names: &Names, action: &Action, keep_days: Option<u64>) -> Vec<String> {
    match action {
        Action::Vacuum {
            retain_hours: own,
            keep_versions,
            ..
        } if !keep_versions.is_empty() => {
            let days = keep_days.unwrap_or(KEEP_RESTORE_POINTS_DAYS);
            let n = retain_hours(*own, keep_versions, days);
            vec![format!(
                "RETAIN {n} hours: SQL's VACUUM cannot keep chosen versions, so it keeps every file removed in the last {days} day{} (and an hour), which holds the files of the restore points recorded then; `restore … --version {}` works after it",
                if days == 1 { "" } else { "s" },
                keep_versions
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            )]
        }
        Action::Checkpoint if *names == Names::Catalog => vec![
            "nothing to run: Databricks writes a checkpoint itself every delta.checkpointInterval commits (and predictive optimization maintains the log), and SQL has no statement that writes one"
                .into(),
        ],
        _ => vec![],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t() -> TableRef {
        TableRef::new("main", "sales", "orders")
    }

    fn vacuum(retain_hours: u64, keep_versions: Vec<u64>) -> Action {
        Action::Vacuum {
            retain_hours,
            keep_versions,
            keep_since_ms: None,
        }
    }

    #[test]
    fn optimize_with_and_without_zorder_quoted() {
        let compact = |z: &[&str]| Action::Compact {
            target_file_bytes: 128 << 20,
            z_order: z.iter().map(|s| s.to_string()).collect(),
        };
        assert_eq!(
            compile(&Names::Catalog, &t(), &compact(&[]), None).unwrap(),
            ["OPTIMIZE `main`.`sales`.`orders`"]
        );
        assert_eq!(
            compile(&Names::Catalog, &t(), &compact(&["region", "a`b"]), None).unwrap(),
            ["OPTIMIZE `main`.`sales`.`orders` ZORDER BY (`region`, `a``b`)"]
        );
        let paths = Names::Paths {
            root: "/data/lake".into(),
        };
        let s = compile(&paths, &t(), &compact(&[]), None).unwrap();
        assert!(
            s[0].starts_with("OPTIMIZE delta.`/data/lake/main/sales/orders"),
            "{s:?}"
        );
    }

    #[test]
    fn vacuum_retain_covers_the_restore_points() {
        let paths = Names::Paths { root: "/l".into() };
        // no restore point to keep: its own retention
        let s = compile(&Names::Catalog, &t(), &vacuum(200, vec![]), None).unwrap();
        assert_eq!(s, ["VACUUM `main`.`sales`.`orders` RETAIN 200 HOURS"]);
        // restore points of the last 7 days (default): 169 hours
        let s = compile(&Names::Catalog, &t(), &vacuum(168, vec![4, 9]), None).unwrap();
        assert_eq!(s, ["VACUUM `main`.`sales`.`orders` RETAIN 169 HOURS"]);
        // the spec's days; a longer retention of its own wins
        let s = compile(&Names::Catalog, &t(), &vacuum(500, vec![4]), Some(2)).unwrap();
        assert_eq!(s, ["VACUUM `main`.`sales`.`orders` RETAIN 500 HOURS"]);
        // below 168 hours: Spark Connect turns the check off in its session; a warehouse cannot
        let s = compile(&paths, &t(), &vacuum(24, vec![4]), Some(2)).unwrap();
        assert_eq!(
            s[0],
            "SET spark.databricks.delta.vacuum.logging.enabled = true"
        );
        assert_eq!(
            s[1],
            "SET spark.databricks.delta.retentionDurationCheck.enabled = false"
        );
        assert!(s[2].ends_with(" RETAIN 49 HOURS"), "{s:?}");
        let s = compile(&paths, &t(), &vacuum(168, vec![]), None).unwrap();
        assert_eq!(s.len(), 2, "no safety-check override at 168 hours: {s:?}");
        assert!(matches!(
            compile(&Names::Catalog, &t(), &vacuum(24, vec![4]), Some(2)),
            Err(SqlError::Unsupported(m)) if m.contains("168")
        ));
        // the note says why and which restore points
        let n = notes(&Names::Catalog, &vacuum(24, vec![4, 9]), Some(2));
        assert!(
            n[0].starts_with("RETAIN 49 hours") && n[0].contains("--version 4, 9"),
            "{n:?}"
        );
        assert!(notes(&Names::Catalog, &vacuum(24, vec![]), Some(2)).is_empty());
        // hostile numbers do not overflow
        assert_eq!(retain_hours(1, &[1], u64::MAX), u64::MAX);
    }

    #[test]
    fn a_checkpoint_is_databricks_own_and_the_lakes_on_spark() {
        assert!(
            compile(&Names::Catalog, &t(), &Action::Checkpoint, None)
                .unwrap()
                .is_empty()
        );
        assert!(
            notes(&Names::Catalog, &Action::Checkpoint, None)[0]
                .contains("Databricks writes a checkpoint itself")
        );
        let paths = Names::Paths { root: "/l".into() };
        assert!(matches!(
            compile(&paths, &t(), &Action::Checkpoint, None),
            Err(SqlError::Unsupported(_))
        ));
    }
}
