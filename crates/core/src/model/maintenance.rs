//! Day-two upkeep of a table: what its spec asks for (compaction, vacuum,
//! checkpoints, [`Maintenance`]) and what the backend measured of the live
//! table to decide when each is due ([`TableHealth`]). Pure data: when a
//! step is due is decided by the planner (`plan::planner::maintenance`) with
//! "now" as one of its inputs.

use serde::{Deserialize, Serialize};

/// `spec.maintenance`, lowered: the table's own block merged field by field
/// over its schema's and its target's, every default filled in.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Maintenance {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compaction: Option<Compaction>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vacuum: Option<Vacuum>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<Checkpointing>,
}

/// Bin-packing small files into larger ones (Z-ordered where declared).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Compaction {
    /// Due when at least this many files are smaller than a quarter of the target size.
    pub when_small_files: u64,
    /// The size compaction writes files up to.
    pub target_file_bytes: u64,
    /// Z-order columns (declared columns); empty: bin-packing alone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub z_order_by: Vec<String>,
    /// Also due when the last compaction is older than this (milliseconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub every_ms: Option<u64>,
}

/// Removing files no version within the retention needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Vacuum {
    /// Files removed from the table longer ago than this are deleted.
    pub retain_hours: u64,
    /// `retainHours` below Delta's 168-hour safety check was explicitly allowed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_short_retention: bool,
    /// The files of restore points the operator recorded in the last this
    /// many days are kept whatever the retention.
    pub keep_restore_points_days: u64,
    /// Due when the last vacuum is older than this (milliseconds).
    pub every_ms: u64,
}

/// Writing a checkpoint of the log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpointing {
    /// Due when at least this many versions were committed since the last checkpoint.
    pub every_versions: u64,
}

/// The defaults a spec's omitted field takes.
pub mod defaults {
    /// `compaction.whenSmallFiles`.
    pub const WHEN_SMALL_FILES: u64 = 100;
    /// `compaction.targetFileSize`: 128Mi.
    pub const TARGET_FILE_BYTES: u64 = 128 * 1024 * 1024;
    /// `vacuum.retainHours`: Delta's own default and safety threshold.
    pub const RETAIN_HOURS: u64 = 168;
    /// `vacuum.keepRestorePointsDays`.
    pub const KEEP_RESTORE_POINTS_DAYS: u64 = 7;
    /// `vacuum.every`: a day.
    pub const VACUUM_EVERY_MS: u64 = 24 * 3600 * 1000;
    /// `checkpoint.everyVersions`.
    pub const CHECKPOINT_EVERY_VERSIONS: u64 = 100;
}

/// A file counts as small below this fraction of the target size.
pub const SMALL_FILE_DIVISOR: u64 = 4;

/// The size under which a file is small, for a target size.
pub fn small_file_bytes(target_file_bytes: u64) -> u64 {
    target_file_bytes / SMALL_FILE_DIVISOR
}

/// What a backend measured of a live table's upkeep.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableHealth {
    /// Data files in the current version.
    #[serde(default)]
    pub files: u64,
    /// Of those, the files smaller than the declared target size / 4 (or the backend's default).
    #[serde(default)]
    pub small_files: u64,
    /// Versions committed since the last checkpoint (None: not known).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub versions_since_checkpoint: Option<u64>,
    /// When the last compaction committed (epoch milliseconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_compaction_ms: Option<i64>,
    /// When the last vacuum ended (epoch milliseconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_vacuum_ms: Option<i64>,
    /// The retention the last vacuum ran with, in hours.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_vacuum_retention_hours: Option<u64>,
    /// Databricks' predictive optimization maintains the table itself.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub predictive_optimization: bool,
    /// The restore points the operator recorded on this table (from its own
    /// history: commits whose commitInfo carries [`RESTORE_POINT_KEY`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub restore_points: Vec<RecordedRestorePoint>,
}

/// A restore point the operator recorded, read back from the table's history.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct RecordedRestorePoint {
    /// The version a restore goes back to.
    pub version: u64,
    /// When the operator recorded it: the time of its commit that carries
    /// the key (epoch milliseconds). The files the version needs were live
    /// until then, so a vacuum keeping files removed since this keeps them.
    pub recorded_ms: i64,
}

/// The commitInfo key every operator commit that follows a restore point
/// carries, its value the restore point's version.
pub const RESTORE_POINT_KEY: &str = "delta-operator.restorePoint";

/// Milliseconds in a day.
pub const DAY_MS: i64 = 24 * 3600 * 1000;

impl TableHealth {
    /// The restore points recorded within `days` of `now_ms`, oldest first.
    pub fn restore_points_within(&self, days: u64, now_ms: i64) -> Vec<RecordedRestorePoint> {
        let since = now_ms.saturating_sub(
            i64::try_from(days)
                .unwrap_or(i64::MAX)
                .saturating_mul(DAY_MS),
        );
        let mut out: Vec<RecordedRestorePoint> = self
            .restore_points
            .iter()
            .copied()
            .filter(|r| r.recorded_ms >= since)
            .collect();
        out.sort();
        out.dedup();
        out
    }
}
