//! kstatus conditions, computed whole on every reconcile. A condition keeps
//! its lastTransitionTime while its status does not change.

use delta_operator_api::reason::{Phase, Reason};
use delta_operator_api::spec::crd::Condition;

pub const READY: &str = "Ready";
pub const RECONCILING: &str = "Reconciling";
pub const STALLED: &str = "Stalled";
pub const DRIFTED: &str = "Drifted";

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

/// The four conditions for a reason (which fixes the phase), keeping
/// transition times from `previous`. Holding is Ready while nothing differs,
/// and always under Observe (the drift is shown, which is all Observe does).
pub fn conditions(
    reason: Reason,
    message: &str,
    drifted: Option<&str>,
    generation: Option<i64>,
    previous: &[Condition],
    now: &str,
) -> Vec<Condition> {
    let name = reason.to_string();
    let r = name.as_str();
    let mut out = match reason.phase() {
        Phase::InSync => vec![
            cond(READY, true, r, message, generation, now),
            cond(RECONCILING, false, r, "", generation, now),
            cond(STALLED, false, r, "", generation, now),
        ],
        Phase::Progressing => vec![
            cond(READY, false, r, message, generation, now),
            cond(RECONCILING, true, r, message, generation, now),
            cond(STALLED, false, r, "", generation, now),
        ],
        Phase::Stalled => vec![
            cond(READY, false, r, message, generation, now),
            cond(RECONCILING, false, r, "", generation, now),
            cond(STALLED, true, r, message, generation, now),
        ],
        Phase::Holding => {
            let ready = reason == Reason::Observing || drifted.is_none();
            vec![
                cond(READY, ready, r, message, generation, now),
                cond(RECONCILING, false, r, "", generation, now),
                cond(STALLED, false, r, "", generation, now),
            ]
        }
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
        let first = conditions(Reason::InSync, "m", None, Some(1), &[], "t1");
        let second = conditions(Reason::InSync, "m", Some("+0 ~1 -0"), Some(2), &first, "t2");
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
        let c = conditions(Reason::ApprovalRequired, "m", None, Some(3), &[], "t");
        let get = |t: &str| c.iter().find(|x| x.type_ == t).unwrap().status.clone();
        assert_eq!(
            (get(READY), get(RECONCILING), get(STALLED)),
            ("False".into(), "False".into(), "True".into())
        );
    }
}
