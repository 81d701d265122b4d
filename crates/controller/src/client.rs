//! [`ControllerClient`]: how brokers talk to the quorum (Kafka's `NodeToControllerChannelManager`
//! reduced): find the active controller, follow `NOT_CONTROLLER` redirects, retry with bounded
//! backoff within a deadline.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use metadata::scram::{ScramAlterResult, ScramDeletion, ScramUpsertion};
use metadata::{
    AclEntry, AlterPartition, ControllerError, CreateTopic, CreatedTopic, ElectionResult,
    ElectionType, Heartbeat, HeartbeatReply, LeaderAndIsr, MetadataUpdate, QuorumInfo,
    Reassignment, RegisterBroker,
};
use parking_lot::Mutex;
use tokio::io::AsyncWriteExt;
use tokio::time::Instant;
use types::{BrokerEpoch, BrokerId, ErrorCode, LeaderEpoch, PartitionEpoch, ProducerId};
use uuid::Uuid;

use crate::broker_apis::{self, KafkaCall};
use crate::rpc::{
    read_frame, read_frame_bytes, write_frame, ClientRequest, ClientResponse, RpcRequest,
    RpcResponse,
};
use crate::transport::{TcpTransport, Transport};

/// Default deadline of one client call (retries included).
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// First retry backoff; doubles up to [`MAX_BACKOFF`].
pub const INITIAL_BACKOFF: Duration = Duration::from_millis(25);
/// Largest retry backoff.
pub const MAX_BACKOFF: Duration = Duration::from_millis(500);
/// Bound on connecting to one controller.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// Bound on one attempt's connect + exchange (plus any long-poll wait).
pub const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(12);
/// Default bound on one attempt of a heartbeat or metadata fetch (see
/// [`ControllerClient::with_session_attempt_timeout`]).
pub const SESSION_ATTEMPT_TIMEOUT: Duration = Duration::from_millis(4500);

/// Client of the controller quorum, used by brokers (any process). Cheap to clone (shares the
/// known-leader hint); `Send + Sync`.
///
/// Every call goes to the believed active controller; a `NOT_CONTROLLER` answer naming the leader
/// is followed at once, otherwise (unknown leader, connection failure) the next voter is tried
/// after a backoff of 25 ms doubling to 500 ms. When no active controller answers within the
/// deadline ([`DEFAULT_REQUEST_TIMEOUT`], see [`ControllerClient::with_timeout`]) the call fails
/// with `REQUEST_TIMED_OUT` (7). Errors decided by the controller carry Kafka codes (see
/// [`types::ErrorCode`]).
///
/// A write that timed out may still have been committed; retrying it is answered as Kafka would
/// (e.g. `TOPIC_ALREADY_EXISTS`).
#[derive(Clone, Debug)]
pub struct ControllerClient {
    /// The controllers calls go to: `controller.quorum.voters`, or (KIP-853) the bootstrap controllers
    /// under stand-in ids until [`ControllerClient::refresh_voters`] learns the membership.
    voters: Arc<Mutex<Arc<BTreeMap<BrokerId, SocketAddr>>>>,
    leader_hint: Arc<Mutex<Option<BrokerId>>>,
    timeout: Duration,
    session_attempt: Duration,
    transport: Arc<dyn Transport>,
    /// Sent in BrokerRegistration; empty: not checked by the controller.
    cluster_id: Arc<str>,
}

/// A controller's answer to a change, with the metadata offset (raft log index) at which its outcome is
/// visible: a broker whose image has applied `offset` shows it (read-your-writes, as Kafka's brokers wait
/// for their metadata to reach a change's offset). `offset` is -1 when the call failed before any controller
/// answered.
#[derive(Clone, Debug, PartialEq)]
pub struct Committed<T> {
    /// The controller's answer.
    pub reply: T,
    /// The offset at which the outcome is visible, -1 if unknown.
    pub offset: i64,
}

fn unexpected() -> ControllerError {
    ControllerError::new(
        ErrorCode::UNKNOWN_SERVER_ERROR,
        "unexpected controller response",
    )
}

impl ControllerClient {
    /// A client of the quorum `voters` (`controller.quorum.voters`).
    pub fn new(voters: BTreeMap<BrokerId, SocketAddr>) -> ControllerClient {
        ControllerClient {
            voters: Arc::new(Mutex::new(Arc::new(voters))),
            leader_hint: Arc::new(Mutex::new(None)),
            timeout: DEFAULT_REQUEST_TIMEOUT,
            session_attempt: SESSION_ATTEMPT_TIMEOUT,
            transport: Arc::new(TcpTransport),
            cluster_id: Arc::from(""),
        }
    }

    /// The same client naming `cluster_id` in its BrokerRegistration: a controller of another cluster
    /// refuses it with INCONSISTENT_CLUSTER_ID (104). Without it the controller does not check.
    pub fn with_cluster_id(mut self, cluster_id: &str) -> ControllerClient {
        self.cluster_id = Arc::from(cluster_id);
        self
    }

    /// The same client connecting through `transport` (default [`TcpTransport`]; a simulation passes
    /// its simulated network).
    pub fn with_transport(mut self, transport: Arc<dyn Transport>) -> ControllerClient {
        self.transport = transport;
        self
    }

    /// The same client with another bound on one attempt of a heartbeat or metadata fetch (default
    /// [`SESSION_ATTEMPT_TIMEOUT`], 4.5 s: half of Kafka's default `broker.session.timeout.ms`).
    /// Brokers pass half their `broker.session.timeout.ms`, as Kafka's heartbeat channel times out
    /// requests: an active controller that stops answering without closing its connections (stopped,
    /// partitioned after the connect) must not hold a heartbeat past the session timeout, or the next
    /// active controller fences this healthy broker; nor hold its metadata fetches that long.
    pub fn with_session_attempt_timeout(mut self, attempt: Duration) -> ControllerClient {
        self.session_attempt = attempt;
        self
    }

    /// The same client with another per-call deadline.
    pub fn with_timeout(mut self, timeout: Duration) -> ControllerClient {
        self.timeout = timeout;
        self
    }

    /// A client of the quorum that the controllers at `bootstrap` (`controller.quorum.bootstrap.servers`,
    /// KIP-853) belong to: they stand in as voters (under ids -1, -2, ...) until
    /// [`ControllerClient::refresh_voters`] learns the membership from the active controller.
    pub fn bootstrap(bootstrap: &[SocketAddr]) -> ControllerClient {
        ControllerClient::new(
            (bootstrap.iter().enumerate())
                .map(|(i, a)| (BrokerId(-(i as i32) - 1), *a))
                .collect(),
        )
    }

    /// Asks the active controller for the quorum's voters (DescribeQuorum) and sends later calls to them:
    /// how a broker started with `controller.quorum.bootstrap.servers` follows controllers added, removed
    /// or replaced (KIP-853). Errors: the call's; the known voters are kept.
    pub async fn refresh_voters(&self) -> Result<(), ControllerError> {
        let quorum = self.describe_quorum().await?;
        if !quorum.voters.is_empty() {
            *self.voters.lock() = Arc::new(quorum.voters);
        }
        Ok(())
    }

    /// The controllers calls go to now, by id.
    pub fn voters(&self) -> Arc<BTreeMap<BrokerId, SocketAddr>> {
        self.voters.lock().clone()
    }

    /// The controller this client currently believes active, if any.
    pub fn leader_hint(&self) -> Option<BrokerId> {
        *self.leader_hint.lock()
    }

    /// One exchange with the controller at `addr`: `kafka`'s frame when the request has a Kafka form
    /// ([`broker_apis`]), else `req` as a JSON frame.
    async fn attempt(
        &self,
        addr: SocketAddr,
        req: &RpcRequest,
        kafka: Option<&KafkaCall>,
        limit: Duration,
    ) -> std::io::Result<ClientResponse> {
        let fut = async {
            let connect = self.transport.connect(&addr.to_string());
            let mut s = tokio::time::timeout(CONNECT_TIMEOUT, connect)
                .await
                .map_err(|_| {
                    std::io::Error::new(std::io::ErrorKind::TimedOut, "connect timed out")
                })??;
            if let Some(call) = kafka {
                s.write_all(&call.frame).await?;
                s.flush().await?;
                let frame = bytes::Bytes::from(read_frame_bytes(&mut s).await?);
                let invalid = |e: String| std::io::Error::new(std::io::ErrorKind::InvalidData, e);
                let (header, body) = protocol::decode_response(call.api, call.version, frame)
                    .map_err(|e| invalid(format!("{} response: {e}", call.api.name())))?;
                if header.correlation_id != 0 {
                    return Err(invalid(format!(
                        "{} response with correlation id {}",
                        call.api.name(),
                        header.correlation_id
                    )));
                }
                return Ok(broker_apis::from_kafka(body));
            }
            write_frame(&mut s, req).await?;
            match read_frame(&mut s).await? {
                RpcResponse::Client(c) => Ok(c),
                _ => Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "not a client response",
                )),
            }
        };
        tokio::time::timeout(limit, fut)
            .await
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "attempt timed out"))?
    }

    /// Sends `req` to the active controller (see the type doc); `extra` extends the deadline (for
    /// long polls).
    async fn call(
        &self,
        req: ClientRequest,
        extra: Duration,
    ) -> Result<ClientResponse, ControllerError> {
        self.call_bounded(req, extra, ATTEMPT_TIMEOUT).await
    }

    /// [`call`](Self::call) with each attempt bounded by `attempt` (plus `extra`).
    async fn call_bounded(
        &self,
        req: ClientRequest,
        extra: Duration,
        attempt: Duration,
    ) -> Result<ClientResponse, ControllerError> {
        let kafka = broker_apis::to_kafka(&req, &self.cluster_id)
            .map_err(|e| ControllerError::new(ErrorCode::UNKNOWN_SERVER_ERROR, e))?;
        let req = RpcRequest::Client(req);
        let now = Instant::now();
        let budget = self.timeout.saturating_add(extra);
        let deadline = now
            .checked_add(budget)
            .unwrap_or_else(|| now + Duration::from_secs(86_400));
        let mut voters = self.voters();
        let mut ids: Vec<BrokerId> = voters.keys().copied().collect();
        if ids.is_empty() {
            return Err(ControllerError::new(
                ErrorCode::INVALID_REQUEST,
                "no controller voters",
            ));
        }
        let mut rr = 0usize;
        let mut backoff = INITIAL_BACKOFF;
        let mut redirects = 0usize;
        let mut last_err = String::from("no attempt");
        let mut failed: Option<BrokerId> = None;
        loop {
            let hint = *self.leader_hint.lock();
            let target = match hint {
                Some(l) if voters.contains_key(&l) => l,
                _ => {
                    rr += 1;
                    // Not straight back to the voter that just failed (a silent one costs a whole attempt).
                    if ids.len() > 1 && failed == Some(ids[rr % ids.len()]) {
                        rr += 1;
                    }
                    ids[rr % ids.len()]
                }
            };
            let addr = voters[&target];
            let remaining = deadline.saturating_duration_since(Instant::now());
            if remaining.is_zero() {
                return Err(ControllerError::new(
                    ErrorCode::REQUEST_TIMED_OUT,
                    format!("no active controller answered in time: {last_err}"),
                ));
            }
            let limit = remaining.min(attempt.saturating_add(extra));
            let mut retry_now = false;
            match self.attempt(addr, &req, kafka.as_ref(), limit).await {
                Ok(ClientResponse::NotController {
                    leader,
                    leader_addr,
                }) => {
                    last_err = format!("controller {target} is not active (leader {leader:?})");
                    if let (Some(l), Some(a)) = (leader, leader_addr) {
                        if !voters.contains_key(&l) {
                            // A leader this client has no address for (it started from bootstrap servers,
                            // or the membership changed): known from now on.
                            let mut known = voters.as_ref().clone();
                            known.insert(l, a);
                            voters = Arc::new(known);
                            *self.voters.lock() = voters.clone();
                            ids = voters.keys().copied().collect();
                        }
                    }
                    let follow = leader.filter(|l| *l != target && voters.contains_key(l));
                    *self.leader_hint.lock() = follow;
                    // Follow a named leader at once, or (none named) try the next voter at once, but not
                    // forever around a stale loop.
                    if redirects < ids.len() {
                        redirects += 1;
                        retry_now = true;
                    }
                }
                Ok(ClientResponse::Error(e)) => {
                    *self.leader_hint.lock() = Some(target);
                    return Err(e);
                }
                Ok(resp) => {
                    *self.leader_hint.lock() = Some(target);
                    return Ok(resp);
                }
                Err(e) => {
                    last_err = format!("controller {target} at {addr}: {e}");
                    *self.leader_hint.lock() = None;
                    failed = Some(target);
                }
            }
            if !retry_now {
                redirects = 0;
                let remaining = deadline.saturating_duration_since(Instant::now());
                tokio::time::sleep(backoff.min(remaining)).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
    }

    /// [`ControllerClient::call`] of `req` wrapped in [`ClientRequest::WithOffset`]: the inner answer and the
    /// offset at which its outcome is visible.
    async fn call_with_offset(
        &self,
        req: ClientRequest,
    ) -> Result<(ClientResponse, i64), ControllerError> {
        match self
            .call(ClientRequest::WithOffset(Box::new(req)), Duration::ZERO)
            .await?
        {
            ClientResponse::WithOffset { offset, response } => Ok((*response, offset)),
            _ => Err(unexpected()),
        }
    }

    /// BrokerRegistration (KIP-631), sent as Kafka's request with this client's cluster id: registers
    /// `broker_id` with its advertised `listeners` (`host`/`port` the inter-broker one's) (fenced until a
    /// heartbeat finds it caught up) and returns its new broker epoch (the offset of the registration
    /// record).
    ///
    /// Errors: `DUPLICATE_BROKER_REGISTRATION` (101) while another incarnation holds a live session,
    /// `INVALID_REQUEST` (42), `INCONSISTENT_CLUSTER_ID` (104), `CLUSTER_AUTHORIZATION_FAILED` (31),
    /// `REQUEST_TIMED_OUT` (7).
    pub async fn register_broker(
        &self,
        broker_id: BrokerId,
        incarnation_id: Uuid,
        host: String,
        port: u16,
        rack: Option<String>,
        listeners: Vec<metadata::BrokerEndpoint>,
    ) -> Result<BrokerEpoch, ControllerError> {
        self.send_registration(RegisterBroker {
            broker_id,
            incarnation_id,
            host,
            port,
            rack,
            listeners,
            log_dirs: Vec::new(),
        })
        .await
    }

    /// BrokerRegistration with every field given, including the data directories' ids (KIP-858
    /// `LogDirs`); see [`register_broker`](Self::register_broker) for the reply and errors.
    pub async fn send_registration(
        &self,
        registration: RegisterBroker,
    ) -> Result<BrokerEpoch, ControllerError> {
        let req = ClientRequest::RegisterBroker(registration);
        match self.call(req, Duration::ZERO).await? {
            ClientResponse::RegisterBroker(r) => r,
            _ => Err(unexpected()),
        }
    }

    /// BrokerHeartbeat (KIP-631), sent as Kafka's request: keeps the session alive (send well within
    /// `broker.session.timeout.ms`, Kafka sends every `broker.heartbeat.interval.ms` = 2000).
    /// `metadata_offset` is the highest metadata offset the broker has replayed; `want_fence` asks to
    /// be/stay fenced; `want_shutdown` starts/continues controlled shutdown (keep heartbeating
    /// until `should_shut_down`).
    ///
    /// Errors: `BROKER_ID_NOT_REGISTERED` (102), `STALE_BROKER_EPOCH` (77): register again.
    pub async fn heartbeat(
        &self,
        broker_id: BrokerId,
        broker_epoch: BrokerEpoch,
        metadata_offset: i64,
        want_fence: bool,
        want_shutdown: bool,
    ) -> Result<HeartbeatReply, ControllerError> {
        self.send_heartbeat(Heartbeat {
            broker_id,
            broker_epoch,
            metadata_offset,
            want_fence,
            want_shutdown,
            offline_log_dirs: Vec::new(),
        })
        .await
    }

    /// BrokerHeartbeat with every field given, including KIP-858's `OfflineLogDirs`; see
    /// [`heartbeat`](Self::heartbeat) for the reply and errors.
    pub async fn send_heartbeat(&self, hb: Heartbeat) -> Result<HeartbeatReply, ControllerError> {
        match self
            .call_bounded(
                ClientRequest::Heartbeat(hb),
                Duration::ZERO,
                self.session_attempt,
            )
            .await?
        {
            ClientResponse::Heartbeat(r) => r,
            _ => Err(unexpected()),
        }
    }

    /// CreateTopics: one result per topic, in order, and the offset at which they are visible. Ids are
    /// nil with `validate_only`.
    ///
    /// Errors per topic: see [`crate::control::QuorumControl::create_topics`]; on transport failure
    /// every topic gets the same error.
    pub async fn create_topics(
        &self,
        topics: Vec<CreateTopic>,
        validate_only: bool,
    ) -> Committed<Vec<Result<CreatedTopic, ControllerError>>> {
        let n = topics.len();
        let req = ClientRequest::CreateTopics {
            topics,
            validate_only,
        };
        let (reply, offset) = match self.call_with_offset(req).await {
            Ok((ClientResponse::CreateTopics(r), offset)) if r.len() == n => (r, offset),
            Ok(_) => (vec![Err(unexpected()); n], -1),
            Err(e) => (vec![Err(e); n], -1),
        };
        Committed { reply, offset }
    }

    /// DeleteTopics by name: one result (the deleted topic id) per name, in order, and the offset at
    /// which they are visible.
    ///
    /// Errors per name: `UNKNOWN_TOPIC_OR_PARTITION` (3), `INVALID_REQUEST` (42, name repeated).
    pub async fn delete_topics(
        &self,
        names: Vec<String>,
    ) -> Committed<Vec<Result<Uuid, ControllerError>>> {
        let n = names.len();
        let (reply, offset) = match self
            .call_with_offset(ClientRequest::DeleteTopics { names })
            .await
        {
            Ok((ClientResponse::DeleteTopics(r), offset)) if r.len() == n => (r, offset),
            Ok(_) => (vec![Err(unexpected()); n], -1),
            Err(e) => (vec![Err(e); n], -1),
        };
        Committed { reply, offset }
    }

    /// CreatePartitions: grows topic `name` to `count` partitions in total; returns the offset at which
    /// that is visible.
    ///
    /// Errors: `UNKNOWN_TOPIC_OR_PARTITION` (3), `INVALID_PARTITIONS` (37),
    /// `INVALID_REPLICATION_FACTOR` (38, too few active brokers).
    pub async fn create_partitions(
        &self,
        name: String,
        count: i32,
        validate_only: bool,
    ) -> Result<i64, ControllerError> {
        let req = ClientRequest::CreatePartitions {
            name,
            count,
            validate_only,
        };
        match self.call_with_offset(req).await? {
            (ClientResponse::CreatePartitions(r), offset) => r.map(|()| offset),
            _ => Err(unexpected()),
        }
    }

    /// CreateAcls (KIP-801): creates `acls` (validated by the caller; ones equal to existing ACLs are
    /// skipped); returns the offset at which they are visible. Errors: INVALID_REQUEST (42, too many),
    /// transport errors.
    pub async fn create_acls(&self, acls: Vec<AclEntry>) -> Result<i64, ControllerError> {
        match self
            .call_with_offset(ClientRequest::CreateAcls { acls })
            .await?
        {
            (ClientResponse::CreateAcls(r), offset) => r.map(|()| offset),
            _ => Err(unexpected()),
        }
    }

    /// DeleteAcls: removes the ACLs `ids` that exist; returns the offset at which that is visible. Errors:
    /// INVALID_REQUEST (42, too many), transport errors.
    pub async fn delete_acls(&self, ids: Vec<Uuid>) -> Result<i64, ControllerError> {
        match self
            .call_with_offset(ClientRequest::DeleteAcls { ids })
            .await?
        {
            (ClientResponse::DeleteAcls(r), offset) => r.map(|()| offset),
            _ => Err(unexpected()),
        }
    }

    /// AlterClientQuotas (KIP-546): applies `entries` (validated by the caller); returns the offset at which
    /// they are visible. Errors: INVALID_REQUEST (42, too many entries), transport errors.
    pub async fn alter_client_quotas(
        &self,
        entries: Vec<metadata::quota::QuotaAlteration>,
        validate_only: bool,
    ) -> Result<i64, ControllerError> {
        let req = ClientRequest::AlterClientQuotas {
            entries,
            validate_only,
        };
        match self.call_with_offset(req).await? {
            (ClientResponse::AlterClientQuotas(r), offset) => r.map(|()| offset),
            _ => Err(unexpected()),
        }
    }

    /// AlterUserScramCredentials (KIP-554): applies what `metadata::scram::decide_alter` accepts against the
    /// controller's image; returns one result per user and the offset at which the changes are visible.
    /// Errors: transport errors.
    pub async fn alter_scram_credentials(
        &self,
        deletions: Vec<ScramDeletion>,
        upsertions: Vec<ScramUpsertion>,
    ) -> Result<(Vec<ScramAlterResult>, i64), ControllerError> {
        let req = ClientRequest::AlterUserScramCredentials {
            deletions,
            upsertions,
        };
        match self.call_with_offset(req).await? {
            (ClientResponse::AlterUserScramCredentials(r), offset) => Ok((r, offset)),
            _ => Err(unexpected()),
        }
    }

    /// UnregisterBroker (KIP-500): removes `broker_id`'s registration; answers once committed, with the
    /// offset at which the removal is visible. Errors: BROKER_ID_NOT_REGISTERED, no controller.
    pub async fn unregister_broker(&self, broker_id: BrokerId) -> Result<i64, ControllerError> {
        match self
            .call_with_offset(ClientRequest::UnregisterBroker { broker_id })
            .await?
        {
            (ClientResponse::UnregisterBroker(r), offset) => r.map(|()| offset),
            _ => Err(unexpected()),
        }
    }

    /// ElectLeaders (KIP-460): elects leaders of `partitions` (`None`: every partition); answers once the
    /// records are committed, with the offset at which the outcome is visible. Per-partition errors are in
    /// the results (see `QuorumControl::elect_leaders`); the call fails as a whole only when no controller
    /// answers.
    pub async fn elect_leaders(
        &self,
        election: ElectionType,
        partitions: Option<Vec<(String, i32)>>,
    ) -> Result<Committed<Vec<ElectionResult>>, ControllerError> {
        let req = ClientRequest::ElectLeaders {
            election,
            partitions,
        };
        match self.call_with_offset(req).await? {
            (ClientResponse::ElectLeaders(reply), offset) => Ok(Committed { reply, offset }),
            _ => Err(unexpected()),
        }
    }

    /// AlterPartitionReassignments (KIP-455, KIP-860): starts, replaces or cancels each partition's
    /// reassignment; answers once the records are committed, with the offset at which the outcome is
    /// visible. One result per partition, in order (see `QuorumControl::alter_partition_reassignments`);
    /// the call fails as a whole only when no controller answers.
    pub async fn alter_partition_reassignments(
        &self,
        reassignments: Vec<Reassignment>,
        allow_replication_factor_change: bool,
    ) -> Result<Committed<Vec<Result<(), ControllerError>>>, ControllerError> {
        let req = ClientRequest::AlterPartitionReassignments {
            reassignments,
            allow_replication_factor_change,
        };
        match self.call_with_offset(req).await? {
            (ClientResponse::AlterPartitionReassignments(reply), offset) => {
                Ok(Committed { reply, offset })
            }
            _ => Err(unexpected()),
        }
    }

    /// AlterPartition (KIP-497), sent as Kafka's AlterPartition request: the partition leader proposes a
    /// new ISR; returns the resulting leader and ISR (new partition epoch). Only the current leader, with its current broker epoch,
    /// leader epoch and partition epoch may do so.
    ///
    /// Errors: `STALE_BROKER_EPOCH` (77), `UNKNOWN_TOPIC_ID` (100), `UNKNOWN_TOPIC_OR_PARTITION` (3),
    /// `FENCED_LEADER_EPOCH` (74), `INVALID_UPDATE_VERSION` (95), `INVALID_REQUEST` (42: not the
    /// leader or malformed ISR), `INELIGIBLE_REPLICA` (107: a new member is fenced/shutting down).
    #[allow(clippy::too_many_arguments)]
    pub async fn alter_partition(
        &self,
        broker_id: BrokerId,
        broker_epoch: BrokerEpoch,
        topic_id: Uuid,
        partition: i32,
        leader_epoch: LeaderEpoch,
        partition_epoch: PartitionEpoch,
        new_isr: Vec<BrokerId>,
    ) -> Result<LeaderAndIsr, ControllerError> {
        let req = ClientRequest::AlterPartition(AlterPartition {
            broker_id,
            broker_epoch,
            topic_id,
            partition,
            leader_epoch,
            partition_epoch,
            new_isr,
        });
        match self.call(req, Duration::ZERO).await? {
            ClientResponse::AlterPartition(r) => r.map(|reg| LeaderAndIsr {
                leader: reg.leader,
                leader_epoch: reg.leader_epoch,
                isr: reg.isr,
                partition_epoch: reg.partition_epoch,
            }),
            _ => Err(unexpected()),
        }
    }

    /// IncrementalAlterConfigs: `resource_type` 2 (topic, by name) or 4 (broker: `""` = cluster
    /// default, else the broker id); `ops` are `(name, Some(value))` to set, `(name, None)` to
    /// delete. Values are stored as given (the broker validates them). Returns the offset at which the
    /// change is visible.
    ///
    /// Errors: `UNKNOWN_TOPIC_OR_PARTITION` (3), `INVALID_REQUEST` (42), `INVALID_CONFIG` (40).
    pub async fn alter_configs(
        &self,
        resource_type: i8,
        resource_name: String,
        ops: Vec<(String, Option<String>)>,
        validate_only: bool,
    ) -> Result<i64, ControllerError> {
        let req = ClientRequest::AlterConfigs {
            resource_type,
            resource_name,
            ops,
            validate_only,
        };
        match self.call_with_offset(req).await? {
            (ClientResponse::AlterConfigs(r), offset) => r.map(|()| offset),
            _ => Err(unexpected()),
        }
    }

    /// AssignReplicasToDirs (KIP-858): tells the controller the data directory of each listed replica of
    /// this broker; answers once committed.
    ///
    /// Errors: `STALE_BROKER_EPOCH` (77), `BROKER_ID_NOT_REGISTERED` (102), transport errors.
    pub async fn assign_replicas_to_dirs(
        &self,
        request: metadata::AssignReplicasToDirs,
    ) -> Result<(), ControllerError> {
        let req = ClientRequest::AssignReplicasToDirs(request);
        match self.call(req, Duration::ZERO).await? {
            ClientResponse::AssignReplicasToDirs(r) => r,
            _ => Err(unexpected()),
        }
    }

    /// Reports the sizes of the partitions this broker leads (Runnel's, for automatic balancing).
    ///
    /// Errors: `STALE_BROKER_EPOCH` (77), `BROKER_ID_NOT_REGISTERED` (102), transport errors.
    pub async fn report_partition_sizes(
        &self,
        sizes: metadata::PartitionSizes,
    ) -> Result<(), ControllerError> {
        let req = ClientRequest::PartitionSizes(sizes);
        match self.call(req, Duration::ZERO).await? {
            ClientResponse::PartitionSizes(r) => r,
            _ => Err(unexpected()),
        }
    }

    /// AllocateProducerIds (KIP-730): returns `(first id, count)` of a fresh block.
    ///
    /// Errors: `STALE_BROKER_EPOCH` (77).
    pub async fn allocate_producer_ids(
        &self,
        broker_id: BrokerId,
        broker_epoch: BrokerEpoch,
    ) -> Result<(ProducerId, i32), ControllerError> {
        let req = ClientRequest::AllocateProducerIds {
            broker_id,
            broker_epoch,
        };
        match self.call(req, Duration::ZERO).await? {
            ClientResponse::AllocateProducerIds(r) => r,
            _ => Err(unexpected()),
        }
    }

    /// Long-poll (at most `max_wait`, capped at 30 s) for committed metadata after `since_offset`:
    /// `Records` to replay in order (empty if nothing new arrived in time), or a full `Image` when
    /// `since_offset < 0` or the records after it are no longer retained. Served by the active
    /// controller.
    pub async fn fetch_metadata(
        &self,
        since_offset: i64,
        max_wait: Duration,
    ) -> Result<MetadataUpdate, ControllerError> {
        let max_wait = max_wait.min(Duration::from_millis(crate::server::MAX_FETCH_WAIT_MS));
        let max_wait_ms = max_wait.as_millis() as u64;
        let req = ClientRequest::FetchMetadata {
            since_offset,
            max_wait_ms,
        };
        match self
            .call_bounded(req, max_wait, self.session_attempt)
            .await?
        {
            ClientResponse::FetchMetadata(r) => r,
            _ => Err(unexpected()),
        }
    }

    /// DescribeQuorum (KIP-595): the active controller's view of the quorum.
    pub async fn describe_quorum(&self) -> Result<QuorumInfo, ControllerError> {
        match self
            .call(ClientRequest::DescribeQuorum, Duration::ZERO)
            .await?
        {
            ClientResponse::DescribeQuorum(r) => r,
            _ => Err(unexpected()),
        }
    }
}
