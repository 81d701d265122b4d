//! The frame reader's buffer, the connection future's size and response flushing.

use super::*;

/// A frame that declares 100 MB and stalls after a few bytes is cut off by the idle timeout, and the
/// buffer never reserved more than one read chunk for it.
#[tokio::test]
async fn a_stalled_frame_times_out_without_reserving_its_declared_size() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let mut client = TcpStream::connect(addr).await.unwrap();
    let (mut server, _) = listener.accept().await.unwrap();
    let declared: i32 = 100 << 20;
    client.write_all(&declared.to_be_bytes()).await.unwrap();
    client.write_all(&[0u8; 10]).await.unwrap();
    let mut buf = BytesMut::new();
    let idle = Some(Duration::from_millis(200));
    let got = read_frame_within(&mut server, &mut buf, 8, i32::MAX, idle).await;
    assert!(matches!(got, Err(ConnectionError::Idle(_))), "{got:?}");
    assert_eq!(buf.len(), 14);
    assert!(
        buf.capacity() <= 2 * READ_CHUNK,
        "reserved {}",
        buf.capacity()
    );
    // A complete frame within the limit is read.
    let mut client = TcpStream::connect(addr).await.unwrap();
    let (mut server, _) = listener.accept().await.unwrap();
    client
        .write_all(&[0, 0, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8])
        .await
        .unwrap();
    let got = read_frame_within(&mut server, &mut BytesMut::new(), 8, i32::MAX, idle).await;
    assert_eq!(&got.unwrap().unwrap()[..], &[1, 2, 3, 4, 5, 6, 7, 8]);
}

/// A connected client and the server side of its connection.
async fn connected() -> (TcpStream, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let client = TcpStream::connect(listener.local_addr().unwrap())
        .await
        .unwrap();
    let (server, _) = listener.accept().await.unwrap();
    (client, server)
}

/// An idle connection holds no read buffer: a request read into an empty buffer gets one of exactly its
/// frame, nothing is left once the frame is taken, and a buffer with spare capacity is released once
/// nothing arrived for KEEP_BUFFER. Bytes past a frame stay for the next one.
#[tokio::test]
async fn an_idle_connection_holds_no_read_buffer() {
    let (mut client, mut server) = connected().await;
    let frame = [0, 0, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8];
    client.write_all(&frame).await.unwrap();
    let mut buf = BytesMut::new();
    let got = read_frame(&mut server, &mut buf, 8, i32::MAX).await;
    assert_eq!(&got.unwrap().unwrap()[..], &frame[4..]);
    assert_eq!((buf.len(), buf.capacity()), (0, 0));

    let mut buf = BytesMut::with_capacity(READ_CHUNK);
    let wait = KEEP_BUFFER + Duration::from_millis(100);
    let waited = tokio::time::timeout(wait, read_frame(&mut server, &mut buf, 8, i32::MAX)).await;
    assert!(waited.is_err(), "nothing was sent");
    assert_eq!(buf.capacity(), 0);

    // Two frames in one read: the second stays in the buffer, then the buffer is empty again.
    client.write_all(&[frame, frame].concat()).await.unwrap();
    let mut buf = BytesMut::new();
    while buf.len() < 2 * frame.len() {
        let got = read_frame(&mut server, &mut buf, 8, i32::MAX)
            .await
            .unwrap();
        assert_eq!(&got.unwrap()[..], &frame[4..]);
        if buf.is_empty() {
            break;
        }
        assert_eq!(buf.len(), frame.len());
    }
    assert_eq!((buf.len(), buf.capacity()), (0, 0));

    // A frame larger than READ_CHUNK is read whole, growing as its bytes arrive.
    let body = vec![7u8; 3 * READ_CHUNK + 5];
    let size = (body.len() as i32).to_be_bytes();
    let (c, s) = (&mut client, &mut server);
    let wire = [&size[..], &body].concat();
    let (sent, got) = tokio::join!(c.write_all(&wire), async {
        read_frame(s, &mut buf, 8, i32::MAX).await
    });
    sent.unwrap();
    assert_eq!(got.unwrap().unwrap()[..], body[..]);
    assert_eq!(buf.len(), 0);
}

/// The buffer allocated for a frame's first bytes: the frame, bounded by READ_CHUNK or what arrived.
#[test]
fn first_capacity_is_the_frame_bounded_by_what_arrived() {
    assert_eq!(first_capacity(&[0, 0]), 4);
    assert_eq!(first_capacity(&[0, 0, 0, 8, 1]), 12);
    assert_eq!(first_capacity(&[0x7f, 0, 0, 0, 1]), READ_CHUNK);
    assert_eq!(first_capacity(&[0xff, 0, 0, 0, 1]), 5);
    let many = vec![0u8; 2 * READ_CHUNK];
    assert_eq!(
        first_capacity(&[&[0, 0x10, 0, 0][..], &many].concat()),
        2 * READ_CHUNK + 4
    );
}

/// A connection's task is small while it waits for a request: the TLS handshake, the SASL exchange and
/// the request handler are boxed rather than inlined into its future (issue 18; 14,464 bytes before).
#[test]
fn a_connection_future_is_small() {
    fn size<A, B, C, D, E, F: Future>(_: impl FnOnce(A, B, C, D, E) -> F) -> usize {
        std::mem::size_of::<F>()
    }
    let n = size(open_connection::<TcpStream>);
    println!("open_connection::<TcpStream> future: {n} bytes");
    assert!(n <= 4096, "{n} bytes");
}

/// A stream that, like a TLS stream whose socket is full, accepts every write but passes the bytes on
/// only when flushed.
#[derive(Default)]
struct HoldingStream {
    held: Vec<u8>,
    sent: Vec<u8>,
}

impl AsyncRead for HoldingStream {
    fn poll_read(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
        _: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        std::task::Poll::Pending
    }
}

impl AsyncWrite for HoldingStream {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<io::Result<usize>> {
        self.held.extend_from_slice(buf);
        std::task::Poll::Ready(Ok(buf.len()))
    }
    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        let held = std::mem::take(&mut self.held);
        self.sent.extend_from_slice(&held);
        std::task::Poll::Ready(Ok(()))
    }
    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
}

impl ServerStream for HoldingStream {}

/// A response is on the wire once written: over TLS the last records could otherwise wait for the
/// next response while the client waits for this one (a consumer over SSL stalled that way).
#[tokio::test]
async fn a_written_response_is_flushed() {
    let mut stream = HoldingStream::default();
    let chunks = vec![
        Chunk::Bytes(bytes::Bytes::from_static(b"head")),
        Chunk::Bytes(bytes::Bytes::from_static(b"tail")),
    ];
    write_chunks(&mut stream, chunks).await.unwrap();
    assert_eq!(stream.sent, b"headtail");
    assert!(stream.held.is_empty());
}
