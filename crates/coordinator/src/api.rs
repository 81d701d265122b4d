//! Request and response shapes of the coordinator's operations. Plain Rust structs: the broker glue maps them
//! from/to the wire messages (field names follow the Kafka message schemas).

use bytes::Bytes;
use types::{ErrorCode, LeaderEpoch, Offset, ProducerEpoch, ProducerId};

use crate::records::GroupRecord;

/// Caller-chosen id of a request whose response may come later (JoinGroup, SyncGroup). Must be unique among
/// requests in flight.
pub type RequestId = u64;

/// Something the glue must do after a coordinator call, in order.
///
/// Ordering contract: the glue appends every [`Effect::Persist`] of one call to `__consumer_offsets` before it
/// sends any response produced by that same call (Kafka answers only after the records are written).
#[derive(Clone, Debug, PartialEq)]
pub enum Effect {
    /// Answer JoinGroup request `request`.
    JoinResponse {
        /// The id the caller passed to [`crate::GroupCoordinator::join_group`].
        request: RequestId,
        /// The response.
        response: JoinResult,
    },
    /// Answer SyncGroup request `request`.
    SyncResponse {
        /// The id the caller passed to [`crate::GroupCoordinator::sync_group`].
        request: RequestId,
        /// The response.
        response: SyncResult,
    },
    /// Write this record to `__consumer_offsets` partition [`crate::partition_for`]`(record.group_id(), n)`,
    /// encoded with [`crate::encode_record`].
    Persist(GroupRecord),
    /// Write `record` like [`Effect::Persist`], but in a TRANSACTIONAL batch of producer `producer_id` /
    /// `producer_epoch` (attributes bit 4 set, base sequence 0 as Kafka's coordinator runtime): an offset commit of a TxnOffsetCommit
    /// (KIP-98), pending until a COMMIT or ABORT marker of that producer follows it in the partition.
    /// Records of one call with the same producer go in one batch.
    PersistTransactional {
        /// The transactional producer's id.
        producer_id: ProducerId,
        /// The transactional producer's epoch.
        producer_epoch: ProducerEpoch,
        /// The offset commit record.
        record: GroupRecord,
    },
}

/// One entry of a `__consumer_offsets` partition, read back at load time, for
/// [`crate::GroupCoordinator::replay_entry`] (Kafka's `CoordinatorLoader` handing the coordinator each
/// record with its offset and batch producer id, and each control record's transaction marker).
#[derive(Clone, Debug, PartialEq)]
pub enum ReplayEntry {
    /// A decoded record of a data batch.
    Record {
        /// The record's offset in the partition (log order; orders a pending transactional commit
        /// against a plain one of the same partition, Kafka's `OffsetAndMetadata.recordOffset`).
        offset: i64,
        /// The batch's producer id when the batch is TRANSACTIONAL; `None` otherwise.
        producer_id: Option<ProducerId>,
        /// The decoded record.
        record: GroupRecord,
    },
    /// The end transaction marker (COMMIT or ABORT control record) of a control batch.
    EndTransaction {
        /// The control record's offset in the partition.
        offset: i64,
        /// The batch's producer id.
        producer_id: ProducerId,
        /// True for COMMIT, false for ABORT.
        commit: bool,
        /// The `__consumer_offsets` partition the marker was read from and the topic's partition count:
        /// only the producer's pending offsets of groups on that partition ([`crate::partition_for`]) are
        /// completed, as Kafka completes per partition (a coordinator replaying several partitions must not
        /// complete another partition's offsets, whose own marker may be missing).
        offsets_partition: (i32, i32),
    },
}

/// Response of an operation answered at once, plus the effects the call caused (expired timers fired first,
/// records to persist). Send `response` only after the `Persist` effects are written.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome<T> {
    /// The immediate response.
    pub response: T,
    /// Effects, in order.
    pub effects: Vec<Effect>,
}

/// One protocol (assignor) a joining member supports, with its metadata (for "consumer": a
/// ConsumerProtocolSubscription).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JoinProtocol {
    /// Protocol name, e.g. "range", "cooperative-sticky".
    pub name: String,
    /// Opaque metadata bytes.
    pub metadata: Bytes,
}

/// JoinGroup request (v0–v9).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JoinGroupRequest {
    /// Request API version: v4+ requires a known member id for dynamic members (KIP-394), v9 enables
    /// `skip_assignment` (KIP-814).
    pub api_version: i16,
    /// Group id (non-empty; else INVALID_GROUP_ID).
    pub group_id: String,
    /// Session timeout, ms; must lie within the configured bounds (else INVALID_SESSION_TIMEOUT).
    pub session_timeout_ms: i32,
    /// Rebalance timeout, ms (v1+). v0 has no such field: pass anything (e.g. -1) and the session timeout is
    /// used; any negative value is likewise replaced by the session timeout.
    pub rebalance_timeout_ms: i32,
    /// Member id; "" for a first join.
    pub member_id: String,
    /// `group.instance.id` of a static member (v5+).
    pub group_instance_id: Option<String>,
    /// Protocol type, e.g. "consumer".
    pub protocol_type: String,
    /// Supported protocols in preference order.
    pub protocols: Vec<JoinProtocol>,
    /// Client id from the request header.
    pub client_id: String,
    /// Client address, e.g. "/127.0.0.1".
    pub client_host: String,
}

/// A member as the leader sees it in its JoinGroup response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JoinMember {
    /// Member id.
    pub member_id: String,
    /// `group.instance.id`, if static.
    pub group_instance_id: Option<String>,
    /// The member's metadata for the selected protocol.
    pub metadata: Bytes,
}

/// JoinGroup response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JoinResult {
    /// Error code (0 = none).
    pub error_code: ErrorCode,
    /// Generation id, -1 on error.
    pub generation_id: i32,
    /// Group protocol type (v7+ field; `None` → null / "").
    pub protocol_type: Option<String>,
    /// Selected protocol name (`None` → null / "" before v7).
    pub protocol_name: Option<String>,
    /// Leader member id ("" when none).
    pub leader: String,
    /// KIP-814 (v9+): the leader must not compute a new assignment.
    pub skip_assignment: bool,
    /// The member's id (the generated one with MEMBER_ID_REQUIRED).
    pub member_id: String,
    /// Every member with its metadata for the leader; empty for followers.
    pub members: Vec<JoinMember>,
}

impl JoinResult {
    /// An error answer for `member_id`: generation −1, no leader, no members.
    pub fn error(member_id: &str, error_code: ErrorCode) -> Self {
        JoinResult {
            error_code,
            generation_id: -1,
            protocol_type: None,
            protocol_name: None,
            leader: String::new(),
            skip_assignment: false,
            member_id: member_id.to_string(),
            members: Vec::new(),
        }
    }
}

/// SyncGroup request (v0–v5).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyncGroupRequest {
    /// Group id.
    pub group_id: String,
    /// Generation id from the JoinGroup response.
    pub generation_id: i32,
    /// Member id.
    pub member_id: String,
    /// `group.instance.id`, if static (v3+).
    pub group_instance_id: Option<String>,
    /// v5+: must equal the group's protocol type when both are known (else INCONSISTENT_GROUP_PROTOCOL).
    pub protocol_type: Option<String>,
    /// v5+: must equal the group's protocol name when both are known.
    pub protocol_name: Option<String>,
    /// The leader's assignment: (member id, bytes). Followers send none.
    pub assignments: Vec<(String, Bytes)>,
}

/// SyncGroup response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyncResult {
    /// Error code (0 = none).
    pub error_code: ErrorCode,
    /// Group protocol type (v5+), `None` on error.
    pub protocol_type: Option<String>,
    /// Group protocol name (v5+), `None` on error.
    pub protocol_name: Option<String>,
    /// This member's assignment; empty (never null) when the leader gave it none.
    pub assignment: Bytes,
}

impl SyncResult {
    /// An error answer: no protocol, empty assignment.
    pub fn error(error_code: ErrorCode) -> Self {
        SyncResult {
            error_code,
            protocol_type: None,
            protocol_name: None,
            assignment: Bytes::new(),
        }
    }
}

/// One member to remove in a LeaveGroup request (v0–v2 carry exactly one, by member id; v3+ a batch, each by
/// member id and/or `group.instance.id`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaveMember {
    /// Member id; "" to remove a static member by instance id alone (admin removal).
    pub member_id: String,
    /// `group.instance.id`.
    pub group_instance_id: Option<String>,
}

/// Per-member LeaveGroup result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaveMemberResult {
    /// Member id as requested.
    pub member_id: String,
    /// Instance id as requested.
    pub group_instance_id: Option<String>,
    /// Error code (0 = none; 25 unknown; 82 fenced).
    pub error_code: ErrorCode,
}

/// LeaveGroup response. For v0–v2 the glue sends `error_code` if non-zero, else the single member's code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaveResult {
    /// Top-level error (25 when the group does not exist, 15 when it is dead).
    pub error_code: ErrorCode,
    /// One entry per requested member, in request order.
    pub members: Vec<LeaveMemberResult>,
}

/// One partition of an OffsetCommit request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OffsetCommitPartition {
    /// Partition index.
    pub partition_index: i32,
    /// Offset to commit.
    pub committed_offset: Offset,
    /// Leader epoch (v6+), [`LeaderEpoch::NONE`] when unknown.
    pub committed_leader_epoch: LeaderEpoch,
    /// Metadata string; `None` (null) is stored as "".
    pub committed_metadata: Option<String>,
}

/// OffsetCommit request (v2–v9).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OffsetCommitRequest {
    /// API version (v9+: unknown group with generation >= 0 gets GROUP_ID_NOT_FOUND instead of
    /// ILLEGAL_GENERATION).
    pub api_version: i16,
    /// Group id.
    pub group_id: String,
    /// Generation id; -1 for commits from outside group management.
    pub generation_id: i32,
    /// Member id; "" from outside group management.
    pub member_id: String,
    /// `group.instance.id` (v7+).
    pub group_instance_id: Option<String>,
    /// v2–v4 `retention_time_ms`; -1 = broker default.
    pub retention_time_ms: i64,
    /// (topic, partitions).
    pub topics: Vec<(String, Vec<OffsetCommitPartition>)>,
}

/// TxnOffsetCommit request (v0–v5, KIP-98; v3+ carries the group metadata of KIP-447).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxnOffsetCommitRequest {
    /// Group id.
    pub group_id: String,
    /// The transactional producer's id.
    pub producer_id: ProducerId,
    /// The transactional producer's epoch.
    pub producer_epoch: ProducerEpoch,
    /// Generation id (v3+); -1 below v3 or when the producer sent no group metadata.
    pub generation_id: i32,
    /// Member id (v3+); "" below v3 or when the producer sent no group metadata.
    pub member_id: String,
    /// `group.instance.id` (v3+).
    pub group_instance_id: Option<String>,
    /// (topic, partitions); the leader epoch is sent v2+.
    pub topics: Vec<(String, Vec<OffsetCommitPartition>)>,
}

/// OffsetCommit response: per topic, per partition `(partition_index, error_code)`, in request order.
pub type OffsetCommitResult = Vec<(String, Vec<(i32, ErrorCode)>)>;

/// One partition of an OffsetFetch response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OffsetFetchPartition {
    /// Partition index.
    pub partition_index: i32,
    /// Committed offset, [`Offset::NONE`] when none.
    pub committed_offset: Offset,
    /// Committed leader epoch, [`LeaderEpoch::NONE`] when none.
    pub committed_leader_epoch: LeaderEpoch,
    /// Commit metadata ("" when none).
    pub metadata: String,
    /// Error code (0).
    pub error_code: ErrorCode,
}

/// OffsetFetch response for one group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OffsetFetchGroup {
    /// Group id.
    pub group_id: String,
    /// Group-level error (0).
    pub error_code: ErrorCode,
    /// (topic, partitions); topics in request order, or sorted by name when all offsets were requested.
    pub topics: Vec<(String, Vec<OffsetFetchPartition>)>,
}

/// OffsetDelete response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OffsetDeleteResult {
    /// Group-level error: GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP (non-consumer group with members).
    pub error_code: ErrorCode,
    /// Per topic, per partition `(partition_index, error_code)`; GROUP_SUBSCRIBED_TO_TOPIC for subscribed topics.
    pub topics: Vec<(String, Vec<(i32, ErrorCode)>)>,
}

/// A member in DescribeGroups.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DescribedMember {
    /// Member id.
    pub member_id: String,
    /// `group.instance.id`, if static.
    pub group_instance_id: Option<String>,
    /// Client id.
    pub client_id: String,
    /// Client host.
    pub client_host: String,
    /// Metadata for the selected protocol (empty unless the group is Stable).
    pub member_metadata: Bytes,
    /// Assignment (empty unless the group is Stable).
    pub member_assignment: Bytes,
}

/// DescribeGroups result for one group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DescribedGroup {
    /// 0, or GROUP_ID_NOT_FOUND (69) with state "Dead" for an unknown group (DescribeGroups v6+; for v0–v5 the glue
    /// sends 0 with state "Dead", as Kafka did).
    pub error_code: ErrorCode,
    /// Group id.
    pub group_id: String,
    /// State name ("Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead").
    pub group_state: String,
    /// Protocol type ("" when none).
    pub protocol_type: String,
    /// Selected protocol name when Stable, else "".
    pub protocol_data: String,
    /// Members, ordered by member id.
    pub members: Vec<DescribedMember>,
}

/// ListGroups entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListedGroup {
    /// Group id.
    pub group_id: String,
    /// Protocol type ("" for groups that only store offsets).
    pub protocol_type: String,
    /// State name (v4+ `group_state`).
    pub group_state: String,
    /// "classic" or "consumer" (v5+ `group_type`, KIP-848).
    pub group_type: String,
}
