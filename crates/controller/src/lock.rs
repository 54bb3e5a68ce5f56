//! The apply lock: one `coordination.k8s.io/v1` Lease per target, held and
//! renewed while steps run, so two operator processes never interleave
//! applies to one target. Inside one process a mutex per target does the same
//! (the Lease identity is per process).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError};
use std::time::{Duration, SystemTime};

use k8s_openapi::api::coordination::v1::Lease;
use kube::{Api, Client};
use kube_lease_manager::{LeaseManager, LeaseManagerBuilder};
use tokio::sync::{Mutex, OwnedMutexGuard};
use tokio::task::JoinHandle;

pub struct Locks {
    client: Client,
    namespace: String,
    identity: String,
    duration: u64,
    local: Mutex<HashMap<String, Arc<Mutex<()>>>>,
    /// Targets whose Lease this process holds right now (for /metrics).
    pub held: Arc<std::sync::Mutex<Vec<String>>>,
}

/// A held lock; `is_held()` turns false when the Lease is lost.
pub struct Held {
    manager: Arc<LeaseManager>,
    alive: Arc<AtomicBool>,
    renew: JoinHandle<()>,
    target: String,
    held: Arc<std::sync::Mutex<Vec<String>>>,
    _local: OwnedMutexGuard<()>,
}

impl Locks {
    pub fn new(client: Client, namespace: &str, identity: &str, duration: u64) -> Self {
        Locks {
            client,
            namespace: namespace.into(),
            identity: identity.into(),
            duration,
            local: Mutex::new(HashMap::new()),
            held: Default::default(),
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

    /// Waits for the target's lock (the local mutex, then the Lease).
    pub async fn acquire(
        &self,
        target: &str,
    ) -> Result<Held, kube_lease_manager::LeaseManagerError> {
        let local = {
            let mut map = self.local.lock().await;
            map.entry(target.to_string()).or_default().clone()
        };
        let guard = local.lock_owned().await;
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
        self.held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(target.to_string());
        Ok(Held {
            manager,
            alive,
            renew,
            target: target.into(),
            held: self.held.clone(),
            _local: guard,
        })
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

    /// Gives the Lease back (also done, less promptly, when dropped: it expires).
    pub async fn release(self) {
        self.renew.abort();
        let _ = self.manager.release().await;
        self.held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|t| t != &self.target);
    }
}
