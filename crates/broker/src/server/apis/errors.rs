//! The one place where layer errors become the Kafka error code and message a client sees: storage
//! ([`StorageError`]), replication ([`ReplicaError`]), topic changes ([`TopicError`], which carries the
//! controller's [`ControllerError`] through), dynamic broker configs ([`AlterConfigError`]) and topic configs
//! ([`ConfigError`]). Codes are Kafka's (protocol guide "Error Codes"); messages are Kafka's wording where
//! the Python suite or clients look at them.
//!
//! Handlers still name codes for the request validation they do themselves (UNSUPPORTED_VERSION,
//! INVALID_REQUEST for a malformed field, ...); the group coordinator's results carry the coordinator's own
//! protocol-level codes. `xtask tidy`'s `error-codes` rule keeps `ErrorCode::` out of the broker's other
//! modules.

use crate::txn_coordinator::TxnAppendError;
use metadata::ControllerError;
use protocol::error::ErrorCode;
use replica::replica_manager::ReplicaError;
use storage::StorageError;

use crate::config::ConfigError;
use crate::error::{AlterConfigError, MetadataChangeError, ThrottlingQuotaExceeded, TopicError};
use crate::fetch_session::FetchSessionError;
use crate::group_coordinator::CoordinatorError;
use crate::security::sasl::SaslError;
use crate::server::context::Denied;
use crate::txn_markers::MarkerError;
use authorizer::ResourceType;

/// An error as a client sees it: a Kafka code and a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// Kafka error code.
    pub code: ErrorCode,
    /// Human-readable reason.
    pub message: String,
}

impl ApiError {
    /// An error with `code` and `message` (a handler's own request validation).
    pub fn new(code: ErrorCode, message: impl Into<String>) -> ApiError {
        ApiError {
            code,
            message: message.into(),
        }
    }

    /// The `(error_code, error_message)` pair of a response entry; an empty message is sent as null (Kafka's
    /// `ApiError` leaves out its code's generic message).
    pub fn into_parts(self) -> (i16, Option<String>) {
        let message = (!self.message.is_empty()).then_some(self.message);
        (self.code.0, message)
    }
}

/// The Kafka code of a refused share session (KIP-932).
impl From<crate::share::sessions::ShareSessionError> for ErrorCode {
    fn from(e: crate::share::sessions::ShareSessionError) -> ErrorCode {
        use crate::share::sessions::ShareSessionError as E;
        match e {
            E::NotFound => ErrorCode::SHARE_SESSION_NOT_FOUND,
            E::InvalidEpoch => ErrorCode::INVALID_SHARE_SESSION_EPOCH,
            E::LimitReached => ErrorCode::SHARE_SESSION_LIMIT_REACHED,
        }
    }
}

/// The Kafka code of a share coordinator failure (Kafka's `ShareCoordinatorService` errors).
impl From<crate::share_coordinator::ShareCoordinatorError> for ErrorCode {
    fn from(e: crate::share_coordinator::ShareCoordinatorError) -> ErrorCode {
        use crate::share_coordinator::ShareCoordinatorError as E;
        match e {
            E::NotCoordinator => ErrorCode::NOT_COORDINATOR,
            E::LoadInProgress => ErrorCode::COORDINATOR_LOAD_IN_PROGRESS,
            E::NotAvailable => ErrorCode::COORDINATOR_NOT_AVAILABLE,
            E::FencedLeaderEpoch => ErrorCode::FENCED_LEADER_EPOCH,
            E::FencedStateEpoch => ErrorCode::FENCED_STATE_EPOCH,
        }
    }
}

/// The Kafka code of a failed share-partition operation.
impl From<crate::share::SharePartitionError> for ErrorCode {
    fn from(e: crate::share::SharePartitionError) -> ErrorCode {
        use crate::share::SharePartitionError as E;
        match e {
            E::UnknownTopicOrPartition => ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
            E::NotLeaderOrFollower => ErrorCode::NOT_LEADER_OR_FOLLOWER,
            E::Share(s) => ErrorCode(s.code()),
            E::Coordinator(c) => c.into(),
        }
    }
}

/// The Kafka code of a group coordinator runtime failure (Kafka's `CoordinatorRuntime`): loading →
/// COORDINATOR_LOAD_IN_PROGRESS (14); elsewhere or leadership lost → NOT_COORDINATOR (16); `__consumer_offsets`
/// not creatable or writable → COORDINATOR_NOT_AVAILABLE (15); records that can never fit, or an answer dropped
/// at shutdown → UNKNOWN_SERVER_ERROR (-1, not retriable, as Kafka answers them); a fenced transactional
/// producer's write → INVALID_PRODUCER_EPOCH (47).
impl From<CoordinatorError> for ErrorCode {
    fn from(e: CoordinatorError) -> ErrorCode {
        match e {
            CoordinatorError::LoadInProgress => ErrorCode::COORDINATOR_LOAD_IN_PROGRESS,
            CoordinatorError::NotCoordinator => ErrorCode::NOT_COORDINATOR,
            CoordinatorError::NotAvailable => ErrorCode::COORDINATOR_NOT_AVAILABLE,
            CoordinatorError::RecordsTooLarge | CoordinatorError::Dropped => {
                ErrorCode::UNKNOWN_SERVER_ERROR
            }
            CoordinatorError::InvalidProducerEpoch => ErrorCode::INVALID_PRODUCER_EPOCH,
        }
    }
}

/// The code of a refused incremental fetch (KIP-227): an unknown session FETCH_SESSION_ID_NOT_FOUND (70), a
/// wrong epoch INVALID_FETCH_SESSION_EPOCH (71), a change of topic-id use FETCH_SESSION_TOPIC_ID_ERROR
/// (106), a session over its partition bound INVALID_REQUEST (42).
pub fn fetch_session_error_code(e: &FetchSessionError) -> ErrorCode {
    match e {
        FetchSessionError::NotFound { .. } => ErrorCode::FETCH_SESSION_ID_NOT_FOUND,
        FetchSessionError::InvalidEpoch { .. } => ErrorCode::INVALID_FETCH_SESSION_EPOCH,
        FetchSessionError::TopicIdUsageChanged { .. } => ErrorCode::FETCH_SESSION_TOPIC_ID_ERROR,
        FetchSessionError::TooManyPartitions { .. } => ErrorCode::INVALID_REQUEST,
    }
}

/// The Kafka error code of a storage error.
pub fn storage_error_code(e: &StorageError) -> ErrorCode {
    match e {
        StorageError::OffsetOutOfRange { .. } => ErrorCode::OFFSET_OUT_OF_RANGE,
        StorageError::CorruptMessage(_) => ErrorCode::CORRUPT_MESSAGE,
        StorageError::InvalidRecord(_) | StorageError::InvalidRecords { .. } => {
            ErrorCode::INVALID_RECORD
        }
        StorageError::MessageTooLarge { .. } => ErrorCode::MESSAGE_TOO_LARGE,
        StorageError::OutOfOrderSequence(_) => ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER,
        StorageError::InvalidProducerEpoch(_) => ErrorCode::INVALID_PRODUCER_EPOCH,
        StorageError::UnknownProducerId(_) => ErrorCode::UNKNOWN_PRODUCER_ID,
        StorageError::InvalidTxnState(_) => ErrorCode::INVALID_TXN_STATE,
        StorageError::TransactionCoordinatorFenced(_) => ErrorCode::TRANSACTION_COORDINATOR_FENCED,
        StorageError::InvalidTimestamp(_) => ErrorCode::INVALID_TIMESTAMP,
        StorageError::RecordListTooLarge { .. } => ErrorCode::RECORD_LIST_TOO_LARGE,
        StorageError::DuplicateSequence(_) => ErrorCode::DUPLICATE_SEQUENCE_NUMBER,
        StorageError::InvalidTopic(_) => ErrorCode::INVALID_TOPIC_EXCEPTION,
        StorageError::InconsistentTopicId(_) => ErrorCode::INCONSISTENT_TOPIC_ID,
        StorageError::UnexpectedAppendOffset(_) | StorageError::DuplicateLog(_) => {
            ErrorCode::UNKNOWN_SERVER_ERROR
        }
        StorageError::KafkaStorage(_) | StorageError::LogOffline(_) => {
            ErrorCode::KAFKA_STORAGE_ERROR
        }
    }
}

/// The Kafka error code of a replication error.
pub fn replica_error_code(e: &ReplicaError) -> ErrorCode {
    match e {
        ReplicaError::NotLeaderOrFollower => ErrorCode::NOT_LEADER_OR_FOLLOWER,
        ReplicaError::FencedLeaderEpoch { .. } => ErrorCode::FENCED_LEADER_EPOCH,
        ReplicaError::UnknownLeaderEpoch { .. } => ErrorCode::UNKNOWN_LEADER_EPOCH,
        ReplicaError::NotEnoughReplicas { .. } => ErrorCode::NOT_ENOUGH_REPLICAS,
        ReplicaError::NotEnoughReplicasAfterAppend { .. } => {
            ErrorCode::NOT_ENOUGH_REPLICAS_AFTER_APPEND
        }
        ReplicaError::RequestTimedOut => ErrorCode::REQUEST_TIMED_OUT,
        ReplicaError::Storage(s) => storage_error_code(s),
    }
}

/// The error a transaction coordinator reports for a failed `__transaction_state` append (Kafka's
/// `TransactionStateManager` mapping, [`coordinator::transaction::append_error_to_client`]): leadership lost
/// → NOT_COORDINATOR; ISR too small or timed out → COORDINATOR_NOT_AVAILABLE; a record that cannot be
/// encoded → UNKNOWN_SERVER_ERROR.
pub fn txn_append_error_code(e: &TxnAppendError) -> ErrorCode {
    match e {
        TxnAppendError::NotCoordinator => ErrorCode::NOT_COORDINATOR,
        TxnAppendError::Encode(_) => ErrorCode::UNKNOWN_SERVER_ERROR,
        TxnAppendError::Replica(r) => {
            coordinator::transaction::append_error_to_client(replica_error_code(r))
        }
    }
}

/// The Kafka error code of a transaction marker's write: NONE when written, else the replication or
/// storage error's code, UNKNOWN_TOPIC_OR_PARTITION for a partition not hosted here, the coordinator
/// runtime's code when the offsets could not be completed.
pub fn marker_result_code(r: &Result<(), MarkerError>) -> ErrorCode {
    match r {
        Ok(()) => ErrorCode::NONE,
        Err(MarkerError::UnknownTopicOrPartition) => ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
        Err(MarkerError::Replica(e)) => replica_error_code(e),
        Err(MarkerError::Coordinator(e)) => ErrorCode::from(*e),
    }
}

/// The Kafka error code of a topic-change error (a controller error keeps the controller's code).
pub fn topic_error_code(e: &TopicError) -> ErrorCode {
    match e {
        TopicError::InvalidTopic(_) => ErrorCode::INVALID_TOPIC_EXCEPTION,
        TopicError::AlreadyExists(_) => ErrorCode::TOPIC_ALREADY_EXISTS,
        TopicError::UnknownTopic => ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
        TopicError::InvalidPartitions(_) => ErrorCode::INVALID_PARTITIONS,
        TopicError::InvalidReplicationFactor(_) => ErrorCode::INVALID_REPLICATION_FACTOR,
        TopicError::InvalidConfig(_) => ErrorCode::INVALID_CONFIG,
        TopicError::DeletionDisabled => ErrorCode::TOPIC_DELETION_DISABLED,
        TopicError::Storage(_) => ErrorCode::KAFKA_STORAGE_ERROR,
        TopicError::NotShownInTime => ErrorCode::REQUEST_TIMED_OUT,
        TopicError::Controller(c) => c.code,
        TopicError::Internal(_) => ErrorCode::UNKNOWN_SERVER_ERROR,
    }
}

/// The Kafka error code of a dynamic broker config error.
pub fn alter_config_error_code(e: &AlterConfigError) -> ErrorCode {
    match e {
        AlterConfigError::UnknownKey(_) => ErrorCode::INVALID_CONFIG,
        AlterConfigError::InvalidRequest(_) => ErrorCode::INVALID_REQUEST,
        AlterConfigError::Storage(_) => ErrorCode::KAFKA_STORAGE_ERROR,
        AlterConfigError::Controller(c) => c.code,
        AlterConfigError::NotShownInTime(_) => ErrorCode::REQUEST_TIMED_OUT,
        AlterConfigError::Internal(_) => ErrorCode::UNKNOWN_SERVER_ERROR,
    }
}

/// The Kafka code of a refused action, by the type of the resource it was refused on (KafkaApis'
/// `authHelper`): TOPIC_AUTHORIZATION_FAILED (29), GROUP_AUTHORIZATION_FAILED (30),
/// CLUSTER_AUTHORIZATION_FAILED (31), TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53),
/// DELEGATION_TOKEN_AUTHORIZATION_FAILED (65).
impl From<Denied> for ErrorCode {
    fn from(d: Denied) -> ErrorCode {
        match d.0 {
            ResourceType::Topic => ErrorCode::TOPIC_AUTHORIZATION_FAILED,
            ResourceType::Group => ErrorCode::GROUP_AUTHORIZATION_FAILED,
            ResourceType::TransactionalId => ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
            ResourceType::DelegationToken => ErrorCode::DELEGATION_TOKEN_AUTHORIZATION_FAILED,
            _ => ErrorCode::CLUSTER_AUTHORIZATION_FAILED,
        }
    }
}

impl From<Denied> for ApiError {
    fn from(d: Denied) -> ApiError {
        let code = ErrorCode::from(d);
        let message = match d.0 {
            ResourceType::Cluster => "Cluster authorization failed.".to_string(),
            ResourceType::Topic => "Topic authorization failed.".to_string(),
            ResourceType::Group => "Group authorization failed.".to_string(),
            other => format!("{other} authorization failed."),
        };
        ApiError::new(code, message)
    }
}

/// The Kafka code of a failed ACL, quota or SCRAM credential change.
pub fn metadata_change_error_code(e: &MetadataChangeError) -> ErrorCode {
    match e {
        MetadataChangeError::Invalid(_) => ErrorCode::INVALID_REQUEST,
        MetadataChangeError::Storage(_) => ErrorCode::KAFKA_STORAGE_ERROR,
        MetadataChangeError::Controller(c) => c.code,
        MetadataChangeError::NotShownInTime(_) => ErrorCode::REQUEST_TIMED_OUT,
        MetadataChangeError::Internal(_) => ErrorCode::UNKNOWN_SERVER_ERROR,
    }
}

/// The code a failed SASL exchange is answered with (KIP-152): SASL_AUTHENTICATION_FAILED, or
/// ILLEGAL_SASL_STATE for a message after the exchange ended.
pub fn sasl_error_code(e: &SaslError) -> ErrorCode {
    match e {
        SaslError::Failed(_) | SaslError::InvalidCredentials(_) => {
            ErrorCode::SASL_AUTHENTICATION_FAILED
        }
        SaslError::InvalidState(_) => ErrorCode::ILLEGAL_SASL_STATE,
    }
}

/// A failed ACL, quota or credential change: the controller's own code and message pass through.
impl From<MetadataChangeError> for ApiError {
    fn from(e: MetadataChangeError) -> ApiError {
        match e {
            MetadataChangeError::Controller(c) => ApiError::from(c),
            other => ApiError::new(metadata_change_error_code(&other), other.to_string()),
        }
    }
}

/// A mutation over the client's `controller_mutation_rate` → THROTTLING_QUOTA_EXCEEDED (89) without a message
/// (Kafka's `ApiError.fromThrowable` drops the generic one: Kafka 4.4 answers null).
impl From<ThrottlingQuotaExceeded> for ApiError {
    fn from(_: ThrottlingQuotaExceeded) -> ApiError {
        ApiError::new(ErrorCode::THROTTLING_QUOTA_EXCEEDED, "")
    }
}

/// What the ACL APIs answer without an authorizer (Kafka: SECURITY_DISABLED, "No Authorizer is configured.").
pub fn security_disabled() -> ApiError {
    ApiError::new(ErrorCode::SECURITY_DISABLED, "No Authorizer is configured.")
}

impl From<TopicError> for ApiError {
    fn from(e: TopicError) -> ApiError {
        let code = topic_error_code(&e);
        match e {
            // The controller's message as it is, not the error's Display ("controller error N: ...").
            TopicError::Controller(c) => ApiError::from(c),
            other => ApiError::new(code, other.to_string()),
        }
    }
}

impl From<ControllerError> for ApiError {
    fn from(e: ControllerError) -> ApiError {
        ApiError::new(e.code, e.message)
    }
}

impl From<AlterConfigError> for ApiError {
    fn from(e: AlterConfigError) -> ApiError {
        match e {
            // The controller's message as it is, as for topic changes.
            AlterConfigError::Controller(c) => ApiError::from(c),
            other => ApiError::new(alter_config_error_code(&other), other.to_string()),
        }
    }
}

impl From<ConfigError> for ApiError {
    fn from(e: ConfigError) -> ApiError {
        ApiError::new(ErrorCode::INVALID_CONFIG, e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The codes and messages clients saw when the layers built `ApiError`s themselves.
    #[test]
    fn topic_errors_keep_their_codes_and_messages() {
        let cases = [
            (
                TopicError::AlreadyExists("t".into()),
                ErrorCode::TOPIC_ALREADY_EXISTS,
                "Topic 't' already exists.",
            ),
            (
                TopicError::UnknownTopic,
                ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
                "This server does not host this topic-partition.",
            ),
            (
                TopicError::DeletionDisabled,
                ErrorCode::TOPIC_DELETION_DISABLED,
                "delete.topic.enable is false",
            ),
            (
                TopicError::NotShownInTime,
                ErrorCode::REQUEST_TIMED_OUT,
                "the change was committed but this broker's metadata did not show it in time",
            ),
            (
                TopicError::InvalidPartitions("p".into()),
                ErrorCode::INVALID_PARTITIONS,
                "p",
            ),
            (
                TopicError::Controller(ControllerError::new(ErrorCode::NOT_CONTROLLER, "moved")),
                ErrorCode::NOT_CONTROLLER,
                "moved",
            ),
            (
                TopicError::Controller(ControllerError::unknown("no result")),
                ErrorCode::UNKNOWN_SERVER_ERROR,
                "no result",
            ),
        ];
        for (e, code, message) in cases {
            assert_eq!(ApiError::from(e), ApiError::new(code, message));
        }
        let bad = crate::config::validate_topic_config("cleanup.policy", "nope").unwrap_err();
        let want = ApiError::new(ErrorCode::INVALID_CONFIG, bad.to_string());
        assert_eq!(ApiError::from(TopicError::from(bad.clone())), want);
        assert_eq!(ApiError::from(bad), want);
    }

    #[test]
    fn already_exists_is_recognized_from_either_mode() {
        assert!(TopicError::AlreadyExists("t".into()).is_already_exists());
        let controller = ControllerError::new(ErrorCode::TOPIC_ALREADY_EXISTS, "exists");
        assert!(TopicError::Controller(controller).is_already_exists());
        assert!(!TopicError::UnknownTopic.is_already_exists());
    }
}
