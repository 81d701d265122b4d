//! UpdateFeatures (key 57), v0–2. Source: Kafka protocol guide; KIP-584 (v0), KIP-778 (upgrade type and
//! `validate_only`, v1), KIP-1108 (v2: no per-feature results).
//!
//! Each update is validated as Kafka's controller does (`FeatureControlManager`), with Kafka's messages:
//! an unknown upgrade type, a negative level, an unknown feature, a level outside the supported range
//! ([`crate::features::FEATURES`]), a downgrade without a downgrade type. Runnel's finalized levels are
//! fixed (see [`crate::features`]): an update that passes those checks but asks for a level other than the
//! current one is refused with INVALID_UPDATE_VERSION, also with `validate_only` (a dry run must not
//! promise what the real run refuses); an update to the current level succeeds and changes nothing.

use protocol::error::ErrorCode;
use protocol::messages::update_features_request::FeatureUpdateKey;
use protocol::messages::update_features_response::UpdatableFeatureResult;
use protocol::messages::{UpdateFeaturesRequest, UpdateFeaturesResponse};

use super::KafkaApis;
use crate::features;
use crate::server::context::RequestContext;
use authorizer::AclOperation;

/// Upgrade type 1, "upgrade only" (the default); 2 is a safe downgrade, 3 an unsafe one.
const UPGRADE: i8 = 1;
/// The highest upgrade type Kafka defines (unsafe downgrade).
const UNSAFE_DOWNGRADE: i8 = 3;

/// Validates every update and answers Kafka's way: one error fails the whole request (top-level code and
/// message, no per-feature results); on success v0–1 list each feature with NONE. ALTER on the cluster.
pub fn handle(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: UpdateFeaturesRequest,
) -> UpdateFeaturesResponse {
    if let Err(d) = ctx.authorize_cluster(AclOperation::Alter) {
        return UpdateFeaturesResponse {
            error_code: ErrorCode::from(d).0,
            error_message: Some("Cluster authorization failed.".to_string()),
            ..Default::default()
        };
    }
    let controller = apis.metadata_cache().controller_id().get();
    for update in &request.feature_updates {
        if let Err(reason) = check(update, controller) {
            return UpdateFeaturesResponse {
                error_code: ErrorCode::INVALID_UPDATE_VERSION.0,
                error_message: Some(format!(
                    "The update failed for all features since the following feature had an \
                     error: {reason}"
                )),
                ..Default::default()
            };
        }
    }
    UpdateFeaturesResponse {
        error_code: ErrorCode::NONE.0,
        error_message: None,
        results: request
            .feature_updates
            .into_iter()
            .map(|u| UpdatableFeatureResult {
                feature: u.feature,
                error_code: ErrorCode::NONE.0,
                error_message: Some("NONE".to_string()),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

/// One update against the feature table: `Err` is Kafka's message for why it fails (`controller` is the
/// node id Kafka names as "Local controller").
fn check(update: &FeatureUpdateKey, controller: i32) -> Result<(), String> {
    let (name, level) = (update.feature.as_str(), update.max_version_level);
    let invalid = |why: String| {
        Err(format!(
            "Invalid update version {level} for feature {name}. {why}"
        ))
    };
    if !(UPGRADE..=UNSAFE_DOWNGRADE).contains(&update.upgrade_type) {
        return invalid("The controller does not support the given upgrade type.".into());
    }
    if level < 0 {
        return invalid("A feature version cannot be less than 0.".into());
    }
    let Some(feature) = features::feature(name) else {
        return if level == 0 {
            invalid(format!("Feature {name} not found."))
        } else {
            invalid(format!(
                "Local controller {controller} does not support this feature."
            ))
        };
    };
    if level < feature.min_supported || level > feature.max_supported {
        return invalid(format!(
            "Local controller {controller} only supports versions {}-{}",
            feature.min_supported, feature.max_supported
        ));
    }
    if level < feature.finalized && update.upgrade_type == UPGRADE {
        return invalid(
            "Can't downgrade the version of this feature without setting the upgrade type to \
             either safe or unsafe downgrade."
                .into(),
        );
    }
    if level != feature.finalized {
        return invalid(format!(
            "Runnel cannot change finalized feature levels: {name} stays at {}.",
            feature.finalized
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn update(name: &str, level: i16, upgrade_type: i8) -> FeatureUpdateKey {
        FeatureUpdateKey {
            feature: name.to_string(),
            max_version_level: level,
            upgrade_type,
            ..Default::default()
        }
    }

    #[test]
    fn only_the_current_level_passes() {
        assert_eq!(check(&update("transaction.version", 2, 1), 1), Ok(()));
        assert_eq!(check(&update("group.version", 1, 2), 1), Ok(()));
        assert_eq!(check(&update("share.version", 1, 1), 1), Ok(()));
        assert_eq!(check(&update("streams.version", 0, 2), 1), Ok(()));
        let err = |u| check(&u, 1).unwrap_err();
        assert!(err(update("transaction.version", 3, 1)).ends_with("only supports versions 0-2"));
        assert!(err(update("transaction.version", 1, 1)).contains("Can't downgrade"));
        assert!(err(update("transaction.version", 1, 2)).contains("cannot change"));
        assert!(err(update("transaction.version", 2, 7)).contains("upgrade type"));
        assert!(err(update("transaction.version", -1, 1)).contains("less than 0"));
        assert!(err(update("foo.version", 1, 1)).contains("does not support this feature"));
        assert!(err(update("foo.version", 0, 2)).contains("Feature foo.version not found."));
        assert!(err(update("metadata.version", 0, 3)).contains("only supports versions 12-12"));
    }
}
