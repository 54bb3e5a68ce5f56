//! Where a lake lives: a local folder, or an object store (`s3://bucket/prefix`,
//! with the credentials and endpoint from the usual AWS_* environment). Tables
//! and the operator's own folders (.staging, .trash) are addressed by a path
//! relative to the root; local roots use the filesystem directly.

use std::path::PathBuf;

use deltalake::{ObjectStore, Path as StorePath};
use futures::TryStreamExt;
use object_store::ObjectStoreExt;
use url::Url;

use delta_operator_backend::BackendError;

#[derive(Debug, Clone)]
pub enum Root {
    Local(PathBuf),
    Remote(Url),
}

fn transient(e: impl std::fmt::Display) -> BackendError {
    BackendError::Transient(e.to_string())
}

/// A store (or its configuration: `AWS_CONDITIONAL_PUT=disabled`) that cannot
/// create an object only if it is absent: object_store says "not implemented",
/// a store without the feature answers 501 Not Implemented.
fn no_conditional_put(e: &object_store::Error) -> bool {
    match e {
        object_store::Error::NotImplemented { .. } | object_store::Error::NotSupported { .. } => {
            true
        }
        other => {
            let text = other.to_string();
            text.contains("501") || text.contains("NotImplemented")
        }
    }
}

impl Root {
    /// A local path, a file:// URL, or an object-store URL this binary supports.
    pub fn parse(root: &str) -> Result<Self, BackendError> {
        let local = match Url::parse(root) {
            Ok(u) if u.scheme() == "file" => u
                .to_file_path()
                .map_err(|_| BackendError::Config(format!("bad file URL '{root}'")))?,
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
        // never created here: `plan`, `read` and `validate` write nothing; the
        // first write creates the folders it needs
        let local = match local.canonicalize() {
            Ok(p) => p,
            Err(_) => std::path::absolute(&local)
                .map_err(|e| BackendError::Config(format!("lake root {}: {e}", local.display())))?,
        };
        if local.exists() && !local.is_dir() {
            return Err(BackendError::Config(format!(
                "lake root {} is a file, not a folder",
                local.display()
            )));
        }
        Ok(Root::Local(local))
    }

    pub fn local(&self) -> Option<&PathBuf> {
        match self {
            Root::Local(p) => Some(p),
            Root::Remote(_) => None,
        }
    }

    /// The URL of a folder under the root (nothing is created: see `url_for_write`).
    pub fn url(&self, rel: &str) -> Result<Url, BackendError> {
        match self {
            Root::Local(p) => {
                let dir = p.join(rel);
                Url::from_directory_path(&dir).map_err(|_| {
                    BackendError::Config(format!("not a usable path: {}", dir.display()))
                })
            }
            Root::Remote(u) => u
                .join(&format!("{rel}/"))
                .map_err(|e| BackendError::Config(e.to_string())),
        }
    }

    /// The URL of a folder about to be written (created first when local, since delta-rs wants it).
    pub fn url_for_write(&self, rel: &str) -> Result<Url, BackendError> {
        if let Root::Local(p) = self {
            let dir = p.join(rel);
            std::fs::create_dir_all(&dir)
                .map_err(|e| transient(format!("{}: {e}", dir.display())))?;
        }
        self.url(rel)
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
        let Root::Remote(u) = self else {
            unreachable!("only remote roots use the object store")
        };
        let store = deltalake::logstore::store_for(u, std::iter::empty::<(String, String)>())
            .map_err(|e| BackendError::Config(e.to_string()))?;
        Ok((store, String::new()))
    }

    fn key(prefix: &str, rel: &str) -> StorePath {
        StorePath::from(if prefix.is_empty() {
            rel.to_string()
        } else {
            format!("{prefix}/{rel}")
        })
    }

    /// True when `rel` holds a Delta table (a `_delta_log` with something in it).
    pub async fn is_table(&self, rel: &str) -> Result<bool, BackendError> {
        match self {
            Root::Local(p) => Ok(p.join(rel).join("_delta_log").is_dir()),
            Root::Remote(_) => {
                let (store, prefix) = self.store()?;
                let log = Self::key(&prefix, &format!("{rel}/_delta_log"));
                Ok(store
                    .list(Some(&log))
                    .try_next()
                    .await
                    .map_err(transient)?
                    .is_some())
            }
        }
    }

    /// True when the folder `rel` exists: on disk a directory; on an object
    /// store, which has no folders, any object under `rel/`.
    pub async fn folder_exists(&self, rel: &str) -> Result<bool, BackendError> {
        match self {
            Root::Local(p) => Ok(p.join(rel).is_dir()),
            Root::Remote(_) => {
                let (store, prefix) = self.store()?;
                Ok(store
                    .list(Some(&Self::key(&prefix, rel)))
                    .try_next()
                    .await
                    .map_err(transient)?
                    .is_some())
            }
        }
    }

    /// Creates the folder `rel` and those above it; an existing one is kept.
    /// An object store has no empty folders: there an empty object
    /// `rel/.delta-operator-schema` makes `rel` exist for `folder_exists`
    /// (a file, so never listed as a table or a folder).
    pub async fn create_folder(&self, rel: &str) -> Result<(), BackendError> {
        match self {
            Root::Local(p) => {
                let dir = p.join(rel);
                std::fs::create_dir_all(&dir)
                    .map_err(|e| transient(format!("{}: {e}", dir.display())))
            }
            Root::Remote(_) => {
                self.put_file(&format!("{rel}/.delta-operator-schema"), b"")
                    .await
            }
        }
    }

    /// The names of the tables directly under `rel`.
    pub async fn tables_under(&self, rel: &str) -> Result<Vec<String>, BackendError> {
        let mut out = Vec::new();
        match self {
            Root::Local(p) => {
                let Ok(rd) = std::fs::read_dir(p.join(rel)) else {
                    return Ok(out);
                };
                for e in rd.flatten() {
                    if e.path().join("_delta_log").is_dir() {
                        out.push(e.file_name().to_string_lossy().to_string());
                    }
                }
            }
            Root::Remote(_) => {
                let (store, prefix) = self.store()?;
                let listing = store
                    .list_with_delimiter(Some(&Self::key(&prefix, rel)))
                    .await
                    .map_err(transient)?;
                for dir in listing.common_prefixes {
                    let Some(name) = dir.filename().map(str::to_string) else {
                        continue;
                    };
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
                std::fs::rename(&a, &b).map_err(|e| {
                    transient(format!("moving {} to {}: {e}", a.display(), b.display()))
                })
            }
            Root::Remote(_) => {
                let (store, prefix) = self.store()?;
                let src = Self::key(&prefix, from);
                let objects: Vec<_> = store
                    .list(Some(&src))
                    .try_collect()
                    .await
                    .map_err(transient)?;
                // copy every object first: the table is intact until all copies exist
                for o in &objects {
                    let rest = o
                        .location
                        .as_ref()
                        .strip_prefix(src.as_ref())
                        .unwrap_or(o.location.as_ref())
                        .trim_start_matches('/');
                    store
                        .copy(&o.location, &Self::key(&prefix, &format!("{to}/{rest}")))
                        .await
                        .map_err(transient)?;
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
                    std::fs::remove_dir_all(&dir)
                        .map_err(|e| transient(format!("{}: {e}", dir.display())))?;
                }
                Ok(())
            }
            Root::Remote(_) => {
                let (store, prefix) = self.store()?;
                let objects: Vec<_> = store
                    .list(Some(&Self::key(&prefix, rel)))
                    .try_collect()
                    .await
                    .map_err(transient)?;
                for o in objects {
                    store.delete(&o.location).await.map_err(transient)?;
                }
                Ok(())
            }
        }
    }

    /// Every object under `rel` (recursively), as paths relative to `rel`, with sizes.
    pub async fn list_files(&self, rel: &str) -> Result<Vec<(String, u64)>, BackendError> {
        let mut out = Vec::new();
        match self {
            Root::Local(p) => {
                let base = p.join(rel);
                let mut stack = vec![base.clone()];
                while let Some(dir) = stack.pop() {
                    let Ok(rd) = std::fs::read_dir(&dir) else {
                        continue;
                    };
                    for e in rd.flatten() {
                        let path = e.path();
                        let Ok(md) = e.metadata() else { continue };
                        if md.is_dir() {
                            stack.push(path);
                        } else if let Ok(r) = path.strip_prefix(&base) {
                            out.push((r.to_string_lossy().replace('\\', "/"), md.len()));
                        }
                    }
                }
            }
            Root::Remote(_) => {
                let (store, prefix) = self.store()?;
                let base = Self::key(&prefix, rel);
                let objects: Vec<_> = store
                    .list(Some(&base))
                    .try_collect()
                    .await
                    .map_err(transient)?;
                for o in objects {
                    let rest = o
                        .location
                        .as_ref()
                        .strip_prefix(base.as_ref())
                        .unwrap_or(o.location.as_ref())
                        .trim_start_matches('/')
                        .to_string();
                    out.push((rest, o.size));
                }
            }
        }
        out.sort();
        Ok(out)
    }

    /// The names of the folders directly under `rel`.
    pub async fn folders_under(&self, rel: &str) -> Result<Vec<String>, BackendError> {
        let mut out = Vec::new();
        match self {
            Root::Local(p) => {
                let Ok(rd) = std::fs::read_dir(p.join(rel)) else {
                    return Ok(out);
                };
                for e in rd.flatten() {
                    if e.file_type().is_ok_and(|t| t.is_dir()) {
                        out.push(e.file_name().to_string_lossy().to_string());
                    }
                }
            }
            Root::Remote(_) => {
                let (store, prefix) = self.store()?;
                let listing = store
                    .list_with_delimiter(Some(&Self::key(&prefix, rel)))
                    .await
                    .map_err(transient)?;
                out.extend(
                    listing
                        .common_prefixes
                        .iter()
                        .filter_map(|d| d.filename().map(str::to_string)),
                );
            }
        }
        out.sort();
        Ok(out)
    }

    /// Reads one object; `None` when it does not exist.
    pub async fn read_file(&self, rel: &str) -> Result<Option<Vec<u8>>, BackendError> {
        match self {
            Root::Local(p) => match std::fs::read(p.join(rel)) {
                Ok(b) => Ok(Some(b)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(transient(format!("{}: {e}", p.join(rel).display()))),
            },
            Root::Remote(_) => {
                let (store, prefix) = self.store()?;
                match store.get(&Self::key(&prefix, rel)).await {
                    Ok(r) => Ok(Some(r.bytes().await.map_err(transient)?.to_vec())),
                    Err(object_store::Error::NotFound { .. }) => Ok(None),
                    Err(e) => Err(transient(e)),
                }
            }
        }
    }

    /// Creates `rel` with `bytes` only if nothing is there yet (atomically: an
    /// exclusive create on disk, a conditional put on an object store).
    /// `Ok(false)` when it already exists.
    pub async fn create_file(&self, rel: &str, bytes: &[u8]) -> Result<bool, BackendError> {
        match self {
            Root::Local(p) => {
                use std::io::Write;
                let path = p.join(rel);
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent)
                        .map_err(|e| transient(format!("{}: {e}", parent.display())))?;
                }
                match std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&path)
                {
                    Ok(mut f) => {
                        f.write_all(bytes)
                            .and_then(|_| f.sync_all())
                            .map_err(|e| transient(format!("{}: {e}", path.display())))?;
                        Ok(true)
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
                    Err(e) => Err(transient(format!("{}: {e}", path.display()))),
                }
            }
            Root::Remote(_) => {
                let (store, prefix) = self.store()?;
                let opts = object_store::PutOptions {
                    mode: object_store::PutMode::Create,
                    ..Default::default()
                };
                match store
                    .put_opts(&Self::key(&prefix, rel), bytes.to_vec().into(), opts)
                    .await
                {
                    Ok(_) => Ok(true),
                    Err(
                        object_store::Error::AlreadyExists { .. }
                        | object_store::Error::Precondition { .. },
                    ) => Ok(false),
                    Err(e) if no_conditional_put(&e) => Err(BackendError::Config(format!(
                        "the object store at {} does not support conditional writes (put-if-absent, `If-None-Match: *`), which the operator's table locks need ({e}). Fix: use a store that supports them (AWS S3, MinIO, Cloudflare R2) and leave AWS_CONDITIONAL_PUT at its default `etag` (not `disabled`); nothing was changed",
                        self.display("")
                    ))),
                    Err(e) => Err(transient(e)),
                }
            }
        }
    }

    /// Writes `rel` whole, replacing what is there (a run's heartbeat): on disk
    /// through a temporary file renamed over it, so a reader never sees half of it.
    pub async fn put_file(&self, rel: &str, bytes: &[u8]) -> Result<(), BackendError> {
        match self {
            Root::Local(p) => {
                let path = p.join(rel);
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent)
                        .map_err(|e| transient(format!("{}: {e}", parent.display())))?;
                }
                let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
                std::fs::write(&tmp, bytes)
                    .and_then(|_| std::fs::rename(&tmp, &path))
                    .map_err(|e| transient(format!("{}: {e}", path.display())))
            }
            Root::Remote(_) => {
                let (store, prefix) = self.store()?;
                store
                    .put(&Self::key(&prefix, rel), bytes.to_vec().into())
                    .await
                    .map(|_| ())
                    .map_err(transient)
            }
        }
    }

    /// Deletes one object; a missing one is fine.
    pub async fn delete_file(&self, rel: &str) -> Result<(), BackendError> {
        match self {
            Root::Local(p) => match std::fs::remove_file(p.join(rel)) {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                Err(e) => Err(transient(format!("{}: {e}", p.join(rel).display()))),
            },
            Root::Remote(_) => {
                let (store, prefix) = self.store()?;
                match store.delete(&Self::key(&prefix, rel)).await {
                    Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
                    Err(e) => Err(transient(e)),
                }
            }
        }
    }

    /// Removes `rel` if it is an empty folder (object stores have no empty folders).
    pub fn remove_if_empty(&self, rel: &str) {
        if let Root::Local(p) = self {
            let _ = std::fs::remove_dir(p.join(rel));
        }
    }

    /// Removes `rel` and then each folder above it, up to and including
    /// `top`, while they are empty (`.staging/<catalog>/<schema>/<table>` up
    /// to `.staging`). Stops at the first folder that is not empty.
    pub fn remove_empty_up_to(&self, rel: &str, top: &str) {
        let Root::Local(p) = self else { return };
        let mut at = rel.trim_end_matches('/');
        loop {
            if std::fs::remove_dir(p.join(at)).is_err() || at == top {
                return;
            }
            match at.rsplit_once('/') {
                Some((parent, _)) if parent.len() >= top.len() => at = parent,
                _ => return,
            }
        }
    }
}
