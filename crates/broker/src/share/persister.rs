//! Where a share-partition leader reads and writes its durable state (Kafka's `DefaultStatePersister`): the
//! share coordinator of the key — this broker's [`ShareCoordinatorService`] when it leads the key's
//! `__share_group_state` partition, else the leader of that partition through ReadShareGroupState (84) and
//! WriteShareGroupState (85) on the inter-broker listener (the replica fetchers' connector: its TLS/SASL).
//!
//! Runnel's brokers exchange whole states: a write carries every in-flight batch, and a read of a key never
//! initialized answers start offset -1 (the leader then initializes it itself). An unreachable, moving or
//! loading coordinator (NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE / COORDINATOR_LOAD_IN_PROGRESS) is retried
//! with backoff for up to [`RETRY_FOR`], as Kafka's persister does; after that the ShareFetch or
//! ShareAcknowledge fails for that partition and the client retries.

use std::sync::Arc;
use std::time::Duration;

use protocol::messages::read_share_group_state_request as read_req;
use protocol::messages::write_share_group_state_request as write_req;
use protocol::messages::{
    ReadShareGroupStateRequest, ReadShareGroupStateResponse, WriteShareGroupStateRequest,
    WriteShareGroupStateResponse,
};
use protocol::{RequestBody, ResponseBody};
use share::{DeliveryState, SharePartitionKey, ShareState, StateBatch};

use crate::metadata_cache::MetadataCache;
use crate::share_coordinator::{
    ShareCoordinatorError, ShareCoordinatorService, StoredShareState, SHARE_STATE_TOPIC,
};
use crate::txn_coordinator::channel::BrokerChannel;

/// How long one inter-broker state request may take.
const RPC_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a read or write is retried while the key's share coordinator is elected, moves or loads.
pub const RETRY_FOR: Duration = Duration::from_secs(5);

/// Runs `op` until it succeeds, fails otherwise than transiently, or [`RETRY_FOR`] has passed (backoff from
/// 50 ms, doubling to 1 s).
async fn with_retries<T, Fut>(mut op: impl FnMut() -> Fut) -> Result<T, ShareCoordinatorError>
where
    Fut: std::future::Future<Output = Result<T, ShareCoordinatorError>>,
{
    let deadline = tokio::time::Instant::now() + RETRY_FOR;
    let mut backoff = Duration::from_millis(50);
    loop {
        match op().await {
            Err(e) if e.is_transient() => {
                if tokio::time::Instant::now() + backoff >= deadline {
                    return Err(e);
                }
                tracing::debug!(error = %e, "share state not reachable yet; retrying");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(1));
            }
            other => return other,
        }
    }
}

/// Reads and writes share-partition state at the key's share coordinator, local or remote.
pub struct SharePersister {
    local: Arc<ShareCoordinatorService>,
    node_id: types::BrokerId,
    listener: String,
    cache: Arc<dyn MetadataCache>,
    channel: BrokerChannel,
}

enum Route {
    Local,
    Remote(types::BrokerId, String, u16),
}

impl SharePersister {
    /// A persister for broker `node_id`, reaching other brokers on `listener` through `channel`.
    pub(crate) fn new(
        local: Arc<ShareCoordinatorService>,
        node_id: types::BrokerId,
        listener: String,
        cache: Arc<dyn MetadataCache>,
        channel: BrokerChannel,
    ) -> Self {
        SharePersister {
            local,
            node_id,
            listener,
            cache,
            channel,
        }
    }

    /// The local share coordinator.
    pub fn local(&self) -> &Arc<ShareCoordinatorService> {
        &self.local
    }

    async fn route(&self, key: &SharePartitionKey) -> Result<Route, ShareCoordinatorError> {
        self.local.ensure_topic().await?;
        let p = self.local.partition_for(key);
        let image = self.cache.image();
        let leader = (image.topics.get(SHARE_STATE_TOPIC))
            .and_then(|t| t.partitions.get(&p))
            .map(|r| r.leader);
        let Some(leader) = leader else {
            // Standalone (or not in the image yet): this broker hosts every partition.
            return Ok(Route::Local);
        };
        if leader == self.node_id || leader == types::BrokerId::NONE {
            return Ok(Route::Local);
        }
        let endpoint = (image.brokers.get(&leader))
            .filter(|b| !b.fenced)
            .and_then(|b| b.endpoint(&self.listener))
            .map(|(h, port)| (h.to_string(), port));
        match endpoint {
            Some((host, port)) => Ok(Route::Remote(leader, host, port)),
            None => Err(ShareCoordinatorError::NotAvailable),
        }
    }

    /// ReadShareGroupState of `key` by a leader in `leader_epoch` (`None`: never initialized), retried while
    /// the coordinator is not reachable ([`RETRY_FOR`]).
    pub async fn read(
        &self,
        key: &SharePartitionKey,
        leader_epoch: i32,
    ) -> Result<Option<StoredShareState>, ShareCoordinatorError> {
        with_retries(|| self.read_once(key, leader_epoch)).await
    }

    async fn read_once(
        &self,
        key: &SharePartitionKey,
        leader_epoch: i32,
    ) -> Result<Option<StoredShareState>, ShareCoordinatorError> {
        let (broker, host, port) = match self.route(key).await? {
            Route::Local => return self.local.read(key, leader_epoch).await,
            Route::Remote(b, h, p) => (b, h, p),
        };
        let request = ReadShareGroupStateRequest {
            group_id: key.group_id.clone(),
            topics: vec![read_req::ReadStateData {
                topic_id: key.topic_id,
                partitions: vec![read_req::PartitionData {
                    partition: key.partition,
                    leader_epoch,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        };
        let body = RequestBody::ReadShareGroupState(request);
        let answer = self
            .channel
            .call(broker, (&host, port), 0, body, RPC_TIMEOUT)
            .await;
        let Some(ResponseBody::ReadShareGroupState(r)) = answer else {
            return Err(ShareCoordinatorError::NotAvailable);
        };
        read_answer(r, key.partition)
    }

    /// WriteShareGroupState: replaces the state of `key`, retried while the coordinator is not reachable
    /// ([`RETRY_FOR`]).
    pub async fn write(
        &self,
        key: &SharePartitionKey,
        leader_epoch: i32,
        state: ShareState,
    ) -> Result<(), ShareCoordinatorError> {
        with_retries(|| self.write_once(key, leader_epoch, state.clone())).await
    }

    async fn write_once(
        &self,
        key: &SharePartitionKey,
        leader_epoch: i32,
        state: ShareState,
    ) -> Result<(), ShareCoordinatorError> {
        let (broker, host, port) = match self.route(key).await? {
            Route::Local => return self.local.write(key, leader_epoch, state).await,
            Route::Remote(b, h, p) => (b, h, p),
        };
        let request = WriteShareGroupStateRequest {
            group_id: key.group_id.clone(),
            topics: vec![write_req::WriteStateData {
                topic_id: key.topic_id,
                partitions: vec![write_req::PartitionData {
                    partition: key.partition,
                    state_epoch: state.state_epoch,
                    leader_epoch,
                    start_offset: state.start_offset,
                    state_batches: (state.batches.iter())
                        .map(|b| write_req::StateBatch {
                            first_offset: b.first_offset,
                            last_offset: b.last_offset,
                            delivery_state: b.delivery_state.id(),
                            delivery_count: b.delivery_count,
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        };
        let body = RequestBody::WriteShareGroupState(request);
        let answer = self
            .channel
            .call(broker, (&host, port), 0, body, RPC_TIMEOUT)
            .await;
        let Some(ResponseBody::WriteShareGroupState(r)) = answer else {
            return Err(ShareCoordinatorError::NotAvailable);
        };
        write_answer(&r)
    }
}

/// The error of a Kafka code answered by a remote share coordinator.
pub fn coordinator_error(code: i16) -> Result<(), ShareCoordinatorError> {
    match code {
        0 => Ok(()),
        16 => Err(ShareCoordinatorError::NotCoordinator),
        14 => Err(ShareCoordinatorError::LoadInProgress),
        74 => Err(ShareCoordinatorError::FencedLeaderEpoch),
        124 => Err(ShareCoordinatorError::FencedStateEpoch),
        _ => Err(ShareCoordinatorError::NotAvailable),
    }
}

fn read_answer(
    r: ReadShareGroupStateResponse,
    partition: i32,
) -> Result<Option<StoredShareState>, ShareCoordinatorError> {
    let p = (r.results.into_iter().flat_map(|t| t.partitions))
        .find(|p| p.partition == partition)
        .ok_or(ShareCoordinatorError::NotAvailable)?;
    coordinator_error(p.error_code)?;
    if p.start_offset < 0 {
        return Ok(None);
    }
    let batches = (p.state_batches.into_iter())
        .filter_map(|b| {
            Some(StateBatch {
                first_offset: b.first_offset,
                last_offset: b.last_offset,
                delivery_state: DeliveryState::from_id(b.delivery_state)?,
                delivery_count: b.delivery_count,
            })
        })
        .collect();
    Ok(Some(StoredShareState {
        leader_epoch: -1,
        state: ShareState {
            state_epoch: p.state_epoch,
            start_offset: p.start_offset,
            batches,
        },
    }))
}

fn write_answer(r: &WriteShareGroupStateResponse) -> Result<(), ShareCoordinatorError> {
    let code = (r.results.iter().flat_map(|t| &t.partitions))
        .map(|p| p.error_code)
        .find(|c| *c != 0)
        .unwrap_or(0);
    coordinator_error(code)
}
