//! The transaction side of [`Partition`] (KIP-98): end-transaction markers appended as leader, the
//! LastStableOffset, and the producers DescribeProducers lists (KIP-664).

use storage::{EndTransactionMarker, LogAppendInfo};
use types::{LeaderEpoch, Offset, ProducerEpoch, ProducerId};

use super::{ActiveProducer, Partition, ReplicaError};

impl Partition {
    /// WriteTxnMarkers' append (Kafka's `appendRecordsToLeader` with origin COORDINATOR): as
    /// [`append_as_leader`](Self::append_as_leader) — leadership, the committed ISR against `min_isr`
    /// (0: no check), the current leader epoch, the HW advance, waiters woken — of one control batch
    /// holding `marker` for `producer_id` at `producer_epoch`, timestamp `now_ms` (ms). Returns the append
    /// info and the leader epoch it was appended in. Errors: NotLeaderOrFollower, NotEnoughReplicas,
    /// Storage (InvalidProducerEpoch for an epoch older than the producer's, TransactionCoordinatorFenced
    /// for an older coordinator epoch, see `storage::Log::append_end_txn_marker`).
    pub fn append_txn_marker(
        &self,
        producer_id: ProducerId,
        producer_epoch: ProducerEpoch,
        marker: EndTransactionMarker,
        min_isr: usize,
        now_ms: i64,
    ) -> Result<(LogAppendInfo, LeaderEpoch), ReplicaError> {
        self.append_with(min_isr, now_ms, |log, epoch| {
            log.append_end_txn_marker(producer_id, producer_epoch, marker, epoch, now_ms)
        })
    }

    /// The LastStableOffset (Kafka's `lastStableOffset`): min(first unstable offset, HighWatermark), so
    /// it moves with the HighWatermark (a completed transaction stays unstable until the HW passes its
    /// marker).
    pub fn last_stable_offset(&self) -> Offset {
        self.log.lock().last_stable_offset()
    }

    /// The producers with state in this replica's log (Kafka's `activeProducers`), by producer id. Any
    /// role: the caller checks leadership (DescribeProducers answers only on the leader).
    pub fn active_producers(&self) -> Vec<ActiveProducer> {
        let log = self.log.lock();
        let mut out: Vec<ActiveProducer> = log
            .producer_state()
            .active_producers()
            .map(|e| {
                let last = e.batches.back();
                ActiveProducer {
                    producer_id: e.producer_id,
                    producer_epoch: e.producer_epoch,
                    last_sequence: last.map_or(-1, |b| b.last_seq),
                    last_timestamp: last.map_or(-1, |b| b.max_timestamp),
                    coordinator_epoch: e.coordinator_epoch,
                    current_txn_start_offset: e.current_txn_first_offset,
                }
            })
            .collect();
        out.sort_by_key(|p| p.producer_id);
        out
    }
}
