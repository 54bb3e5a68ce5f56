//! The sink: Parquet files written into one run's folder, and their add actions,
//! in a fixed memory (`budget.rs`).
//!
//! delta-rs's `RecordBatchWriter` streams each file to storage as it goes, but a
//! file holds its row group in memory until the row group is full (1M rows by
//! default: 1 GB of 1 KB rows), and there is one open file per partition value.
//! So the sink bounds a row group by bytes (`Budget::row_group`), and estimates
//! what the open files hold: each at most its row group and its upload part,
//! fed its share of every batch. When that passes the budget's share for files,
//! the files are finished (flushed) and their adds kept: more, smaller files,
//! never more memory.

use std::collections::HashMap;

use deltalake::arrow::array::{Array, ArrayRef};
use deltalake::arrow::compute::cast;
use deltalake::arrow::datatypes::{DataType, SchemaRef};
use deltalake::arrow::record_batch::RecordBatch;
use deltalake::kernel::Add;
use deltalake::parquet::basic::Compression;
use deltalake::parquet::file::properties::WriterProperties;
use deltalake::writer::{DeltaWriter, RecordBatchWriter};
use url::Url;

use super::{Budget, df_err};
use crate::{BackendError, delta_err};

/// Files are rolled at this size while streaming.
const TARGET_FILE_SIZE: u64 = 128 * 1024 * 1024;

/// One partition's values, as text (what the writer's file per partition is keyed by).
type PartitionKey = Vec<Option<String>>;

/// Parquet files written for one run under one folder of a table (or of the
/// staging table), and their add actions once finished.
pub struct Sink {
    writer: RecordBatchWriter,
    /// The folder, relative to the table root, that every add's path starts with ("" for the root).
    prefix: String,
    adds: Vec<Add>,
    budget: Budget,
    /// The partition columns of the written batches.
    partitions: Vec<String>,
    /// Estimated bytes each open file holds, by partition (one entry when unpartitioned).
    held: HashMap<PartitionKey, usize>,
}

impl Sink {
    /// A sink writing to `url`, which is `prefix` under the table root.
    pub fn new(
        url: &Url,
        prefix: &str,
        schema: SchemaRef,
        partitions: Vec<String>,
    ) -> Result<Self, BackendError> {
        let budget = Budget::from_env()?;
        let properties = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_max_row_group_bytes(Some(budget.row_group()))
            .build();
        let writer =
            RecordBatchWriter::try_new(url.as_str(), schema, Some(partitions.clone()), None)
                .map_err(delta_err)?
                .with_target_file_size(TARGET_FILE_SIZE)
                .with_writer_properties(properties);
        Ok(Sink {
            writer,
            prefix: prefix.trim_end_matches('/').to_string(),
            adds: Vec::new(),
            budget,
            partitions,
            held: HashMap::new(),
        })
    }

    pub(super) async fn write(&mut self, batch: RecordBatch) -> Result<(), BackendError> {
        let keys = self.partition_keys(&batch)?;
        let size = batch.get_array_memory_size();
        self.writer.write(batch).await.map_err(delta_err)?;
        let share = size / keys.len().max(1);
        let cap = self.budget.per_file();
        for key in keys {
            let held = self.held.entry(key).or_insert(0);
            *held = (*held + share).min(cap);
        }
        if self.held.len() > 1 && self.held.values().sum::<usize>() > self.budget.files() {
            self.flush().await?;
        }
        Ok(())
    }

    /// The distinct partition values of a batch (one empty key when unpartitioned).
    fn partition_keys(&self, batch: &RecordBatch) -> Result<Vec<PartitionKey>, BackendError> {
        if self.partitions.is_empty() || batch.num_rows() == 0 {
            return Ok(vec![Vec::new()]);
        }
        let columns: Vec<ArrayRef> = self
            .partitions
            .iter()
            .map(|p| {
                let c = batch
                    .column_by_name(p)
                    .ok_or_else(|| df_err(format!("partition column {p} is not in the batch")))?;
                cast(c, &DataType::Utf8).map_err(df_err)
            })
            .collect::<Result<_, _>>()?;
        let text: Vec<&deltalake::arrow::array::StringArray> = columns
            .iter()
            .filter_map(|c| c.as_any().downcast_ref())
            .collect();
        let mut keys: HashMap<PartitionKey, ()> = HashMap::new();
        for row in 0..batch.num_rows() {
            let key = text
                .iter()
                .map(|c| (!c.is_null(row)).then(|| c.value(row).to_string()))
                .collect();
            keys.insert(key, ());
        }
        Ok(keys.into_keys().collect())
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
        self.held.clear();
        Ok(())
    }

    pub fn adds(&self) -> &[Add] {
        &self.adds
    }
}
