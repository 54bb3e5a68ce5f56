//! Backends read live tables and carry out steps. The planning core never sees
//! them: it sees only `Capabilities` and the observed model.

pub mod databricks;
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

/// The backend a target names: the embedded lake or a Databricks workspace.
/// (An enum, not a trait object: the trait's methods return `impl Future`.)
pub enum AnyBackend {
    Lake(lake::LakeBackend),
    Databricks(databricks::DatabricksBackend),
}

impl AnyBackend {
    /// Opens the backend of a config target; `writer` names the operator in lake commits.
    pub fn open(target: &crate::config::Target, writer: Option<&str>) -> Result<Self, BackendError> {
        match (&target.lake, &target.databricks) {
            (Some(l), _) => {
                let lake = lake::LakeBackend::open(&l.root)?;
                Ok(AnyBackend::Lake(match writer {
                    Some(w) => lake.with_writer(w),
                    None => lake,
                }))
            }
            (None, Some(d)) => Ok(AnyBackend::Databricks(databricks::DatabricksBackend::from_target(d)?)),
            (None, None) => Err(BackendError::Config("the target names no backend".into())),
        }
    }

    /// What a call is waiting for before it can run, if anything ("warehouse … starting").
    pub fn waiting_for(&self) -> Option<String> {
        match self {
            AnyBackend::Lake(_) => None,
            AnyBackend::Databricks(d) => d.client().warehouse_waiting().map(|state| format!("warehouse {} is starting ({state})", d.client().config().warehouse_id)),
        }
    }

    /// Cancels what is running, where the backend can (Databricks statements).
    pub async fn cancel(&self) -> Option<String> {
        match self {
            AnyBackend::Lake(_) => None,
            AnyBackend::Databricks(d) => Some(d.cancel().await),
        }
    }
}

impl Backend for AnyBackend {
    fn capabilities(&self) -> &Capabilities {
        match self {
            AnyBackend::Lake(b) => b.capabilities(),
            AnyBackend::Databricks(b) => b.capabilities(),
        }
    }

    async fn read(&self, tables: &[TableRef]) -> Result<Vec<Option<ObservedTable>>, BackendError> {
        match self {
            AnyBackend::Lake(b) => b.read(tables).await,
            AnyBackend::Databricks(b) => b.read(tables).await,
        }
    }

    async fn list_schema(&self, schema: &SchemaRef) -> Result<Vec<TableRef>, BackendError> {
        match self {
            AnyBackend::Lake(b) => b.list_schema(schema).await,
            AnyBackend::Databricks(b) => b.list_schema(schema).await,
        }
    }

    async fn run(&self, table: &TableRef, step: &Step, progress: Progress<'_>) -> Result<StepOutcome, BackendError> {
        match self {
            AnyBackend::Lake(b) => b.run(table, step, progress).await,
            AnyBackend::Databricks(b) => b.run(table, step, progress).await,
        }
    }

    async fn version(&self, table: &TableRef) -> Result<Option<u64>, BackendError> {
        match self {
            AnyBackend::Lake(b) => b.version(table).await,
            AnyBackend::Databricks(b) => b.version(table).await,
        }
    }
}
