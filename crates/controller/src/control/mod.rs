//! The pure, deterministic controller decision logic (Kafka's `ClusterControlManager`,
//! `ReplicationControlManager`, `BrokerHeartbeatManager`, `ProducerIdControlManager`).
//!
//! [`QuorumControl`] takes the committed [`MetadataImage`], a request and the current time `now_ms`
//! (milliseconds on any monotonic clock), and returns the records to append plus the reply. It does
//! no I/O. The only state it keeps besides the image is in memory on the active controller: the time
//! of each broker's last heartbeat (KIP-631: sessions are not logged) and the random source used to
//! pick topic ids and placement offsets (seeded, so tests are reproducible). Replaying the returned
//! records with [`MetadataImage::apply`] is how the decision takes effect; nothing here mutates the
//! image.
//!
//! Rules (Kafka as reference):
//! - Brokers register fenced; a heartbeat of a caught-up broker (`metadata_offset >=` its broker
//!   epoch, which is the offset of its registration record) unfences it. A broker silent for
//!   `session_timeout_ms` is fenced by [`QuorumControl::tick`].
//! - A broker that leaves (fenced, or in controlled shutdown) is removed from every ISR, except that
//!   the last ISR member stays; partitions it led get the first other replica (in `replicas` order)
//!   that is in the ISR and active, else (with unclean election) any active replica with ISR reset
//!   to it, else no leader (-1). Controlled shutdown leaves a partition alone when its leadership
//!   cannot move; the broker is told to shut down (and is fenced) once nothing can move.
//! - A broker that becomes active is elected leader of leaderless partitions whose ISR holds it (or
//!   of any leaderless partition it replicates, with unclean election).
//! - Every leader change bumps the leader epoch, every change bumps the partition epoch (on replay).
//!
//! The verbs live by concern: [`cluster_control`] (registration, heartbeats, fencing, controlled
//! shutdown), [`replication_control`] (elections, AlterPartition), [`reassignment`] (KIP-455 partition
//! reassignments, completed by the AlterPartition that makes them possible), [`balancer`] (automatic
//! balancing through reassignments), [`topic_control`] (topics,
//! partitions, configs), [`acl_control`] (ACLs) and [`producer_ids`].

mod acl_control;
mod balancer;
mod cluster_control;
mod producer_ids;
mod quota_control;
mod reassignment;
mod replication_control;
mod scram_control;
mod topic_control;

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

use metadata::{ControllerError, MetadataImage, MetadataRecord};
use rand::rngs::StdRng;
use rand::SeedableRng;
use types::{BrokerEpoch, BrokerId, ErrorCode};
use uuid::Uuid;

pub use balancer::{BalancerConfig, MIN_BYTES_SPREAD};
/// The requests [`QuorumControl`] decides on; they moved to the `metadata` crate with the other
/// broker-controller formats.
pub use metadata::{AlterPartition, Heartbeat, RegisterBroker};
pub use metadata::{OngoingReassignment, Reassignment};
pub use topic_control::validate_topic_name;

/// Most partitions one topic may have (bounds allocation on bad input).
pub const MAX_PARTITIONS: i32 = 100_000;
/// Producer ids handed out per AllocateProducerIds (Kafka's block size, KIP-730).
pub const PRODUCER_ID_BLOCK_SIZE: i32 = 1000;
/// Longest legal topic name (Kafka `Topic.MAX_NAME_LENGTH`).
pub const MAX_TOPIC_NAME_LEN: usize = 249;

/// Static settings of the decision logic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ControlConfig {
    /// `broker.session.timeout.ms`.
    pub session_timeout_ms: i64,
    /// `num.partitions`, used for `num_partitions = -1`.
    pub default_num_partitions: i32,
    /// `default.replication.factor`, used for `replication_factor = -1`.
    pub default_replication_factor: i16,
    /// `unclean.leader.election.enable`.
    pub unclean_leader_election: bool,
    /// `auto.leader.rebalance.enable` (Kafka default true): the periodic check moves each partition's
    /// leadership back to its preferred replica (the first of its replicas) when that replica is in the ISR
    /// and active.
    pub auto_leader_rebalance: bool,
    /// `leader.imbalance.check.interval.seconds` in ms (Kafka default 300 s): the period of that check.
    pub leader_imbalance_check_interval_ms: i64,
    /// Automatic balancing ([`BalancerConfig`]; Runnel's, beyond Kafka).
    pub balancer: BalancerConfig,
}

impl Default for ControlConfig {
    /// Kafka's defaults: `broker.session.timeout.ms` 9000, `num.partitions` 1,
    /// `default.replication.factor` 1, no unclean elections, leader rebalancing every 300 s, automatic
    /// balancing at [`BalancerConfig::default`].
    fn default() -> ControlConfig {
        ControlConfig {
            session_timeout_ms: 9_000,
            default_num_partitions: 1,
            default_replication_factor: 1,
            unclean_leader_election: false,
            auto_leader_rebalance: true,
            leader_imbalance_check_interval_ms: 300_000,
            balancer: BalancerConfig::default(),
        }
    }
}

/// At most this many preferred-leader elections per check; more wait for the next tick (as Kafka's
/// controller bounds each balancing step).
const MAX_PREFERRED_ELECTIONS_PER_TICK: usize = 1000;

/// Records to append plus the reply to send once they are committed.
#[derive(Clone, Debug, PartialEq)]
pub struct Decision<T> {
    /// Records to append as one batch (empty: nothing to write).
    pub records: Vec<MetadataRecord>,
    /// Reply to the requester.
    pub reply: T,
}

/// The decision logic of the active controller; see the module doc.
#[derive(Debug)]
pub struct QuorumControl {
    config: ControlConfig,
    last_contact_ms: BTreeMap<BrokerId, i64>,
    /// The metadata offset each broker's last heartbeat to this controller reported (DescribeQuorum's
    /// observers); in memory only, like the sessions.
    heartbeat_offsets: BTreeMap<BrokerId, i64>,
    /// When the next preferred-leader check is due (set on activation and after each check).
    next_balance_ms: Option<i64>,
    /// When the next automatic balancing step is due.
    next_auto_balance_ms: Option<i64>,
    /// When each fenced (or offline) broker was first seen so by this controller.
    down_since: BTreeMap<BrokerId, i64>,
    /// Partition sizes in bytes as their leaders last reported them.
    partition_bytes: HashMap<(Uuid, i32), u64>,
    rng: StdRng,
}

/// A working view: the committed image plus the records decided so far in this decision, applied to
/// a private copy (made on the first record).
struct Batch<'a> {
    view: Cow<'a, MetadataImage>,
    records: Vec<MetadataRecord>,
}

impl<'a> Batch<'a> {
    fn new(image: &'a MetadataImage) -> Self {
        Batch {
            view: Cow::Borrowed(image),
            records: Vec::new(),
        }
    }

    fn push(&mut self, record: MetadataRecord) {
        let offset = self.view.offset + 1;
        self.view.to_mut().apply(offset, &record);
        self.records.push(record);
    }
}

fn err(code: ErrorCode, message: impl Into<String>) -> ControllerError {
    ControllerError::new(code, message)
}

impl QuorumControl {
    /// A controller with no broker sessions, drawing randomness from `seed`.
    pub fn new(config: ControlConfig, seed: u64) -> Self {
        QuorumControl {
            config,
            last_contact_ms: BTreeMap::new(),
            heartbeat_offsets: BTreeMap::new(),
            next_balance_ms: None,
            next_auto_balance_ms: None,
            down_since: BTreeMap::new(),
            partition_bytes: HashMap::new(),
            rng: StdRng::seed_from_u64(seed),
        }
    }

    /// The static settings.
    pub fn config(&self) -> &ControlConfig {
        &self.config
    }

    /// Called when this node becomes the active controller: every registered broker gets a fresh
    /// session starting at `now_ms` (KIP-631: sessions live only in the active controller's memory).
    pub fn activate(&mut self, image: &MetadataImage, now_ms: i64) {
        self.last_contact_ms = image.brokers.keys().map(|&id| (id, now_ms)).collect();
        self.heartbeat_offsets.clear();
        self.next_balance_ms =
            Some(now_ms.saturating_add(self.config.leader_imbalance_check_interval_ms.max(0)));
        self.next_auto_balance_ms =
            Some(now_ms.saturating_add(self.config.balancer.check_interval_ms.max(0)));
        // A new active controller starts the dead-broker delay afresh (it cannot know how long before).
        self.down_since.clear();
        self.track_dead_brokers(image, now_ms);
    }

    /// Each broker with a session: (id, time of its last contact in `now_ms`'s clock, the metadata offset
    /// of its last heartbeat to this controller or -1).
    pub fn broker_progress(&self) -> Vec<(BrokerId, i64, i64)> {
        self.last_contact_ms
            .iter()
            .map(|(&id, &at)| (id, at, *self.heartbeat_offsets.get(&id).unwrap_or(&-1)))
            .collect()
    }

    /// True when `broker_id` heartbeated within the session timeout.
    pub fn has_valid_session(&self, broker_id: BrokerId, now_ms: i64) -> bool {
        self.last_contact_ms
            .get(&broker_id)
            .is_some_and(|&t| now_ms.saturating_sub(t) < self.config.session_timeout_ms)
    }
}

/// `STALE_BROKER_EPOCH` unless `broker_id` is registered with `broker_epoch`.
fn check_broker_epoch(
    image: &MetadataImage,
    broker_id: BrokerId,
    broker_epoch: BrokerEpoch,
) -> Result<(), ControllerError> {
    match image.brokers.get(&broker_id) {
        Some(b) if b.broker_epoch == broker_epoch => Ok(()),
        Some(b) => Err(err(
            ErrorCode::STALE_BROKER_EPOCH,
            format!(
                "broker {broker_id} epoch {broker_epoch} is not the registered epoch {}",
                b.broker_epoch
            ),
        )),
        None => Err(err(
            ErrorCode::STALE_BROKER_EPOCH,
            format!("broker {broker_id} is not registered"),
        )),
    }
}

#[cfg(test)]
mod tests;
