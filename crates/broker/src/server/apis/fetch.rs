//! Fetch (key 1), v4–17, consumer and follower fetches. Source: Kafka protocol guide; KIP-74 (response byte
//! limits, the first batch always whole), KIP-227 (fetch sessions), KIP-516 (topic ids, v13+), KIP-110 (zstd
//! needs v10+), KIP-320 (leader epoch fencing), KIP-595 (diverging epoch, v12+).
//!
//! The replica id is `replica_id` (v<15) or `replica_state.replica_id` (v15+); ≥ 0 is a follower. Only the
//! leader serves a follower's Fetch or a consumer's before v11 (else NOT_LEADER_OR_FOLLOWER); a partition
//! of a known topic that this broker does not host is NOT_LEADER_OR_FOLLOWER too (Kafka: the client
//! refreshes its metadata), of an unknown one UNKNOWN_TOPIC_OR_PARTITION.
//!
//! Fetch from follower (KIP-392, v11+): a consumer's Fetch is served by any replica hosting the partition,
//! a follower reading up to its own HighWatermark / LastStableOffset (see `Partition::read`). On the
//! leader, with `replica.selector.class` set, a consumer's Fetch carrying its `rack_id` (`client.rack`)
//! may be answered for a partition with no records, error NONE and `preferred_read_replica` = a follower
//! in the consumer's rack ([`replica::replica_selector`]'s rule: in the ISR, on a live broker reachable on
//! the request's listener, holding the fetch offset; the leader itself when it shares the rack), and
//! the Fetch is then answered at once; the consumer sends its next Fetch there. Otherwise -1.
//!
//! `current_leader_epoch` older than ours is
//! FENCED_LEADER_EPOCH, newer UNKNOWN_LEADER_EPOCH. Consumers read up to the HighWatermark
//! (`isolation_level` 0, read_uncommitted) or the LastStableOffset (1, read_committed, KIP-98: with the
//! aborted transactions overlapping the returned batches, `(producer_id, first_offset)`; read_uncommitted
//! answers null there, as Kafka); any other `isolation_level` is INVALID_REQUEST (Kafka's
//! `IsolationLevel.forId` refuses it). `last_stable_offset` is the partition's LSO at either level.
//! Followers read up to the LogEndOffset whatever the level, their fetch offset updates the leader's follower state (HW, ISR), and a
//! `last_fetched_epoch` that diverges from the leader's epoch cache is answered with `diverging_epoch`
//! (epoch, end offset) and no records.
//!
//! Fetch sessions (KIP-227, v7+; [`super::fetch_session`] around [`crate::fetch_session`]): a full fetch at
//! epoch 0 creates a session of its partitions when `max.incremental.fetch.session.cache.slots` leaves one
//! (the answer carries its id, else 0); epoch -1 creates none; a full fetch naming a session closes it. An
//! incremental fetch (session id, epoch ≥ 1) updates the session with its partitions and
//! `forgotten_topics_data`; the handler then reads every partition of the session, in session order, as if
//! they had been requested, and the answer keeps only those that changed. An unknown session is
//! FETCH_SESSION_ID_NOT_FOUND (70), a wrong epoch INVALID_FETCH_SESSION_EPOCH (71), a session used across
//! the v12/v13 topic-id boundary FETCH_SESSION_TOPIC_ID_ERROR (106), all with no partitions and session id 0.
//! A consumer throttled by its quota gets no partitions and no new session; its session records nothing.
//!
//! Response shape (pitfalls 5, 6): every requested partition is answered in request order (an incremental
//! fetch: the session's changed partitions, in session order, a topic repeated if its partitions are not
//! adjacent); a partition with no data carries zero-length records, never null; OFFSET_OUT_OF_RANGE
//! carries the HighWatermark and LogStartOffset.

use std::time::Duration;

use protocol::error::ErrorCode;
use protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use protocol::messages::fetch_response::{
    AbortedTransaction, FetchableTopicResponse, PartitionData,
};
use protocol::messages::{FetchRequest, FetchResponse};
use protocol::record::{Compression, RecordBatchHeader, Records, RECORD_BATCH_OVERHEAD};
use types::{BrokerId, LeaderEpoch, Offset};
use uuid::Uuid;

use super::errors::{replica_error_code, storage_error_code};
use super::fetch_session;
use super::produce::batches_use_codec;
use super::KafkaApis;
use crate::quota::replication::ReplicationQuotaManager;
use crate::quota::ClientQuotas;
use crate::server::context::{Denied, RequestContext};
use authorizer::{AclOperation, ResourceType};
use replica::partition::{DivergingEpoch, FetchSource, IsolationLevel, Partition, PartitionRead};
use replica::replica_manager::FetchPartitionRequest;
use replica::replica_selector::{preferred_read_replica, ReplicaView};
use replica::replication_quota::ReplicationQuota;

/// Upper bound on how long one Fetch may be held (ms), whatever the client asks.
const MAX_WAIT_CAP_MS: i32 = 30_000;

/// A requested topic after resolution: its answer's name and id, and each partition's slot in request
/// order.
struct TopicSlots {
    name: String,
    topic_id: Uuid,
    partitions: Vec<(i32, Slot)>,
}

/// Where a requested partition stands after resolution.
enum Slot {
    /// Index into the read list.
    Read(usize),
    /// Answered with an error without reading.
    Error(ErrorCode),
    /// A follower whose last fetched epoch diverges: no records, the leader's epoch and end offset.
    Diverging(DivergingEpoch),
    /// A follower outside the ISR of a throttled partition while the leader's replication quota is
    /// exceeded (KIP-73): no records, the HighWatermark and LogStartOffset.
    Throttled {
        high_watermark: Offset,
        log_start_offset: Offset,
    },
    /// KIP-392: a consumer sent to another replica: no records, the leader's offsets.
    Preferred {
        replica: BrokerId,
        high_watermark: Offset,
        last_stable_offset: Offset,
        log_start_offset: Offset,
    },
}

/// Who is fetching, as resolving its partitions needs it.
#[derive(Clone, Copy)]
struct Requester<'a> {
    /// ≥ 0: a follower's broker id; < 0: a consumer.
    replica_id: i32,
    /// KIP-73: the leader's replication quota is exceeded (follower fetches only).
    throttling: bool,
    /// KIP-392: the consumer's `rack_id` (Fetch v11+) when a replica selector is configured; `None`
    /// otherwise (no preferred read replica is looked up).
    client_rack: Option<&'a str>,
    /// The listener the request came in on: a preferred read replica must be reachable on it.
    listener: &'a str,
}

impl<'a> Requester<'a> {
    /// The requester of `request` (replica id `replica_id`) on `ctx`'s connection.
    fn of(
        apis: &KafkaApis,
        ctx: &'a RequestContext,
        request: &'a FetchRequest,
        replica_id: i32,
    ) -> Requester<'a> {
        let consumer = replica_id < 0;
        Requester {
            replica_id,
            throttling: !consumer && apis.quotas().leader_replication.is_quota_exceeded(),
            client_rack: (consumer && ctx.api_version() >= 11 && apis.replica_selector.is_some())
                .then_some(request.rack_id.as_str()),
            listener: ctx.listener_name(),
        }
    }

    /// Where its reads may go and how far: a follower's, or a consumer's at `isolation`, leader only
    /// before v11 (Kafka's `fetchOnlyFromLeader`: no client metadata).
    fn source(self, version: i16, isolation: IsolationLevel) -> FetchSource {
        match self.replica_id >= 0 {
            true => FetchSource::Follower,
            false => FetchSource::Consumer {
                isolation,
                leader_only: version < 11,
            },
        }
    }
}

/// Answers a Fetch, holding it until `min_bytes` are available or `max_wait_ms` passes: resolve each
/// partition (topic, leader epoch, a follower's position), read them together, map each result.
pub async fn handle(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: FetchRequest,
) -> FetchResponse {
    let version = ctx.api_version();
    let replica_id = replica_id(version, &request);
    let Some(isolation) = IsolationLevel::from_id(request.isolation_level) else {
        return FetchResponse {
            error_code: ErrorCode::INVALID_REQUEST.0,
            ..Default::default()
        };
    };
    // Kafka's `FetchIsolation.of`: a follower reads to the LogEndOffset, no aborted transactions.
    let isolation = match replica_id >= 0 {
        true => IsolationLevel::ReadUncommitted,
        false => isolation,
    };
    let mut request = request; // an incremental fetch reads its session's partitions
    let plan = match fetch_session::begin(apis, version, &mut request) {
        Ok(plan) => plan,
        Err(refused) => return refused,
    };
    let mut reads: Vec<FetchPartitionRequest> = Vec::new();
    // KIP-73: the leader's replication quota, checked once per follower Fetch.
    let leader_quota = &apis.quotas().leader_replication;
    let requester = Requester::of(apis, ctx, &request, replica_id);
    let throttling = requester.throttling;
    let topics: Vec<TopicSlots> = request
        .topics
        .iter()
        .map(|t| resolve_topic(apis, ctx, requester, t, &mut reads))
        .collect();
    let any_error = topics.iter().any(|t| {
        t.partitions
            .iter()
            // An error, a diverging epoch or a preferred read replica is answered at once (Kafka).
            .any(|(_, s)| !matches!(s, Slot::Read(_) | Slot::Throttled { .. }))
    });
    let wait = if any_error {
        Duration::ZERO
    } else {
        Duration::from_millis(request.max_wait_ms.clamp(0, MAX_WAIT_CAP_MS) as u64)
    };
    if reads.is_empty() && !wait.is_zero() && throttling {
        // Every partition is throttled: hold the follower for its max wait rather than let it spin.
        tokio::time::sleep(wait).await;
    }
    let replica_manager = &apis.replica_manager;
    let (user, client_id) = (
        &ctx.connection.principal.name,
        ctx.client_id().unwrap_or(""),
    );
    let quotas = &apis.quotas().clients;
    let mut max_bytes = request.max_bytes;
    if replica_id < 0 {
        // Kafka: a consumer's response is at most what its quota allows in one burst.
        if let Some(quota_max) = quotas.fetch_max_bytes(user, client_id) {
            max_bytes = max_bytes.min(quota_max);
        }
    }
    let min_bytes = request.min_bytes.min(max_bytes);
    let source = requester.source(version, isolation);
    let results = replica_manager
        .fetch(&reads, max_bytes, min_bytes, wait, source)
        .await;
    let mut response = FetchResponse {
        responses: answers(topics, &results, version, isolation),
        ..Default::default()
    };
    let mut throttled = false;
    if replica_id < 0 {
        throttled = throttle(quotas, user, client_id, &mut response);
    } else if leader_quota.is_bounded() {
        record_throttled(leader_quota, &response);
    }
    let privileged = replica_id >= 0;
    fetch_session::finish(
        apis,
        plan,
        version,
        privileged,
        &request,
        &mut response,
        throttled,
    );
    crate::observability::topics::fetch_answered(&response, replica_id >= 0);
    response
}

/// The answers of every resolved topic's partitions, in order.
fn answers(
    topics: Vec<TopicSlots>,
    results: &[PartitionRead],
    version: i16,
    isolation: IsolationLevel,
) -> Vec<FetchableTopicResponse> {
    (topics.into_iter())
        .map(|t| FetchableTopicResponse {
            topic: t.name,
            topic_id: t.topic_id,
            partitions: (t.partitions.into_iter())
                .map(|(index, slot)| answer(index, slot, results, version, isolation))
                .collect(),
            ..Default::default()
        })
        .collect()
}

/// Records the bytes sent for throttled partitions in the leader's replication quota (Kafka's
/// `sizeOfThrottledPartitions`).
fn record_throttled(quota: &ReplicationQuotaManager, response: &FetchResponse) {
    let bytes: usize = (response.responses.iter())
        .flat_map(|t| t.partitions.iter().map(move |p| (&t.topic, p)))
        .filter(|(topic, p)| quota.is_throttled(topic, p.partition_index))
        .map(|(_, p)| p.records.as_ref().map_or(0, Records::len))
        .sum();
    if bytes > 0 {
        quota.record(bytes as u64);
    }
}

/// The Fetch's replica id: `replica_id` before v15, `replica_state.replica_id` from v15 (KIP-903); ≥ 0 is
/// a follower.
pub(super) fn replica_id(version: i16, request: &FetchRequest) -> i32 {
    if version >= 15 {
        request.replica_state.replica_id
    } else {
        request.replica_id
    }
}

/// The record bytes of every partition in `response`.
pub(super) fn record_bytes(response: &FetchResponse) -> usize {
    response
        .responses
        .iter()
        .flat_map(|t| &t.partitions)
        .map(|p| p.records.as_ref().map_or(0, Records::len))
        .sum()
}

/// KIP-219 for a consumer's Fetch: its record bytes count against its `consumer_byte_rate`; over it, the
/// answer is Kafka's throttled one — `throttle_time_ms` and no partitions (the bytes are taken back out of
/// the rate, since they are not sent).
/// Returns true when it throttled.
fn throttle(
    quotas: &ClientQuotas,
    user: &str,
    client_id: &str,
    response: &mut FetchResponse,
) -> bool {
    let ms = quotas.record_fetch(user, client_id, record_bytes(response));
    if ms > 0 {
        response.throttle_time_ms = ms.min(i32::MAX as u64) as i32;
        response.responses.clear();
    }
    ms > 0
}

/// Resolves one requested topic: by id from v13 (UNKNOWN_TOPIC_ID when unknown), by name before; then
/// Kafka's check — CLUSTER_ACTION on the cluster for a replica's fetch, READ on the topic for a consumer's —
/// TOPIC_AUTHORIZATION_FAILED for each partition when refused.
fn resolve_topic(
    apis: &KafkaApis,
    ctx: &RequestContext,
    requester: Requester<'_>,
    topic: &FetchTopic,
    reads: &mut Vec<FetchPartitionRequest>,
) -> TopicSlots {
    let version = ctx.api_version();
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
    let allowed = |name: &str| {
        if requester.replica_id >= 0 {
            ctx.authorize_cluster(AclOperation::ClusterAction).is_ok()
        } else {
            ctx.is_allowed(AclOperation::Read, ResourceType::Topic, name)
        }
    };
    let allowed = name.as_deref().is_some_and(allowed);
    let partitions = topic
        .partitions
        .iter()
        .map(|p| {
            let slot = match &name {
                None => Slot::Error(ErrorCode::UNKNOWN_TOPIC_ID),
                Some(_) if !allowed => Slot::Error(ErrorCode::from(Denied(ResourceType::Topic))),
                Some(name) => resolve_partition(apis, name, requester, p, reads),
            };
            (p.partition, slot)
        })
        .collect();
    TopicSlots {
        name: name.unwrap_or_default(),
        topic_id,
        partitions,
    }
}

/// Resolves one requested partition: hosted (else NOT_LEADER_OR_FOLLOWER for a partition of a known topic,
/// Kafka's `getPartitionOrError`), the request's leader epoch (KIP-320), for a follower its position on
/// the leader (NOT_LEADER_OR_FOLLOWER, a diverging epoch, or recorded for HW and ISR), for a consumer
/// with a rack its preferred read replica (KIP-392). Whether this replica may serve a consumer is decided
/// by the read.
fn resolve_partition(
    apis: &KafkaApis,
    topic: &str,
    requester: Requester<'_>,
    p: &FetchPartition,
    reads: &mut Vec<FetchPartitionRequest>,
) -> Slot {
    let (replica_id, throttling) = (requester.replica_id, requester.throttling);
    let rm = &apis.replica_manager;
    let Some(partition) = rm.partition(topic, p.partition) else {
        let known =
            (apis.metadata.topic(topic)).is_some_and(|t| (0..t.partitions).contains(&p.partition));
        return Slot::Error(match known {
            true => ErrorCode::NOT_LEADER_OR_FOLLOWER,
            false => ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
        });
    };
    if let Some(code) = check_epoch(&partition, p.current_leader_epoch) {
        return Slot::Error(code);
    }
    let fetch_offset = Offset(p.fetch_offset);
    if let Some(client_rack) = requester.client_rack {
        let listener = requester.listener;
        if let Some(replica) =
            preferred_replica(apis, listener, client_rack, &partition, fetch_offset)
        {
            let offsets = partition.offsets();
            return Slot::Preferred {
                replica,
                high_watermark: offsets.high_watermark(),
                last_stable_offset: partition.last_stable_offset(),
                log_start_offset: offsets.log_start_offset(),
            };
        }
    }
    if replica_id >= 0 {
        let last_fetched_epoch = LeaderEpoch(p.last_fetched_epoch);
        let follower_log_start = Offset(p.log_start_offset);
        match rm.follower_fetch(
            &partition,
            BrokerId(replica_id),
            last_fetched_epoch,
            (fetch_offset, follower_log_start),
        ) {
            Err(e) => return Slot::Error(replica_error_code(&e)),
            Ok(Some(diverging)) => return Slot::Diverging(diverging),
            Ok(None) => {}
        }
        // Kafka's `shouldLeaderThrottle`: never an in-sync follower.
        if throttling
            && apis
                .quotas()
                .leader_replication
                .is_throttled(topic, p.partition)
            && !partition.registration().isr.contains(&BrokerId(replica_id))
        {
            return Slot::Throttled {
                high_watermark: partition.high_watermark(),
                log_start_offset: partition.log_start_offset(),
            };
        }
    }
    reads.push(FetchPartitionRequest {
        partition,
        fetch_offset,
        max_bytes: p.partition_max_bytes,
    });
    Slot::Read(reads.len() - 1)
}

/// KIP-392 (Kafka's `ReplicaManager.findPreferredReadReplica`): the replica a consumer in `client_rack`
/// should fetch `partition` from instead of this leader; `None` for this leader, without a selector, or
/// when this broker does not lead. The candidates are the leader's (ISR followers holding
/// `fetch_offset`) on brokers registered, unfenced and advertising `listener` (Kafka's
/// `getPartitionReplicaEndpoints`); racks come from their registrations (`broker.rack`).
fn preferred_replica(
    apis: &KafkaApis,
    listener: &str,
    client_rack: &str,
    partition: &Partition,
    fetch_offset: Offset,
) -> Option<BrokerId> {
    let selector = apis.replica_selector?;
    let candidates = (apis.replica_manager).read_replica_candidates(partition, fetch_offset)?;
    let image = apis.metadata_cache.image();
    let live = |id: &BrokerId| {
        (image.brokers.get(id)).filter(|b| !b.fenced && b.endpoint(listener).is_some())
    };
    let leader = ReplicaView {
        broker_id: candidates.leader,
        rack: live(&candidates.leader).and_then(|b| b.rack.as_deref()),
        log_end_offset: candidates.leader_log_end_offset,
        time_since_last_caught_up_ms: 0,
    };
    let followers: Vec<ReplicaView<'_>> = (candidates.followers.iter())
        .filter_map(|(id, leo, since_ms)| {
            live(id).map(|b| ReplicaView {
                broker_id: *id,
                rack: b.rack.as_deref(),
                log_end_offset: *leo,
                time_since_last_caught_up_ms: *since_ms,
            })
        })
        .collect();
    preferred_read_replica(selector, client_rack, &leader, &followers)
}

/// The answer of one partition (`isolation`: a consumer's read_committed lists aborted transactions).
fn answer(
    index: i32,
    slot: Slot,
    results: &[PartitionRead],
    version: i16,
    isolation: IsolationLevel,
) -> PartitionData {
    let i = match slot {
        Slot::Error(code) => return error_partition(index, code, Offset::NONE, Offset::NONE),
        Slot::Diverging(d) => {
            let mut data =
                error_partition(index, ErrorCode::NONE, d.high_watermark, d.log_start_offset);
            data.diverging_epoch.epoch = d.epoch.get();
            data.diverging_epoch.end_offset = d.end_offset.get();
            return data;
        }
        Slot::Throttled {
            high_watermark,
            log_start_offset,
        } => {
            return PartitionData {
                records: Some(Records::default()),
                ..error_partition(index, ErrorCode::NONE, high_watermark, log_start_offset)
            }
        }
        Slot::Preferred {
            replica,
            high_watermark,
            last_stable_offset,
            log_start_offset,
        } => {
            return PartitionData {
                last_stable_offset: last_stable_offset.get(),
                preferred_read_replica: replica.get(),
                aborted_transactions: None,
                ..error_partition(index, ErrorCode::NONE, high_watermark, log_start_offset)
            }
        }
        Slot::Read(i) => i,
    };
    match &results[i] {
        PartitionRead::NotLeader => error_partition(
            index,
            ErrorCode::NOT_LEADER_OR_FOLLOWER,
            Offset::NONE,
            Offset::NONE,
        ),
        PartitionRead::Error {
            error,
            high_watermark,
            log_start_offset,
        } => error_partition(
            index,
            storage_error_code(error),
            *high_watermark,
            *log_start_offset,
        ),
        PartitionRead::Records {
            high_watermark: hw,
            last_stable_offset,
            log_start_offset,
            records,
            aborted_transactions,
        } => {
            if version < 10 && uses_zstd(records) {
                let code = ErrorCode::UNSUPPORTED_COMPRESSION_TYPE;
                return error_partition(index, code, *hw, *log_start_offset);
            }
            let aborted = (isolation == IsolationLevel::ReadCommitted).then(|| {
                (aborted_transactions.iter())
                    .map(|a| AbortedTransaction {
                        producer_id: a.producer_id.get(),
                        first_offset: a.first_offset.get(),
                        ..Default::default()
                    })
                    .collect()
            });
            PartitionData {
                records: Some(if records.is_empty() {
                    Records::default()
                } else {
                    records.clone()
                }),
                last_stable_offset: last_stable_offset.get(),
                aborted_transactions: aborted,
                ..error_partition(index, ErrorCode::NONE, *hw, *log_start_offset)
            }
        }
    }
}

/// KIP-320: a `current_leader_epoch` newer than ours is UNKNOWN_LEADER_EPOCH (75), older is
/// FENCED_LEADER_EPOCH (74); -1 skips the check.
pub(super) fn check_epoch(partition: &Partition, current_leader_epoch: i32) -> Option<ErrorCode> {
    partition
        .check_leader_epoch(LeaderEpoch(current_leader_epoch))
        .err()
        .map(|e| replica_error_code(&e))
}

fn error_partition(index: i32, code: ErrorCode, hw: Offset, log_start: Offset) -> PartitionData {
    PartitionData {
        partition_index: index,
        error_code: code.0,
        high_watermark: hw.get(),
        last_stable_offset: hw.get(),
        log_start_offset: log_start.get(),
        aborted_transactions: Some(vec![]),
        preferred_read_replica: -1,
        records: Some(Records::default()),
        ..Default::default()
    }
}

/// True when a whole batch of `records` is compressed with zstd (old fetch versions cannot receive it).
/// For a file slice only the 61-byte batch headers are read, walking the batch lengths; like
/// [`batches_use_codec`] it stops at the first batch it cannot frame (or read).
fn uses_zstd(records: &Records) -> bool {
    use std::os::unix::fs::FileExt;
    let slice = match records {
        Records::Memory(b) => return batches_use_codec(b, Compression::Zstd),
        Records::File(slice) => slice,
    };
    let end = slice.position + slice.len as u64;
    let mut pos = slice.position;
    let mut buf = [0u8; RECORD_BATCH_OVERHEAD];
    while pos + RECORD_BATCH_OVERHEAD as u64 <= end {
        if slice.file.read_exact_at(&mut buf, pos).is_err() {
            return false;
        }
        let Ok(h) = RecordBatchHeader::parse(&buf) else {
            return false;
        };
        let size = h.size_in_bytes() as u64;
        if pos + size > end {
            return false;
        }
        if h.compression().ok() == Some(Compression::Zstd) {
            return true;
        }
        pos += size;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use protocol::record::RecordBatchBuilder;
    use storage::{Log, LogConfig};

    fn batch(codec: Compression) -> Bytes {
        let mut b = RecordBatchBuilder::new(codec);
        b.append(0, None, Some(Bytes::from_static(b"value")), vec![]);
        b.build().unwrap()
    }

    /// v<10 zstd detection on a file slice reads batch headers only and, like the in-memory check,
    /// ignores a batch the slice does not hold whole.
    #[test]
    fn uses_zstd_walks_file_batch_headers() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = Log::open(
            dir.path(),
            LogConfig::default(),
            Uuid::nil(),
            false,
            Offset(0),
            0,
        )
        .unwrap();
        log.append_as_leader(batch(Compression::None), LeaderEpoch(0), 0)
            .unwrap();
        log.append_as_leader(batch(Compression::Gzip), LeaderEpoch(0), 0)
            .unwrap();
        let plain = log
            .read(Offset(0), 1 << 20, Offset(2), true)
            .unwrap()
            .records;
        assert!(matches!(plain, Records::File(_)));
        assert!(!uses_zstd(&plain));
        log.append_as_leader(batch(Compression::Zstd), LeaderEpoch(0), 0)
            .unwrap();
        let Records::File(mut all) = log
            .read(Offset(0), 1 << 20, Offset(3), true)
            .unwrap()
            .records
        else {
            panic!("not a file slice")
        };
        assert!(uses_zstd(&Records::File(all.clone())));
        all.len -= 1;
        assert!(!uses_zstd(&Records::File(all)));
    }
}
