//! Connection security: TLS on SSL and SASL_SSL listeners and for the inter-broker client ([`ssl`]), the
//! principal of a TLS client ([`principal`]), SASL authentication ([`sasl`]), and the controller listener's
//! both ends ([`controller`]).
//!
//! Where it sits (see ARCHITECTURE.md, request flow): `network::serve` accepts a TCP connection on a
//! listener; a listener whose security protocol uses TLS (SSL, SASL_SSL) runs the handshake first
//! ([`TlsListener::accept`], bounded by [`TLS_HANDSHAKE_TIMEOUT`]); the principal is `User:` + the mapped
//! subject of the client certificate, `User:ANONYMOUS` without one. SASL listeners (SASL_PLAINTEXT,
//! SASL_SSL) then authenticate (`server::sasl_authenticator`: SaslHandshake/SaslAuthenticate), which sets
//! the principal `User:<authenticated name>` before any other request is served.

pub mod controller;
pub mod principal;
pub mod sasl;
pub mod ssl;

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use parking_lot::RwLock;
use replica::transport::{BoxedStream, Connector};
use rustls::{ClientConfig, ServerConfig};
use rustls_pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_rustls::server::TlsStream;

use crate::config::BrokerConfig;
use principal::{PrincipalError, PrincipalMapper};
use ssl::{ClientAuth, SslConfigError};

/// How long a client has to complete the TLS handshake before its connection is closed.
pub const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// A listener's TLS server side: the rustls configuration (replaceable, for certificate reloads) and the
/// principal mapping rules.
#[derive(Debug)]
pub struct TlsListener {
    listener: String,
    state: RwLock<(Arc<ServerConfig>, ClientAuth, Arc<PrincipalMapper>)>,
}

/// Why a TLS listener could not be set up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TlsSetupError {
    /// A key, trust store or protocol setting is unusable.
    #[error(transparent)]
    Ssl(#[from] SslConfigError),
    /// `ssl.principal.mapping.rules` does not parse.
    #[error("invalid ssl.principal.mapping.rules for listener {listener}: {error}")]
    Rules {
        /// The listener.
        listener: String,
        /// The parser's error.
        error: PrincipalError,
    },
}

/// Why a TLS connection was refused.
#[derive(Debug, thiserror::Error)]
pub enum HandshakeError {
    /// No handshake within [`TLS_HANDSHAKE_TIMEOUT`].
    #[error("no TLS handshake within {0:?}")]
    Timeout(Duration),
    /// The handshake failed (not TLS, an untrusted or expired certificate, a protocol mismatch) or the
    /// peer went away.
    #[error("TLS handshake failed: {0}")]
    Io(#[from] std::io::Error),
    /// The client certificate gave no principal (no mapping rule applies, or it does not parse).
    #[error(transparent)]
    Principal(#[from] PrincipalError),
}

impl TlsListener {
    /// The TLS side of listener `listener` from its `ssl.*` keys (per-listener overrides first).
    pub fn new(config: &BrokerConfig, listener: &str) -> Result<TlsListener, TlsSetupError> {
        let state = build_state(config, listener)?;
        Ok(TlsListener {
            listener: listener.to_string(),
            state: RwLock::new(state),
        })
    }

    /// Re-reads the key and trust stores and the rules from `config` (Kafka reloads them when a
    /// `listener.name.<l>.ssl.*` key is altered); connections already open keep their session. On error the
    /// current configuration stays.
    pub fn reload(&self, config: &BrokerConfig) -> Result<(), TlsSetupError> {
        let state = build_state(config, &self.listener)?;
        *self.state.write() = state;
        Ok(())
    }

    /// `ssl.client.auth` of the current configuration.
    pub fn client_auth(&self) -> ClientAuth {
        self.state.read().1
    }

    /// Runs the server handshake on `stream` within [`TLS_HANDSHAKE_TIMEOUT`]; returns the TLS stream and
    /// the principal name from the client certificate (`None`: no certificate, `User:ANONYMOUS`).
    pub async fn accept<S: AsyncRead + AsyncWrite + Unpin>(
        &self,
        stream: S,
    ) -> Result<(TlsStream<S>, Option<String>), HandshakeError> {
        let (server, _, mapper) = self.state.read().clone();
        let acceptor = tokio_rustls::TlsAcceptor::from(server);
        let tls = tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, acceptor.accept(stream))
            .await
            .map_err(|_| HandshakeError::Timeout(TLS_HANDSHAKE_TIMEOUT))??;
        let name = match tls.get_ref().1.peer_certificates().and_then(|c| c.first()) {
            Some(cert) => Some(mapper.name(&principal::subject_dn(cert)?)?),
            None => None,
        };
        Ok((tls, name))
    }
}

/// A TLS listener follows dynamic `listener.name.<l>.ssl.*` changes: the stores of a change must load
/// before it is accepted, and are re-read once it is in effect.
impl crate::dynamic_config::Reconfigurable for TlsListener {
    fn validate_reconfiguration(&self, next: &BrokerConfig) -> Result<(), String> {
        build_state(next, &self.listener)
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    fn reconfigure(&self, next: &BrokerConfig) {
        match self.reload(next) {
            Ok(()) => {
                tracing::info!(listener = %self.listener, "TLS key and trust stores reloaded")
            }
            Err(e) => {
                tracing::error!(listener = %self.listener, error = %e, "TLS reload failed; keeping the previous stores")
            }
        }
    }
}

fn build_state(
    config: &BrokerConfig,
    listener: &str,
) -> Result<(Arc<ServerConfig>, ClientAuth, Arc<PrincipalMapper>), TlsSetupError> {
    let (server, auth) = ssl::server_config(config, listener)?;
    let rules = config
        .listener_value(listener, "ssl.principal.mapping.rules")
        .unwrap_or_default();
    let mapper = PrincipalMapper::parse(&rules).map_err(|error| TlsSetupError::Rules {
        listener: listener.to_string(),
        error,
    })?;
    Ok((server, auth, Arc::new(mapper)))
}

/// The replica fetchers' [`Connector`] when the inter-broker listener uses TLS: TCP with `TCP_NODELAY`,
/// then a TLS client handshake naming the leader's advertised host (the fetcher bounds both with its
/// request timeout).
#[derive(Debug, Clone)]
pub struct TlsConnector {
    config: Arc<ClientConfig>,
}

impl TlsConnector {
    /// A connector with the inter-broker listener's client configuration ([`ssl::client_config`]).
    pub fn new(config: &BrokerConfig, listener: &str) -> Result<TlsConnector, SslConfigError> {
        Ok(TlsConnector {
            config: ssl::client_config(config, listener)?,
        })
    }
}

impl Connector for TlsConnector {
    fn connect(&self, host: &str, port: u16) -> BoxFuture<'static, std::io::Result<BoxedStream>> {
        let host = host.to_string();
        let connector = tokio_rustls::TlsConnector::from(self.config.clone());
        Box::pin(async move {
            let name = ServerName::try_from(host.clone())
                .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
            let tcp = tokio::net::TcpStream::connect((host.as_str(), port)).await?;
            tcp.set_nodelay(true)?;
            let tls = connector.connect(name, tcp).await?;
            Ok(Box::new(tls) as BoxedStream)
        })
    }
}
