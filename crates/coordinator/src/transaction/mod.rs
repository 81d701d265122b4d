//! [`TransactionCoordinator`]: Kafka's transaction coordinator (KIP-98, KIP-360, KIP-664, KIP-890) as a pure
//! state machine with injected time.
//!
//! The runtime drives it: requests go in with a caller-chosen [`RequestId`] and `now_ms`; out come
//! [`TxnEffect`]s — records to append to `__transaction_state` ([`TxnEffect::Append`]), answers
//! ([`TxnEffect::Respond`]) and transaction markers to write ([`TxnEffect::WriteMarkers`]). A state change
//! is only *prepared* by a request; it is applied when the runtime reports the append succeeded
//! ([`TransactionCoordinator::append_completed`]), and the request is answered then (Kafka's
//! `prepareTransitionTo` / `appendTransactionToLog` / `completeTransitionTo`).
//!
//! Modules: `metadata` (states, the transition table, [`TransactionMetadata`]), `records` (the
//! `__transaction_state` codec), `api` (shapes and effects), `config`, `ops` (InitProducerId,
//! AddPartitionsToTxn, AddOffsetsToTxn), `end` (EndTxn, TV1 and TV2), `admin` (DescribeTransactions,
//! ListTransactions, loading and unloading partitions), `verify` (the partition leader's verification
//! policy, KIP-890), and this module: state, appends, markers, timers.
//!
//! Source: Kafka's `TransactionCoordinator` (core), `TransactionStateManager`,
//! `TransactionMarkerChannelManager` and the `transaction-coordinator` module.

mod admin;
mod api;
mod config;
mod end;
mod metadata;
mod ops;
mod records;
#[cfg(test)]
mod tests;
mod verify;

use std::collections::BTreeMap;
use std::fmt;

use types::ErrorCode;

pub use api::*;
pub use config::TransactionConfig;
pub use metadata::{
    is_epoch_exhausted, IllegalTransition, TopicPartition, TransactionMetadata, TransactionState,
    TransactionVersion, TxnTransitMetadata,
};
pub use records::{
    decode_transaction_record, encode_transaction_record, TransactionLogRecord,
    TransactionLogValue, TRANSACTION_LOG_KEY_VERSION,
};
pub use verify::*;

use crate::api::RequestId;

/// Name of the topic holding transaction state.
pub const TRANSACTION_STATE_TOPIC: &str = "__transaction_state";

/// The `__transaction_state` partition owning `transactional_id`: Kafka's
/// `Utils.abs(transactionalId.hashCode) % n` with Java's `String.hashCode` (`Utils.abs(i32::MIN) == 0`).
/// Returns 0 when `num_partitions <= 0`.
pub fn transaction_partition_for(transactional_id: &str, num_partitions: i32) -> i32 {
    crate::records::partition_for(transactional_id, num_partitions)
}

/// One owned `__transaction_state` partition (Kafka's `TxnMetadataCacheEntry` plus its loading flag).
#[derive(Debug)]
struct TxnPartition {
    /// Leader epoch of the partition when this broker became its coordinator.
    coordinator_epoch: i32,
    /// Between [`TransactionCoordinator::load_partition`] and [`TransactionCoordinator::loaded`].
    loading: bool,
    /// Transactional id → metadata.
    txns: BTreeMap<String, TransactionMetadata>,
    /// Markers in flight: transactional id → the prepared completion appended once they are written.
    markers: BTreeMap<String, TxnTransitMetadata>,
}

/// What to do when an append completes.
#[derive(Clone, Debug)]
enum AfterAppend {
    /// Answer with the transit's producer id and epoch (InitProducerId), or NONE (AddPartitions/AddOffsets).
    Respond {
        request: RequestId,
        with_producer: bool,
    },
    /// A Prepare{Commit,Abort} was written: answer, then write markers.
    EndTxn {
        request: Option<RequestId>,
        result: TransactionResult,
        epoch_fence: bool,
        /// InitProducerId fencing an ongoing transaction: answer CONCURRENT_TRANSACTIONS on success.
        answer_concurrent: bool,
    },
    /// A Complete{Commit,Abort} was written.
    Complete,
    /// An expired transactional id's tombstone was written.
    Expire,
}

/// An append in flight.
#[derive(Clone, Debug)]
struct PendingAppend {
    transactional_id: String,
    partition: i32,
    coordinator_epoch: i32,
    transit: TxnTransitMetadata,
    then: AfterAppend,
}

/// The transaction coordinator of one broker: the transactional ids of every `__transaction_state`
/// partition it leads.
///
/// Time is injected: calls take `now_ms` (ms since the epoch, non-decreasing). The runtime calls
/// [`TransactionCoordinator::tick`] at [`TransactionCoordinator::next_deadline`] (timed-out transactions
/// are aborted, idle transactional ids expired). Ownership: [`TransactionCoordinator::load_partition`],
/// [`TransactionCoordinator::replay`] for every record of the partition, [`TransactionCoordinator::loaded`];
/// [`TransactionCoordinator::unload_partition`] on resignation.
pub struct TransactionCoordinator {
    config: TransactionConfig,
    producer_ids: Box<dyn ProducerIdSource + Send>,
    partitions: BTreeMap<i32, TxnPartition>,
    appends: BTreeMap<AppendId, PendingAppend>,
    next_append: AppendId,
    next_abort_scan: Option<i64>,
    next_expire_scan: Option<i64>,
}

impl fmt::Debug for TransactionCoordinator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TransactionCoordinator")
            .field("config", &self.config)
            .field("partitions", &self.partitions)
            .field("appends", &self.appends.len())
            .finish_non_exhaustive()
    }
}

/// Kafka's `TransactionStateManager.appendTransactionToLog` error mapping: the append error becomes the
/// error answered to the client.
pub fn append_error_to_client(error: ErrorCode) -> ErrorCode {
    match error {
        ErrorCode::NONE => ErrorCode::NONE,
        ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
        | ErrorCode::NOT_ENOUGH_REPLICAS
        | ErrorCode::NOT_ENOUGH_REPLICAS_AFTER_APPEND
        | ErrorCode::REQUEST_TIMED_OUT => ErrorCode::COORDINATOR_NOT_AVAILABLE,
        ErrorCode::NOT_LEADER_OR_FOLLOWER | ErrorCode::KAFKA_STORAGE_ERROR => {
            ErrorCode::NOT_COORDINATOR
        }
        ErrorCode::MESSAGE_TOO_LARGE | ErrorCode::RECORD_LIST_TOO_LARGE => {
            ErrorCode::UNKNOWN_SERVER_ERROR
        }
        other => other,
    }
}

impl TransactionCoordinator {
    /// A coordinator owning no partition; new producer ids come from `producer_ids`.
    pub fn new(config: TransactionConfig, producer_ids: Box<dyn ProducerIdSource + Send>) -> Self {
        TransactionCoordinator {
            config,
            producer_ids,
            partitions: BTreeMap::new(),
            appends: BTreeMap::new(),
            next_append: 1,
            next_abort_scan: None,
            next_expire_scan: None,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &TransactionConfig {
        &self.config
    }

    /// The `__transaction_state` partition of `transactional_id` under this configuration.
    pub fn partition_for(&self, transactional_id: &str) -> i32 {
        transaction_partition_for(
            transactional_id,
            self.config.transaction_topic_num_partitions,
        )
    }

    /// The cached metadata of `transactional_id`, if this coordinator holds it (for inspection and tests).
    pub fn metadata(&self, transactional_id: &str) -> Option<&TransactionMetadata> {
        self.partitions
            .get(&self.partition_for(transactional_id))?
            .txns
            .get(transactional_id)
    }

    /// Kafka's `getTransactionState`: the partition entry of `transactional_id`, or
    /// COORDINATOR_LOAD_IN_PROGRESS while it loads, NOT_COORDINATOR when it is not owned.
    fn entry(&mut self, transactional_id: &str) -> Result<(i32, &mut TxnPartition), ErrorCode> {
        let partition = self.partition_for(transactional_id);
        match self.partitions.get_mut(&partition) {
            Some(p) if p.loading => Err(ErrorCode::COORDINATOR_LOAD_IN_PROGRESS),
            Some(p) => Ok((partition, p)),
            None => Err(ErrorCode::NOT_COORDINATOR),
        }
    }

    /// Read-only [`Self::txn_mut`].
    fn txn(&self, transactional_id: &str) -> Result<&TransactionMetadata, ErrorCode> {
        match self.partitions.get(&self.partition_for(transactional_id)) {
            Some(p) if p.loading => Err(ErrorCode::COORDINATOR_LOAD_IN_PROGRESS),
            Some(p) => p
                .txns
                .get(transactional_id)
                .ok_or(ErrorCode::INVALID_PRODUCER_ID_MAPPING),
            None => Err(ErrorCode::NOT_COORDINATOR),
        }
    }

    /// The metadata of `transactional_id`: the [`Self::entry`] errors, or INVALID_PRODUCER_ID_MAPPING when the
    /// id is unknown (Kafka's answer for a transactional id without state).
    fn txn_mut(&mut self, transactional_id: &str) -> Result<&mut TransactionMetadata, ErrorCode> {
        self.entry(transactional_id)?
            .1
            .txns
            .get_mut(transactional_id)
            .ok_or(ErrorCode::INVALID_PRODUCER_ID_MAPPING)
    }

    /// Emits the append of `transit` for `transactional_id` and remembers what follows it.
    fn append(
        &mut self,
        fx: &mut Vec<TxnEffect>,
        transactional_id: &str,
        transit: TxnTransitMetadata,
        then: AfterAppend,
    ) {
        let partition = self.partition_for(transactional_id);
        let Some(coordinator_epoch) = self.partitions.get(&partition).map(|p| p.coordinator_epoch)
        else {
            // Not reached (callers looked the id up); the request is still answered.
            respond_request(fx, &then, TxnResult::error(ErrorCode::NOT_COORDINATOR));
            return;
        };
        let append = self.next_append;
        self.next_append += 1;
        let record = TransactionLogRecord {
            transactional_id: transactional_id.to_string(),
            value: (transit.state != TransactionState::Dead).then(|| TransactionLogValue {
                version: self.config.transaction_version.log_value_version(),
                producer_id: transit.producer_id,
                previous_producer_id: transit.prev_producer_id,
                next_producer_id: transit.next_producer_id,
                producer_epoch: transit.producer_epoch,
                transaction_timeout_ms: transit.txn_timeout_ms,
                state: transit.state,
                partitions: transit.partitions.clone(),
                last_update_timestamp_ms: transit.txn_last_update_timestamp,
                start_timestamp_ms: transit.txn_start_timestamp,
                client_transaction_version: transit.client_transaction_version,
            }),
        };
        fx.push(TxnEffect::Append {
            append,
            partition,
            coordinator_epoch,
            record,
        });
        self.appends.insert(
            append,
            PendingAppend {
                transactional_id: transactional_id.to_string(),
                partition,
                coordinator_epoch,
                transit,
                then,
            },
        );
    }

    /// [`append_completed`](Self::append_completed) for an append that was written and replicated.
    pub fn append_succeeded(&mut self, append: AppendId, now_ms: i64) -> Vec<TxnEffect> {
        self.append_completed(append, ErrorCode::NONE, now_ms)
    }

    /// The runtime reports the outcome of [`TxnEffect::Append`] `append`: `error` is NONE when the record is
    /// written (and replicated), else the append's error. On success the prepared transition is applied and
    /// the request answered (EndTxn: then markers are requested); on failure the transition is rolled back
    /// and the request answered with the mapped error ([`append_error_to_client`]) — except a completion
    /// (Complete{Commit,Abort}) failing with a COORDINATOR_NOT_AVAILABLE-class error, which is appended again
    /// (Kafka's marker channel manager retries it); after any other completion failure the transaction stays in
    /// PrepareCommit/PrepareAbort until the partition is loaded again, as in Kafka. If the partition changed
    /// coordinator epoch meanwhile, the request gets NOT_COORDINATOR. Unknown ids are ignored.
    pub fn append_completed(
        &mut self,
        append: AppendId,
        error: ErrorCode,
        now_ms: i64,
    ) -> Vec<TxnEffect> {
        let Some(p) = self.appends.remove(&append) else {
            return Vec::new();
        };
        let mut fx = Vec::new();
        if self.append_entry(&p).is_none() {
            let response = TxnResult::error(ErrorCode::NOT_COORDINATOR);
            respond_request(&mut fx, &p.then, response);
            return fx;
        }
        if error != ErrorCode::NONE {
            self.append_failed(&mut fx, p, error);
            return fx;
        }
        let Some(entry) = self.append_entry(&p) else {
            return fx;
        };
        let Some(md) = entry.txns.get_mut(&p.transactional_id) else {
            return fx;
        };
        if p.transit.state == TransactionState::Dead {
            // Kafka's `writeTombstonesForExpiredTransactionalIds`: removed only if still the expired one.
            if md.pending_state == Some(TransactionState::Dead)
                && md.producer_epoch == p.transit.producer_epoch
            {
                entry.txns.remove(&p.transactional_id);
            } else if md.pending_state == Some(TransactionState::Dead) {
                md.abort_pending();
            }
            return fx;
        }
        if md.complete_transition(&p.transit).is_err() {
            respond_request(
                &mut fx,
                &p.then,
                TxnResult::error(ErrorCode::UNKNOWN_SERVER_ERROR),
            );
            return fx;
        }
        match p.then {
            AfterAppend::Respond {
                request,
                with_producer,
            } => {
                let response = if with_producer {
                    TxnResult::ok(p.transit.producer_id, p.transit.producer_epoch)
                } else {
                    TxnResult::error(ErrorCode::NONE)
                };
                fx.push(TxnEffect::Respond { request, response });
            }
            AfterAppend::EndTxn {
                request,
                result,
                answer_concurrent,
                ..
            } => {
                self.after_prepare_written(
                    &mut fx,
                    &p.transactional_id,
                    result,
                    request,
                    answer_concurrent,
                    now_ms,
                );
            }
            AfterAppend::Complete | AfterAppend::Expire => {}
        }
        fx
    }

    /// The partition entry an append was made for, if it is still owned at the append's coordinator epoch, loaded,
    /// and holds the transactional id.
    fn append_entry(&mut self, p: &PendingAppend) -> Option<&mut TxnPartition> {
        self.partitions
            .get_mut(&p.partition)
            .filter(|e| e.coordinator_epoch == p.coordinator_epoch && !e.loading)
            .filter(|e| e.txns.contains_key(&p.transactional_id))
    }

    /// An append failed: roll back (or retry a completion) and answer with the mapped error.
    fn append_failed(&mut self, fx: &mut Vec<TxnEffect>, p: PendingAppend, error: ErrorCode) {
        let client_error = append_error_to_client(error);
        let Some(md) = self
            .append_entry(&p)
            .and_then(|e| e.txns.get_mut(&p.transactional_id))
        else {
            return;
        };
        match p.then {
            AfterAppend::Complete if client_error == ErrorCode::COORDINATOR_NOT_AVAILABLE => {
                // Kafka's marker channel manager retries the completion append; it stays pending meanwhile.
                let then = p.then.clone();
                self.append(fx, &p.transactional_id, p.transit, then);
                return;
            }
            // TV1: the fenced epoch stays in memory, never returned; the next fence does not bump again.
            // TV2 fences did not touch the epoch (KAFKA-19367).
            AfterAppend::EndTxn {
                epoch_fence: true, ..
            } if !p.transit.client_transaction_version.supports_epoch_bump() => {
                md.has_failed_epoch_fence = true;
                md.abort_pending();
            }
            _ => md.abort_pending(),
        }
        respond_request(fx, &p.then, TxnResult::error(client_error));
    }

    /// PrepareCommit/PrepareAbort is written: prepare the completion, answer the client (Kafka answers before
    /// the markers are written), then ask for the markers — or, with no partition, complete at once.
    fn after_prepare_written(
        &mut self,
        fx: &mut Vec<TxnEffect>,
        transactional_id: &str,
        result: TransactionResult,
        request: Option<RequestId>,
        answer_concurrent: bool,
        now_ms: i64,
    ) {
        let not_coordinator = |fx: &mut Vec<TxnEffect>| {
            if let Some(request) = request {
                let response = TxnResult::error(ErrorCode::NOT_COORDINATOR);
                fx.push(TxnEffect::Respond { request, response });
            }
        };
        let Ok((_, entry)) = self.entry(transactional_id) else {
            return not_coordinator(fx);
        };
        let coordinator_epoch = entry.coordinator_epoch;
        let Some(md) = entry.txns.get_mut(transactional_id) else {
            return not_coordinator(fx);
        };
        let markers = TxnMarkers::ending(md, result, coordinator_epoch);
        let tv2 = md.client_transaction_version.supports_epoch_bump();
        let complete = md.prepare_complete(now_ms);
        // TV2 answers the producer id and epoch the completion leaves (a new id at epoch 0 after an
        // overflow); TV1 answers without them.
        let response = match &complete {
            _ if answer_concurrent => TxnResult::error(ErrorCode::CONCURRENT_TRANSACTIONS),
            Ok(c) if tv2 => TxnResult::ok(c.producer_id, c.producer_epoch),
            Ok(_) => TxnResult::error(ErrorCode::NONE),
            Err(_) => TxnResult::error(ErrorCode::UNKNOWN_SERVER_ERROR),
        };
        if let Some(request) = request {
            fx.push(TxnEffect::Respond { request, response });
        }
        let Ok(complete) = complete else {
            return;
        };
        if markers.partitions.is_empty() {
            self.append(fx, transactional_id, complete, AfterAppend::Complete);
        } else {
            entry.markers.insert(transactional_id.to_string(), complete);
            fx.push(TxnEffect::WriteMarkers(markers));
        }
    }

    /// The runtime reports that every marker of [`TxnEffect::WriteMarkers`] for `transactional_id` under
    /// `coordinator_epoch` is written: the completion (CompleteCommit/CompleteAbort) is appended. Ignored
    /// when no such markers are in flight (e.g. the partition moved).
    pub fn markers_written(
        &mut self,
        transactional_id: &str,
        coordinator_epoch: i32,
        _now_ms: i64,
    ) -> Vec<TxnEffect> {
        let mut fx = Vec::new();
        let Ok((_, entry)) = self.entry(transactional_id) else {
            return fx;
        };
        if entry.coordinator_epoch != coordinator_epoch {
            return fx;
        }
        let Some(complete) = entry.markers.remove(transactional_id) else {
            return fx;
        };
        self.append(&mut fx, transactional_id, complete, AfterAppend::Complete);
        fx
    }

    /// Earliest time (ms) at which [`TransactionCoordinator::tick`] has work: the next timed-out-transaction
    /// scan or transactional-id expiration scan; `None` before the first `tick`/`loaded`.
    pub fn next_deadline(&self) -> Option<i64> {
        match (self.next_abort_scan, self.next_expire_scan) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn schedule_scans(&mut self, now_ms: i64) {
        let abort = self.config.abort_timed_out_transactions_interval_ms.max(1);
        let expire = self
            .config
            .remove_expired_transactional_ids_interval_ms
            .max(1);
        self.next_abort_scan
            .get_or_insert(now_ms.saturating_add(abort));
        self.next_expire_scan
            .get_or_insert(now_ms.saturating_add(expire));
    }

    /// Runs the periodic scans that are due at `now_ms` (and schedules them on the first call): aborts every
    /// Ongoing transaction open longer than its timeout (Kafka's `abortTimedOutTransactions`: fence the
    /// epoch, then abort), and expires transactional ids idle past `transactional.id.expiration.ms`
    /// (Kafka's `removeExpiredTransactionalIds`: Dead, tombstone).
    pub fn tick(&mut self, now_ms: i64) -> Vec<TxnEffect> {
        let mut fx = Vec::new();
        self.schedule_scans(now_ms);
        if self.next_abort_scan.is_some_and(|t| t <= now_ms) {
            self.abort_timed_out_transactions(&mut fx, now_ms);
            self.next_abort_scan = None;
        }
        if self.next_expire_scan.is_some_and(|t| t <= now_ms) {
            self.remove_expired_transactional_ids(&mut fx, now_ms);
            self.next_expire_scan = None;
        }
        self.schedule_scans(now_ms);
        fx
    }

    fn abort_timed_out_transactions(&mut self, fx: &mut Vec<TxnEffect>, now_ms: i64) {
        let timed_out: Vec<(String, types::ProducerId)> = self
            .partitions
            .values()
            .filter(|p| !p.loading)
            .flat_map(|p| p.txns.values())
            .filter(|md| {
                !md.pending_transition_in_progress()
                    && md.state == TransactionState::Ongoing
                    && md
                        .txn_start_timestamp
                        .saturating_add(i64::from(md.txn_timeout_ms))
                        < now_ms
            })
            .map(|md| (md.transactional_id.clone(), md.producer_id))
            .collect();
        for (id, producer_id) in timed_out {
            let Ok((_, entry)) = self.entry(&id) else {
                continue;
            };
            let Some(md) = entry.txns.get_mut(&id) else {
                continue;
            };
            if md.producer_id != producer_id || md.pending_transition_in_progress() {
                continue;
            }
            let Ok(fence) = md.prepare_fence_producer_epoch() else {
                continue;
            };
            let end = end::EndRequest {
                producer_id: fence.producer_id,
                producer_epoch: fence.producer_epoch,
                result: TransactionResult::Abort,
                from_client: false,
                transaction_version: self.config.transaction_version,
            };
            self.end_transaction(fx, &id, end, None, false, now_ms);
        }
    }

    fn remove_expired_transactional_ids(&mut self, fx: &mut Vec<TxnEffect>, now_ms: i64) {
        let cutoff = now_ms.saturating_sub(self.config.transactional_id_expiration_ms);
        let mut expired = Vec::new();
        for p in self.partitions.values_mut().filter(|p| !p.loading) {
            for md in p.txns.values_mut() {
                if md.pending_state.is_none()
                    && md.state.is_expiration_allowed()
                    && md.txn_last_update_timestamp <= cutoff
                {
                    if let Ok(dead) = md.prepare_dead() {
                        expired.push((md.transactional_id.clone(), dead));
                    }
                }
            }
        }
        for (id, dead) in expired {
            self.append(fx, &id, dead, AfterAppend::Expire);
        }
    }
}

/// Answers the request an append was made for, if any.
fn respond_request(fx: &mut Vec<TxnEffect>, then: &AfterAppend, response: TxnResult) {
    let request = match then {
        AfterAppend::Respond { request, .. } => Some(*request),
        AfterAppend::EndTxn { request, .. } => *request,
        AfterAppend::Complete | AfterAppend::Expire => None,
    };
    if let Some(request) = request {
        fx.push(TxnEffect::Respond { request, response });
    }
}
