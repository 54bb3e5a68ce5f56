//! The DeltaSchema reconcile: schema status, and the tables the operator made
//! whose DeltaTable is gone (orphans). Additive schemas list them; strict
//! schemas drop them after an approval on the DeltaSchema.

use std::sync::Arc;
use std::time::{Duration, Instant};

use kube::api::{Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::{Api, ResourceExt};
use serde_json::json;

use super::conditions::{Phase, conditions};
use super::table::{approve_command, now, plan_status};
use super::{APPROVE, Context, Error, FIELD_MANAGER, PAUSED, REQUESTED_AT, tenancy};
use delta_operator_api::spec::DeltaSchema;
use delta_operator_api::spec::crd::{DeltaSchemaStatus, LastApplied, PlanStatus};
use delta_operator_api::spec::lower::lower_schema;
use delta_operator_api::spec::validate::validate;
use delta_operator_backend::Backend;
use delta_operator_backend::apply::{Options, StepStatus, run_plan};
use delta_operator_core::model::SchemaMode;
use delta_operator_core::plan::gate::{Decision, Policy, gate};
use delta_operator_core::plan::{finish, plan_orphan};

pub fn error_policy(_obj: Arc<DeltaSchema>, err: &Error, ctx: Arc<Context>) -> Action {
    tracing::warn!(error = %err, "schema reconcile failed; retrying");
    ctx.metrics.failed("Error");
    Action::requeue(Duration::from_secs(5))
}

struct Report {
    phase: Phase,
    orphans: Vec<String>,
    plan: Option<PlanStatus>,
    last_applied: Option<LastApplied>,
    schema: Option<String>,
}

fn stalled(reason: &str, message: String) -> Report {
    Report {
        phase: Phase::Stalled {
            reason: reason.into(),
            message,
        },
        orphans: vec![],
        plan: None,
        last_applied: None,
        schema: None,
    }
}

pub async fn reconcile(obj: Arc<DeltaSchema>, ctx: Arc<Context>) -> Result<Action, Error> {
    let start = Instant::now();
    let ns = obj.namespace().unwrap_or_else(|| "default".into());
    let name = obj.name_any();
    let api: Api<DeltaSchema> = Api::namespaced(ctx.client.clone(), &ns);
    if obj.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let report = evaluate(&obj, &ctx, &ns, &name).await?;
    ctx.metrics.observe(
        format!("DeltaSchema/{ns}/{name}"),
        start.elapsed().as_millis() as u64,
        !report.orphans.is_empty() && report.plan.is_some(),
        matches!(&report.phase, Phase::Stalled { reason, .. } if reason == "ApprovalRequired"),
    );
    let previous = obj.status.clone().unwrap_or_default();
    let generation = obj.metadata.generation;
    let drift = report.plan.as_ref().map(|p| p.summary.clone());
    let status = DeltaSchemaStatus {
        observed_generation: generation,
        conditions: conditions(
            &report.phase,
            drift.as_deref(),
            generation,
            &previous.conditions,
            &now(),
        ),
        schema: report.schema.or(previous.schema),
        orphans: report.orphans,
        plan: report.plan,
        last_applied: report.last_applied.or(previous.last_applied),
        last_handled_reconcile_at: obj.annotations().get(REQUESTED_AT).cloned(),
    };
    let patch = json!({"apiVersion": "delta-operator.io/v1alpha1", "kind": "DeltaSchema", "status": status});
    api.patch_status(
        &name,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(&patch),
    )
    .await?;
    Ok(ctx.requeue())
}

async fn evaluate(obj: &DeltaSchema, ctx: &Context, ns: &str, name: &str) -> Result<Report, Error> {
    let m = ctx.manifests_for(ns, None);
    let Some(me) = m.schemas.iter().find(|s| s.name() == name) else {
        return Ok(stalled(
            "NotFound",
            "the resource is not in the cache yet".into(),
        ));
    };
    let label = me.label();
    let errors: Vec<String> = validate(&m)
        .into_iter()
        .filter(|e| e.resource.as_deref() == Some(label.as_str()))
        .map(|e| format!("{}: {} (fix: {})", e.path, e.message, e.fix))
        .collect();
    if !errors.is_empty() {
        return Ok(stalled("InvalidSpec", errors.join("; ")));
    }
    let desired = lower_schema(me);
    let target = desired
        .target
        .clone()
        .unwrap_or_else(|| ctx.config.default_target_name());
    let t = match ctx.config.target(&target) {
        Ok(t) => t,
        Err(e) => return Ok(stalled("UnknownTarget", e.to_string())),
    };
    if let Err(msg) = tenancy::check(&target, t, ns, &desired.schema) {
        return Ok(stalled("Forbidden", msg));
    }
    let backend = match ctx.backend(&target) {
        Ok(b) => b,
        Err((reason, message)) => return Ok(stalled(reason, message)),
    };
    let schema = Some(desired.schema.to_string());
    let refs = backend
        .list_schema(&desired.schema)
        .await
        .map_err(|e| Error::Other(e.to_string()))?;
    let live = backend
        .read(&refs)
        .await
        .map_err(|e| Error::Other(e.to_string()))?;
    // an orphan carries a marker naming a DeltaTable of this namespace that no longer exists
    let existing = ctx.table_markers(ns);
    let orphans: Vec<_> = live
        .into_iter()
        .flatten()
        .filter(|o| {
            o.owner()
                .is_some_and(|owner| owner.namespace == ns && !existing.contains(&owner))
        })
        .collect();
    let names: Vec<String> = orphans.iter().map(|o| o.table.to_string()).collect();
    if orphans.is_empty() || desired.mode == SchemaMode::Additive {
        return Ok(Report {
            phase: Phase::InSync,
            orphans: names,
            plan: None,
            last_applied: None,
            schema,
        });
    }
    let caps = backend.capabilities().clone();
    let plan = finish(
        &caps,
        orphans
            .iter()
            .map(|o| plan_orphan(o, true, &caps))
            .collect(),
        vec![],
    );
    if obj.annotations().get(PAUSED).is_some_and(|v| v == "true") {
        return Ok(Report {
            phase: Phase::Holding {
                reason: "Paused".into(),
                message: format!("{PAUSED} is \"true\": no writes"),
                ready: false,
            },
            orphans: names,
            plan: Some(plan_status(&plan, None)),
            last_applied: None,
            schema,
        });
    }
    let approval = obj.annotations().get(APPROVE).cloned();
    match gate(&plan, Policy::Auto, approval.as_deref()) {
        Decision::Apply => {
            let lock = ctx.locks.acquire(&target).await?;
            let alive = lock.flag();
            let may_continue = move || alive.load(std::sync::atomic::Ordering::SeqCst);
            let opts = Options {
                policy: Policy::Auto,
                lock_wait: std::time::Duration::from_secs(5),
                on_event: &|_| {},
                may_continue: &may_continue,
            };
            let report = run_plan(backend.as_ref(), &plan, &opts).await;
            lock.release().await;
            let applied = LastApplied {
                plan_id: plan.id.clone(),
                time: now(),
                steps_applied: report.applied() as i32,
                restore_points: report.restore_points(),
            };
            if let Some(e) = report.steps.iter().find_map(|s| match &s.status {
                StepStatus::Failed { error } => Some(error.clone()),
                _ => None,
            }) {
                return Ok(Report {
                    phase: Phase::Stalled {
                        reason: "ApplyFailed".into(),
                        message: e,
                    },
                    orphans: names,
                    plan: Some(plan_status(&plan, None)),
                    last_applied: Some(applied),
                    schema,
                });
            }
            ctx.publish(
                obj,
                EventType::Normal,
                "OrphansDropped",
                format!("dropped {} (plan {})", names.join(", "), plan.id),
            )
            .await;
            Ok(Report {
                phase: Phase::InSync,
                orphans: vec![],
                plan: None,
                last_applied: Some(applied),
                schema,
            })
        }
        _ => {
            let cmd = approve_command("deltaschema", ns, name, &plan.id);
            let message = format!(
                "strict mode: dropping the orphans {} needs approval of plan {}: {cmd}",
                names.join(", "),
                plan.id
            );
            if obj
                .status
                .as_ref()
                .and_then(|s| s.plan.as_ref())
                .map(|p| p.id.as_str())
                != Some(plan.id.as_str())
            {
                ctx.publish(obj, EventType::Warning, "ApprovalRequired", message.clone())
                    .await;
            }
            Ok(Report {
                phase: Phase::Stalled {
                    reason: "ApprovalRequired".into(),
                    message,
                },
                orphans: names,
                plan: Some(plan_status(&plan, Some(cmd))),
                last_applied: None,
                schema,
            })
        }
    }
}
