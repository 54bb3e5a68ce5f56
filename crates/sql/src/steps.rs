//! One table step carried out as SQL statements, wherever they run (a SQL
//! warehouse, or a Spark Connect server for OSS Delta): the statements bound
//! to the run (the executor compiled and compared them), the checks before it, the
//! statements in order (a replace another writer beat is tried again), and the
//! staged check after a stage.

use std::time::Duration;

use delta_operator_backend::{BackendError, Progress, StepOutcome, StepProgress, TableRun};
use delta_operator_core::model::{ObservedTable, TableRef};
use delta_operator_core::plan::compile::Compiled;
use delta_operator_core::plan::statement::Statement;
use delta_operator_core::plan::steps::{Rewrite, RewritePhase};
use delta_operator_core::plan::{Action, CheckWhen, Step, StepCheck, TablePlan};

use crate::compile::SqlCompiler;
use crate::rewrite::{stage_problem, staging_table};
use crate::{Refusal, SqlRunner, StatementError};

/// Carries out one step of its table's plan (see the module comment): `bound`
/// is the step compiled for this run, which the executor checked is what the
/// plan shows.
pub async fn run_step<R: SqlRunner>(
    runner: &R,
    compiler: &SqlCompiler,
    run: &TableRun,
    plan: &TablePlan,
    step: &Step,
    bound: &Compiled,
    progress: StepProgress<'_>,
) -> Result<StepOutcome, BackendError> {
    // a running statement reports no progress (the Statement Execution API has none): notes only
    let progress = progress.note;
    let t = &run.table;
    for c in bound.checks.iter().filter(|c| c.when == CheckWhen::Before) {
        match &step.action {
            // a rewrite's check before is the count of '' partition values
            Action::Rewrite { rewrite, .. } => {
                empty_partitions(runner, t, rewrite, c, progress).await?
            }
            _ => precheck(runner, t, step, c, progress).await?,
        }
    }
    // tests pause here, after the checks (a holder whose lock is broken meanwhile, or
    // that stalls past its expiry): the statements below are fenced each
    delta_operator_backend::slow_failpoint("statements").await;
    let ids = run_statements(runner, run, step, &bound.statements, progress).await?;
    let mut detail = (!ids.is_empty()).then(|| format!("statement {}", ids.join(", ")));
    if let (
        Action::Rewrite {
            rewrite,
            phase: RewritePhase::Stage,
        },
        Some(check),
    ) = (
        &step.action,
        bound.checks.iter().find(|c| c.when == CheckWhen::After),
    ) {
        detail = Some(
            check_stage(
                runner,
                compiler,
                run,
                rewrite,
                plan.observed.as_deref(),
                check,
                progress,
            )
            .await?,
        );
    }
    Ok(StepOutcome { detail })
}

/// Runs a step's statements in order, each to its end, and returns their ids.
/// Each is sent only while the run still holds its table's lock, renewed right
/// before it is sent (`TableRun::fence`): the checks before a step can take as
/// long as a scan, and a lock broken meanwhile (a forced unlock, a takeover
/// after an expiry) stops the step with nothing more sent. A replace Delta
/// refused because another writer committed meanwhile ran nothing: it is safe
/// to run again, a bounded number of times.
async fn run_statements<R: SqlRunner>(
    runner: &R,
    run: &TableRun,
    step: &Step,
    statements: &[Statement],
    progress: Progress<'_>,
) -> Result<Vec<String>, BackendError> {
    let replaces = matches!(
        &step.action,
        Action::Rewrite {
            phase: RewritePhase::WriteOnce | RewritePhase::ReplaceChecked,
            ..
        }
    );
    let t = &run.table;
    let mut ids = Vec::new();
    for (i, s) in statements.iter().enumerate() {
        let Some(s) = s.as_sql() else {
            return Err(BackendError::Refused {
                message: format!(
                    "step {} of {t}: '{s}' is not SQL, and this step runs SQL; plan again",
                    step.number
                ),
            });
        };
        tracing::info!(table = %t, step = step.number, statement = %s, "running");
        let mut attempt = 1;
        loop {
            run.fence().await.map_err(|e| match e {
                BackendError::LockLost(m) => BackendError::LockLost(format!(
                    "{m} (statement {} of step {} was not sent)",
                    i + 1,
                    step.number
                )),
                other => other,
            })?;
            match runner.execute(s, progress).await {
                Ok(r) => {
                    ids.push(r.statement_id);
                    break;
                }
                Err(StatementError::Refused(w))
                    if replaces && is_write_conflict(&w) && attempt < REPLACE_ATTEMPTS =>
                {
                    progress(&format!(
                        "another writer committed while the replace ran (attempt {attempt} of {REPLACE_ATTEMPTS}); nothing was replaced, trying again"
                    ));
                    tokio::time::sleep(Duration::from_secs(1 << attempt.min(4))).await;
                    attempt += 1;
                }
                Err(StatementError::Refused(w)) if replaces && is_write_conflict(&w) => {
                    return Err(BackendError::Refused {
                        message: format!(
                            "{w}\n{t} took new commits from another writer during each of {REPLACE_ATTEMPTS} attempts to replace it; nothing was replaced. Pause its writers for the length of one rewrite (or apply when they are quieter) and apply again"
                        ),
                    });
                }
                Err(e) => return Err(BackendError::from(e)),
            }
        }
    }
    Ok(ids)
}

/// The staged check: one SELECT comparing the original with its staging
/// copy (rows, NULLs of converted columns, NULLs in NOT NULL columns). A
/// failure leaves the original untouched and the copy kept, named.
async fn check_stage<R: SqlRunner>(
    runner: &R,
    compiler: &SqlCompiler,
    run: &TableRun,
    rw: &Rewrite,
    live: Option<&ObservedTable>,
    check: &StepCheck,
    progress: Progress<'_>,
) -> Result<String, BackendError> {
    let t = &run.table;
    let staging = compiler.names.table(&staging_table(t, &run.id));
    let r = runner.execute(&check.query, progress).await?;
    let row = r.rows.first().ok_or_else(|| BackendError::Refused {
        message: "the staged check returned no row".into(),
    })?;
    match stage_problem(rw, live, &r.columns, row) {
        Ok(None) => {
            let rows = r
                .column("s_rows")
                .and_then(|i| row.get(i).cloned().flatten())
                .unwrap_or_default();
            Ok(format!(
                "staged {rows} rows at {staging}, checked (statement {})",
                r.statement_id
            ))
        }
        Ok(Some(problem)) => Err(BackendError::CheckFailed {
            message: format!(
                "{problem}; the original table is untouched; the staging copy is kept at {staging} to inspect"
            ),
        }),
        Err(e) => Err(BackendError::Refused {
            message: format!("the staged check of {staging}: {e}"),
        }),
    }
}

/// A check before a step's statements: a count of the rows the step would
/// fail on; any refuses the step with the count, before the warehouse scans
/// the table itself and fails with less to say.
async fn precheck<R: SqlRunner>(
    runner: &R,
    t: &TableRef,
    step: &Step,
    check: &StepCheck,
    progress: Progress<'_>,
) -> Result<(), BackendError> {
    let r = runner.execute(&check.query, progress).await?;
    let n: u64 = r
        .rows
        .first()
        .and_then(|row| row.first().cloned().flatten())
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| BackendError::Refused {
            message: format!("the check before {} returned no count", step.action.title()),
        })?;
    if n > 0 {
        return Err(BackendError::CheckFailed {
            message: format!(
                "{n} rows of {t} would fail {}: nothing was changed. Fix those rows (the check: {}) or change the spec",
                step.action.title(),
                check.query
            ),
        });
    }
    progress(&format!(
        "checked: no row of {t} fails {}",
        step.action.title()
    ));
    Ok(())
}

/// A rewrite's count of the rows whose new partition value would be ''
/// (`partitions::empty_count`): any refuses the step, naming each column and
/// its count, before anything is written.
async fn empty_partitions<R: SqlRunner>(
    runner: &R,
    t: &TableRef,
    rw: &Rewrite,
    check: &StepCheck,
    progress: Progress<'_>,
) -> Result<(), BackendError> {
    let r = runner.execute(&check.query, progress).await?;
    let row = r.rows.first().ok_or_else(|| BackendError::Refused {
        message: "the count of empty partition values returned no row".into(),
    })?;
    match crate::partitions::emptied(rw, &r.columns, row) {
        Ok(None) => {
            progress(&format!(
                "checked: no row of {t} would hold '' in a partition column"
            ));
            Ok(())
        }
        Ok(Some(message)) => Err(BackendError::CheckFailed { message }),
        Err(e) => Err(BackendError::Refused {
            message: format!("the count of empty partition values of {t}: {e}"),
        }),
    }
}

/// How often a replace is tried when another writer commits while it runs.
const REPLACE_ATTEMPTS: u32 = 5;

/// Delta's refusal of a commit because a concurrent one changed what it read.
pub fn is_write_conflict(w: &Refusal) -> bool {
    let m = &w.message;
    [
        "DELTA_CONCURRENT_APPEND",
        "DELTA_METADATA_CHANGED",
        "DELTA_CONCURRENT_DELETE_READ",
        "DELTA_CONCURRENT_DELETE_DELETE",
        "DELTA_CONCURRENT_TRANSACTION",
        "ConcurrentAppendException",
        "MetadataChangedException",
    ]
    .iter()
    .any(|c| m.contains(c))
}
