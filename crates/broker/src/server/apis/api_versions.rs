//! ApiVersions (key 18), v0–4. Source: Kafka protocol guide; KIP-35, KIP-511 (client software name/version,
//! and answering a too-new request with a v0 body carrying error 35).

use protocol::error::ErrorCode;
use protocol::messages::api_versions_response::{
    ApiVersion, FinalizedFeatureKey, SupportedFeatureKey,
};
use protocol::messages::{ApiVersionsRequest, ApiVersionsResponse};
use protocol::ApiKey;

use super::{advertised_range, SUPPORTED_APIS};
use crate::features;
use crate::server::context::RequestContext;

/// The finalized features' epoch when the handler has no metadata image (the bench sink, answers before
/// a request is parsed): 0, since Runnel's finalized levels never change (clients take features from the
/// highest epoch they have seen, starting from -1).
const FINALIZED_FEATURES_EPOCH: i64 = 0;

/// Answers with every API and version range we serve, and the features (before v4 without the supported
/// features whose minimum version is 0, as Kafka since KAFKA-17492). A v3+ request with an empty or invalid client
/// software name/version gets INVALID_REQUEST (42), as Kafka does.
///
/// `features_epoch` is the finalized features' epoch: the metadata image's offset (in a cluster the
/// metadata log offset, as Kafka answers; standalone the registry's generation).
pub fn handle(
    _ctx: &RequestContext,
    request: ApiVersionsRequest,
    features_epoch: i64,
) -> ApiVersionsResponse {
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
    if _ctx.api_version() >= 3 {
        // KIP-714's `client_software_name`/`client_software_version` selectors; the first ApiVersions wins.
        let software = (
            request.client_software_name,
            request.client_software_version,
        );
        let _ = _ctx.connection.client_software.set(software);
    }
    let mut response = response(ErrorCode::NONE);
    response.finalized_features_epoch = features_epoch.max(0);
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
/// ([`advertised_range`]; keys we do not serve are left out) and the features of [`features::FEATURES`]
/// (v3+). As Kafka 4 does (KIP-896), Produce is
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
        supported_features: features::FEATURES
            .iter()
            .map(|f| SupportedFeatureKey {
                name: f.name.to_string(),
                min_version: f.min_supported,
                max_version: f.max_supported,
                ..Default::default()
            })
            .collect(),
        finalized_features_epoch: FINALIZED_FEATURES_EPOCH,
        finalized_features: features::finalized()
            .map(|f| FinalizedFeatureKey {
                name: f.name.to_string(),
                min_version_level: f.finalized,
                max_version_level: f.finalized,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}
