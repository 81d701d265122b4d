//! Parked JoinGroup/SyncGroup requests and the answers held back for them.
//!
//! "Read your uncommitted writes" (Kafka's `CoordinatorRuntime`: a response waits until the HighWatermark
//! passes the partition's last written offset, even when its own call wrote nothing): in cluster mode the
//! runtime remembers, per `__consumer_offsets` partition, its last write not yet known to be replicated
//! (`State::last_written`; after a load, the LogEndOffset the groups were replayed from). A JoinGroup or
//! SyncGroup answer about a group of that partition is held until that write is replicated: e.g. a
//! follower's SyncGroup answered from the assignment the leader's SyncGroup just wrote. Answered at once,
//! it would let a member work in a generation that a coordinator failover loses, and that the next
//! coordinator then hands out again for a different membership.

use super::*;

/// A parked request's answer: the coordinator's result, or a runtime failure.
pub(super) type Parked<T> = oneshot::Sender<Result<T, CoordinatorError>>;

pub(super) enum Pending {
    Join(Parked<JoinResult>),
    Sync(Parked<SyncResult>),
}

/// A parked request with its answer, held back until the group records written with it are replicated.
pub(super) enum Reply {
    Join(Parked<JoinResult>, JoinResult),
    Sync(Parked<SyncResult>, SyncResult),
}

impl Reply {
    pub(super) fn send(self) {
        match self {
            Reply::Join(tx, r) => {
                let _ = tx.send(Ok(r));
            }
            Reply::Sync(tx, r) => {
                let _ = tx.send(Ok(r));
            }
        }
    }

    /// Sends `error` instead (the records could not be replicated).
    pub(super) fn fail(self, error: CoordinatorError) {
        match self {
            Reply::Join(tx, _) => {
                let _ = tx.send(Err(error));
            }
            Reply::Sync(tx, _) => {
                let _ = tx.send(Err(error));
            }
        }
    }
}

impl GroupCoordinatorService {
    /// Sends `replies` once every append in `appended` is replicated (or their error when that fails or
    /// `offsets.commit.timeout.ms` passes). Without a tokio runtime they are sent at once.
    pub(super) fn reply_when_replicated(&self, appended: Vec<Appended>, replies: Vec<Reply>) {
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            replies.into_iter().for_each(Reply::send);
            return;
        };
        let (min_isr, deadline) = self.replication_bounds();
        let rm = self.replica_manager.clone();
        handle.spawn(async move {
            match wait_appended(&rm, &appended, min_isr, deadline).await {
                Ok(()) => replies.into_iter().for_each(Reply::send),
                Err(code) => replies.into_iter().for_each(|r| r.fail(code)),
            }
        });
    }

    /// Remembers `appended` as the last write of each partition (the newest append of a partition is
    /// replicated only once every earlier one is).
    pub(super) fn note_written(&self, st: &mut State, appended: &[Appended]) {
        if !self.cluster_mode {
            return;
        }
        for a in appended {
            st.last_written.insert(a.0.partition, a.clone());
        }
    }

    /// The last writes, not yet replicated, of the partitions of `groups`. Writes found replicated (the
    /// HighWatermark passed them in their LeaderEpoch) are forgotten.
    pub(super) fn unreplicated(&self, st: &mut State, groups: &[String]) -> Vec<Appended> {
        let n = self.num_partitions.load(Ordering::Acquire);
        let mut parts: Vec<i32> = groups.iter().map(|g| partition_for(g, n)).collect();
        parts.sort_unstable();
        parts.dedup();
        let mut waits = Vec::new();
        for p in parts {
            let Some((partition, required, epoch)) = st.last_written.get(&p) else {
                continue;
            };
            if partition.leader_epoch() == *epoch && partition.high_watermark() >= *required {
                st.last_written.remove(&p);
            } else {
                waits.push((partition.clone(), *required, *epoch));
            }
        }
        waits
    }

    /// A partition loaded as its new leader: its groups were replayed up to the LogEndOffset, which the
    /// HighWatermark may not have reached yet (records of the previous leader not yet committed), so
    /// answers about them wait for it as for a write of this coordinator.
    pub(super) fn note_loaded(&self, st: &mut State, partition: i32) {
        st.last_written.remove(&partition);
        let Some(p) = self.replica_manager.partition(OFFSETS_TOPIC, partition) else {
            return;
        };
        let end = p.log_end_offset();
        if p.high_watermark() < end {
            st.last_written
                .insert(partition, (p.clone(), end, p.leader_epoch()));
        }
    }
}
