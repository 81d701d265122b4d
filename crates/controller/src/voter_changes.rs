//! KIP-853's dynamic controller quorum on openraft's membership: AddRaftVoter (key 80), RemoveRaftVoter
//! (key 81), controllers joining as learners, and the membership DescribeQuorum and DescribeCluster report.
//!
//! The quorum's voters are openraft's membership, kept in the raft log (membership entries) and in
//! snapshots (`last_membership`), so a restarted node comes back with the membership it last learned;
//! `controller.quorum.voters` only seeds the membership of an empty log. A controller started with
//! `controller.quorum.bootstrap.servers` instead asks those controllers (JSON [`RpcRequest::AddLearner`],
//! CLUSTER_ACTION) until the active one replicates the log to it as a learner — KIP-853's observer, which
//! DescribeQuorum lists as one — and it keeps asking after a restart while the membership it holds does
//! not name it (a removed controller that keeps running becomes an observer again, as in Kafka).
//!
//! AddRaftVoter, on the active controller only (else NOT_LEADER_OR_FOLLOWER): a cluster id other than
//! ours → INCONSISTENT_CLUSTER_ID; a voter change in flight (another request, a joint or uncommitted
//! membership) → REQUEST_TIMED_OUT; an id already a voter → DUPLICATE_VOTER; no endpoint on the
//! controller listener's name → INVALID_REQUEST; then the node is added as a learner and the request
//! waits (bounded by its `TimeoutMs`) until openraft sees it caught up, else REQUEST_TIMED_OUT; then
//! `change_membership` adds it to the voters (openraft's joint consensus: two entries) and the answer
//! comes once that is committed (also for `AckWhenCommitted` = false). RemoveRaftVoter: the same checks,
//! then an id not a voter, or a voter whose directory id differs (a static voter's is the zero UUID) →
//! VOTER_NOT_FOUND; the last voter cannot be removed (INVALID_REQUEST); the voter is dropped from the
//! membership altogether (openraft's `retain = false`: no longer replicated to). Error order and messages
//! follow Kafka's `AddVoterHandler`/`RemoveVoterHandler`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use openraft::error::{ClientWriteError, RaftError};
use openraft::ChangeMembers;
use types::{BrokerId, ErrorCode};

use crate::raft_types::{Membership, QuorumNode};
use crate::rpc::{read_frame, write_frame, AddLearnerRefused, RpcRequest, RpcResponse};
use crate::server::{Inner, COMMIT_TIMEOUT_MS};
use crate::transport::Transport;

/// How long a joining controller waits between rounds of asking its bootstrap servers (ms).
pub const JOIN_RETRY_MS: u64 = 1000;
/// Bound on one AddLearner exchange with one bootstrap server (ms).
const JOIN_CALL_TIMEOUT_MS: u64 = 5000;

/// A refused voter change: Kafka's error code and message (the AddRaftVoter/RemoveRaftVoter response's).
pub type Refusal = (ErrorCode, String);

/// AddRaftVoter's inputs, decoded from the request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AddVoter {
    /// `ClusterId` (`None` or empty: not checked).
    pub cluster_id: Option<String>,
    /// `TimeoutMs`: how long the new voter may take to catch up.
    pub timeout_ms: u64,
    /// `VoterId`.
    pub voter_id: BrokerId,
    /// `VoterDirectoryId`.
    pub directory_id: uuid::Uuid,
    /// `Listeners` as (name, host, port).
    pub listeners: Vec<(String, String, u16)>,
}

/// The voters of `m` (the membership's last config) with their nodes, by node id.
pub fn voters(m: &Membership) -> BTreeMap<BrokerId, QuorumNode> {
    let ids: BTreeSet<u64> = m.voter_ids().collect();
    nodes_of(m, |id| ids.contains(&id))
}

/// The learners of `m` (KIP-853's observers among controllers) with their nodes, by node id.
pub fn learners(m: &Membership) -> BTreeMap<BrokerId, QuorumNode> {
    let ids: BTreeSet<u64> = m.learner_ids().collect();
    nodes_of(m, |id| ids.contains(&id))
}

fn nodes_of(m: &Membership, keep: impl Fn(u64) -> bool) -> BTreeMap<BrokerId, QuorumNode> {
    m.nodes()
        .filter(|(id, _)| keep(**id))
        .filter_map(|(id, n)| Some((BrokerId(i32::try_from(*id).ok()?), n.clone())))
        .collect()
}

/// Kafka's checks of an AddRaftVoter against the current membership, after the leader and cluster id
/// checks: a change in flight (`in_flight`: a joint config or a membership not yet applied) →
/// REQUEST_TIMED_OUT; the id already a voter → DUPLICATE_VOTER; no endpoint named `listener` →
/// INVALID_REQUEST. Returns the node to add.
pub fn check_add(
    m: &Membership,
    in_flight: bool,
    req: &AddVoter,
    listener: &str,
) -> Result<QuorumNode, Refusal> {
    if in_flight || m.get_joint_config().len() > 1 {
        return Err((
            ErrorCode::REQUEST_TIMED_OUT,
            "Request timed out waiting for voters to commit the latest voter change".into(),
        ));
    }
    if voters(m).contains_key(&req.voter_id) {
        return Err((
            ErrorCode::DUPLICATE_VOTER,
            format!(
                "The voter id for ReplicaKey(id={}, directoryId={}) is already part of the set of voters {:?}.",
                req.voter_id, req.directory_id, voters(m).keys().collect::<Vec<_>>()
            ),
        ));
    }
    let endpoint = req
        .listeners
        .iter()
        .find(|(name, _, _)| name.eq_ignore_ascii_case(listener));
    let Some((_, host, port)) = endpoint else {
        return Err((
            ErrorCode::INVALID_REQUEST,
            format!("Provided listeners do not contain a listener for {listener}"),
        ));
    };
    let addr = match host.contains(':') {
        true => format!("[{host}]:{port}"),
        false => format!("{host}:{port}"),
    };
    Ok(QuorumNode {
        addr,
        directory_id: Some(req.directory_id),
    })
}

/// Kafka's checks of a RemoveRaftVoter: a change in flight → REQUEST_TIMED_OUT; no voter with that id and
/// directory id (a static voter's directory id is the zero UUID) → VOTER_NOT_FOUND; the only voter →
/// INVALID_REQUEST.
pub fn check_remove(
    m: &Membership,
    in_flight: bool,
    voter_id: BrokerId,
    directory_id: uuid::Uuid,
) -> Result<(), Refusal> {
    if in_flight || m.get_joint_config().len() > 1 {
        return Err((
            ErrorCode::REQUEST_TIMED_OUT,
            "Request timed out waiting for voters to commit the latest voter change".into(),
        ));
    }
    let all = voters(m);
    match all.get(&voter_id) {
        Some(n) if n.directory_id_or_zero() == directory_id => {}
        _ => {
            return Err((
                ErrorCode::VOTER_NOT_FOUND,
                format!(
                    "Cannot remove voter ReplicaKey(id={voter_id}, directoryId={directory_id}) since it is not part of the set of voters {:?}",
                    all.keys().collect::<Vec<_>>()
                ),
            ))
        }
    }
    if all.len() == 1 {
        return Err((
            ErrorCode::INVALID_REQUEST,
            format!("Cannot remove voter {voter_id}: it is the only voter"),
        ));
    }
    Ok(())
}

/// A cluster id the request names that is not ours: INCONSISTENT_CLUSTER_ID.
fn check_cluster_id(inner: &Inner, cluster_id: Option<&str>) -> Result<(), Refusal> {
    let ours = inner.sm.state.read().image.cluster_id.clone();
    match cluster_id {
        Some(id) if !id.is_empty() && id != ours => Err((
            ErrorCode::INCONSISTENT_CLUSTER_ID,
            format!("The cluster id {id} does not match the quorum's {ours}"),
        )),
        _ => Ok(()),
    }
}

/// An openraft membership-change failure as Kafka's error.
fn write_error(e: RaftError<u64, ClientWriteError<u64, QuorumNode>>) -> Refusal {
    match e {
        RaftError::APIError(ClientWriteError::ForwardToLeader(_)) => (
            ErrorCode::NOT_LEADER_OR_FOLLOWER,
            "This controller is no longer the leader of the metadata quorum".into(),
        ),
        RaftError::APIError(ClientWriteError::ChangeMembershipError(e)) => {
            (ErrorCode::REQUEST_TIMED_OUT, e.to_string())
        }
        e => (ErrorCode::UNKNOWN_SERVER_ERROR, e.to_string()),
    }
}

fn timed_out(what: String) -> Refusal {
    (ErrorCode::REQUEST_TIMED_OUT, what)
}

impl Inner {
    /// The membership this node holds now (possibly not yet committed).
    pub(crate) fn membership(&self) -> Membership {
        self.raft
            .metrics()
            .borrow()
            .membership_config
            .membership()
            .clone()
    }

    /// True while the held membership is a joint config or not yet applied here.
    fn membership_in_flight(&self) -> bool {
        let m = self.raft.metrics();
        let m = m.borrow();
        let at = m.membership_config.log_id().map(|l| l.index);
        let applied = m.last_applied.map(|l| l.index);
        at > applied || m.membership_config.membership().get_joint_config().len() > 1
    }

    /// The refusal of a request reaching a controller that is not the active one.
    fn require_raft_leader(&self) -> Result<(), Refusal> {
        match self.current_leader() == Some(self.node_id) {
            true => Ok(()),
            false => Err((
                ErrorCode::NOT_LEADER_OR_FOLLOWER,
                "This controller is not the leader of the metadata quorum.".into(),
            )),
        }
    }

    /// AddRaftVoter on this controller, `listener` being the controller listener's name: see the module doc.
    pub(crate) async fn add_raft_voter(
        &self,
        req: AddVoter,
        listener: &str,
    ) -> Result<(), Refusal> {
        self.require_raft_leader()?;
        check_cluster_id(self, req.cluster_id.as_deref())?;
        let Ok(_one_change) = self.voter_change.try_lock() else {
            return Err(timed_out(
                "Request timed out waiting for leader to handle previous voter change request"
                    .into(),
            ));
        };
        let node = check_add(
            &self.membership(),
            self.membership_in_flight(),
            &req,
            listener,
        )?;
        let id = u64::try_from(req.voter_id.get()).map_err(|_| {
            (
                ErrorCode::INVALID_REQUEST,
                format!("negative voter id {}", req.voter_id),
            )
        })?;
        let wait = Duration::from_millis(req.timeout_ms.max(1));
        match tokio::time::timeout(wait, self.raft.add_learner(id, node, true)).await {
            Ok(r) => r.map_err(write_error)?,
            Err(_) => {
                return Err(timed_out(format!(
                    "Aborted add voter operation for {} since it is lagging behind",
                    req.voter_id
                )))
            }
        };
        self.change_voters(ChangeMembers::AddVoterIds(BTreeSet::from([id])), true)
            .await
    }

    /// RemoveRaftVoter on this controller: see the module doc.
    pub(crate) async fn remove_raft_voter(
        &self,
        cluster_id: Option<&str>,
        voter_id: BrokerId,
        directory_id: uuid::Uuid,
    ) -> Result<(), Refusal> {
        self.require_raft_leader()?;
        check_cluster_id(self, cluster_id)?;
        let Ok(_one_change) = self.voter_change.try_lock() else {
            return Err(timed_out(
                "Request timed out waiting for leader to handle previous voter change request"
                    .into(),
            ));
        };
        check_remove(
            &self.membership(),
            self.membership_in_flight(),
            voter_id,
            directory_id,
        )?;
        let id = voter_id.get() as u64;
        self.change_voters(ChangeMembers::RemoveVoters(BTreeSet::from([id])), false)
            .await
    }

    /// One `change_membership`, bounded by [`COMMIT_TIMEOUT_MS`].
    async fn change_voters(
        &self,
        changes: ChangeMembers<u64, QuorumNode>,
        retain: bool,
    ) -> Result<(), Refusal> {
        let wait = Duration::from_millis(COMMIT_TIMEOUT_MS);
        match tokio::time::timeout(wait, self.raft.change_membership(changes, retain)).await {
            Ok(r) => r.map(|_| ()).map_err(write_error),
            Err(_) => Err(timed_out(
                "Request timed out waiting for the new voter set to commit".into(),
            )),
        }
    }

    /// [`RpcRequest::AddLearner`] on this controller: the leader starts replicating to the node (a node
    /// already in the membership is left as it is); another controller refuses, naming the leader's address.
    pub(crate) async fn answer_add_learner(
        &self,
        node_id: i32,
        node: QuorumNode,
    ) -> Result<(), AddLearnerRefused> {
        let refuse = |reason: String| AddLearnerRefused {
            leader_addr: None,
            reason,
        };
        if self.require_raft_leader().is_err() {
            let m = self.membership();
            let leader_addr = self
                .current_leader()
                .and_then(|l| m.get_node(&(l.get() as u64)).map(|n| n.addr.clone()));
            return Err(AddLearnerRefused {
                leader_addr,
                reason: "not the active controller".into(),
            });
        }
        let id =
            u64::try_from(node_id).map_err(|_| refuse(format!("negative node id {node_id}")))?;
        if self.membership().get_node(&id).is_some() {
            return Ok(());
        }
        let Ok(_one_change) = self.voter_change.try_lock() else {
            return Err(refuse("a voter change is in flight".into()));
        };
        let wait = Duration::from_millis(COMMIT_TIMEOUT_MS);
        match tokio::time::timeout(wait, self.raft.add_learner(id, node, false)).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(refuse(e.to_string())),
            Err(_) => Err(refuse("timed out adding the learner".into())),
        }
    }
}

/// Starts [`join_as_learner`] for a controller without static voters (`config.voters` empty).
pub(crate) fn spawn_join(
    inner: &Arc<Inner>,
    seams: &crate::transport::ControllerSeams,
    config: &crate::config::ControllerConfig,
    me: QuorumNode,
) -> Option<tokio::task::JoinHandle<()>> {
    if !config.voters.is_empty() {
        return None;
    }
    let bootstrap = config.bootstrap_servers.clone();
    let join = join_as_learner(inner.clone(), seams.transport.clone(), bootstrap, me);
    Some(tokio::spawn(join))
}

/// A joining controller's loop: until the membership this node holds names it, ask each bootstrap server
/// (and a leader one of them names) to add it as a learner, every [`JOIN_RETRY_MS`]; ends at shutdown.
pub(crate) async fn join_as_learner(
    inner: Arc<Inner>,
    transport: Arc<dyn Transport>,
    bootstrap: Vec<String>,
    me: QuorumNode,
) {
    let id = inner.node_id.get() as u64;
    let mut shutdown = inner.shutdown_rx.clone();
    loop {
        if inner.membership().get_node(&id).is_some() || *shutdown.borrow() {
            return;
        }
        let mut targets = bootstrap.clone();
        let mut i = 0;
        while i < targets.len() && i < bootstrap.len() + 1 {
            let req = RpcRequest::AddLearner {
                node_id: inner.node_id.get(),
                node: me.clone(),
            };
            match ask(&*transport, &targets[i], &req).await {
                Ok(RpcResponse::AddLearner(Ok(()))) => break,
                Ok(RpcResponse::AddLearner(Err(refused))) => {
                    tracing::info!(
                        "controller {}: {} did not add it as a learner: {}",
                        inner.node_id,
                        targets[i],
                        refused.reason
                    );
                    if let Some(leader) = refused.leader_addr {
                        targets.push(leader);
                    }
                }
                Ok(_) => {
                    tracing::warn!("controller {}: unexpected AddLearner answer", inner.node_id)
                }
                Err(e) => tracing::info!("controller {}: {}: {e}", inner.node_id, targets[i]),
            }
            i += 1;
        }
        let pause = tokio::time::sleep(Duration::from_millis(JOIN_RETRY_MS));
        tokio::select! {
            _ = pause => {}
            _ = shutdown.changed() => return,
        }
    }
}

/// One JSON exchange with `addr`, bounded by [`JOIN_CALL_TIMEOUT_MS`].
async fn ask(
    transport: &dyn Transport,
    addr: &str,
    req: &RpcRequest,
) -> std::io::Result<RpcResponse> {
    let exchange = async {
        let mut conn = transport.connect(addr).await?;
        write_frame(&mut conn, req).await?;
        read_frame(&mut conn).await
    };
    match tokio::time::timeout(Duration::from_millis(JOIN_CALL_TIMEOUT_MS), exchange).await {
        Ok(r) => r,
        Err(_) => Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!("no answer from {addr} within {JOIN_CALL_TIMEOUT_MS} ms"),
        )),
    }
}

#[cfg(test)]
#[path = "voter_changes_tests.rs"]
mod tests;
