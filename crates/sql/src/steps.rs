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
        precheck(runner, t, step, c, progress).await?;
    }
    let ids = run_statements(runner, t, step, &bound.statements, progress).await?;
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
/// A replace Delta refused because another writer committed meanwhile ran
/// nothing: it is safe to run again, a bounded number of times.
async fn run_statements<R: SqlRunner>(
    runner: &R,
    t: &TableRef,
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
    let mut ids = Vec::new();
    for s in statements {
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
