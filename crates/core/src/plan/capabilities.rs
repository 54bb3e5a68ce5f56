//! What a backend can do, and how. The planner picks strategies from this;
//! something a backend cannot do at all becomes a named rule failure.

use serde::{Deserialize, Serialize};

/// How a backend carries out one kind of change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    /// A metadata change on the live table.
    InPlace,
    /// The table is rebuilt from its own data.
    Rewrite,
    /// Not possible on this backend.
    Unsupported,
}

/// Which backend a plan is for: part of the plan id, and of its JSON as
/// `lake`, `databricks` or `sparkConnect`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    Lake,
    Databricks,
    #[serde(rename = "sparkConnect")]
    SparkConnect,
}

impl BackendKind {
    pub const ALL: [BackendKind; 3] = [
        BackendKind::Lake,
        BackendKind::Databricks,
        BackendKind::SparkConnect,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            BackendKind::Lake => "lake",
            BackendKind::Databricks => "databricks",
            BackendKind::SparkConnect => "sparkConnect",
        }
    }
}

impl std::fmt::Display for BackendKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for BackendKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        BackendKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| format!("unknown backend '{s}': lake, databricks or sparkConnect"))
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Capabilities {
    /// Part of the plan id.
    pub backend: BackendKind,
    pub rename_column: Strategy,
    pub drop_column: Strategy,
    /// A type change inside Delta's widening matrix.
    pub widen_type: Strategy,
    /// Any other type change.
    pub convert_type: Strategy,
    pub set_not_null: Strategy,
    pub change_partitioning: Strategy,
    /// In-place renames and drops need column mapping enabled first.
    pub rename_drop_need_column_mapping: bool,
    /// In-place widening needs `delta.enableTypeWidening` first.
    pub widening_needs_feature: bool,
    pub check_constraints: bool,
    pub tags: bool,
    pub grants: bool,
    pub owner: bool,
    pub masks: bool,
    pub row_filters: bool,
    pub primary_and_foreign_keys: bool,
    pub clustering: bool,
    pub identity_columns: bool,
    pub generated_columns: bool,
    pub default_values: bool,
    pub schema_comment: bool,
    /// A schema keeps properties (Databricks: DBPROPERTIES).
    pub schema_properties: bool,
    /// A schema property can be removed. Databricks' ALTER SCHEMA documents
    /// only SET DBPROPERTIES, so a declared removal of a live one is refused.
    pub unset_schema_properties: bool,
    /// A schema's storage root given at its creation (Unity Catalog's
    /// `MANAGED LOCATION`); a schema on the lake is a folder under the root.
    pub schema_managed_location: bool,
    /// A dropped table can be brought back (UNDROP, or the lake's trash folder).
    pub undrop: bool,
    /// The replace of a rewrite keeps NOT NULL, CHECK constraints, column
    /// comments, column tags and table properties by itself (the lake: one
    /// delta-rs commit carries the new schema and keeps the configuration).
    /// When false (Databricks' REPLACE TABLE … AS SELECT), the planner adds
    /// put-back steps after the replace.
    pub replace_keeps_metadata: bool,
    /// `${…}` in a statement is replaced by Spark's variable substitution, even
    /// inside a backticked name (found by `verify`): such names cannot be written.
    pub substitutes_variables_in_names: bool,
    /// Rewrites and ADD COLUMN work on a column-mapped table (delta-rs 1.1
    /// refuses both: it cannot write physical column names).
    pub column_mapped_schema_changes: bool,
    /// A staged rewrite replaces the table from its checked staging copy, in a
    /// commit conditioned on the version the copy was made from, converting
    /// appends that land meanwhile (the lake). When false (Databricks, whose
    /// `CREATE OR REPLACE … AS SELECT` cannot be conditioned: measured, it
    /// silently drops rows appended after the copy), the replace rebuilds the
    /// table from itself and checks every row as the stage checked the copy.
    pub replace_from_staging: bool,
    /// Names Delta refuses without column mapping (spaces, `,;{}()=`, tabs,
    /// newlines) get column mapping turned on for them (at create, or as a
    /// prerequisite step). Without it such names are refused by a rule.
    pub column_mapping_for_names: bool,
    /// Column mapping can be turned on for an existing table (`none` → `name`);
    /// without it only at create.
    pub column_mapping_on_existing_tables: bool,
    /// A new NOT NULL column with `using:` is added nullable, filled by one
    /// UPDATE and then set NOT NULL behind its check, writing the table once
    /// (Databricks). Without it the table is rewritten (staged: written twice).
    pub backfill_in_place: bool,
    /// A table's CHECK additions are one step and one commit, and so are its
    /// drops (`AddChecks` / `DropChecks`; the lake, whose every commit carries
    /// all the table's constraints: one commit per CHECK made the log grow
    /// quadratically). Without it, one statement per CHECK.
    pub checks_in_one_commit: bool,
    /// Views, SQL functions and volumes (Unity Catalog objects beside the
    /// tables of a schema). Without it a declared one is refused by
    /// `NotSupportedByBackend`: the lake and Spark Connect have no metastore
    /// to hold them.
    pub catalog_objects: bool,
}

impl Capabilities {
    /// The embedded lake backend (delta-rs): no Unity Catalog concepts, no
    /// column mapping or type widening on existing tables, so renames, drops,
    /// type changes and partitioning changes are rewrites. SET NOT NULL is a
    /// metadata commit after counting the missing values at the version read,
    /// committed only against that version.
    pub fn lake() -> Self {
        Capabilities {
            backend: BackendKind::Lake,
            rename_column: Strategy::Rewrite,
            drop_column: Strategy::Rewrite,
            widen_type: Strategy::Rewrite,
            convert_type: Strategy::Rewrite,
            set_not_null: Strategy::InPlace,
            change_partitioning: Strategy::Rewrite,
            rename_drop_need_column_mapping: false,
            widening_needs_feature: false,
            check_constraints: true,
            tags: false,
            grants: false,
            owner: false,
            masks: false,
            row_filters: false,
            primary_and_foreign_keys: false,
            clustering: false,
            identity_columns: false,
            generated_columns: true,
            default_values: false,
            schema_comment: false,
            schema_properties: false,
            unset_schema_properties: false,
            schema_managed_location: false,
            undrop: true,
            replace_keeps_metadata: true,
            substitutes_variables_in_names: false,
            column_mapped_schema_changes: false,
            replace_from_staging: true,
            column_mapping_for_names: false,
            column_mapping_on_existing_tables: false,
            backfill_in_place: false,
            checks_in_one_commit: true,
            catalog_objects: false,
        }
    }

    /// Databricks (Unity Catalog through a SQL warehouse).
    pub fn databricks() -> Self {
        Capabilities {
            backend: BackendKind::Databricks,
            rename_column: Strategy::InPlace,
            drop_column: Strategy::InPlace,
            widen_type: Strategy::InPlace,
            convert_type: Strategy::Rewrite,
            set_not_null: Strategy::InPlace,
            change_partitioning: Strategy::Rewrite,
            rename_drop_need_column_mapping: true,
            widening_needs_feature: true,
            check_constraints: true,
            tags: true,
            grants: true,
            owner: true,
            masks: true,
            row_filters: true,
            primary_and_foreign_keys: true,
            clustering: true,
            identity_columns: true,
            generated_columns: true,
            default_values: true,
            schema_comment: true,
            schema_properties: true,
            unset_schema_properties: false,
            schema_managed_location: true,
            undrop: true,
            replace_keeps_metadata: false,
            substitutes_variables_in_names: true,
            column_mapped_schema_changes: true,
            replace_from_staging: false,
            column_mapping_for_names: true,
            column_mapping_on_existing_tables: true,
            backfill_in_place: true,
            checks_in_one_commit: false,
            catalog_objects: true,
        }
    }

    /// OSS Delta Lake on a Spark cluster (Spark Connect), tables by path:
    /// what Delta 4.x does in place (column mapping renames and drops, type
    /// widening, CHECK constraints, defaults, identity), without Unity
    /// Catalog's (tags, grants, owners, masks, keys) or a catalog's (schemas
    /// are folders, as on the lake). The replace is Databricks' `CREATE OR
    /// REPLACE … AS SELECT` from the table itself, checked row by row. Facts
    /// measured on Spark 4.2 + Delta 4.4: e2e/spark-connect/FACTS.md.
    pub fn spark_connect() -> Self {
        Capabilities {
            backend: BackendKind::SparkConnect,
            rename_column: Strategy::InPlace,
            drop_column: Strategy::InPlace,
            widen_type: Strategy::InPlace,
            convert_type: Strategy::Rewrite,
            // OSS Delta refuses SET NOT NULL on an existing column, and its
            // replace makes columns nullable, so a rewrite cannot set it either
            set_not_null: Strategy::Unsupported,
            change_partitioning: Strategy::Rewrite,
            rename_drop_need_column_mapping: true,
            widening_needs_feature: true,
            check_constraints: true,
            tags: false,
            grants: false,
            owner: false,
            masks: false,
            row_filters: false,
            primary_and_foreign_keys: false,
            clustering: false,
            // Spark writes both, but the lake's reader does not read them back yet
            // (they would drift): refused by name until it does
            identity_columns: false,
            generated_columns: true,
            default_values: false,
            schema_comment: false,
            schema_properties: false,
            unset_schema_properties: false,
            schema_managed_location: false,
            undrop: true,
            replace_keeps_metadata: false,
            substitutes_variables_in_names: true,
            column_mapped_schema_changes: true,
            replace_from_staging: false,
            column_mapping_for_names: true,
            column_mapping_on_existing_tables: true,
            backfill_in_place: false,
            checks_in_one_commit: false,
            catalog_objects: false,
        }
    }

    /// A backend's capabilities, for `plan --observed state.json --backend NAME`.
    pub fn of(kind: BackendKind) -> Self {
        match kind {
            BackendKind::Lake => Self::lake(),
            BackendKind::Databricks => Self::databricks(),
            BackendKind::SparkConnect => Self::spark_connect(),
        }
    }
}
