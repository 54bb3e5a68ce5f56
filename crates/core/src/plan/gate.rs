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
    /// Nothing can run and something was refused: a schema's plan (which stops
    /// the whole plan), or every table with changes (rejected or blocked).
    /// A refused table alone is left untouched while the others go on.
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

/// Whether an approval (the annotation's value, or `--approve`) names plan
/// `id`: the id itself, or `<id>-<anything>`. The suffix is how the same plan is
/// approved again once an approval of it was spent (the controller remembers
/// spent values in status and takes each only once; `<id>-2`, `<id>-3`, … are
/// the values it suggests).
pub fn approves(approval: &str, id: &str) -> bool {
    approval == id
        || approval
            .strip_prefix(id)
            .and_then(|rest| rest.strip_prefix('-'))
            .is_some_and(|suffix| !suffix.is_empty())
}

/// The value that approves plan `id` anew when the values in `spent` were
/// already spent on the resource: the id itself, else `<id>-2`, `<id>-3`, …
pub fn fresh_approval(id: &str, spent: impl Fn(&str) -> bool) -> String {
    if !spent(id) {
        return id.to_string();
    }
    (2u32..)
        .map(|n| format!("{id}-{n}"))
        .find(|v| !spent(v))
        .unwrap_or_else(|| id.to_string())
}

pub fn gate(plan: &Plan, policy: Policy, approved: Option<&str>) -> Decision {
    // a refused schema stops the whole plan; a refused table (its rules, its
    // foreign keys' parents, or a live table that cannot be read) is left
    // alone and the others go on: its refusal is reported with the plan
    if plan.schemas.iter().any(|s| !s.is_accepted()) {
        return Decision::Rejected;
    }
    if plan.summary.steps == 0 {
        let refused = plan.tables.iter().any(|t| match &t.outcome {
            Outcome::Rejected { failures } => {
                failures.iter().any(|f| f.rule != Rule::TableUnreadable)
            }
            Outcome::Blocked { .. } => true,
            Outcome::Accepted { .. } | Outcome::Deferred { .. } => false,
        }) || plan.objects.iter().any(|o| o.is_refused());
        return if refused {
            Decision::Rejected
        } else {
            Decision::NothingToDo
        };
    }
    if policy == Policy::Observe {
        return Decision::Observe;
    }
    // maintenance, the lowest class, runs under Auto like meta steps; under
    // Manual it waits like everything else (and Observe returned above)
    let reason = match (policy, plan.risk()) {
        (_, Some(RiskClass::Destructive)) => Some("the plan has destructive steps"),
        (Policy::Manual, Some(RiskClass::Maintenance)) => {
            Some("policy Manual approves every plan, maintenance too")
        }
        (Policy::Manual, _) => Some("policy Manual approves every plan"),
        (Policy::Auto | Policy::Observe, _) => None,
    };
    match (reason, approved) {
        (None, _) => Decision::Apply,
        (Some(_), Some(a)) if approves(a, &plan.id) => Decision::Apply,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_approval_names_a_plan_by_its_id_or_the_id_and_a_suffix() {
        let id = "50854c32792d7c1a";
        assert!(approves(id, id));
        assert!(approves("50854c32792d7c1a-2", id));
        assert!(approves("50854c32792d7c1a-after-restore", id));
        assert!(!approves("50854c32792d7c1a-", id));
        assert!(
            !approves("50854c32792d7c1a2", id),
            "a longer id is another plan"
        );
        assert!(!approves("50854c32792d7c1", id));
        assert!(!approves("0000000000000000", id));
        assert!(!approves("", id));
    }

    #[test]
    fn a_fresh_approval_is_the_id_then_counts_up_past_spent_values() {
        let id = "50854c32792d7c1a";
        assert_eq!(fresh_approval(id, |_| false), id);
        let spent = [id.to_string(), format!("{id}-2")];
        assert_eq!(
            fresh_approval(id, |v| spent.iter().any(|s| s == v)),
            format!("{id}-3")
        );
    }
}
