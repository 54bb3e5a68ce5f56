//! Builders and readers shared by every topic.

pub use delta_operator_core::testing::*;

use super::*;

/// Back to the version the plan read, on every backend (each renders it in
/// its own terms when it compiles the plan).
pub fn restore() -> Option<Undo> {
    Some(Undo::Restore {
        version: Some(VERSION),
    })
}

/// The typed undo of step `s` of `p`: what a backend renders into the
/// step's undo line when it compiles the plan.
pub fn undo_of(p: &TablePlan, s: &Step) -> Option<Undo> {
    let steps = p.steps();
    let i = steps
        .iter()
        .position(|x| x == s)
        .expect("a step of this plan");
    of_step(p.observed.as_deref(), &steps[..i], s)
}

/// An undo by these steps.
pub fn by_steps(steps: Vec<Action>) -> Option<Undo> {
    Some(Undo::Steps { steps })
}

/// The change kind's name; an exhaustive match, so a new `Change` variant
/// does not compile until this file covers it.
pub fn kind(c: &Change) -> &'static str {
    match c {
        Change::CreateTable => "CreateTable",
        Change::Claim { .. } => "Claim",
        Change::SetTableComment { .. } => "SetTableComment",
        Change::SetProperty { .. } => "SetProperty",
        Change::UnsetProperty { .. } => "UnsetProperty",
        Change::SetTableTag { .. } => "SetTableTag",
        Change::UnsetTableTag { .. } => "UnsetTableTag",
        Change::AddColumn { .. } => "AddColumn",
        Change::DropColumn { .. } => "DropColumn",
        Change::DropField { .. } => "DropField",
        Change::RenameColumn { .. } => "RenameColumn",
        Change::ChangeType { .. } => "ChangeType",
        Change::SetNullability { .. } => "SetNullability",
        Change::SetColumnComment { .. } => "SetColumnComment",
        Change::SetColumnTag { .. } => "SetColumnTag",
        Change::UnsetColumnTag { .. } => "UnsetColumnTag",
        Change::SetMask { .. } => "SetMask",
        Change::SetDefault { .. } => "SetDefault",
        Change::DropDefault { .. } => "DropDefault",
        Change::AddCheck { .. } => "AddCheck",
        Change::DropCheck { .. } => "DropCheck",
        Change::SetPrimaryKey { .. } => "SetPrimaryKey",
        Change::AddForeignKey { .. } => "AddForeignKey",
        Change::DropForeignKey { .. } => "DropForeignKey",
        Change::SetPartitioning { .. } => "SetPartitioning",
        Change::SetClustering { .. } => "SetClustering",
        Change::Grant { .. } => "Grant",
        Change::Revoke { .. } => "Revoke",
        Change::SetOwner { .. } => "SetOwner",
        Change::DropTable { .. } => "DropTable",
        Change::RemoveLeftovers { .. } => "RemoveLeftovers",
        Change::SetScope { .. } => "SetScope",
    }
}

pub const ALL_CHANGE_KINDS: [&str; 32] = [
    "CreateTable",
    "Claim",
    "SetScope",
    "SetTableComment",
    "SetProperty",
    "UnsetProperty",
    "SetTableTag",
    "UnsetTableTag",
    "AddColumn",
    "DropColumn",
    "DropField",
    "RenameColumn",
    "ChangeType",
    "SetNullability",
    "SetColumnComment",
    "SetColumnTag",
    "UnsetColumnTag",
    "SetMask",
    "SetDefault",
    "DropDefault",
    "AddCheck",
    "DropCheck",
    "SetPrimaryKey",
    "AddForeignKey",
    "DropForeignKey",
    "SetPartitioning",
    "SetClustering",
    "Grant",
    "Revoke",
    "SetOwner",
    "DropTable",
    "RemoveLeftovers",
];

pub const ALL_RULES: [&str; 19] = [
    "TableUnreadable",
    "ScopeTooWideForKind",
    "UnmanagedAspectDrift",
    "ForeignKeyInvalid",
    "PrimaryKeyReferenced",
    "NameNeedsColumnMapping",
    "ColumnMappingNotWritable",
    "UsingReadsUnknownColumn",
    "ColumnSpellingMustMatchCatalog",
    "OwnedByAnotherResource",
    "UnsupportedTableFeatures",
    "AmbiguousColumnRename",
    "ConversionNeedsUsing",
    "ColumnKindCannotChange",
    "NotSupportedByBackend",
    "NonNullableColumnAdd",
    "NestedNotNullNeedsInPlaceAlter",
    "PropertyTransitionNotSupported",
    "RewriteRefused",
];

/// The operator's record of its constraints on `o` (`CONSTRAINTS_PROPERTY`), naming `entries`.
pub fn owning(o: &mut ObservedTable, entries: &[&str]) {
    o.properties.insert(
        CONSTRAINTS_PROPERTY.to_string(),
        serde_json::to_string(&entries).unwrap(),
    );
}

pub fn scope(schema: &str, mode: SchemaMode) -> SchemaScope {
    SchemaScope {
        schema: SchemaRef {
            catalog: "main".into(),
            schema: schema.into(),
        },
        mode,
        meta: Default::default(),
    }
}

pub fn fk_to(parent: &str) -> ForeignKey {
    ForeignKey {
        name: None,
        columns: vec!["parent_id".into()],
        references: tref(parent),
        referenced_columns: vec!["id".into()],
    }
}
