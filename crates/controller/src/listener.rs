//! The controller RPC listener's connections: accepting within `max.connections`, running each
//! connection's setup (handshakes) in its own task, then serving request/response frames until the peer
//! leaves, stays idle past `connections.max.idle.ms`, or the controller stops. A frame is one of
//! Runnel's JSON frames (first byte `{` or `"`, [`crate::rpc`]; the peer must be allowed CLUSTER_ACTION
//! on the cluster, checked at its first JSON frame, else the connection is closed) or a Kafka request
//! (first byte 0x00, [`crate::kafka_apis`], authorized per request); any other first byte closes the
//! connection.
//!
//! Memory per connection is bounded by what the peer has actually sent: a frame's buffer grows as its
//! bytes arrive ([`crate::rpc::read_frame`]), a connection stalled mid-frame is closed after the idle
//! timeout, and a secured listener's handshakes bound what an unauthenticated peer may send (TLS records,
//! `sasl.server.max.receive.size`) before any frame is read.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::io::AsyncWriteExt;
use tokio::sync::{watch, OwnedSemaphorePermit, Semaphore};

use crate::kafka_apis::{self, Access, Outcome};
use crate::rpc::{decode_json, encode_frame, read_frame_bytes, RpcRequest, MAX_FRAME_BYTES};
use crate::server::Inner;
use crate::transport::{
    Accepted, BoxedStream, ClusterOperation, ListenerLimits, PeerAuthorizer, PendingConnection,
    RpcListener,
};

/// Accepts connections until shutdown; each runs in its own task while it holds one of
/// `max_connections` slots (a connection beyond them is closed at once, with a log line).
pub(crate) async fn accept_loop(inner: Arc<Inner>, listener: Box<dyn RpcListener>) {
    let mut shutdown = inner.shutdown_rx.clone();
    let limits = listener.limits();
    let authorizer = listener.authorizer();
    let listener_name: Arc<str> = listener.listener_name().into();
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
                        let conn = Connection {
                            limits,
                            authorizer: authorizer.clone(),
                            listener_name: listener_name.clone(),
                            _slot: slot,
                        };
                        tokio::spawn(serve_connection(inner.clone(), pending, conn));
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

/// What a connection takes from its listener.
struct Connection {
    limits: ListenerLimits,
    authorizer: Option<Arc<dyn PeerAuthorizer>>,
    listener_name: Arc<str>,
    /// Its `max.connections` slot, released when the connection ends.
    _slot: OwnedSemaphorePermit,
}

/// Sets the connection up (bounded by the idle timeout), then serves its frames: JSON frames once its
/// peer is allowed CLUSTER_ACTION (else the connection is closed), Kafka requests each authorized on its
/// own ([`kafka_apis`]).
async fn serve_connection(inner: Arc<Inner>, pending: PendingConnection, conn: Connection) {
    let Connection {
        limits,
        authorizer,
        listener_name,
        _slot,
    } = conn;
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
    let access = Access {
        peer: peer.as_ref(),
        authorizer: authorizer.as_deref(),
        listener_name: &listener_name,
    };
    serve_frames(&inner, &mut stream, &access, limits, &mut shutdown).await;
}

/// Serves request frames until the peer leaves, idles past the timeout, sends what it may not, or the
/// controller stops.
async fn serve_frames(
    inner: &Inner,
    stream: &mut BoxedStream,
    access: &Access<'_>,
    limits: ListenerLimits,
    shutdown: &mut watch::Receiver<bool>,
) {
    // CLUSTER_ACTION, once granted, holds for the connection (as admission at connect time did).
    let mut admitted = false;
    loop {
        let frame = tokio::select! {
            biased;
            r = tokio::time::timeout(limits.idle_timeout, read_frame_bytes(stream)) => match r {
                Ok(Ok(frame)) => frame,
                Ok(Err(_)) => return,
                Err(_) => {
                    tracing::debug!("controller listener: idle connection closed");
                    return;
                }
            },
            _ = shutdown.changed() => return,
        };
        if matches!(frame.first(), Some(b'{' | b'"')) && !admitted {
            if let Err(reason) = access.check(inner, ClusterOperation::ClusterAction) {
                let principal = access.peer.map_or("", |p| p.principal.as_str());
                tracing::warn!(
                    principal,
                    "controller listener: connection closed, not authorized: {reason}"
                );
                return;
            }
            admitted = true;
        }
        let answer = async move {
            match frame.first() {
                Some(b'{' | b'"') => answer_json(inner, &frame).await,
                Some(0) => kafka_apis::handle(inner, access, Bytes::from(frame)).await,
                _ => Outcome::Close("a frame that is neither JSON nor a Kafka request".into()),
            }
        };
        let response = tokio::select! {
            biased;
            r = answer => r,
            _ = shutdown.changed() => return,
        };
        match response {
            Outcome::Respond(bytes) => {
                if stream.write_all(&bytes).await.is_err() || stream.flush().await.is_err() {
                    return;
                }
            }
            Outcome::Close(reason) => {
                tracing::debug!("controller listener: connection closed: {reason}");
                return;
            }
        }
    }
}

/// Answers one JSON frame ([`RpcRequest`]) with its [`crate::rpc::RpcResponse`] frame. Closes on JSON
/// that does not decode or an answer over [`MAX_FRAME_BYTES`].
async fn answer_json(inner: &Inner, frame: &[u8]) -> Outcome {
    let req = match decode_json::<RpcRequest>(frame) {
        Ok(req) => req,
        Err(e) => return Outcome::Close(format!("undecodable JSON frame: {e}")),
    };
    let resp = inner.handle(req).await;
    match encode_frame(&resp) {
        Ok(bytes) if bytes.len() - 4 <= MAX_FRAME_BYTES => Outcome::Respond(bytes),
        Ok(bytes) => Outcome::Close(format!(
            "a response of {} bytes exceeds {MAX_FRAME_BYTES}",
            bytes.len() - 4
        )),
        Err(e) => Outcome::Close(format!("encoding a response: {e}")),
    }
}
