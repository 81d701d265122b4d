//! FindCoordinator (key 10), v0–6. Source: Kafka protocol guide; KIP-699 (batched keys, v4+).
//!
//! A group's coordinator is the leader of its `__consumer_offsets` partition (`partition_for(group,
//! partitions)`, Kafka's hashing; on a single node, this broker). The first group lookup creates
//! `__consumer_offsets` (as Kafka does); if that fails, group keys get COORDINATOR_NOT_AVAILABLE (15).
//! A transactional id's coordinator (key type 1) is the leader of its `__transaction_state` partition
//! (Kafka's hashing, `transaction.state.log.num.partitions`); the first lookup creates the topic. Other key
//! types (share groups) get COORDINATOR_NOT_AVAILABLE (15).

use protocol::error::ErrorCode;
use protocol::messages::find_coordinator_response::Coordinator;
use protocol::messages::{FindCoordinatorRequest, FindCoordinatorResponse};

use super::errors::ApiError;
use super::KafkaApis;
use crate::group_coordinator::OFFSETS_TOPIC;
use crate::server::context::RequestContext;
use crate::txn_coordinator::TRANSACTION_STATE_TOPIC;
use authorizer::{AclOperation, ResourceType};

/// Key type of a consumer group.
const KEY_TYPE_GROUP: i8 = 0;
/// Key type of a transactional id.
const KEY_TYPE_TRANSACTION: i8 = 1;

/// The coordinator of `key`: the leader of partition `partition_of(partitions)` of `topic`, with its endpoint
/// on the client's listener, or COORDINATOR_NOT_AVAILABLE.
fn leader_of(
    apis: &KafkaApis,
    ctx: &RequestContext,
    key: String,
    topic: &str,
    partition_of: impl Fn(i32) -> i32,
) -> Coordinator {
    let image = apis.metadata_cache().image();
    let leader = image.topics.get(topic).and_then(|t| {
        let leader = t
            .partitions
            .get(&partition_of(t.partitions.len() as i32))?
            .leader;
        let b = image.brokers.get(&leader).filter(|b| !b.fenced)?;
        // Its endpoint on the client's listener (none: not available, as Kafka answers).
        let (host, port) = b.endpoint(ctx.listener_name())?;
        Some((b.broker_id, host.to_string(), port))
    });
    match leader {
        Some((id, host, port)) => Coordinator {
            key,
            node_id: id.get(),
            host,
            port: i32::from(port),
            error_code: 0,
            error_message: None,
            ..Default::default()
        },
        None => unavailable(
            key,
            ErrorCode::COORDINATOR_NOT_AVAILABLE,
            format!("the coordinator's {topic} partition has no leader yet"),
        ),
    }
}

/// A key answered with `code` and `message` and no coordinator (node -1).
fn unavailable(key: String, code: ErrorCode, message: String) -> Coordinator {
    Coordinator {
        key,
        node_id: -1,
        host: String::new(),
        port: -1,
        error_code: code.0,
        error_message: Some(message),
        ..Default::default()
    }
}

/// Answers each key with its coordinator (group keys) or COORDINATOR_NOT_AVAILABLE.
pub async fn handle(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: FindCoordinatorRequest,
) -> FindCoordinatorResponse {
    let setup_error = match request.key_type {
        KEY_TYPE_GROUP => apis
            .groups
            .ensure_offsets_topic()
            .await
            .err()
            .map(ErrorCode::from),
        KEY_TYPE_TRANSACTION => apis
            .transactions
            .ensure_topic()
            .await
            .err()
            .map(ErrorCode::from),
        _ => None,
    };
    // Kafka: DESCRIBE on the group (or transactional id) named by the key.
    let resource_type = if request.key_type == KEY_TYPE_GROUP {
        ResourceType::Group
    } else {
        ResourceType::TransactionalId
    };
    let answer = |key: String| -> Coordinator {
        if let Err(d) = ctx.authorize(AclOperation::Describe, resource_type, &key) {
            let e = ApiError::from(d);
            unavailable(key, e.code, e.message)
        } else if let Some(code) = setup_error {
            unavailable(key, code, "the coordinator is not available".into())
        } else if request.key_type == KEY_TYPE_GROUP {
            leader_of(apis, ctx, key.clone(), OFFSETS_TOPIC, |n| {
                coordinator::partition_for(&key, n)
            })
        } else if request.key_type == KEY_TYPE_TRANSACTION {
            leader_of(apis, ctx, key.clone(), TRANSACTION_STATE_TOPIC, |n| {
                coordinator::transaction::transaction_partition_for(&key, n)
            })
        } else {
            let msg = "no coordinator of this key type";
            unavailable(key, ErrorCode::COORDINATOR_NOT_AVAILABLE, msg.into())
        }
    };
    if ctx.api_version() >= 4 {
        FindCoordinatorResponse {
            coordinators: request
                .coordinator_keys
                .iter()
                .cloned()
                .map(answer)
                .collect(),
            ..Default::default()
        }
    } else {
        let c = answer(request.key.clone());
        FindCoordinatorResponse {
            error_code: c.error_code,
            error_message: c.error_message,
            node_id: c.node_id,
            host: c.host,
            port: c.port,
            ..Default::default()
        }
    }
}
