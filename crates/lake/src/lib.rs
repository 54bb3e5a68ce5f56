//! The embedded default backend: Delta tables under a lake folder, through
//! delta-rs. Tables live at `<root>/<catalog>/<schema>/<table>`; no server, no
//! account. What delta-rs cannot change in place the planner turns into a
//! rewrite; what it cannot do at all the planner refuses by rule.

pub mod compile;
mod fence;
mod health;
pub mod history;
pub mod lock;
mod operations;
mod phases;
mod replace;
mod rewrite;
mod storage;
pub mod undo;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use deltalake::DeltaTable;
use deltalake::kernel::transaction::CommitProperties;
use deltalake::kernel::{StructField as KernelField, StructType};
use serde_json::Value;
use url::Url;

use delta_operator_backend::{Backend, BackendError, Extras, StepOutcome, StepProgress, TableRun};
use delta_operator_core::model::delta_schema as schema;
use delta_operator_core::model::history::TableHistory;
use delta_operator_core::model::{
    Check, ObservedSchema, ObservedTable, SchemaRef, StructField, TableRef,
};
use delta_operator_core::plan::compile::Compiled;
use delta_operator_core::plan::{Capabilities, Compiler, SchemaStep, Step, TablePlan};
use storage::Root;

/// Writer features delta-rs 1.1 can commit to (with `datafusion`); a table
/// with any other cannot be changed by this backend.
const WRITABLE_FEATURES: &[&str] = &[
    "appendOnly",
    "invariants",
    "checkConstraints",
    "changeDataFeed",
    "generatedColumns",
    "columnMapping",
    "timestampNtz",
    "deletionVectors",
    "v2Checkpoint",
    "variantType",
    "variantType-preview",
    "checkpointProtection",
];

/// The folder the lake backend moves dropped tables into (our UNDROP).
pub const TRASH: &str = ".trash";
/// The folder for staging copies of tables being rewritten.
pub const STAGING: &str = ".staging";
/// The folder for shallow clones taken before risky steps.
pub const CLONES: &str = ".clones";
pub struct LakeBackend {
    root: Root,
    caps: Capabilities,
    /// Who writes: stamped into every commit (the operator's identity).
    writer: String,
    /// Runs known to have committed (their rewritten files are history, not leftovers).
    committed_runs: std::sync::Mutex<std::collections::HashSet<(TableRef, String)>>,
}

/// A table's folder relative to the lake root.
pub(crate) fn rel(t: &TableRef) -> String {
    format!("{}/{}/{}", t.catalog, t.schema, t.table)
}

/// Where a table's dropped versions are kept: `.trash/<catalog>/<schema>/<table>/<time>`.
pub(crate) fn trash_root(t: &TableRef) -> String {
    format!("{TRASH}/{}/{}/{}", t.catalog, t.schema, t.table)
}

/// A clone's folder: `.clones/<catalog>/<schema>/<table>/<clone>`, outside the
/// schema folder (never listed as a table), one folder per table so a long
/// table name never grows past the file-name limit.
pub(crate) fn clone_rel(t: &TableRef, name: &str) -> String {
    let short = name
        .strip_prefix(&t.table)
        .map(|s| s.trim_start_matches('_'))
        .filter(|s| !s.is_empty())
        .unwrap_or(name);
    format!("{CLONES}/{}/{}/{}/{short}", t.catalog, t.schema, t.table)
}

impl LakeBackend {
    /// A lake rooted at a local path, a file:// URL or an s3:// URL (endpoint
    /// and credentials from AWS_* variables). Nothing is created until a write.
    pub fn open(root: &str) -> Result<Self, BackendError> {
        Ok(LakeBackend {
            root: Root::parse(root)?,
            caps: Capabilities::lake(),
            writer: "cli".into(),
            committed_runs: Default::default(),
        })
    }

    /// Names the writer in every commit's info (`delta-operator.writer`) and in table locks.
    pub fn with_writer(mut self, writer: &str) -> Self {
        self.writer = writer.into();
        self
    }

    /// Deletes a table's folder outright, files and log (`verify`'s scratch
    /// tables; a plan's drop goes to the trash instead).
    pub async fn remove_table_folder(&self, t: &TableRef) -> Result<(), BackendError> {
        self.root.remove_folder(&rel(t)).await
    }

    /// The root folder when the root is local (None for an object store).
    pub fn local_root(&self) -> Option<&Path> {
        self.root.local().map(PathBuf::as_path)
    }

    /// The local root folder (tests and messages); object-store roots have none.
    pub fn root(&self) -> &Path {
        self.root.local().expect("a local lake root")
    }

    /// A table's local folder (local roots only).
    pub fn table_path(&self, t: &TableRef) -> PathBuf {
        self.root().join(rel(t))
    }

    /// A clone's local folder (local roots only).
    pub fn clone_path(&self, t: &TableRef, name: &str) -> PathBuf {
        self.root().join(clone_rel(t, name))
    }

    /// The local folder holding a table's staging copies, one per run (local roots only).
    pub fn staging_path(&self, t: &TableRef) -> PathBuf {
        self.root().join(phases::staging_root(t))
    }

    fn table_url(&self, t: &TableRef) -> Result<Url, BackendError> {
        self.root.url(&rel(t))
    }

    async fn open_table(&self, t: &TableRef) -> Result<DeltaTable, BackendError> {
        deltalake::open_table(self.table_url(t)?)
            .await
            .map_err(delta_err)
    }

    async fn open_table_at(&self, t: &TableRef, version: u64) -> Result<DeltaTable, BackendError> {
        deltalake::open_table_with_version(self.table_url(t)?, version)
            .await
            .map_err(delta_err)
    }

    async fn read_one(
        &self,
        t: &TableRef,
        extras: &delta_operator_backend::TableExtras,
    ) -> Result<Option<ObservedTable>, BackendError> {
        if !self.root.is_table(&rel(t)).await? {
            return Ok(None);
        }
        // a broken log is refused for this table only, naming the file
        if let Some(problem) = self.check_log(t).await? {
            return Ok(Some(ObservedTable::unreadable(t.clone(), problem)));
        }
        let table = match self.open_table(t).await {
            Ok(table) => table,
            Err(e @ BackendError::Transient(_)) => return Err(e),
            Err(e) => {
                let file = self.find_bad_commit(t).await.unwrap_or_default();
                return Ok(Some(ObservedTable::unreadable(
                    t.clone(),
                    format!("the Delta log cannot be read: {e}{file}"),
                )));
            }
        };
        let mut observed = observe(t, &table)?;
        observed.leftovers = self.leftovers(t, &table).await?;
        if let Some(small_below) = extras.health {
            observed.health = Some(self.health(t, &table, small_below).await?);
        }
        Ok(Some(observed))
    }

    /// Breaks a table's lock (`delta-operator unlock`): who held it, if anyone.
    pub async fn unlock(
        &self,
        t: &TableRef,
        by: &str,
        force: bool,
    ) -> Result<lock::Unlocked, BackendError> {
        lock::unlock(&self.root, t, by, force).await
    }

    /// Whether a run (or the run whose id ends with `run`) may still be alive
    /// and commit: its files are not leftovers yet (see `lock`).
    pub async fn run_may_be_alive(&self, t: &TableRef, run: &str) -> Result<bool, BackendError> {
        lock::run_may_be_alive(&self.root, t, run, None).await
    }

    /// Who holds a table's lock right now, if anyone.
    pub async fn lock_holder(&self, t: &TableRef) -> Result<Option<lock::Entry>, BackendError> {
        lock::holder(&self.root, t).await
    }

    /// A commit file of size 0 is refused: the version exists but what it did is lost.
    async fn check_log(&self, t: &TableRef) -> Result<Option<String>, BackendError> {
        let log = format!("{}/_delta_log", rel(t));
        for (name, size) in self.root.list_files(&log).await? {
            if size == 0 && name.ends_with(".json") && !name.contains('/') {
                return Ok(Some(format!(
                    "the commit file {} is empty: that version's actions are lost (a storage fault or a torn write). The operator changes nothing on this table until the file is restored from a backup, or, if it is the newest commit and nothing was written after it, removed",
                    self.root.display(&format!("{log}/{name}"))
                )));
            }
        }
        Ok(None)
    }

    /// After a failed open: the first commit file (after the last checkpoint) that is not valid JSON.
    async fn find_bad_commit(&self, t: &TableRef) -> Option<String> {
        let log = format!("{}/_delta_log", rel(t));
        let checkpoint: u64 = self
            .root
            .read_file(&format!("{log}/_last_checkpoint"))
            .await
            .ok()
            .flatten()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .and_then(|v| v.get("version").and_then(Value::as_u64))
            .unwrap_or(0);
        for (name, _) in self.root.list_files(&log).await.ok()? {
            let Some(n) = name
                .strip_suffix(".json")
                .and_then(|n| n.parse::<u64>().ok())
            else {
                continue;
            };
            if n < checkpoint {
                continue;
            }
            let bytes = self.root.read_file(&format!("{log}/{name}")).await.ok()??;
            let text = String::from_utf8_lossy(&bytes);
            for (i, line) in text
                .lines()
                .enumerate()
                .filter(|(_, l)| !l.trim().is_empty())
            {
                if serde_json::from_str::<Value>(line).is_err() {
                    return Some(format!(
                        "; {} is not valid JSON (line {})",
                        self.root.display(&format!("{log}/{name}")),
                        i + 1
                    ));
                }
            }
        }
        None
    }
}

/// Delta errors are storage or protocol trouble; a conflict is worth a retry.
fn delta_err(e: deltalake::DeltaTableError) -> BackendError {
    match e {
        deltalake::DeltaTableError::ObjectStore { .. } | deltalake::DeltaTableError::Io { .. } => {
            BackendError::Transient(error_text(&e))
        }
        deltalake::DeltaTableError::VersionAlreadyExists(_) => {
            BackendError::Transient(error_text(&e))
        }
        other => BackendError::Refused {
            message: error_text(&other),
        },
    }
}

/// An error's text on one line, without a backtrace: with `RUST_BACKTRACE` set,
/// the Delta kernel appends one to its errors (hundreds of lines of frames,
/// `   12: symbol` then `             at file:line`), which says nothing to a user.
pub(crate) fn error_text(e: &impl std::fmt::Display) -> String {
    let text = e.to_string();
    let frame = |line: &str| {
        let t = line.trim_start();
        let indented = t.len() < line.len();
        let numbered = t
            .split_once(':')
            .is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        indented && (numbered || t.starts_with("at "))
            || t == "stack backtrace:"
            || t == "disabled backtrace"
            || t == "unsupported backtrace"
    };
    text.lines()
        .filter(|l| !frame(l))
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Any other error, in its own words.
fn refused(e: impl std::fmt::Display) -> BackendError {
    BackendError::Refused {
        message: error_text(&e),
    }
}

/// Reads everything the planner compares from a loaded table.
fn observe(t: &TableRef, table: &DeltaTable) -> Result<ObservedTable, BackendError> {
    let snap = table.snapshot().map_err(delta_err)?;
    let schema_json =
        serde_json::to_value(snap.schema().as_ref()).map_err(|e| BackendError::Refused {
            message: e.to_string(),
        })?;
    let columns = schema::columns_from_json(&schema_json).map_err(|e| BackendError::Refused {
        message: e.to_string(),
    })?;
    let md = snap.metadata();
    let mut properties = BTreeMap::new();
    let mut checks = Vec::new();
    for (k, v) in md.configuration() {
        match k.strip_prefix(delta_operator_core::model::property::CONSTRAINTS_PREFIX) {
            Some(name) => checks.push(Check {
                name: name.to_string(),
                expression: v.clone(),
            }),
            None => {
                properties.insert(k.clone(), v.clone());
            }
        }
    }
    checks.sort_by(|a, b| a.name.cmp(&b.name));
    let protocol = serde_json::to_value(snap.protocol()).unwrap_or_default();
    let writer_version = protocol
        .get("minWriterVersion")
        .and_then(Value::as_u64)
        .unwrap_or(2);
    let mut unsupported: Vec<String> = protocol
        .get("writerFeatures")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|f| !WRITABLE_FEATURES.contains(f))
        .map(str::to_string)
        .collect();
    if writer_version == 6 {
        unsupported.push("identityColumns (writer version 6)".into());
    }
    let size: i64 = snap.log_data().iter().map(|f| f.size()).sum();
    Ok(ObservedTable {
        table: t.clone(),
        kind: Default::default(),
        columns,
        partitioned_by: md.partition_columns().to_vec(),
        cluster_by: None,
        properties,
        comment: md
            .description()
            .map(str::to_string)
            .filter(|d| !d.is_empty()),
        tags: BTreeMap::new(),
        grants: vec![],
        owner: None,
        checks,
        primary_key: None,
        foreign_keys: vec![],
        row_filter: None,
        unsupported_features: unsupported,
        version: table.version(),
        size_bytes: Some(size.max(0) as u64),
        leftovers: vec![],
        unreadable: None,
        history: None,
        health: None,
    })
}

/// Now, epoch ms: when a table's history was read.
fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

tokio::task_local! {
    /// The restore point the running step recorded (`TableRun::restore_point`),
    /// set around the step by `run_step` and stamped by `commit_props_with` on
    /// every commit the step makes.
    static RESTORE_POINT: Option<u64>;
}

impl LakeBackend {
    /// Commit properties stamped into every commit, so Delta history shows who changed what.
    fn commit_props(&self, step: &Step) -> CommitProperties {
        self.commit_props_with(step, [])
    }

    fn commit_props_with(
        &self,
        step: &Step,
        extra: impl IntoIterator<Item = (String, Value)>,
    ) -> CommitProperties {
        let mut m = vec![
            (
                "delta-operator.step".to_string(),
                Value::String(step.action.title()),
            ),
            (
                "delta-operator.class".to_string(),
                Value::String(step.class.to_string()),
            ),
            (
                "delta-operator.writer".to_string(),
                Value::String(self.writer.clone()),
            ),
        ];
        // the step recorded a restore point: its commits say so, for the vacuum
        // that must keep that version's files (`health.rs` reads them back)
        if let Ok(Some(v)) = RESTORE_POINT.try_with(|v| *v) {
            m.push((
                delta_operator_core::model::maintenance::RESTORE_POINT_KEY.to_string(),
                Value::from(v),
            ));
        }
        m.extend(extra);
        CommitProperties::default().with_metadata(m)
    }
}

fn kernel_fields(
    fields: &[(StructField, Option<String>)],
) -> Result<Vec<KernelField>, BackendError> {
    let v = schema::struct_to_json(fields);
    let st: StructType = serde_json::from_value(v).map_err(|e| BackendError::Refused {
        message: format!("schema: {e}"),
    })?;
    Ok(st.fields().cloned().collect())
}

impl Backend for LakeBackend {
    fn capabilities(&self) -> &Capabilities {
        &self.caps
    }

    /// A Delta table has no tags or grants: of `extras`, only the health
    /// (for maintenance) is read here.
    async fn read(
        &self,
        tables: &[TableRef],
        extras: &Extras,
    ) -> Result<Vec<Option<ObservedTable>>, BackendError> {
        let mut out = Vec::with_capacity(tables.len());
        for t in tables {
            out.push(self.read_one(t, &extras.of(t)).await?);
        }
        Ok(out)
    }

    async fn list_schema(&self, s: &SchemaRef) -> Result<Vec<TableRef>, BackendError> {
        let names = self
            .root
            .tables_under(&format!("{}/{}", s.catalog, s.schema))
            .await?;
        Ok(names
            .iter()
            .map(|n| TableRef::new(&s.catalog, &s.schema, n))
            .collect())
    }

    /// A schema on the lake is a folder: it holds no comment, properties,
    /// owner or grants (declaring them is refused by the planner's rules).
    /// `None` when the folder is not there. A catalog is a folder too, made
    /// with its first schema's.
    async fn read_schema(&self, s: &SchemaRef) -> Result<Option<ObservedSchema>, BackendError> {
        let folder = format!("{}/{}", s.catalog, s.schema);
        Ok(self
            .root
            .folder_exists(&folder)
            .await?
            .then(|| ObservedSchema::new(s.clone())))
    }

    /// Only a CREATE reaches the lake (the rules refuse the rest): the
    /// schema's folder, made if absent, so a rerun does the same.
    async fn run_schema(
        &self,
        s: &SchemaRef,
        step: &SchemaStep,
        _statements: &[String],
    ) -> Result<StepOutcome, BackendError> {
        if !matches!(
            step.action,
            delta_operator_core::plan::SchemaAction::Create { .. }
        ) {
            return Err(BackendError::Unsupported {
                backend: self.caps.backend,
                what: step.action.title(),
            });
        }
        let folder = format!("{}/{}", s.catalog, s.schema);
        self.root.create_folder(&folder).await?;
        Ok(StepOutcome {
            detail: Some(format!("created {}", self.root.display(&folder))),
        })
    }

    async fn version(&self, t: &TableRef) -> Result<Option<u64>, BackendError> {
        if !self.root.is_table(&rel(t)).await? {
            return Ok(None);
        }
        Ok(self.open_table(t).await?.version())
    }

    async fn history(&self, t: &TableRef) -> Result<Option<TableHistory>, BackendError> {
        if !self.root.is_table(&rel(t)).await? {
            return Ok(None);
        }
        let table = self.open_table(t).await?;
        Ok(Some(history::read(&table, now_ms()).await?))
    }

    async fn begin(
        &self,
        t: &TableRef,
        wait: std::time::Duration,
    ) -> Result<TableRun, BackendError> {
        let id = delta_operator_backend::new_run_id();
        match lock::acquire(&self.root, t, &self.writer, &id, lock::ttl(), wait).await? {
            Ok(held) => Ok(TableRun::locked(t, id, Box::new(held))),
            Err(by) => Err(BackendError::Locked(by.message())),
        }
    }

    async fn end(&self, mut run: TableRun) {
        if let Some(l) = run.take_lock() {
            l.release().await;
        }
    }

    fn compiler(&self) -> &dyn Compiler {
        &compile::DeltaCompiler
    }

    async fn run(
        &self,
        run: &TableRun,
        _plan: &TablePlan,
        step: &Step,
        // what the lake does is the step's action; its operations (what the
        // plan shows) describe the commits that carries out
        _bound: &Compiled,
        now: Option<&ObservedTable>,
        progress: StepProgress<'_>,
    ) -> Result<StepOutcome, BackendError> {
        self.run_step(run, step, now, progress).await
    }
}
