//! ElectLeaders (key 43), v0–2. Source: Kafka protocol guide; KIP-183 (preferred replica election through
//! the admin API), KIP-460 (election type: 0 preferred, 1 unclean; top-level error code, v1+).
//!
//! In cluster mode the active controller decides (`QuorumControl::elect_leaders`) and the answer comes once
//! this broker's metadata shows the new leaders. Per partition: 0, UNKNOWN_TOPIC_OR_PARTITION (3),
//! PREFERRED_LEADER_NOT_AVAILABLE (80), ELIGIBLE_LEADERS_NOT_AVAILABLE (83), ELECTION_NOT_NEEDED (84). A
//! null partition list means every partition, and then partitions that needed no election are left out of
//! the answer, as Kafka does. An unknown election type is INVALID_REQUEST (42) — top-level from v1, per
//! partition in v0; so is a request naming more than 100,000 partitions. A standalone broker is the only replica and leader of each of its partitions, so every
//! election there is ELECTION_NOT_NEEDED.

use std::collections::BTreeMap;

use metadata::{ElectionResult, ElectionType};
use protocol::error::ErrorCode;
use protocol::messages::elect_leaders_request::TopicPartitions;
use protocol::messages::elect_leaders_response::{PartitionResult, ReplicaElectionResult};
use protocol::messages::{ElectLeadersRequest, ElectLeadersResponse};

use super::errors::ApiError;
use super::KafkaApis;
use crate::server::context::RequestContext;
use authorizer::AclOperation;

/// Most partitions one request may name (the answer and the controller call grow with it).
const MAX_PARTITIONS: usize = 100_000;

/// Runs the election and answers per partition, grouped by topic in request (or name) order. Kafka: ALTER on
/// the cluster; refused, every partition (and v1+ the top level) says so.
pub async fn handle(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: ElectLeadersRequest,
) -> ElectLeadersResponse {
    match ctx.authorize_cluster(AclOperation::Alter) {
        Err(d) => denied(
            ErrorCode::from(d).0,
            ctx.api_version(),
            request.topic_partitions,
        ),
        Ok(()) => elect(apis, ctx, request).await,
    }
}

async fn elect(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: ElectLeadersRequest,
) -> ElectLeadersResponse {
    let version = ctx.api_version();
    let asked: usize = request
        .topic_partitions
        .as_ref()
        .map_or(0, |tps| tps.iter().map(|t| t.partitions.len()).sum());
    if asked > MAX_PARTITIONS {
        // Bounded work per request: v1+ say so at the top; v0 has only per-partition codes, so each topic
        // gets one INVALID_REQUEST entry (partition −1).
        let message =
            format!("{asked} partitions in one ElectLeaders request; at most {MAX_PARTITIONS}");
        if version >= 1 {
            return ElectLeadersResponse {
                error_code: ErrorCode::INVALID_REQUEST.0,
                ..Default::default()
            };
        }
        return response(
            request
                .topic_partitions
                .unwrap_or_default()
                .into_iter()
                .map(|t| ElectionResult {
                    topic: t.topic,
                    partition: -1,
                    error_code: ErrorCode::INVALID_REQUEST.0,
                    message: Some(message.clone()),
                })
                .collect(),
        );
    }
    let partitions: Option<Vec<(String, i32)>> = request.topic_partitions.map(|tps| {
        tps.into_iter()
            .flat_map(|t| {
                let topic = t.topic;
                t.partitions.into_iter().map(move |p| (topic.clone(), p))
            })
            .collect()
    });
    let election = match request.election_type {
        0 => Some(ElectionType::Preferred),
        1 => Some(ElectionType::Unclean),
        _ => None,
    };
    let Some(election) = election else {
        let message = format!("unknown election type {}", request.election_type);
        if version >= 1 {
            return ElectLeadersResponse {
                error_code: ErrorCode::INVALID_REQUEST.0,
                ..Default::default()
            };
        }
        let all = partitions.unwrap_or_default();
        return response(
            all.into_iter()
                .map(|(topic, partition)| ElectionResult {
                    topic,
                    partition,
                    error_code: ErrorCode::INVALID_REQUEST.0,
                    message: Some(message.clone()),
                })
                .collect(),
        );
    };
    let results = match apis
        .topics()
        .elect_leaders(election, partitions.clone())
        .await
    {
        Ok(r) => r,
        Err(e) => {
            let e = ApiError::from(e);
            // The controller could not be reached or did not answer in time: every partition asked for
            // gets that error (v0 has no top-level code).
            if version >= 1 && partitions.is_none() {
                return ElectLeadersResponse {
                    error_code: e.code.0,
                    ..Default::default()
                };
            }
            partitions
                .unwrap_or_default()
                .into_iter()
                .map(|(topic, partition)| ElectionResult {
                    topic,
                    partition,
                    error_code: e.code.0,
                    message: Some(e.message.clone()),
                })
                .collect()
        }
    };
    response(results)
}

fn response(results: Vec<ElectionResult>) -> ElectLeadersResponse {
    // Group by topic, keeping the first appearance order of topics.
    let mut order: Vec<String> = Vec::new();
    let mut by_topic: BTreeMap<String, Vec<PartitionResult>> = BTreeMap::new();
    for r in results {
        if !by_topic.contains_key(&r.topic) {
            order.push(r.topic.clone());
        }
        by_topic.entry(r.topic).or_default().push(PartitionResult {
            partition_id: r.partition,
            error_code: r.error_code,
            error_message: r.message,
            ..Default::default()
        });
    }
    ElectLeadersResponse {
        replica_election_results: order
            .into_iter()
            .map(|topic| ReplicaElectionResult {
                partition_result: by_topic.remove(&topic).unwrap_or_default(),
                topic,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

/// The answer to an ElectLeaders without ALTER on the cluster: every partition, and from v1 the top level,
/// carry `code`.
fn denied(code: i16, version: i16, asked: Option<Vec<TopicPartitions>>) -> ElectLeadersResponse {
    let mut r = response(
        asked
            .unwrap_or_default()
            .into_iter()
            .flat_map(|t| {
                let topic = t.topic;
                t.partitions.into_iter().map(move |p| ElectionResult {
                    topic: topic.clone(),
                    partition: p,
                    error_code: code,
                    message: None,
                })
            })
            .collect(),
    );
    if version >= 1 {
        r.error_code = code;
    }
    r
}
