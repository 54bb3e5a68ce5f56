//! The windows of the restore points in `status.lastApplied`: until when
//! each works (`core::plan::undo_window`), from the table's history as the
//! backend reads it. Checked after an apply records them, and again at most
//! hourly (a VACUUM, by anyone, may end one): what `kubectl delta undo` shows.

use chrono::{DateTime, SecondsFormat, TimeZone as _, Utc};

use delta_operator_api::spec::crd::{LastApplied, UndoWindowStatus};
use delta_operator_core::model::TableRef;
use delta_operator_core::model::history::TableHistory;
use delta_operator_core::plan::undo_window::{self, UndoWindow, WindowUnknown};

/// How long a checked window is trusted before it is read again.
pub const RECHECK_MS: i64 = 3_600_000;

/// A restore point as status records it: `catalog.schema.table@version`.
pub fn parse_point(point: &str) -> Option<(TableRef, u64)> {
    let (t, v) = point.rsplit_once('@')?;
    let mut parts = t.splitn(3, '.');
    let (c, s, n) = (parts.next()?, parts.next()?, parts.next()?);
    if [c, s, n].iter().any(|p| p.is_empty()) {
        return None;
    }
    Some((TableRef::new(c, s, n), v.parse().ok()?))
}

fn rfc3339(ms: i64) -> Option<String> {
    Utc.timestamp_millis_opt(ms)
        .single()
        .map(|t| t.to_rfc3339_opts(SecondsFormat::Secs, true))
}

/// The tables whose windows to read again at `now_ms`: those with a restore
/// point that has no window yet, or whose windows were checked over an hour
/// ago (or at a time that cannot be read). Each once, in order.
pub fn due(last: &LastApplied, now_ms: i64) -> Vec<TableRef> {
    let mut out: Vec<TableRef> = Vec::new();
    for p in &last.restore_points {
        let Some((t, _)) = parse_point(p) else {
            continue;
        };
        let fresh = last.undo_windows.iter().any(|w| {
            &w.restore_point == p
                && DateTime::parse_from_rfc3339(&w.checked_at)
                    .is_ok_and(|at| now_ms - at.timestamp_millis() < RECHECK_MS)
        });
        if !fresh && !out.contains(&t) {
            out.push(t);
        }
    }
    out
}

/// The window of each restore point, from the histories read (`None`: the
/// table is gone or its backend reads none). A restore point of a table not
/// read keeps the window it had.
pub fn windows(
    last: &LastApplied,
    read: &[(TableRef, Option<TableHistory>)],
    now_ms: i64,
) -> Vec<UndoWindowStatus> {
    let checked_at = rfc3339(now_ms).unwrap_or_default();
    last.restore_points
        .iter()
        .filter_map(|p| {
            let (t, v) = parse_point(p)?;
            let Some((_, history)) = read.iter().find(|(r, _)| *r == t) else {
                return last
                    .undo_windows
                    .iter()
                    .find(|w| &w.restore_point == p)
                    .cloned();
            };
            let w = match history {
                Some(h) => undo_window::of_read(h, v),
                None => UndoWindow::Unknown {
                    why: WindowUnknown::NoHistory,
                },
            };
            Some(UndoWindowStatus {
                restore_point: p.clone(),
                window: w.describe(Some(now_ms)),
                works_until: match &w {
                    UndoWindow::Until { ms, .. } => rfc3339(*ms),
                    _ => None,
                },
                ended_at: match &w {
                    UndoWindow::Ended { at_ms, .. } => rfc3339(*at_ms),
                    _ => None,
                },
                checked_at: checked_at.clone(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use delta_operator_core::model::history::{CommitTime, VacuumSeen};

    const H: i64 = 3_600_000;
    /// 2026-12-04 14:00 UTC
    const T0: i64 = 1_796_392_800_000;

    fn last(points: &[&str], windows: Vec<UndoWindowStatus>) -> LastApplied {
        LastApplied {
            plan_id: "p".into(),
            time: "t".into(),
            steps_applied: 1,
            restore_points: points.iter().map(|s| s.to_string()).collect(),
            undo_windows: windows,
        }
    }

    #[test]
    fn restore_points_parse_as_status_writes_them() {
        assert_eq!(
            parse_point("main.sales.orders@7"),
            Some((TableRef::new("main", "sales", "orders"), 7))
        );
        for bad in [
            "main.sales.orders",
            "main..orders@1",
            "orders@1",
            "a.b.c@x",
            "",
        ] {
            assert_eq!(parse_point(bad), None, "{bad}");
        }
    }

    #[test]
    fn windows_are_read_when_missing_or_an_hour_old() {
        let t = TableRef::new("main", "sales", "orders");
        let l = last(&["main.sales.orders@3", "garbage"], vec![]);
        assert_eq!(due(&l, T0), vec![t.clone()]);
        let history = TableHistory {
            read_at_ms: T0,
            commits: vec![
                CommitTime {
                    version: 3,
                    at_ms: T0 - 2 * H,
                    vacuum: false,
                },
                CommitTime {
                    version: 4,
                    at_ms: T0 - H,
                    vacuum: false,
                },
            ],
            vacuums: vec![],
            retention_properties: Default::default(),
        };
        let w = windows(&l, &[(t.clone(), Some(history.clone()))], T0);
        assert_eq!(w.len(), 1);
        assert_eq!(w[0].restore_point, "main.sales.orders@3");
        assert_eq!(w[0].window, "works until 2026-12-11 13:00 UTC");
        assert_eq!(w[0].works_until.as_deref(), Some("2026-12-11T13:00:00Z"));
        assert_eq!(w[0].ended_at, None);
        assert_eq!(w[0].checked_at, "2026-12-04T14:00:00Z");
        // checked: not due again within the hour, due after it
        let checked = last(&["main.sales.orders@3"], w);
        assert!(due(&checked, T0 + H - 1).is_empty());
        assert_eq!(due(&checked, T0 + H), vec![t.clone()]);
        // a vacuum with retention 0 after the next commit ends it
        let mut vacuumed = history;
        vacuumed.commits.push(CommitTime {
            version: 5,
            at_ms: T0 + H,
            vacuum: true,
        });
        vacuumed.vacuums.push(VacuumSeen {
            version: 5,
            at_ms: T0 + H,
            retention_ms: Some(0),
        });
        let w = windows(&checked, &[(t.clone(), Some(vacuumed))], T0 + 2 * H);
        assert_eq!(
            w[0].window,
            "no longer works: vacuumed at 2026-12-04 15:00 UTC (retention 0 hours)"
        );
        assert_eq!(w[0].ended_at.as_deref(), Some("2026-12-04T15:00:00Z"));
        assert_eq!(w[0].works_until, None);
        // a table not read keeps its window; one read as gone has none known
        let kept = windows(&checked, &[], T0 + 2 * H);
        assert_eq!(kept, checked.undo_windows);
        let gone = windows(&checked, &[(t, None)], T0);
        assert!(gone[0].window.starts_with("window unknown"), "{gone:?}");
    }
}
