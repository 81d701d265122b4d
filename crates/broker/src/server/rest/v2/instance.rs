//! One API v2 consumer instance: what it reads (a subscription to topics or a topic pattern, served by the
//! classic group protocol with the range assignor; or a manual assignment), where it is in each partition
//! (its positions: the next offset to return), and the group membership behind a subscription.
//!
//! Joining happens on the instance's background task (woken by a subscribe) or, if still pending, at the
//! start of a records call: JoinGroup (again with the member id a first JoinGroup answers
//! MEMBER_ID_REQUIRED with), the leader's range assignment of every member's subscription, SyncGroup. The
//! background task heartbeats every [`HEARTBEAT_INTERVAL_MS`](super::HEARTBEAT_INTERVAL_MS) and rejoins
//! when the coordinator answers REBALANCE_IN_PROGRESS (or no longer knows the member or generation); a
//! pattern subscription is matched against the cluster's topics again every
//! [`PATTERN_REFRESH_TICKS`] heartbeats, and a change rejoins. Before a rejoin, an auto-committing
//! instance commits its positions; positions of partitions it keeps survive the rebalance.
//!
//! A partition without a position starts at the group's committed offset, else at the log start
//! (`auto.offset.reset` = earliest) or end (latest); an OFFSET_OUT_OF_RANGE fetch resets it the same way.
//! Records are read with read_uncommitted isolation: control batches are skipped, aborted transactional
//! records are returned.
//!
//! All of an instance's work is serialised by one lock, so a records call and a heartbeat never overlap.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use protocol::messages::join_group_response::JoinGroupResponseMember;
use protocol::ErrorCode;
use regex::Regex;
use serde_json::{json, Value};
use tokio::sync::{Mutex, Notify};

use super::assignor::{
    decode_assignment, decode_subscription, encode_assignment, encode_subscription, range_assign,
    TopicPartition,
};
use super::format::EmbeddedFormat;
use super::kafka::{FetchedPartition, Kafka, EARLIEST, LATEST};
use super::{illegal_state, HEARTBEAT_INTERVAL_MS};
use crate::server::context::KafkaPrincipal;
use crate::server::rest::bridge::{Bridge, Origin};
use crate::server::rest::error::{RestError, KAFKA_ERROR};

/// How many JoinGroup/SyncGroup rounds one join tries before giving up (each may wait for a rebalance).
const MAX_JOIN_ROUNDS: usize = 5;
/// The pause before a JoinGroup the coordinator was not ready for is sent again (ms).
const JOIN_BACKOFF_MS: u64 = 100;
/// The least a records call's Fetch asks for (bytes), whatever its `max_bytes`.
const FETCH_BUFFER_BYTES: i32 = 1024 * 1024;
/// A pattern subscription is matched again every this many heartbeats.
pub const PATTERN_REFRESH_TICKS: u32 = 5;

/// How an instance was configured when created (`POST /consumers/{group}`).
#[derive(Debug, Clone, Copy)]
pub struct InstanceConfig {
    /// How keys and values are rendered.
    pub format: EmbeddedFormat,
    /// `auto.offset.reset`: earliest (true) or latest (false).
    pub reset_earliest: bool,
    /// `auto.commit.enable`: commit positions after every records call, before a rejoin and on close.
    pub auto_commit: bool,
    /// `fetch.min.bytes`: the bytes a Fetch waits for (up to the records call's timeout).
    pub fetch_min_bytes: i32,
    /// `consumer.request.timeout.ms`: a records call's wait when it names no `timeout` (ms).
    pub request_timeout_ms: i32,
}

/// What an instance reads.
#[derive(Debug, Clone)]
pub enum Target {
    /// Nothing.
    None,
    /// A subscription to these topics.
    Topics(Vec<String>),
    /// A subscription to the topics this pattern matches in full.
    Pattern(Regex),
    /// A manual assignment (the partitions are the assignment).
    Manual,
}

impl Target {
    fn is_subscription(&self) -> bool {
        matches!(self, Target::Topics(_) | Target::Pattern(_))
    }
}

#[derive(Debug)]
struct State {
    target: Target,
    /// The member id the coordinator gave ("" before the first JoinGroup).
    member_id: String,
    /// The generation joined (-1: none).
    generation: i32,
    needs_join: bool,
    /// The topics the last JoinGroup subscribed to.
    subscribed: Vec<String>,
    assignment: Vec<TopicPartition>,
    positions: HashMap<TopicPartition, i64>,
    ticks: u32,
}

/// One consumer instance (see the module doc).
#[derive(Debug)]
pub struct ConsumerInstance {
    /// The consumer group.
    pub group: String,
    /// The instance name.
    pub name: String,
    /// Its configuration.
    pub config: InstanceConfig,
    /// Who created it: only that principal reaches it, and its background work (heartbeats, rejoins, the
    /// leave on expiry) is done as that principal.
    pub owner: Origin,
    state: Mutex<State>,
    wake: Notify,
    closed: AtomicBool,
    /// A records call is running.
    reading: AtomicBool,
}

/// Records cut at `max` bytes of keys and values (at least one record is returned, however large).
struct Budget {
    used: usize,
    max: usize,
    full: bool,
}

impl ConsumerInstance {
    /// A new instance of `owner`'s, reading nothing.
    pub fn new(
        group: String,
        name: String,
        config: InstanceConfig,
        owner: KafkaPrincipal,
    ) -> ConsumerInstance {
        let state = State {
            target: Target::None,
            member_id: String::new(),
            generation: -1,
            needs_join: false,
            subscribed: Vec::new(),
            assignment: Vec::new(),
            positions: HashMap::new(),
            ticks: 0,
        };
        ConsumerInstance {
            group,
            name,
            config,
            owner: Origin {
                peer: None,
                principal: owner,
            },
            state: Mutex::new(state),
            wake: Notify::new(),
            closed: AtomicBool::new(false),
            reading: AtomicBool::new(false),
        }
    }

    /// The background task: heartbeats and (re)joins until the instance is closed.
    pub async fn run(self: Arc<Self>, bridge: Arc<Bridge>) {
        let k = Kafka {
            bridge: &bridge,
            origin: &self.owner,
        };
        let interval = Duration::from_millis(HEARTBEAT_INTERVAL_MS);
        while !self.closed.load(Ordering::Acquire) {
            tokio::select! {
                _ = tokio::time::sleep(interval) => {}
                _ = self.wake.notified() => {}
            }
            let mut st = self.state.lock().await;
            if self.closed.load(Ordering::Acquire) {
                break;
            }
            if let Err(e) = self.tick(&mut st, k).await {
                tracing::debug!(group = %self.group, instance = %self.name, error = %e.message,
                    "REST consumer instance heartbeat");
            }
        }
    }

    /// One heartbeat (or join, or pattern refresh) of a subscribed instance.
    async fn tick(&self, st: &mut State, k: Kafka<'_>) -> Result<(), RestError> {
        if !st.target.is_subscription() {
            return Ok(());
        }
        st.ticks = st.ticks.wrapping_add(1);
        let refresh = matches!(st.target, Target::Pattern(_))
            && st.ticks.is_multiple_of(PATTERN_REFRESH_TICKS);
        if refresh && self.resolve(st, k).await? != st.subscribed {
            st.needs_join = true;
        }
        if st.needs_join || st.generation < 0 {
            return self.join(st, k).await;
        }
        match k
            .heartbeat(&self.group, st.generation, &st.member_id)
            .await?
        {
            ErrorCode::NONE => Ok(()),
            ErrorCode::UNKNOWN_MEMBER_ID => {
                st.member_id.clear();
                st.generation = -1;
                self.join(st, k).await
            }
            ErrorCode::REBALANCE_IN_PROGRESS | ErrorCode::ILLEGAL_GENERATION => {
                self.join(st, k).await
            }
            code => Err(RestError::from_kafka(code, None)),
        }
    }

    /// The topics the subscription names now (a pattern: the matching topics of the cluster).
    async fn resolve(&self, st: &State, k: Kafka<'_>) -> Result<Vec<String>, RestError> {
        match &st.target {
            Target::Topics(topics) => Ok(topics.clone()),
            Target::Pattern(re) => {
                let all = k.partition_counts(None).await?;
                Ok(all.into_keys().filter(|t| re.is_match(t)).collect())
            }
            Target::None | Target::Manual => Ok(Vec::new()),
        }
    }

    /// Joins the group (see the module doc): JoinGroup rounds until a generation's SyncGroup answers.
    async fn join(&self, st: &mut State, k: Kafka<'_>) -> Result<(), RestError> {
        if st.generation >= 0 && self.config.auto_commit {
            self.commit_positions(st, k).await;
        }
        let mut last = ErrorCode::REBALANCE_IN_PROGRESS;
        for _ in 0..MAX_JOIN_ROUNDS {
            let topics = self.resolve(st, k).await?;
            let subscription = encode_subscription(&topics);
            let r = k.join(&self.group, &st.member_id, subscription).await?;
            last = ErrorCode(r.error_code);
            match last {
                ErrorCode::NONE => {}
                ErrorCode::MEMBER_ID_REQUIRED => {
                    st.member_id = r.member_id;
                    continue;
                }
                ErrorCode::UNKNOWN_MEMBER_ID => {
                    st.member_id.clear();
                    continue;
                }
                ErrorCode::REBALANCE_IN_PROGRESS => continue,
                // The group's offsets partition is being created or loaded: shortly.
                ErrorCode::COORDINATOR_LOAD_IN_PROGRESS | ErrorCode::COORDINATOR_NOT_AVAILABLE => {
                    tokio::time::sleep(Duration::from_millis(JOIN_BACKOFF_MS)).await;
                    continue;
                }
                code => return Err(RestError::from_kafka(code, None)),
            }
            st.member_id = r.member_id;
            st.generation = r.generation_id;
            st.subscribed = topics;
            let assignments = match r.leader == st.member_id {
                true => leader_assignments(k, &r.members).await?,
                false => Vec::new(),
            };
            let synced = (k.sync(&self.group, st.generation, &st.member_id, assignments)).await?;
            match synced {
                Ok(bytes) => {
                    set_assignment(st, decode_assignment(&bytes).unwrap_or_default());
                    st.needs_join = false;
                    return Ok(());
                }
                Err(ErrorCode::UNKNOWN_MEMBER_ID) => st.member_id.clear(),
                Err(ErrorCode::REBALANCE_IN_PROGRESS | ErrorCode::ILLEGAL_GENERATION) => {}
                Err(code) => return Err(RestError::from_kafka(code, None)),
            }
        }
        st.generation = -1;
        st.needs_join = true;
        let message = format!(
            "The consumer instance could not join its group yet ({}): retry",
            last.name()
        );
        Err(RestError::from_kafka(last, Some(&message)))
    }

    /// Subscribes to `target` (topics or a pattern), replacing a subscription; 409 (40903) for an
    /// instance with a manual assignment. The group is joined in the background.
    pub async fn subscribe(&self, target: Target) -> Result<(), RestError> {
        let mut st = self.state.lock().await;
        if let Target::Manual = st.target {
            return Err(mutually_exclusive());
        }
        st.target = target;
        st.needs_join = true;
        drop(st);
        self.wake.notify_one();
        Ok(())
    }

    /// The subscribed topics (a pattern's: those matched when the group was last joined).
    pub async fn subscription(&self) -> Vec<String> {
        let st = self.state.lock().await;
        match &st.target {
            Target::Topics(topics) => topics.clone(),
            Target::Pattern(_) => st.subscribed.clone(),
            Target::None | Target::Manual => Vec::new(),
        }
    }

    /// Drops the subscription and leaves the group (a manual assignment is dropped too, as Kafka's
    /// `unsubscribe` does).
    pub async fn unsubscribe(&self, k: Kafka<'_>) {
        let mut st = self.state.lock().await;
        self.leave(&mut st, k).await;
    }

    /// Commits (auto-commit) and leaves the group; the instance reads nothing afterwards.
    async fn leave(&self, st: &mut State, k: Kafka<'_>) {
        if self.config.auto_commit {
            self.commit_positions(st, k).await;
        }
        if !st.member_id.is_empty() {
            k.leave(&self.group, &st.member_id).await;
        }
        st.target = Target::None;
        st.member_id.clear();
        st.generation = -1;
        st.needs_join = false;
        st.subscribed.clear();
        set_assignment(st, Vec::new());
    }

    /// Closes the instance: its background task ends, it commits (auto-commit) and leaves its group.
    pub async fn close(&self, k: Kafka<'_>) {
        self.closed.store(true, Ordering::Release);
        self.wake.notify_one();
        let mut st = self.state.lock().await;
        self.leave(&mut st, k).await;
    }

    /// Assigns `partitions` manually (none: unassigns); 409 (40903) for a subscribed instance.
    pub async fn assign(&self, partitions: Vec<TopicPartition>) -> Result<(), RestError> {
        let mut st = self.state.lock().await;
        if st.target.is_subscription() {
            return Err(mutually_exclusive());
        }
        st.target = match partitions.is_empty() {
            true => Target::None,
            false => Target::Manual,
        };
        set_assignment(&mut st, partitions);
        Ok(())
    }

    /// The partitions assigned (manually, or by the group).
    pub async fn assignment(&self) -> Vec<TopicPartition> {
        self.state.lock().await.assignment.clone()
    }

    /// Sets positions; 409 (40903) if a partition is not assigned (nothing is changed then).
    pub async fn seek(&self, offsets: Vec<(TopicPartition, i64)>) -> Result<(), RestError> {
        let mut st = self.state.lock().await;
        check_assigned(&st, offsets.iter().map(|(tp, _)| tp))?;
        st.positions.extend(offsets);
        Ok(())
    }

    /// Moves the positions of `partitions` to their log start (`beginning`) or end; 409 (40903) if a
    /// partition is not assigned.
    pub async fn seek_to(
        &self,
        k: Kafka<'_>,
        partitions: Vec<TopicPartition>,
        beginning: bool,
    ) -> Result<(), RestError> {
        let mut st = self.state.lock().await;
        check_assigned(&st, partitions.iter())?;
        let timestamp = if beginning { EARLIEST } else { LATEST };
        let offsets = k.list_offsets(&partitions, timestamp).await?;
        st.positions.extend(offsets);
        Ok(())
    }

    /// Up to `max_bytes` of keys and values from the assigned partitions, waiting up to `timeout_ms` for
    /// the first; the positions move past them (and are committed with auto-commit).
    pub async fn records(
        &self,
        k: Kafka<'_>,
        timeout_ms: i32,
        max_bytes: i32,
    ) -> Result<Vec<Value>, RestError> {
        // One records call at a time: a second one would queue behind the first's wait (and hold off the
        // heartbeats for as long), so it is refused instead.
        if self.reading.swap(true, Ordering::AcqRel) {
            return Err(illegal_state(
                "another records call on this consumer instance is in progress",
            ));
        }
        /// Clears the flag however the call ends (its future may be dropped when the client goes away).
        struct Reading<'a>(&'a AtomicBool);
        impl Drop for Reading<'_> {
            fn drop(&mut self) {
                self.0.store(false, Ordering::Release);
            }
        }
        let _reading = Reading(&self.reading);
        self.records_locked(k, timeout_ms, max_bytes).await
    }

    async fn records_locked(
        &self,
        k: Kafka<'_>,
        timeout_ms: i32,
        max_bytes: i32,
    ) -> Result<Vec<Value>, RestError> {
        let mut st = self.state.lock().await;
        if st.target.is_subscription() && (st.needs_join || st.generation < 0) {
            self.join(&mut st, k).await?;
        }
        self.init_positions(&mut st, k).await?;
        let positions: Vec<(TopicPartition, i64)> = (st.assignment.iter())
            .filter_map(|tp| st.positions.get(tp).map(|o| (tp.clone(), *o)))
            .collect();
        if positions.is_empty() {
            return Ok(Vec::new());
        }
        // The Fetch itself may return more than max_bytes (batches are whole); the answer is cut below.
        let fetch_bytes = max_bytes.max(FETCH_BUFFER_BYTES);
        let fetched = k
            .fetch(
                &positions,
                timeout_ms,
                self.config.fetch_min_bytes,
                fetch_bytes,
            )
            .await?;
        let mut out = Vec::new();
        let mut budget = Budget {
            used: 0,
            max: usize::try_from(max_bytes).unwrap_or(0),
            full: false,
        };
        let mut out_of_range = Vec::new();
        // Positions move only once every record taken is rendered: a record that fails (not JSON for a
        // json instance) loses none of the records before it.
        let mut moved = Vec::new();
        for p in fetched {
            match p.error {
                ErrorCode::NONE => {}
                ErrorCode::OFFSET_OUT_OF_RANGE => out_of_range.push(p.tp.clone()),
                code => tracing::debug!(topic = %p.tp.0, partition = p.tp.1, error = code.name(),
                    "REST consumer fetch"),
            }
            let Some(&start) = st.positions.get(&p.tp) else {
                continue;
            };
            if p.error == ErrorCode::NONE && !budget.full {
                let mut position = start;
                self.decode(&p, &mut position, &mut out, &mut budget)?;
                moved.push((p.tp.clone(), position));
            }
        }
        st.positions.extend(moved);
        if !out_of_range.is_empty() {
            self.reset(&mut st, k, &out_of_range).await?;
        }
        if self.config.auto_commit && !out.is_empty() {
            self.commit_positions(&st, k).await;
        }
        Ok(out)
    }

    /// The records of one fetched partition from `position` on, rendered into `out` within `budget`;
    /// `position` moves past each one taken (and past control batches).
    fn decode(
        &self,
        p: &FetchedPartition,
        position: &mut i64,
        out: &mut Vec<Value>,
        budget: &mut Budget,
    ) -> Result<(), RestError> {
        // A batch cut short by the fetch size ends the data (it comes whole in the next fetch).
        for batch in protocol::record::batches(&p.records).map_while(Result::ok) {
            if batch.next_offset() <= *position {
                continue;
            }
            if batch.is_control() {
                *position = batch.next_offset();
                continue;
            }
            let records = batch.records().map_err(|e| {
                RestError::new(KAFKA_ERROR, format!("Reading {}-{}: {e}", p.tp.0, p.tp.1))
            })?;
            let from = *position;
            for r in records.into_iter().filter(|r| r.offset >= from) {
                let size =
                    r.key.as_ref().map_or(0, |b| b.len()) + r.value.as_ref().map_or(0, |b| b.len());
                if budget.used.saturating_add(size) > budget.max && !out.is_empty() {
                    budget.full = true;
                    return Ok(());
                }
                let render = |what: &str, b: Option<&[u8]>| {
                    self.config.format.render(b).map_err(|e| {
                        let (t, partition, offset) = (&p.tp.0, p.tp.1, r.offset);
                        RestError::new(KAFKA_ERROR, format!(
                            "The {what} of the record at offset {offset} of partition {partition} of \
                             topic {t} is not JSON: {e}"))
                    })
                };
                out.push(json!({
                    "topic": p.tp.0,
                    "key": render("key", r.key.as_deref())?,
                    "value": render("value", r.value.as_deref())?,
                    "partition": p.tp.1,
                    "offset": r.offset,
                }));
                budget.used += size;
                *position = r.offset + 1;
            }
            *position = (*position).max(batch.next_offset());
        }
        Ok(())
    }

    /// Positions for the assigned partitions that have none: the committed offset, else the reset.
    async fn init_positions(&self, st: &mut State, k: Kafka<'_>) -> Result<(), RestError> {
        let missing: Vec<TopicPartition> = (st.assignment.iter())
            .filter(|tp| !st.positions.contains_key(*tp))
            .cloned()
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        let committed = k.committed(&self.group, &missing).await?;
        let mut rest = Vec::new();
        for tp in missing {
            match committed.get(&tp) {
                Some((offset, _)) => {
                    st.positions.insert(tp, *offset);
                }
                None => rest.push(tp),
            }
        }
        self.reset(st, k, &rest).await
    }

    /// Positions of `partitions` by `auto.offset.reset`.
    async fn reset(
        &self,
        st: &mut State,
        k: Kafka<'_>,
        partitions: &[TopicPartition],
    ) -> Result<(), RestError> {
        if partitions.is_empty() {
            return Ok(());
        }
        let timestamp = if self.config.reset_earliest {
            EARLIEST
        } else {
            LATEST
        };
        st.positions
            .extend(k.list_offsets(partitions, timestamp).await?);
        Ok(())
    }

    /// Commits `offsets` (partition, offset of the last record processed, metadata): Kafka stores the
    /// next offset, `offset + 1`, as Confluent's REST Proxy does. `None`: the current positions.
    pub async fn commit(
        &self,
        k: Kafka<'_>,
        offsets: Option<Vec<(TopicPartition, i64, Option<String>)>>,
    ) -> Result<(), RestError> {
        let st = self.state.lock().await;
        let offsets = match offsets {
            Some(list) => (list.into_iter())
                .map(|(tp, o, m)| (tp, o.saturating_add(1), m))
                .collect(),
            None => positions_of(&st),
        };
        if offsets.is_empty() {
            return Ok(());
        }
        let (generation, member) = membership(&st);
        k.commit(&self.group, generation, member, &offsets).await
    }

    /// Auto-commit of the current positions (a failure is logged: the next one retries).
    async fn commit_positions(&self, st: &State, k: Kafka<'_>) {
        let offsets = positions_of(st);
        if offsets.is_empty() {
            return;
        }
        let (generation, member) = membership(st);
        if let Err(e) = k.commit(&self.group, generation, member, &offsets).await {
            tracing::debug!(group = %self.group, error = %e.message, "REST consumer auto-commit");
        }
    }

    /// The committed offsets of `partitions` (`None`: the assigned ones): `{"topic", "partition",
    /// "offset", "metadata"}` for each that has one.
    pub async fn committed(
        &self,
        k: Kafka<'_>,
        partitions: Option<Vec<TopicPartition>>,
    ) -> Result<Vec<Value>, RestError> {
        let partitions = match partitions {
            Some(p) => p,
            None => self.assignment().await,
        };
        if partitions.is_empty() {
            return Ok(Vec::new());
        }
        let committed = k.committed(&self.group, &partitions).await?;
        let found = partitions.iter().filter_map(|tp| {
            let (offset, metadata) = committed.get(tp)?;
            Some(json!({ "topic": tp.0, "partition": tp.1, "offset": offset,
                "metadata": metadata.clone().unwrap_or_default() }))
        });
        Ok(found.collect())
    }
}

/// The leader's SyncGroup assignments: the range assignment of the members' subscriptions.
async fn leader_assignments(
    k: Kafka<'_>,
    members: &[JoinGroupResponseMember],
) -> Result<Vec<(String, Vec<u8>)>, RestError> {
    let subscriptions: BTreeMap<String, Vec<String>> = (members.iter())
        .map(|m| {
            let topics = decode_subscription(&m.metadata).unwrap_or_default();
            (m.member_id.clone(), topics)
        })
        .collect();
    let mut topics: Vec<String> = subscriptions.values().flatten().cloned().collect();
    topics.sort();
    topics.dedup();
    let counts = k.partition_counts(Some(&topics)).await?;
    let assignment = range_assign(&subscriptions, &counts);
    Ok((assignment.into_iter())
        .map(|(m, parts)| (m, encode_assignment(&parts)))
        .collect())
}

/// The new assignment; positions of partitions no longer assigned are dropped.
fn set_assignment(st: &mut State, partitions: Vec<TopicPartition>) {
    st.positions.retain(|tp, _| partitions.contains(tp));
    st.assignment = partitions;
}

/// 409 (40903) unless every partition is assigned.
fn check_assigned<'a>(
    st: &State,
    mut partitions: impl Iterator<Item = &'a TopicPartition>,
) -> Result<(), RestError> {
    match partitions.find(|tp| !st.assignment.contains(tp)) {
        Some((t, p)) => Err(illegal_state(&format!(
            "No current assignment for partition {t}-{p}"
        ))),
        None => Ok(()),
    }
}

fn mutually_exclusive() -> RestError {
    illegal_state("Subscription to topics, partitions and pattern are mutually exclusive")
}

/// The positions of the assigned partitions, as offsets to commit.
fn positions_of(st: &State) -> Vec<(TopicPartition, i64, Option<String>)> {
    (st.assignment.iter())
        .filter_map(|tp| Some((tp.clone(), *st.positions.get(tp)?, None)))
        .collect()
}

/// The generation and member id commits are made in: the group's for a subscribed member, else -1 and
/// "" (a manual assignment commits as a simple consumer).
fn membership(st: &State) -> (i32, &str) {
    match st.target.is_subscription() && st.generation >= 0 {
        true => (st.generation, &st.member_id),
        false => (-1, ""),
    }
}
