//! The workspace over HTTP: the SQL Statement Execution API 2.0, the SQL
//! Warehouses API and Unity Catalog REST 2.1, with PAT or OAuth M2M auth.
//!
//! Retries (with `backon`, within a time budget): 429 and 503 (honouring
//! `Retry-After`, integer seconds), and connections that fail before the
//! request is sent. A request that was sent but got no answer is resent only
//! when it is safe to repeat (reads, polls, cancels, warehouse starts, and
//! read-only statements); a write statement that may have run is reported as
//! such, never resent.
//!
//! One file per idea: http.rs (auth, one call with its retries, paging, what
//! a failed call means), warehouse.rs (starting the warehouse), statements.rs
//! (run, poll, collect and cancel statements), workspace.rs (the Workspace
//! files API), catalog.rs (Unity Catalog reads).

mod catalog;
mod http;
mod statements;
mod warehouse;
mod workspace;

pub use workspace::{base64_decode, base64_encode};

use std::sync::Mutex as StdMutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use url::Url;

use crate::auth::{CachedToken, Credentials};
use crate::error::WorkspaceError;
use delta_operator_backend::{BackendError, Progress};
use delta_operator_sql::{SqlRunner, StatementError, StatementResult};

/// Tunables; the defaults suit a real workspace, tests shrink the waits.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// `https://<workspace host>` (a bare host gets `https://`).
    pub host: String,
    pub warehouse_id: String,
    pub credentials: Credentials,
    /// How long the POST waits for a result before answering PENDING/RUNNING (0 or 5–50 s).
    pub wait_timeout: Duration,
    /// Between polls of a running statement.
    pub poll_interval: Duration,
    /// How long a stopped warehouse may take to start (5 minutes for a classic one).
    pub warehouse_start_timeout: Duration,
    /// Between polls of a starting warehouse.
    pub warehouse_poll: Duration,
    /// A statement PENDING this long makes us ask the Warehouses API why.
    pub pending_check_after: Duration,
    /// Total time retries of one request may take.
    pub retry_budget: Duration,
    /// How long a read-only statement may run: past it, it is cancelled, then reported.
    pub read_budget: Duration,
    pub retry_min_delay: Duration,
    pub max_retries: usize,
    /// Per HTTP request (not per statement: statements are polled).
    pub request_timeout: Duration,
}

impl ClientConfig {
    pub fn new(host: &str, warehouse_id: &str, credentials: Credentials) -> Self {
        ClientConfig {
            host: host.to_string(),
            warehouse_id: warehouse_id.to_string(),
            credentials,
            wait_timeout: Duration::from_secs(10),
            poll_interval: Duration::from_secs(1),
            warehouse_start_timeout: Duration::from_secs(300),
            warehouse_poll: Duration::from_secs(5),
            pending_check_after: Duration::from_secs(10),
            retry_budget: Duration::from_secs(120),
            read_budget: Duration::from_secs(300),
            retry_min_delay: Duration::from_secs(1),
            max_retries: 8,
            request_timeout: Duration::from_secs(120),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The workspace refused, in its own words.
    #[error("{0}")]
    Workspace(Box<WorkspaceError>),
    /// Worth another try later (network trouble, rate limits past the budget).
    #[error("{0}")]
    Transient(String),
    /// A write statement was sent and no answer came back.
    #[error("{0}")]
    MayHaveRun(String),
    /// A write statement was submitted, and then its state could not be read: it
    /// may still be running, so it is not reported as failed (its id is kept).
    #[error("{message}")]
    StateUnknown { statement: String, message: String },
    #[error("{0}")]
    Canceled(String),
    #[error("{0}")]
    Config(String),
}

/// The SQL crate's view of a failure: a statement that was sent without an
/// answer is worth another try (the executor re-reads first); the rest map
/// one to one.
impl From<ClientError> for StatementError {
    fn from(e: ClientError) -> Self {
        match e {
            ClientError::Workspace(w) => StatementError::Refused(w),
            ClientError::Transient(m) | ClientError::MayHaveRun(m) => StatementError::Transient(m),
            ClientError::StateUnknown { statement, message } => {
                StatementError::StateUnknown { statement, message }
            }
            ClientError::Canceled(m) => StatementError::Canceled(m),
            ClientError::Config(m) => StatementError::Config(m),
        }
    }
}

impl From<ClientError> for BackendError {
    fn from(e: ClientError) -> Self {
        StatementError::from(e).into()
    }
}

impl SqlRunner for DatabricksClient {
    fn backend(&self) -> delta_operator_core::plan::BackendKind {
        delta_operator_core::plan::BackendKind::Databricks
    }

    async fn execute(
        &self,
        statement: &str,
        progress: Progress<'_>,
    ) -> Result<StatementResult, StatementError> {
        DatabricksClient::execute(self, statement, progress)
            .await
            .map_err(Into::into)
    }
}

pub struct DatabricksClient {
    http: reqwest::Client,
    base: Url,
    cfg: ClientConfig,
    token: tokio::sync::Mutex<Option<CachedToken>>,
    /// Every statement running now (reads and an apply's step may run side by side), for `cancel`.
    running: StdMutex<Vec<String>>,
    /// Of those, the ones that may change a table (not read-only), for status.
    writing: StdMutex<Vec<String>>,
    /// Statements submitted whose id is not known yet.
    submitting: AtomicUsize,
    warehouse_ready: AtomicBool,
    /// The warehouse's state while a call waits for it to start (for status).
    warehouse_waiting: StdMutex<Option<String>>,
    statements: AtomicU64,
    requests: AtomicU64,
    token_fetches: AtomicU64,
}

impl std::fmt::Debug for DatabricksClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DatabricksClient")
            .field("host", &self.base.as_str())
            .field("warehouse_id", &self.cfg.warehouse_id)
            .finish_non_exhaustive()
    }
}

impl DatabricksClient {
    pub fn new(cfg: ClientConfig) -> Result<Self, ClientError> {
        // reqwest (aws-lc-rs) and kube (ring) both bring a rustls provider: pick one
        let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
        let host = cfg.host.trim().trim_end_matches('/');
        if host.is_empty() {
            return Err(ClientError::Config(
                "no Databricks host: set the target's host or DATABRICKS_HOST".into(),
            ));
        }
        let with_scheme = if host.contains("://") {
            host.to_string()
        } else {
            format!("https://{host}")
        };
        let base = Url::parse(&format!("{with_scheme}/"))
            .map_err(|e| ClientError::Config(format!("Databricks host '{host}': {e}")))?;
        if cfg.warehouse_id.trim().is_empty() {
            return Err(ClientError::Config(
                "no SQL warehouse: set the target's warehouseId".into(),
            ));
        }
        let http = reqwest::Client::builder()
            .timeout(cfg.request_timeout)
            .user_agent(concat!("delta-operator/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ClientError::Config(format!("HTTP client: {e}")))?;
        Ok(DatabricksClient {
            http,
            base,
            cfg,
            token: tokio::sync::Mutex::new(None),
            running: StdMutex::new(Vec::new()),
            writing: StdMutex::new(Vec::new()),
            submitting: AtomicUsize::new(0),
            warehouse_ready: AtomicBool::new(false),
            warehouse_waiting: StdMutex::new(None),
            statements: AtomicU64::new(0),
            requests: AtomicU64::new(0),
            token_fetches: AtomicU64::new(0),
        })
    }

    pub fn config(&self) -> &ClientConfig {
        &self.cfg
    }

    /// SQL statements submitted (each counted once, however often it was polled).
    pub fn statements(&self) -> u64 {
        self.statements.load(Ordering::Relaxed)
    }

    /// HTTP requests sent, of every kind.
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// OAuth tokens fetched.
    pub fn token_fetches(&self) -> u64 {
        self.token_fetches.load(Ordering::Relaxed)
    }

    /// `base` + path segments, each percent-encoded (table names may hold anything).
    fn url(&self, segments: &[&str]) -> Result<Url, ClientError> {
        let mut u = self.base.clone();
        u.path_segments_mut()
            .map_err(|_| {
                ClientError::Config(format!("Databricks host {} cannot take a path", self.base))
            })?
            .pop_if_empty()
            .extend(segments);
        Ok(u)
    }
}

/// The workspace's `error_code` of a refusal, if it is one.
pub fn error_code(e: &ClientError) -> Option<&str> {
    match e {
        ClientError::Workspace(w) => w.error_code.as_deref(),
        _ => None,
    }
}

/// A refusal saying the path (or its parent folder) does not exist.
fn does_not_exist(e: &ClientError) -> bool {
    error_code(e) == Some("RESOURCE_DOES_NOT_EXIST")
}
