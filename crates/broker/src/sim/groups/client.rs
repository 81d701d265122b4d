//! The group simulation's consumers: [`MEMBERS`] members of group [`GROUP`] on the `client` host, each a
//! classic-protocol consumer speaking real Kafka requests over the simulated network: FindCoordinator, then
//! JoinGroup (v5, KIP-394's MEMBER_ID_REQUIRED round trip), SyncGroup (the leader assigns the data topic's
//! partitions round-robin), OffsetFetch of its partitions, then every 300 ms a Heartbeat and an
//! OffsetCommit of its partitions. Committed offsets come from one counter shared by all members, so every
//! value is sent once and each is larger than every value sent before it; the checkers compare what
//! OffsetFetch answers with what was acknowledged ([`Shared`]).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use parking_lot::Mutex;
use protocol::error::ErrorCode;
use protocol::messages::join_group_request::JoinGroupRequestProtocol;
use protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
use protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use protocol::messages::{
    FindCoordinatorRequest, HeartbeatRequest, JoinGroupRequest, OffsetCommitRequest,
    OffsetFetchRequest, SyncGroupRequest,
};
use protocol::{RequestBody, ResponseBody};
use replica::replica_fetcher::Connection;
use types::BrokerId;

use super::cluster::{DATA_PARTITIONS, DATA_TOPIC};
use crate::sim::cluster::{host, TurmoilConnector, BROKERS, PORT};

/// The simulated consumer group.
pub const GROUP: &str = "sim-group";
/// Members of [`GROUP`].
pub const MEMBERS: usize = 3;
/// The members' session and rebalance timeouts (the brokers' `group.min.session.timeout.ms` is 1000).
const SESSION_TIMEOUT_MS: i32 = 3_000;
/// How long a JoinGroup or SyncGroup may take: the rebalance timeout and some (as Kafka's consumer).
const REBALANCE_CALL: Duration = Duration::from_millis(SESSION_TIMEOUT_MS as u64 + 2_000);
/// How long other requests may take (an OffsetCommit waits up to `offsets.commit.timeout.ms`, 5 s).
const CALL: Duration = Duration::from_secs(6);
/// How long a Heartbeat may take (within the session timeout).
const HEARTBEAT_CALL: Duration = Duration::from_secs(2);
/// Time between a member's heartbeat-and-commit rounds.
const ROUND: Duration = Duration::from_millis(300);
/// Pause after an error.
const BACKOFF: Duration = Duration::from_millis(100);

/// What the members saw, shared with the test loop and the checkers.
#[derive(Default)]
pub struct Shared {
    /// Set by the test loop: members stop after their current request.
    pub stop: AtomicBool,
    /// The rest, under one lock.
    pub state: Mutex<ClientState>,
}

/// The members' observations.
#[derive(Default)]
pub struct ClientState {
    /// Last value drawn from the commit counter.
    next_offset: i64,
    /// Per data partition, every offset sent in an OffsetCommit.
    pub sent: BTreeMap<i32, BTreeSet<i64>>,
    /// Per data partition, the largest acknowledged committed offset.
    pub acked: BTreeMap<i32, i64>,
    /// Acknowledged partition commits so far.
    pub acks: usize,
    /// Generation → member id → the partitions its successful SyncGroup assigned.
    pub synced: BTreeMap<i32, BTreeMap<String, Vec<i32>>>,
    /// Per member: the generation it is working in (synced, heartbeating), None while it (re)joins.
    pub working: [Option<i32>; MEMBERS],
    /// Error codes the members got, by name (for the trace).
    pub errors: BTreeMap<&'static str, usize>,
    /// The OffsetFetch answer of the last round, once the test loop asked for it (see [`final_fetch`]).
    pub final_offsets: Option<BTreeMap<i32, i64>>,
    /// What went wrong.
    pub violations: Vec<String>,
}

impl ClientState {
    fn violation(&mut self, v: String) {
        if self.violations.len() < 10 {
            self.violations.push(v);
        }
    }

    /// Records a successful SyncGroup: in one generation a member has one assignment and no two members
    /// share a partition.
    fn synced(&mut self, generation: i32, member: &str, parts: Vec<i32>) {
        let members = self.synced.entry(generation).or_default();
        let mut found = Vec::new();
        for (m, theirs) in members.iter() {
            if m == member && *theirs != parts {
                found.push(format!(
                    "generation {generation}: member {m} assigned {theirs:?} and then {parts:?}"
                ));
            } else if m != member && theirs.iter().any(|p| parts.contains(p)) {
                found.push(format!(
                    "generation {generation}: members {m} {theirs:?} and {member} {parts:?} share partitions"
                ));
            }
        }
        members.insert(member.to_string(), parts);
        for v in found {
            self.violation(v);
        }
    }

    /// Checks an OffsetFetch answer `got` (partition → offset, -1 none) against `acked_before`, what had
    /// been acknowledged when the request was sent: no acknowledged commit lost, only sent offsets.
    pub fn check_fetch(
        &mut self,
        what: &str,
        acked_before: &BTreeMap<i32, i64>,
        got: &BTreeMap<i32, i64>,
    ) {
        let mut found = Vec::new();
        for (p, offset) in got {
            let acked = acked_before.get(p).copied();
            if acked.is_some_and(|a| *offset < a) {
                found.push(format!(
                    "{what}: partition {p} committed offset {offset} below the acknowledged {acked:?} (commit lost)"
                ));
            }
            let sent = self.sent.get(p).is_some_and(|s| s.contains(offset));
            if *offset != -1 && !sent {
                found.push(format!(
                    "{what}: partition {p} offset {offset} was never sent"
                ));
            }
        }
        for v in found {
            self.violation(v);
        }
    }

    fn error(&mut self, code: ErrorCode) {
        *self.errors.entry(code.name()).or_default() += 1;
    }
}

/// One member's connection to its coordinator.
struct Coordinator {
    conn: Connection,
}

/// Asks broker `ask` for the group's coordinator and connects to it.
async fn find_coordinator(ask: i32) -> Option<Coordinator> {
    let mut c = connect(ask).await?;
    let req = RequestBody::FindCoordinator(FindCoordinatorRequest {
        key: GROUP.to_string(),
        key_type: 0,
        ..Default::default()
    });
    let Ok(ResponseBody::FindCoordinator(r)) = c.call(3, req, CALL).await else {
        return None;
    };
    if r.error_code != 0 || !BROKERS.contains(&r.node_id) {
        return None;
    }
    let conn = if r.node_id == ask {
        c
    } else {
        connect(r.node_id).await?
    };
    Some(Coordinator { conn })
}

async fn connect(b: i32) -> Option<Connection> {
    let name = host(b);
    let c = Connection::connect_with(&TurmoilConnector, &name, PORT, BrokerId(-1));
    tokio::time::timeout(Duration::from_secs(2), c)
        .await
        .ok()?
        .ok()
}

/// A member's progress through the protocol.
struct Member {
    index: usize,
    shared: Arc<Shared>,
    member_id: String,
    coordinator: Option<Coordinator>,
    /// Broker asked next by FindCoordinator (rotates on failure).
    ask: usize,
}

/// The outcome of a step.
enum Step {
    /// Go on.
    Ok,
    /// Rejoin the group (a rebalance, an unknown member, a stale generation).
    Rejoin,
    /// Find the coordinator again.
    Rediscover,
}

impl Member {
    /// Sends `req` to the coordinator (found first if needed). None: no answer (the connection is dropped).
    async fn call(
        &mut self,
        version: i16,
        req: RequestBody,
        timeout: Duration,
    ) -> Option<ResponseBody> {
        if self.coordinator.is_none() {
            let ask = BROKERS[self.ask % BROKERS.len()];
            self.coordinator = find_coordinator(ask).await;
            if self.coordinator.is_none() {
                self.ask += 1;
                tokio::time::sleep(BACKOFF).await;
                return None;
            }
        }
        let c = self.coordinator.as_mut().expect("found");
        match c.conn.call(version, req, timeout).await {
            Ok(r) => Some(r),
            Err(_) => {
                self.coordinator = None;
                self.ask += 1;
                tokio::time::sleep(BACKOFF).await;
                None
            }
        }
    }

    /// What an error code asks the member to do.
    fn on_error(&mut self, code: ErrorCode) -> Step {
        self.shared.state.lock().error(code);
        match code {
            ErrorCode::NOT_COORDINATOR
            | ErrorCode::COORDINATOR_NOT_AVAILABLE
            | ErrorCode::COORDINATOR_LOAD_IN_PROGRESS
            | ErrorCode::REQUEST_TIMED_OUT => {
                if code != ErrorCode::COORDINATOR_LOAD_IN_PROGRESS {
                    self.coordinator = None;
                    self.ask += 1;
                }
                Step::Rediscover
            }
            ErrorCode::UNKNOWN_MEMBER_ID => {
                self.member_id.clear();
                Step::Rejoin
            }
            ErrorCode::REBALANCE_IN_PROGRESS | ErrorCode::ILLEGAL_GENERATION => Step::Rejoin,
            other => {
                let mut st = self.shared.state.lock();
                st.violation(format!(
                    "member {}: unexpected error {}",
                    self.index,
                    other.name()
                ));
                Step::Rejoin
            }
        }
    }

    /// JoinGroup until a generation is joined: (generation, leader, members if leader).
    async fn join(&mut self) -> Option<(i32, String, Vec<String>)> {
        let req = RequestBody::JoinGroup(JoinGroupRequest {
            group_id: GROUP.to_string(),
            session_timeout_ms: SESSION_TIMEOUT_MS,
            rebalance_timeout_ms: SESSION_TIMEOUT_MS,
            member_id: self.member_id.clone(),
            protocol_type: "consumer".to_string(),
            protocols: vec![JoinGroupRequestProtocol {
                name: "roundrobin".to_string(),
                metadata: Bytes::new(),
                ..Default::default()
            }],
            ..Default::default()
        });
        let Some(ResponseBody::JoinGroup(r)) = self.call(5, req, REBALANCE_CALL).await else {
            return None;
        };
        match ErrorCode(r.error_code) {
            ErrorCode::NONE => {
                self.member_id = r.member_id;
                let members = r.members.into_iter().map(|m| m.member_id).collect();
                Some((r.generation_id, r.leader, members))
            }
            ErrorCode::MEMBER_ID_REQUIRED => {
                self.member_id = r.member_id;
                None
            }
            code => {
                if let Step::Rediscover = self.on_error(code) {
                    tokio::time::sleep(BACKOFF).await;
                }
                None
            }
        }
    }

    /// SyncGroup in `generation` (the leader sends the round-robin assignment of `members`): the member's
    /// partitions.
    async fn sync(
        &mut self,
        generation: i32,
        leader: &str,
        mut members: Vec<String>,
    ) -> Option<Vec<i32>> {
        members.sort();
        let assignments = if leader == self.member_id {
            members
                .iter()
                .enumerate()
                .map(|(i, m)| {
                    let parts: Vec<String> = (0..DATA_PARTITIONS)
                        .filter(|p| *p as usize % members.len() == i)
                        .map(|p| p.to_string())
                        .collect();
                    SyncGroupRequestAssignment {
                        member_id: m.clone(),
                        assignment: Bytes::from(parts.join(",")),
                        ..Default::default()
                    }
                })
                .collect()
        } else {
            Vec::new()
        };
        let req = RequestBody::SyncGroup(SyncGroupRequest {
            group_id: GROUP.to_string(),
            generation_id: generation,
            member_id: self.member_id.clone(),
            assignments,
            ..Default::default()
        });
        let Some(ResponseBody::SyncGroup(r)) = self.call(3, req, REBALANCE_CALL).await else {
            return None;
        };
        if r.error_code != 0 {
            self.on_error(ErrorCode(r.error_code));
            return None;
        }
        let text = String::from_utf8_lossy(&r.assignment).to_string();
        let parts: Vec<i32> = text.split(',').filter_map(|p| p.parse().ok()).collect();
        self.shared
            .state
            .lock()
            .synced(generation, &self.member_id, parts.clone());
        Some(parts)
    }

    /// OffsetFetch of `parts`, checked against what was acknowledged before it was sent.
    async fn fetch(&mut self, parts: &[i32]) -> Option<BTreeMap<i32, i64>> {
        let acked_before = self.shared.state.lock().acked.clone();
        let req = RequestBody::OffsetFetch(fetch_request(parts));
        let Some(ResponseBody::OffsetFetch(r)) = self.call(7, req, CALL).await else {
            return None;
        };
        if r.error_code != 0 {
            self.on_error(ErrorCode(r.error_code));
            return None;
        }
        let mut got = BTreeMap::new();
        for p in r.topics.iter().flat_map(|t| &t.partitions) {
            if p.error_code == 0 {
                got.insert(p.partition_index, p.committed_offset);
            }
        }
        let what = format!("member {} OffsetFetch", self.index);
        self.shared
            .state
            .lock()
            .check_fetch(&what, &acked_before, &got);
        Some(got)
    }

    /// One Heartbeat in `generation`.
    async fn heartbeat(&mut self, generation: i32) -> Step {
        let req = RequestBody::Heartbeat(HeartbeatRequest {
            group_id: GROUP.to_string(),
            generation_id: generation,
            member_id: self.member_id.clone(),
            ..Default::default()
        });
        match self.call(3, req, HEARTBEAT_CALL).await {
            Some(ResponseBody::Heartbeat(r)) if r.error_code == 0 => Step::Ok,
            Some(ResponseBody::Heartbeat(r)) => self.on_error(ErrorCode(r.error_code)),
            _ => Step::Rediscover,
        }
    }

    /// Commits the next offset of each of `parts` in `generation`.
    async fn commit(&mut self, generation: i32, parts: &[i32]) -> Step {
        let offsets: Vec<(i32, i64)> = {
            let mut st = self.shared.state.lock();
            parts
                .iter()
                .map(|&p| {
                    st.next_offset += 1;
                    let o = st.next_offset;
                    st.sent.entry(p).or_default().insert(o);
                    (p, o)
                })
                .collect()
        };
        let req = RequestBody::OffsetCommit(OffsetCommitRequest {
            group_id: GROUP.to_string(),
            generation_id_or_member_epoch: generation,
            member_id: self.member_id.clone(),
            topics: vec![OffsetCommitRequestTopic {
                name: DATA_TOPIC.to_string(),
                partitions: offsets
                    .iter()
                    .map(|&(p, o)| OffsetCommitRequestPartition {
                        partition_index: p,
                        committed_offset: o,
                        committed_metadata: Some(String::new()),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }],
            ..Default::default()
        });
        let Some(ResponseBody::OffsetCommit(r)) = self.call(7, req, CALL).await else {
            return Step::Rediscover;
        };
        let mut step = Step::Ok;
        for p in r.topics.iter().flat_map(|t| &t.partitions) {
            if p.error_code != 0 {
                step = self.on_error(ErrorCode(p.error_code));
                continue;
            }
            let Some(&(_, o)) = offsets.iter().find(|(q, _)| *q == p.partition_index) else {
                continue;
            };
            let mut st = self.shared.state.lock();
            st.acks += 1;
            let a = st.acked.entry(p.partition_index).or_insert(o);
            *a = (*a).max(o);
        }
        step
    }

    /// Joins, syncs, fetches, then heartbeats and commits until told to stop or to rejoin.
    async fn run(mut self) {
        while !self.shared.stop.load(Ordering::Acquire) {
            self.shared.state.lock().working[self.index] = None;
            let Some((generation, leader, members)) = self.join().await else {
                continue;
            };
            let Some(parts) = self.sync(generation, &leader, members).await else {
                continue;
            };
            if self.fetch(&parts).await.is_none() {
                continue;
            }
            self.shared.state.lock().working[self.index] = Some(generation);
            while !self.shared.stop.load(Ordering::Acquire) {
                tokio::time::sleep(ROUND).await;
                let step = match self.heartbeat(generation).await {
                    Step::Ok => self.commit(generation, &parts).await,
                    other => other,
                };
                if let Step::Rejoin = step {
                    break;
                }
            }
        }
    }
}

/// OffsetFetch (v7) of the data topic's `parts` for the group.
fn fetch_request(parts: &[i32]) -> OffsetFetchRequest {
    OffsetFetchRequest {
        group_id: GROUP.to_string(),
        topics: Some(vec![OffsetFetchRequestTopic {
            name: DATA_TOPIC.to_string(),
            partition_indexes: parts.to_vec(),
            ..Default::default()
        }]),
        ..Default::default()
    }
}

/// The end of a run (after the members stopped): OffsetFetch of every data partition from the group's
/// current coordinator, retried until it answers; the answer goes to `final_offsets`, checked.
pub async fn final_fetch(shared: Arc<Shared>) {
    let mut m = Member {
        index: MEMBERS,
        shared: shared.clone(),
        member_id: String::new(),
        coordinator: None,
        ask: 0,
    };
    let all: Vec<i32> = (0..DATA_PARTITIONS).collect();
    loop {
        if let Some(got) = m.fetch(&all).await {
            if got.len() == all.len() {
                shared.state.lock().final_offsets = Some(got);
                return;
            }
        }
        tokio::time::sleep(BACKOFF).await;
    }
}

/// The client host: the members until `stop`, then the final OffsetFetch.
pub async fn run_members(shared: Arc<Shared>) -> turmoil::Result {
    let mut tasks = Vec::new();
    for index in 0..MEMBERS {
        let m = Member {
            index,
            shared: shared.clone(),
            member_id: String::new(),
            coordinator: None,
            ask: index,
        };
        tasks.push(tokio::spawn(m.run()));
    }
    for t in tasks {
        let _ = t.await;
    }
    final_fetch(shared).await;
    Ok(())
}
