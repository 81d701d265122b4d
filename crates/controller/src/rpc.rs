//! The controller RPC wire format: length-prefixed JSON frames over TCP.
//!
//! A frame is `[len: u32 BE][len bytes of JSON]`, `len <= MAX_FRAME_BYTES` (64 MiB; a larger
//! announced length is an error, never an allocation). The same listener also takes Kafka requests
//! (`[len][request header][body]`, [`crate::kafka_apis`]): a JSON frame starts with `{` or `"`, a Kafka
//! request with 0x00 (the high byte of its API key). A connection carries a sequence of
//! request/response pairs: the peer sends one [`RpcRequest`] frame and reads one [`RpcResponse`]
//! frame back. Requests are raft RPCs between controllers (append_entries, vote, install_snapshot)
//! or [`ClientRequest`]s from brokers (their message types are in the `metadata` crate); a broker sends
//! registrations, heartbeats and AlterPartition as Kafka requests instead ([`crate::broker_apis`]).

use std::collections::BTreeMap;

use openraft::error::{InstallSnapshotError, RaftError};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

pub use metadata::rpc::{ClientRequest, ClientResponse};

use crate::raft_types::TypeConfig;

/// Largest frame accepted or sent (64 MiB).
pub const MAX_FRAME_BYTES: usize = 64 << 20;
/// A frame's buffer starts at most this large (64 KiB) and grows as the frame's bytes arrive.
const READ_CHUNK_BYTES: usize = 64 << 10;
/// Largest serialized record batch one controller decision may append (16 MiB), so that any single
/// raft entry fits in a frame.
pub const MAX_BATCH_BYTES: usize = 16 << 20;

/// A request frame.
#[derive(Debug, Serialize, Deserialize)]
#[allow(clippy::large_enum_variant)]
pub enum RpcRequest {
    /// Raft AppendEntries.
    AppendEntries(AppendEntriesRequest<TypeConfig>),
    /// Raft RequestVote.
    Vote(VoteRequest<u64>),
    /// Raft InstallSnapshot (one chunk).
    InstallSnapshot(InstallSnapshotRequest<TypeConfig>),
    /// A broker request.
    Client(ClientRequest),
    /// A controller started with `controller.quorum.bootstrap.servers` and not in the membership asks
    /// the active controller to replicate the metadata log to it as a learner (Kafka's observer, KIP-853):
    /// its node id and its [`QuorumNode`](crate::raft_types::QuorumNode). Answered by
    /// [`RpcResponse::AddLearner`].
    AddLearner {
        /// The asking controller's `node.id`.
        node_id: i32,
        /// Where it listens and its directory id.
        node: crate::raft_types::QuorumNode,
    },
}

/// A response frame.
#[derive(Debug, Serialize, Deserialize)]
#[allow(clippy::large_enum_variant)]
pub enum RpcResponse {
    /// Raft AppendEntries answer.
    AppendEntries(Result<AppendEntriesResponse<u64>, RaftError<u64>>),
    /// Raft RequestVote answer.
    Vote(Result<VoteResponse<u64>, RaftError<u64>>),
    /// Raft InstallSnapshot answer.
    InstallSnapshot(Result<InstallSnapshotResponse<u64>, RaftError<u64, InstallSnapshotError>>),
    /// A broker request's answer.
    Client(ClientResponse),
    /// [`RpcRequest::AddLearner`]'s answer: `Ok` once the leader replicates to the learner; `Err` with
    /// the reason otherwise (not the leader — the known leader's address when there is one —, a node id
    /// that is a voter, a membership change in flight).
    AddLearner(Result<(), AddLearnerRefused>),
}

/// Why [`RpcRequest::AddLearner`] was refused.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AddLearnerRefused {
    /// The leader's controller address, when the answering node is not the leader and knows it.
    pub leader_addr: Option<String>,
    /// What went wrong, for the asking node's log.
    pub reason: String,
}

/// Encodes `value` as one frame (length prefix included), without the size check.
pub fn encode_frame<T: Serialize>(value: &T) -> std::io::Result<Vec<u8>> {
    let mut buf = vec![0u8; 4];
    serde_json::to_writer(&mut buf, value).map_err(std::io::Error::other)?;
    let len = (buf.len() - 4).min(u32::MAX as usize) as u32;
    buf[..4].copy_from_slice(&len.to_be_bytes());
    Ok(buf)
}

/// Writes one frame holding `value` as JSON.
///
/// Errors: I/O errors; `InvalidData` when the encoding exceeds [`MAX_FRAME_BYTES`].
pub async fn write_frame<W, T>(w: &mut W, value: &T) -> std::io::Result<()>
where
    W: tokio::io::AsyncWrite + Unpin,
    T: Serialize,
{
    let buf = encode_frame(value)?;
    if buf.len() - 4 > MAX_FRAME_BYTES {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("frame of {} bytes exceeds {MAX_FRAME_BYTES}", buf.len() - 4),
        ));
    }
    w.write_all(&buf).await?;
    w.flush().await
}

/// Reads one frame and decodes its JSON.
///
/// Errors: I/O errors (`UnexpectedEof` on a closed connection); `InvalidData` for a length over
/// [`MAX_FRAME_BYTES`] or undecodable JSON. Memory: the buffer grows with the bytes received, never to
/// the announced length up front.
pub async fn read_frame<R, T>(r: &mut R) -> std::io::Result<T>
where
    R: tokio::io::AsyncRead + Unpin,
    T: DeserializeOwned,
{
    decode_json(&read_frame_bytes(r).await?)
}

/// Decodes a frame's JSON (the bytes after its length). Errors: `InvalidData`.
pub fn decode_json<T: DeserializeOwned>(data: &[u8]) -> std::io::Result<T> {
    serde_json::from_slice(data)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

/// Reads one frame's bytes (after its 4-byte length) without decoding them: a JSON frame or a Kafka
/// request, which the listener tells apart by the first byte.
///
/// Errors: I/O errors (`UnexpectedEof` on a closed connection or a frame cut short); `InvalidData` for
/// a length over [`MAX_FRAME_BYTES`]. Memory: the buffer grows with the bytes received, never to the
/// announced length up front.
pub async fn read_frame_bytes<R>(r: &mut R) -> std::io::Result<Vec<u8>>
where
    R: tokio::io::AsyncRead + Unpin,
{
    let len = r.read_u32().await? as usize;
    if len > MAX_FRAME_BYTES {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("frame length {len} exceeds {MAX_FRAME_BYTES}"),
        ));
    }
    // The buffer grows as bytes arrive: a peer that announces a large frame and sends little of it
    // holds little memory.
    let mut data = Vec::with_capacity(len.min(READ_CHUNK_BYTES));
    let got = (&mut *r).take(len as u64).read_to_end(&mut data).await?;
    if got < len {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            format!("frame ended after {got} of {len} bytes"),
        ));
    }
    Ok(data)
}

/// Voters as openraft nodes.
pub(crate) fn voter_nodes(
    voters: &BTreeMap<types::BrokerId, std::net::SocketAddr>,
) -> BTreeMap<u64, crate::raft_types::QuorumNode> {
    voters
        .iter()
        .map(|(&id, addr)| {
            (
                id.get() as u64,
                crate::raft_types::QuorumNode::new(addr.to_string()),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn frames_round_trip_and_oversized_lengths_fail() {
        let mut buf = Vec::new();
        write_frame(&mut buf, &ClientRequest::DescribeQuorum)
            .await
            .unwrap();
        let back: ClientRequest = read_frame(&mut buf.as_slice()).await.unwrap();
        assert!(matches!(back, ClientRequest::DescribeQuorum));
        let bad = (u32::MAX).to_be_bytes();
        let e = read_frame::<_, ClientRequest>(&mut bad.as_slice())
            .await
            .unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidData);
        let mut short = 10u32.to_be_bytes().to_vec();
        short.extend_from_slice(b"{}");
        assert!(read_frame::<_, ClientRequest>(&mut short.as_slice())
            .await
            .is_err());
    }

    /// A reader announcing a frame of `MAX_FRAME_BYTES` that then sends only `sent` bytes and ends,
    /// recording the largest buffer it was offered.
    struct Stingy {
        header: Vec<u8>,
        sent: usize,
        largest_offer: usize,
    }

    impl tokio::io::AsyncRead for Stingy {
        fn poll_read(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
            buf: &mut tokio::io::ReadBuf<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            self.largest_offer = self.largest_offer.max(buf.remaining());
            if !self.header.is_empty() {
                let n = self.header.len().min(buf.remaining());
                let head: Vec<u8> = self.header.drain(..n).collect();
                buf.put_slice(&head);
            } else if self.sent > 0 {
                let n = self.sent.min(buf.remaining()).min(4096);
                buf.put_slice(&vec![b' '; n]);
                self.sent -= n;
            }
            std::task::Poll::Ready(Ok(()))
        }
    }

    #[tokio::test]
    async fn an_announced_frame_is_not_allocated_before_its_bytes_arrive() {
        let mut r = Stingy {
            header: (MAX_FRAME_BYTES as u32).to_be_bytes().to_vec(),
            sent: 100_000,
            largest_offer: 0,
        };
        let e = read_frame::<_, ClientRequest>(&mut r).await.unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::UnexpectedEof, "{e}");
        // The buffer grew with the 100 kB sent (doubling from 64 KiB), not to the 64 MiB announced.
        assert!(
            r.largest_offer <= 4 * READ_CHUNK_BYTES,
            "offered a {}-byte buffer for 100,000 bytes received",
            r.largest_offer
        );
    }
}
