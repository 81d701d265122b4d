//! The metadata log records (KIP-631): what the controller appends to `__cluster_metadata-0` and
//! every controller and broker replays into a [`crate::MetadataImage`].
//!
//! Each record is serialized as JSON with a `"type"` tag naming the Kafka record. The serde attributes
//! are the wire and disk format (raft log entries, snapshots, the controller RPC): do not change them.

use serde::{Deserialize, Serialize};
use types::{BrokerEpoch, BrokerId, LeaderEpoch, PartitionEpoch, ProducerId};
use uuid::Uuid;

use crate::scram::ScramCredential;

/// `leader` value of a partition without a leader (Kafka's `LeaderConstants.NO_LEADER`).
pub const NO_LEADER: BrokerId = BrokerId::NONE;

/// A replica's directory not yet reported by its broker (Kafka's `DirectoryId.UNASSIGNED`, KIP-858):
/// treated as online.
pub const DIRECTORY_UNASSIGNED: Uuid = Uuid::nil();

/// The directory a broker reports offline when it cannot name it (Kafka's `DirectoryId.LOST`): every
/// directory of the broker is offline.
pub const DIRECTORY_LOST: Uuid = Uuid::from_u64_pair(0, 1);

/// Config resource type of a topic (Kafka `ConfigResource.Type.TOPIC`).
pub const RESOURCE_TOPIC: i8 = 2;
/// Config resource type of a broker (Kafka `ConfigResource.Type.BROKER`); resource name `""` is the
/// cluster-wide default, otherwise the decimal broker id.
pub const RESOURCE_BROKER: i8 = 4;
/// Config resource type of a client metrics subscription (Kafka `ConfigResource.Type.CLIENT_METRICS`,
/// KIP-714); the resource name is the subscription's.
pub const RESOURCE_CLIENT_METRICS: i8 = 16;
/// Config resource type of a group's dynamic configs (Kafka `ConfigResource.Type.GROUP`, KIP-848/KIP-932);
/// the resource name is the group id.
pub const RESOURCE_GROUP: i8 = 32;

/// One advertised listener of a broker (an entry of KIP-631's `RegisterBrokerRecord.EndPoints`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BrokerEndpoint {
    /// Listener name, upper-case (`PLAINTEXT`, `SSL`, `INTERNAL`, ...).
    pub name: String,
    /// Advertised host.
    pub host: String,
    /// Advertised port.
    pub port: u16,
    /// Kafka's `SecurityProtocol` id: 0 PLAINTEXT, 1 SSL, 2 SASL_PLAINTEXT, 3 SASL_SSL.
    pub security_protocol: i16,
}

/// An ACL as the metadata log stores it: the fields of Kafka's `AccessControlEntryRecord` (KIP-801), the enum
/// fields as their wire codes (resource type 2 TOPIC .. 7 USER, pattern type 3 LITERAL / 4 PREFIXED, operation
/// 2 ALL .. 15, permission 2 DENY / 3 ALLOW). The broker checks a binding before it is sent; replay takes it as
/// it is.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct AclEntry {
    /// Resource type code.
    pub resource_type: i8,
    /// Resource name (a prefix for PREFIXED, `*` for every resource).
    pub resource_name: String,
    /// Pattern type code.
    pub pattern_type: i8,
    /// `type:name`, e.g. `User:alice`.
    pub principal: String,
    /// Client host, or `*`.
    pub host: String,
    /// Operation code.
    pub operation: i8,
    /// Permission code.
    pub permission_type: i8,
}

/// One record of the metadata log (`__cluster_metadata-0`), serialized as JSON with a `"type"` tag
/// naming the Kafka record (KIP-631).
///
/// Several records committed by one controller decision share one raft log index (their offset).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum MetadataRecord {
    /// A broker registered (KIP-631 `RegisterBrokerRecord`). Replaces any previous registration of
    /// `broker_id`; the new registration starts fenced, not in controlled shutdown, and its broker
    /// epoch is the offset (raft log index) at which this record is applied.
    RegisterBrokerRecord {
        /// The broker id (`node.id`).
        broker_id: BrokerId,
        /// Random id of this broker process incarnation.
        incarnation_id: Uuid,
        /// Advertised host of the broker's inter-broker listener (`inter.broker.listener.name`).
        host: String,
        /// Advertised port of the broker's inter-broker listener.
        port: u16,
        /// `broker.rack`, if set.
        rack: Option<String>,
        /// Every advertised listener (KIP-631 `EndPoints`). Absent from the JSON when empty, as in records
        /// written before named listeners; readers then fall back to `host`/`port`.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        listeners: Vec<BrokerEndpoint>,
        /// The `directory.id` of each of the broker's data directories (KIP-858 `LogDirs`, in `log.dirs`
        /// order). Absent from the JSON when empty (records from before JBOD: one unnamed directory).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        log_dirs: Vec<Uuid>,
    },
    /// The broker is fenced (KIP-631 `FenceBrokerRecord`): not eligible as leader or ISR member.
    /// Ignored unless `broker_epoch` matches the current registration.
    FenceBrokerRecord {
        /// The broker id.
        broker_id: BrokerId,
        /// The registration's broker epoch.
        broker_epoch: BrokerEpoch,
    },
    /// The broker is unfenced (KIP-631 `UnfenceBrokerRecord`). Ignored unless `broker_epoch` matches.
    UnfenceBrokerRecord {
        /// The broker id.
        broker_id: BrokerId,
        /// The registration's broker epoch.
        broker_epoch: BrokerEpoch,
    },
    /// A change of a registration's flags (KIP-631/KIP-841 `BrokerRegistrationChangeRecord`); `None`
    /// leaves a flag unchanged. Ignored unless `broker_epoch` matches.
    BrokerRegistrationChangeRecord {
        /// The broker id.
        broker_id: BrokerId,
        /// The registration's broker epoch.
        broker_epoch: BrokerEpoch,
        /// New fenced flag, if changed.
        fenced: Option<bool>,
        /// New controlled-shutdown flag, if changed.
        in_controlled_shutdown: Option<bool>,
        /// New "every data directory offline" flag, if changed (KIP-858: `true` = all of the broker's
        /// storage failed, none of its replicas is a leader or ISR member until it reports a directory
        /// online again). Absent from the JSON when `None`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        log_dir_offline: Option<bool>,
        /// The broker's offline data directories, if changed (KIP-858 `OfflineLogDirs`; directory ids,
        /// sorted): its replicas assigned to them are neither leaders nor ISR members. Absent from the
        /// JSON when `None`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        offline_log_dirs: Option<Vec<Uuid>>,
    },
    /// The broker's registration is removed (Kafka's `UnregisterBrokerRecord`, KIP-500's
    /// UnregisterBroker). Ignored unless `broker_epoch` matches the current registration.
    UnregisterBrokerRecord {
        /// The broker id.
        broker_id: BrokerId,
        /// The registration's broker epoch.
        broker_epoch: BrokerEpoch,
    },
    /// A topic was created (KIP-631 `TopicRecord`); its partitions follow as `PartitionRecord`s.
    TopicRecord {
        /// Topic name.
        name: String,
        /// Topic id (KIP-516).
        topic_id: Uuid,
    },
    /// A partition was created (KIP-631 `PartitionRecord`) with its full state.
    PartitionRecord {
        /// Id of the owning topic; the record is ignored if the topic does not exist.
        topic_id: Uuid,
        /// Partition index.
        partition_id: i32,
        /// Replica broker ids, preferred leader first.
        replicas: Vec<BrokerId>,
        /// In-sync replica broker ids.
        isr: Vec<BrokerId>,
        /// Leader broker id or [`NO_LEADER`].
        leader: BrokerId,
        /// Leader epoch.
        leader_epoch: LeaderEpoch,
        /// Partition epoch (bumped on every change).
        partition_epoch: PartitionEpoch,
        /// The data directory of each replica, aligned with `replicas` (KIP-858 `Directories`;
        /// [`DIRECTORY_UNASSIGNED`] until the broker assigns it). Absent from the JSON when empty (every
        /// directory unassigned).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        directories: Vec<Uuid>,
    },
    /// A change of a partition (KIP-631 `PartitionChangeRecord`). `None` leaves a field unchanged.
    /// Replay bumps `partition_epoch` by one, and `leader_epoch` by one when `leader` is `Some`.
    PartitionChangeRecord {
        /// Id of the owning topic.
        topic_id: Uuid,
        /// Partition index.
        partition_id: i32,
        /// New ISR, if changed.
        isr: Option<Vec<BrokerId>>,
        /// New leader (or [`NO_LEADER`]), if changed.
        leader: Option<BrokerId>,
        /// New replica list, if changed (a reassignment starting, completing or reverted, KIP-455).
        /// Absent from the JSON when `None`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        replicas: Option<Vec<BrokerId>>,
        /// New replicas a reassignment is adding, if changed (empty: none). Absent when `None`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        adding_replicas: Option<Vec<BrokerId>>,
        /// Replicas a reassignment is removing, if changed (empty: none). Absent when `None`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        removing_replicas: Option<Vec<BrokerId>>,
        /// New replica directories, aligned with the (new) replica list, if changed (KIP-858
        /// `Directories`, written for an AssignReplicasToDirs). When `replicas` changes without it, a
        /// replica kept keeps its directory and a new one is [`DIRECTORY_UNASSIGNED`]. Absent when `None`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        directories: Option<Vec<Uuid>>,
    },
    /// The topic and all its partitions and configs are removed (KIP-631 `RemoveTopicRecord`).
    RemoveTopicRecord {
        /// Id of the removed topic.
        topic_id: Uuid,
    },
    /// A dynamic config was set (`value: Some`) or deleted (`value: None`) (KIP-631 `ConfigRecord`).
    ConfigRecord {
        /// [`RESOURCE_TOPIC`], [`RESOURCE_BROKER`], [`RESOURCE_CLIENT_METRICS`] or [`RESOURCE_GROUP`]; other
        /// types are ignored on replay.
        resource_type: i8,
        /// Topic name, or broker id (`""` = cluster default).
        resource_name: String,
        /// Config name.
        name: String,
        /// Config value, `None` to delete.
        value: Option<String>,
    },
    /// A block of producer ids was handed to a broker (KIP-730 `ProducerIdsRecord`):
    /// `next_producer_id` is the first id not yet handed out.
    ProducerIdsRecord {
        /// Broker that received the block.
        broker_id: BrokerId,
        /// Its broker epoch.
        broker_epoch: BrokerEpoch,
        /// First producer id not yet allocated.
        next_producer_id: ProducerId,
    },
    /// An ACL was created (Kafka's `AccessControlEntryRecord`, KIP-801); replay replaces any ACL with `id`.
    AccessControlEntryRecord {
        /// The ACL's id.
        id: Uuid,
        /// The ACL.
        acl: AclEntry,
    },
    /// An ACL was deleted (Kafka's `RemoveAccessControlEntryRecord`); an unknown id is ignored.
    RemoveAccessControlEntryRecord {
        /// The ACL's id.
        id: Uuid,
    },
    /// A client quota key was set or removed for an entity (Kafka's `ClientQuotaRecord`, KIP-546).
    ClientQuotaRecord(crate::quota::ClientQuotaChange),
    /// A user's SCRAM credential for one mechanism was set (Kafka's `UserScramCredentialRecord`, KIP-554);
    /// replaces any previous one.
    UserScramCredentialRecord {
        /// The user name.
        name: String,
        /// The mechanism type code (1 SCRAM-SHA-256, 2 SCRAM-SHA-512).
        mechanism: i8,
        /// Salt, StoredKey, ServerKey and iterations.
        credential: ScramCredential,
    },
    /// A user's SCRAM credential was removed (Kafka's `RemoveUserScramCredentialRecord`); an unknown one is
    /// ignored.
    RemoveUserScramCredentialRecord {
        /// The user name.
        name: String,
        /// The mechanism type code.
        mechanism: i8,
    },
}

impl MetadataRecord {
    /// A `PartitionChangeRecord` of the ISR and/or the leader only (no reassignment fields).
    pub fn isr_leader_change(
        topic_id: Uuid,
        partition_id: i32,
        isr: Option<Vec<BrokerId>>,
        leader: Option<BrokerId>,
    ) -> MetadataRecord {
        MetadataRecord::PartitionChangeRecord {
            topic_id,
            partition_id,
            isr,
            leader,
            replicas: None,
            adding_replicas: None,
            removing_replicas: None,
            directories: None,
        }
    }

    /// A `PartitionChangeRecord` setting only the replicas' directories (KIP-858, an AssignReplicasToDirs):
    /// `directories` aligned with the partition's replicas.
    pub fn directories_change(
        topic_id: Uuid,
        partition_id: i32,
        directories: Vec<Uuid>,
    ) -> MetadataRecord {
        let mut change = Self::isr_leader_change(topic_id, partition_id, None, None);
        if let MetadataRecord::PartitionChangeRecord { directories: d, .. } = &mut change {
            *d = Some(directories);
        }
        change
    }
}
