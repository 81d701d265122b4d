//! What DescribeQuorum reports beyond openraft's own metrics (Kafka's `LeaderState.describeQuorum`,
//! KIP-595/KIP-836): when each voter last acknowledged this leader and when it last held the leader's
//! whole log, and the [`QuorumInfo`] the active controller answers with.
//!
//! openraft 0.9 publishes each follower's matched log id (`RaftMetrics::replication`) but no
//! per-follower time, so [`PeerProgress`] is fed by the raft network ([`crate::network`]): every
//! AppendEntries a follower accepts is its "fetch" (Kafka's followers pull; openraft's leader pushes), at
//! the wall-clock time of the answer; it was caught up at the request's send time when the request
//! carried the leader's log up to the leader's last index at that time (Kafka: a fetch at the leader's
//! log end offset).

use std::collections::BTreeMap;
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

use metadata::{QuorumInfo, ReplicaProgress};
use openraft::metrics::RaftDataMetrics;
use openraft::LogId;
use parking_lot::Mutex;
use tokio::sync::watch;
use types::BrokerId;

use crate::raft_types::QuorumNode;
use crate::server::Inner;

/// Wall-clock milliseconds since the Unix epoch (DescribeQuorum's timestamps are the leader's wall clock).
pub(crate) fn wall_clock_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// The times one follower last acknowledged this node's AppendEntries (ms since the Unix epoch).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct PeerAck {
    /// The term of the leader acknowledged (times of an earlier term are not this leader's).
    pub term: u64,
    /// When the last accepted AppendEntries was answered.
    pub last_fetch_ms: i64,
    /// Send time of the last accepted AppendEntries that carried the whole log; -1 if none yet.
    pub last_caught_up_ms: i64,
}

/// Per-follower acknowledgement times, shared by the raft network (writer) and DescribeQuorum (reader).
#[derive(Debug, Default)]
pub(crate) struct PeerProgress {
    acks: Mutex<BTreeMap<u64, PeerAck>>,
    /// This node's log metrics, set once the raft node exists (the network is built before it).
    log: OnceLock<watch::Receiver<RaftDataMetrics<u64>>>,
}

impl PeerProgress {
    /// Gives the tracker this node's log metrics (its last log index at each send).
    pub(crate) fn set_log_metrics(&self, rx: watch::Receiver<RaftDataMetrics<u64>>) {
        let _ = self.log.set(rx);
    }

    /// This node's last log index now, if known.
    pub(crate) fn last_log_index(&self) -> Option<u64> {
        self.log.get()?.borrow().last_log.as_ref().map(|l| l.index)
    }

    /// Follower `target` accepted an AppendEntries of `term` sent at `sent_ms` and answered at `now_ms`,
    /// which carried the log up to index `carried` while this node's log ended at `last_at_send`.
    pub(crate) fn accepted(
        &self,
        target: u64,
        term: u64,
        sent_ms: i64,
        now_ms: i64,
        carried: Option<u64>,
        last_at_send: Option<u64>,
    ) {
        let mut acks = self.acks.lock();
        let fresh = PeerAck {
            term,
            last_fetch_ms: -1,
            last_caught_up_ms: -1,
        };
        let ack = acks.entry(target).or_insert(fresh);
        if ack.term != term {
            *ack = fresh;
        }
        ack.last_fetch_ms = ack.last_fetch_ms.max(now_ms);
        if carried >= last_at_send {
            ack.last_caught_up_ms = ack.last_caught_up_ms.max(sent_ms);
        }
    }

    /// The times recorded so far, by raft node id.
    pub(crate) fn snapshot(&self) -> BTreeMap<u64, PeerAck> {
        self.acks.lock().clone()
    }
}

/// The inputs of [`describe`]: the active controller's state at one instant.
#[derive(Debug)]
pub(crate) struct LeaderView<'a> {
    /// This node (the leader).
    pub node_id: BrokerId,
    /// The raft term.
    pub term: u64,
    /// The last applied (committed) index, if any.
    pub applied: Option<u64>,
    /// The leader's last log index, if any.
    pub last_log: Option<u64>,
    /// openraft's matched log id per follower (`RaftMetrics::replication`).
    pub matched: &'a BTreeMap<u64, Option<LogId<u64>>>,
    /// [`PeerProgress::snapshot`].
    pub acks: &'a BTreeMap<u64, PeerAck>,
    /// Registered brokers that heartbeat: (id, wall-clock ms of the last heartbeat, its metadata offset).
    pub brokers: &'a [(BrokerId, i64, i64)],
    /// The voters of the raft membership.
    pub voters: &'a BTreeMap<BrokerId, QuorumNode>,
    /// The learners of the raft membership (controllers not voting yet, KIP-853's observers).
    pub learners: &'a BTreeMap<BrokerId, QuorumNode>,
    /// Wall-clock now, ms since the Unix epoch.
    pub now_ms: i64,
}

/// A follower's or learner's progress: its matched index and acknowledgement times (-1: none this term).
fn follower(v: &LeaderView<'_>, id: BrokerId) -> ReplicaProgress {
    let raft_id = u64::try_from(id.get()).unwrap_or(u64::MAX);
    let matched = v
        .matched
        .get(&raft_id)
        .and_then(|l| l.as_ref().map(|l| l.index));
    let ack = v.acks.get(&raft_id).filter(|a| a.term == v.term);
    ReplicaProgress {
        replica_id: id,
        last_offset: offset(matched),
        last_fetch_ms: ack.map_or(-1, |a| a.last_fetch_ms),
        last_caught_up_ms: ack.map_or(-1, |a| a.last_caught_up_ms),
    }
}

impl Inner {
    /// DescribeQuorum on the leader: openraft's metrics, the followers' acknowledgement times and the
    /// brokers' heartbeats (their times moved from the controller's monotonic clock to the wall clock).
    pub(crate) async fn describe_quorum(&self) -> QuorumInfo {
        let (mono_now, now_ms) = (self.now_ms(), wall_clock_ms());
        let progress = self.active.lock().await.control.broker_progress();
        let brokers: Vec<_> = progress
            .into_iter()
            .map(|(id, at, offset)| (id, now_ms - (mono_now - at), offset))
            .collect();
        let m = self.raft.metrics().borrow().clone();
        let membership = m.membership_config.membership();
        describe(&LeaderView {
            node_id: self.node_id,
            term: m.current_term,
            applied: m.last_applied.as_ref().map(|l| l.index),
            last_log: m.last_log_index,
            matched: &m.replication.unwrap_or_default(),
            acks: &self.progress.snapshot(),
            brokers: &brokers,
            voters: &crate::voter_changes::voters(membership),
            learners: &crate::voter_changes::learners(membership),
            now_ms,
        })
    }
}

/// An index as a metadata offset (-1 for none).
fn offset(index: Option<u64>) -> i64 {
    index.map_or(-1, |i| i64::try_from(i).unwrap_or(i64::MAX))
}

/// The DescribeQuorum answer of the active controller: the leader reports its own log end and `now` as
/// both times (Kafka's leader does), each other voter its matched index and acknowledgement times (-1
/// when it has not acknowledged this leader yet); the learners are observers with their matched index and
/// acknowledgement times, and so is every registered broker that is neither a voter nor a learner, with
/// its last heartbeat's offset and time.
pub(crate) fn describe(v: &LeaderView<'_>) -> QuorumInfo {
    let current_voters = v
        .voters
        .keys()
        .map(|&id| {
            if id == v.node_id {
                return ReplicaProgress {
                    replica_id: id,
                    last_offset: offset(v.last_log),
                    last_fetch_ms: v.now_ms,
                    last_caught_up_ms: v.now_ms,
                };
            }
            follower(v, id)
        })
        .collect();
    let learners = v.learners.keys().map(|&id| follower(v, id));
    let brokers = v
        .brokers
        .iter()
        .filter(|(id, _, _)| !v.voters.contains_key(id) && !v.learners.contains_key(id))
        .map(|&(id, at, last)| ReplicaProgress {
            replica_id: id,
            last_offset: last,
            last_fetch_ms: at,
            last_caught_up_ms: -1,
        });
    let mut observers: Vec<ReplicaProgress> = learners.chain(brokers).collect();
    observers.sort_by_key(|p| p.replica_id);
    let members = v.voters.iter().chain(v.learners.iter());
    QuorumInfo {
        leader_id: Some(v.node_id),
        leader_epoch: i64::try_from(v.term).unwrap_or(i64::MAX),
        high_watermark: offset(v.applied),
        voters: v
            .voters
            .iter()
            .filter_map(|(id, n)| Some((*id, n.addr.parse().ok()?)))
            .collect(),
        current_voters,
        observers,
        directory_ids: members
            .filter_map(|(id, n)| Some((*id, n.directory_id?)))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openraft::CommittedLeaderId;

    fn log_id(index: u64) -> Option<LogId<u64>> {
        Some(LogId::new(CommittedLeaderId::new(3, 1), index))
    }

    #[test]
    fn caught_up_only_when_the_request_carried_the_whole_log() {
        let p = PeerProgress::default();
        p.accepted(2, 3, 100, 105, Some(7), Some(9));
        let ack = |term, last_fetch_ms, last_caught_up_ms| PeerAck {
            term,
            last_fetch_ms,
            last_caught_up_ms,
        };
        assert_eq!(p.snapshot()[&2], ack(3, 105, -1));
        p.accepted(2, 3, 200, 204, Some(9), Some(9));
        p.accepted(2, 3, 150, 150, Some(9), Some(9)); // a late answer moves nothing back
        assert_eq!(p.snapshot()[&2], ack(3, 204, 200));
        // A new term starts over.
        p.accepted(2, 4, 300, 301, Some(9), Some(10));
        assert_eq!(p.snapshot()[&2], ack(4, 301, -1));
    }

    #[test]
    fn describe_reports_leader_followers_and_observers() {
        let voters: BTreeMap<BrokerId, QuorumNode> = (1..=3)
            .map(|i| {
                (
                    BrokerId(i),
                    QuorumNode::new(format!("127.0.0.1:{}", 9000 + i)),
                )
            })
            .collect();
        // Controller 5 is a learner (an observer) with a directory id; it also registered as a broker.
        let learners = BTreeMap::from([(
            BrokerId(5),
            QuorumNode {
                addr: "127.0.0.1:9005".into(),
                directory_id: Some(uuid::Uuid::from_u128(5)),
            },
        )]);
        let matched = [(2, log_id(8)), (3, log_id(9)), (5, log_id(6))].into();
        let ack = |term, last_fetch_ms, last_caught_up_ms| PeerAck {
            term,
            last_fetch_ms,
            last_caught_up_ms,
        };
        // Node 3's times are from an earlier term.
        let acks = [(2, ack(5, 990, 980)), (3, ack(4, 500, 500))].into();
        // Broker 1 is a voter (combined node): not an observer. Broker 4 is.
        let brokers = [
            (BrokerId(1), 995, 9),
            (BrokerId(4), 970, 7),
            (BrokerId(5), 960, 6),
        ];
        let info = describe(&LeaderView {
            node_id: BrokerId(1),
            term: 5,
            applied: Some(8),
            last_log: Some(9),
            matched: &matched,
            acks: &acks,
            brokers: &brokers,
            voters: &voters,
            learners: &learners,
            now_ms: 1000,
        });
        assert_eq!(info.leader_id, Some(BrokerId(1)));
        assert_eq!((info.leader_epoch, info.high_watermark), (5, 8));
        let p = |id, last_offset, last_fetch_ms, last_caught_up_ms| ReplicaProgress {
            replica_id: BrokerId(id),
            last_offset,
            last_fetch_ms,
            last_caught_up_ms,
        };
        assert_eq!(
            info.current_voters,
            vec![p(1, 9, 1000, 1000), p(2, 8, 990, 980), p(3, 9, -1, -1)]
        );
        assert_eq!(info.observers, vec![p(4, 7, 970, -1), p(5, 6, -1, -1)]);
        assert_eq!(info.voters.len(), 3);
        assert_eq!(
            info.directory_ids,
            BTreeMap::from([(BrokerId(5), uuid::Uuid::from_u128(5))])
        );
    }
}
