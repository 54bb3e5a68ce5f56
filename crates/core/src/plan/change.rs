//! The diff's vocabulary: typed changes carrying both sides, and differences
//! that no change can fix (they always become rule failures).

use serde::{Deserialize, Serialize};

use crate::model::privilege::{self, Privilege};
use crate::model::property::OPERATOR_PREFIX;
use crate::model::{
    Aspect, Check, DataType, ForeignKey, Leftover, LeftoverKind, Mask, ObservedColumn, PrimaryKey,
    Scope, StructField,
};

/// A path to a column or nested struct field, outermost first:
/// `["address", "city"]`. Written as that list in JSON; reads as a slice.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct FieldPath(Vec<String>);

impl FieldPath {
    /// A top-level column.
    pub fn column(name: &str) -> Self {
        FieldPath(vec![name.to_string()])
    }

    /// The path of a field inside this one.
    pub fn child(&self, name: &str) -> Self {
        let mut parts = self.0.clone();
        parts.push(name.to_string());
        FieldPath(parts)
    }
}

impl std::ops::Deref for FieldPath {
    type Target = [String];
    fn deref(&self) -> &[String] {
        &self.0
    }
}

impl std::ops::DerefMut for FieldPath {
    fn deref_mut(&mut self) -> &mut [String] {
        &mut self.0
    }
}

impl From<Vec<String>> for FieldPath {
    fn from(parts: Vec<String>) -> Self {
        FieldPath(parts)
    }
}

impl FromIterator<String> for FieldPath {
    fn from_iter<I: IntoIterator<Item = String>>(iter: I) -> Self {
        FieldPath(iter.into_iter().collect())
    }
}

/// `address.city`.
impl std::fmt::Display for FieldPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&path_string(self))
    }
}

pub fn path_string(path: &[String]) -> String {
    path.join(".")
}

/// Why a table is dropped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DropReason {
    /// Its spec is gone and its schema is strict.
    Orphan,
    /// Its resource was deleted with `deletionPolicy: Delete`.
    Deleted,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Change {
    CreateTable,
    /// The table exists without an owner marker; the spec takes it over.
    Claim {
        marker: String,
        /// The record of the constraints the spec declares
        /// (`CONSTRAINTS_PROPERTY`), claimed with the table in the same write.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        constraints: Option<String>,
        /// The scope the spec governs the table at (recorded on the table
        /// below `Full`, so a later wider spec is a visible change of scope).
        #[serde(default, skip_serializing_if = "Scope::is_full")]
        scope: Scope,
    },
    /// The spec governs a table the operator already holds at another scope.
    SetScope {
        from: Scope,
        to: Scope,
    },
    SetTableComment {
        from: Option<String>,
        to: String,
    },
    SetProperty {
        key: String,
        from: Option<String>,
        to: String,
    },
    UnsetProperty {
        key: String,
        from: String,
    },
    SetTableTag {
        key: String,
        from: Option<String>,
        to: String,
    },
    UnsetTableTag {
        key: String,
        from: String,
    },
    /// `path` is the new field's full path; its parent exists.
    AddColumn {
        path: FieldPath,
        field: StructField,
    },
    DropColumn {
        column: ObservedColumn,
    },
    /// A struct field the spec no longer declares (`path` is its full path).
    DropField {
        path: FieldPath,
        field: StructField,
    },
    RenameColumn {
        from: String,
        to: String,
    },
    ChangeType {
        path: FieldPath,
        from: DataType,
        to: DataType,
    },
    SetNullability {
        path: FieldPath,
        nullable: bool,
    },
    SetColumnComment {
        path: FieldPath,
        from: Option<String>,
        to: String,
    },
    SetColumnTag {
        column: String,
        key: String,
        from: Option<String>,
        to: String,
    },
    UnsetColumnTag {
        column: String,
        key: String,
        from: String,
    },
    SetMask {
        column: String,
        from: Option<Mask>,
        to: Mask,
    },
    SetDefault {
        column: String,
        from: Option<String>,
        to: String,
    },
    /// The spec's `default: null`: the live default goes (rows keep their values).
    DropDefault {
        column: String,
        from: String,
    },
    AddCheck {
        check: Check,
    },
    DropCheck {
        check: Check,
    },
    SetPrimaryKey {
        from: Option<PrimaryKey>,
        to: PrimaryKey,
    },
    AddForeignKey {
        key: ForeignKey,
    },
    DropForeignKey {
        key: ForeignKey,
    },
    SetPartitioning {
        from: Vec<String>,
        to: Vec<String>,
    },
    SetClustering {
        from: Option<Vec<String>>,
        to: Vec<String>,
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
        from: Option<String>,
        to: String,
    },
    DropTable {
        reason: DropReason,
        columns: usize,
    },
    /// What interrupted runs left beside the table (staging copies, uncommitted files).
    RemoveLeftovers {
        leftovers: Vec<Leftover>,
    },
}

impl Change {
    /// The aspect of the table the change touches, which a scope manages or
    /// mirrors; None for the table as a whole and the operator's bookkeeping
    /// (its claim, scope and records, leftovers of its runs).
    pub fn aspect(&self) -> Option<Aspect> {
        use Change::*;
        Some(match self {
            CreateTable | Claim { .. } | SetScope { .. } | DropTable { .. } => return None,
            RemoveLeftovers { .. } => return None,
            SetProperty { key, .. } | UnsetProperty { key, .. }
                if key.starts_with(OPERATOR_PREFIX) =>
            {
                return None;
            }
            SetProperty { .. } | UnsetProperty { .. } => Aspect::Properties,
            SetTableComment { .. } | SetColumnComment { .. } => Aspect::Comments,
            SetTableTag { .. }
            | UnsetTableTag { .. }
            | SetColumnTag { .. }
            | UnsetColumnTag { .. } => Aspect::Tags,
            AddColumn { .. } | DropColumn { .. } | DropField { .. } | RenameColumn { .. } => {
                Aspect::Columns
            }
            ChangeType { .. } | SetNullability { .. } | SetDefault { .. } | DropDefault { .. } => {
                Aspect::Columns
            }
            SetMask { .. } | Grant { .. } | Revoke { .. } | SetOwner { .. } => Aspect::Access,
            AddCheck { .. } | DropCheck { .. } | SetPrimaryKey { .. } => Aspect::Constraints,
            AddForeignKey { .. } | DropForeignKey { .. } => Aspect::Constraints,
            SetPartitioning { .. } | SetClustering { .. } => Aspect::Layout,
        })
    }

    /// `+`, `~`, `-` or `→`, as the text renderer marks it.
    pub fn marker(&self) -> &'static str {
        match self {
            Change::CreateTable
            | Change::AddColumn { .. }
            | Change::AddCheck { .. }
            | Change::AddForeignKey { .. }
            | Change::Grant { .. } => "+",
            Change::DropColumn { .. }
            | Change::DropField { .. }
            | Change::DropCheck { .. }
            | Change::DropForeignKey { .. }
            | Change::Revoke { .. }
            | Change::DropTable { .. }
            | Change::UnsetProperty { .. }
            | Change::UnsetTableTag { .. }
            | Change::UnsetColumnTag { .. }
            | Change::RemoveLeftovers { .. } => "-",
            Change::RenameColumn { .. } => "→",
            _ => "~",
        }
    }

    /// One line describing the change, both sides where it has them.
    pub fn describe(&self) -> String {
        fn opt(s: &Option<String>) -> String {
            s.as_deref()
                .map_or("(none)".to_string(), |v| format!("'{v}'"))
        }
        match self {
            Change::CreateTable => "new table".into(),
            Change::Claim {
                marker,
                constraints,
                scope,
            } => {
                let with = constraints
                    .as_ref()
                    .map(|c| format!(", and the constraints the spec declares: {c}"))
                    .unwrap_or_default();
                match scope {
                    Scope::Full => format!(
                        "ownership — the operator manages this table from now on ({marker}){with}"
                    ),
                    narrow => format!(
                        "governance at scope {narrow} — the operator manages its {} from now on and never drops it ({marker})",
                        aspects(*narrow)
                    ),
                }
            }
            Change::SetScope { from, to } => format!(
                "scope {from} → {to}: the spec now manages its {}",
                aspects(*to)
            ),
            Change::SetTableComment { from, to } => format!("table comment {} → '{to}'", opt(from)),
            Change::SetProperty { key, from, to } => {
                format!("property {key} {} → '{to}'", opt(from))
            }
            Change::UnsetProperty { key, from } => format!("property {key} '{from}' removed"),
            Change::SetTableTag { key, from, to } => format!("tag {key} {} → '{to}'", opt(from)),
            Change::UnsetTableTag { key, from } => format!("tag {key} '{from}' removed"),
            Change::AddColumn { path, field } => {
                format!(
                    "{} {}{}",
                    path_string(path),
                    field.data_type,
                    if field.nullable { "" } else { " not null" }
                )
            }
            Change::DropColumn { column } => format!("{} {}", column.name, column.data_type),
            Change::DropField { path, field } => {
                format!("{} {}", path_string(path), field.data_type)
            }
            Change::RenameColumn { from, to } => format!("{to} (was {from})"),
            Change::ChangeType { path, from, to } => {
                format!("{}  {from} → {to}", path_string(path))
            }
            Change::SetNullability { path, nullable } => {
                let what = if *nullable {
                    "NOT NULL → nullable"
                } else {
                    "nullable → NOT NULL"
                };
                format!("{}  {what}", path_string(path))
            }
            Change::SetColumnComment { path, from, to } => {
                format!("{}  comment {} → '{to}'", path_string(path), opt(from))
            }
            Change::SetColumnTag {
                column,
                key,
                from,
                to,
            } => format!("{column}  tag {key} {} → '{to}'", opt(from)),
            Change::UnsetColumnTag { column, key, from } => {
                format!("{column}  tag {key} '{from}' removed")
            }
            Change::SetMask { column, to, .. } => format!("{column}  mask {}", to.function),
            Change::SetDefault { column, from, to } => {
                format!("{column}  default {} → {to}", opt(from))
            }
            Change::DropDefault { column, from } => format!("{column}  default {from} removed"),
            Change::AddCheck { check } => {
                format!("constraint CHECK ({}) {}", check.expression, check.name)
            }
            Change::DropCheck { check } => {
                format!("constraint CHECK ({}) {}", check.expression, check.name)
            }
            Change::SetPrimaryKey { to, .. } => format!("primary key ({})", to.columns.join(", ")),
            Change::AddForeignKey { key } | Change::DropForeignKey { key } => {
                format!(
                    "foreign key ({}) → {} ({})",
                    key.columns.join(", "),
                    key.references,
                    key.referenced_columns.join(", ")
                )
            }
            Change::SetPartitioning { from, to } => {
                format!("partitioned by ({}) → ({})", from.join(", "), to.join(", "))
            }
            Change::SetClustering { from, to } => {
                format!(
                    "clustered by ({}) → ({})",
                    from.clone().unwrap_or_default().join(", "),
                    to.join(", ")
                )
            }
            Change::Grant {
                principal,
                privileges,
            } => format!("grant {} to {principal}", privilege::list(privileges)),
            Change::Revoke {
                principal,
                privileges,
            } => format!("revoke {} from {principal}", privilege::list(privileges)),
            Change::SetOwner { from, to } => format!("owner {} → {to}", opt(from)),
            Change::RemoveLeftovers { leftovers } => describe_leftovers(leftovers),
            Change::DropTable { reason, columns } => describe_drop(reason, *columns),
        }
    }
}

/// `comments, tags and access`: what a scope manages, in words.
fn aspects(scope: Scope) -> String {
    let names: Vec<&str> = scope.managed().into_iter().map(Aspect::as_str).collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => names.join(""),
    }
}

/// What interrupted runs left, in a line.
fn describe_leftovers(leftovers: &[Leftover]) -> String {
    let what: Vec<String> = leftovers
        .iter()
        .map(|l| match l.kind {
            LeftoverKind::StagingCopy => {
                format!("a staging copy of run {} ({} files)", l.run, l.files)
            }
            LeftoverKind::UncommittedFiles => {
                format!("{} uncommitted files of run {}", l.files, l.run)
            }
        })
        .collect();
    format!("left by interrupted runs: {}", what.join(", "))
}

/// Why a whole table is dropped.
fn describe_drop(reason: &DropReason, columns: usize) -> String {
    match reason {
        DropReason::Orphan => {
            format!("{columns} columns — its spec is gone and the schema is strict")
        }
        DropReason::Deleted => {
            format!("{columns} columns — its resource was deleted with deletionPolicy Delete")
        }
    }
}

/// A difference no action can fix: always rejected, with the reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Difference {
    /// The spec spells a live column with different case.
    ColumnCaseDrift { declared: String, live: String },
    /// `renamedFrom` names a column, but the new name is live too.
    RenameConflict { from: String, to: String },
    /// Identity or generation cannot be added to or changed on an existing column.
    ColumnKindChange { column: String, what: String },
    /// The table is owned by another resource.
    OwnedElsewhere { owner: String },
    /// The table uses writer features this backend cannot write.
    UnsupportedFeatures { features: Vec<String> },
    /// The table exists but cannot be read (a broken Delta log).
    Unreadable { why: String },
    /// The spec declares an aspect its scope only mirrors, and the table differs (one line per difference).
    Unmanaged {
        aspect: Aspect,
        scope: Scope,
        line: String,
    },
}
