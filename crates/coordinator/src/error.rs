//! Kafka error codes used by the group coordinator (INT16 `error_code` values).
//!
//! Source: Kafka protocol guide, "Error Codes" (`org.apache.kafka.common.protocol.Errors`). Kept as plain `i16`
//! constants so this crate does not depend on the wire codec; the broker glue maps them 1:1.

/// No error.
pub const NONE: i16 = 0;
/// Unknown topic or partition (used for topic names that cannot be stored).
pub const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
/// Commit metadata longer than `offset.metadata.max.bytes`.
pub const OFFSET_METADATA_TOO_LARGE: i16 = 12;
/// The group is being unloaded / deleted; retry after finding the coordinator again.
pub const COORDINATOR_NOT_AVAILABLE: i16 = 15;
/// This broker is not (or no longer) the coordinator of the group: its `__consumer_offsets` partition is
/// led elsewhere; find the coordinator again.
pub const NOT_COORDINATOR: i16 = 16;
/// Generation id in the request is not the group's current generation.
pub const ILLEGAL_GENERATION: i16 = 22;
/// Protocol type mismatch, or none of the member's protocols is supported by every member.
pub const INCONSISTENT_GROUP_PROTOCOL: i16 = 23;
/// Empty (or unstorable) group id.
pub const INVALID_GROUP_ID: i16 = 24;
/// Member id not known to the group.
pub const UNKNOWN_MEMBER_ID: i16 = 25;
/// Session timeout outside `[group.min.session.timeout.ms, group.max.session.timeout.ms]`.
pub const INVALID_SESSION_TIMEOUT: i16 = 26;
/// The group is rebalancing; the member must rejoin.
pub const REBALANCE_IN_PROGRESS: i16 = 27;
/// Malformed request field (e.g. a string too long to persist).
pub const INVALID_REQUEST: i16 = 42;
/// DeleteGroups / OffsetDelete on a group that still has members.
pub const NON_EMPTY_GROUP: i16 = 68;
/// The group does not exist.
pub const GROUP_ID_NOT_FOUND: i16 = 69;
/// KIP-394: JoinGroup v4+ with an empty member id; rejoin with the returned id.
pub const MEMBER_ID_REQUIRED: i16 = 79;
/// The group already has `group.max.size` members.
pub const GROUP_MAX_SIZE_REACHED: i16 = 81;
/// KIP-345: another member id now owns this `group.instance.id`.
pub const FENCED_INSTANCE_ID: i16 = 82;
/// OffsetDelete of a topic the group is subscribed to.
pub const GROUP_SUBSCRIBED_TO_TOPIC: i16 = 86;
