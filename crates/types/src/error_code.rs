//! Kafka error codes: the one table of them in Runnel.
//!
//! Source: Kafka protocol guide, "Error Codes" (`org.apache.kafka.common.protocol.Errors`). Every crate that
//! needs a Kafka error code takes it from here; no crate keeps its own numbers.

use std::fmt;

/// A Kafka error code as carried in `error_code` fields (INT16). Unknown values are kept as-is.
///
/// With the `serde` feature it serializes as the plain integer (e.g. `36`), so JSON carrying it is the same as
/// JSON carrying an `i16`.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(transparent))]
pub struct ErrorCode(pub i16);

/// (code, Kafka name, retriable)
const TABLE: &[(i16, &str, bool)] = &[
    (-1, "UNKNOWN_SERVER_ERROR", false),
    (0, "NONE", false),
    (1, "OFFSET_OUT_OF_RANGE", false),
    (2, "CORRUPT_MESSAGE", true),
    (3, "UNKNOWN_TOPIC_OR_PARTITION", true),
    (4, "INVALID_FETCH_SIZE", false),
    (5, "LEADER_NOT_AVAILABLE", true),
    (6, "NOT_LEADER_OR_FOLLOWER", true),
    (7, "REQUEST_TIMED_OUT", true),
    (8, "BROKER_NOT_AVAILABLE", false),
    (9, "REPLICA_NOT_AVAILABLE", true),
    (10, "MESSAGE_TOO_LARGE", false),
    (11, "STALE_CONTROLLER_EPOCH", false),
    (12, "OFFSET_METADATA_TOO_LARGE", false),
    (13, "NETWORK_EXCEPTION", true),
    (14, "COORDINATOR_LOAD_IN_PROGRESS", true),
    (15, "COORDINATOR_NOT_AVAILABLE", true),
    (16, "NOT_COORDINATOR", true),
    (17, "INVALID_TOPIC_EXCEPTION", false),
    (18, "RECORD_LIST_TOO_LARGE", false),
    (19, "NOT_ENOUGH_REPLICAS", true),
    (20, "NOT_ENOUGH_REPLICAS_AFTER_APPEND", true),
    (21, "INVALID_REQUIRED_ACKS", false),
    (22, "ILLEGAL_GENERATION", false),
    (23, "INCONSISTENT_GROUP_PROTOCOL", false),
    (24, "INVALID_GROUP_ID", false),
    (25, "UNKNOWN_MEMBER_ID", false),
    (26, "INVALID_SESSION_TIMEOUT", false),
    (27, "REBALANCE_IN_PROGRESS", false),
    (28, "INVALID_COMMIT_OFFSET_SIZE", false),
    (29, "TOPIC_AUTHORIZATION_FAILED", false),
    (30, "GROUP_AUTHORIZATION_FAILED", false),
    (31, "CLUSTER_AUTHORIZATION_FAILED", false),
    (32, "INVALID_TIMESTAMP", false),
    (33, "UNSUPPORTED_SASL_MECHANISM", false),
    (34, "ILLEGAL_SASL_STATE", false),
    (35, "UNSUPPORTED_VERSION", false),
    (36, "TOPIC_ALREADY_EXISTS", false),
    (37, "INVALID_PARTITIONS", false),
    (38, "INVALID_REPLICATION_FACTOR", false),
    (39, "INVALID_REPLICA_ASSIGNMENT", false),
    (40, "INVALID_CONFIG", false),
    (41, "NOT_CONTROLLER", true),
    (42, "INVALID_REQUEST", false),
    (43, "UNSUPPORTED_FOR_MESSAGE_FORMAT", false),
    (44, "POLICY_VIOLATION", false),
    (45, "OUT_OF_ORDER_SEQUENCE_NUMBER", false),
    (46, "DUPLICATE_SEQUENCE_NUMBER", false),
    (47, "INVALID_PRODUCER_EPOCH", false),
    (48, "INVALID_TXN_STATE", false),
    (49, "INVALID_PRODUCER_ID_MAPPING", false),
    (50, "INVALID_TRANSACTION_TIMEOUT", false),
    (51, "CONCURRENT_TRANSACTIONS", false),
    (52, "TRANSACTION_COORDINATOR_FENCED", false),
    (53, "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", false),
    (54, "SECURITY_DISABLED", false),
    (55, "OPERATION_NOT_ATTEMPTED", false),
    (56, "KAFKA_STORAGE_ERROR", true),
    (57, "LOG_DIR_NOT_FOUND", false),
    (58, "SASL_AUTHENTICATION_FAILED", false),
    (59, "UNKNOWN_PRODUCER_ID", false),
    (60, "REASSIGNMENT_IN_PROGRESS", false),
    (61, "DELEGATION_TOKEN_AUTH_DISABLED", false),
    (62, "DELEGATION_TOKEN_NOT_FOUND", false),
    (63, "DELEGATION_TOKEN_OWNER_MISMATCH", false),
    (64, "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED", false),
    (65, "DELEGATION_TOKEN_AUTHORIZATION_FAILED", false),
    (66, "DELEGATION_TOKEN_EXPIRED", false),
    (67, "INVALID_PRINCIPAL_TYPE", false),
    (68, "NON_EMPTY_GROUP", false),
    (69, "GROUP_ID_NOT_FOUND", false),
    (70, "FETCH_SESSION_ID_NOT_FOUND", true),
    (71, "INVALID_FETCH_SESSION_EPOCH", true),
    (72, "LISTENER_NOT_FOUND", true),
    (73, "TOPIC_DELETION_DISABLED", false),
    (74, "FENCED_LEADER_EPOCH", true),
    (75, "UNKNOWN_LEADER_EPOCH", true),
    (76, "UNSUPPORTED_COMPRESSION_TYPE", false),
    (77, "STALE_BROKER_EPOCH", false),
    (78, "OFFSET_NOT_AVAILABLE", true),
    (79, "MEMBER_ID_REQUIRED", false),
    (80, "PREFERRED_LEADER_NOT_AVAILABLE", true),
    (81, "GROUP_MAX_SIZE_REACHED", false),
    (82, "FENCED_INSTANCE_ID", false),
    (83, "ELIGIBLE_LEADERS_NOT_AVAILABLE", true),
    (84, "ELECTION_NOT_NEEDED", true),
    (85, "NO_REASSIGNMENT_IN_PROGRESS", false),
    (86, "GROUP_SUBSCRIBED_TO_TOPIC", false),
    (87, "INVALID_RECORD", false),
    (88, "UNSTABLE_OFFSET_COMMIT", true),
    (89, "THROTTLING_QUOTA_EXCEEDED", true),
    (90, "PRODUCER_FENCED", false),
    (91, "RESOURCE_NOT_FOUND", false),
    (92, "DUPLICATE_RESOURCE", false),
    (93, "UNACCEPTABLE_CREDENTIAL", false),
    (94, "INCONSISTENT_VOTER_SET", false),
    (95, "INVALID_UPDATE_VERSION", false),
    (96, "FEATURE_UPDATE_FAILED", false),
    (97, "PRINCIPAL_DESERIALIZATION_FAILURE", false),
    (98, "SNAPSHOT_NOT_FOUND", false),
    (99, "POSITION_OUT_OF_RANGE", false),
    (100, "UNKNOWN_TOPIC_ID", true),
    (101, "DUPLICATE_BROKER_REGISTRATION", false),
    (102, "BROKER_ID_NOT_REGISTERED", false),
    (103, "INCONSISTENT_TOPIC_ID", true),
    (104, "INCONSISTENT_CLUSTER_ID", false),
    (105, "TRANSACTIONAL_ID_NOT_FOUND", false),
    (106, "FETCH_SESSION_TOPIC_ID_ERROR", true),
    (107, "INELIGIBLE_REPLICA", false),
    (108, "NEW_LEADER_ELECTED", false),
    (109, "OFFSET_MOVED_TO_TIERED_STORAGE", false),
    (110, "FENCED_MEMBER_EPOCH", false),
    (111, "UNRELEASED_INSTANCE_ID", false),
    (112, "UNSUPPORTED_ASSIGNOR", false),
    (113, "STALE_MEMBER_EPOCH", false),
    (114, "MISMATCHED_ENDPOINT_TYPE", false),
    (115, "UNSUPPORTED_ENDPOINT_TYPE", false),
    (116, "UNKNOWN_CONTROLLER_ID", false),
    (117, "UNKNOWN_SUBSCRIPTION_ID", false),
    (118, "TELEMETRY_TOO_LARGE", false),
    (119, "INVALID_REGISTRATION", false),
    (120, "TRANSACTION_ABORTABLE", false),
    (121, "INVALID_RECORD_STATE", false),
    (122, "SHARE_SESSION_NOT_FOUND", true),
    (123, "INVALID_SHARE_SESSION_EPOCH", true),
    (124, "FENCED_STATE_EPOCH", false),
    (125, "INVALID_VOTER_KEY", false),
    (126, "DUPLICATE_VOTER", false),
    (127, "VOTER_NOT_FOUND", false),
    (128, "INVALID_REGULAR_EXPRESSION", false),
    (129, "REBOOTSTRAP_REQUIRED", false),
    (130, "STREAMS_INVALID_TOPOLOGY", false),
    (131, "STREAMS_INVALID_TOPOLOGY_EPOCH", false),
    (132, "STREAMS_TOPOLOGY_FENCED", false),
    (133, "SHARE_SESSION_LIMIT_REACHED", true),
];

impl ErrorCode {
    /// Kafka error -1, `UNKNOWN_SERVER_ERROR`.
    pub const UNKNOWN_SERVER_ERROR: ErrorCode = ErrorCode(-1);
    /// Kafka error 0, `NONE`.
    pub const NONE: ErrorCode = ErrorCode(0);
    /// Kafka error 1, `OFFSET_OUT_OF_RANGE`.
    pub const OFFSET_OUT_OF_RANGE: ErrorCode = ErrorCode(1);
    /// Kafka error 2, `CORRUPT_MESSAGE` (retriable).
    pub const CORRUPT_MESSAGE: ErrorCode = ErrorCode(2);
    /// Kafka error 3, `UNKNOWN_TOPIC_OR_PARTITION` (retriable).
    pub const UNKNOWN_TOPIC_OR_PARTITION: ErrorCode = ErrorCode(3);
    /// Kafka error 4, `INVALID_FETCH_SIZE`.
    pub const INVALID_FETCH_SIZE: ErrorCode = ErrorCode(4);
    /// Kafka error 5, `LEADER_NOT_AVAILABLE` (retriable).
    pub const LEADER_NOT_AVAILABLE: ErrorCode = ErrorCode(5);
    /// Kafka error 6, `NOT_LEADER_OR_FOLLOWER` (retriable).
    pub const NOT_LEADER_OR_FOLLOWER: ErrorCode = ErrorCode(6);
    /// Kafka error 7, `REQUEST_TIMED_OUT` (retriable).
    pub const REQUEST_TIMED_OUT: ErrorCode = ErrorCode(7);
    /// Kafka error 8, `BROKER_NOT_AVAILABLE`.
    pub const BROKER_NOT_AVAILABLE: ErrorCode = ErrorCode(8);
    /// Kafka error 9, `REPLICA_NOT_AVAILABLE` (retriable).
    pub const REPLICA_NOT_AVAILABLE: ErrorCode = ErrorCode(9);
    /// Kafka error 10, `MESSAGE_TOO_LARGE`.
    pub const MESSAGE_TOO_LARGE: ErrorCode = ErrorCode(10);
    /// Kafka error 11, `STALE_CONTROLLER_EPOCH`.
    pub const STALE_CONTROLLER_EPOCH: ErrorCode = ErrorCode(11);
    /// Kafka error 12, `OFFSET_METADATA_TOO_LARGE`.
    pub const OFFSET_METADATA_TOO_LARGE: ErrorCode = ErrorCode(12);
    /// Kafka error 13, `NETWORK_EXCEPTION` (retriable).
    pub const NETWORK_EXCEPTION: ErrorCode = ErrorCode(13);
    /// Kafka error 14, `COORDINATOR_LOAD_IN_PROGRESS` (retriable).
    pub const COORDINATOR_LOAD_IN_PROGRESS: ErrorCode = ErrorCode(14);
    /// Kafka error 15, `COORDINATOR_NOT_AVAILABLE` (retriable).
    pub const COORDINATOR_NOT_AVAILABLE: ErrorCode = ErrorCode(15);
    /// Kafka error 16, `NOT_COORDINATOR` (retriable).
    pub const NOT_COORDINATOR: ErrorCode = ErrorCode(16);
    /// Kafka error 17, `INVALID_TOPIC_EXCEPTION`.
    pub const INVALID_TOPIC_EXCEPTION: ErrorCode = ErrorCode(17);
    /// Kafka error 18, `RECORD_LIST_TOO_LARGE`.
    pub const RECORD_LIST_TOO_LARGE: ErrorCode = ErrorCode(18);
    /// Kafka error 19, `NOT_ENOUGH_REPLICAS` (retriable).
    pub const NOT_ENOUGH_REPLICAS: ErrorCode = ErrorCode(19);
    /// Kafka error 20, `NOT_ENOUGH_REPLICAS_AFTER_APPEND` (retriable).
    pub const NOT_ENOUGH_REPLICAS_AFTER_APPEND: ErrorCode = ErrorCode(20);
    /// Kafka error 21, `INVALID_REQUIRED_ACKS`.
    pub const INVALID_REQUIRED_ACKS: ErrorCode = ErrorCode(21);
    /// Kafka error 22, `ILLEGAL_GENERATION`.
    pub const ILLEGAL_GENERATION: ErrorCode = ErrorCode(22);
    /// Kafka error 23, `INCONSISTENT_GROUP_PROTOCOL`.
    pub const INCONSISTENT_GROUP_PROTOCOL: ErrorCode = ErrorCode(23);
    /// Kafka error 24, `INVALID_GROUP_ID`.
    pub const INVALID_GROUP_ID: ErrorCode = ErrorCode(24);
    /// Kafka error 25, `UNKNOWN_MEMBER_ID`.
    pub const UNKNOWN_MEMBER_ID: ErrorCode = ErrorCode(25);
    /// Kafka error 26, `INVALID_SESSION_TIMEOUT`.
    pub const INVALID_SESSION_TIMEOUT: ErrorCode = ErrorCode(26);
    /// Kafka error 27, `REBALANCE_IN_PROGRESS`.
    pub const REBALANCE_IN_PROGRESS: ErrorCode = ErrorCode(27);
    /// Kafka error 28, `INVALID_COMMIT_OFFSET_SIZE`.
    pub const INVALID_COMMIT_OFFSET_SIZE: ErrorCode = ErrorCode(28);
    /// Kafka error 29, `TOPIC_AUTHORIZATION_FAILED`.
    pub const TOPIC_AUTHORIZATION_FAILED: ErrorCode = ErrorCode(29);
    /// Kafka error 30, `GROUP_AUTHORIZATION_FAILED`.
    pub const GROUP_AUTHORIZATION_FAILED: ErrorCode = ErrorCode(30);
    /// Kafka error 31, `CLUSTER_AUTHORIZATION_FAILED`.
    pub const CLUSTER_AUTHORIZATION_FAILED: ErrorCode = ErrorCode(31);
    /// Kafka error 32, `INVALID_TIMESTAMP`.
    pub const INVALID_TIMESTAMP: ErrorCode = ErrorCode(32);
    /// Kafka error 33, `UNSUPPORTED_SASL_MECHANISM`.
    pub const UNSUPPORTED_SASL_MECHANISM: ErrorCode = ErrorCode(33);
    /// Kafka error 34, `ILLEGAL_SASL_STATE`.
    pub const ILLEGAL_SASL_STATE: ErrorCode = ErrorCode(34);
    /// Kafka error 35, `UNSUPPORTED_VERSION`.
    pub const UNSUPPORTED_VERSION: ErrorCode = ErrorCode(35);
    /// Kafka error 36, `TOPIC_ALREADY_EXISTS`.
    pub const TOPIC_ALREADY_EXISTS: ErrorCode = ErrorCode(36);
    /// Kafka error 37, `INVALID_PARTITIONS`.
    pub const INVALID_PARTITIONS: ErrorCode = ErrorCode(37);
    /// Kafka error 38, `INVALID_REPLICATION_FACTOR`.
    pub const INVALID_REPLICATION_FACTOR: ErrorCode = ErrorCode(38);
    /// Kafka error 39, `INVALID_REPLICA_ASSIGNMENT`.
    pub const INVALID_REPLICA_ASSIGNMENT: ErrorCode = ErrorCode(39);
    /// Kafka error 40, `INVALID_CONFIG`.
    pub const INVALID_CONFIG: ErrorCode = ErrorCode(40);
    /// Kafka error 41, `NOT_CONTROLLER` (retriable).
    pub const NOT_CONTROLLER: ErrorCode = ErrorCode(41);
    /// Kafka error 42, `INVALID_REQUEST`.
    pub const INVALID_REQUEST: ErrorCode = ErrorCode(42);
    /// Kafka error 43, `UNSUPPORTED_FOR_MESSAGE_FORMAT`.
    pub const UNSUPPORTED_FOR_MESSAGE_FORMAT: ErrorCode = ErrorCode(43);
    /// Kafka error 44, `POLICY_VIOLATION`.
    pub const POLICY_VIOLATION: ErrorCode = ErrorCode(44);
    /// Kafka error 45, `OUT_OF_ORDER_SEQUENCE_NUMBER`.
    pub const OUT_OF_ORDER_SEQUENCE_NUMBER: ErrorCode = ErrorCode(45);
    /// Kafka error 46, `DUPLICATE_SEQUENCE_NUMBER`.
    pub const DUPLICATE_SEQUENCE_NUMBER: ErrorCode = ErrorCode(46);
    /// Kafka error 47, `INVALID_PRODUCER_EPOCH`.
    pub const INVALID_PRODUCER_EPOCH: ErrorCode = ErrorCode(47);
    /// Kafka error 48, `INVALID_TXN_STATE`.
    pub const INVALID_TXN_STATE: ErrorCode = ErrorCode(48);
    /// Kafka error 49, `INVALID_PRODUCER_ID_MAPPING`.
    pub const INVALID_PRODUCER_ID_MAPPING: ErrorCode = ErrorCode(49);
    /// Kafka error 50, `INVALID_TRANSACTION_TIMEOUT`.
    pub const INVALID_TRANSACTION_TIMEOUT: ErrorCode = ErrorCode(50);
    /// Kafka error 51, `CONCURRENT_TRANSACTIONS`.
    pub const CONCURRENT_TRANSACTIONS: ErrorCode = ErrorCode(51);
    /// Kafka error 52, `TRANSACTION_COORDINATOR_FENCED`.
    pub const TRANSACTION_COORDINATOR_FENCED: ErrorCode = ErrorCode(52);
    /// Kafka error 53, `TRANSACTIONAL_ID_AUTHORIZATION_FAILED`.
    pub const TRANSACTIONAL_ID_AUTHORIZATION_FAILED: ErrorCode = ErrorCode(53);
    /// Kafka error 54, `SECURITY_DISABLED`.
    pub const SECURITY_DISABLED: ErrorCode = ErrorCode(54);
    /// Kafka error 55, `OPERATION_NOT_ATTEMPTED`.
    pub const OPERATION_NOT_ATTEMPTED: ErrorCode = ErrorCode(55);
    /// Kafka error 56, `KAFKA_STORAGE_ERROR` (retriable).
    pub const KAFKA_STORAGE_ERROR: ErrorCode = ErrorCode(56);
    /// Kafka error 57, `LOG_DIR_NOT_FOUND`.
    pub const LOG_DIR_NOT_FOUND: ErrorCode = ErrorCode(57);
    /// Kafka error 58, `SASL_AUTHENTICATION_FAILED`.
    pub const SASL_AUTHENTICATION_FAILED: ErrorCode = ErrorCode(58);
    /// Kafka error 59, `UNKNOWN_PRODUCER_ID`.
    pub const UNKNOWN_PRODUCER_ID: ErrorCode = ErrorCode(59);
    /// Kafka error 60, `REASSIGNMENT_IN_PROGRESS`.
    pub const REASSIGNMENT_IN_PROGRESS: ErrorCode = ErrorCode(60);
    /// Kafka error 61, `DELEGATION_TOKEN_AUTH_DISABLED`.
    pub const DELEGATION_TOKEN_AUTH_DISABLED: ErrorCode = ErrorCode(61);
    /// Kafka error 62, `DELEGATION_TOKEN_NOT_FOUND`.
    pub const DELEGATION_TOKEN_NOT_FOUND: ErrorCode = ErrorCode(62);
    /// Kafka error 63, `DELEGATION_TOKEN_OWNER_MISMATCH`.
    pub const DELEGATION_TOKEN_OWNER_MISMATCH: ErrorCode = ErrorCode(63);
    /// Kafka error 64, `DELEGATION_TOKEN_REQUEST_NOT_ALLOWED`.
    pub const DELEGATION_TOKEN_REQUEST_NOT_ALLOWED: ErrorCode = ErrorCode(64);
    /// Kafka error 65, `DELEGATION_TOKEN_AUTHORIZATION_FAILED`.
    pub const DELEGATION_TOKEN_AUTHORIZATION_FAILED: ErrorCode = ErrorCode(65);
    /// Kafka error 66, `DELEGATION_TOKEN_EXPIRED`.
    pub const DELEGATION_TOKEN_EXPIRED: ErrorCode = ErrorCode(66);
    /// Kafka error 67, `INVALID_PRINCIPAL_TYPE`.
    pub const INVALID_PRINCIPAL_TYPE: ErrorCode = ErrorCode(67);
    /// Kafka error 68, `NON_EMPTY_GROUP`.
    pub const NON_EMPTY_GROUP: ErrorCode = ErrorCode(68);
    /// Kafka error 69, `GROUP_ID_NOT_FOUND`.
    pub const GROUP_ID_NOT_FOUND: ErrorCode = ErrorCode(69);
    /// Kafka error 70, `FETCH_SESSION_ID_NOT_FOUND` (retriable).
    pub const FETCH_SESSION_ID_NOT_FOUND: ErrorCode = ErrorCode(70);
    /// Kafka error 71, `INVALID_FETCH_SESSION_EPOCH` (retriable).
    pub const INVALID_FETCH_SESSION_EPOCH: ErrorCode = ErrorCode(71);
    /// Kafka error 72, `LISTENER_NOT_FOUND` (retriable).
    pub const LISTENER_NOT_FOUND: ErrorCode = ErrorCode(72);
    /// Kafka error 73, `TOPIC_DELETION_DISABLED`.
    pub const TOPIC_DELETION_DISABLED: ErrorCode = ErrorCode(73);
    /// Kafka error 74, `FENCED_LEADER_EPOCH` (retriable).
    pub const FENCED_LEADER_EPOCH: ErrorCode = ErrorCode(74);
    /// Kafka error 75, `UNKNOWN_LEADER_EPOCH` (retriable).
    pub const UNKNOWN_LEADER_EPOCH: ErrorCode = ErrorCode(75);
    /// Kafka error 76, `UNSUPPORTED_COMPRESSION_TYPE`.
    pub const UNSUPPORTED_COMPRESSION_TYPE: ErrorCode = ErrorCode(76);
    /// Kafka error 77, `STALE_BROKER_EPOCH`.
    pub const STALE_BROKER_EPOCH: ErrorCode = ErrorCode(77);
    /// Kafka error 78, `OFFSET_NOT_AVAILABLE` (retriable).
    pub const OFFSET_NOT_AVAILABLE: ErrorCode = ErrorCode(78);
    /// Kafka error 79, `MEMBER_ID_REQUIRED`.
    pub const MEMBER_ID_REQUIRED: ErrorCode = ErrorCode(79);
    /// Kafka error 80, `PREFERRED_LEADER_NOT_AVAILABLE` (retriable).
    pub const PREFERRED_LEADER_NOT_AVAILABLE: ErrorCode = ErrorCode(80);
    /// Kafka error 81, `GROUP_MAX_SIZE_REACHED`.
    pub const GROUP_MAX_SIZE_REACHED: ErrorCode = ErrorCode(81);
    /// Kafka error 82, `FENCED_INSTANCE_ID`.
    pub const FENCED_INSTANCE_ID: ErrorCode = ErrorCode(82);
    /// Kafka error 83, `ELIGIBLE_LEADERS_NOT_AVAILABLE` (retriable).
    pub const ELIGIBLE_LEADERS_NOT_AVAILABLE: ErrorCode = ErrorCode(83);
    /// Kafka error 84, `ELECTION_NOT_NEEDED` (retriable).
    pub const ELECTION_NOT_NEEDED: ErrorCode = ErrorCode(84);
    /// Kafka error 85, `NO_REASSIGNMENT_IN_PROGRESS`.
    pub const NO_REASSIGNMENT_IN_PROGRESS: ErrorCode = ErrorCode(85);
    /// Kafka error 86, `GROUP_SUBSCRIBED_TO_TOPIC`.
    pub const GROUP_SUBSCRIBED_TO_TOPIC: ErrorCode = ErrorCode(86);
    /// Kafka error 87, `INVALID_RECORD`.
    pub const INVALID_RECORD: ErrorCode = ErrorCode(87);
    /// Kafka error 88, `UNSTABLE_OFFSET_COMMIT` (retriable).
    pub const UNSTABLE_OFFSET_COMMIT: ErrorCode = ErrorCode(88);
    /// Kafka error 89, `THROTTLING_QUOTA_EXCEEDED` (retriable).
    pub const THROTTLING_QUOTA_EXCEEDED: ErrorCode = ErrorCode(89);
    /// Kafka error 90, `PRODUCER_FENCED`.
    pub const PRODUCER_FENCED: ErrorCode = ErrorCode(90);
    /// Kafka error 91, `RESOURCE_NOT_FOUND`.
    pub const RESOURCE_NOT_FOUND: ErrorCode = ErrorCode(91);
    /// Kafka error 92, `DUPLICATE_RESOURCE`.
    pub const DUPLICATE_RESOURCE: ErrorCode = ErrorCode(92);
    /// Kafka error 93, `UNACCEPTABLE_CREDENTIAL`.
    pub const UNACCEPTABLE_CREDENTIAL: ErrorCode = ErrorCode(93);
    /// Kafka error 94, `INCONSISTENT_VOTER_SET`.
    pub const INCONSISTENT_VOTER_SET: ErrorCode = ErrorCode(94);
    /// Kafka error 95, `INVALID_UPDATE_VERSION`.
    pub const INVALID_UPDATE_VERSION: ErrorCode = ErrorCode(95);
    /// Kafka error 96, `FEATURE_UPDATE_FAILED`.
    pub const FEATURE_UPDATE_FAILED: ErrorCode = ErrorCode(96);
    /// Kafka error 97, `PRINCIPAL_DESERIALIZATION_FAILURE`.
    pub const PRINCIPAL_DESERIALIZATION_FAILURE: ErrorCode = ErrorCode(97);
    /// Kafka error 98, `SNAPSHOT_NOT_FOUND`.
    pub const SNAPSHOT_NOT_FOUND: ErrorCode = ErrorCode(98);
    /// Kafka error 99, `POSITION_OUT_OF_RANGE`.
    pub const POSITION_OUT_OF_RANGE: ErrorCode = ErrorCode(99);
    /// Kafka error 100, `UNKNOWN_TOPIC_ID` (retriable).
    pub const UNKNOWN_TOPIC_ID: ErrorCode = ErrorCode(100);
    /// Kafka error 101, `DUPLICATE_BROKER_REGISTRATION`.
    pub const DUPLICATE_BROKER_REGISTRATION: ErrorCode = ErrorCode(101);
    /// Kafka error 102, `BROKER_ID_NOT_REGISTERED`.
    pub const BROKER_ID_NOT_REGISTERED: ErrorCode = ErrorCode(102);
    /// Kafka error 103, `INCONSISTENT_TOPIC_ID` (retriable).
    pub const INCONSISTENT_TOPIC_ID: ErrorCode = ErrorCode(103);
    /// Kafka error 104, `INCONSISTENT_CLUSTER_ID`.
    pub const INCONSISTENT_CLUSTER_ID: ErrorCode = ErrorCode(104);
    /// Kafka error 105, `TRANSACTIONAL_ID_NOT_FOUND`.
    pub const TRANSACTIONAL_ID_NOT_FOUND: ErrorCode = ErrorCode(105);
    /// Kafka error 106, `FETCH_SESSION_TOPIC_ID_ERROR` (retriable).
    pub const FETCH_SESSION_TOPIC_ID_ERROR: ErrorCode = ErrorCode(106);
    /// Kafka error 107, `INELIGIBLE_REPLICA`.
    pub const INELIGIBLE_REPLICA: ErrorCode = ErrorCode(107);
    /// Kafka error 108, `NEW_LEADER_ELECTED`.
    pub const NEW_LEADER_ELECTED: ErrorCode = ErrorCode(108);
    /// Kafka error 109, `OFFSET_MOVED_TO_TIERED_STORAGE`.
    pub const OFFSET_MOVED_TO_TIERED_STORAGE: ErrorCode = ErrorCode(109);
    /// Kafka error 110, `FENCED_MEMBER_EPOCH`.
    pub const FENCED_MEMBER_EPOCH: ErrorCode = ErrorCode(110);
    /// Kafka error 111, `UNRELEASED_INSTANCE_ID`.
    pub const UNRELEASED_INSTANCE_ID: ErrorCode = ErrorCode(111);
    /// Kafka error 112, `UNSUPPORTED_ASSIGNOR`.
    pub const UNSUPPORTED_ASSIGNOR: ErrorCode = ErrorCode(112);
    /// Kafka error 113, `STALE_MEMBER_EPOCH`.
    pub const STALE_MEMBER_EPOCH: ErrorCode = ErrorCode(113);
    /// Kafka error 114, `MISMATCHED_ENDPOINT_TYPE`.
    pub const MISMATCHED_ENDPOINT_TYPE: ErrorCode = ErrorCode(114);
    /// Kafka error 115, `UNSUPPORTED_ENDPOINT_TYPE`.
    pub const UNSUPPORTED_ENDPOINT_TYPE: ErrorCode = ErrorCode(115);
    /// Kafka error 116, `UNKNOWN_CONTROLLER_ID`.
    pub const UNKNOWN_CONTROLLER_ID: ErrorCode = ErrorCode(116);
    /// Kafka error 117, `UNKNOWN_SUBSCRIPTION_ID`.
    pub const UNKNOWN_SUBSCRIPTION_ID: ErrorCode = ErrorCode(117);
    /// Kafka error 118, `TELEMETRY_TOO_LARGE`.
    pub const TELEMETRY_TOO_LARGE: ErrorCode = ErrorCode(118);
    /// Kafka error 119, `INVALID_REGISTRATION`.
    pub const INVALID_REGISTRATION: ErrorCode = ErrorCode(119);
    /// Kafka error 120, `TRANSACTION_ABORTABLE`.
    pub const TRANSACTION_ABORTABLE: ErrorCode = ErrorCode(120);
    /// Kafka error 121, `INVALID_RECORD_STATE`.
    pub const INVALID_RECORD_STATE: ErrorCode = ErrorCode(121);
    /// Kafka error 122, `SHARE_SESSION_NOT_FOUND` (retriable).
    pub const SHARE_SESSION_NOT_FOUND: ErrorCode = ErrorCode(122);
    /// Kafka error 123, `INVALID_SHARE_SESSION_EPOCH` (retriable).
    pub const INVALID_SHARE_SESSION_EPOCH: ErrorCode = ErrorCode(123);
    /// Kafka error 124, `FENCED_STATE_EPOCH`.
    pub const FENCED_STATE_EPOCH: ErrorCode = ErrorCode(124);
    /// Kafka error 125, `INVALID_VOTER_KEY`.
    pub const INVALID_VOTER_KEY: ErrorCode = ErrorCode(125);
    /// Kafka error 126, `DUPLICATE_VOTER`.
    pub const DUPLICATE_VOTER: ErrorCode = ErrorCode(126);
    /// Kafka error 127, `VOTER_NOT_FOUND`.
    pub const VOTER_NOT_FOUND: ErrorCode = ErrorCode(127);
    /// Kafka error 128, `INVALID_REGULAR_EXPRESSION`.
    pub const INVALID_REGULAR_EXPRESSION: ErrorCode = ErrorCode(128);
    /// Kafka error 129, `REBOOTSTRAP_REQUIRED`.
    pub const REBOOTSTRAP_REQUIRED: ErrorCode = ErrorCode(129);
    /// Kafka error 130, `STREAMS_INVALID_TOPOLOGY`.
    pub const STREAMS_INVALID_TOPOLOGY: ErrorCode = ErrorCode(130);
    /// Kafka error 131, `STREAMS_INVALID_TOPOLOGY_EPOCH`.
    pub const STREAMS_INVALID_TOPOLOGY_EPOCH: ErrorCode = ErrorCode(131);
    /// Kafka error 132, `STREAMS_TOPOLOGY_FENCED`.
    pub const STREAMS_TOPOLOGY_FENCED: ErrorCode = ErrorCode(132);
    /// Kafka error 133, `SHARE_SESSION_LIMIT_REACHED` (retriable).
    pub const SHARE_SESSION_LIMIT_REACHED: ErrorCode = ErrorCode(133);

    fn entry(self) -> Option<&'static (i16, &'static str, bool)> {
        TABLE.iter().find(|e| e.0 == self.0)
    }

    /// Kafka's upper-snake name, e.g. `"UNKNOWN_TOPIC_OR_PARTITION"`; `"UNKNOWN"` for codes Kafka
    /// does not define.
    pub fn name(self) -> &'static str {
        self.entry().map(|e| e.1).unwrap_or("UNKNOWN")
    }

    /// Whether a client may retry the request (Kafka's `RetriableException` subclasses).
    pub fn is_retriable(self) -> bool {
        self.entry().map(|e| e.2).unwrap_or(false)
    }

    /// True for `NONE` (0).
    pub fn is_ok(self) -> bool {
        self.0 == 0
    }

    /// Every code Kafka defines, in numeric order.
    pub fn all() -> impl Iterator<Item = ErrorCode> {
        TABLE.iter().map(|e| ErrorCode(e.0))
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.name(), self.0)
    }
}

impl From<i16> for ErrorCode {
    fn from(v: i16) -> Self {
        ErrorCode(v)
    }
}

impl From<ErrorCode> for i16 {
    fn from(v: ErrorCode) -> Self {
        v.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn names_and_retriable() {
        assert_eq!(ErrorCode::NONE.name(), "NONE");
        assert_eq!(ErrorCode(3).name(), "UNKNOWN_TOPIC_OR_PARTITION");
        assert!(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.is_retriable());
        assert!(!ErrorCode::OFFSET_OUT_OF_RANGE.is_retriable());
        assert_eq!(ErrorCode::UNSUPPORTED_VERSION.0, 35);
        assert_eq!(ErrorCode(9999).name(), "UNKNOWN");
        assert!(!ErrorCode(9999).is_retriable());
        assert!(ErrorCode::NONE.is_ok());
        assert!(!ErrorCode::UNKNOWN_SERVER_ERROR.is_ok());
        assert_eq!(
            ErrorCode::REBALANCE_IN_PROGRESS.to_string(),
            "REBALANCE_IN_PROGRESS (27)"
        );
        assert_eq!(ErrorCode::from(36), ErrorCode::TOPIC_ALREADY_EXISTS);
        assert_eq!(i16::from(ErrorCode::NOT_CONTROLLER), 41);
    }

    #[test]
    fn codes_are_sorted_and_unique() {
        let codes: Vec<i16> = ErrorCode::all().map(|c| c.0).collect();
        let mut sorted = codes.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(codes, sorted);
        // Kafka numbers its errors densely from -1.
        assert_eq!(codes.first(), Some(&-1));
        assert_eq!(codes.len() as i16, codes.last().unwrap() + 2);
    }

    #[test]
    fn names_are_unique() {
        let mut seen = HashSet::new();
        for code in ErrorCode::all() {
            let name = code.name();
            assert_ne!(name, "UNKNOWN", "{} has no name", code.0);
            assert!(seen.insert(name), "{name} is used twice");
            assert!(
                name.bytes().all(|b| b.is_ascii_uppercase() || b == b'_'),
                "{name} is not Kafka's upper-snake form"
            );
        }
    }

    /// A sample checked by hand against Kafka's `Errors` enum
    /// (clients/src/main/java/org/apache/kafka/common/protocol/Errors.java).
    #[test]
    fn matches_kafka_numbering() {
        let kafka: &[(i16, &str, ErrorCode)] = &[
            (-1, "UNKNOWN_SERVER_ERROR", ErrorCode::UNKNOWN_SERVER_ERROR),
            (0, "NONE", ErrorCode::NONE),
            (
                3,
                "UNKNOWN_TOPIC_OR_PARTITION",
                ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
            ),
            (
                6,
                "NOT_LEADER_OR_FOLLOWER",
                ErrorCode::NOT_LEADER_OR_FOLLOWER,
            ),
            (16, "NOT_COORDINATOR", ErrorCode::NOT_COORDINATOR),
            (
                27,
                "REBALANCE_IN_PROGRESS",
                ErrorCode::REBALANCE_IN_PROGRESS,
            ),
            (36, "TOPIC_ALREADY_EXISTS", ErrorCode::TOPIC_ALREADY_EXISTS),
            (41, "NOT_CONTROLLER", ErrorCode::NOT_CONTROLLER),
            (56, "KAFKA_STORAGE_ERROR", ErrorCode::KAFKA_STORAGE_ERROR),
            (74, "FENCED_LEADER_EPOCH", ErrorCode::FENCED_LEADER_EPOCH),
            (79, "MEMBER_ID_REQUIRED", ErrorCode::MEMBER_ID_REQUIRED),
            (
                95,
                "INVALID_UPDATE_VERSION",
                ErrorCode::INVALID_UPDATE_VERSION,
            ),
            (100, "UNKNOWN_TOPIC_ID", ErrorCode::UNKNOWN_TOPIC_ID),
            (107, "INELIGIBLE_REPLICA", ErrorCode::INELIGIBLE_REPLICA),
            (108, "NEW_LEADER_ELECTED", ErrorCode::NEW_LEADER_ELECTED),
            (
                133,
                "SHARE_SESSION_LIMIT_REACHED",
                ErrorCode::SHARE_SESSION_LIMIT_REACHED,
            ),
        ];
        for &(code, name, constant) in kafka {
            assert_eq!(constant.0, code, "{name}");
            assert_eq!(ErrorCode(code).name(), name);
        }
    }
}
