//! The seam between the pure core and the world: the `Backend` trait a
//! backend crate implements (read live tables, carry out steps), the run of
//! one table's apply, and the executor and engine that every backend shares.
//! The planning core never sees a backend: only `Capabilities` and the
//! observed model.

pub mod apply;
pub mod engine;
pub mod extras;

use std::future::Future;

use delta_operator_core::model::{ObservedSchema, ObservedTable, SchemaRef, TableRef};
use delta_operator_core::plan::{Capabilities, Compiler, SchemaStep, Step, TablePlan};

pub use extras::{Extras, TableExtras};

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
    /// Another apply holds the table (its holder, and how to break a dead one).
    #[error("{0}")]
    Locked(String),
    /// A statement was sent and its outcome is unknown: it may still be running.
    #[error("{message}")]
    StillRunning { statement: String, message: String },
}

impl BackendError {
    pub fn is_permanent(&self) -> bool {
        !matches!(
            self,
            BackendError::Transient(_)
                | BackendError::Locked(_)
                | BackendError::StillRunning { .. }
        )
    }
}

/// Test-only crash points, so tests can kill the process at the worst moments
/// and prove a rerun converges. Compiled only into debug builds
/// (`cfg(debug_assertions)`); a release binary ignores the variable.
/// `DELTA_OPERATOR_FAILPOINT=<name>`: `after-step-<n>`, and in lake rewrites
/// `during-stage`, `after-stage`, `during-replace`, `before-commit`, `after-replace`.
pub fn failpoint(name: &str) {
    #[cfg(debug_assertions)]
    if std::env::var("DELTA_OPERATOR_FAILPOINT").is_ok_and(|v| v == name) {
        eprintln!("failpoint {name}: aborting");
        std::process::abort();
    }
    #[cfg(not(debug_assertions))]
    let _ = name;
}

/// Debug builds: with `DELTA_OPERATOR_FAILPOINT=slow-<name>`, the point `name`
/// waits DELTA_OPERATOR_FAILPOINT_SECONDS (default 10): a step that takes long,
/// for tests that watch an apply or stop the process in the middle of one.
pub async fn slow_failpoint(name: &str) {
    #[cfg(debug_assertions)]
    if std::env::var("DELTA_OPERATOR_FAILPOINT")
        .is_ok_and(|v| v.strip_prefix("slow-") == Some(name))
    {
        let seconds = std::env::var("DELTA_OPERATOR_FAILPOINT_SECONDS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(10);
        eprintln!("failpoint slow-{name}: waiting {seconds}s");
        tokio::time::sleep(std::time::Duration::from_secs(seconds)).await;
    }
    #[cfg(not(debug_assertions))]
    let _ = name;
}

/// A table's lock as a backend holds it (the lake's lock object), renewed until released.
pub trait RunLock: Send + Sync {
    /// False once the lock was lost (broken by `unlock`, or taken over after expiry).
    fn is_held(&self) -> bool;
    /// Gives the lock back.
    fn release(self: Box<Self>) -> futures::future::BoxFuture<'static, ()>;
}

/// One apply of one table: the run that owns its staging copies and rewritten
/// files, and the table's lock where the backend takes one, held and renewed until `end`.
pub struct TableRun {
    pub table: TableRef,
    /// Unique per run: the start time (milliseconds, base 36) and 8 random hex digits.
    pub id: String,
    lock: Option<Box<dyn RunLock>>,
}

impl TableRun {
    /// A run holding a backend's lock on its table.
    pub fn locked(table: &TableRef, id: String, lock: Box<dyn RunLock>) -> Self {
        TableRun {
            table: table.clone(),
            id,
            lock: Some(lock),
        }
    }

    /// Gives up the lock, for the backend to release.
    pub fn take_lock(&mut self) -> Option<Box<dyn RunLock>> {
        self.lock.take()
    }

    /// A run without a lock (backends whose writes are guarded otherwise).
    pub fn unlocked(table: &TableRef) -> Self {
        TableRun {
            table: table.clone(),
            id: new_run_id(),
            lock: None,
        }
    }

    /// False once the table's lock was lost (broken by `unlock`, or taken over after expiry).
    pub fn is_held(&self) -> bool {
        self.lock.as_ref().is_none_or(|l| l.is_held())
    }
}

/// `<start ms in base 36>-<8 hex digits>`: sortable by start, unique per run.
pub fn new_run_id() -> String {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    let mut n = ms;
    let mut b36 = Vec::new();
    while n > 0 {
        b36.push(b"0123456789abcdefghijklmnopqrstuvwxyz"[(n % 36) as usize]);
        n /= 36;
    }
    b36.reverse();
    let random = uuid::Uuid::new_v4().simple().to_string();
    format!("{}-{}", String::from_utf8_lossy(&b36), &random[..8])
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

    /// The live state of each table, `None` where it does not exist, with
    /// the tags and grants `extras` asks for (left empty where it does not).
    fn read(
        &self,
        tables: &[TableRef],
        extras: &Extras,
    ) -> impl Future<Output = Result<Vec<Option<ObservedTable>>, BackendError>> + Send;

    /// Every table in a schema (for orphans and `import`).
    fn list_schema(
        &self,
        schema: &SchemaRef,
    ) -> impl Future<Output = Result<Vec<TableRef>, BackendError>> + Send;

    /// Starts one table's apply: takes its lock (waiting up to `wait` while
    /// another apply holds it) and names the run.
    fn begin(
        &self,
        table: &TableRef,
        wait: std::time::Duration,
    ) -> impl Future<Output = Result<TableRun, BackendError>> + Send;

    /// Ends a table's apply, releasing its lock.
    fn end(&self, run: TableRun) -> impl Future<Output = ()> + Send;

    /// The backend's compiler: every step's statements, at plan time (pure).
    fn compiler(&self) -> &dyn Compiler;

    /// Carries out one step of its table's plan: the statements the plan
    /// shows, bound to this run (`now` is the table as read when the step
    /// starts: the version a stage or clone is made from).
    fn run(
        &self,
        run: &TableRun,
        plan: &TablePlan,
        step: &Step,
        now: Option<&ObservedTable>,
        progress: Progress<'_>,
    ) -> impl Future<Output = Result<StepOutcome, BackendError>> + Send;

    /// The size in bytes of each table, for tables a plan scans or rewrites
    /// whose read did not give it (one statement per table on Databricks;
    /// never for a plan that scans nothing). Default: nothing more to learn.
    fn measure(
        &self,
        tables: &[TableRef],
    ) -> impl Future<Output = Result<Vec<Option<u64>>, BackendError>> + Send {
        let n = tables.len();
        async move { Ok(vec![None; n]) }
    }

    /// A schema's own metadata (comment, properties, owner, grants), `None`
    /// when the schema does not exist.
    fn read_schema(
        &self,
        schema: &SchemaRef,
    ) -> impl Future<Output = Result<Option<ObservedSchema>, BackendError>> + Send;

    /// Carries out one step of a schema's plan.
    fn run_schema(
        &self,
        schema: &SchemaRef,
        step: &SchemaStep,
    ) -> impl Future<Output = Result<StepOutcome, BackendError>> + Send;

    /// The table's current Delta version: the restore point before a risky step.
    fn version(
        &self,
        table: &TableRef,
    ) -> impl Future<Output = Result<Option<u64>, BackendError>> + Send;
}
