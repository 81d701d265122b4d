//! [`ControllerServer`]: a running controller — an openraft node (KIP-595 quorum; its voters the raft
//! membership, seeded by `controller.quorum.voters` and changed by KIP-853's AddRaftVoter/RemoveRaftVoter,
//! [`crate::voter_changes`]) plus the controller RPC listener serving raft peers and brokers.
//!
//! Only the raft leader is the active controller. It serializes decisions: under one lock it runs
//! the pure [`QuorumControl`] against its applied image, proposes the resulting records as one raft
//! entry, and waits until that entry is applied before the next decision; so each decision sees all
//! earlier ones. On becoming leader (a new term) it first waits until everything committed by
//! earlier leaders is applied (`ensure_linearizable`) and gives every registered broker a fresh
//! session. Non-leaders answer broker requests with `NOT_CONTROLLER` and the leader id if known.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use metadata::{ControllerError, MetadataImage, MetadataRecord, MetadataUpdate};
use openraft::{Config, Raft, SnapshotPolicy};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::config::ControllerConfig;
use crate::control::{ControlConfig, QuorumControl};
use crate::log_store::LogStore;
use crate::network::NetworkFactory;
use crate::quorum_state::PeerProgress;
use crate::raft_types::{MetadataBatch, TypeConfig};
use crate::rpc::{
    voter_nodes, ClientRequest, ClientResponse, RpcRequest, RpcResponse, MAX_BATCH_BYTES,
};
use crate::state_machine::{SmShared, StateMachineStore};
use crate::transport::{ControllerSeams, RpcListener};
use types::{BrokerEpoch, BrokerId, ErrorCode};

/// Directory (under `data_dir`) of the metadata log, vote and snapshots.
pub const METADATA_DIR: &str = "__cluster_metadata-0";
/// Most records in one `fetch_metadata` answer (whole offsets are never split).
pub const MAX_FETCH_RECORDS: usize = 10_000;
/// Longest accepted `fetch_metadata` wait (ms).
pub const MAX_FETCH_WAIT_MS: u64 = 30_000;
/// Bound on one raft round trip for a controller decision (ms); past it the request is answered
/// `NOT_CONTROLLER` and the client retries.
pub const COMMIT_TIMEOUT_MS: u64 = 10_000;

/// Timing knobs of a controller (defaults suit production; tests shrink them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ControllerTuning {
    /// Raft leader heartbeat interval, ms (default 100).
    pub heartbeat_interval_ms: u64,
    /// Raft election timeout range, ms (default 500..1000).
    pub election_timeout_min_ms: u64,
    /// Upper end of the election timeout range, ms.
    pub election_timeout_max_ms: u64,
    /// Build a snapshot every this many log entries (default 1000).
    pub snapshot_every: u64,
    /// Log entries kept behind the latest snapshot before purging (default 1000).
    pub logs_kept_after_snapshot: u64,
    /// Period of the session-expiry check on the active controller, ms (default 250).
    pub tick_interval_ms: u64,
}

impl Default for ControllerTuning {
    fn default() -> Self {
        ControllerTuning {
            heartbeat_interval_ms: 100,
            election_timeout_min_ms: 500,
            election_timeout_max_ms: 1000,
            snapshot_every: 1000,
            logs_kept_after_snapshot: 1000,
            tick_interval_ms: 250,
        }
    }
}

/// A controller's raft state ([`ControllerServer::raft_status`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RaftStatus {
    /// The current raft term (KRaft's leader epoch).
    pub term: u64,
    /// The leader of `term` as this node knows it.
    pub leader: Option<BrokerId>,
    /// True while this node is the raft leader (the active controller).
    pub is_leader: bool,
    /// Index of the last entry in this node's log.
    pub last_log_index: Option<u64>,
    /// Index of the last entry applied to this node's state machine.
    pub last_applied: Option<u64>,
}

/// The active-controller state guarded by the decision lock.
pub(crate) struct Active {
    pub(crate) control: QuorumControl,
    /// Term in which `control` was activated (None: not active).
    term: Option<u64>,
}

pub(crate) struct Inner {
    pub(crate) node_id: BrokerId,
    pub(crate) raft: Raft<TypeConfig>,
    pub(crate) sm: Arc<SmShared>,
    pub(crate) active: tokio::sync::Mutex<Active>,
    started: Instant,
    pub(crate) shutdown_rx: watch::Receiver<bool>,
    /// How long a leader acknowledged by a majority rejects RequestVotes ([`crate::vote_guard`]).
    vote_guard: Duration,
    /// When each follower last acknowledged this node's AppendEntries (DescribeQuorum).
    pub(crate) progress: Arc<PeerProgress>,
    /// Held by the one voter change (AddRaftVoter, RemoveRaftVoter, a learner's join) in progress.
    pub(crate) voter_change: tokio::sync::Mutex<()>,
}

/// A running controller: an openraft node plus its RPC listener (see the module doc). Dropping it
/// stops it like [`ControllerServer::shutdown`] without waiting.
pub struct ControllerServer {
    inner: Arc<Inner>,
    local_addr: SocketAddr,
    shutdown_tx: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
    stopped: bool,
}

/// An early answer to a client request: `NotController`, or `Error` for the whole request.
type NotController = ClientResponse;

/// The outcome of one controller decision.
struct Decided<T> {
    /// The reply.
    reply: T,
    /// The offset (raft log index) the decision's records were committed at; `None` when it wrote none.
    written: Option<i64>,
    /// The offset at which a broker's image shows the outcome: `written`, or for a decision that wrote
    /// nothing the offset of the last record of the image it was decided on.
    visible_at: i64,
}

impl<T> Decided<T> {
    fn map<U>(self, f: impl FnOnce(T) -> U) -> Decided<U> {
        Decided {
            reply: f(self.reply),
            written: self.written,
            visible_at: self.visible_at,
        }
    }
}

/// A fallible decision that returns records only: the records (none on error) and the reply.
fn unit(
    r: Result<Vec<MetadataRecord>, ControllerError>,
) -> (Vec<MetadataRecord>, Result<(), ControllerError>) {
    match r {
        Ok(records) => (records, Ok(())),
        Err(e) => (Vec::new(), Err(e)),
    }
}

/// A fallible [`crate::control::Decision`]: its records (none on error) and the reply.
fn decision<T>(
    r: Result<crate::control::Decision<T>, ControllerError>,
) -> (Vec<MetadataRecord>, Result<T, ControllerError>) {
    match r {
        Ok(d) => (d.records, Ok(d.reply)),
        Err(e) => (Vec::new(), Err(e)),
    }
}

impl ControllerServer {
    /// Binds `config.listen` and starts the controller with default [`ControllerTuning`]: opens
    /// (recovers) the metadata log and latest snapshot under `data_dir/__cluster_metadata-0/`,
    /// starts the raft node, initializes the static membership from `voters` if this node's log
    /// is empty (every voter may do so; "already initialized" is ignored) — with `voters` empty it asks
    /// `bootstrap_servers` to add it as a learner instead —, makes sure `data_dir/meta.properties` has a
    /// `directory.id` ([`crate::meta_properties`]), and serves RPCs.
    ///
    /// Errors: `node_id` not among `voters` (or neither voters nor bootstrap servers), bind failure,
    /// unreadable/corrupt log or snapshot, an unwritable `meta.properties`.
    pub async fn start(config: ControllerConfig) -> anyhow::Result<ControllerServer> {
        let listener = TcpListener::bind(config.listen).await?;
        Self::start_with_listener(config, listener, ControllerTuning::default()).await
    }

    /// Like [`ControllerServer::start`] but on an already bound listener (so callers can learn
    /// ports before building the voter map) and with explicit tuning. `config.listen` is ignored.
    pub async fn start_with_listener(
        config: ControllerConfig,
        listener: TcpListener,
        tuning: ControllerTuning,
    ) -> anyhow::Result<ControllerServer> {
        Self::start_with_seams(
            config,
            Box::new(listener),
            tuning,
            ControllerSeams::default(),
        )
        .await
    }

    /// Like [`ControllerServer::start_with_listener`] on any [`RpcListener`], with the network, disk and
    /// seed of `seams` (a simulation's; production is [`ControllerSeams::default`]).
    pub async fn start_with_seams(
        config: ControllerConfig,
        listener: Box<dyn RpcListener>,
        tuning: ControllerTuning,
        seams: ControllerSeams,
    ) -> anyhow::Result<ControllerServer> {
        anyhow::ensure!(
            config.voters.contains_key(&config.node_id)
                || (config.voters.is_empty() && !config.bootstrap_servers.is_empty()),
            "node id {} is not among controller.quorum.voters {:?} (and no bootstrap servers)",
            config.node_id,
            config.voters.keys().collect::<Vec<_>>()
        );
        anyhow::ensure!(config.node_id.get() >= 0, "negative node id");
        let local_addr = listener.local_addr()?;
        let dir = config.data_dir.join(METADATA_DIR);
        crate::log_store::create_dir_durable(&seams.fs, &dir)?;
        let directory_id = crate::meta_properties::ensure_directory_id(
            &seams.fs,
            &config.data_dir,
            config.node_id.get(),
            &config.cluster_id,
            seams.rng_seed.map(|s| s ^ config.node_id.get() as u64),
        )?;
        let log_store = LogStore::open(seams.fs.clone(), &dir)?;
        let sm = StateMachineStore::open(seams.fs.clone(), &dir, &config.cluster_id)?;
        let shared = sm.shared.clone();
        let raft_config = Config {
            cluster_name: "runnel-metadata".to_string(),
            heartbeat_interval: tuning.heartbeat_interval_ms,
            election_timeout_min: tuning.election_timeout_min_ms,
            election_timeout_max: tuning.election_timeout_max_ms,
            install_snapshot_timeout: 5000,
            snapshot_policy: SnapshotPolicy::LogsSinceLast(tuning.snapshot_every.max(1)),
            max_in_snapshot_log_to_keep: tuning.logs_kept_after_snapshot,
            ..Default::default()
        }
        .validate()?;
        let progress = Arc::new(PeerProgress::default());
        let raft = Raft::new(
            config.node_id.get() as u64,
            Arc::new(raft_config),
            NetworkFactory::new(seams.transport.clone(), progress.clone()),
            log_store,
            sm,
        )
        .await?;
        progress.set_log_metrics(raft.data_metrics());
        if !config.voters.is_empty() && !raft.is_initialized().await? {
            if let Err(e) = raft.initialize(voter_nodes(&config.voters)).await {
                tracing::info!("controller {}: initialize: {e}", config.node_id);
            }
        }
        let control = QuorumControl::new(
            ControlConfig {
                session_timeout_ms: config.broker_session_timeout_ms,
                default_num_partitions: config.default_num_partitions,
                default_replication_factor: config.default_replication_factor,
                unclean_leader_election: config.unclean_leader_election,
                auto_leader_rebalance: config.auto_leader_rebalance,
                leader_imbalance_check_interval_ms: config.leader_imbalance_check_interval_ms,
                balancer: config.balancer.clone(),
            },
            seams.rng_seed.unwrap_or_else(rand::random),
        );
        let (shutdown_tx, shutdown_rx) = watch::channel(false);
        let inner = Arc::new(Inner {
            node_id: config.node_id,
            raft,
            sm: shared,
            active: tokio::sync::Mutex::new(Active {
                control,
                term: None,
            }),
            started: Instant::now(),
            shutdown_rx,
            vote_guard: Duration::from_millis(tuning.election_timeout_max_ms),
            progress,
            voter_change: tokio::sync::Mutex::new(()),
        });
        let accept = tokio::spawn(crate::listener::accept_loop(inner.clone(), listener));
        let tick = tokio::spawn(tick_loop(
            inner.clone(),
            Duration::from_millis(tuning.tick_interval_ms.max(1)),
        ));
        let mut tasks = vec![accept, tick];
        let me = crate::raft_types::QuorumNode::with_directory(local_addr, directory_id);
        tasks.extend(crate::voter_changes::spawn_join(
            &inner, &seams, &config, me,
        ));
        Ok(ControllerServer {
            inner,
            local_addr,
            shutdown_tx,
            tasks,
            stopped: false,
        })
    }

    /// The bound RPC address.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// This controller's id.
    pub fn node_id(&self) -> BrokerId {
        self.inner.node_id
    }

    /// The raft leader (active controller) id as this node currently sees it, if known.
    pub fn leader_id(&self) -> Option<BrokerId> {
        self.inner.current_leader()
    }

    /// Waits (at most `timeout`) until this node knows a leader, and returns it.
    pub async fn wait_for_leader(&self, timeout: Duration) -> Option<BrokerId> {
        let mut rx = self.inner.raft.metrics();
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if let Some(l) = rx.borrow_and_update().current_leader {
                return Some(node_id(l));
            }
            match tokio::time::timeout_at(deadline, rx.changed()).await {
                Ok(Ok(())) => continue,
                _ => return None,
            }
        }
    }

    /// This node's raft state as it sees it now.
    pub fn raft_status(&self) -> RaftStatus {
        self.status().raft_status()
    }

    /// A handle reading this controller's state without owning the server (the metrics endpoint's).
    pub fn status(&self) -> crate::status::ControllerStatus {
        crate::status::ControllerStatus::new(self.inner.clone())
    }

    /// A copy of this node's applied metadata image (committed state; may lag the leader).
    pub fn image(&self) -> MetadataImage {
        self.inner.sm.state.read().image.clone()
    }

    /// Waits (at most `timeout`) until this node has applied `offset`; returns whether it did.
    pub async fn wait_for_offset(&self, offset: i64, timeout: Duration) -> bool {
        let mut rx = self.inner.sm.applied_tx.subscribe();
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if *rx.borrow_and_update() >= offset {
                return true;
            }
            match tokio::time::timeout_at(deadline, rx.changed()).await {
                Ok(Ok(())) => continue,
                _ => return false,
            }
        }
    }

    /// Asks openraft to build a snapshot now (normally built every `snapshot_every` entries).
    pub async fn trigger_snapshot(&self) -> anyhow::Result<()> {
        self.inner.raft.trigger().snapshot().await?;
        Ok(())
    }

    /// Stops serving, stops the raft node and waits for it.
    pub async fn shutdown(mut self) -> anyhow::Result<()> {
        self.stop_tasks();
        self.stopped = true;
        let res = self.inner.raft.shutdown().await;
        for t in self.tasks.drain(..) {
            let _ = t.await;
        }
        res.map_err(|e| anyhow::anyhow!("raft shutdown: {e}"))
    }

    fn stop_tasks(&mut self) {
        let _ = self.shutdown_tx.send(true);
        for t in &self.tasks {
            t.abort();
        }
    }
}

impl Drop for ControllerServer {
    fn drop(&mut self) {
        self.stop_tasks();
        if !self.stopped {
            if let Ok(h) = tokio::runtime::Handle::try_current() {
                let raft = self.inner.raft.clone();
                h.spawn(async move {
                    let _ = raft.shutdown().await;
                });
            }
        }
    }
}

async fn tick_loop(inner: Arc<Inner>, period: Duration) {
    let mut interval = tokio::time::interval(period);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        interval.tick().await;
        inner.tick().await;
    }
}

impl Inner {
    pub(crate) fn now_ms(&self) -> i64 {
        self.started.elapsed().as_millis() as i64
    }

    pub(crate) fn current_leader(&self) -> Option<BrokerId> {
        self.raft.metrics().borrow().current_leader.map(node_id)
    }

    /// Waits (at most COMMIT_TIMEOUT_MS) until this node, as leader, has applied everything committed;
    /// NOT_CONTROLLER when it cannot confirm its leadership in time.
    async fn ensure_linearizable(&self) -> Result<(), NotController> {
        let r = tokio::time::timeout(
            Duration::from_millis(COMMIT_TIMEOUT_MS),
            self.raft.ensure_linearizable(),
        )
        .await;
        if matches!(r, Ok(Ok(_))) {
            Ok(())
        } else {
            Err(self.not_controller())
        }
    }

    fn not_controller(&self) -> NotController {
        let leader = self.current_leader().filter(|&l| l != self.node_id);
        let leader_addr = leader.and_then(|l| {
            let metrics = self.raft.metrics();
            let m = metrics.borrow();
            let node = m
                .membership_config
                .membership()
                .get_node(&(l.get() as u64))?;
            node.addr.parse().ok()
        });
        ClientResponse::NotController {
            leader,
            leader_addr,
        }
    }

    // `NotController` carries a `ClientResponse`, whose largest variant (a full `MetadataImage`) grew past
    // clippy's 128 bytes with `TopicsImage`'s id index; it is built once per refused request, not hot.
    #[allow(clippy::result_large_err)]
    fn require_leader(&self) -> Result<(), NotController> {
        if self.current_leader() == Some(self.node_id) {
            Ok(())
        } else {
            Err(self.not_controller())
        }
    }

    /// Makes sure this node is the active controller for the current term.
    async fn activate(&self, active: &mut Active) -> Result<(), NotController> {
        let (leader, term) = {
            let m = self.raft.metrics();
            let m = m.borrow();
            (m.current_leader, m.current_term)
        };
        if leader != Some(self.node_id.get() as u64) {
            active.term = None;
            return Err(self.not_controller());
        }
        if active.term != Some(term) {
            self.ensure_linearizable().await?;
            let now = self.now_ms();
            let st = self.sm.state.read();
            active.control.activate(&st.image, now);
            active.term = Some(term);
            tracing::info!(
                "controller {} is active in term {term} at offset {}",
                self.node_id,
                st.image.offset
            );
        }
        Ok(())
    }

    /// Proposes `records` as one entry and waits until it is applied; returns its offset.
    async fn propose(
        &self,
        active: &mut Active,
        records: Vec<MetadataRecord>,
    ) -> Result<i64, NotController> {
        let r = tokio::time::timeout(
            Duration::from_millis(COMMIT_TIMEOUT_MS),
            self.raft.client_write(MetadataBatch { records }),
        )
        .await;
        match r {
            Ok(Ok(resp)) => Ok(resp.log_id.index as i64),
            Ok(Err(e)) => {
                tracing::info!("controller {}: proposal failed: {e}", self.node_id);
                active.term = None;
                Err(self.not_controller())
            }
            Err(_) => {
                active.term = None;
                Err(self.not_controller())
            }
        }
    }

    /// One decision: activate, decide against the applied image, propose the records (if any).
    /// Returns the reply, the offset the records were committed at (None: nothing written) and the
    /// offset at which the outcome is visible to a broker replaying the log.
    async fn decide<T>(
        &self,
        f: impl FnOnce(&mut QuorumControl, &MetadataImage, i64) -> (Vec<MetadataRecord>, T),
    ) -> Result<Decided<T>, NotController> {
        let mut active = self.active.lock().await;
        self.activate(&mut active).await?;
        let now = self.now_ms();
        let (records, reply, visible_at) = {
            let st = self.sm.state.read();
            let (records, reply) = f(&mut active.control, &st.image, now);
            (records, reply, st.last_record_offset())
        };
        if records.is_empty() {
            return Ok(Decided {
                reply,
                written: None,
                visible_at,
            });
        }
        let size = serde_json::to_vec(&records).map_or(usize::MAX, |v| v.len());
        if size > MAX_BATCH_BYTES {
            return Err(ClientResponse::Error(ControllerError::new(
                ErrorCode::INVALID_REQUEST,
                format!("the request would append {size} bytes of metadata; the limit is {MAX_BATCH_BYTES}"),
            )));
        }
        let offset = self.propose(&mut active, records).await?;
        Ok(Decided {
            reply,
            written: Some(offset),
            visible_at: offset,
        })
    }

    async fn tick(&self) {
        if self.current_leader() != Some(self.node_id) {
            return;
        }
        let _ = self
            .decide(|ctl, image, now| (ctl.tick(image, now), ()))
            .await;
    }

    pub(crate) async fn handle(&self, req: RpcRequest) -> RpcResponse {
        match req {
            RpcRequest::AppendEntries(r) => {
                RpcResponse::AppendEntries(self.raft.append_entries(r).await)
            }
            RpcRequest::Vote(r) => RpcResponse::Vote(
                crate::vote_guard::vote(&self.raft, self.node_id.get() as u64, self.vote_guard, r)
                    .await,
            ),
            RpcRequest::InstallSnapshot(r) => {
                RpcResponse::InstallSnapshot(self.raft.install_snapshot(r).await)
            }
            RpcRequest::Client(c) => RpcResponse::Client(
                self.handle_client(c)
                    .await
                    .unwrap_or_else(|early_answer| early_answer),
            ),
            RpcRequest::AddLearner { node_id, node } => {
                RpcResponse::AddLearner(self.answer_add_learner(node_id, node).await)
            }
        }
    }

    /// A broker request; [`ClientRequest::WithOffset`] gets its inner answer with the offset at which the
    /// outcome is visible.
    async fn handle_client(&self, req: ClientRequest) -> Result<ClientResponse, NotController> {
        match req {
            ClientRequest::WithOffset(inner) if matches!(*inner, ClientRequest::WithOffset(_)) => {
                Ok(ClientResponse::Error(ControllerError::new(
                    ErrorCode::INVALID_REQUEST,
                    "nested WithOffset request",
                )))
            }
            ClientRequest::WithOffset(inner) => {
                let (response, offset) = self.answer(*inner).await?;
                Ok(ClientResponse::WithOffset {
                    offset,
                    response: Box::new(response),
                })
            }
            req => Ok(self.answer(req).await?.0),
        }
    }

    /// Answers one (not wrapped) broker request: its response and the metadata offset at which its outcome
    /// is visible.
    async fn answer(&self, req: ClientRequest) -> Result<(ClientResponse, i64), NotController> {
        use ClientResponse as R;
        let d = match req {
            ClientRequest::RegisterBroker(r) => {
                let d = self
                    .decide(|ctl, image, now| unit(ctl.register_broker(image, &r, now)))
                    .await?;
                let epoch = d.written.map(BrokerEpoch).ok_or_else(|| {
                    ControllerError::new(ErrorCode::UNKNOWN_SERVER_ERROR, "nothing registered")
                });
                let reply = R::RegisterBroker(d.reply.and(epoch));
                return Ok((reply, d.visible_at));
            }
            ClientRequest::Heartbeat(hb) => self
                .decide(|ctl, image, now| decision(ctl.heartbeat(image, &hb, now)))
                .await?
                .map(R::Heartbeat),
            ClientRequest::CreateTopics {
                topics,
                validate_only,
            } => self
                .decide(|ctl, image, _| {
                    let d = ctl.create_topics(image, &topics, validate_only);
                    (d.records, d.reply)
                })
                .await?
                .map(R::CreateTopics),
            ClientRequest::DeleteTopics { names } => self
                .decide(|ctl, image, _| {
                    let d = ctl.delete_topics(image, &names);
                    (d.records, d.reply)
                })
                .await?
                .map(R::DeleteTopics),
            ClientRequest::CreatePartitions {
                name,
                count,
                validate_only,
            } => self
                .decide(|ctl, image, _| {
                    unit(ctl.create_partitions(image, &name, count, validate_only))
                })
                .await?
                .map(R::CreatePartitions),
            ClientRequest::ElectLeaders {
                election,
                partitions,
            } => self
                .decide(|ctl, image, _| {
                    let d = ctl.elect_leaders(image, election, partitions.as_deref());
                    (d.records, d.reply)
                })
                .await?
                .map(R::ElectLeaders),
            ClientRequest::AlterPartitionReassignments {
                reassignments,
                allow_replication_factor_change: allow,
            } => self
                .decide(|ctl, image, _| {
                    let d = ctl.alter_partition_reassignments(image, &reassignments, allow);
                    (d.records, d.reply)
                })
                .await?
                .map(R::AlterPartitionReassignments),
            ClientRequest::AlterPartition(r) => self
                .decide(|ctl, image, _| decision(ctl.alter_partition(image, &r)))
                .await?
                .map(R::AlterPartition),
            ClientRequest::AlterConfigs {
                resource_type,
                resource_name,
                ops,
                validate_only,
            } => self
                .decide(|ctl, image, _| {
                    let name = &resource_name;
                    unit(ctl.alter_configs(image, resource_type, name, &ops, validate_only))
                })
                .await?
                .map(R::AlterConfigs),
            ClientRequest::AllocateProducerIds {
                broker_id,
                broker_epoch,
            } => self
                .decide(|ctl, image, _| {
                    decision(ctl.allocate_producer_ids(image, broker_id, broker_epoch))
                })
                .await?
                .map(R::AllocateProducerIds),
            req => return self.answer_security(req).await,
        };
        Ok((d.reply, d.visible_at))
    }

    /// [`answer`](Self::answer) for the security records' requests (ACLs, client quotas, SCRAM credentials),
    /// UnregisterBroker and the brokers' storage reports (AssignReplicasToDirs, partition sizes).
    async fn answer_security(
        &self,
        req: ClientRequest,
    ) -> Result<(ClientResponse, i64), NotController> {
        use ClientResponse as R;
        let d = match req {
            ClientRequest::CreateAcls { acls } => self
                .decide(|ctl, image, _| unit(ctl.create_acls(image, &acls)))
                .await?
                .map(R::CreateAcls),
            ClientRequest::DeleteAcls { ids } => self
                .decide(|ctl, image, _| unit(ctl.delete_acls(image, &ids)))
                .await?
                .map(R::DeleteAcls),
            ClientRequest::AlterClientQuotas {
                entries,
                validate_only,
            } => self
                .decide(|ctl, image, _| {
                    unit(ctl.alter_client_quotas(image, &entries, validate_only))
                })
                .await?
                .map(R::AlterClientQuotas),
            ClientRequest::AlterUserScramCredentials {
                deletions,
                upsertions,
            } => self
                .decide(|ctl, image, _| ctl.alter_scram_credentials(image, &deletions, &upsertions))
                .await?
                .map(R::AlterUserScramCredentials),
            ClientRequest::UnregisterBroker { broker_id } => self
                .decide(|ctl, image, _| unit(ctl.unregister_broker(image, broker_id)))
                .await?
                .map(R::UnregisterBroker),
            ClientRequest::AssignReplicasToDirs(r) => self
                .decide(|ctl, image, _| unit(ctl.assign_replicas_to_dirs(image, &r)))
                .await?
                .map(R::AssignReplicasToDirs),
            ClientRequest::PartitionSizes(r) => self
                .decide(|ctl, image, _| unit(ctl.record_partition_sizes(image, &r)))
                .await?
                .map(R::PartitionSizes),
            req => return self.read_only(req).await,
        };
        Ok((d.reply, d.visible_at))
    }

    /// The requests that decide nothing: metadata fetches and DescribeQuorum (leader only).
    async fn read_only(&self, req: ClientRequest) -> Result<(ClientResponse, i64), NotController> {
        let response = match req {
            ClientRequest::FetchMetadata {
                since_offset,
                max_wait_ms,
            } => {
                self.require_leader()?;
                if since_offset < 0 {
                    // A full image may be acted on as the whole truth (a broker deletes stray logs from
                    // it): a newly elected leader answers only once it has applied everything committed.
                    self.ensure_linearizable().await?;
                }
                ClientResponse::FetchMetadata(Ok(self
                    .fetch_metadata(since_offset, max_wait_ms.min(MAX_FETCH_WAIT_MS))
                    .await))
            }
            ClientRequest::DescribeQuorum => {
                self.require_leader()?;
                ClientResponse::DescribeQuorum(Ok(self.describe_quorum().await))
            }
            _ => ClientResponse::Error(ControllerError::new(
                ErrorCode::INVALID_REQUEST,
                "unexpected request",
            )),
        };
        Ok((response, self.sm.state.read().last_record_offset()))
    }

    async fn fetch_metadata(&self, since: i64, max_wait_ms: u64) -> MetadataUpdate {
        let mut rx = self.sm.applied_tx.subscribe();
        let deadline = tokio::time::Instant::now() + Duration::from_millis(max_wait_ms);
        loop {
            rx.borrow_and_update();
            if since < 0 {
                return MetadataUpdate::Image(Box::new(self.sm.state.read().image.clone()));
            }
            match self.sm.records_after(since, MAX_FETCH_RECORDS) {
                None => return MetadataUpdate::Image(Box::new(self.sm.state.read().image.clone())),
                Some(v) if !v.is_empty() => return MetadataUpdate::Records(v),
                Some(_) => {}
            }
            match tokio::time::timeout_at(deadline, rx.changed()).await {
                Ok(Ok(())) => continue,
                _ => return MetadataUpdate::Records(Vec::new()),
            }
        }
    }
}

/// A raft node id (openraft's `u64`) as the node id brokers and controllers share.
pub(crate) fn node_id(raft_id: u64) -> BrokerId {
    BrokerId(i32::try_from(raft_id).unwrap_or(i32::MAX))
}
