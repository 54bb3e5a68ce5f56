//! Counting: the original's baseline (rows, and non-NULL values of the columns a
//! rewrite converts), the comparison of the rewritten rows against it, the
//! staged copy's check, and the counts of rows and missing values.

use deltalake::DeltaTable;
use deltalake::arrow::array::{Array, Int64Array};
use deltalake::arrow::datatypes::Schema as ArrowSchema;
use deltalake::datafusion::functions_aggregate::expr_fn::count;
use deltalake::datafusion::logical_expr::{Expr, ident, lit};
use deltalake::datafusion::prelude::SessionContext;
use deltalake::kernel::Add;
use deltalake::kernel::engine::arrow_conversion::TryIntoArrow;

use crate::{BackendError, delta_err};
use delta_operator_core::plan::steps::{Projection, Rewrite, Source};

use super::{df_err, df_message, session};

/// A DataFrame over the table, or over only `files` of it.
pub(super) async fn frame(
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
