//! Transaction verification, the partition leader's side (KIP-890; Kafka's `AddPartitionsToTxnManager`):
//! before the first transactional write of a transaction lands on a partition led here, the leader asks the
//! transactional id's coordinator — this broker's own coordinator directly, another broker with an
//! AddPartitionsToTxn v5 request over the inter-broker listener — to verify that the partition is in the
//! producer's ongoing transaction (part 1) or to add it (part 2, transaction version 2). The answers are
//! mapped by `coordinator::transaction::verification_error`.
//!
//! Unlike Kafka's manager, requests are not batched across producers: each verification is one request
//! (one in flight per coordinator broker, on a connection of its own so that markers never wait behind it).

use coordinator::transaction::{
    local_verification_answer, transaction_partition_for, verification_answer,
    TransactionSupportedOperation, VERIFICATION_NO_COORDINATOR, VERIFICATION_UNREACHABLE,
};
use protocol::messages::add_partitions_to_txn_request::{
    AddPartitionsToTxnTopic, AddPartitionsToTxnTransaction,
};
use protocol::messages::AddPartitionsToTxnRequest;
use protocol::{RequestBody, ResponseBody};
use types::BrokerId;

use super::*;

/// AddPartitionsToTxn version sent to coordinators (the broker form with `verify_only`).
const ADD_PARTITIONS_VERSION: i16 = 5;

/// Longest a verification waits for the coordinator (Kafka: the request timeout).
const VERIFY_TIMEOUT: Duration = Duration::from_secs(30);

impl TransactionCoordinatorService {
    /// Verifies (`DefaultError`, `GenericErrorSupported`) or adds (`AddPartition`) `partitions` in `transactional_id`'s transaction of
    /// `producer`. Returns the partitions that failed with their error; empty when all are in the
    /// transaction. No `__transaction_state` or no leader for the id's partition:
    /// COORDINATOR_NOT_AVAILABLE; the coordinator unreachable: NETWORK_EXCEPTION.
    pub async fn add_or_verify(
        self: &Arc<Self>,
        transactional_id: &str,
        producer: (ProducerId, ProducerEpoch),
        partitions: &[TopicPartition],
        op: TransactionSupportedOperation,
    ) -> Vec<(TopicPartition, ErrorCode)> {
        let all = |code: ErrorCode| partitions.iter().map(|tp| (tp.clone(), code)).collect();
        if partitions.is_empty() {
            return Vec::new();
        }
        let image = self.cache.image();
        let leader = image.topics.get(TRANSACTION_STATE_TOPIC).and_then(|t| {
            let p = transaction_partition_for(transactional_id, t.partitions.len() as i32);
            t.partitions.get(&p).map(|r| r.leader)
        });
        let Some(leader) = leader.filter(|l| !l.is_none()) else {
            return all(VERIFICATION_NO_COORDINATOR);
        };
        if leader == self.config.node_id {
            return self
                .add_or_verify_here(transactional_id, producer, partitions, op)
                .await;
        }
        let listener = &self.config.listeners.inter_broker_listener_name;
        let endpoint = image
            .brokers
            .get(&leader)
            .filter(|b| !b.fenced)
            .and_then(|b| b.endpoint(listener));
        let Some(endpoint) = endpoint else {
            return all(VERIFICATION_NO_COORDINATOR);
        };
        let request = add_partitions_request(transactional_id, producer, partitions, op);
        let answer = (self.verifications)
            .call(
                leader,
                endpoint,
                ADD_PARTITIONS_VERSION,
                request,
                VERIFY_TIMEOUT,
            )
            .await;
        match answer {
            Some(ResponseBody::AddPartitionsToTxn(r)) => {
                answered(leader, r, transactional_id, partitions, op)
            }
            _ => all(VERIFICATION_UNREACHABLE),
        }
    }

    /// The coordinator of `transactional_id` is this broker's.
    async fn add_or_verify_here(
        self: &Arc<Self>,
        transactional_id: &str,
        producer: (ProducerId, ProducerEpoch),
        partitions: &[TopicPartition],
        op: TransactionSupportedOperation,
    ) -> Vec<(TopicPartition, ErrorCode)> {
        let answers = match op {
            TransactionSupportedOperation::DefaultError
            | TransactionSupportedOperation::GenericErrorSupported => {
                self.verify_partitions_in_txn(transactional_id, producer, partitions)
            }
            TransactionSupportedOperation::AddPartition => {
                let r = self
                    .add_partitions_to_txn(
                        transactional_id,
                        producer,
                        partitions,
                        TransactionVersion::TV_2,
                    )
                    .await;
                partitions
                    .iter()
                    .map(|tp| (tp.clone(), r.error_code))
                    .collect()
            }
        };
        answers
            .into_iter()
            .filter_map(|(tp, code)| Some((tp, local_verification_answer(code, op)?)))
            .collect()
    }
}

/// The AddPartitionsToTxn v5 request (one transaction) for `partitions`.
fn add_partitions_request(
    transactional_id: &str,
    producer: (ProducerId, ProducerEpoch),
    partitions: &[TopicPartition],
    op: TransactionSupportedOperation,
) -> RequestBody {
    let topics = super::channel::by_topic(partitions);
    RequestBody::AddPartitionsToTxn(AddPartitionsToTxnRequest {
        transactions: vec![AddPartitionsToTxnTransaction {
            transactional_id: transactional_id.to_string(),
            producer_id: producer.0.get(),
            producer_epoch: producer.1.get(),
            verify_only: !op.supports_epoch_bump(),
            topics: topics
                .into_iter()
                .map(|(name, partitions)| AddPartitionsToTxnTopic {
                    name: name.to_string(),
                    partitions,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }],
        ..Default::default()
    })
}

/// The failed partitions of a coordinator's answer; a partition it left out is NETWORK_EXCEPTION (retried
/// by the client).
fn answered(
    coordinator: BrokerId,
    r: protocol::messages::AddPartitionsToTxnResponse,
    transactional_id: &str,
    partitions: &[TopicPartition],
    op: TransactionSupportedOperation,
) -> Vec<(TopicPartition, ErrorCode)> {
    if r.error_code != 0 {
        tracing::warn!(%coordinator, error = r.error_code, "AddPartitionsToTxn refused");
    }
    let result = r
        .results_by_transaction
        .iter()
        .find(|t| t.transactional_id == transactional_id);
    let code_of = |tp: &TopicPartition| -> Option<ErrorCode> {
        let partition = result.and_then(|t| {
            let topic = t.topic_results.iter().find(|x| x.name == tp.topic)?;
            let p =
                (topic.results_by_partition.iter()).find(|p| p.partition_index == tp.partition)?;
            Some(p.partition_error_code)
        });
        verification_answer(r.error_code, partition, op)
    };
    partitions
        .iter()
        .filter_map(|tp| Some((tp.clone(), code_of(tp)?)))
        .collect()
}
