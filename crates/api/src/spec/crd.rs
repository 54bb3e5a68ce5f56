//! The custom resources users write: `DeltaSchema` and `DeltaTable`
//! (group `delta-operator.io`, version `v1alpha1`; the views, functions and
//! volumes are in `spec::objects`). Field names are part of
//! the public contract; change them only with a new API version.

use std::collections::BTreeMap;

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Properties and tags: a `null` value removes the key.
pub type NullableMap = BTreeMap<String, Option<String>>;

/// A Unity Catalog schema (a lake folder on the embedded backend) whose tables
/// the operator manages.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "delta-operator.io",
    version = "v1alpha1",
    kind = "DeltaSchema",
    namespaced,
    status = "DeltaSchemaStatus",
    shortname = "ds",
    printcolumn = r#"{"name":"SCHEMA","type":"string","jsonPath":".status.schema"}"#,
    printcolumn = r#"{"name":"READY","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"MODE","type":"string","jsonPath":".spec.mode"}"#,
    printcolumn = r#"{"name":"AGE","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct DeltaSchemaSpec {
    /// The catalog that holds the schema (a top-level folder on the lake backend).
    #[schemars(length(min = 1, max = 255))]
    #[schemars(extend("x-kubernetes-validations" = [
        {"rule": "!self.matches(r'[./ \\\\]')", "message": "must not contain '.', spaces, '/' or '\\': use a name without them"},
        {"rule": "self.lowerAscii() != '_delta_log'", "message": "'_delta_log' is the folder of a Delta table's log: choose another name"}
    ]))]
    pub catalog: String,
    /// The schema's name; defaults to metadata.name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 255))]
    #[schemars(extend("x-kubernetes-validations" = [
        {"rule": "!self.matches(r'[./ \\\\]')", "message": "must not contain '.', spaces, '/' or '\\': use a name without them"},
        {"rule": "self.lowerAscii() != '_delta_log'", "message": "'_delta_log' is the folder of a Delta table's log: choose another name"}
    ]))]
    pub name: Option<String>,
    /// A target named in the operator config; defaults to the config's default target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// `additive`: tables whose spec is gone are listed and kept.
    /// `strict`: tables the operator created whose spec is gone are dropped, after approval.
    /// Omitted: the target's `defaultSchemaMode` (itself `additive` unless set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<SchemaModeSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 16384))]
    pub comment: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub properties: NullableMap,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub grants: Vec<GrantSpec>,
    /// Where the schema keeps its managed tables when the operator creates it
    /// (Unity Catalog's MANAGED LOCATION): a storage URL such as
    /// `abfss://container@account.dfs.core.windows.net/sales` or `s3://bucket/sales`.
    /// Used only at creation; a live schema keeps its storage root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 4096))]
    pub managed_location: Option<String>,
    /// Parts of every table of this schema that another tool owns: never
    /// planned; a table spec that declares one is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hand_off: Option<HandOffSpec>,
    /// The drift policy of this schema (its strict orphans, its metadata) and
    /// the default of its tables' `driftPolicy`. Omitted: `Report`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift_policy: Option<DriftPolicy>,
    /// The maintenance of every table in this schema, field by field under
    /// the table's own `maintenance` (and over the target's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maintenance: Option<MaintenanceSpec>,
}

/// Day-two upkeep of a table (`spec.maintenance`): compaction, vacuum and
/// checkpoints, each planned as a step (class `maintenance`) when it is due.
/// A block declared on the DeltaSchema (or the target) is the default for
/// its tables, field by field.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MaintenanceSpec {
    /// Bin-packing of small files (Z-ordered where declared).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compaction: Option<CompactionSpec>,
    /// Removal of files no version within the retention needs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vacuum: Option<VacuumSpec>,
    /// Checkpoints of the log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<CheckpointSpec>,
}

/// `maintenance.compaction`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CompactionSpec {
    /// Run when at least this many files are smaller than targetFileSize/4 (default 100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub when_small_files: Option<u64>,
    /// The size files are compacted to, as a quantity (`128Mi`, `1Gi`; default 128Mi).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 32))]
    pub target_file_size: Option<String>,
    /// Z-order the compacted files by these declared columns (not on a clustered table).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub z_order_by: Option<Vec<String>>,
    /// Also run when the last compaction is older than this (`30m`, `24h`, `7d`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 2, max = 32))]
    pub every: Option<String>,
}

/// `maintenance.vacuum`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VacuumSpec {
    /// Files removed longer ago than this are deleted (default 168). Below
    /// 168 needs `allowShortRetention: true`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retain_hours: Option<u64>,
    /// Allows `retainHours` below 168: a reader or writer older than the
    /// retention may then fail, and time travel that far back ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_short_retention: Option<bool>,
    /// A vacuum never removes files a restore point the operator recorded
    /// in the last this many days needs (default 7).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_restore_points_days: Option<u64>,
    /// How often to vacuum (`30m`, `24h`, `7d`; default 24h).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 2, max = 32))]
    pub every: Option<String>,
}

/// `maintenance.checkpoint`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CheckpointSpec {
    /// Write a checkpoint when this many versions passed since the last one (default 100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub every_versions: Option<u64>,
}

/// `spec.driftPolicy`: what a difference between the live table and the spec
/// that is not being applied (drift made outside under policy Observe, Manual
/// or a pause; a plan waiting for its approval) does to the resource's health.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum DriftPolicy {
    /// Shown (condition Drifted, status.plan, an Event), the health unchanged.
    #[default]
    Report,
    /// The resource is degraded (Stalled=True, Ready=False, reason DriftDetected:
    /// kstatus Failed, Argo CD Degraded) until the drift is applied, the spec
    /// matches the table again, or the plan is approved
    /// (`delta-operator.io/approve=<status.plan.id>`; under Observe or a pause
    /// an approval acknowledges that plan's drift without applying it).
    Fail,
}

impl DriftPolicy {
    /// A table's policy: its own, else its schema's, else `Report`.
    pub fn resolve(table: Option<DriftPolicy>, schema: Option<DriftPolicy>) -> DriftPolicy {
        table.or(schema).unwrap_or_default()
    }
}

/// Parts of a table handed to the tool that already owns them. A spec that
/// declares a handed-off part is refused (naming the hand-off), and nothing
/// handed off is ever planned; the operator still knows them, so a rewrite
/// still refuses a masked table and still puts back a renamed column's tags.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HandOffSpec {
    /// Who owns them, for plans and errors (`dbt`, `the ingest pipeline`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 256))]
    pub to: Option<String>,
    /// `Tags`, `Grants`, `Owner`, `Comments`, `Masks`, `Checks`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aspects: Vec<HandedSpec>,
    /// Table property key prefixes another tool sets (`pipelines.`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub properties: Vec<String>,
}

/// One part of a table another tool may own.
#[derive(
    Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, JsonSchema,
)]
pub enum HandedSpec {
    Tags,
    Grants,
    Owner,
    Comments,
    Masks,
    Checks,
}

impl HandOffSpec {
    /// The core's hand-off.
    pub fn lower(&self) -> delta_operator_core::model::HandOff {
        use delta_operator_core::model::{HandOff, Handed};
        HandOff {
            aspects: self
                .aspects
                .iter()
                .map(|a| match a {
                    HandedSpec::Tags => Handed::Tags,
                    HandedSpec::Grants => Handed::Grants,
                    HandedSpec::Owner => Handed::Owner,
                    HandedSpec::Comments => Handed::Comments,
                    HandedSpec::Masks => Handed::Masks,
                    HandedSpec::Checks => Handed::Checks,
                })
                .collect(),
            property_prefixes: self.properties.iter().cloned().collect(),
            to: self.to.iter().cloned().collect(),
        }
    }
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SchemaModeSpec {
    #[default]
    Additive,
    Strict,
}

/// A Delta table, declared.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "delta-operator.io",
    version = "v1alpha1",
    kind = "DeltaTable",
    namespaced,
    status = "DeltaTableStatus",
    shortname = "dt",
    printcolumn = r#"{"name":"TABLE","type":"string","jsonPath":".status.table"}"#,
    printcolumn = r#"{"name":"READY","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"PLAN","type":"string","jsonPath":".status.plan.summary"}"#,
    printcolumn = r#"{"name":"RISK","type":"string","jsonPath":".status.plan.risk"}"#,
    printcolumn = r#"{"name":"SCOPE","type":"string","jsonPath":".spec.scope","priority":1}"#,
    printcolumn = r#"{"name":"APPLYING","type":"string","jsonPath":".status.apply.current"}"#,
    printcolumn = r#"{"name":"AGE","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct DeltaTableSpec {
    /// The name of a DeltaSchema in the same namespace.
    #[schemars(length(min = 1, max = 253))]
    pub schema_ref: String,
    /// The table's name; defaults to metadata.name. At most 211 bytes: the
    /// operator's clone beside the table adds up to 44.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 211))]
    #[schemars(extend("x-kubernetes-validations" = [
        {"rule": "!self.matches(r'[./ \\\\]')", "message": "must not contain '.', spaces, '/' or '\\': use a name without them"},
        {"rule": "self.lowerAscii() != '_delta_log'", "message": "'_delta_log' is the folder of a Delta table's log: choose another name"}
    ]))]
    pub name: Option<String>,
    /// At scope `Full`, every column of the table (one the spec does not list
    /// is dropped, after approval). At a narrower scope, only the columns the
    /// spec annotates; their `type` and `nullable` may be left out.
    #[serde(default)]
    #[schemars(length(max = 4096))]
    pub columns: Vec<ColumnSpec>,
    /// Partition columns. Omitted: the live layout is kept. `[]`: unpartitioned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partitioned_by: Option<Vec<String>>,
    /// Liquid clustering keys (at most 4). Omitted: kept. `[]`: no clustering.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 4))]
    pub cluster_by: Option<Vec<String>>,
    /// Table properties; `key: null` removes one. Keys not named are left alone.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub properties: NullableMap,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub constraints: Vec<ConstraintSpec>,
    /// The table comment. Omitted: left alone; `""`: cleared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 16384))]
    pub comment: Option<String>,
    /// Table tags; `key: null` removes one. Tags not named are left alone.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tags: NullableMap,
    /// A named principal gets exactly these privileges; principals not named are left alone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub grants: Vec<GrantSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// `Auto` (default): applies all but destructive steps, which wait for approval.
    /// `Manual`: every non-empty plan waits for approval. `Observe`: never applies.
    #[serde(default)]
    pub policy: Policy,
    /// `Retain` (default): deleting the resource leaves the table.
    /// `Delete`: the table is dropped, after approval.
    #[serde(default)]
    pub deletion_policy: DeletionPolicy,
    /// How rewrites protect the data beyond the restore point every rewrite records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub safety: Option<SafetySpec>,
    /// How much of the table the spec governs, widest first. `Full` (default):
    /// all of it, and the operator creates it. `Metadata`: properties,
    /// constraints, comments, tags and access (grants, owner, masks).
    /// `Annotations`: comments, tags and access. `Tags`: tags. Below `Full`,
    /// what the spec declares of an aspect its scope does not manage must
    /// already hold (a difference refuses the plan by UnmanagedAspectDrift),
    /// columns the spec does not list are left alone, an absent table is
    /// waited for (Deferred), and the operator never drops the table.
    #[serde(default)]
    pub scope: ScopeSpec,
    /// Parts of this table another tool owns (added to its schema's and its
    /// target's): never planned; declaring one here too is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hand_off: Option<HandOffSpec>,
    /// `Report`: drift is shown and the health is unchanged. `Fail`: drift that
    /// is not being applied makes the resource degraded (reason DriftDetected)
    /// until it is applied, resolved or its plan approved. Omitted: the
    /// DeltaSchema's `driftPolicy`, else `Report`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift_policy: Option<DriftPolicy>,
    /// Compaction, vacuum and checkpoints, planned when due (over the
    /// schema's and the target's, field by field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maintenance: Option<MaintenanceSpec>,
}

/// `spec.scope`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum ScopeSpec {
    #[default]
    Full,
    Metadata,
    Annotations,
    Tags,
}

impl ScopeSpec {
    pub fn is_full(&self) -> bool {
        *self == ScopeSpec::Full
    }
    /// The core's scope.
    pub fn lower(self) -> delta_operator_core::model::Scope {
        use delta_operator_core::model::Scope;
        match self {
            ScopeSpec::Full => Scope::Full,
            ScopeSpec::Metadata => Scope::Metadata,
            ScopeSpec::Annotations => Scope::Annotations,
            ScopeSpec::Tags => Scope::Tags,
        }
    }
}

/// Extra protection for rewrites.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SafetySpec {
    /// Take a shallow clone of the table (no data copied: it references the
    /// table's current files) before the first step that could lose data,
    /// named `<table>__delta_operator_clone_v<version>`. It lasts until a
    /// VACUUM removes the files it references.
    #[serde(default)]
    pub clone_before_rewrite: bool,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum Policy {
    #[default]
    Auto,
    Manual,
    Observe,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum DeletionPolicy {
    #[default]
    Retain,
    Delete,
}

/// One column.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ColumnSpec {
    #[schemars(length(min = 1, max = 255))]
    pub name: String,
    /// A type in string notation (`decimal(18,2)`, `array<struct<a:int>>`) or the
    /// nested notation (`{struct: [...]}`, `{array: ...}`, `{map: {key, value}}`).
    /// Required at scope `Full`; below it, omitted means the live column's type.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "any_value_schema")]
    pub data_type: Option<serde_json::Value>,
    /// Omitted: true at scope `Full`; the live column's nullability below it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nullable: Option<bool>,
    /// Omitted: left alone; `""`: cleared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 16384))]
    pub comment: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tags: NullableMap,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mask: Option<MaskSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<IdentitySpec>,
    /// A generation expression (`CAST(order_ts AS DATE)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generated: Option<String>,
    /// A default value expression. `null` removes the live default (rows keep their
    /// values; new rows get NULL); omitted, the live default is left as it is.
    #[serde(
        default,
        deserialize_with = "null_is_some",
        skip_serializing_if = "Option::is_none"
    )]
    pub default: Option<Option<String>>,
    /// The column's previous name: the plan renames instead of dropping and adding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 255))]
    pub renamed_from: Option<String>,
    /// One SQL expression over the live row, used when the table is rewritten.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 4096))]
    pub using: Option<String>,
}

impl ColumnSpec {
    /// Nullability as declared (`nullable` omitted is nullable).
    pub fn is_nullable(&self) -> bool {
        self.nullable.unwrap_or(true)
    }
}

/// Any JSON value (the column type accepts a string or a nested object).
fn any_value_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "x-kubernetes-preserve-unknown-fields": true })
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MaskSpec {
    /// The masking function, `catalog.schema.function`; `schema.function` or
    /// `function` name one in the table's catalog or schema.
    pub function: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub using_columns: Vec<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct IdentitySpec {
    /// `Always` (default) or `ByDefault`.
    #[serde(default)]
    pub generated: IdentityGeneration,
    #[serde(default = "one")]
    pub start: i64,
    #[serde(default = "one")]
    pub increment: i64,
}

fn one() -> i64 {
    1
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum IdentityGeneration {
    #[default]
    Always,
    ByDefault,
}

/// Exactly one of `check`, `primaryKey`, `foreignKey`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConstraintSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<CheckSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub primary_key: Option<PrimaryKeySpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub foreign_key: Option<ForeignKeySpec>,
}

/// A constraint item, as the one kind it is. (The CRD keeps three optional
/// keys, which is how users write it; validation refuses an item with other
/// than one of them.)
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Constraint<'a> {
    Check(&'a CheckSpec),
    PrimaryKey(&'a PrimaryKeySpec),
    ForeignKey(&'a ForeignKeySpec),
}

impl ConstraintSpec {
    /// The one kind this item declares; `Err(n)` when it declares `n` != 1 of them.
    pub fn kind(&self) -> Result<Constraint<'_>, usize> {
        let kinds: Vec<Constraint<'_>> = [
            self.check.as_ref().map(Constraint::Check),
            self.primary_key.as_ref().map(Constraint::PrimaryKey),
            self.foreign_key.as_ref().map(Constraint::ForeignKey),
        ]
        .into_iter()
        .flatten()
        .collect();
        match kinds.as_slice() {
            [one] => Ok(*one),
            other => Err(other.len()),
        }
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
pub struct CheckSpec {
    pub name: String,
    /// A boolean SQL expression over the row (`amount >= 0`).
    pub expression: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
pub struct PrimaryKeySpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub columns: Vec<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {"rule": "self.columns.size() == self.referencedColumns.size()", "message": "columns and referencedColumns must name as many columns, in matching order"}
]))]
pub struct ForeignKeySpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[schemars(length(min = 1))]
    pub columns: Vec<String>,
    /// The referenced table: `table`, `schema.table` or `catalog.schema.table`.
    pub references: String,
    pub referenced_columns: Vec<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
pub struct GrantSpec {
    pub principal: String,
    pub privileges: Vec<String>,
}

/// A kstatus condition (the shape of metav1.Condition).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    pub reason: String,
    #[serde(default)]
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    pub last_transition_time: String,
}

/// The plan the operator would run, as written into status.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlanStatus {
    pub id: String,
    /// `+1 ~2 -1`.
    pub summary: String,
    /// The highest risk class among the steps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub risk: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<String>,
    /// Steps left out to keep the object small.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub steps_omitted: i32,
    /// The exact command that approves this plan, when it needs approval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approve_command: Option<String>,
    /// The `delta-operator.io/approve` value that approves this plan, when it
    /// needs approval: its id, or `<id>-<n>` when an approval of the same id was
    /// already spent on this resource (see `status.approval`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<String>,
    /// The whole plan as `delta-operator plan` prints it (changes, steps, warnings,
    /// undo hints), cut at 16 KiB; `kubectl delta plan` shows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

fn is_zero(n: &i32) -> bool {
    *n == 0
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LastApplied {
    pub plan_id: String,
    pub time: String,
    pub steps_applied: i32,
    /// `catalog.schema.table@version` recorded before each rewrite or destructive step.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub restore_points: Vec<String>,
    /// Until when each restore point works (the table's retention and the
    /// VACUUMs seen in its history), checked after the apply and again at
    /// most hourly while the table is reconciled.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub undo_windows: Vec<UndoWindowStatus>,
}

/// The window of one restore point.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UndoWindowStatus {
    /// The restore point, `catalog.schema.table@version`, as in `restorePoints`.
    pub restore_point: String,
    /// In words: `works until 2026-12-11 14:00 UTC`, `no longer works: vacuumed
    /// at … (retention 0 hours)`, `window unknown: …`.
    pub window: String,
    /// Until when a restore to it works (RFC 3339), while it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub works_until: Option<String>,
    /// When a VACUUM ended it (RFC 3339): a restore to it no longer works.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<String>,
    /// When the window was checked (RFC 3339).
    pub checked_at: String,
}

/// `status.maintenance`: the last run of each maintenance kind the operator
/// ran on the table (compaction, vacuum, checkpoint), kept until the next.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MaintenanceStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compaction: Option<MaintenanceRun>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vacuum: Option<MaintenanceRun>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<MaintenanceRun>,
}

/// One maintenance run: when it ended, how, in which plan, what it said.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MaintenanceRun {
    /// When the run ended (RFC 3339).
    pub time: String,
    pub outcome: MaintenanceRunOutcome,
    /// The plan whose step it was.
    pub plan_id: String,
    /// What the step reported (files compacted, files removed), or its error.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

/// How a maintenance run ended.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum MaintenanceRunOutcome {
    #[default]
    Succeeded,
    Failed,
}

/// An apply in progress: written before its first step and at every step
/// boundary (and refreshed while a step runs), removed when it ends. A pod that
/// starts and finds it knows an apply was cut short and where.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApplyStatus {
    pub plan_id: String,
    /// When the apply started (RFC 3339).
    pub started_at: String,
    /// The step running, counted from 1 over the whole plan (0 before the first).
    pub step: i32,
    /// How many steps the plan has.
    pub of: i32,
    /// `2/5 REPLACE TABLE (from staging)`: what runs now (a printer column).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current: Option<String>,
    /// When the running step started (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_started_at: Option<String>,
    /// `catalog.schema.table@version` taken so far, before each rewrite or destructive step.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub restore_points: Vec<String>,
    /// Warehouse statements that may still be running: the step's writes while
    /// they run (a kill leaves them named), and those a shutdown asked to cancel
    /// without seeing them end. Nothing runs on the table until each has ended.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub statements: Vec<String>,
    /// How many times in a row the operator process ended (a kill, out of memory)
    /// while the step in `current` ran, counted by the operator that found it so
    /// (a graceful shutdown's hand-off is not counted). At `--max-step-interruptions`
    /// the table is Stalled (reason CrashLoop) instead of resumed again. Starts
    /// over when the step completes or a different step runs.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub interruptions: i32,
}

/// What became of an approval.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum ApprovalState {
    /// The plan it approved ran: the value approves nothing any more, even if
    /// the annotation stays (or Git puts it back) and the same plan recurs.
    #[default]
    Spent,
}

/// The last approval an apply spent (`status.approval`). An approval is spent
/// once: after the approved plan's destructive steps (with `policy: Manual`,
/// any step) ran, its value approves nothing again. The operator never edits
/// the annotation (a GitOps tool would put it back); this record is what it
/// goes by.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalStatus {
    /// The plan the approval named.
    pub plan_id: String,
    /// The annotation value that approved it (the id, or `<id>-<n>`).
    pub value: String,
    pub state: ApprovalState,
    /// When the plan it approved was applied (RFC 3339).
    pub spent_at: String,
    /// Values spent before this one, newest first (at most 15): they approve nothing either.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub earlier: Vec<String>,
}

impl ApprovalStatus {
    /// How many earlier spent values are remembered.
    pub const EARLIER: usize = 15;

    /// Whether `value` was spent on this resource.
    pub fn spent(&self, value: &str) -> bool {
        self.value == value || self.earlier.iter().any(|e| e == value)
    }

    /// `newer` spent after `self`: `self`'s values move into `earlier`.
    pub fn then(&self, newer: ApprovalStatus) -> ApprovalStatus {
        let mut earlier = newer.earlier;
        for v in std::iter::once(&self.value).chain(&self.earlier) {
            if *v != newer.value && !earlier.contains(v) {
                earlier.push(v.clone());
            }
        }
        earlier.truncate(Self::EARLIER);
        ApprovalStatus { earlier, ..newer }
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeltaTableStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// The fully qualified table name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<PlanStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_applied: Option<LastApplied>,
    /// The apply running now, or cut short (see the Reconciling condition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub apply: Option<ApplyStatus>,
    /// The last approval spent (and the values spent before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<ApprovalStatus>,
    /// The last compaction, vacuum and checkpoint the operator ran (`spec.maintenance`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maintenance: Option<MaintenanceStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_handled_reconcile_at: Option<String>,
    /// The replica (its `--identity`) that wrote this status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reconciled_by: Option<String>,
    /// The shard the resource is in (`run --shards` above 1): by its namespace,
    /// or its label `delta-operator.io/shard`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<i64>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeltaSchemaStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// `catalog.schema`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// Tables in the schema whose spec is gone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub orphans: Vec<String>,
    /// Tables in the schema the operator does not manage (no owner marker, no
    /// DeltaTable) and its views (`name (view)`): never touched, listed here by
    /// name (the first 100).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unmanaged: Vec<String>,
    /// How many unmanaged tables the schema holds (`unmanaged` lists the first 100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unmanaged_count: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<PlanStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_applied: Option<LastApplied>,
    /// The last approval spent (orphan drops), and the values spent before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<ApprovalStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_handled_reconcile_at: Option<String>,
    /// The replica (its `--identity`) that wrote this status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reconciled_by: Option<String>,
    /// The shard the resource is in (`run --shards` above 1): by its namespace,
    /// or its label `delta-operator.io/shard`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<i64>,
}

/// The CRD with `status` defaulting to `{observedGeneration: 0}`: a resource the
/// operator has not seen yet has generation 1 > 0, which kstatus (Flux, kubectl
/// wait) reads as InProgress instead of Current.
pub fn with_status_default(
    mut crd: k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
) -> k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSON;
    for v in &mut crd.spec.versions {
        let status = v
            .schema
            .as_mut()
            .and_then(|s| s.open_api_v3_schema.as_mut())
            .and_then(|s| s.properties.as_mut())
            .and_then(|p| p.get_mut("status"));
        if let Some(status) = status {
            status.default = Some(JSON(serde_json::json!({"observedGeneration": 0})));
        }
    }
    crd
}

/// Every CRD as installed: DeltaSchema, DeltaTable, then DeltaView,
/// DeltaFunction and DeltaVolume.
pub fn all()
-> Vec<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition>
{
    use kube::CustomResourceExt;
    vec![
        with_status_default(DeltaSchema::crd()),
        with_status_default(DeltaTable::crd()),
        with_status_default(super::objects::DeltaView::crd()),
        with_status_default(super::objects::DeltaFunction::crd()),
        with_status_default(super::objects::DeltaVolume::crd()),
    ]
}

/// A field where `null` says something (remove) and omitted says nothing: `key: null` is
/// `Some(None)`, an omitted key stays `None` through `#[serde(default)]`.
fn null_is_some<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    <Option<T> as serde::Deserialize>::deserialize(d).map(Some)
}
