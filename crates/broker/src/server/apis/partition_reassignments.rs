//! AlterPartitionReassignments (key 45), v0–1, and ListPartitionReassignments (key 46), v0. Source: Kafka's
//! message specs; KIP-455 (the APIs), KIP-860 (v1's `allow_replication_factor_change`).
//!
//! AlterPartitionReassignments needs ALTER on the cluster; the active controller decides
//! (`QuorumControl::alter_partition_reassignments`) and the answer comes once this broker's image shows the
//! outcome. A refused or failed request as a whole is answered as Kafka's `getErrorResponse` does: the
//! error at the top and on every partition named. ListPartitionReassignments needs DESCRIBE on the cluster
//! and reads this broker's metadata image (which an alteration through this broker has reached before it
//! answered); unknown topics and partitions are left out, as Kafka does. A standalone broker is the only
//! replica of everything, so a target other than itself names an unregistered broker and nothing is ever
//! being reassigned.

use std::collections::BTreeMap;

use metadata::{OngoingReassignment, Reassignment};
use protocol::error::ErrorCode;
use protocol::messages::alter_partition_reassignments_response::{
    ReassignablePartitionResponse, ReassignableTopicResponse,
};
use protocol::messages::list_partition_reassignments_response::{
    OngoingPartitionReassignment, OngoingTopicReassignment,
};
use protocol::messages::{
    AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse,
    ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse,
};
use types::BrokerId;

use super::errors::ApiError;
use super::KafkaApis;
use crate::server::context::RequestContext;
use authorizer::AclOperation;

/// Most partitions one request may name (the controller decides them in one batch).
const MAX_PARTITIONS: usize = 100_000;

/// Starts, replaces or cancels the reassignments named, one answer per partition in request order.
pub async fn alter(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: AlterPartitionReassignmentsRequest,
) -> AlterPartitionReassignmentsResponse {
    let allow = request.allow_replication_factor_change;
    let reassignments: Vec<Reassignment> = (request.topics.iter())
        .flat_map(|t| {
            t.partitions.iter().map(|p| Reassignment {
                topic: t.name.clone(),
                partition: p.partition_index,
                target: p
                    .replicas
                    .as_ref()
                    .map(|r| r.iter().map(|&b| BrokerId(b)).collect()),
            })
        })
        .collect();
    if let Err(d) = ctx.authorize_cluster(AclOperation::Alter) {
        return alter_error(request, ApiError::from(d));
    }
    if reassignments.len() > MAX_PARTITIONS {
        let message = format!(
            "{} partitions in one AlterPartitionReassignments request; at most {MAX_PARTITIONS}",
            reassignments.len()
        );
        return alter_error(request, ApiError::new(ErrorCode::INVALID_REQUEST, message));
    }
    let results = match apis
        .topics()
        .alter_partition_reassignments(reassignments.clone(), allow)
        .await
    {
        Ok(results) => results,
        Err(e) => return alter_error(request, ApiError::from(e)),
    };
    let mut responses: Vec<ReassignableTopicResponse> = Vec::new();
    for (r, result) in reassignments.into_iter().zip(results) {
        let (error_code, error_message) = match result {
            Ok(()) => (ErrorCode::NONE.0, None),
            Err(e) => (e.code.0, Some(e.message)),
        };
        let partition = ReassignablePartitionResponse {
            partition_index: r.partition,
            error_code,
            error_message,
            ..Default::default()
        };
        match responses.last_mut().filter(|t| t.name == r.topic) {
            Some(t) => t.partitions.push(partition),
            None => responses.push(ReassignableTopicResponse {
                name: r.topic,
                partitions: vec![partition],
                ..Default::default()
            }),
        }
    }
    AlterPartitionReassignmentsResponse {
        allow_replication_factor_change: allow,
        error_code: ErrorCode::NONE.0,
        error_message: None,
        responses,
        ..Default::default()
    }
}

/// Kafka's `AlterPartitionReassignmentsRequest.getErrorResponse`: `e` at the top and on every partition.
fn alter_error(
    request: AlterPartitionReassignmentsRequest,
    e: ApiError,
) -> AlterPartitionReassignmentsResponse {
    let responses = (request.topics.into_iter())
        .map(|t| ReassignableTopicResponse {
            name: t.name,
            partitions: (t.partitions.iter())
                .map(|p| ReassignablePartitionResponse {
                    partition_index: p.partition_index,
                    error_code: e.code.0,
                    error_message: Some(e.message.clone()),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        })
        .collect();
    AlterPartitionReassignmentsResponse {
        allow_replication_factor_change: request.allow_replication_factor_change,
        error_code: e.code.0,
        error_message: Some(e.message),
        responses,
        ..Default::default()
    }
}

/// Lists the ongoing reassignments of the partitions named (null: every partition), grouped by topic.
pub fn list(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: ListPartitionReassignmentsRequest,
) -> ListPartitionReassignmentsResponse {
    if let Err(d) = ctx.authorize_cluster(AclOperation::Describe) {
        let e = ApiError::from(d);
        return ListPartitionReassignmentsResponse {
            error_code: e.code.0,
            error_message: Some(e.message),
            ..Default::default()
        };
    }
    let wanted: Option<Vec<(String, Vec<i32>)>> = request.topics.map(|topics| {
        (topics.into_iter())
            .map(|t| (t.name, t.partition_indexes))
            .collect()
    });
    let image = apis.metadata_cache().image();
    let ongoing = metadata::ongoing_reassignments(&image, wanted.as_deref());
    let mut by_topic: BTreeMap<String, Vec<OngoingPartitionReassignment>> = BTreeMap::new();
    for o in ongoing {
        let OngoingReassignment {
            topic,
            partition,
            replicas,
            adding_replicas,
            removing_replicas,
        } = o;
        let ids = |v: Vec<BrokerId>| v.into_iter().map(|b| b.0).collect();
        by_topic
            .entry(topic)
            .or_default()
            .push(OngoingPartitionReassignment {
                partition_index: partition,
                replicas: ids(replicas),
                adding_replicas: ids(adding_replicas),
                removing_replicas: ids(removing_replicas),
                ..Default::default()
            });
    }
    ListPartitionReassignmentsResponse {
        error_code: ErrorCode::NONE.0,
        error_message: None,
        topics: (by_topic.into_iter())
            .map(|(name, partitions)| OngoingTopicReassignment {
                name,
                partitions,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}
