//! Kafka requests on the controller listener, answered as Kafka's `ControllerApis` answers them: what
//! `kafka-metadata-quorum.sh --bootstrap-controller HOST:PORT describe --status|--replication` sends
//! (Admin with `bootstrap.controllers`: ApiVersions, DescribeCluster with endpoint type 2 to learn the
//! controllers and the active one, then DescribeQuorum to the active controller).
//!
//! The listener ([`crate::listener`]) hands a frame here when its first byte is 0x00 (the high byte of
//! an API key below 256); a frame starting with `{` or `"` is one of Runnel's JSON frames ([`crate::rpc`]).
//! Served, with Kafka 4.4's version ranges ([`CONTROLLER_APIS`]):
//! - ApiVersions (18) v0–4 (v5, whose ClusterId/NodeId checks Runnel does not make, is left out, as the
//!   broker leaves it out): the APIs below; a version above ours gets Kafka's v0 answer with
//!   UNSUPPORTED_VERSION (35) and our ranges (KIP-511); v3+ with an invalid client software name or
//!   version gets INVALID_REQUEST (42).
//! - DescribeCluster (60) v0–2 (KIP-919): ALTER on the cluster (Kafka's controller asks this much),
//!   else CLUSTER_AUTHORIZATION_FAILED (31); endpoint type 2 (controllers) lists the voters and names
//!   the raft leader as controller id (-1 when unknown or not a voter); type 1 (brokers) gets
//!   MISMATCHED_ENDPOINT_TYPE (114), another type UNSUPPORTED_ENDPOINT_TYPE (115), both INVALID_REQUEST
//!   (42) in v0, as Kafka's `computeDescribeClusterResponse`. The voters are the raft membership's.
//! - DescribeQuorum (55) v0–2: DESCRIBE on the cluster, else CLUSTER_AUTHORIZATION_FAILED at the top;
//!   another partition than `__cluster_metadata`-0: UNKNOWN_TOPIC_OR_PARTITION per partition; a follower
//!   answers NOT_LEADER_OR_FOLLOWER (6) on partition 0; the leader answers as the broker does
//!   ([`crate::describe_quorum`]).
//! - BrokerRegistration (62) v0–4, BrokerHeartbeat (63) v0–2, AlterPartition (56) v2–3: CLUSTER_ACTION on
//!   the cluster, else CLUSTER_AUTHORIZATION_FAILED (31); answered by the active controller (else
//!   NOT_CONTROLLER, 41) through [`crate::broker_apis`].
//! - AddRaftVoter (80) v0–1, RemoveRaftVoter (81) v0 (KIP-853): ALTER on the cluster, else
//!   CLUSTER_AUTHORIZATION_FAILED (31), as Kafka's `ControllerApis`; then [`crate::voter_changes`] (the
//!   active controller changes openraft's membership; the errors are Kafka's).
//! - SaslHandshake (17), SaslAuthenticate (36): after authentication (or on an open listener)
//!   ILLEGAL_SASL_STATE (34), as Kafka's controller.
//!
//! Any other request — an API key Kafka does not define, one the controller does not serve, a version
//! outside the served range, an undecodable body — closes the connection, as Kafka's network layer does
//! for an API not enabled on the listener. Authorization is per request ([`Access`]): an open listener
//! (no authenticated peer) asks nobody.

use bytes::Bytes;
use protocol::messages::api_versions_response::ApiVersion;
use protocol::messages::describe_cluster_response::DescribeClusterBroker;
use protocol::messages::{
    AddRaftVoterRequest, AddRaftVoterResponse, ApiVersionsRequest, ApiVersionsResponse,
    DescribeClusterRequest, DescribeClusterResponse, DescribeQuorumRequest, DescribeQuorumResponse,
    RemoveRaftVoterRequest, RemoveRaftVoterResponse, SaslAuthenticateResponse,
    SaslHandshakeResponse,
};
use protocol::{ApiKey, Chunk, ErrorCode, RequestBody, RequestHeader, ResponseBody};

use crate::describe_quorum;
use crate::server::Inner;
use crate::transport::{ClusterOperation, Peer, PeerAuthorizer, ALL_CLUSTER_OPERATIONS};
use crate::voter_changes::{AddVoter, Refusal};

/// The APIs the controller listener serves, with Kafka 4.4's version ranges (clipped to the codec's by
/// [`served_range`]); ApiVersions advertises exactly these.
pub const CONTROLLER_APIS: &[(ApiKey, i16, i16)] = &[
    (ApiKey::SaslHandshake, 0, 1),
    (ApiKey::ApiVersions, 0, 4),
    (ApiKey::SaslAuthenticate, 0, 2),
    (ApiKey::DescribeQuorum, 0, 2),
    (ApiKey::AlterPartition, 2, 3),
    (ApiKey::DescribeCluster, 0, 2),
    (ApiKey::BrokerRegistration, 0, 4),
    (ApiKey::BrokerHeartbeat, 0, 2),
    (ApiKey::AddRaftVoter, 0, 1),
    (ApiKey::RemoveRaftVoter, 0, 0),
];

/// DescribeCluster's endpoint type "brokers" (1, KIP-919).
const ENDPOINT_TYPE_BROKERS: i8 = 1;
/// DescribeCluster's endpoint type "controllers" (2, KIP-919).
const ENDPOINT_TYPE_CONTROLLERS: i8 = 2;

/// The served version range of `key` ([`CONTROLLER_APIS`] clipped to the codec's); `None`: not served.
pub fn served_range(key: ApiKey) -> Option<(i16, i16)> {
    let (_, lo, hi) = CONTROLLER_APIS.iter().find(|(k, _, _)| *k == key)?;
    let (clo, chi) = protocol::supported_versions(key)?;
    let (lo, hi) = ((*lo).max(clo), (*hi).min(chi));
    (lo <= hi).then_some((lo, hi))
}

/// The ApiVersions response body with `error`, listing [`CONTROLLER_APIS`].
pub fn api_versions_response(error: ErrorCode) -> ApiVersionsResponse {
    ApiVersionsResponse {
        error_code: error.0,
        api_keys: CONTROLLER_APIS
            .iter()
            .filter_map(|(key, _, _)| {
                let (lo, hi) = served_range(*key)?;
                Some(ApiVersion {
                    api_key: *key as i16,
                    min_version: lo,
                    max_version: hi,
                    ..Default::default()
                })
            })
            .collect(),
        ..Default::default()
    }
}

/// Who sent a request on one connection, and who judges it.
pub(crate) struct Access<'a> {
    /// The authenticated peer; `None` on an open listener (nobody is asked).
    pub(crate) peer: Option<&'a Peer>,
    /// The listener's authorizer; `None`: every peer may do anything.
    pub(crate) authorizer: Option<&'a dyn PeerAuthorizer>,
    /// The listener's name (DescribeQuorum v2's Nodes).
    pub(crate) listener_name: &'a str,
}

impl Access<'_> {
    /// Whether the peer may perform `op` on the cluster, judged with the applied image's ACLs. Errors:
    /// the authorizer's reason.
    pub(crate) fn check(&self, inner: &Inner, op: ClusterOperation) -> Result<(), String> {
        match (self.peer, self.authorizer) {
            (Some(peer), Some(a)) => a.authorize(peer, &inner.sm.state.read().image, op),
            _ => Ok(()),
        }
    }

    /// The peer's cluster operations as Kafka's bit field (all of them where nobody is asked).
    fn cluster_operations(&self, inner: &Inner) -> i32 {
        match (self.peer, self.authorizer) {
            (Some(peer), Some(a)) => a.cluster_operations(peer, &inner.sm.state.read().image),
            _ => ALL_CLUSTER_OPERATIONS,
        }
    }

    /// [`Access::check`], logging a refusal.
    fn allowed(&self, inner: &Inner, op: ClusterOperation, api: ApiKey) -> bool {
        match self.check(inner, op) {
            Ok(()) => true,
            Err(reason) => {
                tracing::warn!(
                    principal = self.peer.map_or("", |p| p.principal.as_str()),
                    api = api.name(),
                    operation = op.name(),
                    "controller listener: request refused, not authorized: {reason}"
                );
                false
            }
        }
    }
}

/// What the listener does after a Kafka request.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// Send this response frame (size prefix included).
    Respond(Vec<u8>),
    /// Close the connection, for this reason (logged).
    Close(String),
}

/// Answers one Kafka request frame (the bytes after the size prefix): see the module doc.
pub(crate) async fn handle(inner: &Inner, access: &Access<'_>, frame: Bytes) -> Outcome {
    let (api, version, correlation_id) = match check_header(&frame) {
        Ok(h) => h,
        Err(Early::Close(reason)) => return Outcome::Close(reason),
        Err(Early::Respond(bytes)) => return Outcome::Respond(bytes),
    };
    let body = match protocol::decode_request(frame) {
        Ok((_, body)) => body,
        Err(e) => return Outcome::Close(format!("{} v{version}: {e}", api.name())),
    };
    let response = match body {
        RequestBody::ApiVersions(r) => ResponseBody::ApiVersions(api_versions(version, &r)),
        RequestBody::DescribeCluster(r) => {
            ResponseBody::DescribeCluster(describe_cluster(inner, access, version, &r))
        }
        RequestBody::DescribeQuorum(r) => {
            ResponseBody::DescribeQuorum(describe_quorum(inner, access, &r).await)
        }
        RequestBody::AddRaftVoter(r) => {
            ResponseBody::AddRaftVoter(add_raft_voter(inner, access, r).await)
        }
        RequestBody::RemoveRaftVoter(r) => {
            ResponseBody::RemoveRaftVoter(remove_raft_voter(inner, access, r).await)
        }
        RequestBody::SaslHandshake(_) => ResponseBody::SaslHandshake(SaslHandshakeResponse {
            error_code: ErrorCode::ILLEGAL_SASL_STATE.0,
            ..Default::default()
        }),
        RequestBody::SaslAuthenticate(_) => {
            ResponseBody::SaslAuthenticate(SaslAuthenticateResponse {
                error_code: ErrorCode::ILLEGAL_SASL_STATE.0,
                error_message: Some(
                    "SaslAuthenticate request received after successful authentication".into(),
                ),
                ..Default::default()
            })
        }
        body => {
            let authorized = access.allowed(inner, ClusterOperation::ClusterAction, api);
            match crate::broker_apis::answer(inner, body, authorized).await {
                Some(response) => response,
                None => return Outcome::Close(format!("{} is not served", api.name())),
            }
        }
    };
    match encode(correlation_id, api, version, &response) {
        Ok(bytes) => Outcome::Respond(bytes),
        Err(reason) => Outcome::Close(reason),
    }
}

/// Answers an ApiVersions request frame (the bytes after the size prefix) with the controller's APIs:
/// for a SASL authenticator, which serves ApiVersions before authentication as Kafka's does. Returns
/// the response frame (size prefix included). Errors: the frame is not a servable ApiVersions request
/// (the connection should be closed), with the reason.
pub fn answer_api_versions(frame: Bytes) -> Result<Vec<u8>, String> {
    let (api, version, correlation_id) = match check_header(&frame) {
        Ok(h) => h,
        Err(Early::Close(reason)) => return Err(reason),
        Err(Early::Respond(bytes)) => return Ok(bytes),
    };
    match protocol::decode_request(frame) {
        Ok((_, RequestBody::ApiVersions(r))) => encode(
            correlation_id,
            api,
            version,
            &ResponseBody::ApiVersions(api_versions(version, &r)),
        ),
        Ok(_) => Err(format!("{} is not ApiVersions", api.name())),
        Err(e) => Err(format!("{} v{version}: {e}", api.name())),
    }
}

/// A request answered or refused from its header alone.
enum Early {
    /// Close the connection, for this reason.
    Close(String),
    /// Send this response frame.
    Respond(Vec<u8>),
}

/// The served API, version and correlation id of a request frame. Errors: a frame shorter than a header,
/// an API key Kafka does not define or the controller does not serve, a version outside the served
/// range ([`Early::Close`]); ApiVersions above our range ([`Early::Respond`] with Kafka's v0 answer).
fn check_header(frame: &[u8]) -> Result<(ApiKey, i16, i32), Early> {
    let Some((key, version, correlation_id)) = RequestHeader::peek(frame) else {
        return Err(Early::Close("request shorter than its header".into()));
    };
    let Some(api) = ApiKey::from_i16(key) else {
        return Err(Early::Close(format!("unknown api key {key}")));
    };
    let Some((lo, hi)) = served_range(api) else {
        return Err(Early::Close(format!(
            "{} is not served on the controller listener",
            api.name()
        )));
    };
    if (lo..=hi).contains(&version) {
        return Ok((api, version, correlation_id));
    }
    if api == ApiKey::ApiVersions {
        // KIP-511: a v0 body carrying error 35 and our real ranges, so that the client retries.
        let body = ResponseBody::ApiVersions(api_versions_response(ErrorCode::UNSUPPORTED_VERSION));
        return match encode(correlation_id, api, 0, &body) {
            Ok(bytes) => Err(Early::Respond(bytes)),
            Err(reason) => Err(Early::Close(reason)),
        };
    }
    Err(Early::Close(format!(
        "{} v{version} is outside the served range {lo}..={hi}",
        api.name()
    )))
}

/// The response frame, size prefix included, as one buffer. Errors: the encoder's (a bug), as text.
fn encode(
    correlation_id: i32,
    api: ApiKey,
    version: i16,
    body: &ResponseBody,
) -> Result<Vec<u8>, String> {
    let chunks = protocol::encode_response(correlation_id, api, version, body)
        .map_err(|e| format!("encoding the {} v{version} response: {e}", api.name()))?;
    let mut out = Vec::with_capacity(chunks.iter().map(Chunk::len).sum());
    for chunk in chunks {
        match chunk {
            Chunk::Bytes(b) => out.extend_from_slice(&b),
            Chunk::File(_) => return Err("a controller response has no file records".into()),
        }
    }
    Ok(out)
}

/// Kafka's `ApiVersionsRequest.isValid` for a v3+ client software name or version: letters, digits,
/// `-` and `.`, starting and ending with a letter or digit.
fn valid_software(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || *c == b'.' || *c == b'-')
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
}

/// ApiVersions: our APIs, or INVALID_REQUEST for a v3+ request with an invalid client software name or
/// version.
fn api_versions(version: i16, request: &ApiVersionsRequest) -> ApiVersionsResponse {
    let valid = valid_software(&request.client_software_name)
        && valid_software(&request.client_software_version);
    match version < 3 || valid {
        true => api_versions_response(ErrorCode::NONE),
        false => api_versions_response(ErrorCode::INVALID_REQUEST),
    }
}

/// DescribeCluster on the controller: see the module doc.
fn describe_cluster(
    inner: &Inner,
    access: &Access<'_>,
    version: i16,
    request: &DescribeClusterRequest,
) -> DescribeClusterResponse {
    if !access.allowed(inner, ClusterOperation::Alter, ApiKey::DescribeCluster) {
        return DescribeClusterResponse {
            error_code: ErrorCode::CLUSTER_AUTHORIZATION_FAILED.0,
            error_message: Some("Cluster authorization failed.".into()),
            ..Default::default()
        };
    }
    let refuse = |code: ErrorCode, message: String| DescribeClusterResponse {
        error_code: match version {
            0 => ErrorCode::INVALID_REQUEST.0,
            _ => code.0,
        },
        error_message: Some(message),
        ..Default::default()
    };
    match request.endpoint_type {
        ENDPOINT_TYPE_CONTROLLERS => {}
        ENDPOINT_TYPE_BROKERS => {
            return refuse(
                ErrorCode::MISMATCHED_ENDPOINT_TYPE,
                "The request was sent to an endpoint of type CONTROLLER, but we wanted an endpoint of type BROKER".into(),
            )
        }
        other => {
            return refuse(
                ErrorCode::UNSUPPORTED_ENDPOINT_TYPE,
                format!("Unsupported endpoint type {other}"),
            )
        }
    }
    let voters = crate::voter_changes::voters(&inner.membership());
    let leader = inner.current_leader();
    let controller_id = match leader {
        Some(id) if voters.contains_key(&id) => id.get(),
        _ => -1,
    };
    let cluster_authorized_operations = match request.include_cluster_authorized_operations {
        false => i32::MIN,
        true if access.check(inner, ClusterOperation::Describe).is_err() => 0,
        true => access.cluster_operations(inner),
    };
    DescribeClusterResponse {
        endpoint_type: ENDPOINT_TYPE_CONTROLLERS,
        cluster_id: inner.sm.state.read().image.cluster_id.clone(),
        controller_id,
        brokers: voters
            .iter()
            .filter_map(|(id, node)| Some((id, node.host_port()?)))
            .map(|(id, (host, port))| DescribeClusterBroker {
                broker_id: id.get(),
                host,
                port: i32::from(port),
                rack: None,
                is_fenced: false,
                ..Default::default()
            })
            .collect(),
        cluster_authorized_operations,
        ..Default::default()
    }
}

/// DescribeQuorum on the controller: see the module doc.
async fn describe_quorum(
    inner: &Inner,
    access: &Access<'_>,
    request: &DescribeQuorumRequest,
) -> DescribeQuorumResponse {
    if !access.allowed(inner, ClusterOperation::Describe, ApiKey::DescribeQuorum) {
        return describe_quorum::top_level_error(
            ErrorCode::CLUSTER_AUTHORIZATION_FAILED,
            "Cluster authorization failed.".into(),
        );
    }
    if !describe_quorum::names_only_the_metadata_partition(request) {
        return describe_quorum::unknown_partitions(request);
    }
    if inner.current_leader() != Some(inner.node_id) {
        return describe_quorum::not_leader();
    }
    let info = inner.describe_quorum().await;
    let controllers: Vec<_> = crate::voter_changes::voters(&inner.membership())
        .into_iter()
        .filter_map(|(id, node)| node.host_port().map(|(host, port)| (id, host, port)))
        .collect();
    describe_quorum::response(&info, &controllers, access.listener_name)
}

/// AddRaftVoter on the controller: see the module doc.
async fn add_raft_voter(
    inner: &Inner,
    access: &Access<'_>,
    r: AddRaftVoterRequest,
) -> AddRaftVoterResponse {
    let (code, message) = if !access.allowed(inner, ClusterOperation::Alter, ApiKey::AddRaftVoter) {
        cluster_authorization_failed()
    } else {
        let req = AddVoter {
            cluster_id: r.cluster_id,
            timeout_ms: u64::try_from(r.timeout_ms).unwrap_or(0),
            voter_id: types::BrokerId(r.voter_id),
            directory_id: r.voter_directory_id,
            listeners: r
                .listeners
                .into_iter()
                .map(|l| (l.name, l.host, l.port))
                .collect(),
        };
        outcome(inner.add_raft_voter(req, access.listener_name).await)
    };
    AddRaftVoterResponse {
        error_code: code.0,
        error_message: message,
        ..Default::default()
    }
}

/// RemoveRaftVoter on the controller: see the module doc.
async fn remove_raft_voter(
    inner: &Inner,
    access: &Access<'_>,
    r: RemoveRaftVoterRequest,
) -> RemoveRaftVoterResponse {
    let (code, message) =
        if !access.allowed(inner, ClusterOperation::Alter, ApiKey::RemoveRaftVoter) {
            cluster_authorization_failed()
        } else {
            let id = types::BrokerId(r.voter_id);
            outcome(
                inner
                    .remove_raft_voter(r.cluster_id.as_deref(), id, r.voter_directory_id)
                    .await,
            )
        };
    RemoveRaftVoterResponse {
        error_code: code.0,
        error_message: message,
        ..Default::default()
    }
}

fn cluster_authorization_failed() -> (ErrorCode, Option<String>) {
    (
        ErrorCode::CLUSTER_AUTHORIZATION_FAILED,
        Some("Cluster authorization failed.".into()),
    )
}

/// A voter change's outcome as (error code, message): no message on success, as Kafka's.
fn outcome(r: Result<(), Refusal>) -> (ErrorCode, Option<String>) {
    match r {
        Ok(()) => (ErrorCode::NONE, None),
        Err((code, message)) => (code, Some(message)),
    }
}

#[cfg(test)]
#[path = "kafka_apis_tests.rs"]
mod tests;
