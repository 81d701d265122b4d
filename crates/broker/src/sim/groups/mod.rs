//! Deterministic simulation of the group coordinator (issue 13): the replication simulation's three brokers
//! and test controller, but the partition they replicate is `__consumer_offsets`-0 (replicas 1..=3,
//! `min.insync.replicas` = 2) and each broker runs the production group coordinator — the coordinator
//! crate's `GroupCoordinator` inside the broker's `GroupCoordinatorService`, wired by `lifecycle::wire_with`
//! in cluster mode and told of leadership by the real `GroupCoordinatorPublisher` (load on becoming the
//! leader, unload on losing it; see [`cluster`]). Three consumers on the `client` host speak real Kafka
//! requests to it over the simulated network (FindCoordinator, JoinGroup, SyncGroup, Heartbeat,
//! OffsetCommit of ever larger offsets, OffsetFetch; see [`client`]) while the replication simulation's
//! seeded faults hit for 15 s (`super::inject`: partitions, held and slow links, crashes with a power
//! loss and a restart, clock jumps, leader elections, a full disk, a failing fsync).
//!
//! Checked: an OffsetFetch answer (during the faults, and from the coordinator at the end) is, per
//! partition, at least every offset acknowledged before it was sent and always an offset some member sent
//! (no acknowledged commit lost, nothing invented); the committed offsets a coordinator holds never go
//! backwards while it coordinates (same incarnation and leader epoch); at most one coordinator per leader
//! epoch; in one generation the successful SyncGroups give each member one assignment and no partition to
//! two members; within 60 s after the faults stop the group is Stable on the partition's leader with
//! every member working in its generation (and commits progress); a seed's trace is the same every time.
//!
//! `SIM_SEEDS=<n>` runs seeds 0..n (default 100), `SIM_SEED=<s>` only seed s, `SIM_TRACE=1` prints the
//! trace: `SIM_SEEDS=1000 cargo test --release -p broker --lib sim::groups -- --nocapture`.
//!
//! Besides the shared faults, [`cut_off_leader`]: the leader cut off from its followers, then a power loss.
//!
//! Mutations (failing seeds of 100): OffsetCommit answered before the HighWatermark 17/100; JoinGroup and
//! SyncGroup answers not waiting for the partition's last write 5/100; the coordinator clock fix for a
//! backward wall-clock step undone 1/100; no reload after regaining leadership 42/100 and `check_coordinator`
//! Ok for groups not led here 29/100 (both measured before the cut fault). 1000 seeds: none fail.

// Test-only like this module (`#[cfg(test)]` spelled out for `xtask tidy`).
#[cfg(test)]
mod checks;
#[cfg(test)]
mod client;
#[cfg(test)]
mod cluster;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use storage::vfs::{env_u64, SimRng as Rng};

use super::cluster::{host, BROKERS, EPOCH_MS};
use super::{Outcome, Undo};
use client::{Shared, MEMBERS};
use cluster::GroupWorld;

/// Faults are injected during the first this much simulated time.
const FAULT_PHASE: Duration = Duration::from_secs(15);
/// After the faults stop: the group must be Stable with every member within this bound.
const RECOVERY_BOUND: Duration = Duration::from_secs(60);
/// After the members stop: the final OffsetFetch must be answered within this bound.
const FINAL_BOUND: Duration = Duration::from_secs(30);
/// Simulated time per step.
const TICK: Duration = Duration::from_millis(5);

/// The coordinators' views and the members' progress, for the trace.
fn describe(views: &[checks::GroupView], shared: &Shared) -> String {
    let st = shared.state.lock();
    let coords: Vec<String> = views
        .iter()
        .map(|v| {
            format!(
                "b{} e{} {} g{} m{}",
                v.broker, v.epoch, v.state, v.generation, v.members
            )
        })
        .collect();
    format!(
        "acks {} working {:?} coordinators [{}] acked {:?}",
        st.acks,
        st.working,
        coords.join("; "),
        st.acked
    )
}

/// Whether the group is settled: Stable on the partition leader's coordinator with every member working
/// in its generation.
fn settled(gw: &GroupWorld, views: &[checks::GroupView], shared: &Shared) -> bool {
    let leader = gw.world.leader();
    let st = shared.state.lock();
    views.iter().any(|v| {
        Some(v.broker) == leader
            && v.state == "Stable"
            && v.members == MEMBERS
            && st.working.iter().all(|w| *w == Some(v.generation))
    })
}

/// The group simulation's own fault: the `__consumer_offsets` leader is cut off from its followers (they
/// stop fetching; shorter than `replica.lag.time.max.ms`, so the ISR keeps them) and then loses power, so
/// commits it took meanwhile exist in its log alone and the next leader (a follower) does not have them.
/// Kafka answers no such commit (acks=all), so none may be lost. Returns when the power goes, and the leader.
fn cut_off_leader(
    sim: &mut turmoil::Sim<'_>,
    gw: &GroupWorld,
    rng: &mut Rng,
    trace: &mut Vec<String>,
) -> Option<(Duration, i32)> {
    let b = gw.world.leader()?;
    if !gw.world.may_crash(b) {
        return None;
    }
    let d = rng.ms(100, 800);
    trace.push(format!(
        "leader {b} cut off from its followers, loses power in {d:?}"
    ));
    for o in BROKERS.iter().filter(|o| **o != b) {
        sim.partition(host(b).as_str(), host(*o).as_str());
    }
    Some((d, b))
}

/// Ends [`cut_off_leader`]'s cut: with `crash`, broker `b` loses power if it still may crash (returns its
/// restart, due in 100..3000 ms); otherwise (or when healing) the links come back.
fn end_cut(
    sim: &mut turmoil::Sim<'_>,
    gw: &GroupWorld,
    b: i32,
    crash: bool,
    rng: &mut Rng,
    trace: &mut Vec<String>,
) -> Option<(Duration, Undo)> {
    if crash && gw.world.may_crash(b) {
        let dur = rng.ms(100, 3_000);
        let restart = super::power_loss(sim, &gw.world, b, dur, trace);
        return Some((sim.elapsed() + dur, restart));
    }
    trace.push(format!("leader {b} reconnected to its followers"));
    for o in BROKERS.iter().filter(|o| **o != b) {
        sim.repair(host(b).as_str(), host(*o).as_str());
    }
    None
}

/// The simulated network of a run of seed `seed`, as the replication simulation's.
fn build_sim<'a>(seed: u64, rng: &mut Rng) -> (turmoil::Sim<'a>, Duration) {
    let epoch = std::time::UNIX_EPOCH + Duration::from_millis(EPOCH_MS as u64);
    let min_latency = Duration::from_millis(rng.below(2));
    let max_latency = rng.ms(2, 40);
    let sim = turmoil::Builder::new()
        .rng_seed(seed)
        .epoch(epoch)
        .tick_duration(TICK)
        .simulation_duration(FAULT_PHASE + RECOVERY_BOUND + FINAL_BOUND + Duration::from_secs(30))
        .min_message_latency(min_latency)
        .max_message_latency(max_latency)
        .tcp_capacity(1 << 16)
        .build();
    (sim, max_latency)
}

/// Runs seed `seed` to the end.
pub fn run(seed: u64) -> Outcome {
    let mut rng = Rng(seed);
    let gw = GroupWorld::new(seed);
    let world = gw.world.clone();
    let shared = Arc::new(Shared::default());
    let (mut sim, max_latency) = build_sim(seed, &mut rng);
    for b in BROKERS {
        let gw = gw.clone();
        sim.host(host(b).as_str(), move || cluster::run_broker(gw.clone(), b));
    }
    sim.client("client", client::run_members(shared.clone()));

    let mut trace = Vec::new();
    let sample_ms = u128::from(env_u64("SIM_SAMPLE_MS").unwrap_or(250).max(1));
    let mut checker = checks::Sampler::default();
    let mut pending: Vec<(Duration, Undo)> = Vec::new();
    let mut next_fault = rng.ms(200, 1_500);
    let mut healed_at: Option<(Duration, usize)> = None;
    let mut stopped_at: Option<Duration> = None;
    let on = super::enabled_classes();
    // A leader cut off from its followers, and when it loses power (part of the "crash" class).
    let cut_on = super::CLASSES
        .iter()
        .position(|c| *c == "crash")
        .is_some_and(|i| on[i]);
    let mut cut: Option<(Duration, i32)> = None;
    loop {
        let now = sim.elapsed();
        if now < FAULT_PHASE {
            if now >= next_fault {
                if cut_on && rng.below(6) == 0 {
                    if cut.is_none() {
                        cut = cut_off_leader(&mut sim, &gw, &mut rng, &mut trace)
                            .map(|(d, b)| (now + d, b));
                    }
                } else if let Some((d, u)) =
                    super::inject(&mut sim, &world, &mut rng, &mut trace, &on, max_latency)
                {
                    pending.push((now + d, u));
                }
                next_fault = now + rng.ms(200, 1_500);
            }
            if let Some((_, b)) = cut.filter(|(t, _)| *t <= now) {
                cut = None;
                if let Some(u) = end_cut(&mut sim, &gw, b, true, &mut rng, &mut trace) {
                    pending.push(u);
                }
            }
            let (due, rest): (Vec<_>, Vec<_>) = pending.drain(..).partition(|(t, _)| *t <= now);
            pending = rest;
            for (_, u) in due {
                if let Some((d, next)) = super::undo(&mut sim, &world, u, &mut rng, &mut trace) {
                    pending.push((now + d, next));
                }
            }
        } else if healed_at.is_none() {
            if let Some((_, b)) = cut.take() {
                end_cut(&mut sim, &gw, b, false, &mut rng, &mut trace);
            }
            super::heal(&mut sim, &world, &mut pending, &mut rng, &mut trace);
            trace.push(format!("healed at {now:?}"));
            healed_at = Some((now, shared.state.lock().acks));
        }
        let done = match sim.step() {
            Ok(done) => done,
            Err(e) => {
                checker.violations.push(format!("simulation error: {e}"));
                break;
            }
        };
        let views = checker.sample(&gw);
        for (b, disk) in &world.disks {
            disk.set_now_ms(world.clocks[b].at(sim.elapsed()));
        }
        for line in world.ctl.lock().log.drain(..) {
            trace.push(format!("{:?} {line}", sim.elapsed()));
        }
        if sim.elapsed().as_millis() % sample_ms == 0 {
            trace.push(format!("{:?} {}", sim.elapsed(), describe(&views, &shared)));
        }
        if done {
            trace.push(format!(
                "final offsets {:?}",
                shared.state.lock().final_offsets
            ));
            break;
        }
        let Some((at, acks_then)) = healed_at else {
            continue;
        };
        if let Some(stop) = stopped_at {
            if sim.elapsed() - stop > FINAL_BOUND {
                checker.violations.push(format!(
                    "no final OffsetFetch answer {FINAL_BOUND:?} after the members stopped"
                ));
                break;
            }
            continue;
        }
        let progress = shared.state.lock().acks >= acks_then + 2 * MEMBERS;
        if progress && settled(&gw, &views, &shared) {
            trace.push(format!("settled after {:?}", sim.elapsed() - at));
            shared.stop.store(true, Ordering::Release);
            stopped_at = Some(sim.elapsed());
        } else if sim.elapsed() - at > RECOVERY_BOUND {
            checker.violations.push(format!(
                "group not Stable with every member {RECOVERY_BOUND:?} after the faults stopped: {}",
                describe(&views, &shared)
            ));
            break;
        }
    }
    shared.stop.store(true, Ordering::Release);
    let st = shared.state.lock();
    trace.push(format!("errors {:?}", st.errors));
    let mut violations = checker.violations;
    violations.extend(st.violations.iter().cloned());
    Outcome { trace, violations }
}

/// Every seed of `SIM_SEEDS` (or only `SIM_SEED`) runs clean; the first seeds run twice with the same trace.
#[test]
fn groups_under_faults() {
    super::check_seeds("sim::groups", run);
}
