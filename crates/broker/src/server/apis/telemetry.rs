//! GetTelemetrySubscriptions (key 71) and PushTelemetry (key 72), v0 (KIP-714). Source: Kafka's message
//! specs and `ClientMetricsManager`; the logic is [`crate::client_metrics`]'s, this is the protocol edge.
//!
//! No ACL is checked (Kafka checks none). Errors: INVALID_REQUEST (42), THROTTLING_QUOTA_EXCEEDED (89),
//! UNKNOWN_SUBSCRIPTION_ID (117), UNSUPPORTED_COMPRESSION_TYPE (76), TELEMETRY_TOO_LARGE (118),
//! INVALID_RECORD (87); an error answer carries only its code.

use protocol::error::ErrorCode;
use protocol::messages::{
    GetTelemetrySubscriptionsRequest, GetTelemetrySubscriptionsResponse, PushTelemetryRequest,
    PushTelemetryResponse,
};

use super::KafkaApis;
use crate::client_metrics::{ClientInfo, Push, TelemetryError, ACCEPTED_COMPRESSION_TYPES};
use crate::server::context::RequestContext;

/// The Kafka code of a refusal.
pub fn error_code(e: &TelemetryError) -> ErrorCode {
    match e {
        TelemetryError::InvalidRequest(_) => ErrorCode::INVALID_REQUEST,
        TelemetryError::Throttled(_) => ErrorCode::THROTTLING_QUOTA_EXCEEDED,
        TelemetryError::UnknownSubscriptionId(_) => ErrorCode::UNKNOWN_SUBSCRIPTION_ID,
        TelemetryError::UnsupportedCompressionType(_) => ErrorCode::UNSUPPORTED_COMPRESSION_TYPE,
        TelemetryError::TooLarge(_) => ErrorCode::TELEMETRY_TOO_LARGE,
        TelemetryError::InvalidRecord(_) => ErrorCode::INVALID_RECORD,
    }
}

/// What a subscription's `match` selects on, from the request and its connection.
fn client_info(ctx: &RequestContext) -> ClientInfo {
    let (software_name, software_version) = ctx
        .connection
        .client_software
        .get()
        .cloned()
        .unwrap_or_default();
    let peer = ctx.peer();
    ClientInfo {
        client_instance_id: String::new(),
        client_id: ctx.client_id().unwrap_or_default().to_string(),
        software_name,
        software_version,
        source_address: peer.map(|p| p.ip().to_string()).unwrap_or_default(),
        source_port: peer.map(|p| p.port().to_string()).unwrap_or_default(),
    }
}

/// Answers GetTelemetrySubscriptions.
pub fn get_subscriptions(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: GetTelemetrySubscriptionsRequest,
) -> GetTelemetrySubscriptionsResponse {
    let telemetry = &apis.telemetry;
    match telemetry.get_subscriptions(request.client_instance_id, client_info(ctx)) {
        Ok(answer) => GetTelemetrySubscriptionsResponse {
            client_instance_id: answer.client_instance_id,
            subscription_id: answer.subscription_id,
            accepted_compression_types: ACCEPTED_COMPRESSION_TYPES.to_vec(),
            push_interval_ms: answer.push_interval_ms,
            telemetry_max_bytes: i32::try_from(telemetry.max_bytes()).unwrap_or(i32::MAX),
            delta_temporality: false,
            requested_metrics: answer.requested_metrics,
            ..Default::default()
        },
        Err(e) => {
            tracing::debug!(error = %e, "GetTelemetrySubscriptions refused");
            GetTelemetrySubscriptionsResponse {
                error_code: error_code(&e).0,
                ..Default::default()
            }
        }
    }
}

/// Answers PushTelemetry.
pub fn push(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: PushTelemetryRequest,
) -> PushTelemetryResponse {
    let push = Push {
        client_instance_id: request.client_instance_id,
        subscription_id: request.subscription_id,
        terminating: request.terminating,
        compression_type: request.compression_type,
        metrics: &request.metrics[..],
    };
    let error_code = match apis.telemetry.push(push, client_info(ctx)) {
        Ok(()) => 0,
        Err(e) => {
            tracing::debug!(error = %e, "PushTelemetry refused");
            error_code(&e).0
        }
    };
    PushTelemetryResponse {
        error_code,
        ..Default::default()
    }
}
