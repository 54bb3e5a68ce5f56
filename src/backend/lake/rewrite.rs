//! The lake backend's basic rewrite: read the table through DataFusion with the
//! new projection, convert and check everything in memory, and only then
//! overwrite the table with the new schema (one commit in the same Delta log,
//! so history and the restore point survive). A failed conversion or check
//! leaves the original untouched.

use std::sync::Arc;

use deltalake::arrow::array::{Array, ArrayRef};
use deltalake::arrow::compute::{cast_with_options, CastOptions};
use deltalake::arrow::datatypes::Schema as ArrowSchema;
use deltalake::arrow::record_batch::RecordBatch;
use deltalake::datafusion::prelude::SessionContext;
use deltalake::kernel::engine::arrow_conversion::TryIntoArrow;
use deltalake::kernel::transaction::CommitProperties;
use deltalake::kernel::StructType;
use deltalake::operations::write::SchemaMode;
use deltalake::protocol::SaveMode;
use deltalake::DeltaTable;

use super::schema::struct_to_json;
use super::{delta_err, BackendError, Progress, StepOutcome};
use crate::plan::steps::{Projection, Rewrite, Source};

/// A DataFusion SQL identifier.
fn ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

fn df_err(e: impl std::fmt::Display) -> BackendError {
    BackendError::Refused { message: e.to_string() }
}

/// The rewritten rows, converted and checked: nothing has been written yet.
pub async fn project(table: &DeltaTable, rw: &Rewrite, progress: Progress<'_>) -> Result<Vec<RecordBatch>, BackendError> {
    let ctx = SessionContext::new();
    table.update_datafusion_session(&ctx.state()).map_err(delta_err)?;
    let provider = table.table_provider().await.map_err(df_err)?;
    ctx.register_table("src", provider).map_err(df_err)?;

    // Counts before: rows, and NULLs in every column whose values are converted.
    let converted: Vec<(usize, &str)> = rw
        .columns
        .iter()
        .enumerate()
        .filter_map(|(i, p)| match &p.source {
            Source::Cast { from, .. } => Some((i, from.as_str())),
            _ => None,
        })
        .collect();
    let mut count_sql = String::from("SELECT count(*)");
    for (_, from) in &converted {
        count_sql.push_str(&format!(", count({})", ident(from)));
    }
    count_sql.push_str(" FROM src");
    let counts = ctx.sql(&count_sql).await.map_err(df_err)?.collect().await.map_err(df_err)?;
    let count_at = |col: usize| -> i64 {
        counts.first().map_or(0, |b| {
            b.column(col).as_any().downcast_ref::<deltalake::arrow::array::Int64Array>().map_or(0, |a| a.value(0))
        })
    };
    let rows_before = count_at(0);
    let nulls_before: Vec<i64> = (0..converted.len()).map(|i| rows_before - count_at(i + 1)).collect();
    progress(&format!("reading {rows_before} rows"));

    let select: Vec<String> = rw
        .columns
        .iter()
        .map(|p| {
            let expr = match &p.source {
                Source::Copy { from } | Source::Cast { from, .. } => ident(from),
                Source::Using { expression } => format!("({expression})"),
                Source::Null => "NULL".to_string(),
            };
            format!("{expr} AS {}", ident(&p.field.name))
        })
        .collect();
    let batches = ctx
        .sql(&format!("SELECT {} FROM src", select.join(", ")))
        .await
        .map_err(|e| BackendError::CheckFailed { message: format!("the projection failed, the table is untouched: {e}") })?
        .collect()
        .await
        .map_err(|e| BackendError::CheckFailed { message: format!("reading the table failed, the table is untouched: {e}") })?;

    // The target schema, exactly as the spec declares it (types, nullability, comments).
    let fields: Vec<_> = rw.columns.iter().map(|p| (p.field.clone(), None)).collect();
    let target: StructType = serde_json::from_value(struct_to_json(&fields)).map_err(df_err)?;
    let arrow_schema: ArrowSchema = (&target).try_into_arrow().map_err(df_err)?;
    let arrow_schema = Arc::new(arrow_schema);

    let strict = CastOptions { safe: false, ..Default::default() };
    let mut out = Vec::with_capacity(batches.len());
    let mut rows_after = 0i64;
    let mut nulls_after = vec![0i64; converted.len()];
    for batch in &batches {
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(rw.columns.len());
        for (i, field) in arrow_schema.fields().iter().enumerate() {
            let col = batch.column(i);
            let cast = cast_with_options(col, field.data_type(), &strict).map_err(|e| BackendError::CheckFailed {
                message: format!("column {} cannot be converted to {}: {e}; the table is untouched", field.name(), rw.columns[i].field.data_type),
            })?;
            if let Some(k) = converted.iter().position(|(c, _)| *c == i) {
                nulls_after[k] += cast.null_count() as i64;
            }
            columns.push(cast);
        }
        let b = RecordBatch::try_new(arrow_schema.clone(), columns).map_err(|e| BackendError::CheckFailed {
            message: format!("{e}; a column declared NOT NULL has NULLs, the table is untouched"),
        })?;
        rows_after += b.num_rows() as i64;
        out.push(b);
    }
    if rows_after != rows_before {
        return Err(BackendError::CheckFailed { message: format!("read {rows_after} rows but the table has {rows_before}; the table is untouched") });
    }
    for (k, (i, from)) in converted.iter().enumerate() {
        if nulls_after[k] > nulls_before[k] {
            return Err(BackendError::CheckFailed {
                message: format!(
                    "converting {from} to {} would turn {} values into NULL; the table is untouched",
                    rw.columns[*i].field.data_type,
                    nulls_after[k] - nulls_before[k]
                ),
            });
        }
    }
    if out.is_empty() {
        out.push(RecordBatch::new_empty(arrow_schema.clone()));
    }
    Ok(out)
}

/// Every row of a (staging) table, in the rewrite's target schema.
pub async fn read_all(table: &DeltaTable, rw: &Rewrite) -> Result<Vec<RecordBatch>, BackendError> {
    let passthrough = Rewrite {
        columns: rw.columns.iter().map(|p| Projection { field: p.field.clone(), source: Source::Copy { from: p.field.name.clone() } }).collect(),
        partitioned_by: rw.partitioned_by.clone(),
        drops: vec![],
    };
    project(table, &passthrough, &|_| {}).await
}

/// Overwrites `table` with `batches` and the rewrite's schema and partitioning,
/// as one new version in the same Delta log.
pub async fn overwrite(table: DeltaTable, batches: Vec<RecordBatch>, rw: &Rewrite, props: CommitProperties, progress: Progress<'_>) -> Result<StepOutcome, BackendError> {
    let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
    progress(&format!("writing {rows} rows"));
    table
        .write(batches)
        .with_save_mode(SaveMode::Overwrite)
        .with_schema_mode(SchemaMode::Overwrite)
        .with_partition_columns(rw.partitioned_by.clone())
        .with_commit_properties(props)
        .await
        .map_err(delta_err)?;
    Ok(StepOutcome { detail: Some(format!("wrote {rows} rows")) })
}
