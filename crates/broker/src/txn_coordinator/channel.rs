//! Requests from the transaction machinery to other brokers' inter-broker listeners (the replica fetchers'
//! connector: the same TLS/SASL): WriteTxnMarkers from the coordinator, AddPartitionsToTxn from partition
//! leaders verifying a transaction; also the metrics' ListOffsets to leaders (`observability::end_offsets`).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use protocol::{RequestBody, ResponseBody};
use replica::replica_fetcher::Connection;
use replica::transport::Connector;
use types::BrokerId;

/// Connections to other brokers, one request in flight per broker (Kafka's `InterBrokerSendThread` keeps one
/// connection per node too). A failed call drops the connection; the next call reopens it.
pub(crate) struct BrokerChannel {
    local_id: BrokerId,
    connector: Arc<dyn Connector>,
    connections: Mutex<HashMap<BrokerId, Arc<tokio::sync::Mutex<Option<Connection>>>>>,
}

impl BrokerChannel {
    pub(crate) fn new(local_id: BrokerId, connector: Arc<dyn Connector>) -> BrokerChannel {
        BrokerChannel {
            local_id,
            connector,
            connections: Mutex::new(HashMap::new()),
        }
    }

    /// Sends `body` at `version` to broker `broker` at `host:port` and waits at most `timeout` for the
    /// answer; `None` when it could not be sent or answered.
    pub(crate) async fn call(
        &self,
        broker: BrokerId,
        (host, port): (&str, u16),
        version: i16,
        body: RequestBody,
        timeout: Duration,
    ) -> Option<ResponseBody> {
        let slot = self.connections.lock().entry(broker).or_default().clone();
        let mut conn = slot.lock().await;
        if conn.is_none() {
            match Connection::connect_with(&*self.connector, host, port, self.local_id).await {
                Ok(c) => *conn = Some(c),
                Err(e) => {
                    tracing::debug!(%broker, error = %e, "cannot connect to the broker");
                    return None;
                }
            }
        }
        let c = conn.as_mut()?;
        match c.call(version, body, timeout).await {
            Ok(r) => Some(r),
            Err(e) => {
                tracing::debug!(%broker, error = %e, "inter-broker call failed");
                *conn = None;
                None
            }
        }
    }
}

/// `partitions` grouped by topic, in topic order (the shape of WriteTxnMarkers' and AddPartitionsToTxn's
/// topic lists).
pub(super) fn by_topic(
    partitions: &[coordinator::transaction::TopicPartition],
) -> std::collections::BTreeMap<&str, Vec<i32>> {
    let mut topics: std::collections::BTreeMap<&str, Vec<i32>> = Default::default();
    for tp in partitions {
        topics.entry(&tp.topic).or_default().push(tp.partition);
    }
    topics
}
