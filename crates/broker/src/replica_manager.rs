//! ReplicaManager: the partitions this broker hosts, the append path (Produce) and the read path (Fetch,
//! ListOffsets), with the delayed-fetch purgatory that long-polls until data arrives.
//!
//! Single-node for now: every partition is led by this broker at LeaderEpoch 0 and the ISR is this broker
//! alone, so the HighWatermark advances to the LogEndOffset as soon as an append returns. The cluster issue
//! replaces that rule with follower tracking.
//!
//! Invariants:
//! - A Partition's Log is touched only under its mutex, and only for bounded work (an append, an index
//!   lookup); bytes for consumers are sent from a `FileSlice` outside the lock.
//! - Every successful append wakes the partition's waiters (`appended`), so a DelayedFetch never misses
//!   data that arrived after it checked.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use parking_lot::{Mutex, RwLock};
use protocol::record::Records;
use storage::{Log, LogAppendInfo, LogConfig, LogManager, StorageError};
use tokio::sync::Notify;
use uuid::Uuid;

/// A topic-partition: (topic name, partition index).
pub type TopicPartition = (String, i32);

/// One hosted partition.
#[derive(Debug)]
pub struct Partition {
    /// Topic name.
    pub topic: String,
    /// Partition index.
    pub partition: i32,
    /// Topic id (KIP-516).
    pub topic_id: Uuid,
    /// Leader epoch of this replica's leadership (0 on a single node).
    pub leader_epoch: i32,
    /// The partition's log.
    pub log: Arc<Mutex<Log>>,
    /// Notified after every append.
    appended: Notify,
}

impl Partition {
    /// LogStartOffset, HighWatermark and LogEndOffset, read together.
    pub fn offsets(&self) -> (i64, i64, i64) {
        let log = self.log.lock();
        (
            log.log_start_offset(),
            log.high_watermark(),
            log.log_end_offset(),
        )
    }
}

/// The result of reading one partition for a Fetch.
#[derive(Debug)]
pub struct PartitionRead {
    /// Error, if any (then `records` is empty).
    pub error: Option<StorageError>,
    /// HighWatermark at the time of the read.
    pub high_watermark: i64,
    /// LogStartOffset at the time of the read.
    pub log_start_offset: i64,
    /// Whole batches starting with the one that contains the fetch offset.
    pub records: Records,
}

/// What a Fetch asks of one partition.
#[derive(Debug, Clone)]
pub struct FetchPartitionRequest {
    /// The partition.
    pub partition: Arc<Partition>,
    /// First offset wanted.
    pub fetch_offset: i64,
    /// Per-partition byte limit (`partition_max_bytes`).
    pub max_bytes: i32,
}

/// Hosts the partitions of this broker.
pub struct ReplicaManager {
    log_manager: Arc<LogManager>,
    partitions: RwLock<HashMap<TopicPartition, Arc<Partition>>>,
}

impl std::fmt::Debug for ReplicaManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplicaManager")
            .field("partitions", &self.partitions.read().len())
            .finish()
    }
}

impl ReplicaManager {
    /// Creates a manager over already-opened logs.
    pub fn new(log_manager: Arc<LogManager>) -> ReplicaManager {
        ReplicaManager {
            log_manager,
            partitions: RwLock::new(HashMap::new()),
        }
    }

    /// The log manager.
    pub fn log_manager(&self) -> &Arc<LogManager> {
        &self.log_manager
    }

    /// Returns the hosted partition, if any.
    pub fn partition(&self, topic: &str, partition: i32) -> Option<Arc<Partition>> {
        self.partitions
            .read()
            .get(&(topic.to_string(), partition))
            .cloned()
    }

    /// Opens or creates the partition's log and starts hosting it as leader.
    pub fn make_leader(
        &self,
        topic: &str,
        partition: i32,
        topic_id: Uuid,
        config: LogConfig,
    ) -> Result<Arc<Partition>, StorageError> {
        if let Some(p) = self.partition(topic, partition) {
            p.log.lock().set_config(config);
            return Ok(p);
        }
        let log = self
            .log_manager
            .get_or_create_log(topic, partition, topic_id, config)?;
        {
            let mut l = log.lock();
            let leo = l.log_end_offset();
            l.update_high_watermark(leo);
        }
        let p = Arc::new(Partition {
            topic: topic.to_string(),
            partition,
            topic_id,
            leader_epoch: 0,
            log,
            appended: Notify::new(),
        });
        self.partitions
            .write()
            .entry((topic.to_string(), partition))
            .or_insert(p.clone());
        Ok(p)
    }

    /// Stops hosting every partition of `topic` and deletes their logs.
    pub fn delete_topic(&self, topic: &str) -> Result<(), StorageError> {
        let removed: Vec<Arc<Partition>> = {
            let mut parts = self.partitions.write();
            let keys: Vec<TopicPartition> =
                parts.keys().filter(|(t, _)| t == topic).cloned().collect();
            keys.iter().filter_map(|k| parts.remove(k)).collect()
        };
        for p in removed {
            p.appended.notify_waiters();
            self.log_manager.delete_log(&p.topic, p.partition)?;
        }
        Ok(())
    }

    /// Appends producer batches to the leader log and advances the HighWatermark (single-replica ISR).
    pub fn append(
        &self,
        partition: &Partition,
        records: Bytes,
    ) -> Result<LogAppendInfo, StorageError> {
        let info = {
            let mut log = partition.log.lock();
            let info = log.append_as_leader(records, partition.leader_epoch, now_ms())?;
            let leo = log.log_end_offset();
            log.update_high_watermark(leo);
            info
        };
        partition.appended.notify_waiters();
        Ok(info)
    }

    /// Reads each partition once, up to `max_bytes` in total (KIP-74: the first batch of the response is
    /// returned whole even when it is larger than the limits).
    pub fn read(&self, requests: &[FetchPartitionRequest], max_bytes: i32) -> Vec<PartitionRead> {
        let mut budget = max_bytes.max(0) as i64;
        let mut first = true;
        requests
            .iter()
            .map(|r| {
                let limit = budget.min(r.max_bytes.max(0) as i64) as usize;
                let mut log = r.partition.log.lock();
                let hw = log.high_watermark();
                let lso = log.log_start_offset();
                match log.read(r.fetch_offset, limit, hw, first) {
                    Ok(data) => {
                        let n = data.records.len() as i64;
                        if n > 0 {
                            first = false;
                        }
                        budget = (budget - n).max(0);
                        PartitionRead {
                            error: None,
                            high_watermark: hw,
                            log_start_offset: lso,
                            records: data.records,
                        }
                    }
                    Err(e) => PartitionRead {
                        error: Some(e),
                        high_watermark: hw,
                        log_start_offset: lso,
                        records: Records::default(),
                    },
                }
            })
            .collect()
    }

    /// The delayed fetch: reads, and while fewer than `min_bytes` are available and `max_wait` has not passed,
    /// waits for an append to any of the partitions and reads again. Never holds past `max_wait` (pitfall 3);
    /// answers as soon as `min_bytes` are there, or at once on an error.
    pub async fn fetch(
        &self,
        requests: &[FetchPartitionRequest],
        max_bytes: i32,
        min_bytes: i32,
        max_wait: Duration,
    ) -> Vec<PartitionRead> {
        let deadline = Instant::now() + max_wait;
        loop {
            let notified: Vec<_> = requests
                .iter()
                .map(|r| r.partition.appended.notified())
                .collect();
            let mut notified: Vec<_> = notified.into_iter().map(Box::pin).collect();
            for n in notified.iter_mut() {
                n.as_mut().enable();
            }
            let reads = self.read(requests, max_bytes);
            let bytes: i64 = reads.iter().map(|r| r.records.len() as i64).sum();
            let errored = reads.iter().any(|r| r.error.is_some());
            let now = Instant::now();
            if errored || bytes >= min_bytes.max(1) as i64 || now >= deadline || requests.is_empty()
            {
                return reads;
            }
            let wait = futures::future::select_all(notified);
            if tokio::time::timeout(deadline - now, wait).await.is_err() {
                return self.read(requests, max_bytes);
            }
        }
    }

    /// Flushes and closes every log (clean shutdown).
    pub fn shutdown(&self) -> Result<(), StorageError> {
        self.log_manager.shutdown()
    }
}

/// Wall-clock time in ms since the Unix epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}
