//! Automatic balancing: a new broker gets its share of replicas and leaderships, moves are bounded, dead
//! brokers' replicas are re-placed after the delay, cordoned brokers get nothing, racks stay distinct,
//! bytes are evened out by swaps, and a balanced cluster is left alone.

use std::collections::BTreeSet;

use super::placement_tests::on_rack;
use super::*;

const INTERVAL: i64 = 1_000;

fn balancing(max_moves: usize, dead_delay_ms: i64) -> Sim {
    let mut s = Sim::new(false);
    s.ctl = QuorumControl::new(
        ControlConfig {
            balancer: BalancerConfig {
                enable: true,
                check_interval_ms: INTERVAL,
                max_concurrent_moves: max_moves,
                max_spread_percent: 10,
                dead_broker_delay_ms: dead_delay_ms,
            },
            ..cfg(false)
        },
        1,
    );
    s
}

/// Every partition being reassigned gets its whole target into the ISR from its leader, which completes it.
fn catch_up(s: &mut Sim) {
    let moving: Vec<(String, i32, Vec<BrokerId>)> = (s.image.topics.iter())
        .flat_map(|(name, t)| {
            (t.partitions.iter())
                .filter(|(_, p)| p.is_reassigning())
                .map(|(&i, p)| (name.clone(), i, p.replicas.clone()))
                .collect::<Vec<_>>()
        })
        .collect();
    for (topic, p, replicas) in moving {
        let isr: Vec<BrokerId> = replicas
            .into_iter()
            .filter(|&r| s.image.is_active_broker(r))
            .collect();
        s.set_isr(&topic, p, isr);
    }
}

/// Ticks one check interval later, keeping `alive`'s sessions fresh.
fn step(s: &mut Sim, alive: &[i32]) {
    for &b in alive {
        s.hb(b, false, false).unwrap();
    }
    let now = s.now + INTERVAL;
    s.tick_at(now);
}

fn reassigning(s: &Sim) -> usize {
    (s.image.topics.values())
        .flat_map(|t| t.partitions.values())
        .filter(|p| p.is_reassigning())
        .count()
}

fn count_per_broker(s: &Sim, first_only: bool) -> BTreeMap<BrokerId, usize> {
    let mut out: BTreeMap<BrokerId, usize> = s.image.brokers.keys().map(|&b| (b, 0)).collect();
    for p in s.image.topics.values().flat_map(|t| t.partitions.values()) {
        let take = if first_only { 1 } else { p.replicas.len() };
        for r in p.replicas.iter().take(take) {
            *out.entry(*r).or_default() += 1;
        }
    }
    out
}

fn spread(counts: &BTreeMap<BrokerId, usize>) -> usize {
    counts.values().max().unwrap() - counts.values().min().unwrap()
}

/// Steps (completing every move) until a step decides nothing; panics after `bound` steps. The first step
/// only arms the check interval.
fn settle(s: &mut Sim, alive: &[i32], bound: usize) {
    step(s, alive);
    for _ in 0..bound {
        let before = s.log.len();
        step(s, alive);
        catch_up(s);
        if s.log.len() == before {
            return;
        }
    }
    panic!("balancing did not settle in {bound} steps");
}

#[test]
fn a_new_broker_gets_its_share_of_replicas_and_leaderships() {
    let mut s = balancing(10, -1);
    s.active(&[1, 2, 3]);
    s.create("t", 12, 3).unwrap();
    on_rack(&mut s, 4, None);
    settle(&mut s, &[1, 2, 3, 4], 20);
    let replicas = count_per_broker(&s, false);
    assert_eq!(replicas.values().copied().collect::<Vec<_>>(), vec![9; 4]);
    assert!(
        spread(&count_per_broker(&s, true)) <= 1,
        "{s:?}",
        s = count_per_broker(&s, true)
    );
    for p in s.image.topics["t"].partitions.values() {
        let distinct: BTreeSet<BrokerId> = p.replicas.iter().copied().collect();
        assert_eq!(distinct.len(), 3, "replication factor kept: {p:?}");
        assert!(!p.is_reassigning());
        assert_eq!(
            p.leader, p.replicas[0],
            "the preferred replica leads: {p:?}"
        );
    }
    // Balanced: a further step changes nothing.
    let before = s.log.len();
    step(&mut s, &[1, 2, 3, 4]);
    assert_eq!(s.log.len(), before);
}

#[test]
fn moves_are_bounded_by_max_concurrent_moves_and_wait_for_the_interval() {
    let mut s = balancing(2, -1);
    s.active(&[1, 2, 3]);
    s.create("t", 12, 3).unwrap();
    on_rack(&mut s, 4, None);
    s.tick_at(s.now + INTERVAL / 2);
    assert_eq!(reassigning(&s), 0, "not before the check interval");
    step(&mut s, &[1, 2, 3, 4]);
    assert_eq!(reassigning(&s), 2);
    step(&mut s, &[1, 2, 3, 4]);
    assert_eq!(reassigning(&s), 2, "no new move while two are in progress");
}

#[test]
fn a_dead_brokers_replicas_are_replaced_after_the_delay() {
    let mut s = balancing(10, 60_000);
    s.active(&[1, 2, 3, 4]);
    s.create("t", 8, 3).unwrap();
    let on_2 = |s: &Sim| {
        (s.image.topics["t"].partitions.values())
            .filter(|p| p.replicas.contains(&BrokerId(2)))
            .count()
    };
    assert!(on_2(&s) > 0);
    // Broker 2 goes silent: fenced after the session timeout, re-placed only after the delay.
    for _ in 0..20 {
        step(&mut s, &[1, 3, 4]);
        catch_up(&mut s);
    }
    assert!(s.image.brokers[&BrokerId(2)].fenced);
    assert!(on_2(&s) > 0, "still waiting for the dead-broker delay");
    for _ in 0..80 {
        step(&mut s, &[1, 3, 4]);
        catch_up(&mut s);
    }
    settle(&mut s, &[1, 3, 4], 20);
    assert_eq!(on_2(&s), 0);
    for p in s.image.topics["t"].partitions.values() {
        assert_eq!(p.replicas.len(), 3);
        assert_eq!(p.isr.len(), 3, "replication factor restored: {p:?}");
    }
}

#[test]
fn a_cordoned_broker_gets_no_new_replicas() {
    let mut s = balancing(10, -1);
    s.active(&[1, 2, 3]);
    s.create("t", 6, 2).unwrap();
    on_rack(&mut s, 4, None);
    s.commit(vec![MetadataRecord::ConfigRecord {
        resource_type: RESOURCE_BROKER,
        resource_name: "4".into(),
        name: metadata::CORDONED_LOG_DIRS.into(),
        value: Some("*".into()),
    }]);
    settle(&mut s, &[1, 2, 3, 4], 10);
    assert_eq!(count_per_broker(&s, false)[&BrokerId(4)], 0);
    // New topics skip it too (KIP-1066).
    s.create("u", 6, 3).unwrap();
    assert_eq!(count_per_broker(&s, false)[&BrokerId(4)], 0);
}

#[test]
fn moves_keep_replicas_of_a_partition_on_distinct_racks() {
    let mut s = balancing(10, -1);
    for (id, rack) in [(1, "a"), (2, "b"), (3, "c")] {
        on_rack(&mut s, id, Some(rack));
    }
    s.create("t", 9, 2).unwrap();
    on_rack(&mut s, 4, Some("a"));
    on_rack(&mut s, 5, Some("b"));
    settle(&mut s, &[1, 2, 3, 4, 5], 20);
    assert!(count_per_broker(&s, false)[&BrokerId(4)] > 0);
    for p in s.image.topics["t"].partitions.values() {
        let racks: BTreeSet<Option<String>> = (p.replicas.iter())
            .map(|b| s.image.brokers[b].rack.clone())
            .collect();
        assert_eq!(
            racks.len(),
            p.replicas.len(),
            "two replicas on one rack: {p:?}"
        );
    }
}

#[test]
fn bytes_are_evened_out_by_swapping_partitions() {
    let mut s = balancing(10, -1);
    s.active(&[1, 2]);
    s.create("t", 8, 1).unwrap();
    let gib = 1u64 << 30;
    let id = s.image.topics["t"].topic_id;
    let sizes: Vec<(Uuid, i32, u64)> = (s.image.topics["t"].partitions.iter())
        .map(|(&i, p)| {
            (
                id,
                i,
                if p.replicas[0] == BrokerId(1) {
                    gib
                } else {
                    1 << 20
                },
            )
        })
        .collect();
    s.ctl.note_partition_sizes(&sizes);
    let bytes = |s: &Sim, b: i32| -> u64 {
        (s.image.topics["t"].partitions.iter())
            .filter(|(_, p)| p.replicas.contains(&BrokerId(b)))
            .map(|(&i, _)| sizes.iter().find(|x| x.1 == i).unwrap().2)
            .sum()
    };
    assert!(bytes(&s, 1) > 3 * gib && bytes(&s, 2) < gib);
    settle(&mut s, &[1, 2], 20);
    assert_eq!(
        bytes(&s, 1).abs_diff(bytes(&s, 2)),
        0,
        "two GiB partitions each"
    );
    assert!(spread(&count_per_broker(&s, false)) <= 1);
}

#[test]
fn replicas_on_an_unregistered_broker_are_replaced_at_once() {
    let mut s = balancing(10, 600_000);
    s.active(&[1, 2, 3, 4]);
    s.create("t", 4, 3).unwrap();
    // Broker 4 is unregistered without a drain: its replicas have nowhere to come back to.
    let recs = s.ctl.unregister_broker(&s.image, BrokerId(4)).unwrap();
    s.commit(recs);
    settle(&mut s, &[1, 2, 3], 10);
    for p in s.image.topics["t"].partitions.values() {
        assert!(!p.replicas.contains(&BrokerId(4)), "{p:?}");
        assert_eq!(p.replicas.len(), 3);
    }
}
