//! Client security for the operator commands: `security.protocol`, TLS and SASL settings given as `-X`
//! properties (librdkafka's names) or in a `--command-config` file (the Java client's names, as Kafka's
//! tools take them). Both end up as one list of librdkafka properties ([`librdkafka_properties`]); from that
//! list the librdkafka clients are configured and our own codec's connections ([`wire_connector`]) open TLS
//! and log in with SASL through the broker crate's `TlsConnector` and `SaslConnector`, the ones the replica
//! fetchers use.
//!
//! Supported: PLAINTEXT, SSL, SASL_PLAINTEXT and SASL_SSL; SASL PLAIN and SCRAM-SHA-256/512 (OAUTHBEARER
//! only through librdkafka); PEM trust stores and PEM or PKCS#12 client key stores.

use std::path::Path;
use std::sync::Arc;

use anyhow::{anyhow, bail, Context};
use broker::config::{parse_properties, BrokerConfig};
use broker::security::sasl::client::SaslConnector;
use broker::security::sasl::{jaas, SaslClientConfig};
use broker::security::TlsConnector;
use replica::transport::{Connector, TcpConnector};

/// Java client keys with no librdkafka equivalent that the translation consumes or may safely drop.
const JAVA_ONLY: &[&str] = &[
    "ssl.truststore.type",
    "ssl.truststore.password",
    "ssl.keystore.type",
    "ssl.protocol",
    "ssl.enabled.protocols",
    "ssl.trustmanager.algorithm",
    "ssl.keymanager.algorithm",
    "sasl.login.callback.handler.class",
];

/// Reads a `--command-config` file (Java `.properties`) and translates it to librdkafka properties.
/// Errors: an unreadable file, bad syntax, or a setting librdkafka cannot express (see [`from_java`]).
pub fn command_config(path: &Path) -> anyhow::Result<Vec<(String, String)>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading --command-config {}", path.display()))?;
    let pairs = parse_properties(&text).with_context(|| format!("in {}", path.display()))?;
    from_java(&pairs).with_context(|| format!("in {}", path.display()))
}

/// Translates the Java client's security keys to librdkafka's: `sasl.jaas.config` (PlainLoginModule /
/// ScramLoginModule `username`, `password`) → `sasl.username`/`sasl.password`; a PEM trust store →
/// `ssl.ca.location` (or `ssl.ca.pem` for `ssl.truststore.certificates`); a PKCS12 key store stays
/// `ssl.keystore.location`/`ssl.keystore.password`, a PEM one becomes `ssl.certificate.location` +
/// `ssl.key.location` (or the inline `.pem` keys); an empty `ssl.endpoint.identification.algorithm` → `none`.
/// Other keys pass through unchanged. Errors: a JKS store (librdkafka reads PEM and PKCS#12 only), a
/// PKCS12 trust store, an unparsable JAAS entry.
pub fn from_java(pairs: &[(String, String)]) -> anyhow::Result<Vec<(String, String)>> {
    let get = |k: &str| {
        pairs
            .iter()
            .rev()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.clone())
    };
    let mut out = Vec::new();
    let mut push = |k: &str, v: String| out.push((k.to_string(), v));
    for (k, v) in pairs {
        match k.as_str() {
            "sasl.jaas.config" => {
                let entry = jaas::parse(v).map_err(|e| anyhow!("sasl.jaas.config: {e}"))?;
                for (opt, key) in [("username", "sasl.username"), ("password", "sasl.password")] {
                    if let Some(value) = entry.options.get(opt) {
                        push(key, value.clone());
                    }
                }
            }
            "ssl.truststore.location" => {
                let ty = get("ssl.truststore.type").unwrap_or_else(|| "JKS".into());
                if !ty.eq_ignore_ascii_case("PEM") {
                    bail!("ssl.truststore.type={ty}: only a PEM trust store can be used here (set ssl.truststore.type=PEM, or give -X ssl.ca.location=FILE)");
                }
                push("ssl.ca.location", v.clone());
            }
            "ssl.truststore.certificates" => push("ssl.ca.pem", v.clone()),
            "ssl.keystore.location" => {
                let ty = get("ssl.keystore.type").unwrap_or_else(|| "JKS".into());
                if ty.eq_ignore_ascii_case("PEM") {
                    push("ssl.certificate.location", v.clone());
                    push("ssl.key.location", v.clone());
                } else if ty.eq_ignore_ascii_case("PKCS12") {
                    push("ssl.keystore.location", v.clone());
                } else {
                    bail!(
                        "ssl.keystore.type={ty}: only PEM and PKCS12 key stores can be used here"
                    );
                }
            }
            "ssl.keystore.certificate.chain" => push("ssl.certificate.pem", v.clone()),
            "ssl.keystore.key" => push("ssl.key.pem", v.clone()),
            "ssl.endpoint.identification.algorithm" if v.is_empty() => push(k, "none".into()),
            key if JAVA_ONLY.contains(&key) => {}
            _ => push(k, v.clone()),
        }
    }
    Ok(out)
}

/// The last value of `key` in librdkafka properties.
fn get<'a>(props: &'a [(String, String)], key: &str) -> Option<&'a str> {
    props
        .iter()
        .rev()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

/// The connector our own codec's connections use for `props` (librdkafka names): TCP, TLS for SSL and
/// SASL_SSL, then a SASL login for SASL_PLAINTEXT and SASL_SSL. Errors: an unknown protocol, a TLS
/// setting that does not load, a SASL mechanism other than PLAIN/SCRAM or missing credentials.
pub fn wire_connector(props: &[(String, String)]) -> anyhow::Result<Arc<dyn Connector>> {
    let protocol = get(props, "security.protocol")
        .unwrap_or("plaintext")
        .to_ascii_uppercase();
    let (tls, sasl) = match protocol.as_str() {
        "PLAINTEXT" => (false, false),
        "SSL" => (true, false),
        "SASL_PLAINTEXT" => (false, true),
        "SASL_SSL" => (true, true),
        other => {
            bail!("security.protocol={other}: expected PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL")
        }
    };
    let mut connector: Arc<dyn Connector> = if tls {
        let config = tls_config(props)?;
        Arc::new(TlsConnector::new(&config, "client").context("the client's TLS settings")?)
    } else {
        Arc::new(TcpConnector)
    };
    if sasl {
        let mechanism = get(props, "sasl.mechanism")
            .or_else(|| get(props, "sasl.mechanisms"))
            .unwrap_or("GSSAPI")
            .to_string();
        if !matches!(
            mechanism.as_str(),
            "PLAIN" | "SCRAM-SHA-256" | "SCRAM-SHA-512"
        ) {
            bail!("sasl.mechanism={mechanism}: this command logs in with PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512");
        }
        let field = |k: &str| {
            get(props, k).map(str::to_string).ok_or_else(|| {
                anyhow!("SASL needs {k} (-X {k}=..., or sasl.jaas.config in --command-config)")
            })
        };
        let login = SaslClientConfig {
            mechanism,
            username: field("sasl.username")?,
            password: field("sasl.password")?,
        };
        connector = Arc::new(SaslConnector::new(connector, login));
    }
    Ok(connector)
}

/// The TLS settings of `props` as the broker's `ssl.*` keys, which `TlsConnector` reads: the trust store
/// (required: these connections verify the broker), an optional client certificate, host-name checking.
fn tls_config(props: &[(String, String)]) -> anyhow::Result<BrokerConfig> {
    let read = |key: &str| -> anyhow::Result<Option<String>> {
        get(props, key)
            .map(|path| std::fs::read_to_string(path).with_context(|| format!("{key}={path}")))
            .transpose()
    };
    let mut pairs: Vec<(String, String)> = Vec::new();
    let mut set = |k: &str, v: String| pairs.push((k.to_string(), v));
    let roots = match get(props, "ssl.ca.pem") {
        Some(pem) => pem.to_string(),
        None => read("ssl.ca.location")?.ok_or_else(|| {
            anyhow!("SSL needs the broker's CA certificate: -X ssl.ca.location=FILE (PEM)")
        })?,
    };
    set("ssl.truststore.type", "PEM".into());
    set("ssl.truststore.certificates", roots);
    let cert = match get(props, "ssl.certificate.pem") {
        Some(pem) => Some(pem.to_string()),
        None => read("ssl.certificate.location")?,
    };
    let key = match get(props, "ssl.key.pem") {
        Some(pem) => Some(pem.to_string()),
        None => read("ssl.key.location")?,
    };
    match (cert, key, get(props, "ssl.keystore.location")) {
        (Some(chain), Some(key), _) => {
            set("ssl.keystore.type", "PEM".into());
            set("ssl.keystore.certificate.chain", chain);
            set("ssl.keystore.key", key);
            if let Some(p) = get(props, "ssl.key.password") {
                set("ssl.key.password", p.into());
            }
        }
        (None, None, Some(p12)) => {
            set("ssl.keystore.type", "PKCS12".into());
            set("ssl.keystore.location", p12.into());
            if let Some(p) = get(props, "ssl.keystore.password") {
                set("ssl.keystore.password", p.into());
            }
        }
        (None, None, None) => {}
        _ => bail!("a client certificate needs both ssl.certificate.location and ssl.key.location"),
    }
    let verify = get(props, "ssl.endpoint.identification.algorithm").unwrap_or("https");
    let verify = if verify.eq_ignore_ascii_case("none") {
        ""
    } else {
        "https"
    };
    set("ssl.endpoint.identification.algorithm", verify.into());
    Ok(BrokerConfig::from_pairs(&pairs)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(text: &str) -> Vec<(String, String)> {
        parse_properties(text).unwrap()
    }

    #[test]
    fn java_settings_become_librdkafka_ones() {
        let out = from_java(&pairs(
            "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n\
             sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username=\"alice\" password=\"s3cret\";\n\
             ssl.truststore.type=PEM\nssl.truststore.location=/ca.pem\n\
             ssl.keystore.type=PKCS12\nssl.keystore.location=/me.p12\nssl.keystore.password=pw\n\
             ssl.endpoint.identification.algorithm=\n",
        ))
        .unwrap();
        for (k, v) in [
            ("security.protocol", "SASL_SSL"),
            ("sasl.username", "alice"),
            ("sasl.password", "s3cret"),
            ("ssl.ca.location", "/ca.pem"),
            ("ssl.keystore.location", "/me.p12"),
            ("ssl.keystore.password", "pw"),
            ("ssl.endpoint.identification.algorithm", "none"),
        ] {
            assert_eq!(get(&out, k), Some(v), "{k} in {out:?}");
        }
        assert_eq!(get(&out, "ssl.truststore.type"), None);
        assert_eq!(get(&out, "sasl.jaas.config"), None);
    }

    #[test]
    fn stores_librdkafka_cannot_read_are_refused_with_the_fix() {
        let e = from_java(&pairs("ssl.truststore.location=/ts.jks\n")).unwrap_err();
        assert!(format!("{e:#}").contains("ssl.ca.location"), "{e:#}");
        let e = from_java(&pairs("ssl.keystore.location=/ks.jks\n")).unwrap_err();
        assert!(format!("{e:#}").contains("PEM and PKCS12"), "{e:#}");
    }

    #[test]
    fn wire_security_needs_what_it_cannot_guess() {
        let e = wire_connector(&pairs("security.protocol=SSL\n"))
            .err()
            .unwrap();
        assert!(format!("{e:#}").contains("ssl.ca.location"), "{e:#}");
        let e = wire_connector(&pairs(
            "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n",
        ))
        .err()
        .unwrap();
        assert!(format!("{e:#}").contains("sasl.username"), "{e:#}");
        let e = wire_connector(&pairs(
            "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=GSSAPI\n",
        ))
        .err()
        .unwrap();
        assert!(format!("{e:#}").contains("PLAIN, SCRAM"), "{e:#}");
        assert!(wire_connector(&pairs("security.protocol=BOGUS\n")).is_err());
        assert!(wire_connector(&[]).is_ok());
    }
}
