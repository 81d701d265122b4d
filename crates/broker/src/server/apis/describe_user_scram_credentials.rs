//! DescribeUserScramCredentials (key 50), v0 (KIP-554): the mechanisms and iteration counts of the named
//! users' SCRAM credentials (every user's for a null or empty list), never a salt or key. Needs DESCRIBE on
//! the cluster (else CLUSTER_AUTHORIZATION_FAILED at the top level). A user named twice gets
//! DUPLICATE_RESOURCE, one without credentials RESOURCE_NOT_FOUND (Kafka's `ScramImage.describe`).

use std::collections::BTreeMap;

use authorizer::AclOperation;
use protocol::error::ErrorCode;
use protocol::messages::describe_user_scram_credentials_response::{
    CredentialInfo, DescribeUserScramCredentialsResult,
};
use protocol::messages::{
    DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse,
};

use super::errors::ApiError;
use super::KafkaApis;
use crate::server::context::RequestContext;

/// Answers from this broker's credentials (its image's in a cluster).
pub fn handle(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: DescribeUserScramCredentialsRequest,
) -> DescribeUserScramCredentialsResponse {
    if let Err(denied) = ctx.authorize_cluster(AclOperation::Describe) {
        let e = ApiError::from(denied);
        return DescribeUserScramCredentialsResponse {
            error_code: e.code.0,
            error_message: Some(e.message),
            ..Default::default()
        };
    }
    let all: BTreeMap<String, Vec<(i8, i32)>> = apis.scram.cache().describe().into_iter().collect();
    let names: Vec<String> = match request.users {
        Some(users) if !users.is_empty() => users.into_iter().map(|u| u.name).collect(),
        _ => all.keys().cloned().collect(),
    };
    let duplicates = metadata::scram::duplicate_names(names.iter().map(String::as_str));
    let mut seen = std::collections::BTreeSet::new();
    let results = names
        .iter()
        .filter(|n| seen.insert(n.as_str()))
        .map(|user| {
            let mut r = DescribeUserScramCredentialsResult {
                user: user.clone(),
                ..Default::default()
            };
            if duplicates.contains(user.as_str()) {
                r.error_code = ErrorCode::DUPLICATE_RESOURCE.0;
                r.error_message = Some(format!(
                    "Cannot describe SCRAM credentials for the same user twice in a single request: {user}"
                ));
            } else if let Some(infos) = all.get(user) {
                r.credential_infos = infos
                    .iter()
                    .map(|(mechanism, iterations)| CredentialInfo {
                        mechanism: *mechanism,
                        iterations: *iterations,
                        ..Default::default()
                    })
                    .collect();
            } else {
                r.error_code = ErrorCode::RESOURCE_NOT_FOUND.0;
                r.error_message = Some(format!(
                    "Attempt to describe a user credential that does not exist: {user}"
                ));
            }
            r
        })
        .collect();
    DescribeUserScramCredentialsResponse {
        results,
        ..Default::default()
    }
}
