//! ApiVersions (key 18), v0–4. Source: Kafka protocol guide; KIP-35, KIP-511 (client software name/version,
//! and answering a too-new request with a v0 body carrying error 35).

use protocol::error::ErrorCode;
use protocol::messages::api_versions_response::{
    ApiVersion, FinalizedFeatureKey, SupportedFeatureKey,
};
use protocol::messages::{ApiVersionsRequest, ApiVersionsResponse};
use protocol::ApiKey;

use super::{advertised_range, SUPPORTED_APIS};
use crate::server::context::RequestContext;

/// The `transaction.version` feature (KIP-890, KIP-1022): level 2 is transaction version 2 — the epoch
/// bumped at every commit or abort, partitions added by the leaders' verification (Produce v12,
/// TxnOffsetCommit v5) instead of the client's AddPartitionsToTxn/AddOffsetsToTxn. Supported 0–2 and
/// finalized at 2, as a new Kafka 4.x cluster; clients that predate it (librdkafka, older Java) keep
/// transaction version 1 through the older request versions, which are still served.
pub const TRANSACTION_VERSION_FEATURE: &str = "transaction.version";

/// The finalized `transaction.version` level.
pub const TRANSACTION_VERSION_LEVEL: i16 = 2;

/// The epoch of the finalized features (v3+): they never change, so 0 (clients take features from the
/// highest epoch they have seen, starting from -1).
const FINALIZED_FEATURES_EPOCH: i64 = 0;

/// Answers with every API and version range we serve, and the features (before v4 without the supported
/// features whose minimum version is 0, as Kafka since KAFKA-17492). A v3+ request with an empty or invalid client
/// software name/version gets INVALID_REQUEST (42), as Kafka does.
pub fn handle(_ctx: &RequestContext, request: ApiVersionsRequest) -> ApiVersionsResponse {
    let valid = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-')
            && s.as_bytes()[0].is_ascii_alphanumeric()
            && s.as_bytes()[s.len() - 1].is_ascii_alphanumeric()
    };
    if _ctx.api_version() >= 3
        && !(valid(&request.client_software_name) && valid(&request.client_software_version))
    {
        return response(ErrorCode::INVALID_REQUEST);
    }
    let mut response = response(ErrorCode::NONE);
    if _ctx.api_version() < 4 {
        // KAFKA-17492: clients before v4 cannot read a supported feature whose minimum version is 0.
        response.supported_features.retain(|f| f.min_version > 0);
    }
    response
}

/// The ApiVersions response body with `error`, listing our served ranges.
pub fn response(error: ErrorCode) -> ApiVersionsResponse {
    response_for(error, SUPPORTED_APIS.iter().map(|(key, _, _)| *key))
}

/// The ApiVersions response body with `error`, listing `keys` with their advertised ranges
/// ([`advertised_range`]; keys we do not serve are left out) and the `transaction.version` feature (v3+). As Kafka 4 does (KIP-896), Produce is
/// advertised from v0 because librdkafka decides whether the broker supports gzip/snappy by checking
/// for Produce v0; v0–2 requests are still refused (the connection is closed).
pub fn response_for(error: ErrorCode, keys: impl Iterator<Item = ApiKey>) -> ApiVersionsResponse {
    ApiVersionsResponse {
        error_code: error.0,
        api_keys: keys
            .filter_map(|key| {
                let (lo, hi) = advertised_range(key)?;
                let lo = if key == ApiKey::Produce { 0 } else { lo };
                Some(ApiVersion {
                    api_key: key as i16,
                    min_version: lo,
                    max_version: hi,
                    ..Default::default()
                })
            })
            .collect(),
        supported_features: vec![SupportedFeatureKey {
            name: TRANSACTION_VERSION_FEATURE.to_string(),
            min_version: 0,
            max_version: TRANSACTION_VERSION_LEVEL,
            ..Default::default()
        }],
        finalized_features_epoch: FINALIZED_FEATURES_EPOCH,
        finalized_features: vec![FinalizedFeatureKey {
            name: TRANSACTION_VERSION_FEATURE.to_string(),
            min_version_level: TRANSACTION_VERSION_LEVEL,
            max_version_level: TRANSACTION_VERSION_LEVEL,
            ..Default::default()
        }],
        ..Default::default()
    }
}
