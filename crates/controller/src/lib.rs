//! `delta-operator run`: the DeltaTable and DeltaSchema controllers. Each
//! reconcile runs the same engine and executor as the CLI: lower → resolve →
//! read → diff → plan → gate → apply → report (status, events, metrics).

mod applying;
mod conditions;
pub mod decide;
mod dependency;
pub mod depends;
mod events;
mod http;
mod lock;
pub mod lookup;
pub mod maintenance;
pub mod metrics;
pub mod object;
mod outcome;
mod parents;
mod progress;
mod runtime;
mod schema;
pub mod shard;
mod sharding;
mod table;
mod tenancy;
pub mod webhook;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Api, Client, Resource, ResourceExt};

use decide::Note;
use delta_operator_api::config::Config;
use delta_operator_api::reason::Reason;
use delta_operator_api::spec::load::{DEFAULT_NAMESPACE, Manifests};
use delta_operator_api::spec::objects::{DeltaFunction, DeltaView, DeltaVolume};
use delta_operator_api::spec::{DeltaSchema, DeltaTable};
use delta_operator_core::model::ResourceId;
use delta_operator_targets::AnyBackend;

pub use applying::{Applied, ApplyEnd};
use depends::Lookup;
pub use lock::Locks;
use metrics::Metrics;
pub use progress::ApplyProgress;
pub use runtime::run;

/// The annotation that approves one plan, by id.
pub const APPROVE: &str = "delta-operator.io/approve";
/// `"true"` stops all writes.
pub const PAUSED: &str = "delta-operator.io/paused";
/// Flux's "reconcile now" annotation, echoed as status.lastHandledReconcileAt.
pub const REQUESTED_AT: &str = "reconcile.fluxcd.io/requestedAt";
/// The finalizer a DeltaTable with `deletionPolicy: Delete` carries.
pub const FINALIZER: &str = "delta-operator.io/drop-table";
pub const FIELD_MANAGER: &str = "delta-operator";
/// The longest wait between retries of what is Progressing (a stale plan, a lock,
/// a read failing in passing, a parent not Ready): 1 s, 2 s, 4 s … up to this.
const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// How soon a reconcile that found the caches not yet listed tries again.
const CACHE_WAIT: Duration = Duration::from_millis(500);

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("kubernetes: {0}")]
    Kube(#[from] kube::Error),
    #[error("lease: {0}")]
    Lease(#[from] kube_lease_manager::LeaseManagerError),
    #[error("listen on {addr}: {source}")]
    Listen {
        addr: String,
        source: std::io::Error,
    },
    #[error("webhook: listen on {addr}: {source}")]
    WebhookListen {
        addr: String,
        source: std::io::Error,
    },
    #[error(transparent)]
    Certificate(#[from] webhook::CertError),
    /// The task keeping the leader Lease ended before this process led.
    #[error("leader election ended: {0}")]
    LeaderElection(#[from] tokio::sync::watch::error::RecvError),
    /// `--shards` above 1 without `--leader-elect`.
    #[error(
        "--shards {0} needs --leader-elect (each shard is held by one replica through its Lease)"
    )]
    ShardsNeedLeaderElect(u32),
}

/// Options of `delta-operator run`.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Watch one namespace only (default: all).
    pub namespace: Option<String>,
    /// Where the Leases live.
    pub lease_namespace: String,
    pub drift_interval: Duration,
    pub listen: String,
    pub leader_elect: bool,
    pub identity: String,
    pub lease_seconds: u64,
    /// Shards the objects are spread over (1: one leader reconciles everything;
    /// more: each replica reconciles the shards whose Lease it holds).
    pub shards: u32,
    /// Reconciles at once, per controller.
    pub max_reconciles: u16,
    /// After SIGTERM, how long a running step may take before it is left (Interrupted).
    pub shutdown_grace: Duration,
    /// Deaths of the process in a row during one apply step before its table is
    /// Stalled (CrashLoop) instead of resumed into it again.
    pub max_step_interruptions: u32,
    /// Serve the validating admission webhook (every replica, leader or not).
    pub webhook: Option<webhook::WebhookOptions>,
}

pub struct Context {
    pub client: Client,
    pub config: Config,
    pub backends: BTreeMap<String, Arc<AnyBackend>>,
    /// Targets that could not be opened at start, with why: their resources are Stalled,
    /// the other targets' are reconciled as usual.
    pub unavailable: BTreeMap<String, String>,
    pub locks: Locks,
    /// The shards this process holds (everything when unsharded).
    pub shards: Arc<sharding::Shards>,
    pub events: events::EventRecorder,
    /// The unhappy state last said of each resource (`outcome.rs`): said again only when it changes.
    pub announced: outcome::Announced,
    pub metrics: Arc<Metrics>,
    pub drift_interval: Duration,
    pub tables: Store<DeltaTable>,
    pub schemas: Store<DeltaSchema>,
    /// The DeltaViews, DeltaFunctions and DeltaVolumes.
    pub objects: ObjectStores,
    /// The tables of `tables` by the names they declare and reference (`lookup`).
    pub index: lookup::TableIndex,
    /// Retries in a row per resource (`Kind/ns/name`), for the backoff.
    pub retries: Mutex<HashMap<String, u32>>,
    /// Set at SIGTERM / Ctrl-C: no new step starts, and an apply cut short says Interrupted.
    pub shutting_down: Arc<AtomicBool>,
    /// Reconciles DeltaTables again on demand (children waiting for a parent).
    pub wake: futures::channel::mpsc::UnboundedSender<ObjectRef<DeltaTable>>,
    /// Reconciles views and functions again on demand (waiting for a dependency).
    pub wake_objects: ObjectWakers,
    /// After SIGTERM, how long a running step may take before it is left.
    pub shutdown_grace: Duration,
    /// Deaths of the process in a row during one apply step before its table is
    /// Stalled (CrashLoop): a step that ends the process (out of memory) is not
    /// resumed forever, holding up the other tables with restarts.
    pub max_step_interruptions: u32,
    /// Per target, the statements asked to cancel at shutdown (each may still run).
    pub cancelled: Arc<Mutex<BTreeMap<String, Vec<String>>>>,
    /// Since when each table's due maintenance has waited (the overdue gauge).
    pub maintenance: maintenance::Watch,
}

impl Context {
    /// The cached objects of `namespace`, as `depends` asks for them.
    pub fn cached<'a>(&'a self, namespace: &'a str) -> lookup::Cached<'a> {
        lookup::Cached {
            tables: &self.tables,
            schemas: &self.schemas,
            index: &self.index,
            namespace,
        }
    }

    /// What a table's reconcile depends on (`depends::dependencies`). Two resources
    /// declaring one table are left to the owner marker (whichever reaches the
    /// table first owns it).
    pub fn table_dependencies(&self, namespace: &str, table: &DeltaTable) -> depends::Dependencies {
        depends::dependencies(
            depends::Dependent::Table(table),
            &self.cached(namespace),
            depends::Claims::OwnerMarker,
        )
    }

    /// The manifest set a schema's reconcile validates: the schema itself (when
    /// cached) and what `depends::dependencies` says it depends on (the lookalikes
    /// of other namespaces too), oldest first: of two that clash, the later is refused.
    pub fn schema_manifests(&self, namespace: &str, name: &str) -> Manifests {
        let cached = self.cached(namespace);
        match cached.schema(name) {
            Some(s) => depends::schema_inputs(
                &cached,
                depends::cached(s.as_ref().clone()),
                depends::Arrival::Stored,
            ),
            None => Manifests::default(),
        }
    }

    /// The backend of a target, or the Stalled reason and message saying why there is none.
    pub fn backend(&self, target: &str) -> Result<Arc<AnyBackend>, (Reason, String)> {
        if let Some(b) = self.backends.get(target) {
            return Ok(b.clone());
        }
        match self.unavailable.get(target) {
            Some(why) => Err((
                Reason::TargetUnavailable,
                format!(
                    "target '{target}' could not be opened when the operator started: {why}. Fix the operator config or the credentials it names, then restart the operator (it reads them at start)"
                ),
            )),
            None => Err((
                Reason::UnknownTarget,
                format!("target '{target}' has no backend"),
            )),
        }
    }

    /// `namespace/name` of every DeltaTable in a namespace (owner markers of live tables).
    /// The DeltaTables of a namespace in the cache, as the owner markers they write.
    pub fn table_markers(&self, namespace: &str) -> Vec<ResourceId> {
        self.tables
            .state()
            .iter()
            .filter(|t| t.namespace().as_deref().unwrap_or(DEFAULT_NAMESPACE) == namespace)
            .map(|t| ResourceId::new(namespace, &t.name_any()))
            .collect()
    }

    pub async fn publish<K: Resource<DynamicType = ()>>(
        &self,
        obj: &K,
        type_: EventType,
        reason: &str,
        note: String,
    ) {
        if let Err(e) = self.events.publish(obj, type_, reason, &note).await {
            tracing::warn!(error = %e, "publishing an event failed");
        }
    }

    /// Publishes what a decision noted, in order.
    pub async fn publish_all<K: Resource<DynamicType = ()>>(&self, obj: &K, notes: &[Note]) {
        for n in notes {
            let type_ = if n.warning {
                EventType::Warning
            } else {
                EventType::Normal
            };
            self.publish(obj, type_, &n.reason.to_string(), n.message.clone())
                .await;
        }
    }

    /// Keeps a resource's whole plan in a ConfigMap the resource owns (so it
    /// goes with it), when its status holds only a cut of the plan
    /// (`kubectl delta plan NAME --full` reads it). A failure is logged: the
    /// status still says what it holds and how to get the rest.
    pub async fn write_whole_plan<K: Resource<DynamicType = ()>>(
        &self,
        obj: &K,
        kind: &str,
        text: &str,
    ) {
        let (Some(ns), Some(owner)) = (obj.namespace(), obj.controller_owner_ref(&())) else {
            return;
        };
        let name = decide::whole_plan_configmap(kind, &obj.name_any());
        let cm = serde_json::json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "ownerReferences": [owner]},
            "data": {"plan.txt": text},
        });
        let api: Api<k8s_openapi::api::core::v1::ConfigMap> =
            Api::namespaced(self.client.clone(), &ns);
        if let Err(e) = api
            .patch(
                &name,
                &kube::api::PatchParams::apply(FIELD_MANAGER).force(),
                &kube::api::Patch::Apply(&cm),
            )
            .await
        {
            tracing::warn!(configmap = %name, namespace = %ns, error = %e, "could not keep the whole plan");
        }
    }

    /// Again soon, backing off, for what is Progressing or failed in passing (a
    /// stale plan, a lost lock, a read error, a status conflict, a parent not
    /// Ready): 1 s, 2 s, 4 s … at most a minute, never past the drift interval.
    pub fn backoff(&self, key: &str) -> Action {
        let tries = {
            let mut retries = self.retries.lock().unwrap_or_else(PoisonError::into_inner);
            let n = retries.entry(key.to_string()).or_insert(0);
            *n = n.saturating_add(1);
            *n
        };
        let wait = backoff_wait(tries).min(self.drift_interval);
        Action::requeue(jittered(wait))
    }

    /// Back to the drift interval (jittered): the resource got where it was going.
    pub fn settled(&self, key: &str) -> Action {
        self.retries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(key);
        Action::requeue(jittered(self.drift_interval))
    }

    /// `settled`, or sooner: when a maintenance schedule of the table comes
    /// due (`due_ms`, epoch milliseconds) before the drift pass.
    pub fn settled_until(&self, key: &str, due_ms: Option<i64>, now_ms: i64) -> Action {
        self.retries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(key);
        let wait = maintenance::requeue_after(jittered(self.drift_interval), due_ms, now_ms);
        Action::requeue(wait)
    }

    /// Both stores have been listed once. Asked without waiting: a reconcile that
    /// awaited it would hold up the controller that polls the very streams filling
    /// them (seen: an operator started beside 12 existing tables never reconciled).
    pub fn caches_synced(&self) -> bool {
        use futures::FutureExt;
        self.tables.wait_until_ready().now_or_never().is_some()
            && self.schemas.wait_until_ready().now_or_never().is_some()
            && self
                .objects
                .views
                .wait_until_ready()
                .now_or_never()
                .is_some()
            && self
                .objects
                .functions
                .wait_until_ready()
                .now_or_never()
                .is_some()
            && self
                .objects
                .volumes
                .wait_until_ready()
                .now_or_never()
                .is_some()
    }

    /// The owner markers of every DeltaView, DeltaFunction and DeltaVolume of a namespace.
    pub fn object_markers(&self, namespace: &str) -> Vec<ResourceId> {
        let in_ns = |n: Option<String>| n.as_deref().unwrap_or(DEFAULT_NAMESPACE) == namespace;
        let mut out = Vec::new();
        for v in self.objects.views.state() {
            if in_ns(v.namespace()) {
                out.push(ResourceId::new(namespace, &v.name_any()));
            }
        }
        for f in self.objects.functions.state() {
            if in_ns(f.namespace()) {
                out.push(ResourceId::new(namespace, &f.name_any()));
            }
        }
        for v in self.objects.volumes.state() {
            if in_ns(v.namespace()) {
                out.push(ResourceId::new(namespace, &v.name_any()));
            }
        }
        out
    }

    /// What a reconcile of `obj` does when this process does not hold its shard: `None`
    /// when it does; left alone when another replica may hold it (it is reconciled here
    /// again if this one takes the shard); looked at again after a renewal period when
    /// this process's own hold has lapsed (a late renewal, not a lost shard).
    pub fn left_alone<K: Resource>(&self, obj: &K) -> Option<Action> {
        let shard = self.shards.of(obj);
        if self.shards.holds(shard) {
            None
        } else if self.shards.lapsed(shard) {
            Some(Action::requeue(self.shards.renew_every()))
        } else {
            Some(Action::await_change())
        }
    }

    /// The statements of `target` a shutdown asked to cancel (each may still run).
    pub fn cancelled_on(&self, target: &str) -> Vec<String> {
        self.cancelled
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(target)
            .cloned()
            .unwrap_or_default()
    }

    /// Reconciles again the children waiting on `parent` (its state just changed):
    /// found among the tables referencing its name, not by walking the namespace.
    pub fn wake_children(&self, parent: &DeltaTable) {
        let ns = parent
            .namespace()
            .unwrap_or_else(|| DEFAULT_NAMESPACE.into());
        let referring = self.cached(&ns).referrers(&depends::name_key(parent));
        for child in parents::waiting_children(parent, &referring) {
            let _ = self
                .wake
                .unbounded_send(ObjectRef::from_obj(child.as_ref()));
        }
    }
}

/// What reconciles a waiting view or function again at once.
pub struct ObjectWakers {
    pub views: futures::channel::mpsc::UnboundedSender<ObjectRef<DeltaView>>,
    pub functions: futures::channel::mpsc::UnboundedSender<ObjectRef<DeltaFunction>>,
}

/// What a resource of the namespace that just became Ready or failed may have
/// kept waiting (`WaitingForDependency`): views and functions over tables,
/// views and functions; tables only over functions (their column masks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finished {
    Table,
    View,
    Function,
}

impl Context {
    /// Reconciles again every resource of `ns` that waits for a dependency
    /// (its Ready condition says `WaitingForDependency`) now that one of the
    /// `finished` kind reached Ready or failed: the wait ends at once instead
    /// of at the next backoff (up to a minute). Only the waiting are woken;
    /// each finds out itself whether what it waits for is this one.
    pub fn wake_dependents(&self, ns: &str, finished: Finished) {
        let waits = |conditions: &[delta_operator_api::spec::crd::Condition]| {
            conditions.iter().any(|c| {
                c.type_ == conditions::READY && c.reason == Reason::WaitingForDependency.to_string()
            })
        };
        let here = |o: &dyn ResourceExtNs| o.ns() == ns;
        for v in self.objects.views.state() {
            if here(v.as_ref()) && v.status.as_ref().is_some_and(|s| waits(&s.conditions)) {
                let _ = self
                    .wake_objects
                    .views
                    .unbounded_send(ObjectRef::from_obj(v.as_ref()));
            }
        }
        for f in self.objects.functions.state() {
            if here(f.as_ref()) && f.status.as_ref().is_some_and(|s| waits(&s.conditions)) {
                let _ = self
                    .wake_objects
                    .functions
                    .unbounded_send(ObjectRef::from_obj(f.as_ref()));
            }
        }
        if finished == Finished::Function {
            for t in self.tables.state() {
                if here(t.as_ref()) && t.status.as_ref().is_some_and(|s| waits(&s.conditions)) {
                    let _ = self.wake.unbounded_send(ObjectRef::from_obj(t.as_ref()));
                }
            }
        }
    }
}

/// A resource's namespace, the default one when unset.
trait ResourceExtNs {
    fn ns(&self) -> String;
}

impl<K: ResourceExt> ResourceExtNs for K {
    fn ns(&self) -> String {
        self.namespace().unwrap_or_else(|| DEFAULT_NAMESPACE.into())
    }
}

/// The caches of the three object kinds (their controllers' stores).
#[derive(Clone)]
pub struct ObjectStores {
    pub views: Store<DeltaView>,
    pub functions: Store<DeltaFunction>,
    pub volumes: Store<DeltaVolume>,
}

/// The n-th retry's wait (n from 1): 1 s doubling, at most MAX_BACKOFF.
fn backoff_wait(tries: u32) -> Duration {
    Duration::from_secs(1u64 << tries.saturating_sub(1).min(6)).min(MAX_BACKOFF)
}

/// ±10% jitter, so resources do not re-check in lockstep.
fn jittered(d: Duration) -> Duration {
    let base = d.as_millis() as u64;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos() as u64);
    let jitter = if base >= 10 { nanos % (base / 5) } else { 0 };
    Duration::from_millis(base - base / 10 + jitter)
}

/// What a cache keeps of an object: all but its managedFields.
pub(crate) fn strip_managed_fields<K: kube::Resource>(o: &mut K) {
    o.meta_mut().managed_fields = None;
}
