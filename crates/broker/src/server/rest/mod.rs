//! The HTTP API (issue 17, "An HTTP API"): the parts of Confluent REST Proxy's API v3 that HTTP clients use
//! — clusters, brokers, topics, partitions, topic configs, producing records, consumer groups and their lag
//! — served on the `metrics.listeners` HTTP listener beside `/metrics`, with its OpenAPI 3 document at
//! `GET /v3/openapi.json` (and `/openapi.json`).
//!
//! Every call is turned into the Kafka requests it stands for and dispatched in-process through
//! [`KafkaApis`](crate::server::apis::KafkaApis) ([`bridge`]), so ACLs, validation, quotas and controller
//! forwarding apply as to any Kafka client. Kafka error codes become REST Proxy error bodies in one place
//! ([`error`]). Request bodies are JSON (`application/json` or `application/vnd.kafka.*+json`, else 415),
//! at most [`MAX_BODY_BYTES`] (413 above), and a body that is not valid JSON is a 400 in the same error shape.
//!
//! Limits: producing goes to the partition's leader through this broker's Produce handler, so in a cluster
//! a record for a partition led by another broker is refused with 50003 (NOT_LEADER_OR_FOLLOWER); the
//! consumer-group routes answer from this broker's group coordinator (NOT_COORDINATOR → 50003 for a group
//! coordinated elsewhere).
//!
//! Callers are `User:ANONYMOUS`, or with `http.authentication.method=BASIC` the SCRAM user they log in as
//! ([`auth`]); forged browser requests are refused first ([`guard`]).
//!
//! The consume half of Confluent REST Proxy API v2 — consumer instances under `/consumers/{group}`, with
//! subscriptions, assignments, positions, records and offsets — is [`v2`]; its instances live in this
//! broker's memory.

pub mod auth;
pub mod bridge;
mod configs;
pub mod console;
pub mod error;
mod groups;
pub mod guard;
mod records;
mod time;
pub mod v2;
mod v3;

use std::net::SocketAddr;
use std::sync::atomic::AtomicU32;
use std::sync::Arc;

use axum::extract::rejection::BytesRejection;
use axum::extract::{
    ConnectInfo, DefaultBodyLimit, FromRequest, FromRequestParts, Path, Query, Request,
};
use axum::http::request::Parts;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use bytes::Bytes;
use protocol::{RequestBody, ResponseBody};
use serde::de::DeserializeOwned;

use crate::server::apis::KafkaApis;
use crate::server::context::KafkaPrincipal;
use bridge::{Bridge, Origin};
use error::RestError;

/// The largest request body accepted: 16 MiB (a larger one is answered 413).
pub const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;

/// The OpenAPI 3 document describing every route of this module.
pub const OPENAPI: &str = include_str!("openapi.json");

/// What the handlers share.
#[derive(Debug)]
pub struct RestState {
    bridge: Arc<Bridge>,
    /// The API v2 consumer instances.
    consumers: Arc<v2::Consumers>,
    /// The next partition for a record with neither a partition nor a key (round robin).
    round_robin: AtomicU32,
}

/// The HTTP API's shared state over `apis`: one per process, whatever the number of listeners (the v2
/// consumer instances live in it).
pub fn state(apis: Arc<KafkaApis>) -> Arc<RestState> {
    let bridge = Arc::new(Bridge::new(apis));
    Arc::new(RestState {
        consumers: Arc::new(v2::Consumers::new(bridge.clone())),
        bridge,
        round_robin: AtomicU32::new(0),
    })
}

/// The HTTP API's routes over `state`, with the web console's ([`console`]) when `console` is true (merged
/// into the metrics listener's router).
pub fn router(state: &Arc<RestState>, console: bool) -> Router {
    let c = "/v3/clusters/{cluster_id}";
    let t = "/v3/clusters/{cluster_id}/topics/{topic_name}";
    let g = "/v3/clusters/{cluster_id}/consumer-groups/{consumer_group_id}";
    let routes = match console {
        true => console::router(),
        false => Router::new(),
    };
    routes
        .route("/v3/openapi.json", get(openapi))
        .route("/openapi.json", get(openapi))
        .route("/v3/clusters", get(v3::list_clusters))
        .route(c, get(v3::get_cluster))
        .route(&format!("{c}/brokers"), get(v3::list_brokers))
        .route(&format!("{c}/brokers/{{broker_id}}"), get(v3::get_broker))
        .route(
            &format!("{c}/topics"),
            get(v3::list_topics).post(v3::create_topic),
        )
        .route(t, get(v3::get_topic).delete(v3::delete_topic))
        .route(&format!("{t}/partitions"), get(v3::list_partitions))
        .route(
            &format!("{t}/partitions/{{partition_id}}"),
            get(v3::get_partition),
        )
        .route(
            &format!("{t}/partitions/{{partition_id}}/replicas"),
            get(v3::list_replicas),
        )
        .route(
            &format!("{t}/partitions/{{partition_id}}/replicas/{{broker_id}}"),
            get(v3::get_replica),
        )
        .route(&format!("{t}/configs"), get(configs::list))
        .route(
            &format!("{t}/configs/{{name}}"),
            get(configs::get_one)
                .put(configs::update)
                .delete(configs::reset),
        )
        .route(&format!("{t}/configs:alter"), post(configs::alter_batch))
        .route(&format!("{t}/records"), post(records::produce))
        .route(&format!("{c}/consumer-groups"), get(groups::list))
        .route(g, get(groups::get_one))
        .route(&format!("{g}/consumers"), get(groups::consumers))
        .route(&format!("{g}/lags"), get(groups::lags_list))
        .route(&format!("{g}/lag-summary"), get(groups::lag_summary))
        .merge(v2::routes())
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state.clone())
}

async fn openapi() -> Response {
    ([(header::CONTENT_TYPE, "application/json")], OPENAPI).into_response()
}

/// A REST answer: a JSON body with a status, or a [`RestError`].
pub type RestResult = Result<Response, RestError>;

/// 200 with `body`.
fn ok(body: serde_json::Value) -> RestResult {
    Ok((StatusCode::OK, Json(body)).into_response())
}

/// 204 without a body.
fn no_content() -> RestResult {
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// One request's context: the shared state, the HTTP peer and the base URL (`http://<Host>`) links in
/// `metadata.self` and `related` start with.
pub struct Ctx {
    state: Arc<RestState>,
    origin: Origin,
    base: String,
}

impl FromRequestParts<Arc<RestState>> for Ctx {
    type Rejection = RestError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &Arc<RestState>,
    ) -> Result<Ctx, RestError> {
        let peer = parts
            .extensions
            .get::<ConnectInfo<SocketAddr>>()
            .map(|c| c.0);
        // The Host header goes into links: only a host[:port] is taken as one.
        let host = (parts.headers.get(header::HOST))
            .and_then(|h| h.to_str().ok())
            .filter(|h| {
                !h.is_empty()
                    && h.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b".-:[]".contains(&b))
            })
            .unwrap_or("localhost");
        let principal = (parts.extensions.get::<auth::Authenticated>())
            .map_or(KafkaPrincipal::ANONYMOUS, |a| a.0.clone());
        Ok(Ctx {
            state: state.clone(),
            origin: Origin { peer, principal },
            base: format!("http://{host}"),
        })
    }
}

impl Ctx {
    /// Sends one Kafka request through the broker's handlers (see [`bridge`]).
    async fn call(&self, body: RequestBody) -> Result<ResponseBody, RestError> {
        self.state.bridge.call(&self.origin, body).await
    }

    /// The cluster id.
    fn cluster_id(&self) -> String {
        self.state.bridge.apis().cluster_id()
    }

    /// `Err(404)` unless `id` is this cluster's id.
    fn check_cluster(&self, id: &str) -> Result<String, RestError> {
        let cluster = self.cluster_id();
        match cluster == id {
            true => Ok(cluster),
            false => Err(RestError::not_found(format!(
                "Cluster {id} cannot be found."
            ))),
        }
    }

    /// The absolute URL of `path` (which starts with `/`).
    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// `{"related": <url of path>}`.
    fn related(&self, path: &str) -> serde_json::Value {
        serde_json::json!({ "related": self.url(path) })
    }

    /// `{"self": <url>, "resource_name": <crn>}` (`crn` = `None`: without a resource name).
    fn meta(&self, path: &str, crn: Option<String>) -> serde_json::Value {
        match crn {
            Some(crn) => serde_json::json!({ "self": self.url(path), "resource_name": crn }),
            None => serde_json::json!({ "self": self.url(path) }),
        }
    }

    /// A list resource: `{"kind", "metadata": {"self", "next": null}, "data"}`.
    fn list(&self, kind: &str, path: &str, data: Vec<serde_json::Value>) -> RestResult {
        ok(serde_json::json!({
            "kind": kind,
            "metadata": { "self": self.url(path), "next": null },
            "data": data,
        }))
    }
}

/// Path parameters, a rejection answered in the REST error shape (400).
pub struct P<T>(pub T);

impl<T: DeserializeOwned + Send, S: Send + Sync> FromRequestParts<S> for P<T> {
    type Rejection = RestError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<P<T>, RestError> {
        match Path::<T>::from_request_parts(parts, state).await {
            Ok(Path(t)) => Ok(P(t)),
            Err(e) => Err(RestError::bad_request(e.body_text())),
        }
    }
}

/// A query string, a rejection answered in the REST error shape (400).
pub struct Q<T>(pub T);

impl<T: DeserializeOwned + Send, S: Send + Sync> FromRequestParts<S> for Q<T> {
    type Rejection = RestError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Q<T>, RestError> {
        match Query::<T>::from_request_parts(parts, state).await {
            Ok(Query(t)) => Ok(Q(t)),
            Err(e) => Err(RestError::bad_request(e.body_text())),
        }
    }
}

/// A JSON request body: `Content-Type` `application/json` or `application/vnd.kafka[.*].v[23]+json` (415
/// otherwise), at most [`MAX_BODY_BYTES`] (413), valid JSON (400) of the route's shape (422).
pub struct JsonBody<T>(pub T);

/// Whether `content_type` names a JSON body this API takes.
pub(crate) fn is_json(content_type: &str) -> bool {
    let essence = content_type.split(';').next().unwrap_or("").trim();
    let essence = essence.to_ascii_lowercase();
    essence == "application/json"
        || (essence.starts_with("application/vnd.kafka") && essence.ends_with("+json"))
}

/// The request's body bytes: 415 for a content type that is not JSON, 413 over [`MAX_BODY_BYTES`].
async fn json_bytes<S: Send + Sync>(req: Request, state: &S) -> Result<Bytes, RestError> {
    let content_type = (req.headers().get(header::CONTENT_TYPE))
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if !is_json(content_type) {
        return Err(RestError::new(
            415,
            format!(
                "HTTP 415 Unsupported Media Type: expected application/json, got '{content_type}'"
            ),
        ));
    }
    Bytes::from_request(req, state)
        .await
        .map_err(|e: BytesRejection| match e.status() {
            StatusCode::PAYLOAD_TOO_LARGE => RestError::new(
                413,
                format!("Request body is larger than {MAX_BODY_BYTES} bytes"),
            ),
            status => RestError::new(i32::from(status.as_u16()), e.body_text()),
        })
}

/// A JSON parse failure: 400 for text that is not JSON, 422 for JSON of the wrong shape.
fn json_error(e: serde_json::Error) -> RestError {
    match e.classify() {
        serde_json::error::Category::Data => RestError::unprocessable(e.to_string()),
        _ => RestError::bad_request(format!("Invalid JSON: {e}")),
    }
}

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for JsonBody<T> {
    type Rejection = RestError;

    async fn from_request(req: Request, state: &S) -> Result<JsonBody<T>, RestError> {
        let bytes = json_bytes(req, state).await?;
        serde_json::from_slice(&bytes)
            .map(JsonBody)
            .map_err(json_error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_content_types() {
        for ok in [
            "application/json",
            "application/json; charset=utf-8",
            "application/vnd.kafka.v3+json",
            "application/vnd.kafka.json.v2+json",
        ] {
            assert!(is_json(ok), "{ok}");
        }
        for bad in ["", "text/plain", "application/xml", "application/jsonx"] {
            assert!(!is_json(bad), "{bad}");
        }
    }

    #[test]
    fn the_openapi_document_is_json() {
        let doc: serde_json::Value = serde_json::from_str(OPENAPI).unwrap();
        assert_eq!(doc["openapi"].as_str().map(|v| &v[..2]), Some("3."));
    }
}
