//! The Fetch handler's side of incremental fetch sessions (KIP-227): [`begin`] reads a request's
//! `session_id`/`session_epoch` and, for an incremental fetch, updates the session and puts its partitions
//! (in session order) in place of the request's, so the handler reads them like any Fetch's; [`finish`]
//! creates the session of a full fetch from what was answered, or drops from an incremental answer the
//! partitions that did not change. The rules and the cache are in [`crate::fetch_session`]; this module
//! maps its errors to Kafka codes and publishes the cache's metrics:
//!
//! | name | Kafka MBean |
//! |---|---|
//! | `kafka_server_fetchsessioncache_numincrementalfetchsessions` | FetchSessionCache `NumIncrementalFetchSessions` |
//! | `kafka_server_fetchsessioncache_numincrementalfetchpartitionscached` | FetchSessionCache `NumIncrementalFetchPartitionsCached` |
//! | `kafka_server_fetchsessioncache_incrementalfetchsessionevictions_total` | FetchSessionCache `IncrementalFetchSessionEvictionsPerSec` (a counter; its `rate()`) |

use parking_lot::Mutex;
use protocol::error::ErrorCode;
use protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use protocol::messages::fetch_response::PartitionData;
use protocol::messages::{FetchRequest, FetchResponse};

use super::errors::fetch_session_error_code;
use super::KafkaApis;
use crate::config::{keys, BrokerConfig};
use crate::fetch_session::cache::Incremental;
use crate::fetch_session::{
    CachedPartition, FetchSessionCache, FetchSessionConfig, PartitionAnswer, PartitionFetch,
    PartitionKey, PartitionState, SessionRequest, TopicKey, INVALID_SESSION_ID,
};

/// The broker's fetch session cache, sized by `max.incremental.fetch.session.cache.slots`.
pub(super) fn new_cache(config: &BrokerConfig) -> Mutex<FetchSessionCache> {
    let slots = config.get(keys::MAX_INCREMENTAL_FETCH_SESSION_CACHE_SLOTS);
    let config = FetchSessionConfig {
        max_slots: slots.max(0) as usize,
        ..FetchSessionConfig::default()
    };
    let cache = FetchSessionCache::new(config, rand::random());
    publish_metrics(&cache);
    Mutex::new(cache)
}

/// What [`finish`] does once the partitions are read.
#[derive(Clone, Copy, Debug)]
pub(super) enum SessionPlan {
    /// Answer every partition, session id 0.
    Sessionless,
    /// Answer every partition and create a session of them if a slot is free.
    Full,
    /// Answer the changed partitions of session `id` at its new `epoch`.
    Incremental { id: i32, epoch: i32 },
}

/// Applies the session part of `request` (Fetch `version`): closes a
/// session a full fetch names; for an incremental fetch updates the session and replaces
/// `request.topics` by its partitions. `Err` is the whole answer: FETCH_SESSION_ID_NOT_FOUND,
/// INVALID_FETCH_SESSION_EPOCH, FETCH_SESSION_TOPIC_ID_ERROR or INVALID_REQUEST (too many partitions), with
/// session id 0 and no partitions.
pub(super) fn begin(
    apis: &KafkaApis,
    version: i16,
    request: &mut FetchRequest,
) -> Result<SessionPlan, FetchResponse> {
    let now_ms = now_ms(apis);
    let (plan, close) = match SessionRequest::classify(request.session_id, request.session_epoch) {
        SessionRequest::Sessionless { close } => (SessionPlan::Sessionless, close),
        SessionRequest::Full { close } => (SessionPlan::Full, close),
        SessionRequest::Incremental { session_id, epoch } => {
            let uses_topic_ids = version >= 13;
            // Keyed outside the lock: a request may name many partitions.
            let updates = requested(version, &request.topics);
            let forgotten = forgotten(version, request);
            let result = {
                let mut cache = apis.fetch_sessions.lock();
                let result = cache.update(
                    now_ms,
                    session_id,
                    epoch,
                    uses_topic_ids,
                    updates,
                    &forgotten,
                );
                publish_metrics(&cache);
                result
            };
            request.forgotten_topics_data.clear();
            let plan = match result {
                Ok(Incremental::Read { epoch, partitions }) => {
                    request.topics = session_topics(&partitions);
                    SessionPlan::Incremental {
                        id: session_id,
                        epoch,
                    }
                }
                Ok(Incremental::Closed) => {
                    request.topics.clear();
                    SessionPlan::Sessionless
                }
                Err(e) => {
                    tracing::debug!(error = %e, "incremental fetch refused");
                    return Err(error_response(fetch_session_error_code(&e)));
                }
            };
            (plan, None)
        }
    };
    if let Some(id) = close {
        let mut cache = apis.fetch_sessions.lock();
        cache.remove(id);
        publish_metrics(&cache);
    }
    Ok(plan)
}

/// Completes `response` (the answer to `request` as [`begin`] left it; `throttled`: a quota emptied it)
/// by `plan`: a full fetch's session is created from the answered offsets (unless throttled) and its id
/// answered, 0 without a slot; an incremental answer keeps only the partitions that changed (all of them
/// dropped, and nothing recorded, when throttled). `privileged`: a follower's fetch.
pub(super) fn finish(
    apis: &KafkaApis,
    plan: SessionPlan,
    version: i16,
    privileged: bool,
    request: &FetchRequest,
    response: &mut FetchResponse,
    throttled: bool,
) {
    match plan {
        SessionPlan::Sessionless => response.session_id = INVALID_SESSION_ID,
        SessionPlan::Full if throttled => response.session_id = INVALID_SESSION_ID,
        SessionPlan::Full => {
            let id = answered(version, request, response).and_then(|partitions| {
                let now_ms = now_ms(apis);
                let mut cache = apis.fetch_sessions.lock();
                let id = cache.create(now_ms, privileged, version >= 13, partitions);
                publish_metrics(&cache);
                id
            });
            response.session_id = id.unwrap_or(INVALID_SESSION_ID);
        }
        SessionPlan::Incremental { id, .. } if throttled => response.session_id = id,
        SessionPlan::Incremental { id, epoch } => {
            let answers: Vec<PartitionAnswer> = (response.responses.iter())
                .flat_map(|t| t.partitions.iter().map(answer_of))
                .collect();
            let sent = apis.fetch_sessions.lock().respond(id, epoch, &answers);
            match sent {
                Ok(sent) => {
                    let mut sent = sent.into_iter();
                    for t in &mut response.responses {
                        t.partitions
                            .retain(|_| sent.next().expect("one flag per partition"));
                    }
                    response.responses.retain(|t| !t.partitions.is_empty());
                    response.session_id = id;
                }
                Err(e) => *response = error_response(fetch_session_error_code(&e)),
            }
        }
    }
}

/// The session's clock reading: the broker's monotonic clock, ms.
fn now_ms(apis: &KafkaApis) -> u64 {
    apis.replica_manager.clock().monotonic_ms().max(0) as u64
}

/// A whole-request error answer: `code`, session id 0, no partitions (Kafka's `SessionErrorContext`).
fn error_response(code: ErrorCode) -> FetchResponse {
    FetchResponse {
        error_code: code.0,
        session_id: INVALID_SESSION_ID,
        ..Default::default()
    }
}

/// A requested topic's key in a session of Fetch `version`.
fn topic_key(version: i16, name: &str, id: uuid::Uuid) -> TopicKey {
    match version >= 13 {
        true => TopicKey::Id(id),
        false => TopicKey::Name(name.to_string()),
    }
}

/// The fetch parameters of a requested partition.
fn partition_fetch(p: &FetchPartition) -> PartitionFetch {
    PartitionFetch {
        fetch_offset: p.fetch_offset,
        log_start_offset: p.log_start_offset,
        max_bytes: p.partition_max_bytes,
        current_leader_epoch: p.current_leader_epoch,
        last_fetched_epoch: p.last_fetched_epoch,
    }
}

/// The request's partitions in order, keyed for a session of `version`.
fn requested(version: i16, topics: &[FetchTopic]) -> Vec<(PartitionKey, PartitionFetch)> {
    (topics.iter())
        .flat_map(|t| {
            t.partitions.iter().map(move |p| {
                let topic = topic_key(version, &t.topic, t.topic_id);
                let key = PartitionKey {
                    topic,
                    partition: p.partition,
                };
                (key, partition_fetch(p))
            })
        })
        .collect()
}

/// The request's `forgotten_topics_data`, keyed for a session of `version`.
fn forgotten(version: i16, request: &FetchRequest) -> Vec<PartitionKey> {
    (request.forgotten_topics_data.iter())
        .flat_map(|t| {
            t.partitions.iter().map(move |&partition| PartitionKey {
                topic: topic_key(version, &t.topic, t.topic_id),
                partition,
            })
        })
        .collect()
}

/// A session's partitions as request topics, in session order (consecutive partitions of a topic share
/// one entry; a topic may come back after another's, as in Kafka's answers).
fn session_topics(partitions: &[CachedPartition]) -> Vec<FetchTopic> {
    let mut topics: Vec<FetchTopic> = Vec::new();
    for p in partitions {
        let f = &p.fetch;
        let part = FetchPartition {
            partition: p.key.partition,
            current_leader_epoch: f.current_leader_epoch,
            fetch_offset: f.fetch_offset,
            last_fetched_epoch: f.last_fetched_epoch,
            log_start_offset: f.log_start_offset,
            partition_max_bytes: f.max_bytes,
            ..Default::default()
        };
        let same = |t: &FetchTopic| match &p.key.topic {
            TopicKey::Id(id) => t.topic_id == *id,
            TopicKey::Name(name) => t.topic == *name,
        };
        match topics.last_mut().filter(|t| same(t)) {
            Some(t) => t.partitions.push(part),
            None => {
                let (topic, topic_id) = match &p.key.topic {
                    TopicKey::Id(id) => (String::new(), *id),
                    TopicKey::Name(name) => (name.clone(), uuid::Uuid::nil()),
                };
                topics.push(FetchTopic {
                    topic,
                    topic_id,
                    partitions: vec![part],
                    ..Default::default()
                });
            }
        }
    }
    topics
}

/// A full fetch's partitions with what was answered for them (the handler answers every requested
/// partition in request order), as a new session holds them; `None` (no session) if the answer does not
/// match the request.
fn answered(
    version: i16,
    request: &FetchRequest,
    response: &FetchResponse,
) -> Option<Vec<CachedPartition>> {
    let requested = requested(version, &request.topics);
    let answers = (response.responses.iter()).flat_map(|t| t.partitions.iter().map(answer_of));
    let answered: usize = response.responses.iter().map(|t| t.partitions.len()).sum();
    if answered != requested.len() {
        debug_assert!(
            false,
            "{answered} answers to {} partitions",
            requested.len()
        );
        return None;
    }
    let partitions = (requested.into_iter())
        .zip(answers)
        .map(|((key, fetch), answer)| {
            let mut p = CachedPartition::new(key, fetch);
            p.must_respond(&answer);
            p
        })
        .collect();
    Some(partitions)
}

/// What the session compares of one partition's answer.
fn answer_of(p: &PartitionData) -> PartitionAnswer {
    PartitionAnswer {
        state: PartitionState {
            high_watermark: p.high_watermark,
            last_stable_offset: p.last_stable_offset,
            log_start_offset: p.log_start_offset,
        },
        has_records: p.records.as_ref().is_some_and(|r| !r.is_empty()),
        error: p.error_code != ErrorCode::NONE.0,
        urgent: p.diverging_epoch.epoch >= 0
            || p.diverging_epoch.end_offset >= 0
            || p.preferred_read_replica >= 0,
    }
}

/// Sets the cache's gauges and eviction counter.
fn publish_metrics(cache: &FetchSessionCache) {
    metrics::gauge!("kafka_server_fetchsessioncache_numincrementalfetchsessions")
        .set(cache.len() as f64);
    metrics::gauge!("kafka_server_fetchsessioncache_numincrementalfetchpartitionscached")
        .set(cache.num_partitions() as f64);
    metrics::counter!("kafka_server_fetchsessioncache_incrementalfetchsessionevictions_total")
        .absolute(cache.evictions());
}
