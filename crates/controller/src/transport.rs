//! The controller's I/O seams: how it connects (raft peers, [`crate::ControllerClient`]), how it accepts
//! connections, which disk its raft log, vote and snapshots live on, and its random seed.
//!
//! Production uses [`TcpTransport`] (tokio TCP with `TCP_NODELAY`), tokio's `TcpListener` and
//! `storage::RealFs` (what [`ControllerSeams::default`] gives); a deterministic simulation passes its own
//! [`Transport`]/[`RpcListener`] (e.g. over `turmoil::net`) and a `storage::SimFs`, so a crash can lose
//! unsynced raft log writes and votes. The shape follows the replica fetcher's `Connector`: a connection
//! is a boxed [`RpcStream`], one virtual call per read or write, none per byte.
//!
//! A listener also says how its connections are secured and bounded: [`RpcListener::accept_pending`]
//! hands out each connection with the rest of its setup (a TLS handshake, a SASL exchange), which the
//! server runs in the connection's own task so a slow peer never holds the accept loop; a secured
//! connection names its authenticated [`Peer`], whose requests the listener's [`PeerAuthorizer`] judges;
//! [`ListenerLimits`] bound the connections and their idle time. The defaults are an open listener
//! (a dev cluster's PLAINTEXT): no authentication, Kafka's default limits.

use std::fmt;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use metadata::MetadataImage;
use tokio::io::{AsyncRead, AsyncWrite};

/// A byte stream the controller RPC runs over (any `AsyncRead + AsyncWrite`; `Sync` because openraft
/// keeps peer connections in shared state).
pub trait RpcStream: AsyncRead + AsyncWrite + Unpin + Send + Sync {}

impl<T: AsyncRead + AsyncWrite + Unpin + Send + Sync> RpcStream for T {}

/// A connection as the controller and its clients hold it.
pub type BoxedStream = Box<dyn RpcStream>;

/// A boxed I/O future (the seams are object-safe).
pub type IoFuture<'a, T> = Pin<Box<dyn Future<Output = io::Result<T>> + Send + 'a>>;

/// Opens connections to controllers (raft peers and [`crate::ControllerClient`]).
pub trait Transport: Send + Sync + fmt::Debug + 'static {
    /// Connects to `addr` (`host:port`, as in `controller.quorum.voters`). Errors: the connect's I/O
    /// error (callers bound it with their own timeouts).
    fn connect(&self, addr: &str) -> IoFuture<'static, BoxedStream>;
}

/// The authenticated other end of a connection on a secured controller listener.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Peer {
    /// The principal as Kafka prints it (`User:<name>`: the SASL user, or the mapped certificate subject).
    pub principal: String,
    /// The peer's IP address (`127.0.0.1`), which ACL entries' hosts are compared with.
    pub host: String,
}

/// A connection ready for controller RPC frames.
pub struct Accepted {
    /// The stream (decrypted, authenticated).
    pub stream: BoxedStream,
    /// Who authenticated; `None` on an open (PLAINTEXT) listener, where nobody is asked.
    pub peer: Option<Peer>,
}

/// The rest of a just-accepted connection's setup (handshakes). Errors: the peer failed to authenticate
/// (`PermissionDenied`, with the reason) or went away; the connection is then closed.
pub type PendingConnection = Pin<Box<dyn Future<Output = io::Result<Accepted>> + Send + 'static>>;

/// Bounds on a listener's connections (Kafka's `max.connections` and `connections.max.idle.ms` of the
/// listener).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ListenerLimits {
    /// Most connections open at once; one more is closed as soon as it is accepted.
    pub max_connections: usize,
    /// A connection that completes no request (or no handshake) for this long is closed, whether it is
    /// idle or stalled mid-frame (`Duration::MAX`: no limit).
    pub idle_timeout: Duration,
}

impl Default for ListenerLimits {
    /// Kafka's defaults: `max.connections` = 2^31 - 1, `connections.max.idle.ms` = 600,000.
    fn default() -> Self {
        ListenerLimits {
            max_connections: i32::MAX as usize,
            idle_timeout: Duration::from_millis(600_000),
        }
    }
}

/// An operation on the CLUSTER resource that a controller request needs (Kafka's `AclOperation`s, as
/// Kafka's `ControllerApis` checks them per request).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClusterOperation {
    /// DESCRIBE: DescribeQuorum.
    Describe,
    /// ALTER: DescribeCluster (Kafka's controller asks this much, not DESCRIBE as a broker does).
    Alter,
    /// CLUSTER_ACTION: the inter-node requests (raft RPCs, broker registration, heartbeats,
    /// AlterPartition, metadata fetches: every JSON frame).
    ClusterAction,
}

impl ClusterOperation {
    /// Kafka's upper-case name (`DESCRIBE`, `ALTER`, `CLUSTER_ACTION`).
    pub fn name(self) -> &'static str {
        match self {
            ClusterOperation::Describe => "DESCRIBE",
            ClusterOperation::Alter => "ALTER",
            ClusterOperation::ClusterAction => "CLUSTER_ACTION",
        }
    }
}

/// Every operation Kafka defines on the CLUSTER resource as DescribeCluster's
/// `ClusterAuthorizedOperations` bit field (bit = `AclOperation` code: CREATE 4, CLUSTER_ACTION 7,
/// DESCRIBE 8, ALTER 9, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11, IDEMPOTENT_WRITE 12): what a request is
/// allowed where nobody is asked (an open listener).
pub const ALL_CLUSTER_OPERATIONS: i32 =
    (1 << 4) | (1 << 7) | (1 << 8) | (1 << 9) | (1 << 10) | (1 << 11) | (1 << 12);

/// Who may do what on a secured controller listener, asked per request (Kafka's controller requires
/// CLUSTER_ACTION on the cluster for BrokerRegistration, BrokerHeartbeat, AlterPartition, Vote and Fetch,
/// DESCRIBE for DescribeQuorum, ALTER for DescribeCluster).
pub trait PeerAuthorizer: Send + Sync + fmt::Debug + 'static {
    /// Whether `peer` may perform `operation` on the cluster, judged with the controller's applied
    /// `image` (its ACLs). Errors: why not (a Kafka request is answered CLUSTER_AUTHORIZATION_FAILED, a
    /// JSON frame closes the connection; the reason is logged).
    fn authorize(
        &self,
        peer: &Peer,
        image: &MetadataImage,
        operation: ClusterOperation,
    ) -> Result<(), String>;

    /// The operations `peer` may perform on the cluster as a Kafka bit field (see
    /// [`ALL_CLUSTER_OPERATIONS`]), for DescribeCluster's `ClusterAuthorizedOperations`.
    fn cluster_operations(&self, peer: &Peer, image: &MetadataImage) -> i32;
}

/// Accepts connections for a [`crate::ControllerServer`].
pub trait RpcListener: Send + Sync + 'static {
    /// Waits for the next connection. Errors: the accept's I/O error (the server logs it, backs off
    /// 50 ms and accepts again).
    fn accept(&self) -> IoFuture<'_, BoxedStream>;
    /// The bound address.
    fn local_addr(&self) -> io::Result<SocketAddr>;
    /// Waits for the next connection and returns the rest of its setup, which the server runs in the
    /// connection's task (bounded by [`ListenerLimits::idle_timeout`]). The default: [`RpcListener::accept`]
    /// and nothing more (an open listener). Errors: as `accept`.
    fn accept_pending(&self) -> IoFuture<'_, PendingConnection> {
        Box::pin(async move {
            let stream = self.accept().await?;
            let ready: PendingConnection =
                Box::pin(async move { Ok(Accepted { stream, peer: None }) });
            Ok(ready)
        })
    }
    /// The listener's connection bounds (default: Kafka's).
    fn limits(&self) -> ListenerLimits {
        ListenerLimits::default()
    }
    /// Who decides what an authenticated [`Peer`] may do (default: none, every peer may do anything). A
    /// connection without a peer (open listener) is not asked about.
    fn authorizer(&self) -> Option<Arc<dyn PeerAuthorizer>> {
        None
    }
    /// The listener's name as Kafka clients see it (the first of `controller.listener.names`; default
    /// `CONTROLLER`): DescribeQuorum v2 names the voters' endpoints by it.
    fn listener_name(&self) -> String {
        "CONTROLLER".into()
    }
}

/// The production [`Transport`]: tokio TCP with `TCP_NODELAY`.
#[derive(Debug, Default, Clone, Copy)]
pub struct TcpTransport;

impl Transport for TcpTransport {
    fn connect(&self, addr: &str) -> IoFuture<'static, BoxedStream> {
        let addr = addr.to_string();
        Box::pin(async move {
            let s = tokio::net::TcpStream::connect(addr.as_str()).await?;
            let _ = s.set_nodelay(true);
            Ok(Box::new(s) as BoxedStream)
        })
    }
}

impl RpcListener for tokio::net::TcpListener {
    fn accept(&self) -> IoFuture<'_, BoxedStream> {
        Box::pin(async move {
            let (s, _) = tokio::net::TcpListener::accept(self).await?;
            let _ = s.set_nodelay(true);
            Ok(Box::new(s) as BoxedStream)
        })
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        tokio::net::TcpListener::local_addr(self)
    }
}

/// Everything a controller takes from its environment besides its config: the network, the disk and
/// randomness. [`Default`] is production (TCP, `storage::RealFs`, a random seed).
#[derive(Clone, Debug)]
pub struct ControllerSeams {
    /// How the controller connects to its raft peers.
    pub transport: Arc<dyn Transport>,
    /// The file system under `data_dir` (raft log segments, `vote.json`, `purged.json`,
    /// `snapshot.json`).
    pub fs: storage::Fs,
    /// Seed of the controller's decisions' randomness (replica placement, topic ids); `None` draws one.
    pub rng_seed: Option<u64>,
}

impl Default for ControllerSeams {
    fn default() -> Self {
        ControllerSeams {
            transport: Arc::new(TcpTransport),
            fs: storage::real_fs(),
            rng_seed: None,
        }
    }
}
