//! The runtime around the pure [`coordinator::TransactionCoordinator`]: locking, requests waiting for their
//! `__transaction_state` append, the timer task, markers, the internal topic and loading it.
//!
//! Source: Kafka's `TransactionCoordinator` / `TransactionStateManager` / `TransactionMarkerChannelManager`
//! (KIP-98, KIP-360, KIP-664, KIP-890).
//!
//! - **`__transaction_state`** (`transaction.state.log.num.partitions` partitions, default 50;
//!   `transaction.state.log.replication.factor` capped by the brokers registered in the cluster, fenced ones
//!   included; `min.insync.replicas` = `transaction.state.log.min.isr` capped by that replication factor, so a
//!   one-broker setup works unchanged where Kafka needs both keys lowered; `cleanup.policy=compact`,
//!   `segment.bytes` = `transaction.state.log.segment.bytes`) is created lazily, by the first FindCoordinator
//!   for a transactional id, as Kafka does.
//! - **Ownership**: this broker coordinates the transactional ids of the `__transaction_state` partitions it
//!   leads, with the partition's LeaderEpoch as the coordinator epoch. [`TransactionCoordinatorPublisher`]
//!   (standalone and in a cluster: both publish metadata images) loads a partition when leadership arrives —
//!   replayed on the blocking pool from LogStartOffset to LogEndOffset; its ids get
//!   COORDINATOR_LOAD_IN_PROGRESS meanwhile — and unloads it when leadership leaves (its waiting requests get
//!   NOT_COORDINATOR). Standalone, [`TransactionCoordinatorService::start`] loads what is led at startup.
//! - **Appends** ([`coordinator::TxnEffect::Append`]): encoded with
//!   [`coordinator::encode_transaction_record`], appended as one uncompressed batch to the leader log while
//!   the coordinator lock is held (so the records of one partition reach the log in the order the
//!   coordinator produced them), only while the partition's LeaderEpoch is still the coordinator epoch
//!   (else NOT_COORDINATOR); then waited for with acks=all (the partition's `min.insync.replicas`, at most
//!   [`APPEND_TIMEOUT`]) and reported with `append_completed` — errors mapped by
//!   [`coordinator::transaction::append_error_to_client`]. The request is answered by the effect that follows.
//! - **Markers** (`markers.rs`): every partition of an ending transaction gets its marker from its leader:
//!   written here directly when this broker leads it ([`crate::txn_markers::write_marker`]), else sent as
//!   WriteTxnMarkers over the inter-broker listener; retried with backoff until written, dropped for a
//!   deleted topic, abandoned when the coordinator was fenced or resigned (Kafka's
//!   `TransactionMarkerChannelManager`). Then `markers_written` completes the transaction.
//! - **Verification** (`verification.rs`, KIP-890): partition leaders ask the coordinator of a transactional
//!   id, here or over the inter-broker listener, to verify or add a partition before a transaction's first
//!   write to it ([`TransactionCoordinatorService::add_or_verify`]).
//! - **Timers**: [`TransactionCoordinatorService::run_timers`] sleeps until `next_deadline()` and calls
//!   `tick` (timed-out transactions aborted, expired transactional ids removed).
//! - **Producer ids** come from a small prefetched pool (`producer_ids.rs`) over the broker's allocator (the
//!   controller's blocks in a cluster); an empty pool answers COORDINATOR_LOAD_IN_PROGRESS (retriable).

pub(crate) mod channel;
mod loading;
mod markers;
mod producer_ids;
mod verification;

pub use loading::TransactionCoordinatorPublisher;

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use coordinator::transaction::AppendId;
use coordinator::transaction::{
    encode_transaction_record, DescribedTransaction, ListTransactionsFilter,
    ListTransactionsResult, TopicPartition, TransactionConfig, TransactionCoordinator,
    TransactionLogRecord, TransactionResult, TransactionVersion, TxnEffect, TxnResult,
};
use coordinator::RequestId;
use parking_lot::Mutex;
use protocol::error::ErrorCode;
use protocol::record::{Compression, RecordBatchBuilder};
use tokio::sync::{oneshot, watch, Notify};
use types::{Clock, ProducerEpoch, ProducerId};

use crate::config::{keys, BrokerConfig};
use crate::group_coordinator::{CoordinatorError, GroupCoordinatorService};
use crate::metadata::MetadataStore;
use crate::metadata_cache::MetadataCache;
use crate::server::apis::errors::txn_append_error_code;
use crate::topics::TopicManager;
use replica::replica_manager::ReplicaManager;

pub use coordinator::transaction::TRANSACTION_STATE_TOPIC;

/// How long an append to `__transaction_state` may wait for its ISR (Kafka: the request timeout).
pub const APPEND_TIMEOUT: Duration = Duration::from_secs(30);

/// Delay before a failed append is reported (and possibly retried by the coordinator).
const RETRY_BACKOFF: Duration = Duration::from_millis(100);

/// Longest a request waits for its answer; past it COORDINATOR_NOT_AVAILABLE (retriable). Bounds a request
/// whose append outlives its client's timeout.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(60);

/// Why a `__transaction_state` append failed; the server edge maps it to the code the coordinator reports
/// (`server::apis::errors::txn_append_error_code`).
#[derive(Debug, thiserror::Error)]
pub enum TxnAppendError {
    /// The partition is not led here, or no longer at the coordinator epoch.
    #[error("not the coordinator of the partition at this epoch")]
    NotCoordinator,
    /// The record could not be encoded.
    #[error("cannot encode the record: {0}")]
    Encode(String),
    /// The append or its replication failed.
    #[error(transparent)]
    Replica(#[from] replica::replica_manager::ReplicaError),
}

/// The coordinator settings taken from the broker config (`transaction.*`, `transactional.id.*`).
pub fn transaction_config(config: &BrokerConfig) -> TransactionConfig {
    TransactionConfig {
        transaction_max_timeout_ms: config.get(keys::TRANSACTION_MAX_TIMEOUT_MS),
        transactional_id_expiration_ms: i64::from(config.get(keys::TRANSACTIONAL_ID_EXPIRATION_MS)),
        abort_timed_out_transactions_interval_ms: i64::from(
            config.get(keys::TRANSACTION_ABORT_TIMED_OUT_INTERVAL_MS),
        )
        .max(1),
        remove_expired_transactional_ids_interval_ms: i64::from(
            config.get(keys::TRANSACTION_REMOVE_EXPIRED_INTERVAL_MS),
        )
        .max(1),
        transaction_topic_num_partitions: config
            .get(keys::TRANSACTION_STATE_LOG_NUM_PARTITIONS)
            .max(1),
        // ApiVersions finalizes no `transaction.version`, so clients run transaction version 1 (explicit
        // AddPartitionsToTxn, no epoch bump per transaction); the coordinator's own aborts match it.
        transaction_version: TransactionVersion::TV_1,
    }
}

struct State {
    coordinator: TransactionCoordinator,
    /// Requests waiting for their answer.
    waiting: HashMap<RequestId, oneshot::Sender<TxnResult>>,
    next_request: RequestId,
    /// The coordinator's now: non-decreasing.
    last_now: i64,
}

impl State {
    /// The clock's wall time, never behind the previous call's.
    fn now(&mut self, clock: &dyn Clock) -> i64 {
        self.last_now = self.last_now.max(clock.now_ms());
        self.last_now
    }
}

/// The broker's transaction coordinator service (one per broker): the transactional ids of the
/// `__transaction_state` partitions this broker leads.
pub struct TransactionCoordinatorService {
    config: BrokerConfig,
    metadata: Arc<MetadataStore>,
    replica_manager: Arc<ReplicaManager>,
    topics: Arc<TopicManager>,
    /// Partition leaders and broker endpoints for markers; `__transaction_state` leadership at startup.
    cache: Arc<dyn MetadataCache>,
    /// Completes transactional offsets after a marker to a `__consumer_offsets` partition led here.
    groups: Arc<GroupCoordinatorService>,
    state: Mutex<State>,
    timer: Notify,
    /// Serializes the creation of `__transaction_state` (never held with `state`).
    create_lock: tokio::sync::Mutex<()>,
    /// Loads in progress: partition → load id (a load whose id is no longer current is discarded).
    loads: Mutex<HashMap<i32, u64>>,
    next_load: std::sync::atomic::AtomicU64,
    clock: Arc<dyn Clock>,
    producer_ids: Arc<producer_ids::ProducerIdPool>,
    /// WriteTxnMarkers to other leaders.
    markers: channel::BrokerChannel,
    /// AddPartitionsToTxn to other coordinators (this broker's partitions' verifications).
    verifications: channel::BrokerChannel,
}

impl std::fmt::Debug for TransactionCoordinatorService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TransactionCoordinatorService")
            .field("owned", &self.state.lock().coordinator.owned_partitions())
            .finish_non_exhaustive()
    }
}

impl TransactionCoordinatorService {
    /// A coordinator owning no partition yet. Markers to other brokers go through the replica fetchers'
    /// connector (the inter-broker listener's TLS/SASL).
    pub fn new(
        config: BrokerConfig,
        metadata: Arc<MetadataStore>,
        replica_manager: Arc<ReplicaManager>,
        topics: Arc<TopicManager>,
        cache: Arc<dyn MetadataCache>,
        groups: Arc<GroupCoordinatorService>,
    ) -> TransactionCoordinatorService {
        let connector = replica_manager.connector();
        let producer_ids = Arc::new(producer_ids::ProducerIdPool::new(metadata.clone()));
        let coordinator = TransactionCoordinator::new(
            transaction_config(&config),
            Box::new(producer_ids::PoolSource(producer_ids.clone())),
        );
        let markers = channel::BrokerChannel::new(config.node_id, connector.clone());
        let verifications = channel::BrokerChannel::new(config.node_id, connector);
        TransactionCoordinatorService {
            state: Mutex::new(State {
                coordinator,
                waiting: HashMap::new(),
                next_request: 1,
                last_now: 0,
            }),
            config,
            metadata,
            replica_manager,
            topics,
            cache,
            groups,
            timer: Notify::new(),
            create_lock: tokio::sync::Mutex::new(()),
            loads: Mutex::new(HashMap::new()),
            next_load: std::sync::atomic::AtomicU64::new(1),
            clock: Arc::new(types::SystemClock),
            producer_ids,
            markers,
            verifications,
        }
    }

    /// The `__transaction_state` partition of `transactional_id` (the existing topic's partition count, else
    /// the configured one).
    pub fn partition_for(&self, transactional_id: &str) -> i32 {
        let n = self.metadata.topic(TRANSACTION_STATE_TOPIC).map_or_else(
            || self.config.get(keys::TRANSACTION_STATE_LOG_NUM_PARTITIONS),
            |t| t.partitions,
        );
        coordinator::transaction::transaction_partition_for(transactional_id, n.max(1))
    }

    /// Creates `__transaction_state` if it does not exist yet (see the module doc). Concurrent callers wait
    /// for the one creation. Error: [`CoordinatorError::NotAvailable`].
    pub async fn ensure_topic(&self) -> Result<(), CoordinatorError> {
        if self.metadata.topic(TRANSACTION_STATE_TOPIC).is_some() {
            return Ok(());
        }
        let _guard = self.create_lock.lock().await;
        if self.metadata.topic(TRANSACTION_STATE_TOPIC).is_some() {
            return Ok(());
        }
        let n = self
            .config
            .get(keys::TRANSACTION_STATE_LOG_NUM_PARTITIONS)
            .max(1);
        let want = self
            .config
            .get(keys::TRANSACTION_STATE_LOG_REPLICATION_FACTOR);
        let cluster_size = i32::try_from(self.topics.registered_brokers()).unwrap_or(i32::MAX);
        let rf = want.min(cluster_size).clamp(1, i32::from(i16::MAX));
        let min_isr = self
            .config
            .get(keys::TRANSACTION_STATE_LOG_MIN_ISR)
            .clamp(1, rf);
        let segment = self.config.get(keys::TRANSACTION_STATE_LOG_SEGMENT_BYTES);
        let configs = [
            ("cleanup.policy", "compact".to_string()),
            ("min.insync.replicas", min_isr.to_string()),
            ("segment.bytes", segment.to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        match self
            .topics
            .create_topic(TRANSACTION_STATE_TOPIC, n, rf as i16, configs, false)
            .await
        {
            Ok(t) => {
                tracing::info!(
                    partitions = t.partitions,
                    rf,
                    "created {TRANSACTION_STATE_TOPIC}"
                );
                Ok(())
            }
            Err(e) if e.is_already_exists() => Ok(()),
            Err(e) => {
                tracing::error!(error = %e, "cannot create {TRANSACTION_STATE_TOPIC}");
                Err(CoordinatorError::NotAvailable)
            }
        }
    }

    /// InitProducerId with a transactional id (Kafka's `handleInitProducerId`): a new producer id, or the
    /// next epoch of the current one (fencing the previous instance; an ongoing transaction is aborted
    /// first and CONCURRENT_TRANSACTIONS answered so the client retries). `expected` is the producer id and
    /// epoch the client has (KIP-360, v3+).
    pub async fn init_producer_id(
        self: &Arc<Self>,
        transactional_id: &str,
        txn_timeout_ms: i32,
        expected: Option<(ProducerId, ProducerEpoch)>,
    ) -> TxnResult {
        self.producer_ids.prime().await;
        self.request(|c, id, now| {
            c.init_producer_id(id, Some(transactional_id), txn_timeout_ms, expected, now)
        })
        .await
    }

    /// AddPartitionsToTxn (v0–3, and v4+ entries that are not verify-only): one error for every partition.
    pub async fn add_partitions_to_txn(
        self: &Arc<Self>,
        transactional_id: &str,
        producer: (ProducerId, ProducerEpoch),
        partitions: &[TopicPartition],
        version: TransactionVersion,
    ) -> TxnResult {
        self.request(|c, id, now| {
            c.add_partitions_to_txn(
                id,
                transactional_id,
                producer.0,
                producer.1,
                partitions,
                version,
                now,
            )
        })
        .await
    }

    /// AddPartitionsToTxn v4+ with `verify_only` (KIP-890 part 1): each partition's error, NONE when it is in
    /// the ongoing transaction of this producer id and epoch.
    pub fn verify_partitions_in_txn(
        &self,
        transactional_id: &str,
        producer: (ProducerId, ProducerEpoch),
        partitions: &[TopicPartition],
    ) -> Vec<(TopicPartition, ErrorCode)> {
        let st = self.state.lock();
        st.coordinator.verify_partitions_in_txn(
            transactional_id,
            producer.0,
            producer.1,
            partitions,
        )
    }

    /// AddOffsetsToTxn: adds `__consumer_offsets` partition `offsets_partition` (the group's) to the
    /// transaction.
    pub async fn add_offsets_to_txn(
        self: &Arc<Self>,
        transactional_id: &str,
        producer: (ProducerId, ProducerEpoch),
        offsets_partition: i32,
        version: TransactionVersion,
    ) -> TxnResult {
        self.request(|c, id, now| {
            c.add_offsets_to_txn(
                id,
                transactional_id,
                producer.0,
                producer.1,
                offsets_partition,
                version,
                now,
            )
        })
        .await
    }

    /// EndTxn: commits or aborts; answered once the Prepare state is written (markers follow).
    pub async fn end_txn(
        self: &Arc<Self>,
        transactional_id: &str,
        producer: (ProducerId, ProducerEpoch),
        result: TransactionResult,
        version: TransactionVersion,
    ) -> TxnResult {
        self.request(|c, id, now| {
            c.end_txn(
                id,
                transactional_id,
                producer.0,
                producer.1,
                result,
                version,
                now,
            )
        })
        .await
    }

    /// DescribeTransactions for the ids owned here (others: NOT_COORDINATOR).
    pub fn describe_transactions(&self, ids: &[String]) -> Vec<DescribedTransaction> {
        self.state.lock().coordinator.describe_transactions(ids)
    }

    /// ListTransactions over the ids owned here.
    pub fn list_transactions(&self, filter: &ListTransactionsFilter) -> ListTransactionsResult {
        let mut st = self.state.lock();
        let now = st.now(&*self.clock);
        st.coordinator.list_transactions(filter, now)
    }

    /// Fires the coordinator's timers at their deadlines until `shutdown` flips.
    pub async fn run_timers(self: Arc<Self>, mut shutdown: watch::Receiver<bool>) {
        loop {
            let wait = {
                let mut st = self.state.lock();
                let now = st.now(&*self.clock);
                st.coordinator
                    .next_deadline()
                    .map_or(Duration::from_secs(3600), |d| {
                        Duration::from_millis(d.saturating_sub(now).max(0) as u64)
                    })
            };
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = self.timer.notified() => continue,
                _ = shutdown.changed() => return,
            }
            let mut st = self.state.lock();
            let now = st.now(&*self.clock);
            let fx = st.coordinator.tick(now);
            self.apply(&mut st, fx);
        }
    }

    /// Runs `f` with a fresh request id under the lock, performs its effects, and waits for the answer.
    async fn request(
        self: &Arc<Self>,
        f: impl FnOnce(&mut TransactionCoordinator, RequestId, i64) -> Vec<TxnEffect>,
    ) -> TxnResult {
        let rx = {
            let mut st = self.state.lock();
            let id = st.next_request;
            st.next_request += 1;
            let (tx, rx) = oneshot::channel();
            st.waiting.insert(id, tx);
            let now = st.now(&*self.clock);
            let fx = f(&mut st.coordinator, id, now);
            self.apply(&mut st, fx);
            rx
        };
        self.timer.notify_one();
        match tokio::time::timeout(ANSWER_TIMEOUT, rx).await {
            Ok(Ok(answer)) => answer,
            _ => TxnResult::error(CoordinatorError::NotAvailable.into()),
        }
    }

    /// Performs `effects` in order (and those that failed appends lead to): answers, appends, markers.
    fn apply(self: &Arc<Self>, st: &mut State, effects: Vec<TxnEffect>) {
        let mut work: VecDeque<TxnEffect> = effects.into();
        while let Some(e) = work.pop_front() {
            match e {
                TxnEffect::Respond { request, response } => {
                    if let Some(tx) = st.waiting.remove(&request) {
                        let _ = tx.send(response);
                    }
                }
                TxnEffect::Append {
                    append,
                    partition,
                    coordinator_epoch,
                    record,
                } => {
                    if let Err(e) = self.append(append, partition, coordinator_epoch, &record) {
                        // Reported later, not here: the coordinator may retry a completion at once,
                        // which would spin under the lock while the cause lasts.
                        tracing::warn!(partition, error = %e, "cannot write a transaction record");
                        let this = self.clone();
                        tokio::spawn(async move { this.completed(append, Err(e)).await });
                    }
                }
                TxnEffect::WriteMarkers(m) => {
                    let this = self.clone();
                    tokio::spawn(async move { this.write_markers(m).await });
                }
            }
        }
    }

    /// Appends `record` to its partition's leader log (under the state lock) and spawns the wait for its
    /// replication, which reports the outcome. Err: the failure to report at once.
    fn append(
        self: &Arc<Self>,
        append: AppendId,
        partition: i32,
        coordinator_epoch: i32,
        record: &TransactionLogRecord,
    ) -> Result<(), TxnAppendError> {
        let p = self
            .replica_manager
            .partition(TRANSACTION_STATE_TOPIC, partition)
            .filter(|p| p.is_leader() && p.leader_epoch().get() == coordinator_epoch)
            .ok_or(TxnAppendError::NotCoordinator)?;
        let (key, value) = encode_transaction_record(record);
        let mut builder = RecordBatchBuilder::new(Compression::None);
        builder.append(self.clock.now_ms(), Some(key), value, Vec::new());
        let bytes = builder
            .build()
            .map_err(|e| TxnAppendError::Encode(e.to_string()))?;
        let min_isr = p.min_insync_replicas();
        let (info, epoch) = self.replica_manager.append_to_leader(&p, bytes, min_isr)?;
        let this = self.clone();
        tokio::spawn(async move {
            let deadline = tokio::time::Instant::now() + APPEND_TIMEOUT;
            let required = info.last_offset.next();
            let rm = &this.replica_manager;
            let replicated = rm
                .wait_for_replication(&p, required, epoch, min_isr, deadline)
                .await
                .map_err(TxnAppendError::from);
            if let Err(e) = &replicated {
                tracing::warn!(partition, error = %e, "transaction record not replicated");
            }
            this.completed(append, replicated).await;
        });
        Ok(())
    }

    /// Reports an append's outcome to the coordinator and performs what follows. A failure is reported
    /// after [`RETRY_BACKOFF`], which paces the coordinator's retries of a completion.
    async fn completed(self: &Arc<Self>, append: AppendId, outcome: Result<(), TxnAppendError>) {
        let code = match outcome {
            Ok(()) => None,
            Err(e) => {
                tokio::time::sleep(RETRY_BACKOFF).await;
                Some(txn_append_error_code(&e))
            }
        };
        let mut st = self.state.lock();
        let now = st.now(&*self.clock);
        let fx = match code {
            None => st.coordinator.append_succeeded(append, now),
            Some(code) => st.coordinator.append_completed(append, code, now),
        };
        self.apply(&mut st, fx);
        drop(st);
        self.timer.notify_one();
    }
}
