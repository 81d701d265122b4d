//! The broker's layer errors: what topic changes ([`TopicError`]) and dynamic broker configs
//! ([`AlterConfigError`]) fail with. They name what went wrong, not a Kafka code: only the server edge
//! (`server::apis::errors`) turns them, and the storage, replica, controller and config errors, into the
//! (code, message) a client sees. Each variant's doc names the code it becomes there.

use metadata::ControllerError;

use crate::config::ConfigError;

/// Why a topic change (create, delete, config change, partition growth, election) failed, in either mode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TopicError {
    /// An illegal or colliding topic name (INVALID_TOPIC_EXCEPTION, 17); the message says why.
    #[error("{0}")]
    InvalidTopic(String),
    /// The topic exists already (TOPIC_ALREADY_EXISTS, 36).
    #[error("Topic '{0}' already exists.")]
    AlreadyExists(String),
    /// The topic does not exist (UNKNOWN_TOPIC_OR_PARTITION, 3).
    #[error("This server does not host this topic-partition.")]
    UnknownTopic,
    /// A partition count that is not allowed (INVALID_PARTITIONS, 37); the message says why.
    #[error("{0}")]
    InvalidPartitions(String),
    /// A replication factor that is not allowed (INVALID_REPLICATION_FACTOR, 38); the message says why.
    #[error("{0}")]
    InvalidReplicationFactor(String),
    /// A topic config override that is unknown or has a bad value (INVALID_CONFIG, 40).
    #[error(transparent)]
    InvalidConfig(#[from] ConfigError),
    /// `delete.topic.enable` is false (TOPIC_DELETION_DISABLED, 73).
    #[error("delete.topic.enable is false")]
    DeletionDisabled,
    /// The metadata file or a log could not be written (KAFKA_STORAGE_ERROR, 56).
    #[error("{0}")]
    Storage(String),
    /// The change was committed but this broker's metadata image did not show it within the bounded wait
    /// (REQUEST_TIMED_OUT, 7).
    #[error("the change was committed but this broker's metadata did not show it in time")]
    NotShownInTime,
    /// The controller refused or could not make the change; its code is passed through as it is.
    #[error(transparent)]
    Controller(#[from] ControllerError),
    /// An unexpected failure: a panicked change task, a missing controller result (UNKNOWN_SERVER_ERROR, -1).
    #[error("{0}")]
    Internal(String),
}

impl TopicError {
    /// True when the topic exists already: refused here or by the controller.
    pub fn is_already_exists(&self) -> bool {
        match self {
            TopicError::AlreadyExists(_) => true,
            TopicError::Controller(e) => e.is_topic_already_exists(),
            _ => false,
        }
    }
}

/// Why a dynamic broker config request (KIP-226) was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AlterConfigError {
    /// A key that is no broker config (INVALID_CONFIG, 40).
    #[error("Unknown broker config name: {0}")]
    UnknownKey(String),
    /// A bad resource name, a read-only or per-broker-only key, or a bad value (INVALID_REQUEST, 42); the
    /// message is Kafka's wording.
    #[error("{0}")]
    InvalidRequest(String),
    /// The dynamic config file could not be written; nothing changed (KAFKA_STORAGE_ERROR, 56).
    #[error("{0}")]
    Storage(String),
    /// The controller refused or could not make the change (cluster mode); its code is passed through.
    #[error(transparent)]
    Controller(#[from] ControllerError),
    /// The change was committed but this broker's metadata did not reach it in time (REQUEST_TIMED_OUT, 7).
    #[error(transparent)]
    NotShownInTime(#[from] MetadataLag),
    /// An unexpected failure: a panicked change task (UNKNOWN_SERVER_ERROR, -1).
    #[error("{0}")]
    Internal(String),
}

/// Why a change to the security metadata failed: a CreateAcls entry or DeleteAcls filter (KIP-140/KIP-801),
/// an AlterClientQuotas entry (KIP-546) or a whole AlterUserScramCredentials (KIP-554; its per-user refusals
/// are results, not errors). The changes take the same path — into the topic registry standalone, through
/// the controller in a cluster — so they fail the same ways.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MetadataChangeError {
    /// A binding, filter, entity, key or value Kafka refuses (INVALID_REQUEST, 42), with Kafka's message.
    #[error("{0}")]
    Invalid(String),
    /// The change could not be persisted; nothing changed (KAFKA_STORAGE_ERROR, 56).
    #[error("{0}")]
    Storage(String),
    /// The controller refused or could not make the change (cluster mode); its code is passed through.
    #[error(transparent)]
    Controller(#[from] ControllerError),
    /// Committed, but this broker's metadata did not reach it in time (REQUEST_TIMED_OUT, 7).
    #[error(transparent)]
    NotShownInTime(#[from] MetadataLag),
    /// An unexpected failure: a panicked change task (UNKNOWN_SERVER_ERROR, -1).
    #[error("{0}")]
    Internal(String),
}

/// Why a CreateAcls entry or DeleteAcls filter was refused.
pub type AclError = MetadataChangeError;
/// Why an AlterClientQuotas entry was refused.
pub type QuotaError = MetadataChangeError;
/// Why an AlterUserScramCredentials as a whole failed.
pub type CredentialError = MetadataChangeError;

/// A topic mutation refused by the client's `controller_mutation_rate` (KIP-599; THROTTLING_QUOTA_EXCEEDED,
/// 89): the client may retry after `throttle_time_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("The throttling quota has been exceeded.")]
pub struct ThrottlingQuotaExceeded {
    /// How long until the client's quota allows a mutation again (ms).
    pub throttle_time_ms: u64,
}

/// A change the controller committed at metadata offset `.0` that this broker's published image did not
/// reach within the bounded read-your-writes wait (cluster mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the change was committed at metadata offset {0} but this broker's metadata did not reach it in time")]
pub struct MetadataLag(pub i64);

impl From<MetadataLag> for TopicError {
    fn from(_: MetadataLag) -> TopicError {
        TopicError::NotShownInTime
    }
}
