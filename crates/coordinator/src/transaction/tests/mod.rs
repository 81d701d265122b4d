//! Tests of the transaction coordinator: a harness that plays the runtime (acknowledges appends, collects
//! answers and marker requests) with injected time.

mod end;
mod init;
mod loading;
mod metadata;
mod partitions;
mod prop;
mod records;
mod timers;

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;

use types::{ErrorCode, ProducerEpoch, ProducerId};

use super::*;
use crate::api::RequestId;

/// Producer ids 1000, 1001, ...; fails with COORDINATOR_LOAD_IN_PROGRESS while `fail` is set.
#[derive(Clone, Default)]
pub(super) struct Pids {
    next: Arc<AtomicI64>,
    fail: Arc<AtomicBool>,
}

impl ProducerIdSource for Pids {
    fn next_producer_id(&mut self) -> Result<ProducerId, ErrorCode> {
        if self.fail.load(Ordering::SeqCst) {
            return Err(ErrorCode::COORDINATOR_LOAD_IN_PROGRESS);
        }
        Ok(ProducerId(1000 + self.next.fetch_add(1, Ordering::SeqCst)))
    }
}

/// What one call produced once every append was acknowledged.
#[derive(Debug, Default)]
pub(super) struct Settled {
    pub responses: Vec<(RequestId, TxnResult)>,
    pub markers: Vec<TxnMarkers>,
    pub records: Vec<TransactionLogRecord>,
}

impl Settled {
    /// The only response.
    pub fn response(&self) -> TxnResult {
        assert_eq!(self.responses.len(), 1, "{self:?}");
        self.responses[0].1
    }
}

pub(super) struct H {
    pub c: TransactionCoordinator,
    pub pids: Pids,
    pub now: i64,
    next_request: RequestId,
}

pub(super) const T0: i64 = 1_000_000;
pub(super) const TV1: TransactionVersion = TransactionVersion::TV_1;
pub(super) const TV2: TransactionVersion = TransactionVersion::TV_2;
pub(super) const COMMIT: TransactionResult = TransactionResult::Commit;
pub(super) const ABORT: TransactionResult = TransactionResult::Abort;

pub(super) fn tp(topic: &str, partition: i32) -> TopicPartition {
    TopicPartition::new(topic, partition)
}

impl H {
    /// A coordinator owning every partition at coordinator epoch 7, loaded, at `T0`.
    pub fn new(config: TransactionConfig) -> Self {
        let pids = Pids::default();
        let n = config.transaction_topic_num_partitions;
        let mut c = TransactionCoordinator::new(config, Box::new(pids.clone()));
        for p in 0..n {
            assert!(c.load_partition(p, 7).is_empty());
            assert!(c.loaded(p, T0).is_empty());
        }
        H {
            c,
            pids,
            now: T0,
            next_request: 1,
        }
    }

    /// Default config at cluster level TV2.
    pub fn tv2() -> Self {
        Self::new(TransactionConfig::default())
    }

    /// Default config at cluster level TV1 (coordinator-initiated aborts keep the fenced epoch).
    pub fn tv1() -> Self {
        Self::new(TransactionConfig {
            transaction_version: TV1,
            ..TransactionConfig::default()
        })
    }

    pub fn request(&mut self) -> RequestId {
        self.next_request += 1;
        self.next_request
    }

    /// Acknowledges every append (NONE) until none is left.
    pub fn settle(&mut self, mut fx: Vec<TxnEffect>) -> Settled {
        let mut out = Settled::default();
        while !fx.is_empty() {
            let mut next = Vec::new();
            for e in fx {
                match e {
                    TxnEffect::Append { append, record, .. } => {
                        out.records.push(record);
                        next.extend(self.c.append_completed(append, ErrorCode::NONE, self.now));
                    }
                    TxnEffect::Respond { request, response } => {
                        out.responses.push((request, response))
                    }
                    TxnEffect::WriteMarkers(m) => out.markers.push(m),
                }
            }
            fx = next;
        }
        out
    }

    pub fn init_fx(
        &mut self,
        id: &str,
        expected: Option<(ProducerId, ProducerEpoch)>,
    ) -> Vec<TxnEffect> {
        let r = self.request();
        self.c
            .init_producer_id(r, Some(id), 60_000, expected, self.now)
    }

    pub fn init(&mut self, id: &str, expected: Option<(ProducerId, ProducerEpoch)>) -> Settled {
        let fx = self.init_fx(id, expected);
        self.settle(fx)
    }

    /// InitProducerId that must succeed; returns (pid, epoch).
    pub fn init_ok(&mut self, id: &str) -> (ProducerId, ProducerEpoch) {
        let r = self.init(id, None).response();
        assert_eq!(r.error_code, ErrorCode::NONE, "{r:?}");
        (r.producer_id, r.producer_epoch)
    }

    pub fn add_fx(
        &mut self,
        id: &str,
        (pid, epoch): (ProducerId, ProducerEpoch),
        parts: &[TopicPartition],
        tv: TransactionVersion,
    ) -> Vec<TxnEffect> {
        let r = self.request();
        self.c
            .add_partitions_to_txn(r, id, pid, epoch, parts, tv, self.now)
    }

    pub fn add(
        &mut self,
        id: &str,
        pe: (ProducerId, ProducerEpoch),
        parts: &[TopicPartition],
        tv: TransactionVersion,
    ) -> ErrorCode {
        let fx = self.add_fx(id, pe, parts, tv);
        self.settle(fx).response().error_code
    }

    pub fn end_fx(
        &mut self,
        id: &str,
        (pid, epoch): (ProducerId, ProducerEpoch),
        result: TransactionResult,
        tv: TransactionVersion,
    ) -> Vec<TxnEffect> {
        let r = self.request();
        self.c.end_txn(r, id, pid, epoch, result, tv, self.now)
    }

    pub fn end(
        &mut self,
        id: &str,
        pe: (ProducerId, ProducerEpoch),
        result: TransactionResult,
        tv: TransactionVersion,
    ) -> Settled {
        let fx = self.end_fx(id, pe, result, tv);
        self.settle(fx)
    }

    /// Reports the markers of `id` written and settles the completion.
    pub fn markers_done(&mut self, id: &str) -> Settled {
        let fx = self.c.markers_written(id, 7, self.now);
        self.settle(fx)
    }

    pub fn md(&self, id: &str) -> &TransactionMetadata {
        self.c.metadata(id).expect("metadata")
    }

    pub fn state(&self, id: &str) -> TransactionState {
        self.md(id).state
    }

    pub fn pe(&self, id: &str) -> (ProducerId, ProducerEpoch) {
        let md = self.md(id);
        (md.producer_id, md.producer_epoch)
    }

    /// Puts `id` in state Ongoing with partition t-0 under `tv`; returns its (pid, epoch).
    pub fn ongoing(&mut self, id: &str, tv: TransactionVersion) -> (ProducerId, ProducerEpoch) {
        let pe = self.init_ok(id);
        assert_eq!(self.add(id, pe, &[tp("t", 0)], tv), ErrorCode::NONE);
        assert_eq!(self.state(id), TransactionState::Ongoing);
        pe
    }

    /// Replays `value` for `id` into its partition (reloading that partition, at coordinator epoch 7).
    pub fn reload_with(&mut self, id: &str, value: TransactionLogValue) -> Vec<TxnEffect> {
        let p = self.c.partition_for(id);
        self.c.load_partition(p, 7);
        self.c.replay(
            p,
            TransactionLogRecord {
                transactional_id: id.to_string(),
                value: Some(value),
            },
        );
        self.c.loaded(p, self.now)
    }
}

/// A stored value in `state` for producer `pid` at `epoch` (TV2 client, timeout 60 s, started at T0).
pub(super) fn value(
    state: TransactionState,
    pid: i64,
    epoch: i16,
    parts: &[TopicPartition],
) -> TransactionLogValue {
    TransactionLogValue {
        version: 1,
        producer_id: ProducerId(pid),
        previous_producer_id: ProducerId::NONE,
        next_producer_id: ProducerId::NONE,
        producer_epoch: ProducerEpoch(epoch),
        transaction_timeout_ms: 60_000,
        state,
        partitions: parts.iter().cloned().collect(),
        last_update_timestamp_ms: T0,
        start_timestamp_ms: if parts.is_empty() { -1 } else { T0 },
        client_transaction_version: TV2,
    }
}
