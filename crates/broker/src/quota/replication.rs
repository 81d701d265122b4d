//! Replication throttling (KIP-73), Kafka's `ReplicationQuotaManager`: one quota for the leader side (what
//! this broker sends to followers, `leader.replication.throttled.rate`) and one for the follower side (what
//! its replica fetchers pull, `follower.replication.throttled.rate`), both in bytes per second, dynamic per
//! broker and cluster-wide (default `Long.MAX_VALUE`: unbounded). Which replicas are throttled is a topic
//! config: `leader.replication.throttled.replicas` / `follower.replication.throttled.replicas`, either `*`
//! (every partition on every broker) or `partition:broker` pairs, of which this broker keeps those naming
//! itself. `kafka-reassign-partitions.sh --throttle` sets all four and `--verify` removes them.
//!
//! A throttled partition whose follower is outside the ISR is left out of a follower fetch (follower side)
//! or answered without records (leader side) while the measured rate is over the bound; an in-sync replica
//! is never throttled, so clients' acks=all writes are not slowed. Rates are sampled over Kafka's
//! `replication.quota.window.num` (11) windows of `replication.quota.window.size.seconds` (1 s).

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use parking_lot::Mutex;
use replica::replication_quota::ReplicationQuota;
use types::{BrokerId, Clock};

use super::rate::{QuotaWindow, SampledRate};
use crate::dynamic_config::DynamicBrokerConfig;
use crate::metadata::MetadataStore;

/// Which side of replication a [`ReplicationQuotaManager`] throttles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplicationSide {
    /// Bytes this broker sends as leader.
    Leader,
    /// Bytes this broker's fetchers pull as follower.
    Follower,
}

impl ReplicationSide {
    /// The broker key bounding the rate (bytes/s).
    pub fn rate_key(self) -> &'static str {
        match self {
            ReplicationSide::Leader => "leader.replication.throttled.rate",
            ReplicationSide::Follower => "follower.replication.throttled.rate",
        }
    }

    /// The topic key listing the throttled replicas.
    pub fn replicas_key(self) -> &'static str {
        match self {
            ReplicationSide::Leader => "leader.replication.throttled.replicas",
            ReplicationSide::Follower => "follower.replication.throttled.replicas",
        }
    }
}

/// A topic's throttled partitions on this broker.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Throttled {
    /// `*`: every partition.
    All,
    /// The partitions whose `partition:broker` entry names this broker.
    Partitions(BTreeSet<i32>),
}

/// What a throttled-replicas value lists: `None` for `*`, else the `(partition, broker)` pairs.
pub type ThrottledReplicas = Option<Vec<(i32, i32)>>;

/// Parses a throttled-replicas value (Kafka's `ThrottledReplicaListValidator`): empty, `*`, or
/// `partition:broker` pairs separated by commas (whitespace around items ignored). Error: the reason.
pub fn parse_throttled_replicas(value: &str) -> Result<ThrottledReplicas, String> {
    let items: Vec<&str> = value
        .split(',')
        .map(str::trim)
        .filter(|i| !i.is_empty())
        .collect();
    if items == ["*"] {
        return Ok(None);
    }
    let bad = || {
        "must be the literal '*' or a list of replicas in the form \
         [partitionId]:[brokerId],[partitionId]:[brokerId],..."
            .to_string()
    };
    items
        .iter()
        .map(|item| {
            let (p, b) = item.split_once(':').ok_or_else(bad)?;
            let p = p.trim().parse::<i32>().map_err(|_| bad())?;
            let b = b.trim().parse::<i32>().map_err(|_| bad())?;
            Ok((p, b))
        })
        .collect::<Result<Vec<_>, String>>()
        .map(Some)
}

/// The mutable part: the rate and the throttled partitions as of a registry generation.
#[derive(Debug)]
struct State {
    rate: SampledRate,
    /// Registry generation `throttled` was computed at (`u64::MAX`: never).
    generation: u64,
    throttled: HashMap<String, Throttled>,
}

/// One side's replication quota of this broker (see the module doc).
#[derive(Debug)]
pub struct ReplicationQuotaManager {
    side: ReplicationSide,
    local_id: BrokerId,
    dynamic: Arc<DynamicBrokerConfig>,
    metadata: Arc<MetadataStore>,
    clock: Arc<dyn Clock>,
    window: QuotaWindow,
    state: Mutex<State>,
}

impl ReplicationQuotaManager {
    /// The `side` quota of broker `local_id`: its bound read from `dynamic`'s effective config, its
    /// throttled replicas from the topic configs in `metadata`, time from `clock`.
    pub fn new(
        side: ReplicationSide,
        local_id: BrokerId,
        dynamic: Arc<DynamicBrokerConfig>,
        metadata: Arc<MetadataStore>,
        clock: Arc<dyn Clock>,
    ) -> ReplicationQuotaManager {
        ReplicationQuotaManager {
            side,
            local_id,
            dynamic,
            metadata,
            clock,
            window: QuotaWindow::default(),
            state: Mutex::new(State {
                rate: SampledRate::default(),
                generation: u64::MAX,
                throttled: HashMap::new(),
            }),
        }
    }

    /// Whether a bound is set (below `Long.MAX_VALUE`): only then is anything recorded or throttled.
    pub fn is_bounded(&self) -> bool {
        self.bound().is_some()
    }

    /// The bound in bytes per second; `None` when unbounded (`Long.MAX_VALUE`, the default).
    fn bound(&self) -> Option<f64> {
        let v = self.dynamic.effective().value(self.side.rate_key())?;
        let bound = v.trim().parse::<i64>().ok()?;
        (bound < i64::MAX).then_some(bound.max(0) as f64)
    }

    /// Brings the throttled partitions up to the registry's generation (only after a topic change).
    fn refresh(&self, state: &mut State) {
        let generation = self.metadata.generation();
        if state.generation == generation {
            return;
        }
        let (generation, topics) = self.metadata.topics_at_generation();
        let me = self.local_id.get();
        state.throttled = (topics.iter())
            .filter_map(|(name, t)| {
                let value = t.configs.get(self.side.replicas_key())?;
                let throttled = match parse_throttled_replicas(value).ok()? {
                    None => Throttled::All,
                    Some(pairs) => Throttled::Partitions(
                        (pairs.into_iter())
                            .filter(|&(_, b)| b == me)
                            .map(|(p, _)| p)
                            .collect(),
                    ),
                };
                Some((name.clone(), throttled))
            })
            .collect();
        state.generation = generation;
    }

    fn now_ms(&self) -> u64 {
        self.clock.monotonic_ms().max(0) as u64
    }
}

impl ReplicationQuota for ReplicationQuotaManager {
    fn is_throttled(&self, topic: &str, partition: i32) -> bool {
        let mut state = self.state.lock();
        self.refresh(&mut state);
        match state.throttled.get(topic) {
            None => false,
            Some(Throttled::All) => true,
            Some(Throttled::Partitions(ps)) => ps.contains(&partition),
        }
    }

    fn is_quota_exceeded(&self) -> bool {
        let Some(bound) = self.bound() else {
            return false;
        };
        let now = self.now_ms();
        self.state.lock().rate.measure(self.window, now) > bound
    }

    fn record(&self, bytes: u64) {
        let now = self.now_ms();
        self.state
            .lock()
            .rate
            .record(self.window, bytes as f64, now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn throttled_replica_lists_parse_as_kafka_validates_them() {
        assert_eq!(parse_throttled_replicas(""), Ok(Some(vec![])));
        assert_eq!(parse_throttled_replicas(" * "), Ok(None));
        assert_eq!(
            parse_throttled_replicas("0:1, 0:2,1:3"),
            Ok(Some(vec![(0, 1), (0, 2), (1, 3)]))
        );
        for bad in ["0", "a:1", "0:b", "*,0:1", "0:1:2"] {
            assert!(parse_throttled_replicas(bad).is_err(), "{bad}");
        }
    }
}
