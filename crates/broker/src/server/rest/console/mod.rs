//! The web console (issue 17): a single-page application the broker serves itself at `/console/` on the
//! `metrics.listeners` HTTP listener, beside the HTTP API it is a client of. Its files (HTML, CSS and ES
//! modules, no build step and no third-party code) are compiled into the binary ([`ASSETS`]), so
//! `runnel server` serves it with nothing else installed.
//!
//! Pages: the cluster overview (brokers, controller, partition health, a throughput sparkline), topics
//! (filter, create, delete, configs, partitions with leader/replicas/ISR/offsets/size), the message browser
//! (by partition and offset or timestamp, key/value/headers as text, JSON or hex, a live tail, a produce
//! form), consumer groups (members, assignment, committed offsets and lag with a chart over time, offset
//! reset) and metrics charts read from `/metrics`. The page uses the REST Proxy v3 routes and the four
//! routes of [`api`] and [`browse`].
//!
//! Exposure (`console.enabled`): unset, the console is served on loopback listeners only; `true` on every
//! `metrics.listeners` address, `false` on none. It calls the broker's handlers as the HTTP API's caller does
//! (`User:ANONYMOUS`, or the user of HTTP Basic authentication, [`super::auth`]), so with an authorizer it
//! can do what ACLs grant that principal; forged browser requests are refused by [`super::guard`]. Every page
//! is sent with a Content-Security-Policy that allows only its own scripts and styles.

mod api;
mod browse;

use std::sync::Arc;

use axum::extract::Path;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::Router;

use super::RestState;

/// The console's files: (name under `/console/assets/`, content type, content).
pub const ASSETS: &[(&str, &str, &str)] = &[
    (
        "console.css",
        "text/css",
        include_str!("assets/console.css"),
    ),
    ("app.js", JS, include_str!("assets/app.js")),
    ("lib.js", JS, include_str!("assets/lib.js")),
    ("charts.js", JS, include_str!("assets/charts.js")),
    ("overview.js", JS, include_str!("assets/overview.js")),
    ("topics.js", JS, include_str!("assets/topics.js")),
    ("messages.js", JS, include_str!("assets/messages.js")),
    ("groups.js", JS, include_str!("assets/groups.js")),
    ("metrics.js", JS, include_str!("assets/metrics.js")),
];

const JS: &str = "text/javascript";

/// The page every console route answers (the application routes in the URL fragment).
const INDEX: &str = include_str!("assets/index.html");

/// What the page may load: its own scripts, styles and `data:` images, and requests to this listener only.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                   connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// The console's routes (merged into the HTTP API's router when the listener serves the console).
pub fn router() -> Router<Arc<RestState>> {
    Router::new()
        .route(
            "/console",
            get(|| async { Redirect::permanent("/console/") }),
        )
        .route("/console/", get(index))
        .route("/console/assets/{name}", get(asset))
        .route("/console/api/cluster", get(api::cluster))
        .route("/console/api/topics/{topic}", get(api::topic))
        .route("/console/api/topics/{topic}/records", get(browse::records))
        .route(
            "/console/api/consumer-groups/{group}/offsets",
            post(api::reset_offsets),
        )
}

/// A response with the console's security headers.
fn page(content_type: &'static str, body: &'static str) -> Response {
    let mut r = ([(header::CONTENT_TYPE, content_type)], body).into_response();
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    r
}

async fn index() -> Response {
    page("text/html; charset=utf-8", INDEX)
}

async fn asset(Path(name): Path<String>) -> Response {
    match ASSETS.iter().find(|(n, _, _)| *n == name) {
        Some((_, content_type, body)) => page(content_type, body),
        None => (StatusCode::NOT_FOUND, "no such console file").into_response(),
    }
}
