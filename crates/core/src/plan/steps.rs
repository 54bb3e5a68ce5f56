//! Steps: numbered, typed actions with a risk class. A backend compiles each
//! action; the executor runs them in order.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::compile::StepCheck;
use crate::model::widening::is_lossless_cast;
use crate::model::{DataType, StructField};

/// What a step does: the actions live in `plan::action`, one file per family.
pub use super::action::{Action, claim_properties, size_text};

/// The risk class decides what runs without approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RiskClass {
    /// Upkeep of the table's files and log (compaction, vacuum, checkpoints):
    /// the data is unchanged. The lowest class: runs under policy Auto, waits
    /// for approval under Manual, never runs under Observe.
    Maintenance,
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
            RiskClass::Maintenance => "maintenance",
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
    /// How to undo it, as the backend renders the core's typed undo
    /// (`undo::of_step`) when it compiles the plan: statements or a command;
    /// shown, never run. None before compiling, or when no undo is known.
    #[serde(default)]
    pub undo: Option<String>,
    /// Until when `undo` works, when it is a restore to a version of the
    /// table's history (`undo_window`): shown beside it, never hashed into the
    /// plan id. None before compiling, or for any other undo.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub undo_window: Option<super::undo_window::UndoWindow>,
    /// Bytes the step reads or rewrites, when known.
    #[serde(default)]
    pub est_bytes: Option<u64>,
}
