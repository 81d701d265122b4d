//! The vote storm (issue 14): a rogue voter that can send to the other controllers but hears nothing
//! from the leader's replication, so it keeps campaigning with rising terms.
//!
//! The `rogue` host sends raft RequestVotes in the name of a follower controller (the real one keeps
//! running and knows nothing of them) to the two other controllers every 250 ms: each with a term one
//! above the highest it has seen in an answer, and the newest last log id it has seen in one (a voter
//! that had the whole log when it stopped hearing the leader). A storm runs alone — it starts only
//! when every earlier fault is undone and one leader is followed by every controller, and no other
//! fault starts until it ends — so the leader can reach every voter throughout, and must still lead in
//! the same term when the storm ends (KIP-996: a voter that cannot hear the leader cannot depose it).

use std::time::Duration;

use controller::rpc::{read_frame, write_frame, RpcRequest, RpcResponse};
use controller::Transport;
use openraft::raft::VoteRequest;
use openraft::Vote;
use types::BrokerId;

use super::world::{SimTransport, World, CONTROLLERS};
use super::Rng;

/// RequestVotes go out this often during a storm.
const STORM_PERIOD: Duration = Duration::from_millis(250);

/// A running storm: the voter impersonated, and the leader (and its term) that must survive it.
#[derive(Clone, Copy, Debug)]
pub struct Storm {
    /// The controller in whose name the votes are sent.
    pub candidate: i32,
    /// The leader when the storm started.
    pub leader: i32,
    /// Its term.
    pub term: u64,
}

/// The leader and term every running controller follows, when all three run and agree.
fn stable_leader(w: &World) -> Option<(i32, u64)> {
    let servers = w.servers.lock();
    if servers.len() != CONTROLLERS.len() {
        return None;
    }
    let st: Vec<_> = servers.values().map(|s| s.raft_status()).collect();
    let leader = st.iter().find(|s| s.is_leader)?;
    let id = leader.leader?.get();
    st.iter()
        .all(|s| s.term == leader.term && s.leader == leader.leader)
        .then_some((id, leader.term))
}

/// Starts a storm in the name of a follower if the quorum is stable; returns it.
pub fn start(w: &World, rng: &mut Rng, trace: &mut Vec<String>) -> Option<Storm> {
    let (leader, term) = stable_leader(w)?;
    let followers: Vec<i32> = CONTROLLERS.into_iter().filter(|&c| c != leader).collect();
    let candidate = followers[rng.below(followers.len() as u64) as usize];
    let storm = Storm {
        candidate,
        leader,
        term,
    };
    trace.push(format!(
        "vote storm in the name of controller {candidate} against leader {leader} of term {term}"
    ));
    *w.storm.lock() = Some(storm);
    Some(storm)
}

/// Ends the storm; a violation when its leader no longer leads in its term.
pub fn end(w: &World, trace: &mut Vec<String>) -> Option<String> {
    let storm = w.storm.lock().take()?;
    trace.push(format!("vote storm ends: {}", super::checks::describe(w)));
    let st = w.servers.lock().get(&storm.leader)?.raft_status();
    (!st.is_leader || st.term != storm.term).then(|| {
        format!(
            "leader {} of term {} was deposed by a vote storm in the name of controller {} while every \
             link was up: {}",
            storm.leader,
            storm.term,
            storm.candidate,
            super::checks::describe(w)
        )
    })
}

/// The `rogue` host: sends the storm's RequestVotes while one runs.
pub async fn run_rogue(w: World) -> turmoil::Result {
    let mut term = 0u64;
    let mut last_log = None;
    loop {
        tokio::time::sleep(STORM_PERIOD).await;
        let Some(storm) = *w.storm.lock() else {
            continue;
        };
        for target in CONTROLLERS.into_iter().filter(|&c| c != storm.candidate) {
            term += 1;
            let req = RpcRequest::Vote(VoteRequest {
                vote: Vote::new(term, storm.candidate as u64),
                last_log_id: last_log,
            });
            let addr = w.voters.lock()[&BrokerId(target)].to_string();
            let answer = tokio::time::timeout(STORM_PERIOD, async {
                let mut s = SimTransport.connect(&addr).await?;
                write_frame(&mut s, &req).await?;
                read_frame::<_, RpcResponse>(&mut s).await
            })
            .await;
            if let Ok(Ok(RpcResponse::Vote(Ok(resp)))) = answer {
                term = term.max(resp.vote.leader_id().term);
                last_log = last_log.max(resp.last_log_id);
            }
        }
    }
}
