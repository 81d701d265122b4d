//! The broker's request-level error: a Kafka [`ErrorCode`] plus the message a client sees. Layer errors
//! (storage, replica, coordinator, controller, config) become an `ApiError` where a handler answers.

use protocol::error::ErrorCode;

use crate::config::ConfigError;

/// An error with the Kafka code and message a client sees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// Kafka error code.
    pub code: ErrorCode,
    /// Human-readable reason.
    pub message: String,
}

impl ApiError {
    /// Builds an error.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> ApiError {
        ApiError {
            code,
            message: message.into(),
        }
    }
}

impl From<ConfigError> for ApiError {
    fn from(e: ConfigError) -> ApiError {
        ApiError::new(ErrorCode::INVALID_CONFIG, e.to_string())
    }
}
