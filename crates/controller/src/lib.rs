//! `delta-operator run`: the DeltaTable and DeltaSchema controllers. Each
//! reconcile runs the same engine and executor as the CLI: lower → resolve →
//! read → diff → plan → gate → apply → report (status, events, metrics).

mod conditions;
pub mod decide;
pub mod depends;
mod events;
mod http;
mod lock;
pub mod metrics;
mod parents;
mod progress;
mod schema;
mod table;
mod tenancy;
pub mod webhook;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::EventType;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{Predicate, WatchStreamExt, predicates, watcher};
use kube::{Api, Client, Resource, ResourceExt};

use decide::{Note, Seen};
use delta_operator_api::config::Config;
use delta_operator_api::reason::Reason;
use delta_operator_api::spec::crd::ApplyStatus;
use delta_operator_api::spec::load::{DEFAULT_NAMESPACE, Manifests};
use delta_operator_api::spec::{DeltaSchema, DeltaTable};
use delta_operator_backend::BackendError;
use delta_operator_backend::apply::{self, ApplyError, ApplyReport};
use delta_operator_core::model::ResourceId;
use delta_operator_core::plan::Plan;
use delta_operator_targets::AnyBackend;

pub use lock::Locks;
use metrics::Metrics;
pub use progress::Progress;

/// The annotation that approves one plan, by id.
pub const APPROVE: &str = "delta-operator.io/approve";
/// `"true"` stops all writes.
pub const PAUSED: &str = "delta-operator.io/paused";
/// Flux's "reconcile now" annotation, echoed as status.lastHandledReconcileAt.
pub const REQUESTED_AT: &str = "reconcile.fluxcd.io/requestedAt";
/// The finalizer a DeltaTable with `deletionPolicy: Delete` carries.
pub const FINALIZER: &str = "delta-operator.io/drop-table";
pub const FIELD_MANAGER: &str = "delta-operator";
/// How long a reconcile waits for a table another apply (a CLI run) holds before requeueing.
const LOCK_WAIT: Duration = Duration::from_secs(5);
/// The longest wait between retries of what is Progressing (a stale plan, a lock,
/// a read failing in passing, a parent not Ready): 1 s, 2 s, 4 s … up to this.
const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// How soon a reconcile that found the caches not yet listed tries again.
const CACHE_WAIT: Duration = Duration::from_millis(500);
/// How often status.apply's "running 14m" is refreshed while a step runs.
const APPLY_REFRESH: Duration = Duration::from_secs(15);
/// How often the warehouse statements a step runs are compared with status.apply.statements.
const STATEMENTS_EVERY: Duration = Duration::from_secs(1);

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
    /// Reconciles at once, per controller.
    pub max_reconciles: u16,
    /// After SIGTERM, how long a running step may take before it is left (Interrupted).
    pub shutdown_grace: Duration,
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
    pub events: events::Events,
    pub metrics: Arc<Metrics>,
    pub drift_interval: Duration,
    pub tables: Store<DeltaTable>,
    pub schemas: Store<DeltaSchema>,
    /// Retries in a row per resource (`Kind/ns/name`), for the backoff.
    pub retries: Mutex<HashMap<String, u32>>,
    /// Set at SIGTERM / Ctrl-C: no new step starts, and an apply cut short says Interrupted.
    pub shutting_down: Arc<AtomicBool>,
    /// Reconciles DeltaTables again on demand (children waiting for a parent).
    pub wake: futures::channel::mpsc::UnboundedSender<ObjectRef<DeltaTable>>,
    /// After SIGTERM, how long a running step may take before it is left.
    pub shutdown_grace: Duration,
    /// Per target, the statements asked to cancel at shutdown (each may still run).
    pub cancelled: Arc<Mutex<BTreeMap<String, Vec<String>>>>,
}

impl Context {
    /// The cached objects of a namespace, shared with the stores (not copied).
    fn in_namespace<K>(store: &Store<K>, namespace: &str) -> Vec<Arc<K>>
    where
        K: Resource<DynamicType = ()> + Clone + 'static,
    {
        store
            .state()
            .into_iter()
            .filter(|o| o.namespace().as_deref().unwrap_or(DEFAULT_NAMESPACE) == namespace)
            .collect()
    }

    /// The manifest set a table's reconcile validates: what `depends::table_inputs`
    /// says its validation depends on. Two resources declaring one table are left
    /// to the owner marker (whichever reaches the table first owns it).
    pub fn table_manifests(&self, namespace: &str, table: &DeltaTable) -> Manifests {
        depends::table_inputs(
            &Self::in_namespace(&self.schemas, namespace),
            &Self::in_namespace(&self.tables, namespace),
            depends::cached(table.clone()),
            depends::Claims::OwnerMarker,
        )
    }

    /// The manifest set a schema's reconcile validates: the namespace's schemas.
    pub fn schema_manifests(&self, namespace: &str) -> Manifests {
        depends::schema_inputs(&Self::in_namespace(&self.schemas, namespace))
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

    /// Runs the executor for exactly `plan` (its id, the approval the resource
    /// carries), holding the target's Lease: the one way a reconcile changes a
    /// table, whether it applies a spec, drops a deleted resource's table or a
    /// strict schema's orphans.
    ///
    /// `show` writes the apply's progress into status: before the first step,
    /// at every step boundary and every APPLY_REFRESH while a step runs.
    /// `earlier` is an apply that was cut short (its restore points are kept).
    /// The progress as it ended comes back with the result, which is `None` when
    /// a shutdown left the apply: its step did not end within the shutdown grace.
    #[allow(clippy::too_many_arguments)]
    pub async fn run_apply<K, F, Fut, S, SFut>(
        &self,
        obj: &K,
        backend: &AnyBackend,
        target: &str,
        plan: &Plan,
        seen: &Seen<'_>,
        read_plan: F,
        earlier: Option<&ApplyStatus>,
        show: S,
    ) -> Result<(Option<Result<(Plan, ApplyReport), ApplyError>>, Progress), Error>
    where
        K: Resource<DynamicType = ()>,
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = Result<Plan, BackendError>>,
        S: Fn(Progress) -> SFut,
        SFut: std::future::Future<Output = ()>,
    {
        let limit = self
            .config
            .targets
            .get(target)
            .map_or(1, |t| t.max_concurrent_applies);
        let lock = self
            .locks
            .acquire(target, limit, &lock::Written::by(plan))
            .await?;
        let alive = lock.flag();
        self.publish_all(obj, &[decide::apply_started(plan)]).await;
        let stopping = self.shutting_down.clone();
        // no new step after a shutdown began: the one running ends (or is cancelled), the rest waits
        let may_continue = move || alive.load(Ordering::SeqCst) && !stopping.load(Ordering::SeqCst);
        let (progress, mut changes) =
            tokio::sync::watch::channel(Progress::new(plan, &table::now(), earlier));
        let on_event = |e: apply::Event<'_>| {
            progress.send_if_modified(|p| p.record(&e, &table::now()));
        };
        // before every step the Lease is read back: a process that stalled past its
        // expiry does not run a step on a target another operator now applies to
        let lease = lock.fence();
        let fence = move || -> futures::future::BoxFuture<'static, Result<(), String>> {
            let lease = lease.clone();
            Box::pin(async move { lease.check().await })
        };
        let opts = apply::Options {
            policy: seen.policy,
            lock_wait: LOCK_WAIT,
            on_event: &on_event,
            may_continue: &may_continue,
            fence: Some(&fence),
        };
        // the statements this apply starts, told apart from other applies' on the target
        let mine = delta_operator_backend::StatementLog::default();
        let run = delta_operator_backend::APPLY_STATEMENTS.scope(
            mine.clone(),
            apply::apply_planned(
                backend,
                read_plan,
                Some(plan.id.as_str()),
                // a spent approval approves nothing, here as in decide
                seen.in_force(),
                &opts,
            ),
        );
        tokio::pin!(run);
        let first = changes.borrow_and_update().clone();
        show(first).await;
        let mut refresh = tokio::time::interval(APPLY_REFRESH);
        refresh.tick().await;
        let mut statements = tokio::time::interval(STATEMENTS_EVERY);
        let stopping = self.shutting_down.clone();
        let grace = self.shutdown_grace;
        let give_up = async move {
            while !stopping.load(Ordering::SeqCst) {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            tokio::time::sleep(grace).await;
        };
        tokio::pin!(give_up);
        let result = loop {
            tokio::select! {
                r = &mut run => break Some(r),
                // a step still running past the grace is left (its statements were asked to
                // cancel; a lake step is cut like a kill, which its commits are made to survive)
                _ = &mut give_up => break None,
                Ok(()) = changes.changed() => {
                    let now = changes.borrow_and_update().clone();
                    show(now).await;
                }
                _ = refresh.tick() => {
                    let now = changes.borrow().clone();
                    show(now).await;
                }
                // what a kill would leave running, named in status (shown by `changes`)
                _ = statements.tick() => {
                    progress.send_if_modified(|p| p.running(mine.mine(backend.writes_running())));
                }
            }
        };
        lock.release().await;
        let mut last = changes.borrow().clone();
        if result.is_none() {
            // left at the shutdown grace: what this apply had running was asked to cancel
            let mut names = last.status().statements.clone();
            for id in mine.mine(self.cancelled_on(target)) {
                if !names.contains(&id) {
                    names.push(id);
                }
            }
            last.running(names);
        }
        Ok((result, last))
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

    /// Both stores have been listed once. Asked without waiting: a reconcile that
    /// awaited it would hold up the controller that polls the very streams filling
    /// them (seen: an operator started beside 12 existing tables never reconciled).
    pub fn caches_synced(&self) -> bool {
        use futures::FutureExt;
        self.tables.wait_until_ready().now_or_never().is_some()
            && self.schemas.wait_until_ready().now_or_never().is_some()
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

    /// Reconciles again the children waiting on `parent` (its state just changed).
    pub fn wake_children(&self, parent: &DeltaTable) {
        let ns = parent.namespace();
        let in_ns: Vec<Arc<DeltaTable>> = self
            .tables
            .state()
            .into_iter()
            .filter(|t| t.namespace() == ns)
            .collect();
        for child in parents::waiting_children(parent, &in_ns) {
            let _ = self
                .wake
                .unbounded_send(ObjectRef::from_obj(child.as_ref()));
        }
    }
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

/// Runs both controllers until SIGTERM / Ctrl-C.
pub async fn run(config: Config, opts: RunOptions) -> Result<(), Error> {
    let client = Client::try_default().await?;
    // a target that cannot be opened (a missing credential, say) stalls its own resources
    // only; one broken Secret must not stop every other target's tables
    let mut backends = BTreeMap::new();
    let mut unavailable = BTreeMap::new();
    for (name, t) in &config.targets {
        match AnyBackend::open(t, Some(&opts.identity)) {
            Ok(backend) => {
                backends.insert(name.clone(), Arc::new(backend));
            }
            Err(e) => {
                tracing::error!(target = %name, error = %e, "target could not be opened; its resources will be Stalled (TargetUnavailable)");
                unavailable.insert(name.clone(), e.to_string());
            }
        }
    }
    let metrics = Arc::new(Metrics::default());
    for (name, backend) in &backends {
        if let AnyBackend::Databricks(_) | AnyBackend::Spark(_) = backend.as_ref() {
            let b = backend.clone();
            let count = move || match b.as_ref() {
                AnyBackend::Databricks(d) => d.statements(),
                AnyBackend::Spark(s) => s.client().statements(),
                AnyBackend::Lake(_) => 0,
            };
            metrics
                .statement_counters
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push((name.clone(), Box::new(count)));
        }
    }
    // at SIGTERM / Ctrl-C, cancel running warehouse statements instead of waiting for them
    let cancel_on_signal = backends.clone();
    let shutting_down = Arc::new(AtomicBool::new(false));
    let stopping = shutting_down.clone();
    let cancelled: Arc<Mutex<BTreeMap<String, Vec<String>>>> = Arc::default();
    let asked = cancelled.clone();
    let grace = opts.shutdown_grace;
    tokio::spawn(async move {
        shutdown_signal().await;
        stopping.store(true, Ordering::SeqCst);
        // asked again while anything runs: a statement whose submission is still
        // waiting for its id (the POST holds up to its wait_timeout) is cancelled once known
        let until = tokio::time::Instant::now() + grace;
        loop {
            let mut busy = false;
            for (name, backend) in &cancel_on_signal {
                if let Some(c) = backend.cancel().await {
                    if c.busy {
                        busy = true;
                        tracing::info!(target = %name, "shutdown: {}", c.message);
                    }
                    let mut asked = asked.lock().unwrap_or_else(PoisonError::into_inner);
                    let all = asked.entry(name.clone()).or_default();
                    for s in c.statements {
                        if !all.contains(&s) {
                            all.push(s);
                        }
                    }
                }
            }
            if !busy || tokio::time::Instant::now() >= until {
                break;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    });
    let listener = tokio::net::TcpListener::bind(&opts.listen)
        .await
        .map_err(|source| Error::Listen {
            addr: opts.listen.clone(),
            source,
        })?;
    let addr = listener
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_default();
    tracing::info!(addr = %addr, "serving /metrics, /healthz, /readyz");
    // plain on stdout, so `--listen 127.0.0.1:0` can be used and read back
    println!("listening on {addr}");
    tokio::spawn(metrics::serve(listener, metrics.clone()));
    // before leader election: a standby answers admission requests too
    if let Some(w) = opts.webhook.clone() {
        webhook::start(client.clone(), w, opts.namespace.clone(), metrics.clone()).await?;
    }

    // a standby replica is ready too: otherwise a rollout waits forever for a pod that
    // cannot lead until the old leader goes
    if opts.leader_elect {
        metrics
            .ready
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }
    // a standby stopped while it waits ends at once (the signal handler above keeps SIGTERM
    // from ending the process by itself, and a waiting standby has nothing to finish)
    let leader = if opts.leader_elect {
        tokio::select! {
            leader = leader_election(&client, &opts) => Some(leader?),
            _ = shutdown_signal() => {
                tracing::info!("shutdown while standing by");
                return Ok(());
            }
        }
    } else {
        None
    };

    let tables_api: Api<DeltaTable> = match &opts.namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    };
    let schemas_api: Api<DeltaSchema> = match &opts.namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    };
    let wc = watcher::Config::default();
    // tables: reconciled on spec (generation) and annotation changes, never on our status writes.
    // The caches keep no managedFields: nothing reads them, and under server-side apply they
    // are about the size of the spec again, for every one of thousands of objects.
    let (tables_store, tables_writer) = reflector::store();
    let tables_stream = watcher(tables_api.clone(), wc.clone())
        .default_backoff()
        .modify(strip_managed_fields)
        .reflect(tables_writer)
        .applied_objects()
        .predicate_filter(
            predicates::generation.combine(predicates::annotations),
            Default::default(),
        );
    let (schemas_store, schemas_writer) = reflector::store();
    let schemas_stream = watcher(schemas_api.clone(), wc.clone())
        .default_backoff()
        .modify(strip_managed_fields)
        .reflect(schemas_writer)
        .applied_objects()
        .predicate_filter(
            predicates::generation.combine(predicates::annotations),
            Default::default(),
        );

    let locks = Locks::new(
        client.clone(),
        &opts.lease_namespace,
        &opts.identity,
        opts.lease_seconds,
        metrics.applies.clone(),
    );
    let (wake, woken) = futures::channel::mpsc::unbounded();
    let ctx = Arc::new(Context {
        client: client.clone(),
        config,
        backends,
        unavailable,
        events: events::Events::new(client.clone(), "delta-operator", &opts.identity),
        metrics: metrics.clone(),
        drift_interval: opts.drift_interval,
        tables: tables_store.clone(),
        schemas: schemas_store.clone(),
        locks,
        retries: Mutex::new(HashMap::new()),
        shutting_down,
        wake,
        shutdown_grace: opts.shutdown_grace,
        cancelled,
    });
    let held = ctx.locks.held.clone();
    *metrics
        .lease_targets
        .lock()
        .unwrap_or_else(PoisonError::into_inner) = Vec::new();
    let metrics_held = metrics.clone();
    tokio::spawn(async move {
        // mirror the held-Lease list into the metrics every second
        loop {
            let now = held.lock().unwrap_or_else(PoisonError::into_inner).clone();
            *metrics_held
                .lease_targets
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = now;
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    });

    let store_for_map = tables_store.clone();
    let limit = kube::runtime::controller::Config::default().concurrency(opts.max_reconciles);
    let table_controller = Controller::for_stream(tables_stream, tables_store.clone())
        .with_config(limit.clone())
        .watches_stream(schemas_stream, move |s: DeltaSchema| {
            // a schema change re-triggers the tables that name it
            let ns = s.namespace();
            let name = s.name_any();
            store_for_map
                .state()
                .into_iter()
                .filter(|t| t.namespace() == ns && t.spec.schema_ref == name)
                .map(|t| ObjectRef::from_obj(t.as_ref()))
                .collect::<Vec<_>>()
        })
        .reconcile_on(woken)
        .shutdown_on_signal()
        .run(table::reconcile, table::error_policy, ctx.clone())
        .for_each(|r| async move {
            if let Err(e) = r {
                tracing::debug!(error = %e, "table reconcile");
            }
        });

    // schemas: orphans (strict mode) and schema status. Only a DeltaTable's
    // deletion can make an orphan, so only deletions re-trigger its schema
    // (not every status write of every table).
    let table_deletions = watcher(tables_api, wc.clone())
        .default_backoff()
        .try_filter_map(|ev| async move {
            Ok(match ev {
                watcher::Event::Delete(t) => Some(t),
                _ => None,
            })
        });
    let schema_controller = Controller::new(schemas_api, wc.clone())
        .with_config(limit)
        .watches_stream(table_deletions, |t: DeltaTable| {
            Some(
                ObjectRef::<DeltaSchema>::new(&t.spec.schema_ref)
                    .within(&t.namespace().unwrap_or_else(|| DEFAULT_NAMESPACE.into())),
            )
        })
        .shutdown_on_signal()
        .run(schema::reconcile, schema::error_policy, ctx.clone())
        .for_each(|r| async move {
            if let Err(e) = r {
                tracing::debug!(error = %e, "schema reconcile");
            }
        });

    metrics
        .ready
        .store(true, std::sync::atomic::Ordering::Relaxed);
    tracing::info!("controllers started");
    futures::join!(table_controller, schema_controller);
    if let Some(leader) = leader {
        leader.release().await;
    }
    tracing::info!("shut down");
    Ok(())
}

/// What a cache keeps of an object: all but its managedFields.
pub(crate) fn strip_managed_fields<K: kube::Resource>(o: &mut K) {
    o.meta_mut().managed_fields = None;
}

/// SIGTERM or Ctrl-C (the signals the controllers shut down on).
async fn shutdown_signal() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {},
        _ = term => {},
    }
}

/// The held leader Lease; `release` hands it over at shutdown, so a replacement
/// takes over at once instead of waiting for the Lease to expire.
struct Leader {
    stop: tokio::sync::oneshot::Sender<()>,
    watcher: tokio::task::JoinHandle<()>,
}

impl Leader {
    async fn release(self) {
        let _ = self.stop.send(());
        match tokio::time::timeout(Duration::from_secs(5), self.watcher).await {
            Ok(_) => tracing::info!("released the leader Lease"),
            Err(_) => {
                tracing::warn!("could not release the leader Lease in 5s; it expires by itself")
            }
        }
    }
}

/// With more than one replica, only the leader runs controllers; losing the
/// lead ends the process (its replacement waits for the Lease).
async fn leader_election(client: &Client, opts: &RunOptions) -> Result<Leader, Error> {
    tracing::info!("waiting to become the leader");
    lock::wait_until_free(
        client,
        &opts.lease_namespace,
        "delta-operator-leader",
        &opts.identity,
    )
    .await;
    let manager =
        kube_lease_manager::LeaseManagerBuilder::new(client.clone(), "delta-operator-leader")
            .with_namespace(opts.lease_namespace.clone())
            .with_identity(opts.identity.clone())
            .with_duration(opts.lease_seconds)
            .with_grace((opts.lease_seconds / 3).max(1))
            .build()
            .await?;
    let (mut channel, task) = manager.watch().await;
    while !*channel.borrow_and_update() {
        channel.changed().await?;
    }
    tracing::info!("leading");
    let (stop, mut stopped) = tokio::sync::oneshot::channel();
    let watcher = tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = &mut stopped => break,
                changed = channel.changed() => {
                    if changed.is_err() || !*channel.borrow_and_update() {
                        tracing::error!("lost the leader Lease; exiting");
                        std::process::exit(1);
                    }
                }
            }
        }
        // closing the channel makes the lease task release the Lease and end
        drop(channel);
        let _ = task.await;
    });
    Ok(Leader { stop, watcher })
}
