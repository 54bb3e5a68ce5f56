//! Why an apply refused to run, or stopped before its steps.

use delta_operator_core::plan::PlanId;

use crate::BackendError;

#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    #[error(
        "the plan is stale: it was {expected}, but the tables now plan as {actual}; plan again"
    )]
    Stale { expected: String, actual: PlanId },
    #[error("plan {id} needs approval ({reason}); rerun with --approve {id}")]
    NeedsApproval { id: PlanId, reason: String },
    #[error(
        "--approve {approved} approves nothing: the plan is {id}. Review it, then approve {id}"
    )]
    WrongApproval { id: PlanId, approved: String },
    #[error("the plan is refused by the safety rules; fix the spec and plan again")]
    Rejected,
    #[error("reading the tables failed: {0}")]
    Read(#[from] BackendError),
    /// A table's lock could not be taken (not because another apply holds it:
    /// the store refused, or the lock object could not be written).
    #[error("taking the table locks failed: {0}")]
    Lock(BackendError),
    /// Another apply holds a table of the plan; nothing was changed.
    #[error("{0}")]
    Locked(String),
}
