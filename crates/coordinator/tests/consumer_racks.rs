//! Rack-aware assignment of KIP-848 consumer groups (KIP-881): members with a `client.rack` get the partitions
//! whose replicas are on their rack, and a change of the partitions' racks (KIP-1101: part of the metadata
//! hash) re-assigns.

use std::collections::{BTreeMap, BTreeSet};

use coordinator::consumer::Assignment;
use coordinator::*;
use types::ErrorCode;
use uuid::Uuid;

const G: &str = "racks";
const TOPIC: Uuid = Uuid::from_u128(0x7);

/// A coordinator and members that revoke at once and take what they are given.
struct H {
    c: GroupCoordinator,
    image: TopicsImage,
    owned: BTreeMap<String, Assignment>,
    epochs: BTreeMap<String, i32>,
    racks: BTreeMap<String, String>,
    assignor: &'static str,
}

/// Topic "t" of `racks.len()` partitions, partition `p` on the one rack `racks[p]` (a letter).
fn image(version: u64, racks: &str) -> TopicsImage {
    let partitions = racks.len() as i32;
    let per_partition: Vec<BTreeSet<String>> = racks
        .chars()
        .map(|r| [r.to_string()].into_iter().collect())
        .collect();
    TopicsImage::new(version, [("t".to_string(), TOPIC, partitions)])
        .with_partition_racks(TOPIC, per_partition)
}

impl H {
    fn new(racks: &str, assignor: &'static str) -> H {
        H {
            c: GroupCoordinator::new(GroupConfig::default()),
            image: image(1, racks),
            owned: BTreeMap::new(),
            epochs: BTreeMap::new(),
            racks: BTreeMap::new(),
            assignor,
        }
    }

    fn hb(&mut self, member: &str) {
        let epoch = self.epochs.get(member).copied().unwrap_or(0);
        let req = ConsumerHeartbeatRequest {
            api_version: 1,
            group_id: G.into(),
            member_id: member.into(),
            member_epoch: epoch,
            rack_id: (epoch == 0).then(|| self.racks[member].clone()),
            rebalance_timeout_ms: if epoch == 0 { 30_000 } else { -1 },
            subscribed_topic_names: (epoch == 0).then(|| vec!["t".to_string()]),
            server_assignor: (epoch == 0).then(|| self.assignor.to_string()),
            topic_partitions: Some(self.owned.get(member).cloned().unwrap_or_default()),
            client_id: "c".into(),
            client_host: "/127.0.0.1".into(),
            ..Default::default()
        };
        let r = self
            .c
            .consumer_group_heartbeat(1_000_000, &req, &self.image)
            .response;
        assert_eq!(r.error_code, ErrorCode::NONE, "{member}: {r:?}");
        self.epochs.insert(member.to_string(), r.member_epoch);
        if let Some(a) = r.assignment {
            self.owned.insert(member.to_string(), a);
        }
    }

    fn join(&mut self, member: &str, rack: &str) {
        self.racks.insert(member.to_string(), rack.to_string());
        self.hb(member);
    }

    fn settle(&mut self) {
        let members: Vec<String> = self.racks.keys().cloned().collect();
        for _ in 0..10 {
            for m in &members {
                self.hb(m);
            }
            if self.c.describe_consumer_group(G).group_state == "Stable" {
                return;
            }
        }
        panic!("not stable: {:?}", self.c.describe_consumer_group(G));
    }

    fn owned(&self, member: &str) -> BTreeSet<i32> {
        (self.owned.get(member))
            .and_then(|a| a.get(&TOPIC))
            .cloned()
            .unwrap_or_default()
    }
}

fn set(ps: &[i32]) -> BTreeSet<i32> {
    ps.iter().copied().collect()
}

#[test]
fn uniform_members_get_the_partitions_on_their_rack() {
    let mut h = H::new("aabbcc", "uniform");
    // c joins first and takes everything; the others take their racks' partitions from it.
    h.join("m-c", "c");
    h.join("m-a", "a");
    h.join("m-b", "b");
    h.settle();
    assert_eq!(h.owned("m-a"), set(&[0, 1]));
    assert_eq!(h.owned("m-b"), set(&[2, 3]));
    assert_eq!(h.owned("m-c"), set(&[4, 5]));
}

#[test]
fn range_members_get_the_partitions_on_their_rack() {
    let mut h = H::new("ccbbaa", "range");
    for (m, r) in [("m0", "a"), ("m1", "b"), ("m2", "c")] {
        h.join(m, r);
    }
    h.settle();
    assert_eq!(h.describe_assignor(), "range");
    assert_eq!(h.owned("m0"), set(&[4, 5]));
    assert_eq!(h.owned("m1"), set(&[2, 3]));
    assert_eq!(h.owned("m2"), set(&[0, 1]));
}

#[test]
fn a_change_of_the_partitions_racks_reassigns() {
    let mut h = H::new("aabb", "uniform");
    h.join("m-a", "a");
    h.join("m-b", "b");
    h.settle();
    assert_eq!(
        (h.owned("m-a"), h.owned("m-b")),
        (set(&[0, 1]), set(&[2, 3]))
    );
    let epoch = h.c.describe_consumer_group(G).group_epoch;
    // The replicas move: same topics, same partition count, other racks.
    h.image = image(2, "bbaa");
    h.settle();
    let after = h.c.describe_consumer_group(G);
    assert!(after.group_epoch > epoch, "{epoch} → {after:?}");
    assert_eq!(
        (h.owned("m-a"), h.owned("m-b")),
        (set(&[2, 3]), set(&[0, 1]))
    );
}

impl H {
    fn describe_assignor(&self) -> String {
        self.c.describe_consumer_group(G).assignor_name
    }
}
