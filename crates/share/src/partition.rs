//! [`SharePartition`]: the in-flight delivery state of one share group on one topic-partition, held by the
//! partition leader (Kafka's `kafka.server.share.SharePartition` and `InFlightState`).
//!
//! The window of offsets in flight runs from the share-partition start offset (SPSO, [`start_offset`]: every
//! offset below it is done) to the share-partition end offset (SPEO, [`end_offset`], exclusive here: the next
//! offset never acquired). Each offset in the window that came from the log has a [`RecordState`] and a
//! delivery count; an offset of the window without an entry is a gap (no record in the log there) and counts
//! as done. The window spans at most [`SharePartitionConfig::max_in_flight_records`] offsets
//! (`end_offset - start_offset`, gaps included, as Kafka's `canAcquireRecords`); only new acquisitions are
//! refused past it.
//!
//! The state is kept per offset in a `BTreeMap` (the window is small: 2000 by default).
//!
//! [`start_offset`]: SharePartition::start_offset
//! [`end_offset`]: SharePartition::end_offset

use std::collections::BTreeMap;

use crate::error::ShareError;
use crate::state::{DeliveryState, ShareState, StateBatch};

/// Limits and durations of a share-partition (group configs of KIP-932).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SharePartitionConfig {
    /// How long an acquired record stays locked to its member, ms (`group.share.record.lock.duration.ms`,
    /// default 30000).
    pub record_lock_duration_ms: i64,
    /// Deliveries after which a released or expired record is archived instead of made available again
    /// (`group.share.delivery.count.limit`, default 5).
    pub delivery_count_limit: i16,
    /// Most offsets in the in-flight window (`group.share.partition.max.record.locks`, default 2000).
    pub max_in_flight_records: usize,
}

impl Default for SharePartitionConfig {
    fn default() -> Self {
        SharePartitionConfig {
            record_lock_duration_ms: 30_000,
            delivery_count_limit: 5,
            max_in_flight_records: 2000,
        }
    }
}

/// The state of one in-flight offset (Kafka's `RecordState`, with the acquiring member and its lock).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RecordState {
    /// May be acquired.
    Available,
    /// Locked to `member_id` until `lock_deadline_ms` (ms since the epoch); then it is released.
    Acquired {
        /// The member holding the record.
        member_id: String,
        /// When the acquisition lock expires, ms since the epoch.
        lock_deadline_ms: i64,
    },
    /// Accepted: done.
    Acknowledged,
    /// Rejected, a gap, or out of delivery attempts: done.
    Archived,
}

impl RecordState {
    /// Whether the offset is done (Acknowledged or Archived).
    pub fn is_terminal(&self) -> bool {
        matches!(self, RecordState::Acknowledged | RecordState::Archived)
    }
}

/// One in-flight offset: its state and how many times it was acquired.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InFlightRecord {
    /// The offset's state.
    pub state: RecordState,
    /// How many times the offset was acquired (1 on its first delivery).
    pub delivery_count: i16,
}

/// A contiguous range of offsets acquired by one [`SharePartition::acquire`] with one delivery count
/// (`AcquiredRecords` of the ShareFetch response).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AcquiredRecords {
    /// First offset, inclusive.
    pub first_offset: i64,
    /// Last offset, inclusive.
    pub last_offset: i64,
    /// The delivery count of every offset of the range (this delivery included).
    pub delivery_count: i16,
}

/// How a consumer acknowledges an offset (ShareAcknowledge `AcknowledgeTypes`, KIP-932 and KIP-1222).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AcknowledgeType {
    /// The offset holds no record (a gap in a compacted or transactional log): archived.
    Gap = 0,
    /// Processed: acknowledged.
    Accept = 1,
    /// Give it back for another delivery: available (archived at the delivery count limit).
    Release = 2,
    /// Unprocessable: archived.
    Reject = 3,
    /// Still working on it: the acquisition lock is extended by the lock duration (KIP-1222).
    Renew = 4,
}

impl AcknowledgeType {
    /// The type of a wire id (`INT8`); `None` for an unknown id (the broker answers INVALID_REQUEST).
    pub fn from_id(id: i8) -> Option<AcknowledgeType> {
        match id {
            0 => Some(AcknowledgeType::Gap),
            1 => Some(AcknowledgeType::Accept),
            2 => Some(AcknowledgeType::Release),
            3 => Some(AcknowledgeType::Reject),
            4 => Some(AcknowledgeType::Renew),
            _ => None,
        }
    }
}

/// One acknowledgement batch of ShareAcknowledge (or ShareFetch): a range and either one type for all of it
/// or one type per offset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AcknowledgementBatch {
    /// First offset, inclusive.
    pub first_offset: i64,
    /// Last offset, inclusive.
    pub last_offset: i64,
    /// One entry for the whole range, or exactly `last_offset - first_offset + 1` entries.
    pub types: Vec<AcknowledgeType>,
}

/// In-flight offsets by state (for lag, metrics and DescribeShareGroupOffsets).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct InFlightCounts {
    /// Offsets that may be acquired.
    pub available: usize,
    /// Offsets locked to a member.
    pub acquired: usize,
    /// Accepted offsets still in the window (above the start offset).
    pub acknowledged: usize,
    /// Archived offsets still in the window.
    pub archived: usize,
}

/// The in-flight delivery state of one share group on one topic-partition (see the module doc).
#[derive(Clone, Debug)]
pub struct SharePartition {
    config: SharePartitionConfig,
    state_epoch: i32,
    start_offset: i64,
    end_offset: i64,
    in_flight: BTreeMap<i64, InFlightRecord>,
    /// The widest window allowed: the configured maximum, or a wider window loaded from the persisted state.
    window_allowance: i64,
}

impl SharePartition {
    /// Builds the leader's state from what ReadShareGroupState returned. Batches below the start offset are
    /// dropped; later batches override earlier ones where they overlap. Available offsets keep their delivery
    /// count (they are redelivered first); an Available offset already at the delivery count limit is
    /// archived. `end_offset = max(start_offset, last persisted offset + 1)`. A negative start offset (Kafka's
    /// -1, uninitialized) is taken as 0. Offsets between the start and end offsets that no batch covers are
    /// gaps (done): this leader always persists its whole window, so only offsets without records are left
    /// out.
    pub fn new(persisted: ShareState, config: SharePartitionConfig) -> SharePartition {
        let start = persisted.start_offset.max(0);
        let mut in_flight = BTreeMap::new();
        let mut end = start;
        for b in &persisted.batches {
            if b.last_offset < start || b.first_offset > b.last_offset {
                continue;
            }
            let state = match b.delivery_state {
                DeliveryState::Acknowledged => RecordState::Acknowledged,
                DeliveryState::Archived => RecordState::Archived,
                DeliveryState::Available if b.delivery_count >= config.delivery_count_limit => {
                    RecordState::Archived
                }
                DeliveryState::Available => RecordState::Available,
            };
            // A stored state is bounded (`MAX_STATE_SPAN`): a state written before the bound was checked, or
            // corrupted, cannot make this loop allocate without limit.
            let last = b
                .last_offset
                .min(start.saturating_add(crate::state::MAX_STATE_SPAN - 1));
            if last < b.first_offset.max(start) {
                continue;
            }
            for offset in b.first_offset.max(start)..=last {
                let record = InFlightRecord {
                    state: state.clone(),
                    delivery_count: b.delivery_count.max(0),
                };
                in_flight.insert(offset, record);
            }
            end = end.max(last.saturating_add(1));
        }
        let mut sp = SharePartition {
            config,
            state_epoch: persisted.state_epoch,
            start_offset: start,
            end_offset: end,
            in_flight,
            window_allowance: 0,
        };
        sp.advance_start();
        sp.window_allowance = (config.max_in_flight_records as i64).max(sp.window());
        sp
    }

    /// The share-partition start offset (SPSO): every offset below it is done.
    pub fn start_offset(&self) -> i64 {
        self.start_offset
    }

    /// The share-partition end offset, exclusive: the next offset never acquired.
    pub fn end_offset(&self) -> i64 {
        self.end_offset
    }

    /// The state epoch this state was loaded with (written back with every WriteShareGroupState).
    pub fn state_epoch(&self) -> i32 {
        self.state_epoch
    }

    /// Replaces the limits and durations (a group config changed): they apply to later acquisitions and
    /// releases; locks already taken keep their deadlines.
    pub fn set_config(&mut self, config: SharePartitionConfig) {
        self.config = config;
    }

    /// The limits and durations in force.
    pub fn config(&self) -> &SharePartitionConfig {
        &self.config
    }

    /// The state of `offset`, if it is in flight.
    pub fn record(&self, offset: i64) -> Option<&InFlightRecord> {
        self.in_flight.get(&offset)
    }

    /// In-flight offsets by state.
    pub fn in_flight_counts(&self) -> InFlightCounts {
        let mut c = InFlightCounts::default();
        for r in self.in_flight.values() {
            match r.state {
                RecordState::Available => c.available += 1,
                RecordState::Acquired { .. } => c.acquired += 1,
                RecordState::Acknowledged => c.acknowledged += 1,
                RecordState::Archived => c.archived += 1,
            }
        }
        c
    }

    /// Offsets at or above the start offset whose delivery is complete (Acknowledged or Archived): Kafka's
    /// `deliveryCompleteCount` (KIP-1226).
    pub fn delivery_complete_count(&self) -> usize {
        let c = self.in_flight_counts();
        c.acknowledged + c.archived
    }

    fn window(&self) -> i64 {
        self.end_offset - self.start_offset
    }

    fn window_limit(&self) -> i64 {
        let max = i64::try_from(self.config.max_in_flight_records).unwrap_or(i64::MAX);
        self.start_offset.saturating_add(max)
    }

    /// Where the leader should read the log for the next acquisition: the lowest Available in-flight offset,
    /// else the end offset; `None` when nothing can be acquired (no Available offset and a full window).
    pub fn next_fetch_offset(&self) -> Option<i64> {
        let available = self
            .in_flight
            .iter()
            .find(|(_, r)| r.state == RecordState::Available)
            .map(|(o, _)| *o);
        match available {
            Some(o) => Some(o),
            None if self.end_offset < self.window_limit() => Some(self.end_offset),
            None => None,
        }
    }

    /// Acquires records for `member_id` out of the record batches the leader read from the log starting at
    /// [`next_fetch_offset`](Self::next_fetch_offset): `batches` holds their `(base_offset, last_offset)`
    /// bounds, ascending. Takes (a) Available in-flight offsets inside them (delivery count + 1) and (b) new
    /// offsets from the end offset up to the end of the batches (delivery count 1), moving the end offset
    /// (offsets skipped between batches are gaps). Offsets below the start offset are never acquired, nor
    /// new offsets past the window of `max_in_flight_records`.
    ///
    /// `max_records` bounds the acquired records: with `strict == false` (Kafka's batch-optimized
    /// ShareAcquireMode 0) it is checked between batches, so a batch is taken whole even past it; with
    /// `strict == true` (record-limit mode 1) it is never exceeded. Each acquired offset is locked until
    /// `now_ms + record_lock_duration_ms`. Returns contiguous ranges of equal delivery count, ascending.
    ///
    /// As Kafka's `SharePartition.acquire`: Available in-flight offsets between the fetch offset and the
    /// first batch are no longer in the log (compacted away) and are archived; and, with a delivery count
    /// limit above 2, a record on its last delivery attempt is delivered alone (the acquisition stops
    /// before it when other records were taken, and after it otherwise), so that one poison record does not
    /// take a whole batch of records to the limit with it.
    pub fn acquire(
        &mut self,
        member_id: &str,
        batches: &[(i64, i64)],
        max_records: usize,
        strict: bool,
        now_ms: i64,
    ) -> Vec<AcquiredRecords> {
        if let (Some(from), Some(&(base, _))) = (self.next_fetch_offset(), batches.first()) {
            self.archive_stale(from, base);
        }
        let deadline = now_ms.saturating_add(self.config.record_lock_duration_ms);
        let mut taken: Vec<(i64, i16)> = Vec::new();
        for &(base, last) in batches {
            if taken.len() >= max_records || base > last {
                break;
            }
            let budget = strict.then(|| max_records - taken.len());
            let before = taken.len();
            if self.acquire_in_flight(member_id, base, last, budget, deadline, &mut taken) {
                break;
            }
            let budget = budget.map(|b| b - (taken.len() - before));
            self.acquire_new(member_id, base, last, budget, deadline, &mut taken);
        }
        self.advance_start();
        merge_ranges(&taken)
    }

    /// Archives the Available in-flight offsets in `[from, base)`: the log read from `from` starts at
    /// `base`, so they hold no record any more.
    fn archive_stale(&mut self, from: i64, base: i64) {
        if from >= base {
            return;
        }
        for r in self.in_flight.range_mut(from..base).map(|(_, r)| r) {
            if r.state == RecordState::Available {
                r.state = RecordState::Archived;
            }
        }
    }

    /// Acquires the Available in-flight offsets of `[base, last]`, at most `budget` (`None`: no limit).
    /// Returns whether the acquisition must stop here (a record on its last delivery attempt, delivered
    /// alone).
    fn acquire_in_flight(
        &mut self,
        member_id: &str,
        base: i64,
        last: i64,
        budget: Option<usize>,
        deadline: i64,
        taken: &mut Vec<(i64, i16)>,
    ) -> bool {
        let lo = base.max(self.start_offset);
        let hi = last.min(self.end_offset - 1);
        if lo > hi {
            return false;
        }
        let limit = self.config.delivery_count_limit;
        let mut n = 0;
        for (offset, r) in self.in_flight.range_mut(lo..=hi) {
            if budget.is_some_and(|b| n >= b) {
                break;
            }
            if r.state != RecordState::Available {
                continue;
            }
            debug_assert!(
                r.delivery_count < limit,
                "offset {offset} is Available at the delivery count limit"
            );
            if r.delivery_count >= limit {
                r.state = RecordState::Archived;
                continue;
            }
            let last_attempt = limit > 2 && r.delivery_count == limit - 1;
            if last_attempt && !taken.is_empty() {
                return true;
            }
            r.delivery_count += 1;
            r.state = RecordState::Acquired {
                member_id: member_id.to_string(),
                lock_deadline_ms: deadline,
            };
            taken.push((*offset, r.delivery_count));
            n += 1;
            if last_attempt {
                return true;
            }
        }
        false
    }

    /// Acquires new offsets of `[base, last]` from the end offset on, at most `budget` (`None`: no limit) and
    /// within the window. With nothing in flight, a gap before `base` moves the whole window up to it.
    fn acquire_new(
        &mut self,
        member_id: &str,
        base: i64,
        last: i64,
        budget: Option<usize>,
        deadline: i64,
        taken: &mut Vec<(i64, i16)>,
    ) {
        if self.in_flight.is_empty() && base > self.end_offset {
            self.start_offset = base;
            self.end_offset = base;
        }
        let first = base.max(self.end_offset).max(self.start_offset);
        let mut hi = last.min(self.window_limit() - 1);
        if let Some(b) = budget {
            let room = i64::try_from(b).unwrap_or(i64::MAX);
            hi = hi.min(first.saturating_add(room) - 1);
        }
        if first > hi {
            return;
        }
        for offset in first..=hi {
            let record = InFlightRecord {
                state: RecordState::Acquired {
                    member_id: member_id.to_string(),
                    lock_deadline_ms: deadline,
                },
                delivery_count: 1,
            };
            self.in_flight.insert(offset, record);
            taken.push((offset, 1));
        }
        self.end_offset = hi + 1;
    }

    /// Applies the acknowledgements of `member_id`, all or nothing: every batch is validated first (ascending
    /// and non-overlapping, `first_offset <= last_offset`, one type or one per offset, else
    /// [`ShareError::InvalidRequest`]; every offset Acquired by `member_id`, else
    /// [`ShareError::InvalidRecordState`]), then applied: Accept → Acknowledged; Release → Available, or
    /// Archived at the delivery count limit; Reject and Gap → Archived; Renew → the lock extended to
    /// `now_ms + record_lock_duration_ms`. The start offset then moves past the leading done offsets.
    pub fn acknowledge(
        &mut self,
        member_id: &str,
        batches: &[AcknowledgementBatch],
        now_ms: i64,
    ) -> Result<(), ShareError> {
        self.validate_acknowledgements(member_id, batches)?;
        let deadline = now_ms.saturating_add(self.config.record_lock_duration_ms);
        let limit = self.config.delivery_count_limit;
        for b in batches {
            for (i, (_, r)) in self
                .in_flight
                .range_mut(b.first_offset..=b.last_offset)
                .enumerate()
            {
                let t = if b.types.len() == 1 {
                    b.types[0]
                } else {
                    b.types[i]
                };
                match t {
                    AcknowledgeType::Accept => r.state = RecordState::Acknowledged,
                    AcknowledgeType::Gap | AcknowledgeType::Reject => {
                        r.state = RecordState::Archived
                    }
                    AcknowledgeType::Release => r.state = released(r.delivery_count, limit),
                    AcknowledgeType::Renew => {
                        if let RecordState::Acquired {
                            lock_deadline_ms, ..
                        } = &mut r.state
                        {
                            *lock_deadline_ms = deadline;
                        }
                    }
                }
            }
        }
        self.advance_start();
        Ok(())
    }

    fn validate_acknowledgements(
        &self,
        member_id: &str,
        batches: &[AcknowledgementBatch],
    ) -> Result<(), ShareError> {
        let mut previous_last: Option<i64> = None;
        for b in batches {
            if b.first_offset > b.last_offset {
                return Err(ShareError::InvalidRequest("first offset above last offset"));
            }
            if previous_last.is_some_and(|p| b.first_offset <= p) {
                return Err(ShareError::InvalidRequest(
                    "acknowledgement batches overlap or are out of order",
                ));
            }
            previous_last = Some(b.last_offset);
            let len = (b.last_offset as i128) - (b.first_offset as i128) + 1;
            if b.types.len() != 1 && b.types.len() as i128 != len {
                return Err(ShareError::InvalidRequest(
                    "acknowledge types must be one, or one per offset",
                ));
            }
        }
        for b in batches {
            let len = (b.last_offset as i128) - (b.first_offset as i128) + 1;
            if b.first_offset < self.start_offset || len > self.window() as i128 {
                return Err(ShareError::InvalidRecordState {
                    offset: b.first_offset,
                });
            }
            // The in-flight offsets of the range must be all of its offsets, each acquired by the member.
            let mut expected = b.first_offset as i128;
            for (offset, r) in self.in_flight.range(b.first_offset..=b.last_offset) {
                let mine = matches!(&r.state, RecordState::Acquired { member_id: m, .. } if m == member_id);
                if *offset as i128 != expected || !mine {
                    return Err(ShareError::InvalidRecordState {
                        offset: (expected as i64).min(*offset),
                    });
                }
                expected += 1;
            }
            if expected != b.last_offset as i128 + 1 {
                return Err(ShareError::InvalidRecordState {
                    offset: expected as i64,
                });
            }
        }
        Ok(())
    }

    /// Releases every record `member_id` holds (its share session closed or it left the group): each goes
    /// Available, or Archived at the delivery count limit. Returns whether anything changed. (`now_ms` is
    /// not used today: a release does not depend on time.)
    pub fn release_member(&mut self, member_id: &str, _now_ms: i64) -> bool {
        let limit = self.config.delivery_count_limit;
        let mut changed = false;
        for r in self.in_flight.values_mut() {
            if matches!(&r.state, RecordState::Acquired { member_id: m, .. } if m == member_id) {
                r.state = released(r.delivery_count, limit);
                changed = true;
            }
        }
        if changed {
            self.advance_start();
        }
        changed
    }

    /// The earliest acquisition-lock deadline (ms since the epoch), if any record is acquired: when to call
    /// [`tick`](Self::tick).
    pub fn next_deadline(&self) -> Option<i64> {
        self.in_flight
            .values()
            .filter_map(|r| match r.state {
                RecordState::Acquired {
                    lock_deadline_ms, ..
                } => Some(lock_deadline_ms),
                _ => None,
            })
            .min()
    }

    /// Expires the acquisition locks whose deadline is at or before `now_ms` (Kafka's acquisition-lock
    /// timeout): each record goes Available, or Archived at the delivery count limit. Returns whether
    /// anything changed.
    pub fn tick(&mut self, now_ms: i64) -> bool {
        let limit = self.config.delivery_count_limit;
        let mut changed = false;
        for r in self.in_flight.values_mut() {
            if matches!(r.state, RecordState::Acquired { lock_deadline_ms, .. } if lock_deadline_ms <= now_ms)
            {
                r.state = released(r.delivery_count, limit);
                changed = true;
            }
        }
        if changed {
            self.advance_start();
        }
        changed
    }

    /// Moves the start offset to `offset` (AlterShareGroupOffsets while the group is empty): in-flight state
    /// below it is dropped (records acquired there are forgotten; their acknowledgements will fail). When
    /// `offset` is outside the window (below the start offset, or at or above the end offset) the window is
    /// cleared and both offsets set to it.
    pub fn reset_start_offset(&mut self, offset: i64) {
        let offset = offset.max(0);
        if offset == self.start_offset {
            return;
        }
        if offset < self.start_offset || offset >= self.end_offset {
            self.in_flight.clear();
            self.start_offset = offset;
            self.end_offset = offset;
        } else {
            self.in_flight = self.in_flight.split_off(&offset);
            self.start_offset = offset;
            self.advance_start();
        }
    }

    /// The log start offset moved to `offset` (retention or DeleteRecords): when it passed the start offset,
    /// the offsets below it are gone and the start offset follows ([`reset_start_offset`]).
    ///
    /// [`reset_start_offset`]: Self::reset_start_offset
    pub fn log_start_offset_moved(&mut self, offset: i64) {
        if offset > self.start_offset {
            self.reset_start_offset(offset);
        }
    }

    /// What to persist (WriteShareGroupState): the state epoch, the start offset, and the in-flight offsets
    /// as batches, consecutive offsets with equal state and count merged. Acquired offsets are written as
    /// Available with their delivery count, so a crash redelivers them.
    pub fn snapshot(&self) -> ShareState {
        let mut batches: Vec<StateBatch> = Vec::new();
        for (offset, r) in &self.in_flight {
            let delivery_state = match r.state {
                RecordState::Available | RecordState::Acquired { .. } => DeliveryState::Available,
                RecordState::Acknowledged => DeliveryState::Acknowledged,
                RecordState::Archived => DeliveryState::Archived,
            };
            match batches.last_mut() {
                Some(b)
                    if b.last_offset + 1 == *offset
                        && b.delivery_state == delivery_state
                        && b.delivery_count == r.delivery_count =>
                {
                    b.last_offset = *offset;
                }
                _ => batches.push(StateBatch {
                    first_offset: *offset,
                    last_offset: *offset,
                    delivery_state,
                    delivery_count: r.delivery_count,
                }),
            }
        }
        ShareState {
            state_epoch: self.state_epoch,
            start_offset: self.start_offset,
            batches,
        }
    }

    /// Drops the leading done offsets and moves the start offset past them and past any gap, to the first
    /// in-flight offset or the end offset.
    fn advance_start(&mut self) {
        while let Some(entry) = self.in_flight.first_entry() {
            if !entry.get().state.is_terminal() {
                break;
            }
            entry.remove();
        }
        self.start_offset = match self.in_flight.first_key_value() {
            Some((o, _)) => *o,
            None => self.end_offset,
        };
    }

    /// Panics when an invariant is broken: every in-flight offset in `[start_offset, end_offset)`, the first
    /// one (if any) not done and equal to the start offset, no Available offset at the delivery count limit,
    /// no delivery count above the limit, and the window no wider than allowed.
    pub fn check_invariants(&self) {
        assert!(
            self.start_offset <= self.end_offset,
            "start {} > end {}",
            self.start_offset,
            self.end_offset
        );
        if let Some((first, r)) = self.in_flight.first_key_value() {
            assert_eq!(
                *first, self.start_offset,
                "start offset is not the first in flight"
            );
            assert!(!r.state.is_terminal(), "start offset {first} is done");
        }
        if let Some((last, _)) = self.in_flight.last_key_value() {
            assert!(
                *last < self.end_offset,
                "in-flight {last} >= end {}",
                self.end_offset
            );
        }
        let limit = self.config.delivery_count_limit;
        for (offset, r) in &self.in_flight {
            assert!(
                r.delivery_count <= limit,
                "offset {offset} delivered {} times",
                r.delivery_count
            );
            assert!(
                !(r.state == RecordState::Available && r.delivery_count >= limit),
                "offset {offset} Available at the delivery count limit"
            );
        }
        assert!(
            self.window() <= self.window_allowance,
            "window {} wider than {}",
            self.window(),
            self.window_allowance
        );
    }
}

/// The state of a released (or expired) record: Available, or Archived at the delivery count limit.
fn released(delivery_count: i16, limit: i16) -> RecordState {
    if delivery_count >= limit {
        RecordState::Archived
    } else {
        RecordState::Available
    }
}

/// Groups `(offset, delivery count)` pairs (ascending) into contiguous ranges of equal count.
fn merge_ranges(taken: &[(i64, i16)]) -> Vec<AcquiredRecords> {
    let mut out: Vec<AcquiredRecords> = Vec::new();
    for &(offset, count) in taken {
        match out.last_mut() {
            Some(r) if r.last_offset + 1 == offset && r.delivery_count == count => {
                r.last_offset = offset
            }
            _ => out.push(AcquiredRecords {
                first_offset: offset,
                last_offset: offset,
                delivery_count: count,
            }),
        }
    }
    out
}

#[cfg(test)]
#[path = "partition_tests.rs"]
mod tests;
