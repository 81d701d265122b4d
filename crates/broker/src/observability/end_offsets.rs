//! End offsets of partitions led by other brokers, for the consumer lag of the groups coordinated here
//! (issue 17). A group's coordinator hosts its `__consumer_offsets` partition, not necessarily the
//! partitions its members consume; kafka_exporter gets their end offsets with ListOffsets, and so does this:
//!
//! - every [`REFRESH_INTERVAL`], [`refresh_loop`] takes the committed (topic, partition)s that have no replica
//!   here (the same first `metrics.partition.series.max` the scrape exports), groups them by leader in the
//!   metadata image and sends each leader one ListOffsets (timestamp -1 = latest, `isolation_level` 0: the
//!   HighWatermark, `replica_id` -1 as a consumer) over the inter-broker connection (the replica fetchers'
//!   connector, so the same TLS/SASL), each bounded by [`REQUEST_TIMEOUT`];
//! - the answers go into an [`EndOffsetCache`]; the scrape reads it (`kafka_consumergroup_lag` = cached end
//!   offset − committed offset) and never waits for the network. An entry older than [`EXPIRY`] (a leader
//!   that stopped answering, a partition no group commits to any more) is neither exported nor kept.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use metadata::MetadataImage;
use parking_lot::Mutex;
use protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use protocol::messages::ListOffsetsRequest;
use protocol::{RequestBody, ResponseBody};
use replica::transport::Connector;
use tokio::sync::watch;
use types::{BrokerId, Clock};

use crate::txn_coordinator::channel::BrokerChannel;

/// How often the end offsets of partitions led elsewhere are asked for.
pub const REFRESH_INTERVAL: Duration = Duration::from_secs(5);
/// How long a cached end offset is used: three refreshes, so one lost answer does not drop the series.
pub const EXPIRY: Duration = Duration::from_secs(15);
/// The bound on one leader's ListOffsets answer.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// ListOffsets v7 (the broker answers 1–10; v7 is the newest that is not flexible and has everything used).
const LIST_OFFSETS_VERSION: i16 = 7;
/// ListOffsets' `timestamp` for the latest offset, and the `replica_id` of a consumer.
const LATEST: i64 = -1;
const CONSUMER_REPLICA_ID: i32 = -1;

/// End offsets by (topic, partition), each with the time it was learnt. Pure: times are passed in.
#[derive(Debug, Clone)]
pub struct EndOffsetCache {
    entries: HashMap<(String, i32), (i64, i64)>,
    expiry_ms: i64,
}

impl EndOffsetCache {
    /// An empty cache whose entries live `expiry`.
    pub fn new(expiry: Duration) -> EndOffsetCache {
        EndOffsetCache {
            entries: HashMap::new(),
            expiry_ms: i64::try_from(expiry.as_millis()).unwrap_or(i64::MAX),
        }
    }

    /// Records `offset` as the end offset of `topic`-`partition`, learnt at `now_ms` (monotonic ms).
    pub fn record(&mut self, topic: &str, partition: i32, offset: i64, now_ms: i64) {
        (self.entries).insert((topic.to_string(), partition), (offset, now_ms));
    }

    /// The end offset of `topic`-`partition` if it was learnt less than the expiry before `now_ms`.
    pub fn get(&self, topic: &str, partition: i32, now_ms: i64) -> Option<i64> {
        let &(offset, at) = self.entries.get(&(topic.to_string(), partition))?;
        (now_ms.saturating_sub(at) < self.expiry_ms).then_some(offset)
    }

    /// Drops the entries that expired by `now_ms`.
    pub fn expire(&mut self, now_ms: i64) {
        let expiry = self.expiry_ms;
        (self.entries).retain(|_, (_, at)| now_ms.saturating_sub(*at) < expiry);
    }

    /// The number of entries, expired or not.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when there is no entry.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// The cache and how it is filled: the inter-broker connections to the leaders.
pub struct RemoteEndOffsets {
    cache: Mutex<EndOffsetCache>,
    channel: BrokerChannel,
    /// The inter-broker listener's name: which of a leader's endpoints to connect to.
    listener: String,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for RemoteEndOffsets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteEndOffsets")
            .field("cached", &self.cache.lock().len())
            .finish_non_exhaustive()
    }
}

impl RemoteEndOffsets {
    /// An empty cache; `local` names this broker to the leaders, `connector` and `listener` reach them.
    pub fn new(
        local: BrokerId,
        connector: Arc<dyn Connector>,
        listener: String,
        clock: Arc<dyn Clock>,
    ) -> RemoteEndOffsets {
        RemoteEndOffsets {
            cache: Mutex::new(EndOffsetCache::new(EXPIRY)),
            channel: BrokerChannel::new(local, connector),
            listener,
            clock,
        }
    }

    /// The cached, unexpired end offset (HighWatermark) of `topic`-`partition`.
    pub fn get(&self, topic: &str, partition: i32) -> Option<i64> {
        let now = self.clock.monotonic_ms();
        self.cache.lock().get(topic, partition, now)
    }

    /// Asks the leaders of `wanted` for their end offsets and caches the answers; expired entries go.
    /// A leader that is unknown, fenced, this broker, unreachable or slower than [`REQUEST_TIMEOUT`] is
    /// skipped (its entries age out).
    pub async fn refresh(&self, wanted: &BTreeSet<(String, i32)>, image: &MetadataImage) {
        for (leader, (host, port), topics) in by_leader(wanted, image, &self.listener) {
            let request = ListOffsetsRequest {
                replica_id: CONSUMER_REPLICA_ID,
                isolation_level: 0,
                topics: (topics.into_iter())
                    .map(|(name, partitions)| ListOffsetsTopic {
                        name,
                        partitions: (partitions.into_iter())
                            .map(|p| ListOffsetsPartition {
                                partition_index: p,
                                current_leader_epoch: -1,
                                timestamp: LATEST,
                                ..Default::default()
                            })
                            .collect(),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            };
            let body = RequestBody::ListOffsets(request);
            let endpoint = (host.as_str(), port);
            let answer = (self.channel)
                .call(
                    leader,
                    endpoint,
                    LIST_OFFSETS_VERSION,
                    body,
                    REQUEST_TIMEOUT,
                )
                .await;
            let Some(ResponseBody::ListOffsets(response)) = answer else {
                continue;
            };
            let now = self.clock.monotonic_ms();
            let mut cache = self.cache.lock();
            for t in &response.topics {
                for p in t.partitions.iter().filter(|p| p.error_code == 0) {
                    if p.offset >= 0 {
                        cache.record(&t.name, p.partition_index, p.offset, now);
                    }
                }
            }
        }
        self.cache.lock().expire(self.clock.monotonic_ms());
    }
}

/// A leader's id, its inter-broker endpoint, and the partitions to ask it about by topic.
type LeaderRequest = (BrokerId, (String, u16), BTreeMap<String, Vec<i32>>);

/// `wanted` grouped by their leader in `image` (leaders with an endpoint on `listener`, unfenced).
fn by_leader(
    wanted: &BTreeSet<(String, i32)>,
    image: &MetadataImage,
    listener: &str,
) -> Vec<LeaderRequest> {
    let mut out: BTreeMap<BrokerId, BTreeMap<String, Vec<i32>>> = BTreeMap::new();
    for (topic, partition) in wanted {
        let leader = (image.topics.get(topic))
            .and_then(|t| t.partitions.get(partition))
            .map(|p| p.leader)
            .filter(|l| !l.is_none());
        if let Some(leader) = leader {
            let topics = out.entry(leader).or_default();
            topics.entry(topic.clone()).or_default().push(*partition);
        }
    }
    (out.into_iter())
        .filter_map(|(leader, topics)| {
            let broker = image.brokers.get(&leader).filter(|b| !b.fenced)?;
            let (host, port) = broker.endpoint(listener)?;
            Some((leader, (host.to_string(), port), topics))
        })
        .collect()
}

/// Refreshes `end_offsets` every [`REFRESH_INTERVAL`] with the partitions `wanted` names and the image
/// `image` returns, until `shutdown`.
pub async fn refresh_loop(
    end_offsets: &RemoteEndOffsets,
    wanted: impl Fn() -> BTreeSet<(String, i32)>,
    image: impl Fn() -> Arc<MetadataImage>,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut tick = tokio::time::interval(REFRESH_INTERVAL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = shutdown.changed() => return,
        }
        if *shutdown.borrow() {
            return;
        }
        let wanted = wanted();
        if wanted.is_empty() {
            end_offsets
                .cache
                .lock()
                .expire(end_offsets.clock.monotonic_ms());
            continue;
        }
        let current = image();
        let refresh = end_offsets.refresh(&wanted, &current);
        tokio::select! {
            _ = refresh => {}
            _ = shutdown.changed() => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_served_until_they_expire_and_then_dropped() {
        let mut c = EndOffsetCache::new(Duration::from_secs(15));
        c.record("t", 0, 500, 1_000);
        c.record("t", 1, 7, 10_000);
        assert_eq!(c.get("t", 0, 1_000), Some(500));
        assert_eq!(c.get("t", 0, 15_999), Some(500));
        assert_eq!(c.get("t", 0, 16_000), None, "15 s after it was learnt");
        assert_eq!(c.get("t", 2, 1_000), None);
        c.expire(16_000);
        assert_eq!((c.len(), c.get("t", 1, 16_000)), (1, Some(7)));
        c.record("t", 1, 9, 20_000);
        assert_eq!(
            c.get("t", 1, 30_000),
            Some(9),
            "a new answer replaces the old one"
        );
        c.expire(40_000);
        assert!(c.is_empty());
    }
}
