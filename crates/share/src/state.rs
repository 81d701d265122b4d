//! The persisted shape of a share-partition's delivery state, shared by the leader's [`crate::SharePartition`]
//! and the [`crate::ShareCoordinator`] (Kafka's `PersisterStateBatch` and the ReadShareGroupState result).

/// The delivery state of a persisted batch of offsets; the discriminants are Kafka's `RecordState` ids as
/// written in `StateBatch.DeliveryState` (0 Available, 2 Acknowledged, 4 Archived; 1 Acquired is never
/// persisted — an acquired record is written as Available — and 3 Archiving is not used).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DeliveryState {
    /// Deliverable (again): never acquired (count 0) or released, rejected by nobody yet.
    Available = 0,
    /// Accepted by a consumer: done.
    Acknowledged = 2,
    /// Rejected, a gap, or out of delivery attempts: done, never delivered again.
    Archived = 4,
}

impl DeliveryState {
    /// The Kafka id (`INT8` in the records and RPCs).
    pub fn id(self) -> i8 {
        self as i8
    }

    /// The state of a Kafka id; `None` for ids that are never persisted (1 Acquired, 3 Archiving) or unknown.
    pub fn from_id(id: i8) -> Option<DeliveryState> {
        match id {
            0 => Some(DeliveryState::Available),
            2 => Some(DeliveryState::Acknowledged),
            4 => Some(DeliveryState::Archived),
            _ => None,
        }
    }

    /// Whether the state is terminal (Acknowledged or Archived): the offset is done.
    pub fn is_terminal(self) -> bool {
        self != DeliveryState::Available
    }
}

/// A range of offsets with one delivery state and count (`StateBatch` of the records and RPCs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StateBatch {
    /// First offset of the range, inclusive.
    pub first_offset: i64,
    /// Last offset of the range, inclusive (`>= first_offset`).
    pub last_offset: i64,
    /// The state of every offset in the range.
    pub delivery_state: DeliveryState,
    /// How many times each offset of the range was acquired.
    pub delivery_count: i16,
}

/// The durable delivery state of one share-partition: what the leader persists (WriteShareGroupState) and
/// loads (ReadShareGroupState).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ShareState {
    /// The state epoch: bumped by InitializeShareGroupState (e.g. when the group's offsets are altered); a
    /// write with an older one is fenced.
    pub state_epoch: i32,
    /// The share-partition start offset (SPSO): every offset below it is done.
    pub start_offset: i64,
    /// Non-overlapping batches in ascending order, at or above `start_offset`.
    pub batches: Vec<StateBatch>,
}

/// The most offsets past its start offset that a state may cover (131,072). A leader's own state stays
/// within its in-flight limit (`share.partition.max.record.locks`, at most a few thousand) plus one batch;
/// the bound keeps a share-partition built from a stored or received state (one entry per offset, about
/// 90 bytes each) to about 12 MB whatever that state says.
pub const MAX_STATE_SPAN: i64 = 1 << 17;

impl ShareState {
    /// Checks a state received from another broker (WriteShareGroupState) before it is stored: a start
    /// offset of 0 or more (or -1, unknown), a state epoch of 0 or more, batches in ascending order, not
    /// overlapping, each `first_offset <= last_offset` with a delivery count of 0 or more, at or above the
    /// start offset and ending within [`MAX_STATE_SPAN`] of it. `Err` names the first rule broken.
    pub fn validate(&self) -> Result<(), &'static str> {
        if self.start_offset < -1 || self.state_epoch < 0 {
            return Err("negative start offset or state epoch");
        }
        let start = self.start_offset.max(0);
        let mut next = start;
        for b in &self.batches {
            if b.first_offset > b.last_offset || b.delivery_count < 0 {
                return Err(
                    "a batch with its last offset before its first, or a negative delivery count",
                );
            }
            if b.first_offset < next {
                return Err("batches below the start offset, out of order or overlapping");
            }
            if b.last_offset.saturating_sub(start) >= MAX_STATE_SPAN {
                return Err("batches too far past the start offset");
            }
            next = b.last_offset + 1;
        }
        Ok(())
    }

    /// The state of a share-partition that starts at `start_offset` with nothing in flight (state epoch 0).
    pub fn initial(start_offset: i64) -> ShareState {
        ShareState {
            state_epoch: 0,
            start_offset,
            batches: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(first_offset: i64, last_offset: i64) -> StateBatch {
        StateBatch {
            first_offset,
            last_offset,
            delivery_state: DeliveryState::Available,
            delivery_count: 1,
        }
    }

    fn state(start_offset: i64, batches: Vec<StateBatch>) -> ShareState {
        ShareState {
            state_epoch: 0,
            start_offset,
            batches,
        }
    }

    #[test]
    fn a_received_state_is_checked_before_it_is_stored() {
        assert!(state(10, vec![batch(10, 12), batch(15, 15)])
            .validate()
            .is_ok());
        assert!(state(-1, vec![batch(0, 3)]).validate().is_ok());
        assert!(state(10, vec![batch(12, 11)]).validate().is_err());
        assert!(state(10, vec![batch(5, 11)]).validate().is_err());
        assert!(state(10, vec![batch(10, 12), batch(12, 13)])
            .validate()
            .is_err());
        assert!(state(10, vec![batch(15, 16), batch(10, 12)])
            .validate()
            .is_err());
        assert!(state(0, vec![batch(0, MAX_STATE_SPAN)]).validate().is_err());
        assert!(state(0, vec![batch(0, i64::MAX)]).validate().is_err());
        assert!(state(i64::MAX - 1, vec![batch(i64::MAX - 1, i64::MAX - 1)])
            .validate()
            .is_ok());
        assert!(state(-5, vec![]).validate().is_err());
        let mut negative = state(0, vec![batch(0, 1)]);
        negative.batches[0].delivery_count = -1;
        assert!(negative.validate().is_err());
    }
}
