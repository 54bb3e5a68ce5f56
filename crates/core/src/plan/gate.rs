//! The gate: given a plan, the resource's policy and an approval, what may run.

use serde::{Deserialize, Serialize};

use super::rules::Rule;
use super::{Outcome, Plan, PlanId, RiskClass};

/// `spec.policy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Policy {
    /// Applies meta, feature and rewrite steps; destructive steps wait for approval.
    #[default]
    Auto,
    /// Every non-empty plan waits for approval.
    Manual,
    /// Never applies; shows drift only.
    Observe,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "decision")]
pub enum Decision {
    NothingToDo,
    /// Some table's plan was rejected: nothing runs until the spec is fixed.
    Rejected,
    Apply,
    /// Waits for `delta-operator.io/approve: <id>` (or `--approve <id>`).
    NeedsApproval {
        id: PlanId,
        reason: String,
    },
    /// The approval names another plan: it approves nothing.
    WrongApproval {
        id: PlanId,
        approved: String,
    },
    Observe,
}

pub fn gate(plan: &Plan, policy: Policy, approved: Option<&str>) -> Decision {
    // a refused spec stops the whole plan; a table that cannot be read is
    // left alone and the others go on (its refusal is still reported)
    let refused_spec = plan.tables.iter().any(|t| matches!(&t.outcome, Outcome::Rejected { failures } if failures.iter().any(|f| f.rule != Rule::TableUnreadable)));
    if refused_spec || plan.schemas.iter().any(|s| !s.is_accepted()) {
        return Decision::Rejected;
    }
    if plan.summary.steps == 0 {
        return Decision::NothingToDo;
    }
    if policy == Policy::Observe {
        return Decision::Observe;
    }
    let destructive = plan.risk() == Some(RiskClass::Destructive);
    let reason = match (policy, destructive) {
        (_, true) => Some("the plan has destructive steps"),
        (Policy::Manual, false) => Some("policy Manual approves every plan"),
        _ => None,
    };
    match (reason, approved) {
        (None, _) => Decision::Apply,
        (Some(_), Some(a)) if a == plan.id => Decision::Apply,
        (Some(_), Some(a)) => Decision::WrongApproval {
            id: plan.id.clone(),
            approved: a.to_string(),
        },
        (Some(r), None) => Decision::NeedsApproval {
            id: plan.id.clone(),
            reason: r.to_string(),
        },
    }
}
