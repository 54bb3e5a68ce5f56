//! The memory a lake rewrite may use, whatever the table's size, and how it is
//! shared between the parts of the stream.
//!
//! One number, `DELTA_OPERATOR_LAKE_MEMORY_MB` (default 256 MiB), is the budget
//! of one streaming pass (a read of the table through DataFusion, converted and
//! written into Parquet files). It is split so that nothing in the pass grows
//! with the table's rows or files:
//!
//! | part | share | at the default |
//! |---|---|---|
//! | DataFusion's memory pool (the counts' aggregates; user expressions) | 1/2 | 128 MiB |
//! | one converted batch (a scalar function's output is not in the pool) | 1/4 | 64 MiB |
//! | the Parquet files being written: each holds its row group until it is full | 1/4 | 64 MiB |
//! | a row group (then it is written out) | 1/64, 1 to 64 MiB | 4 MiB |
//!
//! The files being written are one per partition value seen since the last
//! flush: when their estimated held bytes pass their share, the sink finishes
//! them (more, smaller files, never more memory). What the budget cannot bound
//! is the input's own layout: the Parquet reader holds one row group's column
//! chunks per file it reads, and files are read `READ_FILES_AT_ONCE` at a time,
//! so a table written with huge row groups costs that much more (delta-rs and
//! Spark write row groups of at most 1M rows / 128 MB).
//!
//! Streams run one at a time per process (`stream_permit`), so the budget is
//! also the process's: several applies' rewrites take turns streaming instead
//! of multiplying it.

use tokio::sync::{Semaphore, SemaphorePermit};

use crate::BackendError;

/// The budget when `DELTA_OPERATOR_LAKE_MEMORY_MB` is not set.
pub const DEFAULT_BUDGET: usize = 256 * 1024 * 1024;
/// Sets another budget, in MiB (a whole number above 0).
pub const MEMORY_LIMIT_ENV: &str = "DELTA_OPERATOR_LAKE_MEMORY_MB";
/// Files DataFusion reads at once (its target partitions): one. Each file read holds
/// its row group's column chunks and more (~2.5× a 40 MB row group, measured), and a
/// second file read beside it was not faster on two cores (`docs/performance.md`).
pub const READ_FILES_AT_ONCE: usize = 1;
/// What object_store buffers per file before it sends a part (delta-rs's default part size).
const UPLOAD_PART: usize = 5 * 1024 * 1024;
const MIB: usize = 1024 * 1024;

/// One streaming pass's memory, in bytes, and its shares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    pub total: usize,
}

impl Budget {
    /// `DELTA_OPERATOR_LAKE_MEMORY_MB`, or the default; a value that is not a whole
    /// number of MiB above 0 is refused by name.
    pub fn from_env() -> Result<Budget, BackendError> {
        Self::parse(std::env::var(MEMORY_LIMIT_ENV).ok().as_deref())
    }

    fn parse(value: Option<&str>) -> Result<Budget, BackendError> {
        let Some(v) = value else {
            return Ok(Budget {
                total: DEFAULT_BUDGET,
            });
        };
        v.trim()
            .parse::<usize>()
            .ok()
            .filter(|mb| (1..=1 << 30).contains(mb))
            .map(|mb| Budget { total: mb * MIB })
            .ok_or_else(|| BackendError::Refused {
                message: format!(
                    "{MEMORY_LIMIT_ENV} is '{}'; it must be a whole number of MiB above 0 (the default is {})",
                    delta_operator_core::model::names::printable(v),
                    DEFAULT_BUDGET / MIB
                ),
            })
    }

    pub fn mib(&self) -> usize {
        self.total / MIB
    }

    /// DataFusion's memory pool.
    pub fn pool(&self) -> usize {
        (self.total / 2).max(1)
    }

    /// The most one converted batch may hold.
    pub fn batch(&self) -> usize {
        (self.total / 4).max(1)
    }

    /// What the files being written may hold in all.
    pub fn files(&self) -> usize {
        (self.total / 4).max(1)
    }

    /// The largest row group a file holds before writing it out.
    pub fn row_group(&self) -> usize {
        (self.total / 64).clamp(MIB, 64 * MIB)
    }

    /// How many bytes a stream converts between two [`release_freed_memory`]s: a
    /// batch's share (a trim walks the arenas: a few a second at most).
    pub fn trim_every(&self) -> usize {
        self.batch()
    }

    /// The most one open file holds: its row group and the part being uploaded.
    pub fn per_file(&self) -> usize {
        self.row_group() + UPLOAD_PART
    }
}

/// Bytes in MiB for a message, to one decimal.
pub fn in_mib(bytes: usize) -> String {
    format!("{:.1}", bytes as f64 / MIB as f64)
}

/// Gives the pages malloc holds free back to the system: glibc keeps what a pass
/// frees in its arenas, and a long pass's buffers, of every size and freed on
/// other threads than made them, leave free pages between live ones that only
/// `malloc_trim` returns. Without it a rewrite's peak grew with the table (342 MiB
/// at 4 GiB against 252 at 1 GiB, `docs/performance.md`); a stream calls it
/// after every [`Budget::trim_every`] bytes it converted.
pub fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks glibc's own arenas under their locks.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// One stream at a time per process.
static STREAMS: Semaphore = Semaphore::const_new(1);

/// Waits for this process's turn to stream (held for one pass).
pub async fn stream_permit() -> SemaphorePermit<'static> {
    // the semaphore is never closed
    loop {
        if let Ok(p) = STREAMS.acquire().await {
            return p;
        }
        tokio::task::yield_now().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_and_its_shares() {
        let b = Budget::parse(None).unwrap();
        assert_eq!(b.mib(), 256);
        assert_eq!(b.pool(), 128 * MIB);
        assert_eq!(b.batch(), 64 * MIB);
        assert_eq!(b.files(), 64 * MIB);
        assert_eq!(b.row_group(), 4 * MIB);
        assert_eq!(b.per_file(), 9 * MIB);
        assert_eq!(b.trim_every(), 64 * MIB);
    }

    #[test]
    fn shares_stay_within_bounds_at_the_extremes() {
        let small = Budget::parse(Some("1")).unwrap();
        assert_eq!(small.row_group(), MIB);
        assert!(small.pool() > 0 && small.batch() > 0 && small.files() > 0);
        let big = Budget::parse(Some("65536")).unwrap();
        assert_eq!(big.row_group(), 64 * MIB);
    }

    #[test]
    fn a_value_that_is_not_a_size_is_refused_by_name() {
        for bad in ["lots", "0", "-5", "1.5", "", "2000000000"] {
            let e = Budget::parse(Some(bad)).unwrap_err().to_string();
            assert!(e.contains(MEMORY_LIMIT_ENV), "{bad}: {e}");
        }
        assert_eq!(Budget::parse(Some(" 300 ")).unwrap().mib(), 300);
    }
}
