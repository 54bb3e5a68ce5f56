//! The seam between the pure core and the world: the `Backend` trait a
//! backend crate implements (read live tables, carry out steps), the run of
//! one table's apply, and the executor and engine that every backend shares.
//! The planning core never sees a backend: only `Capabilities` and the
//! observed model.

pub mod apply;
pub mod engine;
pub mod extras;
pub mod lock;

use std::future::Future;

use delta_operator_core::model::history::TableHistory;
use delta_operator_core::model::{
    ObjectRef, ObservedObject, ObservedSchema, ObservedTable, SchemaRef, TableRef,
};
use delta_operator_core::plan::compile::Compiled;
use delta_operator_core::plan::{
    BackendKind, Capabilities, Compiler, ObjectPlan, ObjectStep, SchemaStep, Step, TablePlan,
};

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
    Unsupported { backend: BackendKind, what: String },
    /// Storage or network trouble; worth retrying.
    #[error("{0}")]
    Transient(String),
    /// The configuration cannot work (a bad root, a missing credential).
    #[error("configuration: {0}")]
    Config(String),
    /// Another apply holds the table (its holder, and how to break a dead one).
    #[error("{0}")]
    Locked(String),
    /// The apply lost its table's lock before a commit (a takeover after it
    /// stalled past the expiry, or a forced unlock): nothing more was committed.
    #[error("{0}")]
    LockLost(String),
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
                | BackendError::LockLost(_)
                | BackendError::StillRunning { .. }
        )
    }
}

/// Test-only crash points, so tests can kill the process at the worst moments
/// and prove a rerun converges. Compiled only into debug builds
/// (`cfg(debug_assertions)`); a release binary ignores the variable.
/// `DELTA_OPERATOR_FAILPOINT=<name>`: `after-step-<n>`, `after-object-step-<n>` and
/// `after-object-step-<object name>-<n>` (a view's, function's or volume's step), and in lake rewrites
/// `during-stage`, `after-stage`, `during-replace`, `before-commit`, `after-fence`, `after-replace`.
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

/// Debug builds: with `DELTA_OPERATOR_FAILPOINT=hog-<name>`, the point `name`
/// takes memory (and touches it) until the process is killed: a step that needs
/// more than the pod's limit, for the tests of what an OOM kill leaves.
pub async fn hog_failpoint(name: &str) {
    #[cfg(debug_assertions)]
    if std::env::var("DELTA_OPERATOR_FAILPOINT").is_ok_and(|v| v.strip_prefix("hog-") == Some(name))
    {
        eprintln!("failpoint hog-{name}: taking memory until killed");
        let mut held: Vec<Vec<u8>> = Vec::new();
        // 64 GiB at most, 16 MiB at a time: a limit ends it long before
        for _ in 0..4096 {
            held.push(vec![1u8; 16 << 20]);
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        eprintln!(
            "failpoint hog-{name}: {} chunks held and not killed",
            held.len()
        );
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
    /// Confirms the lock is still this run's, in a way a stalled holder cannot
    /// get wrong (the lake renews it with a conditional write), right before a
    /// commit. An error says it is lost: commit nothing.
    fn fence(&self) -> futures::future::BoxFuture<'_, Result<(), String>>;
}

/// One apply of one table: the run that owns its staging copies and rewritten
/// files, and the table's lock where the backend takes one, held and renewed until `end`.
pub struct TableRun {
    pub table: TableRef,
    /// Unique per run: the start time (milliseconds, base 36) and 8 random hex digits.
    pub id: String,
    lock: Option<Box<dyn RunLock>>,
    /// The restore point the running step recorded (its class is rewrite or
    /// above), set by the executor before the step: a backend stamps it on
    /// the step's commits (`delta-operator.restorePoint`), so the table's own
    /// history says which versions the operator promised to restore.
    restore_point: std::sync::Mutex<Option<u64>>,
}

impl TableRun {
    /// A run holding a backend's lock on its table.
    pub fn locked(table: &TableRef, id: String, lock: Box<dyn RunLock>) -> Self {
        TableRun {
            table: table.clone(),
            id,
            lock: Some(lock),
            restore_point: Default::default(),
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
            restore_point: Default::default(),
        }
    }

    /// The restore point the running step recorded, if it recorded one.
    pub fn restore_point(&self) -> Option<u64> {
        self.restore_point.lock().map(|r| *r).unwrap_or(None)
    }

    /// Sets (or clears) the running step's restore point.
    pub fn set_restore_point(&self, version: Option<u64>) {
        if let Ok(mut r) = self.restore_point.lock() {
            *r = version;
        }
    }

    /// False once the table's lock was lost (broken by `unlock`, or taken over after expiry).
    pub fn is_held(&self) -> bool {
        self.lock.as_ref().is_none_or(|l| l.is_held())
    }

    /// Before a commit: the lock is still this run's (renewed now), or
    /// `BackendError::LockLost` and nothing may be committed. A run without a
    /// lock has nothing to fence.
    pub async fn fence(&self) -> Result<(), BackendError> {
        match &self.lock {
            None => Ok(()),
            Some(l) => l.fence().await.map_err(BackendError::LockLost),
        }
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

tokio::task_local! {
    /// The statements the apply polled in this task started, so a process running
    /// applies of several tables at once names each apply's own (in its status, for
    /// the next operator to wait for), not every statement of the target.
    pub static APPLY_STATEMENTS: StatementLog;
}

/// Ids of the statements one apply started (see `APPLY_STATEMENTS`).
#[derive(Debug, Clone, Default)]
pub struct StatementLog(std::sync::Arc<std::sync::Mutex<std::collections::BTreeSet<String>>>);

impl StatementLog {
    /// Records `id` in the log of the apply running in this task, if any.
    pub fn note(id: &str) {
        let _ = APPLY_STATEMENTS.try_with(|log| {
            log.0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .insert(id.to_string());
        });
    }

    /// Of `ids`, those this apply started.
    pub fn mine(&self, ids: Vec<String>) -> Vec<String> {
        let log = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        ids.into_iter().filter(|id| log.contains(id)).collect()
    }
}

/// Progress reports for long steps ("rewriting 1200000 rows in one pass").
pub type Progress<'a> = &'a (dyn Fn(&str) + Send + Sync);

/// What a long step reports while it runs: notes, and the rows written so far
/// where the backend can count them (the lake's rewrites; a SQL warehouse's
/// Statement Execution API reports no progress of a running statement).
#[derive(Clone, Copy)]
pub struct StepProgress<'a> {
    pub note: Progress<'a>,
    pub rows: &'a (dyn Fn(RowsDone) + Send + Sync),
}

impl StepProgress<'static> {
    /// Progress nobody watches.
    pub fn unwatched() -> Self {
        StepProgress {
            note: &|_| {},
            rows: &|_| {},
        }
    }
}

/// Rows a step has written so far, of how many it will write (when known).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowsDone {
    pub done: u64,
    pub of: Option<u64>,
}

impl RowsDone {
    /// `1200000 of 2000000 rows (60%), 40000 rows/s, about 20s left`, given how
    /// long the step has run; the rate and the time left only once some rows are done.
    pub fn describe(&self, running: std::time::Duration) -> String {
        let secs = running.as_secs_f64();
        let rate = (secs >= 1.0 && self.done > 0).then(|| self.done as f64 / secs);
        let mut out = match self.of {
            Some(of) if of > 0 => format!(
                "{} of {of} rows ({}%)",
                self.done,
                (self.done.min(of) * 100) / of
            ),
            _ => format!("{} rows", self.done),
        };
        if let Some(rate) = rate {
            out.push_str(&format!(", {} rows/s", rate.round() as u64));
            if let Some(of) = self.of.filter(|of| *of > self.done) {
                let left = ((of - self.done) as f64 / rate).ceil() as u64;
                out.push_str(&format!(", about {} left", short_duration(left)));
            }
        }
        out
    }
}

/// `12s`, `3m04s`, `2h05m`.
pub fn short_duration(s: u64) -> String {
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
    }
}

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

    /// The views (and other objects that are not Delta tables: materialized
    /// views, streaming tables) in a schema, by name with their kind: listed in
    /// the DeltaSchema's status, never touched. None where the backend has no
    /// such objects (the lake).
    fn list_views(
        &self,
        _schema: &SchemaRef,
    ) -> impl Future<Output = Result<Vec<(String, String)>, BackendError>> + Send {
        async { Ok(vec![]) }
    }

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

    /// Carries out one step of its table's plan: `bound`, the step compiled
    /// for this run, which the executor checked is what the plan shows (`now`
    /// is the table as read when the step starts: the version a stage or
    /// clone is made from, which `bound` names).
    fn run(
        &self,
        run: &TableRun,
        plan: &TablePlan,
        step: &Step,
        bound: &Compiled,
        now: Option<&ObservedTable>,
        progress: StepProgress<'_>,
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

    /// Whether a schema exists, without its metadata: what a spec silent about
    /// the schema's metadata needs (an absent schema is created, and its
    /// tables wait for it). A catalog that does not exist is an error naming
    /// it: the operator never creates catalogs. Default: a `read_schema`.
    fn schema_exists(
        &self,
        schema: &SchemaRef,
    ) -> impl Future<Output = Result<bool, BackendError>> + Send {
        async move { Ok(self.read_schema(schema).await?.is_some()) }
    }

    /// Carries out one step of a schema's plan: `statements`, which the
    /// executor checked are the ones the plan shows.
    fn run_schema(
        &self,
        schema: &SchemaRef,
        step: &SchemaStep,
        statements: &[String],
    ) -> impl Future<Output = Result<StepOutcome, BackendError>> + Send;

    /// Every view, SQL function and volume of `schemas`, and the `declared`
    /// objects wherever they are (absent ones left out), with their grants and
    /// tags where they may be changed (declared, or carrying our marker).
    /// `reads` and `normalized` are left for the engine to parse. Default: none
    /// (a backend without a metastore: its rules refuse declared objects).
    fn read_objects(
        &self,
        schemas: &[SchemaRef],
        declared: &[ObjectRef],
    ) -> impl Future<Output = Result<Vec<ObservedObject>, BackendError>> + Send {
        let _ = (schemas, declared);
        async { Ok(vec![]) }
    }

    /// Carries out one step of an object's plan: `statements`, which the
    /// executor checked are the ones the plan shows. Default: not supported.
    fn run_object(
        &self,
        plan: &ObjectPlan,
        step: &ObjectStep,
        statements: &[String],
    ) -> impl Future<Output = Result<StepOutcome, BackendError>> + Send {
        let _ = (step, statements);
        let backend = self.capabilities().backend;
        let what = format!("{} {}", plan.object.kind, plan.object);
        async move {
            Err(BackendError::Unsupported {
                backend,
                what: format!(
                    "{what}: views, functions and volumes need a Unity Catalog metastore"
                ),
            })
        }
    }

    /// The table's current Delta version: the restore point before a risky step.
    fn version(
        &self,
        table: &TableRef,
    ) -> impl Future<Output = Result<Option<u64>, BackendError>> + Send;

    /// The table's recent history (commit times, VACUUMs): the windows of its
    /// restore points (`core::plan::undo_window`). Read only for a table a plan
    /// may restore, or whose recorded restore points are shown. None: not a
    /// table, or a backend that reads no history (the windows are unknown).
    fn history(
        &self,
        table: &TableRef,
    ) -> impl Future<Output = Result<Option<TableHistory>, BackendError>> + Send {
        let _ = table;
        async move { Ok(None) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn rows_done_reads_with_its_rate_and_time_left() {
        let r = RowsDone {
            done: 1_200_000,
            of: Some(2_000_000),
        };
        assert_eq!(
            r.describe(Duration::from_secs(30)),
            "1200000 of 2000000 rows (60%), 40000 rows/s, about 20s left"
        );
        // no rate before a second has passed, nor with nothing done yet
        assert_eq!(
            r.describe(Duration::from_millis(500)),
            "1200000 of 2000000 rows (60%)"
        );
        let none = RowsDone {
            done: 0,
            of: Some(10),
        };
        assert_eq!(none.describe(Duration::from_secs(9)), "0 of 10 rows (0%)");
        // done, or more than counted (rows appended meanwhile): no time left, never over 100%
        let over = RowsDone {
            done: 12,
            of: Some(10),
        };
        assert_eq!(
            over.describe(Duration::from_secs(2)),
            "12 of 10 rows (100%), 6 rows/s"
        );
        let unknown = RowsDone { done: 7, of: None };
        assert_eq!(unknown.describe(Duration::from_secs(7)), "7 rows, 1 rows/s");
        let empty = RowsDone {
            done: 0,
            of: Some(0),
        };
        assert_eq!(empty.describe(Duration::from_secs(3)), "0 rows");
        assert_eq!(
            RowsDone {
                done: 1,
                of: Some(7_201)
            }
            .describe(Duration::from_secs(1)),
            "1 of 7201 rows (0%), 1 rows/s, about 2h00m left"
        );
    }
}
