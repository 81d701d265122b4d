//! Fetch (key 1), v4–17, consumer fetches. Source: Kafka protocol guide; KIP-74 (response byte limits, the
//! first batch always whole), KIP-227 (fetch sessions), KIP-516 (topic ids, v13+), KIP-110 (zstd needs v10+).
//!
//! Fetch sessions are not created: every response carries session id 0, which tells clients to keep sending
//! full fetches (as a Kafka broker with no free session slots does). A request naming a session id gets
//! FETCH_SESSION_ID_NOT_FOUND (70).
//!
//! Response shape (pitfalls 5, 6): every requested partition is answered in request order; a partition with
//! no data carries zero-length records, never null; OFFSET_OUT_OF_RANGE carries the HighWatermark and
//! LogStartOffset.

use std::sync::Arc;
use std::time::Duration;

use protocol::error::ErrorCode;
use protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
use protocol::messages::{FetchRequest, FetchResponse};
use protocol::record::{Compression, Records};
use protocol::RequestHeader;
use storage::StorageError;

use super::produce::batches_use_codec;
use super::{storage_error_code, KafkaApis};
use crate::replica_manager::{FetchPartitionRequest, Partition};

/// Upper bound on how long one Fetch may be held (ms), whatever the client asks.
const MAX_WAIT_CAP_MS: i32 = 30_000;

/// A requested topic: name, id, and each partition's slot, in request order.
type TopicLayout = (String, uuid::Uuid, Vec<(i32, Slot)>);

/// Where a requested partition stands after resolution.
enum Slot {
    /// Index into the read list.
    Read(usize),
    /// Answered with an error without reading.
    Error(ErrorCode),
}

/// Answers a consumer Fetch, holding it until `min_bytes` are available or `max_wait_ms` passes.
pub async fn handle(
    apis: &KafkaApis,
    header: &RequestHeader,
    request: FetchRequest,
) -> FetchResponse {
    let version = header.request_api_version;
    if request.session_id != 0 {
        return FetchResponse {
            error_code: ErrorCode::FETCH_SESSION_ID_NOT_FOUND.0,
            session_id: 0,
            ..Default::default()
        };
    }
    let mut reads: Vec<FetchPartitionRequest> = Vec::new();
    let mut layout: Vec<TopicLayout> = Vec::new();
    for topic in &request.topics {
        let (name, topic_id) = if version >= 13 {
            match apis.metadata.topic_by_id(topic.topic_id) {
                Some((name, meta)) => (Some(name), meta.topic_id),
                None => (None, topic.topic_id),
            }
        } else {
            let id = apis
                .metadata
                .topic(&topic.topic)
                .map(|m| m.topic_id)
                .unwrap_or_default();
            (Some(topic.topic.clone()), id)
        };
        let mut slots = Vec::with_capacity(topic.partitions.len());
        for p in &topic.partitions {
            let slot = match name
                .as_deref()
                .and_then(|n| apis.replica_manager.partition(n, p.partition))
            {
                None if version >= 13 && name.is_none() => Slot::Error(ErrorCode::UNKNOWN_TOPIC_ID),
                None => Slot::Error(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION),
                Some(part) => match check_epoch(&part, p.current_leader_epoch) {
                    Some(code) => Slot::Error(code),
                    None => {
                        reads.push(FetchPartitionRequest {
                            partition: part,
                            fetch_offset: p.fetch_offset,
                            max_bytes: p.partition_max_bytes,
                        });
                        Slot::Read(reads.len() - 1)
                    }
                },
            };
            slots.push((p.partition, slot));
        }
        layout.push((name.unwrap_or_default(), topic_id, slots));
    }

    let max_wait = Duration::from_millis(request.max_wait_ms.clamp(0, MAX_WAIT_CAP_MS) as u64);
    let any_error = layout
        .iter()
        .any(|(_, _, s)| s.iter().any(|(_, s)| matches!(s, Slot::Error(_))));
    let wait = if any_error { Duration::ZERO } else { max_wait };
    let results = apis
        .replica_manager
        .fetch(&reads, request.max_bytes, request.min_bytes, wait)
        .await;

    let responses = layout
        .into_iter()
        .map(|(name, topic_id, slots)| FetchableTopicResponse {
            topic: name,
            topic_id,
            partitions: slots
                .into_iter()
                .map(|(index, slot)| match slot {
                    Slot::Error(code) => error_partition(index, code, -1, -1),
                    Slot::Read(i) => {
                        let r = &results[i];
                        match &r.error {
                            Some(e) => {
                                let code = match e {
                                    StorageError::OffsetOutOfRange { .. } => {
                                        ErrorCode::OFFSET_OUT_OF_RANGE
                                    }
                                    other => storage_error_code(other),
                                };
                                error_partition(index, code, r.high_watermark, r.log_start_offset)
                            }
                            None => {
                                let mut records = r.records.clone();
                                if version < 10 && uses_zstd(&records) {
                                    return error_partition(
                                        index,
                                        ErrorCode::UNSUPPORTED_COMPRESSION_TYPE,
                                        r.high_watermark,
                                        r.log_start_offset,
                                    );
                                }
                                if records.is_empty() {
                                    records = Records::default();
                                }
                                PartitionData {
                                    partition_index: index,
                                    error_code: 0,
                                    high_watermark: r.high_watermark,
                                    last_stable_offset: r.high_watermark,
                                    log_start_offset: r.log_start_offset,
                                    aborted_transactions: Some(vec![]),
                                    preferred_read_replica: -1,
                                    records: Some(records),
                                    ..Default::default()
                                }
                            }
                        }
                    }
                })
                .collect(),
            ..Default::default()
        })
        .collect();
    FetchResponse {
        error_code: 0,
        session_id: 0,
        responses,
        ..Default::default()
    }
}

/// KIP-320: a consumer's `current_leader_epoch` newer than ours is UNKNOWN_LEADER_EPOCH (75), older is
/// FENCED_LEADER_EPOCH (74); -1 skips the check.
fn check_epoch(partition: &Arc<Partition>, current_leader_epoch: i32) -> Option<ErrorCode> {
    if current_leader_epoch < 0 || current_leader_epoch == partition.leader_epoch {
        None
    } else if current_leader_epoch > partition.leader_epoch {
        Some(ErrorCode::UNKNOWN_LEADER_EPOCH)
    } else {
        Some(ErrorCode::FENCED_LEADER_EPOCH)
    }
}

fn error_partition(index: i32, code: ErrorCode, hw: i64, log_start: i64) -> PartitionData {
    PartitionData {
        partition_index: index,
        error_code: code.0,
        high_watermark: hw,
        last_stable_offset: hw,
        log_start_offset: log_start,
        aborted_transactions: Some(vec![]),
        preferred_read_replica: -1,
        records: Some(Records::default()),
        ..Default::default()
    }
}

/// Checks stored batches for zstd (old fetch versions cannot receive it). Reads the slice's bytes.
fn uses_zstd(records: &Records) -> bool {
    match records {
        Records::Memory(b) => batches_use_codec(b, Compression::Zstd),
        Records::File(slice) => {
            use std::os::unix::fs::FileExt;
            let mut buf = vec![0u8; slice.len as usize];
            slice.file.read_exact_at(&mut buf, slice.position).is_ok()
                && batches_use_codec(&bytes::Bytes::from(buf), Compression::Zstd)
        }
    }
}
