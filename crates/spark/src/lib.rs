//! OSS Delta on a Spark cluster, through Spark Connect.
//!
//! The tables are Delta folders under a root, `<root>/<catalog>/<schema>/<table>`
//! (the lake's layout). Reads, drift checks, locks and restore points are the
//! lake backend's (delta-rs reads the log directly: no Spark job for a drift
//! check). Every step is compiled to the same SQL as on Databricks, naming the
//! table by path (`` delta.`s3a://…/main/sales/orders` ``), and carried out by
//! the shared SQL step runner (`delta_operator_sql::steps`) on the Spark Connect
//! server (`client.rs`): the rows are read and written by Spark, none flows
//! through the operator. A dropped table goes to the lake's trash (path tables
//! have no UNDROP), so `undrop` brings it back; a staging copy is deleted
//! folder and all (Spark's DROP TABLE of a path table is a no-op: measured,
//! e2e/spark-connect/FACTS.md).

pub mod client;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use delta_operator_backend::{Backend, BackendError, Extras, StepOutcome, StepProgress, TableRun};
use delta_operator_core::model::{
    Leftover, LeftoverKind, ObservedSchema, ObservedTable, SchemaRef, TableRef,
};
use delta_operator_core::plan::compile::{CompileError, Compiled, RunBinding};
use delta_operator_core::plan::statement::{DeltaOperation, Statement};
use delta_operator_core::plan::steps::RewritePhase;
use delta_operator_core::plan::{Action, Capabilities, Compiler, SchemaStep, Step, TablePlan};
use delta_operator_lake::LakeBackend;
use delta_operator_sql::{self as sql, Names, SqlCompiler};

pub use client::SparkClient;

/// Steps as SQL on Spark (tables by path), except a table drop, which the
/// lake does (into its trash).
#[derive(Debug, Clone)]
pub struct SparkCompiler {
    pub sql: SqlCompiler,
}

impl SparkCompiler {
    /// Tables under `spark_root`, as Spark spells it.
    pub fn new(spark_root: &str) -> Self {
        SparkCompiler {
            sql: SqlCompiler {
                names: Names::Paths {
                    root: spark_root.trim_end_matches('/').to_string(),
                },
            },
        }
    }
}

/// Steps the lake carries out on a Spark target.
fn by_the_lake(a: &Action) -> bool {
    // a checkpoint too: Spark SQL has no statement that writes one, and delta-rs's
    // is a standard checkpoint on the same path, which Spark reads
    matches!(a, Action::DropTable | Action::Checkpoint)
}

/// The staging copies a step deletes (their folders), for the run `run`.
fn staging_removed(t: &TableRef, a: &Action, run: &str) -> Option<Vec<TableRef>> {
    match a {
        Action::Rewrite {
            phase: RewritePhase::DropStaging,
            ..
        } => Some(vec![sql::staging_table(t, run)]),
        Action::RemoveLeftovers { leftovers } => Some(
            leftovers
                .iter()
                .map(|l| sql::staging_table(t, &l.run))
                .collect(),
        ),
        _ => None,
    }
}

impl SparkCompiler {
    /// What a step deleting staging copies shows: the folders it deletes.
    fn removals(&self, t: &TableRef, a: &Action, run: &str) -> Option<Vec<Statement>> {
        staging_removed(t, a, run).map(|copies| {
            copies
                .iter()
                .map(|c| {
                    Statement::Delta(DeltaOperation::RemovePathTable {
                        table: self.sql.names.table(c),
                    })
                })
                .collect()
        })
    }
}

impl Compiler for SparkCompiler {
    fn bind(
        &self,
        plan: &TablePlan,
        observed: Option<&ObservedTable>,
        earlier: &[Step],
        step: &Step,
        binding: &RunBinding<'_>,
    ) -> Result<Compiled, CompileError> {
        if by_the_lake(&step.action) {
            return delta_operator_lake::compile::DeltaCompiler
                .bind(plan, observed, earlier, step, binding);
        }
        if let Some(statements) = self.removals(&plan.table, &step.action, binding.run) {
            return Ok(Compiled {
                statements,
                ..Default::default()
            });
        }
        self.sql.bind(plan, observed, earlier, step, binding)
    }

    /// Tables are named by path here, so a schema is the lake's folder: its
    /// CREATE is the lake's (no catalog or schema is registered with Spark).
    fn compile_schema(
        &self,
        schema: &SchemaRef,
        step: &SchemaStep,
    ) -> Result<Vec<String>, CompileError> {
        delta_operator_lake::compile::compile_schema(schema, step)
    }
}

pub struct SparkConnectBackend {
    lake: LakeBackend,
    spark: Arc<SparkClient>,
    compiler: SparkCompiler,
    caps: Capabilities,
}

impl std::fmt::Debug for SparkConnectBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SparkConnectBackend")
            .field("spark", &self.spark)
            .finish_non_exhaustive()
    }
}

/// What a Spark Connect backend needs besides its lake: the server, the root as Spark
/// spells it, the token (already read from where the config names it) and the session.
#[derive(Clone)]
pub struct SparkConnectConfig {
    /// `sc://host:port`, with connection parameters after `/;`; never the token.
    pub url: String,
    /// The lake's root as the Spark cluster spells it (`s3a://…`, an absolute path).
    pub spark_root: String,
    pub token: Option<String>,
    /// Session settings sent before the first statement.
    pub conf: BTreeMap<String, String>,
    /// How long a read-only statement may run before it is interrupted.
    pub read_budget: Duration,
}

impl std::fmt::Debug for SparkConnectConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SparkConnectConfig")
            .field("url", &self.url)
            .field("spark_root", &self.spark_root)
            .field("token", &self.token.as_ref().map(|_| "***"))
            .field("conf", &self.conf)
            .field("read_budget", &self.read_budget)
            .finish()
    }
}

impl SparkConnectBackend {
    /// A backend over `lake` whose steps run on the Spark Connect server `cfg` names
    /// (the session opens lazily, at the first statement).
    pub fn new(lake: LakeBackend, cfg: SparkConnectConfig) -> Result<Self, BackendError> {
        let spark = SparkClient::new(&cfg.url, cfg.token.as_deref(), cfg.conf, cfg.read_budget)?;
        Ok(SparkConnectBackend {
            lake,
            spark: Arc::new(spark),
            compiler: SparkCompiler::new(&cfg.spark_root),
            caps: Capabilities::spark_connect(),
        })
    }

    pub fn client(&self) -> &SparkClient {
        &self.spark
    }

    /// The lake backend reading this target's root.
    pub fn lake(&self) -> &LakeBackend {
        &self.lake
    }

    /// How statements name this target's tables.
    pub fn names(&self) -> &Names {
        &self.compiler.sql.names
    }
}

/// A staging copy's name (`<table>__delta_operator_staging_<8 hex>`) → the
/// table and the run it belongs to.
fn staging_of(name: &str) -> Option<(&str, &str)> {
    let marker = "__delta_operator_staging_";
    let at = name.rfind(marker)?;
    let run = &name[at + marker.len()..];
    (run.len() == 8 && run.chars().all(|c| c.is_ascii_hexdigit())).then(|| (&name[..at], run))
}

impl Backend for SparkConnectBackend {
    fn capabilities(&self) -> &Capabilities {
        &self.caps
    }

    /// The lake's read, with two differences: Spark's Delta writes every
    /// writer feature the lake's delta-rs cannot (it refuses what it does not
    /// know, in its own words), and staging copies Spark made beside a table
    /// are that table's leftovers.
    async fn read(
        &self,
        tables: &[TableRef],
        extras: &Extras,
    ) -> Result<Vec<Option<ObservedTable>>, BackendError> {
        let mut out = self.lake.read(tables, extras).await?;
        let mut listed: BTreeMap<SchemaRef, Vec<TableRef>> = BTreeMap::new();
        for t in out.iter_mut().flatten() {
            t.unsupported_features.clear();
            let schema = t.table.schema_ref();
            if !listed.contains_key(&schema) {
                let names = self.lake.list_schema(&schema).await?;
                listed.insert(schema.clone(), names);
            }
            for other in &listed[&schema] {
                if let Some((base, run)) = staging_of(&other.table)
                    && base == t.table.table
                    && !self.lake.run_may_be_alive(&t.table, run).await?
                {
                    t.leftovers.push(Leftover {
                        kind: LeftoverKind::StagingCopy,
                        run: run.to_string(),
                        location: self.compiler.sql.names.table(other),
                        files: 0,
                        bytes: 0,
                    });
                }
            }
        }
        Ok(out)
    }

    /// The schema's tables, without the staging copies of rewrites (they
    /// belong to their table: never an orphan to drop).
    async fn list_schema(&self, s: &SchemaRef) -> Result<Vec<TableRef>, BackendError> {
        Ok(self
            .lake
            .list_schema(s)
            .await?
            .into_iter()
            .filter(|t| staging_of(&t.table).is_none())
            .collect())
    }

    async fn begin(&self, t: &TableRef, wait: Duration) -> Result<TableRun, BackendError> {
        self.lake.begin(t, wait).await
    }

    async fn end(&self, run: TableRun) {
        self.lake.end(run).await
    }

    fn compiler(&self) -> &dyn Compiler {
        &self.compiler
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
        if by_the_lake(&step.action) {
            return self.lake.run(run, plan, step, bound, now, progress).await;
        }
        // the folders the step deletes are those `bound` names (the staging copies of
        // this run, or of the runs the plan listed as leftovers)
        if let Some(copies) = staging_removed(&run.table, &step.action, &run.id) {
            run.fence().await?;
            let mut kept = 0;
            for c in &copies {
                // a leftover listed by the plan whose run shows signs of life again
                // (a stalled apply that woke up) keeps its copy
                if let Some((_, of)) = staging_of(&c.table)
                    && of != &run.id[run.id.len().saturating_sub(8)..]
                    && self.lake.run_may_be_alive(&run.table, of).await?
                {
                    kept += 1;
                    continue;
                }
                self.lake.remove_table_folder(c).await?;
            }
            let also = if kept > 0 {
                format!("; kept {kept} whose run may still be alive")
            } else {
                String::new()
            };
            return Ok(StepOutcome {
                detail: Some(format!(
                    "deleted {} staging folder(s){also}",
                    copies.len() - kept
                )),
            });
        }
        // before every statement: the lock is still this run's (renewed now), or
        // nothing of the step is sent
        run.fence().await.map_err(|e| {
            BackendError::LockLost(format!("{e} (step {} was not sent)", step.number))
        })?;
        sql::run_step(
            &*self.spark,
            &self.compiler.sql,
            run,
            plan,
            step,
            bound,
            progress,
        )
        .await
    }

    async fn measure(&self, tables: &[TableRef]) -> Result<Vec<Option<u64>>, BackendError> {
        self.lake.measure(tables).await
    }

    async fn history(
        &self,
        t: &TableRef,
    ) -> Result<Option<delta_operator_core::model::history::TableHistory>, BackendError> {
        self.lake.history(t).await
    }

    async fn read_schema(&self, s: &SchemaRef) -> Result<Option<ObservedSchema>, BackendError> {
        self.lake.read_schema(s).await
    }

    async fn run_schema(
        &self,
        s: &SchemaRef,
        step: &SchemaStep,
        statements: &[String],
    ) -> Result<StepOutcome, BackendError> {
        self.lake.run_schema(s, step, statements).await
    }

    async fn version(&self, t: &TableRef) -> Result<Option<u64>, BackendError> {
        self.lake.version(t).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_staging_copies_of_a_run_are_leftovers() {
        assert_eq!(
            staging_of("orders__delta_operator_staging_0a1b2c3d"),
            Some(("orders", "0a1b2c3d"))
        );
        assert_eq!(staging_of("orders__delta_operator_staging_0a1b2c3"), None);
        assert_eq!(staging_of("orders__delta_operator_staging_0a1b2c3g"), None);
        assert_eq!(staging_of("orders"), None);
        assert_eq!(staging_of("orders__delta_operator_clone_v3"), None);
    }

    #[test]
    fn statements_name_tables_by_path_and_a_drop_is_the_lakes() {
        let c = SparkCompiler::new("/data/lake/");
        let t = TableRef::new("main", "sales", "or`ders");
        assert_eq!(
            c.sql.names.table(&t),
            "delta.`/data/lake/main/sales/or``ders`"
        );
        assert!(by_the_lake(&Action::DropTable));
        assert!(!by_the_lake(&Action::DropColumn { name: "a".into() }));
    }
}
