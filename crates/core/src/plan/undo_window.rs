//! How long a restore point works: a restore to version `v` needs the data
//! files `v` holds and `v`'s log entry. Delta removes a data file only after a
//! commit tombstoned it (the earliest: the first commit after `v`) and a VACUUM
//! ran at least the deleted-file retention later; it removes `v`'s log entry
//! at a checkpoint's log cleanup, the log retention after `v` was committed.
//! So a restore point works until the earlier of (its next commit, or now when
//! there is none, plus the deleted-file retention) and (its own commit plus the
//! log retention), and a VACUUM that ran with a cutoff past its next commit has
//! ended it. The retention of the last VACUUM seen shortens the first bound
//! when it is shorter than the table's (whoever vacuums with it may again).
//!
//! Pure: the history and "now" (when the history was read) are inputs. Shown
//! beside the undo line, never hashed into the plan id.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::steps::Step;
use super::undo::{self, Undo};
use crate::model::ObservedTable;
use crate::model::history::{TableHistory, VacuumSeen};
use crate::model::retention::Retention;

/// What bounds a window that is still open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Bound {
    /// The next commit plus `delta.deletedFileRetentionDuration`.
    DeletedFileRetention,
    /// The next commit plus the retention of the last VACUUM seen, shorter
    /// than the table's.
    VacuumRetention,
    /// The version's own commit plus `delta.logRetentionDuration`.
    LogRetention,
}

/// What ended a window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "by")]
pub enum EndedBy {
    /// A VACUUM with this retention: its cutoff passed the restore point's
    /// next commit, so files the restore needs may be gone.
    Vacuum { retention_ms: i64 },
}

/// Why a window is not known.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "reason")]
pub enum WindowUnknown {
    /// The backend read no history of the table.
    NoHistory,
    /// The version is older than the history read (or not in it).
    NotInHistory { version: u64 },
    /// A retention property cannot be read.
    BadRetention { message: String },
}

/// Until when a restore point works.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "window")]
pub enum UndoWindow {
    /// It works until `ms` (epoch ms); after it, a VACUUM may remove what it needs.
    Until { ms: i64, bound: Bound },
    /// It no longer works: a VACUUM at `at_ms` removed files it needs.
    Ended {
        at_ms: i64,
        #[serde(flatten)]
        by: EndedBy,
    },
    /// Not known, and why.
    Unknown {
        #[serde(flatten)]
        why: WindowUnknown,
    },
}

/// What a restore point's window is computed from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PointTimes {
    /// The restore point's version.
    pub version: u64,
    /// When that version was committed, if known.
    pub committed_ms: Option<i64>,
    /// When the first commit after it that may remove files was made; None:
    /// none yet (the window then starts at the next commit, at the earliest now).
    pub next_commit_ms: Option<i64>,
}

/// The window of a restore point (see the module's words). `vacuums` are the
/// VACUUMs seen in the history, oldest first (those at or before the restore
/// point only lend their retention); `now_ms` is when the history was read
/// (taken to the hour below).
pub fn window(
    point: PointTimes,
    retention: Retention,
    vacuums: &[VacuumSeen],
    now_ms: i64,
) -> UndoWindow {
    let retention_of = |v: &VacuumSeen| v.retention_ms.unwrap_or(retention.deleted_file_ms);
    if let Some(next) = point.next_commit_ms {
        // a VACUUM whose cutoff passed the next commit removed what that commit tombstoned
        if let Some(v) = vacuums
            .iter()
            .filter(|v| v.version > point.version)
            .find(|v| v.at_ms.saturating_sub(retention_of(v)) > next)
        {
            return UndoWindow::Ended {
                at_ms: v.at_ms,
                by: EndedBy::Vacuum {
                    retention_ms: retention_of(v),
                },
            };
        }
    }
    // nothing after it yet: from now, to the hour below (a plan shown again
    // within the hour shows the same window; never longer than it is)
    let start = point
        .next_commit_ms
        .unwrap_or(now_ms - now_ms.rem_euclid(3_600_000));
    let (files_ms, files_bound) = match vacuums.last().map(retention_of) {
        Some(r) if r < retention.deleted_file_ms => (r, Bound::VacuumRetention),
        _ => (retention.deleted_file_ms, Bound::DeletedFileRetention),
    };
    let by_files = start.saturating_add(files_ms);
    match point
        .committed_ms
        .map(|c| c.saturating_add(retention.log_ms))
    {
        Some(by_log) if by_log < by_files => UndoWindow::Until {
            ms: by_log,
            bound: Bound::LogRetention,
        },
        _ => UndoWindow::Until {
            ms: by_files,
            bound: files_bound,
        },
    }
}

/// The window of a restore point at `version` of a table read with its
/// history and properties.
pub fn of_version(observed: &ObservedTable, version: u64) -> UndoWindow {
    let Some(history) = &observed.history else {
        return UndoWindow::Unknown {
            why: WindowUnknown::NoHistory,
        };
    };
    let retention = match Retention::of_properties(&observed.properties) {
        Ok(r) => r,
        Err(e) => {
            return UndoWindow::Unknown {
                why: WindowUnknown::BadRetention {
                    message: e.to_string(),
                },
            };
        }
    };
    of_history(history, retention, version)
}

/// The window of a restore point at `version` from a history read with the
/// table's retention properties (`Backend::history`).
pub fn of_read(history: &TableHistory, version: u64) -> UndoWindow {
    match Retention::of_properties(&history.retention_properties) {
        Ok(r) => of_history(history, r, version),
        Err(e) => UndoWindow::Unknown {
            why: WindowUnknown::BadRetention {
                message: e.to_string(),
            },
        },
    }
}

/// The window of a restore point at `version` from a history read.
pub fn of_history(history: &TableHistory, retention: Retention, version: u64) -> UndoWindow {
    let committed_ms = history.committed(version);
    let next = history.next_after(version);
    // a version older than what was read (a version newer than it was committed after
    // the read: nothing follows it yet)
    if committed_ms.is_none() && history.oldest().is_none_or(|o| version < o) {
        return UndoWindow::Unknown {
            why: WindowUnknown::NotInHistory { version },
        };
    }
    window(
        PointTimes {
            version,
            committed_ms,
            next_commit_ms: next.map(|c| c.at_ms),
        },
        retention,
        &history.vacuums,
        history.read_at_ms,
    )
}

/// The window of a step's undo, when it is a restore to a version.
pub fn of_step(
    observed: Option<&ObservedTable>,
    earlier: &[Step],
    step: &Step,
) -> Option<UndoWindow> {
    match undo::of_step(observed, earlier, step)? {
        Undo::Restore { version: Some(v) } => Some(of_version(observed?, v)),
        _ => None,
    }
}

/// Whether a table's plan shows a restore whose window waits for the
/// table's history (`Backend::history`): read, and planned again, only then.
pub fn needs_history(t: &super::TablePlan) -> bool {
    let waiting = |s: &Step| {
        matches!(
            s.undo_window,
            Some(UndoWindow::Unknown {
                why: WindowUnknown::NoHistory
            })
        )
    };
    t.steps().iter().any(waiting)
        || match &t.outcome {
            super::Outcome::Blocked { would_run, .. } => would_run.iter().any(waiting),
            _ => false,
        }
}

impl UndoWindow {
    /// In words, for the undo line, status and `kubectl delta undo`:
    /// `works until 2026-12-11 14:00 UTC`, `no longer works: vacuumed at …`.
    /// With `now_ms`, a window already past says a VACUUM may remove its files now.
    pub fn describe(&self, now_ms: Option<i64>) -> String {
        match self {
            UndoWindow::Until { ms, bound } => {
                if now_ms.is_some_and(|n| n >= *ms) {
                    let what = match bound {
                        Bound::LogRetention => "the next checkpoint may remove its log entry",
                        _ => "the next VACUUM may remove its files",
                    };
                    format!(
                        "may no longer work: its retention ended at {}; {what}",
                        utc_minutes(*ms)
                    )
                } else {
                    format!("works until {}", utc_minutes(*ms))
                }
            }
            UndoWindow::Ended {
                at_ms,
                by: EndedBy::Vacuum { retention_ms },
            } => format!(
                "no longer works: vacuumed at {} (retention {})",
                utc_minutes(*at_ms),
                hours(*retention_ms)
            ),
            UndoWindow::Unknown { why } => match why {
                WindowUnknown::NoHistory => {
                    "window unknown: the table's history was not read".into()
                }
                WindowUnknown::NotInHistory { version } => {
                    format!("window unknown: version {version} is older than the history read")
                }
                WindowUnknown::BadRetention { message } => format!("window unknown: {message}"),
            },
        }
    }

    /// What a plan shows beside its undo line (a fixed text, no "now": the
    /// same plan renders the same); nothing when the history was not read.
    pub fn in_plan(&self) -> Option<String> {
        match self {
            UndoWindow::Unknown {
                why: WindowUnknown::NoHistory,
            } => None,
            w => Some(w.describe(None)),
        }
    }

    /// Whether a restore to the point is known to fail (a VACUUM ended it).
    pub fn is_ended(&self) -> bool {
        matches!(self, UndoWindow::Ended { .. })
    }
}

fn hours(ms: i64) -> String {
    let h = ms / 3_600_000;
    if ms % 3_600_000 == 0 {
        format!("{h} hours")
    } else {
        format!("{:.1} hours", ms as f64 / 3_600_000.0)
    }
}

/// `2026-12-11 14:00 UTC`: epoch ms to the minute, rounded down (a window
/// is never shown longer than it is).
pub fn utc_minutes(ms: i64) -> String {
    let minutes = ms.div_euclid(60_000);
    let days = minutes.div_euclid(1440);
    let in_day = minutes.rem_euclid(1440);
    let (y, m, d) = civil_from_days(days);
    let mut out = String::with_capacity(20);
    let _ = write!(
        out,
        "{y:04}-{m:02}-{d:02} {:02}:{:02} UTC",
        in_day / 60,
        in_day % 60
    );
    out
}

/// A UTC timestamp as SQL answers show it (`2026-12-04T14:00:00.000Z`,
/// `2026-12-04 14:00:00`, fractions of a second optional, `Z` optional) to
/// epoch ms. None: not that shape.
pub fn parse_utc_ms(text: &str) -> Option<i64> {
    let t = text.trim();
    let t = t.strip_suffix('Z').unwrap_or(t);
    let (date, time) = t.split_once(['T', ' '])?;
    let mut d = date.splitn(3, '-');
    let y: i64 = d.next()?.parse().ok()?;
    let m: u32 = d.next()?.parse().ok()?;
    let day: u32 = d.next()?.parse().ok()?;
    let (hms, frac) = time.split_once('.').unwrap_or((time, ""));
    let mut c = hms.splitn(3, ':');
    let h: i64 = c.next()?.parse().ok()?;
    let min: i64 = c.next()?.parse().ok()?;
    let sec: i64 = c.next().unwrap_or("0").parse().ok()?;
    if !(1..=12).contains(&m) || !(1..=31).contains(&day) || h > 23 || min > 59 || sec > 60 {
        return None;
    }
    if !frac.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let ms: i64 = format!("{frac:0<3}")[..3].parse().ok()?;
    let days = days_from_civil(y, m, day);
    Some(((days * 24 + h) * 60 + min) * 60_000 + sec * 1000 + ms)
}

/// (year, month, day) to days since 1970-01-01 (Howard Hinnant's `days_from_civil`).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = i64::from(if m > 2 { m - 3 } else { m + 9 });
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian
/// (Howard Hinnant's `civil_from_days`).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::history::CommitTime;

    const H: i64 = 3_600_000;
    const DAY: i64 = 24 * H;
    /// 2026-12-04 14:00 UTC
    const T0: i64 = 1_796_392_800_000;

    fn point(version: u64, committed: Option<i64>, next: Option<i64>) -> PointTimes {
        PointTimes {
            version,
            committed_ms: committed,
            next_commit_ms: next,
        }
    }

    fn vacuum(version: u64, at_ms: i64, retention_ms: Option<i64>) -> VacuumSeen {
        VacuumSeen {
            version,
            at_ms,
            retention_ms,
        }
    }

    #[test]
    fn utc_formatting() {
        assert_eq!(utc_minutes(0), "1970-01-01 00:00 UTC");
        assert_eq!(utc_minutes(T0), "2026-12-04 14:00 UTC");
        assert_eq!(utc_minutes(T0 + 7 * DAY), "2026-12-11 14:00 UTC");
        // rounded down to the minute
        assert_eq!(utc_minutes(T0 + 59_999), "2026-12-04 14:00 UTC");
        // leap day, year ends, before the epoch
        assert_eq!(utc_minutes(951_782_400_000), "2000-02-29 00:00 UTC");
        assert_eq!(utc_minutes(1_798_761_599_000), "2026-12-31 23:59 UTC");
        assert_eq!(utc_minutes(-60_000), "1969-12-31 23:59 UTC");
    }

    #[test]
    fn utc_parsing() {
        assert_eq!(parse_utc_ms("2026-12-04T14:00:00.000Z"), Some(T0));
        assert_eq!(parse_utc_ms("2026-12-04 14:00:00"), Some(T0));
        assert_eq!(parse_utc_ms("2026-12-04T14:00:00.5"), Some(T0 + 500));
        assert_eq!(parse_utc_ms("2026-12-04T14:00:00.123456Z"), Some(T0 + 123));
        assert_eq!(parse_utc_ms("2000-02-29T00:00:00Z"), Some(951_782_400_000));
        assert_eq!(parse_utc_ms("1969-12-31T23:59:00Z"), Some(-60_000));
        for bad in [
            "",
            "2026-12-04",
            "2026-13-04T00:00:00",
            "2026-12-04T25:00:00",
            "x-y-zTa:b:c",
            "2026-12-04T14:00:00.x",
        ] {
            assert_eq!(parse_utc_ms(bad), None, "{bad}");
        }
        // formatting and parsing agree
        assert_eq!(
            utc_minutes(parse_utc_ms("2031-07-15T08:09:00Z").unwrap()),
            "2031-07-15 08:09 UTC"
        );
    }

    #[test]
    fn a_point_with_nothing_after_it_works_a_retention_after_now() {
        let w = window(point(3, Some(T0 - H), None), Retention::default(), &[], T0);
        assert_eq!(
            w,
            UndoWindow::Until {
                ms: T0 + 7 * DAY,
                bound: Bound::DeletedFileRetention
            }
        );
        assert_eq!(w.describe(Some(T0)), "works until 2026-12-11 14:00 UTC");
        assert_eq!(w.describe(None), "works until 2026-12-11 14:00 UTC");
    }

    #[test]
    fn now_is_taken_to_the_hour_below() {
        assert_eq!(
            window(point(3, None, None), Retention::default(), &[], T0 + H - 1),
            UndoWindow::Until {
                ms: T0 + 7 * DAY,
                bound: Bound::DeletedFileRetention
            }
        );
    }

    #[test]
    fn the_window_starts_at_the_next_commit() {
        let w = window(
            point(3, Some(T0 - 2 * DAY), Some(T0 - DAY)),
            Retention::default(),
            &[],
            T0,
        );
        assert_eq!(
            w,
            UndoWindow::Until {
                ms: T0 + 6 * DAY,
                bound: Bound::DeletedFileRetention
            }
        );
    }

    #[test]
    fn a_short_log_retention_bounds_it() {
        let r = Retention {
            deleted_file_ms: 7 * DAY,
            log_ms: 2 * DAY,
        };
        let w = window(point(3, Some(T0 - DAY), None), r, &[], T0);
        assert_eq!(
            w,
            UndoWindow::Until {
                ms: T0 + DAY,
                bound: Bound::LogRetention
            }
        );
        // past it: the words say what may remove it
        assert!(w.describe(Some(T0 + 2 * DAY)).contains("next checkpoint"));
        // without the version's own commit time, the files' bound alone
        assert_eq!(
            window(point(3, None, None), r, &[], T0),
            UndoWindow::Until {
                ms: T0 + 7 * DAY,
                bound: Bound::DeletedFileRetention
            }
        );
    }

    #[test]
    fn a_vacuum_past_the_next_commit_ends_it() {
        let next = T0 - DAY;
        // retention 0, after the next commit: the tombstoned files are gone
        let v = [vacuum(5, T0 - H, Some(0))];
        let w = window(
            point(3, Some(T0 - 2 * DAY), Some(next)),
            Retention::default(),
            &v,
            T0,
        );
        assert_eq!(
            w,
            UndoWindow::Ended {
                at_ms: T0 - H,
                by: EndedBy::Vacuum { retention_ms: 0 }
            }
        );
        assert_eq!(
            w.describe(Some(T0)),
            "no longer works: vacuumed at 2026-12-04 13:00 UTC (retention 0 hours)"
        );
        assert!(w.is_ended());
        // a vacuum honouring the retention leaves it: its cutoff is before the next commit
        let v = [vacuum(5, T0 - H, None)];
        assert_eq!(
            window(
                point(3, Some(T0 - 2 * DAY), Some(next)),
                Retention::default(),
                &v,
                T0
            ),
            UndoWindow::Until {
                ms: next + 7 * DAY,
                bound: Bound::DeletedFileRetention
            }
        );
        // the cutoff exactly at the next commit removes nothing tombstoned then
        let v = [vacuum(5, next + 2 * H, Some(2 * H))];
        assert!(!window(point(3, None, Some(next)), Retention::default(), &v, T0).is_ended());
        let v = [vacuum(5, next + 2 * H + 1, Some(2 * H))];
        assert!(window(point(3, None, Some(next)), Retention::default(), &v, T0).is_ended());
    }

    #[test]
    fn a_vacuum_before_the_point_only_lends_its_retention() {
        // vacuumed with 0 hours before the point: files of the point are live, but whoever
        // vacuums like that may again right after the next commit
        let v = [vacuum(2, T0 - DAY, Some(0))];
        let w = window(point(3, Some(T0 - H), None), Retention::default(), &v, T0);
        assert_eq!(
            w,
            UndoWindow::Until {
                ms: T0,
                bound: Bound::VacuumRetention
            }
        );
        // a vacuum with a longer retention than the table's does not lengthen it
        let v = [vacuum(2, T0 - DAY, Some(30 * DAY))];
        assert_eq!(
            window(point(3, None, None), Retention::default(), &v, T0),
            UndoWindow::Until {
                ms: T0 + 7 * DAY,
                bound: Bound::DeletedFileRetention
            }
        );
        // a vacuum with no logged retention takes the table's
        let v = [vacuum(2, T0 - DAY, None)];
        assert!(matches!(
            window(point(3, None, None), Retention::default(), &v, T0),
            UndoWindow::Until {
                bound: Bound::DeletedFileRetention,
                ..
            }
        ));
    }

    #[test]
    fn a_past_window_says_a_vacuum_may_remove_it_now() {
        let w = window(
            point(3, None, Some(T0 - 8 * DAY)),
            Retention::default(),
            &[],
            T0,
        );
        assert_eq!(
            w.describe(Some(T0)),
            "may no longer work: its retention ended at 2026-12-03 14:00 UTC; the next VACUUM may remove its files"
        );
    }

    fn history(commits: &[(u64, i64, bool)], vacuums: Vec<VacuumSeen>) -> TableHistory {
        TableHistory {
            read_at_ms: T0,
            commits: commits
                .iter()
                .map(|&(version, at_ms, vacuum)| CommitTime {
                    version,
                    at_ms,
                    vacuum,
                })
                .collect(),
            vacuums,
            retention_properties: Default::default(),
        }
    }

    #[test]
    fn from_a_history_read() {
        let h = history(
            &[
                (3, T0 - 3 * DAY, false),
                (4, T0 - 2 * DAY, false),
                (5, T0 - H, true),
                (6, T0 - H + 1, true),
            ],
            vec![vacuum(5, T0 - H, Some(0))],
        );
        let r = Retention::default();
        // 3's next commit is 4, which the vacuum's cutoff passed
        assert!(of_history(&h, r, 3).is_ended());
        // 4 is followed by vacuum commits only: nothing tombstoned, its window starts now,
        // with the last vacuum's retention (0)
        assert_eq!(
            of_history(&h, r, 4),
            UndoWindow::Until {
                ms: T0,
                bound: Bound::VacuumRetention
            }
        );
        // older than what was read, or never read
        assert_eq!(
            of_history(&h, r, 1),
            UndoWindow::Unknown {
                why: WindowUnknown::NotInHistory { version: 1 }
            }
        );
        assert_eq!(
            of_history(&TableHistory::default(), r, 1),
            UndoWindow::Unknown {
                why: WindowUnknown::NotInHistory { version: 1 }
            }
        );
        // a version past the newest read (a commit after the read): nothing after it yet
        assert!(matches!(
            of_history(&h, r, 7),
            UndoWindow::Until { ms, .. } if ms == T0
        ));
    }

    #[test]
    fn from_a_history_with_its_retention() {
        let h = history(&[(3, T0 - H, false)], vec![]).with_retention_of([
            ("delta.deletedFileRetentionDuration", "interval 1 day"),
            ("team", "x"),
        ]);
        assert_eq!(h.retention_properties.len(), 1);
        assert_eq!(
            of_read(&h, 3),
            UndoWindow::Until {
                ms: T0 + DAY,
                bound: Bound::DeletedFileRetention
            }
        );
        let bad = history(&[(3, T0 - H, false)], vec![])
            .with_retention_of([("delta.logRetentionDuration", "forever")]);
        assert!(matches!(
            of_read(&bad, 3),
            UndoWindow::Unknown {
                why: WindowUnknown::BadRetention { .. }
            }
        ));
    }

    #[test]
    fn from_an_observed_table() {
        use crate::model::{ObservedTable, TableRef};
        let mut o = ObservedTable::new(TableRef::new("c", "s", "t"), vec![]);
        assert_eq!(
            of_version(&o, 3),
            UndoWindow::Unknown {
                why: WindowUnknown::NoHistory
            }
        );
        o.history = Some(history(&[(3, T0 - H, false)], vec![]));
        o.properties.insert(
            "delta.deletedFileRetentionDuration".into(),
            "interval 2 days".into(),
        );
        assert_eq!(
            of_version(&o, 3),
            UndoWindow::Until {
                ms: T0 + 2 * DAY,
                bound: Bound::DeletedFileRetention
            }
        );
        o.properties.insert(
            "delta.deletedFileRetentionDuration".into(),
            "interval 2 moons".into(),
        );
        let w = of_version(&o, 3);
        assert!(matches!(
            w,
            UndoWindow::Unknown {
                why: WindowUnknown::BadRetention { .. }
            }
        ));
        assert!(
            w.describe(None)
                .contains("delta.deletedFileRetentionDuration"),
            "{}",
            w.describe(None)
        );
    }

    #[test]
    fn serializes_tagged() {
        let w = UndoWindow::Ended {
            at_ms: 5,
            by: EndedBy::Vacuum { retention_ms: 0 },
        };
        let j = serde_json::to_value(&w).unwrap();
        assert_eq!(
            j,
            serde_json::json!({"window": "ended", "at_ms": 5, "by": "vacuum", "retention_ms": 0})
        );
        assert_eq!(serde_json::from_value::<UndoWindow>(j).unwrap(), w);
    }
}
