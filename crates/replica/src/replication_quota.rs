//! Replication throttling (KIP-73) as the replica layer sees it: [`ReplicationQuota`], the seam through
//! which the replica fetcher (the follower side) asks whether a partition's replica is throttled and the
//! throttled bytes' rate over its bound, and records what it fetched. The broker implements it from the
//! `follower.replication.throttled.rate` broker config and the `follower.replication.throttled.replicas`
//! topic config (and the leader side, in its Fetch handling, from the `leader.*` keys).

/// One direction's replication quota (Kafka's `ReplicaQuota`).
pub trait ReplicationQuota: Send + Sync + std::fmt::Debug {
    /// Whether this broker's replica of `topic`-`partition` is throttled (the topic's throttled-replicas
    /// list names it, or is `*`).
    fn is_throttled(&self, topic: &str, partition: i32) -> bool;
    /// Whether the throttled replicas' byte rate is over the bound now.
    fn is_quota_exceeded(&self) -> bool;
    /// Records `bytes` replicated for throttled partitions.
    fn record(&self, bytes: u64);
}

/// No throttling: nothing is throttled, the quota is never exceeded.
#[derive(Debug, Default, Clone, Copy)]
pub struct Unthrottled;

impl ReplicationQuota for Unthrottled {
    fn is_throttled(&self, _topic: &str, _partition: i32) -> bool {
        false
    }

    fn is_quota_exceeded(&self) -> bool {
        false
    }

    fn record(&self, _bytes: u64) {}
}
