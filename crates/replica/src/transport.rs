//! The follower's network seam: how a replica fetcher opens its connection to a leader.
//!
//! Production uses [`TcpConnector`] (a tokio `TcpStream` with `TCP_NODELAY`); a simulation passes its own
//! [`Connector`] (e.g. over `turmoil::net::TcpStream`) to [`crate::replica_manager::ReplicaManager::with_seams`].
//! The connection is a boxed [`ReplicaStream`], so the fetcher's code is the same over either; it reads and
//! writes whole frames, a virtual call per read or write, none per byte.

use futures::future::BoxFuture;
use tokio::io::{AsyncRead, AsyncWrite};

/// A byte stream a fetcher can talk the Kafka protocol over (any `AsyncRead + AsyncWrite`).
pub trait ReplicaStream: AsyncRead + AsyncWrite + Unpin + Send {}

impl<T: AsyncRead + AsyncWrite + Unpin + Send> ReplicaStream for T {}

/// A connection to a leader, as the fetcher holds it.
pub type BoxedStream = Box<dyn ReplicaStream>;

/// Opens connections to leaders (`host`, `port` come from
/// [`ClusterLink::broker_endpoint`](crate::cluster_link::ClusterLink::broker_endpoint)).
pub trait Connector: Send + Sync + 'static {
    /// Connects to `host:port`. Errors: the connect's I/O error (the caller bounds it with its timeout).
    fn connect(&self, host: &str, port: u16) -> BoxFuture<'static, std::io::Result<BoxedStream>>;
}

/// The production [`Connector`]: tokio TCP with `TCP_NODELAY`.
#[derive(Debug, Default, Clone, Copy)]
pub struct TcpConnector;

impl Connector for TcpConnector {
    fn connect(&self, host: &str, port: u16) -> BoxFuture<'static, std::io::Result<BoxedStream>> {
        let host = host.to_string();
        Box::pin(async move {
            let stream = tokio::net::TcpStream::connect((host.as_str(), port)).await?;
            stream.set_nodelay(true)?;
            Ok(Box::new(stream) as BoxedStream)
        })
    }
}
