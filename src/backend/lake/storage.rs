//! Where a lake lives: a local folder, or an object store (`s3://bucket/prefix`,
//! with the credentials and endpoint from the usual AWS_* environment). Tables
//! and the operator's own folders (.staging, .trash) are addressed by a path
//! relative to the root; local roots use the filesystem directly.

use std::path::PathBuf;

use deltalake::{ObjectStore, Path as StorePath};
use object_store::ObjectStoreExt;
use futures::TryStreamExt;
use url::Url;

use super::super::BackendError;

#[derive(Debug, Clone)]
pub enum Root {
    Local(PathBuf),
    Remote(Url),
}

fn transient(e: impl std::fmt::Display) -> BackendError {
    BackendError::Transient(e.to_string())
}

impl Root {
    /// A local path, a file:// URL, or an object-store URL this binary supports.
    pub fn parse(root: &str) -> Result<Self, BackendError> {
        let local = match Url::parse(root) {
            Ok(u) if u.scheme() == "file" => u.to_file_path().map_err(|_| BackendError::Config(format!("bad file URL '{root}'")))?,
            Ok(u) if u.scheme() == "s3" || u.scheme() == "s3a" => {
                deltalake::aws::register_handlers(None);
                let mut u = u;
                if !u.path().ends_with('/') {
                    u.set_path(&format!("{}/", u.path()));
                }
                return Ok(Root::Remote(u));
            }
            Ok(u) if u.scheme().len() > 1 => {
                return Err(BackendError::Config(format!(
                    "lake root '{root}': the '{}' object store is not built into this binary; use a local path, file:// or s3://",
                    u.scheme()
                )));
            }
            _ => PathBuf::from(root),
        };
        std::fs::create_dir_all(&local).map_err(|e| BackendError::Config(format!("cannot create lake root {}: {e}", local.display())))?;
        let local = local.canonicalize().map_err(|e| BackendError::Config(format!("lake root {}: {e}", local.display())))?;
        Ok(Root::Local(local))
    }

    pub fn local(&self) -> Option<&PathBuf> {
        match self {
            Root::Local(p) => Some(p),
            Root::Remote(_) => None,
        }
    }

    /// The URL of a folder under the root (created first when local, since delta-rs wants it).
    pub fn url(&self, rel: &str) -> Result<Url, BackendError> {
        match self {
            Root::Local(p) => {
                let dir = p.join(rel);
                std::fs::create_dir_all(&dir).map_err(|e| transient(format!("{}: {e}", dir.display())))?;
                Url::from_directory_path(&dir).map_err(|_| BackendError::Config(format!("not a usable path: {}", dir.display())))
            }
            Root::Remote(u) => u.join(&format!("{rel}/")).map_err(|e| BackendError::Config(e.to_string())),
        }
    }

    /// Where `rel` is, for messages.
    pub fn display(&self, rel: &str) -> String {
        match self {
            Root::Local(p) => p.join(rel).display().to_string(),
            Root::Remote(u) => format!("{u}{rel}"),
        }
    }

    /// The object store, already scoped to the root (delta-rs wraps it in a prefix store).
    fn store(&self) -> Result<(std::sync::Arc<dyn ObjectStore>, String), BackendError> {
        let Root::Remote(u) = self else { unreachable!("only remote roots use the object store") };
        let store = deltalake::logstore::store_for(u, std::iter::empty::<(String, String)>()).map_err(|e| BackendError::Config(e.to_string()))?;
        Ok((store, String::new()))
    }

    fn key(prefix: &str, rel: &str) -> StorePath {
        StorePath::from(if prefix.is_empty() { rel.to_string() } else { format!("{prefix}/{rel}") })
    }

    /// True when `rel` holds a Delta table (a `_delta_log` with something in it).
    pub async fn is_table(&self, rel: &str) -> Result<bool, BackendError> {
        match self {
            Root::Local(p) => Ok(p.join(rel).join("_delta_log").is_dir()),
            Root::Remote(_) => {
                let (store, prefix) = self.store()?;
                let log = Self::key(&prefix, &format!("{rel}/_delta_log"));
                Ok(store.list(Some(&log)).try_next().await.map_err(transient)?.is_some())
            }
        }
    }

    /// The names of the tables directly under `rel`.
    pub async fn tables_under(&self, rel: &str) -> Result<Vec<String>, BackendError> {
        let mut out = Vec::new();
        match self {
            Root::Local(p) => {
                let Ok(rd) = std::fs::read_dir(p.join(rel)) else { return Ok(out) };
                for e in rd.flatten() {
                    if e.path().join("_delta_log").is_dir() {
                        out.push(e.file_name().to_string_lossy().to_string());
                    }
                }
            }
            Root::Remote(_) => {
                let (store, prefix) = self.store()?;
                let listing = store.list_with_delimiter(Some(&Self::key(&prefix, rel))).await.map_err(transient)?;
                for dir in listing.common_prefixes {
                    let Some(name) = dir.filename().map(str::to_string) else { continue };
                    if self.is_table(&format!("{rel}/{name}")).await? {
                        out.push(name);
                    }
                }
            }
        }
        out.sort();
        Ok(out)
    }

    /// Moves everything under `from` to `to` (a rename locally; copy, then delete, on an object store).
    pub async fn move_folder(&self, from: &str, to: &str) -> Result<(), BackendError> {
        match self {
            Root::Local(p) => {
                let (a, b) = (p.join(from), p.join(to));
                std::fs::create_dir_all(b.parent().expect("has a parent")).map_err(transient)?;
                std::fs::rename(&a, &b).map_err(|e| transient(format!("moving {} to {}: {e}", a.display(), b.display())))
            }
            Root::Remote(_) => {
                let (store, prefix) = self.store()?;
                let src = Self::key(&prefix, from);
                let objects: Vec<_> = store.list(Some(&src)).try_collect().await.map_err(transient)?;
                // copy every object first: the table is intact until all copies exist
                for o in &objects {
                    let rest = o.location.as_ref().strip_prefix(src.as_ref()).unwrap_or(o.location.as_ref()).trim_start_matches('/');
                    store.copy(&o.location, &Self::key(&prefix, &format!("{to}/{rest}"))).await.map_err(transient)?;
                }
                for o in &objects {
                    store.delete(&o.location).await.map_err(transient)?;
                }
                Ok(())
            }
        }
    }

    /// Removes everything under `rel`; nothing there is fine.
    pub async fn remove_folder(&self, rel: &str) -> Result<(), BackendError> {
        match self {
            Root::Local(p) => {
                let dir = p.join(rel);
                if dir.exists() {
                    std::fs::remove_dir_all(&dir).map_err(|e| transient(format!("{}: {e}", dir.display())))?;
                }
                Ok(())
            }
            Root::Remote(_) => {
                let (store, prefix) = self.store()?;
                let objects: Vec<_> = store.list(Some(&Self::key(&prefix, rel))).try_collect().await.map_err(transient)?;
                for o in objects {
                    store.delete(&o.location).await.map_err(transient)?;
                }
                Ok(())
            }
        }
    }
}
