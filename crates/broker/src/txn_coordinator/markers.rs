//! Writing a transaction's markers (Kafka's `TransactionMarkerChannelManager`): each partition's marker goes
//! to its current leader — this broker writes its own directly, others get a WriteTxnMarkers request on the
//! inter-broker listener — and is retried with backoff until written. A partition whose topic (or which
//! itself) is gone is dropped; INVALID_PRODUCER_EPOCH or TRANSACTION_COORDINATOR_FENCED (a newer coordinator or producer epoch
//! took over), or this coordinator no longer owning the transactional id, abandons the markers without
//! completing the transaction (the new owner resends them).

use std::collections::{BTreeMap, BTreeSet};

use coordinator::transaction::MarkerOutcome;
use protocol::messages::write_txn_markers_request::{WritableTxnMarker, WritableTxnMarkerTopic};
use protocol::messages::WriteTxnMarkersRequest;
use protocol::{RequestBody, ResponseBody};
use types::BrokerId;

use super::*;
use crate::txn_markers::{write_marker, MarkerWrite};

/// WriteTxnMarkers version sent to other brokers.
const WRITE_TXN_MARKERS_VERSION: i16 = 1;

/// First retry delay; doubled up to [`MAX_BACKOFF`].
const MIN_BACKOFF: Duration = Duration::from_millis(50);
const MAX_BACKOFF: Duration = Duration::from_secs(1);

impl TransactionCoordinatorService {
    /// Writes `m`'s markers until every partition has one, then completes the transaction
    /// (`markers_written`); gives up as the module doc says.
    pub(super) async fn write_markers(self: Arc<Self>, m: coordinator::transaction::TxnMarkers) {
        let mut left: BTreeSet<TopicPartition> = m.partitions.clone();
        let mut backoff = MIN_BACKOFF;
        while !left.is_empty() {
            if !self.owns(&m) {
                tracing::info!(transactional_id = %m.transactional_id,
                    "markers abandoned: no longer the coordinator");
                return;
            }
            let image = self.cache.image();
            let mut by_leader: BTreeMap<BrokerId, Vec<TopicPartition>> = BTreeMap::new();
            left.retain(|tp| {
                let Some(t) = image.topics.get(&tp.topic) else {
                    tracing::info!(topic = %tp.topic, "marker dropped: the topic is gone");
                    return false;
                };
                // Partitions are only ever added, and AddPartitionsToTxn admits existing ones only: one
                // missing from the image is gone for good (or was admitted by an older build).
                let Some(r) = t.partitions.get(&tp.partition) else {
                    tracing::info!(topic = %tp.topic, partition = tp.partition, "marker dropped: no such partition");
                    return false;
                };
                by_leader.entry(r.leader).or_default().push(tp.clone());
                true
            });
            for (leader, tps) in by_leader {
                for (tp, outcome) in self.write_to(&image, leader, &m, &tps).await {
                    match outcome {
                        MarkerOutcome::Written => {
                            left.remove(&tp);
                        }
                        MarkerOutcome::Retry => {
                            tracing::debug!(topic = %tp.topic, partition = tp.partition, "marker not written; retrying");
                        }
                        MarkerOutcome::Abandon => {
                            tracing::warn!(transactional_id = %m.transactional_id,
                                "markers abandoned: fenced");
                            return;
                        }
                    }
                }
            }
            if !left.is_empty() {
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
        let mut st = self.state.lock();
        let now = st.now(&*self.clock);
        let fx = st
            .coordinator
            .markers_written(&m.transactional_id, m.coordinator_epoch, now);
        self.apply(&mut st, fx);
        drop(st);
        self.timer.notify_one();
    }

    /// True while this coordinator still owns `m`'s transactional id at `m`'s coordinator epoch.
    fn owns(&self, m: &coordinator::transaction::TxnMarkers) -> bool {
        let st = self.state.lock();
        let p = st.coordinator.partition_for(&m.transactional_id);
        st.coordinator
            .owned_partitions()
            .contains(&(p, m.coordinator_epoch))
    }

    /// One attempt at `tps`' markers through their leader `leader`: each partition's error code.
    async fn write_to(
        &self,
        image: &metadata::MetadataImage,
        leader: BrokerId,
        m: &coordinator::transaction::TxnMarkers,
        tps: &[TopicPartition],
    ) -> Vec<(TopicPartition, MarkerOutcome)> {
        let commit = m.result == TransactionResult::Commit;
        if leader == self.config.node_id {
            let mut out = Vec::with_capacity(tps.len());
            for tp in tps {
                let w = MarkerWrite {
                    topic: tp.topic.clone(),
                    partition: tp.partition,
                    producer_id: m.producer_id,
                    producer_epoch: m.producer_epoch,
                    commit,
                    coordinator_epoch: m.coordinator_epoch,
                };
                let code =
                    write_marker(&self.replica_manager, &self.groups, &w, APPEND_TIMEOUT).await;
                out.push((tp.clone(), MarkerOutcome::of(code)));
            }
            return out;
        }
        let listener = &self.config.listeners.inter_broker_listener_name;
        let endpoint = image
            .brokers
            .get(&leader)
            .filter(|b| !b.fenced)
            .and_then(|b| b.endpoint(listener));
        let Some(endpoint) = endpoint else {
            return tps
                .iter()
                .map(|tp| (tp.clone(), MarkerOutcome::Retry))
                .collect();
        };
        let topics = super::channel::by_topic(tps);
        let request = WriteTxnMarkersRequest {
            markers: vec![WritableTxnMarker {
                producer_id: m.producer_id.get(),
                producer_epoch: m.producer_epoch.get(),
                transaction_result: commit,
                topics: topics
                    .into_iter()
                    .map(|(name, partition_indexes)| WritableTxnMarkerTopic {
                        name: name.to_string(),
                        partition_indexes,
                        ..Default::default()
                    })
                    .collect(),
                coordinator_epoch: m.coordinator_epoch,
                transaction_version: m.transaction_version.0 as i8,
                ..Default::default()
            }],
            ..Default::default()
        };
        let body = RequestBody::WriteTxnMarkers(request);
        let timeout = APPEND_TIMEOUT + Duration::from_secs(5);
        let answer = (self.markers)
            .call(leader, endpoint, WRITE_TXN_MARKERS_VERSION, body, timeout)
            .await;
        let results = match answer {
            Some(ResponseBody::WriteTxnMarkers(r)) => Some(marker_results(r)),
            _ => None,
        };
        tps.iter()
            .map(|tp| {
                let outcome = results
                    .as_ref()
                    .and_then(|r| {
                        r.iter()
                            .find(|(t, p, _)| *t == tp.topic && *p == tp.partition)
                            .map(|(_, _, o)| *o)
                    })
                    .unwrap_or(MarkerOutcome::Retry);
                (tp.clone(), outcome)
            })
            .collect()
    }
}

/// Each partition's outcome in a WriteTxnMarkers answer.
fn marker_results(
    r: protocol::messages::WriteTxnMarkersResponse,
) -> Vec<(String, i32, MarkerOutcome)> {
    r.markers
        .into_iter()
        .flat_map(|m| m.topics)
        .flat_map(|t| {
            let name = t.name;
            t.partitions.into_iter().map(move |p| {
                let outcome = MarkerOutcome::of(p.error_code.into());
                (name.clone(), p.partition_index, outcome)
            })
        })
        .collect()
}
