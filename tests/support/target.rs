//! One harness over every backend a test can run here: the lake (delta-rs in a temp dir), the
//! Databricks warehouse emulator and a Spark Connect server. A scenario written once against
//! `Target` (`scenarios.rs`) runs on each, so a promise the backends share is proved by the same
//! steps and the same assertions on every engine, not by three tests that drift apart.
//!
//! What differs between the backends stays here: where a table lives, how the DeltaSchema names
//! it, and how a writer outside the operator appends rows and reads them back (delta-rs itself on
//! the lake, SQL on the others).

use std::sync::Arc;

use delta_operator::apply::{ApplyError, ApplyReport, StepStatus, apply};
use delta_operator::backend::{Backend, Extras};
use delta_operator::engine::{Inputs, read_and_plan};
use delta_operator::model::{ObservedTable, TableRef};
use delta_operator::plan::Plan;
use deltalake::arrow::array::{ArrayRef, Int64Array};

use super::spark::Spark;
use super::warehouse::Wh;
use super::{Lake, SCHEMA, manifests, options, tref};

/// A backend with a place of its own to make tables in.
#[allow(async_fn_in_trait)]
pub trait Target {
    type B: Backend;
    /// The backend, as the CLI and the controller drive it.
    fn backend(&self) -> &Self::B;
    /// The table `name` of the DeltaSchema `sales` that `manifests` declares.
    fn t(&self, name: &str) -> TableRef;
    /// The DeltaSchema `sales` as this target names it, then `docs` (tables, as
    /// `support::table` writes them).
    fn manifests(&self, docs: &str) -> Inputs;
    /// Appends one row per id (the table's other columns NULL), as a job outside the operator.
    async fn append_ids(&self, name: &str, ids: &[i64]);
    /// The table's `id` column, ascending, as another reader sees it.
    async fn ids(&self, name: &str) -> Vec<i64>;

    /// The table as the backend reads it, with every tag and grant.
    async fn read(&self, name: &str) -> Option<ObservedTable> {
        self.backend()
            .read(std::slice::from_ref(&self.t(name)), &Extras::everything())
            .await
            .expect("read")
            .pop()
            .flatten()
    }

    async fn plan(&self, inputs: &Inputs) -> Plan {
        read_and_plan(self.backend(), inputs).await.expect("read").0
    }

    /// Applies with the given approval (a plan id), as `delta-operator apply --approve` does.
    async fn apply_with(
        &self,
        inputs: &Inputs,
        approval: Option<&str>,
    ) -> Result<ApplyReport, ApplyError> {
        apply(self.backend(), inputs, None, approval, &options())
            .await
            .map(|(_, r)| r)
    }

    /// Applies; every step must succeed.
    async fn apply_ok(&self, inputs: &Inputs, approval: Option<&str>) -> ApplyReport {
        let report = self
            .apply_with(inputs, approval)
            .await
            .unwrap_or_else(|e| panic!("apply: {e}"));
        if let Some(failed) = report
            .steps
            .iter()
            .find(|s| matches!(s.status, StepStatus::Failed { .. }))
        {
            panic!("step failed: {failed:#?}");
        }
        report
    }
}

fn values(ids: &[i64]) -> String {
    ids.iter()
        .map(|i| format!("({i})"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn parse_ids(cells: Vec<String>) -> Vec<i64> {
    cells
        .iter()
        .map(|c| {
            c.parse()
                .unwrap_or_else(|_| panic!("an id that is not a number: {c:?}"))
        })
        .collect()
}

impl Target for Lake {
    type B = delta_operator::backend::lake::LakeBackend;
    fn backend(&self) -> &Self::B {
        &self.backend
    }
    fn t(&self, name: &str) -> TableRef {
        tref(name)
    }
    fn manifests(&self, docs: &str) -> Inputs {
        manifests(&format!("{SCHEMA}{docs}"))
    }
    async fn append_ids(&self, name: &str, ids: &[i64]) {
        let a: ArrayRef = Arc::new(Int64Array::from(ids.to_vec()));
        self.append(&tref(name), vec![("id", a)]).await;
    }
    async fn ids(&self, name: &str) -> Vec<i64> {
        parse_ids(
            self.query(&tref(name), "SELECT id FROM t ORDER BY id")
                .await,
        )
    }
}

impl Target for Spark {
    type B = delta_operator::backend::spark::SparkConnectBackend;
    fn backend(&self) -> &Self::B {
        &self.backend
    }
    fn t(&self, name: &str) -> TableRef {
        tref(name)
    }
    fn manifests(&self, docs: &str) -> Inputs {
        manifests(&format!("{SCHEMA}{docs}"))
    }
    async fn append_ids(&self, name: &str, ids: &[i64]) {
        let table = self.name(&tref(name));
        self.sql(&format!("INSERT INTO {table} (id) VALUES {}", values(ids)))
            .await;
    }
    async fn ids(&self, name: &str) -> Vec<i64> {
        let table = self.name(&tref(name));
        parse_ids(
            self.rows(&format!("SELECT id FROM {table} ORDER BY id"))
                .await,
        )
    }
}

impl Target for Wh {
    type B = delta_operator::backend::databricks::DatabricksBackend;
    fn backend(&self) -> &Self::B {
        &self.b
    }
    fn t(&self, name: &str) -> TableRef {
        Wh::t(self, name)
    }
    fn manifests(&self, docs: &str) -> Inputs {
        Wh::manifests(self, None, docs)
    }
    async fn append_ids(&self, name: &str, ids: &[i64]) {
        self.sql(&format!(
            "INSERT INTO {} (id) VALUES {}",
            self.q(name),
            values(ids)
        ))
        .await;
    }
    async fn ids(&self, name: &str) -> Vec<i64> {
        parse_ids(
            self.col(&format!("SELECT id FROM {} ORDER BY id", self.q(name)))
                .await,
        )
    }
}
