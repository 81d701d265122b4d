//! Leader-side HighWatermark and ISR rules of one partition ([`ReplicaStates`]) and the follower truncation
//! rule ([`truncation_offset`]): pure, no I/O and no locks, so unit tests and the randomized replication
//! simulation drive them directly. [`crate::partition::Partition`] holds them under its state lock.
//!
//! Sources: Kafka's `Partition` / `ReplicaManager` semantics; KIP-101 and KIP-279 (truncation by leader
//! epoch), KIP-497 (AlterPartition).
//!
//! Rules:
//! - HighWatermark = min LogEndOffset over the maximal ISR (the committed ISR plus an in-flight expansion);
//!   it never goes backwards while this replica leads. A leader whose ISR is itself alone has HW = LEO.
//! - A follower leaves the ISR when it has not caught up to the leader's LEO for `replica.lag.time.max.ms`;
//!   it joins again once its LEO reaches the HW and the leader epoch's start offset.
//! - At most one AlterPartition per partition is in flight; the committed state it returns (or a newer
//!   state from the metadata image) replaces the ISR.

use std::collections::HashMap;

use types::{BrokerId, LeaderEpoch, Offset, PartitionEpoch};
use uuid::Uuid;

/// A partition's replication state as the metadata image gives it (Kafka's `PartitionRegistration` /
/// `LeaderAndIsr`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionState {
    /// Topic id (KIP-516).
    pub topic_id: Uuid,
    /// Broker id of the leader; [`BrokerId::NONE`] when there is none.
    pub leader: BrokerId,
    /// Leader epoch: bumped by the controller on every leader change.
    pub leader_epoch: LeaderEpoch,
    /// Partition epoch: bumped on every change of the registration (ISR, replicas, leader).
    pub partition_epoch: PartitionEpoch,
    /// In-sync replica broker ids.
    pub isr: Vec<BrokerId>,
    /// All replica broker ids (assignment order).
    pub replicas: Vec<BrokerId>,
}

/// What the leader knows of one follower (Kafka's `Replica` state).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FollowerState {
    /// The follower's LogEndOffset (its last fetch offset); [`Offset::NONE`] until it fetched in this
    /// leadership.
    pub log_end_offset: Offset,
    /// The follower's LogStartOffset as its last Fetch gave it ([`Offset::NONE`] until then, or from a
    /// Fetch before v5): a preferred read replica must hold the consumer's offset (KIP-392).
    pub log_start_offset: Offset,
    /// Last time (ms) the follower was caught up to the leader's LEO.
    pub last_caught_up_time_ms: i64,
    /// Time (ms) of its previous fetch.
    pub last_fetch_time_ms: i64,
    /// The leader's LEO at its previous fetch.
    pub last_fetch_leader_log_end_offset: Offset,
}

/// Leader-side HighWatermark and ISR bookkeeping of one partition. Pure: callers pass the time (ms on a
/// monotonic clock, `Clock::monotonic_ms`: a wall-clock step would otherwise keep a dead follower in the ISR
/// for as long as the step, or drop every live one) and the leader's LEO; proposals come back as values for the caller to send with AlterPartition.
#[derive(Debug, Clone)]
pub struct ReplicaStates {
    local_id: BrokerId,
    leader_epoch: LeaderEpoch,
    partition_epoch: PartitionEpoch,
    isr: Vec<BrokerId>,
    replicas: Vec<BrokerId>,
    leader_epoch_start_offset: Offset,
    high_watermark: Offset,
    followers: HashMap<BrokerId, FollowerState>,
    pending_isr: Option<Vec<BrokerId>>,
}

impl ReplicaStates {
    /// State of a fresh leadership: `state` is the registration that made `local_id` leader, `leo` the
    /// LEO at that moment (the leader epoch's start offset), `hw` the HighWatermark carried over from
    /// being a follower (or from the checkpoint). ISR members count as caught up at `now_ms`.
    pub fn new(
        local_id: BrokerId,
        state: &PartitionState,
        leo: Offset,
        hw: Offset,
        now_ms: i64,
    ) -> Self {
        let mut s = ReplicaStates {
            local_id,
            leader_epoch: state.leader_epoch,
            partition_epoch: state.partition_epoch,
            isr: Vec::new(),
            replicas: Vec::new(),
            leader_epoch_start_offset: leo,
            high_watermark: hw.min(leo),
            followers: HashMap::new(),
            pending_isr: None,
        };
        s.update_assignment(state, now_ms);
        s
    }

    fn update_assignment(&mut self, state: &PartitionState, now_ms: i64) {
        self.partition_epoch = state.partition_epoch;
        self.isr = state.isr.clone();
        self.replicas = state.replicas.clone();
        let local = self.local_id;
        self.followers.retain(|id, _| state.replicas.contains(id));
        for &id in state.replicas.iter().filter(|&&id| id != local) {
            let in_isr = state.isr.contains(&id);
            self.followers.entry(id).or_insert(FollowerState {
                log_end_offset: Offset::NONE,
                log_start_offset: Offset::NONE,
                last_caught_up_time_ms: if in_isr { now_ms } else { 0 },
                last_fetch_time_ms: 0,
                last_fetch_leader_log_end_offset: Offset::NONE,
            });
        }
    }

    /// Applies a committed registration of the same leadership (from the AlterPartition answer or the
    /// metadata image): ISR, replicas and partition epoch; clears the in-flight proposal. Ignored when
    /// its partition epoch is older than ours.
    pub fn apply_committed(&mut self, state: &PartitionState, now_ms: i64) {
        if state.partition_epoch < self.partition_epoch {
            return;
        }
        self.pending_isr = None;
        self.update_assignment(state, now_ms);
    }

    /// Forgets the in-flight proposal (AlterPartition failed; a later check proposes again).
    pub fn clear_pending(&mut self) {
        self.pending_isr = None;
    }

    /// Forgets the in-flight proposal when it is still `proposed_isr` (a failed AlterPartition whose
    /// proposal was not replaced meanwhile).
    pub fn clear_pending_if(&mut self, proposed_isr: &[BrokerId]) {
        if self.pending_isr.as_deref() == Some(proposed_isr) {
            self.pending_isr = None;
        }
    }

    /// The committed ISR.
    pub fn isr(&self) -> &[BrokerId] {
        &self.isr
    }

    /// All replicas.
    pub fn replicas(&self) -> &[BrokerId] {
        &self.replicas
    }

    /// The committed ISR plus an in-flight expansion (Kafka's `maximalIsr`): the set the HW waits for.
    pub fn maximal_isr(&self) -> Vec<BrokerId> {
        let mut m = self.isr.clone();
        if let Some(p) = &self.pending_isr {
            for id in p {
                if !m.contains(id) {
                    m.push(*id);
                }
            }
        }
        m
    }

    /// True while an AlterPartition is in flight.
    pub fn has_pending(&self) -> bool {
        self.pending_isr.is_some()
    }

    /// Leader epoch of this leadership.
    pub fn leader_epoch(&self) -> LeaderEpoch {
        self.leader_epoch
    }

    /// Partition epoch of the last committed registration.
    pub fn partition_epoch(&self) -> PartitionEpoch {
        self.partition_epoch
    }

    /// The HighWatermark as last computed.
    pub fn high_watermark(&self) -> Offset {
        self.high_watermark
    }

    /// LEO at which this leadership began.
    pub fn leader_epoch_start_offset(&self) -> Offset {
        self.leader_epoch_start_offset
    }

    /// The state of follower `id`, if it is a replica.
    pub fn follower(&self, id: BrokerId) -> Option<&FollowerState> {
        self.followers.get(&id)
    }

    /// Records a Fetch from follower `id` at `fetch_offset` (= its LEO) when the leader's LEO is
    /// `leader_leo` (Kafka's `updateFetchState`): caught up now when it reached the leader's LEO, or
    /// caught up as of its previous fetch when it reached the LEO the leader had then. Returns false
    /// when `id` is not a replica.
    pub fn update_follower_fetch(
        &mut self,
        id: BrokerId,
        fetch_offset: Offset,
        leader_leo: Offset,
        now_ms: i64,
    ) -> bool {
        let Some(f) = self.followers.get_mut(&id) else {
            return false;
        };
        if fetch_offset >= leader_leo {
            f.last_caught_up_time_ms = f.last_caught_up_time_ms.max(now_ms);
        } else if fetch_offset >= f.last_fetch_leader_log_end_offset {
            f.last_caught_up_time_ms = f.last_caught_up_time_ms.max(f.last_fetch_time_ms);
        }
        f.log_end_offset = fetch_offset;
        f.last_fetch_leader_log_end_offset = leader_leo;
        f.last_fetch_time_ms = now_ms;
        true
    }

    /// Records the LogStartOffset follower `id` sent in its Fetch (ignored when `id` is not a replica).
    pub fn update_follower_log_start_offset(&mut self, id: BrokerId, log_start_offset: Offset) {
        if let Some(f) = self.followers.get_mut(&id) {
            f.log_start_offset = log_start_offset;
        }
    }

    /// Recomputes the HighWatermark: min LEO over the maximal ISR (the leader counts `leader_leo`), never
    /// below its previous value. Returns `Some(new)` when it advanced.
    pub fn maybe_increment_high_watermark(&mut self, leader_leo: Offset) -> Option<Offset> {
        let mut hw = leader_leo;
        // The maximal ISR without allocating (duplicates do not change a minimum).
        for &id in self.isr.iter().chain(self.pending_isr.iter().flatten()) {
            if id == self.local_id {
                continue;
            }
            let leo = self
                .followers
                .get(&id)
                .map_or(Offset::NONE, |f| f.log_end_offset);
            hw = hw.min(leo);
        }
        if hw > self.high_watermark {
            self.high_watermark = hw;
            Some(hw)
        } else {
            None
        }
    }

    /// Proposes adding follower `id` to the ISR when it is a replica outside the ISR whose LEO reached
    /// the HW and the leader epoch's start offset, and no AlterPartition is in flight. The proposal is
    /// recorded as in flight; the caller sends it.
    pub fn maybe_expand_isr(&mut self, id: BrokerId) -> Option<Vec<BrokerId>> {
        if self.pending_isr.is_some() || self.isr.contains(&id) || id == self.local_id {
            return None;
        }
        let f = self.followers.get(&id)?;
        if f.log_end_offset >= self.high_watermark
            && f.log_end_offset >= self.leader_epoch_start_offset
        {
            let mut proposed = self.isr.clone();
            proposed.push(id);
            self.pending_isr = Some(proposed.clone());
            Some(proposed)
        } else {
            None
        }
    }

    /// Proposes removing every ISR follower not caught up to the leader's LEO for more than
    /// `lag_max_ms`, when no AlterPartition is in flight. The proposal is recorded as in flight.
    pub fn maybe_shrink_isr(
        &mut self,
        leader_leo: Offset,
        now_ms: i64,
        lag_max_ms: i64,
    ) -> Option<Vec<BrokerId>> {
        if self.pending_isr.is_some() {
            return None;
        }
        let out: Vec<BrokerId> = self
            .isr
            .iter()
            .copied()
            .filter(|id| *id != self.local_id)
            .filter(|id| match self.followers.get(id) {
                Some(f) => {
                    f.log_end_offset != leader_leo
                        && now_ms.saturating_sub(f.last_caught_up_time_ms) > lag_max_ms
                }
                None => true,
            })
            .collect();
        if out.is_empty() {
            return None;
        }
        let proposed: Vec<BrokerId> = self
            .isr
            .iter()
            .copied()
            .filter(|id| !out.contains(id))
            .collect();
        self.pending_isr = Some(proposed.clone());
        Some(proposed)
    }

    /// The registration to send with AlterPartition for `proposed_isr`.
    pub fn proposal(&self, topic_id: Uuid, proposed_isr: Vec<BrokerId>) -> PartitionState {
        PartitionState {
            topic_id,
            leader: self.local_id,
            leader_epoch: self.leader_epoch,
            partition_epoch: self.partition_epoch,
            isr: proposed_isr,
            replicas: self.replicas.clone(),
        }
    }
}

/// The follower's truncation point after OffsetForLeaderEpoch (KIP-101, KIP-279).
///
/// `requested_epoch` is the follower's latest epoch (None: its epoch cache is empty), `leader_answer` the
/// leader's (epoch, end offset), `local_end_for` the follower's own end offset for an epoch, `leo` and
/// `hw` the follower's LEO and HighWatermark. The leader's (-1, -1) ("unknown") truncates to the HW; a
/// leader epoch below ours truncates to the smaller of both end offsets for that epoch; the result is
/// never above the LEO.
pub fn truncation_offset(
    requested_epoch: Option<LeaderEpoch>,
    leader_answer: (LeaderEpoch, Offset),
    local_end_for: impl Fn(LeaderEpoch) -> (LeaderEpoch, Offset),
    leo: Offset,
    hw: Offset,
) -> Offset {
    let Some(requested) = requested_epoch else {
        return hw.min(leo);
    };
    let (leader_epoch, leader_end) = leader_answer;
    if leader_epoch.get() < 0 || leader_end.get() < 0 {
        return hw.min(leo);
    }
    if leader_epoch == requested {
        return leader_end.min(leo);
    }
    let (local_epoch, local_end) = local_end_for(leader_epoch);
    let local_end = if local_epoch.get() < 0 {
        leo
    } else {
        local_end
    };
    leader_end.min(local_end).min(leo)
}

#[cfg(test)]
#[path = "replica_states_tests.rs"]
mod tests;
