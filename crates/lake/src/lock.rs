//! One apply per table, whoever starts it: a lock object under the lake root,
//! shared by the CLI and the operator.
//!
//! The lock is a sequence of small JSON files, `.locks/<catalog>/<schema>/<table>/<n>.json`,
//! each created only if absent (an exclusive create on disk, a conditional put
//! on an object store), as the Delta log itself is written. The newest entry
//! says who holds the table and until when. Acquiring, renewing and releasing
//! each write the next number, so two processes can never both win the same
//! step: whoever creates `n + 1` first decides it. An entry that has expired
//! (its holder stopped renewing) may be taken over; `delta-operator unlock`
//! writes a release for a holder that died.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::storage::Root;
use delta_operator_backend::BackendError;
use delta_operator_core::model::TableRef;

/// The folder of lock entries under the lake root.
pub const LOCKS: &str = ".locks";

/// How long a held lock lasts without renewal.
pub const DEFAULT_TTL: Duration = Duration::from_secs(60);

/// One entry of a table's lock sequence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// `held` or `released`.
    pub state: String,
    /// Who: the operator's identity, or `cli@<host>:<pid>`.
    pub holder: String,
    /// The apply run holding it.
    #[serde(default)]
    pub run: String,
    pub host: String,
    pub pid: u32,
    /// The process's start time (Linux clock ticks since boot), so a reused pid is not mistaken for the holder.
    #[serde(default)]
    pub pid_start: Option<u64>,
    /// Milliseconds since the epoch.
    pub written_ms: u64,
    pub expires_ms: u64,
}

impl Entry {
    fn holds(&self, now_ms: u64) -> bool {
        self.state == "held" && self.expires_ms > now_ms
    }

    /// A holder on this machine whose process is gone (or whose pid now names
    /// another process): its lock can be taken at once instead of after expiry.
    fn holder_is_dead_here(&self) -> bool {
        if self.host != this_host() {
            return false;
        }
        match process_start(self.pid) {
            None => true,
            Some(start) => self.pid_start.is_some_and(|s| s != start),
        }
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

pub fn this_host() -> String {
    std::fs::read_to_string("/etc/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

/// The start time of a process (field 22 of /proc/<pid>/stat), `None` when it does not run.
fn process_start(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // the command name (field 2) is in parentheses and may hold spaces
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(19)?.parse().ok()
}

/// The folder of one table's lock entries, relative to the root.
pub fn lock_rel(t: &TableRef) -> String {
    format!("{LOCKS}/{}/{}/{}", t.catalog, t.schema, t.table)
}

fn entry_rel(t: &TableRef, n: u64) -> String {
    format!("{}/{n:020}.json", lock_rel(t))
}

/// The newest entry and its number, if any.
async fn newest(root: &Root, t: &TableRef) -> Result<Option<(u64, Entry)>, BackendError> {
    let mut numbers: Vec<u64> = root
        .list_files(&lock_rel(t))
        .await?
        .iter()
        .filter_map(|(name, _)| name.strip_suffix(".json").and_then(|n| n.parse().ok()))
        .collect();
    numbers.sort_unstable();
    // newest first; an entry that cannot be read (a torn write) counts as released
    for n in numbers.into_iter().rev() {
        let Some(bytes) = root.read_file(&entry_rel(t, n)).await? else {
            continue;
        };
        let entry = serde_json::from_slice(&bytes).unwrap_or_else(|_| Entry {
            state: "released".into(),
            holder: "?".into(),
            run: String::new(),
            host: String::new(),
            pid: 0,
            pid_start: None,
            written_ms: 0,
            expires_ms: 0,
        });
        return Ok(Some((n, entry)));
    }
    Ok(None)
}

/// Why a table could not be locked.
#[derive(Debug, Clone)]
pub struct LockedBy {
    pub table: TableRef,
    pub entry: Entry,
}

impl LockedBy {
    pub fn message(&self) -> String {
        let left = self.entry.expires_ms.saturating_sub(now_ms()) / 1000;
        format!(
            "{} is being applied by {} (run {}, on {} pid {}; the lock expires in {left}s unless renewed). Wait for it, or if that process is dead: delta-operator unlock {}",
            self.table,
            self.entry.holder,
            self.entry.run,
            self.entry.host,
            self.entry.pid,
            self.table
        )
    }
}

/// A held table lock, renewed in the background until released.
pub struct TableLock {
    root: Root,
    table: TableRef,
    me: Entry,
    /// The number of our newest entry (renewals move it on).
    seq: Arc<tokio::sync::Mutex<u64>>,
    alive: Arc<AtomicBool>,
    renew: tokio::task::JoinHandle<()>,
}

impl delta_operator_backend::RunLock for TableLock {
    fn is_held(&self) -> bool {
        TableLock::is_held(self)
    }
    fn release(self: Box<Self>) -> futures::future::BoxFuture<'static, ()> {
        Box::pin((*self).release())
    }
}

impl TableLock {
    /// False once a renewal found someone else's entry (an unlock, or a takeover after expiry).
    pub fn is_held(&self) -> bool {
        self.alive.load(Ordering::SeqCst)
    }

    /// Writes a release; nothing to do when the lock was already lost.
    pub async fn release(self) {
        self.renew.abort();
        let seq = *self.seq.lock().await;
        if !self.alive.load(Ordering::SeqCst) {
            return;
        }
        let released = Entry {
            state: "released".into(),
            written_ms: now_ms(),
            expires_ms: 0,
            ..self.me.clone()
        };
        let bytes = serde_json::to_vec(&released).unwrap_or_default();
        let _ = self
            .root
            .create_file(&entry_rel(&self.table, seq + 1), &bytes)
            .await;
        prune(&self.root, &self.table, seq + 1).await;
    }
}

/// Removes entries older than the one before `seq` (the newest two stay, for messages).
async fn prune(root: &Root, t: &TableRef, seq: u64) {
    let Ok(files) = root.list_files(&lock_rel(t)).await else {
        return;
    };
    for (name, _) in files {
        if let Some(n) = name
            .strip_suffix(".json")
            .and_then(|n| n.parse::<u64>().ok())
            && n + 1 < seq
        {
            let _ = root.delete_file(&entry_rel(t, n)).await;
        }
    }
}

/// Takes the table's lock for `holder`, waiting up to `wait` while another holds it.
pub async fn acquire(
    root: &Root,
    t: &TableRef,
    holder: &str,
    run: &str,
    ttl: Duration,
    wait: Duration,
) -> Result<Result<TableLock, LockedBy>, BackendError> {
    let deadline = std::time::Instant::now() + wait;
    loop {
        let newest = newest(root, t).await?;
        let now = now_ms();
        if let Some((_, e)) = &newest
            && e.holds(now)
            && !e.holder_is_dead_here()
        {
            if std::time::Instant::now() >= deadline {
                return Ok(Err(LockedBy {
                    table: t.clone(),
                    entry: e.clone(),
                }));
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
            continue;
        }
        let n = newest.as_ref().map_or(1, |(n, _)| n + 1);
        let me = Entry {
            state: "held".into(),
            holder: holder.to_string(),
            run: run.to_string(),
            host: this_host(),
            pid: std::process::id(),
            pid_start: process_start(std::process::id()),
            written_ms: now,
            expires_ms: now + ttl.as_millis() as u64,
        };
        let bytes = serde_json::to_vec(&me).map_err(|e| BackendError::Transient(e.to_string()))?;
        if !root.create_file(&entry_rel(t, n), &bytes).await? {
            continue; // someone else wrote n first: look again
        }
        prune(root, t, n).await;
        let seq = Arc::new(tokio::sync::Mutex::new(n));
        let alive = Arc::new(AtomicBool::new(true));
        let renew = tokio::spawn(renew_loop(
            root.clone(),
            t.clone(),
            me.clone(),
            ttl,
            seq.clone(),
            alive.clone(),
        ));
        return Ok(Ok(TableLock {
            root: root.clone(),
            table: t.clone(),
            me,
            seq,
            alive,
            renew,
        }));
    }
}

/// Every third of the lifetime: the next entry, still ours. Failing to write
/// it means someone else wrote that number (an unlock, a takeover): lost.
async fn renew_loop(
    root: Root,
    t: TableRef,
    me: Entry,
    ttl: Duration,
    seq: Arc<tokio::sync::Mutex<u64>>,
    alive: Arc<AtomicBool>,
) {
    loop {
        tokio::time::sleep(ttl / 3).await;
        let mut n = seq.lock().await;
        let now = now_ms();
        let next = Entry {
            written_ms: now,
            expires_ms: now + ttl.as_millis() as u64,
            ..me.clone()
        };
        let bytes = serde_json::to_vec(&next).unwrap_or_default();
        match root.create_file(&entry_rel(&t, *n + 1), &bytes).await {
            Ok(true) => {
                *n += 1;
                let keep = *n;
                drop(n);
                prune(&root, &t, keep).await;
            }
            Ok(false) => {
                alive.store(false, Ordering::SeqCst);
                return;
            }
            Err(_) => {} // storage trouble: try again at the next tick (the lock may still expire)
        }
    }
}

/// `delta-operator unlock`: writes a release after the newest entry. Returns
/// who held it, or `None` when nobody did.
pub async fn unlock(root: &Root, t: &TableRef, by: &str) -> Result<Option<Entry>, BackendError> {
    loop {
        let Some((n, e)) = newest(root, t).await? else {
            return Ok(None);
        };
        if e.state != "held" {
            return Ok(None);
        }
        let now = now_ms();
        let released = Entry {
            state: "released".into(),
            holder: by.to_string(),
            run: "unlock".into(),
            host: this_host(),
            pid: std::process::id(),
            pid_start: None,
            written_ms: now,
            expires_ms: 0,
        };
        let bytes =
            serde_json::to_vec(&released).map_err(|e| BackendError::Transient(e.to_string()))?;
        if root.create_file(&entry_rel(t, n + 1), &bytes).await? {
            return Ok(Some(e));
        }
    }
}

/// The holder of a table's lock right now, if any: a held entry that has not
/// expired and whose holder is not a dead process on this machine.
pub async fn holder(root: &Root, t: &TableRef) -> Result<Option<Entry>, BackendError> {
    Ok(newest(root, t)
        .await?
        .map(|(_, e)| e)
        .filter(|e| e.holds(now_ms()) && !e.holder_is_dead_here()))
}
