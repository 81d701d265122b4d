use protocol::record::RecordError;
use types::Offset;

/// Errors from the storage layer. The broker maps each to a Kafka error code (noted per variant).
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// OFFSET_OUT_OF_RANGE (1): fetch offset below the log start offset or above the high
    /// watermark / log end offset.
    #[error("offset {offset} out of range [{log_start_offset}, {log_end_offset}]")]
    OffsetOutOfRange {
        /// The requested offset.
        offset: Offset,
        /// Current log start offset.
        log_start_offset: Offset,
        /// Current log end offset.
        log_end_offset: Offset,
    },
    /// CORRUPT_MESSAGE (2): CRC mismatch, truncated or inconsistent batch, undecodable
    /// compressed data, unknown compression id.
    #[error("corrupt message: {0}")]
    CorruptMessage(String),
    /// INVALID_RECORD (87): well-formed batch with invalid content (counts, offset deltas, legacy
    /// magic, control batch from a client).
    #[error("invalid record: {0}")]
    InvalidRecord(String),
    /// INVALID_RECORD (87) naming the offending records (KIP-467 `record_errors`): their indexes within
    /// the batch, e.g. the records without a key on a compacted topic.
    #[error("invalid record: {message}")]
    InvalidRecords {
        /// Why the batch was refused.
        message: String,
        /// Indexes (0-based, within the batch) of the records at fault.
        batch_indexes: Vec<i32>,
    },
    /// MESSAGE_TOO_LARGE (10): one batch larger than max.message.bytes (or decompressing
    /// beyond the configured cap).
    #[error("batch of {size} bytes exceeds the maximum of {max} bytes")]
    MessageTooLarge {
        /// Batch size in bytes.
        size: usize,
        /// The limit in bytes.
        max: usize,
    },
    /// RECORD_LIST_TOO_LARGE (18): the whole append exceeds segment.bytes.
    #[error("record set of {size} bytes exceeds the segment size {max}")]
    RecordListTooLarge {
        /// Append size in bytes.
        size: usize,
        /// segment.bytes.
        max: usize,
    },
    /// INVALID_TIMESTAMP (32): a CreateTime timestamp outside the allowed window.
    #[error("invalid timestamp: {0}")]
    InvalidTimestamp(String),
    /// OUT_OF_ORDER_SEQUENCE_NUMBER (45).
    #[error("out of order sequence: {0}")]
    OutOfOrderSequence(String),
    /// DUPLICATE_SEQUENCE_NUMBER (46) (not produced by append; duplicates are answered with
    /// success and the original offsets, as Kafka does).
    #[error("duplicate sequence: {0}")]
    DuplicateSequence(String),
    /// INVALID_PRODUCER_EPOCH (47): epoch older than the one the log has seen.
    #[error("invalid producer epoch: {0}")]
    InvalidProducerEpoch(String),
    /// INVALID_TXN_STATE (48): a non-transactional batch from a producer whose transaction is ongoing
    /// (Kafka's `InvalidTxnStateException` in `ProducerAppendInfo.appendDataBatch`).
    #[error("invalid transaction state: {0}")]
    InvalidTxnState(String),
    /// TRANSACTION_COORDINATOR_FENCED (52): a transaction marker from a coordinator epoch older than the
    /// one of the producer's last marker.
    #[error("transaction coordinator fenced: {0}")]
    TransactionCoordinatorFenced(String),
    /// UNKNOWN_PRODUCER_ID (59).
    #[error("unknown producer id: {0}")]
    UnknownProducerId(String),
    /// Follower append whose offsets go backwards (Kafka's UnexpectedAppendOffsetException /
    /// OffsetsOutOfOrder) → UNKNOWN_SERVER_ERROR (-1) or a replication retry.
    #[error("unexpected append offset: {0}")]
    UnexpectedAppendOffset(String),
    /// INVALID_TOPIC_EXCEPTION (17): a topic name that is not a legal directory name.
    #[error("invalid topic: {0}")]
    InvalidTopic(String),
    /// INCONSISTENT_TOPIC_ID (103): the directory belongs to another topic id.
    #[error("inconsistent topic id: {0}")]
    InconsistentTopicId(String),
    /// KAFKA_STORAGE_ERROR (56): an I/O error.
    #[error("storage I/O error: {0}")]
    KafkaStorage(#[from] std::io::Error),
    /// One partition's log found in two data directories at startup (JBOD, KIP-112): the broker must not
    /// start, since it cannot know which copy is the partition (Kafka refuses with the same fact).
    #[error("duplicate log directories: {0}")]
    DuplicateLog(String),
    /// KAFKA_STORAGE_ERROR (56): an earlier write/fsync failed; the log accepts no more writes.
    #[error("log is offline after an earlier I/O failure: {0}")]
    LogOffline(String),
}

impl StorageError {
    /// Maps a record parsing/validation error (protocol::record) to the storage error.
    pub fn from_record_error(e: RecordError) -> Self {
        match e {
            RecordError::Corrupt(m) => StorageError::CorruptMessage(m),
            RecordError::UnsupportedCompression(id) => {
                StorageError::CorruptMessage(format!("unknown compression type id {id}"))
            }
            RecordError::InvalidRecord(m) => StorageError::InvalidRecord(m),
            RecordError::UnsupportedMagic(m) => StorageError::InvalidRecord(format!(
                "record batch magic {m} is not supported (only magic 2)"
            )),
            RecordError::DecompressedTooLarge(max) => StorageError::MessageTooLarge {
                size: max.saturating_add(1),
                max,
            },
        }
    }
}

impl From<RecordError> for StorageError {
    fn from(e: RecordError) -> Self {
        StorageError::from_record_error(e)
    }
}
