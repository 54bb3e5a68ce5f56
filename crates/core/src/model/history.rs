//! What a backend read of a table's recent history, for the windows of its
//! restore points (`plan::undo_window`): when recent versions were committed,
//! the VACUUMs that ran, and when it was read (the start of the window of a
//! restore point nothing has been committed after yet). Facts of the read,
//! never hashed into a plan id: an append moves them, not what a plan does.

use serde::{Deserialize, Serialize};

/// How many of a table's newest commits a backend reads (a bounded read,
/// whatever the history's length): restore points older than them have an
/// unknown window.
pub const HISTORY_DEPTH: usize = 200;

/// One version and when it was committed (the commit's timestamp, epoch ms).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommitTime {
    pub version: u64,
    pub at_ms: i64,
    /// A VACUUM's own commit (`VACUUM START` / `VACUUM END`): it removes no
    /// file from the table's versions.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub vacuum: bool,
}

/// A VACUUM seen in the history (Delta logs `VACUUM START` and `VACUUM END`
/// commits when vacuum logging is on): its start and the retention it used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct VacuumSeen {
    /// The version its `VACUUM START` (or, without one, `VACUUM END`) committed.
    pub version: u64,
    /// When it started, epoch ms: files removed before `at_ms - retention` went.
    pub at_ms: i64,
    /// The retention it used (the specified one, else the table's default it
    /// logged), when the commit says; None: not logged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retention_ms: Option<i64>,
}

/// A table's recent history as a backend read it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableHistory {
    /// When the history was read, epoch ms: "now" for the window of a restore
    /// point with nothing committed after it.
    pub read_at_ms: i64,
    /// The newest commits read (at most [`HISTORY_DEPTH`]), oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commits: Vec<CommitTime>,
    /// The VACUUMs among them, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub vacuums: Vec<VacuumSeen>,
    /// The table's retention properties as set (`retention::DELETED_FILE_RETENTION`,
    /// `retention::LOG_RETENTION`; absent: Delta's defaults), read with the history.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub retention_properties: std::collections::BTreeMap<String, String>,
}

impl TableHistory {
    /// Keeps the retention properties among a table's `properties`.
    pub fn with_retention_of(
        mut self,
        properties: impl IntoIterator<Item = (impl AsRef<str>, impl AsRef<str>)>,
    ) -> Self {
        use super::retention::{DELETED_FILE_RETENTION, LOG_RETENTION};
        for (k, v) in properties {
            let k = k.as_ref();
            if k.eq_ignore_ascii_case(DELETED_FILE_RETENTION)
                || k.eq_ignore_ascii_case(LOG_RETENTION)
            {
                self.retention_properties
                    .insert(k.to_string(), v.as_ref().to_string());
            }
        }
        self
    }

    /// When `version` was committed, if it was read.
    pub fn committed(&self, version: u64) -> Option<i64> {
        self.commits
            .iter()
            .find(|c| c.version == version)
            .map(|c| c.at_ms)
    }

    /// The oldest version read, if any.
    pub fn oldest(&self) -> Option<u64> {
        self.commits.iter().map(|c| c.version).min()
    }

    /// The newest version read, if any.
    pub fn newest(&self) -> Option<u64> {
        self.commits.iter().map(|c| c.version).max()
    }

    /// The first commit after `version` that may remove files (a VACUUM's own
    /// commits remove none from the table): where a restore point's files
    /// can start to be tombstoned.
    pub fn next_after(&self, version: u64) -> Option<CommitTime> {
        self.commits
            .iter()
            .filter(|c| c.version > version)
            .filter(|c| !c.vacuum)
            .min_by_key(|c| c.version)
            .copied()
    }
}

/// The two commits a logged VACUUM makes, as a history shows them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VacuumCommit {
    /// `VACUUM START`, with the retention it used when logged.
    Start { retention_ms: Option<i64> },
    /// `VACUUM END`.
    End,
}

impl VacuumCommit {
    /// From a commit's operation and its parameters (`param` reads one as
    /// milliseconds): the retention given, else the table's default it ran with.
    pub fn of_operation(operation: &str, param: impl Fn(&str) -> Option<i64>) -> Option<Self> {
        match operation {
            "VACUUM START" => Some(VacuumCommit::Start {
                retention_ms: param("specifiedRetentionMillis")
                    .or_else(|| param("defaultRetentionMillis")),
            }),
            "VACUUM END" => Some(VacuumCommit::End),
            _ => None,
        }
    }
}

impl TableHistory {
    /// A history from each version read, oldest first: its commit time (None:
    /// not known, left out) and whether it is a VACUUM's commit. A `VACUUM END`
    /// without its start (older than what was read) counts as a VACUUM of
    /// unknown retention.
    pub fn from_commits(
        read_at_ms: i64,
        read: impl IntoIterator<Item = (u64, Option<i64>, Option<VacuumCommit>)>,
    ) -> Self {
        let mut h = TableHistory {
            read_at_ms,
            ..Default::default()
        };
        let mut started = false;
        for (version, at_ms, vacuum) in read {
            let Some(at_ms) = at_ms else { continue };
            h.commits.push(CommitTime {
                version,
                at_ms,
                vacuum: vacuum.is_some(),
            });
            match vacuum {
                Some(VacuumCommit::Start { retention_ms }) => {
                    started = true;
                    h.vacuums.push(VacuumSeen {
                        version,
                        at_ms,
                        retention_ms,
                    });
                }
                Some(VacuumCommit::End) if !started => h.vacuums.push(VacuumSeen {
                    version,
                    at_ms,
                    retention_ms: None,
                }),
                Some(VacuumCommit::End) => started = false,
                None => {}
            }
        }
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vacuum_commits_from_their_operation() {
        let params = |name: &str| match name {
            "specifiedRetentionMillis" => None,
            "defaultRetentionMillis" => Some(7),
            _ => None,
        };
        assert_eq!(
            VacuumCommit::of_operation("VACUUM START", params),
            Some(VacuumCommit::Start {
                retention_ms: Some(7)
            })
        );
        assert_eq!(
            VacuumCommit::of_operation("VACUUM END", params),
            Some(VacuumCommit::End)
        );
        assert_eq!(VacuumCommit::of_operation("WRITE", params), None);
    }

    #[test]
    fn a_history_pairs_vacuum_starts_and_ends() {
        let h = TableHistory::from_commits(
            100,
            vec![
                (3, Some(10), Some(VacuumCommit::End)),
                (4, Some(20), None),
                (5, None, None),
                (
                    6,
                    Some(30),
                    Some(VacuumCommit::Start {
                        retention_ms: Some(0),
                    }),
                ),
                (7, Some(31), Some(VacuumCommit::End)),
            ],
        );
        assert_eq!(h.read_at_ms, 100);
        assert_eq!(
            h.commits.iter().map(|c| c.version).collect::<Vec<_>>(),
            [3, 4, 6, 7]
        );
        assert_eq!(
            h.vacuums,
            [
                VacuumSeen {
                    version: 3,
                    at_ms: 10,
                    retention_ms: None
                },
                VacuumSeen {
                    version: 6,
                    at_ms: 30,
                    retention_ms: Some(0)
                }
            ]
        );
        assert!(h.commits[0].vacuum && !h.commits[1].vacuum && h.commits[3].vacuum);
        assert_eq!(h.next_after(4), None);
        assert_eq!(h.next_after(3).map(|c| c.version), Some(4));
    }
}
