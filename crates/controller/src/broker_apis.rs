//! Broker-to-controller requests in Kafka's framing: BrokerRegistration (62) and BrokerHeartbeat (63)
//! (KIP-631), AlterPartition (56, KIP-497), sent by [`crate::ControllerClient`] and answered on the
//! controller listener ([`crate::kafka_apis`]) as Kafka's `ControllerApis` answers them. Both sides translate
//! to and from the controller's own request types ([`ClientRequest`], [`ClientResponse`]), so the
//! decisions stay in [`crate::control::QuorumControl`].
//!
//! What the Kafka messages carry that Runnel's types do not, and back:
//! - BrokerRegistration v4: `ClusterId` is checked against the controller's (INCONSISTENT_CLUSTER_ID, 104,
//!   on a mismatch; an empty id is not checked). `Listeners` carry every advertised listener; the first
//!   is the inter-broker one (Runnel's `host`/`port`), the client puts it first. `LogDirs` carries the
//!   `directory.id` of every data directory (KIP-858). `Features` and `PreviousBrokerEpoch` are sent
//!   empty / -1 and ignored (Runnel's feature levels are fixed).
//! - BrokerHeartbeat v2: `OfflineLogDirs` are the ids of the failed data directories (Kafka's reserved
//!   `DirectoryId.LOST` (0, 1): all of them); `CordonedLogDirs` is not sent.
//! - AssignReplicasToDirs (KIP-858) and Runnel's partition sizes travel as JSON frames.
//! - AlterPartition v3: one partition per request from the client; the controller answers every item
//!   of a request. `NewIsrWithEpochs` carry broker epoch -1 ("not checked", as KIP-903 allows); v2's
//!   `NewIsr` is accepted too. The answer states leader, leader epoch, ISR and partition epoch (no replica
//!   set: AlterPartition never changes it).
//! - Errors are codes only (Kafka's messages have no error message field); NOT_CONTROLLER (41) names no
//!   leader, so the client tries the next voter at once.
//!
//! Controllers older than this module close the connection on these requests: upgrade the controllers
//! before the brokers (as for [`ClientRequest::WithOffset`]).

use bytes::Bytes;
use metadata::{
    AlterPartition, BrokerEndpoint, ControllerError, Heartbeat, HeartbeatReply,
    PartitionRegistration, RegisterBroker,
};
use protocol::messages::{
    alter_partition_request, alter_partition_response, broker_registration_request,
    AlterPartitionRequest, AlterPartitionResponse, BrokerHeartbeatRequest, BrokerHeartbeatResponse,
    BrokerRegistrationRequest, BrokerRegistrationResponse,
};
use protocol::{ApiKey, ErrorCode, RequestBody, RequestHeader, ResponseBody};
use types::{BrokerEpoch, BrokerId, LeaderEpoch, PartitionEpoch};

use crate::rpc::{ClientRequest, ClientResponse, RpcRequest, RpcResponse};
use crate::server::Inner;

/// The BrokerRegistration version the client sends (Kafka 4.4's newest).
const BROKER_REGISTRATION_VERSION: i16 = 4;
/// The BrokerHeartbeat version the client sends (Kafka 4.4's newest).
const BROKER_HEARTBEAT_VERSION: i16 = 2;
/// The AlterPartition version the client sends (Kafka 4.4's newest).
const ALTER_PARTITION_VERSION: i16 = 3;
/// A broker request as a Kafka request frame.
#[derive(Debug)]
pub(crate) struct KafkaCall {
    /// The request's API.
    pub(crate) api: ApiKey,
    /// The version it is sent in.
    pub(crate) version: i16,
    /// The frame, size prefix included, correlation id 0 (one request per connection).
    pub(crate) frame: Bytes,
}

/// The Kafka request standing for `req` when it has one (registration, heartbeat, AlterPartition), sent
/// with `cluster_id` in a registration; `None`: `req` travels as a JSON frame. Errors: the encoder's (a
/// bug), as text.
pub(crate) fn to_kafka(req: &ClientRequest, cluster_id: &str) -> Result<Option<KafkaCall>, String> {
    let (version, body) = match req {
        ClientRequest::RegisterBroker(r) => (
            BROKER_REGISTRATION_VERSION,
            RequestBody::BrokerRegistration(registration_request(r, cluster_id)),
        ),
        ClientRequest::Heartbeat(hb) => (
            BROKER_HEARTBEAT_VERSION,
            RequestBody::BrokerHeartbeat(BrokerHeartbeatRequest {
                broker_id: hb.broker_id.get(),
                broker_epoch: hb.broker_epoch.get(),
                current_metadata_offset: hb.metadata_offset,
                want_fence: hb.want_fence,
                want_shut_down: hb.want_shutdown,
                offline_log_dirs: hb.offline_log_dirs.clone(),
                ..Default::default()
            }),
        ),
        ClientRequest::AlterPartition(a) => (
            ALTER_PARTITION_VERSION,
            RequestBody::AlterPartition(alter_partition_request(a)),
        ),
        _ => return Ok(None),
    };
    let api = body.api_key();
    let header = RequestHeader {
        request_api_key: api as i16,
        request_api_version: version,
        correlation_id: 0,
        client_id: Some("runnel-broker".into()),
        unknown_tagged_fields: Vec::new(),
    };
    let frame = protocol::encode_request(&header, &body)
        .map_err(|e| format!("encoding {} v{version}: {e}", api.name()))?;
    Ok(Some(KafkaCall {
        api,
        version,
        frame,
    }))
}

/// BrokerRegistration for `r`: the inter-broker listener (`host`/`port`) first.
fn registration_request(r: &RegisterBroker, cluster_id: &str) -> BrokerRegistrationRequest {
    let is_inter_broker = |l: &BrokerEndpoint| l.host == r.host && l.port == r.port;
    let mut listeners: Vec<&BrokerEndpoint> = r.listeners.iter().collect();
    listeners.sort_by_key(|l| !is_inter_broker(l));
    let mut wire: Vec<broker_registration_request::Listener> = listeners
        .into_iter()
        .map(|l| broker_registration_request::Listener {
            name: l.name.clone(),
            host: l.host.clone(),
            port: l.port,
            security_protocol: l.security_protocol,
            ..Default::default()
        })
        .collect();
    if !r.listeners.iter().any(is_inter_broker) {
        // A registration without named listeners (or none matching): its endpoint, unnamed, first.
        wire.insert(
            0,
            broker_registration_request::Listener {
                host: r.host.clone(),
                port: r.port,
                ..Default::default()
            },
        );
    }
    BrokerRegistrationRequest {
        broker_id: r.broker_id.get(),
        cluster_id: cluster_id.to_string(),
        incarnation_id: r.incarnation_id,
        listeners: wire,
        rack: r.rack.clone(),
        log_dirs: r.log_dirs.clone(),
        ..Default::default()
    }
}

/// AlterPartition for one partition; ISR members' broker epochs are -1 (not checked).
fn alter_partition_request(a: &AlterPartition) -> AlterPartitionRequest {
    AlterPartitionRequest {
        broker_id: a.broker_id.get(),
        broker_epoch: a.broker_epoch.get(),
        topics: vec![alter_partition_request::TopicData {
            topic_id: a.topic_id,
            partitions: vec![alter_partition_request::PartitionData {
                partition_index: a.partition,
                leader_epoch: a.leader_epoch.get(),
                new_isr: a.new_isr.iter().map(|b| b.get()).collect(),
                new_isr_with_epochs: a
                    .new_isr
                    .iter()
                    .map(|b| alter_partition_request::BrokerState {
                        broker_id: b.get(),
                        broker_epoch: -1,
                        ..Default::default()
                    })
                    .collect(),
                partition_epoch: a.partition_epoch.get(),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// The error a Kafka response's code stands for, as the client reports it: NOT_CONTROLLER becomes
/// [`ClientResponse::NotController`] (leader unknown), another code a [`ControllerError`]; `None` for 0.
fn failed(api: ApiKey, code: i16) -> Option<Result<ControllerError, ClientResponse>> {
    match ErrorCode(code) {
        ErrorCode::NONE => None,
        ErrorCode::NOT_CONTROLLER => Some(Err(ClientResponse::NotController {
            leader: None,
            leader_addr: None,
        })),
        code => Some(Ok(ControllerError::new(
            code,
            format!("{} failed: {}", api.name(), code.name()),
        ))),
    }
}

/// The answer a broker reads from the Kafka response to its request (see [`to_kafka`]). An AlterPartition
/// answer's registration has no replicas (the response carries none).
pub(crate) fn from_kafka(body: ResponseBody) -> ClientResponse {
    match body {
        ResponseBody::BrokerRegistration(r) => {
            match failed(ApiKey::BrokerRegistration, r.error_code) {
                Some(Err(not_controller)) => not_controller,
                Some(Ok(e)) => ClientResponse::RegisterBroker(Err(e)),
                None => ClientResponse::RegisterBroker(Ok(BrokerEpoch(r.broker_epoch))),
            }
        }
        ResponseBody::BrokerHeartbeat(r) => match failed(ApiKey::BrokerHeartbeat, r.error_code) {
            Some(Err(not_controller)) => not_controller,
            Some(Ok(e)) => ClientResponse::Heartbeat(Err(e)),
            None => ClientResponse::Heartbeat(Ok(HeartbeatReply {
                is_fenced: r.is_fenced,
                is_caught_up: r.is_caught_up,
                should_shut_down: r.should_shut_down,
            })),
        },
        ResponseBody::AlterPartition(r) => alter_partition_answer(r),
        other => ClientResponse::Error(ControllerError::new(
            ErrorCode::UNKNOWN_SERVER_ERROR,
            format!("unexpected {} response", other.api_key().name()),
        )),
    }
}

/// The answer to a one-partition AlterPartition (see [`alter_partition_request`]).
fn alter_partition_answer(r: AlterPartitionResponse) -> ClientResponse {
    let answer = match failed(ApiKey::AlterPartition, r.error_code) {
        Some(Err(not_controller)) => return not_controller,
        Some(Ok(e)) => Err(e),
        None => {
            let item = r.topics.into_iter().flat_map(|t| t.partitions).next();
            match item {
                None => Err(ControllerError::new(
                    ErrorCode::UNKNOWN_SERVER_ERROR,
                    "AlterPartition answered no partition",
                )),
                Some(p) => match failed(ApiKey::AlterPartition, p.error_code) {
                    Some(Err(not_controller)) => return not_controller,
                    Some(Ok(e)) => Err(e),
                    None => Ok(PartitionRegistration {
                        replicas: Vec::new(),
                        isr: p.isr.into_iter().map(BrokerId).collect(),
                        leader: BrokerId(p.leader_id),
                        leader_epoch: LeaderEpoch(p.leader_epoch),
                        partition_epoch: PartitionEpoch(p.partition_epoch),
                        adding_replicas: Vec::new(),
                        removing_replicas: Vec::new(),
                        directories: Vec::new(),
                    }),
                },
            }
        }
    };
    ClientResponse::AlterPartition(answer)
}

/// Answers a broker request that arrived in Kafka's framing: `None` when `body` is not one. `authorized`:
/// the peer may perform CLUSTER_ACTION on the cluster (else CLUSTER_AUTHORIZATION_FAILED, 31, as Kafka's
/// controller answers).
pub(crate) async fn answer(
    inner: &Inner,
    body: RequestBody,
    authorized: bool,
) -> Option<ResponseBody> {
    Some(match body {
        RequestBody::BrokerRegistration(r) => {
            ResponseBody::BrokerRegistration(broker_registration(inner, r, authorized).await)
        }
        RequestBody::BrokerHeartbeat(r) => {
            ResponseBody::BrokerHeartbeat(broker_heartbeat(inner, r, authorized).await)
        }
        RequestBody::AlterPartition(r) => {
            ResponseBody::AlterPartition(alter_partition(inner, r, authorized).await)
        }
        _ => return None,
    })
}

/// The controller's answer to one of its own requests; NOT_CONTROLLER and whole-request failures as
/// `Err(code)`.
async fn ask(inner: &Inner, req: ClientRequest) -> Result<ClientResponse, ErrorCode> {
    match inner.handle(RpcRequest::Client(req)).await {
        RpcResponse::Client(ClientResponse::NotController { .. }) => Err(ErrorCode::NOT_CONTROLLER),
        RpcResponse::Client(ClientResponse::Error(e)) => Err(e.code),
        RpcResponse::Client(c) => Ok(c),
        _ => Err(ErrorCode::UNKNOWN_SERVER_ERROR),
    }
}

async fn broker_registration(
    inner: &Inner,
    r: BrokerRegistrationRequest,
    authorized: bool,
) -> BrokerRegistrationResponse {
    let refused = |code: ErrorCode| BrokerRegistrationResponse {
        error_code: code.0,
        ..Default::default()
    };
    if !authorized {
        return refused(ErrorCode::CLUSTER_AUTHORIZATION_FAILED);
    }
    let ours = inner.sm.state.read().image.cluster_id.clone();
    if !r.cluster_id.is_empty() && r.cluster_id != ours {
        tracing::warn!(broker = r.broker_id, cluster_id = %r.cluster_id, ours = %ours, "BrokerRegistration from another cluster refused");
        return refused(ErrorCode::INCONSISTENT_CLUSTER_ID);
    }
    let Some(first) = r.listeners.first() else {
        return refused(ErrorCode::INVALID_REQUEST);
    };
    let register = RegisterBroker {
        broker_id: BrokerId(r.broker_id),
        incarnation_id: r.incarnation_id,
        host: first.host.clone(),
        port: first.port,
        rack: r.rack,
        listeners: r
            .listeners
            .iter()
            .filter(|l| !l.name.is_empty())
            .map(|l| BrokerEndpoint {
                name: l.name.clone(),
                host: l.host.clone(),
                port: l.port,
                security_protocol: l.security_protocol,
            })
            .collect(),
        log_dirs: r.log_dirs,
    };
    match ask(inner, ClientRequest::RegisterBroker(register)).await {
        Ok(ClientResponse::RegisterBroker(Ok(epoch))) => BrokerRegistrationResponse {
            broker_epoch: epoch.get(),
            ..Default::default()
        },
        Ok(ClientResponse::RegisterBroker(Err(e))) => refused(e.code),
        Ok(_) => refused(ErrorCode::UNKNOWN_SERVER_ERROR),
        Err(code) => refused(code),
    }
}

async fn broker_heartbeat(
    inner: &Inner,
    r: BrokerHeartbeatRequest,
    authorized: bool,
) -> BrokerHeartbeatResponse {
    let refused = |code: ErrorCode| BrokerHeartbeatResponse {
        error_code: code.0,
        ..Default::default()
    };
    if !authorized {
        return refused(ErrorCode::CLUSTER_AUTHORIZATION_FAILED);
    }
    let hb = Heartbeat {
        broker_id: BrokerId(r.broker_id),
        broker_epoch: BrokerEpoch(r.broker_epoch),
        metadata_offset: r.current_metadata_offset,
        want_fence: r.want_fence,
        want_shutdown: r.want_shut_down,
        offline_log_dirs: r.offline_log_dirs,
    };
    match ask(inner, ClientRequest::Heartbeat(hb)).await {
        Ok(ClientResponse::Heartbeat(Ok(reply))) => BrokerHeartbeatResponse {
            is_caught_up: reply.is_caught_up,
            is_fenced: reply.is_fenced,
            should_shut_down: reply.should_shut_down,
            ..Default::default()
        },
        Ok(ClientResponse::Heartbeat(Err(e))) => refused(e.code),
        Ok(_) => refused(ErrorCode::UNKNOWN_SERVER_ERROR),
        Err(code) => refused(code),
    }
}

/// Every item of the request, one controller decision each; NOT_CONTROLLER on any item answers the whole
/// request with it (as Kafka's controller, which is either active for all of them or for none).
async fn alter_partition(
    inner: &Inner,
    r: AlterPartitionRequest,
    authorized: bool,
) -> AlterPartitionResponse {
    let refused = |code: ErrorCode| AlterPartitionResponse {
        error_code: code.0,
        ..Default::default()
    };
    if !authorized {
        return refused(ErrorCode::CLUSTER_AUTHORIZATION_FAILED);
    }
    let mut topics = Vec::with_capacity(r.topics.len());
    for t in r.topics {
        let mut partitions = Vec::with_capacity(t.partitions.len());
        for p in t.partitions {
            let new_isr = if p.new_isr_with_epochs.is_empty() {
                p.new_isr.iter().copied().map(BrokerId).collect()
            } else {
                p.new_isr_with_epochs
                    .iter()
                    .map(|b| BrokerId(b.broker_id))
                    .collect()
            };
            let item = AlterPartition {
                broker_id: BrokerId(r.broker_id),
                broker_epoch: BrokerEpoch(r.broker_epoch),
                topic_id: t.topic_id,
                partition: p.partition_index,
                leader_epoch: LeaderEpoch(p.leader_epoch),
                partition_epoch: PartitionEpoch(p.partition_epoch),
                new_isr,
            };
            let mut out = alter_partition_response::PartitionData {
                partition_index: p.partition_index,
                ..Default::default()
            };
            match ask(inner, ClientRequest::AlterPartition(item)).await {
                Ok(ClientResponse::AlterPartition(Ok(reg))) => {
                    out.leader_id = reg.leader.get();
                    out.leader_epoch = reg.leader_epoch.get();
                    out.isr = reg.isr.iter().map(|b| b.get()).collect();
                    out.partition_epoch = reg.partition_epoch.get();
                }
                Ok(ClientResponse::AlterPartition(Err(e))) => out.error_code = e.code.0,
                Ok(_) => out.error_code = ErrorCode::UNKNOWN_SERVER_ERROR.0,
                Err(ErrorCode::NOT_CONTROLLER) => return refused(ErrorCode::NOT_CONTROLLER),
                Err(code) => out.error_code = code.0,
            }
            partitions.push(out);
        }
        topics.push(alter_partition_response::TopicData {
            topic_id: t.topic_id,
            partitions,
            ..Default::default()
        });
    }
    AlterPartitionResponse {
        topics,
        ..Default::default()
    }
}
