//! Controller configuration.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;

use types::BrokerId;

/// Configuration of one controller (Kafka `process.roles=controller` settings, KIP-595/KIP-631).
#[derive(Clone, Debug)]
pub struct ControllerConfig {
    /// This controller's id (`node.id`, the id space brokers share); must be a key of `voters` when
    /// `voters` is not empty.
    pub node_id: BrokerId,
    /// Static voters (`controller.quorum.voters`: `id@host:port,...`), see [`parse_voters`]: the membership
    /// an empty metadata log starts with. Empty for a controller that joins through `bootstrap_servers`.
    pub voters: BTreeMap<BrokerId, SocketAddr>,
    /// `controller.quorum.bootstrap.servers` (KIP-853, `host:port,...`): with `voters` empty, the
    /// controllers this one asks to replicate the metadata log to it as a learner until the membership it
    /// holds names it ([`crate::voter_changes`]); it becomes a voter through AddRaftVoter.
    pub bootstrap_servers: Vec<String>,
    /// Address the controller RPC listener binds (port 0 picks a free port).
    pub listen: SocketAddr,
    /// Data directory; the raft log, vote and snapshots live under `data_dir/__cluster_metadata-0/`.
    pub data_dir: PathBuf,
    /// The cluster id, carried into [`crate::MetadataImage::cluster_id`].
    pub cluster_id: String,
    /// `broker.session.timeout.ms` (Kafka default 9000): a broker silent this long is fenced.
    pub broker_session_timeout_ms: i64,
    /// `num.partitions`: partitions of a topic created with `num_partitions = -1`.
    pub default_num_partitions: i32,
    /// `default.replication.factor`: replication factor of a topic created with -1.
    pub default_replication_factor: i16,
    /// `unclean.leader.election.enable`: elect an out-of-sync replica when no ISR member is usable.
    pub unclean_leader_election: bool,
    /// `auto.leader.rebalance.enable` (default true): move leaderships back to preferred replicas.
    pub auto_leader_rebalance: bool,
    /// `leader.imbalance.check.interval.seconds` in ms (default 300,000): how often that runs.
    pub leader_imbalance_check_interval_ms: i64,
    /// The `auto.balance.*` keys: automatic balancing (see [`crate::control::BalancerConfig`]).
    pub balancer: crate::control::BalancerConfig,
}

/// Parses `controller.quorum.voters` (`id@host:port,id@host:port`); hosts must resolve (names are
/// resolved with the system resolver, first address wins).
///
/// Errors: an empty list, a malformed entry, a negative or duplicate id, or an unresolvable address.
pub fn parse_voters(s: &str) -> anyhow::Result<BTreeMap<BrokerId, SocketAddr>> {
    use std::net::ToSocketAddrs;
    let mut out = BTreeMap::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (id, addr) = part
            .split_once('@')
            .ok_or_else(|| anyhow::anyhow!("voter {part:?} is not id@host:port"))?;
        let id: i32 = id
            .trim()
            .parse()
            .map_err(|_| anyhow::anyhow!("voter id in {part:?} is not a number"))?;
        anyhow::ensure!(id >= 0, "voter id {id} is negative");
        let addr = addr
            .trim()
            .to_socket_addrs()
            .map_err(|e| anyhow::anyhow!("voter address in {part:?}: {e}"))?
            .next()
            .ok_or_else(|| anyhow::anyhow!("voter address in {part:?} resolves to nothing"))?;
        anyhow::ensure!(
            out.insert(BrokerId(id), addr).is_none(),
            "duplicate voter id {id}"
        );
    }
    anyhow::ensure!(!out.is_empty(), "controller.quorum.voters is empty");
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_voters() {
        let v = parse_voters("1@127.0.0.1:9093, 2@127.0.0.1:9094").unwrap();
        assert_eq!(v.len(), 2);
        assert_eq!(v[&BrokerId(2)].port(), 9094);
        assert!(parse_voters("").is_err());
        assert!(parse_voters("x@127.0.0.1:1").is_err());
        assert!(parse_voters("1@127.0.0.1:1,1@127.0.0.1:2").is_err());
        assert!(parse_voters("1-127.0.0.1:1").is_err());
    }
}
