//! Assumption probes for `delta-operator verify`: each one checks, on a live
//! target, one behaviour our plans rely on.
//!
//! - [`databricks`]: in a scratch schema of a Databricks workspace (the 24 probes
//!   listed in docs/architecture.md §9, then one per assumption of
//!   `Capabilities::databricks()`, the rules and the SQL we compile);
//! - [`spark`]: on scratch tables of a Spark Connect target (OSS Delta on Spark);
//! - [`outcome`]: what a probe found (held, differed, unknown), shared by both;
//! - [`report`]: the run's report, as JSON and as the summary table;
//! - [`nested`]: the nested-types probe's table, row, steps and read-back check,
//!   run on both kinds of target.
//!
//! The probes run statements; the parts that only compare what was expected with
//! what was observed are plain functions, tested here without a warehouse.

// A probe's verdict is `Ok(outcome)` or `Err(outcome)`, so `?` ends a probe early
// with what it found; a few hundred bytes per probe, dozens of probes a run.
#![allow(clippy::result_large_err)]

pub mod databricks;
pub mod nested;
pub mod outcome;
pub mod report;
pub mod spark;

pub use outcome::{Finding, Flags, Status, Verdict, Words, differed, held, unknown};

/// A type as the probes spell it in DDL (`"map<string,int>"`); the spellings are
/// the probes' own, so one that does not parse is a bug in a probe.
pub(crate) fn ty(s: &str) -> delta_operator_core::model::DataType {
    delta_operator_core::model::type_syntax::parse_type(s)
        .unwrap_or_else(|e| panic!("probe type '{s}': {e}"))
}
