//! Databricks: Unity Catalog tables through a SQL warehouse.
//!
//! Reads are REST only (see `read.rs`), so a drift check never wakes a
//! stopped warehouse: one paged Unity Catalog `tables` listing per schema,
//! shared by every table of the schema and by concurrent callers within
//! `share_window`, then, per table and only as the caller's `Extras` ask
//! (what its spec declares), its tags, column tags and grants, a few tables
//! at a time. A table whose listing stamp (Delta version
//! `delta.lastUpdateVersion` and `updated_at`) has not moved is not parsed
//! again. Steps are compiled to SQL by the SQL crate (`delta_operator_sql`,
//! with Unity Catalog's names) and run through the Statement Execution API
//! (`client/`): statements are for applies, `measure` and `verify`.

pub mod auth;
pub mod client;
pub mod error;
pub mod lock;
pub mod objects;
pub mod read;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::{Duration, Instant};

use client::{ClientConfig, DatabricksClient};

use delta_operator_backend::lock as table_lock;
use delta_operator_backend::{
    Backend, BackendError, Extras, StepOutcome, StepProgress, TableExtras, TableRun,
};
use delta_operator_core::model::history::{HISTORY_DEPTH, TableHistory};
use delta_operator_core::model::{
    ObjectRef, ObservedObject, ObservedSchema, ObservedTable, SchemaRef, TableRef,
};
use delta_operator_core::plan::compile::Compiled;
use delta_operator_core::plan::{
    Capabilities, Compiler, ObjectPlan, ObjectStep, SchemaStep, Step, TablePlan,
};
use delta_operator_sql::{self as sql, Cancel, SqlCompiler};
use futures::{StreamExt, TryStreamExt};

/// The Databricks compiler: tables by Unity Catalog's three-part names.
pub static UNITY_CATALOG: SqlCompiler = SqlCompiler {
    names: sql::Names::Catalog,
};

/// Tables whose tags and grants are read at once (REST requests in flight).
const EXTRAS_AT_ONCE: usize = 8;

/// One schema's tables as read together, by lower-case table name.
type SchemaState = Arc<BTreeMap<String, ObservedTable>>;

struct Snapshot {
    at: Instant,
    /// The write epoch the read began in: a write since makes it stale.
    epoch: u64,
    tables: SchemaState,
    /// The schema's views, from the same listing (`objects::view_from_info`).
    views: Arc<Vec<ObservedObject>>,
    /// False when the schema does not exist (its tables then read as absent).
    exists: bool,
}

pub struct DatabricksBackend {
    client: Arc<DatabricksClient>,
    caps: Capabilities,
    /// Parsed tables by their listing stamp: an unmoved table is not parsed again.
    parsed: StdMutex<HashMap<TableRef, (String, ObservedTable)>>,
    /// Per schema: the last read, behind a lock so concurrent reads share one.
    snapshots: StdMutex<HashMap<SchemaRef, Arc<tokio::sync::Mutex<Option<Snapshot>>>>>,
    /// How long a schema read is reused by other callers (writes invalidate it at once).
    share_window: Duration,
    /// Bumped by every write: shared reads from before it are not reused.
    epoch: AtomicU64,
    /// The table locks, in a workspace folder.
    locks: lock::WorkspaceLocks,
    /// Who takes them: the operator's identity, or `cli@<host>:<pid>`.
    writer: String,
    /// Told of every wait for the warehouse in calls that report no progress of their own
    /// (sizing a plan, a restore point's version): the CLI prints it, so it is never silent.
    wait_notice: Option<WaitNotice>,
}

/// Where a wait for the warehouse is told ("warehouse starting (STARTING, waited 12s)").
pub type WaitNotice = Arc<dyn Fn(&str) + Send + Sync>;

impl std::fmt::Debug for DatabricksBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DatabricksBackend")
            .field("client", &self.client)
            .finish_non_exhaustive()
    }
}

impl DatabricksBackend {
    pub fn new(cfg: ClientConfig) -> Result<Self, BackendError> {
        let client = Arc::new(DatabricksClient::new(cfg)?);
        Ok(DatabricksBackend {
            locks: lock::WorkspaceLocks::new(client.clone(), lock::DEFAULT_FOLDER),
            writer: "cli".into(),
            wait_notice: None,
            client,
            caps: Capabilities::databricks(),
            parsed: StdMutex::new(HashMap::new()),
            snapshots: StdMutex::new(HashMap::new()),
            share_window: Duration::from_secs(2),
            epoch: AtomicU64::new(0),
        })
    }

    /// The workspace folder of the table locks (default `lock::DEFAULT_FOLDER`).
    pub fn with_lock_folder(mut self, folder: &str) -> Self {
        self.locks = lock::WorkspaceLocks::new(self.client.clone(), folder);
        self
    }

    /// Names who takes the table locks (the operator's identity, `cli@<host>:<pid>`).
    pub fn with_writer(mut self, writer: &str) -> Self {
        self.writer = writer.into();
        self
    }

    /// Tells `notice` of every wait for the warehouse in calls with no progress of their own.
    pub fn with_wait_notice(mut self, notice: WaitNotice) -> Self {
        self.wait_notice = Some(notice);
        self
    }

    /// The progress of a call that has none of its own: waits go to the wait notice.
    fn notice(&self, message: &str) {
        if let Some(n) = &self.wait_notice {
            n(message);
        }
    }

    /// The table locks' workspace folder.
    pub fn lock_folder(&self) -> &str {
        self.locks.folder()
    }

    /// Breaks a table's lock (`delta-operator unlock`): who held it, if anyone.
    pub async fn unlock(
        &self,
        t: &TableRef,
        by: &str,
        force: bool,
    ) -> Result<table_lock::Unlocked, BackendError> {
        table_lock::unlock(&self.locks, t, by, force).await
    }

    /// Who holds a table's lock right now, if anyone.
    pub async fn lock_holder(
        &self,
        t: &TableRef,
    ) -> Result<Option<table_lock::Entry>, BackendError> {
        table_lock::holder(&self.locks, t).await
    }

    /// How long a schema read is shared with concurrent callers (0: never).
    pub fn with_share_window(mut self, d: Duration) -> Self {
        self.share_window = d;
        self
    }

    pub fn client(&self) -> &DatabricksClient {
        &self.client
    }

    /// SQL statements sent so far (the metric and the benchmark's count).
    pub fn statements(&self) -> u64 {
        self.client.statements()
    }

    /// HTTP requests sent so far (statements, polls, chunks, REST reads, tokens).
    pub fn requests(&self) -> u64 {
        self.client.requests()
    }

    /// Cancels every running statement; says what it did and which statements it asked to cancel.
    pub async fn cancel(&self) -> Cancel {
        self.client.cancel().await
    }

    /// The statements running now that may change a table.
    pub fn writes_running(&self) -> Vec<String> {
        self.client.writes_running()
    }

    /// A statement's state, as the Statement Execution API says it.
    /// A statement that has ended may have written (an interrupted apply's REPLACE): no
    /// listing read before it ended is shared after it.
    pub async fn statement_state(&self, id: &str) -> Result<String, BackendError> {
        let state = self.client.statement_state(id).await?;
        if !matches!(state.as_str(), "PENDING" | "RUNNING") {
            self.invalidate();
        }
        Ok(state)
    }

    fn schema_lock(&self, s: &SchemaRef) -> Arc<tokio::sync::Mutex<Option<Snapshot>>> {
        let mut all = self.snapshots.lock().unwrap_or_else(|p| p.into_inner());
        all.entry(s.clone()).or_default().clone()
    }

    /// Makes every shared read stale (after a write).
    fn invalidate(&self) {
        self.epoch.fetch_add(1, Ordering::SeqCst);
    }

    /// Every Delta table of a schema, read once and shared.
    async fn schema_state(&self, s: &SchemaRef) -> Result<SchemaState, BackendError> {
        Ok(self.listing(s).await?.0)
    }

    /// The schema's tables and whether it exists, read once and shared.
    async fn listing(&self, s: &SchemaRef) -> Result<(SchemaState, bool), BackendError> {
        let (tables, _, exists) = self.full_listing(s).await?;
        Ok((tables, exists))
    }

    /// The schema's tables, its views and whether it exists, read once and shared.
    async fn full_listing(
        &self,
        s: &SchemaRef,
    ) -> Result<(SchemaState, Arc<Vec<ObservedObject>>, bool), BackendError> {
        let lock = self.schema_lock(s);
        let mut guard = lock.lock().await;
        let epoch = self.epoch.load(Ordering::SeqCst);
        if let Some(snap) = guard
            .as_ref()
            .filter(|snap| snap.epoch == epoch && snap.at.elapsed() < self.share_window)
        {
            return Ok((snap.tables.clone(), snap.views.clone(), snap.exists));
        }
        let (tables, views, exists) = self.list_schema_tables(s).await?;
        let views = Arc::new(views);
        // the window runs from the answer: a read slower than the window (a cold warehouse)
        // is still shared by the caller right behind it (listing, then reading, the same schema)
        *guard = Some(Snapshot {
            at: Instant::now(),
            epoch,
            tables: tables.clone(),
            views: views.clone(),
            exists,
        });
        Ok((tables, views, exists))
    }

    /// Whether a schema the workspace answered 404 for is absent: `Ok(false)`
    /// when `GET …/schemas/{full_name}` is 404 too and its catalog exists; a
    /// missing catalog is refused by name (the operator never creates catalogs).
    async fn absent_schema(&self, s: &SchemaRef) -> Result<bool, BackendError> {
        let full = format!("{}.{}", s.catalog, s.schema);
        if self.client.get_schema(&full).await?.is_some() {
            return Ok(false);
        }
        if self.client.get_catalog(&s.catalog).await?.is_none() {
            return Err(BackendError::Refused {
                message: format!(
                    "catalog '{}' does not exist: the operator creates schemas, never catalogs. Fix: create the catalog (and grant the operator's principal USE CATALOG and CREATE SCHEMA on it), or correct spec.catalog of the DeltaSchema for {full}",
                    s.catalog
                ),
            });
        }
        Ok(true)
    }

    async fn list_schema_tables(
        &self,
        s: &SchemaRef,
    ) -> Result<(SchemaState, Vec<ObservedObject>, bool), BackendError> {
        let infos = match self.client.list_tables(&s.catalog, &s.schema).await {
            Ok(infos) => infos,
            // the listing of an absent schema is a 404: told apart from a refusal by
            // asking for the schema itself; its tables then read as absent
            Err(client::ClientError::Workspace(w)) if w.http_status == Some(404) => {
                if self.absent_schema(s).await? {
                    return Ok((Arc::new(BTreeMap::new()), vec![], false));
                }
                return Err(client::ClientError::Workspace(w).into());
            }
            Err(e) => return Err(e.into()),
        };
        let mut tables = BTreeMap::new();
        {
            let mut parsed = self.parsed.lock().unwrap_or_else(|p| p.into_inner());
            // Delta tables, and the streaming tables, materialized views and views a
            // spec may govern at the annotation scopes (listed apart: `list_views`)
            for info in infos.iter().filter(|i| read::relation_kind(i).is_some()) {
                let Some(name) = read::listed_name(info) else {
                    continue;
                };
                let tref = TableRef::new(&s.catalog, &s.schema, &name);
                let stamp = read::stamp(info);
                let table = match parsed.get(&tref) {
                    Some((st, t)) if *st == stamp => t.clone(),
                    _ => {
                        // a table whose entry cannot be parsed (a type this reader does
                        // not know) is that table's problem: it is read as unreadable,
                        // refused alone, and every other table of the schema goes on
                        let t = read::table_from_info(s, info).unwrap_or_else(|e| {
                            ObservedTable::unreadable(
                                tref.clone(),
                                format!("its Unity Catalog entry cannot be read: {e}"),
                            )
                        });
                        parsed.insert(tref, (stamp, t.clone()));
                        t
                    }
                };
                tables.insert(name, table);
            }
        }
        // a staging copy whose run may still be alive (a stalled apply that may wake up) is
        // not a leftover: another apply must not drop it. Where the lock folder cannot be
        // read, the copy is kept too (it is listed again once the folder can be read).
        let copies = read::staging_copies(&tables);
        let mut alive = BTreeSet::new();
        for c in &copies {
            let of = TableRef::new(&s.catalog, &s.schema, &c.base);
            if table_lock::run_may_be_alive(&self.locks, &of, &c.run, None)
                .await
                .unwrap_or(true)
            {
                alive.insert(c.name.clone());
            }
        }
        read::attach_leftovers(s, &mut tables, &copies, &alive);
        let views = infos
            .iter()
            .filter_map(|i| objects::view_from_info(s, i))
            .collect();
        Ok((Arc::new(tables), views, true))
    }

    /// The tags and grants `want` asks for, read onto the table (REST).
    async fn with_extras(
        &self,
        live: Option<ObservedTable>,
        want: TableExtras,
    ) -> Result<Option<ObservedTable>, BackendError> {
        let mut t = match live {
            Some(t) if !want.is_empty() && t.unreadable.is_none() => t,
            other => return Ok(other),
        };
        // one table's tags or grants the workspace refuses to show are that table's problem
        let table = t.table.clone();
        match self.read_extras(&mut t, &want).await {
            Ok(()) => Ok(Some(t)),
            // trouble worth retrying, or a configuration that cannot work, is the run's
            Err(e) if !matches!(e, BackendError::Refused { .. }) => Err(e),
            Err(e) => Ok(Some(ObservedTable::unreadable(
                table,
                format!("its tags or grants cannot be read: {e}"),
            ))),
        }
    }

    async fn read_extras(
        &self,
        t: &mut ObservedTable,
        want: &TableExtras,
    ) -> Result<(), BackendError> {
        let full = t.table.to_string();
        let client = &self.client;
        if want.table_tags {
            t.tags = read::tags_from_assignments(&client.list_entity_tags("tables", &full).await?);
        }
        if want.grants {
            t.grants =
                read::grants_from_permissions(&client.get_permissions("table", &full).await?);
        }
        for c in t.columns.iter_mut().filter(|c| want.wants_column(&c.name)) {
            let name = format!("{full}.{}", c.name);
            c.tags = read::tags_from_assignments(&client.list_entity_tags("columns", &name).await?);
        }
        // its upkeep, for a spec that declares maintenance (two statements on the
        // warehouse); none for a table predictive optimization maintains
        let maintained = t.health.as_ref().is_some_and(|h| h.predictive_optimization);
        if want.health.is_some() && !maintained && t.kind.is_table() {
            let notice = |m: &str| self.notice(m);
            let detail = client
                .execute(
                    &sql::describe_detail(&sql::Names::Catalog, &t.table),
                    &notice,
                )
                .await?;
            let history = client
                .execute(
                    &sql::history_recent(&sql::Names::Catalog, &t.table, HISTORY_DEPTH),
                    &notice,
                )
                .await?;
            t.health = Some(read::health_of(
                &detail.columns,
                &detail.rows,
                &history.columns,
                &history.rows,
            ));
        }
        Ok(())
    }

    /// Every view, SQL function and managed volume of a schema (none when the
    /// schema does not exist): the views from the shared tables listing, the
    /// functions and volumes from their own listings (REST: no warehouse).
    async fn schema_objects(&self, s: &SchemaRef) -> Result<Vec<ObservedObject>, BackendError> {
        let (_, views, exists) = self.full_listing(s).await?;
        if !exists {
            return Ok(vec![]);
        }
        let mut out: Vec<ObservedObject> = views.iter().cloned().collect();
        let functions = self.client.list_functions(&s.catalog, &s.schema).await?;
        out.extend(
            functions
                .iter()
                .filter_map(|f| objects::function_from_info(s, f)),
        );
        let volumes = self.client.list_volumes(&s.catalog, &s.schema).await?;
        out.extend(
            volumes
                .iter()
                .filter_map(|v| objects::volume_from_info(s, v)),
        );
        Ok(out)
    }

    /// An object's grants, and its tags where it has any (REST).
    async fn object_extras(&self, o: &mut ObservedObject) -> Result<(), BackendError> {
        let full = o.object.to_string();
        o.grants = read::grants_from_permissions(
            &self
                .client
                .get_permissions(objects::securable(o.object.kind), &full)
                .await?,
        );
        if let Some(entity) = objects::tag_entity(o.object.kind) {
            o.tags =
                read::tags_from_assignments(&self.client.list_entity_tags(entity, &full).await?);
        }
        Ok(())
    }

    async fn live(&self, t: &TableRef) -> Result<Option<ObservedTable>, BackendError> {
        Ok(self
            .schema_state(&t.schema_ref())
            .await?
            .get(&t.table)
            .cloned())
    }
}

impl Backend for DatabricksBackend {
    fn capabilities(&self) -> &Capabilities {
        &self.caps
    }

    async fn read(
        &self,
        tables: &[TableRef],
        extras: &Extras,
    ) -> Result<Vec<Option<ObservedTable>>, BackendError> {
        // a schema the workspace refuses to list makes its own tables unreadable
        // (never absent: nothing is created over them); the other schemas go on
        let mut by_schema: BTreeMap<SchemaRef, Result<SchemaState, String>> = BTreeMap::new();
        for t in tables {
            let s = t.schema_ref();
            if let std::collections::btree_map::Entry::Vacant(e) = by_schema.entry(s) {
                let state = match self.schema_state(e.key()).await {
                    Ok(state) => Ok(state),
                    // trouble worth retrying, or a configuration that cannot work, is the run's
                    Err(e) if !matches!(e, BackendError::Refused { .. }) => return Err(e),
                    Err(e) => Err(e.to_string()),
                };
                e.insert(state);
            }
        }
        // each table's tags and grants, a few tables at a time (in order)
        let mut jobs = Vec::with_capacity(tables.len());
        for t in tables {
            let live = match by_schema.get(&t.schema_ref()) {
                Some(Ok(m)) => m.get(&t.table).cloned(),
                Some(Err(why)) => Some(ObservedTable::unreadable(
                    t.clone(),
                    format!("its schema {} cannot be listed: {why}", t.schema_ref()),
                )),
                None => None,
            };
            jobs.push(self.with_extras(live, extras.of(t)));
        }
        futures::stream::iter(jobs)
            .buffered(EXTRAS_AT_ONCE)
            .try_collect()
            .await
    }

    /// The schema's entries that are not Delta tables (views, materialized views,
    /// streaming tables), from the same Unity Catalog listing (REST: no warehouse).
    async fn list_views(&self, s: &SchemaRef) -> Result<Vec<(String, String)>, BackendError> {
        let infos = match self.client.list_tables(&s.catalog, &s.schema).await {
            Ok(infos) => infos,
            // an absent schema has no views: its DeltaSchema's plan creates it (a 404 told
            // apart from a refusal as the tables' listing does)
            Err(client::ClientError::Workspace(w)) if w.http_status == Some(404) => {
                if self.absent_schema(s).await? {
                    return Ok(vec![]);
                }
                return Err(client::ClientError::Workspace(w).into());
            }
            Err(e) => return Err(e.into()),
        };
        let mut out: Vec<(String, String)> = infos
            .iter()
            .filter(|i| !read::is_delta_table(i))
            .filter_map(|i| {
                let name = read::listed_name(i)?;
                let kind = i
                    .get("table_type")
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or("VIEW")
                    .to_lowercase()
                    .replace('_', " ");
                Some((name, kind))
            })
            .collect();
        out.sort();
        Ok(out)
    }

    async fn list_schema(&self, s: &SchemaRef) -> Result<Vec<TableRef>, BackendError> {
        let state = self.schema_state(s).await?;
        Ok(state
            .iter()
            .filter(|(_, t)| t.kind.is_table())
            .map(|(n, _)| TableRef::new(&s.catalog, &s.schema, n))
            .collect())
    }

    async fn measure(&self, tables: &[TableRef]) -> Result<Vec<Option<u64>>, BackendError> {
        let mut sizes = Vec::with_capacity(tables.len());
        for t in tables {
            let r = self
                .client
                .execute(
                    &sql::describe_detail(&sql::Names::Catalog, t),
                    &|m: &str| self.notice(m),
                )
                .await?;
            sizes.push(read::detail_size(&r.columns, &r.rows));
        }
        Ok(sizes)
    }

    async fn read_schema(&self, s: &SchemaRef) -> Result<Option<ObservedSchema>, BackendError> {
        let full = format!("{}.{}", s.catalog, s.schema);
        let Some(info) = self.client.get_schema(&full).await? else {
            // absent, or refused by name when its catalog is
            self.absent_schema(s).await?;
            return Ok(None);
        };
        let permissions = self.client.get_permissions("schema", &full).await?;
        Ok(Some(read::schema_from_info(s, &info, &permissions)))
    }

    /// From the tables' listing (no request of its own in a drift check, which
    /// lists the schema first): the last listing made since this backend's last
    /// write is reused whatever its age (a write, such as a CREATE SCHEMA, makes
    /// it stale); a 404 there was told apart by `GET …/schemas/{full_name}`.
    async fn schema_exists(&self, s: &SchemaRef) -> Result<bool, BackendError> {
        let lock = self.schema_lock(s);
        let known = {
            let guard = lock.lock().await;
            let epoch = self.epoch.load(Ordering::SeqCst);
            guard
                .as_ref()
                .filter(|snap| snap.epoch == epoch)
                .map(|snap| snap.exists)
        };
        match known {
            Some(exists) => Ok(exists),
            None => Ok(self.listing(s).await?.1),
        }
    }

    async fn run_schema(
        &self,
        s: &SchemaRef,
        step: &SchemaStep,
        statements: &[String],
    ) -> Result<StepOutcome, BackendError> {
        let mut ids = Vec::new();
        for statement in statements {
            tracing::info!(schema = %s, step = step.number, statement = %statement, "running");
            let ran = self
                .client
                .execute(statement, &|m: &str| self.notice(m))
                .await;
            self.invalidate();
            ids.push(ran?.statement_id);
        }
        Ok(StepOutcome {
            detail: Some(format!("statement {}", ids.join(", "))),
        })
    }

    async fn read_objects(
        &self,
        schemas: &[SchemaRef],
        declared: &[ObjectRef],
    ) -> Result<Vec<ObservedObject>, BackendError> {
        // every schema once: the declared schemas whole, the others for their declared objects
        let mut listed: BTreeSet<SchemaRef> = schemas.iter().cloned().collect();
        listed.extend(declared.iter().map(ObjectRef::schema_ref));
        let mut out = Vec::new();
        for s in &listed {
            let whole = schemas.contains(s);
            for o in self.schema_objects(s).await? {
                if whole || declared.contains(&o.object) {
                    out.push(o);
                }
            }
        }
        // grants and tags of what may be changed: declared, or carrying our marker (an
        // orphan whose drop's undo puts them back); an unmarked object is only listed
        for o in out
            .iter_mut()
            .filter(|o| o.marker.is_some() || declared.contains(&o.object))
        {
            self.object_extras(o).await?;
        }
        out.sort_by(|a, b| a.object.cmp(&b.object));
        Ok(out)
    }

    async fn run_object(
        &self,
        plan: &ObjectPlan,
        step: &ObjectStep,
        statements: &[String],
    ) -> Result<StepOutcome, BackendError> {
        let mut ids = Vec::new();
        for statement in statements {
            tracing::info!(object = %plan.object, step = step.number, statement = %statement, "running");
            // in the object's own schema: its text's one- and two-part names resolve there
            let within = (plan.object.catalog.as_str(), plan.object.schema.as_str());
            let ran = self
                .client
                .execute_in(statement, Some(within), &|m: &str| self.notice(m))
                .await;
            self.invalidate();
            ids.push(ran?.statement_id);
        }
        Ok(StepOutcome {
            detail: Some(format!("statement {}", ids.join(", "))),
        })
    }

    async fn version(&self, t: &TableRef) -> Result<Option<u64>, BackendError> {
        if self.live(t).await?.is_none() {
            return Ok(None);
        }
        let r = self
            .client
            .execute(&sql::history_head(&sql::Names::Catalog, t), &|m: &str| {
                self.notice(m)
            })
            .await?;
        Ok(read::history_version(&r.columns, &r.rows))
    }

    async fn history(&self, t: &TableRef) -> Result<Option<TableHistory>, BackendError> {
        let Some(live) = self.live(t).await? else {
            return Ok(None);
        };
        // a read never wakes a stopped warehouse for a window: unknown (and not
        // shown) until it runs, as it does for the apply
        if self.client.warehouse_state().await? != "RUNNING" {
            return Ok(None);
        }
        let read_at_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        let r = self
            .client
            .execute(
                &sql::history_recent(&sql::Names::Catalog, t, HISTORY_DEPTH),
                &|m: &str| self.notice(m),
            )
            .await?;
        Ok(Some(
            read::history_of(&r.columns, &r.rows, read_at_ms).with_retention_of(&live.properties),
        ))
    }

    async fn begin(&self, t: &TableRef, wait: Duration) -> Result<TableRun, BackendError> {
        // the table's lock in the workspace folder, whoever applies (the CLI, the operator)
        let id = delta_operator_backend::new_run_id();
        match table_lock::acquire(&self.locks, t, &self.writer, &id, table_lock::ttl(), wait)
            .await?
        {
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
        &UNITY_CATALOG
    }

    async fn run(
        &self,
        run: &TableRun,
        plan: &TablePlan,
        step: &Step,
        bound: &Compiled,
        _now: Option<&ObservedTable>,
        progress: StepProgress<'_>,
    ) -> Result<StepOutcome, BackendError> {
        // before every step: the lock is still this run's (renewed now), or nothing of it is sent
        run.fence().await.map_err(|e| {
            BackendError::LockLost(format!("{e} (step {} was not sent)", step.number))
        })?;
        let ran = sql::run_step(
            &*self.client,
            &UNITY_CATALOG,
            run,
            plan,
            step,
            bound,
            progress,
        )
        .await;
        // whatever happened, the schema's shared read is stale now
        self.invalidate();
        ran
    }
}
