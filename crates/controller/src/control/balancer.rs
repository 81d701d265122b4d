//! Automatic balancing — Runnel's, beyond Kafka, whose controller only restores preferred leaders and
//! leaves moving data to operators and Cruise Control. The active controller's periodic step re-places
//! the replicas of dead brokers and spreads replicas, bytes and leaderships over the brokers, through the
//! same reassignments (KIP-455) `kafka-reassign-partitions.sh` starts, so every move is visible to
//! ListPartitionReassignments, can be cancelled, and completes only once the new replicas are in the ISR.
//!
//! Once per [`BalancerConfig::check_interval_ms`], [`QuorumControl::tick`] runs one step over the image:
//! 1. Budget: nothing starts while [`BalancerConfig::max_concurrent_moves`] partitions (manual moves
//!    included) are being reassigned; one step starts at most the remaining budget.
//! 2. Dead brokers first: each replica on a broker fenced (or with its log dir offline) for
//!    [`BalancerConfig::dead_broker_delay_ms`], or no longer registered at all, is replaced in the same
//!    position of the replica list, so the replication factor is restored, by a placeable broker on a rack the partition is not on yet, else the
//!    one with the fewest replicas. Leaderless partitions wait (their data is only on the dead broker).
//! 3. Replica counts: while the most-loaded active broker holds more than the allowed spread over the
//!    least-loaded placeable one, a replica moves from the first to the second, taking its position (a
//!    preferred leader's place carries the leadership with it). Of the partitions that can move, the
//!    smallest goes first.
//! 4. Bytes (from the partition sizes leaders report in their heartbeats): while the byte spread is over
//!    [`BalancerConfig::max_spread_percent`] of the average (and at least [`MIN_BYTES_SPREAD`]), the
//!    partition whose move brings the gap closest to half moves; when that alone would take the counts out
//!    of their spread, the smallest partition of the other broker moves back (a swap).
//! 5. Leaderships: preferred leaders (first replicas) are spread the same way by putting an in-sync
//!    replica first — no data moves — and electing it; then, with `auto.leader.rebalance.enable`, every
//!    partition whose preferred replica is in sync and active but not leading is handed to it (the
//!    periodic preferred-leader election, run in the step rather than waiting for its own interval).
//!
//! "Placeable" brokers are active and not cordoned (KIP-1066, `cordoned.log.dirs`); a move never puts two
//! replicas of a partition on one rack unless the broker it leaves shares that rack. A broker without
//! `broker.rack` counts as a rack of its own. Every step strictly lowers a spread, so steps converge.

use std::collections::{BTreeMap, BTreeSet};

use metadata::{MetadataImage, MetadataRecord, PartitionRegistration, NO_LEADER};
use types::BrokerId;
use uuid::Uuid;

use super::reassignment::start_record;
use super::{Batch, QuorumControl};

/// Settings of automatic balancing (Runnel's keys, read by controllers).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BalancerConfig {
    /// `auto.balance.enable` (default true): run the balancing step at all.
    pub enable: bool,
    /// `auto.balance.check.interval.ms` (default 60,000): the period of the step, ms.
    pub check_interval_ms: i64,
    /// `auto.balance.max.concurrent.moves` (default 10): most partitions being reassigned at once,
    /// cluster-wide, manual moves included.
    pub max_concurrent_moves: usize,
    /// `auto.balance.max.spread.percent` (default 10): how far above the least-loaded broker the most-loaded
    /// one may be, in percent of the average per broker (at least 1 replica or leadership, at least
    /// [`MIN_BYTES_SPREAD`] bytes).
    pub max_spread_percent: u32,
    /// `auto.balance.dead.broker.delay.ms` (default 1,800,000 = 30 min): how long a broker stays fenced
    /// before its replicas are re-placed on others; -1 never.
    pub dead_broker_delay_ms: i64,
}

impl Default for BalancerConfig {
    fn default() -> Self {
        BalancerConfig {
            enable: true,
            check_interval_ms: 60_000,
            max_concurrent_moves: 10,
            max_spread_percent: 10,
            dead_broker_delay_ms: 1_800_000,
        }
    }
}

impl BalancerConfig {
    /// Balancing switched off (`auto.balance.enable=false`), other settings at their defaults.
    pub fn disabled() -> Self {
        BalancerConfig {
            enable: false,
            ..BalancerConfig::default()
        }
    }
}

/// The least byte spread the step corrects: 64 MiB (smaller gaps are not worth the copying).
pub const MIN_BYTES_SPREAD: u64 = 64 << 20;

/// Most (from, to) broker pairs one search looks at, most unequal first (bounds a step's work to
/// `MAX_PAIRS` passes over the partitions).
const MAX_PAIRS: usize = 32;

/// One partition as the step sees it.
struct Part<'a> {
    topic_id: Uuid,
    partition: i32,
    p: &'a PartitionRegistration,
    bytes: u64,
}

/// Replicas and bytes per broker (preferred leaderships are counted by [`leader_move`] on its own view).
#[derive(Default)]
struct Loads {
    replicas: BTreeMap<BrokerId, usize>,
    bytes: BTreeMap<BrokerId, u64>,
}

impl QuorumControl {
    /// A leader's report of its partition sizes ([`metadata::PartitionSizes`], every
    /// [`metadata::request::PARTITION_SIZES_EVERY`]th heartbeat): see [`note_partition_sizes`](Self::note_partition_sizes).
    /// Writes no record. Errors: `STALE_BROKER_EPOCH` (an unknown broker or an old registration's epoch).
    pub fn record_partition_sizes(
        &mut self,
        image: &MetadataImage,
        report: &metadata::PartitionSizes,
    ) -> Result<Vec<MetadataRecord>, metadata::ControllerError> {
        super::check_broker_epoch(image, report.broker_id, report.broker_epoch)?;
        self.note_partition_sizes(&report.sizes);
        Ok(Vec::new())
    }

    /// The partition sizes (bytes) a leader reported: they weigh partitions in the byte spread. Kept in
    /// memory only, like the sessions; a partition led elsewhere since keeps its last size until its new
    /// leader reports.
    pub fn note_partition_sizes(&mut self, sizes: &[(Uuid, i32, u64)]) {
        for &(topic_id, partition, bytes) in sizes {
            self.partition_bytes.insert((topic_id, partition), bytes);
        }
    }

    /// Notes when each broker was first seen fenced or with its log dir offline (for the dead-broker delay).
    pub(super) fn track_dead_brokers(&mut self, image: &MetadataImage, now_ms: i64) {
        self.down_since.retain(|b, _| {
            image
                .brokers
                .get(b)
                .is_some_and(|r| r.fenced || r.log_dir_offline)
        });
        for (id, reg) in &image.brokers {
            if reg.fenced || reg.log_dir_offline {
                self.down_since.entry(*id).or_insert(now_ms);
            }
        }
    }

    /// One balancing step (see the module doc) when it is enabled and due.
    pub(super) fn maybe_balance(&mut self, batch: &mut Batch<'_>, now_ms: i64) {
        let cfg = self.config.balancer.clone();
        if !cfg.enable {
            return;
        }
        let due = *self
            .next_auto_balance_ms
            .get_or_insert(now_ms.saturating_add(cfg.check_interval_ms.max(0)));
        if now_ms < due {
            return;
        }
        self.next_auto_balance_ms = Some(now_ms.saturating_add(cfg.check_interval_ms.max(0)));
        let view = &batch.view;
        self.partition_bytes
            .retain(|&(t, p), _| view.partition(t, p).is_some());
        let ongoing = (batch.view.topics.values())
            .flat_map(|t| t.partitions.values())
            .filter(|p| p.is_reassigning())
            .count();
        let mut budget = cfg.max_concurrent_moves.saturating_sub(ongoing);
        let mut dead: BTreeSet<BrokerId> = if cfg.dead_broker_delay_ms < 0 {
            BTreeSet::new()
        } else {
            (self.down_since.iter())
                .filter(|(_, &since)| now_ms.saturating_sub(since) >= cfg.dead_broker_delay_ms)
                .map(|(&b, _)| b)
                .collect()
        };
        // A replica on a broker id that is no longer registered (UnregisterBroker without a drain) is
        // gone for good: re-placed at once.
        dead.extend(
            (batch.view.topics.values())
                .flat_map(|t| t.partitions.values())
                .flat_map(|p| p.replicas.iter().copied())
                .filter(|b| !batch.view.brokers.contains_key(b)),
        );
        while budget > 0 {
            let moves = self.next_moves(&batch.view, &dead, cfg.max_spread_percent);
            if moves.is_empty() || moves.len() > budget {
                break;
            }
            budget -= moves.len();
            for record in moves {
                batch.push(record);
            }
        }
        let mut elections = cfg.max_concurrent_moves.max(1);
        while elections > 0 {
            let Some(record) = leader_move(&batch.view, cfg.max_spread_percent) else {
                break;
            };
            batch.push(record);
            elections -= 1;
        }
        // Leaderships follow the preferences at once (a completed move hands leadership over only when
        // the leader leaves), not at the next `leader.imbalance.check.interval.seconds`.
        if self.config.auto_leader_rebalance {
            Self::elect_preferred_leaders(batch, super::MAX_PREFERRED_ELECTIONS_PER_TICK);
        }
    }

    /// The next replica moves: a dead broker's replica, else one that lowers the replica-count spread,
    /// else one or two (a swap) that lower the byte spread; empty when balanced.
    fn next_moves(
        &self,
        view: &MetadataImage,
        dead: &BTreeSet<BrokerId>,
        spread_percent: u32,
    ) -> Vec<MetadataRecord> {
        let parts = self.parts(view);
        let loads = loads(&parts);
        let (active, placeable) = brokers(view);
        if placeable.is_empty() {
            return Vec::new();
        }
        if let Some(r) = replace_dead(view, &parts, &loads, dead, &placeable) {
            return vec![r];
        }
        let scene = Scene {
            view,
            parts: &parts,
            loads: &loads,
            active: &active,
            placeable: &placeable,
            pct: spread_percent,
        };
        match scene.count_move() {
            Some(r) => vec![r],
            None => scene.bytes_move(),
        }
    }

    /// Every partition of `view` with its last reported size.
    fn parts<'a>(&self, view: &'a MetadataImage) -> Vec<Part<'a>> {
        (view.topics.values())
            .flat_map(|t| {
                (t.partitions.iter()).map(move |(&partition, p)| Part {
                    topic_id: t.topic_id,
                    partition,
                    p,
                    bytes: *self
                        .partition_bytes
                        .get(&(t.topic_id, partition))
                        .unwrap_or(&0),
                })
            })
            .collect()
    }
}

fn loads(parts: &[Part<'_>]) -> Loads {
    let mut l = Loads::default();
    for part in parts {
        for r in part.p.target_replicas() {
            *l.replicas.entry(r).or_default() += 1;
            *l.bytes.entry(r).or_default() += part.bytes;
        }
    }
    l
}

/// The active brokers (sources of moves) and, of them, the placeable ones (not cordoned: targets).
fn brokers(view: &MetadataImage) -> (Vec<BrokerId>, Vec<BrokerId>) {
    let active: Vec<BrokerId> = (view.brokers.keys())
        .copied()
        .filter(|&b| view.is_active_broker(b))
        .collect();
    let placeable = (active.iter())
        .copied()
        .filter(|&b| !view.is_cordoned(b))
        .collect();
    (active, placeable)
}

fn get<T: Copy + Default>(m: &BTreeMap<BrokerId, T>, b: BrokerId) -> T {
    m.get(&b).copied().unwrap_or_default()
}

/// The largest gap the counts `of` the `brokers` may have: max(1, average × percent / 100).
fn allowed_count_spread(of: &BTreeMap<BrokerId, usize>, brokers: &[BrokerId], pct: u32) -> usize {
    let total: usize = brokers.iter().map(|&b| get(of, b)).sum();
    let avg = total as f64 / brokers.len().max(1) as f64;
    ((avg * f64::from(pct) / 100.0).floor() as usize).max(1)
}

/// The rack `b` counts as on (its `broker.rack`, or itself alone).
fn rack_of(view: &MetadataImage, b: BrokerId) -> (Option<&str>, Option<BrokerId>) {
    let rack = view.brokers.get(&b).and_then(|r| r.rack.as_deref());
    (rack, rack.is_none().then_some(b))
}

/// True when `to` may take `from`'s place in `replicas` without putting two replicas on one rack that
/// were not already together.
fn rack_allows(view: &MetadataImage, replicas: &[BrokerId], from: BrokerId, to: BrokerId) -> bool {
    let to_rack = rack_of(view, to);
    to_rack == rack_of(view, from)
        || !(replicas.iter())
            .filter(|&&r| r != from)
            .any(|&r| rack_of(view, r) == to_rack)
}

/// The record moving `part` from `replicas` to `target`.
fn move_record(
    view: &MetadataImage,
    part: &Part<'_>,
    target: &[BrokerId],
) -> Option<MetadataRecord> {
    start_record(view, part.topic_id, part.partition, part.p, target)
}

fn replaced(replicas: &[BrokerId], from: BrokerId, to: BrokerId) -> Vec<BrokerId> {
    replicas
        .iter()
        .map(|&r| if r == from { to } else { r })
        .collect()
}

/// A partition with a replica on a dead broker, moved to a placeable broker (see the module doc).
fn replace_dead(
    view: &MetadataImage,
    parts: &[Part<'_>],
    loads: &Loads,
    dead: &BTreeSet<BrokerId>,
    placeable: &[BrokerId],
) -> Option<MetadataRecord> {
    if dead.is_empty() {
        return None;
    }
    for part in parts {
        if part.p.is_reassigning() || part.p.leader == NO_LEADER {
            continue;
        }
        let mut target = part.p.replicas.clone();
        let mut changed = false;
        for i in 0..target.len() {
            let from = target[i];
            if !dead.contains(&from) {
                continue;
            }
            let best = (placeable.iter())
                .filter(|b| !target.contains(b))
                .min_by_key(|&&b| {
                    (
                        !rack_allows(view, &target, from, b),
                        get(&loads.replicas, b),
                        b,
                    )
                });
            if let Some(&to) = best {
                target[i] = to;
                changed = true;
            }
        }
        if changed {
            if let Some(r) = move_record(view, part, &target) {
                return Some(r);
            }
        }
    }
    None
}

/// Pairs (from, to) with `from` holding more than `allowed` over `to`, most unequal first. As `allowed` is at
/// least 1, a move from `from` to `to` lowers their gap without reversing it.
fn pairs<T: Copy + Ord + Default + std::ops::Sub<Output = T>>(
    of: &BTreeMap<BrokerId, T>,
    sources: &[BrokerId],
    targets: &[BrokerId],
    allowed: T,
) -> Vec<(BrokerId, BrokerId)> {
    let mut out: Vec<(T, BrokerId, BrokerId)> = Vec::new();
    for &from in sources {
        for &to in targets {
            let (f, t) = (get(of, from), get(of, to));
            if from != to && f > t && f - t > allowed {
                out.push((f - t, from, to));
            }
        }
    }
    out.sort_by(|a, b| b.0.cmp(&a.0).then((a.1, a.2).cmp(&(b.1, b.2))));
    // Each pair costs a pass over the partitions: a step looks at the most unequal ones only.
    out.into_iter()
        .take(MAX_PAIRS)
        .map(|(_, f, t)| (f, t))
        .collect()
}

/// A partition that can move from `from` to `to`: not being reassigned, on `from`, not on `to`, rack-safe.
fn movable<'p, 'a>(
    view: &'p MetadataImage,
    parts: &'p [Part<'a>],
    from: BrokerId,
    to: BrokerId,
) -> impl Iterator<Item = &'p Part<'a>> + 'p {
    parts.iter().filter(move |part| {
        let r = &part.p.replicas;
        !part.p.is_reassigning()
            && r.contains(&from)
            && !r.contains(&to)
            && part.p.leader != NO_LEADER
            && rack_allows(view, r, from, to)
    })
}

/// What a count or byte move is chosen from: the view, its partitions and loads, the active brokers (moves'
/// sources) and the placeable ones (their targets), the spread percent.
struct Scene<'s, 'a> {
    view: &'a MetadataImage,
    parts: &'s [Part<'a>],
    loads: &'s Loads,
    active: &'s [BrokerId],
    placeable: &'s [BrokerId],
    pct: u32,
}

impl Scene<'_, '_> {
    /// The smallest partition moving a replica from the most- to the least-loaded broker by count.
    fn count_move(&self) -> Option<MetadataRecord> {
        let Scene {
            view,
            parts,
            loads,
            active,
            placeable,
            pct,
        } = *self;
        let allowed = allowed_count_spread(&loads.replicas, active, pct);
        for (from, to) in pairs(&loads.replicas, active, placeable, allowed) {
            if let Some(part) = movable(view, parts, from, to).min_by_key(|p| p.bytes) {
                return move_record(view, part, &replaced(&part.p.replicas, from, to));
            }
        }
        None
    }

    /// A move lowering the byte gap between the broker with the most bytes and the one with the fewest: the
    /// largest partition that lowers it, alone when the counts stay within their spread, else swapped with the
    /// smallest partition moving back.
    fn bytes_move(&self) -> Vec<MetadataRecord> {
        let Scene {
            view,
            parts,
            loads,
            active,
            placeable,
            pct,
        } = *self;
        let total: u64 = active.iter().map(|&b| get(&loads.bytes, b)).sum();
        let avg = total / active.len().max(1) as u64;
        let allowed = (avg / 100 * u64::from(pct)).max(MIN_BYTES_SPREAD);
        let count_allowed = allowed_count_spread(&loads.replicas, active, pct);
        let count_spread_after = |from: BrokerId, to: BrokerId| {
            let mut c = loads.replicas.clone();
            *c.entry(from).or_default() -= 1;
            *c.entry(to).or_default() += 1;
            let vals: Vec<usize> = active.iter().map(|&b| get(&c, b)).collect();
            vals.iter().max().unwrap_or(&0) - vals.iter().min().unwrap_or(&0)
        };
        for (from, to) in pairs(&loads.bytes, active, placeable, allowed) {
            let gap = get(&loads.bytes, from) - get(&loads.bytes, to);
            let alone = count_spread_after(from, to) <= count_allowed;
            // Moving `b` bytes one way and `s` back lowers the gap when 0 < b - s < gap; best near gap / 2.
            let back = if alone {
                None
            } else {
                match movable(view, parts, to, from).min_by_key(|p| p.bytes) {
                    Some(p) => Some(p),
                    None => continue,
                }
            };
            let back_bytes = back.map_or(0, |p| p.bytes);
            let best = movable(view, parts, from, to)
                .filter(|p| p.bytes > back_bytes && p.bytes - back_bytes < gap)
                .min_by_key(|p| (p.bytes - back_bytes).abs_diff(gap / 2));
            let Some(part) = best else { continue };
            let mut out: Vec<MetadataRecord> =
                move_record(view, part, &replaced(&part.p.replicas, from, to))
                    .into_iter()
                    .collect();
            if let Some(b) = back {
                out.extend(move_record(view, b, &replaced(&b.p.replicas, to, from)));
            }
            return out;
        }
        Vec::new()
    }
}

/// A partition whose preferred leadership moves from the broker with the most to an in-sync replica on the
/// one with the fewest: that replica goes first in the list and is elected.
fn leader_move(view: &MetadataImage, pct: u32) -> Option<MetadataRecord> {
    let mut leaders: BTreeMap<BrokerId, usize> = BTreeMap::new();
    for p in view.topics.values().flat_map(|t| t.partitions.values()) {
        if let Some(first) = p.target_replicas().first() {
            *leaders.entry(*first).or_default() += 1;
        }
    }
    let (active, placeable) = brokers(view);
    let allowed = allowed_count_spread(&leaders, &active, pct);
    for (from, to) in pairs(&leaders, &active, &placeable, allowed) {
        for t in view.topics.values() {
            for (&partition, p) in &t.partitions {
                let ok = !p.is_reassigning()
                    && p.replicas.first() == Some(&from)
                    && p.isr.contains(&to)
                    && p.replicas.contains(&to);
                if !ok {
                    continue;
                }
                let order: Vec<BrokerId> = std::iter::once(to)
                    .chain(p.replicas.iter().copied().filter(|&r| r != to))
                    .collect();
                return Some(MetadataRecord::PartitionChangeRecord {
                    topic_id: t.topic_id,
                    partition_id: partition,
                    isr: None,
                    leader: (p.leader != to).then_some(to),
                    replicas: Some(order),
                    adding_replicas: None,
                    removing_replicas: None,
                    directories: None,
                });
            }
        }
    }
    None
}
