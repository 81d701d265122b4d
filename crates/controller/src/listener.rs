//! The controller RPC listener's connections: accepting within `max.connections`, running each
//! connection's setup (handshakes) in its own task, admitting its authenticated peer, then serving
//! request/response frames until the peer leaves, stays idle past `connections.max.idle.ms`, or the
//! controller stops.
//!
//! Memory per connection is bounded by what the peer has actually sent: a frame's buffer grows as its
//! bytes arrive ([`crate::rpc::read_frame`]), a connection stalled mid-frame is closed after the idle
//! timeout, and a secured listener's handshakes bound what an unauthenticated peer may send (TLS records,
//! `sasl.server.max.receive.size`) before any frame is read.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::rpc::{read_frame, write_frame, RpcRequest};
use crate::server::Inner;
use crate::transport::{Accepted, ListenerLimits, PeerAuthorizer, PendingConnection, RpcListener};

/// Accepts connections until shutdown; each runs in its own task while it holds one of
/// `max_connections` slots (a connection beyond them is closed at once, with a log line).
pub(crate) async fn accept_loop(inner: Arc<Inner>, listener: Box<dyn RpcListener>) {
    let mut shutdown = inner.shutdown_rx.clone();
    let limits = listener.limits();
    let authorizer = listener.authorizer();
    let slots = Arc::new(Semaphore::new(
        limits.max_connections.min(Semaphore::MAX_PERMITS),
    ));
    loop {
        // `biased`: branch order fixed (an unbiased select draws from the runtime's RNG), see ARCHITECTURE.md.
        tokio::select! {
            biased;
            r = listener.accept_pending() => match r {
                Ok(pending) => match slots.clone().try_acquire_owned() {
                    Ok(slot) => {
                        let conn = serve_connection(inner.clone(), pending, limits, authorizer.clone(), slot);
                        tokio::spawn(conn);
                    }
                    Err(_) => tracing::warn!(
                        max_connections = limits.max_connections,
                        "controller listener: connection closed, max.connections reached"
                    ),
                },
                Err(e) => {
                    tracing::warn!("controller accept: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            _ = shutdown.changed() => return,
        }
    }
}

/// Sets the connection up (bounded by the idle timeout), admits its peer, then serves it.
async fn serve_connection(
    inner: Arc<Inner>,
    pending: PendingConnection,
    limits: ListenerLimits,
    authorizer: Option<Arc<dyn PeerAuthorizer>>,
    _slot: OwnedSemaphorePermit,
) {
    let mut shutdown = inner.shutdown_rx.clone();
    if *shutdown.borrow_and_update() {
        return;
    }
    let accepted = tokio::select! {
        biased;
        r = tokio::time::timeout(limits.idle_timeout, pending) => r,
        _ = shutdown.changed() => return,
    };
    let Accepted { mut stream, peer } = match accepted {
        Ok(Ok(a)) => a,
        Ok(Err(e)) => {
            tracing::warn!("controller listener: connection closed before authentication: {e}");
            return;
        }
        Err(_) => {
            tracing::warn!(
                idle_timeout_ms = limits.idle_timeout.as_millis() as u64,
                "controller listener: connection closed, no authentication within connections.max.idle.ms"
            );
            return;
        }
    };
    if let (Some(peer), Some(authorizer)) = (&peer, &authorizer) {
        let image = inner.sm.state.read().image.clone();
        if let Err(reason) = authorizer.authorize(peer, &image) {
            tracing::warn!(
                principal = %peer.principal,
                host = %peer.host,
                "controller listener: connection closed, not authorized: {reason}"
            );
            return;
        }
    }
    loop {
        let req: RpcRequest = tokio::select! {
            biased;
            r = tokio::time::timeout(limits.idle_timeout, read_frame(&mut stream)) => match r {
                Ok(Ok(r)) => r,
                Ok(Err(_)) => return,
                Err(_) => {
                    tracing::debug!("controller listener: idle connection closed");
                    return;
                }
            },
            _ = shutdown.changed() => return,
        };
        let resp = tokio::select! {
            biased;
            r = inner.handle(req) => r,
            _ = shutdown.changed() => return,
        };
        if write_frame(&mut stream, &resp).await.is_err() {
            return;
        }
    }
}
