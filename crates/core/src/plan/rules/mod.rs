//! Laws and safety rules. Laws are checked first and, when one fires, the
//! rules are not (their findings would be noise). Otherwise every rule runs and
//! every failure is reported together: a table's plan is all or nothing.

use serde::{Deserialize, Serialize};

use super::capabilities::{Capabilities, Strategy};
use super::change::{Change, Difference, path_string};
use super::diff::TableDiff;
use super::projection::{NoConversion, conversion};
use crate::model::property::{COLUMN_MAPPING_MODE, ColumnMapping};
use crate::model::{Aspect, DataType, DesiredTable, ObservedTable, Scope, StructField};

mod changes;
mod commits;
mod names;
mod rewrite;

pub use commits::{MAX_CHECK_COMMITS, check_commits};

use changes::{check_create, check_update};
pub use names::check_lookalike_live_tables;
use names::{check_mapping_names, check_substitution};

/// Every law and rule, by its stable name (what the plan, the status reason
/// and the JSON show).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Rule {
    /// Law: the spec spells a live column with other case.
    ColumnSpellingMustMatchCatalog,
    /// Law: the table's owner marker names another resource.
    OwnedByAnotherResource,
    /// Law: the table uses writer features this backend cannot write.
    UnsupportedTableFeatures,
    /// Law: the table exists but its Delta log cannot be read (refused alone: the rest of the plan goes on).
    TableUnreadable,
    /// Law: a streaming table, materialized view or view governed at a scope
    /// wider than `Annotations` (only its maker shapes it).
    ScopeTooWideForKind,
    /// Law: the spec declares an aspect its scope only mirrors, and the table
    /// differs there (one failure per aspect, naming each difference).
    UnmanagedAspectDrift,
    /// Law: a foreign key of the spec cannot hold (its parent is not declared,
    /// not the parent's key, another type or spelling, a cycle): this table is
    /// refused and its dependents blocked; the others go on.
    ForeignKeyInvalid,
    /// The spec moves a primary key that a live foreign key of another table
    /// references: Unity Catalog's DROP PRIMARY KEY is RESTRICT, so the apply
    /// would fail half way. Refused at plan time, naming the foreign key.
    PrimaryKeyReferenced,
    /// `renamedFrom` names a column, but the new name is live too.
    AmbiguousColumnRename,
    /// Identity or generation added to, or changed on, an existing column.
    ColumnKindCannotChange,
    /// A name holding `${`, which Spark's variable substitution rewrites.
    NameWouldBeSubstituted,
    /// A column name Delta refuses without column mapping, on a backend that cannot turn it on.
    NameNeedsColumnMapping,
    /// Something this backend cannot manage at all.
    NotSupportedByBackend,
    /// A NOT NULL column added to a table with rows, with no `using:` to fill it.
    NonNullableColumnAdd,
    /// A type change no conversion is written for automatically.
    ConversionNeedsUsing,
    /// NOT NULL on a nested field, where only a rewrite could set it.
    NestedNotNullNeedsInPlaceAlter,
    /// A property change the table cannot make (column mapping's mode).
    PropertyTransitionNotSupported,
    /// A rewrite or ADD COLUMN of a column-mapped table on a backend that cannot write one.
    ColumnMappingNotWritable,
    /// A `using:` expression that reads a column the live table does not have.
    UsingReadsUnknownColumn,
    /// A rewrite of a table with identity or generated columns, a mask or a row filter.
    RewriteRefused,
    /// The declared table's name is, to a reader, that of a live table of its schema
    /// that no manifest declares (Unicode normalisation, lookalike letters or
    /// invisible characters apart): creating it would leave two tables every
    /// reader takes for one.
    NameLooksLikeLiveTable,
    /// Law: tables, views and functions that depend on each other in a
    /// circle (a view reading itself through another, a mask function reading
    /// the table it masks): no order can create them. Each member is refused,
    /// naming the cycle.
    DependencyCycle,
}

impl Rule {
    pub const ALL: [Rule; 22] = [
        Rule::ColumnSpellingMustMatchCatalog,
        Rule::OwnedByAnotherResource,
        Rule::UnsupportedTableFeatures,
        Rule::TableUnreadable,
        Rule::ScopeTooWideForKind,
        Rule::UnmanagedAspectDrift,
        Rule::ForeignKeyInvalid,
        Rule::PrimaryKeyReferenced,
        Rule::AmbiguousColumnRename,
        Rule::ColumnKindCannotChange,
        Rule::NameWouldBeSubstituted,
        Rule::NameNeedsColumnMapping,
        Rule::NotSupportedByBackend,
        Rule::NonNullableColumnAdd,
        Rule::ConversionNeedsUsing,
        Rule::NestedNotNullNeedsInPlaceAlter,
        Rule::PropertyTransitionNotSupported,
        Rule::ColumnMappingNotWritable,
        Rule::UsingReadsUnknownColumn,
        Rule::RewriteRefused,
        Rule::NameLooksLikeLiveTable,
        Rule::DependencyCycle,
    ];

    /// A law fires alone: the rules are not checked after it (their findings would be noise).
    pub fn is_law(self) -> bool {
        matches!(
            self,
            Rule::ColumnSpellingMustMatchCatalog
                | Rule::OwnedByAnotherResource
                | Rule::UnsupportedTableFeatures
                | Rule::TableUnreadable
                | Rule::UnmanagedAspectDrift
                | Rule::ScopeTooWideForKind
                | Rule::ForeignKeyInvalid
                | Rule::DependencyCycle
        )
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Rule::ColumnSpellingMustMatchCatalog => "ColumnSpellingMustMatchCatalog",
            Rule::OwnedByAnotherResource => "OwnedByAnotherResource",
            Rule::UnsupportedTableFeatures => "UnsupportedTableFeatures",
            Rule::TableUnreadable => "TableUnreadable",
            Rule::UnmanagedAspectDrift => "UnmanagedAspectDrift",
            Rule::ScopeTooWideForKind => "ScopeTooWideForKind",
            Rule::ForeignKeyInvalid => "ForeignKeyInvalid",
            Rule::PrimaryKeyReferenced => "PrimaryKeyReferenced",
            Rule::AmbiguousColumnRename => "AmbiguousColumnRename",
            Rule::ColumnKindCannotChange => "ColumnKindCannotChange",
            Rule::NameWouldBeSubstituted => "NameWouldBeSubstituted",
            Rule::NameNeedsColumnMapping => "NameNeedsColumnMapping",
            Rule::NotSupportedByBackend => "NotSupportedByBackend",
            Rule::NonNullableColumnAdd => "NonNullableColumnAdd",
            Rule::ConversionNeedsUsing => "ConversionNeedsUsing",
            Rule::NestedNotNullNeedsInPlaceAlter => "NestedNotNullNeedsInPlaceAlter",
            Rule::PropertyTransitionNotSupported => "PropertyTransitionNotSupported",
            Rule::ColumnMappingNotWritable => "ColumnMappingNotWritable",
            Rule::UsingReadsUnknownColumn => "UsingReadsUnknownColumn",
            Rule::RewriteRefused => "RewriteRefused",
            Rule::NameLooksLikeLiveTable => "NameLooksLikeLiveTable",
            Rule::DependencyCycle => "DependencyCycle",
        }
    }
}

impl std::fmt::Display for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for Rule {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// One rule that refused the plan, and what would satisfy it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuleFailure {
    /// The rule, by its stable name, e.g. `NonNullableColumnAdd`.
    pub rule: Rule,
    /// What it fired on: a column, a spec field, the table.
    pub subject: String,
    pub message: String,
    pub fix: String,
}

fn fail(
    rule: Rule,
    subject: impl Into<String>,
    message: impl Into<String>,
    fix: impl Into<String>,
) -> RuleFailure {
    RuleFailure {
        rule,
        subject: subject.into(),
        message: message.into(),
        fix: fix.into(),
    }
}

/// How a change will be carried out on this backend.
pub fn strategy_for(change: &Change, caps: &Capabilities) -> Strategy {
    match change {
        Change::RenameColumn { .. } => caps.rename_column,
        Change::DropColumn { .. } | Change::DropField { .. } => caps.drop_column,
        Change::ChangeType { from, to, .. } => {
            if crate::model::widening::can_widen_in_place(from, to) {
                caps.widen_type
            } else {
                caps.convert_type
            }
        }
        Change::SetNullability {
            nullable: false, ..
        } => caps.set_not_null,
        Change::SetPartitioning { .. } => caps.change_partitioning,
        _ => Strategy::InPlace,
    }
}

/// True when the change can only be carried out by rebuilding the table: a
/// rewrite strategy, or a NOT NULL column added to a table with rows (filled
/// by the rewrite from its `using:`).
pub fn needs_rewrite(change: &Change, caps: &Capabilities) -> bool {
    strategy_for(change, caps) == Strategy::Rewrite
        || matches!(change, Change::AddColumn { path, field } if path.len() == 1 && !field.nullable && !caps.backfill_in_place)
}

/// Every failure for one table's diff; empty means the plan is accepted.
pub fn check(
    desired: &DesiredTable,
    observed: Option<&ObservedTable>,
    diff: &TableDiff,
    caps: &Capabilities,
) -> Vec<RuleFailure> {
    // the manifest set's own verdicts on this table come first: nothing of it is planned
    if !desired.refusals.is_empty() {
        return desired
            .refusals
            .iter()
            .map(|r| fail(Rule::ForeignKeyInvalid, &r.path, &r.message, &r.fix))
            .collect();
    }
    // a streaming table, materialized view or view: the annotation scopes only, drift or not
    if let Some(live) = observed
        && !live.kind.is_table()
        && matches!(desired.scope, Scope::Full | Scope::Metadata)
    {
        return vec![fail(
            Rule::ScopeTooWideForKind,
            "spec.scope",
            format!(
                "{} is {}, which its pipeline or definition makes and shapes; scope {} would manage its columns or properties",
                desired.table,
                live.kind.words(),
                desired.scope
            ),
            "set spec.scope: Annotations (comments, tags, grants, owner, masks) or Tags",
        )];
    }
    let laws = check_laws(diff, caps);
    if !laws.is_empty() {
        return laws;
    }
    let mut out = Vec::new();
    for d in &diff.differences {
        match d {
            Difference::RenameConflict { from, to } => out.push(fail(
                Rule::AmbiguousColumnRename,
                to,
                format!("'{to}' is declared renamedFrom '{from}', but both columns are live"),
                format!(
                    "remove renamedFrom from '{to}' (the rename happened), or drop '{to}' first"
                ),
            )),
            Difference::ColumnKindChange { column, what } => out.push(fail(
                Rule::ColumnKindCannotChange,
                column,
                format!("the {what} of an existing column cannot be added or changed"),
                format!("keep the live {what}, or create a new column"),
            )),
            _ => {}
        }
    }
    if caps.substitutes_variables_in_names {
        check_substitution(desired, &mut out);
    }
    if !caps.column_mapping_for_names {
        check_mapping_names(desired, observed, diff, &mut out);
    }
    match observed {
        None => check_create(desired, caps, &mut out),
        Some(live) => check_update(desired, live, diff, caps, &mut out),
    }
    // one failure per finding: two tags the backend cannot keep are one refusal
    let mut seen = Vec::with_capacity(out.len());
    out.retain(|f| {
        let new = !seen.contains(f);
        if new {
            seen.push(f.clone());
        }
        new
    });
    out
}

fn check_laws(diff: &TableDiff, caps: &Capabilities) -> Vec<RuleFailure> {
    let mut out = Vec::new();
    for d in &diff.differences {
        match d {
            Difference::ColumnCaseDrift { declared, live } => out.push(fail(
                Rule::ColumnSpellingMustMatchCatalog,
                declared,
                format!("column '{declared}' is spelled '{live}' in the table"),
                format!("spell it '{live}' in the spec"),
            )),
            Difference::OwnedElsewhere { owner } => out.push(fail(
                Rule::OwnedByAnotherResource,
                "table",
                format!("the table is managed by {owner}"),
                format!("declare it only in {owner}, or delete that resource (deletionPolicy Retain keeps the table) first"),
            )),
            Difference::Unreadable { why } => out.push(fail(
                Rule::TableUnreadable,
                "table",
                format!("the table cannot be read, so nothing is planned for it: {why}"),
                "repair the table's Delta log (the message names the file); every other table is planned as usual",
            )),
            Difference::UnsupportedFeatures { features } => out.push(fail(
                Rule::UnsupportedTableFeatures,
                "table",
                format!("the table uses writer features the {} backend cannot write: {}", caps.backend, features.join(", ")),
                "manage this table with a backend that supports them, or leave it out of the manifests",
            )),
            _ => {}
        }
    }
    out.extend(unmanaged_drift(diff));
    out
}

/// One `UnmanagedAspectDrift` per mirrored aspect that differs, every difference named.
fn unmanaged_drift(diff: &TableDiff) -> Vec<RuleFailure> {
    let mut by_aspect: std::collections::BTreeMap<Aspect, (Scope, Vec<&str>)> = Default::default();
    for d in &diff.differences {
        if let Difference::Unmanaged {
            aspect,
            scope,
            line,
        } = d
        {
            by_aspect
                .entry(*aspect)
                .or_insert((*scope, vec![]))
                .1
                .push(line);
        }
    }
    by_aspect
        .into_iter()
        .map(|(aspect, (scope, lines))| {
            let wider = Scope::ALL
                .into_iter()
                .rev()
                .find(|s| s.manages(aspect))
                .unwrap_or(Scope::Full);
            fail(
                Rule::UnmanagedAspectDrift,
                format!("spec.scope ({aspect})"),
                format!(
                    "scope {scope} does not manage the table's {aspect}, and the table differs from what the spec declares of them: {}",
                    lines.join("; ")
                ),
                format!(
                    "declare what the table has, or leave those {aspect} out of the spec (the tool that owns them keeps them); or set spec.scope: {wider} to let the operator change them"
                ),
            )
        })
        .collect()
}

fn describe_subject(c: &Change) -> String {
    match c {
        Change::RenameColumn { to, .. } => to.clone(),
        Change::DropColumn { column } => column.name.clone(),
        Change::DropField { path, .. } => path_string(path),
        Change::ChangeType { path, .. } | Change::SetNullability { path, .. } => path_string(path),
        Change::SetPartitioning { .. } => "spec.partitionedBy".into(),
        _ => "table".into(),
    }
}

fn verb(c: &Change) -> String {
    match c {
        Change::RenameColumn { .. } => "rename a column".into(),
        Change::DropColumn { .. } => "drop a column".into(),
        Change::DropField { .. } => "drop a nested field".into(),
        Change::ChangeType { from, to, .. } => format!("change a column from {from} to {to}"),
        Change::SetNullability { .. } => "set NOT NULL".into(),
        Change::SetPartitioning { .. } => "change the partitioning".into(),
        other => other.describe(),
    }
}

/// True when the type is one a scalar CAST can produce.
pub fn is_castable_scalar(t: &DataType) -> bool {
    !t.is_nested() && !matches!(t, DataType::Variant | DataType::Void)
}

/// Across tables: a plan that moves a primary key another table's live
/// foreign key references is refused (naming every such key), since the
/// move drops the key first and Unity Catalog refuses that while it is
/// referenced (DROP PRIMARY KEY is RESTRICT). Its dependents are then
/// blocked by `block_dependents`.
pub fn check_referenced_keys(tables: &mut [super::TablePlan], observed: &[&ObservedTable]) {
    for plan in tables.iter_mut().filter(|p| p.is_accepted()) {
        let moved = plan.changes.iter().find_map(|c| match c {
            Change::SetPrimaryKey {
                from: Some(from),
                to,
            } => Some((from.clone(), to.clone())),
            _ => None,
        });
        let Some((from, to)) = moved else {
            continue;
        };
        let referencing: Vec<String> = observed
            .iter()
            .filter(|o| o.table != plan.table)
            .flat_map(|o| {
                o.foreign_keys
                    .iter()
                    .filter(|fk| fk.references == plan.table)
                    .map(move |fk| match &fk.name {
                        Some(n) => {
                            format!("foreign key {n} ({}) on {}", fk.columns.join(", "), o.table)
                        }
                        None => format!("a foreign key ({}) on {}", fk.columns.join(", "), o.table),
                    })
            })
            .collect();
        if referencing.is_empty() {
            continue;
        }
        plan.outcome = super::Outcome::Rejected {
            failures: vec![fail(
                Rule::PrimaryKeyReferenced,
                "spec.constraints.primaryKey",
                format!(
                    "moving the primary key of {} from ({}) to ({}) drops the live one first, which {} {}: the drop would be refused half way through the apply",
                    plan.table,
                    from.columns.join(", "),
                    to.columns.join(", "),
                    referencing.join(", "),
                    if referencing.len() == 1 {
                        "references"
                    } else {
                        "reference"
                    },
                ),
                "remove those foreign keys first (from their tables' specs, or by the tool that made them) and apply; then move the key and declare them again",
            )],
        };
    }
}
