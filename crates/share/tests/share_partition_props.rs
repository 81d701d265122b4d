//! Property test of `SharePartition`: random acquire / acknowledge / release / lock expiry / log-start moves /
//! reload sequences by several members, checked against a model after every step. A reload goes either
//! straight from `snapshot()` or through the `ShareCoordinator` (WriteShareGroupState merged over what it
//! stored, the records encoded, replayed by a fresh coordinator, ReadShareGroupState by the next leader). A failing case is shrunk and its
//! seed kept in `proptest-regressions/share_partition_props.txt`, replayed first on every later run.
//!
//! Checked: no offset is ever acquired by two members at once; an acknowledged or archived offset is never
//! acquired again, not even after a reload; delivery counts go up by one per acquisition
//! and survive reloads; `check_invariants()` holds; and, at the end, members that accept everything drain
//! the log: every record offset ends below the start offset.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use bytes::Bytes;
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use share::{
    encode_record, AcknowledgeType, AcknowledgementBatch, RecordState, ShareCoordinator,
    SharePartition, SharePartitionConfig, SharePartitionKey, ShareState, WriteRequest,
};
use uuid::Uuid;

const LOG_END: i64 = 48;
const MEMBERS: usize = 3;
const CONFIG: SharePartitionConfig = SharePartitionConfig {
    record_lock_duration_ms: 30_000,
    delivery_count_limit: 3,
    max_in_flight_records: 16,
};

/// The log: batches of 3 records at `[4k, 4k + 2]`; offset `4k + 3` holds no record (a gap).
fn log_batches(from: i64, max_batches: usize) -> Vec<(i64, i64)> {
    let mut k = from / 4 + i64::from(from % 4 == 3);
    let mut out = Vec::new();
    while out.len() < max_batches && 4 * k < LOG_END {
        out.push((4 * k, 4 * k + 2));
        k += 1;
    }
    out
}

fn is_record(offset: i64) -> bool {
    offset % 4 != 3 && (0..LOG_END).contains(&offset)
}

#[derive(Clone, Debug)]
enum Op {
    Fetch {
        member: usize,
        max_records: usize,
        strict: bool,
        batches: usize,
    },
    Ack {
        member: usize,
        pick: usize,
        len: usize,
        kind: i8,
    },
    AckOther {
        member: usize,
        offset: i64,
    },
    Release {
        member: usize,
    },
    Advance {
        ms: i64,
    },
    /// Reload from `snapshot()` directly.
    Reload,
    /// Persist through the share coordinator (WriteShareGroupState, the record encoded and replayed by a
    /// fresh coordinator from the whole log), then load from its ReadShareGroupState as a new leader.
    ReloadViaCoordinator,
    /// The log start offset moves `by` past the start offset: the offsets below it are gone.
    LogStartMoved {
        by: i64,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..MEMBERS, 1..10usize, any::<bool>(), 1..4usize).prop_map(|(member, max_records, strict, batches)| {
            Op::Fetch { member, max_records, strict, batches }
        }),
        4 => (0..MEMBERS, 0..8usize, 1..5usize, 0..5i8)
            .prop_map(|(member, pick, len, kind)| Op::Ack { member, pick, len, kind }),
        1 => (0..MEMBERS, 0..LOG_END).prop_map(|(member, offset)| Op::AckOther { member, offset }),
        1 => (0..MEMBERS).prop_map(|member| Op::Release { member }),
        2 => (0..40_000i64).prop_map(|ms| Op::Advance { ms }),
        1 => Just(Op::Reload),
        1 => Just(Op::ReloadViaCoordinator),
        1 => (1..6i64).prop_map(|by| Op::LogStartMoved { by }),
    ]
}

/// What the partition should hold.
struct Model {
    sp: SharePartition,
    now: i64,
    /// Offset → (member, lock deadline).
    held: BTreeMap<i64, (usize, i64)>,
    counts: HashMap<i64, i16>,
    /// Offsets acknowledged, archived, or gone with the log start.
    done: BTreeSet<i64>,
    /// The `__share_group_state` records written so far, and the leader epoch of the current leader.
    log: Vec<(Bytes, Option<Bytes>)>,
    leader_epoch: i32,
}

fn member_id(m: usize) -> String {
    format!("member-{m}")
}

impl Model {
    fn new() -> Model {
        Model {
            sp: SharePartition::new(ShareState::initial(0), CONFIG),
            now: 1_000,
            held: BTreeMap::new(),
            counts: HashMap::new(),
            done: BTreeSet::new(),
            log: Vec::new(),
            leader_epoch: 0,
        }
    }

    fn key() -> SharePartitionKey {
        SharePartitionKey::new("group", Uuid::from_u128(7), 0)
    }

    /// Writes the snapshot through a coordinator rebuilt from the log, reads it back as the next leader.
    fn reload_via_coordinator(&mut self) {
        let mut coordinator = ShareCoordinator::new(3);
        for (k, v) in &self.log {
            coordinator.replay(k, v.as_deref()).unwrap();
        }
        if self.log.is_empty() {
            let record = coordinator
                .initialize(&Self::key(), 0, 0, self.now)
                .unwrap();
            self.log.push(encode_record(&record));
            let (_, record) = coordinator.read(&Self::key(), 0, self.now).unwrap();
            self.log.extend(record.map(|r| encode_record(&r)));
        }
        let snap = self.sp.snapshot();
        let request = WriteRequest {
            state_epoch: snap.state_epoch,
            leader_epoch: self.leader_epoch,
            start_offset: snap.start_offset,
            delivery_complete_count: self.sp.delivery_complete_count() as i32,
            batches: snap.batches,
        };
        let record = coordinator.write(&Self::key(), &request, self.now).unwrap();
        self.log.push(encode_record(&record));
        let mut reloaded = ShareCoordinator::new(3);
        for (k, v) in &self.log {
            reloaded.replay(k, v.as_deref()).unwrap();
        }
        self.leader_epoch += 1;
        let (state, record) = reloaded
            .read(&Self::key(), self.leader_epoch, self.now)
            .unwrap();
        self.log.extend(record.map(|r| encode_record(&r)));
        self.sp = SharePartition::new(state, CONFIG);
    }

    /// A released or expired offset: done at the delivery count limit.
    fn release(&mut self, offset: i64) {
        self.held.remove(&offset);
        if self.counts[&offset] >= CONFIG.delivery_count_limit {
            self.done.insert(offset);
        }
    }

    fn fetch(
        &mut self,
        member: usize,
        max_records: usize,
        strict: bool,
        batches: usize,
    ) -> Vec<i64> {
        let Some(from) = self.sp.next_fetch_offset() else {
            return Vec::new();
        };
        let read = log_batches(from, batches);
        let got = self
            .sp
            .acquire(&member_id(member), &read, max_records, strict, self.now);
        let mut offsets = Vec::new();
        let mut total = 0;
        for r in &got {
            assert!(r.first_offset <= r.last_offset);
            for o in r.first_offset..=r.last_offset {
                total += 1;
                assert!(is_record(o), "acquired {o}, which holds no record");
                assert!(!self.done.contains(&o), "acquired {o}, which is done");
                assert!(
                    !self.held.contains_key(&o),
                    "acquired {o}, held by {:?}",
                    self.held[&o]
                );
                let count = self.counts.entry(o).or_insert(0);
                assert_eq!(r.delivery_count, *count + 1, "delivery count of {o}");
                assert!(r.delivery_count <= CONFIG.delivery_count_limit);
                *count += 1;
                self.held
                    .insert(o, (member, self.now + CONFIG.record_lock_duration_ms));
                offsets.push(o);
            }
        }
        if strict {
            assert!(total <= max_records);
        }
        offsets
    }

    fn ack(&mut self, member: usize, first: i64, last: i64, kind: AcknowledgeType) {
        let batch = AcknowledgementBatch {
            first_offset: first,
            last_offset: last,
            types: vec![kind],
        };
        self.sp
            .acknowledge(&member_id(member), &[batch], self.now)
            .unwrap();
        for o in first..=last {
            match kind {
                AcknowledgeType::Accept | AcknowledgeType::Reject | AcknowledgeType::Gap => {
                    self.held.remove(&o);
                    self.done.insert(o);
                }
                AcknowledgeType::Release => self.release(o),
                AcknowledgeType::Renew => {
                    self.held
                        .insert(o, (member, self.now + CONFIG.record_lock_duration_ms));
                }
            }
        }
    }

    /// A run of contiguous offsets held by `member`: the `pick`-th one it holds and up to `len - 1` after.
    fn held_run(&self, member: usize, pick: usize, len: usize) -> Option<(i64, i64)> {
        let mine: Vec<i64> = self
            .held
            .iter()
            .filter(|(_, h)| h.0 == member)
            .map(|(o, _)| *o)
            .collect();
        let first = *mine.get(pick % mine.len().max(1))?;
        let mut last = first;
        while last - first + 1 < len as i64 && mine.contains(&(last + 1)) {
            last += 1;
        }
        Some((first, last))
    }

    fn step(&mut self, op: &Op) {
        match *op {
            Op::Fetch {
                member,
                max_records,
                strict,
                batches,
            } => {
                self.fetch(member, max_records, strict, batches);
            }
            Op::Ack {
                member,
                pick,
                len,
                kind,
            } => {
                if let Some((first, last)) = self.held_run(member, pick, len) {
                    self.ack(member, first, last, AcknowledgeType::from_id(kind).unwrap());
                }
            }
            Op::AckOther { member, offset } => {
                if self.held.get(&offset).is_some_and(|h| h.0 == member) {
                    return;
                }
                let before = self.sp.snapshot();
                let batch = AcknowledgementBatch {
                    first_offset: offset,
                    last_offset: offset,
                    types: vec![AcknowledgeType::Accept],
                };
                let err = self
                    .sp
                    .acknowledge(&member_id(member), &[batch], self.now)
                    .unwrap_err();
                assert_eq!(err.code(), 121);
                assert_eq!(self.sp.snapshot(), before);
            }
            Op::Release { member } => {
                let mine: Vec<i64> = self
                    .held
                    .iter()
                    .filter(|(_, h)| h.0 == member)
                    .map(|(o, _)| *o)
                    .collect();
                assert_eq!(
                    self.sp.release_member(&member_id(member), self.now),
                    !mine.is_empty()
                );
                mine.into_iter().for_each(|o| self.release(o));
            }
            Op::Advance { ms } => {
                self.now += ms;
                let expired: Vec<i64> = self
                    .held
                    .iter()
                    .filter(|(_, h)| h.1 <= self.now)
                    .map(|(o, _)| *o)
                    .collect();
                assert_eq!(self.sp.tick(self.now), !expired.is_empty());
                expired.into_iter().for_each(|o| self.release(o));
            }
            Op::Reload | Op::ReloadViaCoordinator => {
                if matches!(op, Op::Reload) {
                    self.sp = SharePartition::new(self.sp.snapshot(), CONFIG);
                } else {
                    self.reload_via_coordinator();
                }
                let held: Vec<i64> = self.held.keys().copied().collect();
                held.into_iter().for_each(|o| self.release(o));
            }
            Op::LogStartMoved { by } => {
                let to = self.sp.start_offset() + by;
                self.sp.log_start_offset_moved(to);
                self.held.retain(|o, _| *o >= to);
                self.done.extend(0..to);
            }
        }
    }

    fn check(&self) {
        self.sp.check_invariants();
        assert_eq!(
            self.sp.next_deadline(),
            self.held.values().map(|h| h.1).min()
        );
        for o in &self.done {
            let terminal = self.sp.record(*o).is_some_and(|r| r.state.is_terminal());
            assert!(
                *o < self.sp.start_offset() || terminal,
                "done offset {o} is live again"
            );
        }
        for o in 0..LOG_END {
            let holder = match self.sp.record(o).map(|r| &r.state) {
                Some(RecordState::Acquired {
                    member_id: m,
                    lock_deadline_ms,
                }) => Some((m.clone(), *lock_deadline_ms)),
                _ => None,
            };
            let want = self.held.get(&o).map(|(m, d)| (member_id(*m), *d));
            assert_eq!(holder, want, "holder of {o}");
            if let Some(r) = self.sp.record(o) {
                assert_eq!(
                    Some(&r.delivery_count),
                    self.counts.get(&o).or(Some(&0)),
                    "count of {o}"
                );
            }
        }
    }

    /// Member 0 accepts everything until the log is drained; locks of the others expire.
    fn drain(&mut self) {
        for _ in 0..(4 * LOG_END) {
            self.now += CONFIG.record_lock_duration_ms;
            let expired: Vec<i64> = self
                .held
                .iter()
                .filter(|(_, h)| h.1 <= self.now)
                .map(|(o, _)| *o)
                .collect();
            self.sp.tick(self.now);
            expired.into_iter().for_each(|o| self.release(o));
            let got = self.fetch(0, 100, false, 8);
            for o in got {
                self.ack(0, o, o, AcknowledgeType::Accept);
            }
            self.check();
        }
        assert!(
            self.sp.start_offset() >= LOG_END - 1,
            "start offset {} not drained",
            self.sp.start_offset()
        );
        for o in (0..LOG_END).filter(|o| is_record(*o)) {
            assert!(
                self.done.contains(&o),
                "offset {o} neither acknowledged nor archived"
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 400,
        // Relative to the crate directory, where `cargo test` runs the test.
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "proptest-regressions/share_partition_props.txt",
        ))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn share_partition_matches_its_model(ops in proptest::collection::vec(op(), 1..80)) {
        let mut m = Model::new();
        for op in &ops {
            m.step(op);
            m.check();
        }
        m.drain();
    }
}
