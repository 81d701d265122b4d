//! SASL/OAUTHBEARER (RFC 7628; Kafka's KIP-255 `OAuthBearerSaslServer`): one client message carrying a bearer
//! token, checked by the listener's [`TokenValidator`] — Kafka's unsecured validator (`alg: none` JWTs, for
//! tests and development; Kafka's default when no server callback handler is set) or the JWKS-checked
//! validator of KIP-768 ([`super::jwks`]).
//!
//! The exchange, as Kafka runs it: the client's initial response is
//! `n,[a=<authzid>],\x01auth=Bearer <token>\x01[<key>=<value>\x01]*\x01`. A valid token completes the exchange
//! with an empty server message; the principal is `User:<principal claim>`. An invalid token is answered with
//! RFC 7628's JSON error (`{"status":"invalid_token"}`, or `insufficient_scope` with the required scope) as a
//! challenge; the client then sends a lone `\x01` and gets SASL_AUTHENTICATION_FAILED carrying that JSON.
//! A malformed message fails at once with Kafka's generic invalid-credentials message.

use std::collections::BTreeMap;
use std::sync::Arc;

use base64ct::{Base64UrlUnpadded, Encoding};
use serde_json::Value;

use super::jwks::JwksValidator;
use super::{SaslError, SaslStep};

/// A token that passed validation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthBearerToken {
    /// The principal name (the principal or `sub` claim).
    pub principal: String,
    /// When the token expires: the `exp` claim, milliseconds since the Unix epoch.
    pub lifetime_ms: i64,
    /// The scopes granted (the scope claim: a space-separated string or an array of strings).
    pub scope: Vec<String>,
}

/// Why a token was refused; becomes RFC 7628's JSON error (section 3.2.2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    /// Malformed, expired, not yet valid, wrongly signed or from the wrong issuer/audience: status
    /// `invalid_token`. The reason is logged only.
    #[error("invalid token: {0}")]
    Invalid(String),
    /// A required scope is missing: status `insufficient_scope` with the required scope.
    #[error("insufficient scope: {reason}")]
    InsufficientScope {
        /// The required scope as configured (sent to the client).
        scope: String,
        /// What was missing.
        reason: String,
    },
}

impl TokenError {
    /// The RFC 7628 error the server sends as its challenge, e.g. `{"status":"invalid_token"}`.
    pub fn json(&self) -> String {
        match self {
            TokenError::Invalid(_) => r#"{"status":"invalid_token"}"#.to_string(),
            TokenError::InsufficientScope { scope, .. } => {
                serde_json::json!({ "status": "insufficient_scope", "scope": scope }).to_string()
            }
        }
    }
}

/// How a listener checks OAUTHBEARER tokens.
#[derive(Debug)]
pub enum TokenValidator {
    /// Kafka's `OAuthBearerUnsecuredValidatorCallbackHandler`.
    Unsecured(UnsecuredValidator),
    /// Kafka's `OAuthBearerValidatorCallbackHandler`: signed JWTs checked against a JWKS.
    Jwks(Arc<JwksValidator>),
}

impl TokenValidator {
    /// Validates `token` (the compact JWT) at `now_ms` (milliseconds since the Unix epoch).
    pub fn validate(&self, token: &str, now_ms: i64) -> Result<OAuthBearerToken, TokenError> {
        match self {
            TokenValidator::Unsecured(v) => v.validate(token, now_ms),
            TokenValidator::Jwks(v) => v.validate(token, now_ms),
        }
    }
}

/// The unsecured validator's JAAS options (`unsecuredValidator*`, Kafka's names and defaults).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnsecuredValidator {
    /// `unsecuredValidatorPrincipalClaimName` (default `sub`).
    pub principal_claim: String,
    /// `unsecuredValidatorScopeClaimName` (default `scope`).
    pub scope_claim: String,
    /// `unsecuredValidatorRequiredScope`: comma-separated scopes every token must have (default none).
    pub required_scope: Vec<String>,
    /// `unsecuredValidatorAllowableClockSkewMs` (default 0).
    pub clock_skew_ms: i64,
}

impl UnsecuredValidator {
    /// The validator configured by the listener's OAUTHBEARER JAAS options. Errors: a clock skew that is not a
    /// non-negative integer.
    pub fn from_options(options: &BTreeMap<String, String>) -> Result<UnsecuredValidator, String> {
        let get = |k: &str, d: &str| options.get(k).map_or(d, String::as_str).trim().to_string();
        let skew = get("unsecuredValidatorAllowableClockSkewMs", "0");
        let clock_skew_ms = skew
            .parse::<i64>()
            .ok()
            .filter(|v| *v >= 0)
            .ok_or_else(|| format!("invalid unsecuredValidatorAllowableClockSkewMs: {skew}"))?;
        Ok(UnsecuredValidator {
            principal_claim: get("unsecuredValidatorPrincipalClaimName", "sub"),
            scope_claim: get("unsecuredValidatorScopeClaimName", "scope"),
            required_scope: get("unsecuredValidatorRequiredScope", "")
                .split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect(),
            clock_skew_ms,
        })
    }

    /// Validates an unsecured JWS (`<header>.<claims>.`, no signature). Errors: not three dot-separated parts,
    /// a signature present, undecodable JSON, no string principal claim, no numeric `exp`, expired (beyond the
    /// skew), `iat` in the future (beyond the skew), a required scope missing.
    pub fn validate(&self, token: &str, now_ms: i64) -> Result<OAuthBearerToken, TokenError> {
        let invalid = |m: &str| TokenError::Invalid(m.to_string());
        let parts: Vec<&str> = token.split('.').collect();
        if parts.len() != 3 {
            return Err(invalid(
                "an unsecured JWS has 3 dot-separated Base64URL parts",
            ));
        }
        if !parts[2].is_empty() {
            return Err(invalid("an unsecured JWS must not carry a signature"));
        }
        let _header = json_object(parts[0])?;
        let claims = json_object(parts[1])?;
        let principal = string_claim(&claims, &self.principal_claim)?;
        let lifetime_ms = time_claim(&claims, "exp")?
            .ok_or_else(|| invalid("the token has no numeric 'exp' claim"))?;
        if now_ms - self.clock_skew_ms >= lifetime_ms {
            return Err(invalid("the token has expired"));
        }
        if let Some(iat) = time_claim(&claims, "iat")? {
            if iat > now_ms + self.clock_skew_ms {
                return Err(invalid("the token's 'iat' is in the future"));
            }
        }
        let scope = scope_claim(&claims, &self.scope_claim);
        if let Some(missing) = self.required_scope.iter().find(|s| !scope.contains(s)) {
            return Err(TokenError::InsufficientScope {
                scope: self.required_scope.join(","),
                reason: format!("the token lacks the required scope {missing}"),
            });
        }
        Ok(OAuthBearerToken {
            principal,
            lifetime_ms,
            scope,
        })
    }
}

/// A Base64URL JSON object part of a JWT.
pub(crate) fn json_object(part: &str) -> Result<serde_json::Map<String, Value>, TokenError> {
    let bytes = Base64UrlUnpadded::decode_vec(part.trim_end_matches('='))
        .map_err(|_| TokenError::Invalid("a JWT part is not Base64URL".into()))?;
    match serde_json::from_slice(&bytes) {
        Ok(Value::Object(m)) => Ok(m),
        _ => Err(TokenError::Invalid(
            "a JWT part is not a JSON object".into(),
        )),
    }
}

/// A non-empty string claim (the principal).
pub(crate) fn string_claim(
    claims: &serde_json::Map<String, Value>,
    name: &str,
) -> Result<String, TokenError> {
    match claims.get(name) {
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.trim().to_string()),
        _ => Err(TokenError::Invalid(format!(
            "the token has no non-empty string '{name}' claim"
        ))),
    }
}

/// A NumericDate claim (seconds, possibly fractional) in milliseconds; `None` when absent.
pub(crate) fn time_claim(
    claims: &serde_json::Map<String, Value>,
    name: &str,
) -> Result<Option<i64>, TokenError> {
    match claims.get(name) {
        None => Ok(None),
        Some(Value::Number(n)) => match n.as_f64() {
            Some(s) if s.is_finite() && s.abs() < 1e15 => Ok(Some((s * 1000.0) as i64)),
            _ => Err(TokenError::Invalid(format!(
                "the '{name}' claim is out of range"
            ))),
        },
        Some(_) => Err(TokenError::Invalid(format!(
            "the '{name}' claim is not a number"
        ))),
    }
}

/// The scope claim: a space-separated string or an array of strings; absent or otherwise typed is empty.
pub(crate) fn scope_claim(claims: &serde_json::Map<String, Value>, name: &str) -> Vec<String> {
    match claims.get(name) {
        Some(Value::String(s)) => s.split_whitespace().map(str::to_string).collect(),
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect(),
        _ => Vec::new(),
    }
}

/// The parts of a client initial response (RFC 7628 section 3.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientInitialResponse {
    /// The authorization id (`a=`), empty when absent.
    pub authzid: String,
    /// The bearer token.
    pub token: String,
    /// The SASL extensions (KIP-342), every `key=value` but `auth`.
    pub extensions: BTreeMap<String, String>,
}

/// Parses `n,[a=<authzid>],\x01auth=Bearer <token>\x01[<key>=<value>\x01]*\x01`; `None` when malformed
/// (Kafka: "Invalid OAUTHBEARER client first message"). The token is RFC 6750's b64token characters.
pub fn parse_client_initial_response(message: &[u8]) -> Option<ClientInitialResponse> {
    let text = std::str::from_utf8(message).ok()?;
    let rest = text.strip_prefix("n,")?;
    let (gs2_authzid, rest) = rest.split_once(',')?;
    let authzid = match gs2_authzid {
        "" => String::new(),
        a => decode_saslname(a.strip_prefix("a=")?)?,
    };
    let pairs = rest.strip_prefix('\u{1}')?.strip_suffix('\u{1}')?;
    let mut token = None;
    let mut extensions = BTreeMap::new();
    for pair in pairs.strip_suffix('\u{1}')?.split('\u{1}') {
        let (key, value) = pair.split_once('=')?;
        if key.is_empty() || !key.bytes().all(|b| b.is_ascii_alphabetic()) {
            return None;
        }
        if key == "auth" {
            let (scheme, t) = value.split_once(' ')?;
            let t = t.trim_start_matches(' ');
            let b64token = |c: char| c.is_ascii_alphanumeric() || "-._~+/".contains(c);
            let ok = scheme.eq_ignore_ascii_case("bearer") && !t.is_empty();
            if !ok || !t.trim_end_matches('=').chars().all(b64token) || token.is_some() {
                return None;
            }
            token = Some(t.to_string());
        } else if value.is_empty() || !value.bytes().all(|b| (0x20..0x7f).contains(&b)) {
            return None;
        } else {
            extensions.insert(key.to_string(), value.to_string());
        }
    }
    Some(ClientInitialResponse {
        authzid,
        token: token?,
        extensions,
    })
}

/// A saslname with `=2C` and `=3D` decoded (RFC 5801); `None` for a stray `=` or `,`.
fn decode_saslname(s: &str) -> Option<String> {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find(['=', ',']) {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        if let Some(t) = tail.strip_prefix("=2C") {
            out.push(',');
            rest = t;
        } else if let Some(t) = tail.strip_prefix("=3D") {
            out.push('=');
            rest = t;
        } else {
            return None;
        }
    }
    out.push_str(rest);
    Some(out)
}

/// One OAUTHBEARER exchange on the server side.
#[derive(Debug)]
pub struct OAuthBearerServer {
    validator: Arc<TokenValidator>,
    now_ms: i64,
    error_sent: Option<String>,
    complete: bool,
}

impl OAuthBearerServer {
    /// A server checking tokens with `validator` at time `now_ms` (milliseconds since the Unix epoch).
    pub fn new(validator: Arc<TokenValidator>, now_ms: i64) -> OAuthBearerServer {
        OAuthBearerServer {
            validator,
            now_ms,
            error_sent: None,
            complete: false,
        }
    }

    /// Evaluates a client message. Errors: a message after completion (InvalidState), a malformed initial
    /// response (InvalidCredentials), the client's `\x01` after an error challenge (Failed, with that JSON),
    /// an authorization id other than the token's principal (Failed).
    pub fn evaluate(&mut self, message: &[u8]) -> Result<SaslStep, SaslError> {
        if self.complete {
            return Err(SaslError::InvalidState(
                "OAUTHBEARER authentication already complete".into(),
            ));
        }
        if message == b"\x01" {
            if let Some(json) = self.error_sent.take() {
                return Err(SaslError::Failed(json));
            }
        }
        self.error_sent = None;
        let Some(initial) = parse_client_initial_response(message) else {
            return Err(SaslError::InvalidCredentials(
                "Invalid OAUTHBEARER client first message".into(),
            ));
        };
        let token = match self.validator.validate(&initial.token, self.now_ms) {
            Ok(t) => t,
            Err(e) => {
                tracing::debug!(error = %e, "OAUTHBEARER token refused");
                let json = e.json();
                self.error_sent = Some(json.clone());
                return Ok(SaslStep::Continue(json.into_bytes()));
            }
        };
        if !initial.authzid.is_empty() && initial.authzid != token.principal {
            return Err(SaslError::Failed(format!(
                "Authentication failed: Client requested an authorization id ({}) that is different from the token's principal name ({})",
                initial.authzid, token.principal
            )));
        }
        self.complete = true;
        Ok(SaslStep::Complete {
            response: Vec::new(),
            user: token.principal,
            expires_at_ms: Some(token.lifetime_ms),
        })
    }
}

#[cfg(test)]
#[path = "oauthbearer_tests.rs"]
mod tests;
