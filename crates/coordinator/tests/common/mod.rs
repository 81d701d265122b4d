//! Test harness: a coordinator, a clock and request-id allocation, with helpers to pick responses out of effects.
#![allow(dead_code)]

use bytes::{BufMut, Bytes, BytesMut};
use coordinator::*;
use types::ErrorCode;

pub const TOPIC: &str = "t";

/// ConsumerProtocolSubscription v0 for `topics` (user data null).
pub fn subscription(topics: &[&str]) -> Bytes {
    let mut b = BytesMut::new();
    b.put_i16(0);
    b.put_i32(topics.len() as i32);
    for t in topics {
        b.put_i16(t.len() as i16);
        b.put_slice(t.as_bytes());
    }
    b.put_i32(-1);
    b.freeze()
}

pub fn test_config() -> GroupConfig {
    GroupConfig {
        group_min_session_timeout_ms: 1_000,
        group_initial_rebalance_delay_ms: 3_000,
        ..GroupConfig::default()
    }
}

pub struct H {
    pub c: GroupCoordinator,
    pub now: i64,
    next_rid: RequestId,
    /// Every record persisted so far, in order.
    pub persisted: Vec<GroupRecord>,
}

/// A JoinGroup request template: consumer protocol, "range" over TOPIC, v5, session 10 s, rebalance 30 s.
pub fn join_req(group: &str, member_id: &str) -> JoinGroupRequest {
    JoinGroupRequest {
        api_version: 5,
        group_id: group.into(),
        session_timeout_ms: 10_000,
        rebalance_timeout_ms: 30_000,
        member_id: member_id.into(),
        group_instance_id: None,
        protocol_type: CONSUMER_PROTOCOL_TYPE.into(),
        protocols: vec![JoinProtocol {
            name: "range".into(),
            metadata: subscription(&[TOPIC]),
        }],
        client_id: "client".into(),
        client_host: "/127.0.0.1".into(),
    }
}

pub fn protocols(names: &[&str]) -> Vec<JoinProtocol> {
    names
        .iter()
        .map(|n| JoinProtocol {
            name: (*n).into(),
            metadata: subscription(&[TOPIC]),
        })
        .collect()
}

impl H {
    pub fn new() -> Self {
        Self::with_config(test_config())
    }

    pub fn with_config(config: GroupConfig) -> Self {
        H {
            c: GroupCoordinator::new(config),
            now: 1_000_000,
            next_rid: 1,
            persisted: Vec::new(),
        }
    }

    pub fn rid(&mut self) -> RequestId {
        self.next_rid += 1;
        self.next_rid
    }

    fn record(&mut self, fx: &[Effect]) {
        for e in fx {
            if let Effect::Persist(r) = e {
                self.persisted.push(r.clone());
            }
        }
    }

    /// Sends a JoinGroup; returns its request id and the effects.
    pub fn join(&mut self, req: JoinGroupRequest) -> (RequestId, Vec<Effect>) {
        let rid = self.rid();
        let fx = self.c.join_group(self.now, rid, req);
        self.record(&fx);
        (rid, fx)
    }

    /// Sends a SyncGroup; returns its request id and the effects.
    pub fn sync(&mut self, req: SyncGroupRequest) -> (RequestId, Vec<Effect>) {
        let rid = self.rid();
        let fx = self.c.sync_group(self.now, rid, req);
        self.record(&fx);
        (rid, fx)
    }

    pub fn heartbeat(&mut self, group: &str, member: &str, generation: i32) -> ErrorCode {
        let out = self.c.heartbeat(self.now, group, member, None, generation);
        self.record(&out.effects);
        out.response
    }

    pub fn heartbeat_static(
        &mut self,
        group: &str,
        member: &str,
        instance: &str,
        generation: i32,
    ) -> ErrorCode {
        let out = self
            .c
            .heartbeat(self.now, group, member, Some(instance), generation);
        self.record(&out.effects);
        out.response
    }

    /// Advances the clock by `ms` and fires timers.
    pub fn advance(&mut self, ms: i64) -> Vec<Effect> {
        self.now += ms;
        let fx = self.c.tick(self.now);
        self.record(&fx);
        fx
    }

    /// Full dynamic first join (v5): MEMBER_ID_REQUIRED, then rejoin with the id. Returns (member id, rejoin
    /// request id, effects of the rejoin).
    pub fn join_new(&mut self, mut req: JoinGroupRequest) -> (String, RequestId, Vec<Effect>) {
        req.member_id.clear();
        let (rid, fx) = self.join(req.clone());
        let r = join_resp(&fx, rid).expect("MEMBER_ID_REQUIRED response");
        assert_eq!(r.error_code, ErrorCode::MEMBER_ID_REQUIRED);
        assert!(r.member_id.starts_with("client-"), "{}", r.member_id);
        req.member_id = r.member_id.clone();
        let (rid2, fx2) = self.join(req);
        (r.member_id, rid2, fx2)
    }

    pub fn sync_req(
        &self,
        group: &str,
        member: &str,
        generation: i32,
        assignments: Vec<(String, Bytes)>,
    ) -> SyncGroupRequest {
        SyncGroupRequest {
            group_id: group.into(),
            generation_id: generation,
            member_id: member.into(),
            group_instance_id: None,
            protocol_type: Some(CONSUMER_PROTOCOL_TYPE.into()),
            protocol_name: Some("range".into()),
            assignments,
        }
    }

    pub fn commit(&mut self, group: &str, generation: i32, member: &str, offset: i64) -> ErrorCode {
        let req = OffsetCommitRequest {
            api_version: 8,
            group_id: group.into(),
            generation_id: generation,
            member_id: member.into(),
            group_instance_id: None,
            retention_time_ms: -1,
            topics: vec![(
                TOPIC.into(),
                vec![OffsetCommitPartition {
                    partition_index: 0,
                    committed_offset: types::Offset(offset),
                    committed_leader_epoch: types::LeaderEpoch(3),
                    committed_metadata: Some("m".into()),
                }],
            )],
        };
        let out = self.c.commit_offsets(self.now, &req);
        self.record(&out.effects);
        out.response[0].1[0].1
    }

    pub fn committed(&self, group: &str) -> i64 {
        self.c
            .fetch_offsets(group, Some(&[(TOPIC.to_string(), vec![0])]))
            .topics[0]
            .1[0]
            .committed_offset
            .0
    }
}

pub fn join_resp(fx: &[Effect], rid: RequestId) -> Option<JoinResult> {
    fx.iter().find_map(|e| match e {
        Effect::JoinResponse { request, response } if *request == rid => Some(response.clone()),
        _ => None,
    })
}

pub fn sync_resp(fx: &[Effect], rid: RequestId) -> Option<SyncResult> {
    fx.iter().find_map(|e| match e {
        Effect::SyncResponse { request, response } if *request == rid => Some(response.clone()),
        _ => None,
    })
}

pub fn join_responses(fx: &[Effect]) -> Vec<JoinResult> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::JoinResponse { response, .. } => Some(response.clone()),
            _ => None,
        })
        .collect()
}

pub fn persisted(fx: &[Effect]) -> Vec<GroupRecord> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::Persist(r) => Some(r.clone()),
            _ => None,
        })
        .collect()
}

/// Brings `n` dynamic members of `group` to Stable at generation 1 (one initial rebalance). Returns member ids,
/// leader first.
pub fn stable_group(h: &mut H, group: &str, n: usize) -> Vec<String> {
    let mut ids = Vec::new();
    let mut rids = Vec::new();
    for _ in 0..n {
        let (id, rid, fx) = h.join_new(join_req(group, ""));
        assert!(
            join_resp(&fx, rid).is_none(),
            "initial join must wait for the delay"
        );
        ids.push(id);
        rids.push(rid);
    }
    let fx = h.advance(3_000);
    let fx = if join_responses(&fx).is_empty() {
        h.advance(3_000)
    } else {
        fx
    };
    let resps: Vec<JoinResult> = rids
        .iter()
        .map(|r| join_resp(&fx, *r).expect("join response"))
        .collect();
    let leader = resps[0].leader.clone();
    for r in &resps {
        assert_eq!(r.error_code, ErrorCode::NONE);
        assert_eq!(r.generation_id, 1);
    }
    let mut ordered = vec![leader.clone()];
    ordered.extend(ids.iter().filter(|i| **i != leader).cloned());
    // Leader syncs with one byte per member.
    let assignments = ordered
        .iter()
        .enumerate()
        .map(|(i, m)| (m.clone(), Bytes::from(vec![i as u8])))
        .collect();
    let followers: Vec<(RequestId, Vec<Effect>)> = ordered[1..]
        .iter()
        .map(|m| {
            let r = h.sync_req(group, m, 1, vec![]);
            h.sync(r)
        })
        .collect();
    for (rid, fx) in &followers {
        assert!(
            sync_resp(fx, *rid).is_none(),
            "follower waits for the leader"
        );
    }
    let req = h.sync_req(group, &leader, 1, assignments);
    let (_rid, fx) = h.sync(req);
    for (i, (rid, _)) in followers.iter().enumerate() {
        assert_eq!(
            sync_resp(&fx, *rid).unwrap().assignment,
            Bytes::from(vec![(i + 1) as u8])
        );
    }
    assert_eq!(h.c.group_state(group), Some(GroupState::Stable));
    ordered
}
