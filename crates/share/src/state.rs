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

impl ShareState {
    /// The state of a share-partition that starts at `start_offset` with nothing in flight (state epoch 0).
    pub fn initial(start_offset: i64) -> ShareState {
        ShareState {
            state_epoch: 0,
            start_offset,
            batches: Vec::new(),
        }
    }
}
