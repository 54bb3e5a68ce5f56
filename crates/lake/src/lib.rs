//! The embedded default backend: Delta tables under a lake folder, through
//! delta-rs. Tables live at `<root>/<catalog>/<schema>/<table>`; no server, no
//! account. What delta-rs cannot change in place the planner turns into a
//! rewrite; what it cannot do at all the planner refuses by rule.

pub mod compile;
pub mod lock;
mod phases;
mod replace;
mod rewrite;
mod storage;
pub mod undo;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use deltalake::DeltaTable;
use deltalake::kernel::transaction::{CommitBuilder, CommitProperties};
use deltalake::kernel::{
    Action as DeltaAction, MetadataExt, StructField as KernelField, StructType,
};
use deltalake::operations::update_table_metadata::TableMetadataUpdate;
use deltalake::protocol::DeltaOperation;
use serde_json::Value;
use url::Url;

use delta_operator_backend::{Backend, BackendError, Extras, StepOutcome, StepProgress, TableRun};
use delta_operator_core::model::delta_schema as schema;
use delta_operator_core::model::{
    Check, DataType, DesiredTable, OWNER_PROPERTY, ObservedSchema, ObservedTable, SchemaRef,
    StructField, TableRef,
};
use delta_operator_core::plan::change::FieldPath;
use delta_operator_core::plan::compile::Compiled;
use delta_operator_core::plan::steps::bound_clone_name;
use delta_operator_core::plan::{Action, Capabilities, Compiler, SchemaStep, Step, TablePlan};
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

    async fn read_one(&self, t: &TableRef) -> Result<Option<ObservedTable>, BackendError> {
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
    })
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

impl LakeBackend {
    async fn create(
        &self,
        t: &TableRef,
        d: &DesiredTable,
        step: &Step,
    ) -> Result<StepOutcome, BackendError> {
        let fields: Vec<(StructField, Option<String>)> = d
            .columns
            .iter()
            .map(|c| {
                let f = StructField {
                    name: c.name.clone(),
                    data_type: c.data_type.clone(),
                    nullable: c.nullable,
                    comment: c.comment.clone().filter(|s| !s.is_empty()),
                };
                (f, c.generated.clone())
            })
            .collect();
        let mut config: HashMap<String, Option<String>> = d
            .properties
            .iter()
            .filter(|(_, v)| v.is_some())
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        // the owner marker, and the record of the constraints it declares
        config.extend(d.marker_properties().into_iter().map(|(k, v)| (k, Some(v))));
        let table = DeltaTable::try_from_url(self.root.url_for_write(&rel(t))?)
            .await
            .map_err(delta_err)?;
        let mut b = table
            .create()
            .with_table_name(&t.table)
            .with_columns(kernel_fields(&fields)?)
            .with_partition_columns(d.partitioned_by.clone().unwrap_or_default())
            .with_configuration(config)
            .with_raise_if_key_not_exists(false)
            .with_commit_properties(self.commit_props(step));
        if let Some(c) = d.comment.as_ref().filter(|c| !c.is_empty()) {
            b = b.with_comment(c);
        }
        b.await.map_err(delta_err)?;
        Ok(StepOutcome::default())
    }

    /// A metadata-only commit: `edit` changes the schema JSON, configuration or description.
    async fn commit_metadata(
        &self,
        t: &TableRef,
        step: &Step,
        edit: impl FnOnce(&mut Value, &mut Vec<String>, &mut Option<String>) -> Result<(), BackendError>,
    ) -> Result<StepOutcome, BackendError> {
        let table = self.open_table(t).await?;
        self.commit_metadata_on(&table, edit, self.commit_props(step))
            .await
    }

    /// SET NOT NULL without rewriting (the Delta protocol lets a writer
    /// tighten nullability once no row breaks it): the field's missing
    /// values are counted at the version read, and the schema change is
    /// committed only against that version (`max_retries = 0`: any commit
    /// in between, an append that might hold a NULL included, refuses it
    /// with nothing changed; the next apply counts again).
    async fn set_not_null(
        &self,
        t: &TableRef,
        step: &Step,
        path: &FieldPath,
    ) -> Result<StepOutcome, BackendError> {
        let table = self.open_table(t).await?;
        let version = table.version().unwrap_or_default();
        let missing = rewrite::missing_values(&table, path).await?;
        if missing > 0 {
            return Err(BackendError::Refused {
                message: format!(
                    "{} has no value in {missing} rows at version {version}: it cannot be NOT NULL; nothing was changed (fill them, or keep it nullable)",
                    path.join(".")
                ),
            });
        }
        let path = path.clone();
        let props = self.commit_props(step).with_max_retries(0);
        self.commit_metadata_on(
            &table,
            move |schema, _, _| {
                field_json_mut(schema, &path)?["nullable"] = Value::Bool(false);
                Ok(())
            },
            props,
        )
        .await
        .map_err(|e| match e {
            BackendError::Refused { message }
                if message.contains("max commit attempts") || message.contains("already exists") || message.contains("MaxCommitAttempts") =>
            {
                BackendError::Refused {
                    message: format!("the table moved past version {version} while its NULLs were counted; nothing was changed (the next apply counts again): {message}"),
                }
            }
            other => other,
        })
    }

    /// `commit_metadata` on a table already open, with these commit properties.
    async fn commit_metadata_on(
        &self,
        table: &DeltaTable,
        edit: impl FnOnce(&mut Value, &mut Vec<String>, &mut Option<String>) -> Result<(), BackendError>,
        props: CommitProperties,
    ) -> Result<StepOutcome, BackendError> {
        let snap = table.snapshot().map_err(delta_err)?;
        let mut schema =
            serde_json::to_value(snap.schema().as_ref()).map_err(|e| BackendError::Refused {
                message: e.to_string(),
            })?;
        let mut remove_keys = Vec::new();
        let mut description = None;
        edit(&mut schema, &mut remove_keys, &mut description)?;
        let new_schema: StructType =
            serde_json::from_value(schema).map_err(|e| BackendError::Refused {
                message: format!("schema: {e}"),
            })?;
        let mut md = snap
            .metadata()
            .clone()
            .with_schema(&new_schema)
            .map_err(refused)?;
        for k in &remove_keys {
            md = md.remove_config_key(k).map_err(refused)?;
        }
        if let Some(d) = description {
            md = md.with_description(d).map_err(refused)?;
        }
        let op = DeltaOperation::SetTableProperties {
            properties: HashMap::new(),
        };
        CommitBuilder::from(props)
            .with_actions(vec![DeltaAction::Metadata(md)])
            .build(Some(snap), table.log_store(), op)
            .await
            .map_err(delta_err)?;
        Ok(StepOutcome::default())
    }
}

/// The JSON object of the field at `path` inside a schema JSON.
fn field_json_mut<'a>(
    schema: &'a mut Value,
    path: &FieldPath,
) -> Result<&'a mut Value, BackendError> {
    let mut node = schema;
    for (i, name) in path.iter().enumerate() {
        let fields = node
            .get_mut("fields")
            .and_then(Value::as_array_mut)
            .ok_or_else(|| BackendError::Refused {
                message: format!("{} is not a struct", path[..i].join(".")),
            })?;
        let f = fields
            .iter_mut()
            .find(|f| {
                f["name"]
                    .as_str()
                    .is_some_and(|n| n.eq_ignore_ascii_case(name))
            })
            .ok_or_else(|| BackendError::Refused {
                message: format!("no field {}", path.join(".")),
            })?;
        if i + 1 == path.len() {
            return Ok(f);
        }
        node = f.get_mut("type").ok_or_else(|| BackendError::Refused {
            message: "field without type".into(),
        })?;
    }
    Err(BackendError::Refused {
        message: "empty path".into(),
    })
}

impl Backend for LakeBackend {
    fn capabilities(&self) -> &Capabilities {
        &self.caps
    }

    /// A Delta table has no tags or grants: `extras` asks for nothing here.
    async fn read(
        &self,
        tables: &[TableRef],
        _extras: &Extras,
    ) -> Result<Vec<Option<ObservedTable>>, BackendError> {
        let mut out = Vec::with_capacity(tables.len());
        for t in tables {
            out.push(self.read_one(t).await?);
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
    async fn read_schema(&self, s: &SchemaRef) -> Result<Option<ObservedSchema>, BackendError> {
        Ok(Some(ObservedSchema::new(s.clone())))
    }

    async fn run_schema(
        &self,
        _s: &SchemaRef,
        step: &SchemaStep,
        _statements: &[String],
    ) -> Result<StepOutcome, BackendError> {
        Err(BackendError::Unsupported {
            backend: delta_operator_core::plan::BackendKind::Lake,
            what: step.action.title(),
        })
    }

    async fn version(&self, t: &TableRef) -> Result<Option<u64>, BackendError> {
        if !self.root.is_table(&rel(t)).await? {
            return Ok(None);
        }
        Ok(self.open_table(t).await?.version())
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
        let t = &run.table;
        // every step commits only while this run still holds the table (renewed now)
        run.fence().await?;
        let unsupported = |what: &str| {
            Err(BackendError::Unsupported {
                backend: delta_operator_core::plan::BackendKind::Lake,
                what: what.into(),
            })
        };
        match &step.action {
            Action::CreateTable { table } => self.create(t, table, step).await,
            Action::Claim {
                marker,
                constraints,
            } => {
                self.set_properties(
                    t,
                    step,
                    delta_operator_core::plan::steps::claim_properties(
                        marker,
                        constraints.as_deref(),
                    ),
                )
                .await
            }
            Action::SetProperties { properties } => {
                self.set_properties(t, step, properties.clone()).await
            }
            Action::UnsetProperties { keys } => {
                let keys = keys.clone();
                self.commit_metadata(t, step, move |_, remove, _| {
                    remove.extend(keys);
                    Ok(())
                })
                .await
            }
            Action::SetTableComment { comment } => {
                let table = self.open_table(t).await?;
                let update = TableMetadataUpdate {
                    name: None,
                    description: Some(comment.clone()),
                };
                table
                    .update_table_metadata()
                    .with_update(update)
                    .with_commit_properties(self.commit_props(step))
                    .await
                    .map_err(delta_err)?;
                Ok(StepOutcome::default())
            }
            Action::AddColumn { path, field } => self.add_column(t, step, path, field).await,
            Action::SetNotNull { path } => self.set_not_null(t, step, path).await,
            Action::DropNotNull { path } => {
                let path = path.clone();
                self.commit_metadata(t, step, move |schema, _, _| {
                    field_json_mut(schema, &path)?["nullable"] = Value::Bool(true);
                    Ok(())
                })
                .await
            }
            Action::SetColumnComment { path, comment } => {
                let (path, comment) = (path.clone(), comment.clone());
                self.commit_metadata(t, step, move |schema, _, _| {
                    let f = field_json_mut(schema, &path)?;
                    if !f["metadata"].is_object() {
                        f["metadata"] = Value::Object(Default::default());
                    }
                    let md = f["metadata"].as_object_mut().expect("set above");
                    if comment.is_empty() {
                        md.remove(schema::COMMENT_KEY);
                    } else {
                        md.insert(schema::COMMENT_KEY.into(), Value::String(comment));
                    }
                    Ok(())
                })
                .await
            }
            Action::AddCheck { check } => {
                let table = self.open_table(t).await?;
                table
                    .add_constraint()
                    .with_constraint(check.name.clone(), check.expression.clone())
                    .with_commit_properties(self.commit_props(step))
                    .await
                    .map_err(delta_err)?;
                Ok(StepOutcome::default())
            }
            Action::DropCheck { name } => {
                let table = self.open_table(t).await?;
                table
                    .drop_constraints()
                    .with_constraint(name.clone())
                    .with_raise_if_not_exists(false)
                    .with_commit_properties(self.commit_props(step))
                    .await
                    .map_err(delta_err)?;
                Ok(StepOutcome::default())
            }
            Action::AddChecks { checks } => self.add_checks(t, step, checks).await,
            Action::DropChecks { names } => self.drop_checks(t, step, names).await,
            Action::Rewrite { rewrite, phase } => {
                self.rewrite(run, step, rewrite, *phase, progress).await
            }
            Action::RemoveLeftovers { .. } => self.remove_leftovers(run).await,
            Action::CloneTable { name } => {
                let name = bound_clone_name(name, now.and_then(|l| l.version));
                self.clone_table(t, step, &name).await
            }
            Action::DropTable => self.drop_table(t).await,
            other => unsupported(&other.title()),
        }
    }
}

impl LakeBackend {
    async fn set_properties(
        &self,
        t: &TableRef,
        step: &Step,
        props: BTreeMap<String, String>,
    ) -> Result<StepOutcome, BackendError> {
        let table = self.open_table(t).await?;
        table
            .set_tbl_properties()
            .with_properties(props.into_iter().collect())
            .with_raise_if_not_exists(false)
            .with_commit_properties(self.commit_props(step))
            .await
            .map_err(delta_err)?;
        Ok(StepOutcome::default())
    }

    /// CHECKs added in one commit (delta-rs validates every row against all of
    /// them in one scan first). Those already on the table are left out.
    async fn add_checks(
        &self,
        t: &TableRef,
        step: &Step,
        checks: &[Check],
    ) -> Result<StepOutcome, BackendError> {
        let table = self.open_table(t).await?;
        let live = observe(t, &table)?;
        let new: HashMap<String, String> = checks
            .iter()
            .filter(|c| {
                !live
                    .checks
                    .iter()
                    .any(|l| l.name.eq_ignore_ascii_case(&c.name))
            })
            .map(|c| (c.name.clone(), c.expression.clone()))
            .collect();
        if new.is_empty() {
            return Ok(StepOutcome::default());
        }
        let n = new.len();
        table
            .add_constraint()
            .with_constraints(new)
            .with_commit_properties(self.commit_props(step))
            .await
            .map_err(delta_err)?;
        Ok(StepOutcome {
            detail: Some(format!("{n} constraints added in one commit")),
        })
    }

    /// CHECKs dropped in one metadata commit (delta-rs's drop constraint takes one name).
    async fn drop_checks(
        &self,
        t: &TableRef,
        step: &Step,
        names: &[String],
    ) -> Result<StepOutcome, BackendError> {
        let table = self.open_table(t).await?;
        let snap = table.snapshot().map_err(delta_err)?;
        let mut md = snap.metadata().clone();
        let mut dropped = Vec::new();
        for name in names {
            let key = md
                .configuration()
                .keys()
                .find(|k| {
                    k.strip_prefix(delta_operator_core::model::property::CONSTRAINTS_PREFIX)
                        .is_some_and(|n| n.eq_ignore_ascii_case(name))
                })
                .cloned();
            if let Some(key) = key {
                md = md.remove_config_key(&key).map_err(refused)?;
                dropped.push(name.clone());
            }
        }
        if dropped.is_empty() {
            return Ok(StepOutcome::default());
        }
        let n = dropped.len();
        let op = DeltaOperation::DropConstraint {
            name: dropped.join(", "),
        };
        CommitBuilder::from(self.commit_props(step))
            .with_actions(vec![DeltaAction::Metadata(md)])
            .build(Some(snap), table.log_store(), op)
            .await
            .map_err(delta_err)?;
        Ok(StepOutcome {
            detail: Some(format!("{n} constraints dropped in one commit")),
        })
    }

    /// Adds a top-level column, or a nested field by merging its whole top-level struct.
    async fn add_column(
        &self,
        t: &TableRef,
        step: &Step,
        path: &FieldPath,
        field: &StructField,
    ) -> Result<StepOutcome, BackendError> {
        let table = self.open_table(t).await?;
        let live = observe(t, &table)?;
        let top = if path.len() == 1 {
            field.clone()
        } else {
            let c = live.column(&path[0]).ok_or_else(|| BackendError::Refused {
                message: format!("no column {}", path[0]),
            })?;
            let mut top = StructField {
                name: c.name.clone(),
                data_type: c.data_type.clone(),
                nullable: c.nullable,
                comment: c.comment.clone(),
            };
            insert_field(&mut top.data_type, &path[1..], field)?;
            top
        };
        let fields = kernel_fields(&[(top, None)])?;
        table
            .add_columns()
            .with_fields(fields)
            .with_commit_properties(self.commit_props(step))
            .await
            .map_err(delta_err)?;
        Ok(StepOutcome::default())
    }

    /// A shallow clone on the lake: a new Delta table under `.clones/` whose
    /// first commit adds the table's current files by absolute URI (the Delta
    /// protocol allows absolute paths; no data is copied). Idempotent.
    async fn clone_table(
        &self,
        t: &TableRef,
        step: &Step,
        name: &str,
    ) -> Result<StepOutcome, BackendError> {
        let rel = clone_rel(t, name);
        if self.root.is_table(&rel).await? {
            return Ok(StepOutcome {
                detail: Some(format!("already at {}", self.root.display(&rel))),
            });
        }
        let table = self.open_table(t).await?;
        let snap = table.snapshot().map_err(delta_err)?;
        let mut base = self.table_url(t)?;
        if !base.path().ends_with('/') {
            base.set_path(&format!("{}/", base.path()));
        }
        let mut adds = Vec::new();
        for f in snap.log_data().iter() {
            #[allow(deprecated)] // the Add action is exactly what a clone commits
            let mut add = f.add_action();
            add.path = base.join(&add.path).map_err(refused)?.to_string();
            add.data_change = true;
            adds.push(DeltaAction::Add(add));
        }
        let md = snap.metadata();
        let mut config: HashMap<String, Option<String>> = md
            .configuration()
            .iter()
            .filter(|(k, _)| k.as_str() != OWNER_PROPERTY)
            .map(|(k, v)| (k.clone(), Some(v.clone())))
            .collect();
        config.insert(
            "delta-operator.clone-of".into(),
            Some(format!(
                "{t}@{}",
                table.version().map_or("?".into(), |v| v.to_string())
            )),
        );
        let files = adds.len();
        DeltaTable::try_from_url(self.root.url_for_write(&rel)?)
            .await
            .map_err(delta_err)?
            .create()
            .with_table_name(name)
            .with_columns(snap.schema().fields().cloned())
            .with_partition_columns(md.partition_columns().to_vec())
            .with_configuration(config)
            .with_raise_if_key_not_exists(false)
            .with_actions(adds)
            .with_commit_properties(self.commit_props(step))
            .await
            .map_err(delta_err)?;
        Ok(StepOutcome {
            detail: Some(format!(
                "shallow clone at {} referencing {files} files",
                self.root.display(&rel)
            )),
        })
    }

    /// Moves the table's folder into the lake's trash: recoverable by moving it back.
    async fn drop_table(&self, t: &TableRef) -> Result<StepOutcome, BackendError> {
        if !self.root.is_table(&rel(t)).await? {
            return Ok(StepOutcome::default());
        }
        // one folder per table in the trash, one per drop inside it: a long
        // table name never grows past the file-name limit
        let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%S%.3fZ");
        let to = format!("{}/{stamp}", trash_root(t));
        self.root.move_folder(&rel(t), &to).await?;
        // staging copies of a dropped table can never be used
        self.root.remove_folder(&phases::staging_root(t)).await?;
        self.root
            .remove_empty_up_to(&phases::staging_root(t), STAGING);
        Ok(StepOutcome {
            detail: Some(format!("moved to {}", self.root.display(&to))),
        })
    }
}

/// Inserts `field` into the struct at `path` (the last element is the new field's name).
fn insert_field(
    t: &mut DataType,
    path: &[String],
    field: &StructField,
) -> Result<(), BackendError> {
    // inside arrays and maps a path names the element, key or value (as Delta's ADD COLUMNS does)
    match (t, path.first().map(|p| p.to_ascii_lowercase())) {
        (DataType::Array { element, .. }, Some(p)) if p == "element" && path.len() > 1 => {
            insert_field(element, &path[1..], field)
        }
        (DataType::Map { key, .. }, Some(p)) if p == "key" && path.len() > 1 => {
            insert_field(key, &path[1..], field)
        }
        (DataType::Map { value, .. }, Some(p)) if p == "value" && path.len() > 1 => {
            insert_field(value, &path[1..], field)
        }
        (DataType::Struct { fields }, _) if path.len() == 1 => {
            fields.push(field.clone());
            Ok(())
        }
        (DataType::Struct { fields }, _) => {
            let inner = fields
                .iter_mut()
                .find(|f| f.name.eq_ignore_ascii_case(&path[0]))
                .ok_or_else(|| BackendError::Refused {
                    message: format!("no field {}", path[0]),
                })?;
            insert_field(&mut inner.data_type, &path[1..], field)
        }
        _ => Err(BackendError::Refused {
            message: format!(
                "nested fields can only be added to structs (in arrays and maps too), not at {}",
                path.join(".")
            ),
        }),
    }
}
