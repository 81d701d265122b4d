//! TxnOffsetCommit (key 28), v0–5. Source: Kafka protocol guide; KIP-98 (transactional offset commits),
//! KIP-447 (v3+: the consumer group metadata — generation, member id, instance id — fences zombie producers),
//! Kafka's `KafkaApis.handleTxnOffsetCommitRequest` and `OffsetMetadataManager.commitTransactionalOffset`.
//!
//! Authorization as Kafka: WRITE on the TransactionalId (else every partition
//! TRANSACTIONAL_ID_AUTHORIZATION_FAILED, 53), READ on the group (else GROUP_AUTHORIZATION_FAILED, 30), READ
//! on each topic (else its partitions TOPIC_AUTHORIZATION_FAILED, 29). Unknown topics and partitions get
//! UNKNOWN_TOPIC_OR_PARTITION (3) without reaching the coordinator. The offsets are written in a
//! TRANSACTIONAL batch of the producer and stay pending (invisible to OffsetFetch, UNSTABLE_OFFSET_COMMIT for
//! `require_stable`) until the transaction's marker reaches the group's `__consumer_offsets` partition.
//! Group validation and write errors as [`GroupCoordinatorService::txn_offset_commit`]
//! (crate::group_coordinator) and OffsetCommit: ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID,
//! NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, UNKNOWN_SERVER_ERROR,
//! INVALID_PRODUCER_EPOCH; the answer
//! comes once the records reached the ISR (acks=all).
//!
//! The producer epoch is checked by the log append, as in Kafka: a batch of an older epoch than the
//! partition's last is refused with INVALID_PRODUCER_EPOCH (47). Before the write, the transaction
//! coordinator verifies (v0–4) or adds (v5+, transaction version 2) the group's `__consumer_offsets`
//! partition in the transaction (KIP-890; `verify_offsets_partition`); unlike a Produce, the group's write
//! itself carries no verification guard (the coordinator appends it). v6 (topic ids) is not served.
//!
//! [`GroupCoordinatorService::txn_offset_commit`]: crate::group_coordinator::GroupCoordinatorService::txn_offset_commit

use protocol::error::ErrorCode;
use protocol::messages::txn_offset_commit_response::{
    TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};
use protocol::messages::{TxnOffsetCommitRequest, TxnOffsetCommitResponse};

use super::produce_verification::ask_coordinator;
use super::KafkaApis;
use crate::config::keys;
use crate::group_coordinator::OFFSETS_TOPIC;
use crate::server::context::{Denied, RequestContext};
use authorizer::{AclOperation, ResourceType};
use coordinator::transaction::{
    txn_offset_commit_verification_error, TopicPartition, TransactionSupportedOperation,
};

/// Commits the offsets as pending for the producer's transaction; one result per requested partition, in
/// request order.
pub async fn handle(
    apis: &KafkaApis,
    ctx: &RequestContext,
    mut request: TxnOffsetCommitRequest,
) -> TxnOffsetCommitResponse {
    let id = request.transactional_id.clone();
    if let Err(d) = ctx.authorize(AclOperation::Write, ResourceType::TransactionalId, &id) {
        return all_with(&request, ErrorCode::from(d).0);
    }
    if let Err(d) = ctx.authorize(AclOperation::Read, ResourceType::Group, &request.group_id) {
        return all_with(&request, ErrorCode::from(d).0);
    }
    let (allowed, denied): (Vec<_>, Vec<_>) = std::mem::take(&mut request.topics)
        .into_iter()
        .partition(|t| ctx.is_allowed(AclOperation::Read, ResourceType::Topic, &t.name));
    request.topics = allowed;
    let denied = TxnOffsetCommitRequest {
        topics: denied,
        ..Default::default()
    };
    let mut response = commit(apis, ctx, &request).await;
    let code = ErrorCode::from(Denied(ResourceType::Topic)).0;
    response.topics.extend(all_with(&denied, code).topics);
    response
}

/// The authorized part: unknown partitions answered here, the rest by the coordinator.
async fn commit(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: &TxnOffsetCommitRequest,
) -> TxnOffsetCommitResponse {
    if request.group_id.is_empty() {
        return all_with(request, ErrorCode::INVALID_GROUP_ID.0);
    }
    if let Err(code) = apis.groups.check_coordinator(&request.group_id) {
        return all_with(request, ErrorCode::from(code).0);
    }
    let exists = |topic: &str, p: i32| {
        apis.metadata
            .topic(topic)
            .is_some_and(|m| (0..m.partitions).contains(&p))
    };
    let v3 = ctx.api_version() >= 3;
    let req = coordinator::TxnOffsetCommitRequest {
        group_id: request.group_id.clone(),
        producer_id: types::ProducerId(request.producer_id),
        producer_epoch: types::ProducerEpoch(request.producer_epoch),
        generation_id: if v3 {
            request.generation_id_or_member_epoch
        } else {
            -1
        },
        member_id: if v3 {
            request.member_id.clone()
        } else {
            String::new()
        },
        group_instance_id: request.group_instance_id.clone().filter(|_| v3),
        topics: request
            .topics
            .iter()
            .map(|t| {
                let partitions = t
                    .partitions
                    .iter()
                    .filter(|p| exists(&t.name, p.partition_index))
                    .map(|p| coordinator::OffsetCommitPartition {
                        partition_index: p.partition_index,
                        committed_offset: types::Offset(p.committed_offset),
                        committed_leader_epoch: types::LeaderEpoch(p.committed_leader_epoch),
                        committed_metadata: p.committed_metadata.clone(),
                    })
                    .collect::<Vec<_>>();
                (t.name.clone(), partitions)
            })
            .filter(|(_, ps)| !ps.is_empty())
            .collect(),
    };
    if req.topics.is_empty() {
        return all_with(request, ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.0);
    }
    if let Some(code) = verify_offsets_partition(apis, ctx, request).await {
        return all_with(request, code.0);
    }
    // Per (topic, partition) the coordinator's code; a failed write turns its successes into the write error.
    let answered: Vec<((String, i32), i16)> = match apis.groups.txn_offset_commit(&req).await {
        Ok((result, written)) => result
            .into_iter()
            .flat_map(|(t, ps)| {
                let written = &written;
                ps.into_iter().map(move |(p, code)| {
                    let code = match written {
                        Err(e) if code == ErrorCode::NONE => ErrorCode::from(*e),
                        _ => code,
                    };
                    ((t.clone(), p), code.0)
                })
            })
            .collect(),
        Err(e) => return all_with(request, ErrorCode::from(e).0),
    };
    let code_of = |topic: &str, p: i32| {
        answered
            .iter()
            .find(|((t, q), _)| t == topic && *q == p)
            .map_or(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.0, |(_, c)| *c)
    };
    respond(request, code_of)
}

/// KIP-890 for offsets: the transaction coordinator verifies (v0–4, when
/// `transaction.partition.verification.enable`) or adds (v5+, transaction version 2: the producer sends no
/// AddOffsetsToTxn) the group's `__consumer_offsets` partition in the producer's transaction. The error to
/// answer every partition with, if it failed (transient ones as COORDINATOR_NOT_AVAILABLE).
async fn verify_offsets_partition(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: &TxnOffsetCommitRequest,
) -> Option<ErrorCode> {
    let op = TransactionSupportedOperation::for_txn_offset_commit(ctx.api_version());
    if !op.supports_epoch_bump()
        && !apis
            .config
            .get(keys::TRANSACTION_PARTITION_VERIFICATION_ENABLE)
    {
        return None;
    }
    let n = apis
        .metadata
        .topic(OFFSETS_TOPIC)
        .map_or(apis.config.offsets_topic_num_partitions, |t| t.partitions);
    let tp = TopicPartition {
        topic: OFFSETS_TOPIC.to_string(),
        partition: coordinator::partition_for(&request.group_id, n.max(1)),
    };
    let producer = (
        types::ProducerId(request.producer_id),
        types::ProducerEpoch(request.producer_epoch),
    );
    let id = &request.transactional_id;
    let failed = ask_coordinator(apis, id, producer, vec![tp], op).await;
    let (_, code) = failed.into_iter().next()?;
    Some(txn_offset_commit_verification_error(code))
}

/// Every requested partition with `code`.
fn all_with(request: &TxnOffsetCommitRequest, code: i16) -> TxnOffsetCommitResponse {
    respond(request, |_, _| code)
}

/// Every requested partition with its code from `code_of(topic, partition)`.
fn respond(
    request: &TxnOffsetCommitRequest,
    code_of: impl Fn(&str, i32) -> i16,
) -> TxnOffsetCommitResponse {
    TxnOffsetCommitResponse {
        topics: request
            .topics
            .iter()
            .map(|t| TxnOffsetCommitResponseTopic {
                name: t.name.clone(),
                partitions: t
                    .partitions
                    .iter()
                    .map(|p| TxnOffsetCommitResponsePartition {
                        partition_index: p.partition_index,
                        error_code: code_of(&t.name, p.partition_index),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}
