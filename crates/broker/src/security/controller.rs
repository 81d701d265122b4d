//! The controller listener secured like any listener (issue 14): the listener named first in
//! `controller.listener.names` (default `CONTROLLER`) takes its security protocol from
//! `listener.security.protocol.map` (PLAINTEXT when the map does not name it) and its settings from the
//! same keys as the Kafka listeners, per listener as `listener.name.controller.<key>`:
//! - SSL: mutual TLS with `ssl.*` key and trust stores ([`TlsListener`], [`ssl::client_config`]); the
//!   peer's principal is `User:` + its certificate's mapped subject, and a peer without a certificate is
//!   refused (set `ssl.client.auth=required`).
//! - SASL_PLAINTEXT / SASL_SSL with PLAIN: `sasl.enabled.mechanisms`, the listener's PLAIN JAAS entry
//!   (`user_<name>` options for the server, `username`/`password` for this process's own login) and
//!   `sasl.mechanism.controller.protocol`. SCRAM is refused: its credentials live in the metadata log the
//!   controllers serve, so a controller could not check them before it has the log (Kafka says the same).
//! - Authorization per request ([`ControllerAuthorizer`]): a peer in `super.users` may do anything; with an
//!   authorizer (`authorizer.class.name`) the controller image's ACLs decide: CLUSTER_ACTION on the cluster
//!   for the inter-node JSON frames (as Kafka's controller requires of BrokerRegistration, BrokerHeartbeat,
//!   AlterPartition, Vote and Fetch; a refused peer's connection is closed), DESCRIBE for DescribeQuorum and
//!   ALTER for DescribeCluster (Kafka requests, refused with CLUSTER_AUTHORIZATION_FAILED).
//! - Bounds on every protocol: `max.connections` and `connections.max.idle.ms` of the listener.
//!
//! Built in the composition root (`lifecycle`) and handed to the controller crate as its seams: the
//! server's [`RpcListener`] and the [`Transport`] of the raft peers and the broker's controller client.

use std::collections::HashSet;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use authorizer::acl::{AclOperation, ResourceType, CLUSTER_NAME};
use authorizer::{AuthorizerConfig, Requester, StandardAuthorizer};
use bytes::BytesMut;
use controller::transport::IoFuture;
use controller::{
    Accepted, BoxedStream, ClusterOperation, ListenerLimits, MetadataImage, Peer, PeerAuthorizer,
    PendingConnection, RpcListener, TcpTransport, Transport,
};
use rustls::ClientConfig;
use rustls_pki_types::ServerName;
use tokio::net::{TcpListener, TcpStream};

use super::sasl::client::login_on;
use super::sasl::{SaslClientConfig, SaslListener, SaslSetupError};
use super::ssl::{self, SslConfigError};
use super::{TlsListener, TlsSetupError};
use crate::acls::{authorizer_config, to_binding};
use crate::config::listeners::{parse_protocol_map, SecurityProtocol};
use crate::config::{keys, BrokerConfig, ConfigError};
use crate::scram::ScramCredentialCache;
use crate::server::network::{read_frame_within, write_chunks, ConnectionError, ServerStream};
use crate::server::sasl_authenticator::{unix_now_ms, Action, SaslAuthenticator};

/// Why the controller listener's security could not be set up (a startup error).
#[derive(Debug, thiserror::Error)]
pub enum ControllerSecurityError {
    /// A listener key does not parse.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The TLS server side (key store, trust store, rules).
    #[error(transparent)]
    Tls(#[from] TlsSetupError),
    /// The TLS client side.
    #[error(transparent)]
    Ssl(#[from] SslConfigError),
    /// The SASL mechanisms or JAAS entries.
    #[error(transparent)]
    Sasl(#[from] SaslSetupError),
    /// A setting the controller listener cannot work with.
    #[error("controller listener {listener}: {reason}")]
    Unsupported {
        /// The listener.
        listener: String,
        /// What is wrong.
        reason: String,
    },
}

/// The controller listener's name: the first of `controller.listener.names` (upper-case; default
/// `CONTROLLER`).
pub fn controller_listener_name(config: &BrokerConfig) -> String {
    config
        .value("controller.listener.names")
        .and_then(|v| {
            v.split(',')
                .map(str::trim)
                .find(|n| !n.is_empty())
                .map(str::to_string)
        })
        .unwrap_or_else(|| "CONTROLLER".into())
        .to_ascii_uppercase()
}

/// The controller listener's security protocol from `listener.security.protocol.map` (PLAINTEXT when the
/// map does not name it, as Kafka does with its default map). Errors: the map does not parse.
pub fn controller_protocol(config: &BrokerConfig) -> Result<SecurityProtocol, ConfigError> {
    let name = controller_listener_name(config);
    let Some(text) = config.explicit.get("listener.security.protocol.map") else {
        return Ok(SecurityProtocol::Plaintext);
    };
    Ok(parse_protocol_map(text)?
        .get(&name)
        .copied()
        .unwrap_or(SecurityProtocol::Plaintext))
}

/// The controller listener of this process, both ends: what the controller serves with
/// ([`ControllerListenerSecurity::listener`]) and how this process connects to controllers
/// ([`ControllerListenerSecurity::transport`]).
#[derive(Debug)]
pub struct ControllerListenerSecurity {
    name: String,
    protocol: SecurityProtocol,
    tls: Option<Arc<TlsListener>>,
    sasl: Option<Arc<SaslListener>>,
    transport: Arc<dyn Transport>,
    authorizer: Arc<ControllerAuthorizer>,
    limits: ListenerLimits,
}

impl ControllerListenerSecurity {
    /// The controller listener's settings from `config`; the server side (key store, PLAIN users) is
    /// built only when `serves` (the process has the controller role). Errors: the stores or JAAS entries
    /// a protocol needs are missing or invalid, SCRAM named, an authorizer class Runnel lacks.
    pub fn new(
        config: &BrokerConfig,
        serves: bool,
    ) -> Result<ControllerListenerSecurity, ControllerSecurityError> {
        let name = controller_listener_name(config);
        let protocol = controller_protocol(config)?;
        let unsupported = |reason: String| ControllerSecurityError::Unsupported {
            listener: name.clone(),
            reason,
        };
        let tls = match serves && protocol.uses_tls() {
            true => Some(Arc::new(TlsListener::new(config, &name)?)),
            false => None,
        };
        let sasl = match serves && protocol.uses_sasl() {
            true => {
                let l = SaslListener::new(config, &name, Arc::new(ScramCredentialCache::new()))?;
                if let Some(m) = l.enabled_mechanisms().iter().find(|m| *m != "PLAIN") {
                    return Err(unsupported(format!(
                        "{m} cannot authenticate controller connections (its credentials live in the metadata log); use PLAIN"
                    )));
                }
                Some(Arc::new(l))
            }
            false => None,
        };
        let transport: Arc<dyn Transport> = match protocol {
            SecurityProtocol::Plaintext => Arc::new(TcpTransport),
            _ => {
                let tls = match protocol.uses_tls() {
                    true => Some(ssl::client_config(config, &name)?),
                    false => None,
                };
                let login = match protocol.uses_sasl() {
                    true => Some(SaslClientConfig::controller(config, &name)?),
                    false => None,
                };
                if let Some(l) = login.as_ref().filter(|l| l.mechanism != "PLAIN") {
                    return Err(unsupported(format!(
                        "sasl.mechanism.controller.protocol={} cannot work for controllers; use PLAIN",
                        l.mechanism
                    )));
                }
                Arc::new(SecureTransport { tls, login })
            }
        };
        let authorizer = Arc::new(ControllerAuthorizer::new(config).map_err(unsupported)?);
        let limits = listener_limits(config, &name)?;
        Ok(ControllerListenerSecurity {
            name,
            protocol,
            tls,
            sasl,
            transport,
            authorizer,
            limits,
        })
    }

    /// The listener's security protocol.
    pub fn protocol(&self) -> SecurityProtocol {
        self.protocol
    }

    /// The listener's TLS side when it serves TLS (SSL or SASL_SSL, and the controller role): its key and
    /// trust stores follow dynamic `listener.name.<controller>.ssl.*` changes like a broker listener's.
    pub fn tls_listener(&self) -> Option<Arc<TlsListener>> {
        self.tls.clone()
    }

    /// How this process connects to controllers (raft peers, the broker's controller client).
    pub fn transport(&self) -> Arc<dyn Transport> {
        self.transport.clone()
    }

    /// The controller's [`RpcListener`] on the bound `tcp` socket.
    pub fn listener(&self, tcp: TcpListener) -> Box<dyn RpcListener> {
        Box::new(SecureRpcListener {
            name: self.name.clone(),
            tcp,
            tls: self.tls.clone(),
            sasl: self.sasl.clone(),
            authorizer: self.authorizer.clone(),
            limits: self.limits,
        })
    }
}

/// The limits of listener `name`: `listener.name.<l>.max.connections` (at least 0; the broker-wide
/// `max.connections` counts the Kafka listeners' connections, not the controller's) and
/// `connections.max.idle.ms` (per listener first, then broker-wide; negative: no limit, as on the Kafka
/// listeners).
fn listener_limits(config: &BrokerConfig, name: &str) -> Result<ListenerLimits, ConfigError> {
    let max_key = format!(
        "listener.name.{}.{}",
        name.to_ascii_lowercase(),
        keys::MAX_CONNECTIONS.name()
    );
    let idle_key = keys::CONNECTIONS_MAX_IDLE_MS.name();
    let int = |key: &str, value: Option<String>, default: i64| match value {
        None => Ok(default),
        Some(v) => v
            .trim()
            .parse::<i64>()
            .map_err(|_| ConfigError::InvalidValue {
                key: key.to_string(),
                value: v.clone(),
                reason: "expected an integer".into(),
            }),
    };
    let max = int(
        &max_key,
        config.explicit.get(&max_key).cloned(),
        i32::MAX as i64,
    )?;
    if max < 0 {
        return Err(ConfigError::InvalidValue {
            key: max_key,
            value: max.to_string(),
            reason: "must be at least 0".into(),
        });
    }
    let idle_ms = int(idle_key, config.listener_value(name, idle_key), 600_000)?;
    Ok(ListenerLimits {
        max_connections: max as usize,
        idle_timeout: match u64::try_from(idle_ms) {
            Ok(ms) => Duration::from_millis(ms),
            Err(_) => Duration::MAX,
        },
    })
}

/// Who may do what on a secured controller listener: `super.users` anything; with an authorizer, what the
/// image's ACLs allow on the cluster (CLUSTER_ACTION for inter-node traffic, DESCRIBE / ALTER for the
/// tools' requests).
#[derive(Debug)]
pub struct ControllerAuthorizer {
    super_users: HashSet<String>,
    acls: Option<AuthorizerConfig>,
}

impl ControllerAuthorizer {
    /// From `super.users` and `authorizer.class.name`. Errors: an authorizer class Runnel lacks.
    pub fn new(config: &BrokerConfig) -> Result<ControllerAuthorizer, String> {
        let super_users = config
            .get(keys::SUPER_USERS)
            .map(|v| AuthorizerConfig::parse_super_users(&v))
            .unwrap_or_default();
        Ok(ControllerAuthorizer {
            super_users,
            acls: authorizer_config(config)?,
        })
    }
}

impl ControllerAuthorizer {
    /// The image's ACLs as an authorizer (`None` without `authorizer.class.name`). Controller requests
    /// that are judged are few (connections' first JSON frames, the tools' describes): the ACL index is
    /// built per question.
    fn acl_index(&self, image: &MetadataImage) -> Option<StandardAuthorizer> {
        let config = self.acls.as_ref()?;
        let mut acls = StandardAuthorizer::new(config.clone());
        for (id, entry) in &image.acls {
            acls.add(*id, to_binding(entry));
        }
        Some(acls)
    }
}

impl PeerAuthorizer for ControllerAuthorizer {
    fn authorize(
        &self,
        peer: &Peer,
        image: &MetadataImage,
        operation: ClusterOperation,
    ) -> Result<(), String> {
        if self.super_users.contains(&peer.principal) {
            return Ok(());
        }
        let Some(acls) = self.acl_index(image) else {
            return Err(format!(
                "{} is not in super.users (no authorizer is configured)",
                peer.principal
            ));
        };
        let who = Requester {
            principal: &peer.principal,
            host: &peer.host,
        };
        let op = match operation {
            ClusterOperation::Describe => AclOperation::Describe,
            ClusterOperation::Alter => AclOperation::Alter,
            ClusterOperation::ClusterAction => AclOperation::ClusterAction,
        };
        match acls.is_allowed(&who, op, ResourceType::Cluster, CLUSTER_NAME) {
            true => Ok(()),
            false => Err(format!(
                "{} is neither in super.users nor allowed {} on the cluster",
                peer.principal,
                operation.name()
            )),
        }
    }

    fn cluster_operations(&self, peer: &Peer, image: &MetadataImage) -> i32 {
        let all = AclOperation::supported_by(ResourceType::Cluster)
            .iter()
            .fold(0, |bits, op| bits | (1 << op.code()));
        if self.super_users.contains(&peer.principal) {
            return all;
        }
        let Some(acls) = self.acl_index(image) else {
            return 0;
        };
        let who = Requester {
            principal: &peer.principal,
            host: &peer.host,
        };
        acls.authorized_operations(&who, ResourceType::Cluster, CLUSTER_NAME)
    }
}

/// The controller server's listener: TCP, then TLS and/or SASL as the protocol asks, run in the
/// connection's own task.
struct SecureRpcListener {
    name: String,
    tcp: TcpListener,
    tls: Option<Arc<TlsListener>>,
    sasl: Option<Arc<SaslListener>>,
    authorizer: Arc<ControllerAuthorizer>,
    limits: ListenerLimits,
}

fn denied(reason: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, reason.into())
}

impl RpcListener for SecureRpcListener {
    /// Only for an open (PLAINTEXT) listener; a secured one hands out connections with their handshake
    /// only ([`RpcListener::accept_pending`]). Errors: the accept's, or `Unsupported` when secured.
    fn accept(&self) -> IoFuture<'_, BoxedStream> {
        Box::pin(async move {
            if self.tls.is_some() || self.sasl.is_some() {
                return Err(io::Error::new(
                    io::ErrorKind::Unsupported,
                    "a secured controller listener accepts through accept_pending",
                ));
            }
            let (s, _) = self.tcp.accept().await?;
            let _ = s.set_nodelay(true);
            Ok(Box::new(s) as BoxedStream)
        })
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.tcp.local_addr()
    }

    fn accept_pending(&self) -> IoFuture<'_, PendingConnection> {
        Box::pin(async move {
            let (tcp, addr) = self.tcp.accept().await?;
            let _ = tcp.set_nodelay(true);
            let (tls, sasl) = (self.tls.clone(), self.sasl.clone());
            let (name, idle) = (self.name.clone(), self.limits.idle_timeout);
            let pending: PendingConnection = Box::pin(async move {
                secure(tcp, addr, tls, sasl, idle).await.map_err(|e| {
                    io::Error::new(e.kind(), format!("listener {name}, peer {addr}: {e}"))
                })
            });
            Ok(pending)
        })
    }

    fn limits(&self) -> ListenerLimits {
        self.limits
    }

    fn authorizer(&self) -> Option<Arc<dyn PeerAuthorizer>> {
        Some(self.authorizer.clone())
    }

    fn listener_name(&self) -> String {
        self.name.clone()
    }
}

/// The handshakes of one accepted connection: TLS (the certificate's principal), then SASL (the user's).
async fn secure(
    tcp: TcpStream,
    addr: SocketAddr,
    tls: Option<Arc<TlsListener>>,
    sasl: Option<Arc<SaslListener>>,
    idle: Duration,
) -> io::Result<Accepted> {
    let host = addr.ip().to_string();
    let peer = |name: String| {
        Some(Peer {
            principal: format!("User:{name}"),
            host: host.clone(),
        })
    };
    match (tls, sasl) {
        (None, None) => Ok(Accepted {
            stream: Box::new(tcp),
            peer: None,
        }),
        (None, Some(sasl)) => {
            let mut tcp = tcp;
            let user = sasl_authenticate(&mut tcp, &sasl, idle).await?;
            Ok(Accepted {
                stream: Box::new(tcp),
                peer: peer(user),
            })
        }
        (Some(tls), sasl) => {
            let (mut stream, name) = tls.accept(tcp).await.map_err(|e| denied(e.to_string()))?;
            let name = match sasl {
                Some(sasl) => sasl_authenticate(&mut stream, &sasl, idle).await?,
                None => name.ok_or_else(|| {
                    denied("no client certificate (the controller listener needs ssl.client.auth=required)")
                })?,
            };
            Ok(Accepted {
                stream: Box::new(stream),
                peer: peer(name),
            })
        }
    }
}

/// Runs the server side of the SASL exchange (SaslHandshake, SaslAuthenticate; frames bounded by
/// `sasl.server.max.receive.size` and `idle`); an ApiVersions request first is answered with the
/// controller's APIs ([`controller::kafka_apis::answer_api_versions`]). Returns the user. Errors:
/// `PermissionDenied` with the reason (failed authentication, an unservable ApiVersions, bytes sent
/// before the last answer), or I/O.
async fn sasl_authenticate<S: ServerStream>(
    stream: &mut S,
    listener: &SaslListener,
    idle: Duration,
) -> io::Result<String> {
    let mut auth = SaslAuthenticator::new(listener, unix_now_ms());
    let mut buf = BytesMut::new();
    let max = i32::try_from(listener.max_receive_size()).unwrap_or(i32::MAX);
    let closed = |e: ConnectionError| match e {
        ConnectionError::Io(e) => e,
        e => denied(e.to_string()),
    };
    loop {
        let min = if auth.expects_raw_token() { 0 } else { 8 };
        let frame = read_frame_within(stream, &mut buf, min, max, Some(idle))
            .await
            .map_err(closed)?
            .ok_or_else(|| denied("peer closed during SASL authentication"))?;
        match auth.on_frame(frame) {
            // Kafka's clients ask ApiVersions before SaslHandshake: the controller's APIs.
            Action::ApiVersions(frame) => {
                let response =
                    controller::kafka_apis::answer_api_versions(frame).map_err(denied)?;
                tokio::io::AsyncWriteExt::write_all(stream, &response).await?;
                tokio::io::AsyncWriteExt::flush(stream).await?;
            }
            Action::Respond(chunks) => write_chunks(stream, chunks).await?,
            Action::Complete { response, session } => {
                write_chunks(stream, response).await?;
                if !buf.is_empty() {
                    return Err(denied("bytes sent before SASL authentication was answered"));
                }
                return Ok(session.user);
            }
            Action::Fail { response, reason } => {
                if let Some(chunks) = response {
                    write_chunks(stream, chunks).await?;
                    tokio::io::AsyncWriteExt::flush(stream).await?;
                }
                return Err(denied(format!("SASL authentication failed: {reason}")));
            }
        }
    }
}

/// Connects to controllers on a secured controller listener: TCP with `TCP_NODELAY`, a TLS client
/// handshake naming the voter's host (SSL, SASL_SSL), then the SASL login (SASL_*).
#[derive(Debug)]
struct SecureTransport {
    tls: Option<Arc<ClientConfig>>,
    login: Option<SaslClientConfig>,
}

impl Transport for SecureTransport {
    fn connect(&self, addr: &str) -> IoFuture<'static, BoxedStream> {
        let addr = addr.to_string();
        let tls = self.tls.clone();
        let login = self.login.clone();
        Box::pin(async move {
            let tcp = TcpStream::connect(addr.as_str()).await?;
            let _ = tcp.set_nodelay(true);
            let mut stream: BoxedStream = match tls {
                Some(config) => {
                    let host = addr
                        .rsplit_once(':')
                        .map_or(addr.as_str(), |(h, _)| h)
                        .trim_start_matches('[')
                        .trim_end_matches(']')
                        .to_string();
                    let name = ServerName::try_from(host)
                        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
                    let connector = tokio_rustls::TlsConnector::from(config);
                    Box::new(connector.connect(name, tcp).await?)
                }
                None => Box::new(tcp),
            };
            if let Some(login) = &login {
                login_on(&mut stream, login).await?;
            }
            Ok(stream)
        })
    }
}

#[cfg(test)]
#[path = "controller_tests.rs"]
mod tests;
