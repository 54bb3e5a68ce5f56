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

mod budget;
mod checks;
mod convert;
mod counts;
mod sink;
mod stream;

use std::fmt;
use std::sync::Arc;

use deltalake::arrow::datatypes::{Schema as ArrowSchema, SchemaRef};
use deltalake::datafusion::execution::runtime_env::RuntimeEnvBuilder;
use deltalake::datafusion::prelude::{SessionConfig, SessionContext};
use deltalake::kernel::StructType;
use deltalake::kernel::engine::arrow_conversion::TryIntoArrow;

use crate::BackendError;
use delta_operator_core::model::delta_schema::struct_to_json;
use delta_operator_core::plan::steps::{Projection, Rewrite, Source};

pub use budget::{Budget, DEFAULT_BUDGET, MEMORY_LIMIT_ENV, READ_FILES_AT_ONCE, stream_permit};
pub use checks::Checks;
pub use counts::{Baseline, baseline_of, check_staged, compare, missing_values, row_count};
pub use sink::Sink;
pub use stream::{StreamSpec, convert_into};

/// The folder inside a table that holds one run's rewritten files. Not hidden
/// (no leading `_` or `.`), so VACUUM treats its files like any other.
pub const RUN_FOLDER_PREFIX: &str = "delta-operator-rewrite-";

pub fn run_folder(run: &str) -> String {
    format!("{RUN_FOLDER_PREFIX}{run}")
}

fn df_err(e: impl fmt::Display) -> BackendError {
    BackendError::Refused {
        message: crate::error_text(&e),
    }
}

/// A DataFusion session whose SQL keeps identifiers as written (Delta column
/// names are case-preserving; DataFusion would lower-case unquoted ones),
/// with a memory pool of the budget's share, reading `READ_FILES_AT_ONCE` files
/// at a time (not one per core of the machine, which would make memory depend on it).
pub fn session() -> Result<SessionContext, BackendError> {
    session_with_batches(DEFAULT_BATCH_ROWS)
}

/// `session` for a scan that evaluates `expressions` (CHECKs being added: delta-rs
/// scans every row against them before it commits): its batches sized by the
/// bytes their size-making calls make a row, as a rewrite's are, and DataFusion
/// held to the budget's pool. Without it delta-rs takes a session of its own, of
/// 8,192 rows a batch and no memory limit: adding `repeat(status, 100000) <> ''`
/// to 2,000 rows peaked at 710 MiB that way, 233 MiB in this session (`tests/cli.rs`).
pub fn session_for<'a>(
    expressions: impl IntoIterator<Item = &'a str>,
) -> Result<SessionContext, BackendError> {
    let makes = expressions.into_iter().map(row_bytes).max().unwrap_or(0);
    session_with_batches(batch_rows(&Budget::from_env()?, makes))
}

/// DataFusion's rows per batch, unless an expression makes large values.
const DEFAULT_BATCH_ROWS: usize = 8192;

/// What an expression's size-making calls make for one row (0 for one that does not parse).
fn row_bytes(sql: &str) -> u64 {
    delta_operator_expression::parse_using(sql).map_or(0, |p| p.row_bytes)
}

/// The rows a batch may hold when each row may make `row_bytes` bytes: what
/// they make takes at most half of a batch's share of the budget (the row's
/// other columns the rest), so `repeat('x', 1000000)` reads 33 rows at a time
/// at the default budget, not 8,192, which would be 8 GB.
fn batch_rows(budget: &Budget, row_bytes: u64) -> usize {
    let per_row = usize::try_from(row_bytes)
        .unwrap_or(usize::MAX)
        .saturating_mul(2)
        .max(1);
    (budget.batch() / per_row).clamp(1, DEFAULT_BATCH_ROWS)
}

/// `session`, with at most `rows` rows a batch.
fn session_with_batches(rows: usize) -> Result<SessionContext, BackendError> {
    let budget = Budget::from_env()?;
    let mut config = SessionConfig::new()
        .with_target_partitions(READ_FILES_AT_ONCE)
        .with_batch_size(rows.max(1));
    config.options_mut().sql_parser.enable_ident_normalization = false;
    let runtime = RuntimeEnvBuilder::new()
        .with_memory_limit(budget.pool(), 1.0)
        .build_arc()
        .map_err(df_err)?;
    Ok(SessionContext::new_with_config_rt(config, runtime))
}

/// A DataFusion error in words, with a memory refusal explained.
fn df_message(e: impl fmt::Display) -> String {
    let text = crate::error_text(&e);
    if text.contains("Resources exhausted") {
        let budget = Budget::from_env().unwrap_or(Budget {
            total: DEFAULT_BUDGET,
        });
        format!(
            "{text} (a lake rewrite's memory budget is {} MiB, of which DataFusion may take {} MiB: an expression that needs more is refused; {MEMORY_LIMIT_ENV} sets another budget)",
            budget.mib(),
            budget.pool() >> 20
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_shrink_with_what_the_expressions_make() {
        let b = Budget {
            total: DEFAULT_BUDGET,
        };
        assert_eq!(batch_rows(&b, 0), DEFAULT_BATCH_ROWS);
        assert_eq!(batch_rows(&b, 1000), DEFAULT_BATCH_ROWS);
        assert_eq!(batch_rows(&b, 1_000_000), 33);
        assert_eq!(batch_rows(&b, u64::MAX), 1);
        assert_eq!(row_bytes("repeat('x', 1000000)"), 1_000_000);
        assert_eq!(row_bytes("not sql ((("), 0);
    }
}
