//! Steps: numbered, typed actions with a risk class. A backend compiles each
//! action; the executor runs them in order.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::change::{FieldPath, path_string};
use super::compile::StepCheck;
use crate::model::privilege::{self, Privilege};
use crate::model::widening::is_lossless_cast;
use crate::model::{
    Check, DataType, DesiredTable, ForeignKey, Leftover, Mask, PrimaryKey, StructField,
};

/// The risk class decides what runs without approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RiskClass {
    /// Metadata only: comments, properties, added columns, constraints.
    Meta,
    /// Turns on a table feature (column mapping, type widening): permanent protocol change.
    Feature,
    /// Rebuilds the table from its data; a restore point is recorded first.
    Rewrite,
    /// Loses data: a dropped column or table. Needs approval of this exact plan.
    Destructive,
}

impl fmt::Display for RiskClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RiskClass::Meta => "meta",
            RiskClass::Feature => "feature",
            RiskClass::Rewrite => "rewrite",
            RiskClass::Destructive => "destructive",
        })
    }
}

/// Where a rewritten column's (or nested field's) values come from. The same
/// tree compiles to SQL on Databricks (`CAST`, `named_struct`, `transform`) and
/// to Arrow kernels on the lake. Nested sources name fields of the enclosing
/// live struct (or of the array's element struct, inside `Transform`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Source {
    /// The live column, unchanged (following a rename).
    Copy { from: String },
    /// `CAST(from AS <type>)` between scalars (or arrays and maps of scalars).
    /// Lossless casts (`widening::is_lossless_cast`) are written once; any
    /// other is staged and checked.
    Cast { from: String, from_type: DataType },
    /// The spec's `using:` expression over the live row (top level only).
    Using { expression: String },
    /// `CAST(NULL AS <type>)`: a new column or nested field.
    Null,
    /// `named_struct(...)` rebuilt by field NAME, never by position: each
    /// target field from the live field of the same name (or NULL when new).
    Struct {
        from: String,
        fields: Vec<Projection>,
    },
    /// `transform(from, x -> named_struct(...))` over an array of structs:
    /// each element rebuilt by field name.
    Transform {
        from: String,
        fields: Vec<Projection>,
    },
}

impl Source {
    /// The live column or field this value is read from, if any.
    pub fn from(&self) -> Option<&str> {
        match self {
            Source::Copy { from }
            | Source::Cast { from, .. }
            | Source::Struct { from, .. }
            | Source::Transform { from, .. } => Some(from),
            Source::Using { .. } | Source::Null => None,
        }
    }
}

/// One column (or nested field) of a rewritten table: the target field and
/// where its values come from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Projection {
    pub field: StructField,
    pub source: Source,
}

impl Projection {
    /// True when some value below this projection is converted in a way that
    /// could lose it: a `using:` expression or a cast that is not lossless.
    pub fn may_lose_values(&self) -> bool {
        match &self.source {
            Source::Using { .. } => true,
            Source::Cast { from_type, .. } => !is_lossless_cast(from_type, &self.field.data_type),
            Source::Struct { fields, .. } | Source::Transform { fields, .. } => {
                fields.iter().any(Projection::may_lose_values)
            }
            Source::Copy { .. } | Source::Null => false,
        }
    }
    /// True when the values are converted at all (anything but a copy or NULL).
    pub fn converts(&self) -> bool {
        !matches!(self.source, Source::Copy { .. } | Source::Null)
    }
}

/// A rebuild of the table from itself.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rewrite {
    /// The new schema in order, with where each column comes from.
    pub columns: Vec<Projection>,
    pub partitioned_by: Vec<String>,
    /// Live columns (and nested fields, dotted) the rewrite leaves out: their data is lost.
    pub drops: Vec<String>,
    /// The table properties the replace writes in its own statement, for a
    /// backend whose replace keeps none by itself (Databricks, Spark): every
    /// live one, those set outside the spec included, with the spec's
    /// changes, so no interruption after the replace can lose them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub properties: BTreeMap<String, String>,
    /// The liquid clustering the replace writes (`CLUSTER BY`): the declared
    /// one, or the live one's surviving columns. A partitioning → clustering
    /// change is then one replace, its files written clustered once.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_by: Vec<String>,
    /// The table comment the replace writes itself (`COMMENT` in the same
    /// statement), for a backend whose replace keeps none: the declared one,
    /// else the live one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

impl Rewrite {
    /// True when some value could be lost by the conversion (a `using:`
    /// expression, or a cast that is not lossless): such a rewrite is staged
    /// and checked before the original is replaced. Copies, NULLs for new
    /// columns, lossless casts and structs rebuilt by name from those are
    /// written once.
    pub fn converts(&self) -> bool {
        self.columns.iter().any(Projection::may_lose_values)
    }
    /// The top-level columns whose values are converted (checked for NULLs gained).
    pub fn converted_columns(&self) -> impl Iterator<Item = &Projection> {
        self.columns.iter().filter(|p| p.converts())
    }
}

/// A rewrite is one step when it converts nothing (the table is replaced
/// from itself, its data written once), or three when values are converted:
/// stage and check a copy, replace from it, drop it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RewritePhase {
    /// Replace the table from itself in one commit.
    WriteOnce,
    /// Write the converted rows to the staging copy and check them; the original is untouched.
    Stage,
    /// Replace the table from the checked staging copy.
    Replace,
    /// Replace the table from itself, converting every row again and checking
    /// each as the stage checked the copy (for backends whose replace cannot
    /// be conditioned on the version the copy was made from).
    ReplaceChecked,
    /// Remove the staging copy.
    DropStaging,
}

/// The staging copy's table name.
pub fn staging_name(table: &str) -> String {
    format!("{table}__delta_operator_staging")
}

/// The name of the clone taken before a risky step, in the table's schema:
/// `<table>__delta_operator_clone_v{version}`, the version bound when the
/// clone is taken (`bound_clone_name`): a writer's append between plan and
/// apply neither moves the plan id nor misnames the clone.
pub fn clone_name(table: &str) -> String {
    format!("{table}__delta_operator_clone_v{}", super::compile::VERSION)
}

/// A planned clone name with its version bound. Only the trailing placeholder
/// the planner put there is replaced (a table's own name is left as it is).
pub fn bound_clone_name(name: &str, version: Option<u64>) -> String {
    match (name.strip_suffix(super::compile::VERSION), version) {
        (Some(base), Some(v)) => format!("{base}{v}"),
        _ => name.to_string(),
    }
}

/// What a step does, with everything a backend needs to do it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "action")]
pub enum Action {
    CreateTable {
        table: Box<DesiredTable>,
    },
    Claim {
        marker: String,
        /// The record of the declared constraints, set in the same write as the marker.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        constraints: Option<String>,
    },
    SetTableComment {
        comment: String,
    },
    SetProperties {
        properties: BTreeMap<String, String>,
    },
    UnsetProperties {
        keys: Vec<String>,
    },
    SetTableTags {
        tags: BTreeMap<String, String>,
    },
    UnsetTableTags {
        keys: Vec<String>,
    },
    EnableColumnMapping,
    EnableTypeWidening,
    /// `delta.feature.timestampNtz`: widening to timestamp_ntz needs it enabled by hand.
    EnableTimestampNtz,
    AddColumn {
        path: FieldPath,
        field: StructField,
    },
    RenameColumn {
        from: String,
        to: String,
    },
    DropColumn {
        name: String,
    },
    /// Drops a nested struct field in place (column mapping).
    DropField {
        path: FieldPath,
    },
    AlterColumnType {
        path: FieldPath,
        to: DataType,
    },
    DropNotNull {
        path: FieldPath,
    },
    SetNotNull {
        path: FieldPath,
    },
    SetColumnComment {
        path: FieldPath,
        comment: String,
    },
    SetColumnTags {
        column: String,
        tags: BTreeMap<String, String>,
    },
    UnsetColumnTags {
        column: String,
        keys: Vec<String>,
    },
    SetMask {
        column: String,
        mask: Mask,
    },
    SetDefault {
        column: String,
        expression: String,
    },
    AddCheck {
        check: Check,
    },
    DropCheck {
        name: String,
    },
    /// Several CHECKs added in one commit (`Capabilities::checks_in_one_commit`),
    /// every row checked against all of them in one scan.
    AddChecks {
        checks: Vec<Check>,
    },
    /// Several CHECKs dropped in one commit.
    DropChecks {
        names: Vec<String>,
    },
    SetPrimaryKey {
        key: PrimaryKey,
        /// The live key this step drops first (a table has one primary key).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        replaces: Option<PrimaryKey>,
    },
    AddForeignKey {
        key: ForeignKey,
    },
    DropForeignKey {
        key: ForeignKey,
    },
    SetClustering {
        keys: Vec<String>,
    },
    Rewrite {
        rewrite: Rewrite,
        phase: RewritePhase,
    },
    /// A shallow clone of the table as it is (no data copied: the clone
    /// references the table's current files), taken before the first step
    /// that could lose data. `name` is a table in the same schema.
    CloneTable {
        name: String,
    },
    Grant {
        principal: String,
        privileges: Vec<Privilege>,
    },
    Revoke {
        principal: String,
        privileges: Vec<Privilege>,
    },
    SetOwner {
        owner: String,
    },
    DropTable,
    /// Fills a column's NULLs with the spec's `using:` expression, in place
    /// (one UPDATE: every data file holding a NULL is rewritten).
    Backfill {
        column: String,
        expression: String,
    },
    /// Removes what interrupted runs left (re-checked when it runs: only what is still left over).
    RemoveLeftovers {
        leftovers: Vec<Leftover>,
    },
}

/// The properties a claim writes, in one write: the owner marker, and the
/// record of the constraints the spec declares when it declares some.
pub fn claim_properties(
    marker: &str,
    constraints: Option<&str>,
) -> std::collections::BTreeMap<String, String> {
    let mut p = std::collections::BTreeMap::from([(
        crate::model::OWNER_PROPERTY.to_string(),
        marker.to_string(),
    )]);
    if let Some(c) = constraints {
        p.insert(
            crate::model::CONSTRAINTS_PROPERTY.to_string(),
            c.to_string(),
        );
    }
    p
}

impl Action {
    /// True when the step reads every row of the table (a rewrite, or a
    /// change the engine checks against every row): its plan shows the size.
    pub fn scans_table(&self) -> bool {
        match self {
            Action::Rewrite { phase, .. } => *phase != RewritePhase::DropStaging,
            Action::SetNotNull { .. }
            | Action::AddCheck { .. }
            | Action::AddChecks { .. }
            | Action::Backfill { .. } => true,
            _ => false,
        }
    }

    /// The short title a plan shows (`ADD COLUMN status`).
    pub fn title(&self) -> String {
        match self {
            Action::CreateTable { .. } => "CREATE TABLE".into(),
            Action::Claim { .. } => "CLAIM ownership".into(),
            Action::SetTableComment { .. } => "COMMENT ON TABLE".into(),
            Action::SetProperties { properties } => {
                format!("SET TBLPROPERTIES ({})", keys(properties.keys()))
            }
            Action::UnsetProperties { keys: k } => {
                format!("UNSET TBLPROPERTIES ({})", keys(k.iter()))
            }
            Action::SetTableTags { tags } => format!("SET TAGS ({})", keys(tags.keys())),
            Action::UnsetTableTags { keys: k } => format!("UNSET TAGS ({})", keys(k.iter())),
            Action::EnableColumnMapping => "enable columnMapping".into(),
            Action::EnableTypeWidening => "enable typeWidening".into(),
            Action::EnableTimestampNtz => "enable timestampNtz".into(),
            Action::AddColumn { path, .. } => format!("ADD COLUMN {}", path_string(path)),
            Action::RenameColumn { from, to } => format!("RENAME COLUMN {from} TO {to}"),
            Action::DropColumn { name } => format!("DROP COLUMN {name}"),
            Action::DropField { path } => format!("DROP COLUMN {}", path_string(path)),
            Action::AlterColumnType { path, to } => {
                format!("ALTER COLUMN {} TYPE {to}", path_string(path))
            }
            Action::DropNotNull { path } => format!("DROP NOT NULL {}", path_string(path)),
            Action::SetNotNull { path } => format!("SET NOT NULL {}", path_string(path)),
            Action::SetColumnComment { path, .. } => {
                format!("COMMENT ON COLUMN {}", path_string(path))
            }
            Action::SetColumnTags { column, .. } => format!("SET TAGS on {column}"),
            Action::UnsetColumnTags { column, .. } => format!("UNSET TAGS on {column}"),
            Action::SetMask { column, .. } => format!("SET MASK on {column}"),
            Action::SetDefault { column, .. } => format!("SET DEFAULT on {column}"),
            Action::AddCheck { check } => format!("ADD CONSTRAINT {} CHECK", check.name),
            Action::DropCheck { name } => format!("DROP CONSTRAINT {name}"),
            Action::AddChecks { checks } => format!(
                "ADD CONSTRAINTS ({}) CHECK",
                few(checks.iter().map(|c| c.name.as_str()))
            ),
            Action::DropChecks { names } => {
                format!(
                    "DROP CONSTRAINTS ({})",
                    few(names.iter().map(String::as_str))
                )
            }
            Action::SetPrimaryKey {
                key,
                replaces: Some(old),
            } => format!(
                "DROP PRIMARY KEY ({}), ADD PRIMARY KEY ({})",
                old.columns.join(", "),
                key.columns.join(", ")
            ),
            Action::SetPrimaryKey { .. } => "ADD PRIMARY KEY".into(),
            Action::AddForeignKey { key } => format!("ADD FOREIGN KEY → {}", key.references),
            Action::DropForeignKey { key } => format!("DROP FOREIGN KEY → {}", key.references),
            Action::SetClustering { keys: k } if k.is_empty() => "CLUSTER BY NONE".into(),
            Action::SetClustering { keys: k } => format!("CLUSTER BY ({})", k.join(", ")),
            Action::Rewrite {
                phase: RewritePhase::WriteOnce,
                ..
            } => "REPLACE TABLE (from itself)".into(),
            Action::Rewrite {
                phase: RewritePhase::Stage,
                ..
            } => "STAGE rewritten data".into(),
            Action::Rewrite {
                phase: RewritePhase::Replace,
                ..
            } => "REPLACE TABLE (from staging)".into(),
            Action::Rewrite {
                phase: RewritePhase::ReplaceChecked,
                ..
            } => "REPLACE TABLE (from itself, rows checked)".into(),
            Action::Rewrite {
                phase: RewritePhase::DropStaging,
                ..
            } => "DROP staging".into(),
            Action::CloneTable { name } => format!("SHALLOW CLONE to {name}"),
            Action::Grant {
                principal,
                privileges,
            } => format!("GRANT {} TO {principal}", privilege::list(privileges)),
            Action::Revoke {
                principal,
                privileges,
            } => format!("REVOKE {} FROM {principal}", privilege::list(privileges)),
            Action::SetOwner { owner } => format!("SET OWNER {owner}"),
            Action::DropTable => "DROP TABLE".into(),
            Action::RemoveLeftovers { leftovers } => {
                format!("REMOVE leftovers of interrupted runs ({})", leftovers.len())
            }
            Action::Backfill { column, .. } => format!("BACKFILL {column} (UPDATE)"),
        }
    }
}

fn keys<'a>(k: impl Iterator<Item = &'a String>) -> String {
    k.map(String::as_str).collect::<Vec<_>>().join(", ")
}

/// Up to five names, then how many more (a title stays one short line).
fn few<'a>(names: impl ExactSizeIterator<Item = &'a str>) -> String {
    let n = names.len();
    let shown: Vec<&str> = names.take(5).collect();
    if n > shown.len() {
        format!("{}, … {} more", shown.join(", "), n - shown.len())
    } else {
        shown.join(", ")
    }
}

/// One numbered step of a table's plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Step {
    /// 1-based within the table's plan.
    pub number: usize,
    pub class: RiskClass,
    #[serde(flatten)]
    pub action: Action,
    /// Indexes into the table plan's changes that this step serves.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub serves: Vec<usize>,
    /// ⚠ lines: consequences a reviewer must see.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// · lines: helpful context.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// What the backend runs, in order: SQL statements (Databricks) or Delta
    /// operations (the lake), compiled from the observed state the plan was
    /// made from (`compile.rs`). Empty until compiled.
    #[serde(default)]
    pub statements: Vec<super::statement::Statement>,
    /// Checks before and after the statements, each refusing on its finding.
    #[serde(default)]
    pub checks: Vec<StepCheck>,
    /// How to undo it (statements or a command; shown, never run).
    #[serde(default)]
    pub undo: Option<String>,
    /// Bytes the step reads or rewrites, when known.
    #[serde(default)]
    pub est_bytes: Option<u64>,
}
