//! Named listeners (KIP-103): `listeners`, `advertised.listeners`, `listener.security.protocol.map`,
//! `inter.broker.listener.name` / `security.inter.broker.protocol`, parsed and checked together with
//! Kafka 4.4's rules and messages (`KafkaConfig`'s listener validation, `SocketServerConfigs`).
//!
//! A listener is a name (upper-case; `PLAINTEXT`, `SSL`, `INTERNAL`, ...) bound to a host and port and
//! mapped to a [`SecurityProtocol`]. The listeners named in `controller.listener.names` are the
//! controller's and are kept apart (see `config::BrokerConfig::controller_listener`).

use std::collections::BTreeMap;

use super::{ConfigError, Endpoint};

/// How a listener's connections are secured (Kafka's `SecurityProtocol`, with its ids).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SecurityProtocol {
    /// No TLS, no authentication (id 0).
    Plaintext,
    /// TLS; the principal comes from the client certificate, if any (id 1).
    Ssl,
    /// SASL authentication over plain TCP (id 2).
    SaslPlaintext,
    /// SASL authentication over TLS (id 3).
    SaslSsl,
}

impl SecurityProtocol {
    /// Parses Kafka's name (any case).
    pub fn parse(text: &str) -> Option<SecurityProtocol> {
        match text.trim().to_ascii_uppercase().as_str() {
            "PLAINTEXT" => Some(SecurityProtocol::Plaintext),
            "SSL" => Some(SecurityProtocol::Ssl),
            "SASL_PLAINTEXT" => Some(SecurityProtocol::SaslPlaintext),
            "SASL_SSL" => Some(SecurityProtocol::SaslSsl),
            _ => None,
        }
    }

    /// Kafka's name.
    pub fn name(self) -> &'static str {
        match self {
            SecurityProtocol::Plaintext => "PLAINTEXT",
            SecurityProtocol::Ssl => "SSL",
            SecurityProtocol::SaslPlaintext => "SASL_PLAINTEXT",
            SecurityProtocol::SaslSsl => "SASL_SSL",
        }
    }

    /// Kafka's id (`SecurityProtocol.id`), as carried in broker registrations.
    pub fn id(self) -> i16 {
        match self {
            SecurityProtocol::Plaintext => 0,
            SecurityProtocol::Ssl => 1,
            SecurityProtocol::SaslPlaintext => 2,
            SecurityProtocol::SaslSsl => 3,
        }
    }

    /// True when connections start with a TLS handshake (SSL, SASL_SSL).
    pub fn uses_tls(self) -> bool {
        matches!(self, SecurityProtocol::Ssl | SecurityProtocol::SaslSsl)
    }

    /// True when connections must authenticate with SASL before other requests (SASL_PLAINTEXT,
    /// SASL_SSL).
    pub fn uses_sasl(self) -> bool {
        matches!(
            self,
            SecurityProtocol::SaslPlaintext | SecurityProtocol::SaslSsl
        )
    }
}

/// One broker listener: where it binds and how it is secured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenerConfig {
    /// Bind endpoint; `endpoint.name` is the listener name.
    pub endpoint: Endpoint,
    /// From `listener.security.protocol.map`.
    pub security_protocol: SecurityProtocol,
}

impl ListenerConfig {
    /// The listener name.
    pub fn name(&self) -> &str {
        &self.endpoint.name
    }
}

/// Kafka's default `listener.security.protocol.map`: each protocol's name maps to itself.
const DEFAULT_PROTOCOL_MAP: &str =
    "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL";

/// The broker's listeners, validated together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listeners {
    /// The client/inter-broker listeners of `listeners` (controller listeners excluded), in order.
    pub listeners: Vec<ListenerConfig>,
    /// `advertised.listeners` (default: `listeners`, a wildcard host advertised as `127.0.0.1`).
    pub advertised: Vec<Endpoint>,
    /// `inter.broker.listener.name` (default: the name of `security.inter.broker.protocol`, `PLAINTEXT`).
    pub inter_broker_listener_name: String,
}

/// Splits a `listeners`-style list into endpoints (an entry without `NAME://` is `PLAINTEXT`, as Runnel has
/// always read it; Kafka requires the prefix).
pub fn parse_endpoint_list(key: &str, text: &str) -> Result<Vec<Endpoint>, ConfigError> {
    text.split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .map(|e| Endpoint::parse(key, e))
        .collect()
}

/// Parses `listener.security.protocol.map` (`NAME:PROTOCOL,...`).
pub fn parse_protocol_map(text: &str) -> Result<BTreeMap<String, SecurityProtocol>, ConfigError> {
    let key = "listener.security.protocol.map";
    let mut map = BTreeMap::new();
    for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let bad = || {
            invalid(
                key,
                text,
                format!(
                    "Error parsing configuration property '{key}': '{entry}' is not NAME:PROTOCOL"
                ),
            )
        };
        let (name, proto) = entry.split_once(':').ok_or_else(bad)?;
        let proto = SecurityProtocol::parse(proto).ok_or_else(bad)?;
        map.insert(name.trim().to_ascii_uppercase(), proto);
    }
    Ok(map)
}

/// What [`Listeners::parse`] reads: the listener keys' effective values.
pub struct ListenerKeys<'a> {
    /// `listeners`.
    pub listeners: &'a str,
    /// `advertised.listeners`, if set.
    pub advertised: Option<&'a str>,
    /// `listener.security.protocol.map`, if set.
    pub protocol_map: Option<&'a str>,
    /// `inter.broker.listener.name`, if set.
    pub inter_broker_listener_name: Option<&'a str>,
    /// `security.inter.broker.protocol`, if set.
    pub security_inter_broker_protocol: Option<&'a str>,
    /// `controller.listener.names` (upper-case).
    pub controller_names: &'a [String],
    /// Whether this process has the broker role (the inter-broker checks apply only then).
    pub broker_role: bool,
}

impl Listeners {
    /// Parses and validates the listener keys. Errors carry Kafka's messages: duplicate names or ports, a
    /// listener without a security protocol, advertised names not among `listeners`, an inter-broker
    /// listener that is not advertised, both inter-broker keys set.
    pub fn parse(k: &ListenerKeys<'_>) -> Result<Listeners, ConfigError> {
        let map = parse_protocol_map(k.protocol_map.unwrap_or(DEFAULT_PROTOCOL_MAP))?;
        let all = parse_endpoint_list("listeners", k.listeners)?;
        check_distinct("listeners", k.listeners, &all)?;
        let mut listeners = Vec::new();
        for e in all {
            let controller = k.controller_names.contains(&e.name);
            let protocol = match (map.get(&e.name), controller) {
                (Some(p), _) => *p,
                // Controller listeners default to PLAINTEXT when the map does not name them (Kafka does
                // the same when the map is left at its default); the controller keeps its own transport.
                (None, true) => SecurityProtocol::Plaintext,
                (None, false) => {
                    return Err(invalid(
                        "listener.security.protocol.map",
                        k.protocol_map.unwrap_or(DEFAULT_PROTOCOL_MAP),
                        format!("No security protocol defined for listener {}", e.name),
                    ))
                }
            };
            if !controller {
                listeners.push(ListenerConfig {
                    endpoint: e,
                    security_protocol: protocol,
                });
            }
        }
        if listeners.is_empty() {
            let default = Endpoint::parse("listeners", "PLAINTEXT://127.0.0.1:9092")?;
            listeners.push(ListenerConfig {
                endpoint: default,
                security_protocol: SecurityProtocol::Plaintext,
            });
        }
        let advertised = advertised(k, &listeners, &map)?;
        let inter_broker_listener_name = inter_broker_name(k, &listeners, &advertised)?;
        Ok(Listeners {
            listeners,
            advertised,
            inter_broker_listener_name,
        })
    }

    /// The listener named `name`.
    pub fn get(&self, name: &str) -> Option<&ListenerConfig> {
        self.listeners.iter().find(|l| l.name() == name)
    }

    /// The advertised endpoint of listener `name`.
    pub fn advertised(&self, name: &str) -> Option<&Endpoint> {
        self.advertised.iter().find(|e| e.name == name)
    }

    /// The inter-broker listener's advertised endpoint (always present after validation when the process
    /// is a broker).
    pub fn inter_broker(&self) -> Option<&Endpoint> {
        self.advertised(&self.inter_broker_listener_name)
    }

    /// The inter-broker listener's security protocol.
    pub fn inter_broker_protocol(&self) -> SecurityProtocol {
        self.get(&self.inter_broker_listener_name)
            .map_or(SecurityProtocol::Plaintext, |l| l.security_protocol)
    }
}

/// `advertised.listeners` (or the listeners themselves), checked against `listeners`.
fn advertised(
    k: &ListenerKeys<'_>,
    listeners: &[ListenerConfig],
    map: &BTreeMap<String, SecurityProtocol>,
) -> Result<Vec<Endpoint>, ConfigError> {
    let Some(text) = k.advertised else {
        return Ok(listeners
            .iter()
            .map(|l| {
                let mut e = l.endpoint.clone();
                if e.host == "0.0.0.0" || e.host == "::" {
                    e.host = "127.0.0.1".to_string();
                }
                e
            })
            .collect());
    };
    let key = "advertised.listeners";
    let advertised = parse_endpoint_list(key, text)?;
    check_distinct(key, text, &advertised)?;
    let names: Vec<&str> = listeners.iter().map(|l| l.name()).collect();
    for e in &advertised {
        if k.controller_names.contains(&e.name) && k.broker_role {
            return Err(invalid(key, text, format!(
                "The advertised.listeners config must not contain KRaft controller listeners from controller.listener.names when process.roles contains the broker role because Kafka clients that send requests via advertised listeners do not send requests to KRaft controllers -- they only send requests to KRaft brokers. Found {}", e.name)));
        }
        if !map.contains_key(&e.name) && !names.contains(&e.name.as_str()) {
            return Err(invalid(
                key,
                text,
                format!("No security protocol defined for listener {}", e.name),
            ));
        }
        if e.host == "0.0.0.0" {
            return Err(invalid(
                key,
                text,
                "advertised.listeners cannot use the nonroutable meta-address 0.0.0.0. Use a routable IP address.".into(),
            ));
        }
    }
    if advertised.iter().any(|e| !names.contains(&e.name.as_str())) {
        let found: Vec<&str> = advertised.iter().map(|e| e.name.as_str()).collect();
        return Err(invalid(key, text, format!(
            "advertised.listeners listener names must be equal to or a subset of the ones defined in listeners. Found {}. The valid options based on the current configuration are {}",
            found.join(","), names.join(","))));
    }
    Ok(advertised)
}

/// `inter.broker.listener.name`, or the listener named after `security.inter.broker.protocol`.
fn inter_broker_name(
    k: &ListenerKeys<'_>,
    listeners: &[ListenerConfig],
    advertised: &[Endpoint],
) -> Result<String, ConfigError> {
    let name = match (k.inter_broker_listener_name, k.security_inter_broker_protocol) {
        (Some(n), Some(_)) => {
            return Err(invalid(
                "inter.broker.listener.name",
                n,
                "Only one of inter.broker.listener.name and security.inter.broker.protocol should be set.".into(),
            ))
        }
        (Some(n), None) => n.trim().to_ascii_uppercase(),
        (None, Some(p)) => SecurityProtocol::parse(p)
            .ok_or_else(|| {
                invalid(
                    "security.inter.broker.protocol",
                    p,
                    "expected PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL".into(),
                )
            })?
            .name()
            .to_string(),
        // Kafka's default protocol is PLAINTEXT; a broker whose only listener has another name uses it.
        (None, None) if listeners.len() == 1 => listeners[0].name().to_string(),
        (None, None) => "PLAINTEXT".to_string(),
    };
    if k.broker_role && !advertised.iter().any(|e| e.name == name) {
        let valid: Vec<&str> = advertised.iter().map(|e| e.name.as_str()).collect();
        return Err(invalid(
            "inter.broker.listener.name",
            &name,
            format!(
                "inter.broker.listener.name must be a listener name defined in advertised.listeners. The valid options based on currently configured listeners are {}",
                valid.join(",")
            ),
        ));
    }
    Ok(name)
}

/// Kafka's distinct-name and distinct-port rules (port 0 may repeat: the kernel picks each).
fn check_distinct(key: &str, text: &str, endpoints: &[Endpoint]) -> Result<(), ConfigError> {
    for (i, a) in endpoints.iter().enumerate() {
        for b in &endpoints[..i] {
            if a.name == b.name {
                return Err(invalid(
                    key,
                    text,
                    format!("Each listener must have a different name, {key}: {text}"),
                ));
            }
            let ipv4_and_v6 = a.host.contains(':') != b.host.contains(':');
            if key == "listeners" && a.port == b.port && a.port != 0 && !ipv4_and_v6 {
                return Err(invalid(key, text, format!(
                    "Each listener must have a different port unless exactly one listener has an IPv4 address and the other listener has an IPv6 address, listeners: {text}")));
            }
        }
    }
    Ok(())
}

fn invalid(key: &str, value: &str, reason: String) -> ConfigError {
    ConfigError::InvalidValue {
        key: key.to_string(),
        value: value.to_string(),
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys<'a>(listeners: &'a str, controller: &'a [String]) -> ListenerKeys<'a> {
        ListenerKeys {
            listeners,
            advertised: None,
            protocol_map: None,
            inter_broker_listener_name: None,
            security_inter_broker_protocol: None,
            controller_names: controller,
            broker_role: true,
        }
    }

    fn reason(e: ConfigError) -> String {
        match e {
            ConfigError::InvalidValue { reason, .. } => reason,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn named_listeners_with_a_protocol_map_and_an_inter_broker_listener() {
        let controller = vec!["CONTROLLER".to_string()];
        let mut k = keys(
            "PLAINTEXT://:9092,SSL://:9093,INTERNAL://127.0.0.1:9094,CONTROLLER://:9095",
            &controller,
        );
        k.protocol_map = Some("PLAINTEXT:PLAINTEXT,SSL:SSL,INTERNAL:SSL,CONTROLLER:PLAINTEXT");
        k.advertised = Some("PLAINTEXT://a:9092,SSL://a:9093,INTERNAL://b:9094");
        k.inter_broker_listener_name = Some("internal");
        let l = Listeners::parse(&k).unwrap();
        assert_eq!(
            l.listeners.len(),
            3,
            "the controller listener is kept apart"
        );
        assert_eq!(
            l.get("INTERNAL").unwrap().security_protocol,
            SecurityProtocol::Ssl
        );
        assert_eq!(l.inter_broker().unwrap().to_string(), "b:9094");
        assert_eq!(l.inter_broker_protocol(), SecurityProtocol::Ssl);
        assert_eq!(l.advertised("SSL").unwrap().host, "a");
    }

    #[test]
    fn defaults_advertise_the_listeners_and_use_plaintext_between_brokers() {
        let l = Listeners::parse(&keys("PLAINTEXT://:9092,SSL://:9093", &[])).unwrap();
        assert_eq!(l.advertised("SSL").unwrap().to_string(), "127.0.0.1:9093");
        assert_eq!(l.inter_broker_listener_name, "PLAINTEXT");
        let mut k = keys("PLAINTEXT://:9092,SSL://:9093", &[]);
        k.security_inter_broker_protocol = Some("SSL");
        assert_eq!(
            Listeners::parse(&k).unwrap().inter_broker_listener_name,
            "SSL"
        );
        // A single listener of another name carries the inter-broker traffic.
        let l = Listeners::parse(&keys("SSL://:9093", &[])).unwrap();
        assert_eq!(l.inter_broker_listener_name, "SSL");
    }

    #[test]
    fn bad_combinations_get_kafkas_errors() {
        let e = |k: ListenerKeys<'_>| reason(Listeners::parse(&k).unwrap_err());
        assert!(e(keys("PLAINTEXT://:1,PLAINTEXT://:2", &[]))
            .starts_with("Each listener must have a different name"));
        assert!(e(keys("PLAINTEXT://:1,SSL://:1", &[]))
            .starts_with("Each listener must have a different port"));
        assert_eq!(
            e(keys("PLAINTEXT://:1,FOO://:2", &[])),
            "No security protocol defined for listener FOO"
        );
        let mut k = keys("PLAINTEXT://:1,SSL://:2", &[]);
        k.advertised = Some("PLAINTEXT://a:1,SASL_SSL://a:3");
        assert!(e(k).starts_with(
            "advertised.listeners listener names must be equal to or a subset of the ones defined in listeners. Found PLAINTEXT,SASL_SSL."
        ));
        let mut k = keys("PLAINTEXT://:1,SSL://:2", &[]);
        k.advertised = Some("SSL://a:2");
        assert_eq!(e(k), "inter.broker.listener.name must be a listener name defined in advertised.listeners. The valid options based on currently configured listeners are SSL");
        let mut k = keys("PLAINTEXT://:1,SSL://:2", &[]);
        k.inter_broker_listener_name = Some("SSL");
        k.security_inter_broker_protocol = Some("SSL");
        assert!(e(k).starts_with("Only one of inter.broker.listener.name"));
        let mut k = keys("PLAINTEXT://:1", &[]);
        k.protocol_map = Some("PLAINTEXT=SSL");
        assert!(e(k).contains("is not NAME:PROTOCOL"));
        let mut k = keys("PLAINTEXT://:1", &[]);
        k.advertised = Some("PLAINTEXT://0.0.0.0:1");
        assert!(e(k).contains("nonroutable meta-address"));
    }
}
