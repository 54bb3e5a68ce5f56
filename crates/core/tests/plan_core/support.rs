//! Builders and readers shared by every topic.

pub use delta_operator_core::testing::*;

use super::*;

pub fn restore() -> String {
    format!("RESTORE TABLE main.sales.orders TO VERSION AS OF {VERSION}")
}

/// The lake has no SQL engine: its undo is the `delta-operator restore` command.
pub fn lake_restore() -> String {
    format!("delta-operator restore main.sales.orders --version {VERSION}")
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
    }
}

pub const ALL_CHANGE_KINDS: [&str; 30] = [
    "CreateTable",
    "Claim",
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

pub const ALL_RULES: [&str; 17] = [
    "TableUnreadable",
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
