//! Approved plans the CLI is running, so an interrupted apply resumes on its
//! approval: `apply --approve <id>` of a plan whose id moved because some of
//! its steps already ran is accepted when every step left is a step of the
//! approved plan (same table, same statements), and refused otherwise.
//!
//! Kept on the machine that approved, one JSON file per plan under
//! `$DELTA_OPERATOR_STATE_DIR` (default `$XDG_STATE_HOME/delta-operator`, else
//! `~/.local/state/delta-operator`) in `approvals/`: written before the first
//! step runs, removed when the apply ends with every step done. Nothing of it
//! is needed to plan or apply; without it a resumed plan needs a new approval.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::plan::Plan;

/// One step of an approved plan, as it runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct ApprovedStep {
    table: String,
    statements: Vec<String>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Approved {
    plan_id: String,
    steps: Vec<ApprovedStep>,
}

fn dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("DELTA_OPERATOR_STATE_DIR") {
        return Some(PathBuf::from(d).join("approvals"));
    }
    let base = std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/state")))?;
    Some(base.join("delta-operator").join("approvals"))
}

/// A plan id is 16 hex digits; anything else never names a file.
fn file(id: &str) -> Option<PathBuf> {
    let ok = !id.is_empty() && id.len() <= 64 && id.chars().all(|c| c.is_ascii_hexdigit());
    ok.then(dir).flatten().map(|d| d.join(format!("{id}.json")))
}

fn steps_of(plan: &Plan) -> Vec<ApprovedStep> {
    plan.tables
        .iter()
        .flat_map(|t| {
            t.steps().iter().map(|s| ApprovedStep {
                table: t.table.to_string(),
                statements: s.statements.iter().map(ToString::to_string).collect(),
            })
        })
        .collect()
}

/// Records `plan` as approved before its steps run (best effort: a record
/// that cannot be written only means a resume needs a new approval).
pub fn record(plan: &Plan) {
    let Some(path) = file(&plan.id) else { return };
    let approved = Approved {
        plan_id: plan.id.to_string(),
        steps: steps_of(plan),
    };
    let written = path
        .parent()
        .map(std::fs::create_dir_all)
        .transpose()
        .and_then(|_| {
            let text = serde_json::to_string(&approved).map_err(std::io::Error::other)?;
            std::fs::write(&path, text)
        });
    if let Err(e) = written {
        tracing::debug!(path = %path.display(), error = %e, "the approval record was not written");
    }
}

/// The apply of `id` ended with every step done: nothing is left to resume.
pub fn done(id: &str) {
    if let Some(path) = file(id) {
        let _ = std::fs::remove_file(path);
    }
}

/// Whether `plan` is what is left of the approved plan `approved`: a record of
/// it exists here and every step of `plan` is one of its steps (same table,
/// same statements). A plan with no steps resumes nothing.
pub fn resumes(approved: &str, plan: &Plan) -> bool {
    let Some(path) = file(approved) else {
        return false;
    };
    let Some(record) = std::fs::read_to_string(path)
        .ok()
        .and_then(|t| serde_json::from_str::<Approved>(&t).ok())
    else {
        return false;
    };
    let left = steps_of(plan);
    record.plan_id == approved && !left.is_empty() && left.iter().all(|s| record.steps.contains(s))
}
