//! [`ShareCoordinator`]: the durable delivery state of share-partitions, kept in `__share_group_state`
//! (Kafka's share-coordinator module, `ShareCoordinatorShard`).
//!
//! One coordinator holds the keys of the `__share_group_state` partitions this broker leads; a key's
//! partition is [`share_partition_for`]. Each operation mirrors a persister RPC for one key: it validates the
//! request (fencing by leader and state epoch), applies the change to the in-memory state at once, and
//! returns the record the caller must append to the key's `__share_group_state` partition. If that append
//! fails, the caller must [`unload_partition`] and reload it from the log with [`replay`] (Kafka's runtime
//! instead rolls its timeline back), so the memory never runs ahead of the log for long.
//!
//! Every write appends a full ShareSnapshot record (snapshot epoch + 1), never a ShareUpdate: the latest
//! record of a key is its whole state, so a load only needs each key's last record and old records may be
//! deleted below the oldest latest-record of a partition. (Kafka writes ShareUpdates between snapshots, with
//! `__share_group_state` on `cleanup.policy=delete` plus pruning; [`replay`] reads both kinds.)
//!
//! [`unload_partition`]: ShareCoordinator::unload_partition
//! [`replay`]: ShareCoordinator::replay

use std::cmp::Ordering;
use std::collections::HashMap;

use uuid::Uuid;

use crate::combine::combine_state_batches;
use crate::error::StateError;
use crate::records::{decode_record, RecordDecodeError, ShareRecord, ShareSnapshotValue};
use crate::state::{ShareState, StateBatch};

/// Kafka's message for a negative leader epoch (`ShareCoordinatorShard.NEGATIVE_LEADER_EPOCH`).
const NEGATIVE_LEADER_EPOCH: &str = "The leader epoch cannot be a negative number.";
/// Kafka's message for a negative state epoch.
const NEGATIVE_STATE_EPOCH: &str = "The state epoch cannot be a negative number.";

/// A share-partition: one share group on one topic-partition (Kafka's `SharePartitionKey`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SharePartitionKey {
    /// The share group id.
    pub group_id: String,
    /// The topic id.
    pub topic_id: Uuid,
    /// The partition index.
    pub partition: i32,
}

impl SharePartitionKey {
    /// A key from its parts.
    pub fn new(group_id: impl Into<String>, topic_id: Uuid, partition: i32) -> SharePartitionKey {
        SharePartitionKey {
            group_id: group_id.into(),
            topic_id,
            partition,
        }
    }

    /// Kafka's `SharePartitionKey.asCoordinatorKey()`: `"{group}:{topic id}:{partition}"`, the topic id in
    /// Kafka's `Uuid.toString()` form (URL-safe base64 of the 16 bytes, no padding: 22 characters). The
    /// FindCoordinator key of a share-partition (key type 2, SHARE).
    pub fn as_coordinator_key(&self) -> String {
        format!(
            "{}:{}:{}",
            self.group_id,
            kafka_uuid_string(&self.topic_id),
            self.partition
        )
    }
}

/// Kafka's `Uuid.toString()`: `Base64.getUrlEncoder().withoutPadding()` of the 16 bytes.
pub(crate) fn kafka_uuid_string(id: &Uuid) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let bytes = id.as_bytes();
    let mut out = String::with_capacity(22);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

/// Java's `String.hashCode()` over the UTF-16 code units of `s`.
fn java_string_hashcode(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c)))
}

/// The `__share_group_state` partition of a share-partition: Kafka's
/// `Utils.abs(SharePartitionKey.asCoordinatorKey().hashCode()) % numPartitions` (`Utils.abs(MIN_VALUE)` is
/// 0). Returns 0 when `num_partitions <= 0`.
pub fn share_partition_for(
    group_id: &str,
    topic_id: Uuid,
    partition: i32,
    num_partitions: i32,
) -> i32 {
    if num_partitions <= 0 {
        return 0;
    }
    let key = SharePartitionKey::new(group_id, topic_id, partition);
    let h = java_string_hashcode(&key.as_coordinator_key());
    let abs = if h == i32::MIN { 0 } else { h.abs() };
    abs % num_partitions
}

/// The stored state of one share-partition (Kafka's `ShareGroupOffset`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredState {
    /// Snapshot epoch of the last ShareSnapshot.
    pub snapshot_epoch: i32,
    /// The state epoch (set by InitializeShareGroupState).
    pub state_epoch: i32,
    /// The newest leader epoch seen (-1 none): reads and writes with an older one are fenced.
    pub leader_epoch: i32,
    /// The share-partition start offset.
    pub start_offset: i64,
    /// KIP-1226 delivery complete count as last written (-1 unknown).
    pub delivery_complete_count: i32,
    /// When the state was initialized, ms since the epoch.
    pub create_timestamp: i64,
    /// When the state was last written, ms since the epoch.
    pub write_timestamp: i64,
    /// Non-overlapping state batches, ascending, at or above `start_offset`.
    pub batches: Vec<StateBatch>,
}

impl StoredState {
    /// The state as the share-partition leader loads it (ReadShareGroupState result).
    pub fn share_state(&self) -> ShareState {
        ShareState {
            state_epoch: self.state_epoch,
            start_offset: self.start_offset,
            batches: self.batches.clone(),
        }
    }

    fn from_snapshot(v: ShareSnapshotValue) -> StoredState {
        StoredState {
            snapshot_epoch: v.snapshot_epoch,
            state_epoch: v.state_epoch,
            leader_epoch: v.leader_epoch,
            start_offset: v.start_offset,
            delivery_complete_count: v.delivery_complete_count,
            create_timestamp: v.create_timestamp,
            write_timestamp: v.write_timestamp,
            batches: v.state_batches,
        }
    }

    fn to_snapshot(&self) -> ShareSnapshotValue {
        ShareSnapshotValue {
            snapshot_epoch: self.snapshot_epoch,
            state_epoch: self.state_epoch,
            leader_epoch: self.leader_epoch,
            start_offset: self.start_offset,
            delivery_complete_count: self.delivery_complete_count,
            create_timestamp: self.create_timestamp,
            write_timestamp: self.write_timestamp,
            state_batches: self.batches.clone(),
        }
    }
}

/// One WriteShareGroupState partition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteRequest {
    /// The writer's state epoch (from its ReadShareGroupState); older than the stored one →
    /// [`StateError::FencedStateEpoch`]. Never stored.
    pub state_epoch: i32,
    /// The writer's leader epoch; older than the stored one → [`StateError::FencedLeaderEpoch`]. Never
    /// stored.
    pub leader_epoch: i32,
    /// The new start offset, or -1 for unchanged.
    pub start_offset: i64,
    /// KIP-1226 delivery complete count (WriteShareGroupState v1), -1 unknown.
    pub delivery_complete_count: i32,
    /// Batches to merge over the stored ones ([`combine_state_batches`]).
    pub batches: Vec<StateBatch>,
}

/// The ReadShareGroupStateSummary answer for one share-partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadSummary {
    /// The state epoch.
    pub state_epoch: i32,
    /// The stored leader epoch.
    pub leader_epoch: i32,
    /// The share-partition start offset.
    pub start_offset: i64,
    /// KIP-1226 delivery complete count (-1 unknown).
    pub delivery_complete_count: i32,
}

/// The share coordinator of the `__share_group_state` partitions this broker leads (see the module doc).
#[derive(Clone, Debug)]
pub struct ShareCoordinator {
    num_partitions: i32,
    states: HashMap<SharePartitionKey, StoredState>,
}

impl ShareCoordinator {
    /// An empty coordinator for a `__share_group_state` topic of `num_partitions` partitions
    /// (`share.coordinator.state.topic.num.partitions`, default 50).
    pub fn new(num_partitions: i32) -> ShareCoordinator {
        ShareCoordinator {
            num_partitions,
            states: HashMap::new(),
        }
    }

    /// The `__share_group_state` partition of `key`.
    pub fn partition_for(&self, key: &SharePartitionKey) -> i32 {
        share_partition_for(
            &key.group_id,
            key.topic_id,
            key.partition,
            self.num_partitions,
        )
    }

    /// The stored state of `key`, if initialized.
    pub fn state(&self, key: &SharePartitionKey) -> Option<&StoredState> {
        self.states.get(key)
    }

    /// Number of share-partitions held.
    pub fn len(&self) -> usize {
        self.states.len()
    }

    /// Whether no share-partition is held.
    pub fn is_empty(&self) -> bool {
        self.states.is_empty()
    }

    fn check_key(key: &SharePartitionKey) -> Result<(), StateError> {
        if key.partition < 0 {
            return Err(StateError::InvalidRequest(
                "The partition id cannot be a negative number.",
            ));
        }
        Ok(())
    }

    /// InitializeShareGroupState (sent by the group coordinator when a share-partition is first assigned, and
    /// by AlterShareGroupOffsets): (re)starts `key` at `start_offset` with `state_epoch` and no batches.
    /// Errors: a negative `state_epoch` → [`StateError::InvalidRequest`]; a stored state epoch newer than
    /// `state_epoch` → [`StateError::FencedStateEpoch`]. The leader epoch seen so far is kept. Returns the
    /// ShareSnapshot to append.
    pub fn initialize(
        &mut self,
        key: &SharePartitionKey,
        state_epoch: i32,
        start_offset: i64,
        now_ms: i64,
    ) -> Result<ShareRecord, StateError> {
        Self::check_key(key)?;
        if state_epoch < 0 {
            return Err(StateError::InvalidRequest(NEGATIVE_STATE_EPOCH));
        }
        let existing = self.states.get(key);
        if let Some(s) = existing {
            if s.state_epoch > state_epoch {
                return Err(StateError::FencedStateEpoch {
                    stored: s.state_epoch,
                    requested: state_epoch,
                });
            }
        }
        let state = StoredState {
            snapshot_epoch: existing.map_or(0, |s| s.snapshot_epoch.wrapping_add(1)),
            state_epoch,
            leader_epoch: existing.map_or(-1, |s| s.leader_epoch),
            start_offset,
            delivery_complete_count: 0,
            create_timestamp: now_ms,
            write_timestamp: now_ms,
            batches: Vec::new(),
        };
        Ok(self.store(key, state))
    }

    fn fence_leader(stored: &StoredState, leader_epoch: i32) -> Result<(), StateError> {
        if stored.leader_epoch > leader_epoch {
            return Err(StateError::FencedLeaderEpoch {
                stored: stored.leader_epoch,
                requested: leader_epoch,
            });
        }
        Ok(())
    }

    /// ReadShareGroupState by the share-partition leader of `leader_epoch` (the partition's leader epoch):
    /// the state to load, and the ShareSnapshot to append when the leader epoch is newer than the stored one
    /// (it is recorded, fencing older leaders; reads are the only operation that moves the leader epoch).
    /// Errors, in Kafka's order: a negative `leader_epoch` → [`StateError::InvalidRequest`] (KAFKA-20743),
    /// [`StateError::NotInitialized`], an older leader epoch → [`StateError::FencedLeaderEpoch`].
    pub fn read(
        &mut self,
        key: &SharePartitionKey,
        leader_epoch: i32,
        now_ms: i64,
    ) -> Result<(ShareState, Option<ShareRecord>), StateError> {
        Self::check_key(key)?;
        if leader_epoch < 0 {
            return Err(StateError::InvalidRequest(NEGATIVE_LEADER_EPOCH));
        }
        let stored = self.states.get(key).ok_or(StateError::NotInitialized)?;
        Self::fence_leader(stored, leader_epoch)?;
        let state = stored.share_state();
        if leader_epoch == stored.leader_epoch {
            return Ok((state, None));
        }
        let mut next = stored.clone();
        next.leader_epoch = leader_epoch;
        next.snapshot_epoch = next.snapshot_epoch.wrapping_add(1);
        next.write_timestamp = now_ms;
        Ok((state, Some(self.store(key, next))))
    }

    /// WriteShareGroupState: merges `request.batches` over the stored batches (overlaps resolved and
    /// batches below the start offset dropped by [`combine_state_batches`]) and moves the start offset
    /// unless it is -1. The stored epochs are not changed (KAFKA-19456: only initialize sets the state epoch
    /// and only read the leader epoch). The delivery complete count is taken from a write that moves the
    /// start offset forward, the larger of the two at an equal start offset, and kept otherwise (a late
    /// write must not regress it, apache/kafka#23112).
    ///
    /// Errors, in Kafka's order: a negative leader or state epoch → [`StateError::InvalidRequest`]
    /// (KAFKA-20743); [`StateError::NotInitialized`]; an older leader epoch →
    /// [`StateError::FencedLeaderEpoch`]; an older state epoch → [`StateError::FencedStateEpoch`].
    /// Returns the ShareSnapshot to append.
    pub fn write(
        &mut self,
        key: &SharePartitionKey,
        request: &WriteRequest,
        now_ms: i64,
    ) -> Result<ShareRecord, StateError> {
        Self::check_key(key)?;
        if request.leader_epoch < 0 {
            return Err(StateError::InvalidRequest(NEGATIVE_LEADER_EPOCH));
        }
        if request.state_epoch < 0 {
            return Err(StateError::InvalidRequest(NEGATIVE_STATE_EPOCH));
        }
        let stored = self.states.get(key).ok_or(StateError::NotInitialized)?;
        Self::fence_leader(stored, request.leader_epoch)?;
        if stored.state_epoch > request.state_epoch {
            return Err(StateError::FencedStateEpoch {
                stored: stored.state_epoch,
                requested: request.state_epoch,
            });
        }
        let start_offset = if request.start_offset == -1 {
            stored.start_offset
        } else {
            request.start_offset
        };
        let delivery_complete_count = match start_offset.cmp(&stored.start_offset) {
            Ordering::Greater => request.delivery_complete_count,
            Ordering::Equal => request
                .delivery_complete_count
                .max(stored.delivery_complete_count),
            Ordering::Less => stored.delivery_complete_count,
        };
        let next = StoredState {
            snapshot_epoch: stored.snapshot_epoch.wrapping_add(1),
            start_offset,
            delivery_complete_count,
            write_timestamp: now_ms,
            batches: combine_state_batches(&stored.batches, &request.batches, start_offset),
            ..stored.clone()
        };
        Ok(self.store(key, next))
    }

    /// ReadShareGroupStateSummary (DescribeShareGroupOffsets, lag): the start offset, epochs and delivery
    /// complete count, recording nothing. `Ok(None)` when `key` is not initialized (Kafka answers start
    /// offset -1). As Kafka's `readStateSummary`, only the key is checked (a negative partition →
    /// [`StateError::InvalidRequest`]): the request's `_leader_epoch` is neither fenced nor recorded.
    pub fn read_summary(
        &self,
        key: &SharePartitionKey,
        _leader_epoch: i32,
    ) -> Result<Option<ReadSummary>, StateError> {
        Self::check_key(key)?;
        Ok(self.states.get(key).map(|stored| ReadSummary {
            state_epoch: stored.state_epoch,
            leader_epoch: stored.leader_epoch,
            start_offset: stored.start_offset,
            delivery_complete_count: stored.delivery_complete_count,
        }))
    }

    /// DeleteShareGroupState: forgets `key` and returns the tombstone to append (ShareSnapshot key, no
    /// value); `None` when `key` holds no state.
    pub fn delete(&mut self, key: &SharePartitionKey) -> Option<ShareRecord> {
        self.states.remove(key).map(|_| ShareRecord::Snapshot {
            key: key.clone(),
            value: None,
        })
    }

    /// Applies one record read from `__share_group_state` at load (`value` `None`: a tombstone): a
    /// ShareSnapshot replaces the key's state; a ShareUpdate is merged into it (Kafka's
    /// `ShareCoordinatorShard.merge`: start offset and leader epoch unless -1, batches combined) or, with no
    /// state yet, becomes it (state epoch -1, as Kafka's `ShareGroupOffset.fromRecord`); a tombstone of
    /// either type deletes it.
    /// Errors: the record does not decode (an unknown record type is [`RecordDecodeError::UnknownRecordType`],
    /// which a loader may skip).
    pub fn replay(&mut self, key: &[u8], value: Option<&[u8]>) -> Result<(), RecordDecodeError> {
        match decode_record(key, value)? {
            ShareRecord::Snapshot { key, value: None }
            | ShareRecord::Update { key, value: None } => {
                self.states.remove(&key);
            }
            ShareRecord::Snapshot {
                key,
                value: Some(v),
            } => {
                self.states.insert(key, StoredState::from_snapshot(v));
            }
            ShareRecord::Update {
                key,
                value: Some(v),
            } => {
                let merged = match self.states.get(&key) {
                    Some(s) => {
                        let start_offset = keep_unless_minus_one(v.start_offset, s.start_offset);
                        StoredState {
                            leader_epoch: keep_unless_minus_one(v.leader_epoch, s.leader_epoch),
                            batches: combine_state_batches(
                                &s.batches,
                                &v.state_batches,
                                start_offset,
                            ),
                            start_offset,
                            delivery_complete_count: v.delivery_complete_count,
                            ..s.clone()
                        }
                    }
                    None => StoredState {
                        snapshot_epoch: v.snapshot_epoch,
                        state_epoch: -1,
                        leader_epoch: v.leader_epoch,
                        start_offset: v.start_offset,
                        delivery_complete_count: v.delivery_complete_count,
                        create_timestamp: -1,
                        write_timestamp: -1,
                        batches: v.state_batches,
                    },
                };
                self.states.insert(key, merged);
            }
        }
        Ok(())
    }

    /// Forgets every key of `__share_group_state` partition `partition` (its leadership moved away, or a
    /// failed append must be reloaded).
    pub fn unload_partition(&mut self, partition: i32) {
        let n = self.num_partitions;
        self.states.retain(|k, _| {
            share_partition_for(&k.group_id, k.topic_id, k.partition, n) != partition
        });
    }

    fn store(&mut self, key: &SharePartitionKey, state: StoredState) -> ShareRecord {
        let value = state.to_snapshot();
        self.states.insert(key.clone(), state);
        ShareRecord::Snapshot {
            key: key.clone(),
            value: Some(value),
        }
    }
}

fn keep_unless_minus_one<T: PartialEq + From<i8>>(new: T, old: T) -> T {
    if new == T::from(-1) {
        old
    } else {
        new
    }
}

#[cfg(test)]
#[path = "coordinator_tests.rs"]
mod tests;
