//! The Databricks client against an in-process HTTP/1.1 server that answers
//! as the public API reference documents (Statement Execution API 2.0, SQL
//! Warehouses API, Unity Catalog REST 2.1, the OAuth token endpoint): shapes
//! from docs.databricks.com and the Go SDK's generated models, not from our code.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use delta_operator::backend::databricks::DatabricksBackend;
use delta_operator::backend::databricks::auth::{Credentials, Secret};
use delta_operator::backend::databricks::client::{ClientConfig, ClientError, DatabricksClient};
use delta_operator::backend::{Backend, BackendError, Extras};
use delta_operator::model::{
    DataType, DesiredColumn, DesiredTable, Grant, Privilege, SchemaRef, TableRef,
};
use delta_operator::plan::Compiler;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

// ------------------------------------------------------------------ server

#[derive(Debug, Clone)]
struct Req {
    method: String,
    /// Path without the query.
    path: String,
    query: String,
    authorization: String,
    body: String,
    at: Instant,
}

impl Req {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }
}

enum Reply {
    Json(u16, Value),
    /// Status, extra headers, body.
    With(u16, Vec<(&'static str, String)>, Value),
    /// Read the request, then close the connection without a word.
    Drop,
}

type Handler = Arc<dyn Fn(&Req) -> Reply + Send + Sync>;

struct Server {
    url: String,
    log: Arc<Mutex<Vec<Req>>>,
}

impl Server {
    async fn start(handler: impl Fn(&Req) -> Reply + Send + Sync + 'static) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let log = Arc::new(Mutex::new(Vec::new()));
        let handler: Handler = Arc::new(handler);
        let l = log.clone();
        tokio::spawn(async move {
            loop {
                let Ok((sock, _)) = listener.accept().await else {
                    return;
                };
                let (h, l) = (handler.clone(), l.clone());
                tokio::spawn(async move { serve(sock, h, l).await });
            }
        });
        Server { url, log }
    }

    fn requests(&self) -> Vec<Req> {
        self.log.lock().expect("log").clone()
    }

    fn count(&self, method: &str, path: &str) -> usize {
        self.requests()
            .iter()
            .filter(|r| r.method == method && r.path == path)
            .count()
    }
}

/// One request per connection (`Connection: close`), so a dropped answer is unambiguous.
async fn serve(mut sock: tokio::net::TcpStream, handler: Handler, log: Arc<Mutex<Vec<Req>>>) {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        match sock.read(&mut tmp).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&tmp[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let mut lines = head.lines();
    let first: Vec<&str> = lines.next().unwrap_or_default().split(' ').collect();
    let (method, target) = (
        first[0].to_string(),
        first.get(1).copied().unwrap_or("/").to_string(),
    );
    let mut len = 0usize;
    let mut authorization = String::new();
    for l in lines {
        if let Some((k, v)) = l.split_once(':') {
            match k.trim().to_ascii_lowercase().as_str() {
                "content-length" => len = v.trim().parse().unwrap_or(0),
                "authorization" => authorization = v.trim().to_string(),
                _ => {}
            }
        }
    }
    while buf.len() < head_end + len {
        match sock.read(&mut tmp).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&tmp[..n]),
        }
    }
    let body = String::from_utf8_lossy(&buf[head_end..head_end + len]).to_string();
    let (path, query) = match target.split_once('?') {
        Some((p, q)) => (p.to_string(), q.to_string()),
        None => (target.clone(), String::new()),
    };
    let req = Req {
        method,
        path,
        query,
        authorization,
        body,
        at: Instant::now(),
    };
    log.lock().expect("log").push(req.clone());
    let (status, headers, body) = match handler(&req) {
        Reply::Json(s, v) => (s, vec![], v),
        Reply::With(s, h, v) => (s, h, v),
        Reply::Drop => {
            let _ = sock.shutdown().await;
            return;
        }
    };
    let text = body.to_string();
    let mut out = format!(
        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\nx-request-id: req-{}\r\n",
        text.len(),
        log.lock().expect("log").len()
    );
    for (k, v) in headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str("\r\n");
    out.push_str(&text);
    let _ = sock.write_all(out.as_bytes()).await;
    let _ = sock.shutdown().await;
}

// ------------------------------------------------------------------ API shapes

const WH: &str = "/api/2.0/sql/warehouses/wh1";
const STATEMENTS: &str = "/api/2.0/sql/statements";

fn warehouse(state: &str) -> Value {
    json!({"id": "wh1", "name": "Serverless", "state": state, "cluster_size": "2X-Small", "auto_stop_mins": 10,
           "enable_serverless_compute": true, "warehouse_type": "PRO", "num_clusters": 1, "health": {"status": "HEALTHY"}})
}

fn manifest(chunks: u64) -> Value {
    json!({"format": "JSON_ARRAY",
           "schema": {"column_count": 1, "columns": [{"name": "n", "position": 0, "type_name": "INT", "type_text": "INT"}]},
           "total_chunk_count": chunks, "total_row_count": chunks,
           "chunks": (0..chunks).map(|i| json!({"chunk_index": i, "row_offset": i, "row_count": 1})).collect::<Vec<_>>(),
           "truncated": false})
}

fn chunk(id: &str, i: u64, of: u64) -> Value {
    let mut c = json!({"chunk_index": i, "row_offset": i, "row_count": 1, "data_array": [[(i + 1).to_string()]]});
    if i + 1 < of {
        c["next_chunk_index"] = json!(i + 1);
        c["next_chunk_internal_link"] = json!(format!("{STATEMENTS}/{id}/result/chunks/{}", i + 1));
    }
    c
}

fn succeeded(id: &str, rows: Vec<Vec<&str>>) -> Value {
    json!({"statement_id": id, "status": {"state": "SUCCEEDED"},
           "manifest": {"format": "JSON_ARRAY", "schema": {"column_count": rows.first().map_or(0, |r| r.len()), "columns": []},
                        "total_chunk_count": 1, "total_row_count": rows.len(), "truncated": false},
           "result": {"chunk_index": 0, "row_offset": 0, "row_count": rows.len(), "data_array": rows}})
}

fn state(id: &str, s: &str) -> Value {
    json!({"statement_id": id, "status": {"state": s}})
}

fn cfg(url: &str) -> ClientConfig {
    let mut c = ClientConfig::new(url, "wh1", Credentials::Token(Secret::new("dapi-test")));
    c.poll_interval = Duration::from_millis(10);
    c.warehouse_poll = Duration::from_millis(20);
    c.retry_min_delay = Duration::from_millis(10);
    c.retry_budget = Duration::from_secs(10);
    c.wait_timeout = Duration::from_secs(0);
    c
}

fn client(url: &str) -> DatabricksClient {
    DatabricksClient::new(cfg(url)).expect("client")
}

fn quiet(_: &str) {}

/// A server where the warehouse runs and `statements` answers with `post`.
async fn with_statements(post: impl Fn(&Req) -> Reply + Send + Sync + 'static) -> Server {
    Server::start(move |r| match (r.method.as_str(), r.path.as_str()) {
        ("GET", WH) => Reply::Json(200, warehouse("RUNNING")),
        _ => post(r),
    })
    .await
}

// ------------------------------------------------------------------ tests

#[tokio::test]
async fn failed_statement_surfaces_verbatim_with_advice() {
    let message = "[TABLE_OR_VIEW_NOT_FOUND] The table or view `main`.`nope`.`t` cannot be found. Verify the spelling and correctness of the schema and catalog.\nSQLSTATE: 42P01; line 1 pos 14";
    let s = with_statements(move |r| match r.path.as_str() {
        STATEMENTS => Reply::Json(200, json!({"statement_id": "01ef-fail", "status": {"state": "FAILED", "sql_state": "42P01", "error": {"error_code": "BAD_REQUEST", "message": message}}})),
        _ => Reply::Json(404, json!({"error_code": "NOT_FOUND", "message": "no"})),
    })
    .await;
    let c = client(&s.url);
    let err = c
        .execute("SELECT * FROM main.nope.t", &quiet)
        .await
        .expect_err("fails");
    let b: BackendError = err.into();
    assert!(b.is_permanent());
    let text = b.to_string();
    assert!(
        text.starts_with(message),
        "the workspace's words come first, unchanged:\n{text}"
    );
    assert!(
        text.contains(
            "error_code BAD_REQUEST · SQLSTATE 42P01 · statement 01ef-fail · request id req-2"
        ),
        "{text}"
    );
    assert!(
        text.contains("\n\nadvice: Databricks reports a missing table, schema or catalog"),
        "{text}"
    );
    assert_eq!(
        s.count("POST", STATEMENTS),
        1,
        "a FAILED statement is not resent"
    );
}

#[tokio::test]
async fn unknown_failures_get_no_advice() {
    let s = with_statements(|_| Reply::Json(200, json!({"statement_id": "x", "status": {"state": "FAILED", "error": {"error_code": "UNKNOWN", "message": "[BRAND_NEW_CLASS] something"}}}))).await;
    let text = BackendError::from(
        client(&s.url)
            .execute("ALTER TABLE t SET TBLPROPERTIES ('a'='b')", &quiet)
            .await
            .expect_err("fails"),
    )
    .to_string();
    assert!(
        text.starts_with("[BRAND_NEW_CLASS] something\n(error_code UNKNOWN"),
        "{text}"
    );
    assert!(!text.contains("advice"), "{text}");
}

#[tokio::test]
async fn pending_running_succeeded_with_three_chunks() {
    let polls = Arc::new(AtomicUsize::new(0));
    let p = polls.clone();
    let s = with_statements(move |r| {
        let id = "01ef-chunks";
        match (r.method.as_str(), r.path.as_str()) {
            ("POST", STATEMENTS) => Reply::Json(200, state(id, "PENDING")),
            ("GET", p_) if p_ == format!("{STATEMENTS}/{id}") => match p.fetch_add(1, Ordering::SeqCst) {
                0 => Reply::Json(200, state(id, "PENDING")),
                1 | 2 => Reply::Json(200, state(id, "RUNNING")),
                _ => Reply::Json(200, json!({"statement_id": id, "status": {"state": "SUCCEEDED"}, "manifest": manifest(3), "result": chunk(id, 0, 3)})),
            },
            ("GET", p_) if p_.starts_with(&format!("{STATEMENTS}/{id}/result/chunks/")) => {
                let i: u64 = p_.rsplit('/').next().and_then(|n| n.parse().ok()).unwrap_or(99);
                Reply::Json(200, chunk(id, i, 3))
            }
            _ => Reply::Json(404, json!({"error_code": "NOT_FOUND", "message": r.path.clone()})),
        }
    })
    .await;
    let r = client(&s.url)
        .execute("SELECT n FROM range(3)", &quiet)
        .await
        .expect("succeeds");
    assert_eq!(r.columns, vec!["n".to_string()]);
    assert_eq!(
        r.rows,
        vec![
            vec![Some("1".to_string())],
            vec![Some("2".to_string())],
            vec![Some("3".to_string())]
        ]
    );
    assert_eq!(
        polls.load(Ordering::SeqCst),
        4,
        "PENDING, RUNNING, RUNNING, SUCCEEDED"
    );
    assert_eq!(
        s.count("GET", "/api/2.0/sql/statements/01ef-chunks/result/chunks/1"),
        1
    );
    assert_eq!(
        s.count("GET", "/api/2.0/sql/statements/01ef-chunks/result/chunks/2"),
        1
    );
    let post = s
        .requests()
        .into_iter()
        .find(|r| r.method == "POST")
        .expect("a POST")
        .json();
    assert_eq!(post["warehouse_id"], "wh1");
    assert_eq!(post["on_wait_timeout"], "CONTINUE");
    assert_eq!(post["disposition"], "INLINE");
    assert_eq!(post["format"], "JSON_ARRAY");
    assert_eq!(post["wait_timeout"], "0s");
}

#[tokio::test]
async fn retry_after_on_429_is_honoured() {
    let first = Arc::new(AtomicUsize::new(0));
    let f = first.clone();
    let s = with_statements(move |_| {
        if f.fetch_add(1, Ordering::SeqCst) == 0 {
            Reply::With(429, vec![("retry-after", "1".into())], json!({"error_code": "REQUEST_LIMIT_EXCEEDED", "message": "Too many requests. Please wait a moment and try again."}))
        } else {
            Reply::Json(200, succeeded("ok", vec![vec!["1"]]))
        }
    })
    .await;
    let r = client(&s.url)
        .execute("ALTER TABLE t SET TBLPROPERTIES ('a' = 'b')", &quiet)
        .await
        .expect("succeeds after the wait");
    assert_eq!(r.statement_id, "ok");
    let posts: Vec<Req> = s
        .requests()
        .into_iter()
        .filter(|r| r.path == STATEMENTS)
        .collect();
    assert_eq!(
        posts.len(),
        2,
        "a 429 was not accepted, so even a write is sent again"
    );
    let waited = posts[1].at - posts[0].at;
    assert!(
        waited >= Duration::from_secs(1),
        "waited {waited:?}, Retry-After said 1 s"
    );
}

#[tokio::test]
async fn unavailable_503_is_retried_then_succeeds() {
    let n = Arc::new(AtomicUsize::new(0));
    let m = n.clone();
    let s = with_statements(move |_| {
        if m.fetch_add(1, Ordering::SeqCst) < 2 {
            Reply::Json(503, json!({"error_code": "TEMPORARILY_UNAVAILABLE", "message": "The service is temporarily unavailable."}))
        } else {
            Reply::Json(200, succeeded("ok", vec![]))
        }
    })
    .await;
    client(&s.url)
        .execute("SELECT 1", &quiet)
        .await
        .expect("succeeds");
    assert_eq!(s.count("POST", STATEMENTS), 3);
}

#[tokio::test]
async fn retries_stop_at_the_budget() {
    let s = with_statements(|_| {
        Reply::With(
            429,
            vec![("retry-after", "30".into())],
            json!({"error_code": "REQUEST_LIMIT_EXCEEDED", "message": "slow down"}),
        )
    })
    .await;
    let started = Instant::now();
    let err = BackendError::from(
        client(&s.url)
            .execute("SELECT 1", &quiet)
            .await
            .expect_err("gives up"),
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "a Retry-After beyond the 10 s budget is not waited for"
    );
    assert!(!err.is_permanent(), "rate limiting is transient");
    assert!(err.to_string().starts_with("slow down"), "{err}");
}

#[tokio::test]
async fn dropped_connection_on_a_select_is_retried() {
    let n = Arc::new(AtomicUsize::new(0));
    let m = n.clone();
    let s = with_statements(move |_| {
        if m.fetch_add(1, Ordering::SeqCst) == 0 {
            Reply::Drop
        } else {
            Reply::Json(200, succeeded("ok", vec![vec!["7"]]))
        }
    })
    .await;
    let r = client(&s.url)
        .execute("SELECT 7", &quiet)
        .await
        .expect("a read is sent again");
    assert_eq!(r.rows, vec![vec![Some("7".to_string())]]);
    assert_eq!(s.count("POST", STATEMENTS), 2);
}

#[tokio::test]
async fn dropped_connection_on_an_alter_is_not_resent() {
    let s = with_statements(|_| Reply::Drop).await;
    let err = client(&s.url)
        .execute("ALTER TABLE `main`.`s`.`t` DROP COLUMN `x`", &quiet)
        .await
        .expect_err("fails");
    assert!(matches!(err, ClientError::MayHaveRun(_)), "{err:?}");
    assert!(err.to_string().contains("it may have run"), "{err}");
    assert_eq!(s.count("POST", STATEMENTS), 1, "never sent twice");
}

#[tokio::test]
async fn oauth_token_is_fetched_once_cached_and_refreshed() {
    let issued = Arc::new(AtomicUsize::new(0));
    let i = issued.clone();
    let s = Server::start(move |r| match (r.method.as_str(), r.path.as_str()) {
        ("POST", "/oidc/v1/token") => {
            let n = i.fetch_add(1, Ordering::SeqCst) + 1;
            Reply::Json(200, json!({"access_token": format!("tok-{n}"), "token_type": "Bearer", "expires_in": 1, "scope": "all-apis"}))
        }
        ("GET", WH) => Reply::Json(200, warehouse("RUNNING")),
        _ => Reply::Json(200, succeeded("ok", vec![])),
    })
    .await;
    let mut c = cfg(&s.url);
    c.credentials = Credentials::OAuth {
        client_id: "sp-id".into(),
        client_secret: Secret::new("sp-secret"),
    };
    let debug = format!("{c:?}");
    assert!(
        !debug.contains("sp-secret") && !debug.contains("dapi"),
        "{debug}"
    );
    let c = DatabricksClient::new(c).expect("client");
    c.execute("SELECT 1", &quiet).await.expect("ok");
    c.execute("SELECT 2", &quiet).await.expect("ok");
    assert_eq!(c.token_fetches(), 1, "cached between requests");
    tokio::time::sleep(Duration::from_millis(1100)).await;
    c.execute("SELECT 3", &quiet).await.expect("ok");
    assert_eq!(c.token_fetches(), 2, "refreshed after expiry");
    let reqs = s.requests();
    let token_req = reqs
        .iter()
        .find(|r| r.path == "/oidc/v1/token")
        .expect("token request");
    // HTTP Basic with the client id and secret; the form asks for client_credentials and all-apis
    assert_eq!(token_req.authorization, "Basic c3AtaWQ6c3Atc2VjcmV0");
    assert!(
        token_req.body.contains("grant_type=client_credentials")
            && token_req.body.contains("scope=all-apis"),
        "{}",
        token_req.body
    );
    let bearers: Vec<&str> = reqs
        .iter()
        .filter(|r| r.path == STATEMENTS)
        .map(|r| r.authorization.as_str())
        .collect();
    assert_eq!(
        bearers,
        vec!["Bearer tok-1", "Bearer tok-1", "Bearer tok-2"]
    );
}

#[tokio::test]
async fn stopped_warehouse_is_started_and_waited_for() {
    // STOPPED until started, then STARTING twice, then RUNNING
    let states = Arc::new(Mutex::new(VecDeque::from([
        "STARTING", "STARTING", "RUNNING",
    ])));
    let started = Arc::new(AtomicUsize::new(0));
    let (st, go) = (states.clone(), started.clone());
    let s = Server::start(move |r| match (r.method.as_str(), r.path.as_str()) {
        ("GET", WH) if go.load(Ordering::SeqCst) == 0 => Reply::Json(200, warehouse("STOPPED")),
        ("GET", WH) => {
            let mut q = st.lock().expect("states");
            let now = if q.len() > 1 {
                q.pop_front().unwrap_or("RUNNING")
            } else {
                q[0]
            };
            Reply::Json(200, warehouse(now))
        }
        ("POST", "/api/2.0/sql/warehouses/wh1/start") => {
            go.fetch_add(1, Ordering::SeqCst);
            Reply::Json(200, json!({}))
        }
        _ => Reply::Json(200, succeeded("ok", vec![])),
    })
    .await;
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = seen.clone();
    let progress = move |m: &str| sink.lock().expect("seen").push(m.to_string());
    client(&s.url)
        .execute("SELECT 1", &progress)
        .await
        .expect("runs once the warehouse is up");
    assert_eq!(started.load(Ordering::SeqCst), 1, "started once");
    let seen = seen.lock().expect("seen").clone();
    assert!(
        !seen.is_empty() && seen.iter().all(|m| m.starts_with("warehouse starting")),
        "{seen:?}"
    );
    let first_post = s
        .requests()
        .iter()
        .position(|r| r.path == STATEMENTS)
        .expect("a statement");
    let last_wh = s
        .requests()
        .iter()
        .rposition(|r| r.path == WH)
        .expect("warehouse polls");
    assert!(
        last_wh < first_post,
        "the statement is sent once the warehouse runs"
    );
}

#[tokio::test]
async fn warehouse_that_never_starts_times_out() {
    let s = Server::start(|r| match r.path.as_str() {
        WH => Reply::Json(200, warehouse("STARTING")),
        _ => Reply::Json(200, json!({})),
    })
    .await;
    let mut c = cfg(&s.url);
    c.warehouse_start_timeout = Duration::from_millis(200);
    let err = DatabricksClient::new(c)
        .expect("client")
        .execute("SELECT 1", &quiet)
        .await
        .expect_err("times out");
    assert!(err.to_string().contains("did not start within"), "{err}");
    assert_eq!(s.count("POST", STATEMENTS), 0, "nothing was sent");
}

#[tokio::test]
async fn running_warehouse_that_refuses_is_reported_at_once() {
    let s = with_statements(|_| Reply::Json(200, json!({"statement_id": "r1", "status": {"state": "FAILED", "error": {"error_code": "INTERNAL_ERROR", "message": "Statement could not be processed by the warehouse."}}}))).await;
    let started = Instant::now();
    let err = BackendError::from(
        client(&s.url)
            .execute("SELECT 1", &quiet)
            .await
            .expect_err("refused"),
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "no waiting for a warehouse that runs"
    );
    let text = err.to_string();
    assert!(
        text.starts_with("Statement could not be processed by the warehouse."),
        "{text}"
    );
    assert!(
        text.contains("advice: The warehouse is stopped or cannot start"),
        "{text}"
    );
    assert_eq!(s.count("POST", STATEMENTS), 1);
    assert!(
        s.count("GET", WH) >= 2,
        "the Warehouses API was asked after the refusal"
    );
}

#[tokio::test]
async fn cancel_cancels_the_running_statement() {
    let canceled = Arc::new(AtomicUsize::new(0));
    let k = canceled.clone();
    let s = with_statements(move |r| match (r.method.as_str(), r.path.as_str()) {
        ("POST", STATEMENTS) => Reply::Json(200, state("long", "RUNNING")),
        ("POST", "/api/2.0/sql/statements/long/cancel") => {
            k.fetch_add(1, Ordering::SeqCst);
            Reply::Json(200, json!({}))
        }
        (_, "/api/2.0/sql/statements/long") if k.load(Ordering::SeqCst) > 0 => {
            Reply::Json(200, state("long", "CANCELED"))
        }
        _ => Reply::Json(200, state("long", "RUNNING")),
    })
    .await;
    let c = Arc::new(client(&s.url));
    assert_eq!(c.cancel().await.message, "no statement is running");
    let runner = c.clone();
    let task = tokio::spawn(async move {
        runner
            .execute("CREATE OR REPLACE TABLE t AS SELECT 1", &quiet)
            .await
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let said = c.cancel().await;
    assert!(said.message.contains("cancel statement long"), "{said}");
    assert_eq!(said.statements, vec!["long".to_string()]);
    let err = task.await.expect("joins").expect_err("canceled");
    assert!(matches!(err, ClientError::Canceled(_)), "{err:?}");
}

#[tokio::test]
async fn a_read_past_its_budget_is_cancelled_before_it_is_reported() {
    let canceled = Arc::new(AtomicUsize::new(0));
    let k = canceled.clone();
    let s = with_statements(move |r| match (r.method.as_str(), r.path.as_str()) {
        ("POST", STATEMENTS) => Reply::Json(200, state("slow-read", "RUNNING")),
        ("POST", "/api/2.0/sql/statements/slow-read/cancel") => {
            k.fetch_add(1, Ordering::SeqCst);
            Reply::Json(200, json!({}))
        }
        _ => Reply::Json(200, state("slow-read", "RUNNING")),
    })
    .await;
    let mut c = cfg(&s.url);
    c.read_budget = Duration::from_millis(300);
    let c = DatabricksClient::new(c).unwrap();
    let err = c
        .execute("SELECT * FROM `main`.`sales`.`orders`", &quiet)
        .await
        .expect_err("past its budget");
    assert_eq!(canceled.load(Ordering::SeqCst), 1, "cancelled first");
    let text = err.to_string();
    assert!(
        text.contains("slow-read")
            && text.contains("read budget")
            && text.contains("was cancelled"),
        "{text}"
    );
    // a write has no budget: it is the step, and it runs as long as it takes
}

#[tokio::test]
async fn a_write_whose_polls_keep_failing_is_not_reported_failed_but_maybe_running() {
    let s = with_statements(|r| match (r.method.as_str(), r.path.as_str()) {
        ("POST", STATEMENTS) => Reply::Json(200, state("w1", "RUNNING")),
        // every poll: the service is unavailable
        _ => Reply::Json(
            503,
            json!({"error_code": "TEMPORARILY_UNAVAILABLE", "message": "try later"}),
        ),
    })
    .await;
    let mut c = cfg(&s.url);
    c.retry_budget = Duration::from_millis(200);
    let c = DatabricksClient::new(c).unwrap();
    let err = c
        .execute(
            "ALTER TABLE `main`.`sales`.`orders` ADD COLUMNS (`x` INT)",
            &quiet,
        )
        .await
        .expect_err("its state is unknown");
    match &err {
        ClientError::StateUnknown { statement, message } => {
            assert_eq!(statement, "w1");
            assert!(message.contains("may still be running"), "{message}");
        }
        other => panic!("expected StateUnknown, got {other:?}"),
    }
    let backend: BackendError = err.into();
    assert!(
        matches!(&backend, BackendError::StillRunning { statement, .. } if statement == "w1"),
        "{backend:?}"
    );
    assert!(!backend.is_permanent());
}

// ------------------------------------------------------------------ the backend's reads

/// A UC `tables` page entry as the reference shows it.
fn table_info(name: &str, version: u64) -> Value {
    json!({"name": name, "catalog_name": "main", "schema_name": "sales", "full_name": format!("main.sales.{name}"),
           "table_type": "MANAGED", "data_source_format": "DELTA", "owner": "me", "updated_at": 1700000000000u64 + version,
           "properties": {"delta.lastUpdateVersion": version.to_string(), "delta-operator.io/owner": format!("default/{name}")},
           "columns": [{"name": "id", "position": 0, "type_text": "bigint", "type_name": "LONG", "nullable": false,
                        "type_json": "{\"name\":\"id\",\"type\":\"long\",\"nullable\":false,\"metadata\":{}}"}]})
}

#[tokio::test]
async fn reads_are_batched_per_schema() {
    const N: usize = 200;
    let s = with_statements(|r| match (r.method.as_str(), r.path.as_str()) {
        ("GET", "/api/2.1/unity-catalog/tables") => {
            assert!(
                r.query.contains("catalog_name=main") && r.query.contains("schema_name=sales"),
                "{}",
                r.query
            );
            // pages of 50; the last page has no next_page_token
            let page: usize = r
                .query
                .split('&')
                .find_map(|kv| kv.strip_prefix("page_token="))
                .and_then(|t| t.parse().ok())
                .unwrap_or(0);
            let tables: Vec<Value> = (page * 50..(page + 1) * 50)
                .map(|i| table_info(&format!("t{i:03}"), 3))
                .collect();
            let mut body = json!({"tables": tables});
            if (page + 1) * 50 < N {
                body["next_page_token"] = json!((page + 1).to_string());
            }
            Reply::Json(200, body)
        }
        // the entity tag assignments API: a first page empty but for its token, then the tag
        (
            "GET",
            "/api/2.1/unity-catalog/entity-tag-assignments/tables/main.sales.t007/tags",
        ) => Reply::Json(
            200,
            if r.query.contains("page_token=more") {
                json!({"tag_assignments": [{"entity_type": "tables", "entity_name": "main.sales.t007",
                                            "tag_key": "domain", "tag_value": "sales"}]})
            } else {
                json!({"tag_assignments": [], "next_page_token": "more"})
            },
        ),
        (
            "GET",
            "/api/2.1/unity-catalog/entity-tag-assignments/columns/main.sales.t007.id/tags",
        ) => Reply::Json(
            200,
            json!({"tag_assignments": [{"entity_type": "columns", "entity_name": "main.sales.t007.id",
                                        "tag_key": "pii", "tag_value": "none"}]}),
        ),
        ("GET", "/api/2.1/unity-catalog/permissions/table/main.sales.t007") => Reply::Json(
            200,
            json!({"privilege_assignments": [{"principal": "analysts", "privileges": ["SELECT"]}]}),
        ),
        _ => Reply::Json(
            404,
            json!({"error_code": "NOT_FOUND", "message": r.path.clone()}),
        ),
    })
    .await;
    let b = DatabricksBackend::new(cfg(&s.url))
        .expect("backend")
        .with_share_window(Duration::ZERO);
    let refs: Vec<TableRef> = (0..N)
        .map(|i| TableRef::new("main", "sales", &format!("t{i:03}")))
        .chain([TableRef::new("main", "sales", "missing")])
        .collect();
    // only t007's spec declares tags (its own and its column's) and grants
    let mut spec = DesiredTable::new(
        refs[7].clone(),
        "default/t007",
        vec![DesiredColumn::new("id", DataType::Long, false)],
    );
    spec.tags.insert("domain".into(), Some("sales".into()));
    spec.columns[0]
        .tags
        .insert("pii".into(), Some("none".into()));
    spec.grants.push(Grant {
        principal: "analysts".into(),
        privileges: vec![Privilege::new("SELECT")],
    });
    let extras = Extras::declared([&spec]);
    let first = b.read(&refs, &extras).await.expect("reads");
    assert_eq!(first.iter().filter(|t| t.is_some()).count(), N);
    assert!(first[N].is_none());
    let t7 = first[7].as_ref().expect("t007");
    assert_eq!(t7.tags.get("domain").map(String::as_str), Some("sales"));
    assert_eq!(
        t7.columns[0].tags.get("pii").map(String::as_str),
        Some("none")
    );
    assert_eq!(t7.grants[0].principal, "analysts");
    assert_eq!(t7.version, Some(3));
    let t8 = first[8].as_ref().expect("t008");
    assert!(t8.tags.is_empty() && t8.grants.is_empty());
    assert_eq!(b.statements(), 0, "no statement for {N} tables");
    let list_pages = s.count("GET", "/api/2.1/unity-catalog/tables");
    assert_eq!(list_pages, 4);
    // two tag pages (the empty one too), one column's tags, one permissions page; nothing else
    let extra_reqs = |s: &Server| {
        s.requests()
            .iter()
            .filter(|r| r.path.contains("entity-tag-assignments") || r.path.contains("permissions"))
            .count()
    };
    assert_eq!(extra_reqs(&s), 4);
    // steady state: the same bounded cost again
    b.read(&refs, &extras).await.expect("reads");
    assert_eq!(b.statements(), 0);
    assert_eq!(
        s.count("GET", "/api/2.1/unity-catalog/tables"),
        2 * list_pages
    );
    assert_eq!(extra_reqs(&s), 8);
    assert_eq!(
        b.list_schema(&SchemaRef {
            catalog: "main".into(),
            schema: "sales".into()
        })
        .await
        .expect("lists")
        .len(),
        N
    );
}

#[tokio::test]
async fn concurrent_reads_of_one_schema_share_one_read() {
    let s = with_statements(|r| match r.path.as_str() {
        "/api/2.1/unity-catalog/tables" => Reply::Json(
            200,
            json!({"tables": [table_info("a", 1), table_info("b", 1)]}),
        ),
        _ => Reply::Json(200, succeeded("tags", vec![])),
    })
    .await;
    let b = DatabricksBackend::new(cfg(&s.url)).expect("backend");
    let a = [TableRef::new("main", "sales", "a")];
    let bb = [TableRef::new("main", "sales", "b")];
    let none = Extras::none();
    let (x, y) = tokio::join!(b.read(&a, &none), b.read(&bb, &none));
    assert!(x.expect("a")[0].is_some() && y.expect("b")[0].is_some());
    assert_eq!(s.count("GET", "/api/2.1/unity-catalog/tables"), 1);
    assert_eq!(b.statements(), 0);
}

/// A table plan of one step, as the executor hands it to the backend.
fn one_step_plan(
    t: &TableRef,
    step: &delta_operator::plan::Step,
) -> delta_operator::plan::TablePlan {
    delta_operator::plan::TablePlan {
        table: t.clone(),
        action: delta_operator::plan::TableAction::Update,
        resource: None,
        changes: vec![],
        outcome: delta_operator::plan::Outcome::Accepted {
            steps: vec![step.clone()],
        },
        notes: vec![],
        size_bytes: None,
        version: None,
        desired: None,
        observed: None,
    }
}

#[tokio::test]
async fn a_step_runs_as_its_sql_and_refreshes_the_next_read() {
    use delta_operator::apply::bind::bind_step;
    let s = with_statements(|r| match (r.method.as_str(), r.path.as_str()) {
        ("GET", "/api/2.1/unity-catalog/tables") => {
            Reply::Json(200, json!({"tables": [table_info("orders", 1)]}))
        }
        _ => Reply::Json(200, succeeded("s-1", vec![])),
    })
    .await;
    let b = DatabricksBackend::new(cfg(&s.url)).expect("backend");
    let t = TableRef::new("main", "sales", "orders");
    b.read(std::slice::from_ref(&t), &Extras::none())
        .await
        .expect("reads");
    let mut step = delta_operator::plan::Step {
        number: 1,
        class: delta_operator::plan::RiskClass::Meta,
        action: delta_operator::plan::Action::SetTableComment {
            comment: "it's ${x}\n✓".into(),
        },
        serves: vec![],
        warnings: vec![],
        notes: vec![],
        undo: None,
        undo_window: None,
        est_bytes: None,
        statements: vec![],
        checks: vec![],
    };
    let plan = one_step_plan(&t, &step);
    step.statements = delta_operator::backend::databricks::UNITY_CATALOG
        .compile(&plan, None, &[], &step)
        .expect("compiles")
        .statements;
    let plan = one_step_plan(&t, &step);
    let run = delta_operator::backend::TableRun::unlocked(&t);
    let bound = bind_step(&b, &run, &plan, &step, None).expect("the plan's statements");
    let out = b
        .run(
            &run,
            &plan,
            &step,
            &bound,
            None,
            delta_operator::backend::StepProgress::unwatched(),
        )
        .await
        .expect("runs");
    assert_eq!(out.detail.as_deref(), Some("statement s-1"));
    let sent: Vec<String> = s
        .requests()
        .iter()
        .filter(|r| r.path == STATEMENTS)
        .map(|r| {
            r.json()["statement"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    assert_eq!(
        sent.last().map(String::as_str),
        Some("COMMENT ON TABLE `main`.`sales`.`orders` IS 'it\\'s $\\{x}\n✓'")
    );
    // the write made the shared read stale: the next read goes to the workspace again
    b.read(std::slice::from_ref(&t), &Extras::none())
        .await
        .expect("reads");
    assert_eq!(s.count("GET", "/api/2.1/unity-catalog/tables"), 2);
    let rewrite = delta_operator::plan::Action::Rewrite {
        rewrite: delta_operator::plan::steps::Rewrite::default(),
        phase: delta_operator::plan::steps::RewritePhase::WriteOnce,
    };
    let sent_before = s.requests().iter().filter(|r| r.path == STATEMENTS).count();
    let step = delta_operator::plan::Step {
        action: rewrite,
        statements: vec![],
        ..step
    };
    // a step that cannot compile is refused when it is bound, before the backend runs anything
    let err = bind_step(&b, &run, &one_step_plan(&t, &step), &step, None)
        .expect_err("a rewrite of no columns");
    assert!(
        matches!(&err, BackendError::Refused { message } if message.contains("empty")),
        "{err:?}"
    );
    assert_eq!(
        s.requests().iter().filter(|r| r.path == STATEMENTS).count(),
        sent_before,
        "refused before any statement is sent"
    );
}
