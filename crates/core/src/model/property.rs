//! The table property keys the operator reads or writes, spelled once: Delta's
//! own (`delta.*`) and the operator's records (`delta-operator.io/*`). Every
//! crate names a key through these constants, so a misspelt key is a compile
//! error rather than a property nobody reads.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

/// How a table maps logical column names to the names in its data files.
pub const COLUMN_MAPPING_MODE: &str = "delta.columnMapping.mode";
/// The highest column id a column-mapped table has assigned (Delta keeps it).
pub const COLUMN_MAPPING_MAX_ID: &str = "delta.columnMapping.maxColumnId";
/// Change data feed: every commit also records its row changes.
pub const ENABLE_CHANGE_DATA_FEED: &str = "delta.enableChangeDataFeed";
/// Type widening: a column's type may widen in place, without a rewrite.
pub const ENABLE_TYPE_WIDENING: &str = "delta.enableTypeWidening";
/// A table that only takes appends.
pub const APPEND_ONLY: &str = "delta.appendOnly";
/// The protocol versions a reader and a writer need.
pub const MIN_READER_VERSION: &str = "delta.minReaderVersion";
pub const MIN_WRITER_VERSION: &str = "delta.minWriterVersion";
/// How long removed data files are kept before VACUUM may delete them.
pub const DELETED_FILE_RETENTION: &str = "delta.deletedFileRetentionDuration";
/// How long the transaction log keeps its entries (and so time travel).
pub const LOG_RETENTION: &str = "delta.logRetentionDuration";
/// Prefix of the keys that list a table's features (`delta.feature.<name>`).
pub const FEATURE_PREFIX: &str = "delta.feature.";
/// The timestamp_ntz table feature, `supported` once enabled.
pub const FEATURE_TIMESTAMP_NTZ: &str = "delta.feature.timestampNtz";
/// The column defaults table feature (`allowColumnDefaults`), `supported`
/// once enabled: Delta refuses a column DEFAULT without it.
pub const FEATURE_ALLOW_COLUMN_DEFAULTS: &str = "delta.feature.allowColumnDefaults";
/// The value of a `delta.feature.*` key for a feature the table has.
pub const FEATURE_SUPPORTED: &str = "supported";
/// Prefix of the keys holding a table's CHECK constraints (`delta.constraints.<name>`).
pub const CONSTRAINTS_PREFIX: &str = "delta.constraints.";
/// Prefix of the row-tracking keys Delta assigns itself.
pub const ROW_TRACKING_PREFIX: &str = "delta.rowTracking.";

/// The table property that records which resource owns a table.
pub const OWNER_PROPERTY: &str = "delta-operator.io/owner";

/// The table property that records the constraints the operator made (or
/// claimed because the spec declares them): a JSON array of `check:<name>`
/// and `fk:<columns>-><table>(<columns>)` entries, lower case, sorted. A live
/// CHECK or foreign key the spec does not declare is dropped only when this
/// record names it; anything else another tool made is left alone.
pub const CONSTRAINTS_PROPERTY: &str = "delta-operator.io/constraints";

/// Properties a rewrite's replace could not carry in its own statement (Delta
/// refuses `delta.enableChangeDataFeed` in a replace of a column-mapped
/// table), as a JSON object the replace writes: put back by the step after
/// it, which removes this record; if the run stops in between, the next plan
/// reads the record and puts them back.
pub const PUT_BACK_PROPERTY: &str = "delta-operator.io/put-back";

/// The scope a narrow-scope spec claimed a table at (`tags`, `annotations`,
/// `metadata`); absent on a table the operator manages whole. A table
/// governed at a narrow scope is never dropped by the operator, and a spec
/// that widens the scope says so as a step of its own.
pub const SCOPE_PROPERTY: &str = "delta-operator.io/scope";

/// The operator's own records on a table: the keys under `delta-operator.io/`.
pub const OPERATOR_PREFIX: &str = "delta-operator.io/";

/// A table's column mapping mode (`delta.columnMapping.mode`), read in one
/// place so every part of the planner agrees on what a mode means.
///
/// `Id` and `Name` both give columns physical names in the data files, so a
/// rename or a drop is a metadata change in either. Delta does not let a table
/// switch between them; only `none` → `name` is an upgrade of a live table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ColumnMapping {
    #[default]
    None,
    Id,
    Name,
}

impl ColumnMapping {
    /// The mode a property value names, spelled as Delta writes it; anything
    /// else (or no value) is `None`, which is what Delta reads a missing key as.
    pub fn parse(value: Option<&str>) -> Self {
        match value {
            Some("name") => ColumnMapping::Name,
            Some("id") => ColumnMapping::Id,
            _ => ColumnMapping::None,
        }
    }

    /// The mode of a table with these properties.
    pub fn of(properties: &BTreeMap<String, String>) -> Self {
        Self::parse(properties.get(COLUMN_MAPPING_MODE).map(String::as_str))
    }

    /// True when columns have physical names, so renames and drops are
    /// metadata changes (`id` or `name`).
    pub fn is_enabled(self) -> bool {
        self != ColumnMapping::None
    }

    /// The property value.
    pub fn as_str(self) -> &'static str {
        match self {
            ColumnMapping::None => "none",
            ColumnMapping::Id => "id",
            ColumnMapping::Name => "name",
        }
    }
}

impl fmt::Display for ColumnMapping {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// True when a property holds `true` (Delta's boolean properties).
pub fn is_true(properties: &BTreeMap<String, String>, key: &str) -> bool {
    properties.get(key).is_some_and(|v| v == "true")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn column_mapping_reads_every_mode_and_defaults_to_none() {
        let of = |v: Option<&str>| {
            let mut p = BTreeMap::new();
            if let Some(v) = v {
                p.insert(COLUMN_MAPPING_MODE.to_string(), v.to_string());
            }
            ColumnMapping::of(&p)
        };
        assert_eq!(of(None), ColumnMapping::None);
        assert_eq!(of(Some("none")), ColumnMapping::None);
        assert_eq!(of(Some("id")), ColumnMapping::Id);
        assert_eq!(of(Some("name")), ColumnMapping::Name);
        assert!(ColumnMapping::Id.is_enabled() && ColumnMapping::Name.is_enabled());
        assert!(!ColumnMapping::None.is_enabled());
    }
}
