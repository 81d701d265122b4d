//! AlterUserScramCredentials (key 51), v0 (KIP-554): sets or removes users' SCRAM credentials. The client
//! sends the salt and salted password; the broker derives StoredKey and ServerKey (RFC 5802) and hands the
//! changes to the credential admin of the mode (the registry standalone, the controller in a cluster), which
//! decides them as Kafka's `ScramControlManager` does. Needs ALTER on the cluster: without it every user
//! named gets CLUSTER_AUTHORIZATION_FAILED (Kafka's `getErrorResponse`).

use std::collections::BTreeSet;

use authorizer::AclOperation;
use metadata::scram::ScramDeletion;
use protocol::messages::alter_user_scram_credentials_response::AlterUserScramCredentialsResult;
use protocol::messages::{AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse};

use super::errors::{metadata_change_error_code, ApiError};
use super::KafkaApis;
use crate::scram::upsertion;
use crate::server::context::RequestContext;

/// Authorizes, derives the keys and applies the accepted changes; one result per user named.
pub async fn handle(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: AlterUserScramCredentialsRequest,
) -> AlterUserScramCredentialsResponse {
    let users = || -> BTreeSet<String> {
        let deleted = request.deletions.iter().map(|d| d.name.clone());
        deleted
            .chain(request.upsertions.iter().map(|u| u.name.clone()))
            .collect()
    };
    let fail_all = |e: ApiError| AlterUserScramCredentialsResponse {
        results: users()
            .into_iter()
            .map(|user| AlterUserScramCredentialsResult {
                user,
                error_code: e.code.0,
                error_message: Some(e.message.clone()),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    if let Err(denied) = ctx.authorize_cluster(AclOperation::Alter) {
        return fail_all(ApiError::from(denied));
    }
    let deletions: Vec<ScramDeletion> = request
        .deletions
        .iter()
        .map(|d| ScramDeletion {
            name: d.name.clone(),
            mechanism: d.mechanism,
        })
        .collect();
    let upsertions = request
        .upsertions
        .iter()
        .map(|u| {
            upsertion(
                u.name.clone(),
                u.mechanism,
                u.iterations,
                &u.salt,
                &u.salted_password,
            )
        })
        .collect();
    match apis.scram.alter(deletions, upsertions).await {
        Ok(results) => AlterUserScramCredentialsResponse {
            results: results
                .into_iter()
                .map(|r| AlterUserScramCredentialsResult {
                    user: r.user,
                    error_code: r.error_code.0,
                    error_message: r.error_message,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        },
        Err(e) => fail_all(ApiError::new(metadata_change_error_code(&e), e.to_string())),
    }
}
