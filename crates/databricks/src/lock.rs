//! One apply per table on Databricks: the shared table lock
//! ([`delta_operator_backend::lock`]) with its entries in a workspace folder,
//! `<lockFolder>/<catalog>/<schema>/<table>/<n>.json` (default folder
//! [`DEFAULT_FOLDER`]), through the Workspace API: what every applier of the
//! target (the CLI anywhere, the operator in its cluster) already reaches with
//! its Databricks credential, no kubeconfig needed.
//!
//! Create-if-absent is `POST /api/2.0/workspace/import` with `overwrite: false`,
//! which answers `RESOURCE_ALREADY_EXISTS` when the path exists
//! (<https://docs.databricks.com/api/workspace-files/v1/import.md>); reads are
//! `GET …/workspace/export` (base64 `content`), listings `GET …/workspace/list`,
//! removals `POST …/workspace/delete`, folders `POST …/workspace/mkdirs`
//! (the Workspace API pages beside it). What stays behind is
//! the newest two entries of each table applied (a few hundred bytes each),
//! which the next apply of that table prunes in turn.

use std::sync::Arc;

use delta_operator_backend::BackendError;
use delta_operator_backend::lock::{LOCKS, LockStore};

use crate::client::{self, ClientError, DatabricksClient};

/// Where the entries go when the target names no `lockFolder`.
pub const DEFAULT_FOLDER: &str = "/Shared/.delta-operator/locks";

/// A workspace folder holding table locks.
#[derive(Clone)]
pub struct WorkspaceLocks {
    client: Arc<DatabricksClient>,
    folder: String,
}

impl std::fmt::Debug for WorkspaceLocks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkspaceLocks")
            .field("folder", &self.folder)
            .finish_non_exhaustive()
    }
}

fn failed(what: &str, path: &str, e: ClientError) -> BackendError {
    let e = BackendError::from(e);
    match e {
        BackendError::Refused { message } => BackendError::Transient(format!(
            "the table lock: {what} {path} in the workspace: {message}"
        )),
        other => other,
    }
}

impl WorkspaceLocks {
    pub fn new(client: Arc<DatabricksClient>, folder: &str) -> Self {
        let folder = folder.trim().trim_end_matches('/');
        WorkspaceLocks {
            client,
            folder: if folder.is_empty() {
                DEFAULT_FOLDER.to_string()
            } else {
                folder.to_string()
            },
        }
    }

    /// The workspace folder of the locks.
    pub fn folder(&self) -> &str {
        &self.folder
    }

    /// The workspace path of a lock path (`.locks/c/s/t/…` → `<folder>/c/s/t/…`).
    pub fn path(&self, rel: &str) -> String {
        let rel = rel
            .strip_prefix(LOCKS)
            .map(|r| r.trim_start_matches('/'))
            .unwrap_or(rel);
        if rel.is_empty() {
            self.folder.clone()
        } else {
            format!("{}/{rel}", self.folder)
        }
    }

    /// An import, making the parent folders when they are missing.
    async fn import(&self, path: &str, bytes: &[u8], overwrite: bool) -> Result<(), ClientError> {
        match self.client.workspace_import(path, bytes, overwrite).await {
            Err(e) if client::error_code(&e) == Some("RESOURCE_DOES_NOT_EXIST") => {
                if let Some((parent, _)) = path.rsplit_once('/') {
                    self.client.workspace_mkdirs(parent).await?;
                }
                self.client.workspace_import(path, bytes, overwrite).await
            }
            other => other,
        }
    }
}

impl LockStore for WorkspaceLocks {
    async fn create(&self, rel: &str, bytes: &[u8]) -> Result<bool, BackendError> {
        let path = self.path(rel);
        match self.import(&path, bytes, false).await {
            Ok(()) => Ok(true),
            Err(e) if client::error_code(&e) == Some("RESOURCE_ALREADY_EXISTS") => {
                // ours only if it holds exactly our bytes (an import whose answer was
                // lost and that was sent again); an entry names its writer, pid and
                // millisecond, so nobody else writes the same bytes
                let there = self
                    .client
                    .workspace_export(&path)
                    .await
                    .map_err(|e| failed("reading", &path, e))?;
                Ok(there.as_deref() == Some(bytes))
            }
            Err(e) => Err(failed("writing", &path, e)),
        }
    }

    async fn put(&self, rel: &str, bytes: &[u8]) -> Result<(), BackendError> {
        let path = self.path(rel);
        self.import(&path, bytes, true)
            .await
            .map_err(|e| failed("writing", &path, e))
    }

    async fn read(&self, rel: &str) -> Result<Option<Vec<u8>>, BackendError> {
        let path = self.path(rel);
        self.client
            .workspace_export(&path)
            .await
            .map_err(|e| failed("reading", &path, e))
    }

    async fn list(&self, rel: &str) -> Result<Vec<String>, BackendError> {
        let path = self.path(rel);
        let objects = self
            .client
            .workspace_list(&path)
            .await
            .map_err(|e| failed("listing", &path, e))?
            .unwrap_or_default();
        let prefix = format!("{path}/");
        Ok(objects
            .iter()
            .filter(|o| o.get("object_type").and_then(|t| t.as_str()) == Some("FILE"))
            .filter_map(|o| o.get("path").and_then(|p| p.as_str()))
            .filter_map(|p| p.strip_prefix(&prefix))
            .map(str::to_string)
            .collect())
    }

    async fn delete(&self, rel: &str) -> Result<(), BackendError> {
        let path = self.path(rel);
        self.client
            .workspace_delete(&path)
            .await
            .map(|_| ())
            .map_err(|e| failed("removing", &path, e))
    }

    async fn remove_folder_if_empty(&self, rel: &str) {
        // DIRECTORY_NOT_EMPTY when a run's heartbeat is still there: fine
        let _ = self.client.workspace_delete(&self.path(rel)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::{Credentials, Secret};
    use crate::client::{ClientConfig, base64_decode, base64_encode};

    #[test]
    fn base64_round_trips_and_matches_the_standard_alphabet() {
        for (plain, coded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("{\"state\":\"held\"}", "eyJzdGF0ZSI6ImhlbGQifQ=="),
        ] {
            assert_eq!(base64_encode(plain.as_bytes()), coded);
            assert_eq!(base64_decode(coded).unwrap(), plain.as_bytes());
        }
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(base64_decode(&base64_encode(&all)).unwrap(), all);
        assert!(base64_decode("not*base64").is_none());
    }

    #[test]
    fn lock_paths_live_under_the_folder() {
        let client = DatabricksClient::new(ClientConfig::new(
            "https://example.cloud.databricks.com",
            "w",
            Credentials::Token(Secret::new("t")),
        ))
        .unwrap();
        let locks = WorkspaceLocks::new(Arc::new(client), "");
        assert_eq!(locks.folder(), DEFAULT_FOLDER);
        assert_eq!(
            locks.path(".locks/main/sales/t/00000000000000000001.json"),
            "/Shared/.delta-operator/locks/main/sales/t/00000000000000000001.json"
        );
        let client = DatabricksClient::new(ClientConfig::new(
            "https://example.cloud.databricks.com",
            "w",
            Credentials::Token(Secret::new("t")),
        ))
        .unwrap();
        let locks = WorkspaceLocks::new(Arc::new(client), "/Users/me/locks/");
        assert_eq!(
            locks.path(".locks/a/b/c/runs"),
            "/Users/me/locks/a/b/c/runs"
        );
    }
}
