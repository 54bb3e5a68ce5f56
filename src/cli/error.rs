//! How a command ends: [`Exit`] when it ran (its report already said what it
//! found), [`CliError`] when it could not. Both map to the process's exit code
//! here and only here, and [`CliError::report`] is the one place that writes an
//! error's lines to stderr.

use std::path::PathBuf;

use crate::apply::ApplyError;
use crate::backend::BackendError;
use crate::backend::databricks::client::ClientError;
use crate::config::ConfigError;
use crate::model::SchemaRef;
use crate::spec::SpecError;

pub const EXIT_OK: u8 = 0;
pub const EXIT_ERROR: u8 = 1;
pub const EXIT_CHANGES: u8 = 2;
pub const EXIT_STALE: u8 = 3;
pub const EXIT_REFUSED: u8 = 4;
/// Another apply holds a table of the plan (the message names it and how to unlock a dead one).
pub const EXIT_LOCKED: u8 = 5;
/// Ctrl-C (128 + SIGINT).
pub const EXIT_INTERRUPTED: u8 = 130;

/// A command that ran to its end; what it found is on stdout already.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Nothing to do, or done.
    Ok,
    /// `plan`, `kubectl delta drift`: there are changes to apply.
    Changes,
    /// The run's own report says what failed (a step, a probe, a rejected table, an
    /// approval not given): exit 1 with no further `error:` line.
    Failed,
    /// An apply went on without the tables another apply holds.
    Locked,
}

impl Exit {
    pub fn code(self) -> u8 {
        match self {
            Exit::Ok => EXIT_OK,
            Exit::Changes => EXIT_CHANGES,
            Exit::Failed => EXIT_ERROR,
            Exit::Locked => EXIT_LOCKED,
        }
    }
}

/// Why a command could not run, or stopped.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// The config file (`--config`) or a target named in it.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// Manifests that do not load, validate or lower: every one is listed.
    #[error("{} error{}", .0.len(), if .0.len() == 1 { "" } else { "s" })]
    Manifests(Vec<SpecError>),
    /// Arguments that cannot work (a malformed name, an unknown probe, several targets).
    #[error("{0}")]
    Usage(String),
    /// A target's backend cannot be opened (a bad root, a missing credential).
    #[error("target '{target}': {source}")]
    Target {
        target: String,
        #[source]
        source: BackendError,
    },
    /// The manifests or `--schema` name a schema outside the target's `schemas:`.
    #[error(
        "target '{target}' may not touch {schema} (its schemas: {}); nothing was {untouched}",
        allowed.join(", ")
    )]
    NotAllowed {
        target: String,
        schema: SchemaRef,
        allowed: Vec<String>,
        /// `read` or `read or written`.
        untouched: &'static str,
    },
    /// Reading the live tables before planning.
    #[error("reading the tables failed: {0}")]
    Read(#[source] BackendError),
    /// The backend failed an operation (a table held by another apply exits 5).
    #[error(transparent)]
    Backend(#[from] BackendError),
    /// The apply refused to start (approval, a stale plan id, a lock); nothing changed.
    #[error("refused: {0}. Nothing was changed.")]
    Refused(#[source] ApplyError),
    /// The apply failed before or around its steps (reading, taking the locks).
    #[error(transparent)]
    Apply(ApplyError),
    /// Every table of the plan is rejected by the rules (shown above).
    #[error("refused: nothing in this plan can run (see ✗ above). Nothing was changed.")]
    NothingCanRun,
    /// `unlock` without --force on a lock whose holder may still be applying.
    #[error("{0}")]
    HolderMayBeAlive(String),
    /// A file read or written.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A JSON file that does not parse (an observed-state file).
    #[error("{}: {source}", path.display())]
    Json {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    /// `verify`: the scratch schema cannot be looked up.
    #[error("cannot read schema {schema}: {source}")]
    ReadSchema {
        schema: String,
        #[source]
        source: ClientError,
    },
    /// `verify`: the scratch schema cannot be created.
    #[error("cannot create the scratch schema {schema}:\n{source}")]
    CreateSchema {
        schema: String,
        #[source]
        source: ClientError,
    },
    /// The kubectl plugin: the cluster's API or what it holds.
    #[error("{0}")]
    Kubectl(String),
    /// The controllers (`run`).
    #[error(transparent)]
    Controller(#[from] crate::controller::Error),
    /// The async runtime could not start.
    #[error("cannot start the async runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// Ctrl-C or SIGTERM: the whole line, said as it stops.
    #[error("{0}")]
    Interrupted(String),
}

impl CliError {
    /// The process's exit code for this error.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Backend(BackendError::Locked(_)) | CliError::HolderMayBeAlive(_) => {
                EXIT_LOCKED
            }
            CliError::Refused(e) => match e {
                ApplyError::NeedsApproval { .. } | ApplyError::WrongApproval { .. } => EXIT_REFUSED,
                ApplyError::Stale { .. } => EXIT_STALE,
                ApplyError::Locked(_) => EXIT_LOCKED,
                _ => EXIT_ERROR,
            },
            CliError::Interrupted(_) => EXIT_INTERRUPTED,
            CliError::Config(_)
            | CliError::Manifests(_)
            | CliError::Usage(_)
            | CliError::Target { .. }
            | CliError::NotAllowed { .. }
            | CliError::Read(_)
            | CliError::Backend(_)
            | CliError::Apply(_)
            | CliError::NothingCanRun
            | CliError::Io { .. }
            | CliError::Json { .. }
            | CliError::ReadSchema { .. }
            | CliError::CreateSchema { .. }
            | CliError::Kubectl(_)
            | CliError::Controller(_)
            | CliError::Runtime(_) => EXIT_ERROR,
        }
    }

    /// The lines stderr shows: `error: …`, except for a refusal or an interruption,
    /// which say so themselves; manifest errors one a line, then their count.
    pub fn report(&self) -> String {
        match self {
            CliError::Manifests(errors) => errors
                .iter()
                .map(|e| format!("error: {e}\n"))
                .chain([self.to_string()])
                .collect(),
            CliError::Refused(_) | CliError::NothingCanRun | CliError::Interrupted(_) => {
                self.to_string()
            }
            _ => format!("error: {self}"),
        }
    }
}

/// A command's end as the process exits with it, its error said on stderr.
pub fn finish(result: Result<Exit, CliError>) -> u8 {
    match result {
        Ok(exit) => exit.code(),
        Err(e) => {
            eprintln!("{}", e.report());
            e.exit_code()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_error_exits_with_its_code() {
        let locked = CliError::Backend(BackendError::Locked("held".into()));
        assert_eq!(locked.exit_code(), EXIT_LOCKED);
        assert_eq!(
            CliError::Backend(BackendError::Transient("x".into())).exit_code(),
            EXIT_ERROR
        );
        assert_eq!(
            CliError::Refused(ApplyError::Locked("held".into())).exit_code(),
            EXIT_LOCKED
        );
        assert_eq!(CliError::Interrupted("i".into()).exit_code(), 130);
        assert_eq!(CliError::Usage("u".into()).exit_code(), EXIT_ERROR);
        assert_eq!(Exit::Changes.code(), EXIT_CHANGES);
    }

    #[test]
    fn errors_say_error_and_refusals_say_refused() {
        assert_eq!(CliError::Usage("bad".into()).report(), "error: bad");
        assert_eq!(
            CliError::Refused(ApplyError::Locked("t is held".into())).report(),
            "refused: t is held. Nothing was changed."
        );
        assert_eq!(
            CliError::Read(BackendError::Transient("down".into())).report(),
            "error: reading the tables failed: down"
        );
    }
}
