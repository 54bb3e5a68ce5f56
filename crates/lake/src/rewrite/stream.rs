//! The stream: the table read batch by batch through the projection (built as
//! DataFusion expressions), each batch converted, checked and written into the sink.

use deltalake::DeltaTable;
use deltalake::arrow::array::Array;
use deltalake::arrow::compute::CastOptions;
use deltalake::arrow::datatypes::SchemaRef;
use deltalake::arrow::record_batch::RecordBatch;
use deltalake::datafusion::common::{DFSchema, ScalarValue};
use deltalake::datafusion::logical_expr::{Expr, ident, lit};
use deltalake::datafusion::prelude::SessionContext;
use deltalake::kernel::Add;
use futures::StreamExt;

use crate::BackendError;
use delta_operator_backend::failpoint;
use delta_operator_backend::{RowsDone, StepProgress};
use delta_operator_core::plan::steps::{Rewrite, Source};

use super::budget::{in_mib, release_freed_memory};
use super::checks::Checks;
use super::convert::{convert, empty_values};
use super::counts::frame;
use super::sink::Sink;
use super::{
    Budget, MEMORY_LIMIT_ENV, batch_rows, df_err, df_message, row_bytes, session_with_batches,
    stream_permit,
};

/// What a stream saw.
#[derive(Debug, Default, Clone)]
pub struct StreamStats {
    pub rows: i64,
    /// Non-NULL values per converted column (in `Baseline::converted` order).
    pub non_null: Vec<i64>,
    /// Non-NULL values per output column (for NOT NULL columns).
    pub present: Vec<i64>,
}

/// How a streamed conversion runs.
pub struct StreamSpec<'a> {
    /// The projections the SELECT reads (the rewrite's, or copies by name from staging).
    pub select: &'a Rewrite,
    pub target: SchemaRef,
    /// Strict casts (an error ends the write) or safe ones (a NULL, caught by the check).
    pub strict: bool,
    /// The projections of `Baseline::converted` are counted by these indexes.
    pub converted: Vec<usize>,
    pub checks: &'a Checks,
    /// Abort at the second batch (a failpoint name).
    pub crash_mid_stream: Option<&'static str>,
    /// The rows the source holds (counted before), for the progress shown.
    pub expected_rows: Option<u64>,
}

/// How often a rewrite reports the rows it has written.
const ROWS_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// The select list: each projection's value under the alias `__c<i>`.
fn select_exprs(
    ctx: &SessionContext,
    schema: &DFSchema,
    select: &Rewrite,
) -> Result<Vec<Expr>, BackendError> {
    let state = ctx.state();
    select
        .columns
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let e = match &p.source {
                // the spec's expression, parsed as exactly one expression over the live columns
                Source::Using { expression } => state.create_logical_expr(expression, schema).map_err(|e| BackendError::CheckFailed {
                    message: format!("the `using:` expression of column {} cannot be used on this table: {e}; the table is untouched", p.field.name),
                })?,
                Source::Null => lit(ScalarValue::Null),
                s => ident(s.from().ok_or_else(|| df_err("a projection without a source column"))?),
            };
            Ok(e.alias(format!("__c{i}")))
        })
        .collect()
}

/// Streams the rows of `source` (all of it, or only `files`) through the
/// projection into `sink`, checking CHECK constraints and NOT NULL on every
/// batch, in the memory budget whatever the table's size (`budget.rs`), one
/// stream at a time per process. Returns the counts; nothing is committed here.
pub async fn convert_into(
    source: &DeltaTable,
    files: Option<&[Add]>,
    spec: &StreamSpec<'_>,
    sink: &mut Sink,
    progress: StepProgress<'_>,
) -> Result<StreamStats, BackendError> {
    let budget = Budget::from_env()?;
    let _turn = stream_permit().await;
    // batches small enough that what the expressions make fits the batch's share
    let makes = spec
        .select
        .columns
        .iter()
        .filter_map(|p| match &p.source {
            Source::Using { expression } => Some(row_bytes(expression)),
            _ => None,
        })
        .chain([spec.checks.row_bytes()])
        .max()
        .unwrap_or(0);
    let ctx = session_with_batches(batch_rows(&budget, makes))?;
    let df = frame(&ctx, source, files).await?;
    let exprs = select_exprs(&ctx, df.schema(), spec.select)?;
    let df = df.select(exprs).map_err(|e| BackendError::CheckFailed {
        message: format!("the projection failed, the table is untouched: {e}"),
    })?;
    let mut input = df
        .execute_stream()
        .await
        .map_err(|e| BackendError::CheckFailed {
            message: format!(
                "reading the table failed, the table is untouched: {}",
                df_message(e)
            ),
        })?;
    let limit = budget.batch();
    let opts = CastOptions {
        safe: !spec.strict,
        ..Default::default()
    };
    let mut stats = StreamStats {
        non_null: vec![0; spec.converted.len()],
        present: vec![0; spec.select.columns.len()],
        ..Default::default()
    };
    let partitions = partition_columns(spec);
    let mut empty = vec![0i64; partitions.len()];
    let mut batches = 0usize;
    let mut since_trim = 0usize;
    let mut last_report = std::time::Instant::now();
    while let Some(batch) = input.next().await {
        batches += 1;
        if batches == 2
            && let Some(fp) = spec.crash_mid_stream
        {
            failpoint(fp);
        }
        let batch = batch.map_err(|e| BackendError::CheckFailed {
            message: format!(
                "reading the table failed, the table is untouched: {}",
                df_message(e)
            ),
        })?;
        // what the expressions produced is bounded too (a scalar function's output is not
        // counted by DataFusion's pool)
        let size = batch.get_array_memory_size();
        if size > limit {
            return Err(BackendError::CheckFailed {
                message: format!(
                    "one batch of {} rows converted to {} MiB, over the {} MiB a batch may take of the lake rewrite's memory budget of {} MiB; the table is untouched. Check the `using:` expressions for one that builds huge values, or set {MEMORY_LIMIT_ENV} higher",
                    batch.num_rows(),
                    in_mib(size),
                    in_mib(limit),
                    budget.mib()
                ),
            });
        }
        let out = convert_batch(&batch, spec, &opts)?;
        for (k, (i, _)) in partitions.iter().enumerate() {
            empty[k] += empty_values(out.column(*i)) as i64;
        }
        stats.rows += out.num_rows() as i64;
        for (k, i) in spec.converted.iter().enumerate() {
            stats.non_null[k] += (out.num_rows() - out.column(*i).null_count()) as i64;
        }
        for i in 0..out.num_columns() {
            stats.present[i] += (out.num_rows() - out.column(i).null_count()) as i64;
        }
        sink.write(out).await?;
        since_trim += size;
        if since_trim >= budget.trim_every() {
            release_freed_memory();
            since_trim = 0;
        }
        // tests: a rewrite long enough to watch (`slow-batch`: each batch waits)
        delta_operator_backend::slow_failpoint("batch").await;
        // tests: a rewrite that needs more memory than the pod's limit (`hog-batch`)
        delta_operator_backend::hog_failpoint("batch").await;
        // the scan runs inside this task (one file at a time, no DataFusion tasks of its own):
        // let the other tasks of the runtime (lock renewals, other tables, an appender) run
        tokio::task::yield_now().await;
        if last_report.elapsed() >= ROWS_EVERY {
            (progress.rows)(RowsDone {
                done: stats.rows as u64,
                of: spec.expected_rows,
            });
            last_report = std::time::Instant::now();
        }
    }
    if let Some(refusal) = emptied_partitions(&partitions, &empty) {
        return Err(refusal);
    }
    sink.flush().await?;
    (progress.rows)(RowsDone {
        done: stats.rows as u64,
        of: spec.expected_rows,
    });
    Ok(stats)
}

/// The output's partition columns (index, name), where Delta stores '' as NULL.
fn partition_columns<'a>(spec: &'a StreamSpec<'_>) -> Vec<(usize, &'a str)> {
    spec.target
        .fields()
        .iter()
        .enumerate()
        .filter(|(_, f)| {
            spec.select
                .partitioned_by
                .iter()
                .any(|p| p.eq_ignore_ascii_case(f.name()))
        })
        .map(|(i, f)| (i, f.name().as_str()))
        .collect()
}

/// One batch of the projection, each column converted to its target type (read by its alias,
/// never by position), then held to NOT NULL and the table's CHECKs.
fn convert_batch(
    batch: &RecordBatch,
    spec: &StreamSpec<'_>,
    opts: &CastOptions<'_>,
) -> Result<RecordBatch, BackendError> {
    let mut columns = Vec::with_capacity(spec.select.columns.len());
    for (i, (p, tf)) in spec
        .select
        .columns
        .iter()
        .zip(spec.target.fields().iter())
        .enumerate()
    {
        // by alias, never by position
        let input = batch
            .column_by_name(&format!("__c{i}"))
            .ok_or_else(|| df_err(format!("the projection lost column __c{i}")))?;
        let converted = convert(input, &p.source, tf.data_type(), opts).map_err(|e| {
            BackendError::CheckFailed {
                message: format!(
                    "column {} cannot be converted to {}: {e}; the table is untouched",
                    p.field.name, p.field.data_type
                ),
            }
        })?;
        columns.push(converted);
    }
    let out = RecordBatch::try_new(spec.target.clone(), columns).map_err(|e| {
        BackendError::CheckFailed {
            message: format!("{e} (a column declared NOT NULL has NULLs); the table is untouched"),
        }
    })?;
    if let Some(v) = spec.checks.violation(&out) {
        return Err(BackendError::CheckFailed {
            message: format!("{v}; the table is untouched"),
        });
    }
    Ok(out)
}

/// The refusal when rows hold '' in a partition column: Delta would store it as NULL.
fn emptied_partitions(partitions: &[(usize, &str)], empty: &[i64]) -> Option<BackendError> {
    let emptied: Vec<(&str, i64)> = partitions
        .iter()
        .zip(empty)
        .filter(|(_, n)| **n > 0)
        .map(|((_, name), n)| (*name, *n))
        .collect();
    if let Some((first, _)) = emptied.first() {
        let counts: Vec<String> = emptied
            .iter()
            .map(|(name, n)| format!("{n} rows hold '' in partition column {name}"))
            .collect();
        return Some(BackendError::CheckFailed {
            message: format!(
                "{}: Delta stores an empty partition value as NULL, so the rewrite would turn '' into NULL; the table is untouched. Give those rows a value first, or declare a `using:` on the column that maps '' to a value (e.g. `using: \"CASE WHEN {first} = '' THEN '(empty)' ELSE {first} END\"`)",
                counts.join(", ")
            ),
        });
    }
    None
}
