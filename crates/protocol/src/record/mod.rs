//! Record data as it travels on the wire: RecordBatch v2 (magic 2) parsing, validation and compression.
//!
//! Source: Kafka protocol guide, "Record Batch" (KIP-98 message format v2).

mod batch;
mod builder;
mod compression;
pub mod varint;

pub use batch::{
    batches, increment_sequence, BatchSummary, Batches, Record, RecordBatch, RecordBatchHeader,
    RecordBatchMut, RecordError, TimestampType, DEFAULT_MAX_DECOMPRESSED_BYTES, LOG_OVERHEAD,
    MAGIC_V2, NO_PARTITION_LEADER_EPOCH, NO_PRODUCER_EPOCH, NO_PRODUCER_ID, NO_SEQUENCE,
    NO_TIMESTAMP, RECORD_BATCH_OVERHEAD,
};
pub use builder::RecordBatchBuilder;
pub use compression::{compress, decompress, Compression};

#[cfg(test)]
mod oracle_tests;
#[cfg(test)]
mod tests;

use bytes::Bytes;
use std::fs::File;
use std::sync::Arc;

/// A contiguous byte range of a log segment file, sent to the socket with `sendfile` where the
/// connection allows it. `position` and `len` are in bytes.
#[derive(Debug, Clone)]
pub struct FileSlice {
    /// The open segment file.
    pub file: Arc<File>,
    /// Byte position of the first byte in `file`.
    pub position: u64,
    /// Number of bytes.
    pub len: u32,
}

/// The value of a `records` field (type `records` in the schema): either bytes in memory (decoded
/// requests, small responses) or a slice of a segment file (Fetch responses served zero-copy).
#[derive(Debug, Clone)]
pub enum Records {
    /// Bytes held in memory.
    Memory(Bytes),
    /// Bytes still on disk.
    File(FileSlice),
}

impl Records {
    /// Length in bytes.
    pub fn len(&self) -> usize {
        match self {
            Records::Memory(b) => b.len(),
            Records::File(f) => f.len as usize,
        }
    }

    /// True when there are no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Default for Records {
    fn default() -> Self {
        Records::Memory(Bytes::new())
    }
}

impl PartialEq for Records {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Records::Memory(a), Records::Memory(b)) => a == b,
            _ => false,
        }
    }
}
