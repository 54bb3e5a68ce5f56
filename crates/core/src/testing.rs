//! Builders for tests, in this crate and others (the `testing` feature):
//! tables and columns in a few words, the two backends' capabilities, and
//! readers of a plan as a reviewer reads it. Every table lives in
//! `main.sales` and is owned by `sales/<name>`; a live one is at [`VERSION`]
//! and [`SIZE`] bytes.

use std::collections::BTreeMap;

use crate::model::type_syntax::parse_type;
use crate::model::{
    DataType, DesiredColumn, DesiredTable, OWNER_PROPERTY, ObservedColumn, ObservedTable, TableRef,
};
use crate::plan::{Capabilities, Outcome, TablePlan};

/// The size in bytes every live table reports.
pub const SIZE: u64 = 412_000_000_000;
/// The Delta version every live table is at.
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

pub fn failure<'a>(p: &'a TablePlan, rule: &str) -> &'a crate::plan::RuleFailure {
    match &p.outcome {
        Outcome::Rejected { failures } => failures
            .iter()
            .find(|f| f.rule == rule)
            .unwrap_or_else(|| panic!("no {rule} in {failures:#?}")),
        other => panic!("expected a rejection with {rule}, got {other:#?}"),
    }
}

pub fn step<'a>(p: &'a TablePlan, title: &str) -> &'a crate::plan::Step {
    p.steps()
        .iter()
        .find(|s| s.action.title() == title)
        .unwrap_or_else(|| panic!("no step {title:?} in {:#?}", steps(p)))
}
