//! The process around the reconcilers: targets opened, metrics and probes
//! served, the webhook started, leader election, the watches and caches the
//! controllers share, and shutdown. Reconciling itself is `table` and `schema`.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use kube::runtime::controller::Controller;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{Predicate, WatchStreamExt, predicates, watcher};
use kube::{Api, Client, ResourceExt};

use crate::lookup::TableIndex;
use crate::metrics::{self, Metrics};
use crate::sharding::{self, Shards};
use crate::{
    Context, Error, Locks, ObjectStores, ObjectWakers, RunOptions, events, object, outcome, schema,
    strip_managed_fields, table,
};
use crate::{lock, webhook};
use delta_operator_api::config::Config;
use delta_operator_api::spec::load::DEFAULT_NAMESPACE;
use delta_operator_api::spec::objects::{DeltaFunction, DeltaView, DeltaVolume};
use delta_operator_api::spec::{DeltaSchema, DeltaTable};
use delta_operator_targets::AnyBackend;

/// The opened targets' backends by name.
type Backends = BTreeMap<String, Arc<AnyBackend>>;
/// Per target, the statements asked to cancel at shutdown (each may still run).
type Cancelled = Arc<Mutex<BTreeMap<String, Vec<String>>>>;

/// Runs both controllers until SIGTERM / Ctrl-C.
pub async fn run(config: Config, opts: RunOptions) -> Result<(), Error> {
    if opts.shards > 1 && !opts.leader_elect {
        return Err(Error::ShardsNeedLeaderElect(opts.shards));
    }
    let client = Client::try_default().await?;
    let (backends, unavailable) = open_targets(&config, &opts.identity);
    let metrics = Arc::new(Metrics::default());
    count_statements(&metrics, &backends);
    let (shutting_down, cancelled) = cancel_at_shutdown(backends.clone(), opts.shutdown_grace);
    serve_probes(&opts.listen, metrics.clone()).await?;
    // before leader election: a standby answers admission requests too
    if let Some(w) = opts.webhook.clone() {
        webhook::start(
            client.clone(),
            w,
            opts.namespace.clone(),
            Arc::new(config.clone()),
            metrics.clone(),
        )
        .await?;
    }

    // a standby replica is ready too: otherwise a rollout waits forever for a pod that
    // cannot lead until the old leader goes
    if opts.leader_elect {
        metrics.ready.store(true, Ordering::Relaxed);
    }
    // a standby stopped while it waits ends at once (the signal handler above keeps SIGTERM
    // from ending the process by itself, and a waiting standby has nothing to finish)
    // sharded, there is no one leader: each replica holds shards (`sharding`)
    let shards = Arc::new(Shards::new(opts.shards, &opts.identity, opts.lease_seconds));
    let leader = if opts.leader_elect && !shards.sharded() {
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

    let watches = Watches::start(&client, opts.namespace.as_deref());
    let (wake, woken) = futures::channel::mpsc::unbounded();
    let (wake_views, views_woken) = futures::channel::mpsc::unbounded();
    let (wake_functions, functions_woken) = futures::channel::mpsc::unbounded();
    // a shard gained: both controllers reconcile every object again
    let (tables_all, tables_again) = futures::channel::mpsc::unbounded();
    let (schemas_all, schemas_again) = futures::channel::mpsc::unbounded();
    let (views_all, views_again) = futures::channel::mpsc::unbounded();
    let (functions_all, functions_again) = futures::channel::mpsc::unbounded();
    let (volumes_all, volumes_again) = futures::channel::mpsc::unbounded();
    if shards.sharded() {
        tracing::info!(
            shards = shards.count(),
            "sharded: reconciling the shards this replica holds"
        );
        sharding::keep(
            client.clone(),
            &opts.lease_namespace,
            shards.clone(),
            vec![
                tables_all,
                schemas_all,
                views_all,
                functions_all,
                volumes_all,
            ],
            metrics.clone(),
        );
    }
    let ctx = Arc::new(Context {
        client: client.clone(),
        config,
        backends,
        unavailable,
        events: events::EventRecorder::new(client.clone(), "delta-operator", &opts.identity),
        announced: outcome::Announced::new(announce_ttl(opts.drift_interval)),
        metrics: metrics.clone(),
        drift_interval: opts.drift_interval,
        tables: watches.tables_store.clone(),
        schemas: watches.schemas_store.clone(),
        objects: ObjectStores {
            views: watches.views.store.clone(),
            functions: watches.functions.store.clone(),
            volumes: watches.volumes.store.clone(),
        },
        index: watches.tables_index.clone(),
        locks: Locks::new(
            client.clone(),
            &opts.lease_namespace,
            &opts.identity,
            opts.lease_seconds,
            metrics.applies.clone(),
        ),
        shards: shards.clone(),
        retries: Mutex::new(HashMap::new()),
        shutting_down,
        wake,
        wake_objects: ObjectWakers {
            views: wake_views,
            functions: wake_functions,
        },
        shutdown_grace: opts.shutdown_grace,
        max_step_interruptions: opts.max_step_interruptions,
        cancelled,
        maintenance: Default::default(),
    });
    mirror_held_leases(&ctx.locks, &metrics);
    let limit = kube::runtime::controller::Config::default().concurrency(opts.max_reconciles);
    let schemas = schema_controller(
        watches.schemas_api,
        watches.tables_api,
        watches.objects_deleted,
        schemas_again,
        limit.clone(),
        ctx.clone(),
    );
    let views = object_controller(
        watches.views,
        views_again,
        Some(views_woken),
        limit.clone(),
        ctx.clone(),
    );
    let functions = object_controller(
        watches.functions,
        functions_again,
        Some(functions_woken),
        limit.clone(),
        ctx.clone(),
    );
    // a volume reads nothing: it never waits for a dependency
    let volumes = object_controller(
        watches.volumes,
        volumes_again,
        None,
        limit.clone(),
        ctx.clone(),
    );
    let tables = table_controller(
        watches.tables,
        watches.schemas,
        watches.tables_store,
        woken,
        tables_again,
        limit,
        ctx,
    );
    metrics.ready.store(true, Ordering::Relaxed);
    tracing::info!("controllers started");
    futures::join!(tables, schemas, views, functions, volumes);
    if let Some(leader) = leader {
        leader.release().await;
    }
    if shards.sharded() {
        sharding::release_all(client, &opts.lease_namespace, &shards).await;
    }
    tracing::info!("shut down");
    Ok(())
}

/// How long the state said of a resource is remembered without a reconcile of it:
/// every resource is reconciled at least once per drift interval (±10%), so only
/// a deleted one goes unseen this long.
fn announce_ttl(drift_interval: Duration) -> Duration {
    (drift_interval * 3).max(Duration::from_secs(3600))
}

/// Every target's backend, and the targets that could not be opened with why. A
/// target that cannot be opened (a missing credential, say) stalls its own resources
/// only; one broken Secret must not stop every other target's tables.
fn open_targets(config: &Config, identity: &str) -> (Backends, BTreeMap<String, String>) {
    let mut backends = BTreeMap::new();
    let mut unavailable = BTreeMap::new();
    for (name, t) in &config.targets {
        match AnyBackend::open(t, Some(identity)) {
            Ok(backend) => {
                backends.insert(name.clone(), Arc::new(backend));
            }
            Err(e) => {
                tracing::error!(target = %name, error = %e, "target could not be opened; its resources will be Stalled (TargetUnavailable)");
                unavailable.insert(name.clone(), e.to_string());
            }
        }
    }
    (backends, unavailable)
}

/// Each warehouse target's statement count, read by /metrics.
fn count_statements(metrics: &Metrics, backends: &Backends) {
    for (name, backend) in backends {
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
}

/// At SIGTERM / Ctrl-C, cancels running warehouse statements instead of waiting
/// for them. Returns the flag set at the signal and the statements asked to cancel.
fn cancel_at_shutdown(backends: Backends, grace: Duration) -> (Arc<AtomicBool>, Cancelled) {
    let shutting_down = Arc::new(AtomicBool::new(false));
    let stopping = shutting_down.clone();
    let cancelled: Cancelled = Arc::default();
    let asked = cancelled.clone();
    tokio::spawn(async move {
        shutdown_signal().await;
        stopping.store(true, Ordering::SeqCst);
        // asked again while anything runs: a statement whose submission is still
        // waiting for its id (the POST holds up to its wait_timeout) is cancelled once known
        let until = tokio::time::Instant::now() + grace;
        loop {
            let mut busy = false;
            for (name, backend) in &backends {
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
    (shutting_down, cancelled)
}

/// Listens on `listen` and serves /metrics, /healthz and /readyz there.
async fn serve_probes(listen: &str, metrics: Arc<Metrics>) -> Result<(), Error> {
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|source| Error::Listen {
            addr: listen.to_string(),
            source,
        })?;
    let addr = listener
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_default();
    tracing::info!(addr = %addr, "serving /metrics, /healthz, /readyz");
    // plain on stdout, so `--listen 127.0.0.1:0` can be used and read back
    println!("listening on {addr}");
    tokio::spawn(metrics::serve(listener, metrics));
    Ok(())
}

/// Mirrors the list of held apply Leases into the metrics, every second.
fn mirror_held_leases(locks: &Locks, metrics: &Arc<Metrics>) {
    let held = locks.held.clone();
    *metrics
        .lease_targets
        .lock()
        .unwrap_or_else(PoisonError::into_inner) = Vec::new();
    let metrics = metrics.clone();
    tokio::spawn(async move {
        loop {
            let now = held.lock().unwrap_or_else(PoisonError::into_inner).clone();
            *metrics
                .lease_targets
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = now;
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    });
}

type Changes<K> = BoxStream<'static, Result<K, watcher::Error>>;

/// The watches the controllers share: their stores (the reconcilers' caches) and
/// the changes each controller is triggered by.
struct Watches {
    tables_api: Api<DeltaTable>,
    schemas_api: Api<DeltaSchema>,
    tables_store: Store<DeltaTable>,
    schemas_store: Store<DeltaSchema>,
    /// The tables of `tables_store` by the names they declare and reference.
    tables_index: TableIndex,
    tables: Changes<DeltaTable>,
    schemas: Changes<DeltaSchema>,
    views: ObjectWatch<DeltaView>,
    functions: ObjectWatch<DeltaFunction>,
    volumes: ObjectWatch<DeltaVolume>,
    /// The DeltaSchema of each view, function or volume deleted, sent once its store
    /// has dropped it (only a deletion makes an orphan object, as for tables).
    objects_deleted: futures::channel::mpsc::UnboundedReceiver<ObjectRef<DeltaSchema>>,
}

/// One object kind's store and the changes its controller is triggered by.
struct ObjectWatch<K: kube::Resource + 'static>
where
    K::DynamicType: std::hash::Hash + Eq + Clone,
{
    store: Store<K>,
    changes: Changes<K>,
}

impl<K> ObjectWatch<K>
where
    K: delta_operator_api::spec::objects::ObjectResource
        + kube::Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
        + Clone
        + std::fmt::Debug
        + k8s_openapi::serde::de::DeserializeOwned
        + Send
        + Sync
        + 'static,
{
    fn start(
        client: &Client,
        namespace: Option<&str>,
        deleted: futures::channel::mpsc::UnboundedSender<ObjectRef<DeltaSchema>>,
    ) -> Self {
        let api: Api<K> = match namespace {
            Some(ns) => Api::namespaced(client.clone(), ns),
            None => Api::all(client.clone()),
        };
        let (store, writer) = reflector::store();
        let changes = watcher(api, watcher::Config::default())
            .default_backoff()
            .modify(strip_managed_fields)
            .reflect(writer)
            // after the store dropped it: the schema's reconcile no longer counts it as existing
            .inspect_ok(move |e| {
                if let watcher::Event::Delete(o) = e {
                    let ns = o.namespace().unwrap_or_else(|| DEFAULT_NAMESPACE.into());
                    let _ = deleted
                        .unbounded_send(ObjectRef::<DeltaSchema>::new(o.schema_ref()).within(&ns));
                }
            })
            .applied_objects()
            .predicate_filter(
                predicates::generation.combine(predicates::annotations),
                Default::default(),
            )
            .boxed();
        ObjectWatch { store, changes }
    }
}

impl Watches {
    fn start(client: &Client, namespace: Option<&str>) -> Self {
        let tables_api: Api<DeltaTable> = match namespace {
            Some(ns) => Api::namespaced(client.clone(), ns),
            None => Api::all(client.clone()),
        };
        let schemas_api: Api<DeltaSchema> = match namespace {
            Some(ns) => Api::namespaced(client.clone(), ns),
            None => Api::all(client.clone()),
        };
        let wc = watcher::Config::default();
        // reconciled on spec (generation) and annotation changes, never on our status writes.
        // The caches keep no managedFields: nothing reads them, and under server-side apply
        // they are about the size of the spec again, for every one of thousands of objects.
        let (tables_store, tables_writer) = reflector::store();
        let tables_index = TableIndex::default();
        let indexing = tables_index.clone();
        let tables = watcher(tables_api.clone(), wc.clone())
            .default_backoff()
            .modify(strip_managed_fields)
            .reflect(tables_writer)
            .inspect_ok(move |e| indexing.apply(e))
            .applied_objects()
            .predicate_filter(
                predicates::generation.combine(predicates::annotations),
                Default::default(),
            )
            .boxed();
        let (deleted, objects_deleted) = futures::channel::mpsc::unbounded();
        let (schemas_store, schemas_writer) = reflector::store();
        let schemas = watcher(schemas_api.clone(), wc)
            .default_backoff()
            .modify(strip_managed_fields)
            .reflect(schemas_writer)
            .applied_objects()
            .predicate_filter(
                predicates::generation.combine(predicates::annotations),
                Default::default(),
            )
            .boxed();
        Watches {
            tables_api,
            schemas_api,
            tables_store,
            schemas_store,
            tables_index,
            tables,
            schemas,
            views: ObjectWatch::start(client, namespace, deleted.clone()),
            functions: ObjectWatch::start(client, namespace, deleted.clone()),
            volumes: ObjectWatch::start(client, namespace, deleted),
            objects_deleted,
        }
    }
}

/// Reconciles DeltaTables on their own changes, on a change of the schema they
/// name, and when woken (children waiting for a parent).
fn table_controller(
    tables: Changes<DeltaTable>,
    schemas: Changes<DeltaSchema>,
    store: Store<DeltaTable>,
    woken: futures::channel::mpsc::UnboundedReceiver<ObjectRef<DeltaTable>>,
    again: futures::channel::mpsc::UnboundedReceiver<()>,
    limit: kube::runtime::controller::Config,
    ctx: Arc<Context>,
) -> impl std::future::Future<Output = ()> {
    let naming = store.clone();
    Controller::for_stream(tables, store)
        .with_config(limit)
        .watches_stream(schemas, move |s: DeltaSchema| {
            // a schema change re-triggers the tables that name it
            let ns = s.namespace();
            let name = s.name_any();
            naming
                .state()
                .into_iter()
                .filter(|t| t.namespace() == ns && t.spec.schema_ref == name)
                .map(|t| ObjectRef::from_obj(t.as_ref()))
                .collect::<Vec<_>>()
        })
        .reconcile_on(woken)
        .reconcile_all_on(again)
        .shutdown_on_signal()
        .run(table::reconcile, table::error_policy, ctx)
        .for_each(|r| async move {
            if let Err(e) = r {
                tracing::debug!(error = %e, "table reconcile");
            }
        })
}

/// Reconciles DeltaSchemas: orphans (strict mode) and schema status. Only a
/// DeltaTable's deletion can make an orphan, so only deletions re-trigger its
/// schema (not every status write of every table).
fn schema_controller(
    schemas: Api<DeltaSchema>,
    tables: Api<DeltaTable>,
    objects: futures::channel::mpsc::UnboundedReceiver<ObjectRef<DeltaSchema>>,
    again: futures::channel::mpsc::UnboundedReceiver<()>,
    limit: kube::runtime::controller::Config,
    ctx: Arc<Context>,
) -> impl std::future::Future<Output = ()> {
    let wc = watcher::Config::default();
    let table_deletions = watcher(tables, wc.clone())
        .default_backoff()
        .try_filter_map(|ev| async move {
            Ok(match ev {
                watcher::Event::Delete(t) => Some(t),
                _ => None,
            })
        });
    Controller::new(schemas, wc)
        .with_config(limit)
        .watches_stream(table_deletions, |t: DeltaTable| {
            Some(
                ObjectRef::<DeltaSchema>::new(&t.spec.schema_ref)
                    .within(&t.namespace().unwrap_or_else(|| DEFAULT_NAMESPACE.into())),
            )
        })
        .reconcile_on(objects)
        .reconcile_all_on(again)
        .shutdown_on_signal()
        .run(schema::reconcile, schema::error_policy, ctx)
        .for_each(|r| async move {
            if let Err(e) = r {
                tracing::debug!(error = %e, "schema reconcile");
            }
        })
}

/// Reconciles one object kind (DeltaView, DeltaFunction, DeltaVolume) on its
/// own changes; one that waits for a dependency or its schema comes back by
/// its backoff, and every object again at the drift interval.
fn object_controller<K: object::Kind>(
    watch: ObjectWatch<K>,
    again: futures::channel::mpsc::UnboundedReceiver<()>,
    woken: Option<futures::channel::mpsc::UnboundedReceiver<ObjectRef<K>>>,
    limit: kube::runtime::controller::Config,
    ctx: Arc<Context>,
) -> impl std::future::Future<Output = ()> {
    // waiting for a dependency: reconciled again when one becomes Ready (`wake_dependents`)
    let woken = match woken {
        Some(w) => w.left_stream(),
        None => futures::stream::empty().right_stream(),
    };
    Controller::for_stream(watch.changes, watch.store)
        .with_config(limit)
        .reconcile_all_on(again)
        .reconcile_on(woken)
        .shutdown_on_signal()
        .run(object::reconcile::<K>, object::error_policy::<K>, ctx)
        .for_each(|r| async move {
            if let Err(e) = r {
                tracing::debug!(error = %e, kind = K::KIND.kind(), "object reconcile");
            }
        })
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
