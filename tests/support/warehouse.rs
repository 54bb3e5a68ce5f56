//! The warehouse emulator (`e2e/warehouse/`, started by `make test`) as tests reach it. A
//! variable it needs and does not find fails the test loudly; it never skips.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use delta_operator::apply::{ApplyError, ApplyReport, StepStatus, apply};
use delta_operator::backend::databricks::DatabricksBackend;
use delta_operator::backend::databricks::auth::{Credentials, Secret};
use delta_operator::backend::databricks::client::ClientConfig;
use delta_operator::backend::sql::StatementResult;
use delta_operator::backend::{Backend, Extras};
use delta_operator::engine::{Inputs, read_and_plan};
use delta_operator::model::{ObservedTable, TableRef};
use delta_operator::plan::Plan;
use delta_operator::plan::render::text::render;

/// A variable `make test` exports for the emulator: DATABRICKS_HOST, DATABRICKS_TOKEN,
/// DATABRICKS_WAREHOUSE_ID, WAREHOUSE_URL (its admin endpoint).
pub fn env(k: &str) -> String {
    std::env::var(k).ok().filter(|v| !v.trim().is_empty()).unwrap_or_else(|| {
        // the test binary's name, without cargo's hash, for the command to rerun it
        let test = std::env::current_exe().ok().and_then(|p| Some(p.file_stem()?.to_str()?.split('-').next()?.to_string())).unwrap_or_else(|| "NAME".into());
        panic!("{k} is not set: this test needs the warehouse emulator. Run it through `make test`, or `e2e/warehouse/with-warehouse.sh cargo test --test {test}`")
    })
}

/// A backend on the emulator with short polls (statements take 0.1–2 s there).
pub fn backend() -> DatabricksBackend {
    let creds = Credentials::Token(Secret::new(env("DATABRICKS_TOKEN")));
    let mut cfg = ClientConfig::new(
        &env("DATABRICKS_HOST"),
        &env("DATABRICKS_WAREHOUSE_ID"),
        creds,
    );
    cfg.poll_interval = Duration::from_millis(100);
    cfg.warehouse_poll = Duration::from_millis(200);
    cfg.retry_min_delay = Duration::from_millis(100);
    DatabricksBackend::new(cfg).expect("backend")
}

/// Sets the emulator's fault knobs (`e2e/warehouse/server.py`'s `Faults.FIELDS`) through its
/// admin endpoint; a knob it does not know fails the test.
pub fn faults(body: serde_json::Value) {
    let url = format!("{}/_emulator/faults", env("WAREHOUSE_URL"));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let r = reqwest::Client::new()
            .post(&url)
            .json(&body)
            .send()
            .await
            .expect("the emulator's admin endpoint");
        assert!(r.status().is_success(), "{url}: {}", r.status());
    });
}

/// The emulator's own account of itself (`GET /_emulator/requests` past every entry): its
/// `warehouse_state`, `warehouse_starts`, `statements` and `total_requests`.
pub fn emulator_state() -> serde_json::Value {
    let url = format!(
        "{}/_emulator/requests?since=1000000000",
        env("WAREHOUSE_URL")
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let r = reqwest::Client::new()
            .get(&url)
            .send()
            .await
            .expect("the emulator's admin endpoint");
        assert!(r.status().is_success(), "{url}: {}", r.status());
        r.json().await.expect("the emulator's JSON")
    })
}

/// Runs statements on the emulator as a user outside the operator would, each to its end.
pub async fn sql(b: &DatabricksBackend, statements: &[String]) {
    for s in statements {
        b.client()
            .execute(s, &|_: &str| {})
            .await
            .unwrap_or_else(|e| panic!("{s}: {e}"));
    }
}

/// The mask functions the suites' manifests name (`main.sec.mask_email`, `main.sec.mask_id`):
/// a mask naming a function that does not exist fails (ROUTINE_NOT_FOUND), on Databricks and
/// on the emulator. Idempotent, and safe from tests running at once.
pub const MASK_FUNCTIONS: [&str; 3] = [
    "CREATE SCHEMA IF NOT EXISTS main.sec",
    "CREATE FUNCTION IF NOT EXISTS main.sec.mask_email(email STRING) RETURNS STRING RETURN email",
    "CREATE FUNCTION IF NOT EXISTS main.sec.mask_id(id BIGINT, num BIGINT) RETURNS BIGINT RETURN id",
];

/// A fresh catalog with a `sales` schema: each test its own on the shared emulator.
pub async fn catalog_with_sales(b: &DatabricksBackend, catalog: &str) {
    sql(
        b,
        &[
            format!("CREATE CATALOG {catalog}"),
            format!("CREATE SCHEMA {catalog}.sales"),
        ],
    )
    .await;
}

/// A test's own schema on the shared emulator and a backend that shares no reads, so that
/// statements sent outside it (set-up, someone else's writes) are seen at once. Every
/// warehouse suite works through one of these; what a suite writes differently (its manifests)
/// stays in the suite.
pub struct Wh {
    pub b: DatabricksBackend,
    pub schema: String,
}

static SEQ: AtomicUsize = AtomicUsize::new(0);

impl Wh {
    /// Creates `main.<prefix>_<tag>_<pid>_<n>`: unique across tests and concurrent runs.
    pub async fn new(prefix: &str, tag: &str) -> Wh {
        let schema = format!(
            "{prefix}_{tag}_{}_{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::SeqCst)
        );
        let wh = Wh {
            b: backend().with_share_window(Duration::ZERO),
            schema,
        };
        wh.sql(&format!("CREATE SCHEMA main.{}", wh.schema)).await;
        wh
    }

    pub fn t(&self, name: &str) -> TableRef {
        TableRef::new("main", &self.schema, name)
    }

    /// The table's three-part name, for statements.
    pub fn q(&self, name: &str) -> String {
        format!("main.{}.{name}", self.schema)
    }

    /// The DeltaSchema `sales` naming this schema (in `mode`, or the target's default),
    /// followed by `docs` (tables, as `support::table` writes them).
    pub fn manifests(&self, mode: Option<&str>, docs: &str) -> Inputs {
        let mode = mode.map(|m| format!(", mode: {m}")).unwrap_or_default();
        let schema = format!(
            "apiVersion: delta-operator.io/v1alpha1\nkind: DeltaSchema\nmetadata: {{name: sales}}\nspec: {{catalog: main, name: {}{mode}}}\n",
            self.schema
        );
        super::manifests(&format!("{schema}{docs}"))
    }

    pub async fn plan(&self, inputs: &Inputs) -> Plan {
        read_and_plan(&self.b, inputs).await.expect("read").0
    }

    /// Applies, approving the plan as it reads now when `approve`.
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
        apply(&self.b, inputs, None, id.as_deref(), &super::options())
            .await
            .map(|(_, r)| r)
    }

    /// Applies; the apply must run (its steps may fail: the report says).
    pub async fn apply_report(&self, inputs: &Inputs, approve: bool) -> ApplyReport {
        self.apply_may_fail(inputs, approve)
            .await
            .unwrap_or_else(|e| panic!("apply: {e}"))
    }

    /// Applies; every step must succeed.
    pub async fn apply_ok(&self, inputs: &Inputs, approve: bool) -> ApplyReport {
        let report = self.apply_report(inputs, approve).await;
        if let Some(failed) = report
            .steps
            .iter()
            .find(|s| matches!(s.status, StepStatus::Failed { .. }))
        {
            panic!("step failed: {failed:#?}");
        }
        report
    }

    /// Plan → apply → plan again: the second plan must be empty.
    pub async fn converge(&self, inputs: &Inputs, approve: bool) -> (Plan, ApplyReport) {
        let plan = self.plan(inputs).await;
        let report = self.apply_ok(inputs, approve).await;
        let again = self.plan(inputs).await;
        assert!(
            !again.has_changes(),
            "the plan after apply must be empty:\n{}",
            render(&again)
        );
        (plan, report)
    }

    /// The table as the backend reads it, with every tag and grant.
    pub async fn read(&self, name: &str) -> Option<ObservedTable> {
        self.b
            .read(std::slice::from_ref(&self.t(name)), &Extras::everything())
            .await
            .expect("read")
            .pop()
            .flatten()
    }

    /// Runs a statement to its end, as a user outside the operator would.
    pub async fn sql(&self, s: &str) -> StatementResult {
        self.b
            .client()
            .execute(s, &|_: &str| {})
            .await
            .unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    /// Every row as `cell | cell | …` (NULL spelled out).
    pub async fn rows(&self, s: &str) -> Vec<String> {
        self.sql(s)
            .await
            .rows
            .into_iter()
            .map(|r| {
                r.into_iter()
                    .map(|c| c.unwrap_or_else(|| "NULL".into()))
                    .collect::<Vec<_>>()
                    .join(" | ")
            })
            .collect()
    }

    /// The first column of every row, as text.
    pub async fn col(&self, s: &str) -> Vec<String> {
        self.sql(s)
            .await
            .rows
            .into_iter()
            .map(|r| r[0].clone().unwrap_or_else(|| "NULL".into()))
            .collect()
    }

    /// The first cell of the first row ("" for NULL).
    pub async fn scalar(&self, s: &str) -> String {
        self.sql(s).await.rows[0][0].clone().unwrap_or_default()
    }
}
