//! One API call: the bearer token, retries within the time budget, paging,
//! and what a failed or lost call means.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use backon::{ExponentialBuilder, Retryable};
use reqwest::{Method, StatusCode};
use serde_json::Value;
use url::Url;

use super::{ClientError, DatabricksClient};
use crate::auth::{CachedToken, Credentials, Secret};
use crate::error::{FromWorkspace, WorkspaceError};

/// Whether a request may be sent again after it left and no answer came.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Resend {
    Safe,
    /// A write statement: it may have run.
    Never,
}

/// One attempt's failure, and whether another attempt may follow.
#[derive(Debug)]
pub(super) struct Attempt {
    error: ClientError,
    retry: bool,
    /// The server's Retry-After.
    after: Option<Duration>,
}

impl Attempt {
    pub(super) fn stop(error: ClientError) -> Self {
        Attempt {
            error,
            retry: false,
            after: None,
        }
    }
}

impl DatabricksClient {
    // ---------------------------------------------------------------- auth

    pub(super) async fn bearer(&self) -> Result<Secret, Attempt> {
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
    pub(super) async fn call(
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
    pub(super) async fn call_with_id(
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

    pub(super) async fn get(
        &self,
        segments: &[&str],
        query: &[(&str, &str)],
    ) -> Result<Value, ClientError> {
        let mut url = self.url(segments)?;
        if !query.is_empty() {
            url.query_pairs_mut().extend_pairs(query);
        }
        self.call(Method::GET, url, None, Resend::Safe).await
    }

    /// Every item under `key` of a paged UC listing (`max_results=0`: the
    /// server's page size). A page may be empty and still carry a token:
    /// only its absence ends the listing.
    pub(super) async fn pages(
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

/// What came back: status, request id, Retry-After and the body.
pub(super) struct Answer {
    status: StatusCode,
    request_id: Option<String>,
    retry_after: Option<Duration>,
    text: String,
}

pub(super) async fn read(resp: reqwest::Response) -> Result<Answer, String> {
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
pub(super) fn http_failure(a: Answer) -> Attempt {
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
pub(super) fn lost(e: &reqwest::Error, resend: Resend, method: &Method, url: &Url) -> Attempt {
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

pub(super) fn lost_body(why: String, resend: Resend, method: &Method, url: &Url) -> Attempt {
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
pub(super) fn without_url(e: &reqwest::Error) -> String {
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
