//! Errors answered to brokers: a Kafka error code plus a message.

use serde::{Deserialize, Serialize};
use types::ErrorCode;

/// An error answered to a broker: a Kafka [`ErrorCode`] and a human-readable message.
///
/// Sent as JSON on the controller RPC (`{"code": 36, "message": "..."}`): the code is the plain integer, so
/// brokers and controllers of different versions understand each other.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("controller error {code}: {message}")]
pub struct ControllerError {
    /// Kafka error code.
    pub code: ErrorCode,
    /// Message for logs and error responses.
    pub message: String,
}

impl ControllerError {
    /// A new error with `code` and `message`.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ControllerError {
            code,
            message: message.into(),
        }
    }

    /// An unexpected failure (UNKNOWN_SERVER_ERROR, -1) with `message`.
    pub fn unknown(message: impl Into<String>) -> Self {
        ControllerError::new(ErrorCode::UNKNOWN_SERVER_ERROR, message)
    }

    /// True for TOPIC_ALREADY_EXISTS (36).
    pub fn is_topic_already_exists(&self) -> bool {
        self.code == ErrorCode::TOPIC_ALREADY_EXISTS
    }

    /// True when the controller no longer knows this broker's registration (STALE_BROKER_EPOCH, 77, or
    /// BROKER_ID_NOT_REGISTERED, 102): the broker must register again.
    pub fn is_stale_registration(&self) -> bool {
        self.code == ErrorCode::STALE_BROKER_EPOCH
            || self.code == ErrorCode::BROKER_ID_NOT_REGISTERED
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The JSON on the controller RPC must stay what it was when `code` was an `i16`.
    #[test]
    fn wire_format_carries_the_plain_code() {
        let e = ControllerError::new(ErrorCode::TOPIC_ALREADY_EXISTS, "exists");
        let json = serde_json::to_string(&e).unwrap();
        assert_eq!(json, r#"{"code":36,"message":"exists"}"#);
        let back: ControllerError =
            serde_json::from_str(r#"{"code":-1,"message":"old controller"}"#).unwrap();
        assert_eq!(back.code, ErrorCode::UNKNOWN_SERVER_ERROR);
        assert_eq!(back.message, "old controller");
    }
}
