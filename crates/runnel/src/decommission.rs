//! `runnel cluster decommission N` and `runnel cluster reassignments`: draining a broker through partition
//! reassignment (KIP-455), then removing its registration (UnregisterBroker), with our own codec.
//!
//! Each partition with a replica on N gets a replacement in the same position of its replica list (so a
//! preferred leader on N is replaced by the new replica, which becomes preferred): a registered broker that
//! holds no replica of the partition, on a rack none of the other replicas is on when racks are known,
//! then the one with the fewest replicas (counting the moves already planned), then the lowest id. The
//! replication factor is kept; when no broker can take a replica the command fails before moving
//! anything. The broker is first cordoned (KIP-1066 `cordoned.log.dirs=*`), so that automatic balancing and
//! new topics put nothing on it, then the moves are started in one AlterPartitionReassignments, the command waits (bounded by
//! `--wait-secs`) until ListPartitionReassignments shows none of them, then sends UnregisterBroker. A broker
//! that is still running registers again with its next heartbeat (as in Kafka): stop it before, or after,
//! the command.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use anyhow::bail;
use protocol::messages::alter_partition_reassignments_request::{
    ReassignablePartition, ReassignableTopic,
};
use protocol::messages::{
    AlterPartitionReassignmentsRequest, ListPartitionReassignmentsRequest, MetadataRequest,
    UnregisterBrokerRequest,
};

use crate::client::{check, print_table, protocol_words, ConnArgs};
use crate::wire::{call_api, Wire};

/// One partition to move: topic, index, its replicas now, its replicas after.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Move {
    /// Topic name.
    pub topic: String,
    /// Partition index.
    pub partition: i32,
    /// The replica list now.
    pub from: Vec<i32>,
    /// The replica list after the move.
    pub to: Vec<i32>,
}

/// A cluster as the plan sees it: the live brokers with their racks (Metadata lists no fenced broker),
/// partitions with their replicas.
#[derive(Debug, Clone, Default)]
pub struct Layout {
    /// Broker id → rack.
    pub brokers: BTreeMap<i32, Option<String>>,
    /// (topic, partition) → replicas.
    pub partitions: BTreeMap<(String, i32), Vec<i32>>,
}

/// The moves that take every replica off `broker` (see the module doc); `broker` may be down (fenced
/// brokers are not in `layout.brokers`, but still in replica lists). Error: a partition no other broker can
/// take.
pub fn drain_plan(layout: &Layout, broker: i32) -> anyhow::Result<Vec<Move>> {
    let mut load: BTreeMap<i32, usize> = layout.brokers.keys().map(|&b| (b, 0)).collect();
    for replicas in layout.partitions.values() {
        for b in replicas {
            *load.entry(*b).or_default() += 1;
        }
    }
    let mut moves = Vec::new();
    for ((topic, partition), replicas) in &layout.partitions {
        let Some(pos) = replicas.iter().position(|&b| b == broker) else {
            continue;
        };
        let racks: BTreeSet<&str> = (replicas.iter())
            .filter(|&&b| b != broker)
            .filter_map(|b| layout.brokers.get(b)?.as_deref())
            .collect();
        let candidate = (layout.brokers.iter())
            .filter(|(b, _)| **b != broker && !replicas.contains(b))
            .min_by_key(|(b, rack)| {
                let same_rack = rack.as_deref().is_some_and(|r| racks.contains(r));
                (same_rack, load.get(b).copied().unwrap_or(0), **b)
            })
            .map(|(b, _)| *b);
        let Some(replacement) = candidate else {
            bail!(
                "{topic}-{partition} has {} replicas and no other broker can take the one on broker \
                 {broker}: add a broker first",
                replicas.len()
            );
        };
        *load.entry(replacement).or_default() += 1;
        let mut to = replicas.clone();
        to[pos] = replacement;
        moves.push(Move {
            topic: topic.clone(),
            partition: *partition,
            from: replicas.clone(),
            to,
        });
    }
    Ok(moves)
}

/// The layout from Metadata v12 (all topics).
fn layout(wire: &mut Wire) -> anyhow::Result<Layout> {
    let request = MetadataRequest {
        topics: None,
        allow_auto_topic_creation: false,
        ..Default::default()
    };
    let md = call_api!(wire, Metadata, request, 12);
    let mut out = Layout::default();
    for b in &md.brokers {
        out.brokers.insert(b.node_id, b.rack.clone());
    }
    for t in &md.topics {
        let name = t.name.clone().unwrap_or_default();
        for p in &t.partitions {
            out.partitions
                .insert((name.clone(), p.partition_index), p.replica_nodes.clone());
        }
    }
    Ok(out)
}

/// The ongoing reassignments: (topic, partition) → (replicas, adding, removing).
pub(crate) type Ongoing = BTreeMap<(String, i32), (Vec<i32>, Vec<i32>, Vec<i32>)>;

/// The ongoing reassignments (ListPartitionReassignments, all topics).
pub(crate) fn ongoing(wire: &mut Wire) -> anyhow::Result<Ongoing> {
    let r = call_api!(
        wire,
        ListPartitionReassignments,
        ListPartitionReassignmentsRequest {
            timeout_ms: 30_000,
            topics: None,
            ..Default::default()
        },
        0
    );
    check(
        r.error_code,
        r.error_message.as_deref(),
        "ListPartitionReassignments failed",
    )?;
    let mut out = Ongoing::new();
    for t in r.topics {
        for p in t.partitions {
            out.insert(
                (t.name.clone(), p.partition_index),
                (p.replicas, p.adding_replicas, p.removing_replicas),
            );
        }
    }
    Ok(out)
}

fn ids(v: &[i32]) -> String {
    v.iter().map(i32::to_string).collect::<Vec<_>>().join(",")
}

/// `cluster reassignments`: the ongoing reassignments, one row per partition.
pub fn list(conn: &ConnArgs) -> anyhow::Result<()> {
    conn.preflight()?;
    let mut wire = Wire::connect_any(conn)?;
    let rows: Vec<Vec<String>> = (ongoing(&mut wire)?.into_iter())
        .map(|((t, p), (r, a, d))| vec![t, p.to_string(), ids(&r), ids(&a), ids(&d)])
        .collect();
    if rows.is_empty() {
        println!("No partition reassignments in progress.");
    } else {
        print_table(
            &["TOPIC", "PARTITION", "REPLICAS", "ADDING", "REMOVING"],
            &rows,
        );
    }
    Ok(())
}

/// `cluster decommission N` (see the module doc).
pub fn decommission(conn: &ConnArgs, broker: i32, wait: Duration) -> anyhow::Result<()> {
    conn.preflight()?;
    let mut wire = Wire::connect_any(conn)?;
    let moves = drain_plan(&layout(&mut wire)?, broker)?;
    cordon(&mut wire, broker)?;
    println!("Moving {} replica(s) off broker {broker}.", moves.len());
    if !moves.is_empty() {
        start(&mut wire, &moves)?;
        wait_for(&mut wire, &moves, wait)?;
    }
    let r = call_api!(
        wire,
        UnregisterBroker,
        UnregisterBrokerRequest {
            broker_id: broker,
            ..Default::default()
        },
        0
    );
    check(
        r.error_code,
        r.error_message.as_deref(),
        "UnregisterBroker failed",
    )?;
    println!("Broker {broker} holds no replicas and is unregistered; a running broker {broker} registers again until it is stopped.");
    Ok(())
}

/// Cordons `broker` (KIP-1066 `cordoned.log.dirs=*`, IncrementalAlterConfigs on its BROKER resource) so
/// that neither new topics nor automatic balancing place replicas on it while it drains.
fn cordon(wire: &mut Wire, broker: i32) -> anyhow::Result<()> {
    use protocol::messages::incremental_alter_configs_request::{
        AlterConfigsResource, AlterableConfig,
    };
    use protocol::messages::IncrementalAlterConfigsRequest;
    let request = IncrementalAlterConfigsRequest {
        resources: vec![AlterConfigsResource {
            resource_type: 4, // BROKER
            resource_name: broker.to_string(),
            configs: vec![AlterableConfig {
                name: "cordoned.log.dirs".into(),
                config_operation: 0, // SET
                value: Some("*".into()),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let r = call_api!(wire, IncrementalAlterConfigs, request, 1);
    for res in &r.responses {
        check(
            res.error_code,
            res.error_message.as_deref(),
            "cordoning the broker (cordoned.log.dirs) failed",
        )?;
    }
    Ok(())
}

/// Starts `moves` in one AlterPartitionReassignments; fails naming every partition refused.
fn start(wire: &mut Wire, moves: &[Move]) -> anyhow::Result<()> {
    let mut topics: BTreeMap<&str, Vec<ReassignablePartition>> = BTreeMap::new();
    for m in moves {
        topics
            .entry(&m.topic)
            .or_default()
            .push(ReassignablePartition {
                partition_index: m.partition,
                replicas: Some(m.to.clone()),
                ..Default::default()
            });
    }
    let request = AlterPartitionReassignmentsRequest {
        timeout_ms: 60_000,
        allow_replication_factor_change: false,
        topics: (topics.into_iter())
            .map(|(name, partitions)| ReassignableTopic {
                name: name.to_string(),
                partitions,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    let r = call_api!(wire, AlterPartitionReassignments, request, 1);
    check(
        r.error_code,
        r.error_message.as_deref(),
        "AlterPartitionReassignments failed",
    )?;
    let refused: Vec<String> = (r.responses.iter())
        .flat_map(|t| t.partitions.iter().map(move |p| (&t.name, p)))
        .filter(|(_, p)| p.error_code != 0)
        .map(|(t, p)| {
            let words = protocol_words(p.error_code, p.error_message.as_deref());
            format!("{t}-{}: {words}", p.partition_index)
        })
        .collect();
    if !refused.is_empty() {
        bail!("{} move(s) refused: {}", refused.len(), refused.join("; "));
    }
    Ok(())
}

/// Waits until none of `moves` is ongoing, printing progress when it changes; bounded by `wait`.
fn wait_for(wire: &mut Wire, moves: &[Move], wait: Duration) -> anyhow::Result<()> {
    let deadline = Instant::now() + wait;
    let mut last = usize::MAX;
    loop {
        let ongoing = ongoing(wire)?;
        let left = (moves.iter())
            .filter(|m| ongoing.contains_key(&(m.topic.clone(), m.partition)))
            .count();
        if left != last {
            println!(
                "{} of {} move(s) complete.",
                moves.len() - left,
                moves.len()
            );
            last = left;
        }
        if left == 0 {
            return Ok(());
        }
        if Instant::now() >= deadline {
            bail!(
                "{left} move(s) still in progress after {} s: `runnel cluster reassignments` shows them",
                wait.as_secs()
            );
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(brokers: &[(i32, Option<&str>)], parts: &[(&str, i32, &[i32])]) -> Layout {
        Layout {
            brokers: (brokers.iter())
                .map(|(b, r)| (*b, r.map(str::to_string)))
                .collect(),
            partitions: (parts.iter())
                .map(|(t, p, r)| ((t.to_string(), *p), r.to_vec()))
                .collect(),
        }
    }

    #[test]
    fn a_drained_replica_is_replaced_in_place_by_the_least_loaded_broker() {
        let l = layout(
            &[(1, None), (2, None), (3, None), (4, None)],
            &[("t", 0, &[1, 2]), ("t", 1, &[1, 3]), ("t", 2, &[2, 3])],
        );
        let moves = drain_plan(&l, 1).unwrap();
        let to: Vec<Vec<i32>> = moves.iter().map(|m| m.to.clone()).collect();
        // Broker 4 holds nothing: it takes the first; then 4 and the others tie at 1-2 replicas.
        assert_eq!(to, vec![vec![4, 2], vec![4, 3]]);
        assert!(moves.iter().all(|m| !m.to.contains(&1)));
    }

    #[test]
    fn a_down_broker_is_drained_onto_live_ones() {
        let l = layout(&[(2, None), (3, None)], &[("t", 0, &[1, 2])]);
        assert_eq!(drain_plan(&l, 1).unwrap()[0].to, vec![3, 2]);
    }

    #[test]
    fn a_replacement_prefers_a_rack_the_partition_is_not_on() {
        let l = layout(
            &[
                (1, Some("a")),
                (2, Some("b")),
                (3, Some("b")),
                (4, Some("a")),
            ],
            &[("t", 0, &[1, 2])],
        );
        // 3 and 4 are both empty; 3 is on rack b with replica 2, so 4 (rack a, freed by 1) is chosen.
        assert_eq!(drain_plan(&l, 1).unwrap()[0].to, vec![4, 2]);
    }

    #[test]
    fn draining_fails_before_moving_when_no_broker_can_take_a_replica() {
        let l = layout(&[(1, None), (2, None)], &[("t", 0, &[1, 2])]);
        assert!(drain_plan(&l, 1).is_err());
        assert_eq!(drain_plan(&l, 9).unwrap(), vec![]);
    }
}
