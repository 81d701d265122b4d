//! The partition leader's side of transaction verification (KIP-890): what a leader asks the transaction
//! coordinator before the first transactional write of a transaction lands on a partition, and how the
//! answers become the errors a Produce or TxnOffsetCommit returns.
//!
//! Source: Kafka's `AddPartitionsToTxnManager`, `TransactionSupportedOperation` and
//! `ReplicaManager.handleProduceAppend` (4.x).

use types::ErrorCode;

/// What the leader asks of the coordinator, by the client request's version (Kafka's
/// `TransactionSupportedOperation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransactionSupportedOperation {
    /// Part 1 for clients that know no abortable error (Produce v0–10, TxnOffsetCommit v0–3): verify the
    /// partition is in the ongoing transaction (AddPartitionsToTxn v4+ `verify_only`); TRANSACTION_ABORTABLE
    /// is answered as INVALID_TXN_STATE.
    DefaultError,
    /// Part 1 for clients that handle TRANSACTION_ABORTABLE (Produce v11, TxnOffsetCommit v4, KIP-890): verify
    /// only, the abortable error passed through.
    GenericErrorSupported,
    /// Part 2 (Produce v12+, TxnOffsetCommit v5+; transaction version 2): add the partition to the
    /// transaction (AddPartitionsToTxn v5 without `verify_only`); the client sends no AddPartitionsToTxn.
    AddPartition,
}

impl TransactionSupportedOperation {
    /// The operation for a Produce of `version`.
    pub fn for_produce(version: i16) -> TransactionSupportedOperation {
        match version {
            12.. => TransactionSupportedOperation::AddPartition,
            11 => TransactionSupportedOperation::GenericErrorSupported,
            _ => TransactionSupportedOperation::DefaultError,
        }
    }

    /// The operation for a TxnOffsetCommit of `version`.
    pub fn for_txn_offset_commit(version: i16) -> TransactionSupportedOperation {
        match version {
            5.. => TransactionSupportedOperation::AddPartition,
            4 => TransactionSupportedOperation::GenericErrorSupported,
            _ => TransactionSupportedOperation::DefaultError,
        }
    }

    /// True for transaction version 2 (the epoch is bumped at every end).
    pub fn supports_epoch_bump(self) -> bool {
        self == TransactionSupportedOperation::AddPartition
    }
}

/// The error the leader gets when the coordinator cannot be reached (disconnected, timed out).
pub const VERIFICATION_UNREACHABLE: ErrorCode = ErrorCode::NETWORK_EXCEPTION;

/// The error the leader gets when no coordinator is known (no `__transaction_state` yet, no leader).
pub const VERIFICATION_NO_COORDINATOR: ErrorCode = ErrorCode::COORDINATOR_NOT_AVAILABLE;

/// `AddPartitionsToTxnManager`'s reading of one answered partition: `top_level` is the response's error,
/// `partition` the partition's. CLUSTER_AUTHORIZATION_FAILED (the leader was not let in) is INVALID_TXN_STATE,
/// not shown to clients as such; PRODUCER_FENCED is INVALID_PRODUCER_EPOCH (what producers expect here);
/// TRANSACTION_ABORTABLE is INVALID_TXN_STATE for clients that do not know it ([`DefaultError`]).
///
/// [`DefaultError`]: TransactionSupportedOperation::DefaultError
pub fn verification_error(
    top_level: ErrorCode,
    partition: ErrorCode,
    op: TransactionSupportedOperation,
) -> ErrorCode {
    if top_level != ErrorCode::NONE {
        return if top_level == ErrorCode::CLUSTER_AUTHORIZATION_FAILED {
            ErrorCode::INVALID_TXN_STATE
        } else {
            top_level
        };
    }
    match partition {
        ErrorCode::PRODUCER_FENCED => ErrorCode::INVALID_PRODUCER_EPOCH,
        ErrorCode::TRANSACTION_ABORTABLE if op == TransactionSupportedOperation::DefaultError => {
            ErrorCode::INVALID_TXN_STATE
        }
        other => other,
    }
}

/// A coordinator's answer for one partition of a broker's AddPartitionsToTxn, read with
/// [`verification_error`]: `None` when the partition is verified (or added), else its error. `top_level` is
/// the response's error code; `partition` the partition's, `None` when the answer left it out (read as
/// [`VERIFICATION_UNREACHABLE`]).
pub fn verification_answer(
    top_level: i16,
    partition: Option<i16>,
    op: TransactionSupportedOperation,
) -> Option<ErrorCode> {
    let top = ErrorCode(top_level);
    let code = match partition {
        _ if top != ErrorCode::NONE => verification_error(top, ErrorCode::NONE, op),
        Some(code) => verification_error(top, ErrorCode(code), op),
        None => VERIFICATION_UNREACHABLE,
    };
    (code != ErrorCode::NONE).then_some(code)
}

/// This broker's own coordinator's answer `code` for a partition, read as [`verification_answer`].
pub fn local_verification_answer(
    code: ErrorCode,
    op: TransactionSupportedOperation,
) -> Option<ErrorCode> {
    verification_answer(ErrorCode::NONE.0, Some(code.0), op)
}

/// True when a verification answer is worth asking again after a short backoff before answering the
/// Produce (transaction version 2 only: the commit of the previous transaction is still being completed).
pub fn verification_retriable(code: ErrorCode, op: TransactionSupportedOperation) -> bool {
    op.supports_epoch_bump() && code == ErrorCode::CONCURRENT_TRANSACTIONS
}

/// `ReplicaManager.handleProduceAppend`'s translation of a failed verification into the partition's Produce
/// error: the coordinator's transient errors become NOT_ENOUGH_REPLICAS, which every client retries without
/// a metadata refresh (CONCURRENT_TRANSACTIONS too before transaction version 2); the rest pass through.
pub fn produce_verification_error(code: ErrorCode, op: TransactionSupportedOperation) -> ErrorCode {
    match code {
        ErrorCode::NETWORK_EXCEPTION
        | ErrorCode::COORDINATOR_LOAD_IN_PROGRESS
        | ErrorCode::COORDINATOR_NOT_AVAILABLE
        | ErrorCode::NOT_COORDINATOR => ErrorCode::NOT_ENOUGH_REPLICAS,
        ErrorCode::CONCURRENT_TRANSACTIONS if !op.supports_epoch_bump() => {
            ErrorCode::NOT_ENOUGH_REPLICAS
        }
        other => other,
    }
}

/// The TxnOffsetCommit error for a failed verification of the group's `__consumer_offsets` partition
/// (Kafka's group coordinator normalizes append errors the same way): transient coordinator errors become
/// COORDINATOR_NOT_AVAILABLE, which the producer retries; NOT_ENOUGH_REPLICAS likewise.
pub fn txn_offset_commit_verification_error(code: ErrorCode) -> ErrorCode {
    match code {
        ErrorCode::NETWORK_EXCEPTION
        | ErrorCode::COORDINATOR_LOAD_IN_PROGRESS
        | ErrorCode::NOT_COORDINATOR
        | ErrorCode::NOT_ENOUGH_REPLICAS => ErrorCode::COORDINATOR_NOT_AVAILABLE,
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use TransactionSupportedOperation::*;

    #[test]
    fn operations_follow_the_request_versions() {
        assert_eq!(TransactionSupportedOperation::for_produce(10), DefaultError);
        assert_eq!(
            TransactionSupportedOperation::for_produce(11),
            GenericErrorSupported
        );
        assert_eq!(TransactionSupportedOperation::for_produce(12), AddPartition);
        assert_eq!(
            TransactionSupportedOperation::for_txn_offset_commit(3),
            DefaultError
        );
        assert_eq!(
            TransactionSupportedOperation::for_txn_offset_commit(4),
            GenericErrorSupported
        );
        assert_eq!(
            TransactionSupportedOperation::for_txn_offset_commit(5),
            AddPartition
        );
    }

    #[test]
    fn answers_map_as_kafkas_manager_and_produce_path() {
        let none = ErrorCode::NONE;
        assert_eq!(
            verification_error(ErrorCode::CLUSTER_AUTHORIZATION_FAILED, none, DefaultError),
            ErrorCode::INVALID_TXN_STATE
        );
        assert_eq!(
            verification_error(none, ErrorCode::PRODUCER_FENCED, AddPartition),
            ErrorCode::INVALID_PRODUCER_EPOCH
        );
        assert_eq!(
            verification_error(none, ErrorCode::TRANSACTION_ABORTABLE, DefaultError),
            ErrorCode::INVALID_TXN_STATE
        );
        assert_eq!(
            verification_error(
                none,
                ErrorCode::TRANSACTION_ABORTABLE,
                GenericErrorSupported
            ),
            ErrorCode::TRANSACTION_ABORTABLE
        );
        assert_eq!(
            verification_error(none, ErrorCode::TRANSACTION_ABORTABLE, AddPartition),
            ErrorCode::TRANSACTION_ABORTABLE
        );
        for c in [
            ErrorCode::NETWORK_EXCEPTION,
            ErrorCode::COORDINATOR_NOT_AVAILABLE,
            ErrorCode::NOT_COORDINATOR,
            ErrorCode::COORDINATOR_LOAD_IN_PROGRESS,
        ] {
            assert_eq!(
                produce_verification_error(c, AddPartition),
                ErrorCode::NOT_ENOUGH_REPLICAS
            );
        }
        let concurrent = ErrorCode::CONCURRENT_TRANSACTIONS;
        assert_eq!(
            produce_verification_error(concurrent, DefaultError),
            ErrorCode::NOT_ENOUGH_REPLICAS
        );
        assert_eq!(
            produce_verification_error(concurrent, AddPartition),
            concurrent
        );
        assert!(verification_retriable(concurrent, AddPartition));
        assert!(!verification_retriable(concurrent, DefaultError));
        assert_eq!(
            txn_offset_commit_verification_error(ErrorCode::NETWORK_EXCEPTION),
            ErrorCode::COORDINATOR_NOT_AVAILABLE
        );
    }
}
