//! Rack-aware replica placement (KIP-36): replicas of a partition on distinct racks while racks remain,
//! leaders spread, brokers without a rack each a rack of their own.

use std::collections::BTreeSet;

use super::*;

/// Registers and unfences broker `id` on `rack`.
pub(super) fn on_rack(s: &mut Sim, id: i32, rack: Option<&str>) {
    let recs = s
        .ctl
        .register_broker(
            &s.image,
            &RegisterBroker {
                broker_id: BrokerId(id),
                incarnation_id: Uuid::from_u128(id as u128),
                host: "localhost".into(),
                port: 9000 + id as u16,
                rack: rack.map(str::to_string),
                listeners: Vec::new(),
                log_dirs: Vec::new(),
            },
            s.now,
        )
        .unwrap();
    s.commit(recs);
    assert!(!s.hb(id, false, false).unwrap().is_fenced);
}

fn racks_of(s: &Sim, replicas: &[BrokerId]) -> BTreeSet<Option<String>> {
    (replicas.iter())
        .map(|b| s.image.brokers[b].rack.clone())
        .collect()
}

#[test]
fn replicas_of_a_partition_land_on_distinct_racks() {
    let mut s = Sim::new(false);
    // Rack a has three brokers, b two, c one: id order alone would put 1, 2, 3 (all rack a) together.
    for (id, rack) in [(1, "a"), (2, "a"), (3, "a"), (4, "b"), (5, "b"), (6, "c")] {
        on_rack(&mut s, id, Some(rack));
    }
    s.create("t", 12, 3).unwrap();
    let mut leaders: BTreeMap<BrokerId, usize> = BTreeMap::new();
    for p in 0..12 {
        let reg = s.part("t", p);
        assert_eq!(
            racks_of(&s, &reg.replicas).len(),
            3,
            "{p}: {:?}",
            reg.replicas
        );
        *leaders.entry(reg.leader).or_default() += 1;
    }
    assert_eq!(
        leaders.len(),
        6,
        "every broker leads some partition: {leaders:?}"
    );
    // Two replicas on three racks: still distinct.
    s.create("u", 6, 2).unwrap();
    for p in 0..6 {
        let reg = s.part("u", p);
        assert_eq!(
            racks_of(&s, &reg.replicas).len(),
            2,
            "{p}: {:?}",
            reg.replicas
        );
    }
}

#[test]
fn more_replicas_than_racks_fill_every_rack_first() {
    let mut s = Sim::new(false);
    for (id, rack) in [(1, "a"), (2, "a"), (3, "b"), (4, "b")] {
        on_rack(&mut s, id, Some(rack));
    }
    s.create("t", 4, 3).unwrap();
    for p in 0..4 {
        let reg = s.part("t", p);
        assert_eq!(
            racks_of(&s, &reg.replicas).len(),
            2,
            "{p}: {:?}",
            reg.replicas
        );
        let distinct: BTreeSet<BrokerId> = reg.replicas.iter().copied().collect();
        assert_eq!(distinct.len(), 3);
    }
}

#[test]
fn brokers_without_a_rack_count_as_racks_of_their_own() {
    let mut s = Sim::new(false);
    on_rack(&mut s, 1, Some("a"));
    on_rack(&mut s, 2, Some("a"));
    on_rack(&mut s, 3, None);
    s.create("t", 3, 2).unwrap();
    for p in 0..3 {
        let reg = s.part("t", p);
        assert!(
            !(reg.replicas.contains(&BrokerId(1)) && reg.replicas.contains(&BrokerId(2))),
            "{p}: both replicas on rack a: {:?}",
            reg.replicas
        );
    }
}
