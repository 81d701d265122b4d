//! Random operation sequences: every observed state change must be in Kafka's transition table
//! (`TransactionState.validPreviousStates`), and no request may hit a coordinator bug (UNKNOWN_SERVER_ERROR).

use std::collections::{BTreeMap, VecDeque};

use proptest::prelude::*;
use types::{ErrorCode, ProducerEpoch};

use super::*;
use crate::api::RequestId;

#[derive(Clone, Debug)]
enum Op {
    Init {
        id: u8,
        expected: bool,
    },
    Add {
        id: u8,
        partition: u8,
        tv2: bool,
    },
    End {
        id: u8,
        commit: bool,
        tv2: bool,
        epoch_delta: i8,
    },
    Markers {
        id: u8,
    },
    /// Complete the oldest append in flight, successfully or not.
    Complete {
        ok: bool,
    },
    Advance {
        ms: u32,
    },
}

fn op() -> impl Strategy<Value = Op> {
    let delta = prop_oneof![3 => Just(0i8), 1 => -1..=1i8];
    prop_oneof![
        2 => (0..3u8, any::<bool>()).prop_map(|(id, expected)| Op::Init { id, expected }),
        2 => (0..3u8, 0..3u8, any::<bool>()).prop_map(|(id, partition, tv2)| Op::Add { id, partition, tv2 }),
        2 => (0..3u8, any::<bool>(), any::<bool>(), delta)
            .prop_map(|(id, commit, tv2, epoch_delta)| Op::End { id, commit, tv2, epoch_delta }),
        2 => (0..3u8).prop_map(|id| Op::Markers { id }),
        4 => prop_oneof![4 => Just(true), 1 => Just(false)].prop_map(|ok| Op::Complete { ok }),
        1 => (0..200_000u32).prop_map(|ms| Op::Advance { ms }),
    ]
}

struct World {
    h: H,
    appends: VecDeque<AppendId>,
    /// Records of the appends in flight.
    records: BTreeMap<AppendId, TransactionLogRecord>,
    /// Records acknowledged as written, in order: the partition logs.
    log: Vec<TransactionLogRecord>,
    /// Answers per request id.
    answers: BTreeMap<RequestId, usize>,
}

impl World {
    fn snapshot(&self) -> BTreeMap<String, TransactionState> {
        (0..3)
            .filter_map(|i| {
                let id = format!("t{i}");
                self.h.c.metadata(&id).map(|md| (id, md.state))
            })
            .collect()
    }

    fn absorb(&mut self, fx: Vec<TxnEffect>) {
        for e in fx {
            match e {
                TxnEffect::Append { append, record, .. } => {
                    self.appends.push_back(append);
                    self.records.insert(append, record);
                }
                TxnEffect::Respond { request, response } => {
                    assert_ne!(response.error_code, ErrorCode::UNKNOWN_SERVER_ERROR);
                    let n = self.answers.entry(request).or_default();
                    *n += 1;
                    assert_eq!(*n, 1, "request {request} answered twice");
                }
                TxnEffect::WriteMarkers(_) => {}
            }
        }
    }

    fn current(&self, id: &str) -> (types::ProducerId, ProducerEpoch) {
        self.h
            .c
            .metadata(id)
            // A client never holds epoch -1 (metadata whose first InitProducerId failed to be written).
            .map(|md| (md.producer_id, ProducerEpoch(md.producer_epoch.0.max(0))))
            .unwrap_or((types::ProducerId(1), ProducerEpoch(0)))
    }

    fn apply(&mut self, op: &Op) {
        let now = self.h.now;
        let tv = |tv2: bool| if tv2 { TV2 } else { TV1 };
        let fx = match *op {
            Op::Init { id, expected } => {
                let id = format!("t{id}");
                let exp = expected.then(|| self.current(&id));
                self.h.init_fx(&id, exp)
            }
            Op::Add { id, partition, tv2 } => {
                let id = format!("t{id}");
                let pe = self.current(&id);
                self.h
                    .add_fx(&id, pe, &[tp("p", i32::from(partition))], tv(tv2))
            }
            Op::End {
                id,
                commit,
                tv2,
                epoch_delta,
            } => {
                let id = format!("t{id}");
                let (pid, e) = self.current(&id);
                let e = ProducerEpoch(e.0.saturating_add(i16::from(epoch_delta)));
                let result = if commit { COMMIT } else { ABORT };
                self.h.end_fx(&id, (pid, e), result, tv(tv2))
            }
            Op::Markers { id } => self.h.c.markers_written(&format!("t{id}"), 7, now),
            Op::Complete { ok } => match self.appends.pop_front() {
                None => Vec::new(),
                Some(a) => {
                    let err = if ok {
                        ErrorCode::NONE
                    } else {
                        ErrorCode::NOT_ENOUGH_REPLICAS
                    };
                    let record = self.records.remove(&a).expect("record");
                    if ok {
                        self.log.push(record);
                    }
                    self.h.c.append_completed(a, err, now)
                }
            },
            Op::Advance { ms } => {
                self.h.now += i64::from(ms);
                self.h.c.tick(self.h.now)
            }
        };
        self.absorb(fx);
    }
}

impl World {
    fn new() -> Self {
        let config = TransactionConfig {
            transactional_id_expiration_ms: 300_000,
            remove_expired_transactional_ids_interval_ms: 100_000,
            ..TransactionConfig::default()
        };
        World {
            h: H::new(config),
            appends: VecDeque::new(),
            records: BTreeMap::new(),
            log: Vec::new(),
            answers: BTreeMap::new(),
        }
    }

    /// Writes every append and every marker until nothing is in flight.
    fn quiesce(&mut self) {
        for _ in 0..100 {
            if self.appends.is_empty() {
                let mut any = false;
                for i in 0..3 {
                    let fx = self.h.c.markers_written(&format!("t{i}"), 7, self.h.now);
                    any |= !fx.is_empty();
                    self.absorb(fx);
                }
                if !any {
                    return;
                }
            }
            while !self.appends.is_empty() {
                self.apply(&Op::Complete { ok: true });
            }
        }
        panic!("did not quiesce");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]
    #[test]
    fn transitions_follow_the_table(ops in proptest::collection::vec(op(), 1..80)) {
        let mut w = World::new();
        for op in &ops {
            let before = w.snapshot();
            w.apply(op);
            let after = w.snapshot();
            for (id, to) in &after {
                if let Some(from) = before.get(id) {
                    prop_assert!(
                        from == to || to.can_transition_from(*from),
                        "{id}: {from} -> {to} after {op:?}"
                    );
                }
                let md = w.h.c.metadata(id).unwrap();
                prop_assert!(md.state != TransactionState::Empty || md.partitions.is_empty());
                prop_assert!(md.state != TransactionState::PrepareEpochFence);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    /// Kafka's load: replaying the records written rebuilds the cached state (`lastProducerEpoch` is not
    /// stored; metadata whose first InitProducerId was never written exists only in memory).
    #[test]
    fn replaying_the_written_records_rebuilds_the_state(ops in proptest::collection::vec(op(), 1..80)) {
        let mut w = World::new();
        for op in &ops {
            w.apply(op);
        }
        w.quiesce();
        // Every request was answered exactly once (`request()` hands out 2, 3, ...).
        let issued: Vec<RequestId> = (2..=w.h.next_request).collect();
        prop_assert_eq!(w.answers.keys().copied().collect::<Vec<_>>(), issued);
        let config = w.h.c.config().clone();
        let mut c = TransactionCoordinator::new(config.clone(), Box::new(Pids::default()));
        for p in 0..config.transaction_topic_num_partitions {
            c.load_partition(p, 7);
        }
        for r in &w.log {
            let (k, v) = encode_transaction_record(r);
            let decoded = decode_transaction_record(&k, v.as_deref()).unwrap();
            c.replay(c.partition_for(&r.transactional_id), decoded);
        }
        for p in 0..config.transaction_topic_num_partitions {
            prop_assert!(c.loaded(p, w.h.now).is_empty());
        }
        for i in 0..3 {
            let id = format!("t{i}");
            match (w.h.c.metadata(&id), c.metadata(&id)) {
                (None, None) => {}
                (Some(live), None) => prop_assert!(live.producer_epoch.is_none(), "{id}: {live:?}"),
                (live, Some(replayed)) => {
                    let mut live = live.cloned().expect("replayed but not live");
                    prop_assert_eq!(live.pending_state, None);
                    live.last_producer_epoch = ProducerEpoch::NONE;
                    prop_assert_eq!(&live, replayed);
                }
            }
        }
    }
}
