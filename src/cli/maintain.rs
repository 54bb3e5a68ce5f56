//! `maintain`: plans and runs only the maintenance steps due (compaction,
//! vacuum, checkpoints) for the manifests given, with `apply`'s flags,
//! progress and exit codes. Every other difference is left for an `apply`.
//! Each table keeps to its policy: `Observe` tables are left out, and a
//! `Manual` one makes the plan wait for `--approve <id>`.

use std::collections::BTreeMap;

use crate::backend::{AnyBackend, BackendError};
use crate::engine::Inputs;
use crate::model::TableRef;
use crate::plan::Plan;
use crate::plan::gate::Policy;
use crate::spec::Manifests;
use crate::spec::crd::Policy as SpecPolicy;

/// What an apply runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runs {
    /// Every step of the plan (`apply`).
    Everything,
    /// The maintenance steps due, and nothing else (`maintain`).
    Maintenance,
}

/// Each declared table's `spec.policy`.
pub fn policies(m: &Manifests) -> BTreeMap<TableRef, SpecPolicy> {
    m.tables
        .iter()
        .filter_map(|t| crate::spec::lower::table_ref_of(m, t).map(|r| (r, t.resource.spec.policy)))
        .collect()
}

/// The gate's policy for a maintenance plan: Manual when any table's spec
/// says so (its maintenance waits for approval), else Auto.
pub fn policy(policies: &BTreeMap<TableRef, SpecPolicy>) -> Policy {
    if policies.values().any(|p| *p == SpecPolicy::Manual) {
        Policy::Manual
    } else {
        Policy::Auto
    }
}

/// Reads and plans as `apply` does; for `maintain`, keeps the maintenance
/// steps of the tables whose policy is not Observe.
pub async fn read_plan(
    backend: &AnyBackend,
    inputs: &Inputs,
    runs: Runs,
    policies: &BTreeMap<TableRef, SpecPolicy>,
) -> Result<Plan, BackendError> {
    let (plan, _) = crate::engine::read_and_plan(backend, inputs).await?;
    Ok(match runs {
        Runs::Everything => plan,
        Runs::Maintenance => crate::plan::maintenance_only(&plan, |t| {
            policies.get(&t.table) != Some(&SpecPolicy::Observe)
        }),
    })
}
