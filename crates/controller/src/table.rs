//! The DeltaTable reconcile.

use std::sync::Arc;
use std::time::{Duration, Instant};

use kube::api::{Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::{Api, ResourceExt};
use serde_json::json;

use super::conditions::{Phase, conditions};
use super::{APPROVE, Context, Error, FIELD_MANAGER, FINALIZER, PAUSED, REQUESTED_AT, tenancy};
use delta_operator_api::inputs::Inputs;
use delta_operator_api::spec::DeltaTable;
use delta_operator_api::spec::crd::{
    DeletionPolicy, DeltaTableStatus, LastApplied, PlanStatus, Policy as SpecPolicy,
};
use delta_operator_api::spec::lower::{lower_table, schema_of};
use delta_operator_api::spec::validate::validate;
use delta_operator_backend::Backend;
use delta_operator_backend::apply::{self, ApplyError, StepStatus};
use delta_operator_backend::engine::read_and_plan;
use delta_operator_core::model::{DesiredTable, ResourceId};
use delta_operator_core::plan::gate::{Decision, Policy, gate};
use delta_operator_core::plan::render::text::step_lines;
use delta_operator_core::plan::{Plan, plan_delete};
use delta_operator_targets::AnyBackend;

/// At most this many step lines go into status (the object stays far below etcd's limit).
const MAX_STATUS_STEPS: usize = 50;
/// The text rendering in status is cut at this size.
const MAX_STATUS_TEXT: usize = 16 * 1024;

/// What one reconcile found, before it is written.
struct Report {
    phase: Phase,
    drifted: Option<String>,
    plan: Option<PlanStatus>,
    last_applied: Option<LastApplied>,
    table: Option<String>,
    awaiting: bool,
}

impl Report {
    fn stalled(reason: &str, message: impl Into<String>) -> Self {
        Report {
            phase: Phase::Stalled {
                reason: reason.into(),
                message: message.into(),
            },
            drifted: None,
            plan: None,
            last_applied: None,
            table: None,
            awaiting: false,
        }
    }
    /// Waiting for something that arrives by itself (a schema applied later, the cache).
    fn waiting(reason: &str, message: impl Into<String>) -> Self {
        Report {
            phase: Phase::Progressing {
                reason: reason.into(),
                message: message.into(),
            },
            ..Self::stalled(reason, "")
        }
    }
}

pub fn approve_command(kind: &str, ns: &str, name: &str, id: &str) -> String {
    format!("kubectl annotate {kind} {name} -n {ns} {APPROVE}={id} --overwrite")
}

pub fn plan_status(plan: &Plan, approve: Option<String>) -> PlanStatus {
    let mut steps: Vec<String> = plan
        .tables
        .iter()
        .flat_map(|t| {
            step_lines(t).into_iter().map(move |l| {
                if plan.tables.len() > 1 {
                    format!("{} {l}", t.table)
                } else {
                    l
                }
            })
        })
        .collect();
    let omitted = steps.len().saturating_sub(MAX_STATUS_STEPS);
    steps.truncate(MAX_STATUS_STEPS);
    let text = Some(cut_text(
        delta_operator_core::plan::render::text::render(plan),
        MAX_STATUS_TEXT,
    ));
    PlanStatus {
        id: plan.id.clone(),
        summary: plan.summary.short(),
        risk: plan.risk().map(|r| r.to_string()),
        steps,
        steps_omitted: omitted as i32,
        approve_command: approve,
        text,
    }
}

/// Cuts at a line boundary below `max` bytes and says so.
fn cut_text(text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let end = text[..end].rfind('\n').map_or(end, |i| i + 1);
    format!(
        "{}… cut at {} KiB: `delta-operator plan` prints the whole plan\n",
        &text[..end],
        max / 1024
    )
}

pub fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

pub async fn reconcile(obj: Arc<DeltaTable>, ctx: Arc<Context>) -> Result<Action, Error> {
    let start = Instant::now();
    let ns = obj.namespace().unwrap_or_else(|| "default".into());
    let name = obj.name_any();
    let api: Api<DeltaTable> = Api::namespaced(ctx.client.clone(), &ns);
    let report = if obj.metadata.deletion_timestamp.is_some() {
        match delete(&obj, &ctx, &api, &ns, &name).await? {
            Some(r) => r,
            None => return Ok(Action::await_change()),
        }
    } else {
        evaluate(&obj, &ctx, &api, &ns, &name).await?
    };
    let key = format!("DeltaTable/{ns}/{name}");
    ctx.metrics.observe(
        key,
        start.elapsed().as_millis() as u64,
        report.drifted.is_some(),
        report.awaiting,
    );
    if let Phase::Stalled { reason, .. } = &report.phase {
        ctx.metrics.failed(reason);
    }
    write_status(&obj, &api, &name, report).await?;
    Ok(ctx.requeue())
}

pub fn error_policy(_obj: Arc<DeltaTable>, err: &Error, ctx: Arc<Context>) -> Action {
    tracing::warn!(error = %err, "reconcile failed; retrying");
    ctx.metrics.failed("Error");
    Action::requeue(Duration::from_secs(5))
}

async fn write_status(
    obj: &DeltaTable,
    api: &Api<DeltaTable>,
    name: &str,
    r: Report,
) -> Result<(), Error> {
    let previous = obj.status.clone().unwrap_or_default();
    let generation = obj.metadata.generation;
    let status = DeltaTableStatus {
        observed_generation: generation,
        conditions: conditions(
            &r.phase,
            r.drifted.as_deref(),
            generation,
            &previous.conditions,
            &now(),
        ),
        table: r.table.or(previous.table),
        plan: r.plan,
        last_applied: r.last_applied.or(previous.last_applied),
        last_handled_reconcile_at: obj.annotations().get(REQUESTED_AT).cloned(),
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
    obj: &DeltaTable,
    api: &Api<DeltaTable>,
    name: &str,
    backend: &Arc<AnyBackend>,
    inputs: &Inputs,
) -> Result<
    (Plan, Vec<delta_operator_core::model::ObservedTable>),
    delta_operator_backend::BackendError,
> {
    let read = read_and_plan(backend.as_ref(), inputs);
    tokio::pin!(read);
    let mut told = false;
    loop {
        tokio::select! {
            r = &mut read => return r,
            _ = tokio::time::sleep(Duration::from_millis(500)), if !told => {
                if let Some(what) = backend.waiting_for() {
                    told = true;
                    if let Err(e) = write_status(obj, api, name, Report::waiting("WarehouseStarting", what)).await {
                        tracing::warn!(error = %e, "could not write the WarehouseStarting status");
                    }
                }
            }
        }
    }
}

/// Resolves a table's desired state, target and backend, or says why not.
fn resolve(
    obj: &DeltaTable,
    ctx: &Context,
    ns: &str,
) -> Result<(DesiredTable, String, Arc<AnyBackend>), Box<Report>> {
    let m = ctx.manifests_for(ns, Some(obj));
    let Some(me) = m.tables.iter().find(|t| t.name() == obj.name_any()) else {
        return Err(Box::new(Report::waiting(
            "NotCached",
            "the resource is not in the operator's cache yet",
        )));
    };
    // a table applied before its schema (kubectl apply -f dir/ sorts by file name) waits, it is not stuck
    if schema_of(&m, me).is_none() {
        return Err(Box::new(Report::waiting(
            "SchemaNotFound",
            format!(
                "waiting for DeltaSchema '{}' in namespace {ns}",
                obj.spec.schema_ref
            ),
        )));
    }
    let label = me.label();
    let errors: Vec<String> = validate(&m)
        .into_iter()
        .filter(|e| e.resource.as_deref() == Some(label.as_str()))
        .map(|e| format!("{}: {} (fix: {})", e.path, e.message, e.fix))
        .collect();
    if !errors.is_empty() {
        return Err(Box::new(Report::stalled("InvalidSpec", errors.join("; "))));
    }
    let Some(schema) = schema_of(&m, me) else {
        return Err(Box::new(Report::stalled(
            "SchemaNotFound",
            format!("no DeltaSchema '{}' in namespace {ns}", obj.spec.schema_ref),
        )));
    };
    let desired = lower_table(&m, me).map_err(|e| {
        Box::new(Report::stalled(
            "InvalidSpec",
            e.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; "),
        ))
    })?;
    let target = schema
        .resource
        .spec
        .target
        .clone()
        .unwrap_or_else(|| ctx.config.default_target_name());
    let t = ctx
        .config
        .target(&target)
        .map_err(|e| Box::new(Report::stalled("UnknownTarget", e.to_string())))?;
    tenancy::check(&target, t, ns, &desired.table.schema_ref())
        .map_err(|m| Box::new(Report::stalled("Forbidden", m)))?;
    let backend = ctx
        .backend(&target)
        .map_err(|(reason, message)| Box::new(Report::stalled(reason, message)))?;
    Ok((desired, target, backend))
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

async fn evaluate(
    obj: &DeltaTable,
    ctx: &Context,
    api: &Api<DeltaTable>,
    ns: &str,
    name: &str,
) -> Result<Report, Error> {
    let (desired, target, backend) = match resolve(obj, ctx, ns) {
        Ok(x) => x,
        Err(r) => return Ok(*r),
    };
    set_finalizer(api, obj, obj.spec.deletion_policy == DeletionPolicy::Delete).await?;
    let table = Some(desired.table.to_string());
    let inputs = Inputs {
        tables: vec![desired],
        schemas: vec![],
    };
    let (plan, _) = match read_telling_waits(obj, api, name, &backend, &inputs).await {
        Ok(p) => p,
        Err(e) => {
            return Ok(Report {
                table,
                ..Report::stalled("ReadFailed", e.to_string())
            });
        }
    };
    let drifted = plan.has_changes().then(|| plan.summary.short());
    let approval = obj.annotations().get(APPROVE).cloned();
    let policy = match obj.spec.policy {
        SpecPolicy::Auto => Policy::Auto,
        SpecPolicy::Manual => Policy::Manual,
        SpecPolicy::Observe => Policy::Observe,
    };
    let status_plan = |approve: bool| {
        Some(plan_status(
            &plan,
            approve.then(|| approve_command("deltatable", ns, name, &plan.id)),
        ))
    };
    let last_id = obj
        .status
        .as_ref()
        .and_then(|s| s.plan.as_ref())
        .map(|p| p.id.clone());
    let was_drifted = obj.status.as_ref().is_some_and(|s| {
        s.conditions
            .iter()
            .any(|c| c.type_ == super::conditions::DRIFTED && c.status == "True")
    });
    // drift after the table was in sync (not a spec change): say so
    if drifted.is_some()
        && !was_drifted
        && obj.status.as_ref().and_then(|s| s.observed_generation) == obj.metadata.generation
        && obj
            .status
            .as_ref()
            .is_some_and(|s| s.last_applied.is_some())
    {
        ctx.publish(
            obj,
            EventType::Normal,
            "DriftDetected",
            format!(
                "the live table differs from the spec: {}",
                plan.summary.short()
            ),
        )
        .await;
    }
    if drifted.is_some() && last_id.as_deref() != Some(plan.id.as_str()) {
        ctx.publish(
            obj,
            EventType::Normal,
            "PlanCreated",
            format!(
                "plan {} ({}): {}",
                plan.id,
                plan.summary.short(),
                step_lines(&plan.tables[0]).join("; ")
            ),
        )
        .await;
    }
    if let Some(rejected) = plan.rejected().next() {
        let failures = match &rejected.outcome {
            delta_operator_core::plan::Outcome::Rejected { failures } => failures.clone(),
            _ => vec![],
        };
        let reason = failures
            .first()
            .map_or("PlanRejected".to_string(), |f| f.rule.to_string());
        let message = failures
            .iter()
            .map(|f| format!("{} ({}): {} — fix: {}", f.rule, f.subject, f.message, f.fix))
            .collect::<Vec<_>>()
            .join("; ");
        return Ok(Report {
            phase: Phase::Stalled { reason, message },
            drifted,
            plan: status_plan(false),
            last_applied: None,
            table,
            awaiting: false,
        });
    }
    if obj.annotations().get(PAUSED).is_some_and(|v| v == "true") {
        let ready = drifted.is_none();
        return Ok(Report {
            phase: Phase::Holding {
                reason: "Paused".into(),
                message: format!("{PAUSED} is \"true\": no writes"),
                ready,
            },
            drifted,
            plan: status_plan(false),
            last_applied: None,
            table,
            awaiting: false,
        });
    }
    match gate(&plan, policy, approval.as_deref()) {
        Decision::NothingToDo => Ok(Report {
            phase: Phase::InSync,
            drifted: None,
            plan: None,
            last_applied: None,
            table,
            awaiting: false,
        }),
        Decision::Rejected => unreachable!("handled above"),
        Decision::Observe => {
            if drifted.is_some() && last_id.as_deref() != Some(plan.id.as_str()) {
                ctx.publish(
                    obj,
                    EventType::Normal,
                    "DriftDetected",
                    format!(
                        "observed drift {}; policy Observe never applies",
                        plan.summary.short()
                    ),
                )
                .await;
            }
            // Observe has done its job once the drift is in status: Ready, so GitOps health checks pass
            Ok(Report {
                phase: Phase::Holding {
                    reason: "Observing".into(),
                    message: "policy Observe: drift is shown, never applied".into(),
                    ready: true,
                },
                drifted,
                plan: status_plan(false),
                last_applied: None,
                table,
                awaiting: false,
            })
        }
        Decision::NeedsApproval { id, reason }
        | Decision::WrongApproval {
            id,
            approved: reason,
        } => {
            let cmd = approve_command("deltatable", ns, name, &id);
            let message = match &approval {
                Some(a) if a != &id => format!(
                    "the annotation approves {a}, but the plan is now {id}; review it, then: {cmd}"
                ),
                _ => format!("plan {id} needs approval ({reason}): {cmd}"),
            };
            if last_id.as_deref() != Some(id.as_str()) {
                ctx.publish(obj, EventType::Warning, "ApprovalRequired", message.clone())
                    .await;
            }
            Ok(Report {
                phase: Phase::Stalled {
                    reason: "ApprovalRequired".into(),
                    message,
                },
                drifted,
                plan: status_plan(true),
                last_applied: None,
                table,
                awaiting: true,
            })
        }
        Decision::Apply => {
            apply_plan(
                obj, ctx, &backend, &target, &inputs, &plan, approval, policy, table,
            )
            .await
        }
    }
}

/// How long a reconcile waits for a table another apply (a CLI run) holds before requeueing.
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

#[allow(clippy::too_many_arguments)]
async fn apply_plan(
    obj: &DeltaTable,
    ctx: &Context,
    backend: &Arc<AnyBackend>,
    target: &str,
    inputs: &Inputs,
    plan: &Plan,
    approval: Option<String>,
    policy: Policy,
    table: Option<String>,
) -> Result<Report, Error> {
    let lock = ctx.locks.acquire(target).await?;
    let alive = lock.flag();
    ctx.publish(
        obj,
        EventType::Normal,
        "ApplyStarted",
        format!("applying plan {} ({} steps)", plan.id, plan.summary.steps),
    )
    .await;
    let may_continue = move || alive.load(std::sync::atomic::Ordering::SeqCst);
    let opts = apply::Options {
        policy,
        lock_wait: LOCK_WAIT,
        on_event: &|_| {},
        may_continue: &may_continue,
    };
    let result = apply::apply(
        backend.as_ref(),
        inputs,
        Some(&plan.id),
        approval.as_deref(),
        &opts,
    )
    .await;
    lock.release().await;
    let drifted = Some(plan.summary.short());
    match result {
        Ok((_, report)) => {
            let applied = LastApplied {
                plan_id: plan.id.clone(),
                time: now(),
                steps_applied: report.applied() as i32,
                restore_points: report.restore_points(),
            };
            if let Some(failed) = report.steps.iter().find_map(|s| match &s.status {
                StepStatus::Failed { error } => {
                    Some(format!("step {} {} failed: {error}", s.number, s.title))
                }
                _ => None,
            }) {
                ctx.publish(obj, EventType::Warning, "ApplyFailed", failed.clone())
                    .await;
                return Ok(Report {
                    phase: Phase::Stalled {
                        reason: "ApplyFailed".into(),
                        message: failed,
                    },
                    drifted,
                    plan: Some(plan_status(plan, None)),
                    last_applied: Some(applied),
                    table,
                    awaiting: false,
                });
            }
            if report.steps.iter().any(|s| s.status == StepStatus::NotRun) {
                return Ok(Report {
                    phase: Phase::Progressing {
                        reason: "LeaseLost".into(),
                        message: "the apply lock was lost; the rest runs in the next reconcile"
                            .into(),
                    },
                    drifted,
                    plan: Some(plan_status(plan, None)),
                    last_applied: Some(applied),
                    table,
                    awaiting: false,
                });
            }
            if approval.as_deref() == Some(plan.id.as_str()) {
                ctx.publish(
                    obj,
                    EventType::Normal,
                    "ApprovalConsumed",
                    format!("plan {} approved and applied", plan.id),
                )
                .await;
            }
            ctx.publish(
                obj,
                EventType::Normal,
                "ApplyFinished",
                format!(
                    "plan {}: {} steps applied, {} already true; restore points: {}",
                    plan.id,
                    report.applied(),
                    report.skipped(),
                    applied.restore_points.join(", ")
                ),
            )
            .await;
            Ok(Report {
                phase: Phase::InSync,
                drifted: None,
                plan: None,
                last_applied: Some(applied),
                table,
                awaiting: false,
            })
        }
        Err(ApplyError::Locked(message)) => Ok(Report {
            phase: Phase::Progressing {
                reason: "Locked".into(),
                message,
            },
            drifted,
            plan: Some(plan_status(plan, None)),
            last_applied: None,
            table,
            awaiting: false,
        }),
        Err(ApplyError::Stale { .. }) => Ok(Report {
            phase: Phase::Progressing {
                reason: "PlanStale".into(),
                message: "the table moved while applying; planning again".into(),
            },
            drifted,
            plan: Some(plan_status(plan, None)),
            last_applied: None,
            table,
            awaiting: false,
        }),
        Err(e) => {
            ctx.publish(obj, EventType::Warning, "ApplyFailed", e.to_string())
                .await;
            Ok(Report {
                phase: Phase::Stalled {
                    reason: "ApplyFailed".into(),
                    message: e.to_string(),
                },
                drifted,
                plan: Some(plan_status(plan, None)),
                last_applied: None,
                table,
                awaiting: false,
            })
        }
    }
}

/// A DeltaTable being deleted with our finalizer: drop the table (destructive,
/// so only with the approval of that drop's plan id), then let it go.
async fn delete(
    obj: &DeltaTable,
    ctx: &Context,
    api: &Api<DeltaTable>,
    ns: &str,
    name: &str,
) -> Result<Option<Report>, Error> {
    if !obj.finalizers().iter().any(|f| f == FINALIZER) {
        return Ok(None);
    }
    let marker = ResourceId::new(ns, name);
    let resolved = resolve(obj, ctx, ns);
    let (desired, target, backend) = match resolved {
        Ok(x) => x,
        // nothing can be dropped safely without a valid spec and target: keep the table, release the resource
        Err(_) => {
            set_finalizer(api, obj, false).await?;
            return Ok(None);
        }
    };
    if obj.annotations().get(PAUSED).is_some_and(|v| v == "true") {
        return Ok(Some(Report {
            phase: Phase::Holding {
                reason: "Paused".into(),
                message: "deletion waits while paused".into(),
                ready: false,
            },
            drifted: None,
            plan: None,
            last_applied: None,
            table: None,
            awaiting: false,
        }));
    }
    let live = backend
        .read(std::slice::from_ref(&desired.table))
        .await
        .map_err(|e| Error::Other(e.to_string()))?
        .pop()
        .flatten();
    let Some(live) = live.filter(|l| l.owner().as_ref() == Some(&marker)) else {
        // gone already, or not ours: never drop another resource's table
        set_finalizer(api, obj, false).await?;
        return Ok(None);
    };
    let caps = backend.capabilities().clone();
    let plan = delta_operator_core::plan::finish(&caps, vec![plan_delete(&live, &caps)], vec![]);
    let approval = obj.annotations().get(APPROVE).cloned();
    if approval.as_deref() != Some(plan.id.as_str()) {
        let cmd = approve_command("deltatable", ns, name, &plan.id);
        let message = format!(
            "deletionPolicy Delete: dropping {} needs approval of plan {}: {cmd}",
            desired.table, plan.id
        );
        return Ok(Some(Report {
            phase: Phase::Stalled {
                reason: "ApprovalRequired".into(),
                message,
            },
            drifted: None,
            plan: Some(plan_status(&plan, Some(cmd))),
            last_applied: None,
            table: Some(desired.table.to_string()),
            awaiting: true,
        }));
    }
    let lock = ctx.locks.acquire(&target).await?;
    let alive = lock.flag();
    let may_continue = move || alive.load(std::sync::atomic::Ordering::SeqCst);
    let opts = apply::Options {
        policy: Policy::Auto,
        lock_wait: LOCK_WAIT,
        on_event: &|_| {},
        may_continue: &may_continue,
    };
    let report = apply::run_plan(backend.as_ref(), &plan, &opts).await;
    lock.release().await;
    if report.failed() || report.applied() == 0 {
        return Ok(Some(Report::stalled(
            "DeleteFailed",
            format!("{:?}", report.steps),
        )));
    }
    ctx.publish(
        obj,
        EventType::Normal,
        "TableDropped",
        format!("dropped {} (plan {})", desired.table, plan.id),
    )
    .await;
    set_finalizer(api, obj, false).await?;
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::cut_text;

    #[test]
    fn long_plan_text_is_cut_at_a_line_and_says_so() {
        let text: String = (0..100).map(|i| format!("line {i} é\n")).collect();
        let cut = cut_text(text.clone(), 100);
        assert!(cut.len() < 200, "{cut}");
        assert!(cut.starts_with("line 0 é\nline 1 é\n"));
        assert!(
            cut.ends_with("`delta-operator plan` prints the whole plan\n"),
            "{cut}"
        );
        let kept = cut.lines().filter(|l| l.starts_with("line ")).count();
        assert!(
            kept > 0
                && cut
                    .lines()
                    .filter(|l| l.starts_with("line "))
                    .all(|l| l.ends_with('é')),
            "{cut}"
        );
        assert_eq!(cut_text("short\n".into(), 100), "short\n");
    }
}
