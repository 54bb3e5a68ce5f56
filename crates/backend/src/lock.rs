//! One apply per table, whoever starts it: a lock object in a store every
//! applier of a target reaches (the lake's root, a Databricks workspace
//! folder), shared by the CLI and the operator.
//!
//! The lock is a sequence of small JSON files, `.locks/<catalog>/<schema>/<table>/<n>.json`,
//! each created only if absent (an exclusive create on disk, a conditional put
//! on an object store, an import without overwrite in a Databricks workspace),
//! as the Delta log itself is written. The logic is the same on every store:
//! a store only implements [`LockStore`]. The newest entry
//! says who holds the table and until when. Acquiring, renewing and releasing
//! each write the next number, so two processes can never both win the same
//! step: whoever creates `n + 1` first decides it. An entry that has expired
//! (its holder stopped renewing) may be taken over; `delta-operator unlock`
//! writes a release for a holder that died (a live holder only with `--force`).
//!
//! **Fencing.** A lock can be lost while its apply runs: its holder stalls past
//! the expiry (a paused process, a storage stall, a partitioned pod) and another
//! apply takes it over, or someone forces `unlock`. So a run never commits on
//! the strength of a lock it *had*: right before each commit it renews the lock
//! synchronously ([`TableLock::fence`]), which is the same create-if-absent of
//! the next entry number as every renewal. If anyone else wrote an entry since,
//! that create fails and the run stops with nothing committed; if it succeeds,
//! the run holds the table for a whole lifetime from that moment, longer than
//! any commit takes.
//!
//! **Heartbeats.** Each run also keeps `runs/<run>.json` in its table's lock
//! folder fresh while its process lives, lock or no lock. A run's files (its
//! staging copy, its rewritten files) are someone else's leftovers only when that
//! run is not the holder and its heartbeat says it is over: its process is gone
//! from this host, or the heartbeat is older than two lifetimes (the lock's
//! expiry plus a margin of one more). A stalled run's files are not taken from
//! under it while it could still wake up and commit.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::BackendError;
use delta_operator_core::model::TableRef;

/// Where a lock's entries live: the five operations the lock needs. Paths are
/// relative (`.locks/<catalog>/<schema>/<table>/…`), `/`-separated.
pub trait LockStore: Clone + Send + Sync + 'static {
    /// Writes `bytes` at `rel` only if nothing is there: false when something was
    /// (whoever created it first decides the step).
    fn create(
        &self,
        rel: &str,
        bytes: &[u8],
    ) -> impl Future<Output = Result<bool, BackendError>> + Send;
    /// Writes `bytes` at `rel`, replacing what is there (heartbeats).
    fn put(&self, rel: &str, bytes: &[u8])
    -> impl Future<Output = Result<(), BackendError>> + Send;
    /// The bytes at `rel`, `None` when nothing is there.
    fn read(&self, rel: &str)
    -> impl Future<Output = Result<Option<Vec<u8>>, BackendError>> + Send;
    /// The names of the files under the folder `rel`, relative to it (none when it does not exist).
    fn list(&self, rel: &str) -> impl Future<Output = Result<Vec<String>, BackendError>> + Send;
    /// Removes the file at `rel` (nothing there: fine).
    fn delete(&self, rel: &str) -> impl Future<Output = Result<(), BackendError>> + Send;
    /// Removes the folder `rel` if it is empty (where the store has folders).
    fn remove_folder_if_empty(&self, rel: &str) -> impl Future<Output = ()> + Send;
}

/// The folder of lock entries under the lake root.
pub const LOCKS: &str = ".locks";

/// How long a held lock lasts without renewal.
pub const DEFAULT_TTL: Duration = Duration::from_secs(60);

/// The folder of run heartbeats inside a table's lock folder.
const RUNS: &str = "runs";

/// The lock's lifetime: `DELTA_OPERATOR_LOCK_TTL_SECONDS` (at least 1), else 60 s.
/// Tests shorten it to stall a holder past its expiry in seconds.
pub fn ttl() -> Duration {
    std::env::var("DELTA_OPERATOR_LOCK_TTL_SECONDS")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .filter(|s| *s >= 1)
        .map_or(DEFAULT_TTL, Duration::from_secs)
}

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
        self.host == this_host() && !process_runs(self.pid, self.pid_start)
    }

    /// A holder that is a running process on this machine (stopped or not).
    pub fn holder_is_alive_here(&self) -> bool {
        self.host == this_host() && process_runs(self.pid, self.pid_start)
    }

    /// Seconds until it expires (0 when it has).
    pub fn expires_in_s(&self) -> u64 {
        self.expires_ms.saturating_sub(now_ms()) / 1000
    }
}

/// Whether `pid` runs here and is the process that started at `start` (when known).
fn process_runs(pid: u32, start: Option<u64>) -> bool {
    match process_start(pid) {
        None => false,
        Some(now) => start.is_none_or(|s| s == now),
    }
}

/// A run's sign of life, rewritten every third of the lock's lifetime while its
/// process runs (`runs/<run>.json` in the table's lock folder).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Heartbeat {
    pub run: String,
    pub host: String,
    pub pid: u32,
    #[serde(default)]
    pub pid_start: Option<u64>,
    pub written_ms: u64,
    /// Past this (two of the writer's lifetimes after `written_ms`) the run is over.
    pub stale_after_ms: u64,
}

pub fn heartbeat_rel(t: &TableRef, run: &str) -> String {
    format!("{}/{RUNS}/{run}.json", lock_rel(t))
}

async fn beat<S: LockStore>(
    root: &S,
    t: &TableRef,
    run: &str,
    ttl: Duration,
) -> Result<(), BackendError> {
    let now = now_ms();
    let hb = Heartbeat {
        run: run.to_string(),
        host: this_host(),
        pid: std::process::id(),
        pid_start: process_start(std::process::id()),
        written_ms: now,
        stale_after_ms: now + 2 * ttl.as_millis() as u64,
    };
    let bytes = serde_json::to_vec(&hb).map_err(|e| BackendError::Transient(e.to_string()))?;
    root.put(&heartbeat_rel(t, run), &bytes).await
}

/// Whether the run whose id is `run`, or ends with `run` (Spark Connect's
/// staging copies carry the last 8 digits), may still be alive and commit: the
/// holder of the table's lock, or a run whose heartbeat is fresh or whose
/// process still runs on this host. A run without a heartbeat counts as alive
/// for two lifetimes from the start its id carries.
pub async fn run_may_be_alive<S: LockStore>(
    root: &S,
    t: &TableRef,
    run: &str,
    started_ms: Option<i64>,
) -> Result<bool, BackendError> {
    let now = now_ms();
    if let Some((_, e)) = newest(root, t).await?
        && e.holds(now)
        && !e.holder_is_dead_here()
        && e.run.ends_with(run)
    {
        return Ok(true);
    }
    let beats = root.list(&format!("{}/{RUNS}", lock_rel(t))).await?;
    let mut found = false;
    for name in beats {
        let Some(id) = name.strip_suffix(".json") else {
            continue;
        };
        if !id.ends_with(run) {
            continue;
        }
        let Some(bytes) = root.read(&heartbeat_rel(t, id)).await? else {
            continue;
        };
        let Ok(hb) = serde_json::from_slice::<Heartbeat>(&bytes) else {
            continue;
        };
        found = true;
        let alive = if hb.host == this_host() {
            // a process here is asked directly: a stopped one may still wake up
            process_runs(hb.pid, hb.pid_start)
        } else {
            now < hb.stale_after_ms
        };
        if alive {
            return Ok(true);
        }
    }
    if found {
        return Ok(false);
    }
    let started = started_ms.and_then(|s| u64::try_from(s).ok()).unwrap_or(0);
    Ok(now < started + 2 * ttl().as_millis() as u64)
}

/// Forgets a run's heartbeat (its files are gone, or it ended), and those of
/// runs that are over and left no files to remove (killed before writing any).
pub async fn forget_run<S: LockStore>(root: &S, t: &TableRef, run: &str) {
    let _ = root.delete(&heartbeat_rel(t, run)).await;
    let runs = format!("{}/{RUNS}", lock_rel(t));
    if let Ok(beats) = root.list(&runs).await {
        let now = now_ms();
        for name in beats {
            let Some(id) = name.strip_suffix(".json") else {
                continue;
            };
            let over = match root.read(&heartbeat_rel(t, id)).await {
                // stale for half as long again: without its heartbeat the run still
                // counts as over (it started longer ago than two lifetimes)
                Ok(Some(bytes)) => serde_json::from_slice::<Heartbeat>(&bytes).is_ok_and(|hb| {
                    now > hb.stale_after_ms + hb.stale_after_ms.saturating_sub(hb.written_ms) / 2
                }),
                _ => false,
            };
            if over {
                let _ = root.delete(&heartbeat_rel(t, id)).await;
            }
        }
    }
    root.remove_folder_if_empty(&runs).await;
}

pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// This machine's name as lock entries record it. Debug builds take
/// `DELTA_OPERATOR_TEST_HOST` instead when it is set, so a test can play a
/// holder on another machine (whose dead process cannot be seen from here).
pub fn this_host() -> String {
    #[cfg(debug_assertions)]
    if let Some(h) = std::env::var("DELTA_OPERATOR_TEST_HOST")
        .ok()
        .filter(|h| !h.trim().is_empty())
    {
        return h.trim().to_string();
    }
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

pub fn entry_rel(t: &TableRef, n: u64) -> String {
    format!("{}/{n:020}.json", lock_rel(t))
}

/// Writes `entry` as number `n` after ours (`n - 1`): true only if it was
/// free and, once written, no higher number exists. Entries below the newest
/// two are pruned, so a stalled holder's `n` may be free again although others
/// wrote past it since: the second look catches that (the stray entry it
/// leaves is below the newest, and pruned in turn).
async fn write_next<S: LockStore>(
    root: &S,
    t: &TableRef,
    n: u64,
    entry: &Entry,
) -> Result<bool, BackendError> {
    let bytes = serde_json::to_vec(entry).map_err(|e| BackendError::Transient(e.to_string()))?;
    if !root.create(&entry_rel(t, n), &bytes).await? {
        return Ok(false);
    }
    let highest = root
        .list(&lock_rel(t))
        .await?
        .iter()
        .filter_map(|name| {
            name.strip_suffix(".json")
                .and_then(|n| n.parse::<u64>().ok())
        })
        .max();
    Ok(highest == Some(n))
}

/// The newest entry and its number, if any.
async fn newest<S: LockStore>(
    root: &S,
    t: &TableRef,
) -> Result<Option<(u64, Entry)>, BackendError> {
    let mut numbers: Vec<u64> = root
        .list(&lock_rel(t))
        .await?
        .iter()
        .filter_map(|name| name.strip_suffix(".json").and_then(|n| n.parse().ok()))
        .collect();
    numbers.sort_unstable();
    // newest first; an entry that cannot be read (a torn write) counts as released
    for n in numbers.into_iter().rev() {
        let Some(bytes) = root.read(&entry_rel(t, n)).await? else {
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
        let left = self.entry.expires_in_s();
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
pub struct TableLock<S: LockStore> {
    root: S,
    table: TableRef,
    me: Entry,
    ttl: Duration,
    /// The number of our newest entry (renewals move it on).
    seq: Arc<tokio::sync::Mutex<u64>>,
    alive: Arc<AtomicBool>,
    renew: tokio::task::JoinHandle<()>,
}

impl<S: LockStore> crate::RunLock for TableLock<S> {
    fn is_held(&self) -> bool {
        TableLock::is_held(self)
    }
    fn release(self: Box<Self>) -> futures::future::BoxFuture<'static, ()> {
        Box::pin((*self).release())
    }
    fn fence(&self) -> futures::future::BoxFuture<'_, Result<(), String>> {
        Box::pin(TableLock::fence(self))
    }
}

impl<S: LockStore> TableLock<S> {
    /// The number of this run's newest entry.
    pub async fn seq(&self) -> u64 {
        *self.seq.lock().await
    }

    /// The entry this run writes (its holder, run, host and pid).
    pub fn me(&self) -> &Entry {
        &self.me
    }

    /// False once a renewal found someone else's entry (an unlock, or a takeover after expiry).
    pub fn is_held(&self) -> bool {
        self.alive.load(Ordering::SeqCst)
    }

    /// Renews the lock now, before a commit: the create-if-absent of the next
    /// entry succeeds only if nobody wrote one since ours (no takeover after an
    /// expiry, no `unlock`), and leaves us a whole lifetime from this moment.
    /// An error says the lock is lost (or cannot be confirmed): commit nothing.
    pub async fn fence(&self) -> Result<(), String> {
        let lost = |why: &str| {
            format!(
                "this apply lost its lock on {} ({why}); nothing more of it is committed. Another apply may hold the table now: plan again",
                self.table
            )
        };
        if !self.alive.load(Ordering::SeqCst) {
            return Err(lost("a renewal found another holder's entry"));
        }
        let mut n = self.seq.lock().await;
        let now = now_ms();
        let next = Entry {
            written_ms: now,
            expires_ms: now + self.ttl.as_millis() as u64,
            ..self.me.clone()
        };
        match write_next(&self.root, &self.table, *n + 1, &next).await {
            Ok(true) => {
                *n += 1;
                Ok(())
            }
            Ok(false) => {
                self.alive.store(false, Ordering::SeqCst);
                let by = newest(&self.root, &self.table)
                    .await
                    .ok()
                    .flatten()
                    .map(|(_, e)| {
                        if e.state == "held" {
                            format!("{} (run {}) holds it now", e.holder, e.run)
                        } else {
                            format!("it was released by {}", e.holder)
                        }
                    })
                    .unwrap_or_else(|| "another entry was written after ours".into());
                Err(lost(&by))
            }
            Err(e) => Err(lost(&format!("it could not be renewed: {e}"))),
        }
    }

    /// Writes a release; nothing to do when the lock was already lost.
    pub async fn release(self) {
        self.renew.abort();
        forget_run(&self.root, &self.table, &self.me.run).await;
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
            .create(&entry_rel(&self.table, seq + 1), &bytes)
            .await;
        prune(&self.root, &self.table, seq + 1).await;
    }
}

impl<S: LockStore> Drop for TableLock<S> {
    /// A lock dropped without `release` stops renewing (and so expires).
    fn drop(&mut self) {
        self.renew.abort();
    }
}

/// Removes entries older than the one before `seq` (the newest two stay, for messages).
pub async fn prune<S: LockStore>(root: &S, t: &TableRef, seq: u64) {
    let Ok(files) = root.list(&lock_rel(t)).await else {
        return;
    };
    for name in files {
        if let Some(n) = name
            .strip_suffix(".json")
            .and_then(|n| n.parse::<u64>().ok())
            && n + 1 < seq
        {
            let _ = root.delete(&entry_rel(t, n)).await;
        }
    }
}

/// Takes the table's lock for `holder`, waiting up to `wait` while another holds it.
pub async fn acquire<S: LockStore>(
    root: &S,
    t: &TableRef,
    holder: &str,
    run: &str,
    ttl: Duration,
    wait: Duration,
) -> Result<Result<TableLock<S>, LockedBy>, BackendError> {
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
        if !write_next(root, t, n, &me).await? {
            continue; // someone else wrote n (or past it) first: look again
        }
        prune(root, t, n).await;
        // the heartbeat before any file of the run exists (a failure here is
        // covered: a run without one counts as alive from the start its id carries)
        let _ = beat(root, t, run, ttl).await;
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
            ttl,
            seq,
            alive,
            renew,
        }));
    }
}

/// Every third of the lifetime: the run's heartbeat, and the next entry, still
/// ours. Failing to write it means someone else wrote that number (an unlock,
/// a takeover): lost. The heartbeat goes on after a loss, until the run ends:
/// its files are still its own until it has removed them.
async fn renew_loop<S: LockStore>(
    root: S,
    t: TableRef,
    me: Entry,
    ttl: Duration,
    seq: Arc<tokio::sync::Mutex<u64>>,
    alive: Arc<AtomicBool>,
) {
    loop {
        tokio::time::sleep(ttl / 3).await;
        let _ = beat(&root, &t, &me.run, ttl).await;
        if !alive.load(Ordering::SeqCst) {
            continue;
        }
        let mut n = seq.lock().await;
        let now = now_ms();
        let next = Entry {
            written_ms: now,
            expires_ms: now + ttl.as_millis() as u64,
            ..me.clone()
        };
        match write_next(&root, &t, *n + 1, &next).await {
            Ok(true) => {
                *n += 1;
                let keep = *n;
                drop(n);
                prune(&root, &t, keep).await;
            }
            Ok(false) => alive.store(false, Ordering::SeqCst),
            Err(_) => {} // storage trouble: try again at the next tick (the lock may still expire)
        }
    }
}

/// What `unlock` did.
#[derive(Debug, Clone)]
pub enum Unlocked {
    /// Nobody held the table.
    NotLocked,
    /// The lock was broken; who held it.
    Broken(Entry),
    /// A holder that may be alive (a running process here, or an entry not
    /// yet expired elsewhere) was left alone: `--force` breaks it.
    HolderMayBeAlive(Entry),
}

/// `delta-operator unlock`: writes a release after the newest entry. A holder
/// that may still be running is broken only when `force`d: breaking it lets a
/// second apply start beside it (the first then stops before its next commit,
/// as its fence finds the lock gone, and nothing of it is lost, but a step it
/// had sent to a SQL engine may still finish).
pub async fn unlock<S: LockStore>(
    root: &S,
    t: &TableRef,
    by: &str,
    force: bool,
) -> Result<Unlocked, BackendError> {
    loop {
        let Some((n, e)) = newest(root, t).await? else {
            return Ok(Unlocked::NotLocked);
        };
        if e.state != "held" {
            return Ok(Unlocked::NotLocked);
        }
        let now = now_ms();
        let may_be_alive = e.holder_is_alive_here() || (e.holds(now) && !e.holder_is_dead_here());
        if may_be_alive && !force {
            return Ok(Unlocked::HolderMayBeAlive(e));
        }
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
        if root.create(&entry_rel(t, n + 1), &bytes).await? {
            return Ok(Unlocked::Broken(e));
        }
    }
}

/// The holder of a table's lock right now, if any: a held entry that has not
/// expired and whose holder is not a dead process on this machine.
pub async fn holder<S: LockStore>(root: &S, t: &TableRef) -> Result<Option<Entry>, BackendError> {
    Ok(newest(root, t)
        .await?
        .map(|(_, e)| e)
        .filter(|e| e.holds(now_ms()) && !e.holder_is_dead_here()))
}
