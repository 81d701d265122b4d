//! SASL authentication on SASL_PLAINTEXT and SASL_SSL listeners (KIP-43, KIP-152): the mechanisms
//! ([`plain`], [`scram`], [`oauthbearer`] with [`jwks`]), the listener's settings ([`SaslListener`], from Kafka's keys) and the client side
//! the broker uses on its own inter-broker connections ([`SaslClientConfig`]). The exchange over the
//! connection (SaslHandshake, SaslAuthenticate, the v0 raw token framing) is `server::sasl_authenticator`.
//!
//! Keys (Kafka's): `sasl.enabled.mechanisms` (per listener as `listener.name.<l>.sasl.enabled.mechanisms`;
//! PLAIN, SCRAM-SHA-256, SCRAM-SHA-512), `listener.name.<l>.<mechanism>.sasl.jaas.config` (PLAIN users as
//! `user_<name>="<password>"`; `username`/`password` for the broker's own inter-broker login),
//! `sasl.mechanism.inter.broker.protocol`, `sasl.server.max.receive.size` (bytes; a larger frame before
//! authentication closes the connection). OAUTHBEARER (KIP-255/KIP-768): unsecured by default (the JAAS
//! entry's `unsecuredValidator*` options); validated when
//! `listener.name.<l>.oauthbearer.sasl.server.callback.handler.class` names Kafka's
//! `OAuthBearerValidatorCallbackHandler` (the `sasl.oauthbearer.*` keys, read per listener and mechanism
//! first). Re-authentication (KIP-368): `[listener.name.<l>.<mechanism>.]connections.max.reauth.ms`.

pub mod client;
pub mod jaas;
pub mod jwks;
pub mod oauthbearer;
pub mod plain;
pub mod scram;

use std::sync::Arc;

use crate::config::BrokerConfig;
use crate::scram::ScramCredentialCache;
use oauthbearer::{OAuthBearerServer, TokenValidator, UnsecuredValidator};
use plain::{PlainServer, PlainUsers};
use scram::{ScramMechanism, ScramServer};

/// The mechanisms Runnel implements, in the order Kafka lists them.
pub const SUPPORTED_MECHANISMS: &[&str] =
    &["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"];

/// The mechanisms the broker can log in with on its own inter-broker connections.
const INTER_BROKER_MECHANISMS: &[&str] = &["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"];

/// Kafka's login module classes (the JAAS entry must name the mechanism's).
const PLAIN_LOGIN_MODULE: &str = "org.apache.kafka.common.security.plain.PlainLoginModule";
const SCRAM_LOGIN_MODULE: &str = "org.apache.kafka.common.security.scram.ScramLoginModule";
const OAUTHBEARER_LOGIN_MODULE: &str =
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule";
/// The server callback handler that selects the validated OAUTHBEARER mode (KIP-768).
const OAUTHBEARER_VALIDATOR_HANDLER: &str =
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler";
/// Kafka's default, unsecured, server callback handler (named explicitly, it selects the unsecured mode).
const OAUTHBEARER_UNSECURED_HANDLER: &str =
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerUnsecuredValidatorCallbackHandler";

/// What a mechanism's server answers a client message with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SaslStep {
    /// Send this challenge; more client messages follow.
    Continue(Vec<u8>),
    /// Authenticated as `User:<user>`; send `response` (possibly empty) last.
    Complete {
        /// The final server message.
        response: Vec<u8>,
        /// The authenticated user name.
        user: String,
        /// When the credential expires (milliseconds since the Unix epoch): an OAUTHBEARER token's `exp`;
        /// `None` for credentials without a lifetime. Bounds the session (KIP-368).
        expires_at_ms: Option<i64>,
    },
}

/// Why an exchange failed; every failure closes the connection after the answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SaslError {
    /// Authentication failed; the message is Kafka's and is sent to the client (SASL_AUTHENTICATION_FAILED).
    #[error("{0}")]
    Failed(String),
    /// Wrong or unknown credentials or a malformed message; the reason is logged only, the client gets
    /// Kafka's generic message naming the mechanism (SASL_AUTHENTICATION_FAILED).
    #[error("{0}")]
    InvalidCredentials(String),
    /// A message after the exchange ended (ILLEGAL_SASL_STATE).
    #[error("{0}")]
    InvalidState(String),
}

/// One exchange on the server side.
#[derive(Debug)]
pub enum SaslServer {
    /// SASL/PLAIN.
    Plain(PlainServer),
    /// SASL/SCRAM-SHA-256 or -512.
    Scram(Box<ScramServer>),
    /// SASL/OAUTHBEARER.
    OAuthBearer(OAuthBearerServer),
}

impl SaslServer {
    /// Evaluates the next client message (see the mechanisms' `evaluate`).
    pub fn evaluate(&mut self, token: &[u8]) -> Result<SaslStep, SaslError> {
        match self {
            SaslServer::Plain(s) => s.evaluate(token),
            SaslServer::Scram(s) => s.evaluate(token),
            SaslServer::OAuthBearer(s) => s.evaluate(token),
        }
    }
}

/// Why a SASL listener could not be set up (a startup error).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SaslSetupError {
    /// `sasl.enabled.mechanisms` is empty or names a mechanism Runnel does not implement.
    #[error("listener {listener}: sasl.enabled.mechanisms={value}: {reason}")]
    Mechanisms {
        /// The listener.
        listener: String,
        /// The configured list.
        value: String,
        /// What is wrong.
        reason: String,
    },
    /// The JAAS entry a mechanism needs is missing or invalid.
    #[error("listener {listener}, {key}: {reason}")]
    Jaas {
        /// The listener.
        listener: String,
        /// The key read.
        key: String,
        /// What is wrong.
        reason: String,
    },
}

/// The JAAS key of `mechanism` on `listener`: `listener.name.<l>.<mechanism lower-case>.sasl.jaas.config`.
pub fn jaas_key(listener: &str, mechanism: &str) -> String {
    format!(
        "listener.name.{}.{}.sasl.jaas.config",
        listener.to_ascii_lowercase(),
        mechanism.to_ascii_lowercase()
    )
}

/// The parsed JAAS entry of `mechanism` on `listener` (`None` when not set), checked to name `module`.
fn jaas_entry(
    config: &BrokerConfig,
    listener: &str,
    mechanism: &str,
    module: &str,
) -> Result<Option<jaas::JaasEntry>, SaslSetupError> {
    let key = jaas_key(listener, mechanism);
    let err = |reason: String| SaslSetupError::Jaas {
        listener: listener.to_string(),
        key: key.clone(),
        reason,
    };
    let Some(text) = config.explicit.get(&key).cloned() else {
        return Ok(None);
    };
    let entry = jaas::parse(&text).map_err(|e| err(e.to_string()))?;
    if entry.login_module != module {
        return Err(err(format!("expected login module {module}")));
    }
    Ok(Some(entry))
}

/// A key of `mechanism` on `listener`: `listener.name.<l>.<mechanism lower-case>.<key>`, else
/// `listener.name.<l>.<key>`, else the broker-wide `key` (Kafka's lookup for per-mechanism settings).
fn mechanism_value(
    config: &BrokerConfig,
    listener: &str,
    mechanism: &str,
    key: &str,
) -> Option<String> {
    let prefixed = format!(
        "listener.name.{}.{}.{key}",
        listener.to_ascii_lowercase(),
        mechanism.to_ascii_lowercase()
    );
    config
        .explicit
        .get(&prefixed)
        .cloned()
        .or_else(|| config.listener_value(listener, key))
}

/// `connections.max.reauth.ms` of `mechanism` on `listener` (default 0; unparsable or negative is 0).
fn max_reauth_ms(config: &BrokerConfig, listener: &str, mechanism: &str) -> i64 {
    mechanism_value(config, listener, mechanism, "connections.max.reauth.ms")
        .and_then(|v| v.trim().parse::<i64>().ok())
        .unwrap_or(0)
        .max(0)
}

/// The OAUTHBEARER validator of `listener`: validated (JWKS) when the server callback handler is Kafka's
/// `OAuthBearerValidatorCallbackHandler`, else unsecured with the JAAS entry's options.
fn oauth_validator(
    config: &BrokerConfig,
    listener: &str,
) -> Result<TokenValidator, SaslSetupError> {
    const M: &str = "OAUTHBEARER";
    let get = |key: &str| mechanism_value(config, listener, M, key);
    let jaas = jaas_entry(config, listener, M, OAUTHBEARER_LOGIN_MODULE)?;
    let handler_key = "sasl.server.callback.handler.class";
    let err = |key: &str, reason: String| SaslSetupError::Jaas {
        listener: listener.to_string(),
        key: key.to_string(),
        reason,
    };
    match get(handler_key).as_deref().map(str::trim) {
        None | Some("") | Some(OAUTHBEARER_UNSECURED_HANDLER) => {
            let options = jaas.map(|e| e.options).unwrap_or_default();
            let v = UnsecuredValidator::from_options(&options)
                .map_err(|r| err(&jaas_key(listener, M), r))?;
            Ok(TokenValidator::Unsecured(v))
        }
        Some(OAUTHBEARER_VALIDATOR_HANDLER) => {
            let url_key = "sasl.oauthbearer.jwks.endpoint.url";
            let url = get(url_key)
                .ok_or_else(|| err(url_key, "the validated OAUTHBEARER mode needs it".into()))?;
            let long = |key: &str, default: i64| -> Result<i64, SaslSetupError> {
                match get(key) {
                    None => Ok(default),
                    Some(v) => v
                        .trim()
                        .parse::<i64>()
                        .ok()
                        .filter(|v| *v >= 0)
                        .ok_or_else(|| err(key, format!("not a non-negative number: {v}"))),
                }
            };
            let list = |key: &str| -> Vec<String> {
                get(key)
                    .unwrap_or_default()
                    .split(',')
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .collect()
            };
            let settings = jwks::JwksSettings {
                jwks_file: jwks::jwks_file_of(url.trim()).map_err(|r| err(url_key, r))?,
                refresh: std::time::Duration::from_millis(
                    long("sasl.oauthbearer.jwks.endpoint.refresh.ms", 3_600_000)?.max(1) as u64,
                ),
                expected_issuer: get("sasl.oauthbearer.expected.issuer")
                    .filter(|s| !s.trim().is_empty()),
                expected_audience: list("sasl.oauthbearer.expected.audience"),
                clock_skew_ms: long("sasl.oauthbearer.clock.skew.seconds", 30)?
                    .saturating_mul(1000),
                sub_claim: get("sasl.oauthbearer.sub.claim.name").unwrap_or_else(|| "sub".into()),
                scope_claim: get("sasl.oauthbearer.scope.claim.name")
                    .unwrap_or_else(|| "scope".into()),
            };
            let v = jwks::JwksValidator::load(settings).map_err(|r| err(url_key, r))?;
            Ok(TokenValidator::Jwks(Arc::new(v)))
        }
        Some(other) => Err(err(
            handler_key,
            format!(
                "{other} is not supported (Kafka's unsecured and validator callback handlers are)"
            ),
        )),
    }
}

/// The SASL side of one listener: its enabled mechanisms, PLAIN users and the SCRAM credentials.
#[derive(Debug)]
pub struct SaslListener {
    enabled: Vec<String>,
    plain_users: Option<Arc<PlainUsers>>,
    credentials: Arc<ScramCredentialCache>,
    oauth: Option<Arc<TokenValidator>>,
    max_reauth_ms: std::collections::BTreeMap<String, i64>,
    max_receive_size: usize,
}

impl SaslListener {
    /// The settings of listener `listener` from `config`. Errors: no mechanism enabled, one Runnel does not
    /// implement (GSSAPI, Kafka's default), PLAIN enabled without a valid JAAS entry, OAUTHBEARER with an
    /// invalid JAAS entry or validated-mode settings (an unreadable JWKS, a JWKS URL other than `file:`).
    pub fn new(
        config: &BrokerConfig,
        listener: &str,
        credentials: Arc<ScramCredentialCache>,
    ) -> Result<SaslListener, SaslSetupError> {
        let value = config
            .listener_value(listener, "sasl.enabled.mechanisms")
            .unwrap_or_else(|| "GSSAPI".into());
        let enabled: Vec<String> = value
            .split(',')
            .map(|m| m.trim().to_string())
            .filter(|m| !m.is_empty())
            .collect();
        let bad = |reason: String| SaslSetupError::Mechanisms {
            listener: listener.to_string(),
            value: value.clone(),
            reason,
        };
        if enabled.is_empty() {
            return Err(bad("no SASL mechanism is enabled".into()));
        }
        if let Some(m) = enabled
            .iter()
            .find(|m| !SUPPORTED_MECHANISMS.contains(&m.as_str()))
        {
            return Err(bad(format!(
                "{m} is not supported (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER are)"
            )));
        }
        let oauth = match enabled.iter().any(|m| m == "OAUTHBEARER") {
            true => Some(Arc::new(oauth_validator(config, listener)?)),
            false => None,
        };
        let max_reauth_ms = enabled
            .iter()
            .map(|m| (m.clone(), max_reauth_ms(config, listener, m)))
            .collect();
        let plain_users = if enabled.iter().any(|m| m == "PLAIN") {
            let entry =
                jaas_entry(config, listener, "PLAIN", PLAIN_LOGIN_MODULE)?.ok_or_else(|| {
                    SaslSetupError::Jaas {
                        listener: listener.to_string(),
                        key: jaas_key(listener, "PLAIN"),
                        reason: "PLAIN is enabled but no JAAS entry with its users is set".into(),
                    }
                })?;
            Some(Arc::new(PlainUsers::from_options(&entry.options)))
        } else {
            None
        };
        let max: i32 = config
            .value("sasl.server.max.receive.size")
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(524_288);
        Ok(SaslListener {
            enabled,
            plain_users,
            credentials,
            oauth,
            max_reauth_ms,
            max_receive_size: max.max(64) as usize,
        })
    }

    /// `connections.max.reauth.ms` of `mechanism` here (0: sessions do not expire unless the credential does).
    pub fn max_reauth_ms(&self, mechanism: &str) -> i64 {
        self.max_reauth_ms.get(mechanism).copied().unwrap_or(0)
    }

    /// The JWKS refresh task of the validated OAUTHBEARER mode, when configured (see
    /// [`jwks::JwksValidator::spawn_refresh`]). Call once, inside the runtime.
    pub fn spawn_background_tasks(&self) {
        if let Some(TokenValidator::Jwks(v)) = self.oauth.as_deref() {
            v.spawn_refresh();
        }
    }

    /// The enabled mechanisms, as configured (what SaslHandshake answers with).
    pub fn enabled_mechanisms(&self) -> &[String] {
        &self.enabled
    }

    /// The largest frame accepted before authentication completes (`sasl.server.max.receive.size`, bytes).
    pub fn max_receive_size(&self) -> usize {
        self.max_receive_size
    }

    /// A server for `mechanism`, or `None` when it is not enabled here. `now_ms` (milliseconds since the Unix
    /// epoch) is the time tokens are checked against.
    pub fn server(&self, mechanism: &str, now_ms: i64) -> Option<SaslServer> {
        if !self.enabled.iter().any(|m| m == mechanism) {
            return None;
        }
        if mechanism == "OAUTHBEARER" {
            let validator = self.oauth.clone()?;
            return Some(SaslServer::OAuthBearer(OAuthBearerServer::new(
                validator, now_ms,
            )));
        }
        if mechanism == "PLAIN" {
            return Some(SaslServer::Plain(PlainServer::new(
                self.plain_users.clone()?,
            )));
        }
        let m = ScramMechanism::from_name(mechanism)?;
        let server = ScramServer::new(m, self.credentials.clone());
        Some(SaslServer::Scram(Box::new(server)))
    }
}

/// How the broker logs in on its own connections to a SASL inter-broker listener
/// (`sasl.mechanism.inter.broker.protocol` and that listener's JAAS `username`/`password`).
#[derive(Clone, PartialEq, Eq)]
pub struct SaslClientConfig {
    /// The mechanism name.
    pub mechanism: String,
    /// The user name.
    pub username: String,
    /// The password.
    pub password: String,
}

impl std::fmt::Debug for SaslClientConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SaslClientConfig")
            .field("mechanism", &self.mechanism)
            .field("username", &self.username)
            .finish_non_exhaustive()
    }
}

impl SaslClientConfig {
    /// The inter-broker login on `listener`. Errors: an unsupported mechanism, or no JAAS entry with
    /// `username` and `password` for it.
    pub fn inter_broker(
        config: &BrokerConfig,
        listener: &str,
    ) -> Result<SaslClientConfig, SaslSetupError> {
        Self::login(config, listener, "sasl.mechanism.inter.broker.protocol")
    }

    /// The login of this process's controller clients (raft peers, the broker's controller client) on
    /// the controller listener `listener`: `sasl.mechanism.controller.protocol` and the listener's JAAS
    /// `username`/`password`. Errors: as [`SaslClientConfig::inter_broker`].
    pub fn controller(
        config: &BrokerConfig,
        listener: &str,
    ) -> Result<SaslClientConfig, SaslSetupError> {
        Self::login(config, listener, "sasl.mechanism.controller.protocol")
    }

    /// The login on `listener` with the mechanism named by `mechanism_key` (Kafka's default GSSAPI).
    fn login(
        config: &BrokerConfig,
        listener: &str,
        mechanism_key: &str,
    ) -> Result<SaslClientConfig, SaslSetupError> {
        let mechanism = config
            .value(mechanism_key)
            .unwrap_or_else(|| "GSSAPI".into());
        if !INTER_BROKER_MECHANISMS.contains(&mechanism.as_str()) {
            return Err(SaslSetupError::Mechanisms {
                listener: listener.to_string(),
                value: mechanism.clone(),
                reason: format!(
                    "{mechanism_key}={mechanism} is not supported (PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 are)"
                ),
            });
        }
        let module = if mechanism == "PLAIN" {
            PLAIN_LOGIN_MODULE
        } else {
            SCRAM_LOGIN_MODULE
        };
        let missing = || SaslSetupError::Jaas {
            listener: listener.to_string(),
            key: jaas_key(listener, &mechanism),
            reason: format!(
                "listener {listener} needs username and password for this process's own login"
            ),
        };
        let entry = jaas_entry(config, listener, &mechanism, module)?.ok_or_else(missing)?;
        match (entry.options.get("username"), entry.options.get("password")) {
            (Some(u), Some(p)) => Ok(SaslClientConfig {
                mechanism,
                username: u.clone(),
                password: p.clone(),
            }),
            _ => Err(missing()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(lines: &str) -> BrokerConfig {
        BrokerConfig::from_pairs(&crate::config::parse_properties(lines).unwrap()).unwrap()
    }

    #[test]
    fn listener_settings_follow_kafkas_keys() {
        let c = config(
            "listeners=SASL_PLAINTEXT://127.0.0.1:0\n\
             listener.name.sasl_plaintext.sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512\n\
             listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_alice=\"alice-secret\";\n",
        );
        let l =
            SaslListener::new(&c, "SASL_PLAINTEXT", Arc::new(ScramCredentialCache::new())).unwrap();
        assert_eq!(l.enabled_mechanisms(), ["PLAIN", "SCRAM-SHA-512"]);
        assert!(matches!(l.server("PLAIN", 0), Some(SaslServer::Plain(_))));
        assert!(matches!(
            l.server("SCRAM-SHA-512", 0),
            Some(SaslServer::Scram(_))
        ));
        assert!(l.server("SCRAM-SHA-256", 0).is_none());
        assert_eq!(l.max_receive_size(), 524_288);
    }

    #[test]
    fn unsupported_or_unconfigured_mechanisms_stop_startup() {
        let cache = || Arc::new(ScramCredentialCache::new());
        let c = config("listeners=SASL_PLAINTEXT://127.0.0.1:0\n");
        let e = SaslListener::new(&c, "SASL_PLAINTEXT", cache()).unwrap_err();
        assert!(e.to_string().contains("GSSAPI is not supported"), "{e}");
        let c = config("listeners=SASL_PLAINTEXT://127.0.0.1:0\nsasl.enabled.mechanisms=PLAIN\n");
        let e = SaslListener::new(&c, "SASL_PLAINTEXT", cache()).unwrap_err();
        assert!(e.to_string().contains("no JAAS entry"), "{e}");
        let c = config(
            "listeners=SASL_PLAINTEXT://127.0.0.1:0\nsasl.enabled.mechanisms=SCRAM-SHA-256\n\
             sasl.mechanism.inter.broker.protocol=SCRAM-SHA-256\n\
             listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username=\"admin\" password=\"pw\";\n",
        );
        assert!(SaslListener::new(&c, "SASL_PLAINTEXT", cache()).is_ok());
        let login = SaslClientConfig::inter_broker(&c, "SASL_PLAINTEXT").unwrap();
        assert_eq!(
            (login.username.as_str(), login.password.as_str()),
            ("admin", "pw")
        );
        assert!(!format!("{login:?}").contains("pw"));
    }
}
