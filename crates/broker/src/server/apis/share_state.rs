//! ReadShareGroupState (key 84, v0) and WriteShareGroupState (key 85, v0–1): the share coordinator's
//! inter-broker RPCs (KIP-932), sent by share-partition leaders to the broker leading the key's
//! `__share_group_state` partition ([`crate::share::persister`]). Authorization: CLUSTER_ACTION.
//!
//! Each partition of the request is answered on its own: NOT_COORDINATOR (16) when this broker does not lead
//! its `__share_group_state` partition, FENCED_LEADER_EPOCH (74), FENCED_STATE_EPOCH (124),
//! COORDINATOR_NOT_AVAILABLE (15). A key never initialized reads as start offset -1 and state epoch -1.

use authorizer::AclOperation;
use protocol::error::ErrorCode;
use protocol::messages::read_share_group_state_response as read_resp;
use protocol::messages::write_share_group_state_response as write_resp;
use protocol::messages::{
    ReadShareGroupStateRequest, ReadShareGroupStateResponse, WriteShareGroupStateRequest,
    WriteShareGroupStateResponse,
};
use share::{DeliveryState, SharePartitionKey, ShareState, StateBatch};

use super::KafkaApis;
use crate::server::context::RequestContext;

/// Answers ReadShareGroupState.
pub async fn read(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: ReadShareGroupStateRequest,
) -> ReadShareGroupStateResponse {
    let denied = ctx.authorize_cluster(AclOperation::ClusterAction).err();
    let local = apis.shares().coordinator().clone();
    let mut results = Vec::new();
    for t in request.topics {
        let mut partitions = Vec::new();
        for p in t.partitions {
            let key = SharePartitionKey::new(request.group_id.clone(), t.topic_id, p.partition);
            let mut out = read_resp::PartitionResult {
                partition: p.partition,
                state_epoch: -1,
                start_offset: -1,
                ..Default::default()
            };
            let answer = match denied {
                Some(d) => Err(ErrorCode::from(d)),
                None => local
                    .read(&key, p.leader_epoch)
                    .await
                    .map_err(ErrorCode::from),
            };
            match answer {
                Err(code) => out.error_code = code.0,
                Ok(None) => {}
                Ok(Some(stored)) => {
                    out.state_epoch = stored.state.state_epoch;
                    out.start_offset = stored.state.start_offset;
                    out.state_batches = (stored.state.batches.iter())
                        .map(|b| read_resp::StateBatch {
                            first_offset: b.first_offset,
                            last_offset: b.last_offset,
                            delivery_state: b.delivery_state.id(),
                            delivery_count: b.delivery_count,
                            ..Default::default()
                        })
                        .collect();
                }
            }
            partitions.push(out);
        }
        results.push(read_resp::ReadStateResult {
            topic_id: t.topic_id,
            partitions,
            ..Default::default()
        });
    }
    ReadShareGroupStateResponse {
        results,
        ..Default::default()
    }
}

/// Answers WriteShareGroupState (the whole state of each partition replaces the stored one). A state that
/// breaks [`ShareState::validate`] (unordered or overlapping batches, past `MAX_STATE_SPAN`, negative
/// epochs) or names a negative partition is INVALID_REQUEST and is not stored.
pub async fn write(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: WriteShareGroupStateRequest,
) -> WriteShareGroupStateResponse {
    let denied = ctx.authorize_cluster(AclOperation::ClusterAction).err();
    let local = apis.shares().coordinator().clone();
    let mut results = Vec::new();
    for t in request.topics {
        let mut partitions = Vec::new();
        for p in t.partitions {
            let key = SharePartitionKey::new(request.group_id.clone(), t.topic_id, p.partition);
            let batches: Option<Vec<StateBatch>> = (p.state_batches.iter())
                .map(|b| {
                    Some(StateBatch {
                        first_offset: b.first_offset,
                        last_offset: b.last_offset,
                        delivery_state: DeliveryState::from_id(b.delivery_state)?,
                        delivery_count: b.delivery_count,
                    })
                })
                .collect();
            let code = match (denied, batches) {
                (Some(d), _) => ErrorCode::from(d),
                (None, None) => ErrorCode::INVALID_REQUEST,
                (None, Some(batches)) => {
                    let state = ShareState {
                        state_epoch: p.state_epoch,
                        start_offset: p.start_offset,
                        batches,
                    };
                    let checked = state.validate().and_then(|()| {
                        (p.partition >= 0 && p.leader_epoch >= -1)
                            .then_some(())
                            .ok_or("a negative partition or leader epoch")
                    });
                    if let Err(why) = checked {
                        tracing::debug!(group = %request.group_id, topic_id = %t.topic_id,
                            partition = p.partition, why, "WriteShareGroupState refused");
                        partitions.push(write_resp::PartitionResult {
                            partition: p.partition,
                            error_code: ErrorCode::INVALID_REQUEST.0,
                            error_message: Some(format!("Invalid state: {why}.")),
                            ..Default::default()
                        });
                        continue;
                    }
                    match local.write(&key, p.leader_epoch, state).await {
                        Ok(()) => ErrorCode::NONE,
                        Err(e) => ErrorCode::from(e),
                    }
                }
            };
            partitions.push(write_resp::PartitionResult {
                partition: p.partition,
                error_code: code.0,
                ..Default::default()
            });
        }
        results.push(write_resp::WriteStateResult {
            topic_id: t.topic_id,
            partitions,
            ..Default::default()
        });
    }
    WriteShareGroupStateResponse {
        results,
        ..Default::default()
    }
}
