//! `runnel consume --share-group G --topic T`: a KIP-932 share consumer over our own codec.
//!
//! The member id is generated here (a UUID v4). The member joins with ShareGroupHeartbeat (epoch 0 and the
//! subscribed topic) and heartbeats with the returned epoch every `heartbeat_interval_ms`; each assigned
//! partition is fetched with ShareFetch from its leader, one share session per leader (session epoch 0, then
//! 1, 2, ...; MaxRecords and BatchSize 500, MaxWaitMs 500). Only records inside the response's acquired
//! ranges are printed (as `runnel consume` prints them); each is acknowledged with `--ack` (accept 1, release
//! 2, reject 3) on the next ShareFetch, offsets of an acquired range without a record (compacted, control
//! records) as GAP (0), and records acquired beyond `--max-messages` are released. On exit (`--max-messages`
//! reached, Ctrl-C) a ShareAcknowledge with session epoch -1 closes each session with the pending
//! acknowledgements, and a heartbeat with epoch -1 leaves the group.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail};
use protocol::messages::share_fetch_request::{
    AcknowledgementBatch, FetchPartition, FetchTopic, ForgottenTopic,
};
use protocol::messages::share_fetch_response::PartitionData;
use protocol::messages::{ShareAcknowledgeRequest, ShareFetchRequest, ShareGroupHeartbeatRequest};
use protocol::record::{Record, TimestampType};
use serde_json::{json, Value};

use crate::client::{check, protocol_words, ConnArgs, RateLine};
use crate::consume::ConsumeArgs;
use crate::share_group::{topic_meta, TopicMeta};
use crate::wire::{call_api, Wire};

/// Acknowledgement types (KIP-932).
const GAP: i8 = 0;
const RELEASE: i8 = 2;

/// The `--ack` type's code: accept 1, release 2, reject 3.
pub fn ack_code(ack: &str) -> anyhow::Result<i8> {
    match ack {
        "accept" => Ok(1),
        "release" => Ok(2),
        "reject" => Ok(3),
        other => bail!("--ack {other:?}: expected accept, release or reject"),
    }
}

/// The member's view of the group.
struct Member {
    group: String,
    topic: String,
    id: String,
    epoch: i32,
    interval: Duration,
    next_heartbeat: Instant,
    coordinator: Option<Wire>,
    /// The assigned partitions of the topic.
    assigned: BTreeSet<i32>,
}

impl Member {
    /// Sends a ShareGroupHeartbeat with the current epoch (0: join with the subscription, -1: leave).
    fn heartbeat(&mut self, conn: &ConnArgs, topic_id: uuid::Uuid) -> anyhow::Result<()> {
        if self.coordinator.is_none() {
            let deadline = Instant::now() + conn.timeout();
            self.coordinator = Some(crate::group::coordinator(conn, &self.group, deadline)?);
        }
        let Some(w) = self.coordinator.as_mut() else {
            unreachable!("connected above");
        };
        let request = ShareGroupHeartbeatRequest {
            group_id: self.group.clone(),
            member_id: self.id.clone(),
            member_epoch: self.epoch,
            subscribed_topic_names: (self.epoch == 0).then(|| vec![self.topic.clone()]),
            ..Default::default()
        };
        let r = call_api!(w, ShareGroupHeartbeat, request, 1);
        match r.error_code {
            0 => {}
            // Loading, not available, not the coordinator: find it again shortly.
            14..=16 => {
                self.coordinator = None;
                self.next_heartbeat = Instant::now() + Duration::from_millis(200);
                return Ok(());
            }
            // Unknown member, fenced epoch: join again.
            25 | 110 if self.epoch > 0 => {
                eprintln!(
                    "runnel: warning: share group '{}': {}; joining again",
                    self.group,
                    protocol_words(r.error_code, r.error_message.as_deref())
                );
                self.epoch = 0;
                self.assigned.clear();
                self.next_heartbeat = Instant::now();
                return Ok(());
            }
            code => check(
                code,
                r.error_message.as_deref(),
                format_args!("heartbeat to share group '{}'", self.group),
            )?,
        }
        if let Some(id) = r.member_id.filter(|id| !id.is_empty()) {
            self.id = id;
        }
        self.epoch = r.member_epoch;
        self.interval = Duration::from_millis(r.heartbeat_interval_ms.max(100) as u64);
        self.next_heartbeat = Instant::now() + self.interval;
        if let Some(a) = r.assignment {
            self.assigned = (a.topic_partitions.iter())
                .filter(|t| t.topic_id == topic_id)
                .flat_map(|t| t.partitions.iter().copied())
                .collect();
        }
        Ok(())
    }
}

/// A share session with one leader.
struct Session {
    wire: Wire,
    epoch: i32,
    partitions: BTreeSet<i32>,
}

/// Pending acknowledgements: partition → (offset, type).
type Acks = BTreeMap<i32, Vec<(i64, i8)>>;

/// `acks` as acknowledgement batches: runs of consecutive offsets with the same type.
fn ack_batches(mut acks: Vec<(i64, i8)>) -> Vec<AcknowledgementBatch> {
    acks.sort_unstable();
    acks.dedup_by_key(|a| a.0);
    let mut out: Vec<AcknowledgementBatch> = Vec::new();
    for (o, t) in acks {
        match out.last_mut() {
            Some(b) if b.last_offset + 1 == o && b.acknowledge_types == [t] => b.last_offset = o,
            _ => out.push(AcknowledgementBatch {
                first_offset: o,
                last_offset: o,
                acknowledge_types: vec![t],
                ..Default::default()
            }),
        }
    }
    out
}

/// What one consumer run needs while it processes responses.
struct Output<'a> {
    args: &'a ConsumeArgs,
    topic: &'a str,
    ack: i8,
    json: bool,
    count: u64,
    max: u64,
    out: std::io::BufWriter<std::io::StdoutLock<'static>>,
    rate: RateLine,
}

impl Output<'_> {
    /// Prints the records of `p` inside its acquired ranges (up to the maximum) and queues their
    /// acknowledgements; offsets without a record become GAP, records beyond the maximum are released.
    fn partition(&mut self, p: &PartitionData, acks: &mut Acks) -> anyhow::Result<()> {
        let in_range =
            |o: i64| (p.acquired_records.iter()).any(|r| r.first_offset <= o && o <= r.last_offset);
        let mut seen = BTreeSet::new();
        let pending = acks.entry(p.partition_index).or_default();
        if let Some(protocol::record::Records::Memory(bytes)) = &p.records {
            for batch in protocol::record::batches(bytes) {
                let batch = batch.map_err(|e| anyhow!("partition {}: {e}", p.partition_index))?;
                if batch.is_control() {
                    continue;
                }
                let ts_type = batch.timestamp_type();
                let records = batch.records().map_err(|e| anyhow!("{e}"))?;
                for r in records {
                    if !in_range(r.offset) || !seen.insert(r.offset) {
                        continue;
                    }
                    if self.count >= self.max {
                        pending.push((r.offset, RELEASE));
                        continue;
                    }
                    let bytes = match self.json {
                        true => self.format_json(p.partition_index, &r, ts_type),
                        false => self.format_text(p.partition_index, &r, ts_type),
                    };
                    self.out
                        .write_all(&bytes)
                        .map_err(|e| anyhow!("writing stdout: {e}"))?;
                    pending.push((r.offset, self.ack));
                    self.count += 1;
                    let len = r.value.as_ref().map_or(0, |v| v.len());
                    self.rate.tick(len + r.key.as_ref().map_or(0, |k| k.len()));
                }
            }
        }
        for r in &p.acquired_records {
            for o in r.first_offset..=r.last_offset {
                if !seen.contains(&o) {
                    pending.push((o, GAP));
                }
            }
        }
        Ok(())
    }

    fn format_json(&self, partition: i32, r: &Record, ts_type: TimestampType) -> Vec<u8> {
        let lossy = |b: Option<&bytes::Bytes>| match b {
            Some(b) => Value::String(String::from_utf8_lossy(b).into_owned()),
            None => Value::Null,
        };
        let headers: Vec<Value> = (r.headers.iter())
            .map(|(k, v)| json!([k, lossy(v.as_ref())]))
            .collect();
        let v = json!({
            "topic": self.topic, "partition": partition, "offset": r.offset,
            "timestamp": r.timestamp, "timestamp_type": format!("{ts_type:?}"),
            "key": lossy(r.key.as_ref()), "value": lossy(r.value.as_ref()), "headers": headers,
        });
        let mut out = serde_json::to_vec(&v).unwrap_or_default();
        out.push(b'\n');
        out
    }

    fn format_text(&self, partition: i32, r: &Record, ts_type: TimestampType) -> Vec<u8> {
        let a = self.args;
        let sep = a.key_separator.as_bytes();
        let mut out = Vec::new();
        let mut field = |bytes: &[u8]| {
            out.extend_from_slice(bytes);
            out.extend_from_slice(sep);
        };
        if a.print_timestamp {
            field(format!("{ts_type:?}:{}", r.timestamp).as_bytes());
        }
        if a.print_partition {
            field(format!("Partition:{partition}").as_bytes());
        }
        if a.print_offset {
            field(format!("Offset:{}", r.offset).as_bytes());
        }
        if a.print_headers {
            let hs: Vec<String> = (r.headers.iter())
                .map(|(k, v)| {
                    let v = v.as_ref().map_or(b"null".as_slice(), |v| v.as_ref());
                    format!("{k}:{}", String::from_utf8_lossy(v))
                })
                .collect();
            match hs.is_empty() {
                true => field(b"NO_HEADERS"),
                false => field(hs.join(",").as_bytes()),
            }
        }
        if a.print_key {
            field(r.key.as_deref().unwrap_or(b"null"));
        }
        out.extend_from_slice(r.value.as_deref().unwrap_or(b"null"));
        out.push(b'\n');
        out
    }
}

/// Runs the share consumer of `args` (`--share-group` set).
pub fn run(args: &ConsumeArgs, group: &str, topic: &str) -> anyhow::Result<()> {
    let conn = &args.conn;
    conn.preflight()?;
    let mut bootstrap = Wire::connect_any(conn)?;
    let mut meta = topic_meta(&mut bootstrap, topic)?;
    let mut member = Member {
        group: group.to_string(),
        topic: topic.to_string(),
        id: uuid::Uuid::new_v4().to_string(),
        epoch: 0,
        interval: Duration::from_secs(5),
        next_heartbeat: Instant::now(),
        coordinator: None,
        assigned: BTreeSet::new(),
    };
    let mut output = Output {
        args,
        topic,
        ack: ack_code(&args.ack)?,
        json: args.format == "json" || conn.json,
        count: 0,
        max: args.max_messages.unwrap_or(u64::MAX),
        out: std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock()),
        rate: RateLine::new("consumed"),
    };
    let stop = crate::consume::stop_flag();
    let mut sessions: BTreeMap<String, Session> = BTreeMap::new();
    let mut acks = Acks::new();
    let mut result = Ok(());
    while output.count < output.max && !stop.load(Ordering::SeqCst) {
        let step = step(
            conn,
            &mut member,
            &mut meta,
            &mut sessions,
            &mut acks,
            &mut output,
        );
        if let Err(e) = step {
            result = Err(e);
            break;
        }
        let _ = output.out.flush();
    }
    let _ = output.out.flush();
    output.rate.finish();
    let closed = close(&member, &meta, &mut sessions, &mut acks);
    if member.epoch > 0 {
        member.epoch = -1;
        let left = member.heartbeat(conn, meta.id);
        result = result.and(left);
    }
    result.and(closed)
}

/// One round: a heartbeat when due, then a ShareFetch to every leader of an assigned partition.
fn step(
    conn: &ConnArgs,
    member: &mut Member,
    meta: &mut TopicMeta,
    sessions: &mut BTreeMap<String, Session>,
    acks: &mut Acks,
    output: &mut Output<'_>,
) -> anyhow::Result<()> {
    if Instant::now() >= member.next_heartbeat {
        member.heartbeat(conn, meta.id)?;
    }
    if member.assigned.is_empty() {
        std::thread::sleep(Duration::from_millis(100));
        return Ok(());
    }
    let mut by_leader: BTreeMap<String, BTreeSet<i32>> = BTreeMap::new();
    for p in &member.assigned {
        match meta.leader_addr(*p) {
            Some(a) => by_leader.entry(a.to_string()).or_default().insert(*p),
            None => continue,
        };
    }
    if by_leader.is_empty() {
        std::thread::sleep(Duration::from_millis(200));
        let mut w = Wire::connect_any(conn)?;
        *meta = topic_meta(&mut w, &member.topic)?;
        return Ok(());
    }
    for (addr, parts) in by_leader {
        if !sessions.contains_key(&addr) {
            let wire = Wire::connect(&addr, conn)?;
            let s = Session {
                wire,
                epoch: 0,
                partitions: BTreeSet::new(),
            };
            sessions.insert(addr.clone(), s);
        }
        let Some(s) = sessions.get_mut(&addr) else {
            unreachable!("inserted above");
        };
        if fetch(member, meta, s, &parts, acks, output)? {
            let mut w = Wire::connect_any(conn)?;
            *meta = topic_meta(&mut w, &member.topic)?;
        }
        if output.count >= output.max {
            break;
        }
    }
    Ok(())
}

/// One ShareFetch of `parts` in session `s`, carrying their pending acknowledgements. True when the
/// metadata should be refreshed (a partition's leader moved).
fn fetch(
    member: &Member,
    meta: &TopicMeta,
    s: &mut Session,
    parts: &BTreeSet<i32>,
    acks: &mut Acks,
    output: &mut Output<'_>,
) -> anyhow::Result<bool> {
    let forgotten: Vec<i32> = s.partitions.difference(parts).copied().collect();
    let request = ShareFetchRequest {
        group_id: Some(member.group.clone()),
        member_id: Some(member.id.clone()),
        share_session_epoch: s.epoch,
        max_wait_ms: 500,
        min_bytes: 1,
        max_records: 500,
        batch_size: 500,
        topics: vec![FetchTopic {
            topic_id: meta.id,
            partitions: (parts.iter())
                .map(|p| FetchPartition {
                    partition_index: *p,
                    acknowledgement_batches: ack_batches(acks.remove(p).unwrap_or_default()),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }],
        forgotten_topics_data: match forgotten.is_empty() {
            true => Vec::new(),
            false => vec![ForgottenTopic {
                topic_id: meta.id,
                partitions: forgotten,
                ..Default::default()
            }],
        },
        ..Default::default()
    };
    let r = call_api!(s.wire, ShareFetch, request, 2);
    match r.error_code {
        0 => {}
        // SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH: start a new session.
        122 | 123 => {
            s.epoch = 0;
            s.partitions.clear();
            return Ok(false);
        }
        code => check(
            code,
            r.error_message.as_deref(),
            format_args!("ShareFetch from {}", s.wire.addr()),
        )?,
    }
    s.epoch = if s.epoch >= i32::MAX - 1 {
        1
    } else {
        s.epoch + 1
    };
    s.partitions = parts.clone();
    let mut refresh = false;
    for t in r.responses.iter().filter(|t| t.topic_id == meta.id) {
        for p in &t.partitions {
            if p.acknowledge_error_code != 0 {
                eprintln!(
                    "runnel: warning: partition {}: acknowledgement failed: {}",
                    p.partition_index,
                    protocol_words(
                        p.acknowledge_error_code,
                        p.acknowledge_error_message.as_deref()
                    )
                );
            }
            if p.error_code != 0 {
                refresh |= matches!(p.error_code, 3 | 6);
                eprintln!(
                    "runnel: warning: partition {}: {}",
                    p.partition_index,
                    protocol_words(p.error_code, p.error_message.as_deref())
                );
                continue;
            }
            output.partition(p, acks)?;
        }
    }
    Ok(refresh)
}

/// Closes every share session with a ShareAcknowledge (session epoch -1) carrying its pending
/// acknowledgements.
fn close(
    member: &Member,
    meta: &TopicMeta,
    sessions: &mut BTreeMap<String, Session>,
    acks: &mut Acks,
) -> anyhow::Result<()> {
    use protocol::messages::share_acknowledge_request::{
        AcknowledgePartition, AcknowledgeTopic, AcknowledgementBatch as Batch,
    };
    for s in sessions.values_mut().filter(|s| s.epoch > 0) {
        let partitions: Vec<AcknowledgePartition> = (s.partitions.iter())
            .filter_map(|p| {
                let batches = ack_batches(acks.remove(p)?);
                Some(AcknowledgePartition {
                    partition_index: *p,
                    acknowledgement_batches: (batches.into_iter())
                        .map(|b| Batch {
                            first_offset: b.first_offset,
                            last_offset: b.last_offset,
                            acknowledge_types: b.acknowledge_types,
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                })
            })
            .collect();
        let request = ShareAcknowledgeRequest {
            group_id: Some(member.group.clone()),
            member_id: Some(member.id.clone()),
            share_session_epoch: -1,
            topics: match partitions.is_empty() {
                true => Vec::new(),
                false => vec![AcknowledgeTopic {
                    topic_id: meta.id,
                    partitions,
                    ..Default::default()
                }],
            },
            ..Default::default()
        };
        let r = call_api!(s.wire, ShareAcknowledge, request, 2);
        let doing = format!("ShareAcknowledge to {}", s.wire.addr());
        check(r.error_code, r.error_message.as_deref(), &doing)?;
        for t in &r.responses {
            for p in &t.partitions {
                let doing = format!("{doing}: partition {}", p.partition_index);
                check(p.error_code, p.error_message.as_deref(), doing)?;
            }
        }
    }
    Ok(())
}
