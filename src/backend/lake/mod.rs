//! The embedded default backend: Delta tables under a lake folder, through
//! delta-rs. Tables live at `<root>/<catalog>/<schema>/<table>`; no server, no
//! account. What delta-rs cannot change in place the planner turns into a
//! rewrite; what it cannot do at all the planner refuses by rule.

mod rewrite;
pub mod schema;
mod storage;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use deltalake::kernel::transaction::{CommitBuilder, CommitProperties};
use deltalake::kernel::{Action as DeltaAction, MetadataExt, StructField as KernelField, StructType};
use deltalake::operations::update_table_metadata::TableMetadataUpdate;
use deltalake::protocol::DeltaOperation;
use deltalake::DeltaTable;
use serde_json::Value;
use url::Url;

use super::{Backend, BackendError, Progress, StepOutcome};
use storage::Root;
use crate::model::{Check, DataType, DesiredTable, ObservedTable, SchemaRef, StructField, TableRef, OWNER_PROPERTY};
use crate::plan::change::FieldPath;
use crate::plan::steps::{staging_name, Rewrite, RewritePhase};
use crate::plan::{Action, Capabilities, Step};

/// Writer features delta-rs 1.1 can commit to (with `datafusion`); a table
/// with any other cannot be changed by this backend.
const WRITABLE_FEATURES: &[&str] = &[
    "appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns", "columnMapping",
    "timestampNtz", "deletionVectors", "v2Checkpoint", "variantType", "variantType-preview", "checkpointProtection",
];

/// The folder the lake backend moves dropped tables into (our UNDROP).
pub const TRASH: &str = ".trash";
/// The folder for staging copies of tables being rewritten.
pub const STAGING: &str = ".staging";
/// The folder for shallow clones taken before risky steps.
pub const CLONES: &str = ".clones";
/// Commit info key on the staging copy: the table version it was made from.
const STAGED_FROM: &str = "delta-operator.staged-from-version";

pub struct LakeBackend {
    root: Root,
    caps: Capabilities,
    /// Who writes: stamped into every commit (the operator's identity).
    writer: String,
}

/// A table's folder relative to the lake root.
fn rel(t: &TableRef) -> String {
    format!("{}/{}/{}", t.catalog, t.schema, t.table)
}

/// Its staging copy's folder: outside the schema folder, so never listed as a table.
fn staging_rel(t: &TableRef) -> String {
    format!("{STAGING}/{}/{}/{}", t.catalog, t.schema, staging_name(&t.table))
}

/// A clone's folder: outside the schema folder, so never listed as a table.
fn clone_rel(t: &TableRef, name: &str) -> String {
    format!("{CLONES}/{}/{}/{name}", t.catalog, t.schema)
}

/// The table version a staging copy was made from (its last commit's info).
async fn staged_from(staging: &DeltaTable) -> Option<u64> {
    use futures::StreamExt;
    let info = staging.history(Some(1)).next().await?.ok()?;
    info.info.get(STAGED_FROM).and_then(Value::as_u64)
}

impl LakeBackend {
    /// A lake rooted at a local path, a file:// URL (the folder is created if
    /// missing) or an s3:// URL (endpoint and credentials from AWS_* variables).
    pub fn open(root: &str) -> Result<Self, BackendError> {
        Ok(LakeBackend { root: Root::parse(root)?, caps: Capabilities::lake(), writer: "cli".into() })
    }

    /// Names the writer in every commit's info (`delta-operator.writer`).
    pub fn with_writer(mut self, writer: &str) -> Self {
        self.writer = writer.into();
        self
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

    /// A table's staging copy's local folder (local roots only).
    pub fn staging_path(&self, t: &TableRef) -> PathBuf {
        self.root().join(staging_rel(t))
    }

    fn table_url(&self, t: &TableRef) -> Result<Url, BackendError> {
        self.root.url(&rel(t))
    }

    async fn open_table(&self, t: &TableRef) -> Result<DeltaTable, BackendError> {
        deltalake::open_table(self.table_url(t)?).await.map_err(delta_err)
    }

    async fn read_one(&self, t: &TableRef) -> Result<Option<ObservedTable>, BackendError> {
        if !self.root.is_table(&rel(t)).await? {
            return Ok(None);
        }
        let table = self.open_table(t).await?;
        observe(t, &table).map(Some)
    }
}

/// Delta errors are storage or protocol trouble; a conflict is worth a retry.
fn delta_err(e: deltalake::DeltaTableError) -> BackendError {
    match e {
        deltalake::DeltaTableError::ObjectStore { .. } | deltalake::DeltaTableError::Io { .. } => BackendError::Transient(e.to_string()),
        deltalake::DeltaTableError::VersionAlreadyExists(_) => BackendError::Transient(e.to_string()),
        other => BackendError::Refused { message: other.to_string() },
    }
}

/// Any other error, in its own words.
fn refused(e: impl std::fmt::Display) -> BackendError {
    BackendError::Refused { message: e.to_string() }
}

/// Reads everything the planner compares from a loaded table.
fn observe(t: &TableRef, table: &DeltaTable) -> Result<ObservedTable, BackendError> {
    let snap = table.snapshot().map_err(delta_err)?;
    let schema_json = serde_json::to_value(snap.schema().as_ref()).map_err(|e| BackendError::Refused { message: e.to_string() })?;
    let columns = schema::columns_from_json(&schema_json).map_err(|e| BackendError::Refused { message: e.to_string() })?;
    let md = snap.metadata();
    let mut properties = BTreeMap::new();
    let mut checks = Vec::new();
    for (k, v) in md.configuration() {
        match k.strip_prefix("delta.constraints.") {
            Some(name) => checks.push(Check { name: name.to_string(), expression: v.clone() }),
            None => {
                properties.insert(k.clone(), v.clone());
            }
        }
    }
    checks.sort_by(|a, b| a.name.cmp(&b.name));
    let protocol = serde_json::to_value(snap.protocol()).unwrap_or_default();
    let writer_version = protocol.get("minWriterVersion").and_then(Value::as_u64).unwrap_or(2);
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
        comment: md.description().map(str::to_string).filter(|d| !d.is_empty()),
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
    })
}

impl LakeBackend {
    /// Commit properties stamped into every commit, so Delta history shows who changed what.
    fn commit_props(&self, step: &Step) -> CommitProperties {
        self.commit_props_with(step, [])
    }

    fn commit_props_with(&self, step: &Step, extra: impl IntoIterator<Item = (String, Value)>) -> CommitProperties {
        let mut m = vec![
            ("delta-operator.step".to_string(), Value::String(step.action.title())),
            ("delta-operator.class".to_string(), Value::String(step.class.to_string())),
            ("delta-operator.writer".to_string(), Value::String(self.writer.clone())),
        ];
        m.extend(extra);
        CommitProperties::default().with_metadata(m)
    }
}

fn kernel_fields(fields: &[(StructField, Option<String>)]) -> Result<Vec<KernelField>, BackendError> {
    let v = schema::struct_to_json(fields);
    let st: StructType = serde_json::from_value(v).map_err(|e| BackendError::Refused { message: format!("schema: {e}") })?;
    Ok(st.fields().cloned().collect())
}

impl LakeBackend {
    async fn create(&self, t: &TableRef, d: &DesiredTable, step: &Step) -> Result<StepOutcome, BackendError> {
        let fields: Vec<(StructField, Option<String>)> = d
            .columns
            .iter()
            .map(|c| {
                let f = StructField { name: c.name.clone(), data_type: c.data_type.clone(), nullable: c.nullable, comment: c.comment.clone().filter(|s| !s.is_empty()) };
                (f, c.generated.clone())
            })
            .collect();
        let mut config: HashMap<String, Option<String>> = d.properties.iter().filter(|(_, v)| v.is_some()).map(|(k, v)| (k.clone(), v.clone())).collect();
        config.insert(OWNER_PROPERTY.to_string(), Some(d.owner_marker.clone()));
        let table = DeltaTable::try_from_url(self.table_url(t)?).await.map_err(delta_err)?;
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
        let snap = table.snapshot().map_err(delta_err)?;
        let mut schema = serde_json::to_value(snap.schema().as_ref()).map_err(|e| BackendError::Refused { message: e.to_string() })?;
        let mut remove_keys = Vec::new();
        let mut description = None;
        edit(&mut schema, &mut remove_keys, &mut description)?;
        let new_schema: StructType = serde_json::from_value(schema).map_err(|e| BackendError::Refused { message: format!("schema: {e}") })?;
        let mut md = snap.metadata().clone().with_schema(&new_schema).map_err(refused)?;
        for k in &remove_keys {
            md = md.remove_config_key(k).map_err(refused)?;
        }
        if let Some(d) = description {
            md = md.with_description(d).map_err(refused)?;
        }
        let op = DeltaOperation::SetTableProperties { properties: HashMap::new() };
        CommitBuilder::from(self.commit_props(step))
            .with_actions(vec![DeltaAction::Metadata(md)])
            .build(Some(snap), table.log_store(), op)
            .await
            .map_err(delta_err)?;
        Ok(StepOutcome::default())
    }
}

/// The JSON object of the field at `path` inside a schema JSON.
fn field_json_mut<'a>(schema: &'a mut Value, path: &FieldPath) -> Result<&'a mut Value, BackendError> {
    let mut node = schema;
    for (i, name) in path.iter().enumerate() {
        let fields = node.get_mut("fields").and_then(Value::as_array_mut).ok_or_else(|| BackendError::Refused { message: format!("{} is not a struct", path[..i].join(".")) })?;
        let f = fields
            .iter_mut()
            .find(|f| f["name"].as_str().is_some_and(|n| n.eq_ignore_ascii_case(name)))
            .ok_or_else(|| BackendError::Refused { message: format!("no field {}", path.join(".")) })?;
        if i + 1 == path.len() {
            return Ok(f);
        }
        node = f.get_mut("type").ok_or_else(|| BackendError::Refused { message: "field without type".into() })?;
    }
    Err(BackendError::Refused { message: "empty path".into() })
}

impl Backend for LakeBackend {
    fn capabilities(&self) -> &Capabilities {
        &self.caps
    }

    async fn read(&self, tables: &[TableRef]) -> Result<Vec<Option<ObservedTable>>, BackendError> {
        let mut out = Vec::with_capacity(tables.len());
        for t in tables {
            out.push(self.read_one(t).await?);
        }
        Ok(out)
    }

    async fn list_schema(&self, s: &SchemaRef) -> Result<Vec<TableRef>, BackendError> {
        let names = self.root.tables_under(&format!("{}/{}", s.catalog, s.schema)).await?;
        Ok(names.iter().map(|n| TableRef::new(&s.catalog, &s.schema, n)).collect())
    }

    async fn version(&self, t: &TableRef) -> Result<Option<u64>, BackendError> {
        if !self.root.is_table(&rel(t)).await? {
            return Ok(None);
        }
        Ok(self.open_table(t).await?.version())
    }

    async fn run(&self, t: &TableRef, step: &Step, progress: Progress<'_>) -> Result<StepOutcome, BackendError> {
        let unsupported = |what: &str| Err(BackendError::Unsupported { backend: "lake".into(), what: what.into() });
        match &step.action {
            Action::CreateTable { table } => self.create(t, table, step).await,
            Action::Claim { marker } => self.set_properties(t, step, BTreeMap::from([(OWNER_PROPERTY.to_string(), marker.clone())])).await,
            Action::SetProperties { properties } => self.set_properties(t, step, properties.clone()).await,
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
                let update = TableMetadataUpdate { name: None, description: Some(comment.clone()) };
                table.update_table_metadata().with_update(update).with_commit_properties(self.commit_props(step)).await.map_err(delta_err)?;
                Ok(StepOutcome::default())
            }
            Action::AddColumn { path, field } => self.add_column(t, step, path, field).await,
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
                table.drop_constraints().with_constraint(name.clone()).with_raise_if_not_exists(false).with_commit_properties(self.commit_props(step)).await.map_err(delta_err)?;
                Ok(StepOutcome::default())
            }
            Action::Rewrite { rewrite, phase } => self.rewrite(t, step, rewrite, *phase, progress).await,
            Action::CloneTable { name } => self.clone_table(t, step, name).await,
            Action::DropTable => self.drop_table(t).await,
            other => unsupported(&other.title()),
        }
    }
}

impl LakeBackend {
    async fn set_properties(&self, t: &TableRef, step: &Step, props: BTreeMap<String, String>) -> Result<StepOutcome, BackendError> {
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

    /// Adds a top-level column, or a nested field by merging its whole top-level struct.
    async fn add_column(&self, t: &TableRef, step: &Step, path: &FieldPath, field: &StructField) -> Result<StepOutcome, BackendError> {
        let table = self.open_table(t).await?;
        let live = observe(t, &table)?;
        let top = if path.len() == 1 {
            field.clone()
        } else {
            let c = live.column(&path[0]).ok_or_else(|| BackendError::Refused { message: format!("no column {}", path[0]) })?;
            let mut top = StructField { name: c.name.clone(), data_type: c.data_type.clone(), nullable: c.nullable, comment: c.comment.clone() };
            insert_field(&mut top.data_type, &path[1..], field)?;
            top
        };
        let fields = kernel_fields(&[(top, None)])?;
        table.add_columns().with_fields(fields).with_commit_properties(self.commit_props(step)).await.map_err(delta_err)?;
        Ok(StepOutcome::default())
    }

    async fn rewrite(&self, t: &TableRef, step: &Step, rw: &Rewrite, phase: RewritePhase, progress: Progress<'_>) -> Result<StepOutcome, BackendError> {
        let staging_url = || self.root.url(&staging_rel(t));
        let staging_at = self.root.display(&staging_rel(t));
        let untouched = |e: BackendError| match e {
            BackendError::CheckFailed { message } => BackendError::CheckFailed { message: format!("{message}; the table is untouched") },
            other => other,
        };
        match phase {
            RewritePhase::WriteOnce => {
                // nothing can lose a value: casts are strict and the check runs
                // in the stream, before the writer commits
                let source = self.open_table(t).await?;
                let baseline = rewrite::baseline_of(&source, rw).await?;
                progress(&format!("rewriting {} rows in one pass", baseline.rows));
                let spec = rewrite::StreamSpec {
                    rw,
                    select: rw,
                    target: rewrite::target_schema(rw, false)?,
                    strict: true,
                    expect: Some(baseline.clone()),
                    crash_mid_stream: Some("during-replace"),
                };
                let dest = self.open_table(t).await?;
                rewrite::stream_into(&source, dest, spec, self.commit_props(step), progress).await.map_err(untouched)?;
                rewrite::failpoint("after-replace");
                let put = self.put_back(t, step, &source, rw).await?;
                Ok(StepOutcome { detail: Some(format!("rewrote {} rows in one pass{put}", baseline.rows)) })
            }
            RewritePhase::Stage => {
                let source = self.open_table(t).await?;
                let from_version = source.version();
                let baseline = rewrite::baseline_of(&source, rw).await?;
                progress(&format!("staging {} rows at {staging_at}", baseline.rows));
                // a fresh staging copy every time: the stage is safe to repeat
                self.root.remove_folder(&staging_rel(t)).await?;
                let staging = DeltaTable::try_from_url(staging_url()?).await.map_err(delta_err)?;
                let props = self.commit_props_with(step, [(STAGED_FROM.to_string(), Value::from(from_version))]);
                // safe casts: a value that does not convert becomes NULL in the
                // staging copy, where the check finds it
                let spec = rewrite::StreamSpec { rw, select: rw, target: rewrite::target_schema(rw, true)?, strict: false, expect: None, crash_mid_stream: None };
                let (staging, _) = rewrite::stream_into(&source, staging, spec, props, progress).await.map_err(|e| match e {
                    BackendError::CheckFailed { message } => BackendError::CheckFailed { message: format!("{message}; the original table is untouched") },
                    other => other,
                })?;
                if let Err(problem) = rewrite::check_staged(&staging, rw, &baseline).await {
                    return Err(BackendError::CheckFailed {
                        message: format!("{problem}; the original table is untouched; the staging copy is kept at {staging_at} to inspect"),
                    });
                }
                rewrite::failpoint("after-stage");
                Ok(StepOutcome { detail: Some(format!("staged {} rows at {staging_at} from version {}, checked", baseline.rows, from_version.map_or("?".into(), |v| v.to_string()))) })
            }
            RewritePhase::Replace => {
                if !self.root.is_table(&staging_rel(t)).await? {
                    return Err(BackendError::Refused { message: format!("no staging copy at {staging_at}; plan again") });
                }
                let staging = deltalake::open_table(staging_url()?).await.map_err(delta_err)?;
                let table = self.open_table(t).await?;
                // the staging copy must have been made from the table as it is now
                let staged_from = staged_from(&staging).await;
                if staged_from.is_none() || staged_from != table.version() {
                    return Err(BackendError::Refused {
                        message: format!(
                            "the staging copy at {staging_at} was made from version {} but the table is at version {}; nothing was replaced; apply again to stage it anew",
                            staged_from.map_or("?".into(), |v| v.to_string()),
                            table.version().map_or("?".into(), |v| v.to_string())
                        ),
                    });
                }
                let rows = rewrite::row_count(&staging).await?;
                progress(&format!("replacing the table from {rows} staged rows"));
                let copy = rewrite::passthrough(rw);
                let spec = rewrite::StreamSpec {
                    rw,
                    select: &copy,
                    target: rewrite::target_schema(rw, false)?,
                    strict: true,
                    expect: Some(rewrite::Baseline { rows, converted: vec![] }),
                    crash_mid_stream: Some("during-replace"),
                };
                let dest = self.open_table(t).await?;
                rewrite::stream_into(&staging, dest, spec, self.commit_props(step), progress).await.map_err(untouched)?;
                rewrite::failpoint("after-replace");
                let put = self.put_back(t, step, &table, rw).await?;
                Ok(StepOutcome { detail: Some(format!("replaced from {rows} staged rows{put}")) })
            }
            RewritePhase::DropStaging => {
                self.root.remove_folder(&staging_rel(t)).await?;
                Ok(StepOutcome::default())
            }
        }
    }

    /// After a replace: puts back what the overwrite lost, in one metadata
    /// commit — table properties and CHECK constraints the table had before
    /// (including those someone else set), and the declared schema's NOT NULL
    /// and comments where the written schema lacks them. Says what it put back.
    async fn put_back(&self, t: &TableRef, step: &Step, before: &DeltaTable, rw: &Rewrite) -> Result<String, BackendError> {
        let before_config = before.snapshot().map_err(delta_err)?.metadata().configuration().clone();
        let table = self.open_table(t).await?;
        let snap = table.snapshot().map_err(delta_err)?;
        let after_config = snap.metadata().configuration();
        let missing: Vec<(String, String)> = before_config.iter().filter(|(k, v)| after_config.get(*k) != Some(*v)).map(|(k, v)| (k.clone(), v.clone())).collect();
        let fields: Vec<(StructField, Option<String>)> = rw.columns.iter().map(|p| (p.field.clone(), None)).collect();
        let want_json = schema::struct_to_json(&fields);
        let have_json = serde_json::to_value(snap.schema().as_ref()).map_err(refused)?;
        let want = schema::columns_from_json(&want_json).map_err(refused)?;
        let have = schema::columns_from_json(&have_json).map_err(refused)?;
        let schema_lost = want.len() != have.len()
            || want.iter().zip(&have).any(|(w, h)| w.name != h.name || w.nullable != h.nullable || w.comment != h.comment || w.data_type != h.data_type);
        if missing.is_empty() && !schema_lost {
            return Ok(String::new());
        }
        let mut md = snap.metadata().clone();
        if schema_lost {
            let st: StructType = serde_json::from_value(want_json).map_err(|e| BackendError::Refused { message: format!("schema: {e}") })?;
            md = md.with_schema(&st).map_err(refused)?;
        }
        for (k, v) in &missing {
            md = md.add_config_key(k.clone(), v.clone()).map_err(refused)?;
        }
        let op = DeltaOperation::SetTableProperties { properties: missing.iter().cloned().collect() };
        CommitBuilder::from(self.commit_props(step)).with_actions(vec![DeltaAction::Metadata(md)]).build(Some(snap), table.log_store(), op).await.map_err(delta_err)?;
        let mut what: Vec<String> = missing.into_iter().map(|(k, _)| k).collect();
        if schema_lost {
            what.push("NOT NULL and comments".into());
        }
        Ok(format!("; put back {}", what.join(", ")))
    }

    /// A shallow clone on the lake: a new Delta table under `.clones/` whose
    /// first commit adds the table's current files by absolute URI (the Delta
    /// protocol allows absolute paths; no data is copied). Idempotent.
    async fn clone_table(&self, t: &TableRef, step: &Step, name: &str) -> Result<StepOutcome, BackendError> {
        let rel = clone_rel(t, name);
        if self.root.is_table(&rel).await? {
            return Ok(StepOutcome { detail: Some(format!("already at {}", self.root.display(&rel))) });
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
        let mut config: HashMap<String, Option<String>> =
            md.configuration().iter().filter(|(k, _)| k.as_str() != OWNER_PROPERTY).map(|(k, v)| (k.clone(), Some(v.clone()))).collect();
        config.insert("delta-operator.clone-of".into(), Some(format!("{t}@{}", table.version().map_or("?".into(), |v| v.to_string()))));
        let files = adds.len();
        DeltaTable::try_from_url(self.root.url(&rel)?)
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
        Ok(StepOutcome { detail: Some(format!("shallow clone at {} referencing {files} files", self.root.display(&rel))) })
    }

    /// Moves the table's folder into the lake's trash: recoverable by moving it back.
    async fn drop_table(&self, t: &TableRef) -> Result<StepOutcome, BackendError> {
        if !self.root.is_table(&rel(t)).await? {
            return Ok(StepOutcome::default());
        }
        let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ");
        let to = format!("{TRASH}/{}/{}/{}.{stamp}", t.catalog, t.schema, t.table);
        self.root.move_folder(&rel(t), &to).await?;
        Ok(StepOutcome { detail: Some(format!("moved to {}", self.root.display(&to))) })
    }
}

/// Inserts `field` into the struct at `path` (the last element is the new field's name).
fn insert_field(t: &mut DataType, path: &[String], field: &StructField) -> Result<(), BackendError> {
    let DataType::Struct { fields } = t else {
        return Err(BackendError::Refused { message: "nested fields can only be added to structs".into() });
    };
    if path.len() == 1 {
        fields.push(field.clone());
        return Ok(());
    }
    let inner = fields
        .iter_mut()
        .find(|f| f.name.eq_ignore_ascii_case(&path[0]))
        .ok_or_else(|| BackendError::Refused { message: format!("no field {}", path[0]) })?;
    insert_field(&mut inner.data_type, &path[1..], field)
}
