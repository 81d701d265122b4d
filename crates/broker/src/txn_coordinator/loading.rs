//! Loading and unloading `__transaction_state` partitions as their leadership arrives and leaves (Kafka's
//! `onElection` / `onResignation`), and the [`MetadataPublisher`] that drives it.

use std::sync::atomic::Ordering;

use coordinator::transaction::decode_transaction_record;
use protocol::record::batches;

use super::*;
use crate::publisher::MetadataPublisher;

/// Bytes read per step while loading a partition.
const LOAD_READ_BYTES: usize = 4 * 1024 * 1024;

impl TransactionCoordinatorService {
    /// Shares the service and installs its [`TransactionCoordinatorPublisher`] in `publishers`.
    pub fn installed(self, publishers: &crate::publisher::Publishers) -> Arc<Self> {
        let this = Arc::new(self);
        publishers.install(Arc::new(TransactionCoordinatorPublisher {
            transactions: this.clone(),
            node_id: this.config.node_id,
        }));
        this
    }

    /// Starts coordinating what this broker leads now (standalone: every local `__transaction_state`
    /// partition; a cluster member's arrive with the images it replays), fills the producer id pool, and
    /// returns the timer task ([`run_timers`](Self::run_timers)) to spawn.
    pub fn start(
        self: &Arc<Self>,
        shutdown: watch::Receiver<bool>,
    ) -> impl std::future::Future<Output = ()> + Send + 'static {
        let image = self.cache.image();
        if let Some(t) = image.topics.get(TRANSACTION_STATE_TOPIC) {
            for (p, r) in t.partitions.iter() {
                if r.leader == self.config.node_id {
                    self.on_partition_leadership(*p, true);
                }
            }
        }
        self.producer_ids.ensure_ready();
        self.clone().run_timers(shutdown)
    }

    /// This broker became (`is_leader`) or stopped being the leader of `__transaction_state` partition
    /// `partition`. Call it after the ReplicaManager applied the partition state. Becoming leader: the
    /// partition loads at its current LeaderEpoch (requests for its ids get COORDINATOR_LOAD_IN_PROGRESS), is
    /// replayed on the blocking pool, then served; transactions left in PrepareCommit/PrepareAbort get their
    /// markers again. Losing it: its ids are dropped and their waiting requests get NOT_COORDINATOR.
    pub fn on_partition_leadership(self: &Arc<Self>, partition: i32, is_leader: bool) {
        if !is_leader {
            self.loads.lock().remove(&partition);
            let mut st = self.state.lock();
            let fx = st.coordinator.unload_partition(partition, None);
            self.apply(&mut st, fx);
            tracing::info!(partition, "unloaded {TRANSACTION_STATE_TOPIC} partition");
            return;
        }
        let Some(p) = self
            .replica_manager
            .partition(TRANSACTION_STATE_TOPIC, partition)
        else {
            tracing::warn!(
                partition,
                "{TRANSACTION_STATE_TOPIC} partition is not hosted"
            );
            return;
        };
        let epoch = p.leader_epoch().get();
        let already = self.state.lock().coordinator.owned_partitions();
        if already.contains(&(partition, epoch)) {
            return;
        }
        let id = self.next_load.fetch_add(1, Ordering::Relaxed);
        self.loads.lock().insert(partition, id);
        {
            let mut st = self.state.lock();
            let fx = st.coordinator.load_partition(partition, epoch);
            self.apply(&mut st, fx);
        }
        tracing::info!(
            partition,
            epoch,
            "loading {TRANSACTION_STATE_TOPIC} partition"
        );
        let this = self.clone();
        let load = move || {
            let records = read_partition(&p);
            this.finish_load(partition, id, records);
        };
        match tokio::runtime::Handle::try_current() {
            Ok(_) => drop(tokio::task::spawn_blocking(load)),
            Err(_) => load(),
        }
    }

    /// Replays a partition's records and marks it loaded, unless a newer load or a resignation came since.
    fn finish_load(self: &Arc<Self>, partition: i32, id: u64, records: Vec<TransactionLogRecord>) {
        let mut st = self.state.lock();
        if self.loads.lock().get(&partition) != Some(&id) {
            return;
        }
        let n = records.len();
        for r in records {
            st.coordinator.replay(partition, r);
        }
        let now = st.now(&*self.clock);
        let fx = st.coordinator.loaded(partition, now);
        self.apply(&mut st, fx);
        self.loads.lock().remove(&partition);
        drop(st);
        self.timer.notify_one();
        tracing::info!(
            partition,
            records = n,
            "loaded {TRANSACTION_STATE_TOPIC} partition"
        );
    }
}

/// Every decodable record of `partition` from its LogStartOffset to its LogEndOffset, in log order.
/// Undecodable records are skipped with a warning; control batches carry none.
fn read_partition(partition: &replica::partition::Partition) -> Vec<TransactionLogRecord> {
    let offsets = partition.offsets();
    let (mut offset, end) = (offsets.log_start_offset(), offsets.log_end_offset());
    let mut out = Vec::new();
    while offset < end {
        let bytes = match partition
            .read_records(offset, LOAD_READ_BYTES, end, true)
            .map_err(|e| e.to_string())
            .and_then(|info| storage::records_to_bytes(&info.records).map_err(|e| e.to_string()))
        {
            Ok(b) if !b.is_empty() => b,
            Ok(_) => break,
            Err(e) => {
                tracing::warn!(%offset, error = %e, "cannot read {TRANSACTION_STATE_TOPIC}");
                break;
            }
        };
        let before = offset;
        for batch in batches(&bytes) {
            let Ok(batch) = batch else { break };
            let next = types::Offset(batch.next_offset());
            if next <= offset {
                continue;
            }
            if !batch.is_control() {
                for r in batch.records().unwrap_or_default() {
                    let decoded = r
                        .key
                        .as_deref()
                        .ok_or_else(|| "no key".to_string())
                        .and_then(|k| {
                            decode_transaction_record(k, r.value.as_deref())
                                .map_err(|e| e.to_string())
                        });
                    match decoded {
                        Ok(rec) if r.offset >= offset.get() => out.push(rec),
                        Ok(_) => {}
                        Err(e) => tracing::warn!(offset = r.offset, error = %e,
                            "skipping undecodable {TRANSACTION_STATE_TOPIC} record"),
                    }
                }
            }
            offset = next;
        }
        if offset == before {
            tracing::warn!(%offset, "no progress loading {TRANSACTION_STATE_TOPIC}; stopping");
            break;
        }
    }
    out
}

/// The transaction coordinator's [`MetadataPublisher`]: each image tells it which `__transaction_state`
/// partitions this broker (`node_id`) now leads or no longer leads, and at which LeaderEpoch.
#[derive(Debug)]
pub struct TransactionCoordinatorPublisher {
    /// The coordinator told of each image.
    pub transactions: Arc<TransactionCoordinatorService>,
    /// This broker's id.
    pub node_id: types::BrokerId,
}

impl MetadataPublisher for TransactionCoordinatorPublisher {
    fn on_image(&self, previous: &metadata::MetadataImage, current: &metadata::MetadataImage) {
        let led = |image: &metadata::MetadataImage| -> Vec<(i32, i32)> {
            image
                .topics
                .get(TRANSACTION_STATE_TOPIC)
                .map(|t| {
                    t.partitions
                        .iter()
                        .filter(|(_, r)| r.leader == self.node_id)
                        .map(|(p, r)| (*p, r.leader_epoch.get()))
                        .collect()
                })
                .unwrap_or_default()
        };
        let (was, is) = (led(previous), led(current));
        for (p, _) in was.iter().filter(|(p, _)| !is.iter().any(|(q, _)| q == p)) {
            self.transactions.on_partition_leadership(*p, false);
        }
        for (p, e) in &is {
            if !was.contains(&(*p, *e)) {
                self.transactions.on_partition_leadership(*p, true);
            }
        }
    }
}
