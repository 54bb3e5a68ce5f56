//! Laws and safety rules. Laws are checked first and, when one fires, the
//! rules are not (their findings would be noise). Otherwise every rule runs and
//! every failure is reported together: a table's plan is all or nothing.

use serde::{Deserialize, Serialize};

use super::capabilities::{Capabilities, Strategy};
use super::change::{Change, Difference, path_string};
use super::diff::TableDiff;
use super::projection::{NoConversion, conversion};
use crate::model::property::{COLUMN_MAPPING_MODE, ColumnMapping};
use crate::model::{DataType, DesiredTable, ObservedTable, StructField};

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
}

impl Rule {
    pub const ALL: [Rule; 18] = [
        Rule::ColumnSpellingMustMatchCatalog,
        Rule::OwnedByAnotherResource,
        Rule::UnsupportedTableFeatures,
        Rule::TableUnreadable,
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
    ];

    /// A law fires alone: the rules are not checked after it (their findings would be noise).
    pub fn is_law(self) -> bool {
        matches!(
            self,
            Rule::ColumnSpellingMustMatchCatalog
                | Rule::OwnedByAnotherResource
                | Rule::UnsupportedTableFeatures
                | Rule::TableUnreadable
                | Rule::ForeignKeyInvalid
        )
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Rule::ColumnSpellingMustMatchCatalog => "ColumnSpellingMustMatchCatalog",
            Rule::OwnedByAnotherResource => "OwnedByAnotherResource",
            Rule::UnsupportedTableFeatures => "UnsupportedTableFeatures",
            Rule::TableUnreadable => "TableUnreadable",
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

/// Every column and nested field name a type holds, as dotted paths.
fn field_names(prefix: &str, t: &DataType, names: &mut Vec<String>) {
    match t {
        DataType::Struct { fields } => {
            for f in fields {
                let path = format!("{prefix}.{}", f.name);
                names.push(path.clone());
                field_names(&path, &f.data_type, names);
            }
        }
        DataType::Array { element, .. } => field_names(prefix, element, names),
        DataType::Map { key, value, .. } => {
            field_names(prefix, key, names);
            field_names(prefix, value, names);
        }
        _ => {}
    }
}

/// Whether a nested field's own name (any depth) satisfies `f`.
fn any_field_name(t: &DataType, f: &impl Fn(&str) -> bool) -> bool {
    match t {
        DataType::Struct { fields } => fields
            .iter()
            .any(|x| f(&x.name) || any_field_name(&x.data_type, f)),
        DataType::Array { element, .. } => any_field_name(element, f),
        DataType::Map { key, value, .. } => any_field_name(key, f) || any_field_name(value, f),
        _ => false,
    }
}

/// Column names with characters Spark refuses unless column mapping is on,
/// on a backend that cannot turn it on for them: refused where the table (as
/// it will be) has no column mapping, for the columns this plan would write.
fn check_mapping_names(
    desired: &DesiredTable,
    observed: Option<&ObservedTable>,
    diff: &TableDiff,
    out: &mut Vec<RuleFailure>,
) {
    let mapped = ColumnMapping::parse(
        desired
            .properties
            .get(COLUMN_MAPPING_MODE)
            .and_then(|v| v.as_deref()),
    )
    .is_enabled()
        || observed.is_some_and(|o| ColumnMapping::of(&o.properties).is_enabled());
    if mapped {
        return;
    }
    let mut names = Vec::new();
    match observed {
        None => {
            for c in &desired.columns {
                names.push(c.name.clone());
                field_names(&c.name, &c.data_type, &mut names);
            }
        }
        Some(_) => {
            for change in &diff.changes {
                match change {
                    Change::AddColumn { path, field } => {
                        let p = path_string(path);
                        names.push(p.clone());
                        field_names(&p, &field.data_type, &mut names);
                    }
                    Change::RenameColumn { to, .. } => names.push(to.clone()),
                    _ => {}
                }
            }
        }
    }
    for name in names {
        let last = name.rsplit('.').next().unwrap_or(&name);
        if let Some(c) = last
            .chars()
            .find(|c| crate::model::names::NEEDS_COLUMN_MAPPING.contains(c))
        {
            out.push(fail(
                Rule::NameNeedsColumnMapping,
                crate::model::names::printable(&name),
                format!("'{}' contains {c:?}, which Delta refuses in a column name unless column mapping is on", crate::model::names::printable(&name)),
                "rename it (letters, digits and '_' are always safe), or create the table with the property delta.columnMapping.mode: name where the backend supports it",
            ));
        }
    }
}

/// Names Spark would rewrite: `${x}` is substituted even inside backticks, and an
/// identifier has no escape for it.
fn check_substitution(desired: &DesiredTable, out: &mut Vec<RuleFailure>) {
    // a dotted path holds '${' only where one of its names does ('.' is neither
    // character): the names are collected only when one does
    let marked = |n: &str| n.contains("${");
    if !marked(&desired.table.table)
        && !desired
            .columns
            .iter()
            .any(|c| marked(&c.name) || any_field_name(&c.data_type, &marked))
    {
        return;
    }
    let mut names = vec![desired.table.table.clone()];
    for c in &desired.columns {
        names.push(c.name.clone());
        field_names(&c.name, &c.data_type, &mut names);
    }
    for name in names.into_iter().filter(|n| n.contains("${")) {
        out.push(fail(
            Rule::NameWouldBeSubstituted,
            &name,
            format!("'{name}' contains '${{': Spark's variable substitution rewrites it even inside backticks, so the name cannot be written as declared"),
            "choose a name without '${' (comments, tags and properties may contain it: literals are escaped)",
        ));
    }
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
    out
}

/// An aspect this backend has no notion of.
fn unsupported(aspect: &str, subject: &str, caps: &Capabilities) -> RuleFailure {
    fail(
        Rule::NotSupportedByBackend,
        subject,
        format!("the {} backend cannot manage {aspect}", caps.backend),
        format!(
            "remove {subject} from the spec, or use a target whose backend supports {aspect} (databricks)"
        ),
    )
}

fn check_create(desired: &DesiredTable, caps: &Capabilities, out: &mut Vec<RuleFailure>) {
    let set_tags =
        |m: &std::collections::BTreeMap<String, Option<String>>| m.values().any(Option::is_some);
    if set_tags(&desired.tags) && !caps.tags {
        out.push(unsupported("tags", "spec.tags", caps));
    }
    if !desired.grants.is_empty() && !caps.grants {
        out.push(unsupported("grants", "spec.grants", caps));
    }
    if desired.owner.is_some() && !caps.owner {
        out.push(unsupported("owners", "spec.owner", caps));
    }
    if desired.cluster_by.as_ref().is_some_and(|k| !k.is_empty()) && !caps.clustering {
        out.push(unsupported("liquid clustering", "spec.clusterBy", caps));
    }
    if (desired.primary_key.is_some() || !desired.foreign_keys.is_empty())
        && !caps.primary_and_foreign_keys
    {
        out.push(unsupported(
            "primary and foreign keys",
            "spec.constraints",
            caps,
        ));
    }
    if !desired.checks.is_empty() && !caps.check_constraints {
        out.push(unsupported("CHECK constraints", "spec.constraints", caps));
    }
    for c in &desired.columns {
        let at = |f: &str| format!("column {}.{f}", c.name);
        if set_tags(&c.tags) && !caps.tags {
            out.push(unsupported("tags", &at("tags"), caps));
        }
        if c.mask.is_some() && !caps.masks {
            out.push(unsupported("column masks", &at("mask"), caps));
        }
        if c.identity.is_some() && !caps.identity_columns {
            out.push(unsupported("identity columns", &at("identity"), caps));
        }
        if c.default.is_some() && !caps.default_values {
            out.push(unsupported("default values", &at("default"), caps));
        }
        if c.generated.is_some() && !caps.generated_columns {
            out.push(unsupported("generated columns", &at("generated"), caps));
        }
    }
}

fn check_update(
    desired: &DesiredTable,
    live: &ObservedTable,
    diff: &TableDiff,
    caps: &Capabilities,
    out: &mut Vec<RuleFailure>,
) {
    let rewriting = diff.changes.iter().any(|c| needs_rewrite(c, caps));
    let mut no_conversion: Vec<(String, NoConversion)> = Vec::new();
    for change in &diff.changes {
        if strategy_for(change, caps) == Strategy::Unsupported {
            out.push(fail(
                Rule::NotSupportedByBackend,
                describe_subject(change),
                format!("the {} backend cannot {}", caps.backend, verb(change)),
                "leave the column as it is live",
            ));
        }
        out.extend(unsupported_aspect(change, caps));
        check_change(desired, live, change, caps, &mut no_conversion, out);
    }
    check_mapped_table_writes(live, diff, rewriting, caps, out);
    // a backfill writes data from a `using:` over the live rows, as a rewrite does
    let backfilling = caps.backfill_in_place
        && diff.changes.iter().any(|c| {
            matches!(c, Change::AddColumn { path, field } if path.len() == 1 && !field.nullable)
        });
    if rewriting || backfilling {
        check_using_reads(desired, live, out);
    }
    conversion_failures(no_conversion, out);
    if rewriting || backfilling {
        check_rewrite_allowed(live, out);
        check_rewrite_keeps_not_null(desired, caps, out);
    }
}

/// A replace that makes every column nullable (`replace_keeps_metadata`
/// false) is followed by SET NOT NULL put-backs; a backend that cannot set
/// NOT NULL in place (OSS Delta) would lose them, so such a rewrite is refused.
fn check_rewrite_keeps_not_null(
    desired: &DesiredTable,
    caps: &Capabilities,
    out: &mut Vec<RuleFailure>,
) {
    if caps.replace_keeps_metadata || caps.set_not_null == Strategy::InPlace {
        return;
    }
    let not_null: Vec<&str> = desired
        .columns
        .iter()
        .filter(|c| !c.nullable)
        .map(|c| c.name.as_str())
        .collect();
    if !not_null.is_empty() {
        out.push(fail(
            Rule::RewriteRefused,
            "table",
            format!(
                "this change rewrites the table, and on the {} backend the replace makes every column nullable with no way to set NOT NULL again in place: {} would lose NOT NULL",
                caps.backend,
                not_null.join(", ")
            ),
            "make the change without a rewrite, declare those columns nullable first, or migrate the data into a new table yourself",
        ));
    }
}

/// A change to an aspect the backend has no notion of (tags, grants, keys, ...).
fn unsupported_aspect(change: &Change, caps: &Capabilities) -> Option<RuleFailure> {
    match change {
        Change::SetTableTag { .. } | Change::UnsetTableTag { .. } if !caps.tags => {
            Some(unsupported("tags", "spec.tags", caps))
        }
        Change::SetColumnTag { column, .. } | Change::UnsetColumnTag { column, .. }
            if !caps.tags =>
        {
            Some(unsupported("tags", &format!("column {column}.tags"), caps))
        }
        Change::Grant { .. } | Change::Revoke { .. } if !caps.grants => {
            Some(unsupported("grants", "spec.grants", caps))
        }
        Change::SetOwner { .. } if !caps.owner => Some(unsupported("owners", "spec.owner", caps)),
        Change::SetMask { column, .. } if !caps.masks => Some(unsupported(
            "column masks",
            &format!("column {column}.mask"),
            caps,
        )),
        Change::SetDefault { column, .. } | Change::DropDefault { column, .. }
            if !caps.default_values =>
        {
            Some(unsupported(
                "default values",
                &format!("column {column}.default"),
                caps,
            ))
        }
        Change::SetPrimaryKey { .. }
        | Change::AddForeignKey { .. }
        | Change::DropForeignKey { .. }
            if !caps.primary_and_foreign_keys =>
        {
            Some(unsupported(
                "primary and foreign keys",
                "spec.constraints",
                caps,
            ))
        }
        Change::SetClustering { .. } if !caps.clustering => {
            Some(unsupported("liquid clustering", "spec.clusterBy", caps))
        }
        Change::AddCheck { .. } | Change::DropCheck { .. } if !caps.check_constraints => {
            Some(unsupported("CHECK constraints", "spec.constraints", caps))
        }
        _ => None,
    }
}

/// What one change would break on this table, beyond the backend's aspects;
/// a type change the rewrite cannot convert by itself is noted in
/// `no_conversion`, reported after the table-wide checks.
fn check_change(
    desired: &DesiredTable,
    live: &ObservedTable,
    change: &Change,
    caps: &Capabilities,
    no_conversion: &mut Vec<(String, NoConversion)>,
    out: &mut Vec<RuleFailure>,
) {
    match change {
        Change::AddColumn { path, field } => check_add_column(desired, path, field, caps, out),
        Change::ChangeType { path, .. } if strategy_for(change, caps) == Strategy::Rewrite => {
            note_missing_conversion(desired, live, path, no_conversion)
        }
        Change::SetNullability {
            path,
            nullable: false,
        } if path.len() > 1 && strategy_for(change, caps) == Strategy::Rewrite => {
            out.push(fail(
                Rule::NestedNotNullNeedsInPlaceAlter,
                path_string(path),
                format!(
                    "the {} backend cannot prove a nested field has no NULLs during a rewrite",
                    caps.backend
                ),
                "keep the nested field nullable",
            ));
        }
        Change::SetProperty { key, from, to } if key == COLUMN_MAPPING_MODE => {
            let from = from.as_deref().unwrap_or("none");
            if !(from == "none" && to == "name" && caps.column_mapping_on_existing_tables) {
                out.push(fail(
                    Rule::PropertyTransitionNotSupported,
                    format!("spec.properties.{key}"),
                    format!("{COLUMN_MAPPING_MODE} cannot change from '{from}' to '{to}' on an existing table{}", if caps.column_mapping_on_existing_tables { String::new() } else { format!(" on the {} backend (only at create)", caps.backend) }),
                    format!("keep '{from}'"),
                ));
            }
        }
        Change::UnsetProperty { key, .. } if key == COLUMN_MAPPING_MODE => out.push(fail(
            Rule::PropertyTransitionNotSupported,
            format!("spec.properties.{key}"),
            "column mapping cannot be turned off again",
            "remove the `null` for this key",
        )),
        _ => {}
    }
}

/// A column added to a table that has rows: NOT NULL needs `using:`, and
/// identity, generated, masked or tagged columns need what the backend allows.
fn check_add_column(
    desired: &DesiredTable,
    path: &[String],
    field: &StructField,
    caps: &Capabilities,
    out: &mut Vec<RuleFailure>,
) {
    let using = desired.column(&path[0]).and_then(|c| c.using.as_ref());
    if !field.nullable && (path.len() > 1 || using.is_none()) {
        out.push(fail(
            Rule::NonNullableColumnAdd,
            path_string(path),
            "a NOT NULL column cannot be added to a table that has rows: they would have no value",
            "add it nullable first; or, for a top-level column, declare `using:` with the SQL that fills existing rows",
        ));
    }
    let column = desired.column(&path[0]);
    if path.len() == 1 && column.is_some_and(|c| c.generated.is_some() || c.identity.is_some()) {
        out.push(fail(
            Rule::ColumnKindCannotChange,
            path_string(path),
            "identity and generated columns can only be declared when the table is created",
            "add it as a plain column, or recreate the table",
        ));
    }
    if path.len() == 1 && column.is_some_and(|c| c.mask.is_some()) && !caps.masks {
        out.push(unsupported(
            "column masks",
            &format!("column {}.mask", path[0]),
            caps,
        ));
    }
    if path.len() == 1 && column.is_some_and(|c| c.tags.values().any(Option::is_some)) && !caps.tags
    {
        out.push(unsupported(
            "tags",
            &format!("column {}.tags", path[0]),
            caps,
        ));
    }
}

/// For a type change made by rewriting, the column whose new value no
/// automatic conversion builds (and that declares no `using:`), once a column.
fn note_missing_conversion(
    desired: &DesiredTable,
    live: &ObservedTable,
    path: &[String],
    no_conversion: &mut Vec<(String, NoConversion)>,
) {
    let Some(d) = desired.column(&path[0]) else {
        return;
    };
    let Some(l) = crate::plan::diff::matching_live(d, live) else {
        return;
    };
    if d.using.is_some() || no_conversion.iter().any(|(c, _)| c == &d.name) {
        return;
    }
    if let Err(e) = conversion(
        &d.name,
        &l.name,
        &l.data_type,
        &d.data_type,
        &mut Vec::new(),
    ) {
        no_conversion.push((d.name.clone(), e));
    }
}

/// A column-mapped table the backend cannot rewrite or add columns to.
fn check_mapped_table_writes(
    live: &ObservedTable,
    diff: &TableDiff,
    rewriting: bool,
    caps: &Capabilities,
    out: &mut Vec<RuleFailure>,
) {
    let mapping = ColumnMapping::of(&live.properties);
    if mapping.is_enabled() && !caps.column_mapped_schema_changes {
        let adds = diff
            .changes
            .iter()
            .any(|c| matches!(c, Change::AddColumn { .. }));
        if rewriting || adds {
            let what = if rewriting {
                "rewrite it"
            } else {
                "add columns to it"
            };
            out.push(fail(
                Rule::ColumnMappingNotWritable,
                "table",
                format!("the table uses column mapping ({COLUMN_MAPPING_MODE} = {mapping}), and the {} backend cannot {what}: delta-rs cannot write physical column names", caps.backend),
                "make this change with Spark or Databricks, or leave it out of the spec",
            ));
        }
    }
}

/// With a rewrite, every `using:` reads columns the live table has.
fn check_using_reads(desired: &DesiredTable, live: &ObservedTable, out: &mut Vec<RuleFailure>) {
    for c in desired.columns.iter().filter(|c| c.using.is_some()) {
        for read in &c.using_columns {
            if live.column(read).is_none() {
                out.push(fail(
                    Rule::UsingReadsUnknownColumn,
                    format!("column {}.using", c.name),
                    format!(
                        "`using: {}` reads '{read}', which is not a column of the live table",
                        c.using.as_deref().unwrap_or_default()
                    ),
                    format!(
                        "use the live names: {}",
                        live.columns
                            .iter()
                            .map(|l| l.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            }
        }
    }
}

/// The type changes noted by `note_missing_conversion`, one failure a column.
fn conversion_failures(no_conversion: Vec<(String, NoConversion)>, out: &mut Vec<RuleFailure>) {
    for (column, e) in no_conversion {
        out.push(fail(
            Rule::ConversionNeedsUsing,
            e.path.clone(),
            format!("no conversion is written automatically: {} (structs are rebuilt by field name, arrays of structs element by element, scalars cast; nothing else is guessed)", e.why),
            format!("declare `using:` on column '{column}' with the SQL that builds the new value from the live row"),
        ));
    }
}

/// A table whose identity, generated or masked columns or row filter a
/// rewrite would lose is never rewritten.
fn check_rewrite_allowed(live: &ObservedTable, out: &mut Vec<RuleFailure>) {
    let mut why = Vec::new();
    if live.columns.iter().any(|c| c.identity.is_some()) {
        why.push("identity columns");
    }
    if live.columns.iter().any(|c| c.generated.is_some()) {
        why.push("generated columns");
    }
    if live.columns.iter().any(|c| c.mask.is_some()) {
        why.push("a column mask");
    }
    if live.row_filter.is_some() {
        why.push("a row filter");
    }
    if !why.is_empty() {
        out.push(fail(
            Rule::RewriteRefused,
            "table",
            format!("this change rewrites the table's data (a rebuild, or a backfill from `using:`), and a table with {} is never rewritten: they would come back as plain columns or unprotected data, or be filled from masked values", why.join(", ")),
            "make the change without a rewrite, or migrate the data into a new table yourself",
        ));
    }
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
