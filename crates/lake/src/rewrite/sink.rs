//! The sink: Parquet files written into one run's folder, and their add actions.

use deltalake::arrow::datatypes::SchemaRef;
use deltalake::arrow::record_batch::RecordBatch;
use deltalake::kernel::Add;
use deltalake::writer::{DeltaWriter, RecordBatchWriter};
use url::Url;

use crate::{BackendError, delta_err};

/// Files are rolled at this size while streaming.
const TARGET_FILE_SIZE: u64 = 128 * 1024 * 1024;

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

    pub(super) async fn write(&mut self, batch: RecordBatch) -> Result<(), BackendError> {
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
