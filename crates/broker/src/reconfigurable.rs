//! Dynamic reconfiguration of running components (KIP-226's `Reconfigurable`): the per-listener TLS keys that
//! may change per broker, and the trait through which [`crate::dynamic_config::DynamicBrokerConfig`] asks a
//! component to validate a change and tells it once the change is in effect.

use std::sync::Arc;

use crate::config::BrokerConfig;
use crate::error::AlterConfigError;

/// The per-listener TLS keys (`listener.name.<l>.<key>`) that can be changed per broker: a change re-reads
/// the key and trust stores (Kafka's dynamic SSL reconfiguration; an AlterConfigs with the same location
/// re-reads an updated file).
const LISTENER_SSL_KEYS: &[&str] = &[
    "ssl.keystore.type",
    "ssl.keystore.location",
    "ssl.keystore.password",
    "ssl.key.password",
    "ssl.keystore.key",
    "ssl.keystore.certificate.chain",
    "ssl.truststore.type",
    "ssl.truststore.location",
    "ssl.truststore.password",
    "ssl.truststore.certificates",
];

/// True for a per-listener TLS key (`listener.name.<l>.ssl.keystore.location`, ...).
pub fn is_listener_ssl_key(key: &str) -> bool {
    crate::config::listener_override(key).is_some_and(|(_, base)| LISTENER_SSL_KEYS.contains(&base))
}

/// A component that follows dynamic config changes (Kafka's `Reconfigurable`): it checks the effective
/// config a change would give before the change is accepted, and is told once a change is in effect.
pub trait Reconfigurable: Send + Sync + std::fmt::Debug {
    /// Checks `next`, the effective config after a change of TLS keys. Errors: why (INVALID_REQUEST).
    fn validate_reconfiguration(&self, next: &BrokerConfig) -> Result<(), String>;
    /// The effective config is now `next`.
    fn reconfigure(&self, next: &BrokerConfig);
}

/// Asks each of `components` to validate `next`. Errors: the first refusal, as INVALID_REQUEST with Kafka's
/// "Validation of dynamic config update of SSLFactory failed: ..." wording.
pub fn validate_all(
    components: &[Arc<dyn Reconfigurable>],
    next: &BrokerConfig,
) -> Result<(), AlterConfigError> {
    for r in components {
        r.validate_reconfiguration(next).map_err(|e| {
            AlterConfigError::InvalidRequest(format!(
                "Validation of dynamic config update of SSLFactory failed: {e}"
            ))
        })?;
    }
    Ok(())
}
