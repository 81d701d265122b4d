//! What [`crate::partition::Partition`]'s verbs take and return: [`IsolationLevel`], [`ReplicaError`],
//! [`FetchSource`], [`PartitionRead`], [`DivergingEpoch`], [`LogOffsets`] and [`ActiveProducer`]. Kafka error codes are
//! chosen from these by the handlers only.

use protocol::record::Records;
use storage::{AbortedTxn, StorageError};
use types::{LeaderEpoch, Offset, ProducerEpoch, ProducerId};

/// Which records a consumer may read (Kafka's `IsolationLevel`; the `isolation_level` of Fetch v4+ and
/// ListOffsets v2+, KIP-98). Followers always read up to the LogEndOffset, whatever it says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IsolationLevel {
    /// Wire id 0: up to the HighWatermark, transactional records included whatever their outcome.
    #[default]
    ReadUncommitted,
    /// Wire id 1: up to the LastStableOffset, with the aborted transactions of the returned range so
    /// the consumer can drop their records.
    ReadCommitted,
}

impl IsolationLevel {
    /// The level of a wire id (Kafka's `IsolationLevel.forId`): 0 and 1; `None` for any other value.
    pub fn from_id(id: i8) -> Option<IsolationLevel> {
        match id {
            0 => Some(IsolationLevel::ReadUncommitted),
            1 => Some(IsolationLevel::ReadCommitted),
            _ => None,
        }
    }
}

/// Who a Fetch reads for, and so how far and on which replica (Kafka's `FetchParams`: the replica id,
/// `FetchIsolation` and `fetchOnlyFromLeader`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FetchSource {
    /// A follower replicating: up to the LogEndOffset, served by the leader only.
    Follower,
    /// A consumer: up to the HighWatermark ([`IsolationLevel::ReadUncommitted`]) or the LastStableOffset
    /// ([`IsolationLevel::ReadCommitted`]) of the replica that serves it. `leader_only` for a Fetch
    /// before v11, which carries no client metadata (Kafka's `fetchOnlyFromLeader`); from v11 any replica
    /// hosting the partition serves it, a follower up to its own HighWatermark (KIP-392).
    Consumer {
        /// Which records it may read.
        isolation: IsolationLevel,
        /// Only the leader may answer (else NOT_LEADER_OR_FOLLOWER).
        leader_only: bool,
    },
}

impl FetchSource {
    /// True for [`FetchSource::Follower`].
    pub fn is_follower(self) -> bool {
        matches!(self, FetchSource::Follower)
    }
}

/// One producer with state in a partition's log, as DescribeProducers (KIP-664) lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActiveProducer {
    /// The producer id.
    pub producer_id: ProducerId,
    /// Its current epoch ([`ProducerEpoch::NONE`] before its first batch).
    pub producer_epoch: ProducerEpoch,
    /// The sequence of its last appended record, -1 when none is retained.
    pub last_sequence: i32,
    /// The max timestamp (ms) of its last retained batch, -1 when none.
    pub last_timestamp: i64,
    /// The coordinator epoch of its last transaction marker, -1 when none.
    pub coordinator_epoch: i32,
    /// The first offset of its ongoing transaction, [`Offset::NONE`] when none.
    pub current_txn_start_offset: Offset,
}

/// Why a leader-side operation failed (mapped to Kafka error codes by the handlers).
#[derive(Debug, thiserror::Error)]
pub enum ReplicaError {
    /// This broker does not lead the partition (or stopped leading it while the request waited):
    /// NOT_LEADER_OR_FOLLOWER (6).
    #[error("this broker is not the leader of the partition")]
    NotLeaderOrFollower,
    /// The request's `current_leader_epoch` is older than ours: FENCED_LEADER_EPOCH (74).
    #[error("leader epoch {request} is older than the current {current}")]
    FencedLeaderEpoch {
        /// The request's epoch.
        request: LeaderEpoch,
        /// This replica's epoch.
        current: LeaderEpoch,
    },
    /// The request's `current_leader_epoch` is newer than ours: UNKNOWN_LEADER_EPOCH (75).
    #[error("leader epoch {request} is newer than the current {current}")]
    UnknownLeaderEpoch {
        /// The request's epoch.
        request: LeaderEpoch,
        /// This replica's epoch.
        current: LeaderEpoch,
    },
    /// acks=all and the ISR is smaller than `min.insync.replicas`: NOT_ENOUGH_REPLICAS (19).
    #[error("The size of the current ISR {isr} is insufficient to satisfy the min.isr requirement of {min_isr}")]
    NotEnoughReplicas {
        /// Current ISR size.
        isr: usize,
        /// `min.insync.replicas`.
        min_isr: usize,
    },
    /// The append reached the HighWatermark but the ISR was below `min.insync.replicas`:
    /// NOT_ENOUGH_REPLICAS_AFTER_APPEND (20).
    #[error("the ISR shrank to {isr}, below min.insync.replicas {min_isr}, while waiting for replication")]
    NotEnoughReplicasAfterAppend {
        /// ISR size at completion.
        isr: usize,
        /// `min.insync.replicas`.
        min_isr: usize,
    },
    /// The followers did not replicate within the request's timeout: REQUEST_TIMED_OUT (7).
    #[error("replication did not complete within the request timeout")]
    RequestTimedOut,
    /// The storage layer refused the operation.
    #[error(transparent)]
    Storage(#[from] StorageError),
}

/// The result of reading one partition for a Fetch ([`Partition::read`]).
#[derive(Debug)]
pub enum PartitionRead {
    /// Whole batches starting with the one that contains the fetch offset (empty when none is there yet).
    Records {
        /// HighWatermark at the time of the read.
        high_watermark: Offset,
        /// LastStableOffset at the time of the read (whatever the isolation level, as Kafka reports it).
        last_stable_offset: Offset,
        /// LogStartOffset at the time of the read.
        log_start_offset: Offset,
        /// The batches.
        records: Records,
        /// For [`IsolationLevel::ReadCommitted`]: the aborted transactions overlapping the returned
        /// batches (Kafka's `FetchDataInfo.abortedTransactions`); empty for the other reads.
        aborted_transactions: Vec<AbortedTxn>,
    },
    /// This broker does not lead the partition (a follower's or pre-v11 consumer's Fetch) or no longer
    /// hosts it: NOT_LEADER_OR_FOLLOWER.
    NotLeader,
    /// The log refused the read (e.g. OffsetOutOfRange), with the offsets such an answer carries.
    Error {
        /// The storage error.
        error: StorageError,
        /// HighWatermark at the time of the read.
        high_watermark: Offset,
        /// LogStartOffset at the time of the read.
        log_start_offset: Offset,
    },
}

impl PartitionRead {
    /// Bytes of records read (0 for errors).
    pub fn bytes(&self) -> usize {
        match self {
            PartitionRead::Records { records, .. } => records.len(),
            _ => 0,
        }
    }

    /// The HighWatermark seen by the read; -1 when this broker does not lead.
    pub fn high_watermark(&self) -> Offset {
        match self {
            PartitionRead::Records { high_watermark, .. }
            | PartitionRead::Error { high_watermark, .. } => *high_watermark,
            PartitionRead::NotLeader => Offset::NONE,
        }
    }

    /// True for `NotLeader` and `Error`: a delayed fetch answers at once.
    pub fn is_error(&self) -> bool {
        !matches!(self, PartitionRead::Records { .. })
    }
}

/// A follower's `last_fetched_epoch` diverges from the leader's log (KIP-595): the Fetch answers this
/// instead of records, and the follower truncates to `end_offset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DivergingEpoch {
    /// The largest epoch ≤ the follower's that the leader knows.
    pub epoch: LeaderEpoch,
    /// The leader's end offset for `epoch`.
    pub end_offset: Offset,
    /// The leader's HighWatermark.
    pub high_watermark: Offset,
    /// The leader's LogStartOffset.
    pub log_start_offset: Offset,
}

/// LogStartOffset, HighWatermark and LogEndOffset, read together under the log lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogOffsets {
    pub(crate) log_start_offset: Offset,
    pub(crate) high_watermark: Offset,
    pub(crate) log_end_offset: Offset,
}

impl LogOffsets {
    /// LogStartOffset: the first offset still in the log.
    pub fn log_start_offset(&self) -> Offset {
        self.log_start_offset
    }

    /// HighWatermark: offsets below it are committed (replicated to the ISR).
    pub fn high_watermark(&self) -> Offset {
        self.high_watermark
    }

    /// LogEndOffset: the offset the next appended record gets.
    pub fn log_end_offset(&self) -> Offset {
        self.log_end_offset
    }
}

/// A partition's log as the metrics endpoint reports it (Kafka's `kafka.log:type=Log` gauges), read
/// together under the log lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogStats {
    /// The log's size, bytes (every segment's file).
    pub size_bytes: u64,
    /// Its segment count.
    pub segments: usize,
    /// LogStartOffset.
    pub log_start_offset: Offset,
    /// HighWatermark.
    pub high_watermark: Offset,
    /// LogEndOffset.
    pub log_end_offset: Offset,
    /// LastStableOffset (KIP-98).
    pub last_stable_offset: Offset,
}
