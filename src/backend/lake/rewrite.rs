//! The lake backend's rewrites, streamed: the table is read through DataFusion
//! batch by batch, each batch converted with Arrow (casts; structs rebuilt by
//! field name; arrays of structs rebuilt element by element), and handed to a
//! delta-rs write as it comes, so a table larger than memory can be rewritten.
//!
//! - A write-once rewrite (nothing can lose a value) streams the table into an
//!   overwrite of itself (schema overwrite: one new version in the same log,
//!   so identity, history and the restore point survive). Casts are strict,
//!   rows and NULLs are counted in the stream, and a failure ends the stream
//!   with an error, so nothing is committed.
//! - A staged rewrite streams the converted rows into the staging copy with
//!   non-strict casts (a value that does not convert becomes NULL, as a
//!   non-ANSI CAST would), then checks the staged copy against the original:
//!   the same row count, no converted column with more NULLs, no NULL in a
//!   NOT NULL column. A failed check leaves the original untouched and the
//!   staging copy in place to inspect. The replace then streams the staging
//!   copy into an overwrite of the table.

use std::fmt;
use std::sync::{Arc, Mutex};

use deltalake::arrow::array::{new_null_array, Array, ArrayRef, AsArray, Int64Array, LargeListArray, ListArray, StructArray};
use deltalake::arrow::compute::{cast_with_options, CastOptions};
use deltalake::arrow::datatypes::{DataType as ArrowType, Field, Schema as ArrowSchema, SchemaRef};
use deltalake::arrow::record_batch::RecordBatch;
use deltalake::datafusion::catalog::streaming::StreamingTable;
use deltalake::datafusion::common::DataFusionError;
use deltalake::datafusion::datasource::provider_as_source;
use deltalake::datafusion::execution::TaskContext;
use deltalake::datafusion::logical_expr::LogicalPlanBuilder;
use deltalake::datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use deltalake::datafusion::physical_plan::streaming::PartitionStream;
use deltalake::datafusion::physical_plan::SendableRecordBatchStream;
use deltalake::datafusion::prelude::SessionContext;
use deltalake::kernel::engine::arrow_conversion::TryIntoArrow;
use deltalake::kernel::transaction::CommitProperties;
use deltalake::kernel::StructType;
use deltalake::operations::write::SchemaMode;
use deltalake::protocol::SaveMode;
use deltalake::DeltaTable;
use futures::StreamExt;

use super::schema::struct_to_json;
use super::{delta_err, BackendError, Progress};
use crate::plan::steps::{Projection, Rewrite, Source};

/// A DataFusion SQL identifier.
fn ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

fn df_err(e: impl fmt::Display) -> BackendError {
    BackendError::Refused { message: e.to_string() }
}

/// Test-only crash points, so tests can kill the process at the worst moments
/// of a rewrite and prove a rerun converges. Compiled only into debug builds
/// (`cfg(debug_assertions)`); a release binary ignores the variable.
/// `DELTA_OPERATOR_FAILPOINT=after-stage | during-replace | after-replace`.
pub fn failpoint(name: &str) {
    #[cfg(debug_assertions)]
    if std::env::var("DELTA_OPERATOR_FAILPOINT").is_ok_and(|v| v == name) {
        eprintln!("failpoint {name}: aborting");
        std::process::abort();
    }
    #[cfg(not(debug_assertions))]
    let _ = name;
}

/// The rewrite's target schema as Arrow: exactly as the spec declares it
/// (types, nullability, comments), or with every column nullable for the
/// staging copy (whose NOT NULL columns are checked by counting instead).
pub fn target_schema(rw: &Rewrite, relaxed: bool) -> Result<SchemaRef, BackendError> {
    let fields: Vec<_> = rw
        .columns
        .iter()
        .map(|p| {
            let mut f = p.field.clone();
            f.nullable |= relaxed;
            (f, None)
        })
        .collect();
    let target: StructType = serde_json::from_value(struct_to_json(&fields)).map_err(df_err)?;
    let arrow: ArrowSchema = (&target).try_into_arrow().map_err(df_err)?;
    Ok(Arc::new(arrow))
}

/// Counts over a table: rows, and non-NULL values of each expression.
async fn counts(table: &DeltaTable, exprs: &[String]) -> Result<(i64, Vec<i64>), BackendError> {
    let ctx = SessionContext::new();
    table.update_datafusion_session(&ctx.state()).map_err(delta_err)?;
    ctx.register_table("src", table.table_provider().await.map_err(df_err)?).map_err(df_err)?;
    let mut sql = String::from("SELECT count(*)");
    for (i, e) in exprs.iter().enumerate() {
        sql.push_str(&format!(", count({e}) AS \"__n{i}\""));
    }
    sql.push_str(" FROM src");
    let batches = ctx.sql(&sql).await.map_err(df_err)?.collect().await.map_err(df_err)?;
    let at = |i: usize| -> i64 { batches.first().and_then(|b| b.column(i).as_any().downcast_ref::<Int64Array>().map(|a| a.value(0))).unwrap_or(0) };
    Ok((at(0), (0..exprs.len()).map(|i| at(i + 1)).collect()))
}

/// The live column a converted projection is checked against: its source, or
/// for `using:` a live column of the same name. None: nothing to lose (new).
fn baseline<'a>(p: &'a Projection, live: &ArrowSchema) -> Option<&'a str> {
    match &p.source {
        Source::Using { .. } => live.fields().iter().any(|f| f.name() == &p.field.name).then_some(p.field.name.as_str()),
        s => s.from(),
    }
}

/// What the original holds, counted before a rewrite: the numbers the
/// rewritten rows are checked against.
#[derive(Debug, Clone)]
pub struct Baseline {
    pub rows: i64,
    /// (index of the projection, its live column, non-NULL values in it)
    pub converted: Vec<(usize, String, i64)>,
}

pub async fn baseline_of(table: &DeltaTable, rw: &Rewrite) -> Result<Baseline, BackendError> {
    let live: ArrowSchema = table.snapshot().map_err(delta_err)?.schema().as_ref().try_into_arrow().map_err(df_err)?;
    let converted: Vec<(usize, String)> =
        rw.columns.iter().enumerate().filter(|(_, p)| p.converts()).filter_map(|(i, p)| baseline(p, &live).map(|c| (i, c.to_string()))).collect();
    let exprs: Vec<String> = converted.iter().map(|(_, c)| ident(c)).collect();
    let (rows, non_null) = counts(table, &exprs).await?;
    Ok(Baseline { rows, converted: converted.into_iter().zip(non_null).map(|((i, c), n)| (i, c, n)).collect() })
}

/// Why the rewritten rows do not match the original, or None when they do.
pub fn compare(rw: &Rewrite, before: &Baseline, rows: i64, non_null_after: &[i64], nullable_after: &[i64]) -> Option<String> {
    if rows != before.rows {
        return Some(format!("the rewritten rows number {rows} but the table has {}", before.rows));
    }
    for (k, (i, from, n)) in before.converted.iter().enumerate() {
        let after = non_null_after[k];
        if after < *n {
            let p = &rw.columns[*i];
            return Some(format!("converting {from} to {} ({}) would turn {} values into NULL", p.field.name, p.field.data_type, n - after));
        }
    }
    for (i, p) in rw.columns.iter().enumerate() {
        if !p.field.nullable && nullable_after[i] < rows {
            return Some(format!("column {} is declared NOT NULL but {} rows would have no value", p.field.name, rows - nullable_after[i]));
        }
    }
    None
}

/// Converts one input array (the value a projection reads) to the target type.
fn convert(input: &ArrayRef, source: &Source, to: &ArrowType, opts: &CastOptions) -> Result<ArrayRef, String> {
    match source {
        Source::Null => Ok(new_null_array(to, input.len())),
        Source::Copy { .. } | Source::Cast { .. } | Source::Using { .. } => {
            if input.data_type() == to {
                Ok(input.clone())
            } else {
                cast_with_options(input, to, opts).map_err(|e| e.to_string())
            }
        }
        Source::Struct { fields, .. } => {
            let s = input.as_struct_opt().ok_or_else(|| format!("expected a struct, read {}", input.data_type()))?;
            let ArrowType::Struct(target) = to else { return Err(format!("expected a struct target, got {to}")) };
            let mut children = Vec::with_capacity(fields.len());
            for (p, tf) in fields.iter().zip(target.iter()) {
                let child = match p.source.from() {
                    None => new_null_array(tf.data_type(), s.len()),
                    Some(name) => {
                        // by NAME, never by position
                        let idx = s.fields().iter().position(|f| f.name().eq_ignore_ascii_case(name)).ok_or_else(|| format!("no field {name} in the live struct"))?;
                        convert(s.column(idx), &p.source, tf.data_type(), opts).map_err(|e| format!("{}: {e}", p.field.name))?
                    }
                };
                children.push(child);
            }
            Ok(Arc::new(StructArray::try_new(target.clone(), children, s.nulls().cloned()).map_err(|e| e.to_string())?))
        }
        Source::Transform { fields, .. } => {
            let element = Source::Struct { from: String::new(), fields: fields.clone() };
            match (input.data_type(), to) {
                (ArrowType::List(_), ArrowType::List(tf)) => {
                    let l = input.as_list::<i32>();
                    let values = convert(l.values(), &element, tf.data_type(), opts)?;
                    Ok(Arc::new(ListArray::try_new(tf.clone(), l.offsets().clone(), values, l.nulls().cloned()).map_err(|e| e.to_string())?))
                }
                (ArrowType::LargeList(_), ArrowType::LargeList(tf)) => {
                    let l = input.as_list::<i64>();
                    let values = convert(l.values(), &element, tf.data_type(), opts)?;
                    Ok(Arc::new(LargeListArray::try_new(tf.clone(), l.offsets().clone(), values, l.nulls().cloned()).map_err(|e| e.to_string())?))
                }
                (ArrowType::List(_), ArrowType::LargeList(_)) | (ArrowType::LargeList(_), ArrowType::List(_)) => {
                    // the reader and the writer disagree on offsets: convert, then cast the list
                    let same_kind = match input.data_type() {
                        ArrowType::List(_) => ArrowType::List(Arc::new(Field::new("element", list_element(to).clone(), true))),
                        _ => ArrowType::LargeList(Arc::new(Field::new("element", list_element(to).clone(), true))),
                    };
                    let mid = convert(input, source, &same_kind, opts)?;
                    cast_with_options(&mid, to, opts).map_err(|e| e.to_string())
                }
                (have, _) => Err(format!("expected an array, read {have}")),
            }
        }
    }
}

fn list_element(t: &ArrowType) -> &ArrowType {
    match t {
        ArrowType::List(f) | ArrowType::LargeList(f) => f.data_type(),
        other => other,
    }
}

/// What the stream saw, and the first problem it found.
#[derive(Debug, Default)]
pub struct StreamStats {
    pub rows: i64,
    /// Non-NULL values per converted column (in `Baseline::converted` order).
    pub non_null: Vec<i64>,
    /// Non-NULL values per output column (for NOT NULL columns).
    pub present: Vec<i64>,
    pub failure: Option<String>,
}

/// A one-shot partition: hands DataFusion an already running stream.
struct OnceStream {
    schema: SchemaRef,
    stream: Mutex<Option<SendableRecordBatchStream>>,
}

impl fmt::Debug for OnceStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("OnceStream")
    }
}

impl PartitionStream for OnceStream {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }
    fn execute(&self, _ctx: Arc<TaskContext>) -> SendableRecordBatchStream {
        match self.stream.lock().expect("not poisoned").take() {
            Some(s) => s,
            None => {
                let err = futures::stream::once(async { Err(DataFusionError::Execution("the rewrite stream can be read once".into())) });
                Box::pin(RecordBatchStreamAdapter::new(self.schema.clone(), err))
            }
        }
    }
}

/// How a streamed rewrite runs.
pub struct StreamSpec<'a> {
    pub rw: &'a Rewrite,
    /// The projections the SELECT reads (the rewrite's, or copies by name from staging).
    pub select: &'a Rewrite,
    pub target: SchemaRef,
    /// Strict casts (an error ends the write) or safe ones (a NULL, caught by the check).
    pub strict: bool,
    /// Checked in the stream, before anything is committed.
    pub expect: Option<Baseline>,
    /// Abort at the second batch (the `during-replace` failpoint).
    pub crash_mid_stream: Option<&'static str>,
}

/// Streams `source` through the projection into an overwrite of `dest` (with
/// the new schema and partitioning). Returns the stream's counts; on a failed
/// check or conversion nothing is committed.
pub async fn stream_into(
    source: &DeltaTable,
    dest: DeltaTable,
    spec: StreamSpec<'_>,
    props: CommitProperties,
    progress: Progress<'_>,
) -> Result<(DeltaTable, StreamStats), BackendError> {
    let ctx = SessionContext::new();
    source.update_datafusion_session(&ctx.state()).map_err(delta_err)?;
    ctx.register_table("src", source.table_provider().await.map_err(df_err)?).map_err(df_err)?;
    let select: Vec<String> = spec
        .select
        .columns
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let expr = match &p.source {
                Source::Using { expression } => format!("({expression})"),
                Source::Null => "NULL".to_string(),
                s => ident(s.from().expect("every other source reads a column")),
            };
            format!("{expr} AS \"__c{i}\"")
        })
        .collect();
    let df = ctx
        .sql(&format!("SELECT {} FROM src", select.join(", ")))
        .await
        .map_err(|e| BackendError::CheckFailed { message: format!("the projection failed, the table is untouched: {e}") })?;
    let input = df.execute_stream().await.map_err(|e| BackendError::CheckFailed { message: format!("reading the table failed, the table is untouched: {e}") })?;

    let converted: Vec<usize> = spec.expect.as_ref().map(|b| b.converted.iter().map(|(i, _, _)| *i).collect()).unwrap_or_default();
    let stats = Arc::new(Mutex::new(StreamStats { non_null: vec![0; converted.len()], present: vec![0; spec.rw.columns.len()], ..Default::default() }));
    let opts = CastOptions { safe: !spec.strict, ..Default::default() };
    let target = spec.target.clone();
    let rw = spec.select.clone();
    let expect = spec.expect.clone();
    let crash = spec.crash_mid_stream;
    let st = stats.clone();
    let mut seen_batches = 0usize;
    let fail = |st: &Arc<Mutex<StreamStats>>, msg: String| -> Result<RecordBatch, DataFusionError> {
        st.lock().expect("not poisoned").failure.get_or_insert(msg.clone());
        Err(DataFusionError::Execution(msg))
    };
    let converted_stream = input
        .map(move |batch| {
            seen_batches += 1;
            if seen_batches == 2 {
                if let Some(fp) = crash {
                    failpoint(fp);
                }
            }
            let batch = batch?;
            let mut columns = Vec::with_capacity(rw.columns.len());
            for (i, (p, tf)) in rw.columns.iter().zip(target.fields().iter()).enumerate() {
                match convert(batch.column(i), &p.source, tf.data_type(), &opts) {
                    Ok(a) => columns.push(a),
                    Err(e) => return fail(&st, format!("column {} cannot be converted to {}: {e}", p.field.name, p.field.data_type)),
                }
            }
            let out = match RecordBatch::try_new(target.clone(), columns) {
                Ok(b) => b,
                Err(e) => return fail(&st, format!("{e} (a column declared NOT NULL has NULLs)")),
            };
            let mut s = st.lock().expect("not poisoned");
            s.rows += out.num_rows() as i64;
            for (k, i) in converted.iter().enumerate() {
                s.non_null[k] += (out.num_rows() - out.column(*i).null_count()) as i64;
            }
            for i in 0..out.num_columns() {
                s.present[i] += (out.num_rows() - out.column(i).null_count()) as i64;
            }
            Ok(out)
        })
        .chain(
            futures::stream::once({
                // the end of the stream: the check, before the writer can commit
                let st = stats.clone();
                let rw = spec.rw.clone();
                async move {
                    let s = st.lock().expect("not poisoned");
                    let problem = expect.as_ref().and_then(|b| compare(&rw, b, s.rows, &s.non_null, &s.present));
                    drop(s);
                    problem.map(|p| fail(&st, p))
                }
            })
            .filter_map(futures::future::ready),
        );
    let adapter: SendableRecordBatchStream = Box::pin(RecordBatchStreamAdapter::new(spec.target.clone(), converted_stream));
    let table = StreamingTable::try_new(spec.target.clone(), vec![Arc::new(OnceStream { schema: spec.target.clone(), stream: Mutex::new(Some(adapter)) })]).map_err(df_err)?;
    let plan = LogicalPlanBuilder::scan("rewrite", provider_as_source(Arc::new(table)), None).map_err(df_err)?.build().map_err(df_err)?;
    progress("streaming the rewritten rows");
    let written = dest
        .write(vec![])
        .with_input_plan(plan)
        .with_save_mode(SaveMode::Overwrite)
        .with_schema_mode(SchemaMode::Overwrite)
        .with_partition_columns(spec.rw.partitioned_by.clone())
        .with_commit_properties(props)
        .await;
    let stats = std::mem::take(&mut *stats.lock().expect("not poisoned"));
    match written {
        Ok(t) => Ok((t, stats)),
        Err(e) => match stats.failure {
            Some(f) => Err(BackendError::CheckFailed { message: f }),
            None => Err(delta_err(e)),
        },
    }
}

/// The staged copy, checked against the original's baseline.
pub async fn check_staged(staging: &DeltaTable, rw: &Rewrite, before: &Baseline) -> Result<(), String> {
    let mut exprs: Vec<String> = before.converted.iter().map(|(i, _, _)| ident(&rw.columns[*i].field.name)).collect();
    exprs.extend(rw.columns.iter().map(|p| ident(&p.field.name)));
    let (rows, n) = counts(staging, &exprs).await.map_err(|e| e.to_string())?;
    let (conv, present) = n.split_at(before.converted.len());
    match compare(rw, before, rows, conv, present) {
        Some(p) => Err(p),
        None => Ok(()),
    }
}

/// A projection that copies every column of the rewrite's target by name
/// (reading the staging copy back).
pub fn passthrough(rw: &Rewrite) -> Rewrite {
    Rewrite {
        columns: rw.columns.iter().map(|p| Projection { field: p.field.clone(), source: Source::Copy { from: p.field.name.clone() } }).collect(),
        partitioned_by: rw.partitioned_by.clone(),
        drops: vec![],
    }
}

/// Rows in a table (for the replace's check of the staging copy).
pub async fn row_count(table: &DeltaTable) -> Result<i64, BackendError> {
    Ok(counts(table, &[]).await?.0)
}
