//! What keeps a web page in a browser from driving the HTTP listener (the console's and the HTTP API's
//! routes and `/metrics`; the health checks are left open):
//! - **DNS rebinding:** on a loopback listener a request whose `Host` is not a loopback name or address
//!   (`localhost`, `127.x.y.z`, `[::1]`, any port) is refused (403): a page of another site whose name was
//!   made to resolve to 127.0.0.1 cannot pass for the console's own origin.
//! - **Cross-site requests:** a browser's request marked `Sec-Fetch-Site: cross-site` or `same-site` (the
//!   Fetch Metadata every current browser sends) is refused (403), so neither a form, an `<img>` nor a
//!   no-cors fetch of another page reaches a route with effects (a v2 records call commits offsets).
//! - **Bodies:** a POST must say `Content-Type: application/json` (or `application/vnd.kafka.*+json`), with a
//!   body or without (415): a browser sends that type across origins only after a CORS preflight, which
//!   this listener never grants.
//!
//! Clients that are not browsers send no `Sec-Fetch-Site` and are unaffected.

use axum::extract::{Request, State};
use axum::http::{header, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::error::RestError;
use super::is_json;

/// Whether a `Host` header value names the loopback interface (`localhost`, `127.0.0.0/8`, `::1`; any port).
pub fn is_loopback_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(h, port)| {
            match port.bytes().all(|b| b.is_ascii_digit()) {
                true => h,
                false => host,
            }
        }),
    };
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Why `req` is refused, if it is (see the module doc); `loopback`: the listener is bound to loopback.
fn refusal(req: &Request, loopback: bool) -> Option<RestError> {
    let text = |name: &str| (req.headers().get(name)).and_then(|v| v.to_str().ok());
    if loopback {
        let host = text(header::HOST.as_str()).unwrap_or("");
        if !is_loopback_host(host) {
            return Some(RestError::new(
                403,
                format!("Host '{host}' is not this loopback listener's (DNS rebinding protection)"),
            ));
        }
    }
    if let Some(site @ ("cross-site" | "same-site")) = text("sec-fetch-site") {
        return Some(RestError::new(
            403,
            format!("Requests from other sites are refused (Sec-Fetch-Site: {site})"),
        ));
    }
    if req.method() == Method::POST && !is_json(text(header::CONTENT_TYPE.as_str()).unwrap_or("")) {
        return Some(RestError::new(
            415,
            "HTTP 415 Unsupported Media Type: a POST needs Content-Type application/json",
        ));
    }
    None
}

/// The middleware (state: whether the listener is bound to loopback).
pub async fn guard(State(loopback): State<bool>, req: Request, next: Next) -> Response {
    match refusal(&req, loopback) {
        Some(e) => e.into_response(),
        None => next.run(req).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;

    #[test]
    fn loopback_hosts() {
        for ok in [
            "localhost",
            "localhost:9644",
            "LOCALHOST:1",
            "127.0.0.1",
            "127.0.0.1:9644",
            "127.1.2.3:80",
            "[::1]:9644",
            "[::1]",
        ] {
            assert!(is_loopback_host(ok), "{ok}");
        }
        for bad in [
            "",
            "rebind.attacker.example:9644",
            "localhost.attacker.example",
            "10.0.0.1:9644",
            "[::2]:1",
            "127.0.0.1.evil:80",
        ] {
            assert!(!is_loopback_host(bad), "{bad}");
        }
    }

    fn req(method: &str, headers: &[(&str, &str)]) -> Request {
        let mut b = Request::builder().method(method).uri("/v3/clusters");
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        b.body(Body::empty()).unwrap()
    }

    #[test]
    fn refusals() {
        let code = |r: &Request, loopback| refusal(r, loopback).map(|e| e.error_code);
        let local = ("host", "127.0.0.1:9644");
        assert_eq!(code(&req("GET", &[local]), true), None);
        assert_eq!(
            code(&req("GET", &[("host", "evil.example")]), true),
            Some(403)
        );
        assert_eq!(code(&req("GET", &[("host", "evil.example")]), false), None);
        let cross = ("sec-fetch-site", "cross-site");
        assert_eq!(code(&req("GET", &[local, cross]), true), Some(403));
        let same = ("sec-fetch-site", "same-origin");
        assert_eq!(code(&req("GET", &[local, same]), true), None);
        assert_eq!(code(&req("POST", &[local]), true), Some(415));
        let plain = ("content-type", "text/plain");
        assert_eq!(code(&req("POST", &[local, plain]), true), Some(415));
        let json = ("content-type", "application/vnd.kafka.v2+json");
        assert_eq!(code(&req("POST", &[local, json]), true), None);
    }
}
