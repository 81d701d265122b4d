//! [`ControllerServer`]: a running controller (openraft node + RPC listener).

use std::net::SocketAddr;

use crate::config::ControllerConfig;

/// A running controller: an openraft node plus its RPC listener.
pub struct ControllerServer {
    local_addr: SocketAddr,
}

impl ControllerServer {
    /// Starts the controller.
    pub async fn start(config: ControllerConfig) -> anyhow::Result<ControllerServer> {
        let _ = config.listen;
        anyhow::bail!("not yet")
    }

    /// The bound RPC address.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The current raft leader id, if known.
    pub fn leader_id(&self) -> Option<i32> {
        None
    }

    /// Stops the controller.
    pub async fn shutdown(self) -> anyhow::Result<()> {
        Ok(())
    }
}
