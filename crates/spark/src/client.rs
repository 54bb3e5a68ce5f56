//! Statements on a Spark Connect server: each one an `ExecutePlan` of a SQL
//! relation, reattachable (a dropped stream resumes where it was, so a long
//! rewrite survives a connection blip), tagged with its own operation tag so
//! a shutdown, Ctrl-C or a read budget interrupts exactly that statement.
//! Results come back as Arrow IPC batches and are turned into strings, the
//! shape every SQL runner hands the step runner (`delta_operator_sql`).

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use deltalake::arrow::array::Array;
use deltalake::arrow::ipc::reader::StreamReader;
use deltalake::arrow::util::display::{ArrayFormatter, FormatOptions};
use spark_connect::{ChannelBuilder, SparkConnectClient, SparkError};
use spark_connect_proto as proto;

use delta_operator_backend::{Progress, StatementLog, short_duration};
use delta_operator_sql::{
    Cancel, Refusal, SqlRunner, StatementError, StatementResult, is_read_only,
};

/// gRPC status codes that mean "the server is not reachable now".
const UNAVAILABLE: i32 = 14;
const DEADLINE_EXCEEDED: i32 = 4;

/// A running statement: its SQL (for messages) and whether it may write.
struct Running {
    statement: String,
    writes: bool,
    since: Instant,
}

pub struct SparkClient {
    builder: ChannelBuilder,
    /// Made on first use (tonic's channel needs the runtime; it dials lazily anyway).
    client: tokio::sync::OnceCell<SparkConnectClient>,
    /// The server, for messages (never the token).
    endpoint: String,
    /// How long a read-only statement may run before it is interrupted.
    read_budget: Duration,
    /// Session settings, sent once before the first statement.
    conf: BTreeMap<String, String>,
    conf_sent: tokio::sync::OnceCell<()>,
    /// Running statements by operation tag.
    running: Mutex<BTreeMap<String, Running>>,
    statements: AtomicU64,
}

impl std::fmt::Debug for SparkClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SparkClient")
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

/// A statement's operation id: `<session>/<operation>` (the session owns it on the server).
fn statement_id(session: &str, operation: &str) -> String {
    format!("{session}/{operation}")
}

impl SparkClient {
    /// A client of the server at `url`; nothing is dialled until the first
    /// statement. `token` goes in the Authorization header, only over TLS
    /// (or to a loopback address).
    pub fn new(
        url: &str,
        token: Option<&str>,
        conf: BTreeMap<String, String>,
        read_budget: Duration,
    ) -> Result<Self, StatementError> {
        let mut builder = ChannelBuilder::parse(url).map_err(|e| {
            StatementError::Config(format!("sparkConnect.url '{url}': {}", e.message()))
        })?;
        if let Some(t) = token {
            if !builder.use_ssl() && !builder.is_loopback() {
                return Err(StatementError::Config(format!(
                    "sparkConnect.url '{url}': a token is sent only over TLS; add /;use_ssl=true to the URL"
                )));
            }
            builder.set("token", t);
        }
        let endpoint = builder.endpoint();
        Ok(SparkClient {
            builder,
            client: tokio::sync::OnceCell::new(),
            endpoint,
            read_budget,
            conf,
            conf_sent: tokio::sync::OnceCell::new(),
            running: Mutex::new(BTreeMap::new()),
            statements: AtomicU64::new(0),
        })
    }

    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    async fn client(&self) -> Result<&SparkConnectClient, StatementError> {
        self.client
            .get_or_try_init(|| SparkConnectClient::connect(&self.builder))
            .await
            .map_err(|e| {
                StatementError::Config(format!("Spark Connect {}: {}", self.endpoint, e.message()))
            })
    }

    /// The session's id (empty before the first statement).
    fn session(&self) -> &str {
        self.client.get().map_or("", |c| c.session_id())
    }

    /// Statements sent so far.
    pub fn statements(&self) -> u64 {
        self.statements.load(Ordering::Relaxed)
    }

    fn running(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Running>> {
        self.running
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The statements running now that may change a table.
    pub fn writes_running(&self) -> Vec<String> {
        self.running()
            .iter()
            .filter(|(_, r)| r.writes)
            .map(|(tag, _)| statement_id(self.session(), tag))
            .collect()
    }

    /// Interrupts every statement of this client (by its tag) and says which.
    pub async fn cancel(&self) -> Cancel {
        let tags: Vec<(String, String)> = self
            .running()
            .iter()
            .map(|(tag, r)| (tag.clone(), r.statement.clone()))
            .collect();
        if tags.is_empty() {
            return Cancel {
                message: "no statement was running".into(),
                statements: vec![],
                busy: false,
            };
        }
        let mut asked = Vec::new();
        let mut failed = Vec::new();
        let Some(client) = self.client.get() else {
            return Cancel {
                message: "no statement was running".into(),
                statements: vec![],
                busy: false,
            };
        };
        for (tag, _) in &tags {
            match client.interrupt_tag(tag).await {
                Ok(_) => asked.push(statement_id(client.session_id(), tag)),
                Err(e) => failed.push(format!("{tag}: {}", e.message())),
            }
        }
        let mut message = format!(
            "asked Spark Connect {} to interrupt {} statement(s)",
            self.endpoint,
            asked.len()
        );
        if !failed.is_empty() {
            message.push_str(&format!(
                "; could not interrupt {} (they may still run): {}",
                failed.len(),
                failed.join("; ")
            ));
        }
        Cancel {
            message,
            statements: asked,
            busy: true,
        }
    }

    /// Whether a statement an earlier process started may still run: the
    /// server is asked to reattach to it from its session. `Some("RUNNING")`
    /// while it answers with anything but the end of the result (a finished
    /// one the server still holds counts as running: the safe side); `None`
    /// once the server no longer knows the operation or its session.
    pub async fn still_running(&self, id: &str) -> Result<Option<String>, StatementError> {
        let Some((session, operation)) = id.split_once('/') else {
            return Ok(None);
        };
        let mut builder = self.builder.clone();
        builder.set("session_id", session);
        let unreachable = |e: SparkError| {
            StatementError::Transient(format!(
                "Spark Connect {}: asking after statement {id}: {}",
                self.endpoint,
                e.message()
            ))
        };
        let client = SparkConnectClient::connect(&builder)
            .await
            .map_err(unreachable)?;
        let request = proto::ReattachExecuteRequest {
            session_id: session.to_string(),
            user_context: Some(proto::UserContext {
                user_id: client.user_id().unwrap_or_default().to_string(),
                ..Default::default()
            }),
            operation_id: operation.to_string(),
            client_type: Some("delta-operator".into()),
            ..Default::default()
        };
        let first = async {
            let mut stream = client.reattach_execute(request).await?;
            stream.message().await.map_err(SparkError::from_grpc_status)
        };
        match tokio::time::timeout(Duration::from_secs(5), first).await {
            // no answer within a while: it is still computing
            Err(_) => Ok(Some("RUNNING".into())),
            Ok(Ok(None)) => Ok(None),
            Ok(Ok(Some(r))) => Ok((!matches!(
                r.response_type,
                Some(proto::execute_plan_response::ResponseType::ResultComplete(
                    _
                ))
            ))
            .then(|| "RUNNING".to_string())),
            Ok(Err(e)) if matches!(e.grpc_code, Some(UNAVAILABLE | DEADLINE_EXCEEDED)) => {
                Err(unreachable(e))
            }
            Ok(Err(e)) => {
                let m = e.message();
                let gone = ["OPERATION_NOT_FOUND", "SESSION_NOT_FOUND", "SESSION_CLOSED"]
                    .iter()
                    .any(|c| m.contains(c) || e.get_condition().is_some_and(|k| k.contains(c)));
                if gone { Ok(None) } else { Err(unreachable(e)) }
            }
        }
    }

    /// The session settings of the target, once per client.
    async fn send_conf(&self, client: &SparkConnectClient) -> Result<(), StatementError> {
        self.conf_sent
            .get_or_try_init(|| async {
                for (k, v) in &self.conf {
                    client.set_config(k, v).await.map_err(|e| {
                        StatementError::Config(format!(
                            "sparkConnect.conf {k}: the server refused it: {}",
                            e.message()
                        ))
                    })?;
                }
                Ok(())
            })
            .await
            .map(|_| ())
    }

    fn request(
        client: &SparkConnectClient,
        statement: &str,
        tag: &str,
    ) -> proto::ExecutePlanRequest {
        proto::ExecutePlanRequest {
            session_id: client.session_id().to_string(),
            user_context: Some(proto::UserContext {
                user_id: client.user_id().unwrap_or_default().to_string(),
                ..Default::default()
            }),
            operation_id: Some(tag.to_string()),
            plan: Some(proto::Plan {
                op_type: Some(proto::plan::OpType::Root(proto::Relation {
                    common: None,
                    rel_type: Some(proto::relation::RelType::Sql(proto::Sql {
                        query: statement.to_string(),
                        ..Default::default()
                    })),
                })),
            }),
            client_type: Some("delta-operator".into()),
            tags: vec![tag.to_string()],
            ..Default::default()
        }
    }

    /// Runs one statement to its end: its rows as strings.
    pub async fn execute(
        &self,
        statement: &str,
        progress: Progress<'_>,
    ) -> Result<StatementResult, StatementError> {
        let client = self.client().await?;
        self.send_conf(client).await?;
        let reads = is_read_only(statement);
        // the operation id is the tag: one statement, one tag, interrupted alone
        let tag = uuid::Uuid::new_v4().to_string();
        let id = statement_id(client.session_id(), &tag);
        self.statements.fetch_add(1, Ordering::Relaxed);
        self.running().insert(
            tag.clone(),
            Running {
                statement: statement.chars().take(200).collect(),
                writes: !reads,
                since: Instant::now(),
            },
        );
        if !reads {
            StatementLog::note(&id);
        }
        let _done = Deregister(self, &tag);
        let run = self.run(client, statement, &tag, &id, progress);
        if reads {
            match tokio::time::timeout(self.read_budget, run).await {
                Ok(r) => r,
                Err(_) => {
                    let _ = client.interrupt_tag(&tag).await;
                    Err(StatementError::Transient(format!(
                        "a read ran past its budget of {} on Spark Connect {} and was interrupted (statement {id}); raise readBudgetSeconds if the table is this slow to read",
                        short_duration(self.read_budget.as_secs()),
                        self.endpoint
                    )))
                }
            }
        } else {
            run.await
        }
    }

    async fn run(
        &self,
        client: &SparkConnectClient,
        statement: &str,
        tag: &str,
        id: &str,
        progress: Progress<'_>,
    ) -> Result<StatementResult, StatementError> {
        let reads = is_read_only(statement);
        let mut stream = client
            .execute_plan_reattachable(Self::request(client, statement, tag))
            .await
            .map_err(|e| self.error(e, id, reads))?;
        let mut result = StatementResult {
            statement_id: id.to_string(),
            ..Default::default()
        };
        let mut last_note = Instant::now();
        loop {
            let message = stream
                .message()
                .await
                .map_err(|e| self.error(e, id, reads))?;
            let Some(response) = message else { break };
            match response.response_type {
                Some(proto::execute_plan_response::ResponseType::ArrowBatch(batch)) => {
                    decode(&batch.data, &mut result).map_err(|e| {
                        StatementError::Transient(format!(
                            "statement {id}: its result could not be read: {e}"
                        ))
                    })?;
                }
                Some(proto::execute_plan_response::ResponseType::ExecutionProgress(p))
                    if last_note.elapsed() >= Duration::from_secs(10) =>
                {
                    last_note = Instant::now();
                    let (done, of) = p.stages.iter().fold((0, 0), |(d, o), s| {
                        (d + s.num_completed_tasks, o + s.num_tasks)
                    });
                    let since = self
                        .running()
                        .get(tag)
                        .map(|r| r.since.elapsed().as_secs())
                        .unwrap_or(0);
                    progress(&format!(
                        "running on Spark for {}: {done} of {of} tasks done (statement {id})",
                        short_duration(since)
                    ));
                }
                _ => {}
            }
        }
        Ok(result)
    }

    /// A Spark error as the client reports it: the server's words verbatim
    /// (error class, SQLSTATE) for the SQL step runner's advice and conflict
    /// checks; a lost connection is transient for a read and of unknown
    /// outcome for a write (it may still be running on the server).
    fn error(&self, e: SparkError, id: &str, reads: bool) -> StatementError {
        let lost = matches!(e.grpc_code, Some(UNAVAILABLE | DEADLINE_EXCEEDED));
        if lost && reads {
            return StatementError::Transient(format!(
                "Spark Connect {}: {} (statement {id})",
                self.endpoint,
                e.message()
            ));
        }
        if lost {
            return StatementError::StateUnknown {
                statement: id.to_string(),
                message: format!(
                    "Spark Connect {} stopped answering while statement {id} ran ({}): it may still be running there",
                    self.endpoint,
                    e.message()
                ),
            };
        }
        let canceled = e.get_condition().is_some_and(|c| c == "OPERATION_CANCELED")
            || e.message().contains("OPERATION_CANCELED");
        if canceled {
            return StatementError::Canceled(format!(
                "statement {id} was interrupted on Spark Connect {}: {}",
                self.endpoint,
                e.message()
            ));
        }
        StatementError::Refused(Box::new(Refusal {
            http_status: None,
            error_code: e.get_condition(),
            sql_state: e.get_sql_state(),
            message: e.message(),
            request_id: None,
            statement_id: Some(id.to_string()),
        }))
    }
}

/// Forgets a statement when its call ends, however it ends.
struct Deregister<'a>(&'a SparkClient, &'a str);

impl Drop for Deregister<'_> {
    fn drop(&mut self) {
        self.0.running().remove(self.1);
    }
}

impl SqlRunner for SparkClient {
    fn backend(&self) -> delta_operator_core::plan::BackendKind {
        delta_operator_core::plan::BackendKind::SparkConnect
    }

    fn execute(
        &self,
        statement: &str,
        progress: Progress<'_>,
    ) -> impl Future<Output = Result<StatementResult, StatementError>> + Send {
        SparkClient::execute(self, statement, progress)
    }
}

/// Appends one Arrow IPC stream's rows to `out`, every value as its string
/// form (NULL as None): the column names come from its schema.
fn decode(data: &[u8], out: &mut StatementResult) -> Result<(), String> {
    let reader = StreamReader::try_new(data, None).map_err(|e| e.to_string())?;
    if out.columns.is_empty() {
        out.columns = reader
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
    }
    let options = FormatOptions::default();
    for batch in reader {
        let batch = batch.map_err(|e| e.to_string())?;
        let formatters = batch
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &options))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| e.to_string())?;
        for row in 0..batch.num_rows() {
            out.rows.push(
                batch
                    .columns()
                    .iter()
                    .zip(&formatters)
                    .map(|(c, f)| (!c.is_null(row)).then(|| f.value(row).to_string()))
                    .collect(),
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use deltalake::arrow::array::{Int64Array, StringArray};
    use deltalake::arrow::datatypes::{DataType, Field, Schema};
    use deltalake::arrow::ipc::writer::StreamWriter;
    use deltalake::arrow::record_batch::RecordBatch;
    use std::sync::Arc;

    #[test]
    fn an_arrow_batch_reads_as_named_string_rows_with_nulls() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("o_rows", DataType::Int64, true),
            Field::new("name", DataType::Utf8, true),
        ]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(Int64Array::from(vec![Some(3), None])),
                Arc::new(StringArray::from(vec![Some("a'b"), Some("")])),
            ],
        )
        .expect("batch");
        let mut buf = Vec::new();
        {
            let mut w = StreamWriter::try_new(&mut buf, &schema).expect("writer");
            w.write(&batch).expect("write");
            w.finish().expect("finish");
        }
        let mut out = StatementResult::default();
        decode(&buf, &mut out).expect("decodes");
        decode(&buf, &mut out).expect("a second batch appends");
        assert_eq!(out.columns, vec!["o_rows", "name"]);
        assert_eq!(out.rows.len(), 4);
        assert_eq!(out.rows[0], vec![Some("3".into()), Some("a'b".into())]);
        assert_eq!(out.rows[1], vec![None, Some("".into())]);
        assert!(decode(b"not arrow", &mut out).is_err());
    }

    #[test]
    fn a_statement_id_names_its_session_and_operation() {
        assert_eq!(statement_id("s1", "op"), "s1/op");
    }
}
