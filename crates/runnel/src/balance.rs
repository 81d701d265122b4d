//! `runnel cluster balance status`: how evenly replicas, leaderships and bytes are spread over the brokers,
//! the moves in progress and the automatic balancing settings — what the active controller's balancing
//! step (Runnel's `auto.balance.*`) works from, read with our own codec from Metadata v12,
//! ListPartitionReassignments, DescribeConfigs and each broker's DescribeLogDirs.

use std::collections::BTreeMap;

use protocol::messages::describe_configs_request::DescribeConfigsResource;
use protocol::messages::{DescribeConfigsRequest, DescribeLogDirsRequest, MetadataRequest};
use serde_json::json;

use crate::client::{print_json, print_table, ConnArgs};
use crate::wire::{call_api, Wire};

/// The balancing settings shown, in order.
const KEYS: &[&str] = &[
    "auto.balance.enable",
    "auto.balance.check.interval.ms",
    "auto.balance.max.concurrent.moves",
    "auto.balance.max.spread.percent",
    "auto.balance.dead.broker.delay.ms",
];

/// One broker's row.
#[derive(Debug, Default)]
struct Row {
    rack: Option<String>,
    addr: String,
    replicas: usize,
    preferred: usize,
    leaders: usize,
    /// Bytes of its replicas from its DescribeLogDirs; `None` when it did not answer.
    bytes: Option<i64>,
    cordoned: bool,
}

/// `cluster balance status`.
pub fn status(conn: &ConnArgs) -> anyhow::Result<()> {
    conn.preflight()?;
    let mut wire = Wire::connect_any(conn)?;
    let md = call_api!(
        wire,
        Metadata,
        MetadataRequest {
            topics: None,
            allow_auto_topic_creation: false,
            ..Default::default()
        },
        12
    );
    let mut rows: BTreeMap<i32, Row> = (md.brokers.iter())
        .map(|b| {
            let row = Row {
                rack: b.rack.clone(),
                addr: format!("{}:{}", b.host, b.port),
                ..Row::default()
            };
            (b.node_id, row)
        })
        .collect();
    for p in md.topics.iter().flat_map(|t| &t.partitions) {
        for (i, r) in p.replica_nodes.iter().enumerate() {
            let row = rows.entry(*r).or_default();
            row.replicas += 1;
            row.preferred += usize::from(i == 0);
        }
        if let Some(row) = rows.get_mut(&p.leader_id) {
            row.leaders += 1;
        }
    }
    for (id, row) in rows.iter_mut().filter(|(_, r)| !r.addr.is_empty()) {
        (row.bytes, row.cordoned) = match log_dirs(&row.addr, *id, conn) {
            Ok((bytes, cordoned)) => (Some(bytes), cordoned),
            Err(_) => (None, false),
        };
    }
    let ongoing = crate::decommission::ongoing(&mut wire)?.len();
    let settings = settings(
        conn,
        md.brokers
            .first()
            .map(|b| (b.node_id, rows[&b.node_id].addr.clone())),
    );
    if conn.json {
        print_json(&json!({
            "settings": settings,
            "reassignments_in_progress": ongoing,
            "brokers": rows.iter().map(|(id, r)| json!({
                "id": id, "rack": r.rack, "replicas": r.replicas, "preferred_leaders": r.preferred,
                "leaders": r.leaders, "bytes": r.bytes, "cordoned": r.cordoned,
                "registered": !r.addr.is_empty(),
            })).collect::<Vec<_>>(),
        }));
        return Ok(());
    }
    for (k, v) in &settings {
        println!("{k} = {}", v.as_deref().unwrap_or("(unknown)"));
    }
    println!("Partition reassignments in progress: {ongoing}");
    print_rows(&rows);
    Ok(())
}

/// The per-broker table and the replica spread over the live, uncordoned brokers.
fn print_rows(rows: &BTreeMap<i32, Row>) {
    let table: Vec<Vec<String>> = (rows.iter())
        .map(|(id, r)| {
            let state = match (r.addr.is_empty(), r.cordoned) {
                (true, _) => "not live",
                (false, true) => "cordoned",
                (false, false) => "live",
            };
            vec![
                id.to_string(),
                r.rack.clone().unwrap_or_else(|| "-".into()),
                state.into(),
                r.replicas.to_string(),
                r.preferred.to_string(),
                r.leaders.to_string(),
                r.bytes.map_or_else(|| "-".into(), |b| b.to_string()),
            ]
        })
        .collect();
    print_table(
        &[
            "BROKER",
            "RACK",
            "STATE",
            "REPLICAS",
            "PREFERRED",
            "LEADERS",
            "BYTES",
        ],
        &table,
    );
    let live: Vec<usize> = (rows.values())
        .filter(|r| !r.addr.is_empty() && !r.cordoned)
        .map(|r| r.replicas)
        .collect();
    if let (Some(max), Some(min)) = (live.iter().max(), live.iter().min()) {
        println!(
            "Replica spread over live, uncordoned brokers: {} (most {max}, fewest {min}).",
            max - min
        );
    }
}

/// The bytes of the replicas `addr` holds (DescribeLogDirs) and whether it is cordoned (its
/// `cordoned.log.dirs`, KIP-1066, from DescribeConfigs, which a broker answers for itself).
fn log_dirs(addr: &str, id: i32, conn: &ConnArgs) -> anyhow::Result<(i64, bool)> {
    let mut wire = Wire::connect(addr, conn)?;
    let r = call_api!(
        wire,
        DescribeLogDirs,
        DescribeLogDirsRequest {
            topics: None,
            ..Default::default()
        },
        4
    );
    let bytes = (r.results.iter())
        .flat_map(|d| &d.topics)
        .flat_map(|t| &t.partitions)
        .map(|p| p.partition_size.max(0))
        .sum();
    let cordon = describe(&mut wire, id, &["cordoned.log.dirs"])?;
    let cordoned = cordon
        .get("cordoned.log.dirs")
        .cloned()
        .flatten()
        .is_some_and(|v| !v.trim().is_empty());
    Ok((bytes, cordoned))
}

/// DescribeConfigs of broker `id`'s `keys` over `wire` → {key: value}.
fn describe(
    wire: &mut Wire,
    id: i32,
    keys: &[&str],
) -> anyhow::Result<BTreeMap<String, Option<String>>> {
    let r = call_api!(
        wire,
        DescribeConfigs,
        DescribeConfigsRequest {
            resources: vec![DescribeConfigsResource {
                resource_type: 4, // BROKER
                resource_name: id.to_string(),
                configuration_keys: Some(keys.iter().map(|k| k.to_string()).collect()),
                ..Default::default()
            }],
            ..Default::default()
        },
        4
    );
    Ok((r.results.iter())
        .flat_map(|res| &res.configs)
        .map(|c| (c.name.clone(), c.value.clone()))
        .collect())
}

/// The `auto.balance.*` settings of broker `id` at `addr`, each `None` when not answered.
fn settings(conn: &ConnArgs, broker: Option<(i32, String)>) -> Vec<(&'static str, Option<String>)> {
    let values = broker
        .and_then(|(id, addr)| describe(&mut Wire::connect(&addr, conn).ok()?, id, KEYS).ok())
        .unwrap_or_default();
    KEYS.iter()
        .map(|k| (*k, values.get(*k).cloned().flatten()))
        .collect()
}
