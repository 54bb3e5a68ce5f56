//! The workspace over HTTP: the SQL Statement Execution API 2.0, the SQL
//! Warehouses API and Unity Catalog REST 2.1, with PAT or OAuth M2M auth.
//!
//! Retries (with `backon`, within a time budget): 429 and 503 (honouring
//! `Retry-After`, integer seconds), and connections that fail before the
//! request is sent. A request that was sent but got no answer is resent only
//! when it is safe to repeat (reads, polls, cancels, warehouse starts, and
//! read-only statements); a write statement that may have run is reported as
//! such, never resent.

use std::sync::Mutex as StdMutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use backon::{ExponentialBuilder, Retryable};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use url::Url;

use super::auth::{CachedToken, Credentials, Secret};
use super::error::{FromWorkspace, WorkspaceError};
use delta_operator_backend::{BackendError, Progress};
use delta_operator_sql::{Cancel, SqlRunner, StatementError, StatementResult, is_read_only};

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

/// Whether a request may be sent again after it left and no answer came.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Resend {
    Safe,
    /// A write statement: it may have run.
    Never,
}

/// One attempt's failure, and whether another attempt may follow.
#[derive(Debug)]
struct Attempt {
    error: ClientError,
    retry: bool,
    /// The server's Retry-After.
    after: Option<Duration>,
}

impl Attempt {
    fn stop(error: ClientError) -> Self {
        Attempt {
            error,
            retry: false,
            after: None,
        }
    }
}

/// Counts a submission while it is in flight (also when its future is dropped).
struct Counted<'a>(&'a AtomicUsize);

impl<'a> Counted<'a> {
    fn new(n: &'a AtomicUsize) -> Self {
        n.fetch_add(1, Ordering::Relaxed);
        Counted(n)
    }
}

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Lists a statement as running while it is followed (also when its future is dropped).
struct Listed<'a> {
    list: &'a StdMutex<Vec<String>>,
    id: String,
}

impl<'a> Listed<'a> {
    fn new(list: &'a StdMutex<Vec<String>>, id: &str) -> Self {
        list.lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(id.to_string());
        Listed {
            list,
            id: id.to_string(),
        }
    }
}

impl Drop for Listed<'_> {
    fn drop(&mut self) {
        let mut list = self.list.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(i) = list.iter().position(|x| *x == self.id) {
            list.remove(i);
        }
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

    // ---------------------------------------------------------------- auth

    async fn bearer(&self) -> Result<Secret, Attempt> {
        let (client_id, client_secret) = match &self.cfg.credentials {
            Credentials::Token(t) => return Ok(t.clone()),
            Credentials::OAuth {
                client_id,
                client_secret,
            } => (client_id, client_secret),
        };
        // held across the fetch, so concurrent callers wait for one token
        let mut cached = self.token.lock().await;
        if let Some(t) = cached.as_ref().filter(|t| t.fresh(Instant::now())) {
            return Ok(t.token.clone());
        }
        let url = self.url(&["oidc", "v1", "token"]).map_err(Attempt::stop)?;
        self.requests.fetch_add(1, Ordering::Relaxed);
        self.token_fetches.fetch_add(1, Ordering::Relaxed);
        let resp = self
            .http
            .post(url)
            .basic_auth(client_id, Some(client_secret.expose()))
            .header(
                reqwest::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .body("grant_type=client_credentials&scope=all-apis")
            .send()
            .await
            .map_err(|e| Attempt {
                error: ClientError::Transient(format!(
                    "fetching an OAuth token: {}",
                    without_url(&e)
                )),
                retry: true,
                after: None,
            })?;
        let answer = read(resp).await.map_err(|m| Attempt {
            error: ClientError::Transient(format!("fetching an OAuth token: {m}")),
            retry: true,
            after: None,
        })?;
        if !answer.status.is_success() {
            return Err(http_failure(answer));
        }
        let v: Value = serde_json::from_str(&answer.text).unwrap_or(Value::Null);
        let token = v
            .get("access_token")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                Attempt::stop(ClientError::Config(
                    "the OAuth token response has no access_token".into(),
                ))
            })?;
        let expires_in =
            Duration::from_secs(v.get("expires_in").and_then(Value::as_u64).unwrap_or(3600));
        let fresh = CachedToken::new(Secret::new(token), expires_in, Instant::now());
        let secret = fresh.token.clone();
        *cached = Some(fresh);
        Ok(secret)
    }

    // ------------------------------------------------------------ requests

    /// One API call with retries; the parsed JSON body (Null when empty).
    async fn call(
        &self,
        method: Method,
        url: Url,
        body: Option<&Value>,
        resend: Resend,
    ) -> Result<Value, ClientError> {
        self.call_with_id(method, url, body, resend)
            .await
            .map(|(v, _)| v)
    }

    /// `call`, with the answer's `x-request-id`.
    async fn call_with_id(
        &self,
        method: Method,
        url: Url,
        body: Option<&Value>,
        resend: Resend,
    ) -> Result<(Value, Option<String>), ClientError> {
        let started = Instant::now();
        let budget = self.cfg.retry_budget;
        let attempt = || async {
            let token = self.bearer().await?;
            let mut req = self
                .http
                .request(method.clone(), url.clone())
                .bearer_auth(token.expose());
            if let Some(b) = body {
                req = req.json(b);
            }
            self.requests.fetch_add(1, Ordering::Relaxed);
            let resp = req
                .send()
                .await
                .map_err(|e| lost(&e, resend, &method, &url))?;
            let answer = read(resp)
                .await
                .map_err(|m| lost_body(m, resend, &method, &url))?;
            if answer.status == StatusCode::UNAUTHORIZED {
                // a refused OAuth token is fetched again next time
                *self.token.lock().await = None;
            }
            if !answer.status.is_success() {
                return Err(http_failure(answer));
            }
            if answer.text.trim().is_empty() {
                return Ok((Value::Null, answer.request_id));
            }
            serde_json::from_str(&answer.text)
                .map(|v| (v, answer.request_id))
                .map_err(|e| {
                    Attempt::stop(ClientError::Transient(format!(
                        "{method} {}: unreadable answer: {e}",
                        url.path()
                    )))
                })
        };
        attempt
            .retry(ExponentialBuilder::default().with_min_delay(self.cfg.retry_min_delay).with_max_delay(Duration::from_secs(30)).with_max_times(self.cfg.max_retries).with_jitter())
            .sleep(tokio::time::sleep)
            .when(|a: &Attempt| a.retry && started.elapsed() + a.after.unwrap_or_default() <= budget)
            .adjust(|a: &Attempt, backoff| backoff.map(|d| a.after.unwrap_or(d)))
            .notify(|a: &Attempt, d| tracing::warn!(error = %a.error, wait = ?d, "Databricks request failed; retrying"))
            .await
            .map_err(|a| a.error)
    }

    async fn get(&self, segments: &[&str], query: &[(&str, &str)]) -> Result<Value, ClientError> {
        let mut url = self.url(segments)?;
        if !query.is_empty() {
            url.query_pairs_mut().extend_pairs(query);
        }
        self.call(Method::GET, url, None, Resend::Safe).await
    }

    // ------------------------------------------------------------ warehouses

    /// The warehouse's `state` (STARTING | RUNNING | STOPPING | STOPPED | DELETING | DELETED).
    pub async fn warehouse_state(&self) -> Result<String, ClientError> {
        let v = self
            .get(
                &["api", "2.0", "sql", "warehouses", &self.cfg.warehouse_id],
                &[],
            )
            .await?;
        Ok(v.get("state")
            .and_then(Value::as_str)
            .unwrap_or("UNKNOWN")
            .to_string())
    }

    /// Makes sure the warehouse runs: a stopped one is started and waited for
    /// (reported as "warehouse starting"), up to `warehouse_start_timeout`.
    pub async fn ensure_warehouse(&self, progress: Progress<'_>) -> Result<(), ClientError> {
        let deadline = Instant::now() + self.cfg.warehouse_start_timeout;
        let mut started = false;
        loop {
            let state = self.warehouse_state().await?;
            match state.as_str() {
                "RUNNING" => {
                    self.warehouse_ready.store(true, Ordering::Relaxed);
                    *self
                        .warehouse_waiting
                        .lock()
                        .unwrap_or_else(|p| p.into_inner()) = None;
                    return Ok(());
                }
                "DELETED" | "DELETING" => {
                    return Err(ClientError::Config(format!(
                        "SQL warehouse {} is {state}",
                        self.cfg.warehouse_id
                    )));
                }
                "STOPPED" if !started => {
                    tracing::info!(warehouse = %self.cfg.warehouse_id, "starting the SQL warehouse");
                    let url = self.url(&[
                        "api",
                        "2.0",
                        "sql",
                        "warehouses",
                        &self.cfg.warehouse_id,
                        "start",
                    ])?;
                    self.call(Method::POST, url, Some(&json!({})), Resend::Safe)
                        .await?;
                    started = true;
                }
                _ => {}
            }
            self.warehouse_ready.store(false, Ordering::Relaxed);
            *self
                .warehouse_waiting
                .lock()
                .unwrap_or_else(|p| p.into_inner()) = Some(state.clone());
            let waited = self
                .cfg
                .warehouse_start_timeout
                .saturating_sub(deadline.saturating_duration_since(Instant::now()));
            progress(&format!(
                "warehouse starting ({state}, waited {}s)",
                waited.as_secs()
            ));
            if Instant::now() >= deadline {
                *self
                    .warehouse_waiting
                    .lock()
                    .unwrap_or_else(|p| p.into_inner()) = None;
                return Err(ClientError::Transient(format!(
                    "SQL warehouse {} did not start within {}s (last state {state}); nothing was run",
                    self.cfg.warehouse_id,
                    self.cfg.warehouse_start_timeout.as_secs()
                )));
            }
            tokio::time::sleep(
                self.cfg
                    .warehouse_poll
                    .min(deadline.saturating_duration_since(Instant::now())),
            )
            .await;
        }
    }

    /// `Some(state)` while a call waits for the warehouse to start.
    pub fn warehouse_waiting(&self) -> Option<String> {
        self.warehouse_waiting
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// After a refusal that may mean "not started": asks the Warehouses API.
    /// Running → the refusal stands, at once. Stopped or starting → nothing ran;
    /// wait for it and say so (`Ok`: send again).
    async fn refused_or_starting(
        &self,
        refusal: WorkspaceError,
        progress: Progress<'_>,
    ) -> Result<(), ClientError> {
        if self.warehouse_state().await? == "RUNNING" {
            return Err(ClientError::Workspace(Box::new(refusal)));
        }
        self.ensure_warehouse(progress).await
    }

    // ------------------------------------------------------------ statements

    /// Runs one statement to its end and returns all its rows.
    pub async fn execute(
        &self,
        statement: &str,
        progress: Progress<'_>,
    ) -> Result<StatementResult, ClientError> {
        if !self.warehouse_ready.load(Ordering::Relaxed) {
            self.ensure_warehouse(progress).await?;
        }
        let resend = if is_read_only(statement) {
            Resend::Safe
        } else {
            Resend::Never
        };
        self.statements.fetch_add(1, Ordering::Relaxed);
        let wait = self.cfg.wait_timeout.as_secs();
        let wait = if wait == 0 { 0 } else { wait.clamp(5, 50) };
        let body = json!({
            "statement": statement,
            "warehouse_id": self.cfg.warehouse_id,
            "wait_timeout": format!("{wait}s"),
            "on_wait_timeout": "CONTINUE",
            "disposition": "INLINE",
            "format": "JSON_ARRAY",
        });
        let url = self.url(&["api", "2.0", "sql", "statements"])?;
        loop {
            let sent = Instant::now();
            let submitted = {
                let _submitting = Counted::new(&self.submitting);
                self.call_with_id(Method::POST, url.clone(), Some(&body), resend)
                    .await
            };
            let (v, request_id) = match submitted {
                Ok(answer) => answer,
                Err(ClientError::Workspace(w)) if starting_words(&w) => {
                    self.refused_or_starting(*w, progress).await?;
                    continue;
                }
                Err(e) => return Err(e),
            };
            let id = v
                .get("statement_id")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let outcome = {
                // listed while followed; a follow dropped half-way (a shutdown) unlists it too
                let _running = Listed::new(&self.running, &id);
                delta_operator_backend::StatementLog::note(&id);
                let read_only = resend == Resend::Safe;
                let _writing = (!read_only).then(|| Listed::new(&self.writing, &id));
                self.follow(&id, v, request_id, progress, sent, read_only)
                    .await
            };
            *self
                .warehouse_waiting
                .lock()
                .unwrap_or_else(|p| p.into_inner()) = None;
            match outcome {
                Err(ClientError::Workspace(w)) if starting_words(&w) => {
                    self.refused_or_starting(*w, progress).await?;
                }
                other => return other,
            }
        }
    }

    /// Polls a submitted statement (sent at `since`) to a terminal state and gathers its chunks.
    async fn follow(
        &self,
        id: &str,
        mut v: Value,
        mut request_id: Option<String>,
        progress: Progress<'_>,
        since: Instant,
        read_only: bool,
    ) -> Result<StatementResult, ClientError> {
        let mut asked_warehouse = false;
        loop {
            let status = v.get("status").cloned().unwrap_or(Value::Null);
            let state = status
                .get("state")
                .and_then(Value::as_str)
                .unwrap_or("UNKNOWN");
            match state {
                "SUCCEEDED" => return self.collect(id, &v).await,
                "FAILED" => {
                    return Err(ClientError::Workspace(Box::new(
                        WorkspaceError::from_statement(id, &status, request_id),
                    )));
                }
                "CANCELED" => {
                    return Err(ClientError::Canceled(format!(
                        "statement {id} was canceled"
                    )));
                }
                "CLOSED" => {
                    return Err(ClientError::Transient(format!(
                        "statement {id} finished but its result is gone (CLOSED)"
                    )));
                }
                "PENDING" | "RUNNING" => {}
                other => {
                    return Err(ClientError::Transient(format!(
                        "statement {id} is in an unknown state '{other}'"
                    )));
                }
            }
            // PENDING also covers a warehouse that is starting: tell the user which
            if state == "PENDING"
                && !asked_warehouse
                && since.elapsed() >= self.cfg.pending_check_after
            {
                asked_warehouse = true;
                if let Ok(w) = self.warehouse_state().await
                    && w != "RUNNING"
                {
                    *self
                        .warehouse_waiting
                        .lock()
                        .unwrap_or_else(|p| p.into_inner()) = Some(w.clone());
                    progress(&format!(
                        "warehouse starting ({w}, waited {}s)",
                        since.elapsed().as_secs()
                    ));
                }
            }
            // a read past its budget is cancelled before it is reported
            if read_only && since.elapsed() >= self.cfg.read_budget {
                let cancel = self.url(&["api", "2.0", "sql", "statements", id, "cancel"])?;
                let asked = self.call(Method::POST, cancel, None, Resend::Safe).await;
                return Err(ClientError::Transient(format!(
                    "read statement {id} ran past the read budget of {}s and {}",
                    self.cfg.read_budget.as_secs(),
                    match asked {
                        Ok(_) => "was cancelled".to_string(),
                        Err(e) => format!("could not be cancelled ({e}); it may still be running"),
                    }
                )));
            }
            tokio::time::sleep(self.cfg.poll_interval).await;
            let poll = self
                .call_with_id(
                    Method::GET,
                    self.url(&["api", "2.0", "sql", "statements", id])?,
                    None,
                    Resend::Safe,
                )
                .await;
            (v, request_id) = match poll {
                Ok(answer) => answer,
                // polls failing past their retries say nothing of the statement: a write is
                // not reported failed (it may still run and change the table)
                Err(e) if !read_only => {
                    return Err(ClientError::StateUnknown {
                        statement: id.to_string(),
                        message: format!(
                            "the state of statement {id} could not be read ({e}); it may still be running"
                        ),
                    });
                }
                Err(e) => return Err(e),
            };
        }
    }

    async fn collect(&self, id: &str, v: &Value) -> Result<StatementResult, ClientError> {
        let columns = v
            .pointer("/manifest/schema/columns")
            .and_then(Value::as_array)
            .map(|cs| {
                cs.iter()
                    .map(|c| {
                        c.get("name")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_string()
                    })
                    .collect()
            })
            .unwrap_or_default();
        let total = v
            .pointer("/manifest/total_chunk_count")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        let mut out = StatementResult {
            statement_id: id.to_string(),
            columns,
            rows: vec![],
        };
        let mut chunk = match v.get("result") {
            Some(r) if !r.is_null() => r.clone(),
            _ if total > 0 => {
                self.get(
                    &[
                        "api",
                        "2.0",
                        "sql",
                        "statements",
                        id,
                        "result",
                        "chunks",
                        "0",
                    ],
                    &[],
                )
                .await?
            }
            _ => return Ok(out),
        };
        loop {
            out.rows.extend(rows(&chunk));
            let Some(next) = chunk.get("next_chunk_index").and_then(Value::as_u64) else {
                break;
            };
            chunk = self
                .get(
                    &[
                        "api",
                        "2.0",
                        "sql",
                        "statements",
                        id,
                        "result",
                        "chunks",
                        &next.to_string(),
                    ],
                    &[],
                )
                .await?;
        }
        Ok(out)
    }

    /// The statements running now that may change a table (their ids known once
    /// the submission answered): what a kill of this process would leave running.
    pub fn writes_running(&self) -> Vec<String> {
        self.writing
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Cancels every running statement. The answer says what happened, for
    /// the user, and lists the statements asked to cancel: a cancel's receipt
    /// is not a guarantee (it may lose the race with completion), so each may
    /// still be running until its state says otherwise.
    pub async fn cancel(&self) -> Cancel {
        let ids = self
            .running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let mut said = Vec::new();
        for id in &ids {
            let sent = match self.url(&["api", "2.0", "sql", "statements", id, "cancel"]) {
                Ok(url) => self.call(Method::POST, url, None, Resend::Safe).await,
                Err(e) => Err(e),
            };
            said.push(match sent {
                Ok(_) => format!("asked Databricks to cancel statement {id}; it may still finish (see Query History)"),
                Err(e) => format!("could not cancel statement {id}: {e}; it may still be running (see Query History)"),
            });
        }
        if self.submitting.load(Ordering::Relaxed) > 0 {
            said.push("a statement was sent but its id is not known yet, so it cannot be canceled; it may still be running (see Query History)".into());
        }
        let busy = !said.is_empty();
        if !busy {
            said.push("no statement is running".into());
        }
        Cancel {
            message: said.join("; "),
            statements: ids,
            busy,
        }
    }

    /// A statement's state (`PENDING`, `RUNNING`, `SUCCEEDED`, `FAILED`,
    /// `CANCELED`, `CLOSED`): one GET of the Statement Execution API.
    pub async fn statement_state(&self, id: &str) -> Result<String, ClientError> {
        let url = self.url(&["api", "2.0", "sql", "statements", id])?;
        let v = self.call(Method::GET, url, None, Resend::Safe).await?;
        Ok(v.pointer("/status/state")
            .and_then(Value::as_str)
            .unwrap_or("UNKNOWN")
            .to_string())
    }

    // ------------------------------------------------------------ Workspace

    /// `POST /api/2.0/workspace/import` of one small file (format `AUTO`: a
    /// `.json` name is imported as a workspace file, not a notebook). Without
    /// `overwrite`, an existing path is `RESOURCE_ALREADY_EXISTS`; a missing
    /// parent folder is `RESOURCE_DOES_NOT_EXIST`.
    /// <https://docs.databricks.com/api/workspace-files/v1/import.md>
    pub async fn workspace_import(
        &self,
        path: &str,
        bytes: &[u8],
        overwrite: bool,
    ) -> Result<(), ClientError> {
        let url = self.url(&["api", "2.0", "workspace", "import"])?;
        let body = json!({
            "path": path,
            "format": "AUTO",
            "content": base64_encode(bytes),
            "overwrite": overwrite,
        });
        // safe to resend: a lost answer to a create is sorted out by the caller
        // (RESOURCE_ALREADY_EXISTS with our own bytes there is our create)
        self.call(Method::POST, url, Some(&body), Resend::Safe)
            .await
            .map(|_| ())
    }

    /// `GET /api/2.0/workspace/export` of a file (`{content: base64, file_type}`),
    /// `None` when the path does not exist.
    /// <https://docs.databricks.com/api/workspace-objects/v1/export.md>
    pub async fn workspace_export(&self, path: &str) -> Result<Option<Vec<u8>>, ClientError> {
        match self
            .get(
                &["api", "2.0", "workspace", "export"],
                &[("path", path), ("format", "AUTO")],
            )
            .await
        {
            Ok(v) => {
                let content = v.get("content").and_then(Value::as_str).unwrap_or("");
                base64_decode(content).map(Some).ok_or_else(|| {
                    ClientError::Transient(format!(
                        "the workspace file {path} came back in a form that is not base64"
                    ))
                })
            }
            Err(e) if does_not_exist(&e) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// `GET /api/2.0/workspace/list` (`{objects: [{path, object_type, …}]}`),
    /// `None` when the folder does not exist.
    /// <https://docs.databricks.com/api/workspace-files/v1/list.md>
    pub async fn workspace_list(&self, path: &str) -> Result<Option<Vec<Value>>, ClientError> {
        match self
            .get(&["api", "2.0", "workspace", "list"], &[("path", path)])
            .await
        {
            Ok(v) => Ok(Some(
                v.get("objects")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default(),
            )),
            Err(e) if does_not_exist(&e) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// `POST /api/2.0/workspace/delete` (not recursive): false when nothing was
    /// there. A folder that is not empty is `DIRECTORY_NOT_EMPTY`.
    /// <https://docs.databricks.com/api/workspace-files/v1/delete.md>
    pub async fn workspace_delete(&self, path: &str) -> Result<bool, ClientError> {
        let url = self.url(&["api", "2.0", "workspace", "delete"])?;
        let body = json!({ "path": path, "recursive": false });
        match self
            .call(Method::POST, url, Some(&body), Resend::Safe)
            .await
        {
            Ok(_) => Ok(true),
            Err(e) if does_not_exist(&e) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// `POST /api/2.0/workspace/mkdirs`: the folder and its parents (one that exists is fine).
    /// <https://docs.databricks.com/api/workspace-files/v1/mkdirs.md>
    pub async fn workspace_mkdirs(&self, path: &str) -> Result<(), ClientError> {
        let url = self.url(&["api", "2.0", "workspace", "mkdirs"])?;
        self.call(
            Method::POST,
            url,
            Some(&json!({ "path": path })),
            Resend::Safe,
        )
        .await
        .map(|_| ())
    }

    // ------------------------------------------------------------ Unity Catalog

    /// Every table of a schema with columns and properties, page by page.
    pub async fn list_tables(
        &self,
        catalog: &str,
        schema: &str,
    ) -> Result<Vec<Value>, ClientError> {
        let q = [("catalog_name", catalog), ("schema_name", schema)];
        self.pages(&["api", "2.1", "unity-catalog", "tables"], &q, "tables")
            .await
    }

    /// One table, `None` when it does not exist.
    pub async fn get_table(&self, full_name: &str) -> Result<Option<Value>, ClientError> {
        match self
            .get(&["api", "2.1", "unity-catalog", "tables", full_name], &[])
            .await
        {
            Ok(v) => Ok(Some(v)),
            Err(ClientError::Workspace(w)) if w.http_status == Some(404) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// One schema, `None` when it does not exist.
    pub async fn get_schema(&self, full_name: &str) -> Result<Option<Value>, ClientError> {
        match self
            .get(&["api", "2.1", "unity-catalog", "schemas", full_name], &[])
            .await
        {
            Ok(v) => Ok(Some(v)),
            Err(ClientError::Workspace(w)) if w.http_status == Some(404) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The direct privilege assignments on a securable (`schema`, `table`,
    /// `catalog`), every page as one `{privilege_assignments}`.
    pub async fn get_permissions(&self, kind: &str, full_name: &str) -> Result<Value, ClientError> {
        let path = [
            "api",
            "2.1",
            "unity-catalog",
            "permissions",
            kind,
            full_name,
        ];
        let all = self.pages(&path, &[], "privilege_assignments").await?;
        Ok(json!({ "privilege_assignments": all }))
    }

    /// The tag assignments of one entity (`tables`: `cat.sch.tbl`,
    /// `columns`: `cat.sch.tbl.col`): the entity tag assignments API, every page.
    pub async fn list_entity_tags(
        &self,
        entity_type: &str,
        entity_name: &str,
    ) -> Result<Vec<Value>, ClientError> {
        let path = [
            "api",
            "2.1",
            "unity-catalog",
            "entity-tag-assignments",
            entity_type,
            entity_name,
            "tags",
        ];
        self.pages(&path, &[], "tag_assignments").await
    }

    /// Every item under `key` of a paged UC listing (`max_results=0`: the
    /// server's page size). A page may be empty and still carry a token:
    /// only its absence ends the listing.
    async fn pages(
        &self,
        path: &[&str],
        query: &[(&str, &str)],
        key: &str,
    ) -> Result<Vec<Value>, ClientError> {
        let mut out = Vec::new();
        let mut token = String::new();
        loop {
            let mut q = query.to_vec();
            q.push(("max_results", "0"));
            if !token.is_empty() {
                q.push(("page_token", token.as_str()));
            }
            let v = self.get(path, &q).await?;
            out.extend(
                v.get(key)
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default(),
            );
            match v
                .get("next_page_token")
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty())
            {
                Some(t) if t != token => token = t.to_string(),
                _ => return Ok(out),
            }
        }
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

const BASE64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding (the Workspace API's `content`).
pub fn base64_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(BASE64[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Standard base64 (padding optional, whitespace ignored); `None` when it is not base64.
pub fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in text.bytes().filter(|c| !c.is_ascii_whitespace()) {
        if c == b'=' {
            break;
        }
        let v = BASE64.iter().position(|x| *x == c)? as u32;
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

/// `data_array` rows of a result chunk.
fn rows(chunk: &Value) -> Vec<Vec<Option<String>>> {
    chunk
        .get("data_array")
        .and_then(Value::as_array)
        .map(|rs| {
            rs.iter()
                .map(|r| {
                    r.as_array()
                        .map(|cells| {
                            cells
                                .iter()
                                .map(|c| c.as_str().map(str::to_string))
                                .collect()
                        })
                        .unwrap_or_default()
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Refusals that may only mean the warehouse is not up yet (stevin's words, live).
fn starting_words(w: &WorkspaceError) -> bool {
    let m = w.message.to_lowercase();
    m.contains("could not be processed by the warehouse")
        || m.contains("cannot create the resource, please try again later")
        || m.contains("warehouse is not running")
}

/// What came back: status, request id, Retry-After and the body.
struct Answer {
    status: StatusCode,
    request_id: Option<String>,
    retry_after: Option<Duration>,
    text: String,
}

async fn read(resp: reqwest::Response) -> Result<Answer, String> {
    let status = resp.status();
    let h = resp.headers();
    let request_id = h
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let retry_after = h
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|s| s.trim().parse().ok())
        .map(Duration::from_secs);
    let text = resp.text().await.map_err(|e| without_url(&e))?;
    Ok(Answer {
        status,
        request_id,
        retry_after,
        text,
    })
}

/// A non-2xx answer: retried for 429 and 503, else the workspace's refusal.
fn http_failure(a: Answer) -> Attempt {
    let code = a.status.as_u16();
    let error = ClientError::Workspace(Box::new(WorkspaceError::from_response(
        code,
        &a.text,
        a.request_id,
    )));
    let retry = code == 429 || code == 503;
    // the Python SDK's default when a 429/503 names no delay
    let after = if retry {
        a.retry_after.or(Some(Duration::from_secs(1)))
    } else {
        None
    };
    Attempt {
        error,
        retry,
        after,
    }
}

/// A send that failed. Before the request left (connect) it is always safe to
/// resend; after, only when the request is safe to repeat.
fn lost(e: &reqwest::Error, resend: Resend, method: &Method, url: &Url) -> Attempt {
    if e.is_connect() {
        return Attempt {
            error: ClientError::Transient(format!(
                "{method} {}: cannot connect: {}",
                url.path(),
                without_url(e)
            )),
            retry: true,
            after: None,
        };
    }
    lost_body(without_url(e), resend, method, url)
}

fn lost_body(why: String, resend: Resend, method: &Method, url: &Url) -> Attempt {
    match resend {
        Resend::Safe => Attempt {
            error: ClientError::Transient(format!("{method} {}: no answer: {why}", url.path())),
            retry: true,
            after: None,
        },
        Resend::Never => Attempt::stop(ClientError::MayHaveRun(format!(
            "the statement was sent but no answer came back ({why}); it may have run. It is not sent again: the next attempt re-reads the table first, so a step that took effect is skipped"
        ))),
    }
}

/// reqwest's message without the URL (which may carry a query with names, never secrets, but is noise).
fn without_url(e: &reqwest::Error) -> String {
    let mut s = e.to_string();
    if let Some(u) = e.url() {
        s = s.replace(&format!(" ({u})"), "").replace(u.as_str(), "");
    }
    let mut src = std::error::Error::source(e);
    while let Some(inner) = src {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        src = inner.source();
    }
    s
}
