//! The socket layer: accepts TCP connections, reads size-prefixed request frames, hands them to
//! [`KafkaApis`](crate::server::apis::KafkaApis), and writes responses back in request order.
//!
//! Source: Kafka protocol guide, "Network" section: a frame is an `int32` size followed by that many bytes.
//!
//! Invariants:
//! - One request is in flight per connection at a time (as Kafka mutes a channel until its response is sent),
//!   so responses always go back in the order the requests arrived (pitfall 2); acks=0 Produce gets none.
//! - A frame whose size is < 8 (no room for a request header), negative, or larger than
//!   `socket.request.max.bytes` closes that connection before anything is allocated for it. The frame buffer
//!   grows only as bytes actually arrive (pitfall 11).
//! - A connection waiting for its next request holds no read buffer: an empty buffer is released once
//!   nothing has arrived for `KEEP_BUFFER` (100 ms; at once if it has no spare capacity), and the next
//!   request's first bytes are read onto the stack and then into a buffer sized from the frame's size
//!   prefix. The request handler's future is boxed, so an idle connection's task stays small (issue 18:
//!   10,000 idle connections).
//! - A request we cannot decode, or an API key/version we do not serve, closes the connection — except
//!   ApiVersions above our range, which gets error 35 and our real ranges (pitfall 1, KIP-511).
//! - On plaintext connections, Fetch response record data goes from the segment file to the socket with
//!   `sendfile(2)` ([`ServerStream::send_file`] of tokio's `TcpStream`; a stream without a socket, such as
//!   a simulated one, gets the bytes copied). Over TLS the bytes are read and encrypted in user space
//!   (kernel TLS, which would keep `sendfile`, is a later step).
//! - On a listener whose security protocol uses TLS, the handshake comes first, bounded by
//!   [`TLS_HANDSHAKE_TIMEOUT`](crate::security::TLS_HANDSHAKE_TIMEOUT); a peer that sends no TLS, presents an untrusted or expired certificate, or
//!   stalls is closed before any request is read. The principal comes from the client certificate.
//! - On a SASL listener (SASL_PLAINTEXT, SASL_SSL) nothing but ApiVersions and the SASL requests is served
//!   until [`sasl_authenticator::authenticate`](crate::server::sasl_authenticator::authenticate) succeeds;
//!   the principal is then `User:<authenticated name>`. A failed authentication closes the connection.
//! - A connection on which no complete request arrives for `connections.max.idle.ms` (Kafka's key, default
//!   10 min) is closed: an idle one, and one stalled in the middle of a frame (slow-loris). The clock starts
//!   when the connection waits for its next request (after the previous response), so a request being served
//!   (a long-polling Fetch, a parked JoinGroup) never counts as idle.
//!
//! - Connection limits (`max.connections`, `max.connections.per.ip`, `max.connection.creation.rate`;
//!   [`crate::quota::ConnectionLimiter`]) are applied at accept: the acceptor waits, or closes a connection
//!   from an IP at its limit; a connection's slot is freed when it closes.
//! - A client over a quota gets its response, then its connection is not read for the throttle time
//!   (KIP-219, [`RequestOutcome::Throttled`]).
//!
//! The transport is a seam: [`serve`] takes any [`Listener`] (tokio's `TcpListener` in production; a
//! deterministic simulation passes a simulated network's listener), and connections are its
//! [`ServerStream`]s.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use protocol::record::FileSlice;
use protocol::{ApiKey, Chunk, RequestHeader};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, Interest};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use crate::config::{keys, SecurityProtocol};
use crate::observability::requests::RequestTiming;
use crate::security::sasl::SaslListener;
use crate::security::{HandshakeError, TlsListener};
use crate::server::apis::{KafkaApis, RequestOutcome};
use crate::server::context::{ConnectionContext, KafkaPrincipal};
use crate::server::sasl_authenticator;

/// Largest read-ahead the frame reader allocates before bytes arrive (bytes).
const READ_CHUNK: usize = 64 * 1024;

/// What a connection with an empty read buffer reads at most per `read(2)` into a stack buffer (bytes),
/// before it allocates a heap buffer sized from the frame's size prefix: a connection waiting for its next
/// request holds no read buffer (issue 18: 10,000 idle connections).
const FIRST_READ: usize = 8 * 1024;

/// How long a connection waiting for its next request keeps an empty read buffer with spare capacity
/// (a large frame's, reused for the next one as today) before releasing it: a busy producer's next request
/// does not regrow its buffer, an idle connection holds none.
const KEEP_BUFFER: Duration = Duration::from_millis(100);

/// A listening socket the broker accepts Kafka connections on.
pub trait Listener: Send + Sync + 'static {
    /// An accepted connection.
    type Stream: ServerStream;
    /// Waits for the next connection; returns it and the peer's address. Errors: the accept's I/O error
    /// (the caller logs it and accepts again).
    fn accept(&self) -> impl Future<Output = io::Result<(Self::Stream, SocketAddr)>> + Send;
}

/// An accepted connection: a byte stream that can also send a slice of a segment file.
pub trait ServerStream: AsyncRead + AsyncWrite + Unpin + Send + 'static {
    /// Writes the `slice.len` bytes of `slice.file` from `slice.position`. The default reads them into
    /// memory and writes them (a stream without a socket). Errors: a file shorter than the slice
    /// (`UnexpectedEof`), the read's or write's I/O error; the frame size is already on the wire, so the
    /// connection closes.
    fn send_file<'a>(
        &'a mut self,
        slice: &'a FileSlice,
    ) -> impl Future<Output = io::Result<()>> + Send + 'a {
        async move {
            use std::os::unix::fs::FileExt;
            let mut bytes = vec![0u8; slice.len as usize];
            slice.file.read_exact_at(&mut bytes, slice.position)?;
            self.write_all(&bytes).await
        }
    }
}

/// Production: tokio TCP, with `TCP_NODELAY` on every accepted connection.
impl Listener for TcpListener {
    type Stream = TcpStream;

    async fn accept(&self) -> io::Result<(TcpStream, SocketAddr)> {
        let (stream, peer) = TcpListener::accept(self).await?;
        let _ = stream.set_nodelay(true);
        Ok((stream, peer))
    }
}

/// Production: file slices go to the socket with `sendfile(2)`.
impl ServerStream for TcpStream {
    async fn send_file(&mut self, slice: &FileSlice) -> io::Result<()> {
        sendfile_to_socket(self, slice).await
    }
}

/// Over TLS, file slices are read and written through the encrypting stream (no `sendfile`).
impl<S: AsyncRead + AsyncWrite + Unpin + Send + 'static> ServerStream
    for tokio_rustls::server::TlsStream<S>
{
}

/// What a TLS connection reads from its socket per `read(2)` (one full TLS record, 16 KiB, about Kafka's
/// `netReadBuffer`): rustls asks for 4 KiB at a time, so a buffer in front of the socket saves three of
/// four system calls of a large Produce.
const TLS_READ_BUFFER: usize = 16 << 10;

/// How the connections of one listener are set up before requests are served.
#[derive(Debug, Clone)]
pub struct ListenerSecurity {
    /// The listener's name (upper-case).
    pub name: Arc<str>,
    /// Its security protocol.
    pub protocol: SecurityProtocol,
    /// The TLS server side, for SSL and SASL_SSL listeners.
    pub tls: Option<Arc<TlsListener>>,
    /// The SASL settings, for SASL_PLAINTEXT and SASL_SSL listeners.
    pub sasl: Option<Arc<SaslListener>>,
}

impl ListenerSecurity {
    /// A PLAINTEXT listener named `name`.
    pub fn plaintext(name: &str) -> ListenerSecurity {
        ListenerSecurity {
            name: name.into(),
            protocol: SecurityProtocol::Plaintext,
            tls: None,
            sasl: None,
        }
    }
}

/// Accepts connections until `shutdown` flips to true.
pub async fn serve<L: Listener>(
    listener: L,
    security: ListenerSecurity,
    apis: Arc<KafkaApis>,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    // Connection limits (Kafka's ConnectionQuotas): this acceptor may wait for a slot; a
                    // connection from an IP at its limit is closed.
                    let limiter = apis.quotas().connections.clone();
                    let slot = tokio::select! {
                        slot = limiter.acquire(&security.name, peer.ip()) => slot,
                        _ = shutdown.changed() => return,
                    };
                    let slot = match slot {
                        Ok(slot) => slot,
                        Err(e) => {
                            tracing::debug!(%peer, error = %e, "connection closed at accept");
                            continue;
                        }
                    };
                    let apis = apis.clone();
                    let shutdown = shutdown.clone();
                    let security = security.clone();
                    tokio::spawn(async move {
                        // Kafka's socket-server-metrics `connection-creation-total` (the open count is read
                        // from the ConnectionLimiter at scrape time).
                        let listener = security.name.to_string();
                        metrics::counter!("kafka_server_socket_server_metrics_connection_creation_total", "listener" => listener).increment(1);
                        if let Err(e) = open_connection(stream, peer, security, apis, shutdown).await {
                            tracing::debug!(%peer, error = %e, "connection closed");
                        }
                        drop(slot);
                    });
                }
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                }
            },
            _ = shutdown.changed() => return,
        }
    }
}

/// Why a connection was closed by us.
#[derive(Debug, thiserror::Error)]
pub enum ConnectionError {
    /// Socket error or peer gone.
    #[error("i/o: {0}")]
    Io(#[from] io::Error),
    /// The frame size prefix is out of bounds.
    #[error("invalid frame size {0}")]
    FrameSize(i32),
    /// The request could not be served (malformed, unknown API key, unsupported version).
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// No complete request within `connections.max.idle.ms`.
    #[error("no complete request for {0:?} (connections.max.idle.ms)")]
    Idle(Duration),
    /// The TLS handshake failed or timed out, or the client certificate gave no principal.
    #[error(transparent)]
    Handshake(#[from] HandshakeError),
    /// SASL authentication failed (after any error response was sent).
    #[error("SASL authentication failed: {0}")]
    Authentication(String),
}

/// Sets up one accepted connection as its listener's security protocol asks (TLS handshake and the
/// principal from the client certificate; SASL authentication on SASL listeners), then serves its requests.
async fn open_connection<S: ServerStream>(
    stream: S,
    peer: SocketAddr,
    security: ListenerSecurity,
    apis: Arc<KafkaApis>,
    mut shutdown: watch::Receiver<bool>,
) -> Result<(), ConnectionError> {
    let context = |principal| ConnectionContext {
        listener_name: security.name.clone(),
        security_protocol: security.protocol,
        peer: Some(peer),
        principal,
        client_software: std::sync::OnceLock::new(),
        share_members: Default::default(),
    };
    let Some(tls) = &security.tls else {
        let conn = Arc::new(context(KafkaPrincipal::ANONYMOUS));
        return authenticate_and_serve(stream, conn, &security, apis, shutdown).await;
    };
    // Boxed, as every once-per-connection step: inlined, its state would size the connection's task.
    let (stream, name) = tokio::select! {
        r = Box::pin(tls.accept(tokio::io::BufReader::with_capacity(TLS_READ_BUFFER, stream))) => r?,
        _ = shutdown.changed() => return Ok(()),
    };
    let principal = name.map_or(KafkaPrincipal::ANONYMOUS, KafkaPrincipal::user);
    tracing::debug!(%peer, listener = %security.name, %principal, "TLS connection established");
    // Boxed: a TLS stream's state would otherwise size every plaintext connection's task too.
    Box::pin(authenticate_and_serve(
        stream,
        Arc::new(context(principal)),
        &security,
        apis,
        shutdown,
    ))
    .await
}

/// On a SASL listener, authenticates first (the principal becomes `User:<name>`); then serves requests.
async fn authenticate_and_serve<S: ServerStream>(
    mut stream: S,
    conn: Arc<ConnectionContext>,
    security: &ListenerSecurity,
    apis: Arc<KafkaApis>,
    mut shutdown: watch::Receiver<bool>,
) -> Result<(), ConnectionError> {
    let mut buf = BytesMut::new();
    let Some(sasl) = &security.sasl else {
        return handle_connection(stream, buf, conn, apis, None, shutdown).await;
    };
    let idle = idle_limit(apis.config());
    let authenticated = tokio::select! {
        r = Box::pin(sasl_authenticator::authenticate(&mut stream, &mut buf, sasl, &apis, &conn, idle)) => r,
        _ = shutdown.changed() => return Ok(()),
    };
    let session = match authenticated {
        Ok(session) => session,
        Err(e) => {
            tracing::info!(peer = ?conn.peer, listener = %security.name, error = %e, "failed authentication");
            return Err(e);
        }
    };
    let mut context = (*conn).clone();
    context.principal = KafkaPrincipal::user(session.user.clone());
    tracing::debug!(peer = ?context.peer, listener = %security.name, principal = %context.principal, "SASL authentication complete");
    let session = SessionState::new(sasl.clone(), session);
    handle_connection(
        stream,
        buf,
        Arc::new(context),
        apis,
        Some(session),
        shutdown,
    )
    .await
}

/// A SASL connection's session (KIP-368): when it expires and how it is renewed.
struct SessionState {
    listener: Arc<SaslListener>,
    session: sasl_authenticator::SaslSession,
    expires: Option<tokio::time::Instant>,
}

impl SessionState {
    fn new(listener: Arc<SaslListener>, session: sasl_authenticator::SaslSession) -> SessionState {
        let expires = (session.lifetime_ms > 0).then(|| {
            tokio::time::Instant::now() + Duration::from_millis(session.lifetime_ms as u64)
        });
        SessionState {
            listener,
            session,
            expires,
        }
    }

    /// Handles `frame` when it belongs to the session rather than to `KafkaApis`: a SaslHandshake starts a
    /// re-authentication (true once it succeeded); any other request after the session expired closes the
    /// connection, as Kafka's broker does. False: serve the frame.
    async fn intercept<S: ServerStream>(
        &mut self,
        stream: &mut S,
        buf: &mut BytesMut,
        frame: &bytes::Bytes,
        idle: Option<Duration>,
    ) -> Result<bool, ConnectionError> {
        let key = RequestHeader::peek(frame).map(|(key, _, _)| key);
        if key == Some(ApiKey::SaslHandshake as i16) {
            let listener = self.listener.clone();
            let previous = self.session.clone();
            let session = sasl_authenticator::reauthenticate(
                stream,
                buf,
                &listener,
                previous,
                frame.clone(),
                idle,
            )
            .await?;
            tracing::debug!(user = %session.user, lifetime_ms = session.lifetime_ms, "SASL re-authentication complete");
            *self = SessionState::new(listener, session);
            return Ok(true);
        }
        if self
            .expires
            .is_some_and(|e| tokio::time::Instant::now() >= e)
        {
            return Err(ConnectionError::Authentication(format!(
                "the SASL session of User:{} expired and was not re-authenticated",
                self.session.user
            )));
        }
        Ok(false)
    }
}

/// `connections.max.idle.ms` as a limit (`None`: negative, no limit).
fn idle_limit(config: &crate::config::BrokerConfig) -> Option<Duration> {
    let idle_ms = config.get(keys::CONNECTIONS_MAX_IDLE_MS);
    (idle_ms >= 0).then(|| Duration::from_millis(idle_ms as u64))
}

/// Serves the connection's requests one at a time until the peer closes, an error closes it, or `shutdown`.
async fn handle_connection<S: ServerStream>(
    mut stream: S,
    mut buf: BytesMut,
    conn: Arc<ConnectionContext>,
    apis: Arc<KafkaApis>,
    mut session: Option<SessionState>,
    mut shutdown: watch::Receiver<bool>,
) -> Result<(), ConnectionError> {
    let max = apis.config().socket_request_max_bytes;
    let idle = idle_limit(apis.config());
    let _release = crate::share::ReleaseOnClose::new(&conn.share_members, &apis);
    loop {
        let frame = tokio::select! {
            f = read_frame_within(&mut stream, &mut buf, 8, max, idle) => f?,
            _ = shutdown.changed() => return Ok(()),
        };
        let Some(frame) = frame else { return Ok(()) };
        if let Some(s) = session.as_mut() {
            if Box::pin(s.intercept(&mut stream, &mut buf, &frame, idle)).await? {
                continue;
            }
        }
        // Boxed: the handler's future is KiBs, and inlined it would make every connection's task that size
        // while it waits for its next request.
        let mute = Box::pin(serve_request(&mut stream, &apis, &conn, frame)).await?;
        if let Some(mute) = mute {
            // KIP-219: the connection is muted (not read) for the throttle time after the response.
            tokio::select! {
                _ = tokio::time::sleep(mute) => {}
                _ = shutdown.changed() => return Ok(()),
            }
        }
    }
}

/// Handles one request `frame` and writes its response, recording its timing; returns the time the
/// connection is then muted for (KIP-219), if the client is throttled.
async fn serve_request<S: ServerStream>(
    stream: &mut S,
    apis: &KafkaApis,
    conn: &Arc<ConnectionContext>,
    frame: bytes::Bytes,
) -> Result<Option<Duration>, ConnectionError> {
    let received = tokio::time::Instant::now();
    let (outcome, timing) = apis.handle_timed(frame, conn, received).await;
    let sending = tokio::time::Instant::now();
    let sent = |timing: Option<RequestTiming>| {
        if let Some(t) = timing {
            t.record(sending.elapsed());
        }
    };
    match outcome {
        RequestOutcome::Respond(chunks) => {
            write_chunks(stream, chunks).await?;
            sent(timing);
            Ok(None)
        }
        RequestOutcome::NoResponse => {
            sent(timing);
            Ok(None)
        }
        RequestOutcome::Throttled { response, mute } => {
            if let Some(chunks) = response {
                write_chunks(stream, chunks).await?;
            }
            sent(timing);
            Ok(Some(mute))
        }
        RequestOutcome::Close(reason) => Err(ConnectionError::InvalidRequest(reason)),
    }
}

/// [`read_frame`], failing with [`ConnectionError::Idle`] when the frame is not complete within `idle` (None:
/// no limit). Cancelling mid-frame is fine: the connection is closed then.
pub(crate) async fn read_frame_within<S: AsyncRead + Unpin>(
    stream: &mut S,
    buf: &mut BytesMut,
    min: i32,
    max: i32,
    idle: Option<Duration>,
) -> Result<Option<bytes::Bytes>, ConnectionError> {
    match idle {
        None => read_frame(stream, buf, min, max).await,
        Some(d) => tokio::time::timeout(d, read_frame(stream, buf, min, max))
            .await
            .map_err(|_| ConnectionError::Idle(d))?,
    }
}

/// Reads one frame of `min..=max` bytes (8 for a request: its header; 0 for a raw SASL token). Returns
/// `None` on a clean EOF between frames. Bytes read past the frame stay in `buf` for the next call; when
/// none are left, `buf` is empty and, once the next read would wait, holds no capacity.
async fn read_frame<S: AsyncRead + Unpin>(
    stream: &mut S,
    buf: &mut BytesMut,
    min: i32,
    max: i32,
) -> Result<Option<bytes::Bytes>, ConnectionError> {
    if buf.is_empty() && read_first(stream, buf).await? == 0 {
        return Ok(None);
    }
    while buf.len() < 4 {
        if buf.capacity() == buf.len() {
            buf.reserve(4 - buf.len());
        }
        if stream.read_buf(buf).await? == 0 {
            return if buf.is_empty() {
                Ok(None)
            } else {
                Err(io::Error::from(io::ErrorKind::UnexpectedEof).into())
            };
        }
    }
    let size = i32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
    if !(min..=max).contains(&size) {
        return Err(ConnectionError::FrameSize(size));
    }
    let total = 4 + size as usize;
    while buf.len() < total {
        // Grow by at most what has already arrived (at least READ_CHUNK): a claimed size costs memory only
        // as the peer actually sends bytes, and growth is geometric so large frames are copied O(1) times.
        let have = buf.len();
        let want = (total - have).min(READ_CHUNK.max(have));
        if buf.capacity() - have < want {
            buf.reserve(want);
        }
        if stream.read_buf(buf).await? == 0 {
            return Err(io::Error::from(io::ErrorKind::UnexpectedEof).into());
        }
    }
    let mut frame = buf.split_to(total);
    let _ = frame.split_to(4);
    if buf.capacity() == 0 {
        // A view with no capacity left would still keep the frame's whole allocation alive while idle.
        *buf = BytesMut::new();
    }
    Ok(Some(frame.freeze()))
}

/// The first read into the empty `buf`; returns the bytes read (0: EOF). Bytes that arrive within
/// [`KEEP_BUFFER`] go into `buf`'s spare capacity, as a busy connection keeps its buffer. Then `buf`'s
/// capacity is released (an idle connection holds no read buffer) and the bytes arrive on the stack, at
/// most [`FIRST_READ`], and are copied into a new `buf` sized from the frame's size prefix: the whole
/// frame if it is no larger than [`READ_CHUNK`] or what arrived, else `READ_CHUNK` (a claimed size costs
/// memory only as bytes arrive).
async fn read_first<S: AsyncRead + Unpin>(stream: &mut S, buf: &mut BytesMut) -> io::Result<usize> {
    use std::mem::MaybeUninit;
    use std::task::Poll;
    debug_assert!(buf.is_empty());
    if buf.capacity() > 0 {
        match tokio::time::timeout(KEEP_BUFFER, stream.read_buf(buf)).await {
            Ok(read) => return read,
            Err(_) => *buf = BytesMut::new(),
        }
    }
    std::future::poll_fn(|cx| {
        let mut raw = [MaybeUninit::<u8>::uninit(); FIRST_READ];
        let mut read = tokio::io::ReadBuf::uninit(&mut raw);
        std::task::ready!(std::pin::Pin::new(&mut *stream).poll_read(cx, &mut read))?;
        let got = read.filled();
        if got.is_empty() {
            return Poll::Ready(Ok(0));
        }
        *buf = BytesMut::with_capacity(first_capacity(got));
        buf.extend_from_slice(got);
        Poll::Ready(Ok(got.len()))
    })
    .await
}

/// The capacity of a read buffer whose first bytes are `got` (bytes): the frame they start, bounded by
/// `READ_CHUNK` or `got.len()`, whichever is larger; 4 while the size prefix is incomplete.
fn first_capacity(got: &[u8]) -> usize {
    match got {
        [a, b, c, d, ..] => {
            let size = i32::from_be_bytes([*a, *b, *c, *d]);
            let frame = 4 + usize::try_from(size).unwrap_or(0);
            frame.min(READ_CHUNK.max(got.len())).max(got.len())
        }
        _ => 4,
    }
}

/// Writes an encoded response: memory chunks joined into one write, file chunks with
/// [`ServerStream::send_file`] (`sendfile` on a TCP socket).
pub(crate) async fn write_chunks<S: ServerStream>(
    stream: &mut S,
    chunks: Vec<Chunk>,
) -> io::Result<()> {
    let mut pending: Vec<bytes::Bytes> = Vec::new();
    for chunk in chunks {
        match chunk {
            Chunk::Bytes(b) => pending.push(b),
            Chunk::File(slice) => {
                flush_pending(stream, &mut pending).await?;
                stream.send_file(&slice).await?;
            }
        }
    }
    flush_pending(stream, &mut pending).await?;
    // A TLS stream may still hold encrypted records once `write_all` has handed it the last plaintext
    // (the socket was full): without the flush they wait for the next response while the client waits
    // for this one. A no-op on TCP.
    stream.flush().await
}

async fn flush_pending<S: AsyncWrite + Unpin>(
    stream: &mut S,
    pending: &mut Vec<bytes::Bytes>,
) -> io::Result<()> {
    if pending.len() == 1 {
        stream.write_all(&pending[0]).await?;
    } else if !pending.is_empty() {
        let total: usize = pending.iter().map(|b| b.len()).sum();
        let mut joined = BytesMut::with_capacity(total);
        for b in pending.iter() {
            joined.extend_from_slice(b);
        }
        stream.write_all(&joined).await?;
    }
    pending.clear();
    Ok(())
}

/// Sends `slice` from its file straight to the socket with `sendfile(2)`. A file shorter than the slice
/// (a segment deleted under us) is an error: the frame size is already on the wire, so the connection closes.
async fn sendfile_to_socket(stream: &mut TcpStream, slice: &FileSlice) -> io::Result<()> {
    let mut offset = slice.position as libc::off_t;
    let mut remaining = slice.len as usize;
    let file_fd = slice.file.as_raw_fd();
    while remaining > 0 {
        stream.writable().await?;
        let sock_fd = stream.as_raw_fd();
        let result = stream.try_io(Interest::WRITABLE, || {
            // SAFETY: both descriptors are open for the duration of the call (the socket is borrowed, the file
            // is held by `slice`), and `offset` is a valid pointer to a local.
            let n = unsafe { libc::sendfile(sock_fd, file_fd, &mut offset, remaining) };
            if n < 0 {
                Err(io::Error::last_os_error())
            } else {
                Ok(n as usize)
            }
        });
        match result {
            Ok(0) => return Err(io::Error::from(io::ErrorKind::UnexpectedEof)),
            Ok(n) => remaining -= n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
