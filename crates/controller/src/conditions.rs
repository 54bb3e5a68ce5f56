//! kstatus conditions, computed whole on every reconcile. A condition keeps
//! its lastTransitionTime while its status does not change.

use delta_operator_api::spec::crd::Condition;

pub const READY: &str = "Ready";
pub const RECONCILING: &str = "Reconciling";
pub const STALLED: &str = "Stalled";
pub const DRIFTED: &str = "Drifted";

/// Where a resource stands after a reconcile, in kstatus terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Phase {
    /// The table matches the spec.
    InSync,
    /// Steps are running, or will be retried.
    Progressing { reason: String, message: String },
    /// A human must act: approval, a spec fix, a permission.
    Stalled { reason: String, message: String },
    /// Writes are off (paused or Observe); `ready` when nothing differs.
    Holding {
        reason: String,
        message: String,
        ready: bool,
    },
}

fn cond(
    type_: &str,
    on: bool,
    reason: &str,
    message: &str,
    generation: Option<i64>,
    now: &str,
) -> Condition {
    Condition {
        type_: type_.into(),
        status: if on { "True" } else { "False" }.into(),
        reason: reason.into(),
        message: message.into(),
        observed_generation: generation,
        last_transition_time: now.into(),
    }
}

/// The four conditions for a phase, keeping transition times from `previous`.
pub fn conditions(
    phase: &Phase,
    drifted: Option<&str>,
    generation: Option<i64>,
    previous: &[Condition],
    now: &str,
) -> Vec<Condition> {
    let mut out = match phase {
        Phase::InSync => vec![
            cond(
                READY,
                true,
                "InSync",
                "the table matches the spec",
                generation,
                now,
            ),
            cond(RECONCILING, false, "InSync", "", generation, now),
            cond(STALLED, false, "InSync", "", generation, now),
        ],
        Phase::Progressing { reason, message } => vec![
            cond(READY, false, reason, message, generation, now),
            cond(RECONCILING, true, reason, message, generation, now),
            cond(STALLED, false, reason, "", generation, now),
        ],
        Phase::Stalled { reason, message } => vec![
            cond(READY, false, reason, message, generation, now),
            cond(RECONCILING, false, reason, "", generation, now),
            cond(STALLED, true, reason, message, generation, now),
        ],
        Phase::Holding {
            reason,
            message,
            ready,
        } => vec![
            cond(READY, *ready, reason, message, generation, now),
            cond(RECONCILING, false, reason, "", generation, now),
            cond(STALLED, false, reason, "", generation, now),
        ],
    };
    out.push(match drifted {
        Some(summary) => cond(DRIFTED, true, "DriftDetected", summary, generation, now),
        None => cond(DRIFTED, false, "NoDrift", "", generation, now),
    });
    for c in &mut out {
        if let Some(p) = previous
            .iter()
            .find(|p| p.type_ == c.type_ && p.status == c.status)
        {
            c.last_transition_time = p.last_transition_time.clone();
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transition_times_survive_unchanged_statuses() {
        let first = conditions(&Phase::InSync, None, Some(1), &[], "t1");
        let second = conditions(&Phase::InSync, Some("+0 ~1 -0"), Some(2), &first, "t2");
        let ready = second.iter().find(|c| c.type_ == READY).unwrap();
        assert_eq!(ready.last_transition_time, "t1", "Ready stayed True");
        assert_eq!(ready.observed_generation, Some(2));
        let drifted = second.iter().find(|c| c.type_ == DRIFTED).unwrap();
        assert_eq!(
            (
                drifted.status.as_str(),
                drifted.last_transition_time.as_str()
            ),
            ("True", "t2")
        );
    }

    #[test]
    fn stalled_is_not_ready_and_not_reconciling() {
        let c = conditions(
            &Phase::Stalled {
                reason: "ApprovalRequired".into(),
                message: "m".into(),
            },
            None,
            Some(3),
            &[],
            "t",
        );
        let get = |t: &str| c.iter().find(|x| x.type_ == t).unwrap().status.clone();
        assert_eq!(
            (get(READY), get(RECONCILING), get(STALLED)),
            ("False".into(), "False".into(), "True".into())
        );
    }
}
