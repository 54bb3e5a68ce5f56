//! A Spark Connect target for tests: a real Spark Connect server with Delta
//! (`e2e/spark-connect/with-spark-connect.sh`, started by `make test`; its URL in
//! SPARK_CONNECT_URL) and a lake root in a temp dir that the server and the
//! operator both see. Without the server these tests fail loudly.

use delta_operator::apply::{ApplyError, ApplyReport, StepStatus, apply};
use delta_operator::backend::spark::SparkConnectBackend;
use delta_operator::backend::sql::StatementResult;
use delta_operator::backend::{Backend, Extras};
use delta_operator::config::SparkConnectTarget;
use delta_operator::engine::{Inputs, read_and_plan};
use delta_operator::model::{ObservedTable, TableRef};
use delta_operator::plan::Plan;

use super::options;

/// The server's URL; panics (with how to start one) when no server was started.
pub fn url() -> String {
    match std::env::var("SPARK_CONNECT_URL") {
        Ok(u) if !u.is_empty() => u,
        _ => panic!(
            "SPARK_CONNECT_URL is not set: these tests need a Spark Connect server; run them under e2e/spark-connect/with-spark-connect.sh (make test does)"
        ),
    }
}

pub struct Spark {
    pub dir: tempfile::TempDir,
    pub backend: SparkConnectBackend,
}

impl Spark {
    /// A root whose schema `main.sales` exists, as the warehouse harness creates
    /// its schema (creating an absent one is tested on its own).
    pub fn new() -> Self {
        let spark = Self::empty();
        std::fs::create_dir_all(spark.dir.path().join("main/sales")).expect("the schema's folder");
        spark
    }

    /// A root with nothing in it, not even the schema's folder.
    pub fn empty() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let target = SparkConnectTarget {
            url: url(),
            root: dir.path().to_str().unwrap().to_string(),
            ..Default::default()
        };
        let backend =
            delta_operator::backend::open::spark_connect(&target, Some("test")).expect("backend");
        Spark { dir, backend }
    }

    /// The table's name in Spark SQL (by path).
    pub fn name(&self, t: &TableRef) -> String {
        self.backend.names().table(t)
    }

    /// The table's folder (what python deltalake reads).
    pub fn path(&self, t: &TableRef) -> std::path::PathBuf {
        self.backend.lake().table_path(t)
    }

    /// One statement on the server; panics unless it succeeds.
    pub async fn sql(&self, statement: &str) -> StatementResult {
        self.backend
            .client()
            .execute(statement, &|_: &str| {})
            .await
            .unwrap_or_else(|e| panic!("{statement}: {e}"))
    }

    /// `SELECT count(*)` through Spark.
    pub async fn count(&self, t: &TableRef) -> i64 {
        let r = self
            .sql(&format!("SELECT count(*) FROM {}", self.name(t)))
            .await;
        r.rows[0][0].as_deref().unwrap().parse().unwrap()
    }

    /// One query's rows, each joined by `,` (NULL as `null`), in the query's order.
    pub async fn rows(&self, query: &str) -> Vec<String> {
        self.sql(query)
            .await
            .rows
            .into_iter()
            .map(|r| {
                r.into_iter()
                    .map(|v| v.unwrap_or_else(|| "null".into()))
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .collect()
    }

    pub async fn plan(&self, inputs: &Inputs) -> Plan {
        read_and_plan(&self.backend, inputs).await.expect("read").0
    }

    /// Applies; `approve` approves the current plan when it needs it. Panics on a failed step.
    pub async fn apply(&self, inputs: &Inputs, approve: bool) -> ApplyReport {
        let report = self.apply_may_fail(inputs, approve).await.expect("apply");
        if let Some(failed) = report
            .steps
            .iter()
            .find(|s| matches!(s.status, StepStatus::Failed { .. }))
        {
            panic!("step failed: {failed:?}");
        }
        report
    }

    pub async fn apply_may_fail(
        &self,
        inputs: &Inputs,
        approve: bool,
    ) -> Result<ApplyReport, ApplyError> {
        let id = if approve {
            Some(self.plan(inputs).await.id)
        } else {
            None
        };
        apply(&self.backend, inputs, None, id.as_deref(), &options())
            .await
            .map(|(_, r)| r)
    }

    pub async fn read(&self, t: &TableRef) -> Option<ObservedTable> {
        self.backend
            .read(std::slice::from_ref(t), &Extras::none())
            .await
            .expect("read")
            .pop()
            .flatten()
    }
}
