//! Request/result shapes of the [`TransactionCoordinator`](super::TransactionCoordinator) and the effects
//! its calls produce. Plain Rust structs: the broker glue maps them from/to the wire messages (InitProducerId,
//! AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, DescribeTransactions, ListTransactions).

use std::collections::BTreeSet;

use types::{ErrorCode, ProducerEpoch, ProducerId};

use super::metadata::{TopicPartition, TransactionMetadata, TransactionVersion};
use super::records::TransactionLogRecord;
use crate::api::RequestId;

/// Caller-visible id of one `__transaction_state` append requested by [`TxnEffect::Append`]; the runtime
/// reports its outcome with [`TransactionCoordinator::append_completed`](super::TransactionCoordinator::append_completed).
pub type AppendId = u64;

/// Commit or abort (Kafka's `TransactionResult`; EndTxn's `committed` flag, a marker's type).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TransactionResult {
    /// Commit the transaction.
    Commit,
    /// Abort the transaction.
    Abort,
}

/// The answer to InitProducerId, AddPartitionsToTxn (one error for every partition of the transactional
/// id), AddOffsetsToTxn and EndTxn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxnResult {
    /// Kafka error code (NONE on success).
    pub error_code: ErrorCode,
    /// InitProducerId: the producer id; EndTxn (TV2): the producer id to use next; else -1.
    pub producer_id: ProducerId,
    /// InitProducerId: the epoch; EndTxn (TV2): the epoch to use next; else -1.
    pub producer_epoch: ProducerEpoch,
}

impl TxnResult {
    /// An error (or a bare NONE) without producer id and epoch.
    pub const fn error(error_code: ErrorCode) -> Self {
        TxnResult {
            error_code,
            producer_id: ProducerId::NONE,
            producer_epoch: ProducerEpoch::NONE,
        }
    }

    /// Success carrying a producer id and epoch.
    pub const fn ok(producer_id: ProducerId, producer_epoch: ProducerEpoch) -> Self {
        TxnResult {
            error_code: ErrorCode::NONE,
            producer_id,
            producer_epoch,
        }
    }
}

/// Transaction markers to write (Kafka's `TxnMarkerEntry`, sent as WriteTxnMarkers to each partition's
/// leader). When every partition has its marker the runtime calls
/// [`TransactionCoordinator::markers_written`](super::TransactionCoordinator::markers_written). Per-partition
/// retries (leader moves) and giving up on deleted partitions are the runtime's, as in Kafka's
/// `TransactionMarkerChannelManager`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxnMarkers {
    /// The transactional id whose transaction ends.
    pub transactional_id: String,
    /// Producer id of the transaction.
    pub producer_id: ProducerId,
    /// Producer epoch written in the markers.
    pub producer_epoch: ProducerEpoch,
    /// Commit or abort marker.
    pub result: TransactionResult,
    /// The coordinator epoch (leader epoch of the `__transaction_state` partition) the markers carry.
    pub coordinator_epoch: i32,
    /// The partitions to write a marker to.
    pub partitions: BTreeSet<TopicPartition>,
    /// The client's transaction version (WriteTxnMarkers v2 `TransactionVersion`).
    pub transaction_version: TransactionVersion,
}

impl TxnMarkers {
    /// The markers ending `md`'s current transaction with `result`, carrying `coordinator_epoch`.
    pub(crate) fn ending(
        md: &TransactionMetadata,
        result: TransactionResult,
        coordinator_epoch: i32,
    ) -> TxnMarkers {
        TxnMarkers {
            transactional_id: md.transactional_id.clone(),
            producer_id: md.producer_id,
            producer_epoch: md.producer_epoch,
            result,
            coordinator_epoch,
            partitions: md.partitions.clone(),
            transaction_version: md.client_transaction_version,
        }
    }
}

/// What the runtime does with one partition after an attempt to write its marker (Kafka's
/// `TransactionMarkerRequestCompletionHandler`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MarkerOutcome {
    /// Written: the partition is done.
    Written,
    /// Not written yet (leader moved or unknown, not enough replicas, timeout, storage error, ...): retry
    /// after a backoff, with the partition's current leader.
    Retry,
    /// INVALID_PRODUCER_EPOCH or TRANSACTION_COORDINATOR_FENCED: a newer producer epoch or coordinator took
    /// over; stop writing these markers without completing the transaction.
    Abandon,
}

impl MarkerOutcome {
    /// The outcome of a WriteTxnMarkers partition result with error `code`.
    pub fn of(code: ErrorCode) -> MarkerOutcome {
        match code {
            ErrorCode::NONE => MarkerOutcome::Written,
            ErrorCode::INVALID_PRODUCER_EPOCH | ErrorCode::TRANSACTION_COORDINATOR_FENCED => {
                MarkerOutcome::Abandon
            }
            _ => MarkerOutcome::Retry,
        }
    }
}

/// Something the runtime must do after a coordinator call, in order.
///
/// Every request passed in with a [`RequestId`] gets exactly one [`TxnEffect::Respond`], from that call or a
/// later one (`append_completed`, `unload_partition`, `load_partition`); no answer depends on an `Append` of
/// the same call being performed first.
#[derive(Clone, Debug, PartialEq)]
pub enum TxnEffect {
    /// Append `record` (encode with [`encode_transaction_record`](super::encode_transaction_record)) to
    /// `__transaction_state` partition `partition` (acks=all), then report the result with
    /// [`TransactionCoordinator::append_completed`](super::TransactionCoordinator::append_completed)`(append, ..)`.
    Append {
        /// Id to report the outcome with.
        append: AppendId,
        /// `__transaction_state` partition.
        partition: i32,
        /// The coordinator epoch the append was made under (the partition's leader epoch).
        coordinator_epoch: i32,
        /// The record (a tombstone when `value` is `None`).
        record: TransactionLogRecord,
    },
    /// Answer request `request` (a `RequestId` the caller passed in).
    Respond {
        /// The caller's request id.
        request: RequestId,
        /// The answer.
        response: TxnResult,
    },
    /// Write these transaction markers.
    WriteMarkers(TxnMarkers),
}

/// DescribeTransactions result for one transactional id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DescribedTransaction {
    /// NONE, NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, INVALID_REQUEST (empty id) or
    /// TRANSACTIONAL_ID_NOT_FOUND (unknown or being expired).
    pub error_code: ErrorCode,
    /// The transactional id asked for.
    pub transactional_id: String,
    /// State name ("" on error).
    pub transaction_state: String,
    /// Transaction timeout, ms (0 on error).
    pub transaction_timeout_ms: i32,
    /// Transaction start, ms since the epoch (-1 when none).
    pub transaction_start_time_ms: i64,
    /// Producer id (-1 on error).
    pub producer_id: ProducerId,
    /// Producer epoch (-1 on error).
    pub producer_epoch: ProducerEpoch,
    /// Partitions grouped by topic, sorted.
    pub topics: Vec<(String, Vec<i32>)>,
}

/// ListTransactions filters (all optional; empty = no filter). `Default` filters nothing (duration -1, the
/// request field's default).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListTransactionsFilter {
    /// State names to keep ("Ongoing", ...); unknown names are reported back, not matched.
    pub state_filters: Vec<String>,
    /// Producer ids to keep.
    pub producer_id_filters: Vec<ProducerId>,
    /// v1+ (KIP-994): keep only transactions running longer than this many ms; negative = no filter.
    pub duration_filter_ms: i64,
}

impl Default for ListTransactionsFilter {
    fn default() -> Self {
        ListTransactionsFilter {
            state_filters: Vec::new(),
            producer_id_filters: Vec::new(),
            duration_filter_ms: -1,
        }
    }
}

/// One ListTransactions entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListedTransaction {
    /// Transactional id.
    pub transactional_id: String,
    /// Producer id.
    pub producer_id: ProducerId,
    /// State name.
    pub transaction_state: String,
}

/// ListTransactions result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListTransactionsResult {
    /// NONE, or COORDINATOR_LOAD_IN_PROGRESS while any owned partition is loading.
    pub error_code: ErrorCode,
    /// State filters that name no state.
    pub unknown_state_filters: Vec<String>,
    /// Matching transactional ids (never Dead ones), sorted by partition then id.
    pub transaction_states: Vec<ListedTransaction>,
}

/// Where new producer ids come from (Kafka's `ProducerIdManager`, which the runtime backs with blocks from
/// the controller's AllocateProducerIds, or the standalone registry). Must not block: when no id is at
/// hand, answer an error — Kafka's `RPCProducerIdManager` answers COORDINATOR_LOAD_IN_PROGRESS — and the
/// client retries.
pub trait ProducerIdSource {
    /// The next unused producer id, or the error to answer with.
    fn next_producer_id(&mut self) -> Result<ProducerId, ErrorCode>;
}

/// A transaction API whose PRODUCER_FENCED is older clients' INVALID_PRODUCER_EPOCH.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxnApi {
    /// InitProducerId: PRODUCER_FENCED from v4.
    InitProducerId,
    /// AddPartitionsToTxn: PRODUCER_FENCED from v2.
    AddPartitionsToTxn,
    /// AddOffsetsToTxn: PRODUCER_FENCED from v2.
    AddOffsetsToTxn,
    /// EndTxn: PRODUCER_FENCED from v2.
    EndTxn,
}

/// KIP-588: clients too old to know PRODUCER_FENCED (90) get INVALID_PRODUCER_EPOCH (47) instead, as Kafka's
/// `KafkaApis` maps it per request version. Every other code is returned unchanged.
pub fn producer_fenced_for_version(error: ErrorCode, api: TxnApi, api_version: i16) -> ErrorCode {
    let first = match api {
        TxnApi::InitProducerId => 4,
        TxnApi::AddPartitionsToTxn | TxnApi::AddOffsetsToTxn | TxnApi::EndTxn => 2,
    };
    if error == ErrorCode::PRODUCER_FENCED && api_version < first {
        ErrorCode::INVALID_PRODUCER_EPOCH
    } else {
        error
    }
}
