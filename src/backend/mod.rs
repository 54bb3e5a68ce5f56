//! Backends read live tables and carry out steps. The planning core never sees
//! them: it sees only `Capabilities` and the observed model.

pub mod lake;

use std::future::Future;

use crate::model::{ObservedTable, SchemaRef, TableRef};
use crate::plan::{Capabilities, Step};

/// A backend failure. `permanent` ones need a human (→ Stalled); the rest are retried.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// The backend refused the step, in its own words.
    #[error("{message}")]
    Refused { message: String },
    /// A rewrite's check failed; the original table is untouched.
    #[error("rewrite check failed: {message}")]
    CheckFailed { message: String },
    /// The backend cannot do this at all (a planning bug if it happens).
    #[error("not supported by the {backend} backend: {what}")]
    Unsupported { backend: String, what: String },
    /// Storage or network trouble; worth retrying.
    #[error("{0}")]
    Transient(String),
    /// The configuration cannot work (a bad root, a missing credential).
    #[error("configuration: {0}")]
    Config(String),
}

impl BackendError {
    pub fn is_permanent(&self) -> bool {
        !matches!(self, BackendError::Transient(_))
    }
}

/// What a step left behind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StepOutcome {
    /// Extra facts for the apply log (rows rewritten, where a dropped table went).
    pub detail: Option<String>,
}

/// Progress reports for long steps ("rewriting: 1.2M rows").
pub type Progress<'a> = &'a (dyn Fn(&str) + Send + Sync);

pub trait Backend: Send + Sync {
    fn capabilities(&self) -> &Capabilities;

    /// The live state of each table, `None` where it does not exist.
    fn read(&self, tables: &[TableRef]) -> impl Future<Output = Result<Vec<Option<ObservedTable>>, BackendError>> + Send;

    /// Every table in a schema (for orphans and `import`).
    fn list_schema(&self, schema: &SchemaRef) -> impl Future<Output = Result<Vec<TableRef>, BackendError>> + Send;

    /// Carries out one step on one table.
    fn run(&self, table: &TableRef, step: &Step, progress: Progress<'_>) -> impl Future<Output = Result<StepOutcome, BackendError>> + Send;

    /// The table's current Delta version: the restore point before a risky step.
    fn version(&self, table: &TableRef) -> impl Future<Output = Result<Option<u64>, BackendError>> + Send;
}
