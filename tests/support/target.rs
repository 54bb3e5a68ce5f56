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
    /// A job outside the operator (a pipeline) creates `name` with `id bigint, amount int`.
    async fn outside_create(&self, name: &str);
    /// The job adds a nullable string column.
    async fn outside_add_column(&self, name: &str, column: &str);
    /// The job sets the table comment (one it owns: the spec does not declare it).
    async fn outside_table_comment(&self, name: &str, comment: &str);

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
    async fn outside_create(&self, name: &str) {
        use deltalake::kernel::{DataType, PrimitiveType, StructField};
        let url = self.url(&tref(name));
        std::fs::create_dir_all(url.to_file_path().expect("a folder")).expect("the folder");
        let t = deltalake::DeltaTable::try_from_url(url)
            .await
            .expect("table url");
        t.create()
            .with_table_name(name)
            .with_columns([
                StructField::new("id", DataType::Primitive(PrimitiveType::Long), true),
                StructField::new("amount", DataType::Primitive(PrimitiveType::Integer), true),
            ])
            .await
            .expect("the job creates its table");
    }
    async fn outside_add_column(&self, name: &str, column: &str) {
        use deltalake::kernel::{DataType, PrimitiveType, StructField};
        let t = deltalake::open_table(self.url(&tref(name)))
            .await
            .expect("open");
        t.add_columns()
            .with_fields([StructField::new(
                column,
                DataType::Primitive(PrimitiveType::String),
                true,
            )])
            .await
            .expect("the job adds a column");
    }
    async fn outside_table_comment(&self, name: &str, comment: &str) {
        let t = deltalake::open_table(self.url(&tref(name)))
            .await
            .expect("open");
        let update = deltalake::operations::update_table_metadata::TableMetadataUpdate {
            name: None,
            description: Some(comment.into()),
        };
        t.update_table_metadata()
            .with_update(update)
            .await
            .expect("the job comments its table");
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
    async fn outside_create(&self, name: &str) {
        let table = self.name(&tref(name));
        self.sql(&format!(
            "CREATE TABLE {table} (id BIGINT, amount INT) USING delta"
        ))
        .await;
    }
    async fn outside_add_column(&self, name: &str, column: &str) {
        let table = self.name(&tref(name));
        self.sql(&format!(
            "ALTER TABLE {table} ADD COLUMNS (`{column}` STRING)"
        ))
        .await;
    }
    async fn outside_table_comment(&self, name: &str, comment: &str) {
        // Spark names a path table only in ALTER (COMMENT ON TABLE wants a catalog name)
        let table = self.name(&tref(name));
        self.sql(&format!(
            "ALTER TABLE {table} SET TBLPROPERTIES ('comment' = '{comment}')"
        ))
        .await;
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
    async fn outside_create(&self, name: &str) {
        self.sql(&format!(
            "CREATE TABLE {} (id BIGINT, amount INT) USING delta",
            self.q(name)
        ))
        .await;
    }
    async fn outside_add_column(&self, name: &str, column: &str) {
        self.sql(&format!(
            "ALTER TABLE {} ADD COLUMN `{column}` STRING",
            self.q(name)
        ))
        .await;
    }
    async fn outside_table_comment(&self, name: &str, comment: &str) {
        self.sql(&format!("COMMENT ON TABLE {} IS '{comment}'", self.q(name)))
            .await;
    }
}
