//! The SQL warehouse: its state, and starting it before statements run.

use std::sync::atomic::Ordering;
use std::time::Instant;

use reqwest::Method;
use serde_json::{Value, json};

use super::http::Resend;
use super::{ClientError, DatabricksClient};
use crate::error::WorkspaceError;
use delta_operator_backend::Progress;

impl DatabricksClient {
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
    pub(super) async fn refused_or_starting(
        &self,
        refusal: WorkspaceError,
        progress: Progress<'_>,
    ) -> Result<(), ClientError> {
        if self.warehouse_state().await? == "RUNNING" {
            return Err(ClientError::Workspace(Box::new(refusal)));
        }
        self.ensure_warehouse(progress).await
    }
}

/// Refusals that may only mean the warehouse is not up yet (stevin's words, live).
pub(super) fn starting_words(w: &WorkspaceError) -> bool {
    let m = w.message.to_lowercase();
    m.contains("could not be processed by the warehouse")
        || m.contains("cannot create the resource, please try again later")
        || m.contains("warehouse is not running")
}
