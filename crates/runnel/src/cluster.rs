//! `runnel cluster info`: cluster id, controller, brokers and under-replicated partitions (Metadata v12 for all
//! topics) and the
//! API versions of the broker answering (ApiVersions), both with our own codec: librdkafka exposes
//! neither the controller id nor the broker's version ranges.

use anyhow::bail;
use clap::Subcommand;
use protocol::messages::elect_leaders_request::TopicPartitions as ElectLeadersTopicPartitions;
use protocol::messages::metadata_request::MetadataRequestTopic;
use protocol::messages::{
    DescribeClusterRequest, ElectLeadersRequest, MetadataRequest, MetadataResponse,
};
use protocol::{ApiKey, RequestBody, ResponseBody};
use serde_json::json;

use crate::client::{check, print_json, print_table, protocol_words, ConnArgs};
use crate::wire::{call_api, Wire};

/// `runnel cluster ...`
#[derive(clap::Args, Debug)]
pub struct ClusterArgs {
    #[command(flatten)]
    conn: ConnArgs,
    #[command(subcommand)]
    command: ClusterCommand,
}

#[derive(Subcommand, Debug)]
enum ClusterCommand {
    /// Cluster id, controller, brokers and the API versions the broker supports.
    Info,
    /// Move leaderships back to preferred replicas (ElectLeaders, KIP-460), or with --unclean give
    /// leaderless partitions a leader from outside the ISR. Without --topic: every partition.
    ElectLeaders {
        /// Only this topic's partitions.
        #[arg(long, short = 't')]
        topic: Option<String>,
        /// Only these partitions of --topic (repeatable).
        #[arg(long, short = 'p', requires = "topic")]
        partition: Vec<i32>,
        /// Unclean election: may lose records only the old ISR had.
        #[arg(long)]
        unclean: bool,
    },
    /// Move every replica off broker N through partition reassignment (keeping each partition's
    /// replication factor, rack-aware), wait until the moves complete, then unregister N.
    Decommission {
        /// The broker id to drain.
        broker: i32,
        /// Give up waiting for the moves after this many seconds (they continue in the cluster).
        #[arg(long, default_value_t = 3600)]
        wait_secs: u64,
    },
    /// The partition reassignments in progress.
    Reassignments,
    /// Automatic balancing (`auto.balance.*`).
    Balance {
        #[command(subcommand)]
        command: BalanceCommand,
    },
}

#[derive(Subcommand, Debug)]
enum BalanceCommand {
    /// Replicas, preferred and actual leaderships and bytes per broker, the moves in progress and the
    /// balancing settings.
    Status,
}

/// Runs a `cluster` subcommand.
pub fn run(args: ClusterArgs) -> anyhow::Result<()> {
    match args.command {
        ClusterCommand::Info => info(&args.conn),
        ClusterCommand::ElectLeaders {
            topic,
            partition,
            unclean,
        } => elect_leaders(&args.conn, topic, partition, unclean),
        ClusterCommand::Decommission { broker, wait_secs } => crate::decommission::decommission(
            &args.conn,
            broker,
            std::time::Duration::from_secs(wait_secs),
        ),
        ClusterCommand::Reassignments => crate::decommission::list(&args.conn),
        ClusterCommand::Balance {
            command: BalanceCommand::Status,
        } => crate::balance::status(&args.conn),
    }
}

/// `cluster elect-leaders`: one line per partition elected or failed (partitions that needed no election
/// are listed only when named). Fails (exit 1) when any partition failed other than ELECTION_NOT_NEEDED.
fn elect_leaders(
    conn: &ConnArgs,
    topic: Option<String>,
    partitions: Vec<i32>,
    unclean: bool,
) -> anyhow::Result<()> {
    conn.preflight()?;
    let mut wire = Wire::connect_any(conn)?;
    let topic_partitions = match topic {
        None => None,
        Some(t) => {
            let partitions = if partitions.is_empty() {
                // Every partition of the topic, from Metadata.
                let md = metadata(
                    &mut wire,
                    Some(vec![MetadataRequestTopic {
                        name: Some(t.clone()),
                        ..Default::default()
                    }]),
                )?;
                let Some(mt) = md.topics.first() else {
                    bail!("topic '{t}': no metadata");
                };
                if mt.error_code != 0 {
                    bail!("topic '{t}': {}", protocol_words(mt.error_code, None));
                }
                mt.partitions.iter().map(|p| p.partition_index).collect()
            } else {
                partitions
            };
            Some(vec![ElectLeadersTopicPartitions {
                topic: t,
                partitions,
                ..Default::default()
            }])
        }
    };
    let request = ElectLeadersRequest {
        election_type: i8::from(unclean),
        topic_partitions,
        timeout_ms: conn.timeout().as_millis().min(i32::MAX as u128) as i32,
        ..Default::default()
    };
    let r = call_api!(wire, ElectLeaders, request, 2);
    check(r.error_code, None, "ElectLeaders failed")?;
    let mut rows = Vec::new();
    let mut failed = Vec::new();
    for t in &r.replica_election_results {
        for p in &t.partition_result {
            let outcome = match p.error_code {
                0 => "elected".to_string(),
                84 => "not needed".to_string(),
                code => {
                    let words = protocol_words(code, p.error_message.as_deref());
                    failed.push(format!("{}-{}: {words}", t.topic, p.partition_id));
                    words
                }
            };
            rows.push((t.topic.clone(), p.partition_id, p.error_code, outcome));
        }
    }
    rows.sort();
    if conn.json {
        print_json(&json!(rows
            .iter()
            .map(|(t, p, code, o)| json!({"topic": t, "partition": p, "error_code": code, "result": o}))
            .collect::<Vec<_>>()));
    } else if rows.is_empty() {
        println!("No partition needed an election.");
    } else {
        let table: Vec<Vec<String>> = rows
            .iter()
            .map(|(t, p, _, o)| vec![t.clone(), p.to_string(), o.clone()])
            .collect();
        print_table(&["TOPIC", "PARTITION", "RESULT"], &table);
    }
    if !failed.is_empty() {
        failed.sort();
        bail!(
            "no leader elected for {} partition(s): {}",
            failed.len(),
            failed.join("; ")
        );
    }
    Ok(())
}

/// Metadata v12 for `topics` (`None`: all), never creating topics.
fn metadata(
    wire: &mut Wire,
    topics: Option<Vec<MetadataRequestTopic>>,
) -> anyhow::Result<MetadataResponse> {
    let request = MetadataRequest {
        topics,
        allow_auto_topic_creation: false,
        ..Default::default()
    };
    Ok(call_api!(wire, Metadata, request, 12))
}

fn info(conn: &ConnArgs) -> anyhow::Result<()> {
    conn.preflight()?;
    let mut wire = Wire::connect_any(conn)?;
    let md = metadata(&mut wire, None)?;
    // The active controller: KIP-919's DescribeCluster for controller endpoints where the broker serves it
    // (a Runnel cluster member), else Metadata's controller id (Kafka brokers name a live broker there).
    let controller_id = match wire.call(
        RequestBody::DescribeCluster(DescribeClusterRequest {
            endpoint_type: 2,
            ..Default::default()
        }),
        1,
    ) {
        Ok((_, ResponseBody::DescribeCluster(d))) if d.error_code == 0 => d.controller_id,
        _ => md.controller_id,
    };
    let mut brokers: Vec<_> = md.brokers.iter().collect();
    brokers.sort_by_key(|b| b.node_id);
    let apis: Vec<(i16, String, i16, i16)> = wire
        .versions
        .iter()
        .map(|(k, (lo, hi))| {
            let name = ApiKey::from_i16(*k)
                .map(|a| a.name().to_string())
                .unwrap_or_else(|| format!("Unknown({k})"));
            (*k, name, *lo, *hi)
        })
        .collect();
    let cluster_id = md.cluster_id.clone().unwrap_or_default();
    // Under-replicated: fewer in-sync replicas than replicas (Kafka's UnderReplicatedPartitions);
    // offline: no leader.
    let mut under_replicated = Vec::new();
    for t in &md.topics {
        let name = t.name.clone().unwrap_or_default();
        for p in &t.partitions {
            if p.isr_nodes.len() < p.replica_nodes.len() || p.leader_id < 0 {
                under_replicated.push((
                    name.clone(),
                    p.partition_index,
                    p.leader_id,
                    p.replica_nodes.clone(),
                    p.isr_nodes.clone(),
                ));
            }
        }
    }
    under_replicated.sort();
    if conn.json {
        let bs: Vec<_> = brokers
            .iter()
            .map(|b| json!({"id": b.node_id, "host": b.host, "port": b.port, "rack": b.rack}))
            .collect();
        let av: Vec<_> = apis
            .iter()
            .map(|(k, n, lo, hi)| json!({"api_key": k, "name": n, "min_version": lo, "max_version": hi}))
            .collect();
        print_json(&json!({
            "cluster_id": md.cluster_id,
            "controller_id": controller_id,
            "brokers": bs,
            "under_replicated_partitions": under_replicated
                .iter()
                .map(|(t, p, l, r, i)| json!({"topic": t, "partition": p, "leader": l, "replicas": r, "isr": i}))
                .collect::<Vec<_>>(),
            "api_versions_of": wire.addr(),
            "api_versions": av,
        }));
    } else {
        println!(
            "Cluster ID: {}",
            if cluster_id.is_empty() {
                "-"
            } else {
                &cluster_id
            }
        );
        println!("Controller: {controller_id}");
        println!();
        let rows: Vec<Vec<String>> = brokers
            .iter()
            .map(|b| {
                vec![
                    b.node_id.to_string(),
                    b.host.clone(),
                    b.port.to_string(),
                    b.rack.clone().unwrap_or_else(|| "-".into()),
                ]
            })
            .collect();
        print_table(&["BROKER", "HOST", "PORT", "RACK"], &rows);
        println!();
        if under_replicated.is_empty() {
            println!("Under-replicated partitions: none");
        } else {
            println!("Under-replicated partitions: {}", under_replicated.len());
            let rows: Vec<Vec<String>> = under_replicated
                .iter()
                .map(|(t, p, l, r, i)| {
                    let list = |v: &[i32]| {
                        v.iter()
                            .map(|x| x.to_string())
                            .collect::<Vec<_>>()
                            .join(",")
                    };
                    vec![t.clone(), p.to_string(), l.to_string(), list(r), list(i)]
                })
                .collect();
            print_table(&["TOPIC", "PARTITION", "LEADER", "REPLICAS", "ISR"], &rows);
        }
        println!();
        println!("API versions of {}:", wire.addr());
        let rows: Vec<Vec<String>> = apis
            .iter()
            .map(|(k, n, lo, hi)| vec![k.to_string(), n.clone(), format!("{lo}-{hi}")])
            .collect();
        print_table(&["KEY", "API", "VERSIONS"], &rows);
    }
    Ok(())
}
