//! The fencing commit: before the files of another run are removed as
//! leftovers, a commit is written to the table, conditioned on the version the
//! leftovers were judged at.
//!
//! The lock's fence ([`delta_operator_backend::TableRun::fence`]) is a
//! re-check right before a commit: a holder that pauses longer than the lock's
//! lifetime *between* that check and its commit (on another host, where its
//! process cannot be seen; a partitioned pod) would still commit, naming the
//! files a second apply has meanwhile removed as leftovers. The Delta log
//! closes that window. Every replace is conditioned on the version it read, so
//! once any commit lands after that version, the paused holder's commit can
//! only fail (its next round then finds the lock lost, and commits nothing).
//! The remover's own commit is conditioned too: if the holder's commit won the
//! race, the remover's fails, nothing is removed, and the next look at the
//! table sees those files as the table's own.
//!
//! The commit carries nothing but its `commitInfo` (operation
//! [`FENCE_OPERATION`], the step's and run's properties, the runs it fences as
//! `operationParameters.fencedRuns`):
//! no data, schema or protocol change, so readers see the table as before and
//! a replace catching up treats it as an append of no files. Nothing in the
//! Delta protocol asks a commit for more than one action, and `CommitBuilder`
//! given no actions writes exactly a `commitInfo`; this one is given its own
//! (delta-rs's `DeltaOperation` has no name for a fence, and a history entry
//! should say what it is). delta-rs and Python deltalake read past it and list
//! it in the history (tests/data_safety.rs, tests/lake_s3.rs).

use std::collections::HashMap;

use deltalake::DeltaTable;
use deltalake::kernel::transaction::{CommitBuilder, CommitProperties};
use deltalake::kernel::{Action as DeltaAction, CommitInfo};
use deltalake::protocol::DeltaOperation;
use serde_json::Value;

use super::replace::{NotCommitted, not_committed};
use super::{BackendError, delta_err};

/// The operation name of a fencing commit in the table's history.
pub const FENCE_OPERATION: &str = "DELTA-OPERATOR FENCE";

/// Commits the fence against `table`'s version, naming the `fenced` runs whose
/// files are about to be removed; `Moved` when a commit landed after that version.
pub async fn commit(
    table: &DeltaTable,
    fenced: &[String],
    props: CommitProperties,
) -> Result<u64, NotCommitted> {
    let snap = table
        .snapshot()
        .map_err(|e| NotCommitted::Failed(delta_err(e)))?;
    let read = table.version();
    let now = i64::try_from(delta_operator_backend::lock::now_ms()).unwrap_or(i64::MAX);
    let info = CommitInfo {
        timestamp: Some(now),
        operation: Some(FENCE_OPERATION.to_string()),
        // Delta's operationParameters are strings (JSON-encoded where they are not)
        operation_parameters: Some(HashMap::from([(
            "fencedRuns".to_string(),
            Value::String(serde_json::to_string(fenced).unwrap_or_default()),
        )])),
        read_version: read,
        is_blind_append: Some(false),
        engine_info: Some(format!("delta-operator/{}", env!("CARGO_PKG_VERSION"))),
        ..Default::default()
    };
    // the commitInfo given here is the commit's own (delta-rs adds none of its own); the
    // operation below is only what delta-rs checks the commit against: no data changes
    let op = DeltaOperation::SetTableProperties {
        properties: HashMap::new(),
    };
    CommitBuilder::from(props.with_max_retries(0))
        .with_actions(vec![DeltaAction::CommitInfo(info)])
        .build(Some(snap), table.log_store(), op)
        .await
        .map(|done| done.version())
        .map_err(not_committed)
}

/// The message when the table kept moving under the remover: nothing was removed.
pub fn moved_message(t: &impl std::fmt::Display, attempts: usize) -> BackendError {
    BackendError::Transient(format!(
        "{t} took a new commit each of {attempts} times its leftovers were listed; nothing was removed (a run that looked interrupted may have committed meanwhile): plan again"
    ))
}
