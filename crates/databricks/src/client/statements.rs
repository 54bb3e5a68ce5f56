//! Statements: run one to its end (submit, poll, collect every chunk), the
//! writes in flight, and cancelling them.

use std::sync::Mutex as StdMutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use reqwest::Method;
use serde_json::{Value, json};

use super::http::Resend;
use super::warehouse::starting_words;
use super::{ClientError, DatabricksClient};
use crate::error::{FromWorkspace, WorkspaceError};
use delta_operator_backend::Progress;
use delta_operator_sql::{Cancel, StatementResult, is_read_only};

/// Counts a submission while it is in flight (also when its future is dropped).
pub(super) struct Counted<'a>(&'a AtomicUsize);

impl<'a> Counted<'a> {
    pub(super) fn new(n: &'a AtomicUsize) -> Self {
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
pub(super) struct Listed<'a> {
    list: &'a StdMutex<Vec<String>>,
    id: String,
}

impl<'a> Listed<'a> {
    pub(super) fn new(list: &'a StdMutex<Vec<String>>, id: &str) -> Self {
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

impl DatabricksClient {
    // ------------------------------------------------------------ statements

    /// Runs one statement to its end and returns all its rows.
    pub async fn execute(
        &self,
        statement: &str,
        progress: Progress<'_>,
    ) -> Result<StatementResult, ClientError> {
        self.execute_in(statement, None, progress).await
    }

    /// `execute` with the session's current catalog and schema set (the Statement
    /// Execution API's `catalog` and `schema`): a view's or function's own text,
    /// run as written, resolves its one- and two-part names there, as validation
    /// resolved them, and Databricks keeps that context with the view.
    pub async fn execute_in(
        &self,
        statement: &str,
        within: Option<(&str, &str)>,
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
        let mut body = body;
        if let Some((catalog, schema)) = within {
            body["catalog"] = json!(catalog);
            body["schema"] = json!(schema);
        }
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
    pub(super) async fn follow(
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

    pub(super) async fn collect(
        &self,
        id: &str,
        v: &Value,
    ) -> Result<StatementResult, ClientError> {
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
}

/// `data_array` rows of a result chunk.
pub(super) fn rows(chunk: &Value) -> Vec<Vec<Option<String>>> {
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
