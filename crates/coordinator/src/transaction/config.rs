//! Transaction coordinator configuration (broker configs of the same names; defaults are Kafka's).

use super::metadata::TransactionVersion;

/// Transaction coordinator settings. All durations in milliseconds.
///
/// Source: Kafka broker configs `transaction.max.timeout.ms`, `transactional.id.expiration.ms`,
/// `transaction.abort.timed.out.transaction.cleanup.interval.ms`,
/// `transaction.remove.expired.transaction.cleanup.interval.ms`, `transaction.state.log.num.partitions`, and
/// the finalized `transaction.version` feature (Kafka's `TransactionConfig` / `TransactionStateManagerConfig`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TransactionConfig {
    /// Longest transaction timeout a producer may ask for (default 900000); larger, or <= 0, gets
    /// INVALID_TRANSACTION_TIMEOUT.
    pub transaction_max_timeout_ms: i32,
    /// How long a transactional id may stay idle (Empty/CompleteCommit/CompleteAbort) before it is expired
    /// with a tombstone (default 604800000, 7 days).
    pub transactional_id_expiration_ms: i64,
    /// How often timed-out transactions are looked for and aborted (default 10000).
    pub abort_timed_out_transactions_interval_ms: i64,
    /// How often expired transactional ids are looked for (default 3600000).
    pub remove_expired_transactional_ids_interval_ms: i64,
    /// Partition count of `__transaction_state` (default 50); see [`super::transaction_partition_for`].
    pub transaction_topic_num_partitions: i32,
    /// The cluster's finalized `transaction.version`: which record value version is written (0 at TV0, else
    /// 1) and how coordinator-initiated aborts (timeouts, fencing) end. Default TV2, Kafka 4's level.
    pub transaction_version: TransactionVersion,
}

impl Default for TransactionConfig {
    fn default() -> Self {
        TransactionConfig {
            transaction_max_timeout_ms: 900_000,
            transactional_id_expiration_ms: 604_800_000,
            abort_timed_out_transactions_interval_ms: 10_000,
            remove_expired_transactional_ids_interval_ms: 3_600_000,
            transaction_topic_num_partitions: 50,
            transaction_version: TransactionVersion::TV_2,
        }
    }
}
