//! The DeltaTable reconcile.

use std::sync::Arc;
use std::time::{Duration, Instant};

use kube::api::{Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::{Api, ResourceExt};
use serde_json::json;

use super::conditions::conditions;
use super::decide::{self, Next, Report, Seen, applied};
use super::maintenance;
use super::metrics::MaintenanceKind;
use super::{
    Applied, ApplyEnd, ApplyProgress, CACHE_WAIT, Context, Error, FIELD_MANAGER, FINALIZER,
    REQUESTED_AT, depends, object, parents, tenancy,
};
use delta_operator_api::inputs::Inputs;
use delta_operator_api::reason::{Phase, Reason};
use delta_operator_api::spec::DeltaTable;
use delta_operator_api::spec::crd::{
    ApplyStatus, DeletionPolicy, DeltaTableStatus, DriftPolicy, LastApplied, Policy as SpecPolicy,
};
use delta_operator_api::spec::lower::{lower_table, schema_of};
use delta_operator_api::spec::validate::validate;
use delta_operator_backend::engine::read_and_plan;
use delta_operator_backend::{Backend, BackendError, Extras};
use delta_operator_core::model::{DesiredTable, ResourceId, TableRef};
use delta_operator_core::plan::compile::compile;
use delta_operator_core::plan::gate::Policy;
use delta_operator_core::plan::graph::resolve_function;
use delta_operator_core::plan::{Plan, finish, plan_delete};
use delta_operator_targets::AnyBackend;

pub fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

pub async fn reconcile(obj: Arc<DeltaTable>, ctx: Arc<Context>) -> Result<Action, Error> {
    let start = Instant::now();
    let ns = obj.namespace().unwrap_or_else(|| "default".into());
    let name = obj.name_any();
    let api: Api<DeltaTable> = Api::namespaced(ctx.client.clone(), &ns);
    let key = format!("DeltaTable/{ns}/{name}");
    // decide nothing from a half-filled cache (a schema or a parent not listed yet)
    if !ctx.caches_synced() {
        return Ok(Action::requeue(CACHE_WAIT));
    }
    // another replica's shard: left alone (reconciled here again if this replica takes it)
    if let Some(action) = ctx.left_alone(obj.as_ref()) {
        ctx.forget(&key);
        return Ok(action);
    }
    let mut upkeep = Upkeep::default();
    let (report, table) = if obj.metadata.deletion_timestamp.is_some() {
        match delete(&obj, &ctx, &api, &ns, &name).await? {
            Some(r) => r,
            None => {
                ctx.forget(&key);
                return Ok(Action::await_change());
            }
        }
    } else {
        evaluate(&obj, &ctx, &api, &ns, &name, &mut upkeep).await?
    };
    upkeep.tell(&ctx, &key);
    ctx.metrics
        .observe(key.clone(), start.elapsed().as_millis() as u64, &report);
    if report.reason.phase() == Phase::Stalled {
        ctx.metrics.failed(&report.reason.to_string());
    }
    let phase = report.reason.phase();
    ctx.announce(obj.as_ref(), &report).await;
    if let Some(whole) = &report.whole_plan {
        ctx.write_whole_plan(obj.as_ref(), "deltatable", whole)
            .await;
    }
    let (apply, report) = keep_or_end_apply(&obj, report, phase);
    write_status(&ctx, &obj, &api, &name, &report, table, apply).await?;
    // children waiting on this table learn at once that it is Ready, or failed
    if matches!(phase, Phase::InSync | Phase::Stalled) {
        ctx.wake_children(&obj);
        ctx.wake_dependents(&ns, super::Finished::Table);
    }
    Ok(if phase == Phase::Progressing {
        ctx.backoff(&key)
    } else {
        // a maintenance schedule due before the drift pass is run when it comes due
        ctx.settled_until(&key, upkeep.next_due_ms, upkeep.now_ms)
    })
}

/// What a reconcile found of the table's maintenance: the steps its plan held,
/// those that ran, and when the next schedule comes due.
#[derive(Debug, Default)]
struct Upkeep {
    /// A plan was read (else nothing below is known, and the gauge is left as it was).
    read: bool,
    now_ms: i64,
    planned: Vec<(MaintenanceKind, Duration)>,
    ran: Vec<maintenance::Ran>,
    next_due_ms: Option<i64>,
}

impl Upkeep {
    /// Into the metrics: each run by kind and outcome; whether what is due has
    /// waited too long (planned and not run: awaiting approval, Observe, paused, failing).
    fn tell(&self, ctx: &Context, key: &str) {
        for r in &self.ran {
            ctx.metrics.maintenance_ran(r.kind, r.outcome);
        }
        if self.read {
            let overdue = ctx
                .maintenance
                .observe(key, &self.planned, &self.ran, self.now_ms);
            ctx.metrics.set_maintenance_overdue(key, overdue);
        }
    }
}

/// What status.apply holds after a reconcile: the report's (an apply cut short
/// now); else an earlier one while the resource is still on its way (a retry
/// will resume it); else none, its restore points moved into lastApplied.
fn keep_or_end_apply(
    obj: &DeltaTable,
    mut report: Report,
    phase: Phase,
) -> (Option<ApplyStatus>, Report) {
    if report.apply.is_some() {
        return (report.apply.clone(), report);
    }
    let earlier = obj.status.as_ref().and_then(|s| s.apply.clone());
    match earlier {
        Some(e) if phase == Phase::Progressing => (Some(e), report),
        Some(e) => {
            let previous = obj.status.as_ref().and_then(|s| s.last_applied.clone());
            let last: Option<LastApplied> = report.last_applied.take().or(previous);
            report.last_applied = Some(decide::keep_restore_points(last, &e, &now()));
            (None, report)
        }
        None => (None, report),
    }
}

fn desired_name(table: &Option<String>) -> String {
    table.clone().unwrap_or_else(|| "the table".into())
}

/// The reason the Ready condition gives.
fn reason_of(obj: &DeltaTable) -> Option<String> {
    obj.status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == super::conditions::READY)
        .map(|c| c.reason.clone())
}

/// A failed reconcile (the API server refused a write, a conflict) is retried with backoff.
pub fn error_policy(obj: Arc<DeltaTable>, err: &Error, ctx: Arc<Context>) -> Action {
    let ns = obj.namespace().unwrap_or_else(|| "default".into());
    let object = format!("{ns}/{}", obj.name_any());
    tracing::warn!(kind = "DeltaTable", object = %object, error = %err, "reconcile failed; retrying");
    ctx.metrics.failed("Error");
    ctx.backoff(&format!("DeltaTable/{object}"))
}

async fn write_status(
    ctx: &Context,
    obj: &DeltaTable,
    api: &Api<DeltaTable>,
    name: &str,
    r: &Report,
    table: Option<String>,
    apply: Option<ApplyStatus>,
) -> Result<(), Error> {
    let previous = obj.status.clone().unwrap_or_default();
    let generation = obj.metadata.generation;
    let status = DeltaTableStatus {
        observed_generation: generation,
        conditions: conditions(
            r.reason,
            &r.message,
            r.drifted.as_deref(),
            generation,
            &previous.conditions,
            &now(),
        ),
        table: table.or(previous.table),
        plan: r.plan.clone(),
        last_applied: r.last_applied.clone().or(previous.last_applied),
        apply,
        approval: r.approval.clone().or(previous.approval),
        maintenance: r.maintenance.clone().or(previous.maintenance),
        last_handled_reconcile_at: obj.annotations().get(REQUESTED_AT).cloned(),
        reconciled_by: Some(ctx.shards.identity().to_string()),
        shard: ctx.shards.status_of(obj),
    };
    let patch =
        json!({"apiVersion": "delta-operator.io/v1alpha1", "kind": "DeltaTable", "status": status});
    api.patch_status(
        name,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(&patch),
    )
    .await?;
    Ok(())
}

/// Reads and plans; while the read waits for something that takes long (a stopped
/// warehouse starting), status says so (Reconciling, reason WarehouseStarting).
async fn read_telling_waits(
    ctx: &Context,
    obj: &DeltaTable,
    api: &Api<DeltaTable>,
    name: &str,
    backend: &Arc<AnyBackend>,
    inputs: &Inputs,
) -> Result<Plan, BackendError> {
    let read = read_and_plan(backend.as_ref(), inputs);
    tokio::pin!(read);
    let mut told = false;
    loop {
        tokio::select! {
            r = &mut read => return r.map(|(p, _)| p),
            _ = tokio::time::sleep(Duration::from_millis(500)), if !told => {
                if let Some(what) = backend.waiting_for() {
                    told = true;
                    let waiting = Report::new(Reason::WarehouseStarting, what);
                    let apply = obj.status.as_ref().and_then(|s| s.apply.clone());
                    if let Err(e) = write_status(ctx, obj, api, name, &waiting, None, apply).await {
                        tracing::warn!(error = %e, "could not write the WarehouseStarting status");
                    }
                }
            }
        }
    }
}

/// Resolves a table's desired state, target and backend, or says why not.
fn resolve(obj: &DeltaTable, ctx: &Context, ns: &str) -> Result<Resolved, Box<Report>> {
    let refuse = |reason: Reason, message: String| Box::new(Report::new(reason, message));
    let deps = ctx.table_dependencies(ns, obj);
    let m = depends::with_table(&deps, depends::cached(obj.clone()));
    let Some(me) = m.tables.iter().find(|t| t.name() == obj.name_any()) else {
        return Err(refuse(
            Reason::NotCached,
            "the resource is not in the operator's cache yet".into(),
        ));
    };
    // a table applied before its schema (kubectl apply -f dir/ sorts by file name) waits, it is not stuck
    let Some(schema) = schema_of(&m, me) else {
        let mut there: Vec<String> = m.schemas.iter().map(|s| s.name()).collect();
        there.sort_unstable();
        let there = match there.len() {
            0 => format!("there is none in {ns} yet"),
            n if n <= 5 => format!("those in {ns}: {}", there.join(", ")),
            n => format!("those in {ns}: {}, … ({n})", there[..5].join(", ")),
        };
        return Err(refuse(
            Reason::SchemaNotFound,
            format!(
                "waiting for DeltaSchema '{}' in namespace {ns}: apply it, or set spec.schemaRef to one that exists ({there})",
                obj.spec.schema_ref
            ),
        ));
    };
    // so does one applied before the tables it references by foreign key
    if obj.metadata.deletion_timestamp.is_none()
        && let Some((reason, message)) = parents::check(obj, &deps.parents).reason()
    {
        return Err(refuse(reason, message));
    }
    let label = me.label();
    // and what the lake cannot run, as `validate`, `plan` and admission refuse it
    let lake =
        delta_operator_api::spec::validate::functions_the_lake_lacks(&m, |t| ctx.config.is_lake(t));
    let errors: Vec<String> = validate(&m)
        .into_iter()
        .chain(lake)
        .filter(|e| e.resource.as_deref() == Some(label.as_str()))
        .map(|e| format!("{}: {} (fix: {})", e.path, e.message, e.fix))
        .collect();
    if !errors.is_empty() {
        return Err(refuse(Reason::InvalidSpec, errors.join("; ")));
    }
    let mut desired = lower_table(&m, me).map_err(|e| {
        refuse(
            Reason::InvalidSpec,
            e.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; "),
        )
    })?;
    // and one whose column masks call a declared function that is not Ready yet
    // (Databricks refuses a mask naming a missing function: ROUTINE_NOT_FOUND)
    if obj.metadata.deletion_timestamp.is_none() {
        let calls: Vec<TableRef> = desired
            .columns
            .iter()
            .filter_map(|c| c.mask.as_ref())
            .filter_map(|m| resolve_function(&m.function, &desired.table))
            .collect();
        if !calls.is_empty() {
            let found = object::Candidates::functions(ctx, ns);
            if let Some((reason, message)) =
                object::waiting(ctx, ns, &desired.table, &calls, &found)
            {
                return Err(refuse(reason, message));
            }
        }
    }
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
    tenancy::check(&target, t, ns, &desired.table.schema_ref())
        .map_err(|m| refuse(Reason::Forbidden, m))?;
    // what the target hands off: refused when the spec declares it, never planned
    if let Some(h) = &t.hand_off {
        let declared = delta_operator_api::spec::validate::declared_hand_offs(
            &obj.spec,
            h,
            &format!("the target '{target}'"),
        );
        if !declared.is_empty() {
            let errors: Vec<String> = declared
                .iter()
                .map(|e| format!("{}: {} (fix: {})", e.path, e.message, e.fix))
                .collect();
            return Err(refuse(Reason::InvalidSpec, errors.join("; ")));
        }
        desired.hand_off.merge(&h.lower());
    }
    // the target's maintenance, lowest, under the schema's and the table's own
    if t.maintenance.is_some() {
        desired.maintenance = delta_operator_api::spec::lower::maintenance_with_target(
            &m,
            me,
            t.maintenance.as_ref(),
        );
    }
    let backend = ctx
        .backend(&target)
        .map_err(|(reason, message)| refuse(reason, message))?;
    Ok(Resolved {
        desired,
        target,
        backend,
        drift_policy: DriftPolicy::resolve(
            obj.spec.drift_policy,
            schema.resource.spec.drift_policy,
        ),
    })
}

/// Where a table is applied, and how its drift counts.
struct Resolved {
    desired: DesiredTable,
    target: String,
    backend: Arc<AnyBackend>,
    /// Its own `driftPolicy`, else its DeltaSchema's.
    drift_policy: DriftPolicy,
}

async fn set_finalizer(api: &Api<DeltaTable>, obj: &DeltaTable, want: bool) -> Result<(), Error> {
    let has = obj.finalizers().iter().any(|f| f == FINALIZER);
    if has == want {
        return Ok(());
    }
    let mut finalizers: Vec<String> = obj
        .finalizers()
        .iter()
        .filter(|f| *f != FINALIZER)
        .cloned()
        .collect();
    if want {
        finalizers.push(FINALIZER.into());
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

/// What the resource says beside its plan: policy, annotations, previous status.
fn seen<'a>(
    obj: &'a DeltaTable,
    ns: &'a str,
    name: &'a str,
    policy: Policy,
    drift_policy: DriftPolicy,
) -> Seen<'a> {
    let (approval, paused) = Seen::annotations(obj.annotations());
    let status = obj.status.as_ref();
    let was_drifted = status.is_some_and(|s| {
        s.conditions
            .iter()
            .any(|c| c.type_ == super::conditions::DRIFTED && c.status == "True")
    });
    Seen {
        kind: "deltatable",
        namespace: ns,
        name,
        policy,
        drift_policy,
        approval,
        spent: status.and_then(|s| s.approval.as_ref()),
        paused,
        previous_plan: status.and_then(|s| s.plan.as_ref()).map(|p| p.id.as_str()),
        // drift after the table was in sync with this generation is not a spec change
        was_in_sync: !was_drifted
            && status.and_then(|s| s.observed_generation) == obj.metadata.generation
            && status.is_some_and(|s| s.last_applied.is_some()),
        context: None,
    }
}

async fn evaluate(
    obj: &DeltaTable,
    ctx: &Context,
    api: &Api<DeltaTable>,
    ns: &str,
    name: &str,
    upkeep: &mut Upkeep,
) -> Result<(Report, Option<String>), Error> {
    let Resolved {
        desired,
        target,
        backend,
        drift_policy,
    } = match resolve(obj, ctx, ns) {
        Ok(x) => x,
        Err(r) => return Ok((*r, None)),
    };
    let (mut report, table) = evaluate_resolved(
        obj,
        ctx,
        api,
        ns,
        name,
        desired,
        target,
        &backend,
        drift_policy,
        upkeep,
    )
    .await?;
    check_undo_windows(obj, &mut report, backend.as_ref()).await;
    Ok((report, table))
}

/// The windows of lastApplied's restore points (the one this reconcile
/// recorded, else the one in status), read again when due (`decide::windows`).
/// A history that cannot be read leaves the windows as they were.
async fn check_undo_windows(obj: &DeltaTable, report: &mut Report, backend: &AnyBackend) {
    let Some(last) = report
        .last_applied
        .clone()
        .or_else(|| obj.status.as_ref().and_then(|s| s.last_applied.clone()))
    else {
        return;
    };
    let now_ms = chrono::Utc::now().timestamp_millis();
    let due = decide::windows::due(&last, now_ms);
    if due.is_empty() {
        return;
    }
    let mut read = Vec::with_capacity(due.len());
    for t in due {
        match backend.history(&t).await {
            Ok(h) => read.push((t, h)),
            Err(e) => {
                tracing::debug!(table = %t, error = %e, "the history for the undo windows could not be read")
            }
        }
    }
    if read.is_empty() {
        return;
    }
    let undo_windows = decide::windows::windows(&last, &read, now_ms);
    report.last_applied = Some(LastApplied {
        undo_windows,
        ..last
    });
}

#[allow(clippy::too_many_arguments)]
async fn evaluate_resolved(
    obj: &DeltaTable,
    ctx: &Context,
    api: &Api<DeltaTable>,
    ns: &str,
    name: &str,
    desired: DesiredTable,
    target: String,
    backend: &Arc<AnyBackend>,
    drift_policy: DriftPolicy,
    upkeep: &mut Upkeep,
) -> Result<(Report, Option<String>), Error> {
    let backend = backend.clone();
    set_finalizer(api, obj, obj.spec.deletion_policy == DeletionPolicy::Delete).await?;
    let table = Some(desired.table.to_string());
    let status = obj.status.as_ref();
    let mut earlier = status.and_then(|s| s.apply.clone());
    if let Some(at) = earlier.clone() {
        let reason = reason_of(obj);
        if reason == Some(Reason::Applying.to_string()) {
            // an apply a process that ended left behind (status still says Applying): say
            // so first; the same step ending the process again and again stalls it
            let cut = decide::process_ended(&at, ctx.max_step_interruptions, name);
            if cut.reason == Reason::CrashLoop {
                return Ok((cut, table));
            }
            ctx.announce(obj, &cut).await;
            if let Err(e) =
                write_status(ctx, obj, api, name, &cut, table.clone(), cut.apply.clone()).await
            {
                tracing::warn!(error = %e, "could not write the Interrupted status");
            }
            earlier = cut.apply;
        } else if reason == Some(Reason::CrashLoop.to_string()) {
            let retry = decide::retry_requested(
                obj.annotations().get(REQUESTED_AT).map(String::as_str),
                status.and_then(|s| s.last_handled_reconcile_at.as_deref()),
                obj.metadata.generation,
                status.and_then(|s| s.observed_generation),
            );
            if !retry {
                return Ok((decide::crash_loop(&at, name), table));
            }
            // asked to try again: the step gets a fresh count of interruptions
            earlier = Some(ApplyStatus {
                interruptions: 0,
                ..at
            });
        }
    }
    // a schema not created yet is its DeltaSchema's to create: the table waits for it
    // (retried with backoff), rather than being read in a schema that is not there
    let schema = desired.table.schema_ref();
    match backend.schema_exists(&schema).await {
        Ok(true) => {}
        Ok(false) => {
            let message = format!(
                "waiting for schema {schema} to be created by DeltaSchema '{}' (while it is not Ready, its status says why)",
                obj.spec.schema_ref
            );
            return Ok((Report::new(Reason::SchemaNotFound, message), table));
        }
        Err(e) => return Ok((decide::read_failed(&e), table)),
    }
    // the clock maintenance schedules are measured against, fixed for this reconcile
    let now_ms = chrono::Utc::now().timestamp_millis();
    let inputs = Inputs {
        tables: vec![desired.into()],
        ..Inputs::default()
    }
    .at(now_ms);
    // before the read: a statement that ends between a read and this check would leave
    // the plan made of the table as it was before the statement wrote
    // statements an interrupted apply left may still change the table: wait for each to end
    if let Some(at) = &earlier {
        for statement in &at.statements {
            let state = match backend.still_running(statement).await {
                Ok(None) => continue,
                Ok(Some(state)) => state,
                Err(e) => format!("of unknown state ({e})"),
            };
            let report = decide::still_running(at, statement, &state, &desired_name(&table));
            return Ok((report, table));
        }
    }
    let plan = match read_telling_waits(ctx, obj, api, name, &backend, &inputs).await {
        Ok(p) => p,
        Err(e) => return Ok((decide::read_failed(&e), table)),
    };
    *upkeep = Upkeep {
        read: true,
        now_ms,
        planned: maintenance::planned(&plan),
        ran: vec![],
        next_due_ms: maintenance::plan_next_due_ms(&plan, now_ms, &[]),
    };
    let policy = match obj.spec.policy {
        SpecPolicy::Auto => Policy::Auto,
        SpecPolicy::Manual => Policy::Manual,
        SpecPolicy::Observe => Policy::Observe,
    };
    let seen = seen(obj, ns, name, policy, drift_policy);
    let mut events = match decide::decide(&plan, &seen) {
        Next::Report(r) => return Ok((r, table)),
        Next::Apply { events } => events,
    };
    if let Some(e) = &earlier {
        events.push(decide::Note {
            warning: false,
            reason: decide::EventReason::ApplyResumed,
            message: format!(
                "resuming the apply of plan {} cut short at step {}/{}: planned again as {}",
                e.plan_id, e.step, e.of, plan.id
            ),
        });
    }
    ctx.publish_all(obj, &events).await;
    let read = || async {
        read_and_plan(backend.as_ref(), &inputs)
            .await
            .map(|(p, _)| p)
    };
    let drifted = crate::maintenance::spec_drift(&plan).then(|| plan.summary.short());
    let (result, last) = match apply_showing(
        obj,
        ctx,
        api,
        &table,
        &backend,
        &target,
        &plan,
        &seen,
        read,
        drifted,
        earlier.as_ref(),
    )
    .await?
    {
        Ok(ran) => ran,
        Err(left) => return Ok((left, table)),
    };
    if let Ok((ran_plan, ran_report)) = &result {
        upkeep.ran = maintenance::ran(ran_plan, ran_report);
        upkeep.next_due_ms = maintenance::plan_next_due_ms(&plan, now_ms, &upkeep.ran);
    }
    let mut report = applied(&plan, &seen, &result, &now(), None, Reason::ApplyFailed);
    report.maintenance = maintenance::status_after(
        status.and_then(|s| s.maintenance.clone()),
        &upkeep.ran,
        plan.id.as_str(),
        &now(),
    );
    report.events.extend(
        upkeep
            .ran
            .iter()
            .map(|r| decide::maintenance_note(r, plan.id.as_str())),
    );
    let unknown = decide::still_running_steps(&result);
    if !unknown.is_empty() {
        // not failed: a statement whose state could not be read may still change the table
        report = Report {
            approval: report.approval.take(),
            ..decide::abandoned(last.status(), unknown)
        };
    } else if ctx.shutting_down.load(std::sync::atomic::Ordering::SeqCst) {
        report = decide::interrupted(report, last.status());
    }
    Ok((report, table))
}

/// A DeltaTable with `deletionPolicy: Delete` being deleted whose table cannot be
/// resolved now. While what is missing can come back (the target, the cache,
/// a valid spec, the operator config), the finalizer stays and status says what
/// the drop waits for. Only when nothing of ours can be at stake is the resource
/// let go with the table kept, said in a Warning event: its DeltaSchema is gone
/// (so is the way to its target), or the target's tenancy never allowed it.
async fn deletion_blocked(
    obj: &DeltaTable,
    ctx: &Context,
    api: &Api<DeltaTable>,
    r: Report,
) -> Result<Option<(Report, Option<String>)>, Error> {
    if matches!(r.reason, Reason::SchemaNotFound | Reason::Forbidden) {
        let why = format!(
            "deletionPolicy Delete: the table is kept, not dropped: {}",
            r.message
        );
        ctx.publish(
            obj,
            kube::runtime::events::EventType::Warning,
            "TableKept",
            why,
        )
        .await;
        set_finalizer(api, obj, false).await?;
        return Ok(None);
    }
    let message = format!(
        "deletionPolicy Delete: the table is dropped once it can be; until then the resource stays (finalizer {FINALIZER}). {}",
        r.message
    );
    Ok(Some((Report { message, ..r }, None)))
}

/// A DeltaTable being deleted with our finalizer: drop the table (destructive,
/// so only with the approval of that drop's plan id, through the same executor
/// as every apply), then let it go. `None` once the resource may go.
async fn delete(
    obj: &DeltaTable,
    ctx: &Context,
    api: &Api<DeltaTable>,
    ns: &str,
    name: &str,
) -> Result<Option<(Report, Option<String>)>, Error> {
    if !obj.finalizers().iter().any(|f| f == FINALIZER) {
        return Ok(None);
    }
    let Resolved {
        desired,
        target,
        backend,
        ..
    } = match resolve(obj, ctx, ns) {
        Ok(x) => x,
        Err(r) => return deletion_blocked(obj, ctx, api, *r).await,
    };
    let table = Some(desired.table.to_string());
    let marker = ResourceId::new(ns, name);
    let caps = backend.capabilities().clone();
    // the drop of the table, if it is still there and ours (never another resource's)
    let read = || async {
        let live = backend
            .read(std::slice::from_ref(&desired.table), &Extras::none())
            .await?
            .pop()
            .flatten()
            .filter(|l| l.owner().as_ref() == Some(&marker));
        Ok(compile(
            finish(
                &caps,
                live.iter().map(|l| plan_delete(l, &caps)).collect(),
                vec![],
            ),
            backend.compiler(),
        ))
    };
    let plan = match read().await {
        Ok(p) => p,
        Err(e) => return Ok(Some((decide::read_failed(&e), table))),
    };
    if !plan.has_changes() {
        set_finalizer(api, obj, false).await?;
        return Ok(None);
    }
    let seen = Seen {
        context: Some(format!("deletionPolicy Delete drops {}", desired.table)),
        was_in_sync: false,
        ..seen(obj, ns, name, Policy::Auto, DriftPolicy::Report)
    };
    match decide::decide(&plan, &seen) {
        Next::Report(r) => return Ok(Some((r, table))),
        Next::Apply { events } => ctx.publish_all(obj, &events).await,
    }
    let earlier = obj.status.as_ref().and_then(|s| s.apply.clone());
    let (result, _) = match apply_showing(
        obj,
        ctx,
        api,
        &table,
        &backend,
        &target,
        &plan,
        &seen,
        read,
        None,
        earlier.as_ref(),
    )
    .await?
    {
        Ok(ran) => ran,
        Err(left) => return Ok(Some((left, table))),
    };
    let done = (
        decide::EventReason::TableDropped,
        format!("dropped {} (plan {})", desired.table, plan.id),
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
        return Ok(Some((report, table)));
    }
    ctx.publish_all(obj, &report.events).await;
    set_finalizer(api, obj, false).await?;
    Ok(None)
}

/// What the executor made of a plan, and its progress as it ended.
type Ran = (Applied, ApplyProgress);

/// Runs `plan` (an apply or a delete's drop) with its progress written into
/// status as `Applying`, resuming `earlier`, an apply the status says was cut short.
/// `Err`: a shutdown left the step running, reported Interrupted with what may still run.
#[allow(clippy::too_many_arguments)]
async fn apply_showing<F, Fut>(
    obj: &DeltaTable,
    ctx: &Context,
    api: &Api<DeltaTable>,
    table: &Option<String>,
    backend: &AnyBackend,
    target: &str,
    plan: &Plan,
    seen: &Seen<'_>,
    read: F,
    drifted: Option<String>,
    earlier: Option<&ApplyStatus>,
) -> Result<Result<Ran, Report>, Error>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<Plan, BackendError>>,
{
    let name = obj.name_any();
    let show = |p: ApplyProgress| {
        let report = Report {
            drifted: drifted.clone(),
            plan: Some(decide::plan_status(plan, None)),
            ..Report::new(Reason::Applying, p.message())
        };
        let (table, name) = (table.clone(), name.clone());
        async move {
            let apply = Some(p.status().clone());
            if let Err(e) = write_status(ctx, obj, api, &name, &report, table, apply).await {
                tracing::warn!(error = %e, "could not write the Applying status");
            }
        }
    };
    let end = ctx
        .run_apply(obj, backend, target, plan, seen, read, earlier, show)
        .await?;
    Ok(match end {
        ApplyEnd::Finished { result, progress } => Ok((result, progress)),
        ApplyEnd::LeftAtShutdown { progress } => Err(decide::abandoned(
            progress.status(),
            progress.status().statements.clone(),
        )),
    })
}
