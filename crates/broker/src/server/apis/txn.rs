//! AddPartitionsToTxn (key 24, v0–5), AddOffsetsToTxn (key 25, v0–4) and EndTxn (key 26, v0–5): the
//! transactional producer's calls to its transaction coordinator. Source: Kafka protocol guide; KIP-98,
//! KIP-664, KIP-890 (AddPartitionsToTxn v4+ batched, broker-only, with `verify_only`; EndTxn v5 returns the
//! producer id and epoch to use next under transaction version 2).
//!
//! Authorization as Kafka's `KafkaApis`: WRITE on the TransactionalId (TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
//! AddPartitionsToTxn also WRITE on each topic (TOPIC_AUTHORIZATION_FAILED; unknown topics and partition
//! indexes the topic does not have UNKNOWN_TOPIC_OR_PARTITION; when any partition fails, the others get OPERATION_NOT_ATTEMPTED and nothing is
//! added) and, from v4, CLUSTER_ACTION (CLUSTER_AUTHORIZATION_FAILED for the whole request);
//! AddOffsetsToTxn READ on the group (GROUP_AUTHORIZATION_FAILED). PRODUCER_FENCED becomes
//! INVALID_PRODUCER_EPOCH for clients too old to know it (KIP-588).

use protocol::error::ErrorCode;
use protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use protocol::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnResult, AddPartitionsToTxnTopicResult,
};
use protocol::messages::{
    AddOffsetsToTxnRequest, AddOffsetsToTxnResponse, AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse, EndTxnRequest, EndTxnResponse,
};

use super::KafkaApis;
use crate::group_coordinator::OFFSETS_TOPIC;
use crate::server::context::RequestContext;
use authorizer::{AclOperation, ResourceType};
use coordinator::transaction::{
    producer_fenced_for_version, TopicPartition, TransactionResult, TransactionVersion, TxnApi,
};
use types::{ProducerEpoch, ProducerId};

/// The transaction version a request of `api` at `version` implies: transaction version 2 from
/// AddPartitionsToTxn v5 / EndTxn v5 (KIP-890 part 2), else 0.
fn client_version(version: i16) -> TransactionVersion {
    if version >= 5 {
        TransactionVersion::TV_2
    } else {
        TransactionVersion::TV_0
    }
}

/// One transaction's topics answered with `code` for every partition.
fn all_partitions(
    topics: &[AddPartitionsToTxnTopic],
    code: impl Fn(&AddPartitionsToTxnTopic, i32) -> ErrorCode,
) -> Vec<AddPartitionsToTxnTopicResult> {
    topics
        .iter()
        .map(|t| AddPartitionsToTxnTopicResult {
            name: t.name.clone(),
            results_by_partition: t
                .partitions
                .iter()
                .map(|p| AddPartitionsToTxnPartitionResult {
                    partition_index: *p,
                    partition_error_code: code(t, *p).0,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        })
        .collect()
}

/// One transaction of an AddPartitionsToTxn request (v0–3's fields, or a v4+ entry).
struct TxnEntry {
    transactional_id: String,
    producer: (ProducerId, ProducerEpoch),
    verify_only: bool,
    topics: Vec<AddPartitionsToTxnTopic>,
}

/// AddPartitionsToTxn, both forms.
pub async fn add_partitions(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: AddPartitionsToTxnRequest,
) -> AddPartitionsToTxnResponse {
    let version = ctx.api_version();
    if version < 4 {
        let entry = TxnEntry {
            transactional_id: request.v3_and_below_transactional_id,
            producer: (
                ProducerId(request.v3_and_below_producer_id),
                ProducerEpoch(request.v3_and_below_producer_epoch),
            ),
            verify_only: false,
            topics: request.v3_and_below_topics,
        };
        let topics = add_one(apis, ctx, entry, version).await;
        return AddPartitionsToTxnResponse {
            results_by_topic_v3_and_below: topics,
            ..Default::default()
        };
    }
    if let Err(d) = ctx.authorize_cluster(AclOperation::ClusterAction) {
        return AddPartitionsToTxnResponse {
            error_code: ErrorCode::from(d).0,
            ..Default::default()
        };
    }
    let mut results = Vec::with_capacity(request.transactions.len());
    for t in request.transactions {
        let entry = TxnEntry {
            transactional_id: t.transactional_id.clone(),
            producer: (ProducerId(t.producer_id), ProducerEpoch(t.producer_epoch)),
            verify_only: t.verify_only,
            topics: t.topics,
        };
        results.push(AddPartitionsToTxnResult {
            transactional_id: t.transactional_id,
            topic_results: add_one(apis, ctx, entry, version).await,
            ..Default::default()
        });
    }
    AddPartitionsToTxnResponse {
        results_by_transaction: results,
        ..Default::default()
    }
}

/// Authorizes and adds (or verifies) one transaction's partitions.
async fn add_one(
    apis: &KafkaApis,
    ctx: &RequestContext,
    entry: TxnEntry,
    version: i16,
) -> Vec<AddPartitionsToTxnTopicResult> {
    if version < 4 {
        let denied = ctx.authorize(
            AclOperation::Write,
            ResourceType::TransactionalId,
            &entry.transactional_id,
        );
        if let Err(d) = denied {
            return all_partitions(&entry.topics, |_, _| ErrorCode::from(d));
        }
    }
    let image = apis.metadata_cache().image();
    // Per partition, as Kafka: a partition the topic does not have is unknown too (else its marker could
    // never be written and the transaction never complete).
    let partition_error = |t: &AddPartitionsToTxnTopic, p: i32| -> Option<ErrorCode> {
        let count = image
            .topics
            .get(&t.name)
            .map_or(0, |i| i.partitions.len() as i32);
        if let Err(d) = ctx.authorize(AclOperation::Write, ResourceType::Topic, &t.name) {
            Some(ErrorCode::from(d))
        } else if !(0..count).contains(&p) {
            Some(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION)
        } else {
            None
        }
    };
    let failed = |t: &AddPartitionsToTxnTopic| {
        t.partitions
            .iter()
            .any(|p| partition_error(t, *p).is_some())
    };
    if entry.topics.iter().any(failed) {
        return all_partitions(&entry.topics, |t, p| {
            partition_error(t, p).unwrap_or(ErrorCode::OPERATION_NOT_ATTEMPTED)
        });
    }
    let partitions: Vec<TopicPartition> = entry
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(|p| TopicPartition {
                topic: t.name.clone(),
                partition: *p,
            })
        })
        .collect();
    let txns = &apis.transactions;
    if entry.verify_only {
        let verified =
            txns.verify_partitions_in_txn(&entry.transactional_id, entry.producer, &partitions);
        return all_partitions(&entry.topics, |_, _| ErrorCode::NONE)
            .into_iter()
            .map(|mut t| {
                for p in t.results_by_partition.iter_mut() {
                    let code = verified
                        .iter()
                        .find(|(tp, _)| tp.topic == t.name && tp.partition == p.partition_index)
                        .map_or(ErrorCode::NONE, |(_, c)| *c);
                    p.partition_error_code = code.0;
                }
                t
            })
            .collect();
    }
    let result = txns
        .add_partitions_to_txn(
            &entry.transactional_id,
            entry.producer,
            &partitions,
            client_version(version),
        )
        .await;
    let code = producer_fenced_for_version(result.error_code, TxnApi::AddPartitionsToTxn, version);
    all_partitions(&entry.topics, |_, _| code)
}

/// AddOffsetsToTxn: adds the group's `__consumer_offsets` partition to the transaction.
pub async fn add_offsets(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: AddOffsetsToTxnRequest,
) -> AddOffsetsToTxnResponse {
    let code = add_offsets_code(apis, ctx, &request).await;
    AddOffsetsToTxnResponse {
        error_code: code.0,
        ..Default::default()
    }
}

async fn add_offsets_code(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: &AddOffsetsToTxnRequest,
) -> ErrorCode {
    let id = &request.transactional_id;
    if let Err(d) = ctx.authorize(AclOperation::Write, ResourceType::TransactionalId, id) {
        return d.into();
    }
    if let Err(d) = ctx.authorize(AclOperation::Read, ResourceType::Group, &request.group_id) {
        return d.into();
    }
    // The markers of the transaction go to the group's partition: it must exist.
    if let Err(e) = apis.groups.ensure_offsets_topic().await {
        return e.into();
    }
    let n = apis
        .metadata
        .topic(OFFSETS_TOPIC)
        .map_or(apis.config.offsets_topic_num_partitions, |t| t.partitions);
    let offsets_partition = coordinator::partition_for(&request.group_id, n.max(1));
    let producer = (
        ProducerId(request.producer_id),
        ProducerEpoch(request.producer_epoch),
    );
    let version = ctx.api_version();
    let result = apis
        .transactions
        .add_offsets_to_txn(id, producer, offsets_partition, client_version(version))
        .await;
    producer_fenced_for_version(result.error_code, TxnApi::AddOffsetsToTxn, version)
}

/// EndTxn: commit or abort; v5 answers the producer id and epoch to use next.
pub async fn end_txn(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: EndTxnRequest,
) -> EndTxnResponse {
    let mut response = EndTxnResponse {
        producer_id: -1,
        producer_epoch: -1,
        ..Default::default()
    };
    let id = &request.transactional_id;
    if let Err(d) = ctx.authorize(AclOperation::Write, ResourceType::TransactionalId, id) {
        response.error_code = ErrorCode::from(d).0;
        return response;
    }
    let result = if request.committed {
        TransactionResult::Commit
    } else {
        TransactionResult::Abort
    };
    let version = ctx.api_version();
    let producer = (
        ProducerId(request.producer_id),
        ProducerEpoch(request.producer_epoch),
    );
    let r = apis
        .transactions
        .end_txn(id, producer, result, client_version(version))
        .await;
    response.error_code = producer_fenced_for_version(r.error_code, TxnApi::EndTxn, version).0;
    if r.error_code == ErrorCode::NONE {
        response.producer_id = r.producer_id.get();
        response.producer_epoch = r.producer_epoch.get();
    }
    response
}
