//! Transactions in the log (KIP-98): append origins, end-transaction markers, the LastStableOffset, the
//! aborted transactions of a `read_committed` fetch, and the producer-state replay that rebuilds
//! transaction indexes.
//!
//! Compaction (`cleaner_txn.rs`): an aborted transaction's records never supersede others in the
//! cleaner's offset map, and nothing at or past the LastStableOffset is cleaned; aborted records and
//! control batches are kept (Kafka drops them after `delete.retention.ms`). Segments are cleaned one for
//! one and keep their markers, so a cleaned segment keeps its `.txnindex` unchanged.

use super::*;
use crate::producer_state::CompletedTxn;
use crate::txn_index::AbortedTxn;
use crate::txn_marker::{ControlRecordType, EndTransactionMarker};
use types::{ProducerEpoch, ProducerId};

/// Who appends to a leader's log (Kafka's `AppendOrigin`): decides which batches are accepted and how
/// strictly producer state is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppendOrigin {
    /// A Produce request: control batches are refused (InvalidRecord), sequences and epochs checked.
    Client,
    /// A coordinator's write (WriteTxnMarkers' end-transaction markers, the group coordinator's
    /// transactional offset commits): control batches holding one marker are accepted; a marker's producer
    /// epoch and coordinator epoch are checked; data batches are checked for their producer epoch and
    /// transaction state but not for sequence or duplicates (Kafka checks those only for a client).
    Coordinator,
    /// Batches copied from another replica (followers use [`Log::append_as_follower`]): control batches
    /// accepted, markers not checked (Kafka only logs there).
    Replication,
}

/// The end-transaction marker of a stored control batch: `None` for a data batch, for a control batch
/// without records (its transaction cleaned away, as Kafka) and for other control types.
pub(crate) fn marker_of(batch: &RecordBatch) -> Result<Option<EndTransactionMarker>, StorageError> {
    if !batch.is_control() {
        return Ok(None);
    }
    let Some(first) = batch.records()?.into_iter().next() else {
        return Ok(None);
    };
    let key = first.key.as_deref().unwrap_or_default();
    match ControlRecordType::parse_key(key)? {
        ControlRecordType::Abort | ControlRecordType::Commit => {
            Ok(Some(EndTransactionMarker::parse(&first)?))
        }
        ControlRecordType::Other(_) => Ok(None),
    }
}

/// The marker of a control batch appended by a coordinator: transactional, a producer id, exactly one
/// record, an ABORT or COMMIT marker. Else InvalidRecord.
pub(super) fn coordinator_marker(
    batch: &RecordBatch,
) -> Result<EndTransactionMarker, StorageError> {
    if !batch.is_transactional() || batch.producer_id() < 0 || batch.records_count() != 1 {
        return Err(StorageError::InvalidRecord(format!(
            "a transaction marker batch is transactional with a producer id and one record \
             (transactional {}, producer id {}, {} records)",
            batch.is_transactional(),
            batch.producer_id(),
            batch.records_count()
        )));
    }
    marker_of(batch)?.ok_or_else(|| {
        StorageError::InvalidRecord("control batch holds no transaction marker".into())
    })
}

impl Log {
    /// Appends `marker` as the coordinator does for WriteTxnMarkers (Kafka's `appendAsLeader` of
    /// `MemoryRecords.withEndTransactionMarker` with origin COORDINATOR): one control batch with the
    /// producer's id and epoch, timestamp `now_ms`, at the LEO. Errors: an epoch older than the
    /// producer's → InvalidProducerEpoch; an older coordinator epoch → TransactionCoordinatorFenced;
    /// otherwise as [`append_as_leader`](Self::append_as_leader). The marker completes the producer's
    /// ongoing transaction, if any (which may advance the LastStableOffset); an ABORT adds an
    /// [`AbortedTxn`] to the active segment's transaction index. A marker for a producer without an
    /// ongoing transaction is appended and completes nothing (as Kafka).
    pub fn append_end_txn_marker(
        &mut self,
        producer_id: ProducerId,
        producer_epoch: ProducerEpoch,
        marker: EndTransactionMarker,
        leader_epoch: LeaderEpoch,
        now_ms: i64,
    ) -> Result<LogAppendInfo, StorageError> {
        let batch = marker.to_batch(producer_id, producer_epoch, now_ms)?;
        self.append_as_leader_with_origin(batch, leader_epoch, AppendOrigin::Coordinator, now_ms)
    }

    /// Kafka's `firstUnstableOffset`: the first offset of the earliest transaction that is ongoing, or
    /// completed by a marker the HighWatermark has not passed yet; `None` when there is none.
    pub fn first_unstable_offset(&self) -> Option<Offset> {
        self.producer_state
            .first_unstable_offset(Offset(self.high_watermark))
    }

    /// The LastStableOffset (Kafka's `lastStableOffset`), an offset: `read_committed` consumers read
    /// below it. It is min(first unstable offset, HighWatermark) — the HighWatermark when no
    /// transaction is unstable. A marker completing the earliest transaction advances it once the
    /// HighWatermark passes the marker (Kafka's `unreplicatedTxns`).
    pub fn last_stable_offset(&self) -> Offset {
        let hw = Offset(self.high_watermark);
        self.first_unstable_offset().map_or(hw, |o| o.min(hw))
    }

    /// Kafka's `collectAbortedTransactions`: the aborted transactions with last offset ≥
    /// `start_offset` and first offset < `upper_bound_offset`, from the transaction indexes of the
    /// segment holding `start_offset` and the following ones, stopping at the first segment whose
    /// search is complete (an entry's last stable offset ≥ `upper_bound_offset`).
    pub fn collect_aborted_transactions(
        &self,
        start_offset: Offset,
        upper_bound_offset: Offset,
    ) -> Vec<AbortedTxn> {
        let floor = self
            .segments
            .range(..=start_offset.get())
            .next_back()
            .map_or(i64::MIN, |(b, _)| *b);
        let mut out = Vec::new();
        for seg in self.segments.range(floor..).map(|(_, s)| s) {
            let r = seg
                .txn_index()
                .collect_aborted(start_offset, upper_bound_offset);
            out.extend(r.aborted);
            if r.is_complete {
                break;
            }
        }
        out
    }

    /// A `read_committed` fetch (Kafka's read with `FetchIsolation.TXN_COMMITTED`): as
    /// [`read`](Self::read) with the LastStableOffset as the exclusive upper bound, plus in
    /// [`FetchDataInfo::aborted_transactions`] the aborted transactions overlapping the returned
    /// batches (from `start_offset` to the offset following the last returned batch; an empty list when
    /// nothing is returned). A `start_offset` past the LastStableOffset but within the log returns
    /// nothing (as Kafka), not OffsetOutOfRange; otherwise errors as [`read`](Self::read).
    pub fn read_committed(
        &mut self,
        start_offset: Offset,
        max_bytes: usize,
        min_one_batch: bool,
    ) -> Result<FetchDataInfo, StorageError> {
        let lso = self.last_stable_offset();
        if start_offset > lso
            && start_offset.get() >= self.log_start_offset
            && start_offset.get() <= self.log_end_offset
        {
            let mut info = FetchDataInfo::empty(start_offset.get());
            info.aborted_transactions = Some(Vec::new());
            return Ok(info);
        }
        let mut info = self.read(start_offset, max_bytes, lso, min_one_batch)?;
        if info.records.is_empty() {
            info.aborted_transactions = Some(Vec::new());
            return Ok(info);
        }
        let meta = info.fetch_offset_metadata;
        let base = meta.segment_base_offset.get();
        let end = meta.relative_position as u64 + info.records.len() as u64;
        let next_in_segment = match self.segments.get(&base) {
            Some(seg) => seg.batch_base_at(end)?,
            None => None,
        };
        let upper = next_in_segment
            .or_else(|| self.segments.range(base + 1..).next().map(|(b, _)| *b))
            .unwrap_or(self.log_end_offset);
        info.aborted_transactions =
            Some(self.collect_aborted_transactions(start_offset, Offset(upper)));
        Ok(info)
    }

    /// Completes `txns` after their markers were written (Kafka's `UnifiedLog.append` loop): each
    /// aborted one gets an [`AbortedTxn`] in the transaction index of the segment holding its marker,
    /// with the last stable offset computed from the producer state now. An I/O error takes the log
    /// offline.
    pub(super) fn complete_txns(&mut self, txns: &[CompletedTxn]) -> Result<(), StorageError> {
        for (i, t) in txns.iter().enumerate().filter(|(_, t)| t.is_aborted) {
            // Kafka completes the append's transactions one by one: the later ones still count as
            // ongoing when an earlier one's last stable offset is computed.
            let later = txns[i + 1..]
                .iter()
                .filter(|l| l.producer_id != t.producer_id)
                .map(|l| l.first_offset.get())
                .min();
            let other = self.producer_state.first_ongoing_except(t.producer_id);
            let lso = match (other, later) {
                (Some(a), Some(b)) => a.min(b),
                (a, b) => a.or(b).unwrap_or(t.last_offset.get() + 1),
            };
            let entry = AbortedTxn {
                producer_id: t.producer_id,
                first_offset: t.first_offset,
                last_offset: t.last_offset,
                last_stable_offset: Offset(lso),
            };
            let Some((_, seg)) = self.segments.range_mut(..=t.last_offset.get()).next_back() else {
                continue;
            };
            if let Err(e) = seg.txn_index_mut().append(entry) {
                return self.poison("transaction index append", e);
            }
        }
        for t in txns {
            self.producer_state.complete_txn(t);
        }
        Ok(())
    }

    /// Loads the producer state from the newest snapshot usable for the replay and replays the log from
    /// it to the LEO. When segments await a transaction-index rebuild (re-read by crash recovery, or
    /// their `.txnindex` failed its sanity check), the snapshot is taken at or below the first of them,
    /// their indexes are emptied and the replay re-adds their aborted transactions.
    pub(super) fn rebuild_producer_state(&mut self, now_ms: i64) -> Result<(), StorageError> {
        self.txn_rebuild.retain(|b| self.segments.contains_key(b));
        let upto = self
            .txn_rebuild
            .first()
            .map_or(self.log_end_offset, |&b| b.min(self.log_end_offset));
        let from =
            self.producer_state
                .load_for(self.log_start_offset, self.log_end_offset, upto)?;
        for b in &self.txn_rebuild {
            if let Some(seg) = self.segments.get_mut(b) {
                seg.txn_index_mut().reset()?;
            }
        }
        self.replay_producer_state(from, now_ms)?;
        self.txn_rebuild.clear();
        self.producer_state.set_map_end_offset(self.log_end_offset);
        Ok(())
    }

    fn replay_producer_state(&mut self, from: i64, now_ms: i64) -> Result<(), StorageError> {
        if from >= self.log_end_offset {
            return Ok(());
        }
        let floor = self.segments.range(..=from).next_back().map(|(b, _)| *b);
        let start_key = floor.unwrap_or(i64::MIN);
        let keys: Vec<i64> = self.segments.range(start_key..).map(|(b, _)| *b).collect();
        for k in keys {
            let rebuild = self.txn_rebuild.contains(&k);
            let seg = self.segments.get_mut(&k).expect("exists");
            let Some(pos) = seg.position_of(from)? else {
                continue;
            };
            let seg: &LogSegment = seg;
            let psm = &mut self.producer_state;
            let mut aborted = Vec::new();
            seg.for_each_header(pos, |b| {
                if b.header.last_offset() < from {
                    return Ok(true);
                }
                let marker = if b.header.is_control() {
                    let bytes = Bytes::from(seg.read_batch_bytes(b)?);
                    RecordBatch::new(bytes)
                        .map_err(StorageError::from)
                        .and_then(|batch| marker_of(&batch))
                        .unwrap_or_else(|e| {
                            tracing::warn!(offset = b.header.base_offset, error = %e, "unreadable control batch skipped by the producer-state replay");
                            None
                        })
                } else {
                    None
                };
                if let Some(t) = psm.replay(&b.header, marker, now_ms) {
                    psm.complete_txn(&t);
                    if t.is_aborted && rebuild {
                        aborted.push(AbortedTxn {
                            producer_id: t.producer_id,
                            first_offset: t.first_offset,
                            last_offset: t.last_offset,
                            last_stable_offset: Offset(psm.last_stable_offset_after(&t)),
                        });
                    }
                }
                Ok(true)
            })?;
            let seg = self.segments.get_mut(&k).expect("exists");
            for t in aborted {
                seg.txn_index_mut().append(t)?;
            }
        }
        Ok(())
    }
}
