//! Follower replication (Kafka's `ReplicaFetcherThread`): one task per leader broker pulls the partitions
//! this broker follows from that leader over the Kafka protocol, with our own codec.
//!
//! Per partition:
//! 1. Truncation (KIP-101, KIP-279): OffsetForLeaderEpoch v4 for the follower's latest epoch, then truncate
//!    to [`truncation_offset`] (the leader's end offset for that epoch, capped by ours and our LEO). A
//!    follower with no epochs truncates to its HighWatermark.
//! 2. Fetch v12 (replica_id = local id, max_wait 500 ms, min_bytes 1, 1 MiB per partition) from the LEO,
//!    `last_fetched_epoch` = latest epoch: records are appended with `append_as_follower`, then
//!    HW = min(leader HW, LEO) and the LogStartOffset follows the leader's. A `diverging_epoch` in the answer
//!    truncates as in step 1. OFFSET_OUT_OF_RANGE: below the leader's LogStartOffset → the log is emptied and
//!    restarted there; otherwise truncate to the leader's HW.
//!    The Fetch runs in an incremental fetch session with the leader (KIP-227, [`FetchSessionHandler`]): a
//!    full fetch at epoch 0 first, then incremental fetches naming only the partitions whose fetch state
//!    changed (LEO, log start, epochs) and forgetting the ones not fetched this round (paused for truncation
//!    or a backoff; they come back as new); the answer omits the partitions with nothing new. A leader
//!    answering session id 0 gets full fetches; FETCH_SESSION_ID_NOT_FOUND / INVALID_FETCH_SESSION_EPOCH /
//!    FETCH_SESSION_TOPIC_ID_ERROR or a lost connection start a new session with a full fetch at once.
//! 3. NOT_LEADER_OR_FOLLOWER / UNKNOWN_LEADER_EPOCH / UNKNOWN_TOPIC_OR_PARTITION (the leader has not applied
//!    the metadata yet) back off 100 ms, FENCED_LEADER_EPOCH and others 1 s; new metadata re-adds the
//!    partition at once.
//!
//! Connection errors reconnect with a bounded exponential backoff (100 ms .. 5 s). The task stops when its
//! partition set becomes empty (the manager then stops it) or on shutdown. Records are applied only while the
//! partition is still following this leader in the epoch the fetcher was given.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use parking_lot::Mutex;
use protocol::error::ErrorCode;
use protocol::messages::fetch_request::{FetchPartition, FetchTopic, ForgottenTopic};
use protocol::messages::fetch_response::PartitionData;
use protocol::messages::offset_for_leader_epoch_request::{
    OffsetForLeaderPartition, OffsetForLeaderTopic,
};
use protocol::messages::{FetchRequest, OffsetForLeaderEpochRequest};
use protocol::record::Records;
use protocol::{RequestBody, RequestHeader, ResponseBody};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use types::{BrokerId, Clock, LeaderEpoch, Offset};

use crate::cluster_link::{ClusterLink, TopicPartition};
use crate::fetch_session_handler::FetchSessionHandler;
use crate::partition::Partition;
use crate::replication_quota::ReplicationQuota;
use crate::transport::{BoxedStream, Connector, TcpConnector};

/// Fetch version used by followers (topic names, flexible; KIP-595 diverging epochs).
const FETCH_VERSION: i16 = 12;
/// OffsetForLeaderEpoch version used by followers.
const OFFSET_FOR_LEADER_EPOCH_VERSION: i16 = 4;
/// Fetch `max_wait_ms` (Kafka's `replica.fetch.wait.max.ms` default).
const FETCH_MAX_WAIT_MS: i32 = 500;
/// Per-partition fetch size (Kafka's `replica.fetch.max.bytes` default, bytes).
const PARTITION_MAX_BYTES: i32 = 1024 * 1024;
/// Whole-response fetch size (Kafka's `replica.fetch.response.max.bytes` default, bytes).
const RESPONSE_MAX_BYTES: i32 = 10 * 1024 * 1024;
/// Bound on connecting and on one request's round trip beyond its `max_wait`.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Reconnect backoff of a fetcher: doubles from 100 ms up to 1 s (Kafka's `replica.fetch.backoff.ms` default), so a
/// restarted leader is fetched from again within a second.
const MIN_BACKOFF: Duration = Duration::from_millis(100);
/// Upper bound of the reconnect backoff.
const MAX_BACKOFF: Duration = Duration::from_secs(1);
/// How long a fetcher whose every partition is throttled waits before it looks at the quota again.
const THROTTLE_BACKOFF: Duration = Duration::from_millis(100);

/// One followed partition.
struct FetchState {
    partition: Arc<Partition>,
    leader_epoch: LeaderEpoch,
    needs_truncation: bool,
    retry_at: Option<Instant>,
}

struct Shared {
    local_id: BrokerId,
    leader_id: BrokerId,
    link: Arc<dyn ClusterLink>,
    connector: Arc<dyn Connector>,
    clock: Arc<dyn Clock>,
    quota: Arc<dyn ReplicationQuota>,
    partitions: Mutex<HashMap<TopicPartition, FetchState>>,
    wake: Notify,
}

/// The fetcher of one leader broker: a task and the partitions it follows.
pub(crate) struct ReplicaFetcher {
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

impl ReplicaFetcher {
    /// Starts the task for leader `leader_id` on `handle`; it connects with `seams.connector` and stamps
    /// follower appends with `seams.clock`.
    pub(crate) fn start(
        handle: &tokio::runtime::Handle,
        local_id: BrokerId,
        leader_id: BrokerId,
        link: Arc<dyn ClusterLink>,
        seams: &FetcherSeams,
    ) -> ReplicaFetcher {
        let shared = Arc::new(Shared {
            local_id,
            leader_id,
            link,
            connector: seams.connector.clone(),
            clock: seams.clock.clone(),
            quota: seams.quota.clone(),
            partitions: Mutex::new(HashMap::new()),
            wake: Notify::new(),
        });
        let task = handle.spawn(run(shared.clone()));
        ReplicaFetcher { shared, task }
    }

    /// Follows `partition` in `leader_epoch` (replacing an older entry); truncation runs first.
    pub(crate) fn add_partition(&self, partition: Arc<Partition>, leader_epoch: LeaderEpoch) {
        let key = TopicPartition::new(partition.topic.clone(), partition.partition);
        self.shared.partitions.lock().insert(
            key,
            FetchState {
                partition,
                leader_epoch,
                needs_truncation: true,
                retry_at: None,
            },
        );
        self.shared.wake.notify_one();
    }

    /// Stops following `key`; returns true when no partition is left.
    pub(crate) fn remove_partition(&self, key: &TopicPartition) -> bool {
        let mut parts = self.shared.partitions.lock();
        parts.remove(key);
        parts.is_empty()
    }

    /// Stops the task (it holds no lock across awaits, so aborting is safe).
    pub(crate) fn stop(self) {
        self.task.abort();
    }
}

/// The I/O seams of the fetchers: how they connect to leaders and what time they stamp follower appends
/// with (production: [`TcpConnector`] and `types::SystemClock`).
#[derive(Clone)]
pub(crate) struct FetcherSeams {
    pub(crate) connector: Arc<dyn Connector>,
    pub(crate) clock: Arc<dyn Clock>,
    /// The follower side's replication quota (KIP-73).
    pub(crate) quota: Arc<dyn ReplicationQuota>,
}

/// A Kafka-protocol connection to the leader: one request in flight. Public so the broker's replication
/// tests and simulation can drive a leader the way the fetcher does.
pub struct Connection {
    stream: BoxedStream,
    next_correlation_id: i32,
    client_id: String,
}

impl Connection {
    /// Connects to `host:port` within the request timeout; the client id names `local_id`.
    ///
    /// Errors: the connect's I/O error, or `TimedOut`.
    pub async fn connect(host: &str, port: u16, local_id: BrokerId) -> std::io::Result<Connection> {
        Connection::connect_with(&TcpConnector, host, port, local_id).await
    }

    /// [`connect`](Self::connect) through `connector` (a simulated network, for one).
    ///
    /// Errors: the connect's I/O error, or `TimedOut`.
    pub async fn connect_with(
        connector: &dyn Connector,
        host: &str,
        port: u16,
        local_id: BrokerId,
    ) -> std::io::Result<Connection> {
        let stream = tokio::time::timeout(REQUEST_TIMEOUT, connector.connect(host, port))
            .await
            .map_err(|_| {
                std::io::Error::new(std::io::ErrorKind::TimedOut, "connect timed out")
            })??;
        Ok(Connection {
            stream,
            next_correlation_id: 1,
            client_id: format!("replica-fetcher-broker-{local_id}"),
        })
    }

    /// Sends `body` in `version` and reads the matching response, bounded by `timeout`; the response frame
    /// is bounded by `protocol::MAX_FRAME_SIZE` bytes.
    pub async fn call(
        &mut self,
        version: i16,
        body: RequestBody,
        timeout: Duration,
    ) -> std::io::Result<ResponseBody> {
        tokio::time::timeout(timeout, self.call_inner(version, body))
            .await
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "request timed out"))?
    }

    async fn call_inner(
        &mut self,
        version: i16,
        body: RequestBody,
    ) -> std::io::Result<ResponseBody> {
        let api = body.api_key();
        let correlation_id = self.next_correlation_id;
        self.next_correlation_id = self.next_correlation_id.wrapping_add(1);
        let header = RequestHeader {
            request_api_key: api as i16,
            request_api_version: version,
            correlation_id,
            client_id: Some(self.client_id.clone()),
            unknown_tagged_fields: Vec::new(),
        };
        let frame = protocol::encode_request(&header, &body).map_err(invalid)?;
        self.stream.write_all(&frame).await?;
        self.stream.flush().await?; // a TLS stream may buffer the last records
        let size = self.stream.read_i32().await?;
        if size < 4 || size as usize > protocol::MAX_FRAME_SIZE {
            return Err(invalid(format!("response frame size {size}")));
        }
        let mut buf = BytesMut::zeroed(size as usize);
        self.stream.read_exact(&mut buf).await?;
        let (rh, resp) = protocol::decode_response(api, version, buf.freeze()).map_err(invalid)?;
        if rh.correlation_id != correlation_id {
            return Err(invalid(format!(
                "correlation id {} for request {correlation_id}",
                rh.correlation_id
            )));
        }
        Ok(resp)
    }
}

fn invalid(e: impl std::fmt::Display) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string())
}

/// A partition picked for this round.
struct Pick {
    key: TopicPartition,
    partition: Arc<Partition>,
    /// The leader epoch the fetcher follows it in.
    epoch: LeaderEpoch,
}

async fn run(shared: Arc<Shared>) {
    let mut conn: Option<Connection> = None;
    let mut session = FetchSessionHandler::new();
    let mut backoff = MIN_BACKOFF;
    loop {
        // What is ready this round.
        let now = Instant::now();
        let (truncate, fetch, next_retry) = {
            let parts = shared.partitions.lock();
            let mut truncate: Vec<Pick> = Vec::new();
            let mut fetch: Vec<Pick> = Vec::new();
            let mut next_retry: Option<Instant> = None;
            for (k, s) in parts.iter() {
                if let Some(at) = s.retry_at {
                    if at > now {
                        next_retry = Some(next_retry.map_or(at, |n: Instant| n.min(at)));
                        continue;
                    }
                }
                let pick = Pick {
                    key: k.clone(),
                    partition: s.partition.clone(),
                    epoch: s.leader_epoch,
                };
                if s.needs_truncation {
                    truncate.push(pick);
                } else {
                    fetch.push(pick);
                }
            }
            (truncate, fetch, next_retry)
        };
        let (fetch, throttled) = without_throttled(&shared, fetch);
        if truncate.is_empty() && fetch.is_empty() {
            let wait = next_retry.map_or(Duration::from_secs(1), |at| {
                at.saturating_duration_since(now)
            });
            let wait = if throttled {
                THROTTLE_BACKOFF.min(wait)
            } else {
                wait
            };
            let _ = tokio::time::timeout(wait, shared.wake.notified()).await;
            continue;
        }
        if conn.is_none() {
            let endpoint = shared.link.broker_endpoint(shared.leader_id);
            let connected = match endpoint {
                Some((host, port)) => {
                    Connection::connect_with(&*shared.connector, &host, port, shared.local_id)
                        .await
                        .map_err(|e| e.to_string())
                }
                None => Err("no endpoint known".to_string()),
            };
            match connected {
                Ok(c) => conn = Some(c),
                Err(e) => {
                    tracing::debug!(leader = %shared.leader_id, error = %e, "replica fetcher cannot connect");
                    let _ = tokio::time::timeout(backoff, shared.wake.notified()).await;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                    continue;
                }
            }
        }
        let c = conn.as_mut().expect("connected");
        let result = if !truncate.is_empty() {
            truncate_round(&shared, c, truncate).await
        } else {
            fetch_round(&shared, c, &mut session, fetch).await
        };
        match result {
            Ok(()) => backoff = MIN_BACKOFF,
            Err(e) => {
                tracing::debug!(leader = %shared.leader_id, error = %e, "replica fetcher connection lost");
                conn = None;
                session.handle_error();
                let _ = tokio::time::timeout(backoff, shared.wake.notified()).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
    }
}

/// Kafka's `shouldFollowerThrottle`: while the follower quota is exceeded, the throttled partitions this
/// broker is not in the ISR of are left out of the fetch (KIP-73). Returns the partitions to fetch and
/// whether any was left out.
fn without_throttled(shared: &Shared, mut fetch: Vec<Pick>) -> (Vec<Pick>, bool) {
    if fetch.is_empty() || !shared.quota.is_quota_exceeded() {
        return (fetch, false);
    }
    let before = fetch.len();
    fetch.retain(|pick| {
        !shared
            .quota
            .is_throttled(&pick.key.topic, pick.key.partition)
            || pick.partition.registration().isr.contains(&shared.local_id)
    });
    let throttled = fetch.len() < before;
    (fetch, throttled)
}

/// Updates the fetch state of `key` if it is still followed in `epoch`.
fn update_state(
    shared: &Shared,
    key: &TopicPartition,
    epoch: LeaderEpoch,
    f: impl FnOnce(&mut FetchState),
) {
    if let Some(s) = shared.partitions.lock().get_mut(key) {
        if s.leader_epoch == epoch {
            f(s);
        }
    }
}

/// Backoff after a partition error: short when the leader has probably not applied the newest metadata
/// yet (NOT_LEADER_OR_FOLLOWER, UNKNOWN_LEADER_EPOCH, UNKNOWN_TOPIC_OR_PARTITION), longer otherwise.
fn backoff_for(code: ErrorCode) -> Duration {
    if code == ErrorCode::NOT_LEADER_OR_FOLLOWER
        || code == ErrorCode::UNKNOWN_LEADER_EPOCH
        || code == ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
    {
        Duration::from_millis(100)
    } else {
        Duration::from_secs(1)
    }
}

async fn truncate_round(
    shared: &Shared,
    conn: &mut Connection,
    picks: Vec<Pick>,
) -> std::io::Result<()> {
    // Partitions without epochs truncate to their HW without asking.
    let mut ask: Vec<(Pick, LeaderEpoch)> = Vec::new();
    for pick in picks {
        let latest = pick.partition.latest_epoch();
        match latest {
            Some(e) => ask.push((pick, e)),
            None => {
                let Pick {
                    key,
                    partition: p,
                    epoch,
                } = pick;
                let unknown = (LeaderEpoch::NONE, Offset::NONE);
                match p.truncate_by_epoch(shared.leader_id, epoch, None, unknown) {
                    Ok(_) => update_state(shared, &key, epoch, |s| s.needs_truncation = false),
                    Err(e) => {
                        tracing::warn!(topic = %key.topic, partition = key.partition, error = %e, "follower truncation failed");
                        update_state(shared, &key, epoch, |s| {
                            s.retry_at = Some(Instant::now() + Duration::from_secs(1))
                        });
                    }
                }
            }
        }
    }
    if ask.is_empty() {
        return Ok(());
    }
    let request = offset_for_leader_epoch_request(shared, &ask);
    let resp = conn
        .call(
            OFFSET_FOR_LEADER_EPOCH_VERSION,
            RequestBody::OffsetForLeaderEpoch(request),
            REQUEST_TIMEOUT,
        )
        .await?;
    let ResponseBody::OffsetForLeaderEpoch(resp) = resp else {
        return Err(invalid("unexpected response to OffsetForLeaderEpoch"));
    };
    for (pick, latest) in ask {
        let Pick {
            key,
            partition: p,
            epoch,
        } = pick;
        let answer = resp
            .topics
            .iter()
            .find(|t| t.topic == key.topic)
            .and_then(|t| t.partitions.iter().find(|r| r.partition == key.partition));
        let Some(answer) = answer else {
            update_state(shared, &key, epoch, |s| {
                s.retry_at = Some(Instant::now() + Duration::from_secs(1))
            });
            continue;
        };
        let code = ErrorCode(answer.error_code);
        if code != ErrorCode::NONE {
            tracing::debug!(topic = %key.topic, partition = key.partition, error = code.name(), "OffsetForLeaderEpoch failed");
            update_state(shared, &key, epoch, |s| {
                s.retry_at = Some(Instant::now() + backoff_for(code))
            });
            continue;
        }
        match p.truncate_by_epoch(
            shared.leader_id,
            epoch,
            Some(latest),
            (LeaderEpoch(answer.leader_epoch), Offset(answer.end_offset)),
        ) {
            Ok(_) => update_state(shared, &key, epoch, |s| {
                s.needs_truncation = false;
                s.retry_at = None;
            }),
            Err(e) => {
                tracing::warn!(topic = %key.topic, partition = key.partition, error = %e, "follower truncation failed");
                update_state(shared, &key, epoch, |s| {
                    s.retry_at = Some(Instant::now() + Duration::from_secs(1))
                });
            }
        }
    }
    Ok(())
}

/// OffsetForLeaderEpoch for each (partition, our latest epoch) in `ask`.
fn offset_for_leader_epoch_request(
    shared: &Shared,
    ask: &[(Pick, LeaderEpoch)],
) -> OffsetForLeaderEpochRequest {
    let mut topics: Vec<OffsetForLeaderTopic> = Vec::new();
    for (Pick { key, epoch, .. }, latest) in ask {
        let part = OffsetForLeaderPartition {
            partition: key.partition,
            current_leader_epoch: epoch.get(),
            leader_epoch: latest.get(),
            ..Default::default()
        };
        match topics.iter_mut().find(|t| t.topic == key.topic) {
            Some(t) => t.partitions.push(part),
            None => topics.push(OffsetForLeaderTopic {
                topic: key.topic.clone(),
                partitions: vec![part],
                ..Default::default()
            }),
        }
    }
    OffsetForLeaderEpochRequest {
        replica_id: shared.local_id.get(),
        topics,
        ..Default::default()
    }
}

/// One Fetch of `picks` in the fetch session `session` (KIP-227): a full fetch, or an incremental one naming
/// only what changed; partitions the leader leaves out of an incremental answer had nothing new.
async fn fetch_round(
    shared: &Shared,
    conn: &mut Connection,
    session: &mut FetchSessionHandler,
    picks: Vec<Pick>,
) -> std::io::Result<()> {
    let request = fetch_request(shared, session, &picks);
    let resp = conn
        .call(
            FETCH_VERSION,
            RequestBody::Fetch(request),
            REQUEST_TIMEOUT + Duration::from_millis(FETCH_MAX_WAIT_MS as u64),
        )
        .await?;
    let ResponseBody::Fetch(resp) = resp else {
        return Err(invalid("unexpected response to Fetch"));
    };
    let code = ErrorCode(resp.error_code);
    if !session.handle_response(code, resp.session_id) {
        tracing::debug!(error = code.name(), "follower fetch failed");
        if !is_session_error(code) {
            for pick in &picks {
                update_state(shared, &pick.key, pick.epoch, |s| {
                    s.retry_at = Some(Instant::now() + Duration::from_secs(1))
                });
            }
        }
        // A session error: the next round is a full fetch, at once.
        return Ok(());
    }
    let answers: HashMap<(&str, i32), &PartitionData> = (resp.responses.iter())
        .flat_map(|t| {
            (t.partitions.iter()).map(move |d| ((t.topic.as_str(), d.partition_index), d))
        })
        .collect();
    for pick in picks {
        let data = answers
            .get(&(&*pick.key.topic, pick.key.partition))
            .copied();
        if let Some(data) = data {
            apply_fetched(shared, pick, data);
        }
    }
    Ok(())
}

/// Top-level Fetch errors about the session itself (KIP-227): answered by starting a new session.
fn is_session_error(code: ErrorCode) -> bool {
    code == ErrorCode::FETCH_SESSION_ID_NOT_FOUND
        || code == ErrorCode::INVALID_FETCH_SESSION_EPOCH
        || code == ErrorCode::FETCH_SESSION_TOPIC_ID_ERROR
}

/// The follower Fetch for this round's partitions, each from its LogEndOffset, as `session` shapes it: all
/// of them (a full fetch), or the added and changed ones plus the forgotten (an incremental fetch).
fn fetch_request(
    shared: &Shared,
    session: &mut FetchSessionHandler,
    picks: &[Pick],
) -> FetchRequest {
    let wanted = (picks.iter())
        .map(
            |Pick {
                 key,
                 partition,
                 epoch,
             }| {
                let position = partition.fetch_position();
                let part = FetchPartition {
                    partition: key.partition,
                    current_leader_epoch: epoch.get(),
                    fetch_offset: position.log_end_offset.get(),
                    last_fetched_epoch: position.last_fetched_epoch.get(),
                    log_start_offset: position.log_start_offset.get(),
                    partition_max_bytes: PARTITION_MAX_BYTES,
                    ..Default::default()
                };
                (key.clone(), part)
            },
        )
        .collect();
    let fetch = session.build(wanted);
    let mut topics: Vec<FetchTopic> = Vec::new();
    for (key, part) in fetch.to_send {
        match topics.iter_mut().find(|t| *t.topic == *key.topic) {
            Some(t) => t.partitions.push(part),
            None => topics.push(FetchTopic {
                topic: key.topic.to_string(),
                partitions: vec![part],
                ..Default::default()
            }),
        }
    }
    let mut forgotten: Vec<ForgottenTopic> = Vec::new();
    for key in fetch.to_forget {
        match forgotten.iter_mut().find(|t| *t.topic == *key.topic) {
            Some(t) => t.partitions.push(key.partition),
            None => forgotten.push(ForgottenTopic {
                topic: key.topic.to_string(),
                partitions: vec![key.partition],
                ..Default::default()
            }),
        }
    }
    FetchRequest {
        replica_id: shared.local_id.get(),
        max_wait_ms: FETCH_MAX_WAIT_MS,
        min_bytes: 1,
        max_bytes: RESPONSE_MAX_BYTES,
        isolation_level: 0,
        session_id: fetch.session_id,
        session_epoch: fetch.epoch,
        topics,
        forgotten_topics_data: forgotten,
        ..Default::default()
    }
}

/// Applies the leader's answer for one partition: records, a diverging epoch, OFFSET_OUT_OF_RANGE or
/// another error (a backoff).
fn apply_fetched(shared: &Shared, pick: Pick, data: &PartitionData) {
    let Pick {
        key,
        partition: p,
        epoch,
    } = pick;
    let leader = shared.leader_id;
    let retry_in = |after: Duration| {
        update_state(shared, &key, epoch, |s| {
            s.retry_at = Some(Instant::now() + after)
        })
    };
    if !p.is_following(leader, epoch) {
        // The partition moved on (new epoch or leader) but this entry is still listed: do not ask for
        // it again at once, or an erroring answer would make every round return immediately.
        retry_in(MIN_BACKOFF);
        return;
    }
    let code = ErrorCode(data.error_code);
    if code == ErrorCode::OFFSET_OUT_OF_RANGE {
        let (leader_log_start, leader_hw) =
            (Offset(data.log_start_offset), Offset(data.high_watermark));
        match p.truncate_out_of_range(leader, epoch, leader_log_start, leader_hw) {
            Ok(true) => {}
            Ok(false) => update_state(shared, &key, epoch, |s| {
                // Nothing to cut here: ask the leader's epoch cache again, not too often.
                s.needs_truncation = true;
                s.retry_at = Some(Instant::now() + Duration::from_secs(1));
            }),
            Err(e) => {
                tracing::warn!(topic = %key.topic, partition = key.partition, error = %e, "follower out-of-range handling failed");
                retry_in(Duration::from_secs(1));
            }
        }
        return;
    }
    if code != ErrorCode::NONE {
        tracing::debug!(topic = %key.topic, partition = key.partition, error = code.name(), "follower fetch partition error");
        retry_in(backoff_for(code));
        return;
    }
    if data.diverging_epoch.epoch >= 0 || data.diverging_epoch.end_offset >= 0 {
        let requested = p.latest_epoch();
        let d = &data.diverging_epoch;
        let answer = (LeaderEpoch(d.epoch), Offset(d.end_offset));
        if let Err(e) = p.truncate_by_epoch(leader, epoch, requested, answer) {
            tracing::warn!(topic = %key.topic, partition = key.partition, error = %e, "follower truncation failed");
        }
        // A diverging answer makes the leader answer the whole request at once; pausing this
        // partition briefly keeps a divergence the truncation did not settle from turning the
        // fetcher into a busy loop (the other partitions' fetches wait for data again).
        retry_in(MIN_BACKOFF);
        return;
    }
    let bytes = match &data.records {
        Some(Records::Memory(b)) => b.clone(),
        _ => Bytes::new(),
    };
    if !bytes.is_empty() && shared.quota.is_throttled(&key.topic, key.partition) {
        shared.quota.record(bytes.len() as u64);
    }
    if !bytes.is_empty() {
        // Kafka's `ReplicationBytesInPerSec` (BrokerTopicMetrics), for the topic and the broker.
        let (name, n) = (
            "kafka_server_brokertopicmetrics_replicationbytesin_total",
            bytes.len() as u64,
        );
        metrics::counter!(name).increment(n);
        metrics::counter!(name, "topic" => key.topic.to_string()).increment(n);
    }
    let (hw, log_start) = (Offset(data.high_watermark), Offset(data.log_start_offset));
    if let Err(e) = p.append_as_follower(leader, epoch, bytes, hw, log_start, shared.clock.now_ms())
    {
        tracing::warn!(topic = %key.topic, partition = key.partition, error = %e, "follower append failed");
        if matches!(e, storage::StorageError::UnexpectedAppendOffset(_)) {
            update_state(shared, &key, epoch, |s| s.needs_truncation = true);
        } else {
            retry_in(Duration::from_secs(1));
        }
    }
}
