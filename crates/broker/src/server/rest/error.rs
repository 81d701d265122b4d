//! REST Proxy errors: `{"error_code": <int>, "message": <string>}` with the HTTP status `error_code / 100`
//! when the code has five digits (Confluent's subcodes, e.g. 40403 → 404), else the code itself (400, 415).
//! [`RestError::from_kafka`] is the one mapping of Kafka error codes to REST Proxy codes (Confluent REST
//! Proxy API v3's exception mapping: unknown topic → 40403, invalid input → 40002, authorization → 40301,
//! retriable Kafka errors → 50003, other Kafka errors → 50002).

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use protocol::error::ErrorCode;

/// Confluent's code for a topic, partition or group the cluster does not have (HTTP 404).
pub const NOT_FOUND: i32 = 40403;
/// Confluent's code for a request the broker refused as invalid (HTTP 400).
pub const BAD_REQUEST: i32 = 40002;
/// Confluent's code for a refused authorization (HTTP 403).
pub const FORBIDDEN: i32 = 40301;
/// Confluent's code for a record or key/value too large (HTTP 422).
pub const TOO_LARGE: i32 = 42201;
/// Confluent's "Kafka error" (HTTP 500).
pub const KAFKA_ERROR: i32 = 50002;
/// Confluent's "retriable Kafka error" (HTTP 500).
pub const KAFKA_RETRIABLE_ERROR: i32 = 50003;

/// One REST error response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestError {
    /// Confluent's error code: an HTTP status (400) or a status with a two-digit subcode (40403).
    pub error_code: i32,
    /// What went wrong, for a human.
    pub message: String,
}

impl RestError {
    /// An error with `error_code` and `message`.
    pub fn new(error_code: i32, message: impl Into<String>) -> RestError {
        RestError {
            error_code,
            message: message.into(),
        }
    }

    /// HTTP 404 with 40403.
    pub fn not_found(message: impl Into<String>) -> RestError {
        RestError::new(NOT_FOUND, message)
    }

    /// HTTP 400 with code 400 (a body that is not what the route takes).
    pub fn bad_request(message: impl Into<String>) -> RestError {
        RestError::new(400, message)
    }

    /// HTTP 422 with code 422 (well-formed, but a value is not acceptable).
    pub fn unprocessable(message: impl Into<String>) -> RestError {
        RestError::new(422, message)
    }

    /// An internal failure (HTTP 500, code 500).
    pub fn internal(message: impl Into<String>) -> RestError {
        RestError::new(500, message)
    }

    /// The REST error for a Kafka error code in a response (`message`: the broker's, if it gave one).
    pub fn from_kafka(code: ErrorCode, message: Option<&str>) -> RestError {
        let rest = match code {
            ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
            | ErrorCode::UNKNOWN_TOPIC_ID
            | ErrorCode::GROUP_ID_NOT_FOUND
            | ErrorCode::RESOURCE_NOT_FOUND => NOT_FOUND,
            ErrorCode::TOPIC_ALREADY_EXISTS
            | ErrorCode::INVALID_TOPIC_EXCEPTION
            | ErrorCode::INVALID_PARTITIONS
            | ErrorCode::INVALID_REPLICATION_FACTOR
            | ErrorCode::INVALID_REPLICA_ASSIGNMENT
            | ErrorCode::INVALID_CONFIG
            | ErrorCode::INVALID_REQUEST
            | ErrorCode::POLICY_VIOLATION
            | ErrorCode::INVALID_RECORD
            | ErrorCode::INVALID_TIMESTAMP
            | ErrorCode::INVALID_GROUP_ID
            | ErrorCode::TOPIC_DELETION_DISABLED
            | ErrorCode::NON_EMPTY_GROUP
            | ErrorCode::CORRUPT_MESSAGE => BAD_REQUEST,
            ErrorCode::TOPIC_AUTHORIZATION_FAILED
            | ErrorCode::GROUP_AUTHORIZATION_FAILED
            | ErrorCode::CLUSTER_AUTHORIZATION_FAILED
            | ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED => FORBIDDEN,
            ErrorCode::MESSAGE_TOO_LARGE | ErrorCode::RECORD_LIST_TOO_LARGE => TOO_LARGE,
            ErrorCode::THROTTLING_QUOTA_EXCEEDED => 429,
            c if c.is_retriable() => KAFKA_RETRIABLE_ERROR,
            _ => KAFKA_ERROR,
        };
        let message = match message {
            Some(m) if !m.is_empty() => m.to_string(),
            _ => format!("{} ({})", code.name(), code.0),
        };
        RestError::new(rest, message)
    }

    /// `Err` for a failed Kafka code, `Ok` for NONE.
    pub fn check(code: i16, message: Option<&str>) -> Result<(), RestError> {
        match ErrorCode(code) {
            ErrorCode::NONE => Ok(()),
            c => Err(RestError::from_kafka(c, message)),
        }
    }

    /// The HTTP status: `error_code / 100` for five-digit codes, else the code (500 when neither is one).
    pub fn status(&self) -> StatusCode {
        let status = match self.error_code {
            c if c >= 10_000 => c / 100,
            c => c,
        };
        u16::try_from(status)
            .ok()
            .and_then(|s| StatusCode::from_u16(s).ok())
            .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }
}

impl IntoResponse for RestError {
    fn into_response(self) -> Response {
        let body = serde_json::json!({ "error_code": self.error_code, "message": self.message });
        let status = self.status();
        (
            status,
            [(header::CONTENT_TYPE, "application/json")],
            body.to_string(),
        )
            .into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafka_codes_map_to_rest_codes_and_statuses() {
        let rest = |c: ErrorCode| RestError::from_kafka(c, None);
        let cases = [
            (ErrorCode::UNKNOWN_TOPIC_OR_PARTITION, 40403, 404),
            (ErrorCode::GROUP_ID_NOT_FOUND, 40403, 404),
            (ErrorCode::TOPIC_ALREADY_EXISTS, 40002, 400),
            (ErrorCode::INVALID_CONFIG, 40002, 400),
            (ErrorCode::INVALID_REPLICATION_FACTOR, 40002, 400),
            (ErrorCode::TOPIC_AUTHORIZATION_FAILED, 40301, 403),
            (ErrorCode::MESSAGE_TOO_LARGE, 42201, 422),
            (ErrorCode::THROTTLING_QUOTA_EXCEEDED, 429, 429),
            (ErrorCode::NOT_LEADER_OR_FOLLOWER, 50003, 500),
            (ErrorCode::UNSUPPORTED_VERSION, 50002, 500),
        ];
        for (kafka, code, status) in cases {
            let e = rest(kafka);
            assert_eq!(e.error_code, code, "{}", kafka.name());
            assert_eq!(e.status().as_u16(), status, "{}", kafka.name());
        }
        assert_eq!(
            rest(ErrorCode::INVALID_CONFIG).message,
            "INVALID_CONFIG (40)"
        );
        let given = RestError::from_kafka(ErrorCode::INVALID_CONFIG, Some("bad value"));
        assert_eq!(given.message, "bad value");
        assert!(RestError::check(0, None).is_ok());
        assert_eq!(RestError::new(415, "x").status().as_u16(), 415);
        assert_eq!(RestError::new(7, "x").status().as_u16(), 500);
    }
}
