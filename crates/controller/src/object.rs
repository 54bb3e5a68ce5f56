//! The DeltaView, DeltaFunction and DeltaVolume reconcile: one, generic over
//! the three kinds (`Kind`), thin like `table.rs`. One reconcile = resolve
//! (the namespace's DeltaSchemas and this resource, validated and lowered) →
//! target → tenancy → finalizer (only with `deletionPolicy: Delete`) → what it
//! reads Ready (`dependency.rs`, else `WaitingForDependency`) → read and plan
//! this one object → decide (policy, the approval annotation pinned to the
//! plan id) → apply under the target's Lease → status and events. Orphans (our
//! marker, no resource) are the DeltaSchema's (`schema.rs`), as for tables.

use std::collections::BTreeSet;
use std::fmt::Debug;
use std::sync::Arc;
use std::time::Instant;

use k8s_openapi::serde::Serialize;
use k8s_openapi::serde::de::DeserializeOwned;
use kube::api::{Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::{Api, ResourceExt};
use serde_json::json;

use super::conditions::conditions;
use super::decide::{self, Next, Report, Seen, applied};
use super::dependency::{self, Declared};
use super::depends::Lookup;
use super::table::now;
use super::{ApplyEnd, CACHE_WAIT, Context, Error, FIELD_MANAGER, REQUESTED_AT, tenancy};
use delta_operator_api::inputs::Inputs;
use delta_operator_api::reason::{Phase, Reason};
use delta_operator_api::spec::crd::{
    DeletionPolicy, DeltaSchema, DriftPolicy, Policy as SpecPolicy,
};
use delta_operator_api::spec::load::Manifests;
use delta_operator_api::spec::lower::lower_schema;
use delta_operator_api::spec::lower_objects::{
    lower_function, lower_view, lower_volume, object_schema_of,
};
use delta_operator_api::spec::names::comparison_key;
use delta_operator_api::spec::objects::{
    DeltaFunction, DeltaObjectStatus, DeltaView, DeltaVolume, ObjectKindSpec, ObjectResource,
};
use delta_operator_api::spec::validate::validate;
use delta_operator_api::spec::{SpecError, validate::functions_the_lake_lacks};
use delta_operator_backend::Backend;
use delta_operator_backend::engine::{parse_live, read_and_plan};
use delta_operator_core::model::ResourceId;
use delta_operator_core::model::object::DesiredObject;
use delta_operator_core::model::object::{ObjectRef, ObservedObject};
use delta_operator_core::model::{SchemaMode, TableRef};
use delta_operator_core::plan::compile::compile_all;
use delta_operator_core::plan::gate::Policy;
use delta_operator_core::plan::object::plan_orphan_objects;
use delta_operator_core::plan::{Capabilities, Compiler, Parts, Plan, SchemaScope};
use delta_operator_targets::AnyBackend;

/// The finalizer a view, function or volume with `deletionPolicy: Delete` carries.
pub const OBJECT_FINALIZER: &str = "delta-operator.io/drop-object";

/// What the reconcile needs of each kind beyond `ObjectResource`.
pub trait Kind:
    ObjectResource
    + kube::Resource<Scope = kube::core::NamespaceResourceScope>
    + Clone
    + Debug
    + Serialize
    + DeserializeOwned
    + Send
    + Sync
    + 'static
{
    fn status(&self) -> Option<&DeltaObjectStatus>;
    /// Into a manifest set, as loading would put it.
    fn put(self, m: &mut Manifests);
    /// The resource as it sits in `m` (after `put`).
    fn lower(m: &Manifests, name: &str) -> Option<Result<DesiredObject, Vec<SpecError>>>;
}

macro_rules! kind {
    ($ty:ty, $field:ident, $lower:ident) => {
        impl Kind for $ty {
            fn status(&self) -> Option<&DeltaObjectStatus> {
                self.status.as_ref()
            }
            fn put(self, m: &mut Manifests) {
                m.$field.push(super::depends::cached(self));
            }
            fn lower(m: &Manifests, name: &str) -> Option<Result<DesiredObject, Vec<SpecError>>> {
                let me = m.$field.iter().find(|o| o.name() == name)?;
                Some($lower(m, me))
            }
        }
    };
}

kind!(DeltaView, views, lower_view);
kind!(DeltaFunction, functions, lower_function);
kind!(DeltaVolume, volumes, lower_volume);

/// `deltaview`, `deltafunction`, `deltavolume` (events, the plan ConfigMap, the approve command).
pub fn lower_kind(k: ObjectKindSpec) -> &'static str {
    match k {
        ObjectKindSpec::View => "deltaview",
        ObjectKindSpec::Function => "deltafunction",
        ObjectKindSpec::Volume => "deltavolume",
    }
}

pub fn error_policy<K: Kind>(obj: Arc<K>, err: &Error, ctx: Arc<Context>) -> Action {
    let ns = obj.namespace().unwrap_or_else(|| "default".into());
    let object = format!("{ns}/{}", obj.name_any());
    let kind = K::KIND.kind();
    tracing::warn!(kind = kind, object = %object, error = %err, "reconcile failed; retrying");
    ctx.metrics.failed("Error");
    ctx.backoff(&format!("{kind}/{object}"))
}

pub async fn reconcile<K: Kind>(obj: Arc<K>, ctx: Arc<Context>) -> Result<Action, Error> {
    let start = Instant::now();
    let ns = obj.namespace().unwrap_or_else(|| "default".into());
    let name = obj.name_any();
    let api: Api<K> = Api::namespaced(ctx.client.clone(), &ns);
    let key = format!("{}/{ns}/{name}", K::KIND.kind());
    if !ctx.caches_synced() {
        return Ok(Action::requeue(CACHE_WAIT));
    }
    if let Some(action) = ctx.left_alone(obj.as_ref()) {
        ctx.forget(&key);
        return Ok(action);
    }
    let (report, object) = if obj.meta().deletion_timestamp.is_some() {
        match delete(obj.as_ref(), &ctx, &api, &ns, &name).await? {
            Some(r) => r,
            None => {
                ctx.forget(&key);
                return Ok(Action::await_change());
            }
        }
    } else {
        evaluate(obj.as_ref(), &ctx, &api, &ns, &name).await?
    };
    ctx.metrics
        .observe(key.clone(), start.elapsed().as_millis() as u64, &report);
    let phase = report.reason.phase();
    if phase == Phase::Stalled {
        ctx.metrics.failed(&report.reason.to_string());
    }
    ctx.announce(obj.as_ref(), &report).await;
    if let Some(whole) = &report.whole_plan {
        ctx.write_whole_plan(obj.as_ref(), lower_kind(K::KIND), whole)
            .await;
    }
    write_status(&ctx, obj.as_ref(), &api, &name, &report, object).await?;
    // what waits for this view or function learns at once that it is Ready, or failed
    if matches!(phase, Phase::InSync | Phase::Stalled) {
        match K::KIND {
            ObjectKindSpec::View => ctx.wake_dependents(&ns, super::Finished::View),
            ObjectKindSpec::Function => ctx.wake_dependents(&ns, super::Finished::Function),
            ObjectKindSpec::Volume => {}
        }
    }
    Ok(if phase == Phase::Progressing {
        ctx.backoff(&key)
    } else {
        ctx.settled(&key)
    })
}

/// The status a report makes (pure: `DeltaObjectStatus` from the previous one).
pub fn status_of(
    previous: Option<&DeltaObjectStatus>,
    generation: Option<i64>,
    r: &Report,
    object: Option<String>,
    requested_at: Option<String>,
    identity: &str,
    shard: Option<i64>,
) -> DeltaObjectStatus {
    let previous = previous.cloned().unwrap_or_default();
    DeltaObjectStatus {
        observed_generation: generation,
        conditions: conditions(
            r.reason,
            &r.message,
            r.drifted.as_deref(),
            generation,
            &previous.conditions,
            &now(),
        ),
        object: object.or(previous.object),
        plan: r.plan.clone(),
        last_applied: r.last_applied.clone().or(previous.last_applied),
        apply: r.apply.clone(),
        approval: r.approval.clone().or(previous.approval),
        last_handled_reconcile_at: requested_at,
        reconciled_by: Some(identity.to_string()),
        shard,
    }
}

async fn write_status<K: Kind>(
    ctx: &Context,
    obj: &K,
    api: &Api<K>,
    name: &str,
    r: &Report,
    object: Option<String>,
) -> Result<(), Error> {
    let status = status_of(
        obj.status(),
        obj.meta().generation,
        r,
        object,
        obj.annotations().get(REQUESTED_AT).cloned(),
        ctx.shards.identity(),
        ctx.shards.status_of(obj),
    );
    let patch = json!({"apiVersion": "delta-operator.io/v1alpha1", "kind": K::KIND.kind(), "status": status});
    api.patch_status(
        name,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(&patch),
    )
    .await?;
    Ok(())
}

/// Where an object is applied.
struct Resolved {
    desired: DesiredObject,
    target: String,
    backend: Arc<AnyBackend>,
    mode: SchemaMode,
}

/// The object's desired state, target and backend, or the report saying why not.
fn resolve<K: Kind>(obj: &K, ctx: &Context, ns: &str) -> Result<Resolved, Box<Report>> {
    let refuse = |reason: Reason, message: String| Box::new(Report::new(reason, message));
    let cached = ctx.cached(ns);
    let mut m = Manifests {
        schemas: cached
            .schemas()
            .into_iter()
            .map(|s| super::depends::cached(s.as_ref().clone()))
            .collect(),
        ..Manifests::default()
    };
    let name = obj.name_any();
    obj.clone().put(&mut m);
    let me = super::depends::cached(obj.clone());
    // an object applied before its schema waits, it is not stuck
    let Some(schema) = object_schema_of(&m, &me).cloned() else {
        return Err(refuse(
            Reason::SchemaNotFound,
            format!(
                "waiting for DeltaSchema '{}' in namespace {ns}: apply it, or set spec.schemaRef to one that exists",
                obj.schema_ref()
            ),
        ));
    };
    let label = me.label();
    let errors: Vec<String> = validate(&m)
        .into_iter()
        .chain(functions_the_lake_lacks(&m, |t| ctx.config.is_lake(t)))
        .filter(|e| e.resource.as_deref() == Some(label.as_str()))
        .map(|e| format!("{}: {} (fix: {})", e.path, e.message, e.fix))
        .collect();
    if !errors.is_empty() {
        return Err(refuse(Reason::InvalidSpec, errors.join("; ")));
    }
    let desired = match K::lower(&m, &name) {
        Some(Ok(d)) => d,
        Some(Err(e)) => {
            let text: Vec<String> = e.iter().map(ToString::to_string).collect();
            return Err(refuse(Reason::InvalidSpec, text.join("; ")));
        }
        None => {
            return Err(refuse(
                Reason::NotCached,
                "the resource is not in the operator's cache yet".into(),
            ));
        }
    };
    let target = schema
        .resource
        .spec
        .target
        .clone()
        .unwrap_or_else(|| ctx.config.default_target_name());
    let t = ctx
        .config
        .target(&target)
        .map_err(|e| refuse(Reason::UnknownTarget, e.to_string()))?;
    tenancy::check(&target, t, ns, &desired.object.schema_ref())
        .map_err(|m| refuse(Reason::Forbidden, m))?;
    let backend = ctx
        .backend(&target)
        .map_err(|(reason, message)| refuse(reason, message))?;
    let mode = lower_schema(&schema).mode.unwrap_or(t.default_schema_mode);
    Ok(Resolved {
        desired,
        target,
        backend,
        mode,
    })
}

/// What `me` reads (relations and functions, three-part names) that a resource of
/// the namespace declares and is not usable yet, as the reason and message it
/// waits with: a view or function over what its query or body names, a table
/// over the functions its column masks call (`table.rs`).
pub(crate) fn waiting<'a>(
    ctx: &Context,
    ns: &str,
    me: &TableRef,
    reads: &[TableRef],
    found: &'a Candidates,
) -> Option<(Reason, String)> {
    let (tables, views, functions) = (&found.tables, &found.views, &found.functions);
    let cached = ctx.cached(ns);
    let schema_of = |schema_ref: &str| cached.schema(schema_ref);
    let in_schema = |s: &DeltaSchema, n: &str| {
        let schema = s.spec.name.clone().unwrap_or_else(|| s.name_any());
        TableRef::new(&s.spec.catalog, &schema, n)
    };
    let mut declared: Vec<Declared<'a>> = Vec::new();
    for t in tables {
        if let Some(s) = schema_of(&t.spec.schema_ref) {
            let n = t.spec.name.clone().unwrap_or_else(|| t.name_any());
            let status = t.status.as_ref();
            declared.push(Declared {
                kind: "DeltaTable",
                name: t.name_any(),
                object: in_schema(&s, &n),
                conditions: status.map_or(&[][..], |s| &s.conditions[..]),
                applied: status.is_some_and(|s| s.last_applied.is_some()),
            });
        }
    }
    fn push_objects<'a, O: Kind>(
        out: &mut Vec<Declared<'a>>,
        objs: &'a [Arc<O>],
        place: &dyn Fn(&O) -> Option<TableRef>,
    ) {
        for o in objs {
            if let Some(object) = place(o) {
                let status = o.status();
                out.push(Declared {
                    kind: O::KIND.kind(),
                    name: o.name_any(),
                    object,
                    conditions: status.map_or(&[][..], |s| &s.conditions[..]),
                    applied: status.is_some_and(|s| s.last_applied.is_some()),
                });
            }
        }
    }
    let place_view =
        |o: &DeltaView| schema_of(o.schema_ref()).map(|s| in_schema(&s, &o.object_name()));
    let place_fn =
        |o: &DeltaFunction| schema_of(o.schema_ref()).map(|s| in_schema(&s, &o.object_name()));
    push_objects(&mut declared, views, &place_view);
    push_objects(&mut declared, functions, &place_fn);
    dependency::waiting_for(me, reads, &declared)
}

/// The namespace's resources an object's reads may name: the tables by the
/// comparison key of each name read, the views and functions of the namespace.
fn candidates(ctx: &Context, ns: &str, desired: &DesiredObject) -> Candidates {
    let cached = ctx.cached(ns);
    let mut tables = Vec::new();
    for r in &desired.reads.relations {
        for t in cached.tables_named(&comparison_key(&r.table)) {
            if !tables.iter().any(|x: &Arc<_>| Arc::ptr_eq(x, &t)) {
                tables.push(t);
            }
        }
    }
    let views = ctx
        .objects
        .views
        .state()
        .into_iter()
        .filter(|v| v.namespace().as_deref().unwrap_or("default") == ns)
        .collect();
    Candidates {
        tables,
        views,
        ..Candidates::functions(ctx, ns)
    }
}

/// The namespace's resources an object's reads may name.
pub(crate) struct Candidates {
    tables: Vec<Arc<delta_operator_api::spec::DeltaTable>>,
    views: Vec<Arc<DeltaView>>,
    functions: Vec<Arc<DeltaFunction>>,
}

impl Candidates {
    /// The namespace's DeltaFunctions only: what a table's column masks may call.
    pub(crate) fn functions(ctx: &Context, ns: &str) -> Candidates {
        let functions = ctx
            .objects
            .functions
            .state()
            .into_iter()
            .filter(|f| f.namespace().as_deref().unwrap_or("default") == ns)
            .collect();
        Candidates {
            tables: vec![],
            views: vec![],
            functions,
        }
    }
}

async fn set_finalizer<K: Kind>(api: &Api<K>, obj: &K, want: bool) -> Result<(), Error> {
    let has = obj.finalizers().iter().any(|f| f == OBJECT_FINALIZER);
    if has == want {
        return Ok(());
    }
    let mut finalizers: Vec<String> = obj
        .finalizers()
        .iter()
        .filter(|f| *f != OBJECT_FINALIZER)
        .cloned()
        .collect();
    if want {
        finalizers.push(OBJECT_FINALIZER.into());
    }
    let patch =
        json!({"metadata": {"finalizers": finalizers, "resourceVersion": obj.resource_version()}});
    api.patch(
        &obj.name_any(),
        &PatchParams::default(),
        &Patch::Merge(&patch),
    )
    .await?;
    Ok(())
}

fn policy_of(p: SpecPolicy) -> Policy {
    match p {
        SpecPolicy::Auto => Policy::Auto,
        SpecPolicy::Manual => Policy::Manual,
        SpecPolicy::Observe => Policy::Observe,
    }
}

/// What the resource says beside its plan: policy, annotations, previous status.
fn seen<'a, K: Kind>(obj: &'a K, ns: &'a str, name: &'a str, policy: Policy) -> Seen<'a> {
    let (approval, paused) = Seen::annotations(obj.annotations());
    let status = obj.status();
    Seen {
        kind: lower_kind(K::KIND),
        namespace: ns,
        name,
        policy,
        drift_policy: DriftPolicy::Report,
        approval,
        spent: status.and_then(|s| s.approval.as_ref()),
        paused,
        previous_plan: status.and_then(|s| s.plan.as_ref()).map(|p| p.id.as_str()),
        was_in_sync: status.and_then(|s| s.observed_generation) == obj.meta().generation
            && status.is_some_and(|s| s.last_applied.is_some()),
        context: None,
    }
}

async fn evaluate<K: Kind>(
    obj: &K,
    ctx: &Context,
    api: &Api<K>,
    ns: &str,
    name: &str,
) -> Result<(Report, Option<String>), Error> {
    let Resolved {
        desired,
        target,
        backend,
        ..
    } = match resolve(obj, ctx, ns) {
        Ok(r) => r,
        Err(r) => return Ok((*r, None)),
    };
    let object = Some(desired.object.to_string());
    set_finalizer(api, obj, obj.deletion_policy() == DeletionPolicy::Delete).await?;
    let found = candidates(ctx, ns, &desired);
    let reads: Vec<TableRef> = desired
        .reads
        .relations
        .iter()
        .chain(desired.reads.functions.iter())
        .cloned()
        .collect();
    let me = desired.object.as_table_ref();
    if let Some((reason, message)) = waiting(ctx, ns, &me, &reads, &found) {
        return Ok((Report::new(reason, message), object));
    }
    // on a target without a metastore (the lake, Spark Connect) the plan refuses the object
    // (`NotSupportedByBackend`, the core's rule, as the CLI's plan does) and `decide` reports it
    let inputs = Inputs {
        objects: vec![Arc::new(desired)],
        ..Inputs::default()
    };
    let read = || async {
        read_and_plan(backend.as_ref(), &inputs)
            .await
            .map(|(p, _)| p)
    };
    let plan: Plan = match read().await {
        Ok(p) => p,
        Err(e) => return Ok((decide::read_failed(&e), object)),
    };
    let seen = seen(obj, ns, name, policy_of(obj.policy()));
    let events = match decide::decide(&plan, &seen) {
        Next::Report(r) => return Ok((in_sync(r, K::KIND), object)),
        Next::Apply { events } => events,
    };
    ctx.publish_all(obj, &events).await;
    let end = ctx
        .run_apply(
            obj,
            &backend,
            &target,
            &plan,
            &seen,
            read,
            None,
            |_| async {},
        )
        .await?;
    let ApplyEnd::Finished { result, .. } = end else {
        return Ok((
            Report::new(
                Reason::Interrupted,
                "interrupted by a shutdown: the next operator plans again",
            ),
            object,
        ));
    };
    let r = applied(&plan, &seen, &result, &now(), None, Reason::ApplyFailed);
    Ok((in_sync(r, K::KIND), object))
}

/// "the view matches the spec" rather than the table's words.
fn in_sync(mut r: Report, kind: ObjectKindSpec) -> Report {
    if r.reason == Reason::InSync {
        r.message = format!("the {} matches the spec", kind.noun());
    }
    r
}

/// Whether deleting a resource of `kind` with `deletionPolicy: Delete` may drop
/// its object: a view always (after approval), a function or a volume only in
/// a strict schema (after approval), or `Err` with why it is kept.
pub fn may_drop(kind: ObjectKindSpec, mode: SchemaMode) -> Result<(), String> {
    match (kind, mode) {
        (ObjectKindSpec::View, _) | (_, SchemaMode::Strict) => Ok(()),
        (k, _) => Err(format!(
            "a {} is dropped only when its DeltaSchema is strict (mode: strict) and the drop is approved; this schema is additive",
            k.noun()
        )),
    }
}

/// A resource with our finalizer being deleted: the object is dropped through
/// the same executor as every apply, after the approval of that plan's id, and
/// only when `may_drop` allows it; `None` once the resource may go.
async fn delete<K: Kind>(
    obj: &K,
    ctx: &Context,
    api: &Api<K>,
    ns: &str,
    name: &str,
) -> Result<Option<(Report, Option<String>)>, Error> {
    if !obj.finalizers().iter().any(|f| f == OBJECT_FINALIZER) {
        return Ok(None);
    }
    let kept = |why: String| async move {
        ctx.publish(
            obj,
            EventType::Warning,
            "ObjectKept",
            format!(
                "deletionPolicy Delete: the {} is kept, not dropped: {why}",
                K::KIND.noun()
            ),
        )
        .await;
        set_finalizer(api, obj, false).await
    };
    let Resolved {
        desired,
        target,
        backend,
        mode,
    } = match resolve(obj, ctx, ns) {
        Ok(r) => r,
        Err(r) if matches!(r.reason, Reason::SchemaNotFound | Reason::Forbidden) => {
            kept(r.message).await?;
            return Ok(None);
        }
        Err(r) => {
            let message = format!(
                "deletionPolicy Delete: the {} is dropped once it can be; until then the resource stays (finalizer {OBJECT_FINALIZER}). {}",
                K::KIND.noun(),
                r.message
            );
            return Ok(Some((Report { message, ..*r }, None)));
        }
    };
    if let Err(why) = may_drop(K::KIND, mode) {
        kept(why).await?;
        return Ok(None);
    }
    let object = Some(desired.object.to_string());
    let read = || plan_drop(&backend, &desired, ns, name);
    let plan = match read().await {
        Ok(p) => p,
        Err(e) => return Ok(Some((decide::read_failed(&e), object))),
    };
    if !plan.has_changes() {
        set_finalizer(api, obj, false).await?;
        return Ok(None);
    }
    let seen = Seen {
        context: Some(format!("deletionPolicy Delete drops {}", desired.object)),
        was_in_sync: false,
        ..seen(obj, ns, name, Policy::Auto)
    };
    match decide::decide(&plan, &seen) {
        Next::Report(r) => return Ok(Some((r, object))),
        Next::Apply { events } => ctx.publish_all(obj, &events).await,
    }
    let end = ctx
        .run_apply(
            obj,
            &backend,
            &target,
            &plan,
            &seen,
            read,
            None,
            |_| async {},
        )
        .await?;
    let ApplyEnd::Finished { result, .. } = end else {
        return Ok(Some((
            Report::new(Reason::Interrupted, "interrupted by a shutdown"),
            object,
        )));
    };
    let done = (
        decide::EventReason::ObjectDropped,
        format!("dropped {} (plan {})", desired.object, plan.id),
    );
    let report = applied(
        &plan,
        &seen,
        &result,
        &now(),
        Some(done),
        Reason::DeleteFailed,
    );
    if report.reason != Reason::InSync {
        return Ok(Some((report, object)));
    }
    ctx.publish_all(obj, &report.events).await;
    set_finalizer(api, obj, false).await?;
    Ok(None)
}

/// The drop of the object, if it is live and its marker names this resource
/// (never another resource's, never an unmarked one): planned as a strict
/// orphan's drop (Destructive: it waits for the approval of this plan's id).
async fn plan_drop(
    backend: &AnyBackend,
    desired: &DesiredObject,
    ns: &str,
    name: &str,
) -> Result<Plan, delta_operator_backend::BackendError> {
    let caps = backend.capabilities();
    let live = if caps.catalog_objects {
        backend
            .read_objects(&[], std::slice::from_ref(&desired.object))
            .await?
    } else {
        vec![]
    };
    let marker = ResourceId::new(ns, name);
    let live: Vec<Arc<ObservedObject>> = live
        .into_iter()
        .filter(|o| o.object == desired.object && o.owner().as_ref() == Some(&marker))
        .map(|mut o| {
            parse_live(&mut o);
            Arc::new(o)
        })
        .collect();
    Ok(drop_plan(
        &desired.object,
        &live,
        ns,
        caps,
        backend.compiler(),
    ))
}

/// (pure) The plan dropping `object` from `live` (already filtered to this
/// resource's), as a strict schema drops an orphan.
pub fn drop_plan(
    object: &ObjectRef,
    live: &[Arc<ObservedObject>],
    ns: &str,
    caps: &Capabilities,
    compiler: &dyn Compiler,
) -> Plan {
    let scope = SchemaScope::new(object.schema_ref(), SchemaMode::Strict);
    let objects = plan_orphan_objects(&scope, live, ns, &BTreeSet::new());
    compile_all(
        caps.backend,
        Parts {
            objects,
            ..Parts::default()
        },
        compiler,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn functions_and_volumes_are_dropped_only_in_a_strict_schema() {
        assert!(may_drop(ObjectKindSpec::View, SchemaMode::Additive).is_ok());
        assert!(may_drop(ObjectKindSpec::Function, SchemaMode::Strict).is_ok());
        let e = may_drop(ObjectKindSpec::Function, SchemaMode::Additive).unwrap_err();
        assert!(e.contains("function") && e.contains("strict"), "{e}");
        assert!(may_drop(ObjectKindSpec::Volume, SchemaMode::Additive).is_err());
    }

    #[test]
    fn a_waiting_report_becomes_progressing_conditions_naming_the_dependency() {
        let r = Report::new(
            Reason::WaitingForDependency,
            "waiting for what it reads: DeltaTable 'orders' (main.sales.orders) is not Ready (Applying)",
        );
        let s = status_of(
            None,
            Some(2),
            &r,
            Some("main.sales.v".into()),
            None,
            "op-1",
            None,
        );
        assert_eq!(s.object.as_deref(), Some("main.sales.v"));
        assert_eq!(s.observed_generation, Some(2));
        let by = |t: &str| s.conditions.iter().find(|c| c.type_ == t).unwrap();
        assert_eq!(by("Ready").status, "False");
        assert_eq!(by("Reconciling").status, "True");
        assert_eq!(by("Reconciling").reason, "WaitingForDependency");
        assert!(by("Reconciling").message.contains("DeltaTable 'orders'"));
        assert_eq!(by("Stalled").status, "False");
    }

    #[test]
    fn in_sync_says_the_kind() {
        let r = in_sync(Report::new(Reason::InSync, "x"), ObjectKindSpec::Function);
        assert_eq!(r.message, "the function matches the spec");
        let r = in_sync(Report::new(Reason::Paused, "p"), ObjectKindSpec::View);
        assert_eq!(r.message, "p");
    }
}
