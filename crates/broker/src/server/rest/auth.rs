//! HTTP Basic authentication of the `metrics.listeners` HTTP listener (`http.authentication.method=BASIC`,
//! the name and values of Confluent REST Proxy's `authentication.method`): every route but `/health/live`
//! and `/health/ready` then needs an `Authorization: Basic base64(user:password)` header (RFC 7617) whose
//! user and password match one of the broker's SCRAM credentials (KIP-554, `kafka-configs --alter
//! --add-config 'SCRAM-SHA-256=[password=...]'`): the password is salted with the credential's salt and
//! iteration count and its StoredKey compared, in constant time, with the stored one (RFC 5802 §3). The
//! calls are then made as `User:<name>` ([`Authenticated`]), so the broker's ACLs decide what the HTTP
//! API, the console and each v2 consumer instance may do. A missing or wrong header is answered 401 with
//! `WWW-Authenticate: Basic realm="runnel"` (a browser then asks for the user and password) and the REST
//! error body `{"error_code": 401, "message": ...}`. Without TLS on this listener the password crosses
//! the network in clear text: keep it on loopback or behind a TLS-terminating proxy.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64ct::{Base64, Encoding};
use subtle::ConstantTimeEq;

use super::error::RestError;
use crate::config::ConfigError;
use crate::scram::ScramCredentialCache;
use crate::security::sasl::scram::ScramMechanism;
use crate::server::context::KafkaPrincipal;

/// How callers of the HTTP listener are authenticated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HttpAuthentication {
    /// Nobody is: every call is made as `User:ANONYMOUS` (the default).
    #[default]
    None,
    /// HTTP Basic against the SCRAM credentials.
    Basic,
}

impl HttpAuthentication {
    /// Reads `http.authentication.method` (`NONE` or `BASIC`, any case). Errors: another value.
    pub fn parse(key: &str, text: &str) -> Result<HttpAuthentication, ConfigError> {
        match text.trim().to_ascii_uppercase().as_str() {
            "" | "NONE" => Ok(HttpAuthentication::None),
            "BASIC" => Ok(HttpAuthentication::Basic),
            _ => Err(ConfigError::InvalidValue {
                key: key.to_string(),
                value: text.to_string(),
                reason: "NONE or BASIC".to_string(),
            }),
        }
    }
}

/// The principal a request was authenticated as (a request extension the HTTP API's handlers read).
#[derive(Debug, Clone)]
pub struct Authenticated(pub KafkaPrincipal);

/// `user:password` from an `Authorization` header value, `None` unless it is Basic with valid base64 of
/// UTF-8 text holding a colon.
pub fn basic_credentials(value: &str) -> Option<(String, String)> {
    let (scheme, token) = value.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = Base64::decode_vec(token.trim()).ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let (user, password) = text.split_once(':')?;
    Some((user.to_string(), password.to_string()))
}

/// Whether `password` is `user`'s, by any of its SCRAM credentials (SCRAM-SHA-256 first).
pub fn verify(credentials: &ScramCredentialCache, user: &str, password: &str) -> bool {
    [ScramMechanism::Sha256, ScramMechanism::Sha512]
        .into_iter()
        .any(|mechanism| {
            let Some(c) = credentials.get(user, mechanism.code()) else {
                return false;
            };
            let Ok(iterations) = u32::try_from(c.iterations) else {
                return false;
            };
            let salted = mechanism.salted_password(password.as_bytes(), &c.salt, iterations);
            let stored = mechanism.hash(&mechanism.hmac(&salted, b"Client Key"));
            bool::from(stored.ct_eq(&c.stored_key))
        })
}

fn unauthorized(message: &str) -> Response {
    let mut r = RestError::new(401, message).into_response();
    let challenge = HeaderValue::from_static(r#"Basic realm="runnel", charset="UTF-8""#);
    r.headers_mut().insert(header::WWW_AUTHENTICATE, challenge);
    r
}

/// The middleware: checks the `Authorization` header against `credentials` (PBKDF2 on the blocking pool,
/// never on the runtime's workers) and passes the request on with its [`Authenticated`] principal, or
/// answers 401.
pub async fn basic(
    State(credentials): State<Arc<ScramCredentialCache>>,
    mut req: Request,
    next: Next,
) -> Response {
    let given = (req.headers().get(header::AUTHORIZATION))
        .and_then(|v| v.to_str().ok())
        .and_then(basic_credentials);
    let Some((user, password)) = given else {
        return unauthorized("Authentication required (HTTP Basic, a SCRAM user of the broker)");
    };
    let name = user.clone();
    let checked = tokio::task::spawn_blocking(move || verify(&credentials, &user, &password)).await;
    if !matches!(checked, Ok(true)) {
        return unauthorized("Authentication failed: unknown user or wrong password");
    }
    req.extensions_mut()
        .insert(Authenticated(KafkaPrincipal::user(name)));
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use metadata::scram::ScramCredentials;

    #[test]
    fn basic_header_forms() {
        let h = |s: &str| format!("Basic {}", Base64::encode_string(s.as_bytes()));
        assert_eq!(
            basic_credentials(&h("alice:s3:cret")),
            Some(("alice".into(), "s3:cret".into()))
        );
        assert_eq!(
            basic_credentials(&h("bob:")),
            Some(("bob".into(), String::new()))
        );
        assert_eq!(basic_credentials(&h("nocolon")), None);
        assert_eq!(basic_credentials("Bearer abc"), None);
        assert_eq!(basic_credentials("Basic !!!"), None);
        assert_eq!(basic_credentials("Basic"), None);
    }

    #[test]
    fn passwords_are_checked_against_the_scram_credentials() {
        let cache = ScramCredentialCache::new();
        let m = ScramMechanism::Sha512;
        let salted = m.salted_password(b"right", b"salt", 4096);
        let mut all = ScramCredentials::default();
        all.entry("alice".to_string())
            .or_default()
            .insert(m.code(), m.credential(&salted, b"salt", 4096));
        cache.sync(&all);
        assert!(verify(&cache, "alice", "right"));
        assert!(!verify(&cache, "alice", "wrong"));
        assert!(!verify(&cache, "bob", "right"));
    }

    #[test]
    fn the_method_parses() {
        let p = |t| HttpAuthentication::parse("k", t);
        assert_eq!(p("").unwrap(), HttpAuthentication::None);
        assert_eq!(p("none").unwrap(), HttpAuthentication::None);
        assert_eq!(p("BASIC").unwrap(), HttpAuthentication::Basic);
        assert!(p("digest").is_err());
    }
}
