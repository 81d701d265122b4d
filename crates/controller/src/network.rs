//! openraft networking over the controller RPC ([`crate::rpc`]): one TCP connection per target,
//! reused across RPCs and re-established after any error; every RPC is bounded by openraft's
//! `hard_ttl`.

use std::time::Duration;

use crate::raft_types::QuorumNode;
use openraft::error::{
    InstallSnapshotError, NetworkError, PayloadTooLarge, RPCError, RaftError, RemoteError,
    Unreachable,
};
use openraft::network::{Backoff, RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use std::sync::Arc;

use tokio::io::AsyncWriteExt;

use crate::quorum_state::{wall_clock_ms, PeerProgress};
use crate::raft_types::TypeConfig;
use crate::rpc::{encode_frame, read_frame, RpcRequest, RpcResponse, MAX_FRAME_BYTES};
use crate::transport::{BoxedStream, Transport};

/// Creates [`PeerConnection`]s for openraft over a [`Transport`].
#[derive(Clone, Debug)]
pub struct NetworkFactory {
    transport: Arc<dyn Transport>,
    progress: Arc<PeerProgress>,
}

impl NetworkFactory {
    /// Peer connections opened by `transport`, recording each follower's accepted AppendEntries in
    /// `progress` (DescribeQuorum's times).
    pub(crate) fn new(
        transport: Arc<dyn Transport>,
        progress: Arc<PeerProgress>,
    ) -> NetworkFactory {
        NetworkFactory {
            transport,
            progress,
        }
    }
}

/// The connection to one peer controller.
pub struct PeerConnection {
    target: u64,
    addr: String,
    transport: Arc<dyn Transport>,
    conn: Option<BoxedStream>,
    progress: Arc<PeerProgress>,
}

impl std::fmt::Debug for PeerConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PeerConnection")
            .field("target", &self.target)
            .field("addr", &self.addr)
            .field("connected", &self.conn.is_some())
            .finish()
    }
}

impl RaftNetworkFactory<TypeConfig> for NetworkFactory {
    type Network = PeerConnection;

    async fn new_client(&mut self, target: u64, node: &QuorumNode) -> PeerConnection {
        PeerConnection {
            target,
            addr: node.addr.clone(),
            transport: self.transport.clone(),
            conn: None,
            progress: self.progress.clone(),
        }
    }
}

/// Why one exchange failed.
enum CallError {
    /// Could not connect: back off.
    Unreachable(std::io::Error),
    /// Failed mid-exchange (or timed out): retry.
    Network(std::io::Error),
    /// The request does not fit in a frame.
    TooLarge(usize),
}

impl CallError {
    fn into_rpc<E: std::error::Error>(self) -> RPCError<u64, QuorumNode, E> {
        match self {
            CallError::Unreachable(e) => RPCError::Unreachable(Unreachable::new(&e)),
            CallError::Network(e) => RPCError::Network(NetworkError::new(&e)),
            CallError::TooLarge(n) => RPCError::Network(NetworkError::new(&std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("request of {n} bytes exceeds the {MAX_FRAME_BYTES}-byte frame limit"),
            ))),
        }
    }
}

fn unexpected() -> CallError {
    CallError::Network(std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        "unexpected response kind",
    ))
}

impl PeerConnection {
    async fn call(&mut self, req: &RpcRequest, ttl: Duration) -> Result<RpcResponse, CallError> {
        let frame = encode_frame(req).map_err(CallError::Network)?;
        if frame.len() > MAX_FRAME_BYTES + 4 {
            return Err(CallError::TooLarge(frame.len()));
        }
        let res = tokio::time::timeout(ttl, self.exchange(&frame)).await;
        let res = match res {
            Ok(r) => r,
            Err(_) => Err(CallError::Network(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("rpc to {} timed out after {ttl:?}", self.addr),
            ))),
        };
        if res.is_err() {
            self.conn = None;
        }
        res
    }

    async fn exchange(&mut self, frame: &[u8]) -> Result<RpcResponse, CallError> {
        if self.conn.is_none() {
            let s = self
                .transport
                .connect(&self.addr)
                .await
                .map_err(CallError::Unreachable)?;
            self.conn = Some(s);
        }
        let conn = self.conn.as_mut().expect("connected above");
        conn.write_all(frame).await.map_err(CallError::Network)?;
        conn.flush().await.map_err(CallError::Network)?;
        read_frame(conn).await.map_err(CallError::Network)
    }
}

impl RaftNetwork<TypeConfig> for PeerConnection {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<u64>, RPCError<u64, QuorumNode, RaftError<u64>>> {
        let entries = rpc.entries.len() as u64;
        let carried = rpc.entries.last().map(|e| e.log_id.index);
        let carried = carried.or(rpc.prev_log_id.as_ref().map(|l| l.index));
        let term = rpc.vote.leader_id().term;
        let (sent_ms, last_at_send) = (wall_clock_ms(), self.progress.last_log_index());
        let res = self
            .call(&RpcRequest::AppendEntries(rpc), option.hard_ttl())
            .await;
        if let Ok(RpcResponse::AppendEntries(Ok(AppendEntriesResponse::Success))) = &res {
            let now_ms = wall_clock_ms();
            let progress = &self.progress;
            progress.accepted(self.target, term, sent_ms, now_ms, carried, last_at_send);
        }
        match res {
            // Ask openraft to send fewer entries per request (one entry always fits: a controller
            // batch is bounded well below the frame limit).
            Err(CallError::TooLarge(_)) if entries > 1 => Err(RPCError::PayloadTooLarge(
                PayloadTooLarge::new_entries_hint(entries / 2),
            )),
            Ok(RpcResponse::AppendEntries(Ok(r))) => Ok(r),
            Ok(RpcResponse::AppendEntries(Err(e))) => {
                Err(RPCError::RemoteError(RemoteError::new(self.target, e)))
            }
            Ok(_) => Err(unexpected().into_rpc()),
            Err(e) => Err(e.into_rpc()),
        }
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<
        InstallSnapshotResponse<u64>,
        RPCError<u64, QuorumNode, RaftError<u64, InstallSnapshotError>>,
    > {
        match self
            .call(&RpcRequest::InstallSnapshot(rpc), option.hard_ttl())
            .await
        {
            Ok(RpcResponse::InstallSnapshot(Ok(r))) => Ok(r),
            Ok(RpcResponse::InstallSnapshot(Err(e))) => {
                Err(RPCError::RemoteError(RemoteError::new(self.target, e)))
            }
            Ok(_) => Err(unexpected().into_rpc()),
            Err(e) => Err(e.into_rpc()),
        }
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<u64>,
        option: RPCOption,
    ) -> Result<VoteResponse<u64>, RPCError<u64, QuorumNode, RaftError<u64>>> {
        match self.call(&RpcRequest::Vote(rpc), option.hard_ttl()).await {
            Ok(RpcResponse::Vote(Ok(r))) => Ok(r),
            Ok(RpcResponse::Vote(Err(e))) => {
                Err(RPCError::RemoteError(RemoteError::new(self.target, e)))
            }
            Ok(_) => Err(unexpected().into_rpc()),
            Err(e) => Err(e.into_rpc()),
        }
    }

    fn backoff(&self) -> Backoff {
        Backoff::new(std::iter::repeat(Duration::from_millis(200)))
    }
}
