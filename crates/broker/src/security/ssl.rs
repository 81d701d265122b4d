//! TLS for SSL listeners and the inter-broker client, with rustls (ring provider), configured by Kafka's
//! `ssl.*` keys, each overridable per listener as `listener.name.<listener>.ssl.*`.
//!
//! Key store (`ssl.keystore.type`): `PEM` — `ssl.keystore.location` names a PEM file with the private
//! key and the certificate chain, or `ssl.keystore.key` / `ssl.keystore.certificate.chain` hold them
//! inline; an encrypted PKCS#8 key (`ENCRYPTED PRIVATE KEY`) is opened with `ssl.key.password` — and
//! `PKCS12` (`JKS`, Kafka's default name, is read as PKCS12, as Java reads PKCS12 files under that type):
//! `ssl.keystore.location` + `ssl.keystore.password`. Trust store (`ssl.truststore.type`): `PEM`
//! (`ssl.truststore.location` or inline `ssl.truststore.certificates`) or `PKCS12`
//! (`ssl.truststore.location` + optional `ssl.truststore.password`). `ssl.client.auth` none / requested /
//! required; `ssl.enabled.protocols` TLSv1.2 and/or TLSv1.3; `ssl.endpoint.identification.algorithm`
//! `https` (verify the server's host name) or empty (do not) for the client side. `ssl.cipher.suites` is
//! accepted and ignored: rustls offers its own safe suites.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::server::WebPkiClientVerifier;
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, ServerConfig, SignatureScheme};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName, UnixTime};

use crate::config::listeners::{parse_protocol_map, SecurityProtocol};
use crate::config::BrokerConfig;

/// A TLS configuration that cannot be used; startup fails with it (or a dynamic update is refused).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid TLS configuration for listener {listener}: {key}: {reason}")]
pub struct SslConfigError {
    /// The listener the configuration is for.
    pub listener: String,
    /// The key at fault (its base name, e.g. `ssl.keystore.location`).
    pub key: String,
    /// What is wrong.
    pub reason: String,
}

/// `ssl.client.auth`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    /// No client certificate is asked for.
    None,
    /// A certificate is asked for; a client without one connects as `User:ANONYMOUS`.
    Requested,
    /// A client without a certificate trusted by the trust store is refused.
    Required,
}

/// A key and its certificate chain.
struct KeyMaterial {
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
}

/// Reads the `ssl.*` keys of one listener (or of the inter-broker client, which uses its listener's).
struct SslKeys<'a> {
    config: &'a BrokerConfig,
    listener: &'a str,
}

impl SslKeys<'_> {
    /// The listener's security protocol: a broker listener's, else (the controller listener) its entry
    /// in `listener.security.protocol.map`.
    fn protocol(&self) -> Option<SecurityProtocol> {
        if let Some(l) = self.config.listeners.get(self.listener) {
            return Some(l.security_protocol);
        }
        let map = self.config.explicit.get("listener.security.protocol.map")?;
        parse_protocol_map(map).ok()?.get(self.listener).copied()
    }

    fn get(&self, key: &str) -> Option<String> {
        self.config
            .listener_value(self.listener, key)
            .filter(|v| !v.trim().is_empty())
    }

    fn err(&self, key: &str, reason: impl Into<String>) -> SslConfigError {
        SslConfigError {
            listener: self.listener.to_string(),
            key: key.to_string(),
            reason: reason.into(),
        }
    }

    fn read(&self, key: &str, path: &str) -> Result<Vec<u8>, SslConfigError> {
        std::fs::read(path).map_err(|e| self.err(key, format!("cannot read {path}: {e}")))
    }

    fn store_type(&self, key: &str) -> Result<StoreType, SslConfigError> {
        let text = self.get(key).unwrap_or_else(|| "JKS".into());
        match text.trim().to_ascii_uppercase().as_str() {
            "PEM" => Ok(StoreType::Pem),
            "PKCS12" | "JKS" => Ok(StoreType::Pkcs12),
            other => Err(self.err(
                key,
                format!("unsupported store type {other} (PEM or PKCS12)"),
            )),
        }
    }

    /// The key store, if one is configured.
    fn key_material(&self) -> Result<Option<KeyMaterial>, SslConfigError> {
        let ty = self.store_type("ssl.keystore.type")?;
        let location = self.get("ssl.keystore.location");
        let inline_chain = self.get("ssl.keystore.certificate.chain");
        let inline_key = self.get("ssl.keystore.key");
        let key_password = self.get("ssl.key.password");
        if inline_chain.is_some() || inline_key.is_some() {
            if ty != StoreType::Pem {
                return Err(self.err(
                    "ssl.keystore.type",
                    "a key or certificate chain given inline needs ssl.keystore.type=PEM",
                ));
            }
            if location.is_some() {
                return Err(self.err(
                    "ssl.keystore.location",
                    "cannot be set together with ssl.keystore.key / ssl.keystore.certificate.chain",
                ));
            }
            let (Some(chain), Some(key)) = (inline_chain, inline_key) else {
                return Err(self.err(
                    "ssl.keystore.key",
                    "ssl.keystore.key and ssl.keystore.certificate.chain must both be set",
                ));
            };
            let chain = normalize_pem(&chain);
            let chain = self.pem_certs("ssl.keystore.certificate.chain", chain.as_bytes())?;
            let key = normalize_pem(&key);
            let key = self.pem_key("ssl.keystore.key", key.as_bytes(), key_password.as_deref())?;
            return Ok(Some(KeyMaterial { chain, key }));
        }
        let Some(path) = location else {
            return Ok(None);
        };
        let bytes = self.read("ssl.keystore.location", &path)?;
        match ty {
            StoreType::Pem => {
                if self.get("ssl.keystore.password").is_some() {
                    return Err(self.err("ssl.keystore.password", "SSL key store password cannot be specified with PEM format, only key password may be specified"));
                }
                let chain = self.pem_certs("ssl.keystore.location", &bytes)?;
                let key = self.pem_key("ssl.keystore.location", &bytes, key_password.as_deref())?;
                Ok(Some(KeyMaterial { chain, key }))
            }
            StoreType::Pkcs12 => {
                let password = self.get("ssl.keystore.password").unwrap_or_default();
                let store = p12_keystore::KeyStore::from_pkcs12(&bytes, &password)
                    .map_err(|e| self.err("ssl.keystore.location", format!("{path}: {e}")))?;
                let (_, chain) = store.private_key_chain().ok_or_else(|| {
                    self.err(
                        "ssl.keystore.location",
                        format!("{path} holds no private key"),
                    )
                })?;
                let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(chain.key().to_vec()));
                let chain = chain
                    .chain()
                    .iter()
                    .map(|c| CertificateDer::from(c.as_der().to_vec()))
                    .collect();
                Ok(Some(KeyMaterial { chain, key }))
            }
        }
    }

    /// The trust store, if one is configured.
    fn roots(&self) -> Result<Option<RootCertStore>, SslConfigError> {
        let ty = self.store_type("ssl.truststore.type")?;
        let certs = match (
            self.get("ssl.truststore.certificates"),
            self.get("ssl.truststore.location"),
        ) {
            (Some(_), Some(_)) => {
                return Err(self.err(
                    "ssl.truststore.location",
                    "cannot be set together with ssl.truststore.certificates",
                ))
            }
            (Some(inline), None) => {
                let inline = normalize_pem(&inline);
                self.pem_certs("ssl.truststore.certificates", inline.as_bytes())?
            }
            (None, Some(path)) => {
                let bytes = self.read("ssl.truststore.location", &path)?;
                match ty {
                    StoreType::Pem => self.pem_certs("ssl.truststore.location", &bytes)?,
                    StoreType::Pkcs12 => self.pkcs12_certs(&path, &bytes)?,
                }
            }
            (None, None) => return Ok(None),
        };
        let mut roots = RootCertStore::empty();
        for cert in certs {
            roots
                .add(cert)
                .map_err(|e| self.err("ssl.truststore.location", e.to_string()))?;
        }
        Ok(Some(roots))
    }

    fn pkcs12_certs(
        &self,
        path: &str,
        bytes: &[u8],
    ) -> Result<Vec<CertificateDer<'static>>, SslConfigError> {
        let password = self.get("ssl.truststore.password").unwrap_or_default();
        let store = p12_keystore::KeyStore::from_pkcs12(bytes, &password)
            .map_err(|e| self.err("ssl.truststore.location", format!("{path}: {e}")))?;
        let mut certs = Vec::new();
        for (_, entry) in store.entries() {
            match entry {
                p12_keystore::KeyStoreEntry::Certificate(c) => {
                    certs.push(CertificateDer::from(c.as_der().to_vec()))
                }
                p12_keystore::KeyStoreEntry::PrivateKeyChain(chain) => certs.extend(
                    chain
                        .chain()
                        .iter()
                        .map(|c| CertificateDer::from(c.as_der().to_vec())),
                ),
            }
        }
        if certs.is_empty() {
            return Err(self.err(
                "ssl.truststore.location",
                format!("{path} holds no certificate"),
            ));
        }
        Ok(certs)
    }

    fn pem_certs(
        &self,
        key: &str,
        bytes: &[u8],
    ) -> Result<Vec<CertificateDer<'static>>, SslConfigError> {
        let certs = CertificateDer::pem_slice_iter(bytes)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.err(key, format!("bad PEM certificate: {e}")))?;
        if certs.is_empty() {
            return Err(self.err(key, "no PEM certificate found"));
        }
        Ok(certs)
    }

    /// The private key of PEM text: an unencrypted PKCS#8/PKCS#1/SEC1 key, or an encrypted PKCS#8 key
    /// (`ENCRYPTED PRIVATE KEY`, PBES2) opened with `password` (`ssl.key.password`).
    fn pem_key(
        &self,
        key: &str,
        bytes: &[u8],
        password: Option<&str>,
    ) -> Result<PrivateKeyDer<'static>, SslConfigError> {
        let text = String::from_utf8_lossy(bytes);
        const BEGIN: &str = "-----BEGIN ENCRYPTED PRIVATE KEY-----";
        const END: &str = "-----END ENCRYPTED PRIVATE KEY-----";
        if let (Some(start), Some(end)) = (text.find(BEGIN), text.find(END)) {
            let password = password.ok_or_else(|| {
                self.err(
                    "ssl.key.password",
                    "the private key is encrypted: set ssl.key.password",
                )
            })?;
            let block = &text[start..end + END.len()];
            let (_, der) = pem_rfc7468::decode_vec(block.as_bytes())
                .map_err(|e| self.err(key, format!("bad encrypted key PEM: {e}")))?;
            let info = pkcs8::EncryptedPrivateKeyInfo::try_from(der.as_slice())
                .map_err(|e| self.err(key, format!("bad encrypted key: {e}")))?;
            let plain = info.decrypt(password).map_err(|e| {
                self.err("ssl.key.password", format!("cannot decrypt the key: {e}"))
            })?;
            return Ok(PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
                plain.as_bytes().to_vec(),
            )));
        }
        PrivateKeyDer::from_pem_slice(bytes)
            .map_err(|e| self.err(key, format!("no usable PEM private key: {e}")))
    }

    fn versions(&self) -> Result<Vec<&'static rustls::SupportedProtocolVersion>, SslConfigError> {
        let text = self
            .get("ssl.enabled.protocols")
            .unwrap_or_else(|| "TLSv1.2,TLSv1.3".into());
        let mut versions = Vec::new();
        for v in text.split(',').map(str::trim).filter(|v| !v.is_empty()) {
            match v {
                "TLSv1.2" => versions.push(&rustls::version::TLS12),
                "TLSv1.3" => versions.push(&rustls::version::TLS13),
                other => {
                    return Err(self.err(
                        "ssl.enabled.protocols",
                        format!("{other} is not supported (TLSv1.2, TLSv1.3)"),
                    ))
                }
            }
        }
        if versions.is_empty() {
            return Err(self.err("ssl.enabled.protocols", "no protocol enabled"));
        }
        Ok(versions)
    }

    /// `ssl.client.auth` of this listener. On a SASL_SSL listener only the listener-prefixed key counts
    /// (`listener.name.<l>.ssl.client.auth`): the broker-wide key applies to SSL listeners only, as in
    /// Kafka's `ChannelBuilders` (KIP-684), so SASL clients need no certificate there.
    fn client_auth(&self) -> Result<ClientAuth, SslConfigError> {
        let value = match self.protocol() {
            Some(SecurityProtocol::SaslSsl) => self
                .config
                .explicit
                .get(&format!(
                    "listener.name.{}.ssl.client.auth",
                    self.listener.to_ascii_lowercase()
                ))
                .filter(|v| !v.trim().is_empty())
                .cloned(),
            _ => self.get("ssl.client.auth"),
        };
        match value
            .unwrap_or_else(|| "none".into())
            .trim()
            .to_ascii_lowercase()
            .as_str()
        {
            "none" => Ok(ClientAuth::None),
            "requested" => Ok(ClientAuth::Requested),
            "required" => Ok(ClientAuth::Required),
            other => Err(self.err(
                "ssl.client.auth",
                format!("{other}: expected none, requested or required"),
            )),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StoreType {
    Pem,
    Pkcs12,
}

/// Re-lays inline PEM text as a PEM file: a `.properties` value arrives on one line (continuation lines
/// joined, or `\n` written literally), which Kafka's PEM parser accepts too. Each `-----BEGIN X-----`
/// ... `-----END X-----` block gets its base64 body without blanks or `\n`, in 64-column lines.
fn normalize_pem(text: &str) -> String {
    let text = text.replace("\\n", "\n");
    let mut out = String::new();
    let mut rest = text.as_str();
    while let Some(begin) = rest.find("-----BEGIN ") {
        let after_begin = &rest[begin + 11..];
        let Some(label_end) = after_begin.find("-----") else {
            break;
        };
        let label = &after_begin[..label_end];
        let body_and_more = &after_begin[label_end + 5..];
        let end_marker = format!("-----END {label}-----");
        let Some(end) = body_and_more.find(&end_marker) else {
            break;
        };
        let body: String = body_and_more[..end]
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect();
        out.push_str(&format!("-----BEGIN {label}-----\n"));
        for line in body.as_bytes().chunks(64) {
            out.push_str(&String::from_utf8_lossy(line));
            out.push('\n');
        }
        out.push_str(&end_marker);
        out.push('\n');
        rest = &body_and_more[end + end_marker.len()..];
    }
    out
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The rustls server configuration of SSL listener `listener`, and its `ssl.client.auth`. Errors: a
/// missing or unreadable key store, a trust store missing when client certificates are asked for, bad
/// PEM/PKCS12, an unknown protocol.
pub fn server_config(
    config: &BrokerConfig,
    listener: &str,
) -> Result<(Arc<ServerConfig>, ClientAuth), SslConfigError> {
    let keys = SslKeys { config, listener };
    let material = keys.key_material()?.ok_or_else(|| {
        keys.err(
            "ssl.keystore.location",
            "an SSL listener needs a key store (ssl.keystore.location, or ssl.keystore.key and ssl.keystore.certificate.chain)",
        )
    })?;
    let auth = keys.client_auth()?;
    let builder = ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&keys.versions()?)
        .map_err(|e| keys.err("ssl.enabled.protocols", e.to_string()))?;
    let builder = match auth {
        ClientAuth::None => builder.with_no_client_auth(),
        ClientAuth::Requested | ClientAuth::Required => {
            let roots = keys.roots()?.ok_or_else(|| {
                keys.err(
                    "ssl.truststore.location",
                    "ssl.client.auth requested/required needs a trust store",
                )
            })?;
            let mut verifier =
                WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider());
            if auth == ClientAuth::Requested {
                verifier = verifier.allow_unauthenticated();
            }
            let verifier = verifier
                .build()
                .map_err(|e| keys.err("ssl.truststore.location", e.to_string()))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let server = builder
        .with_single_cert(material.chain, material.key)
        .map_err(|e| keys.err("ssl.keystore.location", e.to_string()))?;
    Ok((Arc::new(server), auth))
}

/// The rustls client configuration a broker uses towards listener `listener` of its peers (the
/// inter-broker listener): that listener's trust store (required), key store (presented as a client
/// certificate when set), protocols, and host-name verification per `ssl.endpoint.identification.algorithm`.
pub fn client_config(
    config: &BrokerConfig,
    listener: &str,
) -> Result<Arc<ClientConfig>, SslConfigError> {
    let keys = SslKeys { config, listener };
    let roots = keys.roots()?.ok_or_else(|| {
        keys.err(
            "ssl.truststore.location",
            "the inter-broker listener uses SSL: a trust store is needed to verify the other brokers",
        )
    })?;
    let builder = ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&keys.versions()?)
        .map_err(|e| keys.err("ssl.enabled.protocols", e.to_string()))?;
    let verify_host = keys
        .get("ssl.endpoint.identification.algorithm")
        .is_some_and(|a| a.eq_ignore_ascii_case("https"));
    let builder = if verify_host {
        builder.with_root_certificates(roots)
    } else {
        let inner = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider())
            .build()
            .map_err(|e| keys.err("ssl.truststore.location", e.to_string()))?;
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoHostnameVerifier(inner)))
    };
    let client = match keys.key_material()? {
        Some(m) => builder
            .with_client_auth_cert(m.chain, m.key)
            .map_err(|e| keys.err("ssl.keystore.location", e.to_string()))?,
        None => builder.with_no_client_auth(),
    };
    Ok(Arc::new(client))
}

/// Verifies the chain against the trust store but not the host name (an empty
/// `ssl.endpoint.identification.algorithm`, as Kafka allows).
#[derive(Debug)]
struct NoHostnameVerifier(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for NoHostnameVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        use rustls::CertificateError as C;
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                C::NotValidForName | C::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_pem_on_one_line_is_relaid() {
        let one_line = "-----BEGIN CERTIFICATE----- QUJD REVG\\nR0hJ -----END CERTIFICATE----------BEGIN PRIVATE KEY-----S0VZ-----END PRIVATE KEY-----";
        assert_eq!(
            normalize_pem(one_line),
            "-----BEGIN CERTIFICATE-----\nQUJDREVGR0hJ\n-----END CERTIFICATE-----\n-----BEGIN PRIVATE KEY-----\nS0VZ\n-----END PRIVATE KEY-----\n"
        );
    }

    fn client_auth_of(pairs: &[(&str, &str)], listener: &str) -> ClientAuth {
        let mut all = vec![
            (
                "listeners".to_string(),
                "SSL://127.0.0.1:0,SASL_SSL://127.0.0.1:0".to_string(),
            ),
            ("inter.broker.listener.name".to_string(), "SSL".to_string()),
        ];
        all.extend(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let config = BrokerConfig::from_pairs(&all).expect("config");
        SslKeys {
            config: &config,
            listener,
        }
        .client_auth()
        .expect("client auth")
    }

    #[test]
    fn broker_wide_client_auth_applies_to_ssl_listeners_only() {
        let wide = [("ssl.client.auth", "required")];
        assert_eq!(client_auth_of(&wide, "SSL"), ClientAuth::Required);
        assert_eq!(client_auth_of(&wide, "SASL_SSL"), ClientAuth::None);
        let prefixed = [
            ("ssl.client.auth", "required"),
            ("listener.name.sasl_ssl.ssl.client.auth", "requested"),
        ];
        assert_eq!(client_auth_of(&prefixed, "SASL_SSL"), ClientAuth::Requested);
    }
}
