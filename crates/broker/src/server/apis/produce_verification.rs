//! Produce's transaction verification (KIP-890; Kafka's `ReplicaManager.handleProduceAppend`): before a
//! transactional batch opens a transaction on a partition led here, the transaction coordinator is asked
//! whether the partition is in the producer's transaction (Produce v3–11, when
//! `transaction.partition.verification.enable`, default true) or to add it (Produce v12+, transaction version
//! 2, always). Partitions where the producer's transaction is already ongoing need no question. Each
//! partition asked about gets a `storage::VerificationGuard` first and is appended with it, so a transaction
//! that ended while the question was out is not reopened by the late batch (a hanging transaction).
//!
//! Failures answer the partition instead of appending it: INVALID_TXN_STATE ("Partition was not added to the
//! transaction"); the coordinator's transient errors as NOT_ENOUGH_REPLICAS, which every client retries
//! (`coordinator::transaction::produce_verification_error`); under transaction version 2 a
//! CONCURRENT_TRANSACTIONS (the previous transaction still completing) is asked again every
//! [`RETRY_BACKOFF`] for up to [`RETRY_MAX`] first, as Kafka's `add.partitions.to.txn.retry.backoff.*`
//! defaults. Transactional batches of more than one producer in one request: INVALID_PRODUCER_ID_MAPPING
//! for every partition.

use std::collections::HashMap;
use std::time::Duration;

use coordinator::transaction::{
    produce_verification_error, verification_retriable, TopicPartition,
    TransactionSupportedOperation,
};
use protocol::error::ErrorCode;
use protocol::messages::ProduceRequest;
use protocol::record::Records;
use storage::VerificationGuard;
use types::{ProducerEpoch, ProducerId};

use super::KafkaApis;
use crate::config::keys;
use crate::server::context::RequestContext;
use authorizer::{AclOperation, ResourceType};

/// Wait between two questions answered CONCURRENT_TRANSACTIONS (transaction version 2).
const RETRY_BACKOFF: Duration = Duration::from_millis(20);

/// How long CONCURRENT_TRANSACTIONS is asked again before it is answered.
const RETRY_MAX: Duration = Duration::from_millis(100);

/// How a verified partition appends: with its guard, or not at all, answered with the error (and Kafka's
/// message, if it has one).
pub(super) type Verified = Result<VerificationGuard, (ErrorCode, Option<String>)>;

/// The verification of one Produce: what each transactional partition appends with.
#[derive(Debug, Default)]
pub(super) struct Verification {
    /// Set when the whole request is refused (transactional batches of several producers).
    pub(super) denied: Option<ErrorCode>,
    /// (topic, partition) → the guard to append with, or the error to answer (with its message).
    partitions: HashMap<(String, i32), Verified>,
}

impl Verification {
    /// How partition `index` of `topic` appends: `None` unverified (not transactional, or verification
    /// off), a guard, or the error to answer.
    pub(super) fn take(&mut self, topic: &str, index: i32) -> Option<Verified> {
        if self.partitions.is_empty() {
            return None; // the common case: no key to build per partition on the produce path
        }
        self.partitions.remove(&(topic.to_string(), index))
    }
}

/// The producer id and epoch of the request's transactional batches, per partition that holds any. Err
/// when they come from more than one producer.
#[allow(clippy::type_complexity)]
fn transactional_partitions(
    request: &ProduceRequest,
) -> Result<Option<((ProducerId, ProducerEpoch), Vec<TopicPartition>)>, ()> {
    let mut producer = None;
    let mut partitions = Vec::new();
    for t in &request.topic_data {
        for p in &t.partition_data {
            let Some(Records::Memory(b)) = &p.records else {
                continue;
            };
            let mut transactional = false;
            for batch in protocol::record::batches(b).map_while(Result::ok) {
                let h = batch.header();
                if !h.is_transactional() {
                    continue;
                }
                let this = (ProducerId(h.producer_id), ProducerEpoch(h.producer_epoch));
                if *producer.get_or_insert(this) != this {
                    return Err(());
                }
                transactional = true;
            }
            if transactional {
                partitions.push(TopicPartition {
                    topic: t.name.clone(),
                    partition: p.index,
                });
            }
        }
    }
    Ok(producer.map(|p| (p, partitions)))
}

/// Verifies the request's transactional partitions led here (see the module doc). Partitions that are not
/// led here, or whose topic the client may not write, are left to the append to refuse.
pub(super) async fn verify(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: &ProduceRequest,
) -> Verification {
    let op = TransactionSupportedOperation::for_produce(ctx.api_version());
    let mut out = Verification::default();
    let enabled = op.supports_epoch_bump()
        || (apis.config).get(keys::TRANSACTION_PARTITION_VERIFICATION_ENABLE);
    let Some(id) = request.transactional_id.as_deref().filter(|_| enabled) else {
        return out;
    };
    let (producer, partitions) = match transactional_partitions(request) {
        Ok(Some(found)) => found,
        Ok(None) => return out,
        Err(()) => {
            out.denied = Some(ErrorCode::INVALID_PRODUCER_ID_MAPPING);
            return out;
        }
    };
    let mut ask = Vec::new();
    for tp in partitions {
        if ctx
            .authorize(AclOperation::Write, ResourceType::Topic, &tp.topic)
            .is_err()
        {
            continue;
        }
        let Some(partition) = apis.replica_manager.partition(&tp.topic, tp.partition) else {
            continue;
        };
        let rm = &apis.replica_manager;
        let guard =
            match rm.maybe_start_transaction_verification(&partition, producer.0, producer.1) {
                Err(_) => continue,
                Ok(None) => VerificationGuard::SENTINEL,
                Ok(Some(g)) => {
                    ask.push(tp.clone());
                    g
                }
            };
        out.partitions
            .insert((tp.topic.clone(), tp.partition), Ok(guard));
    }
    for (tp, code) in ask_coordinator(apis, id, producer, ask, op).await {
        let code = produce_verification_error(code, op);
        // Kafka's messages; other errors go without one, as there.
        let message = match code {
            ErrorCode::INVALID_TXN_STATE => {
                Some("Partition was not added to the transaction".into())
            }
            ErrorCode::NOT_ENOUGH_REPLICAS => Some(format!(
                "Unable to verify the partition has been added to the transaction: {code}"
            )),
            _ => None,
        };
        out.partitions
            .insert((tp.topic, tp.partition), Err((code, message)));
    }
    out
}

/// Asks the coordinator about `ask`; asks again about partitions answered CONCURRENT_TRANSACTIONS under
/// transaction version 2, for up to [`RETRY_MAX`]. The partitions that failed, with their error.
pub(super) async fn ask_coordinator(
    apis: &KafkaApis,
    transactional_id: &str,
    producer: (ProducerId, ProducerEpoch),
    mut ask: Vec<TopicPartition>,
    op: TransactionSupportedOperation,
) -> Vec<(TopicPartition, ErrorCode)> {
    if !ask.is_empty() {
        tracing::debug!(
            transactional_id,
            ?op,
            partitions = ask.len(),
            "transaction verification"
        );
    }
    let started = tokio::time::Instant::now();
    loop {
        let failed = (apis.transactions)
            .add_or_verify(transactional_id, producer, &ask, op)
            .await;
        let retry = failed.iter().any(|(_, c)| verification_retriable(*c, op));
        if !retry || started.elapsed() + RETRY_BACKOFF > RETRY_MAX {
            return failed;
        }
        tokio::time::sleep(RETRY_BACKOFF).await;
        ask = failed.into_iter().map(|(tp, _)| tp).collect();
    }
}
