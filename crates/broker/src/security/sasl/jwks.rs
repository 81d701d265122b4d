//! The validated OAUTHBEARER mode (KIP-768, Kafka's `OAuthBearerValidatorCallbackHandler` with its
//! `BrokerJwtValidator`): a token is a signed JWT (JWS compact form, never `alg: none`) whose signature is
//! checked with the key its `kid` names in the listener's JWKS (RFC 7517), and whose claims are checked as
//! Kafka checks them — `exp` and `iat` required, `nbf` honoured, `exp`/`iat`/`nbf` with
//! `sasl.oauthbearer.clock.skew.seconds` of leeway, `iss` equal to `sasl.oauthbearer.expected.issuer` and
//! `aud` naming one of `sasl.oauthbearer.expected.audience` when those are set, the subject from
//! `sasl.oauthbearer.sub.claim.name` and the scopes from `sasl.oauthbearer.scope.claim.name`.
//!
//! The JWKS comes from `sasl.oauthbearer.jwks.endpoint.url`, a `file:` URL: read at startup (an unreadable
//! or invalid set stops startup, as in Kafka) and again off the request path by [`JwksValidator::spawn_refresh`]
//! every `sasl.oauthbearer.jwks.endpoint.refresh.ms` and soon after a token names an unknown `kid`.
//! Signature checks are the `jsonwebtoken` library's.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{DecodingKey, Validation};
use parking_lot::RwLock;
use serde_json::Value;

use super::oauthbearer::{json_object, scope_claim, string_claim, time_claim};
use super::oauthbearer::{OAuthBearerToken, TokenError};

/// The shortest pause between two JWKS reloads asked for by unknown key ids (a flood of bad tokens must not
/// turn into a flood of reads).
const MIN_KID_RELOAD_INTERVAL: Duration = Duration::from_secs(1);

/// The settings of the validated mode (Kafka's `sasl.oauthbearer.*` keys).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JwksSettings {
    /// The JWKS file (from a `file:` `sasl.oauthbearer.jwks.endpoint.url`).
    pub jwks_file: PathBuf,
    /// `sasl.oauthbearer.jwks.endpoint.refresh.ms` (default 3600000).
    pub refresh: Duration,
    /// `sasl.oauthbearer.expected.issuer` (default: not checked).
    pub expected_issuer: Option<String>,
    /// `sasl.oauthbearer.expected.audience` (a list; empty: not checked).
    pub expected_audience: Vec<String>,
    /// `sasl.oauthbearer.clock.skew.seconds` (default 30) in milliseconds.
    pub clock_skew_ms: i64,
    /// `sasl.oauthbearer.sub.claim.name` (default `sub`).
    pub sub_claim: String,
    /// `sasl.oauthbearer.scope.claim.name` (default `scope`).
    pub scope_claim: String,
}

/// The path of a `file:` JWKS URL (`file:///p` or `file:/p`). Errors: another scheme (https JWKS endpoints
/// are not implemented yet).
pub fn jwks_file_of(url: &str) -> Result<PathBuf, String> {
    let path = url
        .strip_prefix("file://")
        .or_else(|| url.strip_prefix("file:"))
        .ok_or_else(|| {
            format!("{url}: only file: JWKS URLs are supported (https endpoints are not yet)")
        })?;
    if path.is_empty() {
        return Err(format!("{url}: no file path"));
    }
    Ok(PathBuf::from(path))
}

/// Parses a JWKS document (`{"keys":[...]}`).
pub fn parse_jwks(text: &str) -> Result<JwkSet, String> {
    serde_json::from_str(text).map_err(|e| format!("invalid JWKS: {e}"))
}

/// Validates signed JWTs against a JWKS that is reloaded in the background.
#[derive(Debug)]
pub struct JwksValidator {
    settings: JwksSettings,
    keys: RwLock<JwkSet>,
    unknown_kid: tokio::sync::Notify,
}

impl JwksValidator {
    /// A validator over `keys` (already loaded).
    pub fn new(settings: JwksSettings, keys: JwkSet) -> JwksValidator {
        JwksValidator {
            settings,
            keys: RwLock::new(keys),
            unknown_kid: tokio::sync::Notify::new(),
        }
    }

    /// Reads the JWKS file now (at startup). Errors: unreadable or invalid.
    pub fn load(settings: JwksSettings) -> Result<JwksValidator, String> {
        let text = std::fs::read_to_string(&settings.jwks_file)
            .map_err(|e| format!("{}: {e}", settings.jwks_file.display()))?;
        let keys = parse_jwks(&text)?;
        Ok(JwksValidator::new(settings, keys))
    }

    /// Replaces the key set (what a reload does).
    pub fn set_keys(&self, keys: JwkSet) {
        *self.keys.write() = keys;
    }

    /// Reloads the JWKS file every `refresh` and, at most once a second, after a token named an unknown key
    /// id; a failed reload keeps the previous keys and is logged. Runs until the runtime stops.
    pub fn spawn_refresh(self: &Arc<Self>) {
        let v = self.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = tokio::time::sleep(v.settings.refresh) => {}
                    _ = v.unknown_kid.notified() => {}
                }
                match tokio::fs::read_to_string(&v.settings.jwks_file).await {
                    Ok(text) => match parse_jwks(&text) {
                        Ok(keys) => v.set_keys(keys),
                        Err(e) => {
                            tracing::warn!(error = %e, "JWKS reload failed; keeping the old keys")
                        }
                    },
                    Err(e) => {
                        tracing::warn!(file = %v.settings.jwks_file.display(), error = %e, "JWKS reload failed; keeping the old keys")
                    }
                }
                tokio::time::sleep(MIN_KID_RELOAD_INTERVAL).await;
            }
        });
    }

    /// The key a token's header names: by `kid`, or the only key when there is no `kid`.
    fn key_for(&self, kid: Option<&str>) -> Option<Jwk> {
        let keys = self.keys.read();
        match kid {
            Some(kid) => keys.find(kid).cloned(),
            None if keys.keys.len() == 1 => keys.keys.first().cloned(),
            None => None,
        }
    }

    /// Validates `token` at `now_ms` (milliseconds since the Unix epoch). Errors (all `invalid_token`):
    /// malformed, `alg: none` or an unknown algorithm, an unknown `kid` (which asks for a reload), a key of
    /// another algorithm, a bad signature, a missing `exp`/`iat`/subject, expired, not yet valid, issued in
    /// the future, the wrong issuer or audience.
    pub fn validate(&self, token: &str, now_ms: i64) -> Result<OAuthBearerToken, TokenError> {
        let invalid = |m: String| TokenError::Invalid(m);
        let header = jsonwebtoken::decode_header(token)
            .map_err(|e| invalid(format!("unusable JWS header (alg none is refused): {e}")))?;
        let Some(jwk) = self.key_for(header.kid.as_deref()) else {
            self.unknown_kid.notify_one();
            return Err(invalid(format!(
                "no JWKS key for kid {:?}",
                header.kid.as_deref().unwrap_or("(none)")
            )));
        };
        if let Some(alg) = jwk.common.key_algorithm {
            if format!("{alg:?}") != format!("{:?}", header.alg) {
                return Err(invalid(format!(
                    "the token's alg {:?} is not its key's {alg:?}",
                    header.alg
                )));
            }
        }
        let key = DecodingKey::from_jwk(&jwk).map_err(|e| invalid(format!("unusable JWK: {e}")))?;
        let mut validation = Validation::new(header.alg);
        validation.validate_exp = false;
        validation.validate_nbf = false;
        validation.validate_aud = false;
        validation.required_spec_claims.clear();
        jsonwebtoken::decode::<Value>(token, &key, &validation)
            .map_err(|e| invalid(format!("signature check failed: {e}")))?;
        let claims = json_object(token.split('.').nth(1).unwrap_or_default())?;
        self.check_claims(&claims, now_ms)
    }

    fn check_claims(
        &self,
        claims: &serde_json::Map<String, Value>,
        now_ms: i64,
    ) -> Result<OAuthBearerToken, TokenError> {
        let s = &self.settings;
        let invalid = |m: &str| TokenError::Invalid(m.to_string());
        let exp = time_claim(claims, "exp")?.ok_or_else(|| invalid("no 'exp' claim"))?;
        let iat = time_claim(claims, "iat")?.ok_or_else(|| invalid("no 'iat' claim"))?;
        if now_ms - s.clock_skew_ms >= exp {
            return Err(invalid("the token has expired"));
        }
        if iat > now_ms + s.clock_skew_ms {
            return Err(invalid("the token's 'iat' is in the future"));
        }
        if let Some(nbf) = time_claim(claims, "nbf")? {
            if nbf > now_ms + s.clock_skew_ms {
                return Err(invalid("the token is not yet valid ('nbf')"));
            }
        }
        if let Some(issuer) = &s.expected_issuer {
            if claims.get("iss").and_then(Value::as_str) != Some(issuer.as_str()) {
                return Err(invalid("the token's issuer is not the expected one"));
            }
        }
        if !s.expected_audience.is_empty() {
            let aud: Vec<&str> = match claims.get("aud") {
                Some(Value::String(a)) => vec![a.as_str()],
                Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
                _ => Vec::new(),
            };
            if !aud
                .iter()
                .any(|a| s.expected_audience.iter().any(|e| e == a))
            {
                return Err(invalid("the token's audience is not an expected one"));
            }
        }
        Ok(OAuthBearerToken {
            principal: string_claim(claims, &s.sub_claim)?,
            lifetime_ms: exp,
            scope: scope_claim(claims, &s.scope_claim),
        })
    }
}
