//! Produce (key 0), v3–12. Source: Kafka protocol guide; KIP-98 (idempotence), KIP-467 (record errors, v8+),
//! KIP-110 (zstd needs v7+).
//!
//! Only the partition's leader appends (else NOT_LEADER_OR_FOLLOWER, 6). acks=1 is answered after the local
//! append. acks=-1 (all): before appending, a committed ISR smaller than `min.insync.replicas` gets
//! NOT_ENOUGH_REPLICAS (19); after appending, the request waits (the produce purgatory: woken by HW
//! advances, no polling) until the HighWatermark passes the append's last offset, at most `timeout_ms`
//! (then REQUEST_TIMED_OUT, 7); reaching it with the ISR below `min.insync.replicas` gives
//! NOT_ENOUGH_REPLICAS_AFTER_APPEND (20); losing the leadership meanwhile gives NOT_LEADER_OR_FOLLOWER.
//! All partitions of a request wait together. acks=0 gets no response at all (pitfall 2); if a partition
//! fails under acks=0 the connection is closed so the client notices, as Kafka does.
//!
//! A client's Produce to an internal topic (`__consumer_offsets`, Kafka's `Topic.isInternal` list) is refused
//! with INVALID_TOPIC_EXCEPTION (17) per partition, the rest of the request proceeding (Kafka's
//! `ReplicaManager.appendToLocalLog`). Unlike Kafka, the client id `__admin_client` gets no exemption
//! (`KafkaApis.handleProduceRequest` lets it write): any client can claim a client id, so the exemption would let
//! anyone forge committed offsets. The group coordinator appends through the ReplicaManager, not here.
//!
//! Transactions (KIP-98): a request holding a transactional batch needs a `transactional_id` and WRITE on
//! that TransactionalId, else every partition is answered TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53) and
//! nothing is appended (Kafka's `KafkaApis.handleProduceRequest`); a `transactional_id` with only
//! non-transactional batches is not checked, as in Kafka. The log checks the producer's epoch and its
//! transaction state (INVALID_PRODUCER_EPOCH, INVALID_TXN_STATE, ... from `storage_error_code`) and
//! refuses a client's control batch (INVALID_RECORD). Before a transactional batch opens a transaction on a
//! partition, the transaction coordinator verifies (v3–11) or adds (v12+) the partition (KIP-890; see
//! `produce_verification`).

use std::sync::Arc;
use std::time::Duration;

use protocol::error::ErrorCode;
use protocol::messages::produce_request::PartitionProduceData;
use protocol::messages::produce_response::{
    BatchIndexAndErrorMessage, PartitionProduceResponse, TopicProduceResponse,
};
use protocol::messages::{ProduceRequest, ProduceResponse};
use protocol::record::{Compression, Records};
use storage::{LogAppendInfo, StorageError};
use tokio::time::Instant;
use types::{LeaderEpoch, Offset};

use super::errors::replica_error_code;
use super::produce_verification;
use super::KafkaApis;
use crate::observability;
use crate::server::context::{Denied, RequestContext};
use authorizer::{AclOperation, ResourceType};
use replica::replica_manager::{Partition, ReplicaError};

/// Topics only the broker writes (Kafka's `Topic.INTERNAL_TOPICS`).
const INTERNAL_TOPICS: [&str; 3] = [
    "__consumer_offsets",
    "__transaction_state",
    "__share_group_state",
];

/// Upper bound on how long an acks=all Produce waits for replication (ms), whatever the client asks.
const MAX_TIMEOUT_MS: i32 = 300_000;

/// An appended acks=all partition waiting for the HighWatermark.
struct Pending {
    /// Index of the topic in the response.
    topic: usize,
    /// Index of the partition in the topic's response.
    partition: usize,
    /// What to wait for.
    wait: ReplicationWait,
}

/// An acks=all wait: the HighWatermark must reach `required_offset` in `leader_epoch` with at least
/// `min_isr` in-sync replicas.
struct ReplicationWait {
    partition: Arc<Partition>,
    required_offset: Offset,
    leader_epoch: LeaderEpoch,
    min_isr: usize,
}

/// Why a partition's append failed: its code, message and per-batch record errors (KIP-467, v8+).
struct Failure {
    code: ErrorCode,
    message: Option<String>,
    record_errors: Vec<BatchIndexAndErrorMessage>,
}

impl Failure {
    fn code(code: ErrorCode) -> Failure {
        Failure {
            code,
            message: None,
            record_errors: Vec::new(),
        }
    }

    fn with_message(code: ErrorCode, message: &str) -> Failure {
        Failure {
            message: Some(message.to_string()),
            ..Failure::code(code)
        }
    }
}

impl From<ReplicaError> for Failure {
    fn from(e: ReplicaError) -> Failure {
        let record_errors = match &e {
            ReplicaError::Storage(StorageError::InvalidRecords {
                message,
                batch_indexes,
            }) => batch_indexes
                .iter()
                .map(|i| BatchIndexAndErrorMessage {
                    batch_index: *i,
                    batch_index_error_message: Some(message.clone()),
                    ..Default::default()
                })
                .collect(),
            _ => Vec::new(),
        };
        Failure {
            code: replica_error_code(&e),
            message: Some(e.to_string()),
            record_errors,
        }
    }
}

/// What every partition of one Produce shares.
struct ProduceContext {
    version: i16,
    acks: i16,
    /// Set when the request's transactional batches are refused (missing transactional id or no WRITE on
    /// it): every partition is answered with it.
    txn_denied: Option<ErrorCode>,
}

/// What the connection does after a Produce.
#[derive(Debug)]
pub enum Outcome {
    /// Send the response.
    Respond(ProduceResponse),
    /// acks=0 and everything was appended.
    NoResponse,
    /// acks=0 and something failed.
    Close(String),
}

/// Appends every partition's records, waits for replication under acks=all, and reports each partition's
/// outcome.
pub async fn handle(apis: &KafkaApis, ctx: &RequestContext, request: ProduceRequest) -> Outcome {
    let request_ctx = ctx;
    let mut txn_denied = check_transactional_id(request_ctx, &request);
    let mut verification = match txn_denied {
        None => produce_verification::verify(apis, request_ctx, &request).await,
        Some(_) => Default::default(),
    };
    txn_denied = txn_denied.or(verification.denied);
    let ctx = ProduceContext {
        version: ctx.api_version(),
        acks: request.acks,
        txn_denied,
    };
    let mut responses = Vec::with_capacity(request.topic_data.len());
    let mut first_error: Option<String> = None;
    let mut pending: Vec<Pending> = Vec::new();
    for (t, topic) in request.topic_data.into_iter().enumerate() {
        let known = apis.metadata.topic(&topic.name).is_some();
        // Kafka's KafkaApis.handleProduceRequest: WRITE on the topic, checked before its existence.
        let denied = request_ctx
            .authorize(AclOperation::Write, ResourceType::Topic, &topic.name)
            .err();
        let mut partitions = Vec::with_capacity(topic.partition_data.len());
        for (i, p) in topic.partition_data.into_iter().enumerate() {
            let index = p.index;
            let appended = match (ctx.txn_denied, denied) {
                (Some(code), _) => Err(Failure::code(code)),
                (None, Some(d)) => Err(Failure::code(ErrorCode::from(d))),
                (None, None) => {
                    let verified = verification.take(&topic.name, index);
                    append_partition(apis, &ctx, known, &topic.name, p, verified)
                }
            };
            let resp = match appended {
                Ok((info, wait)) => {
                    if !info.duplicate {
                        let (records, bytes) = (info.records_count as u64, info.valid_bytes as u64);
                        observability::topics::produce_appended(&topic.name, records, bytes);
                    }
                    if let Some(wait) = wait {
                        let (topic, partition) = (t, i);
                        pending.push(Pending {
                            topic,
                            partition,
                            wait,
                        });
                    }
                    appended_response(index, &info)
                }
                Err(f) => {
                    observability::topics::produce_failed(&topic.name);
                    first_error.get_or_insert_with(|| {
                        let message = f.message.as_deref().unwrap_or(f.code.name());
                        format!("{}-{index}: {message}", topic.name)
                    });
                    failed_response(index, f)
                }
            };
            partitions.push(resp);
        }
        responses.push(TopicProduceResponse {
            name: topic.name,
            partition_responses: partitions,
            ..Default::default()
        });
    }
    wait_for_replication(&pending, request.timeout_ms, &mut responses).await;
    if ctx.acks == 0 {
        return match first_error {
            Some(e) => Outcome::Close(format!("acks=0 produce failed: {e}")),
            None => Outcome::NoResponse,
        };
    }
    Outcome::Respond(ProduceResponse {
        responses,
        ..Default::default()
    })
}

/// Kafka's transactional check of a Produce (`RequestUtils.hasTransactionalRecords`): when a batch is
/// transactional, the request needs a transactional id with WRITE on it; the code to answer every
/// partition with otherwise (TRANSACTIONAL_ID_AUTHORIZATION_FAILED).
fn check_transactional_id(ctx: &RequestContext, request: &ProduceRequest) -> Option<ErrorCode> {
    let transactional = (request.topic_data.iter())
        .flat_map(|t| &t.partition_data)
        .filter_map(|p| match &p.records {
            Some(Records::Memory(b)) => Some(b),
            _ => None,
        })
        .any(|b| {
            protocol::record::batches(b)
                .map_while(Result::ok)
                .any(|batch| batch.header().is_transactional())
        });
    if !transactional {
        return None;
    }
    let Some(id) = request.transactional_id.as_deref() else {
        return Some(ErrorCode::from(Denied(ResourceType::TransactionalId)));
    };
    let refused = ctx.authorize(AclOperation::Write, ResourceType::TransactionalId, id);
    refused.err().map(ErrorCode::from)
}

/// Validates and appends one partition's records as leader. Returns the append info and, under acks=all,
/// the replication to wait for.
fn append_partition(
    apis: &KafkaApis,
    ctx: &ProduceContext,
    topic_known: bool,
    topic: &str,
    p: PartitionProduceData,
    verified: Option<produce_verification::Verified>,
) -> Result<(LogAppendInfo, Option<ReplicationWait>), Failure> {
    if !matches!(ctx.acks, -1..=1) {
        return Err(Failure::code(ErrorCode::INVALID_REQUIRED_ACKS));
    }
    let partition = apis
        .replica_manager
        .partition(topic, p.index)
        .filter(|_| topic_known)
        .ok_or(Failure::code(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION))?;
    if INTERNAL_TOPICS.contains(&topic) {
        let message = format!("clients cannot append to the internal topic {topic}");
        return Err(Failure::with_message(
            ErrorCode::INVALID_TOPIC_EXCEPTION,
            &message,
        ));
    }
    let Some(Records::Memory(records)) = p.records else {
        let code = ErrorCode::CORRUPT_MESSAGE;
        return Err(Failure::with_message(
            code,
            "produce request without records",
        ));
    };
    if ctx.version < 7 && batches_use_codec(&records, Compression::Zstd) {
        return Err(Failure::code(ErrorCode::UNSUPPORTED_COMPRESSION_TYPE));
    }
    let min_isr = if ctx.acks == -1 {
        partition.min_insync_replicas()
    } else {
        0
    };
    let rm = &apis.replica_manager;
    let (info, leader_epoch) = match verified {
        None => rm.append_to_leader(&partition, records, min_isr)?,
        Some(Ok(guard)) => rm.append_to_leader_verified(&partition, records, guard, min_isr)?,
        Some(Err((code, message))) => {
            return Err(Failure {
                message,
                ..Failure::code(code)
            })
        }
    };
    let wait = (ctx.acks == -1 && info.last_offset.get() >= 0).then(|| ReplicationWait {
        partition,
        required_offset: info.last_offset.next(),
        leader_epoch,
        min_isr,
    });
    Ok((info, wait))
}

fn appended_response(index: i32, info: &LogAppendInfo) -> PartitionProduceResponse {
    PartitionProduceResponse {
        index,
        base_offset: info.first_offset.get(),
        log_append_time_ms: info.log_append_time_ms,
        log_start_offset: info.log_start_offset.get(),
        ..Default::default()
    }
}

fn failed_response(index: i32, f: Failure) -> PartitionProduceResponse {
    PartitionProduceResponse {
        index,
        error_code: f.code.0,
        base_offset: -1,
        log_append_time_ms: -1,
        log_start_offset: -1,
        error_message: f.message,
        record_errors: f.record_errors,
        ..Default::default()
    }
}

/// The produce purgatory: waits for every acks=all partition together, at most `timeout_ms`, and
/// records the failures in `responses`.
async fn wait_for_replication(
    pending: &[Pending],
    timeout_ms: i32,
    responses: &mut [TopicProduceResponse],
) {
    if pending.is_empty() {
        return;
    }
    let timeout = Duration::from_millis(timeout_ms.clamp(0, MAX_TIMEOUT_MS) as u64);
    let deadline = Instant::now() + timeout;
    let waits = pending.iter().map(|p| {
        let w = &p.wait;
        w.partition
            .wait_for_replication(w.required_offset, w.leader_epoch, w.min_isr, deadline)
    });
    let results = futures::future::join_all(waits).await;
    for (p, result) in pending.iter().zip(results) {
        if let Err(e) = result {
            let resp = &mut responses[p.topic].partition_responses[p.partition];
            resp.error_code = replica_error_code(&e).0;
            resp.error_message = Some(e.to_string());
        }
    }
}

/// True when any whole v2 batch in `records` is compressed with `codec` (reads only batch headers, through
/// `protocol::record::batches`; stops at the first batch it cannot frame).
pub fn batches_use_codec(records: &bytes::Bytes, codec: Compression) -> bool {
    protocol::record::batches(records)
        .map_while(Result::ok)
        .any(|b| b.header().compression().ok() == Some(codec))
}
