//! DescribeTransactions and ListTransactions (KIP-664, KIP-994's duration filter), and partition ownership:
//! loading a `__transaction_state` partition on election and dropping it on resignation.
//!
//! Source: Kafka's `TransactionCoordinator.handleDescribeTransactions` / `handleListTransactions` /
//! `onElection` / `onResignation` and `TransactionStateManager.listTransactionStates` /
//! `loadTransactionsForTxnTopicPartition` / `removeTransactionsForTxnTopicPartition`.

use std::collections::BTreeMap;

use types::{ErrorCode, ProducerEpoch, ProducerId};

use super::metadata::{TransactionMetadata, TransactionState, TxnTransitMetadata};
use super::records::TransactionLogRecord;
use super::{
    respond_request, AfterAppend, DescribedTransaction, ListTransactionsFilter,
    ListTransactionsResult, ListedTransaction, TransactionCoordinator, TransactionResult,
    TxnEffect, TxnMarkers, TxnPartition, TxnResult,
};

fn describe_error(transactional_id: &str, error_code: ErrorCode) -> DescribedTransaction {
    DescribedTransaction {
        error_code,
        transactional_id: transactional_id.to_string(),
        transaction_state: String::new(),
        transaction_timeout_ms: 0,
        transaction_start_time_ms: -1,
        producer_id: ProducerId::NONE,
        producer_epoch: ProducerEpoch::NONE,
        topics: Vec::new(),
    }
}

impl TransactionCoordinator {
    /// DescribeTransactions: one entry per requested id, in order. Errors per id: INVALID_REQUEST (empty id),
    /// COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR, TRANSACTIONAL_ID_NOT_FOUND (unknown, or Dead: being
    /// expired).
    pub fn describe_transactions(&self, transactional_ids: &[String]) -> Vec<DescribedTransaction> {
        transactional_ids
            .iter()
            .map(|id| self.describe_one(id))
            .collect()
    }

    fn describe_one(&self, id: &str) -> DescribedTransaction {
        if id.is_empty() {
            return describe_error(id, ErrorCode::INVALID_REQUEST);
        }
        let md = match self.txn(id) {
            Ok(md) if md.state != TransactionState::Dead => md,
            Ok(_) | Err(ErrorCode::INVALID_PRODUCER_ID_MAPPING) => {
                return describe_error(id, ErrorCode::TRANSACTIONAL_ID_NOT_FOUND)
            }
            Err(code) => return describe_error(id, code),
        };
        let mut topics: BTreeMap<String, Vec<i32>> = BTreeMap::new();
        for tp in &md.partitions {
            topics
                .entry(tp.topic.clone())
                .or_default()
                .push(tp.partition);
        }
        DescribedTransaction {
            error_code: ErrorCode::NONE,
            transactional_id: id.to_string(),
            transaction_state: md.state.name().to_string(),
            transaction_timeout_ms: md.txn_timeout_ms,
            transaction_start_time_ms: md.txn_start_timestamp,
            producer_id: md.producer_id,
            producer_epoch: md.producer_epoch,
            topics: topics.into_iter().collect(),
        }
    }

    /// ListTransactions over every owned partition. COORDINATOR_LOAD_IN_PROGRESS while any partition loads.
    /// Dead ids are never listed; state filters that name no state come back in `unknown_state_filters`
    /// (and match nothing); the duration filter keeps transactions started more than that many ms before
    /// `now_ms`.
    pub fn list_transactions(
        &self,
        filter: &ListTransactionsFilter,
        now_ms: i64,
    ) -> ListTransactionsResult {
        if self.partitions.values().any(|p| p.loading) {
            return ListTransactionsResult {
                error_code: ErrorCode::COORDINATOR_LOAD_IN_PROGRESS,
                unknown_state_filters: Vec::new(),
                transaction_states: Vec::new(),
            };
        }
        let mut states = Vec::new();
        let mut unknown = Vec::new();
        for name in &filter.state_filters {
            match TransactionState::from_name(name) {
                Some(s) => states.push(s),
                None => unknown.push(name.clone()),
            }
        }
        let include = |md: &TransactionMetadata| {
            md.state != TransactionState::Dead
                && (filter.producer_id_filters.is_empty()
                    || filter.producer_id_filters.contains(&md.producer_id))
                && (filter.state_filters.is_empty() || states.contains(&md.state))
                && (filter.duration_filter_ms < 0
                    || now_ms.saturating_sub(md.txn_start_timestamp) > filter.duration_filter_ms)
        };
        let transaction_states = self
            .partitions
            .values()
            .flat_map(|p| p.txns.values())
            .filter(|md| include(md))
            .map(|md| ListedTransaction {
                transactional_id: md.transactional_id.clone(),
                producer_id: md.producer_id,
                transaction_state: md.state.name().to_string(),
            })
            .collect();
        ListTransactionsResult {
            error_code: ErrorCode::NONE,
            unknown_state_filters: unknown,
            transaction_states,
        }
    }

    /// Becoming coordinator of `__transaction_state` partition `partition` at `coordinator_epoch` (its leader
    /// epoch; Kafka's `onElection`): any state kept for the partition is dropped (its parked requests answered
    /// NOT_COORDINATOR) and the partition is loading — requests for its ids get COORDINATOR_LOAD_IN_PROGRESS
    /// until [`TransactionCoordinator::loaded`]. Feed its records with [`TransactionCoordinator::replay`].
    pub fn load_partition(&mut self, partition: i32, coordinator_epoch: i32) -> Vec<TxnEffect> {
        let fx = self.unload_partition(partition, None);
        self.partitions.insert(
            partition,
            TxnPartition {
                coordinator_epoch,
                loading: true,
                txns: BTreeMap::new(),
                markers: BTreeMap::new(),
            },
        );
        fx
    }

    /// Applies one record of a loading partition, in log order (later records win; a tombstone removes the
    /// id). Records for partitions not loading are ignored. The cached epoch retry state
    /// (`last_producer_epoch`) is not in the log and starts at -1, as in Kafka.
    pub fn replay(&mut self, partition: i32, record: TransactionLogRecord) {
        let Some(p) = self.partitions.get_mut(&partition).filter(|p| p.loading) else {
            return;
        };
        let id = record.transactional_id;
        match record.value {
            None => {
                p.txns.remove(&id);
            }
            Some(v) => {
                let t = TxnTransitMetadata {
                    producer_id: v.producer_id,
                    prev_producer_id: v.previous_producer_id,
                    next_producer_id: v.next_producer_id,
                    producer_epoch: v.producer_epoch,
                    last_producer_epoch: ProducerEpoch::NONE,
                    txn_timeout_ms: v.transaction_timeout_ms,
                    state: v.state,
                    partitions: v.partitions,
                    txn_start_timestamp: v.start_timestamp_ms,
                    txn_last_update_timestamp: v.last_update_timestamp_ms,
                    client_transaction_version: v.client_transaction_version,
                };
                p.txns
                    .insert(id.clone(), TransactionMetadata::from_transit(&id, &t));
            }
        }
    }

    /// Ends loading of `partition`: its ids are served from now on, and every transaction left in
    /// PrepareCommit/PrepareAbort has its markers requested again (Kafka resends them after a load), its
    /// completion prepared. Also schedules the periodic scans if they are not.
    pub fn loaded(&mut self, partition: i32, now_ms: i64) -> Vec<TxnEffect> {
        let mut fx = Vec::new();
        self.schedule_scans(now_ms);
        let Some(p) = self.partitions.get_mut(&partition).filter(|p| p.loading) else {
            return fx;
        };
        p.loading = false;
        let coordinator_epoch = p.coordinator_epoch;
        let mut complete_now = Vec::new();
        for (id, md) in p.txns.iter_mut() {
            let result = match md.state {
                TransactionState::PrepareCommit => TransactionResult::Commit,
                TransactionState::PrepareAbort => TransactionResult::Abort,
                _ => continue,
            };
            let markers = TxnMarkers::ending(md, result, coordinator_epoch);
            let Ok(complete) = md.prepare_complete(now_ms) else {
                continue;
            };
            if markers.partitions.is_empty() {
                complete_now.push((id.clone(), complete));
            } else {
                p.markers.insert(id.clone(), complete);
                fx.push(TxnEffect::WriteMarkers(markers));
            }
        }
        for (id, complete) in complete_now {
            self.append(&mut fx, &id, complete, AfterAppend::Complete);
        }
        fx
    }

    /// Resigning as coordinator of `partition` (Kafka's `onResignation`): forgets its transactional ids, markers
    /// in flight and appends in flight, answering their requests NOT_COORDINATOR. With `Some(epoch)`, only if
    /// the partition was loaded at that coordinator epoch (a stale resignation is ignored). Nothing is written.
    pub fn unload_partition(
        &mut self,
        partition: i32,
        coordinator_epoch: Option<i32>,
    ) -> Vec<TxnEffect> {
        let mut fx = Vec::new();
        let matches = self
            .partitions
            .get(&partition)
            .is_some_and(|p| coordinator_epoch.is_none_or(|e| e == p.coordinator_epoch));
        if !matches {
            return fx;
        }
        self.partitions.remove(&partition);
        let gone: Vec<_> = self
            .appends
            .iter()
            .filter(|(_, a)| a.partition == partition)
            .map(|(id, _)| *id)
            .collect();
        for id in gone {
            if let Some(a) = self.appends.remove(&id) {
                respond_request(
                    &mut fx,
                    &a.then,
                    TxnResult::error(ErrorCode::NOT_COORDINATOR),
                );
            }
        }
        fx
    }

    /// True while `partition` is owned and loading.
    pub fn is_loading(&self, partition: i32) -> bool {
        self.partitions.get(&partition).is_some_and(|p| p.loading)
    }

    /// The owned partitions with their coordinator epochs.
    pub fn owned_partitions(&self) -> Vec<(i32, i32)> {
        self.partitions
            .iter()
            .map(|(id, p)| (*id, p.coordinator_epoch))
            .collect()
    }
}
