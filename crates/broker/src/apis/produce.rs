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

use std::sync::Arc;
use std::time::{Duration, Instant};

use protocol::error::ErrorCode;
use protocol::messages::produce_response::{
    BatchIndexAndErrorMessage, PartitionProduceResponse, TopicProduceResponse,
};
use protocol::messages::{ProduceRequest, ProduceResponse};
use protocol::record::{Compression, Records};
use protocol::RequestHeader;
use storage::StorageError;

use super::{storage_error_code, KafkaApis};
use crate::replica_manager::{Partition, ReplicaError};

/// Upper bound on how long an acks=all Produce waits for replication (ms), whatever the client asks.
const MAX_TIMEOUT_MS: i32 = 300_000;

/// An appended acks=all partition waiting for the HW: (topic slot, partition slot, partition, required
/// offset, leader epoch, min ISR).
type Pending = (usize, usize, Arc<Partition>, i64, i32, usize);

/// The Produce error code of a replication error.
fn replica_error_code(e: &ReplicaError) -> ErrorCode {
    match e {
        ReplicaError::NotLeaderOrFollower => ErrorCode::NOT_LEADER_OR_FOLLOWER,
        ReplicaError::NotEnoughReplicas { .. } => ErrorCode::NOT_ENOUGH_REPLICAS,
        ReplicaError::NotEnoughReplicasAfterAppend { .. } => {
            ErrorCode::NOT_ENOUGH_REPLICAS_AFTER_APPEND
        }
        ReplicaError::RequestTimedOut => ErrorCode::REQUEST_TIMED_OUT,
        ReplicaError::Storage(s) => storage_error_code(s),
    }
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
pub async fn handle(apis: &KafkaApis, header: &RequestHeader, request: ProduceRequest) -> Outcome {
    let version = header.request_api_version;
    let acks = request.acks;
    let mut responses = Vec::with_capacity(request.topic_data.len());
    let mut first_error: Option<String> = None;
    let mut pending: Vec<Pending> = Vec::new();
    for topic in request.topic_data {
        let mut partitions = Vec::with_capacity(topic.partition_data.len());
        let topic_meta = apis.metadata.topic(&topic.name);
        for p in topic.partition_data {
            let mut resp = PartitionProduceResponse {
                index: p.index,
                ..Default::default()
            };
            let mut record_errors = Vec::new();
            let result = (|| -> Result<(), (ErrorCode, Option<String>)> {
                if !matches!(acks, -1..=1) {
                    return Err((ErrorCode::INVALID_REQUIRED_ACKS, None));
                }
                if request.transactional_id.is_some() {
                    return Err((
                        ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                        Some("transactions are not supported yet".into()),
                    ));
                }
                let meta = topic_meta
                    .as_ref()
                    .ok_or((ErrorCode::UNKNOWN_TOPIC_OR_PARTITION, None))?;
                let partition = apis
                    .replica_manager
                    .partition(&topic.name, p.index)
                    .ok_or((ErrorCode::UNKNOWN_TOPIC_OR_PARTITION, None))?;
                let records = match p.records {
                    Some(Records::Memory(b)) => b,
                    _ => {
                        return Err((
                            ErrorCode::CORRUPT_MESSAGE,
                            Some("produce request without records".into()),
                        ))
                    }
                };
                if version < 7 && batches_use_codec(&records, Compression::Zstd) {
                    return Err((ErrorCode::UNSUPPORTED_COMPRESSION_TYPE, None));
                }
                let min_isr: usize = if acks == -1 {
                    apis.topics
                        .topic_config_value(&meta.configs, "min.insync.replicas")
                        .and_then(|v| v.parse::<usize>().ok())
                        .unwrap_or(1)
                        .max(1)
                } else {
                    0
                };
                let (info, epoch) = apis
                    .replica_manager
                    .append_to_leader(&partition, records, min_isr)
                    .map_err(|e| {
                        if let ReplicaError::Storage(StorageError::InvalidRecords {
                            message,
                            batch_indexes,
                        }) = &e
                        {
                            record_errors = batch_indexes
                                .iter()
                                .map(|i| BatchIndexAndErrorMessage {
                                    batch_index: *i,
                                    batch_index_error_message: Some(message.clone()),
                                    ..Default::default()
                                })
                                .collect();
                        }
                        (replica_error_code(&e), Some(e.to_string()))
                    })?;
                if acks == -1 && info.last_offset >= 0 {
                    pending.push((
                        responses.len(),
                        partitions.len(),
                        partition.clone(),
                        info.last_offset + 1,
                        epoch,
                        min_isr,
                    ));
                }
                resp.base_offset = info.first_offset;
                resp.log_append_time_ms = info.log_append_time_ms;
                resp.log_start_offset = info.log_start_offset;
                Ok(())
            })();
            if let Err((code, message)) = result {
                resp.error_code = code.0;
                resp.base_offset = -1;
                resp.log_append_time_ms = -1;
                resp.log_start_offset = -1;
                if first_error.is_none() {
                    first_error = Some(format!(
                        "{}-{}: {}",
                        topic.name,
                        p.index,
                        message.clone().unwrap_or_else(|| code.name().to_string())
                    ));
                }
                resp.error_message = message;
                resp.record_errors = record_errors;
            }
            partitions.push(resp);
        }
        responses.push(TopicProduceResponse {
            name: topic.name,
            partition_responses: partitions,
            ..Default::default()
        });
    }
    if !pending.is_empty() {
        let timeout = Duration::from_millis(request.timeout_ms.clamp(0, MAX_TIMEOUT_MS) as u64);
        let deadline = Instant::now() + timeout;
        let rm = &apis.replica_manager;
        let waits = pending.iter().map(|(_, _, p, required, epoch, min_isr)| {
            rm.wait_for_replication(p, *required, *epoch, *min_isr, deadline)
        });
        let results = futures::future::join_all(waits).await;
        for ((t, i, _, _, _, _), result) in pending.iter().zip(results) {
            if let Err(e) = result {
                let resp = &mut responses[*t].partition_responses[*i];
                resp.error_code = replica_error_code(&e).0;
                resp.error_message = Some(e.to_string());
            }
        }
    }
    if acks == 0 {
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

/// True when any whole v2 batch in `records` is compressed with `codec` (reads only batch headers, through
/// `protocol::record::batches`; stops at the first batch it cannot frame).
pub fn batches_use_codec(records: &bytes::Bytes, codec: Compression) -> bool {
    protocol::record::batches(records)
        .map_while(Result::ok)
        .any(|b| b.header().compression().ok() == Some(codec))
}
