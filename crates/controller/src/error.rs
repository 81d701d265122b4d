//! Errors answered to brokers: a Kafka error code plus a message.

use serde::{Deserialize, Serialize};

/// Kafka error codes used by the controller (numbers as in Kafka's `Errors` / `protocol::ErrorCode`).
pub mod codes {
    /// `UNKNOWN_TOPIC_OR_PARTITION`.
    pub const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
    /// `REQUEST_TIMED_OUT`: no active controller answered within the client's deadline.
    pub const REQUEST_TIMED_OUT: i16 = 7;
    /// `INVALID_TOPIC_EXCEPTION`: illegal topic name.
    pub const INVALID_TOPIC_EXCEPTION: i16 = 17;
    /// `TOPIC_ALREADY_EXISTS`.
    pub const TOPIC_ALREADY_EXISTS: i16 = 36;
    /// `INVALID_PARTITIONS`.
    pub const INVALID_PARTITIONS: i16 = 37;
    /// `INVALID_REPLICATION_FACTOR` (also when fewer usable brokers than the replication factor).
    pub const INVALID_REPLICATION_FACTOR: i16 = 38;
    /// `INVALID_REPLICA_ASSIGNMENT`.
    pub const INVALID_REPLICA_ASSIGNMENT: i16 = 39;
    /// `INVALID_CONFIG`.
    pub const INVALID_CONFIG: i16 = 40;
    /// `NOT_CONTROLLER`: this node is not the active controller.
    pub const NOT_CONTROLLER: i16 = 41;
    /// `PREFERRED_LEADER_NOT_AVAILABLE`: the preferred replica is not in the ISR or not active (KIP-183).
    pub const PREFERRED_LEADER_NOT_AVAILABLE: i16 = 80;
    /// `ELIGIBLE_LEADERS_NOT_AVAILABLE`: no replica can become leader (KIP-460).
    pub const ELIGIBLE_LEADERS_NOT_AVAILABLE: i16 = 83;
    /// `ELECTION_NOT_NEEDED`: the partition already has the leader the election would pick (KIP-460).
    pub const ELECTION_NOT_NEEDED: i16 = 84;
    /// `INVALID_REQUEST`.
    pub const INVALID_REQUEST: i16 = 42;
    /// `FENCED_LEADER_EPOCH`.
    pub const FENCED_LEADER_EPOCH: i16 = 74;
    /// `STALE_BROKER_EPOCH`.
    pub const STALE_BROKER_EPOCH: i16 = 77;
    /// `UNKNOWN_TOPIC_ID`.
    pub const UNKNOWN_TOPIC_ID: i16 = 100;
    /// `DUPLICATE_BROKER_REGISTRATION`.
    pub const DUPLICATE_BROKER_REGISTRATION: i16 = 101;
    /// `BROKER_ID_NOT_REGISTERED`.
    pub const BROKER_ID_NOT_REGISTERED: i16 = 102;
    /// `INELIGIBLE_REPLICA` (KIP-841).
    pub const INELIGIBLE_REPLICA: i16 = 107;
    /// `INVALID_UPDATE_VERSION`: AlterPartition with a stale partition epoch (KIP-497).
    pub const INVALID_UPDATE_VERSION: i16 = 108;
    /// `UNKNOWN_SERVER_ERROR`.
    pub const UNKNOWN_SERVER_ERROR: i16 = -1;
}

/// An error answered to a broker: a Kafka error code (numbers as in `protocol::ErrorCode`, see
/// [`codes`]) and a human-readable message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("controller error {code}: {message}")]
pub struct ControllerError {
    /// Kafka error code.
    pub code: i16,
    /// Message for logs and error responses.
    pub message: String,
}

impl ControllerError {
    /// A new error with `code` and `message`.
    pub fn new(code: i16, message: impl Into<String>) -> Self {
        ControllerError {
            code,
            message: message.into(),
        }
    }
}
