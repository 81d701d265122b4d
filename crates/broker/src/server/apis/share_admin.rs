//! The share-group offsets admin APIs (KIP-932): DescribeShareGroupOffsets (key 90, v0–1),
//! AlterShareGroupOffsets (91, v0) and DeleteShareGroupOffsets (92, v0), as `kafka-share-groups.sh`
//! `--describe --offsets`, `--reset-offsets` and `--delete-offsets` send them to the group's coordinator.
//!
//! A share group's "offsets" are its share-partitions' start offsets, kept by the share coordinator
//! ([`crate::share_coordinator`]). Describe answers each share-partition's start offset (-1 when never
//! initialized) and, from v1, its lag: the records between the start offset and the HighWatermark not yet
//! acknowledged or archived (-1 when the partition is not hosted here). Alter and delete need the group to
//! exist as a share group (GROUP_ID_NOT_FOUND) and to be empty (NON_EMPTY_GROUP); alter writes a new state
//! (state epoch + 1, nothing in flight) at the given start offset, delete removes the state; either way the
//! in-memory share-partitions of the group are dropped so that the next ShareFetch loads the new state.
//! Authorization: DESCRIBE on the group and topics (describe), READ (alter, delete), as Kafka.

use protocol::error::ErrorCode;
use protocol::messages::alter_share_group_offsets_response as alter;
use protocol::messages::delete_share_group_offsets_response as delete;
use protocol::messages::describe_share_group_offsets_response as describe;
use protocol::messages::{
    AlterShareGroupOffsetsRequest, AlterShareGroupOffsetsResponse, DeleteShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsResponse, DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsResponse,
};
use share::{DeliveryState, SharePartitionKey, ShareState};

use super::KafkaApis;
use crate::server::context::RequestContext;
use crate::share_coordinator::StoredShareState;
use authorizer::{AclOperation, ResourceType};

/// The group's share-group state: `Err(GROUP_ID_NOT_FOUND)` when it is not a share group, else whether it
/// has members. Coordinator errors (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS) pass through.
fn share_group_members(apis: &KafkaApis, group: &str) -> Result<usize, ErrorCode> {
    let described = apis
        .group_coordinator()
        .read_group(group, |c| c.describe_share_groups(&[group.to_string()]));
    match described {
        Err(e) => Err(ErrorCode::from(e)),
        Ok(d) if d[0].error_code != ErrorCode::NONE => Err(ErrorCode::GROUP_ID_NOT_FOUND),
        Ok(d) => Ok(d[0].members.len()),
    }
}

/// This broker's share coordinator, its `__share_group_state` partitions loaded, and `group`'s stored
/// share-partition states there.
async fn loaded_states(
    apis: &KafkaApis,
    group: &str,
) -> (
    std::sync::Arc<crate::share_coordinator::ShareCoordinatorService>,
    std::collections::BTreeMap<(uuid::Uuid, i32), StoredShareState>,
) {
    let coordinator = apis.shares().coordinator().clone();
    coordinator.load_all().await;
    let states = coordinator.group_states(group);
    (coordinator, states)
}

/// The records between the start offset and `high_watermark` not yet done.
fn lag(stored: &StoredShareState, high_watermark: i64) -> i64 {
    let start = stored.state.start_offset;
    let done: i64 = (stored.state.batches.iter())
        .filter(|b| b.delivery_state != DeliveryState::Available && b.first_offset >= start)
        .map(|b| b.last_offset.min(high_watermark - 1) - b.first_offset + 1)
        .filter(|n| *n > 0)
        .sum();
    (high_watermark - start - done).max(0)
}

/// DescribeShareGroupOffsets: every requested group's share-partitions (all it has state for when `topics`
/// is null).
pub async fn describe(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: DescribeShareGroupOffsetsRequest,
) -> DescribeShareGroupOffsetsResponse {
    let coordinator = apis.shares().coordinator().clone();
    coordinator.load_all().await;
    let image = apis.metadata_cache().image();
    let mut groups = Vec::new();
    for g in request.groups {
        let failed = |code: ErrorCode| describe::DescribeShareGroupOffsetsResponseGroup {
            group_id: g.group_id.clone(),
            error_code: code.0,
            ..Default::default()
        };
        if let Err(d) = ctx.authorize(AclOperation::Describe, ResourceType::Group, &g.group_id) {
            groups.push(failed(ErrorCode::from(d)));
            continue;
        }
        if let Err(code) = share_group_members(apis, &g.group_id) {
            groups.push(failed(code));
            continue;
        }
        let states = coordinator.group_states(&g.group_id);
        let wanted: Vec<(String, Vec<i32>)> = match g.topics {
            Some(topics) => (topics.into_iter())
                .map(|t| (t.topic_name, t.partitions))
                .collect(),
            None => {
                let mut by_topic: std::collections::BTreeMap<String, Vec<i32>> = Default::default();
                for (topic_id, p) in states.keys() {
                    if let Some(name) = image.topics.name_by_id(*topic_id) {
                        by_topic.entry(name.to_string()).or_default().push(*p);
                    }
                }
                by_topic.into_iter().collect()
            }
        };
        let mut topics = Vec::new();
        for (name, partitions) in wanted {
            if !ctx.is_allowed(AclOperation::Describe, ResourceType::Topic, &name) {
                continue;
            }
            let topic_id = image
                .topics
                .get(&name)
                .map(|t| t.topic_id)
                .unwrap_or_default();
            let partitions = (partitions.into_iter())
                .map(|p| {
                    let stored = states.get(&(topic_id, p));
                    let hosted = apis.shares().leader(&name, p).ok();
                    describe::DescribeShareGroupOffsetsResponsePartition {
                        partition_index: p,
                        start_offset: stored.map_or(-1, |s| s.state.start_offset),
                        leader_epoch: stored.map_or(-1, |s| s.leader_epoch),
                        lag: match (stored, hosted) {
                            (Some(s), Some(part)) => lag(s, part.high_watermark().get()),
                            _ => -1,
                        },
                        ..Default::default()
                    }
                })
                .collect();
            topics.push(describe::DescribeShareGroupOffsetsResponseTopic {
                topic_name: name,
                topic_id,
                partitions,
                ..Default::default()
            });
        }
        groups.push(describe::DescribeShareGroupOffsetsResponseGroup {
            group_id: g.group_id,
            topics,
            ..Default::default()
        });
    }
    DescribeShareGroupOffsetsResponse {
        groups,
        ..Default::default()
    }
}

/// The check shared by alter and delete: READ on the group, a share group, no members.
fn check_empty_share_group(
    apis: &KafkaApis,
    ctx: &RequestContext,
    group: &str,
) -> Result<(), ErrorCode> {
    ctx.authorize(AclOperation::Read, ResourceType::Group, group)
        .map_err(ErrorCode::from)?;
    match share_group_members(apis, group)? {
        0 => Ok(()),
        _ => Err(ErrorCode::NON_EMPTY_GROUP),
    }
}

/// AlterShareGroupOffsets: new start offsets for an empty share group.
pub async fn alter(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: AlterShareGroupOffsetsRequest,
) -> AlterShareGroupOffsetsResponse {
    if let Err(code) = check_empty_share_group(apis, ctx, &request.group_id) {
        return AlterShareGroupOffsetsResponse {
            error_code: code.0,
            ..Default::default()
        };
    }
    let shares = apis.shares();
    let (coordinator, states) = loaded_states(apis, &request.group_id).await;
    let image = apis.metadata_cache().image();
    let mut responses = Vec::new();
    for t in request.topics {
        let topic_id = image.topics.get(&t.topic_name).map(|t| t.topic_id);
        let mut partitions = Vec::new();
        for p in t.partitions {
            let code = match topic_id {
                None => ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
                Some(_)
                    if !ctx.is_allowed(AclOperation::Read, ResourceType::Topic, &t.topic_name) =>
                {
                    ErrorCode::TOPIC_AUTHORIZATION_FAILED
                }
                Some(_) if p.start_offset < -1 => ErrorCode::INVALID_REQUEST,
                Some(id) => {
                    let key =
                        SharePartitionKey::new(request.group_id.clone(), id, p.partition_index);
                    let epoch = states
                        .get(&(id, p.partition_index))
                        .map_or(0, |s| s.state.state_epoch + 1);
                    let state = ShareState {
                        state_epoch: epoch,
                        start_offset: p.start_offset.max(0),
                        batches: Vec::new(),
                    };
                    match coordinator.write(&key, -1, state).await {
                        Ok(()) => ErrorCode::NONE,
                        Err(e) => ErrorCode::from(e),
                    }
                }
            };
            partitions.push(alter::AlterShareGroupOffsetsResponsePartition {
                partition_index: p.partition_index,
                error_code: code.0,
                ..Default::default()
            });
        }
        responses.push(alter::AlterShareGroupOffsetsResponseTopic {
            topic_name: t.topic_name,
            topic_id: topic_id.unwrap_or_default(),
            partitions,
            ..Default::default()
        });
    }
    shares.forget_group(&request.group_id).await;
    AlterShareGroupOffsetsResponse {
        responses,
        ..Default::default()
    }
}

/// DeleteShareGroupOffsets: forgets an empty share group's state for whole topics.
pub async fn delete(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: DeleteShareGroupOffsetsRequest,
) -> DeleteShareGroupOffsetsResponse {
    if let Err(code) = check_empty_share_group(apis, ctx, &request.group_id) {
        return DeleteShareGroupOffsetsResponse {
            error_code: code.0,
            ..Default::default()
        };
    }
    let shares = apis.shares();
    let (coordinator, states) = loaded_states(apis, &request.group_id).await;
    let image = apis.metadata_cache().image();
    let mut responses = Vec::new();
    for t in request.topics {
        let topic_id = image.topics.get(&t.topic_name).map(|t| t.topic_id);
        let code = match topic_id {
            None => ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
            Some(_) if !ctx.is_allowed(AclOperation::Read, ResourceType::Topic, &t.topic_name) => {
                ErrorCode::TOPIC_AUTHORIZATION_FAILED
            }
            Some(id) => {
                let mut code = ErrorCode::NONE;
                for (topic, p) in states.keys().filter(|(topic, _)| *topic == id) {
                    let key = SharePartitionKey::new(request.group_id.clone(), *topic, *p);
                    if let Err(e) = coordinator.delete(&key).await {
                        code = ErrorCode::from(e);
                    }
                }
                code
            }
        };
        responses.push(delete::DeleteShareGroupOffsetsResponseTopic {
            topic_name: t.topic_name,
            topic_id: topic_id.unwrap_or_default(),
            error_code: code.0,
            ..Default::default()
        });
    }
    shares.forget_group(&request.group_id).await;
    DeleteShareGroupOffsetsResponse {
        responses,
        ..Default::default()
    }
}

/// Deletes the share-partition state of share group `group` (DeleteGroups of a share group).
pub async fn delete_group_state(apis: &KafkaApis, group: &str) {
    let shares = apis.shares();
    let (coordinator, states) = loaded_states(apis, group).await;
    for (topic, p) in states.keys() {
        let key = SharePartitionKey::new(group.to_string(), *topic, *p);
        if let Err(e) = coordinator.delete(&key).await {
            tracing::warn!(group, error = %e, "cannot delete share-partition state");
        }
    }
    shares.forget_group(group).await;
}
