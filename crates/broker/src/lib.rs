//! The Runnel broker: configuration, the socket layer, request handlers, and the ReplicaManager that ties
//! them to the storage layer. [`Server::start`] (in [`lifecycle`], the one composition root) brings a broker
//! up; [`Server::shutdown`] takes it down cleanly (stop accepting, flush and close every log, write the
//! clean-shutdown marker).

#![warn(missing_docs)]

pub mod acls;
pub mod client_metrics;
pub mod cluster;
pub mod cluster_admin;
pub mod cluster_reports;
pub mod config;
pub mod config_admin;
pub mod dynamic_config;
pub mod error;
pub mod features;
pub mod fetch_session;
pub mod group_configs;
pub mod group_coordinator;
pub mod lifecycle;
pub mod log_dir_failure;
pub mod log_dirs;
pub mod metadata;
pub mod metadata_cache;
pub mod observability;
pub mod publisher;
pub mod quorum;
pub mod quota;
pub mod reconfigurable;
pub mod registry_log;
#[cfg(test)]
mod replication_tests;
pub mod scram;
pub mod security;
pub mod server;
pub mod share;
pub mod share_coordinator;
#[cfg(test)]
mod sim;
pub mod topic_admin;
pub mod topic_config;
pub mod topics;
pub mod txn_coordinator;
pub mod txn_markers;

pub use lifecycle::Server;
