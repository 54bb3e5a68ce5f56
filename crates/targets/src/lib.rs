//! The targets of the operator config, opened: the backend each one names
//! (the embedded lake, a Databricks workspace, or OSS Delta on a Spark
//! Connect server) behind one type.

pub mod open;

use delta_operator_api::config::{Target, TargetBackend};
use delta_operator_backend::{Backend, BackendError, Extras, StepOutcome, StepProgress, TableRun};
use delta_operator_core::model::{
    ObjectRef, ObservedObject, ObservedSchema, ObservedTable, SchemaRef, TableRef,
};
use delta_operator_core::plan::compile::Compiled;
use delta_operator_core::plan::{
    BackendKind, Capabilities, Compiler, ObjectPlan, ObjectStep, SchemaStep, Step, TablePlan,
};
use delta_operator_databricks as databricks;
use delta_operator_lake as lake;
use delta_operator_spark as spark;

/// The backend a target names: the embedded lake, a Databricks workspace or
/// a Spark Connect server. (An enum, not a trait object: the trait's methods
/// return `impl Future`.)
pub enum AnyBackend {
    Lake(lake::LakeBackend),
    Databricks(databricks::DatabricksBackend),
    Spark(spark::SparkConnectBackend),
}

impl AnyBackend {
    /// Opens the backend of a config target; `writer` names the operator in lake commits.
    pub fn open(target: &Target, writer: Option<&str>) -> Result<Self, BackendError> {
        match &target.backend {
            TargetBackend::Lake(l) => {
                let lake = lake::LakeBackend::open(&l.root)?;
                Ok(AnyBackend::Lake(match writer {
                    Some(w) => lake.with_writer(w),
                    None => lake,
                }))
            }
            TargetBackend::Databricks(d) => {
                let dbx = open::databricks(d)?;
                Ok(AnyBackend::Databricks(match writer {
                    Some(w) => dbx.with_writer(w),
                    None => dbx,
                }))
            }
            TargetBackend::SparkConnect(s) => {
                Ok(AnyBackend::Spark(open::spark_connect(s, writer)?))
            }
        }
    }

    /// Tells `notice` of every wait for a Databricks warehouse that no step's progress
    /// reports (sizing a plan, a restore point's version); other backends never wait so.
    pub fn with_wait_notice(self, notice: databricks::WaitNotice) -> Self {
        match self {
            AnyBackend::Databricks(d) => AnyBackend::Databricks(d.with_wait_notice(notice)),
            other => other,
        }
    }

    /// What a call is waiting for before it can run, if anything ("warehouse … starting").
    pub fn waiting_for(&self) -> Option<String> {
        match self {
            AnyBackend::Lake(_) | AnyBackend::Spark(_) => None,
            AnyBackend::Databricks(d) => d.client().warehouse_waiting().map(|state| {
                format!(
                    "warehouse {} is starting ({state})",
                    d.client().config().warehouse_id
                )
            }),
        }
    }

    /// Cancels what is running, where the backend can (Databricks statements,
    /// Spark Connect operations, each by its tag):
    /// what to tell the user, the statements asked to cancel (each may still
    /// run), and whether anything was running at all.
    pub async fn cancel(&self) -> Option<delta_operator_sql::Cancel> {
        match self {
            AnyBackend::Lake(_) => None,
            AnyBackend::Databricks(d) => Some(d.cancel().await),
            AnyBackend::Spark(s) => Some(s.client().cancel().await),
        }
    }

    /// The statements running now that may change a table (Databricks; a lake
    /// step runs in this process, so a kill ends it).
    pub fn writes_running(&self) -> Vec<String> {
        match self {
            AnyBackend::Lake(_) => vec![],
            AnyBackend::Databricks(d) => d.writes_running(),
            AnyBackend::Spark(s) => s.client().writes_running(),
        }
    }

    /// Whether a statement an earlier process left may still be running
    /// (`Some(state)` while PENDING or RUNNING). Lake: nothing runs outside the process.
    pub async fn still_running(&self, statement: &str) -> Result<Option<String>, BackendError> {
        match self {
            AnyBackend::Lake(_) => Ok(None),
            AnyBackend::Databricks(d) => {
                let state = d.statement_state(statement).await?;
                Ok(matches!(state.as_str(), "PENDING" | "RUNNING").then_some(state))
            }
            AnyBackend::Spark(s) => s
                .client()
                .still_running(statement)
                .await
                .map_err(Into::into),
        }
    }
}

/// A backend kind's compiler, without opening a backend (a plan against a
/// saved state). A Spark Connect target's statements name tables by path
/// under its root, which only the target knows: `<root>` stands for it.
pub fn compiler(kind: BackendKind) -> &'static dyn Compiler {
    static SPARK: std::sync::LazyLock<spark::SparkCompiler> =
        std::sync::LazyLock::new(|| spark::SparkCompiler::new("<root>"));
    match kind {
        BackendKind::Lake => &lake::compile::DeltaCompiler,
        BackendKind::Databricks => &databricks::UNITY_CATALOG,
        BackendKind::SparkConnect => &*SPARK,
    }
}

impl Backend for AnyBackend {
    fn capabilities(&self) -> &Capabilities {
        match self {
            AnyBackend::Lake(b) => b.capabilities(),
            AnyBackend::Databricks(b) => b.capabilities(),
            AnyBackend::Spark(b) => b.capabilities(),
        }
    }

    async fn read(
        &self,
        tables: &[TableRef],
        extras: &Extras,
    ) -> Result<Vec<Option<ObservedTable>>, BackendError> {
        match self {
            AnyBackend::Lake(b) => b.read(tables, extras).await,
            AnyBackend::Databricks(b) => b.read(tables, extras).await,
            AnyBackend::Spark(b) => b.read(tables, extras).await,
        }
    }

    async fn list_schema(&self, schema: &SchemaRef) -> Result<Vec<TableRef>, BackendError> {
        match self {
            AnyBackend::Lake(b) => b.list_schema(schema).await,
            AnyBackend::Databricks(b) => b.list_schema(schema).await,
            AnyBackend::Spark(b) => b.list_schema(schema).await,
        }
    }

    async fn list_views(&self, schema: &SchemaRef) -> Result<Vec<(String, String)>, BackendError> {
        match self {
            AnyBackend::Lake(b) => b.list_views(schema).await,
            AnyBackend::Databricks(b) => b.list_views(schema).await,
            AnyBackend::Spark(b) => b.list_views(schema).await,
        }
    }

    async fn begin(
        &self,
        table: &TableRef,
        wait: std::time::Duration,
    ) -> Result<TableRun, BackendError> {
        match self {
            AnyBackend::Lake(b) => b.begin(table, wait).await,
            AnyBackend::Databricks(b) => b.begin(table, wait).await,
            AnyBackend::Spark(b) => b.begin(table, wait).await,
        }
    }

    async fn end(&self, run: TableRun) {
        match self {
            AnyBackend::Lake(b) => b.end(run).await,
            AnyBackend::Databricks(b) => b.end(run).await,
            AnyBackend::Spark(b) => b.end(run).await,
        }
    }

    fn compiler(&self) -> &dyn Compiler {
        match self {
            AnyBackend::Lake(b) => b.compiler(),
            AnyBackend::Databricks(b) => b.compiler(),
            AnyBackend::Spark(b) => b.compiler(),
        }
    }

    async fn run(
        &self,
        run: &TableRun,
        plan: &TablePlan,
        step: &Step,
        bound: &Compiled,
        now: Option<&ObservedTable>,
        progress: StepProgress<'_>,
    ) -> Result<StepOutcome, BackendError> {
        match self {
            AnyBackend::Lake(b) => b.run(run, plan, step, bound, now, progress).await,
            AnyBackend::Databricks(b) => b.run(run, plan, step, bound, now, progress).await,
            AnyBackend::Spark(b) => b.run(run, plan, step, bound, now, progress).await,
        }
    }

    // forwarded: the trait's default (no size) would leave a Databricks plan unmeasured
    async fn measure(&self, tables: &[TableRef]) -> Result<Vec<Option<u64>>, BackendError> {
        match self {
            AnyBackend::Lake(b) => b.measure(tables).await,
            AnyBackend::Databricks(b) => b.measure(tables).await,
            AnyBackend::Spark(b) => b.measure(tables).await,
        }
    }

    async fn history(
        &self,
        t: &TableRef,
    ) -> Result<Option<delta_operator_core::model::history::TableHistory>, BackendError> {
        match self {
            AnyBackend::Lake(b) => b.history(t).await,
            AnyBackend::Databricks(b) => b.history(t).await,
            AnyBackend::Spark(b) => b.history(t).await,
        }
    }

    async fn read_schema(
        &self,
        schema: &SchemaRef,
    ) -> Result<Option<ObservedSchema>, BackendError> {
        match self {
            AnyBackend::Lake(b) => b.read_schema(schema).await,
            AnyBackend::Databricks(b) => b.read_schema(schema).await,
            AnyBackend::Spark(b) => b.read_schema(schema).await,
        }
    }

    async fn schema_exists(&self, schema: &SchemaRef) -> Result<bool, BackendError> {
        match self {
            AnyBackend::Lake(b) => b.schema_exists(schema).await,
            AnyBackend::Databricks(b) => b.schema_exists(schema).await,
            AnyBackend::Spark(b) => b.schema_exists(schema).await,
        }
    }

    async fn run_schema(
        &self,
        schema: &SchemaRef,
        step: &SchemaStep,
        statements: &[String],
    ) -> Result<StepOutcome, BackendError> {
        match self {
            AnyBackend::Lake(b) => b.run_schema(schema, step, statements).await,
            AnyBackend::Databricks(b) => b.run_schema(schema, step, statements).await,
            AnyBackend::Spark(b) => b.run_schema(schema, step, statements).await,
        }
    }

    async fn read_objects(
        &self,
        schemas: &[SchemaRef],
        declared: &[ObjectRef],
    ) -> Result<Vec<ObservedObject>, BackendError> {
        match self {
            AnyBackend::Lake(b) => b.read_objects(schemas, declared).await,
            AnyBackend::Databricks(b) => b.read_objects(schemas, declared).await,
            AnyBackend::Spark(b) => b.read_objects(schemas, declared).await,
        }
    }

    async fn run_object(
        &self,
        plan: &ObjectPlan,
        step: &ObjectStep,
        statements: &[String],
    ) -> Result<StepOutcome, BackendError> {
        match self {
            AnyBackend::Lake(b) => b.run_object(plan, step, statements).await,
            AnyBackend::Databricks(b) => b.run_object(plan, step, statements).await,
            AnyBackend::Spark(b) => b.run_object(plan, step, statements).await,
        }
    }

    async fn version(&self, table: &TableRef) -> Result<Option<u64>, BackendError> {
        match self {
            AnyBackend::Lake(b) => b.version(table).await,
            AnyBackend::Databricks(b) => b.version(table).await,
            AnyBackend::Spark(b) => b.version(table).await,
        }
    }
}
