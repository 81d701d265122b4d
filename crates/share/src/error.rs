//! Typed errors of the share-partition leader and the share coordinator, each mapped to the Kafka error code
//! the broker answers with (`clients/.../common/protocol/Errors.java`).

use types::ErrorCode;

/// An error of a [`crate::SharePartition`] operation (ShareAcknowledge, or the acknowledgements piggybacked
/// on ShareFetch).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ShareError {
    /// The request is malformed: an acknowledgement batch with `first_offset > last_offset`, batches out of
    /// order or overlapping, or a `types` list that has neither one entry nor one per offset.
    /// Kafka `INVALID_REQUEST` (42).
    #[error("invalid request: {0}")]
    InvalidRequest(&'static str),
    /// `offset` is not acquired by the acknowledging member: it is below the start offset, not in flight,
    /// in another state, or acquired by another member (or its lock expired). Kafka `INVALID_RECORD_STATE`
    /// (121).
    #[error("offset {offset} is not acquired by this member")]
    InvalidRecordState {
        /// The first offending offset.
        offset: i64,
    },
}

impl ShareError {
    /// The Kafka error code of this error.
    pub fn code(&self) -> i16 {
        match self {
            ShareError::InvalidRequest(_) => ErrorCode::INVALID_REQUEST.0,
            ShareError::InvalidRecordState { .. } => ErrorCode::INVALID_RECORD_STATE.0,
        }
    }
}

/// An error of a [`crate::ShareCoordinator`] operation (the persister RPCs 83–87).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StateError {
    /// Read or write of a share-partition that was never initialized (or was deleted). Kafka answers
    /// `INVALID_REQUEST` (42), "Read/Write operation on uninitialized share partition not allowed."
    #[error("share partition is not initialized")]
    NotInitialized,
    /// The request's leader epoch is older than the stored one. Kafka `FENCED_LEADER_EPOCH` (74).
    #[error("leader epoch {requested} is older than the stored {stored}")]
    FencedLeaderEpoch {
        /// The stored leader epoch.
        stored: i32,
        /// The request's leader epoch.
        requested: i32,
    },
    /// The request's state epoch is older than the stored one. Kafka `FENCED_STATE_EPOCH` (124).
    #[error("state epoch {requested} is older than the stored {stored}")]
    FencedStateEpoch {
        /// The stored state epoch.
        stored: i32,
        /// The request's state epoch.
        requested: i32,
    },
    /// A malformed request (a negative partition index). Kafka `INVALID_REQUEST` (42).
    #[error("invalid request: {0}")]
    InvalidRequest(&'static str),
}

impl StateError {
    /// The Kafka error code of this error.
    pub fn code(&self) -> i16 {
        match self {
            StateError::NotInitialized | StateError::InvalidRequest(_) => {
                ErrorCode::INVALID_REQUEST.0
            }
            StateError::FencedLeaderEpoch { .. } => ErrorCode::FENCED_LEADER_EPOCH.0,
            StateError::FencedStateEpoch { .. } => ErrorCode::FENCED_STATE_EPOCH.0,
        }
    }
}
