//! Request and reply shapes of the controller API (Kafka's BrokerRegistration, BrokerHeartbeat,
//! AlterPartition, CreateTopics, DescribeQuorum, ... reduced to what a Runnel broker needs).
//!
//! These are values only; [`crate::rpc`] wraps them into the messages a broker and a controller
//! exchange. The serde attributes are the wire format: do not change them.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use serde::{Deserialize, Serialize};
use types::{BrokerEpoch, BrokerId, LeaderEpoch, PartitionEpoch};
use uuid::Uuid;

use crate::image::MetadataImage;
use crate::record::MetadataRecord;

/// Answer to a metadata fetch ([`crate::rpc::ClientRequest::FetchMetadata`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum MetadataUpdate {
    /// A full image: the log before the requested offset is no longer retained (snapshotted), or the
    /// caller asked with `since_offset < 0`. Replace the local image with it.
    Image(Box<MetadataImage>),
    /// Committed records after the requested offset, in log order, each with its offset (several
    /// records may share one offset; a batch never splits an offset). Empty when nothing new was
    /// committed within `max_wait`.
    Records(Vec<(i64, MetadataRecord)>),
}

/// A broker registration request (KIP-631 `BrokerRegistrationRequest`, reduced).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegisterBroker {
    /// Broker id.
    pub broker_id: BrokerId,
    /// Incarnation id of the broker process.
    pub incarnation_id: Uuid,
    /// Advertised host.
    pub host: String,
    /// Advertised port.
    pub port: u16,
    /// Rack, if any.
    pub rack: Option<String>,
    /// Every advertised listener (`host`/`port` are the inter-broker one's). Absent from the JSON when
    /// empty (requests of brokers from before named listeners).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub listeners: Vec<crate::record::BrokerEndpoint>,
    /// The `directory.id` of each data directory (KIP-858 `LogDirs`, `log.dirs` order). Absent from the
    /// JSON when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub log_dirs: Vec<Uuid>,
}

/// A broker heartbeat (KIP-631 `BrokerHeartbeatRequest`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Heartbeat {
    /// Broker id.
    pub broker_id: BrokerId,
    /// Broker epoch from registration.
    pub broker_epoch: BrokerEpoch,
    /// Highest metadata offset the broker has replayed.
    pub metadata_offset: i64,
    /// The broker wants to be (stay) fenced.
    pub want_fence: bool,
    /// The broker wants to shut down (controlled shutdown).
    pub want_shutdown: bool,
    /// The `directory.id`s of the broker's failed data dirs (Kafka's `OfflineLogDirs`,
    /// BrokerHeartbeatRequest v1+, KIP-858; [`crate::record::DIRECTORY_LOST`] = all of them): their logs
    /// are offline until the dir is healthy again. Absent from the JSON when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub offline_log_dirs: Vec<Uuid>,
}

/// Runnel's addition to the broker-to-controller API: (topic id, partition, bytes on disk) of the
/// partitions a broker leads, which weigh partitions in the controller's automatic balancing. Sent every
/// [`PARTITION_SIZES_EVERY`]th heartbeat, as a request of its own (the heartbeat is Kafka's message).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionSizes {
    /// The reporting broker.
    pub broker_id: BrokerId,
    /// Its broker epoch (a stale one is refused: STALE_BROKER_EPOCH).
    pub broker_epoch: BrokerEpoch,
    /// (topic id, partition, bytes) of each partition it leads.
    pub sizes: Vec<(Uuid, i32, u64)>,
}

/// A broker reports its partition sizes once every this many heartbeats (with the default 2 s interval:
/// every 30 s), as the sizes change slowly and the balancer looks once a minute.
pub const PARTITION_SIZES_EVERY: u64 = 15;

/// AssignReplicasToDirs (Kafka key 73, KIP-858): the data directory each of a broker's replicas is in,
/// sent when a replica's log is created or moved, so the controller knows which replicas a failed
/// directory takes offline.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AssignReplicasToDirs {
    /// The reporting broker.
    pub broker_id: BrokerId,
    /// Its broker epoch (a stale one is refused: STALE_BROKER_EPOCH).
    pub broker_epoch: BrokerEpoch,
    /// (topic id, partition, directory id) of each replica whose directory the image does not show.
    pub assignments: Vec<(Uuid, i32, Uuid)>,
}

/// Answer to a broker heartbeat (KIP-631 `BrokerHeartbeatResponse`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeartbeatReply {
    /// The broker is fenced (not eligible as leader / ISR member).
    pub is_fenced: bool,
    /// The broker's metadata offset has reached its registration record.
    pub is_caught_up: bool,
    /// Controlled shutdown is complete: the broker may exit.
    pub should_shut_down: bool,
}

/// An AlterPartition item (KIP-497).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AlterPartition {
    /// The requesting broker (must lead the partition).
    pub broker_id: BrokerId,
    /// Its broker epoch.
    pub broker_epoch: BrokerEpoch,
    /// Topic id.
    pub topic_id: Uuid,
    /// Partition index.
    pub partition: i32,
    /// Leader epoch the leader believes current.
    pub leader_epoch: LeaderEpoch,
    /// Partition epoch the leader believes current.
    pub partition_epoch: PartitionEpoch,
    /// Proposed ISR.
    pub new_isr: Vec<BrokerId>,
}

/// A partition's leader and ISR as an AlterPartition answer states them (Kafka's `LeaderAndIsr`;
/// AlterPartitionResponse `PartitionData`, KIP-497): no replica set, which AlterPartition never changes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaderAndIsr {
    /// Leader broker id.
    pub leader: BrokerId,
    /// Leader epoch.
    pub leader_epoch: LeaderEpoch,
    /// In-sync replicas.
    pub isr: Vec<BrokerId>,
    /// Partition epoch after the change.
    pub partition_epoch: PartitionEpoch,
}

/// One topic of a CreateTopics request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreateTopic {
    /// Topic name (legal: 1..=249 chars of `[a-zA-Z0-9._-]`, not `.` or `..`).
    pub name: String,
    /// Partition count, -1 for the controller default; must be -1 with explicit assignments.
    pub num_partitions: i32,
    /// Replication factor, -1 for the controller default; must be -1 with explicit assignments.
    pub replication_factor: i16,
    /// Explicit replica lists `(partition, replicas)`; empty = let the controller place replicas.
    pub assignments: Vec<(i32, Vec<BrokerId>)>,
    /// Topic configs to store (validated by the broker, stored verbatim).
    pub configs: BTreeMap<String, String>,
}

/// A created (or validated) topic.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreatedTopic {
    /// The new topic id (nil for `validate_only`).
    pub topic_id: Uuid,
    /// Its partition count.
    pub num_partitions: i32,
    /// Its replication factor.
    pub replication_factor: i16,
}

/// Quorum state (Kafka DescribeQuorum, KIP-595/KIP-836, reduced): the active controller's view.
///
/// Offsets here are metadata offsets (raft log indexes, the offset of a record, -1 for none), as
/// everywhere between broker and controller; Kafka's DescribeQuorum end offsets are one past them.
/// `current_voters` and `observers` were added later: absent from the JSON when empty, so older
/// encodings decode unchanged.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuorumInfo {
    /// Node id of the active controller (raft leader), if known.
    pub leader_id: Option<BrokerId>,
    /// The raft term of that leader.
    pub leader_epoch: i64,
    /// Highest committed metadata offset (raft log index), -1 if none.
    pub high_watermark: i64,
    /// The voters by node id with their controller addresses: the raft membership's (KIP-853; before it,
    /// the static `controller.quorum.voters`).
    pub voters: BTreeMap<BrokerId, SocketAddr>,
    /// Each voter's replication progress, by node id (the leader's own included).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub current_voters: Vec<ReplicaProgress>,
    /// The registered brokers that are not voters, with the metadata offset of their last heartbeat
    /// (Kafka's observers: replicas that fetch the metadata log without voting).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub observers: Vec<ReplicaProgress>,
    /// The metadata log directory ids (KIP-853's `ReplicaDirectoryId`) of the voters and observers whose
    /// controllers recorded one (those added by AddRaftVoter or joined as learners); the others' is the
    /// zero UUID. Added with KIP-853: absent from the JSON when empty.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub directory_ids: BTreeMap<BrokerId, uuid::Uuid>,
}

/// One replica of the metadata log as the active controller sees it (Kafka's `ReplicaState`, KIP-836).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplicaProgress {
    /// The voter's or broker's node id.
    pub replica_id: BrokerId,
    /// The last metadata offset the replica is known to hold (a voter's matched raft index, a broker's
    /// last heartbeat offset), -1 if unknown.
    pub last_offset: i64,
    /// Wall-clock time (ms since the Unix epoch) the replica last acknowledged the leader (a voter's last
    /// successful AppendEntries, a broker's last heartbeat), -1 if unknown.
    pub last_fetch_ms: i64,
    /// Wall-clock time (ms since the Unix epoch) at which the replica was last known to hold the leader's
    /// whole log, -1 if unknown.
    pub last_caught_up_ms: i64,
}

/// ElectLeaders election type (KIP-460): 0 preferred, 1 unclean.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ElectionType {
    /// Make the preferred (first) replica leader when it is in the ISR and active.
    Preferred,
    /// Give a leaderless partition a leader, from outside the ISR if no ISR member is active.
    Unclean,
}

/// One partition's ElectLeaders outcome.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ElectionResult {
    /// Topic name.
    pub topic: String,
    /// Partition index.
    pub partition: i32,
    /// 0, `UNKNOWN_TOPIC_OR_PARTITION` (3), `PREFERRED_LEADER_NOT_AVAILABLE` (80),
    /// `ELIGIBLE_LEADERS_NOT_AVAILABLE` (83) or `ELECTION_NOT_NEEDED` (84).
    pub error_code: i16,
    /// Why, for errors.
    pub message: Option<String>,
}

impl ElectionResult {
    /// ELECTION_NOT_NEEDED (84) for `topic`-`partition`: its leader is already the one asked for.
    pub fn not_needed(topic: String, partition: i32, message: impl Into<String>) -> ElectionResult {
        ElectionResult {
            topic,
            partition,
            error_code: types::ErrorCode::ELECTION_NOT_NEEDED.0,
            message: Some(message.into()),
        }
    }

    /// UNKNOWN_TOPIC_OR_PARTITION (3): `topic`-`partition` does not exist.
    pub fn unknown_partition(topic: String, partition: i32) -> ElectionResult {
        let message = format!("{topic}-{partition} does not exist");
        ElectionResult {
            topic,
            partition,
            error_code: types::ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.0,
            message: Some(message),
        }
    }
}
