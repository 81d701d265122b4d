//! Fetch (key 1), v4–17, consumer and follower fetches. Source: Kafka protocol guide; KIP-74 (response byte
//! limits, the first batch always whole), KIP-227 (fetch sessions), KIP-516 (topic ids, v13+), KIP-110 (zstd
//! needs v10+), KIP-320 (leader epoch fencing), KIP-595 (diverging epoch, v12+).
//!
//! The replica id is `replica_id` (v<15) or `replica_state.replica_id` (v15+); ≥ 0 is a follower. Only the
//! leader serves a partition (else NOT_LEADER_OR_FOLLOWER). `current_leader_epoch` older than ours is
//! FENCED_LEADER_EPOCH, newer UNKNOWN_LEADER_EPOCH. Consumers read up to the HighWatermark; followers read
//! up to the LogEndOffset, their fetch offset updates the leader's follower state (HW, ISR), and a
//! `last_fetched_epoch` that diverges from the leader's epoch cache is answered with `diverging_epoch`
//! (epoch, end offset) and no records.
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
    /// A follower whose last fetched epoch diverges: (epoch, end offset) to truncate to.
    Diverging(i32, i64, i64, i64),
}

/// Answers a consumer Fetch, holding it until `min_bytes` are available or `max_wait_ms` passes.
pub async fn handle(
    apis: &KafkaApis,
    header: &RequestHeader,
    request: FetchRequest,
) -> FetchResponse {
    let version = header.request_api_version;
    let replica_id = if version >= 15 {
        request.replica_state.replica_id
    } else {
        request.replica_id
    };
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
                    None if !part.is_leader() => Slot::Error(ErrorCode::NOT_LEADER_OR_FOLLOWER),
                    None => {
                        match diverging(&part, replica_id, p.last_fetched_epoch, p.fetch_offset) {
                            Some(slot) => slot,
                            None if replica_id >= 0
                                && !apis.replica_manager.update_follower_fetch_state(
                                    &part,
                                    replica_id,
                                    p.fetch_offset,
                                ) =>
                            {
                                Slot::Error(ErrorCode::NOT_LEADER_OR_FOLLOWER)
                            }
                            None => {
                                reads.push(FetchPartitionRequest {
                                    partition: part,
                                    fetch_offset: p.fetch_offset,
                                    max_bytes: p.partition_max_bytes,
                                });
                                Slot::Read(reads.len() - 1)
                            }
                        }
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
        .any(|(_, _, s)| s.iter().any(|(_, s)| !matches!(s, Slot::Read(_))));
    let wait = if any_error { Duration::ZERO } else { max_wait };
    let results = apis
        .replica_manager
        .fetch(
            &reads,
            request.max_bytes,
            request.min_bytes,
            wait,
            replica_id.max(-1),
        )
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
                    Slot::Diverging(epoch, end_offset, hw, log_start) => {
                        let mut d = error_partition(index, ErrorCode::NONE, hw, log_start);
                        d.diverging_epoch.epoch = epoch;
                        d.diverging_epoch.end_offset = end_offset;
                        d
                    }
                    Slot::Read(i) => {
                        let r = &results[i];
                        if r.not_leader {
                            return error_partition(
                                index,
                                ErrorCode::NOT_LEADER_OR_FOLLOWER,
                                -1,
                                -1,
                            );
                        }
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

/// KIP-320: a `current_leader_epoch` newer than ours is UNKNOWN_LEADER_EPOCH (75), older is
/// FENCED_LEADER_EPOCH (74); -1 skips the check.
pub(super) fn check_epoch(partition: &Partition, current_leader_epoch: i32) -> Option<ErrorCode> {
    let ours = partition.leader_epoch();
    if current_leader_epoch < 0 || current_leader_epoch == ours {
        None
    } else if current_leader_epoch > ours {
        Some(ErrorCode::UNKNOWN_LEADER_EPOCH)
    } else {
        Some(ErrorCode::FENCED_LEADER_EPOCH)
    }
}

/// KIP-595 (Kafka's `validateFetchOffsetAndMaybeGetDivergingEpoch`): a follower's `last_fetched_epoch`
/// whose end offset in our epoch cache is below its fetch offset, or that our cache does not know, diverges;
/// the answer names our (epoch, end offset) for it. Consumers, -1 and unknown-to-us newer epochs are not
/// checked.
fn diverging(
    partition: &Arc<Partition>,
    replica_id: i32,
    last_fetched_epoch: i32,
    fetch_offset: i64,
) -> Option<Slot> {
    if replica_id < 0 || last_fetched_epoch < 0 {
        return None;
    }
    let log = partition.log.lock();
    let (epoch, end) = log.end_offset_for_epoch(last_fetched_epoch);
    if epoch < 0 || end < 0 {
        return None;
    }
    (end < fetch_offset || epoch < last_fetched_epoch)
        .then(|| Slot::Diverging(epoch, end, log.high_watermark(), log.log_start_offset()))
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
