//! Builders and readers shared by every topic.

use super::*;

pub const SIZE: u64 = 412_000_000_000;
pub const VERSION: u64 = 7;

pub fn tref(name: &str) -> TableRef {
    TableRef::new("main", "sales", name)
}

pub fn ty(s: &str) -> DataType {
    parse_type(s).unwrap_or_else(|e| panic!("bad type {s:?} in a test: {e}"))
}

pub fn marker(name: &str) -> String {
    format!("sales/{name}")
}

/// A nullable declared column with nothing else declared.
pub fn col(name: &str, t: &str) -> DesiredColumn {
    DesiredColumn::new(name, ty(t), true)
}

pub fn not_null(mut c: DesiredColumn) -> DesiredColumn {
    c.nullable = false;
    c
}

/// A nullable live column.
pub fn ocol(name: &str, t: &str) -> ObservedColumn {
    ObservedColumn::new(name, ty(t), true)
}

pub fn onot_null(mut c: ObservedColumn) -> ObservedColumn {
    c.nullable = false;
    c
}

/// A declared table owned by `sales/<name>`, silent about everything but its columns.
pub fn desired(name: &str, columns: Vec<DesiredColumn>) -> DesiredTable {
    DesiredTable::new(tref(name), &marker(name), columns)
}

/// A live table carrying `sales/<name>` as its owner marker, at VERSION, SIZE bytes.
pub fn live(name: &str, columns: Vec<ObservedColumn>) -> ObservedTable {
    ObservedTable {
        properties: BTreeMap::from([(OWNER_PROPERTY.to_string(), marker(name))]),
        version: Some(VERSION),
        size_bytes: Some(SIZE),
        ..ObservedTable::new(tref(name), columns)
    }
}

/// `orders` as declared and as live, identical: `id bigint not null, amount int, note string`.
pub fn orders() -> (DesiredTable, ObservedTable) {
    let d = desired(
        "orders",
        vec![
            not_null(col("id", "bigint")),
            col("amount", "int"),
            col("note", "string"),
        ],
    );
    let o = live(
        "orders",
        vec![
            onot_null(ocol("id", "bigint")),
            ocol("amount", "int"),
            ocol("note", "string"),
        ],
    );
    (d, o)
}

pub fn dcol<'a>(d: &'a mut DesiredTable, name: &str) -> &'a mut DesiredColumn {
    d.columns
        .iter_mut()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no declared column {name}"))
}

pub fn lcol<'a>(o: &'a mut ObservedTable, name: &str) -> &'a mut ObservedColumn {
    o.columns
        .iter_mut()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no live column {name}"))
}

pub fn lake() -> Capabilities {
    Capabilities::lake()
}

pub fn dbx() -> Capabilities {
    Capabilities::databricks()
}

/// `1. TITLE [class]` for every step, as a reviewer reads them.
pub fn steps(p: &TablePlan) -> Vec<String> {
    p.steps()
        .iter()
        .map(|s| format!("{}. {} [{}]", s.number, s.action.title(), s.class))
        .collect()
}

pub fn failures(p: &TablePlan) -> Vec<String> {
    match &p.outcome {
        Outcome::Rejected { failures } => failures.iter().map(|f| f.rule.to_string()).collect(),
        _ => vec![],
    }
}

pub fn failure<'a>(p: &'a TablePlan, rule: &str) -> &'a delta_operator_core::plan::RuleFailure {
    match &p.outcome {
        Outcome::Rejected { failures } => failures
            .iter()
            .find(|f| f.rule == rule)
            .unwrap_or_else(|| panic!("no {rule} in {failures:#?}")),
        other => panic!("expected a rejection with {rule}, got {other:#?}"),
    }
}

pub fn step<'a>(p: &'a TablePlan, title: &str) -> &'a delta_operator_core::plan::Step {
    p.steps()
        .iter()
        .find(|s| s.action.title() == title)
        .unwrap_or_else(|| panic!("no step {title:?} in {:#?}", steps(p)))
}

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
