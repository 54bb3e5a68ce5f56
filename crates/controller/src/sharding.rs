//! Shards, the Leases (`run --shards N`, N > 1): every replica renews a member
//! Lease `delta-operator-member-<identity>` and, every third of the Lease
//! duration, lists the labelled Leases of the lease namespace once; `shard::decide`
//! says which shard Leases `delta-operator-shard-<i>` it renews, gives back or
//! takes. Each write is a patch conditioned on the resourceVersion listed, so
//! of two replicas taking one shard only one wins. A replica reconciles only
//! the objects of the shards it holds (`Shards::holds`); a failed renewal drops
//! the shard at once, and a held shard not renewed within the Lease duration
//! counts as not held, whatever this process thinks.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use futures::channel::mpsc::UnboundedSender;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client, Resource, ResourceExt};
use serde_json::json;

use crate::FIELD_MANAGER;
use crate::metrics::Metrics;
use crate::shard::{self, SHARD_LABEL, ShardLease, Snapshot};

/// The label on member and shard Leases (value `member` or `shard`).
pub const LEASE_LABEL: &str = "delta-operator.io/lease";
const SHARD_PREFIX: &str = "delta-operator-shard-";
const MEMBER_PREFIX: &str = "delta-operator-member-";

/// The shards of this process and which of them it holds now.
pub struct Shards {
    count: u32,
    identity: String,
    lease_seconds: u64,
    /// Each shard held, until when it counts as held without a renewal.
    held: Mutex<BTreeMap<u32, Instant>>,
    /// Set at shutdown: the loop takes and renews nothing more.
    stopped: AtomicBool,
}

impl Shards {
    /// `count` shards (1: no sharding, every object is this process's).
    pub fn new(count: u32, identity: &str, lease_seconds: u64) -> Self {
        Shards {
            count: count.max(1),
            identity: identity.into(),
            lease_seconds,
            held: Mutex::default(),
            stopped: AtomicBool::new(false),
        }
    }

    pub fn count(&self) -> u32 {
        self.count
    }

    pub fn sharded(&self) -> bool {
        self.count > 1
    }

    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// The shard of an object: by its namespace, or its shard label.
    pub fn of<K: Resource>(&self, obj: &K) -> u32 {
        let ns = obj
            .meta()
            .namespace
            .as_deref()
            .unwrap_or(delta_operator_api::spec::load::DEFAULT_NAMESPACE);
        let label = obj
            .meta()
            .labels
            .as_ref()
            .and_then(|l| l.get(SHARD_LABEL))
            .map(String::as_str);
        shard::shard_of(ns, label, self.count)
    }

    /// Whether this process reconciles and applies the objects of `shard` now.
    pub fn holds(&self, shard: u32) -> bool {
        !self.sharded()
            || self
                .held
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get(&shard)
                .is_some_and(|until| Instant::now() < *until)
    }

    /// Whether this process's own hold on `shard` has run out without a renewal yet
    /// (the renewal is late, not lost to another replica: that one removes it).
    pub fn lapsed(&self, shard: u32) -> bool {
        self.sharded()
            && self
                .held
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get(&shard)
                .is_some_and(|until| Instant::now() >= *until)
    }

    /// How often the shard Leases are renewed: a third of their duration.
    pub fn renew_every(&self) -> Duration {
        Duration::from_secs(self.lease_seconds).div_f64(3.0)
    }

    /// The shards held now.
    pub fn held(&self) -> Vec<u32> {
        (0..self.count).filter(|i| self.holds(*i)).collect()
    }

    /// The shard an object is in and whether this process holds it; `None`
    /// when unsharded.
    pub fn status_of<K: Resource>(&self, obj: &K) -> Option<i64> {
        self.sharded().then(|| i64::from(self.of(obj)))
    }

    fn set_held(&self, now: BTreeSet<u32>, renewed_at: Instant) -> bool {
        let until = renewed_at + Duration::from_secs(self.lease_seconds);
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        if self.stopped.load(Ordering::SeqCst) {
            held.clear();
            return false;
        }
        // a hold that lapsed before this renewal came (the runtime too busy to renew in
        // time): the objects reconciled meanwhile were requeued (`lapsed`), not lost
        let checked = Instant::now();
        let lapsed: Vec<u32> = now
            .iter()
            .copied()
            .filter(|i| held.get(i).is_some_and(|was| *was <= checked))
            .collect();
        if !lapsed.is_empty() {
            tracing::warn!(
                shards = ?lapsed,
                "the hold on these shards had lapsed before this renewal (the renewal came late); what was reconciled meanwhile is looked at again"
            );
        }
        let gained = now.iter().any(|i| !held.contains_key(i));
        *held = now.into_iter().map(|i| (i, until)).collect();
        gained
    }

    fn drop_shard(&self, shard: u32) {
        self.held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&shard);
    }
}

/// A shard Lease's name.
pub fn shard_lease(shard: u32) -> String {
    format!("{SHARD_PREFIX}{shard}")
}

/// A replica's member Lease's name (its identity made a valid name).
fn member_lease(identity: &str) -> String {
    let clean: String = identity
        .to_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let clean = clean.trim_matches(|c| c == '-' || c == '.');
    let mut name = format!("{MEMBER_PREFIX}{clean}");
    name.truncate(253);
    name
}

/// Keeps this replica's member Lease and its shards, every third of the Lease
/// duration, until the process ends. When it gains shards, each of `gained` is
/// told (the controllers reconcile everything again).
pub fn keep(
    client: Client,
    namespace: &str,
    shards: Arc<Shards>,
    gained: Vec<UnboundedSender<()>>,
    metrics: Arc<Metrics>,
) {
    let api: Api<Lease> = Api::namespaced(client, namespace);
    let every = Duration::from_millis(shards.lease_seconds.max(1) * 1000 / 3);
    tokio::spawn(async move {
        while !shards.stopped.load(Ordering::SeqCst) {
            let started = Instant::now();
            if let Err(e) = renew_member(&api, &shards).await {
                tracing::warn!(error = %e, "could not renew the member Lease");
            }
            match round(&api, &shards, started).await {
                Ok(true) => {
                    tracing::info!(held = ?shards.held(), "holding new shards; reconciling everything again");
                    for g in &gained {
                        let _ = g.unbounded_send(());
                    }
                }
                Ok(false) => {}
                Err(e) => {
                    // nothing renewed: what was held counts down to its expiry
                    tracing::warn!(error = %e, "could not list the shard Leases");
                }
            }
            metrics
                .shards_held
                .store(shards.held().len(), Ordering::Relaxed);
            tokio::time::sleep(every.saturating_sub(started.elapsed())).await;
        }
    });
}

/// Gives back every shard held (at shutdown): the others take them at once,
/// not after the Lease duration.
pub async fn release_all(client: Client, namespace: &str, shards: &Shards) {
    let api: Api<Lease> = Api::namespaced(client, namespace);
    shards.stopped.store(true, Ordering::SeqCst);
    for i in shards.held() {
        shards.drop_shard(i);
        let patch = json!({"spec": {"holderIdentity": null, "renewTime": null}});
        if let Err(e) = api
            .patch(
                &shard_lease(i),
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await
        {
            tracing::warn!(shard = i, error = %e, "could not give the shard back; it expires by itself");
        }
    }
    // the member Lease expired at once: the others' fair share counts this replica out
    let patch = json!({"spec": {"holderIdentity": null, "renewTime": null}});
    let _ = api
        .patch(
            &member_lease(&shards.identity),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await;
}

async fn renew_member(api: &Api<Lease>, shards: &Shards) -> Result<(), kube::Error> {
    let lease = json!({
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": member_lease(&shards.identity), "labels": {LEASE_LABEL: "member"}},
        "spec": {
            "holderIdentity": shards.identity,
            "leaseDurationSeconds": shards.lease_seconds,
            "renewTime": MicroTime(Timestamp::now()),
        },
    });
    api.patch(
        &member_lease(&shards.identity),
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(&lease),
    )
    .await?;
    Ok(())
}

fn expired(lease: &Lease) -> bool {
    let spec = lease.spec.clone().unwrap_or_default();
    match (spec.renew_time, spec.lease_duration_seconds) {
        (Some(renewed), Some(secs)) => {
            SystemTime::from(renewed.0) + Duration::from_secs(secs.max(0) as u64)
                < SystemTime::now()
        }
        _ => true,
    }
}

/// One listing and what follows it: whether this replica gained a shard.
async fn round(api: &Api<Lease>, shards: &Shards, started: Instant) -> Result<bool, kube::Error> {
    let listed = api.list(&ListParams::default().labels(LEASE_LABEL)).await?;
    let mut live = BTreeSet::new();
    let mut by_shard: BTreeMap<u32, Lease> = BTreeMap::new();
    for l in listed.items {
        let kind = l.labels().get(LEASE_LABEL).cloned().unwrap_or_default();
        if kind == "member" {
            if !expired(&l)
                && let Some(id) = l.spec.as_ref().and_then(|s| s.holder_identity.clone())
            {
                live.insert(id);
            }
        } else if kind == "shard"
            && let Some(i) = l
                .name_any()
                .strip_prefix(SHARD_PREFIX)
                .and_then(|i| i.parse::<u32>().ok())
            && i < shards.count
        {
            by_shard.insert(i, l);
        }
    }
    let snapshot = Snapshot {
        me: &shards.identity,
        count: shards.count,
        leases: by_shard
            .iter()
            .map(|(i, l)| {
                let holder = l
                    .spec
                    .as_ref()
                    .and_then(|s| s.holder_identity.clone())
                    .filter(|h| !h.is_empty());
                (
                    *i,
                    ShardLease {
                        holder,
                        expired: expired(l),
                    },
                )
            })
            .collect(),
        live,
    };
    let moves = shard::decide(&snapshot);
    let mut now_held = BTreeSet::new();
    for i in moves.release {
        // no new step on it from now on; a running one stops at its next fence
        shards.drop_shard(i);
        let rv = by_shard.get(&i).and_then(|l| l.resource_version());
        let patch = json!({
            "metadata": {"resourceVersion": rv},
            "spec": {"holderIdentity": null, "renewTime": null},
        });
        match api
            .patch(
                &shard_lease(i),
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await
        {
            Ok(_) => tracing::info!(shard = i, "gave the shard back (more than a fair share)"),
            Err(e) => tracing::warn!(shard = i, error = %e, "could not give the shard back"),
        }
    }
    for i in moves.renew {
        let rv = by_shard.get(&i).and_then(|l| l.resource_version());
        let patch = json!({
            "metadata": {"resourceVersion": rv},
            "spec": {"renewTime": MicroTime(Timestamp::now()), "leaseDurationSeconds": shards.lease_seconds},
        });
        match api
            .patch(
                &shard_lease(i),
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await
        {
            Ok(_) => {
                now_held.insert(i);
            }
            Err(e) => {
                shards.drop_shard(i);
                tracing::warn!(shard = i, error = %e, "lost the shard: its renewal failed");
            }
        }
    }
    for i in moves.take {
        match take(api, shards, i, by_shard.get(&i)).await {
            Ok(()) => {
                tracing::info!(shard = i, "took the shard");
                now_held.insert(i);
            }
            // another replica was quicker: seen at the next listing
            Err(e) => tracing::debug!(shard = i, error = %e, "could not take the shard"),
        }
    }
    Ok(shards.set_held(now_held, started))
}

/// Takes a shard's Lease: creates it, or takes it over conditioned on the
/// resourceVersion listed.
async fn take(
    api: &Api<Lease>,
    shards: &Shards,
    shard: u32,
    listed: Option<&Lease>,
) -> Result<(), kube::Error> {
    let now = MicroTime(Timestamp::now());
    match listed {
        None => {
            let lease: Lease = serde_json::from_value(json!({
                "metadata": {"name": shard_lease(shard), "labels": {LEASE_LABEL: "shard"}},
                "spec": {
                    "holderIdentity": shards.identity,
                    "leaseDurationSeconds": shards.lease_seconds,
                    "acquireTime": now,
                    "renewTime": now,
                    "leaseTransitions": 0,
                },
            }))
            .map_err(kube::Error::SerdeError)?;
            api.create(&PostParams::default(), &lease).await?;
        }
        Some(l) => {
            let transitions = l
                .spec
                .as_ref()
                .and_then(|s| s.lease_transitions)
                .unwrap_or(0);
            let patch = json!({
                "metadata": {"resourceVersion": l.resource_version()},
                "spec": {
                    "holderIdentity": shards.identity,
                    "leaseDurationSeconds": shards.lease_seconds,
                    "acquireTime": now,
                    "renewTime": now,
                    "leaseTransitions": transitions.saturating_add(1),
                },
            });
            api.patch(
                &shard_lease(shard),
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_member_lease_name_is_a_valid_name() {
        assert_eq!(member_lease("op-a"), "delta-operator-member-op-a");
        assert_eq!(member_lease("Host_1:42"), "delta-operator-member-host-1-42");
        assert!(member_lease(&"x".repeat(400)).len() <= 253);
    }

    #[test]
    fn unsharded_holds_every_shard() {
        let s = Shards::new(1, "a", 15);
        assert!(s.holds(0));
        let s = Shards::new(4, "a", 15);
        assert!(!s.holds(0));
        assert!(s.set_held(BTreeSet::from([1, 2]), Instant::now()));
        assert_eq!(s.held(), vec![1, 2]);
        assert!(!s.set_held(BTreeSet::from([1]), Instant::now()));
        s.drop_shard(1);
        assert!(s.held().is_empty());
        // held until the Lease duration after the renewal, not longer
        s.set_held(
            BTreeSet::from([3]),
            Instant::now() - Duration::from_secs(16),
        );
        assert!(!s.holds(3));
    }

    /// A hold that ran out before its renewal is lapsed (its objects are requeued, not
    /// left alone for good: found by `make bench-shards` under load, a replica started
    /// into 5,000 tables reconciled 333 of them and no more); renewed, it is held again;
    /// one another replica took is neither.
    #[test]
    fn a_lapsed_hold_is_told_apart_from_a_shard_another_replica_took() {
        let s = Shards::new(4, "a", 15);
        assert!(s.set_held(
            BTreeSet::from([0, 1]),
            Instant::now() - Duration::from_secs(20)
        ));
        assert!(s.held().is_empty());
        assert!(s.lapsed(0) && s.lapsed(1) && !s.lapsed(2));
        assert!(!s.set_held(BTreeSet::from([0]), Instant::now()));
        assert!(s.holds(0) && !s.lapsed(0));
        assert!(
            !s.holds(1) && !s.lapsed(1),
            "taken by another: not ours to requeue"
        );
        assert_eq!(s.renew_every(), Duration::from_secs(5));
        assert!(!Shards::new(1, "a", 15).lapsed(0));
    }
}
