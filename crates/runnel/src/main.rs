//! The `runnel` binary: `runnel server` runs a Kafka-protocol broker; `topic`, `produce`,
//! `consume`, `group`, `share-group`, `cluster`, `acl`, `user` and `quota` are operator commands for any Kafka-protocol broker.

mod acl;
mod balance;
mod bench;
mod bench_sink;
mod client;
mod cluster;
mod consume;
mod decommission;
mod group;
mod produce;
mod quota;
mod security;
mod share_consume;
mod share_group;
mod topic;
mod transaction;
mod user;
mod wire;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use broker::config::{parse_override, parse_properties, BrokerConfig};
use clap::{Parser, Subcommand};

/// Runnel: a persistent, replicated commit-log broker that speaks the Apache Kafka protocol.
#[derive(Parser, Debug)]
#[command(name = "runnel", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Log lines as text, or as one JSON object per line (fields flattened, with the request each event
    /// happened in: API, version, correlation id, client id, principal, listener and peer).
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
}

/// The format of the log on stderr (`--log-format`).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum LogFormat {
    /// Human-readable lines (colored on a terminal).
    Text,
    /// One JSON object per line: `timestamp`, `level`, `target`, the event's fields, `span` (the current
    /// request's context, if any).
    Json,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a broker (by default on 127.0.0.1:9092 with data in ./runnel-data).
    Server(ServerArgs),
    /// Create, list, describe, delete and reconfigure topics.
    Topic(topic::TopicArgs),
    /// Produce records read from stdin, one per line.
    Produce(produce::ProduceArgs),
    /// Print records to stdout.
    Consume(consume::ConsumeArgs),
    /// List, describe (lag), reset and delete consumer groups.
    Group(group::GroupArgs),
    /// List, describe (start offsets, lag) and reset share groups (KIP-932).
    ShareGroup(share_group::ShareGroupArgs),
    /// Cluster id, brokers, controller and API versions.
    Cluster(cluster::ClusterArgs),
    /// Load generator: produce, consume and end-to-end throughput and latency.
    Bench(bench::BenchArgs),
    /// Create, list and delete ACLs (the StandardAuthorizer's).
    Acl(acl::AclArgs),
    /// SCRAM credentials of SASL users.
    User(user::UserArgs),
    /// Client quotas per user and/or client id.
    Quota(quota::QuotaArgs),
    /// List, describe and abort transactions.
    Transaction(transaction::TransactionArgs),
}

#[derive(clap::Args, Debug)]
struct ServerArgs {
    /// A Kafka-style `.properties` file (keys as Kafka's: log.dirs, listeners, num.partitions, ...).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Address to listen on (the `listeners` key), e.g. 127.0.0.1:9092.
    #[arg(long, value_name = "HOST:PORT")]
    listen: Option<String>,
    /// Address this process's controller (metadata quorum voter) binds: a `CONTROLLER://HOST:PORT` entry
    /// added to `listeners`. Must match this node's entry in `controller.quorum.voters`.
    #[arg(long, value_name = "HOST:PORT")]
    controller_listen: Option<String>,
    /// Address clients are told to connect to (the `advertised.listeners` key).
    #[arg(long, value_name = "HOST:PORT")]
    advertised_listener: Option<String>,
    /// Data directory (the `log.dirs` key).
    #[arg(long, value_name = "DIR")]
    data_dir: Option<PathBuf>,
    /// Node id (the `node.id` key).
    #[arg(long, value_name = "N")]
    node_id: Option<i32>,
    /// Override any config key; may be repeated.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
}

impl ServerArgs {
    /// Merges the file, the dedicated flags and `--set` overrides, in that order (later wins).
    fn config(&self) -> anyhow::Result<BrokerConfig> {
        let mut pairs = Vec::new();
        if let Some(path) = &self.config {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading config file {}", path.display()))?;
            pairs
                .extend(parse_properties(&text).with_context(|| format!("in {}", path.display()))?);
        }
        if let Some(l) = &self.listen {
            pairs.push(("listeners".into(), l.clone()));
        }
        if let Some(l) = &self.advertised_listener {
            pairs.push(("advertised.listeners".into(), l.clone()));
        }
        if let Some(d) = &self.data_dir {
            pairs.push(("log.dirs".into(), d.display().to_string()));
        }
        if let Some(n) = self.node_id {
            pairs.push(("node.id".into(), n.to_string()));
        }
        for s in &self.set {
            pairs.push(parse_override(s).with_context(|| format!("--set {s}"))?);
        }
        if let Some(c) = &self.controller_listen {
            let listeners = pairs
                .iter()
                .rev()
                .find(|(k, _)| k == "listeners")
                .map(|(_, v)| v.clone())
                .unwrap_or_else(|| "PLAINTEXT://127.0.0.1:9092".into());
            pairs.push(("listeners".into(), format!("{listeners},CONTROLLER://{c}")));
        }
        Ok(BrokerConfig::from_pairs(&pairs)?)
    }
}

/// Logs to stderr in `format`, filtered by `RUNNEL_LOG` (an `EnvFilter`) or else `default_level`; JSON also
/// enables the per-request span ([`broker::server::apis::REQUEST_SPAN_TARGET`]) unless `RUNNEL_LOG` is set.
fn init_logging(format: LogFormat, default_level: &str) {
    use tracing_subscriber::EnvFilter;
    let builder = tracing_subscriber::fmt().with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder
            .with_env_filter(
                EnvFilter::try_from_env("RUNNEL_LOG")
                    .unwrap_or_else(|_| EnvFilter::new(default_level)),
            )
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .init(),
        LogFormat::Json => {
            let with_requests = format!(
                "{default_level},{}=debug",
                broker::server::apis::REQUEST_SPAN_TARGET
            );
            builder
                .with_env_filter(
                    EnvFilter::try_from_env("RUNNEL_LOG")
                        .unwrap_or_else(|_| EnvFilter::new(with_requests)),
                )
                .json()
                .flatten_event(true)
                .with_current_span(true)
                .with_span_list(false)
                .init()
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // The operator commands speak through their output; only the server logs at info by default.
    // openraft reports every failed RPC to a down voter (every 200 ms) at warn/error: off by default
    // (`RUNNEL_LOG=info,openraft=info` shows it); the controller logs its own leadership changes.
    let default_level = match cli.command {
        Command::Server(_) => "info,openraft=off",
        _ => "warn,rdkafka=off",
    };
    init_logging(cli.log_format, default_level);
    let result = match cli.command {
        Command::Server(args) => run_server(args),
        Command::Topic(args) => topic::run(args),
        Command::Produce(args) => produce::run(args),
        Command::Consume(args) => consume::run(args),
        Command::Group(args) => group::run(args),
        Command::ShareGroup(args) => share_group::run(args),
        Command::Transaction(args) => transaction::run(args),
        Command::Cluster(args) => cluster::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Acl(args) => acl::run(args),
        Command::User(args) => user::run(args),
        Command::Quota(args) => quota::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("runnel: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run_server(args: ServerArgs) -> anyhow::Result<()> {
    let config = args.config()?;
    raise_open_file_limit();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(worker_threads(&config))
        .enable_all()
        .thread_name("runnel")
        .build()?;
    runtime.block_on(async move {
        let server = broker::Server::start(config).await?;
        let mut sigterm =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::select! {
            _ = tokio::signal::ctrl_c() => tracing::info!("SIGINT received, shutting down"),
            _ = sigterm.recv() => tracing::info!("SIGTERM received, shutting down"),
        }
        server.shutdown().await
    })
}

/// The runtime's worker threads: `TOKIO_WORKER_THREADS` when set, else `num.io.threads` (Kafka's request
/// handler threads, default 8), at least 1. More workers than cores on purpose: a handler's page-cache write
/// (`pwrite` of a MiB-sized batch) or a wait for a partition's lock can hold its thread for milliseconds —
/// tens of them when the kernel throttles dirty pages or the cores are contended (`perf trace` showed 20–124
/// ms `pwrite64` calls on the workers) — and with one worker per core every other connection waited behind
/// it (issue 18: the 1 KiB × 8 partitions end-to-end p99).
fn worker_threads(config: &broker::config::BrokerConfig) -> usize {
    let from_env = std::env::var("TOKIO_WORKER_THREADS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok());
    let configured = config.get(broker::config::keys::NUM_IO_THREADS);
    from_env.unwrap_or(configured.max(1) as usize).max(1)
}

/// Raises the soft open-file limit (RLIMIT_NOFILE) to the hard limit, as servers holding a file per
/// log segment must (the soft default is often 1,024); the partition budget follows from it
/// (`broker::topics::partition_budget`). Failure leaves the limit as it was.
fn raise_open_file_limit() {
    // SAFETY: getrlimit/setrlimit read and write only the struct we pass.
    unsafe {
        let mut rl: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) == 0 && rl.rlim_cur < rl.rlim_max {
            rl.rlim_cur = rl.rlim_max;
            let _ = libc::setrlimit(libc::RLIMIT_NOFILE, &rl);
        }
    }
}
