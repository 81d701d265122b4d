//! ShareFetch (key 78) and ShareAcknowledge (key 79), v1–2: record delivery to share-group members
//! (KIP-932). Source: Kafka protocol guide; KIP-932; KIP-1206 (ShareAcquireMode), KIP-1222 (renew).
//!
//! - The request's share session ([`crate::share::sessions`]) says which partitions to fetch; a session
//!   error is the top-level error. Epoch -1 closes the session: its acknowledgements are applied, nothing is
//!   fetched, and the member's acquired records are released.
//! - Acknowledgements first (a partition's failure is its `acknowledge_error_code`, the others go on), then
//!   acquisition from every session partition led here within `max_bytes` and `max_records`
//!   ([`crate::share::SharePartitionManager::acquire`]).
//! - When nothing was acquired the request waits, at most `max_wait_ms`, for an append to one of its
//!   partitions or a release of records (an acknowledgement RELEASE, a lock expiry, a closed session).
//! - Authorization: READ on the group (GROUP_AUTHORIZATION_FAILED at the top level); READ on each topic
//!   (TOPIC_AUTHORIZATION_FAILED on its partitions). An unknown topic id is UNKNOWN_TOPIC_ID, an unknown
//!   partition of a known topic UNKNOWN_TOPIC_OR_PARTITION; neither enters the share session.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use protocol::error::ErrorCode;
use protocol::messages::share_acknowledge_response as ack_resp;
use protocol::messages::share_fetch_response::{self as resp, AcquiredRecords as WireAcquired};
use protocol::messages::{
    ShareAcknowledgeRequest, ShareAcknowledgeResponse, ShareFetchRequest, ShareFetchResponse,
};
use replica::partition::Partition;
use share::{AcknowledgeType, AcknowledgementBatch};
use uuid::Uuid;

use super::KafkaApis;
use crate::server::context::RequestContext;
use crate::share::sessions::{SessionPartition, SessionUpdate, ShareSessionError};
use crate::share::SharePartitionError;
use authorizer::{AclOperation, ResourceType};

/// Longest a ShareFetch is held, ms (as Fetch's cap).
const MAX_WAIT_CAP_MS: i32 = 30_000;

/// A partition of the request: its resolution and acknowledgement outcome.
#[derive(Default)]
struct Slot {
    /// The led partition, or why not.
    partition: Option<Result<Arc<Partition>, ErrorCode>>,
    /// Acknowledgement error (0 = none or no acknowledgements).
    ack_error: i16,
    /// Whether the request named it (it is answered even without records).
    named: bool,
    acquired: Option<crate::share::Acquired>,
}

type Slots = BTreeMap<(Uuid, i32), Slot>;

/// Wire acknowledgement batches → the share-partition's, INVALID_REQUEST for unknown types.
fn batches(
    wire: impl IntoIterator<Item = (i64, i64, Vec<i8>)>,
) -> Result<Vec<AcknowledgementBatch>, ErrorCode> {
    wire.into_iter()
        .map(|(first_offset, last_offset, types)| {
            let types = (types.into_iter())
                .map(|t| AcknowledgeType::from_id(t).ok_or(ErrorCode::INVALID_REQUEST))
                .collect::<Result<Vec<_>, _>>()?;
            if types.is_empty() || last_offset < first_offset {
                return Err(ErrorCode::INVALID_REQUEST);
            }
            Ok(AcknowledgementBatch {
                first_offset,
                last_offset,
                types,
            })
        })
        .collect()
}

/// Resolves `topic_id`-`index` to the partition led here (UNKNOWN_TOPIC_ID, TOPIC_AUTHORIZATION_FAILED,
/// UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER).
fn resolve(
    apis: &KafkaApis,
    ctx: &RequestContext,
    topic_id: Uuid,
    index: i32,
) -> Result<Arc<Partition>, ErrorCode> {
    let image = apis.metadata_cache().image();
    let Some(name) = image.topics.name_by_id(topic_id) else {
        return Err(ErrorCode::UNKNOWN_TOPIC_ID);
    };
    if !ctx.is_allowed(AclOperation::Read, ResourceType::Topic, name) {
        return Err(ErrorCode::TOPIC_AUTHORIZATION_FAILED);
    }
    apis.shares().leader(name, index).map_err(ErrorCode::from)
}

/// Applies the acknowledgements of one partition; its error code (0 = applied).
async fn acknowledge(
    apis: &KafkaApis,
    ctx: &RequestContext,
    (group, member): (&str, &str),
    (topic_id, index): (Uuid, i32),
    wire: Vec<(i64, i64, Vec<i8>)>,
) -> i16 {
    let partition = match resolve(apis, ctx, topic_id, index) {
        Ok(p) => p,
        Err(code) => return code.0,
    };
    let batches = match batches(wire) {
        Ok(b) => b,
        Err(code) => return code.0,
    };
    match apis
        .shares()
        .acknowledge(group, member, &partition, &batches)
        .await
    {
        Ok(()) => 0,
        Err(e) => ErrorCode::from(e).0,
    }
}

fn group_and_member(group: Option<&String>, member: Option<&String>) -> Option<(String, String)> {
    match (group, member) {
        (Some(g), Some(m)) if !g.is_empty() && !m.is_empty() && m.len() <= MAX_MEMBER_ID_BYTES => {
            Some((g.clone(), m.clone()))
        }
        _ => None,
    }
}

/// The longest member id a ShareFetch or ShareAcknowledge may name: a member id is a client-generated UUID
/// (22 characters in base64, 36 as text), and every acquired record keeps a copy of its holder's id.
const MAX_MEMBER_ID_BYTES: usize = 36;

/// Answers one ShareFetch.
pub async fn fetch(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: ShareFetchRequest,
) -> ShareFetchResponse {
    let top = |code: ErrorCode, message: Option<String>| ShareFetchResponse {
        error_code: code.0,
        error_message: message,
        ..Default::default()
    };
    let Some((group, member)) =
        group_and_member(request.group_id.as_ref(), request.member_id.as_ref())
    else {
        return top(
            ErrorCode::INVALID_REQUEST,
            Some("GroupId and MemberId (at most 36 bytes) are required.".into()),
        );
    };
    if let Err(d) = ctx.authorize(AclOperation::Read, ResourceType::Group, &group) {
        return top(ErrorCode::from(d), None);
    }
    let shares = apis.shares();
    let (named, unknown) = existing_partitions(apis, &request);
    let forgotten: Vec<(Uuid, i32)> = (request.forgotten_topics_data.iter())
        .flat_map(|t| t.partitions.iter().map(move |p| (t.topic_id, *p)))
        .collect();
    let epoch = request.share_session_epoch;
    let session = match update_session(apis, ctx, (&group, &member), epoch, &named, &forgotten) {
        Ok(u) => u,
        Err(e) => return top(ErrorCode::from(e), None),
    };
    let limits = request_limits(&request);
    let mut slots: Slots = BTreeMap::new();
    for t in request.topics {
        for p in t.partitions {
            let wire: Vec<(i64, i64, Vec<i8>)> = (p.acknowledgement_batches.into_iter())
                .map(|b| (b.first_offset, b.last_offset, b.acknowledge_types))
                .collect();
            let slot = slots.entry((t.topic_id, p.partition_index)).or_default();
            slot.named = true;
            if !wire.is_empty() {
                let key = (t.topic_id, p.partition_index);
                slot.ack_error = acknowledge(apis, ctx, (&group, &member), key, wire).await;
            }
        }
    }
    let fetchable = match session {
        SessionUpdate::Closed => {
            shares.release_member(&group, &member).await;
            Vec::new()
        }
        SessionUpdate::Open(partitions) => partitions,
    };
    for key in &fetchable {
        let slot = slots.entry(*key).or_default();
        slot.partition = Some(resolve(apis, ctx, key.0, key.1));
    }
    for (key, code) in unknown {
        slots.entry(key).or_default().partition = Some(Err(code));
    }
    acquire_waiting(apis, &group, &member, &limits, &mut slots).await;
    ShareFetchResponse {
        acquisition_lock_timeout_ms: shares
            .lock_duration_ms(&group)
            .clamp(0, i64::from(i32::MAX)) as i32,
        responses: fetch_answers(slots),
        ..Default::default()
    }
}

/// Applies a ShareFetch's or ShareAcknowledge's session epoch and partitions to the member's share session
/// and records on the connection whether it still holds that session (its close releases the member's
/// records only while it does).
fn update_session(
    apis: &KafkaApis,
    ctx: &RequestContext,
    (group, member): (&str, &str),
    epoch: i32,
    named: &[SessionPartition],
    forgotten: &[SessionPartition],
) -> Result<SessionUpdate, ShareSessionError> {
    let owner = &ctx.connection.share_members;
    let update = (apis.shares().sessions.lock()).update(
        (group, member),
        owner.id,
        epoch,
        named,
        forgotten,
    )?;
    if update == SessionUpdate::Closed {
        owner.forget(group, member);
    } else {
        owner.note(group, member);
    }
    Ok(update)
}

/// The request's partitions split into those the metadata image has, which enter the share session, and
/// the others with their error (UNKNOWN_TOPIC_ID, UNKNOWN_TOPIC_OR_PARTITION), answered once and not kept: a
/// session then never holds more partitions than the cluster has, whatever a request names. (Kafka keeps
/// unknown ones in the session too, so one request of `socket.request.max.bytes` could pin millions.)
fn existing_partitions(
    apis: &KafkaApis,
    request: &ShareFetchRequest,
) -> (Vec<SessionPartition>, Vec<(SessionPartition, ErrorCode)>) {
    let image = apis.metadata_cache().image();
    let (mut known, mut unknown) = (Vec::new(), Vec::new());
    for t in &request.topics {
        let topic = image.topics.by_id(t.topic_id);
        for p in &t.partitions {
            let key = (t.topic_id, p.partition_index);
            match topic {
                None => unknown.push((key, ErrorCode::UNKNOWN_TOPIC_ID)),
                Some(topic) if !topic.partitions.contains_key(&p.partition_index) => {
                    unknown.push((key, ErrorCode::UNKNOWN_TOPIC_OR_PARTITION))
                }
                Some(_) => known.push(key),
            }
        }
    }
    (known, unknown)
}

/// (max_wait_ms, max_bytes, max_records, strict) of a ShareFetch.
fn request_limits(r: &ShareFetchRequest) -> (i32, i32, usize, bool) {
    let max_records = match r.max_records {
        n if n > 0 => n as usize,
        _ => 500,
    };
    let max_bytes = if r.max_bytes > 0 {
        r.max_bytes
    } else {
        i32::MAX
    };
    // ShareAcquireMode 1 = record-limit (KIP-1206): never more than MaxRecords.
    (
        r.max_wait_ms.clamp(0, MAX_WAIT_CAP_MS),
        max_bytes,
        max_records,
        r.share_acquire_mode == 1,
    )
}

/// Acquires from every resolved slot; when nothing was acquired, waits (bounded by `max_wait_ms`) for an
/// append to one of the partitions or a release, and tries again.
async fn acquire_waiting(
    apis: &KafkaApis,
    group: &str,
    member: &str,
    &(max_wait_ms, max_bytes, max_records, strict): &(i32, i32, usize, bool),
    slots: &mut Slots,
) {
    let shares = apis.shares();
    let deadline = tokio::time::Instant::now() + Duration::from_millis(max_wait_ms as u64);
    loop {
        let partitions: Vec<Arc<Partition>> = (slots.values())
            .filter_map(|s| s.partition.as_ref().and_then(|p| p.as_ref().ok()).cloned())
            .collect();
        let mut notified: Vec<_> = (partitions.iter())
            .map(|p| Box::pin(p.changed().notified()))
            .collect();
        for n in notified.iter_mut() {
            n.as_mut().enable();
        }
        let released = shares.released().notified();
        tokio::pin!(released);
        released.as_mut().enable();
        let (mut bytes_left, mut records_left) = (max_bytes, max_records);
        let mut any = false;
        for slot in slots.values_mut() {
            let Some(Ok(partition)) = &slot.partition else {
                continue;
            };
            if records_left == 0 || bytes_left <= 0 {
                break;
            }
            let limits = (bytes_left, records_left, strict);
            match shares.acquire(group, member, partition, limits).await {
                Ok(a) if !a.acquired.is_empty() => {
                    let n: i64 = (a.acquired.iter())
                        .map(|r| r.last_offset - r.first_offset + 1)
                        .sum();
                    records_left = records_left.saturating_sub(n.max(0) as usize);
                    let len = a.records.as_ref().map_or(0, |r| r.len());
                    bytes_left = bytes_left.saturating_sub(len.min(i32::MAX as usize) as i32);
                    slot.acquired = Some(a);
                    any = true;
                }
                Ok(_) => {}
                // The share-partition's state is not reachable yet (its share coordinator is being elected
                // or loading, past the persister's retries): nothing to deliver this time. The Java client
                // takes a coordinator code on a ShareFetch partition as fatal ("Unexpected error code"), as
                // Kafka never sends one there.
                Err(SharePartitionError::Coordinator(c)) if c.is_transient() => {
                    tracing::debug!(group, error = %c, "share-partition state not reachable yet");
                }
                Err(e) => slot.partition = Some(Err(ErrorCode::from(e))),
            }
        }
        if any || partitions.is_empty() || tokio::time::Instant::now() >= deadline {
            return;
        }
        let changed = futures::future::select_all(notified);
        tokio::select! {
            _ = changed => {}
            _ = &mut released => {}
            _ = tokio::time::sleep_until(deadline) => return,
        }
    }
}

/// The response topics: each partition named by the request, or with records, or with an error.
fn fetch_answers(slots: Slots) -> Vec<resp::ShareFetchableTopicResponse> {
    let mut topics: BTreeMap<Uuid, Vec<resp::PartitionData>> = BTreeMap::new();
    for ((topic_id, index), slot) in slots {
        let error = match &slot.partition {
            Some(Err(code)) => code.0,
            _ => 0,
        };
        let leader = match &slot.partition {
            Some(Ok(p)) => resp::LeaderIdAndEpoch {
                leader_id: p.registration().leader.into(),
                leader_epoch: p.leader_epoch().get(),
                ..Default::default()
            },
            _ => resp::LeaderIdAndEpoch {
                leader_id: -1,
                leader_epoch: -1,
                ..Default::default()
            },
        };
        let has_records = slot.acquired.is_some();
        if !slot.named && !has_records && error == 0 {
            continue;
        }
        let (records, acquired) = match slot.acquired {
            Some(a) => (a.records, a.acquired),
            None => (None, Vec::new()),
        };
        // Not nullable on the wire: a partition without records carries an empty set.
        let records =
            records.or_else(|| Some(protocol::record::Records::Memory(bytes::Bytes::new())));
        topics
            .entry(topic_id)
            .or_default()
            .push(resp::PartitionData {
                partition_index: index,
                error_code: error,
                acknowledge_error_code: slot.ack_error,
                current_leader: leader,
                records,
                acquired_records: (acquired.into_iter())
                    .map(|a| WireAcquired {
                        first_offset: a.first_offset,
                        last_offset: a.last_offset,
                        delivery_count: a.delivery_count,
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            });
    }
    (topics.into_iter())
        .map(|(topic_id, partitions)| resp::ShareFetchableTopicResponse {
            topic_id,
            partitions,
            ..Default::default()
        })
        .collect()
}

/// Answers one ShareAcknowledge.
pub async fn acknowledge_request(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: ShareAcknowledgeRequest,
) -> ShareAcknowledgeResponse {
    let top = |code: ErrorCode| ShareAcknowledgeResponse {
        error_code: code.0,
        ..Default::default()
    };
    let Some((group, member)) =
        group_and_member(request.group_id.as_ref(), request.member_id.as_ref())
    else {
        return top(ErrorCode::INVALID_REQUEST);
    };
    if let Err(d) = ctx.authorize(AclOperation::Read, ResourceType::Group, &group) {
        return top(ErrorCode::from(d));
    }
    let epoch = request.share_session_epoch;
    if epoch == 0 {
        return top(ErrorCode::INVALID_SHARE_SESSION_EPOCH);
    }
    let shares = apis.shares();
    let session = match update_session(apis, ctx, (&group, &member), epoch, &[], &[]) {
        Ok(s) => s,
        Err(e) => return top(ErrorCode::from(e)),
    };
    let mut responses = Vec::new();
    for t in request.topics {
        let mut partitions = Vec::new();
        for p in t.partitions {
            let wire: Vec<(i64, i64, Vec<i8>)> = (p.acknowledgement_batches.into_iter())
                .map(|b| (b.first_offset, b.last_offset, b.acknowledge_types))
                .collect();
            let key = (t.topic_id, p.partition_index);
            let code = acknowledge(apis, ctx, (&group, &member), key, wire).await;
            partitions.push(ack_resp::PartitionData {
                partition_index: p.partition_index,
                error_code: code,
                ..Default::default()
            });
        }
        responses.push(ack_resp::ShareAcknowledgeTopicResponse {
            topic_id: t.topic_id,
            partitions,
            ..Default::default()
        });
    }
    if session == SessionUpdate::Closed {
        shares.release_member(&group, &member).await;
    }
    ShareAcknowledgeResponse {
        acquisition_lock_timeout_ms: shares
            .lock_duration_ms(&group)
            .clamp(0, i64::from(i32::MAX)) as i32,
        responses,
        ..Default::default()
    }
}
