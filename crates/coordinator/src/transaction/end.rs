//! EndTxn: ending a transaction on the client's request, on InitProducerId fencing an ongoing transaction, or
//! on a timeout. TV1 (KIP-98) keeps the epoch; TV2 (KIP-890 part 2) bumps it on every end and answers the
//! producer id and epoch to use next.
//!
//! Source: Kafka's `TransactionCoordinator.endTransaction` / `endTransactionWithTV1`.

use types::{ErrorCode, ProducerEpoch, ProducerId};

use super::metadata::{TransactionMetadata, TransactionState, TransactionVersion};
use super::{AfterAppend, TransactionCoordinator, TransactionResult, TxnEffect, TxnResult};
use crate::api::RequestId;

/// One end request, from the client or from the coordinator itself.
#[derive(Clone, Copy, Debug)]
pub(super) struct EndRequest {
    pub producer_id: ProducerId,
    pub producer_epoch: ProducerEpoch,
    pub result: TransactionResult,
    /// False for coordinator-initiated aborts (fencing, timeouts): the epoch may be higher than the cached one.
    pub from_client: bool,
    pub transaction_version: TransactionVersion,
}

/// What the pre-append checks decided.
enum Decision {
    /// Answer at once (NONE for an already-completed retry, or an error).
    Answer(TxnResult),
    /// Prepare this state.
    Prepare {
        state: TransactionState,
        no_partition_added: bool,
    },
}

const fn answer(code: ErrorCode) -> Decision {
    Decision::Answer(TxnResult::error(code))
}

fn target(result: TransactionResult) -> TransactionState {
    match result {
        TransactionResult::Commit => TransactionState::PrepareCommit,
        TransactionResult::Abort => TransactionState::PrepareAbort,
    }
}

/// TV1 checks: strict epoch equality from clients, retries of a completed end answered NONE.
fn decide_tv1(md: &TransactionMetadata, r: &EndRequest) -> Decision {
    use TransactionResult::{Abort, Commit};
    use TransactionState::*;
    if md.producer_id != r.producer_id {
        return answer(ErrorCode::INVALID_PRODUCER_ID_MAPPING);
    }
    if (r.from_client && r.producer_epoch != md.producer_epoch)
        || r.producer_epoch < md.producer_epoch
    {
        return answer(ErrorCode::PRODUCER_FENCED);
    }
    if md.pending_state.is_some_and(|s| s != PrepareEpochFence) {
        return answer(ErrorCode::CONCURRENT_TRANSACTIONS);
    }
    match (md.state, r.result) {
        (Ongoing, result) => Decision::Prepare {
            state: target(result),
            no_partition_added: false,
        },
        (CompleteCommit, Commit) | (CompleteAbort, Abort) => answer(ErrorCode::NONE),
        (PrepareCommit, Commit) | (PrepareAbort, Abort) => {
            answer(ErrorCode::CONCURRENT_TRANSACTIONS)
        }
        (CompleteCommit | CompleteAbort | PrepareCommit | PrepareAbort | Empty, _) => {
            answer(ErrorCode::INVALID_TXN_STATE)
        }
        (Dead | PrepareEpochFence, _) => answer(ErrorCode::UNKNOWN_SERVER_ERROR),
    }
}

/// TV2 checks (Kafka's table for Empty/CompleteAbort/CompleteCommit): a retry presents the epoch before the
/// bump (or, after a producer id rotation, the old id at `i16::MAX - 1`); a current-epoch abort from
/// Empty/Complete* is a new (empty) transaction that is aborted with an epoch bump.
fn decide_tv2(md: &TransactionMetadata, r: &EndRequest) -> Decision {
    use TransactionResult::{Abort, Commit};
    use TransactionState::*;
    let epoch_fence = md.pending_state == Some(PrepareEpochFence);
    let retry_on_overflow = !epoch_fence
        && md.prev_producer_id == r.producer_id
        && r.producer_epoch.0 == i16::MAX - 1
        && md.producer_epoch.0 == 0;
    let retry_on_epoch_bump =
        !epoch_fence && i32::from(md.producer_epoch.0) == i32::from(r.producer_epoch.0) + 1;
    let valid_epoch = if epoch_fence {
        (!r.from_client || r.producer_epoch == md.producer_epoch)
            && r.producer_epoch >= md.producer_epoch
    } else {
        match md.state {
            Ongoing | Empty | Dead | PrepareEpochFence => r.producer_epoch == md.producer_epoch,
            PrepareCommit | PrepareAbort => retry_on_epoch_bump,
            CompleteCommit | CompleteAbort => {
                retry_on_epoch_bump || retry_on_overflow || r.producer_epoch == md.producer_epoch
            }
        }
    };
    let is_retry = retry_on_epoch_bump || retry_on_overflow;
    if md.producer_id != r.producer_id && !retry_on_overflow {
        return answer(ErrorCode::INVALID_PRODUCER_ID_MAPPING);
    }
    if !valid_epoch {
        return answer(ErrorCode::PRODUCER_FENCED);
    }
    if md.pending_state.is_some_and(|s| s != PrepareEpochFence) {
        return answer(ErrorCode::CONCURRENT_TRANSACTIONS);
    }
    let prepare_abort_empty = Decision::Prepare {
        state: PrepareAbort,
        no_partition_added: true,
    };
    match (md.state, r.result) {
        (Ongoing, result) => Decision::Prepare {
            state: target(result),
            no_partition_added: false,
        },
        (CompleteCommit, Commit) | (CompleteAbort, Abort) if is_retry => {
            Decision::Answer(TxnResult::ok(md.producer_id, md.producer_epoch))
        }
        (CompleteCommit | CompleteAbort, Abort) if !is_retry => prepare_abort_empty,
        (Empty, Abort) => prepare_abort_empty,
        (PrepareCommit, Commit) | (PrepareAbort, Abort) => {
            answer(ErrorCode::CONCURRENT_TRANSACTIONS)
        }
        (Dead | PrepareEpochFence, _) => answer(ErrorCode::UNKNOWN_SERVER_ERROR),
        _ => answer(ErrorCode::INVALID_TXN_STATE),
    }
}

impl TransactionCoordinator {
    /// EndTxn (v0+): commits or aborts the transaction of `transactional_id`. `transaction_version` is the
    /// client's (TV2 from EndTxn v5, KIP-890). Answered through [`TxnEffect::Respond`] `request`: at once for
    /// errors and retries of an ended transaction, else once PrepareCommit/PrepareAbort is written (TV2:
    /// with the producer id and epoch to use next); the markers are requested after the answer.
    ///
    /// Errors: INVALID_REQUEST (empty id), NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
    /// INVALID_PRODUCER_ID_MAPPING (unknown id or other producer id), PRODUCER_FENCED (epoch),
    /// CONCURRENT_TRANSACTIONS (a transition is pending, or the same end is being completed),
    /// INVALID_TXN_STATE (e.g. commit after abort, end with no transaction under TV1).
    #[allow(clippy::too_many_arguments)]
    pub fn end_txn(
        &mut self,
        request: RequestId,
        transactional_id: &str,
        producer_id: ProducerId,
        producer_epoch: ProducerEpoch,
        result: TransactionResult,
        transaction_version: TransactionVersion,
        now_ms: i64,
    ) -> Vec<TxnEffect> {
        let mut fx = Vec::new();
        let end = EndRequest {
            producer_id,
            producer_epoch,
            result,
            from_client: true,
            transaction_version,
        };
        self.end_transaction(&mut fx, transactional_id, end, Some(request), false, now_ms);
        fx
    }

    /// The shared end path. `answer_concurrent`: InitProducerId fencing an ongoing transaction — its request
    /// gets CONCURRENT_TRANSACTIONS once the abort is written (errors are answered as they are).
    pub(super) fn end_transaction(
        &mut self,
        fx: &mut Vec<TxnEffect>,
        transactional_id: &str,
        r: EndRequest,
        request: Option<RequestId>,
        answer_concurrent: bool,
        now_ms: i64,
    ) {
        let reply = |fx: &mut Vec<TxnEffect>, response: TxnResult| {
            if let Some(request) = request {
                let response = if answer_concurrent && response.error_code == ErrorCode::NONE {
                    TxnResult::error(ErrorCode::CONCURRENT_TRANSACTIONS)
                } else {
                    response
                };
                fx.push(TxnEffect::Respond { request, response });
            }
        };
        if transactional_id.is_empty() {
            return reply(fx, TxnResult::error(ErrorCode::INVALID_REQUEST));
        }
        let tv2 = r.transaction_version.supports_epoch_bump();
        let (decision, epoch_fence, exhausted) = match self.txn_mut(transactional_id) {
            Err(code) => return reply(fx, TxnResult::error(code)),
            Ok(md) => {
                let decision = if tv2 {
                    decide_tv2(md, &r)
                } else {
                    decide_tv1(md, &r)
                };
                let fence = md.pending_state == Some(TransactionState::PrepareEpochFence);
                (decision, fence, md.is_producer_epoch_exhausted())
            }
        };
        let (state, no_partition_added) = match decision {
            Decision::Answer(response) => {
                if epoch_fence {
                    if let Ok(md) = self.txn_mut(transactional_id) {
                        md.abort_pending();
                    }
                }
                return reply(fx, response);
            }
            Decision::Prepare {
                state,
                no_partition_added,
            } => (state, no_partition_added),
        };
        // TV2: an end that bumps an exhausted epoch also allocates the producer id the completion switches to.
        let next_id = if tv2 && !epoch_fence && exhausted {
            match self.producer_ids.next_producer_id() {
                Ok(id) => id,
                Err(code) => return reply(fx, TxnResult::error(code)),
            }
        } else {
            ProducerId::NONE
        };
        let Ok(md) = self.txn_mut(transactional_id) else {
            return reply(fx, TxnResult::error(ErrorCode::NOT_COORDINATOR));
        };
        if epoch_fence && state == TransactionState::PrepareAbort {
            // The fence's pending state makes way for the abort. TV1: the fenced epoch is set in memory and
            // the abort keeps it. TV2: the abort's own bump is the only one (Kafka 4.1+, KAFKA-19367).
            md.pending_state = None;
            if !tv2 {
                md.producer_epoch = r.producer_epoch;
                md.last_producer_epoch = ProducerEpoch::NONE;
            }
        }
        let version = if tv2 {
            r.transaction_version
        } else {
            TransactionVersion::TV_0
        };
        let transit =
            match md.prepare_abort_or_commit(state, version, next_id, now_ms, no_partition_added) {
                Ok(t) => t,
                Err(_) => return reply(fx, TxnResult::error(ErrorCode::UNKNOWN_SERVER_ERROR)),
            };
        let then = AfterAppend::EndTxn {
            request,
            result: r.result,
            epoch_fence,
            answer_concurrent,
        };
        self.append(fx, transactional_id, transit, then);
    }
}
