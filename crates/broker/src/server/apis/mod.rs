//! Request dispatch: one module per Kafka API, as Kafka's `KafkaApis` but split by API key.
//!
//! [`KafkaApis::handle`] takes one request frame (without its size prefix), decodes it with our own codec,
//! runs the API's handler, and encodes the response frame. Errors inside a request become Kafka error codes
//! in the response; a request that cannot be decoded or is not served closes the connection.

mod acls;
mod alter_configs;
mod alter_replica_log_dirs;
mod alter_user_scram_credentials;
mod api_versions;
mod client_quotas;
mod consumer_group_heartbeat;
pub use api_versions::response_for as api_versions_response_for;
mod create_partitions;
mod create_topics;
mod delete_groups;
mod delete_records;
mod delete_topics;
mod describe_cluster;
mod describe_configs;
mod describe_groups;
mod describe_log_dirs;
mod describe_producers;
mod describe_quorum;
mod describe_topic_partitions;
mod describe_user_scram_credentials;
mod elect_leaders;
pub mod errors;
mod fetch;
mod fetch_session;
mod find_coordinator;
mod heartbeat;
mod incremental_alter_configs;
mod init_producer_id;
mod join_group;
mod leave_group;
mod list_config_resources;
mod list_groups;
mod list_offsets;
mod metadata;
mod offset_commit;
mod offset_delete;
mod offset_fetch;
mod offset_for_leader_epoch;
mod partition_reassignments;
mod produce;
mod produce_verification;
mod request_quota;
mod sasl;
mod share_admin;
mod share_fetch;
mod share_group_heartbeat;
mod share_state;
mod sync_group;
mod telemetry;
mod transactions_admin;
mod txn;
mod txn_offset_commit;
mod unregister_broker;
mod update_features;
mod write_txn_markers;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use protocol::error::ErrorCode;
use protocol::{ApiKey, Chunk, RequestBody, RequestHeader, ResponseBody};

use crate::acls::Authorizer;
use crate::client_metrics::ClientTelemetry;
use crate::config::BrokerConfig;
use crate::config_admin::BrokerConfigManager;
use crate::dynamic_config::DynamicBrokerConfig;
use crate::group_coordinator::GroupCoordinatorService;
use crate::metadata::MetadataStore;
use crate::metadata_cache::MetadataCache;
use crate::observability::requests::{self, RequestTiming};
use crate::quorum::MetadataQuorum;
use crate::quota::Quotas;
use crate::scram::ScramCredentialManager;
use crate::server::context::{ConnectionContext, RequestContext};
use crate::topics::TopicManager;
use crate::txn_coordinator::TransactionCoordinatorService;
use replica::replica_manager::ReplicaManager;
use replica::replica_selector::ReplicaSelector;

/// The tracing target of the span each request's handler runs in (fields: `api`, `version`,
/// `correlation_id`, `client_id`, `principal`, `listener`, `peer`), at debug level: `runnel --log-format json`
/// enables it by default so every event a handler logs carries its request's context.
pub const REQUEST_SPAN_TARGET: &str = "runnel::request";

/// The APIs and version ranges this broker serves and advertises in ApiVersions (pitfall 12: exactly what
/// works). Each is the intersection of what the codec knows and what the handler implements; ranges follow
/// Apache Kafka 4.x.
pub const SUPPORTED_APIS: &[(ApiKey, i16, i16)] = &[
    (ApiKey::Produce, 3, 12),
    (ApiKey::Fetch, 4, 17),
    (ApiKey::ListOffsets, 1, 10),
    (ApiKey::Metadata, 0, 13),
    (ApiKey::FindCoordinator, 0, 6),
    (ApiKey::ApiVersions, 0, 4),
    (ApiKey::CreateTopics, 2, 7),
    (ApiKey::DeleteTopics, 1, 6),
    (ApiKey::InitProducerId, 0, 5),
    (ApiKey::DescribeConfigs, 1, 4),
    (ApiKey::AlterConfigs, 0, 2),
    (ApiKey::IncrementalAlterConfigs, 0, 1),
    (ApiKey::CreatePartitions, 0, 3),
    (ApiKey::DeleteRecords, 0, 2),
    (ApiKey::DescribeCluster, 0, 2),
    (ApiKey::AlterReplicaLogDirs, 1, 2),
    (ApiKey::DescribeLogDirs, 1, 4),
    (ApiKey::OffsetCommit, 2, 9),
    (ApiKey::OffsetFetch, 1, 9),
    (ApiKey::TxnOffsetCommit, 0, 5),
    (ApiKey::JoinGroup, 0, 9),
    (ApiKey::Heartbeat, 0, 4),
    (ApiKey::LeaveGroup, 0, 5),
    (ApiKey::SyncGroup, 0, 5),
    (ApiKey::DescribeGroups, 0, 6),
    (ApiKey::ListGroups, 0, 5),
    (ApiKey::ConsumerGroupHeartbeat, 0, 1),
    (ApiKey::ConsumerGroupDescribe, 0, 1),
    (ApiKey::ShareGroupHeartbeat, 1, 1),
    (ApiKey::ShareGroupDescribe, 1, 1),
    (ApiKey::ShareFetch, 1, 2),
    (ApiKey::ShareAcknowledge, 1, 2),
    (ApiKey::ReadShareGroupState, 0, 0),
    (ApiKey::WriteShareGroupState, 0, 1),
    (ApiKey::DescribeShareGroupOffsets, 0, 1),
    (ApiKey::AlterShareGroupOffsets, 0, 0),
    (ApiKey::DeleteShareGroupOffsets, 0, 0),
    (ApiKey::DeleteGroups, 0, 3),
    (ApiKey::OffsetDelete, 0, 0),
    (ApiKey::OffsetForLeaderEpoch, 2, 4),
    (ApiKey::ElectLeaders, 0, 2),
    (ApiKey::DescribeAcls, 1, 3),
    (ApiKey::CreateAcls, 1, 3),
    (ApiKey::DeleteAcls, 1, 3),
    (ApiKey::DescribeClientQuotas, 0, 1),
    (ApiKey::AlterClientQuotas, 0, 1),
    (ApiKey::SaslHandshake, 0, 1),
    (ApiKey::SaslAuthenticate, 0, 2),
    (ApiKey::DescribeUserScramCredentials, 0, 0),
    (ApiKey::AlterUserScramCredentials, 0, 0),
    (ApiKey::DescribeQuorum, 0, 2),
    (ApiKey::AddPartitionsToTxn, 0, 5),
    (ApiKey::AddOffsetsToTxn, 0, 4),
    (ApiKey::EndTxn, 0, 5),
    (ApiKey::DescribeTransactions, 0, 0),
    (ApiKey::ListTransactions, 0, 2),
    (ApiKey::WriteTxnMarkers, 1, 2),
    (ApiKey::DescribeProducers, 0, 0),
    (ApiKey::UpdateFeatures, 0, 2),
    (ApiKey::UnregisterBroker, 0, 0),
    (ApiKey::DescribeTopicPartitions, 0, 0),
    (ApiKey::ListConfigResources, 0, 1),
    (ApiKey::AlterPartitionReassignments, 0, 1),
    (ApiKey::ListPartitionReassignments, 0, 0),
    (ApiKey::GetTelemetrySubscriptions, 0, 0),
    (ApiKey::PushTelemetry, 0, 0),
];

/// The advertised version range of `key`, clipped to what the codec supports.
pub fn advertised_range(key: ApiKey) -> Option<(i16, i16)> {
    let (_, lo, hi) = SUPPORTED_APIS.iter().find(|(k, _, _)| *k == key)?;
    let (clo, chi) = protocol::supported_versions(key)?;
    let (lo, hi) = ((*lo).max(clo), (*hi).min(chi));
    (lo <= hi).then_some((lo, hi))
}

/// What the network layer does with a request.
#[derive(Debug)]
pub enum RequestOutcome {
    /// Send this encoded response frame (size prefix included).
    Respond(Vec<Chunk>),
    /// Send nothing (Produce with acks=0).
    NoResponse,
    /// The client is over a quota (KIP-219): send `response` (none for an acks=0 Produce), then read nothing
    /// more from the connection for `mute`.
    Throttled {
        /// The encoded response frame, if any.
        response: Option<Vec<Chunk>>,
        /// How long the connection stays muted after it.
        mute: Duration,
    },
    /// Close the connection; the reason is logged.
    Close(String),
}

/// The request handlers and the state they share.
#[derive(Debug)]
pub struct KafkaApis {
    config: BrokerConfig,
    metadata: Arc<MetadataStore>,
    replica_manager: Arc<ReplicaManager>,
    topics: Arc<TopicManager>,
    groups: Arc<GroupCoordinatorService>,
    /// Dynamic broker configs (KIP-226): the resolver, shared with the topic manager, and where changes go.
    broker_configs: Arc<BrokerConfigManager>,
    /// The cluster metadata handlers read (the replayed image in a cluster, a derived one standalone).
    metadata_cache: Arc<dyn MetadataCache>,
    /// The authorizer (`authorizer.class.name`), `None` without one.
    authorizer: Option<Arc<Authorizer>>,
    /// Client quotas and connection limits.
    quotas: Arc<Quotas>,
    /// SCRAM credentials (KIP-554): the cache SASL/SCRAM reads and where changes go.
    scram: Arc<ScramCredentialManager>,
    /// The metadata quorum DescribeQuorum reports (the controller's in a cluster, this broker standalone).
    quorum: Arc<dyn MetadataQuorum>,
    /// The transaction coordinator.
    transactions: Arc<TransactionCoordinatorService>,
    /// `replica.selector.class` (KIP-392): how a leader picks a consumer's preferred read replica; `None`
    /// (the default) = never.
    replica_selector: Option<ReplicaSelector>,
    /// Client metrics (KIP-714): subscriptions, pushed series.
    telemetry: Arc<ClientTelemetry>,
    /// Incremental fetch sessions (KIP-227), in memory only.
    fetch_sessions: parking_lot::Mutex<crate::fetch_session::FetchSessionCache>,
    /// Share groups (KIP-932): the share-partitions led here, their sessions and their persistence.
    shares: Arc<crate::share::SharePartitionManager>,
    /// Where group config changes go (the registry standalone, unless [`KafkaApis::with_group_config_admin`]
    /// names the controller's).
    group_config_admin: Arc<dyn crate::group_configs::GroupConfigAdmin>,
}

impl KafkaApis {
    /// The dispatcher over the broker's services (built once, by [`crate::Server::start`]).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        config: BrokerConfig,
        metadata: Arc<MetadataStore>,
        replica_manager: Arc<ReplicaManager>,
        topics: Arc<TopicManager>,
        groups: Arc<GroupCoordinatorService>,
        broker_configs: Arc<BrokerConfigManager>,
        metadata_cache: Arc<dyn MetadataCache>,
        authorizer: Option<Arc<Authorizer>>,
        quotas: Arc<Quotas>,
        scram: Arc<ScramCredentialManager>,
        quorum: Arc<dyn MetadataQuorum>,
        transactions: Arc<TransactionCoordinatorService>,
        telemetry: Arc<ClientTelemetry>,
    ) -> KafkaApis {
        let shares = crate::share::wire(
            &config,
            &metadata,
            &replica_manager,
            &topics,
            &metadata_cache,
        );
        KafkaApis {
            shares,
            group_config_admin: Arc::new(crate::group_configs::LocalGroupConfigAdmin(
                metadata.clone(),
            )),
            metadata,
            replica_manager,
            topics,
            groups,
            broker_configs,
            metadata_cache,
            authorizer,
            quotas,
            scram,
            quorum,
            transactions,
            telemetry,
            fetch_sessions: fetch_session::new_cache(&config),
            // Refused at startup (`Services::build`) when it names a class Runnel does not implement.
            replica_selector: crate::metadata_cache::replica_selector(&config)
                .ok()
                .flatten(),
            config,
        }
    }

    /// The dispatcher storing group config changes with `admin` (the controller's in a cluster).
    pub fn with_group_config_admin(
        mut self,
        admin: Arc<dyn crate::group_configs::GroupConfigAdmin>,
    ) -> KafkaApis {
        self.group_config_admin = admin;
        self
    }

    /// The dynamic configs of group `group` (empty when none is set), in both modes.
    pub fn group_config(&self, group: &str) -> std::collections::BTreeMap<String, String> {
        self.metadata.group_config(group)
    }

    /// The transaction coordinator (the caller starts its timer task).
    pub fn transaction_coordinator(&self) -> &Arc<TransactionCoordinatorService> {
        &self.transactions
    }

    /// Share groups (KIP-932): the share-partition manager (the caller starts its lock timer task).
    pub fn shares(&self) -> &Arc<crate::share::SharePartitionManager> {
        &self.shares
    }

    /// Client metrics (KIP-714).
    pub fn telemetry(&self) -> &Arc<ClientTelemetry> {
        &self.telemetry
    }

    /// The metadata quorum (DescribeQuorum).
    pub fn metadata_quorum(&self) -> &Arc<dyn MetadataQuorum> {
        &self.quorum
    }

    /// The SCRAM credentials SASL and the HTTP listener's Basic authentication check passwords against.
    pub fn scram_credentials(&self) -> &Arc<crate::scram::ScramCredentialCache> {
        self.scram.cache()
    }

    /// Client quotas and connection limits.
    pub fn quotas(&self) -> &Arc<Quotas> {
        &self.quotas
    }

    /// The dynamic broker configs' resolver (KIP-226).
    pub fn dynamic_config(&self) -> &DynamicBrokerConfig {
        self.broker_configs.dynamic()
    }

    /// The cluster metadata (brokers, partitions, controllers) the handlers answer from.
    pub fn metadata_cache(&self) -> &Arc<dyn MetadataCache> {
        &self.metadata_cache
    }

    /// The broker's topic manager.
    pub fn topics(&self) -> &Arc<TopicManager> {
        &self.topics
    }

    /// The group coordinator (the caller starts its loader and timer task).
    pub fn group_coordinator(&self) -> &Arc<GroupCoordinatorService> {
        &self.groups
    }

    /// The cluster id (what Metadata and DescribeCluster answer).
    pub fn cluster_id(&self) -> String {
        self.metadata.cluster_id().to_string()
    }

    /// The broker configuration.
    pub fn config(&self) -> &BrokerConfig {
        &self.config
    }

    /// Handles one request frame that arrived on `connection`: the decoded header and the connection make the
    /// [`RequestContext`] every handler receives. The quotas' throttle times (KIP-124, KIP-219, KIP-599) are
    /// put in the response, and the connection muted for the largest. The request metrics are recorded
    /// without a send time (see [`KafkaApis::handle_timed`]).
    pub async fn handle(
        &self,
        frame: Bytes,
        connection: &Arc<ConnectionContext>,
    ) -> RequestOutcome {
        let (outcome, timing) = self
            .handle_timed(frame, connection, tokio::time::Instant::now())
            .await;
        if let Some(timing) = timing {
            timing.record(Duration::ZERO);
        }
        outcome
    }

    /// [`KafkaApis::handle`] for a frame whose last byte arrived at `received`, returning what the request
    /// metrics need besides the response's send time (`None` for a frame closed before a handler ran); the
    /// caller records it once the response is written.
    pub async fn handle_timed(
        &self,
        frame: Bytes,
        connection: &Arc<ConnectionContext>,
        received: tokio::time::Instant,
    ) -> (RequestOutcome, Option<RequestTiming>) {
        let handler_start = tokio::time::Instant::now();
        let frame_len = frame.len();
        let (api, version, correlation_id, header, body) = match Self::admit(frame) {
            Ok(admitted) => admitted,
            Err(outcome) => return (outcome, None),
        };
        let mut timing = RequestTiming {
            request: requests::request_name(api, Self::follower_fetch(version, &body)),
            version,
            request_bytes: frame_len,
            queue: handler_start.saturating_duration_since(received),
            local: Duration::ZERO,
            remote: Duration::ZERO,
            throttle: Duration::ZERO,
        };
        let ctx = RequestContext::new(header, connection.clone())
            .with_authorizer(self.authorizer.clone());
        let clients = &self.quotas.clients;
        let (user, client_id) = (&connection.principal.name, ctx.client_id().unwrap_or(""));
        // KIP-219: a Produce counts its request's bytes against the client's producer_byte_rate.
        let produce_throttle_ms = match api {
            ApiKey::Produce => clients.record_produce(user, client_id, frame_len),
            _ => 0,
        };
        // KIP-124: the handler's time counts against the client's request_percentage (decoding included).
        let timed = clients.request_quotas_enabled() && !request_quota::is_exempt(&ctx, &body);
        let dispatch_start = tokio::time::Instant::now();
        let mut polled = Duration::ZERO;
        // The request's context for every event its handler logs (shown by `--log-format json`, whose
        // filter enables this target; off by default: a span per request costs a little).
        let span = tracing::debug_span!(target: REQUEST_SPAN_TARGET, "request",
            api = timing.request, version, correlation_id, client_id,
            principal = %connection.principal.name, listener = %connection.listener_name,
            peer = ?connection.peer);
        let handler = tracing::Instrument::instrument(self.dispatch(&ctx, body), span);
        let dispatched = request_quota::timed(&mut polled, handler).await;
        timing.remote = dispatch_start.elapsed().saturating_sub(polled);
        timing.local = polled;
        let request_throttle_ms = match timed {
            true => {
                let busy = polled + (dispatch_start - handler_start);
                clients.record_request_time(user, client_id, request_quota::nanos(busy))
            }
            false => 0,
        };
        let mut response = match dispatched {
            Ok(response) => response,
            Err(RequestOutcome::NoResponse) if produce_throttle_ms.max(request_throttle_ms) > 0 => {
                let mute = Duration::from_millis(produce_throttle_ms.max(request_throttle_ms));
                timing.throttle = mute;
                let outcome = RequestOutcome::Throttled {
                    response: None,
                    mute,
                };
                return (outcome, Some(timing));
            }
            Err(outcome) => return (outcome, Some(timing)),
        };
        record_errors(timing.request, &response);
        let throttle_ms = request_quota::apply(
            clients,
            &ctx,
            &mut response,
            produce_throttle_ms,
            request_throttle_ms,
        );
        let encoding = tokio::time::Instant::now();
        let outcome = encode(correlation_id, api, version, &response);
        timing.local += encoding.elapsed();
        if timed {
            // Kafka records the network thread's share without throttling for it.
            let nanos = request_quota::nanos(encoding.elapsed());
            clients.record_request_time(user, client_id, nanos);
        }
        timing.throttle = Duration::from_millis(throttle_ms);
        let outcome = match outcome {
            RequestOutcome::Respond(chunks) if throttle_ms > 0 => RequestOutcome::Throttled {
                response: Some(chunks),
                mute: Duration::from_millis(throttle_ms),
            },
            outcome => outcome,
        };
        (outcome, Some(timing))
    }

    /// The checks before a handler runs: a header, a known API served in this version (an ApiVersions
    /// outside its range is answered with error 35, KIP-511), a body that decodes. `Err` = how the frame is
    /// answered instead.
    fn admit(
        frame: Bytes,
    ) -> Result<(ApiKey, i16, i32, protocol::RequestHeader, RequestBody), RequestOutcome> {
        let Some((key, version, correlation_id)) = RequestHeader::peek(&frame) else {
            return Err(RequestOutcome::Close(
                "request shorter than its header".into(),
            ));
        };
        let Some(api) = ApiKey::from_i16(key) else {
            return Err(RequestOutcome::Close(format!("unknown api key {key}")));
        };
        let Some((lo, hi)) = advertised_range(api) else {
            return Err(RequestOutcome::Close(format!(
                "api {} is not served",
                api.name()
            )));
        };
        if version < lo || version > hi {
            if api == ApiKey::ApiVersions {
                // KIP-511: answer with a v0 body carrying error 35 and our real ranges, so the client retries.
                let body = api_versions::response(ErrorCode::UNSUPPORTED_VERSION);
                return Err(encode(
                    correlation_id,
                    api,
                    0,
                    &ResponseBody::ApiVersions(body),
                ));
            }
            return Err(RequestOutcome::Close(format!(
                "{} v{version} is outside the served range {lo}..={hi}",
                api.name()
            )));
        }
        match protocol::decode_request(frame) {
            Ok((header, body)) => Ok((api, version, correlation_id, header, body)),
            Err(e) => Err(RequestOutcome::Close(format!(
                "{} v{version}: {e}",
                api.name()
            ))),
        }
    }

    /// True for a follower's Fetch (Kafka's `FetchFollower` request metrics).
    fn follower_fetch(version: i16, body: &RequestBody) -> bool {
        matches!(body, RequestBody::Fetch(f) if fetch::replica_id(version, f) >= 0)
    }

    /// Runs the handler of a decoded request. `Err` is what the connection does instead of answering (acks=0
    /// Produce: nothing; a request that is not served: close).
    async fn dispatch(
        &self,
        ctx: &RequestContext,
        body: RequestBody,
    ) -> Result<ResponseBody, RequestOutcome> {
        Ok(match body {
            RequestBody::ApiVersions(r) => {
                let epoch = self.metadata_cache().image().offset;
                ResponseBody::ApiVersions(api_versions::handle(ctx, r, epoch))
            }
            RequestBody::Metadata(r) => {
                ResponseBody::Metadata(metadata::handle(self, ctx, r).await)
            }
            RequestBody::Produce(r) => match produce::handle(self, ctx, r).await {
                produce::Outcome::Respond(resp) => ResponseBody::Produce(resp),
                produce::Outcome::NoResponse => return Err(RequestOutcome::NoResponse),
                produce::Outcome::Close(reason) => return Err(RequestOutcome::Close(reason)),
            },
            RequestBody::Fetch(r) => ResponseBody::Fetch(fetch::handle(self, ctx, r).await),
            RequestBody::ListOffsets(r) => {
                ResponseBody::ListOffsets(list_offsets::handle(self, ctx, r))
            }
            RequestBody::CreateTopics(r) => {
                ResponseBody::CreateTopics(create_topics::handle(self, ctx, r).await)
            }
            RequestBody::DeleteTopics(r) => {
                ResponseBody::DeleteTopics(delete_topics::handle(self, ctx, r).await)
            }
            RequestBody::InitProducerId(r) => {
                ResponseBody::InitProducerId(init_producer_id::handle(self, ctx, r).await)
            }
            RequestBody::DescribeConfigs(r) => {
                ResponseBody::DescribeConfigs(describe_configs::handle(self, ctx, r))
            }
            RequestBody::FindCoordinator(r) => {
                ResponseBody::FindCoordinator(find_coordinator::handle(self, ctx, r).await)
            }
            RequestBody::JoinGroup(r) => {
                ResponseBody::JoinGroup(join_group::handle(self, ctx, r).await)
            }
            RequestBody::SyncGroup(r) => {
                ResponseBody::SyncGroup(sync_group::handle(self, ctx, r).await)
            }
            RequestBody::Heartbeat(r) => {
                ResponseBody::Heartbeat(heartbeat::handle(self, ctx, r).await)
            }
            RequestBody::LeaveGroup(r) => {
                ResponseBody::LeaveGroup(leave_group::handle(self, ctx, r).await)
            }
            RequestBody::OffsetCommit(r) => {
                ResponseBody::OffsetCommit(offset_commit::handle_async(self, ctx, r).await)
            }
            RequestBody::TxnOffsetCommit(r) => {
                ResponseBody::TxnOffsetCommit(txn_offset_commit::handle(self, ctx, r).await)
            }
            RequestBody::OffsetFetch(r) => {
                ResponseBody::OffsetFetch(offset_fetch::handle(self, ctx, r))
            }
            RequestBody::DescribeGroups(r) => {
                ResponseBody::DescribeGroups(describe_groups::handle(self, ctx, r))
            }
            RequestBody::ListGroups(r) => {
                ResponseBody::ListGroups(list_groups::handle(self, ctx, r))
            }
            RequestBody::DeleteGroups(r) => {
                ResponseBody::DeleteGroups(delete_groups::handle(self, ctx, r).await)
            }
            RequestBody::OffsetDelete(r) => {
                ResponseBody::OffsetDelete(offset_delete::handle(self, ctx, r).await)
            }
            RequestBody::AlterConfigs(r) => {
                ResponseBody::AlterConfigs(alter_configs::handle(self, ctx, r).await)
            }
            RequestBody::IncrementalAlterConfigs(r) => ResponseBody::IncrementalAlterConfigs(
                incremental_alter_configs::handle(self, ctx, r).await,
            ),
            RequestBody::CreatePartitions(r) => {
                ResponseBody::CreatePartitions(create_partitions::handle(self, ctx, r).await)
            }
            RequestBody::DeleteRecords(r) => {
                ResponseBody::DeleteRecords(delete_records::handle(self, ctx, r))
            }
            RequestBody::DescribeCluster(r) => {
                ResponseBody::DescribeCluster(describe_cluster::handle(self, ctx, r))
            }
            RequestBody::OffsetForLeaderEpoch(r) => {
                ResponseBody::OffsetForLeaderEpoch(offset_for_leader_epoch::handle(self, ctx, r))
            }
            RequestBody::WriteTxnMarkers(r) => {
                ResponseBody::WriteTxnMarkers(write_txn_markers::handle(self, ctx, r).await)
            }
            RequestBody::DescribeProducers(r) => {
                ResponseBody::DescribeProducers(describe_producers::handle(self, ctx, r))
            }
            other => self.dispatch_security(ctx, other).await?,
        })
    }

    /// [`KafkaApis::dispatch`] continued: the log-dir and ACL APIs, then [`KafkaApis::dispatch_more`].
    async fn dispatch_security(
        &self,
        ctx: &RequestContext,
        body: RequestBody,
    ) -> Result<ResponseBody, RequestOutcome> {
        Ok(match body {
            RequestBody::AlterReplicaLogDirs(r) => {
                ResponseBody::AlterReplicaLogDirs(alter_replica_log_dirs::handle(self, ctx, r))
            }
            RequestBody::DescribeLogDirs(r) => {
                ResponseBody::DescribeLogDirs(describe_log_dirs::handle(self, ctx, r))
            }
            RequestBody::DescribeAcls(r) => ResponseBody::DescribeAcls(acls::describe(ctx, r)),
            RequestBody::CreateAcls(r) => ResponseBody::CreateAcls(acls::create(ctx, r).await),
            RequestBody::DeleteAcls(r) => ResponseBody::DeleteAcls(acls::delete(ctx, r).await),
            other => return self.dispatch_more(ctx, other).await,
        })
    }

    /// [`KafkaApis::dispatch`] continued: the client quota, SASL, SCRAM credential, DescribeQuorum and
    /// transaction APIs, then [`KafkaApis::dispatch_share`].
    async fn dispatch_more(
        &self,
        ctx: &RequestContext,
        body: RequestBody,
    ) -> Result<ResponseBody, RequestOutcome> {
        Ok(match body {
            RequestBody::ConsumerGroupHeartbeat(r) => ResponseBody::ConsumerGroupHeartbeat(
                consumer_group_heartbeat::heartbeat(self, ctx, r).await,
            ),
            RequestBody::ConsumerGroupDescribe(r) => ResponseBody::ConsumerGroupDescribe(
                consumer_group_heartbeat::describe(self, ctx, r),
            ),
            RequestBody::ElectLeaders(r) => {
                ResponseBody::ElectLeaders(elect_leaders::handle(self, ctx, r).await)
            }
            RequestBody::UnregisterBroker(r) => {
                ResponseBody::UnregisterBroker(unregister_broker::handle(self, ctx, r).await)
            }
            RequestBody::UpdateFeatures(r) => {
                ResponseBody::UpdateFeatures(update_features::handle(self, ctx, r))
            }
            RequestBody::DescribeClientQuotas(r) => {
                ResponseBody::DescribeClientQuotas(client_quotas::describe(self, ctx, r))
            }
            RequestBody::AlterClientQuotas(r) => {
                ResponseBody::AlterClientQuotas(client_quotas::alter(self, ctx, r).await)
            }
            RequestBody::SaslHandshake(r) => ResponseBody::SaslHandshake(sasl::handshake(r)),
            RequestBody::SaslAuthenticate(r) => {
                ResponseBody::SaslAuthenticate(sasl::authenticate(r))
            }
            RequestBody::DescribeUserScramCredentials(r) => {
                ResponseBody::DescribeUserScramCredentials(describe_user_scram_credentials::handle(
                    self, ctx, r,
                ))
            }
            RequestBody::AlterUserScramCredentials(r) => ResponseBody::AlterUserScramCredentials(
                alter_user_scram_credentials::handle(self, ctx, r).await,
            ),
            RequestBody::DescribeTopicPartitions(r) => ResponseBody::DescribeTopicPartitions(
                describe_topic_partitions::handle(self, ctx, r),
            ),
            RequestBody::ListConfigResources(r) => {
                ResponseBody::ListConfigResources(list_config_resources::handle(self, ctx, r))
            }
            RequestBody::AlterPartitionReassignments(r) => {
                ResponseBody::AlterPartitionReassignments(
                    partition_reassignments::alter(self, ctx, r).await,
                )
            }
            RequestBody::ListPartitionReassignments(r) => ResponseBody::ListPartitionReassignments(
                partition_reassignments::list(self, ctx, r),
            ),
            RequestBody::DescribeQuorum(r) => {
                ResponseBody::DescribeQuorum(describe_quorum::handle(self, ctx, r).await)
            }
            RequestBody::AddPartitionsToTxn(r) => {
                ResponseBody::AddPartitionsToTxn(txn::add_partitions(self, ctx, r).await)
            }
            RequestBody::AddOffsetsToTxn(r) => {
                ResponseBody::AddOffsetsToTxn(txn::add_offsets(self, ctx, r).await)
            }
            RequestBody::EndTxn(r) => ResponseBody::EndTxn(txn::end_txn(self, ctx, r).await),
            RequestBody::DescribeTransactions(r) => {
                ResponseBody::DescribeTransactions(transactions_admin::describe(self, ctx, r))
            }
            RequestBody::ListTransactions(r) => {
                ResponseBody::ListTransactions(transactions_admin::list(self, ctx, r).await)
            }
            RequestBody::GetTelemetrySubscriptions(r) => {
                ResponseBody::GetTelemetrySubscriptions(telemetry::get_subscriptions(self, ctx, r))
            }
            RequestBody::PushTelemetry(r) => {
                ResponseBody::PushTelemetry(telemetry::push(self, ctx, r))
            }
            other => return self.dispatch_share(ctx, other).await,
        })
    }

    /// [`KafkaApis::dispatch`] continued: the share-group APIs (KIP-932), and the close of a request not
    /// served.
    async fn dispatch_share(
        &self,
        ctx: &RequestContext,
        body: RequestBody,
    ) -> Result<ResponseBody, RequestOutcome> {
        Ok(match body {
            RequestBody::ShareGroupHeartbeat(r) => ResponseBody::ShareGroupHeartbeat(
                share_group_heartbeat::heartbeat(self, ctx, r).await,
            ),
            RequestBody::ShareGroupDescribe(r) => {
                ResponseBody::ShareGroupDescribe(share_group_heartbeat::describe(self, ctx, r))
            }
            RequestBody::ReadShareGroupState(r) => {
                ResponseBody::ReadShareGroupState(share_state::read(self, ctx, r).await)
            }
            RequestBody::WriteShareGroupState(r) => {
                ResponseBody::WriteShareGroupState(share_state::write(self, ctx, r).await)
            }
            RequestBody::DescribeShareGroupOffsets(r) => {
                ResponseBody::DescribeShareGroupOffsets(share_admin::describe(self, ctx, r).await)
            }
            RequestBody::AlterShareGroupOffsets(r) => {
                ResponseBody::AlterShareGroupOffsets(share_admin::alter(self, ctx, r).await)
            }
            RequestBody::DeleteShareGroupOffsets(r) => {
                ResponseBody::DeleteShareGroupOffsets(share_admin::delete(self, ctx, r).await)
            }
            RequestBody::ShareFetch(r) => {
                ResponseBody::ShareFetch(share_fetch::fetch(self, ctx, r).await)
            }
            RequestBody::ShareAcknowledge(r) => {
                ResponseBody::ShareAcknowledge(share_fetch::acknowledge_request(self, ctx, r).await)
            }
            other => {
                return Err(RequestOutcome::Close(format!(
                    "api {} is not served",
                    other.api_key().name()
                )))
            }
        })
    }
}

/// Counts every error code of `response` (Kafka's `errorCounts`: the top-level code and each nested one,
/// `NONE` included) under `request` (`kafka_network_requestmetrics_errors_total`).
fn record_errors(request: &'static str, response: &ResponseBody) {
    // Responses carry a handful of distinct codes: count them first, then touch the registry once each.
    let mut counts: Vec<(i16, u64)> = Vec::new();
    response.visit_error_codes(
        &mut |code| match counts.iter_mut().find(|(c, _)| *c == code) {
            Some((_, n)) => *n += 1,
            None => counts.push((code, 1)),
        },
    );
    for (code, n) in counts {
        let error = ErrorCode(code).name();
        metrics::counter!("kafka_network_requestmetrics_errors_total", "request" => request, "error" => error)
            .increment(n);
    }
}

fn encode(correlation_id: i32, api: ApiKey, version: i16, body: &ResponseBody) -> RequestOutcome {
    match protocol::encode_response(correlation_id, api, version, body) {
        Ok(chunks) => RequestOutcome::Respond(chunks),
        Err(e) => {
            tracing::error!(api = api.name(), version, error = %e, "cannot encode response");
            RequestOutcome::Close(format!("encoding {} v{version}: {e}", api.name()))
        }
    }
}
