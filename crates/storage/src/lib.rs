#![warn(missing_docs)]
//! Partition log storage with Kafka's on-disk layout and semantics (Kafka's `UnifiedLog`,
//! `LogSegment`, `OffsetIndex`, `TimeIndex`, `ProducerStateManager`, `LogManager`).
//!
//! Layout of a data directory (`log.dirs` entry):
//!
//! ```text
//! <data dir>/
//!   .kafka_cleanshutdown                 present only while the broker is stopped cleanly
//!   recovery-point-offset-checkpoint     "0\n<n>\n<topic> <partition> <offset>\n..."
//!   log-start-offset-checkpoint          same format
//!   replication-offset-checkpoint        same format (high watermarks)
//!   cleaner-offset-checkpoint            same format (log cleaner's first dirty offsets)
//!   <topic>-<partition>/
//!     partition.metadata                 "version: 0\ntopic_id: <base64url uuid>\n"
//!     00000000000000000000.log           record batches, as received (offsets assigned)
//!     00000000000000000000.index         sparse OffsetIndex
//!     00000000000000000000.timeindex     sparse TimeIndex
//!     00000000000000000000.txnindex      TransactionIndex: aborted transactions whose ABORT marker is
//!                                        in the segment (34-byte entries; only once there is one)
//!     00000000000000001234.snapshot      producer state at offset 1234
//!     leader-epoch-checkpoint            "0\n<n>\n<epoch> <start offset>\n..."
//!     <offset>.{log,index,timeindex}.cleaned / .swap   log cleaner output mid-swap (see
//!                                        the `cleaner` module: completed or discarded at open)
//! ```
//!
//! Types: offsets and leader epochs in the public API are [`types::Offset`] and [`types::LeaderEpoch`]
//! (producer state: [`types::ProducerId`], [`types::ProducerEpoch`]); segments, indexes and checkpoint files
//! keep raw integers inside the crate.
//!
//! File system: every file operation goes through [`vfs::FileSystem`] ([`RealFs`] in production,
//! [`SimFs`] in crash simulations); see the `vfs` module.
//!
//! Threading: a [`Log`] is single-writer (`&mut self`); [`LogManager`] hands out
//! `Arc<parking_lot::Mutex<Log>>`. Reads return a [`protocol::record::FileSlice`] holding an
//! `Arc<File>`, so the bytes are read/sent after the lock is released.

mod alter_log_dirs;
mod checkpoint;
mod cleaner;
mod cleaner_batch;
mod cleaner_txn;
mod config;
mod error;
mod future_log;
mod index;
mod leader_epoch;
mod log;
mod log_cleaner;
mod log_dir;
mod manager;
mod offset_map;
mod parallel;
mod producer_state;
mod segment;
pub mod stats;
mod txn_index;
mod txn_marker;
mod verification;
pub mod vfs;

pub use alter_log_dirs::{LogThreads, MoveRate, ReplicaAlterLogDirsThread, COPY_CHUNK_BYTES};
pub use checkpoint::OffsetCheckpointFile;
pub use cleaner::{Cleaner, CleanerConfig, CleanerStats, CLEANER_OFFSET_CHECKPOINT};
pub use config::{CleanupPolicy, LogConfig};
pub use error::StorageError;
pub use future_log::{AlterLogDir, FutureCopy, FUTURE_DIR_SUFFIX};
pub use index::{OffsetIndex, OffsetPosition, TimeIndex, TimestampOffset};
pub use leader_epoch::{LeaderEpochFileCache, LEADER_EPOCH_CHECKPOINT};
pub use log::{
    recompress, AppendOrigin, FetchDataInfo, FlushJob, Log, LogAppendInfo, LogOffsetMetadata,
};
pub use log_cleaner::{process_peak_rss_bytes, LogCleaner};
pub use log_dir::{probe_dir, LogDirHealth, DIR_PROBE_FILE};
pub use manager::{
    choose_log_dir, validate_topic_name, LogDirLoad, LogManager, TopicPartition,
    CLEAN_SHUTDOWN_FILE, METADATA_LOG_DIR,
};
pub use parallel::default_recovery_threads;
pub use producer_state::{BatchMetadata, CompletedTxn, ProducerStateEntry, ProducerStateManager};
pub use segment::LogSegment;
pub use txn_index::{AbortedTxn, TransactionIndex, TxnIndexSearchResult, ABORTED_TXN_ENTRY_SIZE};
pub use txn_marker::{ControlRecordType, EndTransactionMarker};
pub use verification::VerificationGuard;
pub use vfs::{real_fs, FileSystem, Fs, RealFs, SimFs, StorageFile};

/// Timestamp argument of [`Log::fetch_offset_by_timestamp`]: the log end offset.
pub const LATEST_TIMESTAMP: i64 = -1;
/// Timestamp argument: the log start offset.
pub const EARLIEST_TIMESTAMP: i64 = -2;
/// Timestamp argument: the record with the largest timestamp (KIP-734).
pub const MAX_TIMESTAMP: i64 = -3;
/// Timestamp argument: the earliest local offset (KIP-405); equals the log start offset here.
pub const EARLIEST_LOCAL_TIMESTAMP: i64 = -4;

/// `<20-digit zero-padded offset>.<suffix>` — the name of segment, index and snapshot files.
pub fn offset_file_name(offset: i64, suffix: &str) -> String {
    format!("{offset:020}.{suffix}")
}

/// The bytes of a read result: memory as it is, a file slice read with `pread` (a short read — the file
/// was truncated meanwhile — returns what is there). For readers inside the broker (coordinator loading);
/// consumers get file slices with `sendfile` instead.
pub fn records_to_bytes(records: &protocol::record::Records) -> std::io::Result<bytes::Bytes> {
    use protocol::record::Records;
    use std::os::unix::fs::FileExt;
    // A `Records::File` comes from the real file system; a simulated one returns memory.
    match records {
        Records::Memory(b) => Ok(b.clone()),
        Records::File(slice) => {
            let mut buf = vec![0u8; slice.len as usize];
            let mut done = 0usize;
            while done < buf.len() {
                let n = slice
                    .file
                    .read_at(&mut buf[done..], slice.position + done as u64)?;
                if n == 0 {
                    break;
                }
                done += n;
            }
            buf.truncate(done);
            Ok(bytes::Bytes::from(buf))
        }
    }
}

/// Current wall-clock time in ms since the epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

#[cfg(test)]
mod append_tests;
#[cfg(test)]
mod cleaner_tests;
#[cfg(test)]
mod cleaner_txn_tests;
#[cfg(test)]
mod future_log_tests;
#[cfg(test)]
mod jbod_tests;
#[cfg(test)]
mod log_dir_tests;
#[cfg(test)]
mod op_fuzz_tests;
#[cfg(test)]
mod recovery_tests;
#[cfg(test)]
mod restart_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod txn_fuzz_tests;
#[cfg(test)]
mod txn_tests;
