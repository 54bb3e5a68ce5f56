//! What keeps a step from running, as every kind of step says it (a table's, a
//! schema's, an object's), and the guard the metadata steps (a schema's, an
//! object's) share: not run once stopped or once the apply may not go on, a
//! failure stops what is left.

use std::future::Future;

use delta_operator_core::model::TableRef;

use super::{Options, StepStatus};
use crate::BackendError;

/// A step not run because the apply was told to stop.
pub(super) const STOPPED: &str = "not run: the apply was stopped (interrupted, or its lease lost)";

/// A step not run because what it needs (`by`) did not reach its spec.
pub(super) fn blocked_detail(by: &[TableRef]) -> String {
    format!(
        "not run: blocked by {}, which did not reach its spec in this apply",
        by.iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// Runs a metadata step (`step`: re-read, skip what holds, run) unless `stop`
/// is set or the apply may not go on (then `detail` says so); its status and
/// detail go in `status` and `detail`, and a failure sets `stop`. True when
/// the step ran (its report's event is then due).
pub(super) async fn run_guarded(
    stop: &mut bool,
    opts: &Options<'_>,
    status: &mut StepStatus,
    detail: &mut Option<String>,
    step: impl Future<Output = Result<(StepStatus, Option<String>), BackendError>>,
) -> bool {
    if !*stop && !(opts.may_continue)() {
        *stop = true;
        *detail = Some(STOPPED.into());
    }
    if *stop {
        return false;
    }
    *status = match step.await {
        Ok((s, d)) => {
            *detail = d;
            s
        }
        Err(e) => {
            *stop = true;
            StepStatus::Failed {
                error: e.to_string(),
            }
        }
    };
    true
}
