//! Leader stickiness for RequestVote (issue 14; KIP-996's check-quorum idea): a voter that can still
//! send to the active controller but no longer hears it must not depose it by campaigning.
//!
//! openraft 0.9 already protects followers: a follower whose vote is committed (it follows an
//! established leader) rejects every RequestVote until `election_timeout_max` has passed since it last
//! heard from that leader (its "leader lease", `Engine::handle_vote_req`). The leader itself has no such
//! protection: its vote's timestamp is that of its election, so once it has led for longer than the lease
//! it grants any candidate with a newer term whose log is at least as long as its own and steps down. A
//! voter cut off from the leader's replication (a one-way partition) campaigns again every election
//! timeout, so one such voter kept the quorum without an active controller.
//!
//! [`leader_rejects_vote`] closes that gap before the request reaches openraft (so the term is not raised
//! either): while this node is the leader and a majority of voters acknowledged it within the window
//! (`election_timeout_max`, the followers' lease), it answers `vote_granted = false` with its own vote and
//! last log id. A leader that lost its majority for longer than the window answers votes as before.

use std::cmp::Ordering;
use std::time::Duration;

use openraft::error::RaftError;
use openraft::raft::{VoteRequest, VoteResponse};
use openraft::{Raft, ServerState};

use crate::raft_types::TypeConfig;

/// Answers RequestVote `req` on controller `node_id`: [`leader_rejects_vote`]'s rejection, or openraft's
/// answer (`Raft::vote`; errors are openraft's, e.g. a stopped node).
pub(crate) async fn vote(
    raft: &Raft<TypeConfig>,
    node_id: u64,
    window: Duration,
    req: VoteRequest<u64>,
) -> Result<VoteResponse<u64>, RaftError<u64>> {
    match leader_rejects_vote(raft, node_id, window, &req) {
        Some(rejected) => Ok(rejected),
        None => raft.vote(req).await,
    }
}

/// The answer to `req` when this node (`node_id`) is a leader that a majority acknowledged less than
/// `window` ago (openraft's `millis_since_quorum_ack`, refreshed on every pass of its core loop, at
/// least every 1.5 heartbeat intervals): a rejection carrying this leader's vote and last log id.
/// `None`: hand the request to openraft (not the leader, no recent majority, or a vote that is not
/// newer than the leader's own, which openraft rejects by itself).
pub(crate) fn leader_rejects_vote(
    raft: &Raft<TypeConfig>,
    node_id: u64,
    window: Duration,
    req: &VoteRequest<u64>,
) -> Option<VoteResponse<u64>> {
    let vote = {
        let m = raft.metrics();
        let m = m.borrow();
        let leading = m.state == ServerState::Leader
            && m.vote.is_committed()
            && m.vote.leader_id().voted_for() == Some(node_id);
        let acked = m.millis_since_quorum_ack?;
        if !leading
            || u128::from(acked) >= window.as_millis()
            || req.vote.partial_cmp(&m.vote) != Some(Ordering::Greater)
        {
            return None;
        }
        m.vote
    };
    tracing::info!(
        "controller {node_id}: rejected RequestVote {} (last log {:?}): this leader has a majority",
        req.vote,
        req.last_log_id
    );
    let last_log_id = raft.data_metrics().borrow().last_log;
    Some(VoteResponse {
        vote,
        vote_granted: false,
        last_log_id,
    })
}
