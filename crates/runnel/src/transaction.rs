//! `runnel transaction list|describe|abort` (KIP-664, what `kafka-transactions.sh` does) with our own codec.
//!
//! - `list` asks every broker (ListTransactions: each answers for the transactional ids it coordinates) and
//!   merges the answers.
//! - `describe` finds the transactional id's coordinator (FindCoordinator, key type 1) and asks it
//!   (DescribeTransactions).
//! - `abort --topic T --partition P --start-offset O` ends a hanging transaction: DescribeProducers on the
//!   partition's leader finds the producer whose open transaction starts at O, then WriteTxnMarkers writes its
//!   ABORT marker there (with that producer's epoch and coordinator epoch), as `kafka-transactions.sh abort`.
//!   The caller needs CLUSTER_ACTION.

use anyhow::{anyhow, bail};
use clap::Subcommand;
use protocol::messages::describe_producers_request::TopicRequest;
use protocol::messages::metadata_request::MetadataRequestTopic;
use protocol::messages::write_txn_markers_request::{WritableTxnMarker, WritableTxnMarkerTopic};
use protocol::messages::{
    DescribeProducersRequest, DescribeTransactionsRequest, FindCoordinatorRequest,
    ListTransactionsRequest, MetadataRequest, MetadataResponse, WriteTxnMarkersRequest,
};
use serde_json::json;

use crate::client::{check, print_json, print_table, protocol_words, ConnArgs};
use crate::wire::{call_api, Wire};

/// `runnel transaction ...`
#[derive(clap::Args, Debug)]
pub struct TransactionArgs {
    #[command(flatten)]
    conn: ConnArgs,
    #[command(subcommand)]
    command: TransactionCommand,
}

#[derive(Subcommand, Debug)]
enum TransactionCommand {
    /// Transactional ids of every broker with their producer id and state.
    List {
        /// Only these states (Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort,
        /// PrepareEpochFence); repeatable.
        #[arg(long)]
        state: Vec<String>,
        /// Only these producer ids; repeatable.
        #[arg(long)]
        producer_id: Vec<i64>,
        /// Only transactions open longer than this many ms.
        #[arg(long, value_name = "MS")]
        duration_ms: Option<i64>,
    },
    /// A transactional id's state, producer, timeout, start time and partitions.
    Describe {
        /// The transactional id.
        transactional_id: String,
    },
    /// Abort the open (hanging) transaction that starts at an offset of a partition.
    Abort {
        /// The topic.
        #[arg(long, short = 't')]
        topic: String,
        /// The partition.
        #[arg(long, short = 'p')]
        partition: i32,
        /// The first offset of the transaction (see `describe-producers` in Kafka's tool).
        #[arg(long)]
        start_offset: i64,
    },
}

/// Runs a `transaction` subcommand.
pub fn run(args: TransactionArgs) -> anyhow::Result<()> {
    let conn = &args.conn;
    conn.preflight()?;
    match args.command {
        TransactionCommand::List {
            state,
            producer_id,
            duration_ms,
        } => list(conn, state, producer_id, duration_ms),
        TransactionCommand::Describe { transactional_id } => describe(conn, &transactional_id),
        TransactionCommand::Abort {
            topic,
            partition,
            start_offset,
        } => abort(conn, &topic, partition, start_offset),
    }
}

fn metadata(wire: &mut Wire, topic: Option<&str>) -> anyhow::Result<MetadataResponse> {
    let request = MetadataRequest {
        topics: Some(
            topic
                .map(|t| MetadataRequestTopic {
                    name: Some(t.to_string()),
                    ..Default::default()
                })
                .into_iter()
                .collect(),
        ),
        allow_auto_topic_creation: false,
        ..Default::default()
    };
    Ok(call_api!(wire, Metadata, request, 12))
}

/// `host:port` of broker `id` in `md`.
fn broker_addr(md: &MetadataResponse, id: i32) -> anyhow::Result<String> {
    md.brokers
        .iter()
        .find(|b| b.node_id == id)
        .map(|b| format!("{}:{}", b.host, b.port))
        .ok_or_else(|| anyhow!("broker {id} is not in the metadata"))
}

fn list(
    conn: &ConnArgs,
    states: Vec<String>,
    producer_ids: Vec<i64>,
    duration_ms: Option<i64>,
) -> anyhow::Result<()> {
    let mut wire = Wire::connect_any(conn)?;
    let md = metadata(&mut wire, None)?;
    let mut rows = Vec::new();
    for b in &md.brokers {
        let addr = format!("{}:{}", b.host, b.port);
        let mut w =
            Wire::connect(&addr, conn).map_err(|e| anyhow!("broker {}: {e:#}", b.node_id))?;
        let request = ListTransactionsRequest {
            state_filters: states.clone(),
            producer_id_filters: producer_ids.clone(),
            duration_filter: duration_ms.unwrap_or(-1),
            ..Default::default()
        };
        let resp = call_api!(w, ListTransactions, request, 1);
        check(
            resp.error_code,
            None,
            format!("listing broker {}'s transactions", b.node_id),
        )?;
        for s in &resp.unknown_state_filters {
            eprintln!("unknown state: {s}");
        }
        for t in resp.transaction_states {
            rows.push((
                t.transactional_id,
                t.producer_id,
                t.transaction_state,
                b.node_id,
            ));
        }
    }
    rows.sort();
    if conn.json {
        let v: Vec<_> = rows
            .iter()
            .map(|(id, pid, state, c)| {
                json!({"transactional_id": id, "producer_id": pid, "state": state, "coordinator": c})
            })
            .collect();
        print_json(&json!(v));
    } else {
        let rows: Vec<Vec<String>> = rows
            .into_iter()
            .map(|(id, pid, state, c)| vec![id, pid.to_string(), state, c.to_string()])
            .collect();
        print_table(
            &["TRANSACTIONAL_ID", "PRODUCER_ID", "STATE", "COORDINATOR"],
            &rows,
        );
    }
    Ok(())
}

/// A connection to `transactional_id`'s coordinator (retrying while it loads or moves).
fn coordinator(conn: &ConnArgs, transactional_id: &str) -> anyhow::Result<Wire> {
    let deadline = std::time::Instant::now() + conn.timeout();
    loop {
        let mut wire = Wire::connect_any(conn)?;
        let request = FindCoordinatorRequest {
            key: transactional_id.to_string(),
            key_type: 1,
            ..Default::default()
        };
        let fc = call_api!(wire, FindCoordinator, request, 3);
        if fc.error_code == 0 {
            let addr = format!("{}:{}", fc.host, fc.port);
            return Wire::connect(&addr, conn);
        }
        // COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR: retriable.
        if !matches!(fc.error_code, 14..=16) || std::time::Instant::now() >= deadline {
            bail!(
                "finding the coordinator of '{transactional_id}': {}",
                protocol_words(fc.error_code, fc.error_message.as_deref())
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

fn describe(conn: &ConnArgs, transactional_id: &str) -> anyhow::Result<()> {
    let mut wire = coordinator(conn, transactional_id)?;
    let request = DescribeTransactionsRequest {
        transactional_ids: vec![transactional_id.to_string()],
        ..Default::default()
    };
    let resp = call_api!(wire, DescribeTransactions, request, 0);
    let Some(t) = resp.transaction_states.into_iter().next() else {
        bail!("no answer for '{transactional_id}'");
    };
    check(
        t.error_code,
        None,
        format!("describing '{transactional_id}'"),
    )?;
    let partitions: Vec<String> = t
        .topics
        .iter()
        .flat_map(|tp| {
            tp.partitions
                .iter()
                .map(move |p| format!("{}-{p}", tp.topic))
        })
        .collect();
    if conn.json {
        print_json(&json!({
            "transactional_id": t.transactional_id, "state": t.transaction_state,
            "producer_id": t.producer_id, "producer_epoch": t.producer_epoch,
            "timeout_ms": t.transaction_timeout_ms, "start_time_ms": t.transaction_start_time_ms,
            "partitions": partitions,
        }));
    } else {
        let row = vec![
            t.transactional_id,
            t.transaction_state,
            t.producer_id.to_string(),
            t.producer_epoch.to_string(),
            t.transaction_timeout_ms.to_string(),
            t.transaction_start_time_ms.to_string(),
            partitions.join(","),
        ];
        let headers = [
            "TRANSACTIONAL_ID",
            "STATE",
            "PRODUCER_ID",
            "EPOCH",
            "TIMEOUT_MS",
            "START_MS",
        ];
        print_table(&[&headers[..], &["PARTITIONS"]].concat(), &[row]);
    }
    Ok(())
}

fn abort(conn: &ConnArgs, topic: &str, partition: i32, start_offset: i64) -> anyhow::Result<()> {
    let mut wire = Wire::connect_any(conn)?;
    let md = metadata(&mut wire, Some(topic))?;
    let mt = md
        .topics
        .first()
        .ok_or_else(|| anyhow!("topic '{topic}': no metadata"))?;
    check(mt.error_code, None, format!("topic '{topic}'"))?;
    let leader = mt
        .partitions
        .iter()
        .find(|p| p.partition_index == partition)
        .map(|p| p.leader_id)
        .ok_or_else(|| anyhow!("{topic}-{partition} does not exist"))?;
    let mut w = Wire::connect(&broker_addr(&md, leader)?, conn)?;
    let request = DescribeProducersRequest {
        topics: vec![TopicRequest {
            name: topic.to_string(),
            partition_indexes: vec![partition],
            ..Default::default()
        }],
        ..Default::default()
    };
    let resp = call_api!(w, DescribeProducers, request, 0);
    let p = resp
        .topics
        .into_iter()
        .flat_map(|t| t.partitions)
        .next()
        .ok_or_else(|| anyhow!("no answer for {topic}-{partition}"))?;
    check(
        p.error_code,
        p.error_message.as_deref(),
        format!("describing the producers of {topic}-{partition}"),
    )?;
    let producer = p
        .active_producers
        .into_iter()
        .find(|a| a.current_txn_start_offset == start_offset)
        .ok_or_else(|| {
            anyhow!("no open transaction of {topic}-{partition} starts at offset {start_offset}")
        })?;
    let request = WriteTxnMarkersRequest {
        markers: vec![WritableTxnMarker {
            producer_id: producer.producer_id,
            producer_epoch: i16::try_from(producer.producer_epoch).unwrap_or(i16::MAX),
            transaction_result: false,
            topics: vec![WritableTxnMarkerTopic {
                name: topic.to_string(),
                partition_indexes: vec![partition],
                ..Default::default()
            }],
            coordinator_epoch: producer.coordinator_epoch,
            ..Default::default()
        }],
        ..Default::default()
    };
    let resp = call_api!(w, WriteTxnMarkers, request, 1);
    for r in resp
        .markers
        .iter()
        .flat_map(|m| &m.topics)
        .flat_map(|t| &t.partitions)
    {
        check(
            r.error_code,
            None,
            format!("aborting the transaction of {topic}-{partition}"),
        )?;
    }
    if conn.json {
        print_json(
            &json!({"topic": topic, "partition": partition, "producer_id": producer.producer_id,
                           "aborted_start_offset": start_offset}),
        );
    } else {
        println!(
            "aborted producer {}'s transaction on {topic}-{partition} (started at offset {start_offset})",
            producer.producer_id
        );
    }
    Ok(())
}
