//! `runnel group list|describe|reset-offsets|delete`.
//!
//! list/describe use rdkafka's group listing (ListGroups + DescribeGroups) — describe asks
//! ConsumerGroupDescribe first, for a KIP-848 consumer group's epochs and target assignment —; the committed offsets of
//! every partition of a group come from OffsetFetch (all topics, v2+) sent with our own codec to
//! the group coordinator (FindCoordinator), since rust-rdkafka can only ask for partitions it
//! already knows; end offsets are ListOffsets through rdkafka. reset-offsets commits through an
//! rdkafka consumer of the group that never joins it (OffsetCommit with generation -1, which Kafka
//! accepts only while the group has no members), and delete is DeleteGroups.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{anyhow, bail};
use clap::Subcommand;
use rdkafka::admin::AdminOptions;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::groups::GroupInfo;
use rdkafka::{Offset, TopicPartitionList};
use serde_json::json;

use crate::client::{
    block_on, code_words, kafka_error, parse_timestamp, print_json, print_table, protocol_words,
    ConnArgs,
};
use crate::wire::Wire;

/// `runnel group ...`
#[derive(clap::Args, Debug)]
pub struct GroupArgs {
    #[command(flatten)]
    conn: ConnArgs,
    #[command(subcommand)]
    command: GroupCommand,
}

#[derive(Subcommand, Debug)]
enum GroupCommand {
    /// List consumer groups with their state.
    List,
    /// Show a group's members and, per partition, committed offset, end offset and lag.
    Describe {
        /// Group id.
        group: String,
    },
    /// Set a group's committed offsets for a topic (the group must have no active members).
    ResetOffsets {
        /// Group id.
        group: String,
        /// Topic whose offsets are reset.
        #[arg(long, short = 't')]
        topic: String,
        /// Only these partitions (default: all); may be repeated.
        #[arg(long, short = 'p')]
        partition: Vec<i32>,
        /// Reset to the log start offset.
        #[arg(long, group = "to")]
        to_earliest: bool,
        /// Reset to the log end offset.
        #[arg(long, group = "to")]
        to_latest: bool,
        /// Reset to this offset (clamped to the partition's log start/end offsets).
        #[arg(long, group = "to", value_name = "N")]
        to_offset: Option<i64>,
        /// Reset to the first offset with a timestamp at or after T (epoch ms or
        /// YYYY-MM-DDTHH:MM:SSZ); the end offset where there is none.
        #[arg(long, group = "to", value_name = "T")]
        to_timestamp: Option<String>,
        /// Show the new offsets without committing them.
        #[arg(long)]
        dry_run: bool,
    },
    /// Delete a group and its committed offsets (it must have no active members).
    Delete {
        /// Group id.
        group: String,
    },
}

/// Runs a `group` subcommand.
pub fn run(args: GroupArgs) -> anyhow::Result<()> {
    let conn = &args.conn;
    match args.command {
        GroupCommand::List => list(conn),
        GroupCommand::Describe { group } => describe(conn, &group),
        GroupCommand::ResetOffsets {
            group,
            topic,
            partition,
            to_earliest,
            to_latest,
            to_offset,
            to_timestamp,
            dry_run,
        } => {
            let to = if to_earliest {
                ResetTo::Earliest
            } else if to_latest {
                ResetTo::Latest
            } else if let Some(n) = to_offset {
                ResetTo::Offset(n)
            } else if let Some(t) = to_timestamp {
                ResetTo::Timestamp(parse_timestamp(&t)?)
            } else {
                bail!(
                    "say where to: --to-earliest, --to-latest, --to-offset N or --to-timestamp T"
                );
            };
            reset_offsets(conn, &group, &topic, &partition, to, dry_run)
        }
        GroupCommand::Delete { group } => delete(conn, &group),
    }
}

fn admin(
    conn: &ConnArgs,
) -> anyhow::Result<rdkafka::admin::AdminClient<rdkafka::client::DefaultClientContext>> {
    crate::topic::admin(conn)
}

fn list(conn: &ConnArgs) -> anyhow::Result<()> {
    let admin = admin(conn)?;
    let groups = admin
        .inner()
        .fetch_group_list(None, conn.timeout())
        .map_err(|e| anyhow!("listing groups: {}", kafka_error(&e)))?;
    let mut rows: Vec<(String, &str, String, String, usize)> = Vec::new();
    for g in groups.groups() {
        // DescribeGroups knows classic groups only: a KIP-848 consumer group comes back "Dead".
        let consumer = match g.state() == "Dead" && g.members().is_empty() {
            true => consumer_group(conn, g.name())?,
            false => None,
        };
        rows.push(match consumer {
            Some(c) => (
                g.name().into(),
                "consumer",
                c.state,
                c.protocol_type,
                c.members.len(),
            ),
            None => (
                g.name().into(),
                "classic",
                g.state().into(),
                g.protocol_type().into(),
                g.members().len(),
            ),
        });
    }
    rows.sort();
    if conn.json {
        let v: Vec<_> = (rows.iter())
            .map(|(n, ty, s, t, m)| {
                json!({"group": n, "type": ty, "state": s, "protocol_type": t, "members": m})
            })
            .collect();
        print_json(&serde_json::Value::Array(v));
    } else {
        let rows: Vec<Vec<String>> = (rows.into_iter())
            .map(|(n, ty, s, t, m)| vec![n, ty.to_string(), s, t, m.to_string()])
            .collect();
        print_table(
            &["GROUP", "TYPE", "STATE", "PROTOCOL-TYPE", "MEMBERS"],
            &rows,
        );
    }
    Ok(())
}

/// Parses a consumer-protocol assignment (`ConsumerProtocolAssignment`, any version: INT16
/// version, [topic STRING, [partition INT32]], user_data BYTES) into (topic, partition) pairs.
/// Malformed or non-consumer assignments give `None`.
pub fn parse_assignment(b: &[u8]) -> Option<Vec<(String, i32)>> {
    struct R<'a>(&'a [u8]);
    impl R<'_> {
        fn take(&mut self, n: usize) -> Option<&[u8]> {
            if self.0.len() < n {
                return None;
            }
            let (a, b) = self.0.split_at(n);
            self.0 = b;
            Some(a)
        }
        fn i16(&mut self) -> Option<i16> {
            self.take(2).map(|b| i16::from_be_bytes([b[0], b[1]]))
        }
        fn i32(&mut self) -> Option<i32> {
            self.take(4)
                .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
        }
    }
    if b.is_empty() {
        return Some(Vec::new());
    }
    let mut r = R(b);
    let _version = r.i16()?;
    let topics = r.i32()?;
    if topics < 0 || topics as usize > r.0.len() {
        return None;
    }
    let mut out = Vec::new();
    for _ in 0..topics {
        let len = r.i16()?;
        if len < 0 {
            return None;
        }
        let name = String::from_utf8(r.take(len as usize)?.to_vec()).ok()?;
        let n = r.i32()?;
        if n < 0 || (n as usize).saturating_mul(4) > r.0.len() {
            return None;
        }
        for _ in 0..n {
            out.push((name.clone(), r.i32()?));
        }
    }
    Some(out)
}

/// The committed offsets of `group` for every partition it has one for, via FindCoordinator and
/// OffsetFetch (topics = null). Returns (topic, partition) → offset (-1 for none).
/// A connection to the coordinator of `group` (FindCoordinator through any bootstrap broker, retried
/// until `deadline` while the coordinator is loading or moving).
pub(crate) fn coordinator(
    conn: &ConnArgs,
    group: &str,
    deadline: std::time::Instant,
) -> anyhow::Result<Wire> {
    use protocol::messages::FindCoordinatorRequest;
    use protocol::{RequestBody, ResponseBody};
    let retriable = |code: i16| matches!(code, 14..=16); // load in progress, not available, not coordinator
    loop {
        let mut bootstrap = Wire::connect_any(conn)?;
        let (_, resp) = bootstrap.call(
            RequestBody::FindCoordinator(FindCoordinatorRequest {
                key: group.to_string(),
                key_type: 0,
                ..Default::default()
            }),
            3,
        )?;
        let ResponseBody::FindCoordinator(fc) = resp else {
            bail!("unexpected response to FindCoordinator");
        };
        if fc.error_code != 0 {
            if retriable(fc.error_code) && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(200));
                continue;
            }
            bail!(
                "finding the coordinator of group '{group}': {}",
                protocol_words(fc.error_code, fc.error_message.as_deref())
            );
        }
        let addr = format!("{}:{}", fc.host, fc.port);
        if addr == bootstrap.addr() {
            return Ok(bootstrap);
        }
        return Wire::connect(&addr, conn)
            .map_err(|e| anyhow!("connecting to the coordinator of group '{group}': {e:#}"));
    }
}

/// The KIP-848 view of `group` (ConsumerGroupDescribe to its coordinator); `None` when it is not a
/// consumer group (GROUP_ID_NOT_FOUND) or the broker does not serve the API.
fn consumer_group(conn: &ConnArgs, group: &str) -> anyhow::Result<Option<GroupSummary>> {
    use protocol::messages::ConsumerGroupDescribeRequest;
    use protocol::{ApiKey, RequestBody, ResponseBody};
    let deadline = std::time::Instant::now() + conn.timeout();
    let g = loop {
        let mut coord = coordinator(conn, group, deadline)?;
        if coord.version(ApiKey::ConsumerGroupDescribe, 1).is_err() {
            return Ok(None);
        }
        let (_, resp) = coord.call(
            RequestBody::ConsumerGroupDescribe(ConsumerGroupDescribeRequest {
                group_ids: vec![group.to_string()],
                ..Default::default()
            }),
            1,
        )?;
        let ResponseBody::ConsumerGroupDescribe(r) = resp else {
            bail!("unexpected response to ConsumerGroupDescribe");
        };
        let Some(g) = r.groups.into_iter().next() else {
            return Ok(None);
        };
        match g.error_code {
            0 => break g,
            69 => return Ok(None),
            // Loading, not available, not the coordinator (it moved): ask again.
            14..=16 if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(200));
            }
            code => bail!(
                "describing group '{group}': {}",
                protocol_words(code, g.error_message.as_deref())
            ),
        }
    };
    let pairs = |a: &protocol::messages::consumer_group_describe_response::Assignment| {
        (a.topic_partitions.iter())
            .flat_map(|t| t.partitions.iter().map(|p| (t.topic_name.clone(), *p)))
            .collect::<Vec<_>>()
    };
    Ok(Some(GroupSummary {
        state: g.group_state,
        protocol_type: "consumer".into(),
        protocol: g.assignor_name,
        epochs: Some((g.group_epoch, g.assignment_epoch)),
        members: (g.members.iter())
            .map(|m| Member {
                id: m.member_id.clone(),
                client_id: m.client_id.clone(),
                host: m.client_host.clone(),
                assignment: pairs(&m.assignment),
                epoch: Some(m.member_epoch),
                target: pairs(&m.target_assignment),
            })
            .collect(),
    }))
}

pub fn committed_offsets(
    conn: &ConnArgs,
    group: &str,
) -> anyhow::Result<BTreeMap<(String, i32), i64>> {
    use protocol::messages::OffsetFetchRequest;
    use protocol::{RequestBody, ResponseBody};
    let deadline = std::time::Instant::now() + conn.timeout();
    let retriable = |code: i16| matches!(code, 14..=16); // load in progress, not available, not coordinator
    loop {
        let mut coord = coordinator(conn, group, deadline)?;
        let (_, resp) = coord.call(
            RequestBody::OffsetFetch(OffsetFetchRequest {
                group_id: group.to_string(),
                topics: None,
                ..Default::default()
            }),
            7,
        )?;
        let ResponseBody::OffsetFetch(of) = resp else {
            bail!("unexpected response to OffsetFetch");
        };
        if of.error_code != 0 {
            if retriable(of.error_code) && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(200));
                continue;
            }
            bail!(
                "fetching the committed offsets of group '{group}': {}",
                protocol_words(of.error_code, None)
            );
        }
        let mut out = BTreeMap::new();
        for t in of.topics {
            for p in t.partitions {
                if p.error_code != 0 {
                    bail!(
                        "group '{group}' topic '{}' partition {}: {}",
                        t.name,
                        p.partition_index,
                        protocol_words(p.error_code, None)
                    );
                }
                out.insert((t.name.clone(), p.partition_index), p.committed_offset);
            }
        }
        return Ok(out);
    }
}

fn group_info<C: rdkafka::client::ClientContext>(
    conn: &ConnArgs,
    client: &rdkafka::client::Client<C>,
    group: &str,
) -> anyhow::Result<Option<GroupSummary>> {
    let list = client
        .fetch_group_list(Some(group), conn.timeout())
        .map_err(|e| anyhow!("describing group '{group}': {}", kafka_error(&e)))?;
    Ok(list
        .groups()
        .iter()
        .find(|g| g.name() == group)
        .map(GroupSummary::from))
}

struct Member {
    id: String,
    client_id: String,
    host: String,
    assignment: Vec<(String, i32)>,
    /// KIP-848: the member epoch.
    epoch: Option<i32>,
    /// KIP-848: the target assignment.
    target: Vec<(String, i32)>,
}

struct GroupSummary {
    state: String,
    protocol_type: String,
    /// The classic protocol, or a consumer group's server assignor.
    protocol: String,
    /// KIP-848: (group epoch, assignment epoch); `None` for a classic group.
    epochs: Option<(i32, i32)>,
    members: Vec<Member>,
}

impl GroupSummary {
    /// "consumer" for a KIP-848 consumer group, else "classic".
    fn group_type(&self) -> &'static str {
        match self.epochs {
            Some(_) => "consumer",
            None => "classic",
        }
    }
}

impl From<&GroupInfo> for GroupSummary {
    fn from(g: &GroupInfo) -> Self {
        GroupSummary {
            state: g.state().to_string(),
            protocol_type: g.protocol_type().to_string(),
            protocol: g.protocol().to_string(),
            epochs: None,
            members: g
                .members()
                .iter()
                .map(|m| Member {
                    id: m.id().to_string(),
                    client_id: m.client_id().to_string(),
                    host: m.client_host().to_string(),
                    assignment: m
                        .assignment()
                        .and_then(parse_assignment)
                        .unwrap_or_default(),
                    epoch: None,
                    target: Vec::new(),
                })
                .collect(),
        }
    }
}

fn describe(conn: &ConnArgs, group: &str) -> anyhow::Result<()> {
    let admin = admin(conn)?;
    let client = admin.inner();
    let info = match consumer_group(conn, group)? {
        Some(g) => Some(g),
        None => group_info(conn, client, group)?,
    };
    let committed = committed_offsets(conn, group)?;
    let exists = info
        .as_ref()
        .is_some_and(|g| g.state != "Dead" || !g.members.is_empty())
        || !committed.is_empty();
    if !exists {
        bail!("group '{group}' does not exist (GROUP_ID_NOT_FOUND)");
    }
    let info = info.unwrap_or(GroupSummary {
        state: "Empty".into(),
        protocol_type: String::new(),
        protocol: String::new(),
        epochs: None,
        members: Vec::new(),
    });
    // Every partition that is committed or assigned.
    let mut owner: BTreeMap<(String, i32), &Member> = BTreeMap::new();
    for m in &info.members {
        for tp in &m.assignment {
            owner.insert(tp.clone(), m);
        }
    }
    let keys: BTreeSet<(String, i32)> = committed.keys().chain(owner.keys()).cloned().collect();
    let mut rows = Vec::new();
    for (t, p) in keys {
        let c = committed.get(&(t.clone(), p)).copied().filter(|o| *o >= 0);
        let end = match client.fetch_watermarks(&t, p, conn.timeout()) {
            Ok((_, hi)) => Some(hi),
            Err(e) => {
                eprintln!(
                    "runnel: warning: topic '{t}' partition {p}: end offset unknown: {}",
                    kafka_error(&e)
                );
                None
            }
        };
        let lag = match (c, end) {
            (Some(c), Some(e)) => Some((e - c).max(0)),
            _ => None,
        };
        let member = owner
            .get(&(t.clone(), p))
            .and_then(|m| info.members.iter().position(|x| std::ptr::eq(x, *m)));
        rows.push(Row {
            topic: t,
            partition: p,
            committed: c,
            end,
            lag,
            member,
        });
    }
    match conn.json {
        true => print_describe_json(group, &info, &rows),
        false => print_describe_text(group, &info, &rows),
    }
    Ok(())
}

/// One partition row of `group describe`.
struct Row {
    topic: String,
    partition: i32,
    committed: Option<i64>,
    end: Option<i64>,
    lag: Option<i64>,
    member: Option<usize>,
}

fn print_describe_json(group: &str, info: &GroupSummary, rows: &[Row]) {
    let members: Vec<_> = info
        .members
        .iter()
        .map(|m| {
            let a: Vec<_> = m
                .assignment
                .iter()
                .map(|(t, p)| json!({"topic": t, "partition": p}))
                .collect();
            let target: Vec<_> = (m.target.iter())
                .map(|(t, p)| json!({"topic": t, "partition": p}))
                .collect();
            json!({"member_id": m.id, "client_id": m.client_id, "host": m.host, "assignment": a,
                   "member_epoch": m.epoch, "target_assignment": target})
        })
        .collect();
    let offsets: Vec<_> = rows
        .iter()
        .map(|r| {
            json!({"topic": r.topic, "partition": r.partition, "committed_offset": r.committed,
                   "log_end_offset": r.end, "lag": r.lag,
                   "member_id": r.member.map(|i| info.members[i].id.clone())})
        })
        .collect();
    print_json(&json!({
        "group": group, "type": info.group_type(), "state": info.state,
        "protocol_type": info.protocol_type, "protocol": info.protocol,
        "group_epoch": info.epochs.map(|e| e.0), "assignment_epoch": info.epochs.map(|e| e.1),
        "members": members, "offsets": offsets,
    }));
}

fn print_describe_text(group: &str, info: &GroupSummary, rows: &[Row]) {
    let epochs = match info.epochs {
        Some((g, a)) => format!("  Group epoch: {g}  Assignment epoch: {a}"),
        None => String::new(),
    };
    println!(
        "Group: {group}  Type: {}  State: {}  {}: {}{epochs}  Members: {}",
        info.group_type(),
        info.state,
        if info.epochs.is_some() {
            "Assignor"
        } else {
            "Protocol"
        },
        if info.protocol.is_empty() {
            "-"
        } else {
            &info.protocol
        },
        info.members.len()
    );
    let dash = || "-".to_string();
    let table: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let m = r.member.map(|i| &info.members[i]);
            vec![
                r.topic.clone(),
                r.partition.to_string(),
                r.committed.map_or_else(dash, |o| o.to_string()),
                r.end.map_or_else(dash, |o| o.to_string()),
                r.lag.map_or_else(dash, |o| o.to_string()),
                m.map_or_else(dash, |m| m.id.clone()),
                m.map_or_else(dash, |m| m.host.clone()),
                m.map_or_else(dash, |m| m.client_id.clone()),
            ]
        })
        .collect();
    print_table(
        &[
            "TOPIC",
            "PARTITION",
            "CURRENT-OFFSET",
            "LOG-END-OFFSET",
            "LAG",
            "CONSUMER-ID",
            "HOST",
            "CLIENT-ID",
        ],
        &table,
    );
    if info.epochs.is_some() {
        println!();
        print_members(info);
    }
}

/// A consumer group's members (KIP-848): epoch, owned and target partitions.
fn print_members(info: &GroupSummary) {
    let list = |tps: &[(String, i32)]| match tps.is_empty() {
        true => "-".to_string(),
        false => (tps.iter())
            .map(|(t, p)| format!("{t}-{p}"))
            .collect::<Vec<_>>()
            .join(","),
    };
    let rows: Vec<Vec<String>> = (info.members.iter())
        .map(|m| {
            vec![
                m.id.clone(),
                m.epoch.map_or_else(|| "-".into(), |e| e.to_string()),
                m.client_id.clone(),
                list(&m.assignment),
                list(&m.target),
            ]
        })
        .collect();
    print_table(
        &[
            "CONSUMER-ID",
            "EPOCH",
            "CLIENT-ID",
            "ASSIGNMENT",
            "TARGET-ASSIGNMENT",
        ],
        &rows,
    );
}

#[derive(Debug, Clone, Copy)]
enum ResetTo {
    Earliest,
    Latest,
    Offset(i64),
    Timestamp(i64),
}

fn reset_offsets(
    conn: &ConnArgs,
    group: &str,
    topic: &str,
    only: &[i32],
    to: ResetTo,
    dry_run: bool,
) -> anyhow::Result<()> {
    let consumer: BaseConsumer = conn.create(&[
        ("group.id", group),
        ("enable.auto.commit", "false"),
        ("allow.auto.create.topics", "false"),
    ])?;
    let client = consumer.client();
    if let Some(info) = group_info(conn, client, group)? {
        if !matches!(info.state.as_str(), "Empty" | "Dead") && !dry_run {
            bail!(
                "group '{group}' has {} active member(s) (state {}): stop its consumers first; offsets can only be reset while a group is inactive",
                info.members.len(),
                info.state
            );
        }
    }
    let parts = crate::topic::partitions(client, topic, conn.timeout())?;
    for p in only {
        if !parts.iter().any(|x| x.partition == *p) {
            bail!(
                "topic '{topic}' partition {p} does not exist (the topic has {} partitions)",
                parts.len()
            );
        }
    }
    let chosen: Vec<_> = parts
        .iter()
        .filter(|p| only.is_empty() || only.contains(&p.partition))
        .collect();
    let mut targets: Vec<(i32, i64)> = Vec::new();
    match to {
        ResetTo::Earliest => {
            targets.extend(chosen.iter().map(|p| (p.partition, p.log_start_offset)))
        }
        ResetTo::Latest => targets.extend(chosen.iter().map(|p| (p.partition, p.log_end_offset))),
        ResetTo::Offset(n) => targets.extend(
            chosen
                .iter()
                .map(|p| (p.partition, n.clamp(p.log_start_offset, p.log_end_offset))),
        ),
        ResetTo::Timestamp(ts) => {
            let mut q = TopicPartitionList::new();
            for p in &chosen {
                q.add_partition_offset(topic, p.partition, Offset::Offset(ts))?;
            }
            let found = consumer.offsets_for_times(q, conn.timeout()).map_err(|e| {
                anyhow!(
                    "looking up offsets of topic '{topic}' for timestamp {ts}: {}",
                    kafka_error(&e)
                )
            })?;
            for el in found.elements() {
                if let Err(e) = el.error() {
                    bail!(
                        "topic '{topic}' partition {}: offset for timestamp {ts}: {}",
                        el.partition(),
                        kafka_error(&e)
                    );
                }
                let end = chosen
                    .iter()
                    .find(|p| p.partition == el.partition())
                    .map_or(0, |p| p.log_end_offset);
                let off = match el.offset() {
                    Offset::Offset(o) if o >= 0 => o,
                    _ => end,
                };
                targets.push((el.partition(), off));
            }
        }
    }
    targets.sort_unstable();
    if !dry_run {
        let mut tpl = TopicPartitionList::new();
        for (p, o) in &targets {
            tpl.add_partition_offset(topic, *p, Offset::Offset(*o))?;
        }
        consumer.commit(&tpl, CommitMode::Sync).map_err(|e| {
            anyhow!(
                "committing offsets of group '{group}' for topic '{topic}': {}",
                kafka_error(&e)
            )
        })?;
    }
    if conn.json {
        let v: Vec<_> = targets
            .iter()
            .map(|(p, o)| json!({"topic": topic, "partition": p, "new_offset": o}))
            .collect();
        print_json(&json!({"group": group, "dry_run": dry_run, "offsets": v}));
    } else {
        let rows: Vec<Vec<String>> = targets
            .iter()
            .map(|(p, o)| vec![topic.to_string(), p.to_string(), o.to_string()])
            .collect();
        print_table(&["TOPIC", "PARTITION", "NEW-OFFSET"], &rows);
        if dry_run {
            println!("(dry run: nothing committed)");
        }
    }
    Ok(())
}

fn delete(conn: &ConnArgs, group: &str) -> anyhow::Result<()> {
    let admin = admin(conn)?;
    let opts = AdminOptions::new()
        .request_timeout(Some(conn.timeout()))
        .operation_timeout(Some(conn.timeout()));
    let results = block_on(admin.delete_groups(&[group], &opts))?
        .map_err(|e| anyhow!("deleting group '{group}': {}", kafka_error(&e)))?;
    for r in results {
        if let Err((g, code)) = r {
            bail!("deleting group '{g}': {}", code_words(code));
        }
    }
    if conn.json {
        print_json(&json!({"group": group, "deleted": true}));
    } else {
        println!("Deleted group '{group}'.");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assignments() {
        // version 1, one topic "ab" with partitions 0 and 3, null user data
        let mut b = vec![
            0, 1, 0, 0, 0, 1, 0, 2, b'a', b'b', 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 3,
        ];
        b.extend_from_slice(&(-1i32).to_be_bytes());
        assert_eq!(
            parse_assignment(&b),
            Some(vec![("ab".into(), 0), ("ab".into(), 3)])
        );
        assert_eq!(parse_assignment(&[]), Some(vec![]));
        assert_eq!(parse_assignment(&[0, 1, 0x7f, 0xff, 0xff, 0xff]), None);
        assert_eq!(parse_assignment(&b[..9]), None);
    }
}
