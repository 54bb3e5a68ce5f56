//! The apply lock. Between processes: one `coordination.k8s.io/v1` Lease per
//! target, held and renewed while any apply of this process runs on it, so two
//! operator processes never interleave applies to one target. Inside the
//! process: applies of different tables run at once, up to the target's
//! `maxConcurrentApplies`, sharing that Lease; one table (or schema) never has
//! two applies at once, as a mutex per object written says.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, PoisonError};
use std::time::{Duration, SystemTime};

use delta_operator_core::model::{SchemaRef, TableRef};
use delta_operator_core::plan::Plan;
use k8s_openapi::api::coordination::v1::Lease;
use kube::{Api, Client};
use kube_lease_manager::{LeaseManager, LeaseManagerBuilder};
use tokio::sync::{Mutex, OwnedMutexGuard, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinHandle;

use crate::metrics::InFlight;

/// What one apply writes, and so may not share with another apply.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Written {
    Schema(SchemaRef),
    Table(TableRef),
}

impl Written {
    /// The tables and schemas a plan has steps for (what its apply writes).
    pub fn by(plan: &Plan) -> BTreeSet<Written> {
        let tables = plan
            .tables
            .iter()
            .filter(|t| !t.steps().is_empty())
            .map(|t| Written::Table(t.table.clone()));
        let schemas = plan
            .schemas
            .iter()
            .filter(|s| !s.steps().is_empty())
            .map(|s| Written::Schema(s.schema.clone()));
        tables.chain(schemas).collect()
    }
}

pub struct Locks {
    client: Client,
    namespace: String,
    identity: String,
    duration: u64,
    targets: std::sync::Mutex<HashMap<String, Arc<TargetLock>>>,
    objects: std::sync::Mutex<HashMap<(String, Written), ObjectMutex>>,
    /// Targets whose Lease this process holds right now (for /metrics).
    pub held: Arc<std::sync::Mutex<Vec<String>>>,
    pub in_flight: Arc<InFlight>,
}

/// Held by the apply writing one object (a target's table or schema).
type ObjectMutex = Arc<Mutex<()>>;

/// One target inside this process: the permits for its applies, and its Lease
/// while any of them runs.
struct TargetLock {
    permits: Arc<Semaphore>,
    lease: Mutex<Option<SharedLease>>,
    generation: AtomicUsize,
}

struct SharedLease {
    manager: Arc<LeaseManager>,
    alive: Arc<AtomicBool>,
    renew: JoinHandle<()>,
    users: usize,
    generation: usize,
}

/// A held lock; `is_held()` turns false when the Lease is lost. Give it back
/// with `release` (dropping it does the same a moment later, in a task).
pub struct Held {
    state: Option<Release>,
    alive: Arc<AtomicBool>,
    fence: LeaseFence,
}

/// Confirms the target's Lease from the API server (see `LeaseFence::check`).
#[derive(Clone)]
pub struct LeaseFence {
    alive: Arc<AtomicBool>,
    lease: Api<Lease>,
    lease_name: String,
    identity: String,
}

struct Release {
    target: String,
    lock: Arc<TargetLock>,
    generation: usize,
    held: Arc<std::sync::Mutex<Vec<String>>>,
    in_flight: Arc<InFlight>,
    /// This apply's id in `in_flight` (its start time).
    apply: u64,
    _objects: Vec<OwnedMutexGuard<()>>,
    _permit: OwnedSemaphorePermit,
}

impl Locks {
    pub fn new(
        client: Client,
        namespace: &str,
        identity: &str,
        duration: u64,
        in_flight: Arc<InFlight>,
    ) -> Self {
        Locks {
            client,
            namespace: namespace.into(),
            identity: identity.into(),
            duration,
            targets: Default::default(),
            objects: Default::default(),
            held: Default::default(),
            in_flight,
        }
    }

    /// The Lease's name for a target.
    pub fn lease_name(target: &str) -> String {
        let clean: String = target
            .to_lowercase()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '-'
                }
            })
            .collect();
        format!("delta-operator-target-{clean}")
    }

    /// Waits for what an apply on `target` that writes `writes` needs: the mutex of
    /// each object written (in order, so two applies never wait on each other), a
    /// permit of the target's `limit`, then the target's Lease (taken by the first
    /// apply, shared by those that join it while it is held).
    pub async fn acquire(
        &self,
        target: &str,
        limit: usize,
        writes: &BTreeSet<Written>,
    ) -> Result<Held, kube_lease_manager::LeaseManagerError> {
        let mut objects = Vec::with_capacity(writes.len());
        for w in writes {
            let m = self
                .objects
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .entry((target.to_string(), w.clone()))
                .or_default()
                .clone();
            objects.push(m.lock_owned().await);
        }
        let lock = self
            .targets
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(target.to_string())
            .or_insert_with(|| {
                Arc::new(TargetLock {
                    permits: Arc::new(Semaphore::new(limit.max(1))),
                    lease: Mutex::new(None),
                    generation: AtomicUsize::new(0),
                })
            })
            .clone();
        let permit = lock
            .permits
            .clone()
            .acquire_owned()
            .await
            .expect("the semaphore is never closed");
        let mut lease = lock.lease.lock().await;
        let (alive, generation) = match lease.as_mut() {
            Some(l) if l.alive.load(Ordering::SeqCst) => {
                l.users += 1;
                (l.alive.clone(), l.generation)
            }
            _ => {
                // none held, or the one held was lost: take it anew
                if let Some(lost) = lease.take() {
                    lost.renew.abort();
                }
                let generation = lock.generation.fetch_add(1, Ordering::SeqCst) + 1;
                let taken = self.take_lease(target, generation).await?;
                let alive = taken.alive.clone();
                *lease = Some(taken);
                self.held
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(target.to_string());
                (alive, generation)
            }
        };
        drop(lease);
        let apply = self.in_flight.begin();
        self.forget_idle_objects();
        Ok(Held {
            fence: LeaseFence {
                alive: alive.clone(),
                lease: Api::namespaced(self.client.clone(), &self.namespace),
                lease_name: Self::lease_name(target),
                identity: self.identity.clone(),
            },
            alive,
            state: Some(Release {
                target: target.into(),
                lock,
                generation,
                held: self.held.clone(),
                in_flight: self.in_flight.clone(),
                apply,
                _objects: objects,
                _permit: permit,
            }),
        })
    }

    async fn take_lease(
        &self,
        target: &str,
        generation: usize,
    ) -> Result<SharedLease, kube_lease_manager::LeaseManagerError> {
        wait_until_free(
            &self.client,
            &self.namespace,
            &Self::lease_name(target),
            &self.identity,
        )
        .await;
        let manager = Arc::new(
            LeaseManagerBuilder::new(self.client.clone(), Self::lease_name(target))
                .with_namespace(self.namespace.clone())
                .with_identity(self.identity.clone())
                .with_duration(self.duration)
                .with_grace((self.duration / 3).max(1))
                .build()
                .await?,
        );
        while !manager.changed().await? {}
        let alive = Arc::new(AtomicBool::new(true));
        let (m, a) = (manager.clone(), alive.clone());
        // keep renewing; any change of state now means the Lease was lost
        let renew = tokio::spawn(async move {
            let _ = m.changed().await;
            a.store(false, Ordering::SeqCst);
        });
        Ok(SharedLease {
            manager,
            alive,
            renew,
            users: 1,
            generation,
        })
    }

    /// Drops the mutexes of objects no apply holds or waits for (thousands of
    /// tables would otherwise each keep one forever).
    fn forget_idle_objects(&self) {
        self.objects
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|_, m| Arc::strong_count(m) > 1);
    }
}

/// How often a waiter looks at a Lease another process holds.
const POLL: Duration = Duration::from_secs(1);

/// Waits until a Lease is free for `identity`: absent, given back (no holder), held by
/// `identity` already, or expired. kube-lease-manager's waiter sleeps until the holder's
/// expiry even when the holder has given the Lease back; looking at the holder every
/// `POLL` lets a released Lease pass on at once. The manager then takes it as before
/// (and on a lost race waits its own way), so this only shortens the wait.
pub async fn wait_until_free(client: &Client, namespace: &str, name: &str, identity: &str) {
    let api: Api<Lease> = Api::namespaced(client.clone(), namespace);
    loop {
        let lease = match api.get_opt(name).await {
            Ok(Some(lease)) => lease,
            Ok(None) => return,
            Err(e) => {
                // the manager meets (and reports) the same error
                tracing::debug!(lease = name, error = %e, "reading the Lease failed");
                return;
            }
        };
        let spec = lease.spec.unwrap_or_default();
        let holder = spec.holder_identity.unwrap_or_default();
        let expired = match (spec.renew_time, spec.lease_duration_seconds) {
            (Some(renewed), Some(secs)) => {
                SystemTime::from(renewed.0) + Duration::from_secs(secs.max(0) as u64)
                    < SystemTime::now()
            }
            _ => true,
        };
        if holder.is_empty() || holder == identity || expired {
            return;
        }
        tokio::time::sleep(POLL).await;
    }
}

impl Held {
    pub fn is_held(&self) -> bool {
        self.alive.load(Ordering::SeqCst)
    }

    pub fn flag(&self) -> Arc<AtomicBool> {
        self.alive.clone()
    }

    /// Gives the apply's share of the Lease back; the last apply out releases it.
    pub async fn release(mut self) {
        if let Some(r) = self.state.take() {
            r.leave().await;
        }
    }

    /// What confirms this Lease before each step.
    pub fn fence(&self) -> LeaseFence {
        self.fence.clone()
    }
}

impl LeaseFence {
    /// Before a step: the Lease, read from the API server (not from this
    /// process's memory, which a paused process cannot trust), still names
    /// this process and has not expired. An error says it is lost, or cannot be
    /// confirmed: the step is not run.
    pub async fn check(&self) -> Result<(), String> {
        if !self.alive.load(Ordering::SeqCst) {
            return Err("this operator lost the target's Lease".into());
        }
        let lease = self
            .lease
            .get_opt(&self.lease_name)
            .await
            .map_err(|e| format!("the target's Lease could not be read to confirm it: {e}"))?;
        let spec = lease.and_then(|l| l.spec).unwrap_or_default();
        let holder = spec.holder_identity.unwrap_or_default();
        if holder != self.identity {
            self.alive.store(false, Ordering::SeqCst);
            return Err(format!(
                "this operator lost the target's Lease {} (held by {})",
                self.lease_name,
                if holder.is_empty() { "nobody" } else { &holder }
            ));
        }
        let expired = match (spec.renew_time, spec.lease_duration_seconds) {
            (Some(renewed), Some(secs)) => {
                SystemTime::from(renewed.0) + Duration::from_secs(secs.max(0) as u64)
                    < SystemTime::now()
            }
            _ => true,
        };
        if expired {
            return Err(format!(
                "the target's Lease {} expired before it was renewed (this process stalled?)",
                self.lease_name
            ));
        }
        Ok(())
    }
}

impl Release {
    async fn leave(self) {
        self.in_flight.end(self.apply);
        let mut lease = self.lock.lease.lock().await;
        let last = match lease.as_mut() {
            // a Lease lost and taken anew since is not this apply's to count down
            Some(l) if l.generation == self.generation => {
                l.users -= 1;
                l.users == 0
            }
            _ => false,
        };
        if last && let Some(l) = lease.take() {
            l.renew.abort();
            let _ = l.manager.release().await;
            self.held
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .retain(|t| t != &self.target);
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        // not released (a reconcile cut off): count it out in a task, or the Lease would
        // be renewed for ever
        if let Some(r) = self.state.take()
            && let Ok(rt) = tokio::runtime::Handle::try_current()
        {
            rt.spawn(r.leave());
        }
    }
}
