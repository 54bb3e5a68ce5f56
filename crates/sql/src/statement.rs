//! What a runner of statements gives the step runner: a statement's rows, or
//! why it failed, typed just enough to decide what happens next (try the
//! replace again, report the step as still running, give up); and what a
//! cancel did.

use std::future::Future;

use delta_operator_backend::{BackendError, Progress};
use delta_operator_core::plan::BackendKind;

use crate::Refusal;

/// Where statements run: one statement to its end, all its rows.
pub trait SqlRunner: Send + Sync {
    /// The backend the statements run on (named in messages).
    fn backend(&self) -> BackendKind;

    fn execute(
        &self,
        statement: &str,
        progress: Progress<'_>,
    ) -> impl Future<Output = Result<StatementResult, StatementError>> + Send;
}

/// Rows of a finished statement: every value a string or null.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatementResult {
    pub statement_id: String,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Option<String>>>,
}

impl StatementResult {
    /// The index of a result column by name.
    pub fn column(&self, name: &str) -> Option<usize> {
        self.columns
            .iter()
            .position(|c| c.eq_ignore_ascii_case(name))
    }
}

/// What `cancel` did: what to tell the user, and the statements asked to cancel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cancel {
    pub message: String,
    pub statements: Vec<String>,
    /// Something was running (or being submitted) when it was asked.
    pub busy: bool,
}

impl std::fmt::Display for Cancel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// Why a statement did not finish.
#[derive(Debug, thiserror::Error)]
pub enum StatementError {
    /// The engine refused it, in its own words.
    #[error("{0}")]
    Refused(Box<Refusal>),
    /// Worth another try later (network trouble, rate limits, a write sent
    /// without an answer: the executor re-reads and skips a step that holds).
    #[error("{0}")]
    Transient(String),
    /// A write was submitted, and then its state could not be read: it may
    /// still be running, so it is not reported as failed (its id is kept).
    #[error("{message}")]
    StateUnknown { statement: String, message: String },
    #[error("{0}")]
    Canceled(String),
    /// The runner cannot reach or use its engine as configured.
    #[error("{0}")]
    Config(String),
}

/// Error codes that mean "not now" rather than "no".
const TRANSIENT_CODES: &[&str] = &[
    "TEMPORARILY_UNAVAILABLE",
    "WORKSPACE_TEMPORARILY_UNAVAILABLE",
    "SERVICE_UNDER_MAINTENANCE",
    "REQUEST_LIMIT_EXCEEDED",
    "RESOURCE_EXHAUSTED",
];

impl From<StatementError> for BackendError {
    fn from(e: StatementError) -> Self {
        match e {
            StatementError::Refused(w)
                if w.error_code
                    .as_deref()
                    .is_some_and(|c| TRANSIENT_CODES.contains(&c))
                    || matches!(w.http_status, Some(429 | 503)) =>
            {
                BackendError::Transient(w.to_string())
            }
            StatementError::Refused(w) => BackendError::Refused {
                message: w.to_string(),
            },
            StatementError::Transient(m) => BackendError::Transient(m),
            StatementError::StateUnknown { statement, message } => {
                BackendError::StillRunning { statement, message }
            }
            StatementError::Canceled(m) => BackendError::Refused { message: m },
            StatementError::Config(m) => BackendError::Config(m),
        }
    }
}
