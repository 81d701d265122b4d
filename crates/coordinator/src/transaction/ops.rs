//! InitProducerId (KIP-98, KIP-360), AddPartitionsToTxn (with KIP-890 part 1's verify-only form) and
//! AddOffsetsToTxn.
//!
//! Source: Kafka's `TransactionCoordinator.handleInitProducerId`, `prepareInitProducerIdTransit`,
//! `handleAddPartitionsToTransaction`, `handleVerifyPartitionsInTransaction`.

use std::collections::BTreeSet;

use types::{ErrorCode, ProducerEpoch, ProducerId};

use super::end::EndRequest;
use super::metadata::{
    is_epoch_exhausted, TopicPartition, TransactionMetadata, TransactionState, TransactionVersion,
    TxnTransitMetadata,
};
use super::{AfterAppend, TransactionCoordinator, TransactionResult, TxnEffect, TxnResult};
use crate::api::RequestId;

/// Name of the topic whose partition AddOffsetsToTxn adds.
const CONSUMER_OFFSETS_TOPIC: &str = "__consumer_offsets";

/// What InitProducerId's checks decided for an existing transactional id.
enum InitDecision {
    /// Persist this transition (Empty) and answer its producer id and epoch.
    Transit(TxnTransitMetadata),
    /// Ongoing transaction: fenced (PrepareEpochFence pending); abort it and answer CONCURRENT_TRANSACTIONS.
    Fence(TxnTransitMetadata),
}

impl TransactionCoordinator {
    /// InitProducerId. `transactional_id: None` (idempotent producer): a fresh producer id at epoch 0, answered
    /// at once. Otherwise the transactional id's producer id/epoch is initialized or bumped (KIP-360: with
    /// `expected` = the producer's current id and epoch, a producer recovers without being fenced), and the
    /// answer comes once the record is written. An epoch at `i16::MAX - 1` rotates to a new producer id.
    /// An ongoing transaction is fenced: aborted with a bumped epoch, and the request answered
    /// CONCURRENT_TRANSACTIONS so that the client retries.
    ///
    /// Errors: INVALID_REQUEST (empty id, or longer than `i16::MAX` bytes), INVALID_TRANSACTION_TIMEOUT (<= 0 or above
    /// `transaction.max.timeout.ms`), NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
    /// CONCURRENT_TRANSACTIONS (Prepare* or a pending transition), PRODUCER_FENCED (`expected` is stale),
    /// or the [`super::ProducerIdSource`]'s error.
    pub fn init_producer_id(
        &mut self,
        request: RequestId,
        transactional_id: Option<&str>,
        txn_timeout_ms: i32,
        expected: Option<(ProducerId, ProducerEpoch)>,
        now_ms: i64,
    ) -> Vec<TxnEffect> {
        let mut fx = Vec::new();
        let respond =
            |fx: &mut Vec<TxnEffect>, response| fx.push(TxnEffect::Respond { request, response });
        let Some(id) = transactional_id else {
            let response = match self.producer_ids.next_producer_id() {
                Ok(pid) => TxnResult::ok(pid, ProducerEpoch(0)),
                Err(code) => TxnResult::error(code),
            };
            respond(&mut fx, response);
            return fx;
        };
        // An id longer than a record key can hold is refused (Kafka's request parser refuses such strings).
        if id.is_empty() || id.len() > i16::MAX as usize {
            respond(&mut fx, TxnResult::error(ErrorCode::INVALID_REQUEST));
            return fx;
        }
        if txn_timeout_ms <= 0 || txn_timeout_ms > self.config.transaction_max_timeout_ms {
            respond(
                &mut fx,
                TxnResult::error(ErrorCode::INVALID_TRANSACTION_TIMEOUT),
            );
            return fx;
        }
        if let Err(code) = self.get_or_create(id, txn_timeout_ms, now_ms) {
            respond(&mut fx, TxnResult::error(code));
            return fx;
        }
        match self.prepare_init_transit(id, txn_timeout_ms, expected, now_ms) {
            Err(code) => respond(&mut fx, TxnResult::error(code)),
            Ok(InitDecision::Transit(transit)) => {
                let then = AfterAppend::Respond {
                    request,
                    with_producer: true,
                };
                self.append(&mut fx, id, transit, then);
            }
            Ok(InitDecision::Fence(fence)) => {
                let end = EndRequest {
                    producer_id: fence.producer_id,
                    producer_epoch: fence.producer_epoch,
                    result: TransactionResult::Abort,
                    from_client: false,
                    transaction_version: self.config.transaction_version,
                };
                self.end_transaction(&mut fx, id, end, Some(request), true, now_ms);
            }
        }
        fx
    }

    /// Kafka's `putTransactionStateIfNotExists`: a new transactional id gets a fresh producer id, epoch -1,
    /// state Empty.
    fn get_or_create(
        &mut self,
        id: &str,
        txn_timeout_ms: i32,
        now_ms: i64,
    ) -> Result<(), ErrorCode> {
        if self.entry(id)?.1.txns.contains_key(id) {
            return Ok(());
        }
        let producer_id = self.producer_ids.next_producer_id()?;
        let md = TransactionMetadata::new(id, producer_id, txn_timeout_ms, now_ms);
        self.entry(id)?.1.txns.insert(id.to_string(), md);
        Ok(())
    }

    /// Kafka's `prepareInitProducerIdTransit`.
    fn prepare_init_transit(
        &mut self,
        id: &str,
        txn_timeout_ms: i32,
        expected: Option<(ProducerId, ProducerEpoch)>,
        now_ms: i64,
    ) -> Result<InitDecision, ErrorCode> {
        let md = self.txn_mut(id)?;
        // KIP-360: the expected id must be the current one, or the previous one with an exhausted epoch (a
        // retry after a rotation), unless the metadata was just created (epoch -1).
        let valid_expected =
            |md: &TransactionMetadata, (pid, epoch): (ProducerId, ProducerEpoch)| {
                md.producer_epoch.is_none()
                    || pid == md.producer_id
                    || (pid == md.prev_producer_id && is_epoch_exhausted(epoch))
            };
        if md.pending_transition_in_progress() {
            return Err(ErrorCode::CONCURRENT_TRANSACTIONS);
        }
        if expected.is_some_and(|e| !valid_expected(md, e)) {
            return Err(ErrorCode::PRODUCER_FENCED);
        }
        let illegal = |_| ErrorCode::UNKNOWN_SERVER_ERROR;
        match md.state {
            TransactionState::PrepareAbort | TransactionState::PrepareCommit => {
                Err(ErrorCode::CONCURRENT_TRANSACTIONS)
            }
            TransactionState::CompleteAbort
            | TransactionState::CompleteCommit
            | TransactionState::Empty => {
                let rotate = md.is_producer_epoch_exhausted()
                    && expected.is_none_or(|(_, epoch)| epoch == md.producer_epoch);
                if rotate {
                    let new_id = self.producer_ids.next_producer_id()?;
                    let md = self.txn_mut(id)?;
                    let t = md
                        .prepare_producer_id_rotation(
                            new_id,
                            txn_timeout_ms,
                            now_ms,
                            expected.is_some(),
                        )
                        .map_err(illegal)?;
                    return Ok(InitDecision::Transit(t));
                }
                match md
                    .prepare_increment_producer_epoch(
                        txn_timeout_ms,
                        expected.map(|(_, e)| e),
                        now_ms,
                    )
                    .map_err(illegal)?
                {
                    Some(t) => Ok(InitDecision::Transit(t)),
                    None => Err(ErrorCode::PRODUCER_FENCED),
                }
            }
            TransactionState::Ongoing => md
                .prepare_fence_producer_epoch()
                .map(InitDecision::Fence)
                .map_err(illegal),
            TransactionState::Dead | TransactionState::PrepareEpochFence => {
                Err(ErrorCode::UNKNOWN_SERVER_ERROR)
            }
        }
    }

    /// AddPartitionsToTxn (the client's form, and the brokers' v4+ form with `verify_only = false`): adds
    /// `partitions` to the transaction, starting it (Ongoing) if none is open. Answered through
    /// [`TxnEffect::Respond`] `request` with one error for all the partitions: at once when the partitions are
    /// already in the Ongoing transaction (NONE) or on error, else once the record is written.
    /// `transaction_version` is the client's (TV2 for AddPartitionsToTxn v5+ sent by a broker, KIP-890).
    ///
    /// Errors, in the order checked: INVALID_REQUEST (empty id), NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
    /// INVALID_PRODUCER_ID_MAPPING (unknown id), CONCURRENT_TRANSACTIONS (a pending transition),
    /// INVALID_PRODUCER_ID_MAPPING (other producer id), PRODUCER_FENCED (other epoch),
    /// CONCURRENT_TRANSACTIONS (PrepareCommit/PrepareAbort).
    #[allow(clippy::too_many_arguments)]
    pub fn add_partitions_to_txn(
        &mut self,
        request: RequestId,
        transactional_id: &str,
        producer_id: ProducerId,
        producer_epoch: ProducerEpoch,
        partitions: &[TopicPartition],
        transaction_version: TransactionVersion,
        now_ms: i64,
    ) -> Vec<TxnEffect> {
        let mut fx = Vec::new();
        let added: BTreeSet<TopicPartition> = partitions.iter().cloned().collect();
        match self.prepare_add(
            transactional_id,
            producer_id,
            producer_epoch,
            &added,
            transaction_version,
            now_ms,
        ) {
            Err(code) => fx.push(TxnEffect::Respond {
                request,
                response: TxnResult::error(code),
            }),
            Ok(transit) => {
                let then = AfterAppend::Respond {
                    request,
                    with_producer: false,
                };
                self.append(&mut fx, transactional_id, transit, then);
            }
        }
        fx
    }

    /// The checks of AddPartitionsToTxn; `Err(NONE)` when there is nothing to write.
    fn prepare_add(
        &mut self,
        id: &str,
        producer_id: ProducerId,
        producer_epoch: ProducerEpoch,
        added: &BTreeSet<TopicPartition>,
        transaction_version: TransactionVersion,
        now_ms: i64,
    ) -> Result<TxnTransitMetadata, ErrorCode> {
        if id.is_empty() {
            return Err(ErrorCode::INVALID_REQUEST);
        }
        let md = self.txn_mut(id)?;
        // The pending check comes first (Kafka 4.0, KAFKA-18660): across a TV2 epoch overflow the producer
        // may already use the new producer id that is only pending.
        if md.pending_transition_in_progress() {
            return Err(ErrorCode::CONCURRENT_TRANSACTIONS);
        }
        if md.producer_id != producer_id {
            return Err(ErrorCode::INVALID_PRODUCER_ID_MAPPING);
        }
        if md.producer_epoch != producer_epoch {
            return Err(ErrorCode::PRODUCER_FENCED);
        }
        if matches!(
            md.state,
            TransactionState::PrepareCommit | TransactionState::PrepareAbort
        ) {
            return Err(ErrorCode::CONCURRENT_TRANSACTIONS);
        }
        if md.state == TransactionState::Ongoing && added.is_subset(&md.partitions) {
            return Err(ErrorCode::NONE);
        }
        md.prepare_add_partitions(added, now_ms, transaction_version)
            .map_err(|_| ErrorCode::UNKNOWN_SERVER_ERROR)
    }

    /// AddPartitionsToTxn v4+ with `verify_only` (KIP-890 part 1, sent by partition leaders): which of
    /// `partitions` are in the transaction — NONE for those that are, TRANSACTION_ABORTABLE for the others.
    /// Read-only; a pending transition is not checked (the append is verified again later). Every partition
    /// gets the same error when the checks fail: INVALID_REQUEST (empty id), NOT_COORDINATOR,
    /// COORDINATOR_LOAD_IN_PROGRESS, INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED, CONCURRENT_TRANSACTIONS
    /// (PrepareCommit/PrepareAbort).
    pub fn verify_partitions_in_txn(
        &self,
        transactional_id: &str,
        producer_id: ProducerId,
        producer_epoch: ProducerEpoch,
        partitions: &[TopicPartition],
    ) -> Vec<(TopicPartition, ErrorCode)> {
        let all = |code: ErrorCode| partitions.iter().map(|tp| (tp.clone(), code)).collect();
        if transactional_id.is_empty() {
            return all(ErrorCode::INVALID_REQUEST);
        }
        let md = match self.txn(transactional_id) {
            Ok(md) => md,
            Err(code) => return all(code),
        };
        if md.producer_id != producer_id {
            return all(ErrorCode::INVALID_PRODUCER_ID_MAPPING);
        }
        if md.producer_epoch != producer_epoch {
            return all(ErrorCode::PRODUCER_FENCED);
        }
        if matches!(
            md.state,
            TransactionState::PrepareCommit | TransactionState::PrepareAbort
        ) {
            return all(ErrorCode::CONCURRENT_TRANSACTIONS);
        }
        partitions
            .iter()
            .map(|tp| {
                let code = if md.partitions.contains(tp) {
                    ErrorCode::NONE
                } else {
                    ErrorCode::TRANSACTION_ABORTABLE
                };
                (tp.clone(), code)
            })
            .collect()
    }

    /// AddOffsetsToTxn: adds the group's `__consumer_offsets` partition (`offsets_partition`, which the
    /// caller computes with [`crate::partition_for`] and `offsets.topic.num.partitions`) to the transaction,
    /// exactly as AddPartitionsToTxn does (same answers and errors).
    #[allow(clippy::too_many_arguments)]
    pub fn add_offsets_to_txn(
        &mut self,
        request: RequestId,
        transactional_id: &str,
        producer_id: ProducerId,
        producer_epoch: ProducerEpoch,
        offsets_partition: i32,
        transaction_version: TransactionVersion,
        now_ms: i64,
    ) -> Vec<TxnEffect> {
        let tp = TopicPartition::new(CONSUMER_OFFSETS_TOPIC, offsets_partition);
        self.add_partitions_to_txn(
            request,
            transactional_id,
            producer_id,
            producer_epoch,
            &[tp],
            transaction_version,
            now_ms,
        )
    }
}
