//! The plan as status shows it: its steps and text (cut to fit), the command
//! that approves it, and the ConfigMap that holds the whole plan.

use delta_operator_api::spec::crd::PlanStatus;
use delta_operator_core::plan::Plan;
use delta_operator_core::plan::render::text::{
    object_step_lines, render, schema_step_lines, step_lines,
};

use super::{MAX_STATUS_STEPS, MAX_STATUS_TEXT};
use crate::APPROVE;

pub fn approve_command(kind: &str, ns: &str, name: &str, id: &str) -> String {
    format!("kubectl annotate {kind} {name} -n {ns} {APPROVE}={id} --overwrite")
}

/// The plan as written into status.
pub fn plan_status(plan: &Plan, approve: Option<String>) -> PlanStatus {
    let schema_lines = plan.schemas.iter().flat_map(|s| {
        schema_step_lines(s)
            .into_iter()
            .map(move |l| format!("{} {l}", s.schema))
    });
    let mut steps: Vec<String> = schema_lines
        .chain(plan.tables.iter().flat_map(|t| {
            step_lines(t).into_iter().map(move |l| {
                if plan.tables.len() > 1 || !plan.schemas.is_empty() {
                    format!("{} {l}", t.table)
                } else {
                    l
                }
            })
        }))
        .chain(plan.objects.iter().flat_map(|o| {
            // an object's own plan names it once; beside others each line does
            let alone =
                plan.objects.len() == 1 && plan.tables.is_empty() && plan.schemas.is_empty();
            object_step_lines(o).into_iter().map(move |l| {
                if alone {
                    l
                } else {
                    format!("{} {l}", o.object)
                }
            })
        }))
        .collect();
    let omitted = steps.len().saturating_sub(MAX_STATUS_STEPS);
    steps.truncate(MAX_STATUS_STEPS);
    PlanStatus {
        id: plan.id.to_string(),
        summary: plan.summary.short(),
        risk: plan.risk().map(|r| r.to_string()),
        steps,
        steps_omitted: omitted as i32,
        approve_command: approve,
        approval: None,
        text: Some(cut_text(render(plan), MAX_STATUS_TEXT)),
    }
}

/// Cuts at a line boundary below `max` bytes and says so.
pub(super) fn cut_text(text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let end = text[..end].rfind('\n').map_or(end, |i| i + 1);
    format!(
        "{}… cut at {} KiB: `kubectl delta plan NAME --full` prints the whole plan (the ConfigMap {})\n",
        &text[..end],
        max / 1024,
        WHOLE_PLAN_NAME
    )
}

/// How the ConfigMap holding a cut plan is named: `delta-plan.<kind>.<name>`.
pub const WHOLE_PLAN_NAME: &str = "delta-plan.<kind>.<name>";

/// The ConfigMap that holds a resource's whole plan when status holds a cut one.
pub fn whole_plan_configmap(kind: &str, name: &str) -> String {
    format!("delta-plan.{kind}.{name}")
}

/// The whole plan text when status can only hold a cut of it (a ConfigMap
/// holds at most 1 MiB: beyond that it is cut too, pointing at the CLI).
pub fn whole_plan(plan: &Plan) -> Option<String> {
    let text = render(plan);
    (text.len() > MAX_STATUS_TEXT).then(|| {
        if text.len() > MAX_WHOLE_PLAN {
            cut_whole(text)
        } else {
            text
        }
    })
}

/// What a ConfigMap's data may hold, with room for the key and metadata.
pub(super) const MAX_WHOLE_PLAN: usize = 1000 * 1024;

pub(super) fn cut_whole(text: String) -> String {
    let mut end = MAX_WHOLE_PLAN;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let end = text[..end].rfind('\n').map_or(end, |i| i + 1);
    format!(
        "{}… cut at {} KiB: `delta-operator plan -f <manifests>` prints the whole plan\n",
        &text[..end],
        MAX_WHOLE_PLAN / 1024
    )
}
