//! A table's recent history, for the windows of its restore points
//! (`core::plan::undo_window`): the newest commits' times and the VACUUMs
//! among them, read from the commit files themselves (a bounded read: at most
//! `HISTORY_DEPTH` files, a few at a time, whatever the history's length).
//! Read only for a table a plan may restore (`Backend::history`).

use deltalake::DeltaTable;
use futures::{StreamExt as _, TryStreamExt as _};
use serde_json::Value;

use delta_operator_backend::BackendError;
use delta_operator_core::model::history::{HISTORY_DEPTH, TableHistory, VacuumCommit};

use super::delta_err;

/// Commit files read at once.
const READ_AHEAD: usize = 8;

/// A number Delta logs as a number (delta-rs) or as text (Spark).
fn as_millis(v: &Value) -> Option<i64> {
    v.as_i64()
        .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
}

/// What a commit file's `commitInfo` says: its time (the in-commit timestamp,
/// else the commitInfo's; None without either) and whether it is a VACUUM's.
pub fn commit_facts(bytes: &[u8]) -> (Option<i64>, Option<VacuumCommit>) {
    let Some(info) = bytes
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .filter_map(|l| serde_json::from_slice::<Value>(l).ok())
        .find_map(|mut v| v.get_mut("commitInfo").map(Value::take))
    else {
        return (None, None);
    };
    let at_ms = info
        .get("inCommitTimestamp")
        .and_then(as_millis)
        .or_else(|| info.get("timestamp").and_then(as_millis));
    let params = info.get("operationParameters");
    let vacuum = info
        .get("operation")
        .and_then(Value::as_str)
        .and_then(|op| {
            VacuumCommit::of_operation(op, |name| {
                params.and_then(|p| p.get(name)).and_then(as_millis)
            })
        });
    (at_ms, vacuum)
}

/// The history of `table` from its newest `HISTORY_DEPTH` commit files, as
/// read at `read_at_ms`. A commit file already cleaned up (log retention) or
/// without a time is left out.
pub async fn read(table: &DeltaTable, read_at_ms: i64) -> Result<TableHistory, BackendError> {
    let Some(newest) = table.version() else {
        return Ok(TableHistory {
            read_at_ms,
            ..Default::default()
        });
    };
    let snapshot = table.snapshot().map_err(delta_err)?;
    let properties = snapshot.metadata().configuration().clone();
    let oldest = (newest + 1).saturating_sub(HISTORY_DEPTH as u64);
    let store = table.log_store();
    let read: Vec<(u64, Option<i64>, Option<VacuumCommit>)> =
        futures::stream::iter(oldest..=newest)
            .map(|v| {
                let store = store.clone();
                async move {
                    let bytes = store.read_commit_entry(v).await.map_err(delta_err)?;
                    let (at_ms, vacuum) = bytes.map(|b| commit_facts(&b)).unwrap_or_default();
                    Ok::<_, BackendError>((v, at_ms, vacuum))
                }
            })
            .buffered(READ_AHEAD)
            .try_collect()
            .await?;
    Ok(TableHistory::from_commits(read_at_ms, read).with_retention_of(properties))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commit_facts_of_delta_rs_and_spark_commits() {
        let rs = br#"{"commitInfo":{"timestamp":1700000000000,"operation":"VACUUM START","operationParameters":{"retentionCheckEnabled":false,"specifiedRetentionMillis":0,"defaultRetentionMillis":604800000}}}
"#;
        assert_eq!(
            commit_facts(rs),
            (
                Some(1_700_000_000_000),
                Some(VacuumCommit::Start {
                    retention_ms: Some(0)
                })
            )
        );
        // Spark logs the parameters as text, and may log no specified retention
        let spark = br#"{"commitInfo":{"timestamp":5,"operation":"VACUUM START","operationParameters":{"retentionCheckEnabled":"true","defaultRetentionMillis":"604800000"}}}"#;
        assert_eq!(
            commit_facts(spark).1,
            Some(VacuumCommit::Start {
                retention_ms: Some(604_800_000)
            })
        );
        // the commitInfo line is found among the actions; an in-commit timestamp wins
        let write = br#"{"add":{"path":"a.parquet"}}
{"commitInfo":{"timestamp":9,"inCommitTimestamp":7,"operation":"WRITE"}}
"#;
        assert_eq!(commit_facts(write), (Some(7), None));
        assert_eq!(
            commit_facts(br#"{"add":{"path":"a.parquet"}}"#),
            (None, None)
        );
        assert_eq!(commit_facts(b"not json"), (None, None));
        assert_eq!(
            commit_facts(br#"{"commitInfo":{"operation":"VACUUM END"}}"#),
            (None, Some(VacuumCommit::End))
        );
    }
}
