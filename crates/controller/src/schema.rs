//! The DeltaSchema reconcile: schema status, and the tables the operator made
//! whose DeltaTable is gone (orphans). Additive schemas list them; strict
//! schemas drop them after an approval on the DeltaSchema.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Instant;

use kube::api::{Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::{Api, ResourceExt};
use serde_json::json;

use super::conditions::conditions;
use super::decide::{self, EventReason, Next, Report, Seen, applied};
use super::table::now;
use super::{ApplyEnd, Context, Error, FIELD_MANAGER, REQUESTED_AT, tenancy};
use delta_operator_api::reason::{Phase, Reason};
use delta_operator_api::spec::DeltaSchema;
use delta_operator_api::spec::crd::DeltaSchemaStatus;
use delta_operator_api::spec::lower::lower_schema;
use delta_operator_api::spec::validate::validate;
use delta_operator_backend::engine::{observe_schemas, parse_live};
use delta_operator_backend::{Backend, BackendError, Extras};
use delta_operator_core::model::object::ObservedObject;
use delta_operator_core::model::{ResourceId, SchemaMode};
use delta_operator_core::plan::compile::compile_all;
use delta_operator_core::plan::gate::Policy;
use delta_operator_core::plan::object::plan_orphan_objects;
use delta_operator_core::plan::{
    Capabilities, Plan, SchemaScope, TableAction, plan_orphans, plan_schemas,
};
use delta_operator_targets::AnyBackend;

pub fn error_policy(obj: Arc<DeltaSchema>, err: &Error, ctx: Arc<Context>) -> Action {
    let ns = obj.namespace().unwrap_or_else(|| "default".into());
    let object = format!("{ns}/{}", obj.name_any());
    tracing::warn!(kind = "DeltaSchema", object = %object, error = %err, "schema reconcile failed; retrying");
    ctx.metrics.failed("Error");
    ctx.backoff(&format!("DeltaSchema/{object}"))
}

pub async fn reconcile(obj: Arc<DeltaSchema>, ctx: Arc<Context>) -> Result<Action, Error> {
    let start = Instant::now();
    let ns = obj.namespace().unwrap_or_else(|| "default".into());
    let name = obj.name_any();
    let api: Api<DeltaSchema> = Api::namespaced(ctx.client.clone(), &ns);
    let key = format!("DeltaSchema/{ns}/{name}");
    if obj.metadata.deletion_timestamp.is_some() {
        ctx.forget(&key);
        return Ok(Action::await_change());
    }
    // orphans are the tables no DeltaTable declares: decided only from a complete list of DeltaTables
    if !ctx.caches_synced() {
        return Ok(Action::requeue(super::CACHE_WAIT));
    }
    // another replica's shard: left alone (reconciled here again if this replica takes it)
    if let Some(action) = ctx.left_alone(obj.as_ref()) {
        ctx.forget(&key);
        return Ok(action);
    }
    let (report, orphans, schema, unmanaged) = evaluate(&obj, &ctx, &ns, &name).await?;
    ctx.metrics
        .observe(key.clone(), start.elapsed().as_millis() as u64, &report);
    if report.reason.phase() == Phase::Stalled {
        ctx.metrics.failed(&report.reason.to_string());
    }
    ctx.announce(obj.as_ref(), &report).await;
    if let Some(whole) = &report.whole_plan {
        ctx.write_whole_plan(obj.as_ref(), "deltaschema", whole)
            .await;
    }
    let previous = obj.status.clone().unwrap_or_default();
    let generation = obj.metadata.generation;
    let status = DeltaSchemaStatus {
        observed_generation: generation,
        conditions: conditions(
            report.reason,
            &report.message,
            report.drifted.as_deref(),
            generation,
            &previous.conditions,
            &now(),
        ),
        schema: schema.or(previous.schema),
        orphans,
        unmanaged_count: unmanaged
            .as_ref()
            .map(|u| i64::try_from(u.len()).unwrap_or(i64::MAX))
            .or(previous.unmanaged_count),
        unmanaged: unmanaged
            .map(|u| u.into_iter().take(UNMANAGED_LISTED).collect())
            .unwrap_or(previous.unmanaged),
        plan: report.plan.clone(),
        last_applied: report.last_applied.clone().or(previous.last_applied),
        approval: report.approval.clone().or(previous.approval),
        last_handled_reconcile_at: obj.annotations().get(REQUESTED_AT).cloned(),
        reconciled_by: Some(ctx.shards.identity().to_string()),
        shard: ctx.shards.status_of(obj.as_ref()),
    };
    let patch = json!({"apiVersion": "delta-operator.io/v1alpha1", "kind": "DeltaSchema", "status": status});
    api.patch_status(
        &name,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(&patch),
    )
    .await?;
    Ok(if report.reason.phase() == Phase::Progressing {
        ctx.backoff(&key)
    } else {
        ctx.settled(&key)
    })
}

/// How many unmanaged tables the status names.
const UNMANAGED_LISTED: usize = 100;

/// The orphans a plan lists (dropped or kept): tables, then views, functions
/// and volumes (`VIEW main.sales.v`).
fn orphan_names(plan: &Plan) -> Vec<String> {
    let orphan = |a: &TableAction| matches!(a, TableAction::Destroy | TableAction::Keep);
    plan.tables
        .iter()
        .filter(|t| orphan(&t.action))
        .map(|t| t.table.to_string())
        .chain(
            plan.objects
                .iter()
                .filter(|o| orphan(&o.action))
                .map(|o| format!("{} {}", o.object.kind, o.object)),
        )
        .collect()
}

/// What one schema reconcile found: the report, the orphans to list, the
/// schema's name, and its unmanaged tables (`None`: not read this time).
type Evaluated = (Report, Vec<String>, Option<String>, Option<Vec<String>>);

/// The schema's report, the orphans to list, the schema's name and its unmanaged tables.
async fn evaluate(
    obj: &DeltaSchema,
    ctx: &Context,
    ns: &str,
    name: &str,
) -> Result<Evaluated, Error> {
    let Resolved {
        target,
        scope,
        backend,
    } = match resolve(ctx, ns, name) {
        Ok(r) => r,
        Err((reason, message)) => return Ok((Report::new(reason, message), vec![], None, None)),
    };
    let schema = Some(scope.schema.to_string());
    let caps = backend.capabilities().clone();
    // a marker names `namespace/name` without a kind: any resource of that name keeps its objects
    let existing: BTreeSet<ResourceId> = ctx
        .table_markers(ns)
        .into_iter()
        .chain(ctx.object_markers(ns))
        .collect();
    let read = || plan_schema(&backend, &scope, ns, &existing, &caps);
    // views and other non-Delta objects beside the tables: listed too, never touched
    let views = match backend.list_views(&scope.schema).await {
        Ok(v) => v,
        Err(e) => return Ok((decide::read_failed(&e), vec![], None, None)),
    };
    let plan = match read().await {
        Ok(p) => p,
        Err(e) => return Ok((decide::read_failed(&e), vec![], None, None)),
    };
    let names = orphan_names(&plan);
    let unmanaged = Some(unmanaged_names(&plan, &views, &scope));
    let seen = schema_seen(obj, ns, name, &names);
    let in_sync = |mut r: Report| {
        if r.reason == Reason::InSync {
            r.message = "the schema matches the spec".into();
        }
        r
    };
    // additive orphans have no steps: what applies is the metadata and strict orphans' drops
    let events = match decide::decide(&plan, &seen) {
        Next::Report(r) => return Ok((in_sync(r), names, schema, unmanaged)),
        Next::Apply { events } => events,
    };
    ctx.publish_all(obj, &events).await;
    // a schema's steps are metadata and orphan drops: short, so their progress is the events
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
            names,
            schema,
            unmanaged,
        ));
    };
    let drops = scope.mode == SchemaMode::Strict && !names.is_empty();
    let done = drops.then(|| {
        (
            EventReason::OrphansDropped,
            format!("dropped {} (plan {})", names.join(", "), plan.id),
        )
    });
    let r = in_sync(applied(
        &plan,
        &seen,
        &result,
        &now(),
        done,
        Reason::ApplyFailed,
    ));
    let orphans = if r.reason == Reason::InSync && drops {
        vec![]
    } else {
        names
    };
    Ok((r, orphans, schema, unmanaged))
}

/// Where a schema is applied: its target's name, its scope and the backend.
struct Resolved {
    target: String,
    scope: SchemaScope,
    backend: Arc<AnyBackend>,
}

/// The schema's spec checked and lowered, its target allowed and open; or the
/// reason and message of the report that stops the reconcile there.
fn resolve(ctx: &Context, ns: &str, name: &str) -> Result<Resolved, (Reason, String)> {
    let m = ctx.schema_manifests(ns, name);
    // another namespace's schema of the same name may be there too (a lookalike's)
    let Some(me) = m
        .schemas
        .iter()
        .find(|s| s.name() == name && s.namespace() == ns)
    else {
        return Err((
            Reason::NotCached,
            "the resource is not in the operator's cache yet".into(),
        ));
    };
    let label = me.label();
    let errors: Vec<String> = validate(&m)
        .into_iter()
        .filter(|e| e.resource.as_deref() == Some(label.as_str()))
        .map(|e| format!("{}: {} (fix: {})", e.path, e.message, e.fix))
        .collect();
    if !errors.is_empty() {
        return Err((Reason::InvalidSpec, errors.join("; ")));
    }
    let desired = lower_schema(me);
    let target = desired
        .target
        .clone()
        .unwrap_or_else(|| ctx.config.default_target_name());
    let t = ctx
        .config
        .target(&target)
        .map_err(|e| (Reason::UnknownTarget, e.to_string()))?;
    tenancy::check(&target, t, ns, &desired.schema).map_err(|msg| (Reason::Forbidden, msg))?;
    let backend = ctx.backend(&target)?;
    let scope = SchemaScope {
        schema: desired.schema.clone(),
        mode: desired.mode.unwrap_or(t.default_schema_mode),
        meta: desired.meta.clone(),
    };
    Ok(Resolved {
        target,
        scope,
        backend,
    })
}

/// The schema's plan from every live table of the schema: the core decides what
/// an orphan is, and plans the schema's own metadata. `existing` holds the
/// markers of the DeltaTables in the namespace.
async fn plan_schema(
    backend: &AnyBackend,
    scope: &SchemaScope,
    ns: &str,
    existing: &BTreeSet<ResourceId>,
    caps: &Capabilities,
) -> Result<Plan, BackendError> {
    let refs = backend.list_schema(&scope.schema).await?;
    // orphans are told by their owner marker: no tags or grants needed
    let live: Vec<_> = backend
        .read(&refs, &Extras::none())
        .await?
        .into_iter()
        .flatten()
        .collect();
    let schemas = observe_schemas(backend, std::slice::from_ref(scope)).await?;
    let orphans = plan_orphans(scope, &live, ns, existing, caps);
    // the schema's views, functions and volumes whose resource is gone: listed, or dropped (strict)
    let objects = if caps.catalog_objects {
        backend
            .read_objects(std::slice::from_ref(&scope.schema), &[])
            .await?
    } else {
        vec![]
    };
    let objects: Vec<Arc<ObservedObject>> = objects
        .into_iter()
        .map(|mut o| {
            parse_live(&mut o);
            Arc::new(o)
        })
        .collect();
    let mut parts = orphans
        .with_schemas(
            plan_schemas(std::slice::from_ref(scope), &schemas, caps),
            caps,
        )
        .into_parts();
    parts.objects = plan_orphan_objects(scope, &objects, ns, existing);
    let mut plan = compile_all(caps.backend, parts, backend.compiler());
    // listed, never touched (not part of the plan's id)
    plan.unmanaged = live
        .iter()
        .filter(|o| o.owner_marker().is_none())
        .map(|o| o.table.clone())
        .collect();
    plan.unmanaged.sort();
    Ok(plan)
}

/// The tables without an owner marker and the views beside them, as status lists them.
fn unmanaged_names(plan: &Plan, views: &[(String, String)], scope: &SchemaScope) -> Vec<String> {
    plan.unmanaged
        .iter()
        .map(ToString::to_string)
        .chain(
            views
                .iter()
                .map(|(v, kind)| format!("{}.{v} ({kind})", scope.schema)),
        )
        .collect()
}

/// What `decide` is told of a DeltaSchema: its annotations and previous status;
/// `names` the orphans a strict schema drops.
fn schema_seen<'a>(obj: &'a DeltaSchema, ns: &'a str, name: &'a str, names: &[String]) -> Seen<'a> {
    let (approval, paused) = Seen::annotations(obj.annotations());
    Seen {
        kind: "deltaschema",
        namespace: ns,
        name,
        policy: Policy::Auto,
        drift_policy: obj.spec.drift_policy.unwrap_or_default(),
        approval,
        spent: obj.status.as_ref().and_then(|s| s.approval.as_ref()),
        paused,
        previous_plan: obj
            .status
            .as_ref()
            .and_then(|s| s.plan.as_ref())
            .map(|p| p.id.as_str()),
        was_in_sync: false,
        context: (!names.is_empty())
            .then(|| format!("strict mode drops the orphans {}", names.join(", "))),
    }
}
