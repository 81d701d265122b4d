//! The controller's I/O seams: how it connects (raft peers, [`crate::ControllerClient`]), how it accepts
//! connections, which disk its raft log, vote and snapshots live on, and its random seed.
//!
//! Production uses [`TcpTransport`] (tokio TCP with `TCP_NODELAY`), tokio's `TcpListener` and
//! `storage::RealFs` (what [`ControllerSeams::default`] gives); a deterministic simulation passes its own
//! [`Transport`]/[`RpcListener`] (e.g. over `turmoil::net`) and a `storage::SimFs`, so a crash can lose
//! unsynced raft log writes and votes. The shape follows the replica fetcher's `Connector`: a connection
//! is a boxed [`RpcStream`], one virtual call per read or write, none per byte.

use std::fmt;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

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

/// Accepts connections for a [`crate::ControllerServer`].
pub trait RpcListener: Send + Sync + 'static {
    /// Waits for the next connection. Errors: the accept's I/O error (the server logs it, backs off
    /// 50 ms and accepts again).
    fn accept(&self) -> IoFuture<'_, BoxedStream>;
    /// The bound address.
    fn local_addr(&self) -> io::Result<SocketAddr>;
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
