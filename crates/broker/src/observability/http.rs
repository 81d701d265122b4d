//! The HTTP listener of `metrics.listeners` (axum): `GET /metrics` (Prometheus text format 0.0.4),
//! `GET /health/live` (200 while the process serves HTTP) and `GET /health/ready` (200 when ready, else 503
//! naming the failed checks; JSON either way), and the HTTP API of [`crate::server::rest`] (REST Proxy v3 and v2,
//! its OpenAPI document, the web console). Every route but the health checks passes the guards of
//! [`crate::server::rest::guard`] and, when configured, HTTP Basic authentication. Anything else is 404 in the
//! REST error shape. Request bodies are bounded
//! ([`crate::server::rest::MAX_BODY_BYTES`]). Loopback by default: exposing it is the operator's choice.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::collect::Sources;
use super::MetricsConfig;
use crate::scram::ScramCredentialCache;
use crate::server::apis::KafkaApis;
use crate::server::rest::auth::{self, HttpAuthentication};
use crate::server::rest::error::RestError;
use crate::server::rest::guard;
use crate::server::rest::RestState;
use axum::middleware::from_fn_with_state;

/// Binds every `metrics.listeners` address. Errors name the address (a port in use stops the broker's
/// start, as a Kafka listener's does).
pub async fn bind(addrs: &[SocketAddr]) -> anyhow::Result<Vec<TcpListener>> {
    let mut bound = Vec::with_capacity(addrs.len());
    for addr in addrs {
        let l = TcpListener::bind(addr).await.map_err(|e| {
            anyhow::anyhow!("binding the metrics listener {addr} (metrics.listeners): {e}")
        })?;
        bound.push(l);
    }
    Ok(bound)
}

/// Serves the routes on every listener until `shutdown` turns true; the web console on those `config`
/// allows it on.
pub fn spawn(
    listeners: Vec<TcpListener>,
    config: &MetricsConfig,
    sources: Arc<Sources>,
    apis: Arc<KafkaApis>,
    shutdown: watch::Receiver<bool>,
) -> Vec<JoinHandle<()>> {
    let rest = crate::server::rest::state(apis.clone());
    let basic = (config.authentication == HttpAuthentication::Basic)
        .then(|| apis.scram_credentials().clone());
    listeners
        .into_iter()
        .map(|listener| {
            let addr = listener.local_addr().ok();
            let console = addr.is_some_and(|a| config.serves_console(&a));
            let loopback = addr.is_some_and(|a| a.ip().is_loopback());
            let router = router(
                sources.clone(),
                &rest,
                Guards {
                    console,
                    loopback,
                    basic: basic.clone(),
                },
            );
            let mut shutdown = shutdown.clone();
            tokio::spawn(async move {
                let addr = listener.local_addr().ok();
                let stop = async move {
                    let _ = shutdown.wait_for(|s| *s).await;
                };
                // The peer's address reaches the HTTP API's requests (the ACL host).
                let service = router.into_make_service_with_connect_info::<SocketAddr>();
                if let Err(e) = axum::serve(listener, service)
                    .with_graceful_shutdown(stop)
                    .await
                {
                    tracing::warn!(?addr, error = %e, "metrics listener failed");
                }
            })
        })
        .collect()
}

/// What one listener's routes are served with.
#[derive(Debug, Clone)]
pub struct Guards {
    /// The web console is served.
    pub console: bool,
    /// The listener is bound to loopback: only loopback `Host`s are answered ([`guard`]).
    pub loopback: bool,
    /// HTTP Basic authentication against these credentials ([`auth`]); `None`: none.
    pub basic: Option<Arc<ScramCredentialCache>>,
}

/// The routes over `sources`, and the HTTP API over `rest` (with the web console when `guards.console`);
/// every route but the health checks passes [`guard`] and, with `guards.basic`, HTTP Basic authentication.
pub fn router(sources: Arc<Sources>, rest: &Arc<RestState>, guards: Guards) -> Router {
    let guarded = Router::new()
        .route("/metrics", get(metrics))
        .with_state(sources.clone())
        .merge(crate::server::rest::router(rest, guards.console));
    let guarded = match guards.basic {
        Some(credentials) => guarded.layer(from_fn_with_state(credentials, auth::basic)),
        None => guarded,
    };
    // Outermost: a browser's forged request is refused before any password check.
    let guarded = guarded.layer(from_fn_with_state(guards.loopback, guard::guard));
    Router::new()
        .route("/health/live", get(live))
        .route("/health/ready", get(ready))
        .with_state(sources)
        .merge(guarded)
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
}

async fn method_not_allowed() -> RestError {
    RestError::new(405, "HTTP 405 Method Not Allowed")
}

async fn not_found() -> RestError {
    RestError::new(404, "HTTP 404 Not Found")
}

async fn metrics(State(sources): State<Arc<Sources>>) -> impl IntoResponse {
    // Reading the partitions and groups takes their locks briefly: off the runtime's workers.
    let text = tokio::task::spawn_blocking(move || {
        sources.collect();
        let handle = super::recorder();
        handle.run_upkeep();
        let mut text = handle.render();
        sources.telemetry.render(&mut text);
        text
    })
    .await
    .unwrap_or_default();
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        text,
    )
}

async fn live() -> impl IntoResponse {
    json(StatusCode::OK, r#"{"status":"live"}"#.to_string())
}

async fn ready(State(sources): State<Arc<Sources>>) -> impl IntoResponse {
    let failed = sources.not_ready();
    match failed.is_empty() {
        true => json(StatusCode::OK, r#"{"status":"ready"}"#.to_string()),
        false => {
            let body = serde_json::json!({ "status": "not ready", "failed": failed });
            json(StatusCode::SERVICE_UNAVAILABLE, body.to_string())
        }
    }
}

fn json(status: StatusCode, body: String) -> impl IntoResponse {
    (status, [(header::CONTENT_TYPE, "application/json")], body)
}
