//! Kafka's `kafka.server:type=BrokerTopicMetrics`: records and bytes in and out, per topic (`topic` label) and
//! for the whole broker (no `topic` label, Kafka's all-topics MBean), counted by the Produce and Fetch
//! handlers.
//!
//! | name | Kafka MBean | counted |
//! |---|---|---|
//! | `kafka_server_brokertopicmetrics_messagesin_total` | `MessagesInPerSec` | records a client's Produce appended (duplicates of idempotent batches are not appended, so not counted) |
//! | `kafka_server_brokertopicmetrics_bytesin_total` | `BytesInPerSec` | the bytes of those record batches |
//! | `kafka_server_brokertopicmetrics_bytesout_total` | `BytesOutPerSec` | record bytes in Fetch responses to consumers |
//! | `kafka_server_brokertopicmetrics_replicationbytesout_total` | `ReplicationBytesOutPerSec` | record bytes in Fetch responses to followers |
//! | `kafka_server_brokertopicmetrics_totalproducerequests_total` | `TotalProduceRequestsPerSec` | partitions in Produce requests |
//! | `kafka_server_brokertopicmetrics_failedproducerequests_total` | `FailedProduceRequestsPerSec` | of those, failed |
//! | `kafka_server_brokertopicmetrics_totalfetchrequests_total` | `TotalFetchRequestsPerSec` | partitions in Fetch requests |
//! | `kafka_server_brokertopicmetrics_failedfetchrequests_total` | `FailedFetchRequestsPerSec` | of those, answered with an error |
//!
//! (`ReplicationBytesInPerSec` is counted by the `replica` crate's fetcher.)

use metrics::{counter, describe_counter, Unit};
use protocol::messages::FetchResponse;
use protocol::record::Records;

/// One metric for the topic and for the broker.
fn both(name: &'static str, topic: &str, n: u64) {
    counter!(name).increment(n);
    counter!(name, "topic" => topic.to_string()).increment(n);
}

/// A client's Produce appended `records` records in `bytes` bytes of batches to a partition of `topic`.
pub fn produce_appended(topic: &str, records: u64, bytes: u64) {
    both(
        "kafka_server_brokertopicmetrics_totalproducerequests_total",
        topic,
        1,
    );
    both(
        "kafka_server_brokertopicmetrics_messagesin_total",
        topic,
        records,
    );
    both(
        "kafka_server_brokertopicmetrics_bytesin_total",
        topic,
        bytes,
    );
}

/// A client's Produce to a partition of `topic` failed.
pub fn produce_failed(topic: &str) {
    both(
        "kafka_server_brokertopicmetrics_totalproducerequests_total",
        topic,
        1,
    );
    both(
        "kafka_server_brokertopicmetrics_failedproducerequests_total",
        topic,
        1,
    );
}

/// A Fetch was answered with `response`: per topic, its partitions and their errors, and the record bytes
/// sent to a consumer or, when `follower`, to a follower.
pub fn fetch_answered(response: &FetchResponse, follower: bool) {
    let bytes_out = match follower {
        true => "kafka_server_brokertopicmetrics_replicationbytesout_total",
        false => "kafka_server_brokertopicmetrics_bytesout_total",
    };
    for t in &response.responses {
        let (mut bytes, mut failed) = (0u64, 0u64);
        for p in &t.partitions {
            bytes += p.records.as_ref().map_or(0, Records::len) as u64;
            failed += u64::from(p.error_code != 0);
        }
        let partitions = t.partitions.len() as u64;
        both(
            "kafka_server_brokertopicmetrics_totalfetchrequests_total",
            &t.topic,
            partitions,
        );
        if failed > 0 {
            both(
                "kafka_server_brokertopicmetrics_failedfetchrequests_total",
                &t.topic,
                failed,
            );
        }
        if bytes > 0 {
            both(bytes_out, &t.topic, bytes);
        }
    }
}

/// The broker-wide counters that exist from the start at 0 (as Kafka's MBeans do), so that a dashboard or an
/// alert on a rate of failures finds its series before the first failure.
const FROM_ZERO: &[&str] = &[
    "kafka_server_brokertopicmetrics_messagesin_total",
    "kafka_server_brokertopicmetrics_bytesin_total",
    "kafka_server_brokertopicmetrics_bytesout_total",
    "kafka_server_brokertopicmetrics_replicationbytesout_total",
    "kafka_server_brokertopicmetrics_replicationbytesin_total",
    "kafka_server_brokertopicmetrics_totalproducerequests_total",
    "kafka_server_brokertopicmetrics_failedproducerequests_total",
    "kafka_server_brokertopicmetrics_totalfetchrequests_total",
    "kafka_server_brokertopicmetrics_failedfetchrequests_total",
    "kafka_server_replicamanager_isrshrinks_total",
    "kafka_server_replicamanager_isrexpands_total",
];

/// Registers the descriptions (HELP lines) of the topic metrics, and the broker-wide counters at 0.
pub(super) fn describe() {
    for name in FROM_ZERO {
        counter!(*name).increment(0);
    }
    describe_counter!(
        "kafka_server_brokertopicmetrics_messagesin_total",
        "Records appended by client Produce requests (Kafka MessagesInPerSec)."
    );
    describe_counter!(
        "kafka_server_brokertopicmetrics_bytesin_total",
        Unit::Bytes,
        "Record batch bytes appended by client Produce requests (Kafka BytesInPerSec)."
    );
    describe_counter!(
        "kafka_server_brokertopicmetrics_bytesout_total",
        Unit::Bytes,
        "Record bytes sent to consumers (Kafka BytesOutPerSec)."
    );
    describe_counter!(
        "kafka_server_brokertopicmetrics_replicationbytesout_total",
        Unit::Bytes,
        "Record bytes sent to followers (Kafka ReplicationBytesOutPerSec)."
    );
    describe_counter!(
        "kafka_server_brokertopicmetrics_replicationbytesin_total",
        Unit::Bytes,
        "Record bytes a follower appended from its leader (Kafka ReplicationBytesInPerSec)."
    );
    describe_counter!(
        "kafka_server_brokertopicmetrics_totalproducerequests_total",
        "Partitions in Produce requests (Kafka TotalProduceRequestsPerSec)."
    );
    describe_counter!(
        "kafka_server_brokertopicmetrics_failedproducerequests_total",
        "Partitions of Produce requests that failed (Kafka FailedProduceRequestsPerSec)."
    );
    describe_counter!(
        "kafka_server_brokertopicmetrics_totalfetchrequests_total",
        "Partitions in Fetch requests (Kafka TotalFetchRequestsPerSec)."
    );
    describe_counter!(
        "kafka_server_brokertopicmetrics_failedfetchrequests_total",
        "Partitions of Fetch requests answered with an error (Kafka FailedFetchRequestsPerSec)."
    );
}
