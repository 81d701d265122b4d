//! `runnel share-group list|describe|reset-offsets` (KIP-932 share groups), all over our own codec.
//!
//! list asks every broker of the cluster (Metadata) for its groups with ListGroups v5 filtered to type
//! "share"; describe sends ShareGroupDescribe and DescribeShareGroupOffsets v1 (every topic) to the group's
//! coordinator (FindCoordinator, as `runnel group`); reset-offsets resolves the new start offset of each
//! partition with ListOffsets to its leader and, with `--execute`, sends AlterShareGroupOffsets, which the
//! broker accepts only while the group has no members.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail};
use clap::Subcommand;
use protocol::messages::metadata_request::MetadataRequestTopic;
use protocol::messages::{ListGroupsRequest, MetadataRequest, MetadataResponse};
use serde_json::json;

use crate::client::{check, print_json, print_table, protocol_words, ConnArgs};
use crate::wire::{call_api, Wire};

/// `runnel share-group ...`
#[derive(clap::Args, Debug)]
pub struct ShareGroupArgs {
    #[command(flatten)]
    conn: ConnArgs,
    #[command(subcommand)]
    command: ShareGroupCommand,
}

#[derive(Subcommand, Debug)]
enum ShareGroupCommand {
    /// List share groups with their state.
    List,
    /// Show a share group's members and, per partition, its start offset and lag.
    Describe {
        /// Group id.
        group: String,
    },
    /// Set a share group's start offsets for a topic (the group must have no members).
    ResetOffsets {
        /// Group id.
        group: String,
        /// Topic whose start offsets are reset.
        #[arg(long, short = 't')]
        topic: String,
        /// Reset to the log start offset.
        #[arg(long, group = "to")]
        to_earliest: bool,
        /// Reset to the log end offset.
        #[arg(long, group = "to")]
        to_latest: bool,
        /// Reset to this offset (clamped to the partition's log start/end offsets).
        #[arg(long, group = "to", value_name = "N")]
        to_offset: Option<i64>,
        /// Alter the offsets (without it, only the plan is shown).
        #[arg(long)]
        execute: bool,
    },
}

/// Runs a `share-group` subcommand.
pub fn run(args: ShareGroupArgs) -> anyhow::Result<()> {
    let conn = &args.conn;
    conn.preflight()?;
    match args.command {
        ShareGroupCommand::List => list(conn),
        ShareGroupCommand::Describe { group } => describe(conn, &group),
        ShareGroupCommand::ResetOffsets {
            group,
            topic,
            to_earliest,
            to_latest,
            to_offset,
            execute,
        } => {
            let to = match (to_earliest, to_latest, to_offset) {
                (true, _, _) => ResetTo::Earliest,
                (_, true, _) => ResetTo::Latest,
                (_, _, Some(n)) => ResetTo::Offset(n),
                _ => bail!("say where to: --to-earliest, --to-latest or --to-offset N"),
            };
            reset_offsets(conn, &group, &topic, to, execute)
        }
    }
}

/// One topic's id, partition leaders and the brokers' addresses (Metadata v12).
pub(crate) struct TopicMeta {
    pub id: uuid::Uuid,
    /// partition → leader node id (-1: none).
    pub leaders: BTreeMap<i32, i32>,
    /// node id → `host:port`.
    pub brokers: BTreeMap<i32, String>,
}

impl TopicMeta {
    /// The address of `partition`'s leader.
    pub fn leader_addr(&self, partition: i32) -> Option<&str> {
        let node = self.leaders.get(&partition)?;
        self.brokers.get(node).map(String::as_str)
    }
}

fn metadata(wire: &mut Wire, topics: Option<Vec<String>>) -> anyhow::Result<MetadataResponse> {
    let request = MetadataRequest {
        topics: topics.map(|ts| {
            ts.into_iter()
                .map(|t| MetadataRequestTopic {
                    name: Some(t),
                    ..Default::default()
                })
                .collect()
        }),
        allow_auto_topic_creation: false,
        ..Default::default()
    };
    Ok(call_api!(wire, Metadata, request, 12))
}

/// `topic`'s metadata through `wire`; fails when the topic does not exist.
pub(crate) fn topic_meta(wire: &mut Wire, topic: &str) -> anyhow::Result<TopicMeta> {
    let md = metadata(wire, Some(vec![topic.to_string()]))?;
    let t = (md.topics.iter())
        .find(|t| t.name.as_deref() == Some(topic))
        .ok_or_else(|| anyhow!("topic '{topic}': not in the metadata"))?;
    check(t.error_code, None, format_args!("topic '{topic}'"))?;
    Ok(TopicMeta {
        id: t.topic_id,
        leaders: (t.partitions.iter())
            .map(|p| (p.partition_index, p.leader_id))
            .collect(),
        brokers: (md.brokers.iter())
            .map(|b| (b.node_id, format!("{}:{}", b.host, b.port)))
            .collect(),
    })
}

fn list(conn: &ConnArgs) -> anyhow::Result<()> {
    let mut wire = Wire::connect_any(conn)?;
    let md = metadata(&mut wire, Some(Vec::new()))?;
    let mut groups: BTreeMap<String, String> = BTreeMap::new();
    for b in &md.brokers {
        let addr = format!("{}:{}", b.host, b.port);
        let mut w = match addr == wire.addr() {
            true => None,
            false => Some(Wire::connect(&addr, conn)?),
        };
        let w = w.as_mut().unwrap_or(&mut wire);
        let request = ListGroupsRequest {
            types_filter: vec!["share".into()],
            ..Default::default()
        };
        let r = call_api!(w, ListGroups, request, 5);
        check(r.error_code, None, format_args!("listing groups at {addr}"))?;
        for g in r.groups {
            groups.insert(g.group_id, g.group_state);
        }
    }
    if conn.json {
        let v: Vec<_> = (groups.iter())
            .map(|(g, s)| json!({"group": g, "state": s}))
            .collect();
        print_json(&serde_json::Value::Array(v));
    } else {
        let rows: Vec<Vec<String>> = (groups.into_iter()).map(|(g, s)| vec![g, s]).collect();
        print_table(&["GROUP", "STATE"], &rows);
    }
    Ok(())
}

/// Sends requests built by `request` to the coordinator of `group` until the answer's error (`code` of it)
/// is not COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE or NOT_COORDINATOR, or the timeout.
pub(crate) fn with_coordinator<T>(
    conn: &ConnArgs,
    group: &str,
    mut call: impl FnMut(&mut Wire) -> anyhow::Result<T>,
    code: impl Fn(&T) -> i16,
) -> anyhow::Result<T> {
    let deadline = Instant::now() + conn.timeout();
    loop {
        let mut coord = crate::group::coordinator(conn, group, deadline)?;
        let r = call(&mut coord)?;
        if matches!(code(&r), 14..=16) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(200));
            continue;
        }
        return Ok(r);
    }
}

fn describe(conn: &ConnArgs, group: &str) -> anyhow::Result<()> {
    use protocol::messages::describe_share_group_offsets_request::DescribeShareGroupOffsetsRequestGroup;
    use protocol::messages::{DescribeShareGroupOffsetsRequest, ShareGroupDescribeRequest};
    let ids = vec![group.to_string()];
    let d = with_coordinator(
        conn,
        group,
        |w| {
            let req = ShareGroupDescribeRequest {
                group_ids: ids.clone(),
                ..Default::default()
            };
            let r = call_api!(w, ShareGroupDescribe, req, 1);
            (r.groups.into_iter().next()).ok_or_else(|| anyhow!("ShareGroupDescribe: no group"))
        },
        |g| g.error_code,
    )?;
    check(
        d.error_code,
        d.error_message.as_deref(),
        format_args!("describing share group '{group}'"),
    )?;
    let o = with_coordinator(
        conn,
        group,
        |w| {
            let req = DescribeShareGroupOffsetsRequest {
                groups: vec![DescribeShareGroupOffsetsRequestGroup {
                    group_id: group.to_string(),
                    topics: None,
                    ..Default::default()
                }],
                ..Default::default()
            };
            let r = call_api!(w, DescribeShareGroupOffsets, req, 1);
            (r.groups.into_iter().next())
                .ok_or_else(|| anyhow!("DescribeShareGroupOffsets: no group"))
        },
        |g| g.error_code,
    )?;
    check(
        o.error_code,
        o.error_message.as_deref(),
        format_args!("describing the offsets of share group '{group}'"),
    )?;
    let mut offsets = Vec::new();
    for t in &o.topics {
        for p in &t.partitions {
            if p.error_code != 0 {
                eprintln!(
                    "runnel: warning: topic '{}' partition {}: {}",
                    t.topic_name,
                    p.partition_index,
                    protocol_words(p.error_code, p.error_message.as_deref())
                );
            }
            let known = |v: i64| (v >= 0 && p.error_code == 0).then_some(v);
            offsets.push((
                t.topic_name.clone(),
                p.partition_index,
                known(p.start_offset),
                known(p.lag),
            ));
        }
    }
    offsets.sort();
    let members: Vec<Member> = (d.members.iter())
        .map(|m| Member {
            id: m.member_id.clone(),
            client_id: m.client_id.clone(),
            host: m.client_host.clone(),
            epoch: m.member_epoch,
            assignment: (m.assignment.topic_partitions.iter())
                .map(|t| (t.topic_name.clone(), t.partitions.clone()))
                .collect(),
        })
        .collect();
    let summary = Summary {
        state: d.group_state,
        group_epoch: d.group_epoch,
        assignment_epoch: d.assignment_epoch,
        assignor: d.assignor_name,
    };
    match conn.json {
        true => print_describe_json(group, &summary, &members, &offsets),
        false => print_describe_text(group, &summary, &members, &offsets),
    }
    Ok(())
}

struct Summary {
    state: String,
    group_epoch: i32,
    assignment_epoch: i32,
    assignor: String,
}

struct Member {
    id: String,
    client_id: String,
    host: String,
    epoch: i32,
    assignment: Vec<(String, Vec<i32>)>,
}

/// (topic, partition, start offset, lag); `None` when unknown.
type OffsetRow = (String, i32, Option<i64>, Option<i64>);

fn print_describe_json(group: &str, s: &Summary, members: &[Member], offsets: &[OffsetRow]) {
    let members: Vec<_> = (members.iter())
        .map(|m| {
            let a: Vec<_> = (m.assignment.iter())
                .map(|(t, ps)| json!({"topic": t, "partitions": ps}))
                .collect();
            json!({"member_id": m.id, "client_id": m.client_id, "host": m.host,
                   "member_epoch": m.epoch, "assignment": a})
        })
        .collect();
    let offsets: Vec<_> = (offsets.iter())
        .map(|(t, p, o, l)| json!({"topic": t, "partition": p, "start_offset": o, "lag": l}))
        .collect();
    print_json(&json!({
        "group": group, "type": "share", "state": s.state, "group_epoch": s.group_epoch,
        "assignment_epoch": s.assignment_epoch, "assignor": s.assignor,
        "members": members, "offsets": offsets,
    }));
}

fn print_describe_text(group: &str, s: &Summary, members: &[Member], offsets: &[OffsetRow]) {
    println!(
        "Group: {group}  Type: share  State: {}  Group epoch: {}  Assignment epoch: {}  Assignor: {}  Members: {}",
        s.state,
        s.group_epoch,
        s.assignment_epoch,
        if s.assignor.is_empty() { "-" } else { &s.assignor },
        members.len()
    );
    let assignment = |a: &[(String, Vec<i32>)]| match a.is_empty() {
        true => "-".to_string(),
        false => (a.iter())
            .map(|(t, ps)| {
                let ps: Vec<String> = ps.iter().map(i32::to_string).collect();
                format!("{t}:{}", ps.join(","))
            })
            .collect::<Vec<_>>()
            .join(";"),
    };
    if !members.is_empty() {
        println!();
        let rows: Vec<Vec<String>> = (members.iter())
            .map(|m| {
                vec![
                    m.id.clone(),
                    m.client_id.clone(),
                    m.host.clone(),
                    m.epoch.to_string(),
                    assignment(&m.assignment),
                ]
            })
            .collect();
        print_table(
            &["MEMBER-ID", "CLIENT-ID", "HOST", "EPOCH", "ASSIGNMENT"],
            &rows,
        );
    }
    println!();
    let dash = || "-".to_string();
    let rows: Vec<Vec<String>> = (offsets.iter())
        .map(|(t, p, o, l)| {
            vec![
                t.clone(),
                p.to_string(),
                o.map_or_else(dash, |o| o.to_string()),
                l.map_or_else(dash, |l| l.to_string()),
            ]
        })
        .collect();
    print_table(&["TOPIC", "PARTITION", "START-OFFSET", "LAG"], &rows);
}

#[derive(Debug, Clone, Copy)]
enum ResetTo {
    Earliest,
    Latest,
    Offset(i64),
}

/// The offset ListOffsets finds for `timestamp` (-2 earliest, -1 latest) in each partition of `topic`,
/// asked of each partition's leader.
fn list_offsets(
    conn: &ConnArgs,
    meta: &TopicMeta,
    topic: &str,
    timestamp: i64,
) -> anyhow::Result<BTreeMap<i32, i64>> {
    use protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
    use protocol::messages::ListOffsetsRequest;
    let mut by_leader: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for p in meta.leaders.keys() {
        let addr = (meta.leader_addr(*p))
            .ok_or_else(|| anyhow!("topic '{topic}' partition {p} has no leader"))?;
        by_leader.entry(addr).or_default().push(*p);
    }
    let mut out = BTreeMap::new();
    for (addr, parts) in by_leader {
        let mut w = Wire::connect(addr, conn)?;
        let request = ListOffsetsRequest {
            replica_id: -1,
            topics: vec![ListOffsetsTopic {
                name: topic.to_string(),
                partitions: (parts.iter())
                    .map(|p| ListOffsetsPartition {
                        partition_index: *p,
                        current_leader_epoch: -1,
                        timestamp,
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }],
            ..Default::default()
        };
        let r = call_api!(w, ListOffsets, request, 7);
        for t in r.topics {
            for p in t.partitions {
                let doing = format!(
                    "topic '{topic}' partition {}: ListOffsets",
                    p.partition_index
                );
                check(p.error_code, None, doing)?;
                out.insert(p.partition_index, p.offset);
            }
        }
    }
    Ok(out)
}

fn reset_offsets(
    conn: &ConnArgs,
    group: &str,
    topic: &str,
    to: ResetTo,
    execute: bool,
) -> anyhow::Result<()> {
    let mut wire = Wire::connect_any(conn)?;
    let meta = topic_meta(&mut wire, topic)?;
    let earliest = list_offsets(conn, &meta, topic, -2)?;
    let latest = list_offsets(conn, &meta, topic, -1)?;
    let targets: Vec<(i32, i64)> = (earliest.iter())
        .map(|(p, lo)| {
            let hi = latest.get(p).copied().unwrap_or(*lo);
            let o = match to {
                ResetTo::Earliest => *lo,
                ResetTo::Latest => hi,
                ResetTo::Offset(n) => n.clamp(*lo, hi.max(*lo)),
            };
            (*p, o)
        })
        .collect();
    if execute {
        alter_offsets(conn, group, topic, &targets)?;
    }
    if conn.json {
        let v: Vec<_> = (targets.iter())
            .map(|(p, o)| json!({"topic": topic, "partition": p, "new_start_offset": o}))
            .collect();
        print_json(&json!({"group": group, "executed": execute, "offsets": v}));
    } else {
        let rows: Vec<Vec<String>> = (targets.iter())
            .map(|(p, o)| vec![topic.to_string(), p.to_string(), o.to_string()])
            .collect();
        print_table(&["TOPIC", "PARTITION", "NEW-START-OFFSET"], &rows);
        if !execute {
            println!("(plan only: nothing altered; add --execute to apply it)");
        }
    }
    Ok(())
}

fn alter_offsets(
    conn: &ConnArgs,
    group: &str,
    topic: &str,
    targets: &[(i32, i64)],
) -> anyhow::Result<()> {
    use protocol::messages::alter_share_group_offsets_request::{
        AlterShareGroupOffsetsRequestPartition as Part, AlterShareGroupOffsetsRequestTopic as Topic,
    };
    use protocol::messages::AlterShareGroupOffsetsRequest;
    let r = with_coordinator(
        conn,
        group,
        |w| {
            let req = AlterShareGroupOffsetsRequest {
                group_id: group.to_string(),
                topics: vec![Topic {
                    topic_name: topic.to_string(),
                    partitions: (targets.iter())
                        .map(|(p, o)| Part {
                            partition_index: *p,
                            start_offset: *o,
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                }],
                ..Default::default()
            };
            Ok(call_api!(w, AlterShareGroupOffsets, req, 0))
        },
        |r| r.error_code,
    )?;
    let doing = format!("altering the start offsets of share group '{group}'");
    if r.error_code == 68 {
        let why = protocol_words(r.error_code, r.error_message.as_deref());
        bail!("{doing}: {why}: the group has members; stop its consumers first (offsets can only be reset while a share group is empty)");
    }
    check(r.error_code, r.error_message.as_deref(), &doing)?;
    for t in &r.responses {
        for p in &t.partitions {
            let doing = format!(
                "{doing}: topic '{}' partition {}",
                t.topic_name, p.partition_index
            );
            check(p.error_code, p.error_message.as_deref(), doing)?;
        }
    }
    Ok(())
}
