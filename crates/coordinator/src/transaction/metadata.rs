//! [`TransactionState`] with Kafka's legal-transition table, [`TransactionMetadata`] (one transactional id's
//! state) and [`TxnTransitMetadata`] (a prepared, not yet persisted transition).
//!
//! A transition is *prepared* (`prepare_*`: checks the transition table, records the target as the pending
//! state and returns the new values), persisted by the runtime (an append to `__transaction_state`), and then
//! *completed* ([`TransactionMetadata::complete_transition`]) — or *rolled back*
//! ([`TransactionMetadata::abort_pending`]) when the append failed.
//!
//! Source: Kafka's `TransactionState`, `TransactionMetadata` and `TxnTransitMetadata`
//! (`transaction-coordinator` module), KIP-98, KIP-360 (epoch bumps on InitProducerId), KIP-890 part 2
//! (TV2: epoch bump on every EndTxn).

use std::collections::BTreeSet;
use std::fmt;

pub use types::TopicPartition;
use types::{ProducerEpoch, ProducerId};

/// The state of a transactional id's transaction (Kafka's `TransactionState`). Ids are the
/// `TransactionStatus` byte of the `__transaction_state` record value; names are what DescribeTransactions
/// and ListTransactions report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TransactionState {
    /// No transaction in progress (id 0). Expirable.
    Empty,
    /// Partitions were added; the transaction is open (id 1).
    Ongoing,
    /// EndTxn(commit) persisted; markers being written (id 2).
    PrepareCommit,
    /// EndTxn(abort), a timeout or a fence persisted; markers being written (id 3).
    PrepareAbort,
    /// Commit markers written (id 4). Expirable.
    CompleteCommit,
    /// Abort markers written (id 5). Expirable.
    CompleteAbort,
    /// The transactional id is being expired (id 6): only a tombstone follows.
    Dead,
    /// In-memory only: an ongoing transaction is being fenced by a newer producer (id 7); never persisted.
    PrepareEpochFence,
}

impl TransactionState {
    /// Every state, in id order.
    pub const ALL: [TransactionState; 8] = [
        TransactionState::Empty,
        TransactionState::Ongoing,
        TransactionState::PrepareCommit,
        TransactionState::PrepareAbort,
        TransactionState::CompleteCommit,
        TransactionState::CompleteAbort,
        TransactionState::Dead,
        TransactionState::PrepareEpochFence,
    ];

    /// Kafka's state id (the record's `TransactionStatus`).
    pub const fn id(self) -> i8 {
        match self {
            TransactionState::Empty => 0,
            TransactionState::Ongoing => 1,
            TransactionState::PrepareCommit => 2,
            TransactionState::PrepareAbort => 3,
            TransactionState::CompleteCommit => 4,
            TransactionState::CompleteAbort => 5,
            TransactionState::Dead => 6,
            TransactionState::PrepareEpochFence => 7,
        }
    }

    /// The state with Kafka id `id`, `None` for an unknown id.
    pub fn from_id(id: i8) -> Option<TransactionState> {
        Self::ALL.into_iter().find(|s| s.id() == id)
    }

    /// Kafka's name ("Empty", "Ongoing", "PrepareCommit", ...).
    pub const fn name(self) -> &'static str {
        match self {
            TransactionState::Empty => "Empty",
            TransactionState::Ongoing => "Ongoing",
            TransactionState::PrepareCommit => "PrepareCommit",
            TransactionState::PrepareAbort => "PrepareAbort",
            TransactionState::CompleteCommit => "CompleteCommit",
            TransactionState::CompleteAbort => "CompleteAbort",
            TransactionState::Dead => "Dead",
            TransactionState::PrepareEpochFence => "PrepareEpochFence",
        }
    }

    /// The state named `name` (case-sensitive, as Kafka's `fromName`).
    pub fn from_name(name: &str) -> Option<TransactionState> {
        Self::ALL.into_iter().find(|s| s.name() == name)
    }

    /// Kafka's `validPreviousStates`: the states from which a transition into `self` is legal.
    pub const fn valid_previous_states(self) -> &'static [TransactionState] {
        use TransactionState::*;
        match self {
            Empty => &[Empty, CompleteCommit, CompleteAbort],
            Ongoing => &[Ongoing, Empty, CompleteCommit, CompleteAbort],
            PrepareCommit => &[Ongoing],
            // TV2 (KIP-890) lets Empty/CompleteCommit/CompleteAbort abort: the client may not know the state.
            PrepareAbort => &[
                Ongoing,
                PrepareEpochFence,
                Empty,
                CompleteCommit,
                CompleteAbort,
            ],
            CompleteCommit => &[PrepareCommit],
            CompleteAbort => &[PrepareAbort],
            Dead => &[Empty, CompleteAbort, CompleteCommit],
            PrepareEpochFence => &[Ongoing],
        }
    }

    /// True if moving from `from` to `self` is in the transition table.
    pub fn can_transition_from(self, from: TransactionState) -> bool {
        self.valid_previous_states().contains(&from)
    }

    /// Whether an idle transactional id in this state may be expired (`transactional.id.expiration.ms`).
    pub const fn is_expiration_allowed(self) -> bool {
        matches!(
            self,
            TransactionState::Empty
                | TransactionState::CompleteCommit
                | TransactionState::CompleteAbort
        )
    }
}

impl fmt::Display for TransactionState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The transaction protocol version a client (or the cluster, for coordinator-initiated aborts) speaks:
/// the `transaction.version` feature level. TV0/TV1: classic transactions (KIP-98); TV2 (KIP-890 part 2):
/// the coordinator bumps the producer epoch on every EndTxn and the record value is flexible (v1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TransactionVersion(pub i16);

impl TransactionVersion {
    /// Feature level 0: non-flexible records (value v0), no epoch bump on end.
    pub const TV_0: TransactionVersion = TransactionVersion(0);
    /// Feature level 1: flexible records (value v1), no epoch bump on end.
    pub const TV_1: TransactionVersion = TransactionVersion(1);
    /// Feature level 2 (KIP-890 part 2): epoch bump on every EndTxn.
    pub const TV_2: TransactionVersion = TransactionVersion(2);

    /// Kafka's `supportsEpochBump`: level >= 2.
    pub const fn supports_epoch_bump(self) -> bool {
        self.0 >= 2
    }

    /// Kafka's `transactionLogValueVersion`: the `TransactionLogValue` version written at this cluster
    /// level — 1 (flexible) from level 1, else 0.
    pub const fn log_value_version(self) -> i16 {
        if self.0 >= 1 {
            1
        } else {
            0
        }
    }
}

/// Kafka's `TransactionMetadata.isEpochExhausted`: the coordinator keeps `i16::MAX` for itself so that it can
/// always fence, so an epoch of `i16::MAX - 1` or more is exhausted.
pub const fn is_epoch_exhausted(epoch: ProducerEpoch) -> bool {
    epoch.0 >= i16::MAX - 1
}

/// A prepared transition: the values the transactional id will have once the record is written (Kafka's
/// `TxnTransitMetadata`). This is also what the `__transaction_state` value stores.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxnTransitMetadata {
    /// Producer id after the transition.
    pub producer_id: ProducerId,
    /// Producer id before the transition (Kafka's `prevProducerId`: the current id when it was prepared).
    pub prev_producer_id: ProducerId,
    /// TV2 only: the producer id the next completion switches to (epoch exhausted), else -1.
    pub next_producer_id: ProducerId,
    /// Producer epoch after the transition.
    pub producer_epoch: ProducerEpoch,
    /// The epoch a retrying producer may still present (KIP-360), -1 when none. Not persisted.
    pub last_producer_epoch: ProducerEpoch,
    /// Transaction timeout, ms.
    pub txn_timeout_ms: i32,
    /// Target state.
    pub state: TransactionState,
    /// Partitions of the transaction after the transition.
    pub partitions: BTreeSet<TopicPartition>,
    /// Transaction start, ms since the epoch (-1 when none).
    pub txn_start_timestamp: i64,
    /// Last update, ms since the epoch.
    pub txn_last_update_timestamp: i64,
    /// The client's transaction version.
    pub client_transaction_version: TransactionVersion,
}

/// A transition the table forbids, or a prepare while another transition is pending: a coordinator bug
/// (Kafka throws `IllegalStateException`; clients see UNKNOWN_SERVER_ERROR).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("illegal transaction transition from {from} (pending {pending:?}) to {to}")]
pub struct IllegalTransition {
    /// The current state.
    pub from: TransactionState,
    /// The pending state, if any.
    pub pending: Option<TransactionState>,
    /// The requested state.
    pub to: TransactionState,
}

/// One transactional id's state as the coordinator caches it (Kafka's `TransactionMetadata`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TransactionMetadata {
    /// The transactional id.
    pub transactional_id: String,
    /// Current producer id.
    pub producer_id: ProducerId,
    /// Producer id before the last transition (-1 when none).
    pub prev_producer_id: ProducerId,
    /// TV2: producer id to switch to at the next completion (-1 when none).
    pub next_producer_id: ProducerId,
    /// Current producer epoch (-1 for metadata just created).
    pub producer_epoch: ProducerEpoch,
    /// Epoch before the last InitProducerId bump, for KIP-360 retries; -1 when none (not persisted).
    pub last_producer_epoch: ProducerEpoch,
    /// Transaction timeout, ms.
    pub txn_timeout_ms: i32,
    /// Current state.
    pub state: TransactionState,
    /// Partitions in the current transaction.
    pub partitions: BTreeSet<TopicPartition>,
    /// Transaction start, ms since the epoch (-1 when none).
    pub txn_start_timestamp: i64,
    /// Last update, ms since the epoch.
    pub txn_last_update_timestamp: i64,
    /// Transaction version of the client's last transaction.
    pub client_transaction_version: TransactionVersion,
    /// The state a prepared transition goes to, while its record is being written.
    pub pending_state: Option<TransactionState>,
    /// Set when writing an epoch fence failed: the next fence does not bump the epoch again.
    pub has_failed_epoch_fence: bool,
}

impl TransactionMetadata {
    /// Fresh metadata for a transactional id never seen (Kafka: created by InitProducerId): state Empty,
    /// epoch -1, no partitions.
    pub fn new(
        transactional_id: &str,
        producer_id: ProducerId,
        txn_timeout_ms: i32,
        now_ms: i64,
    ) -> Self {
        TransactionMetadata {
            transactional_id: transactional_id.to_string(),
            producer_id,
            prev_producer_id: ProducerId::NONE,
            next_producer_id: ProducerId::NONE,
            producer_epoch: ProducerEpoch::NONE,
            last_producer_epoch: ProducerEpoch::NONE,
            txn_timeout_ms,
            state: TransactionState::Empty,
            partitions: BTreeSet::new(),
            txn_start_timestamp: -1,
            txn_last_update_timestamp: now_ms,
            client_transaction_version: TransactionVersion::TV_0,
            pending_state: None,
            has_failed_epoch_fence: false,
        }
    }

    /// Metadata as stored in a record (replay): `last_producer_epoch` is not persisted, so it is -1.
    pub fn from_transit(transactional_id: &str, t: &TxnTransitMetadata) -> Self {
        TransactionMetadata {
            transactional_id: transactional_id.to_string(),
            producer_id: t.producer_id,
            prev_producer_id: t.prev_producer_id,
            next_producer_id: t.next_producer_id,
            producer_epoch: t.producer_epoch,
            last_producer_epoch: ProducerEpoch::NONE,
            txn_timeout_ms: t.txn_timeout_ms,
            state: t.state,
            partitions: t.partitions.clone(),
            txn_start_timestamp: t.txn_start_timestamp,
            txn_last_update_timestamp: t.txn_last_update_timestamp,
            client_transaction_version: t.client_transaction_version,
            pending_state: None,
            has_failed_epoch_fence: false,
        }
    }

    /// True while a prepared transition waits for its record to be written.
    pub fn pending_transition_in_progress(&self) -> bool {
        self.pending_state.is_some()
    }

    /// Kafka's `isProducerEpochExhausted`.
    pub fn is_producer_epoch_exhausted(&self) -> bool {
        is_epoch_exhausted(self.producer_epoch)
    }

    /// The current values as a transit to `state` (every other field unchanged).
    pub(super) fn base(&self, state: TransactionState) -> TxnTransitMetadata {
        TxnTransitMetadata {
            producer_id: self.producer_id,
            prev_producer_id: self.producer_id,
            next_producer_id: self.next_producer_id,
            producer_epoch: self.producer_epoch,
            last_producer_epoch: self.last_producer_epoch,
            txn_timeout_ms: self.txn_timeout_ms,
            state,
            partitions: self.partitions.clone(),
            txn_start_timestamp: self.txn_start_timestamp,
            txn_last_update_timestamp: self.txn_last_update_timestamp,
            client_transaction_version: self.client_transaction_version,
        }
    }

    /// Kafka's `prepareTransitionTo`: checks the table (and that no other transition is pending), then marks
    /// `data.state` pending. `prev_producer_id` becomes the current producer id, as Kafka does.
    pub(super) fn prepare(
        &mut self,
        mut data: TxnTransitMetadata,
    ) -> Result<TxnTransitMetadata, IllegalTransition> {
        let illegal = IllegalTransition {
            from: self.state,
            pending: self.pending_state,
            to: data.state,
        };
        if self.pending_state.is_some() || !data.state.can_transition_from(self.state) {
            return Err(illegal);
        }
        if data.producer_id.0 < 0
            || (data.state != TransactionState::Dead && data.producer_epoch.0 < 0)
        {
            return Err(illegal);
        }
        data.prev_producer_id = self.producer_id;
        self.pending_state = Some(data.state);
        Ok(data)
    }

    /// Kafka's `prepareFenceProducerEpoch`: PrepareEpochFence with the epoch bumped once (not again after a
    /// failed fence, never past `i16::MAX`).
    pub fn prepare_fence_producer_epoch(
        &mut self,
    ) -> Result<TxnTransitMetadata, IllegalTransition> {
        let mut data = self.base(TransactionState::PrepareEpochFence);
        if !self.has_failed_epoch_fence && self.producer_epoch.0 < i16::MAX {
            data.producer_epoch = ProducerEpoch(self.producer_epoch.0 + 1);
        }
        self.prepare(data)
    }

    /// Kafka's `prepareIncrementProducerEpoch` (InitProducerId, KIP-360): Empty with the epoch bumped (the
    /// old epoch kept as the last epoch when the producer presented it), or the current epoch unchanged for a
    /// retry presenting `last_producer_epoch`. `Ok(None)`: the presented epoch is stale — the caller answers
    /// PRODUCER_FENCED and nothing is pending. An exhausted epoch cannot be bumped: `Err` (Kafka throws
    /// `IllegalStateException`; the caller rotates the producer id instead when it may).
    pub fn prepare_increment_producer_epoch(
        &mut self,
        new_txn_timeout_ms: i32,
        expected_epoch: Option<ProducerEpoch>,
        now_ms: i64,
    ) -> Result<Option<TxnTransitMetadata>, IllegalTransition> {
        if self.is_producer_epoch_exhausted() {
            return Err(IllegalTransition {
                from: self.state,
                pending: self.pending_state,
                to: TransactionState::Empty,
            });
        }
        let mut data = self.base(TransactionState::Empty);
        let bumped = ProducerEpoch(self.producer_epoch.0 + 1);
        match expected_epoch {
            None => {
                data.producer_epoch = bumped;
                data.last_producer_epoch = ProducerEpoch::NONE;
            }
            Some(e) if self.producer_epoch.is_none() || e == self.producer_epoch => {
                data.producer_epoch = bumped;
                data.last_producer_epoch = self.producer_epoch;
            }
            Some(e) if e == self.last_producer_epoch => {}
            Some(_) => return Ok(None),
        }
        data.txn_timeout_ms = new_txn_timeout_ms;
        data.partitions.clear();
        data.txn_start_timestamp = -1;
        data.txn_last_update_timestamp = now_ms;
        self.prepare(data).map(Some)
    }

    /// Kafka's `prepareProducerIdRotation` (epoch exhausted): Empty with `new_producer_id` at epoch 0; the last
    /// epoch is kept when the producer presented its id/epoch (`record_last_epoch`).
    pub fn prepare_producer_id_rotation(
        &mut self,
        new_producer_id: ProducerId,
        new_txn_timeout_ms: i32,
        now_ms: i64,
        record_last_epoch: bool,
    ) -> Result<TxnTransitMetadata, IllegalTransition> {
        let mut data = self.base(TransactionState::Empty);
        data.producer_id = new_producer_id;
        data.producer_epoch = ProducerEpoch(0);
        data.last_producer_epoch = if record_last_epoch {
            self.producer_epoch
        } else {
            ProducerEpoch::NONE
        };
        data.txn_timeout_ms = new_txn_timeout_ms;
        data.partitions.clear();
        data.txn_start_timestamp = -1;
        data.txn_last_update_timestamp = now_ms;
        self.prepare(data)
    }

    /// Kafka's `prepareAddPartitions`: Ongoing with `added` joined; the start time is set when a new
    /// transaction begins (from Empty/CompleteCommit/CompleteAbort).
    pub fn prepare_add_partitions(
        &mut self,
        added: &BTreeSet<TopicPartition>,
        now_ms: i64,
        client_transaction_version: TransactionVersion,
    ) -> Result<TxnTransitMetadata, IllegalTransition> {
        let mut data = self.base(TransactionState::Ongoing);
        if matches!(
            self.state,
            TransactionState::Empty
                | TransactionState::CompleteAbort
                | TransactionState::CompleteCommit
        ) {
            data.txn_start_timestamp = now_ms;
        }
        data.partitions.extend(added.iter().cloned());
        data.txn_last_update_timestamp = now_ms;
        data.client_transaction_version = client_transaction_version;
        self.prepare(data)
    }

    /// Kafka's `prepareAbortOrCommit`: PrepareCommit/PrepareAbort. TV2 bumps the epoch (not past `i16::MAX`
    /// on an abort) and remembers the old one as the last epoch; `next_producer_id` is the id a TV2 completion
    /// switches to when the epoch is exhausted (else -1). With no partitions added (TV2 abort from
    /// Empty/Complete*), the start time is `now_ms`.
    pub fn prepare_abort_or_commit(
        &mut self,
        state: TransactionState,
        client_transaction_version: TransactionVersion,
        next_producer_id: ProducerId,
        now_ms: i64,
        no_partition_added: bool,
    ) -> Result<TxnTransitMetadata, IllegalTransition> {
        let mut data = self.base(state);
        if client_transaction_version.supports_epoch_bump() {
            if !(self.producer_epoch.0 == i16::MAX && state == TransactionState::PrepareAbort) {
                data.producer_epoch = ProducerEpoch(self.producer_epoch.0.saturating_add(1));
            }
            data.last_producer_epoch = self.producer_epoch;
        }
        if no_partition_added {
            data.txn_start_timestamp = now_ms;
        }
        data.next_producer_id = next_producer_id;
        data.txn_last_update_timestamp = now_ms;
        data.client_transaction_version = client_transaction_version;
        self.prepare(data)
    }

    /// Kafka's `prepareComplete` (markers written): CompleteCommit/CompleteAbort, no partitions; a TV2
    /// transaction with a next producer id switches to it at epoch 0.
    pub fn prepare_complete(
        &mut self,
        now_ms: i64,
    ) -> Result<TxnTransitMetadata, IllegalTransition> {
        self.has_failed_epoch_fence = false;
        let state = if self.state == TransactionState::PrepareCommit {
            TransactionState::CompleteCommit
        } else {
            TransactionState::CompleteAbort
        };
        let mut data = self.base(state);
        if self.client_transaction_version.supports_epoch_bump() && !self.next_producer_id.is_none()
        {
            data.producer_id = self.next_producer_id;
            data.producer_epoch = ProducerEpoch(0);
        }
        data.next_producer_id = ProducerId::NONE;
        data.partitions.clear();
        data.txn_last_update_timestamp = now_ms;
        self.prepare(data)
    }

    /// Kafka's `prepareDead` (expiration): Dead, no partitions; only a tombstone is written.
    pub fn prepare_dead(&mut self) -> Result<TxnTransitMetadata, IllegalTransition> {
        let mut data = self.base(TransactionState::Dead);
        data.partitions.clear();
        self.prepare(data)
    }

    /// Kafka's `completeTransitionTo`: applies `t` once its record is written. `t.state` must be the pending
    /// state (else nothing changes and the error is returned).
    ///
    /// Like Kafka, the new values are checked against the current ones: Empty (InitProducerId) keeps the epoch
    /// or bumps it (or starts a new producer id at 0) and has no partitions and no start time; Ongoing keeps
    /// producer id, epoch and timeout and only adds partitions; Prepare* keeps the partitions, timeout and start
    /// time (TV2 may bump the epoch once, and an abort with no partition restarts the clock); Complete* keeps
    /// the timeout and has a start time. A failed check leaves the metadata unchanged except that nothing is
    /// pending any more.
    pub fn complete_transition(&mut self, t: &TxnTransitMetadata) -> Result<(), IllegalTransition> {
        let illegal = IllegalTransition {
            from: self.state,
            pending: self.pending_state,
            to: t.state,
        };
        if self.pending_state != Some(t.state) {
            return Err(illegal);
        }
        if !self.valid_completion(t) {
            self.pending_state = None;
            return Err(illegal);
        }
        self.producer_id = t.producer_id;
        self.prev_producer_id = t.prev_producer_id;
        self.next_producer_id = t.next_producer_id;
        self.producer_epoch = t.producer_epoch;
        self.last_producer_epoch = t.last_producer_epoch;
        self.txn_timeout_ms = t.txn_timeout_ms;
        self.partitions = t.partitions.clone();
        self.txn_start_timestamp = t.txn_start_timestamp;
        self.txn_last_update_timestamp = t.txn_last_update_timestamp;
        self.client_transaction_version = t.client_transaction_version;
        self.pending_state = None;
        self.state = t.state;
        Ok(())
    }

    /// Kafka's `completeTransitionTo` field checks (see [`Self::complete_transition`]).
    fn valid_completion(&self, t: &TxnTransitMetadata) -> bool {
        use TransactionState::*;
        let tv2 = t.client_transaction_version.supports_epoch_bump();
        let same_producer =
            t.producer_id == self.producer_id && t.producer_epoch == self.producer_epoch;
        match t.state {
            Empty => {
                let bump = i32::from(t.producer_epoch.0) == i32::from(self.producer_epoch.0) + 1
                    || (t.producer_epoch.0 == 0 && t.producer_id != self.producer_id);
                (t.producer_epoch == self.producer_epoch || bump)
                    && t.partitions.is_empty()
                    && t.txn_start_timestamp == -1
            }
            Ongoing => {
                same_producer
                    && t.partitions.is_superset(&self.partitions)
                    && t.txn_timeout_ms == self.txn_timeout_ms
            }
            PrepareCommit | PrepareAbort => {
                let producer_ok = if tv2 {
                    t.last_producer_epoch == self.producer_epoch
                        && t.producer_id == self.producer_id
                } else {
                    same_producer
                };
                let empty_abort = t.state == PrepareAbort
                    && tv2
                    && matches!(self.state, Empty | CompleteCommit | CompleteAbort);
                producer_ok
                    && t.partitions == self.partitions
                    && t.txn_timeout_ms == self.txn_timeout_ms
                    && (t.txn_start_timestamp == self.txn_start_timestamp || empty_abort)
            }
            CompleteCommit | CompleteAbort => {
                let producer_ok =
                    if tv2 && t.producer_epoch.0 == 0 && t.producer_id != self.producer_id {
                        t.last_producer_epoch == self.last_producer_epoch
                            && t.prev_producer_id == self.producer_id
                    } else {
                        same_producer
                    };
                producer_ok
                    && t.txn_timeout_ms == self.txn_timeout_ms
                    && t.txn_start_timestamp != -1
            }
            // Never completed: a fence is immediately replaced by PrepareAbort, and Dead ends in removal.
            PrepareEpochFence | Dead => false,
        }
    }

    /// Rolls back a prepared transition whose record could not be written (Kafka clears `pendingState`).
    pub fn abort_pending(&mut self) {
        self.pending_state = None;
    }
}
