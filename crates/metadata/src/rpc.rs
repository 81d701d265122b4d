//! The broker-facing messages of the controller RPC: a broker sends one [`ClientRequest`] and gets
//! one [`ClientResponse`] back.
//!
//! Framing (length-prefixed JSON over TCP) and the raft messages between controllers, which carry
//! openraft types, live in the controller crate (`controller::rpc`). The serde attributes here are the
//! wire format: do not change them.

use serde::{Deserialize, Serialize};
use types::{BrokerEpoch, BrokerId, ProducerId};
use uuid::Uuid;

use crate::error::ControllerError;
use crate::image::PartitionRegistration;
use crate::reassignment::Reassignment;
use crate::record::AclEntry;
use crate::request::{
    AlterPartition, CreateTopic, CreatedTopic, ElectionResult, ElectionType, Heartbeat,
    HeartbeatReply, MetadataUpdate, QuorumInfo, RegisterBroker,
};
use crate::scram::{ScramAlterResult, ScramDeletion, ScramUpsertion};

/// Broker requests (see the controller crate's `ControllerClient` for their meaning).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum ClientRequest {
    /// BrokerRegistration.
    RegisterBroker(RegisterBroker),
    /// BrokerHeartbeat.
    Heartbeat(Heartbeat),
    /// CreateTopics.
    CreateTopics {
        /// Topics.
        topics: Vec<CreateTopic>,
        /// Validate only.
        validate_only: bool,
    },
    /// DeleteTopics.
    DeleteTopics {
        /// Names.
        names: Vec<String>,
    },
    /// CreatePartitions.
    CreatePartitions {
        /// Topic.
        name: String,
        /// New total partition count.
        count: i32,
        /// Validate only.
        validate_only: bool,
    },
    /// AlterPartition.
    AlterPartition(AlterPartition),
    /// AssignReplicasToDirs (KIP-858).
    AssignReplicasToDirs(crate::request::AssignReplicasToDirs),
    /// A broker's partition sizes (Runnel's, for automatic balancing).
    PartitionSizes(crate::request::PartitionSizes),
    /// IncrementalAlterConfigs.
    AlterConfigs {
        /// 2 topic, 4 broker.
        resource_type: i8,
        /// Topic name or broker id.
        resource_name: String,
        /// `(name, Some(value))` set, `(name, None)` delete.
        ops: Vec<(String, Option<String>)>,
        /// Validate only.
        validate_only: bool,
    },
    /// AllocateProducerIds.
    AllocateProducerIds {
        /// Broker id.
        broker_id: BrokerId,
        /// Broker epoch.
        broker_epoch: BrokerEpoch,
    },
    /// Metadata long-poll.
    FetchMetadata {
        /// Last offset the caller has.
        since_offset: i64,
        /// Longest wait for new records, ms.
        max_wait_ms: u64,
    },
    /// DescribeQuorum.
    DescribeQuorum,
    /// ElectLeaders.
    ElectLeaders {
        /// Preferred or unclean.
        election: ElectionType,
        /// (topic, partition) pairs; `None` = every partition.
        partitions: Option<Vec<(String, i32)>>,
    },
    /// CreateAcls (KIP-801): the ACLs, already validated by the broker; one equal to an existing ACL is
    /// not created again.
    CreateAcls {
        /// The ACLs.
        acls: Vec<AclEntry>,
    },
    /// DeleteAcls: the ids of the ACLs the broker's filters selected in its image; ids no longer present
    /// are skipped.
    DeleteAcls {
        /// ACL ids.
        ids: Vec<Uuid>,
    },
    /// AlterClientQuotas (KIP-546): the entries, already validated by the broker; a set of an unchanged value
    /// or a removal of an absent key writes nothing.
    AlterClientQuotas {
        /// The entries.
        entries: Vec<crate::quota::QuotaAlteration>,
        /// Validate only: decide, write nothing.
        validate_only: bool,
    },
    /// AlterUserScramCredentials (KIP-554): the deletions and the upsertions (keys already derived by the
    /// broker), decided by `scram::decide_alter` against the controller's image.
    AlterUserScramCredentials {
        /// Credentials to remove.
        deletions: Vec<ScramDeletion>,
        /// Credentials to set.
        upsertions: Vec<ScramUpsertion>,
    },
    /// Unregister a broker (KIP-500 UnregisterBroker).
    UnregisterBroker {
        /// The broker id to unregister.
        broker_id: BrokerId,
    },
    /// AlterPartitionReassignments (KIP-455): start, replace or cancel the reassignment of each
    /// partition; `allow_replication_factor_change` false (KIP-860) refuses a target of another size.
    AlterPartitionReassignments {
        /// The partitions, in request order.
        reassignments: Vec<Reassignment>,
        /// May a target change the replication factor.
        allow_replication_factor_change: bool,
    },
    /// Any other request, asking that its answer say at which metadata offset its outcome is visible:
    /// answered with [`ClientResponse::WithOffset`] (a broker then waits until its own image has applied
    /// that offset — read-your-writes without re-checking the outcome). Not nested. Controllers older
    /// than this variant close the connection on it: upgrade the controllers before the brokers.
    WithOffset(Box<ClientRequest>),
}

/// Answers to [`ClientRequest`]s.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[allow(clippy::large_enum_variant)]
pub enum ClientResponse {
    /// The whole request failed (e.g. its records would exceed the controller's batch limit,
    /// `controller::rpc::MAX_BATCH_BYTES`).
    Error(ControllerError),
    /// This node is not the active controller; `leader` is the active one if known.
    NotController {
        /// The leader's node id, if known.
        leader: Option<BrokerId>,
        /// The leader's controller address, if known: how a client that started from bootstrap servers
        /// (KIP-853) reaches a leader it has no address for. Absent from the JSON when unknown.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        leader_addr: Option<std::net::SocketAddr>,
    },
    /// BrokerRegistration answer: the broker epoch.
    RegisterBroker(Result<BrokerEpoch, ControllerError>),
    /// BrokerHeartbeat answer.
    Heartbeat(Result<HeartbeatReply, ControllerError>),
    /// CreateTopics answer, one per topic.
    CreateTopics(Vec<Result<CreatedTopic, ControllerError>>),
    /// DeleteTopics answer, one per name.
    DeleteTopics(Vec<Result<Uuid, ControllerError>>),
    /// CreatePartitions answer.
    CreatePartitions(Result<(), ControllerError>),
    /// AlterPartition answer.
    AlterPartition(Result<PartitionRegistration, ControllerError>),
    /// AssignReplicasToDirs answer (the assignments of partitions that no longer exist, or no longer
    /// have the broker as a replica, are skipped).
    AssignReplicasToDirs(Result<(), ControllerError>),
    /// Answer to a [`ClientRequest::PartitionSizes`].
    PartitionSizes(Result<(), ControllerError>),
    /// IncrementalAlterConfigs answer.
    AlterConfigs(Result<(), ControllerError>),
    /// AllocateProducerIds answer.
    AllocateProducerIds(Result<(ProducerId, i32), ControllerError>),
    /// Metadata long-poll answer.
    FetchMetadata(Result<MetadataUpdate, ControllerError>),
    /// DescribeQuorum answer.
    DescribeQuorum(Result<QuorumInfo, ControllerError>),
    /// ElectLeaders answer, one result per partition (see `QuorumControl::elect_leaders`).
    ElectLeaders(Vec<ElectionResult>),
    /// CreateAcls answer.
    CreateAcls(Result<(), ControllerError>),
    /// DeleteAcls answer.
    DeleteAcls(Result<(), ControllerError>),
    /// AlterClientQuotas answer (one outcome for the whole request: its records are committed together).
    AlterClientQuotas(Result<(), ControllerError>),
    /// AlterUserScramCredentials answer: one result per user named.
    AlterUserScramCredentials(Vec<ScramAlterResult>),
    /// Answer to [`ClientRequest::UnregisterBroker`].
    UnregisterBroker(Result<(), ControllerError>),
    /// Answer to [`ClientRequest::AlterPartitionReassignments`]: one result per partition, in order.
    AlterPartitionReassignments(Vec<Result<(), ControllerError>>),
    /// Answer to a [`ClientRequest::WithOffset`]: the inner request's answer and the metadata offset (raft
    /// log index) at which its outcome is visible — the index its records were committed at, or, for a
    /// decision that wrote nothing, the offset of the last record the deciding image held.
    WithOffset {
        /// Metadata log offset; an image whose `offset` is at least this shows the outcome.
        offset: i64,
        /// The inner request's answer.
        response: Box<ClientResponse>,
    },
}
