//! Tables as the planner sees them: what is desired (lowered from a spec) and
//! what is observed (read from a backend). Both sides use the same vocabulary
//! so the diff compares like with like.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::hand_off::HandOff;
use super::maintenance::{Maintenance, TableHealth};
use super::privilege::Privilege;
use super::scope::Scope;
use super::types::DataType;

pub use super::property::{CONSTRAINTS_PROPERTY, OWNER_PROPERTY, PUT_BACK_PROPERTY};

/// The Delta version of the table a staging copy was made from: a table
/// property where statements make the copy, a commit-info key where the
/// lake writes it. One spelling, so every backend recognises a copy alike.
pub const STAGED_FROM_PROPERTY: &str = "delta-operator.io/staged-from-version";

/// A CHECK's entry in [`CONSTRAINTS_PROPERTY`].
pub fn check_entry(name: &str) -> String {
    format!("check:{}", name.to_lowercase())
}

/// A foreign key's entry in [`CONSTRAINTS_PROPERTY`], by structure (a live
/// key's name may be one the workspace or the compiler chose).
pub fn foreign_key_entry(fk: &ForeignKey) -> String {
    format!(
        "fk:{}->{}({})",
        fk.columns.join(",").to_lowercase(),
        fk.references.to_string().to_lowercase(),
        fk.referenced_columns.join(",").to_lowercase()
    )
}

/// `catalog.schema.table`, compared case-insensitively (Unity Catalog lower-cases them).
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct TableRef {
    pub catalog: String,
    pub schema: String,
    pub table: String,
}

impl TableRef {
    pub fn new(catalog: &str, schema: &str, table: &str) -> Self {
        TableRef {
            catalog: catalog.to_lowercase(),
            schema: schema.to_lowercase(),
            table: table.to_lowercase(),
        }
    }
    pub fn schema_ref(&self) -> SchemaRef {
        SchemaRef {
            catalog: self.catalog.clone(),
            schema: self.schema.clone(),
        }
    }
}

impl fmt::Display for TableRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.catalog, self.schema, self.table)
    }
}

/// `catalog.schema`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct SchemaRef {
    pub catalog: String,
    pub schema: String,
}

impl fmt::Display for SchemaRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.catalog, self.schema)
    }
}

/// The resource that declares a table, `<namespace>/<name>`: what the owner
/// marker holds. Written and read as that one string.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ResourceId {
    pub namespace: String,
    pub name: String,
}

impl ResourceId {
    pub fn new(namespace: &str, name: &str) -> Self {
        ResourceId {
            namespace: namespace.into(),
            name: name.into(),
        }
    }

    /// `<namespace>/<name>`, both parts non-empty; anything else is no resource of ours.
    pub fn parse(s: &str) -> Option<Self> {
        let (namespace, name) = s.split_once('/')?;
        (!namespace.is_empty() && !name.is_empty() && !name.contains('/'))
            .then(|| ResourceId::new(namespace, name))
    }
}

impl fmt::Display for ResourceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

impl PartialEq<str> for ResourceId {
    fn eq(&self, other: &str) -> bool {
        other.split_once('/') == Some((self.namespace.as_str(), self.name.as_str()))
    }
}

impl Serialize for ResourceId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ResourceId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        ResourceId::parse(&s)
            .ok_or_else(|| serde::de::Error::custom(format!("'{s}' is not <namespace>/<name>")))
    }
}

/// How strictly a schema treats tables whose spec is gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SchemaMode {
    /// Orphans are listed, never dropped.
    #[default]
    Additive,
    /// Orphans the operator created are dropped (destructive, needs approval).
    Strict,
}

/// An identity column (bigint only).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Identity {
    pub always: bool,
    pub start: i64,
    pub increment: i64,
}

/// A column mask: a function and the extra columns it reads.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Mask {
    pub function: String,
    #[serde(default)]
    pub using_columns: Vec<String>,
}

/// A grant to one principal.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Grant {
    pub principal: String,
    pub privileges: Vec<Privilege>,
}

/// A primary key.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PrimaryKey {
    pub name: Option<String>,
    pub columns: Vec<String>,
}

/// A foreign key.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ForeignKey {
    pub name: Option<String>,
    pub columns: Vec<String>,
    pub references: TableRef,
    pub referenced_columns: Vec<String>,
}

/// A declared column. `None` in an optional aspect means "the spec is silent:
/// leave the live value alone".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DesiredColumn {
    pub name: String,
    #[serde(rename = "type")]
    pub data_type: DataType,
    pub nullable: bool,
    pub comment: Option<String>,
    /// `Some(None)` removes the tag.
    pub tags: BTreeMap<String, Option<String>>,
    pub mask: Option<Mask>,
    pub identity: Option<Identity>,
    pub generated: Option<String>,
    pub default: Option<String>,
    /// The spec's `default: null`: a live default is removed (`default` is then `None`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub drops_default: bool,
    pub renamed_from: Option<String>,
    /// A SQL expression over the live row: the conversion in a rewrite
    /// (parsed at lowering and printed back from the parse tree).
    pub using: Option<String>,
    /// The live columns the `using:` expression reads.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub using_columns: Vec<String>,
    /// What a narrow-scope spec leaves out of the column's shape (its type,
    /// its nullability): the live column's are taken as declared.
    #[serde(default, skip_serializing_if = "Unstated::is_none")]
    pub unstated: Unstated,
}

/// The parts of a column's shape a narrow-scope spec does not state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unstated {
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub data_type: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub nullable: bool,
}

impl Unstated {
    pub fn is_none(&self) -> bool {
        !self.data_type && !self.nullable
    }
}

impl DesiredColumn {
    /// A column with a name, a type and nullability, silent about everything else.
    pub fn new(name: &str, data_type: DataType, nullable: bool) -> Self {
        DesiredColumn {
            name: name.into(),
            data_type,
            nullable,
            comment: None,
            tags: BTreeMap::new(),
            mask: None,
            identity: None,
            generated: None,
            default: None,
            drops_default: false,
            renamed_from: None,
            using: None,
            using_columns: vec![],
            unstated: Unstated::default(),
        }
    }
}

/// A CHECK constraint.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Check {
    pub name: String,
    pub expression: String,
}

/// A table as its spec declares it, after lowering.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DesiredTable {
    pub table: TableRef,
    /// The resource that declares it (the owner marker it gets).
    pub owner_marker: ResourceId,
    pub columns: Vec<DesiredColumn>,
    /// `None`: keep the live layout. `Some([])`: unpartitioned.
    pub partitioned_by: Option<Vec<String>>,
    /// `None`: keep. `Some([])`: no clustering.
    pub cluster_by: Option<Vec<String>>,
    /// `Some(None)` removes the key.
    pub properties: BTreeMap<String, Option<String>>,
    pub comment: Option<String>,
    pub tags: BTreeMap<String, Option<String>>,
    pub grants: Vec<Grant>,
    pub owner: Option<String>,
    pub checks: Vec<Check>,
    pub primary_key: Option<PrimaryKey>,
    pub foreign_keys: Vec<ForeignKey>,
    /// `spec.safety.cloneBeforeRewrite` (or the CLI's `--clone-before-rewrite`):
    /// a shallow clone of the table is taken before its first step that could
    /// lose data. Left out of the serialized form when false, so plan ids of
    /// tables without it are unchanged.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub clone_before_rewrite: bool,
    /// How much of the table the spec governs (`spec.scope`); see [`Scope`].
    #[serde(default, skip_serializing_if = "Scope::is_full")]
    pub scope: Scope,
    /// The parts of the table another tool owns (its target's, schema's and
    /// own `handOff`): never planned, still known.
    #[serde(default, skip_serializing_if = "HandOff::is_empty")]
    pub hand_off: HandOff,
    /// `spec.maintenance`, merged over its schema's and target's: compaction,
    /// vacuum and checkpoints, planned when due. Left out when none is declared
    /// (plan ids of tables without it are unchanged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maintenance: Option<Maintenance>,
    /// What the manifest set refuses about this table alone (its foreign keys:
    /// an undeclared parent, not the parent's key, a type or case mismatch, a
    /// cycle): the table is refused by `ForeignKeyInvalid` and its dependents
    /// blocked, while every other table is planned. Not serialized: the plan
    /// shows them as the table's `ForeignKeyInvalid` failures, and a field here
    /// would move every plan id (`plan::id` hashes each field's presence).
    #[serde(skip)]
    pub refusals: Vec<SpecRefusal>,
}

/// One reason the manifests refuse a table, found across the manifest set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpecRefusal {
    /// The spec field, e.g. `spec.constraints[1].foreignKey.references`.
    pub path: String,
    pub message: String,
    pub fix: String,
}

/// A column as read from the live table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObservedColumn {
    pub name: String,
    #[serde(rename = "type")]
    pub data_type: DataType,
    pub nullable: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tags: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mask: Option<Mask>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<Identity>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generated: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
}

impl ObservedColumn {
    /// A live column with a name, a type and nullability, and nothing else.
    pub fn new(name: &str, data_type: DataType, nullable: bool) -> Self {
        ObservedColumn {
            name: name.into(),
            data_type,
            nullable,
            comment: None,
            tags: BTreeMap::new(),
            mask: None,
            identity: None,
            generated: None,
            default: None,
        }
    }
}

/// What an interrupted run left beside a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LeftoverKind {
    /// A staging copy whose run never finished.
    StagingCopy,
    /// Rewritten files written into the table's folder but never committed.
    UncommittedFiles,
}

/// One thing an interrupted run left: found by the read, removed by the plan's first step.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Leftover {
    pub kind: LeftoverKind,
    /// The run that left it.
    pub run: String,
    /// Where it is, for the plan and the log.
    pub location: String,
    pub files: u64,
    pub bytes: u64,
}

/// What a live relation is. Only a Delta table can be shaped; the others are
/// made and evolved by their pipeline or their definition, and a spec may
/// govern them at the annotation scopes only (`Annotations`, `Tags`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TableKind {
    #[default]
    Table,
    /// A pipeline's streaming table (`ALTER STREAMING TABLE`).
    StreamingTable,
    /// A materialized view (`ALTER MATERIALIZED VIEW`).
    MaterializedView,
    /// A view (`ALTER VIEW`).
    View,
}

impl TableKind {
    pub fn is_table(&self) -> bool {
        *self == TableKind::Table
    }
    /// `a streaming table`, for messages.
    pub fn words(self) -> &'static str {
        match self {
            TableKind::Table => "a table",
            TableKind::StreamingTable => "a streaming table",
            TableKind::MaterializedView => "a materialized view",
            TableKind::View => "a view",
        }
    }
}

/// A live table as a backend read it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObservedTable {
    pub table: TableRef,
    /// A Delta table, or a relation a pipeline or a definition makes.
    #[serde(default, skip_serializing_if = "TableKind::is_table")]
    pub kind: TableKind,
    pub columns: Vec<ObservedColumn>,
    #[serde(default)]
    pub partitioned_by: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_by: Option<Vec<String>>,
    /// Every property except CHECK constraints (read as `checks`).
    #[serde(default)]
    pub properties: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tags: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub grants: Vec<Grant>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<Check>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub primary_key: Option<PrimaryKey>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub foreign_keys: Vec<ForeignKey>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub row_filter: Option<String>,
    /// Delta protocol writer features the backend cannot write (they make the table read-only for it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unsupported_features: Vec<String>,
    /// The Delta version read; the restore point before a change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_bytes: Option<u64>,
    /// What interrupted runs left beside the table.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub leftovers: Vec<Leftover>,
    /// The table exists but cannot be read (a broken Delta log), and why:
    /// it is refused, and nothing is planned for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreadable: Option<String>,
    /// The table's recent history (commit times, VACUUMs), where the backend
    /// read it (`Backend::history`): the windows of its restore points, which
    /// the steps carry. Never serialized: not in the plan id (every commit
    /// moves it), nor in a plan's JSON (up to `HISTORY_DEPTH` commits).
    #[serde(skip)]
    pub history: Option<super::history::TableHistory>,
    /// What the backend measured for maintenance (file counts, the last
    /// compaction, vacuum and checkpoint, recorded restore points); None when
    /// not read. Moves with every append, so the plan id leaves it out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<TableHealth>,
}

impl ObservedTable {
    /// A table that exists but cannot be read.
    pub fn unreadable(table: TableRef, why: String) -> Self {
        ObservedTable {
            unreadable: Some(why),
            ..ObservedTable::new(table, vec![])
        }
    }

    /// A live table with these columns and nothing else (no marker, version or size).
    pub fn new(table: TableRef, columns: Vec<ObservedColumn>) -> Self {
        ObservedTable {
            table,
            kind: TableKind::Table,
            columns,
            partitioned_by: vec![],
            cluster_by: None,
            properties: BTreeMap::new(),
            comment: None,
            tags: BTreeMap::new(),
            grants: vec![],
            owner: None,
            checks: vec![],
            primary_key: None,
            foreign_keys: vec![],
            row_filter: None,
            unsupported_features: vec![],
            version: None,
            size_bytes: None,
            leftovers: vec![],
            unreadable: None,
            history: None,
            health: None,
        }
    }

    /// The resource the owner marker names, if it names one.
    pub fn owner(&self) -> Option<ResourceId> {
        self.owner_marker().and_then(ResourceId::parse)
    }

    /// The owner marker, if the operator manages this table.
    pub fn owner_marker(&self) -> Option<&str> {
        self.properties.get(OWNER_PROPERTY).map(String::as_str)
    }

    /// The scope the operator governs this table at: `Full` without a scope
    /// record, the narrowest scope for a record no scope spells (a record
    /// someone garbled never widens what the operator may do).
    pub fn governed_scope(&self) -> Scope {
        match self.properties.get(super::property::SCOPE_PROPERTY) {
            None => Scope::Full,
            Some(v) => Scope::from_marker(v).unwrap_or(Scope::Tags),
        }
    }

    /// The constraints the operator made or claimed on this table
    /// ([`CONSTRAINTS_PROPERTY`]); none when the record is absent or unreadable.
    pub fn owned_constraints(&self) -> std::collections::BTreeSet<String> {
        self.properties
            .get(CONSTRAINTS_PROPERTY)
            .and_then(|v| serde_json::from_str::<Vec<String>>(v).ok())
            .unwrap_or_default()
            .into_iter()
            .map(|e| e.to_lowercase())
            .collect()
    }

    /// A live column by name, case-insensitively.
    pub fn column(&self, name: &str) -> Option<&ObservedColumn> {
        self.columns
            .iter()
            .find(|c| c.name.eq_ignore_ascii_case(name))
    }
}

impl DesiredTable {
    /// The partitioning the spec asks for: the declared one, or none when
    /// the spec declares clustering (a table is partitioned or clustered, so
    /// moving from partitions to clusterBy needs no `partitionedBy: []`);
    /// None: the spec leaves the partitioning alone.
    pub fn wanted_partitioning(&self) -> Option<Vec<String>> {
        self.partitioned_by.clone().or_else(|| {
            self.cluster_by
                .as_ref()
                .filter(|k| !k.is_empty())
                .map(|_| Vec::new())
        })
    }

    /// A table declared by `owner_marker` (`<namespace>/<name>`), silent about everything but its columns.
    pub fn new(table: TableRef, owner_marker: &str, columns: Vec<DesiredColumn>) -> Self {
        let owner_marker =
            ResourceId::parse(owner_marker).unwrap_or_else(|| ResourceId::new("", owner_marker));
        DesiredTable {
            table,
            owner_marker,
            columns,
            partitioned_by: None,
            cluster_by: None,
            properties: BTreeMap::new(),
            comment: None,
            tags: BTreeMap::new(),
            grants: vec![],
            owner: None,
            checks: vec![],
            primary_key: None,
            foreign_keys: vec![],
            clone_before_rewrite: false,
            scope: Scope::Full,
            hand_off: HandOff::default(),
            maintenance: None,
            refusals: vec![],
        }
    }

    /// The [`CONSTRAINTS_PROPERTY`] value this spec leaves on its table: every
    /// declared CHECK and foreign key; `None` when it declares neither.
    pub fn constraints_record(&self) -> Option<String> {
        let mut entries: Vec<String> = self
            .checks
            .iter()
            .map(|c| check_entry(&c.name))
            .chain(self.foreign_keys.iter().map(foreign_key_entry))
            .collect();
        if entries.is_empty() {
            return None;
        }
        entries.sort();
        entries.dedup();
        serde_json::to_string(&entries).ok()
    }

    /// The operator's own properties a new table is created with: the owner
    /// marker, and the record of its constraints when it declares some.
    pub fn marker_properties(&self) -> Vec<(String, String)> {
        let mut out = vec![(OWNER_PROPERTY.to_string(), self.owner_marker.to_string())];
        if let Some(r) = self.constraints_record() {
            out.push((CONSTRAINTS_PROPERTY.to_string(), r));
        }
        out
    }

    /// A declared column by name, case-insensitively.
    pub fn column(&self, name: &str) -> Option<&DesiredColumn> {
        self.columns
            .iter()
            .find(|c| c.name.eq_ignore_ascii_case(name))
    }
}
