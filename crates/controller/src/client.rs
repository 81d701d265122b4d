//! [`ControllerClient`]: how brokers talk to the quorum.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use uuid::Uuid;

use crate::error::{codes, ControllerError};
use crate::metadata::PartitionRegistration;
use crate::types::{CreateTopic, CreatedTopic, HeartbeatReply, MetadataUpdate, QuorumInfo};

/// Client of the controller quorum, used by brokers (any process). Finds the active controller,
/// follows `NOT_CONTROLLER` redirects and retries with bounded backoff within a deadline.
#[derive(Clone, Debug)]
pub struct ControllerClient {
    voters: BTreeMap<i32, SocketAddr>,
}

fn not_yet() -> ControllerError {
    ControllerError::new(codes::UNKNOWN_SERVER_ERROR, "not yet")
}

impl ControllerClient {
    /// A client of the quorum `voters` (`controller.quorum.voters`).
    pub fn new(voters: BTreeMap<i32, SocketAddr>) -> ControllerClient {
        ControllerClient { voters }
    }

    /// BrokerRegistration (KIP-631): returns the new broker epoch.
    pub async fn register_broker(
        &self,
        _broker_id: i32,
        _incarnation_id: Uuid,
        _host: String,
        _port: u16,
        _rack: Option<String>,
    ) -> Result<i64, ControllerError> {
        let _ = &self.voters;
        Err(not_yet())
    }

    /// BrokerHeartbeat (KIP-631).
    pub async fn heartbeat(
        &self,
        _broker_id: i32,
        _broker_epoch: i64,
        _metadata_offset: i64,
        _want_fence: bool,
        _want_shutdown: bool,
    ) -> Result<HeartbeatReply, ControllerError> {
        Err(not_yet())
    }

    /// CreateTopics.
    pub async fn create_topics(
        &self,
        topics: Vec<CreateTopic>,
        _validate_only: bool,
    ) -> Vec<Result<CreatedTopic, ControllerError>> {
        topics.iter().map(|_| Err(not_yet())).collect()
    }

    /// DeleteTopics.
    pub async fn delete_topics(&self, names: Vec<String>) -> Vec<Result<Uuid, ControllerError>> {
        names.iter().map(|_| Err(not_yet())).collect()
    }

    /// CreatePartitions.
    pub async fn create_partitions(
        &self,
        _name: String,
        _count: i32,
        _validate_only: bool,
    ) -> Result<(), ControllerError> {
        Err(not_yet())
    }

    /// AlterPartition (KIP-497).
    #[allow(clippy::too_many_arguments)]
    pub async fn alter_partition(
        &self,
        _broker_id: i32,
        _broker_epoch: i64,
        _topic_id: Uuid,
        _partition: i32,
        _leader_epoch: i32,
        _partition_epoch: i32,
        _new_isr: Vec<i32>,
    ) -> Result<PartitionRegistration, ControllerError> {
        Err(not_yet())
    }

    /// IncrementalAlterConfigs.
    pub async fn alter_configs(
        &self,
        _resource_type: i8,
        _resource_name: String,
        _ops: Vec<(String, Option<String>)>,
        _validate_only: bool,
    ) -> Result<(), ControllerError> {
        Err(not_yet())
    }

    /// AllocateProducerIds (KIP-730).
    pub async fn allocate_producer_ids(
        &self,
        _broker_id: i32,
        _broker_epoch: i64,
    ) -> Result<(i64, i32), ControllerError> {
        Err(not_yet())
    }

    /// Long-poll for committed metadata after `since_offset`.
    pub async fn fetch_metadata(
        &self,
        _since_offset: i64,
        _max_wait: Duration,
    ) -> Result<MetadataUpdate, ControllerError> {
        Err(not_yet())
    }

    /// DescribeQuorum (KIP-595).
    pub async fn describe_quorum(&self) -> Result<QuorumInfo, ControllerError> {
        Err(not_yet())
    }
}
