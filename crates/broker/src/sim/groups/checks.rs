//! The group simulation's per-step checkers, reading each running broker's group coordinator in process:
//! at most one broker coordinates (has `__consumer_offsets`-0 loaded) per leader epoch, and the committed
//! offsets a coordinator holds never go backwards while it coordinates (same incarnation, same leader
//! epoch). The checks of what clients see live in `group_client` (`ClientState::synced`/`check_fetch`).

use std::collections::BTreeMap;
use std::sync::Arc;

use replica::replica_manager::ReplicaManager;

use super::client::GROUP;
use super::cluster::{GroupWorld, DATA_PARTITIONS, DATA_TOPIC};
use crate::group_coordinator::OFFSETS_TOPIC;
use crate::sim::cluster::BROKERS;

/// What one coordinator shows of the group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupView {
    /// The broker coordinating it.
    pub broker: i32,
    /// The `__consumer_offsets`-0 leader epoch it coordinates in.
    pub epoch: i32,
    /// Group state name ("Dead" when unknown).
    pub state: String,
    /// Generation (-1 unknown).
    pub generation: i32,
    /// Members.
    pub members: usize,
    /// Committed offset per data partition (-1 none).
    pub offsets: BTreeMap<i32, i64>,
}

/// The group as every broker that has `__consumer_offsets`-0 loaded sees it.
pub fn views(gw: &GroupWorld) -> Vec<(Arc<ReplicaManager>, GroupView)> {
    let mut out = Vec::new();
    for b in BROKERS {
        let Some((rm, groups)) = gw.coordinator(b) else {
            continue;
        };
        if !groups.coordinated_partitions().contains(&(0, true)) {
            continue;
        }
        let Some(p) = rm.partition(OFFSETS_TOPIC, 0) else {
            continue;
        };
        let epoch = p.registration().leader_epoch.get();
        let parts: Vec<(String, Vec<i32>)> =
            vec![(DATA_TOPIC.to_string(), (0..DATA_PARTITIONS).collect())];
        let read = groups.read_group(GROUP, |c| {
            let d = c.describe_group(GROUP);
            let offsets: BTreeMap<i32, i64> = c
                .fetch_offsets(GROUP, Some(&parts))
                .topics
                .iter()
                .flat_map(|(_, ps)| ps.iter())
                .map(|p| (p.partition_index, p.committed_offset.get()))
                .collect();
            (
                d.group_state,
                c.group_generation(GROUP),
                d.members.len(),
                offsets,
            )
        });
        let Ok((state, generation, members, offsets)) = read else {
            continue;
        };
        let view = GroupView {
            broker: b,
            epoch,
            state,
            generation: generation.unwrap_or(-1),
            members,
            offsets,
        };
        out.push((rm, view));
    }
    out
}

/// A broker's last sample: its incarnation, the leader epoch it coordinated in, the offsets it held.
type Sample = (Arc<ReplicaManager>, i32, BTreeMap<i32, i64>);

/// Per-step samples and the violations found so far.
#[derive(Default)]
pub struct Sampler {
    /// Leader epoch → the broker that coordinated in it.
    coordinators: BTreeMap<i32, i32>,
    /// Per broker: the incarnation and epoch sampled last, and the offsets it held.
    last: BTreeMap<i32, Sample>,
    /// What went wrong.
    pub violations: Vec<String>,
}

impl Sampler {
    fn violation(&mut self, v: String) {
        if self.violations.len() < 10 {
            self.violations.push(v);
        }
    }

    /// Samples every coordinator; returns the views (for the trace and the liveness check).
    pub fn sample(&mut self, gw: &GroupWorld) -> Vec<GroupView> {
        let views = views(gw);
        for (rm, v) in &views {
            let first = *self.coordinators.entry(v.epoch).or_insert(v.broker);
            if first != v.broker {
                self.violation(format!(
                    "two coordinators in leader epoch {}: brokers {first} and {}",
                    v.epoch, v.broker
                ));
            }
            if let Some((prev_rm, prev_epoch, prev)) = self.last.get(&v.broker) {
                if Arc::ptr_eq(prev_rm, rm) && *prev_epoch == v.epoch {
                    let back: Vec<String> = prev
                        .iter()
                        .filter(|(p, o)| v.offsets.get(p).is_some_and(|now| now < o))
                        .map(|(p, o)| format!("partition {p}: {o} -> {:?}", v.offsets.get(p)))
                        .collect();
                    if !back.is_empty() {
                        self.violation(format!(
                            "broker {} (epoch {}): committed offsets went back while coordinating: {}",
                            v.broker,
                            v.epoch,
                            back.join(", ")
                        ));
                    }
                }
            }
            self.last
                .insert(v.broker, (rm.clone(), v.epoch, v.offsets.clone()));
        }
        views.into_iter().map(|(_, v)| v).collect()
    }
}
