//! The lake backend's rewrites, streamed: the table is read through DataFusion
//! batch by batch, each batch converted with Arrow (casts; structs rebuilt by
//! field name; arrays of structs rebuilt element by element), checked, and
//! written as it comes into Parquet files of a folder that belongs to this run
//! alone, so a table larger than memory can be rewritten and a crash leaves
//! nothing that could be mistaken for anyone else's files.
//!
//! - A write-once rewrite (nothing can lose a value) streams the table into
//!   `<table>/delta-operator-rewrite-<run>/` with strict casts, counts rows and
//!   NULLs against the original, and then replaces the table in one commit
//!   (`replace.rs`) conditioned on the version it read.
//! - A staged rewrite streams the converted rows, with safe casts (a value that
//!   does not convert becomes NULL, as a non-ANSI CAST would), into a staging
//!   table of its own run, `.staging/<catalog>/<schema>/<table>/<run>/`, created
//!   only if absent, and checks it: the same row count, no converted column
//!   with more NULLs, no NULL in a NOT NULL column. A failed check leaves the
//!   original untouched and the staging copy in place to inspect. The replace
//!   then copies the staging table into the run folder and commits as above.
//!
//! Every projection is built as a DataFusion expression (columns by exact
//! name, `using:` parsed as one expression against the live schema), never as
//! SQL text, and results are read back by alias, never by position.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use deltalake::DeltaTable;
use deltalake::arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, Int64Array, LargeListArray, ListArray, StructArray,
    new_null_array,
};
use deltalake::arrow::compute::{CastOptions, cast_with_options};
use deltalake::arrow::datatypes::{DataType as ArrowType, Field, Schema as ArrowSchema, SchemaRef};
use deltalake::arrow::record_batch::RecordBatch;
use deltalake::datafusion::common::{DFSchema, ScalarValue};
use deltalake::datafusion::execution::runtime_env::RuntimeEnvBuilder;
use deltalake::datafusion::functions_aggregate::expr_fn::count;
use deltalake::datafusion::logical_expr::{Expr, ident, lit};
use deltalake::datafusion::physical_plan::PhysicalExpr;
use deltalake::datafusion::prelude::{SessionConfig, SessionContext};
use deltalake::kernel::engine::arrow_conversion::TryIntoArrow;
use deltalake::kernel::{Add, StructType};
use deltalake::writer::{DeltaWriter, RecordBatchWriter};
use futures::StreamExt;
use url::Url;

use super::{BackendError, delta_err};
use delta_operator_backend::failpoint;
use delta_operator_backend::{RowsDone, StepProgress};
use delta_operator_core::model::delta_schema::struct_to_json;
use delta_operator_core::plan::steps::{Projection, Rewrite, Source};

/// The folder inside a table that holds one run's rewritten files. Not hidden
/// (no leading `_` or `.`), so VACUUM treats its files like any other.
pub const RUN_FOLDER_PREFIX: &str = "delta-operator-rewrite-";

pub fn run_folder(run: &str) -> String {
    format!("{RUN_FOLDER_PREFIX}{run}")
}

/// Files are rolled at this size while streaming.
const TARGET_FILE_SIZE: u64 = 128 * 1024 * 1024;

fn df_err(e: impl fmt::Display) -> BackendError {
    BackendError::Refused {
        message: crate::error_text(&e),
    }
}

/// The memory a rewrite's DataFusion session may take (its memory pool), and
/// the most one converted batch may hold: user expressions (`using:`, CHECKs)
/// run there, and a hostile one must fail, not take the machine's memory.
pub const DEFAULT_MEMORY_LIMIT: usize = 512 * 1024 * 1024;
/// Sets another limit, in MiB (a whole number above 0).
pub const MEMORY_LIMIT_ENV: &str = "DELTA_OPERATOR_LAKE_MEMORY_MB";

/// The limit in bytes: `DELTA_OPERATOR_LAKE_MEMORY_MB`, or 512 MiB.
pub fn memory_limit() -> Result<usize, BackendError> {
    match std::env::var(MEMORY_LIMIT_ENV) {
        Err(_) => Ok(DEFAULT_MEMORY_LIMIT),
        Ok(v) => v
            .trim()
            .parse::<usize>()
            .ok()
            .filter(|mb| (1..=1 << 30).contains(mb))
            .map(|mb| mb * 1024 * 1024)
            .ok_or_else(|| BackendError::Refused {
                message: format!(
                    "{MEMORY_LIMIT_ENV} is '{}'; it must be a whole number of MiB above 0 (the default is {})",
                    delta_operator_core::model::names::printable(&v),
                    DEFAULT_MEMORY_LIMIT >> 20
                ),
            }),
    }
}

/// A DataFusion session whose SQL keeps identifiers as written (Delta column
/// names are case-preserving; DataFusion would lower-case unquoted ones),
/// with a memory pool of `memory_limit()` bytes.
pub fn session() -> Result<SessionContext, BackendError> {
    let mut config = SessionConfig::new();
    config.options_mut().sql_parser.enable_ident_normalization = false;
    let runtime = RuntimeEnvBuilder::new()
        .with_memory_limit(memory_limit()?, 1.0)
        .build_arc()
        .map_err(df_err)?;
    Ok(SessionContext::new_with_config_rt(config, runtime))
}

/// A DataFusion error in words, with a memory refusal explained.
fn df_message(e: impl fmt::Display) -> String {
    let text = crate::error_text(&e);
    if text.contains("Resources exhausted") {
        format!(
            "{text} (the lake's DataFusion memory limit is {} MiB: an expression that needs more is refused; {MEMORY_LIMIT_ENV} sets another limit)",
            memory_limit().unwrap_or(DEFAULT_MEMORY_LIMIT) >> 20
        )
    } else {
        text
    }
}

/// The rewrite's target schema as Arrow: exactly as the spec declares it
/// (types, nullability, comments), or with every column nullable for the
/// staging copy (whose NOT NULL columns are checked by counting instead).
pub fn target_schema(rw: &Rewrite, relaxed: bool) -> Result<SchemaRef, BackendError> {
    let target = target_struct(rw, relaxed)?;
    let arrow: ArrowSchema = (&target).try_into_arrow().map_err(df_err)?;
    Ok(Arc::new(arrow))
}

/// The same as a Delta schema.
pub fn target_struct(rw: &Rewrite, relaxed: bool) -> Result<StructType, BackendError> {
    let fields: Vec<_> = rw
        .columns
        .iter()
        .map(|p| {
            let mut f = p.field.clone();
            f.nullable |= relaxed;
            (f, None)
        })
        .collect();
    serde_json::from_value(struct_to_json(&fields)).map_err(df_err)
}

/// A DataFrame over the table, or over only `files` of it.
async fn frame(
    ctx: &SessionContext,
    table: &DeltaTable,
    files: Option<&[Add]>,
) -> Result<deltalake::datafusion::dataframe::DataFrame, BackendError> {
    table
        .update_datafusion_session(&ctx.state())
        .map_err(delta_err)?;
    let builder = table.table_provider();
    let provider = match files {
        Some(f) => builder.with_adds(f.to_vec()).await,
        None => builder.await,
    }
    .map_err(df_err)?;
    ctx.read_table(provider).map_err(df_err)
}

/// Counts over a table (or some of its files): rows, and non-NULL values of each column.
async fn counts(
    table: &DeltaTable,
    files: Option<&[Add]>,
    columns: &[String],
) -> Result<(i64, Vec<i64>), BackendError> {
    let ctx = session()?;
    let df = frame(&ctx, table, files).await?;
    let mut aggs = vec![count(lit(1)).alias("__rows")];
    aggs.extend(
        columns
            .iter()
            .enumerate()
            .map(|(i, c)| count(ident(c)).alias(format!("__n{i}"))),
    );
    let batches = df
        .aggregate(vec![], aggs)
        .map_err(df_err)?
        .collect()
        .await
        .map_err(|e| df_err(df_message(e)))?;
    let at = |name: &str| -> i64 {
        batches
            .first()
            .and_then(|b| b.column_by_name(name))
            .and_then(|c| c.as_any().downcast_ref::<Int64Array>().map(|a| a.value(0)))
            .unwrap_or(0)
    };
    Ok((
        at("__rows"),
        (0..columns.len()).map(|i| at(&format!("__n{i}"))).collect(),
    ))
}

/// Rows of the table (at the version it was loaded at) where the field at
/// `path` has no value while its parents have one (what Delta's NOT NULL
/// asks of a nested field).
pub async fn missing_values(table: &DeltaTable, path: &[String]) -> Result<usize, BackendError> {
    use deltalake::datafusion::functions::core::expr_fn::get_field;
    let Some((first, rest)) = path.split_first() else {
        return Ok(0);
    };
    let ctx = session()?;
    let df = frame(&ctx, table, None).await?;
    let mut field = ident(first);
    let mut parents_present: Option<Expr> = None;
    for name in rest {
        let present = field.clone().is_not_null();
        parents_present = Some(match parents_present {
            Some(p) => p.and(present),
            None => present,
        });
        field = get_field(field, name.as_str());
    }
    let predicate = match parents_present {
        Some(p) => p.and(field.is_null()),
        None => field.is_null(),
    };
    df.filter(predicate)
        .map_err(df_err)?
        .count()
        .await
        .map_err(|e| df_err(df_message(e)))
}

/// Rows in a table.
pub async fn row_count(table: &DeltaTable) -> Result<i64, BackendError> {
    Ok(counts(table, None, &[]).await?.0)
}

/// The live column a converted projection is checked against: its source, or
/// for `using:` a live column of the same name. None: nothing to lose (new).
fn baseline_column<'a>(p: &'a Projection, live: &ArrowSchema) -> Option<&'a str> {
    match &p.source {
        Source::Using { .. } => live
            .fields()
            .iter()
            .any(|f| f.name() == &p.field.name)
            .then_some(p.field.name.as_str()),
        s => s.from(),
    }
}

/// What the original holds, counted before a rewrite: the numbers the
/// rewritten rows are checked against.
#[derive(Debug, Clone, Default)]
pub struct Baseline {
    pub rows: i64,
    /// (index of the projection, its live column, non-NULL values in it)
    pub converted: Vec<(usize, String, i64)>,
}

/// Counts the original (all of it, or only `files`) for the check.
pub async fn baseline_of(
    table: &DeltaTable,
    files: Option<&[Add]>,
    rw: &Rewrite,
) -> Result<Baseline, BackendError> {
    let live: ArrowSchema = table
        .snapshot()
        .map_err(delta_err)?
        .schema()
        .as_ref()
        .try_into_arrow()
        .map_err(df_err)?;
    let converted: Vec<(usize, String)> = rw
        .columns
        .iter()
        .enumerate()
        .filter(|(_, p)| p.converts())
        .filter_map(|(i, p)| baseline_column(p, &live).map(|c| (i, c.to_string())))
        .collect();
    let names: Vec<String> = converted.iter().map(|(_, c)| c.clone()).collect();
    let (rows, non_null) = counts(table, files, &names).await?;
    Ok(Baseline {
        rows,
        converted: converted
            .into_iter()
            .zip(non_null)
            .map(|((i, c), n)| (i, c, n))
            .collect(),
    })
}

/// Why the rewritten rows do not match the original, or None when they do.
pub fn compare(
    rw: &Rewrite,
    before: &Baseline,
    rows: i64,
    non_null_after: &[i64],
    present_after: &[i64],
) -> Option<String> {
    if rows != before.rows {
        return Some(format!(
            "the rewritten rows number {rows} but the table has {}",
            before.rows
        ));
    }
    for (k, (i, from, n)) in before.converted.iter().enumerate() {
        let after = non_null_after[k];
        if after < *n {
            let p = &rw.columns[*i];
            return Some(format!(
                "converting {from} to {} ({}) would turn {} values into NULL",
                p.field.name,
                p.field.data_type,
                n - after
            ));
        }
    }
    for (i, p) in rw.columns.iter().enumerate() {
        if !p.field.nullable && present_after[i] < rows {
            return Some(format!(
                "column {} is declared NOT NULL but {} rows would have no value",
                p.field.name,
                rows - present_after[i]
            ));
        }
    }
    None
}

/// Converts one input array (the value a projection reads) to the target type.
fn convert(
    input: &ArrayRef,
    source: &Source,
    to: &ArrowType,
    opts: &CastOptions,
) -> Result<ArrayRef, String> {
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
            let s = input
                .as_struct_opt()
                .ok_or_else(|| format!("expected a struct, read {}", input.data_type()))?;
            let ArrowType::Struct(target) = to else {
                return Err(format!("expected a struct target, got {to}"));
            };
            let mut children = Vec::with_capacity(fields.len());
            for (p, tf) in fields.iter().zip(target.iter()) {
                let child = match p.source.from() {
                    None => new_null_array(tf.data_type(), s.len()),
                    Some(name) => {
                        // by NAME, never by position
                        let idx = s
                            .fields()
                            .iter()
                            .position(|f| f.name().eq_ignore_ascii_case(name))
                            .ok_or_else(|| format!("no field {name} in the live struct"))?;
                        convert(s.column(idx), &p.source, tf.data_type(), opts)
                            .map_err(|e| format!("{}: {e}", p.field.name))?
                    }
                };
                children.push(child);
            }
            Ok(Arc::new(
                StructArray::try_new(target.clone(), children, s.nulls().cloned())
                    .map_err(|e| e.to_string())?,
            ))
        }
        Source::Transform { fields, .. } => {
            let element = Source::Struct {
                from: String::new(),
                fields: fields.clone(),
            };
            match (input.data_type(), to) {
                (ArrowType::List(_), ArrowType::List(tf)) => {
                    let l = input.as_list::<i32>();
                    let values = convert(l.values(), &element, tf.data_type(), opts)?;
                    Ok(Arc::new(
                        ListArray::try_new(
                            tf.clone(),
                            l.offsets().clone(),
                            values,
                            l.nulls().cloned(),
                        )
                        .map_err(|e| e.to_string())?,
                    ))
                }
                (ArrowType::LargeList(_), ArrowType::LargeList(tf)) => {
                    let l = input.as_list::<i64>();
                    let values = convert(l.values(), &element, tf.data_type(), opts)?;
                    Ok(Arc::new(
                        LargeListArray::try_new(
                            tf.clone(),
                            l.offsets().clone(),
                            values,
                            l.nulls().cloned(),
                        )
                        .map_err(|e| e.to_string())?,
                    ))
                }
                (ArrowType::List(_), ArrowType::LargeList(_))
                | (ArrowType::LargeList(_), ArrowType::List(_)) => {
                    // the reader and the writer disagree on offsets: convert, then cast the list
                    let same_kind = match input.data_type() {
                        ArrowType::List(_) => ArrowType::List(Arc::new(Field::new(
                            "element",
                            list_element(to).clone(),
                            true,
                        ))),
                        _ => ArrowType::LargeList(Arc::new(Field::new(
                            "element",
                            list_element(to).clone(),
                            true,
                        ))),
                    };
                    let mid = convert(input, source, &same_kind, opts)?;
                    cast_with_options(&mid, to, opts).map_err(|e| e.to_string())
                }
                (have, _) => Err(format!("expected an array, read {have}")),
            }
        }
    }
}

/// Empty strings (or empty binary values) in an array: what Delta cannot keep in
/// a partition column. NULLs are not counted.
fn empty_values(a: &ArrayRef) -> usize {
    match a.data_type() {
        ArrowType::Utf8 => a
            .as_string::<i32>()
            .iter()
            .filter(|v| *v == Some(""))
            .count(),
        ArrowType::LargeUtf8 => a
            .as_string::<i64>()
            .iter()
            .filter(|v| *v == Some(""))
            .count(),
        ArrowType::Utf8View => a.as_string_view().iter().filter(|v| *v == Some("")).count(),
        ArrowType::Binary => a
            .as_binary::<i32>()
            .iter()
            .filter(|v| v.is_some_and(<[u8]>::is_empty))
            .count(),
        ArrowType::LargeBinary => a
            .as_binary::<i64>()
            .iter()
            .filter(|v| v.is_some_and(<[u8]>::is_empty))
            .count(),
        ArrowType::BinaryView => a
            .as_binary_view()
            .iter()
            .filter(|v| v.is_some_and(<[u8]>::is_empty))
            .count(),
        _ => 0,
    }
}

fn list_element(t: &ArrowType) -> &ArrowType {
    match t {
        ArrowType::List(f) | ArrowType::LargeList(f) => f.data_type(),
        other => other,
    }
}

/// The table's CHECK constraints, planned against the rewritten schema and
/// evaluated on every batch before it is written.
pub struct Checks {
    checks: Vec<(String, String, Arc<dyn PhysicalExpr>)>,
}

impl Checks {
    /// From the table configuration's `delta.constraints.*` keys. A CHECK that no
    /// longer makes sense against the new schema refuses the rewrite.
    pub fn for_table(
        configuration: &HashMap<String, String>,
        target: &SchemaRef,
    ) -> Result<Self, BackendError> {
        let ctx = session()?;
        let state = ctx.state();
        let schema = DFSchema::try_from(target.as_ref().clone()).map_err(df_err)?;
        let mut checks = Vec::new();
        let mut keys: Vec<_> = configuration
            .iter()
            .filter_map(|(k, v)| {
                k.strip_prefix(delta_operator_core::model::property::CONSTRAINTS_PREFIX)
                    .map(|n| (n.to_string(), v.clone()))
            })
            .collect();
        keys.sort();
        for (name, sql) in keys {
            let planned = state
                .create_logical_expr(&sql, &schema)
                .and_then(|e| state.create_physical_expr(e, &schema));
            match planned {
                Ok(p) => checks.push((name, sql, p)),
                Err(e) => {
                    return Err(BackendError::Refused {
                        message: format!(
                            "CHECK {name} ({sql}) cannot be evaluated against the rewritten columns: {e}; nothing was changed. Drop or change the constraint in the spec together with this change"
                        ),
                    });
                }
            }
        }
        Ok(Checks { checks })
    }

    /// The first CHECK some row of the batch violates.
    fn violation(&self, batch: &RecordBatch) -> Option<String> {
        for (name, sql, expr) in &self.checks {
            let result = expr
                .evaluate(batch)
                .and_then(|v| v.into_array(batch.num_rows()));
            let failed = match result {
                Ok(a) => match a.as_any().downcast_ref::<BooleanArray>() {
                    // NULL passes a CHECK, as in SQL
                    Some(b) => b.iter().filter(|v| *v == Some(false)).count(),
                    None => {
                        return Some(format!("CHECK {name} ({sql}) is not a boolean expression"));
                    }
                },
                Err(e) => return Some(format!("CHECK {name} ({sql}) failed to evaluate: {e}")),
            };
            if failed > 0 {
                return Some(format!(
                    "{failed} rewritten rows would violate CHECK {name} ({sql})"
                ));
            }
        }
        None
    }
}

/// Parquet files written for one run under one folder of a table (or of the
/// staging table), and their add actions once finished.
pub struct Sink {
    writer: RecordBatchWriter,
    /// The folder, relative to the table root, that every add's path starts with ("" for the root).
    prefix: String,
    adds: Vec<Add>,
}

impl Sink {
    /// A sink writing to `url`, which is `prefix` under the table root.
    pub fn new(
        url: &Url,
        prefix: &str,
        schema: SchemaRef,
        partitions: Vec<String>,
    ) -> Result<Self, BackendError> {
        let writer = RecordBatchWriter::try_new(url.as_str(), schema, Some(partitions), None)
            .map_err(delta_err)?
            .with_target_file_size(TARGET_FILE_SIZE);
        Ok(Sink {
            writer,
            prefix: prefix.trim_end_matches('/').to_string(),
            adds: Vec::new(),
        })
    }

    async fn write(&mut self, batch: RecordBatch) -> Result<(), BackendError> {
        self.writer.write(batch).await.map_err(delta_err)
    }

    /// Finishes the files written so far and keeps their add actions.
    pub async fn flush(&mut self) -> Result<(), BackendError> {
        for mut add in self.writer.flush().await.map_err(delta_err)? {
            if !self.prefix.is_empty() {
                add.path = format!("{}/{}", self.prefix, add.path);
            }
            add.data_change = true;
            self.adds.push(add);
        }
        Ok(())
    }

    pub fn adds(&self) -> &[Add] {
        &self.adds
    }
}

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
/// batch. Returns the counts; nothing is committed here.
pub async fn convert_into(
    source: &DeltaTable,
    files: Option<&[Add]>,
    spec: &StreamSpec<'_>,
    sink: &mut Sink,
    progress: StepProgress<'_>,
) -> Result<StreamStats, BackendError> {
    let ctx = session()?;
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
    let limit = memory_limit()?;
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
                    "one batch of {} rows converted to {} MiB, over the lake's DataFusion memory limit of {} MiB; the table is untouched. Check the `using:` expressions for one that builds huge values, or set {MEMORY_LIMIT_ENV} higher",
                    batch.num_rows(),
                    size >> 20,
                    limit >> 20
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
        // tests: a rewrite long enough to watch (`slow-batch`: each batch waits)
        delta_operator_backend::slow_failpoint("batch").await;
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

/// Counts of a staged copy, checked against the original's baseline.
pub async fn check_staged(
    staging: &DeltaTable,
    rw: &Rewrite,
    before: &Baseline,
) -> Result<(), String> {
    let mut names: Vec<String> = before
        .converted
        .iter()
        .map(|(i, _, _)| rw.columns[*i].field.name.clone())
        .collect();
    names.extend(rw.columns.iter().map(|p| p.field.name.clone()));
    let (rows, n) = counts(staging, None, &names)
        .await
        .map_err(|e| e.to_string())?;
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
        columns: rw
            .columns
            .iter()
            .map(|p| Projection {
                field: p.field.clone(),
                source: Source::Copy {
                    from: p.field.name.clone(),
                },
            })
            .collect(),
        partitioned_by: rw.partitioned_by.clone(),
        ..Rewrite::default()
    }
}
