//! The Kafka requests a consumer instance sends, through the [`Bridge`] (so ACLs and validation apply as to
//! any consumer): group membership (JoinGroup, SyncGroup, Heartbeat, LeaveGroup), offsets (OffsetFetch,
//! OffsetCommit, ListOffsets), Metadata for partition counts, and Fetch. Each answers typed values or a
//! [`RestError`] made from the Kafka error code.

use std::collections::{BTreeMap, HashMap};

use bytes::Bytes;
use protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use protocol::messages::join_group_request::JoinGroupRequestProtocol;
use protocol::messages::leave_group_request::MemberIdentity;
use protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use protocol::messages::offset_fetch_request::{OffsetFetchRequestGroup, OffsetFetchRequestTopics};
use protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use protocol::messages::{
    FetchRequest, HeartbeatRequest, JoinGroupRequest, JoinGroupResponse, LeaveGroupRequest,
    ListOffsetsRequest, MetadataRequest, OffsetCommitRequest, OffsetFetchRequest, SyncGroupRequest,
};
use protocol::record::Records;
use protocol::{ErrorCode, RequestBody, ResponseBody};

use super::assignor::{TopicPartition, PROTOCOL_TYPE, RANGE};
use crate::server::rest::bridge::{Bridge, Origin};
use crate::server::rest::error::RestError;

/// The session timeout a consumer instance joins with (ms); its heartbeats go every
/// [`HEARTBEAT_INTERVAL_MS`](super::HEARTBEAT_INTERVAL_MS).
pub const SESSION_TIMEOUT_MS: i32 = 10_000;
/// How long the coordinator waits for the members to rejoin in a rebalance (ms).
pub const REBALANCE_TIMEOUT_MS: i32 = 10_000;
/// The highest Fetch version sent: v13+ name topics by id only.
const FETCH_VERSION: i16 = 12;
/// The highest OffsetCommit and OffsetFetch versions sent (v10 name topics by id).
const OFFSETS_VERSION: i16 = 9;
/// ListOffsets' timestamp for the log start offset.
pub const EARLIEST: i64 = -2;
/// ListOffsets' timestamp for the log end offset.
pub const LATEST: i64 = -1;

/// One partition of a Fetch answer.
#[derive(Debug)]
pub struct FetchedPartition {
    /// Which partition.
    pub tp: TopicPartition,
    /// Its Kafka error (NONE when it has records).
    pub error: ErrorCode,
    /// Its record batches, concatenated.
    pub records: Bytes,
    /// Its HighWatermark and LogStartOffset as the Fetch answered them.
    pub high_watermark: i64,
    /// (See `high_watermark`.)
    pub log_start_offset: i64,
}

/// A consumer instance's way to the broker: the bridge and where the requests come from (the HTTP peer and
/// principal of a call; the instance owner's principal without a peer for its background work).
#[derive(Clone, Copy)]
pub struct Kafka<'a> {
    /// The in-process dispatcher.
    pub bridge: &'a Bridge,
    /// The caller.
    pub origin: &'a Origin,
}

fn unexpected() -> RestError {
    RestError::internal("unexpected response type")
}

impl Kafka<'_> {
    async fn call(&self, body: RequestBody, max_version: i16) -> Result<ResponseBody, RestError> {
        self.bridge
            .call_at_most(self.origin, body, max_version)
            .await
    }

    /// JoinGroup as `member_id` ("" for a new member) subscribed to `topics` with the range assignor.
    /// The answer's error code is the caller's to read (MEMBER_ID_REQUIRED is part of joining).
    pub async fn join(
        &self,
        group: &str,
        member_id: &str,
        subscription: Vec<u8>,
    ) -> Result<JoinGroupResponse, RestError> {
        let request = JoinGroupRequest {
            group_id: group.to_string(),
            session_timeout_ms: SESSION_TIMEOUT_MS,
            rebalance_timeout_ms: REBALANCE_TIMEOUT_MS,
            member_id: member_id.to_string(),
            protocol_type: PROTOCOL_TYPE.to_string(),
            protocols: vec![JoinGroupRequestProtocol {
                name: RANGE.to_string(),
                metadata: Bytes::from(subscription),
                ..Default::default()
            }],
            ..Default::default()
        };
        match self.call(RequestBody::JoinGroup(request), i16::MAX).await? {
            ResponseBody::JoinGroup(r) => Ok(r),
            _ => Err(unexpected()),
        }
    }

    /// SyncGroup in `generation` (the leader passes every member's assignment): this member's
    /// assignment bytes, or the Kafka error code.
    pub async fn sync(
        &self,
        group: &str,
        generation: i32,
        member_id: &str,
        assignments: Vec<(String, Vec<u8>)>,
    ) -> Result<Result<Bytes, ErrorCode>, RestError> {
        let assignments =
            assignments
                .into_iter()
                .map(|(member_id, a)| SyncGroupRequestAssignment {
                    member_id,
                    assignment: Bytes::from(a),
                    ..Default::default()
                });
        let request = SyncGroupRequest {
            group_id: group.to_string(),
            generation_id: generation,
            member_id: member_id.to_string(),
            protocol_type: Some(PROTOCOL_TYPE.to_string()),
            protocol_name: Some(RANGE.to_string()),
            assignments: assignments.collect(),
            ..Default::default()
        };
        match self.call(RequestBody::SyncGroup(request), i16::MAX).await? {
            ResponseBody::SyncGroup(r) if r.error_code == 0 => Ok(Ok(r.assignment)),
            ResponseBody::SyncGroup(r) => Ok(Err(ErrorCode(r.error_code))),
            _ => Err(unexpected()),
        }
    }

    /// Heartbeat in `generation`: the Kafka error code (NONE while the generation stands).
    pub async fn heartbeat(
        &self,
        group: &str,
        generation: i32,
        member_id: &str,
    ) -> Result<ErrorCode, RestError> {
        let request = HeartbeatRequest {
            group_id: group.to_string(),
            generation_id: generation,
            member_id: member_id.to_string(),
            ..Default::default()
        };
        match self.call(RequestBody::Heartbeat(request), i16::MAX).await? {
            ResponseBody::Heartbeat(r) => Ok(ErrorCode(r.error_code)),
            _ => Err(unexpected()),
        }
    }

    /// LeaveGroup for `member_id` (errors ignored: the member is gone either way once its session ends).
    pub async fn leave(&self, group: &str, member_id: &str) {
        let request = LeaveGroupRequest {
            group_id: group.to_string(),
            members: vec![MemberIdentity {
                member_id: member_id.to_string(),
                reason: Some("the REST consumer instance was closed".to_string()),
                ..Default::default()
            }],
            ..Default::default()
        };
        if let Err(e) = self.call(RequestBody::LeaveGroup(request), i16::MAX).await {
            tracing::debug!(group, member_id, error = %e.message, "REST consumer LeaveGroup failed");
        }
    }

    /// The partition counts of `topics` (`None`: every topic), leaving out topics the cluster does not
    /// have or that are not readable.
    pub async fn partition_counts(
        &self,
        topics: Option<&[String]>,
    ) -> Result<BTreeMap<String, i32>, RestError> {
        let topics = topics.map(|ts| {
            let named =
                ts.iter().map(
                    |t| protocol::messages::metadata_request::MetadataRequestTopic {
                        name: Some(t.clone()),
                        ..Default::default()
                    },
                );
            named.collect()
        });
        let request = MetadataRequest {
            topics,
            allow_auto_topic_creation: false,
            ..Default::default()
        };
        let ResponseBody::Metadata(r) = self.call(RequestBody::Metadata(request), i16::MAX).await?
        else {
            return Err(unexpected());
        };
        let ok = r
            .topics
            .into_iter()
            .filter(|t| t.error_code == 0 && !t.is_internal);
        let counts = ok.filter_map(|t| Some((t.name?, t.partitions.len() as i32)));
        Ok(counts.collect())
    }

    /// The committed offsets (and metadata) of `partitions` in `group`; a partition without one is
    /// left out.
    pub async fn committed(
        &self,
        group: &str,
        partitions: &[TopicPartition],
    ) -> Result<HashMap<TopicPartition, (i64, Option<String>)>, RestError> {
        let request = OffsetFetchRequest {
            groups: vec![OffsetFetchRequestGroup {
                group_id: group.to_string(),
                topics: Some(by_topic(partitions, |topic, partition_indexes| {
                    OffsetFetchRequestTopics {
                        name: topic,
                        partition_indexes,
                        ..Default::default()
                    }
                })),
                ..Default::default()
            }],
            ..Default::default()
        };
        let body = RequestBody::OffsetFetch(request);
        let ResponseBody::OffsetFetch(r) = self.call(body, OFFSETS_VERSION).await? else {
            return Err(unexpected());
        };
        let g = r.groups.into_iter().next().ok_or_else(unexpected)?;
        RestError::check(g.error_code, None)?;
        let mut out = HashMap::new();
        for t in g.topics {
            for p in t.partitions {
                RestError::check(p.error_code, None)?;
                if p.committed_offset >= 0 {
                    let tp = (t.name.clone(), p.partition_index);
                    out.insert(tp, (p.committed_offset, p.metadata));
                }
            }
        }
        Ok(out)
    }

    /// OffsetCommit of `offsets` (partition, next offset to read, metadata) in `group`, as `member_id`
    /// in `generation` (-1 and "" for an instance with a manual assignment).
    pub async fn commit(
        &self,
        group: &str,
        generation: i32,
        member_id: &str,
        offsets: &[(TopicPartition, i64, Option<String>)],
    ) -> Result<(), RestError> {
        let mut topics: BTreeMap<&str, Vec<OffsetCommitRequestPartition>> = BTreeMap::new();
        for ((topic, partition), offset, metadata) in offsets {
            topics
                .entry(topic)
                .or_default()
                .push(OffsetCommitRequestPartition {
                    partition_index: *partition,
                    committed_offset: *offset,
                    committed_metadata: Some(metadata.clone().unwrap_or_default()),
                    ..Default::default()
                });
        }
        let topics = topics
            .into_iter()
            .map(|(name, partitions)| OffsetCommitRequestTopic {
                name: name.to_string(),
                partitions,
                ..Default::default()
            });
        let request = OffsetCommitRequest {
            group_id: group.to_string(),
            generation_id_or_member_epoch: generation,
            member_id: member_id.to_string(),
            topics: topics.collect(),
            ..Default::default()
        };
        let body = RequestBody::OffsetCommit(request);
        let ResponseBody::OffsetCommit(r) = self.call(body, OFFSETS_VERSION).await? else {
            return Err(unexpected());
        };
        for p in r.topics.iter().flat_map(|t| &t.partitions) {
            RestError::check(p.error_code, None)?;
        }
        Ok(())
    }

    /// ListOffsets of `partitions` at `timestamp` ([`EARLIEST`] or [`LATEST`]).
    pub async fn list_offsets(
        &self,
        partitions: &[TopicPartition],
        timestamp: i64,
    ) -> Result<HashMap<TopicPartition, i64>, RestError> {
        let topics = by_topic(partitions, |name, indexes| ListOffsetsTopic {
            name,
            partitions: (indexes.into_iter())
                .map(|partition_index| ListOffsetsPartition {
                    partition_index,
                    current_leader_epoch: -1,
                    timestamp,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        });
        let request = ListOffsetsRequest {
            replica_id: -1,
            topics,
            ..Default::default()
        };
        let body = RequestBody::ListOffsets(request);
        let ResponseBody::ListOffsets(r) = self.call(body, i16::MAX).await? else {
            return Err(unexpected());
        };
        let mut out = HashMap::new();
        for t in r.topics {
            for p in t.partitions {
                RestError::check(p.error_code, None)?;
                out.insert((t.name.clone(), p.partition_index), p.offset);
            }
        }
        Ok(out)
    }

    /// Fetch (read_uncommitted) from `positions`, waiting up to `max_wait_ms` for `min_bytes`, at most
    /// `max_bytes` in all and per partition.
    pub async fn fetch(
        &self,
        positions: &[(TopicPartition, i64)],
        max_wait_ms: i32,
        min_bytes: i32,
        max_bytes: i32,
    ) -> Result<Vec<FetchedPartition>, RestError> {
        let mut topics: BTreeMap<&str, Vec<FetchPartition>> = BTreeMap::new();
        for ((topic, partition), offset) in positions {
            topics.entry(topic).or_default().push(FetchPartition {
                partition: *partition,
                current_leader_epoch: -1,
                fetch_offset: *offset,
                partition_max_bytes: max_bytes,
                ..Default::default()
            });
        }
        let topics = topics.into_iter().map(|(topic, partitions)| FetchTopic {
            topic: topic.to_string(),
            partitions,
            ..Default::default()
        });
        let request = FetchRequest {
            replica_id: -1,
            max_wait_ms,
            min_bytes,
            max_bytes,
            isolation_level: 0,
            session_id: 0,
            session_epoch: -1,
            topics: topics.collect(),
            ..Default::default()
        };
        let body = RequestBody::Fetch(request);
        let ResponseBody::Fetch(r) = self.call(body, FETCH_VERSION).await? else {
            return Err(unexpected());
        };
        RestError::check(r.error_code, None)?;
        let mut out = Vec::new();
        for t in r.responses {
            for p in t.partitions {
                let records = match p.records {
                    Some(Records::Memory(b)) => b,
                    _ => Bytes::new(),
                };
                out.push(FetchedPartition {
                    tp: (t.topic.clone(), p.partition_index),
                    error: ErrorCode(p.error_code),
                    records,
                    high_watermark: p.high_watermark,
                    log_start_offset: p.log_start_offset,
                });
            }
        }
        Ok(out)
    }
}

/// `partitions` grouped by topic (in topic order), each group made into a `T` by `make`.
fn by_topic<T>(partitions: &[TopicPartition], make: impl Fn(String, Vec<i32>) -> T) -> Vec<T> {
    let mut topics: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for (t, p) in partitions {
        topics.entry(t).or_default().push(*p);
    }
    (topics.into_iter())
        .map(|(t, ps)| make(t.to_string(), ps))
        .collect()
}
