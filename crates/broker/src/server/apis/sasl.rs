//! SaslHandshake (key 17) and SaslAuthenticate (key 36) once a connection is past authentication: a
//! PLAINTEXT or SSL connection, or a SASL one that already authenticated (the exchange itself is
//! `server::sasl_authenticator`). Kafka's `KafkaApis` answers both with ILLEGAL_SASL_STATE.

use protocol::error::ErrorCode;
use protocol::messages::{
    SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse,
};

/// ILLEGAL_SASL_STATE, no mechanisms.
pub fn handshake(_request: SaslHandshakeRequest) -> SaslHandshakeResponse {
    SaslHandshakeResponse {
        error_code: ErrorCode::ILLEGAL_SASL_STATE.0,
        mechanisms: Vec::new(),
    }
}

/// ILLEGAL_SASL_STATE with Kafka's message.
pub fn authenticate(_request: SaslAuthenticateRequest) -> SaslAuthenticateResponse {
    SaslAuthenticateResponse {
        error_code: ErrorCode::ILLEGAL_SASL_STATE.0,
        error_message: Some(
            "SaslAuthenticate request received after successful authentication".into(),
        ),
        ..Default::default()
    }
}
