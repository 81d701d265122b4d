//! Topics, partitions and configs: CreateTopics (with replica placement), DeleteTopics,
//! CreatePartitions and IncrementalAlterConfigs.

use std::collections::{BTreeMap, BTreeSet};

use metadata::{
    ControllerError, CreateTopic, CreatedTopic, MetadataImage, MetadataRecord, NO_LEADER,
    RESOURCE_BROKER, RESOURCE_CLIENT_METRICS, RESOURCE_GROUP, RESOURCE_TOPIC,
};
use rand::Rng;
use types::{BrokerId, ErrorCode, LeaderEpoch, PartitionEpoch};
use uuid::Uuid;

use super::{err, Batch, Decision, QuorumControl, MAX_PARTITIONS, MAX_TOPIC_NAME_LEN};

/// Validates a topic name as Kafka's `Topic.validate` does.
pub fn validate_topic_name(name: &str) -> Result<(), ControllerError> {
    if name.is_empty() || name == "." || name == ".." || name.len() > MAX_TOPIC_NAME_LEN {
        return Err(err(
            ErrorCode::INVALID_TOPIC_EXCEPTION,
            format!("topic name {name:?} is illegal"),
        ));
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')
    {
        return Err(err(
            ErrorCode::INVALID_TOPIC_EXCEPTION,
            format!("topic name {name:?} contains characters other than [a-zA-Z0-9._-]"),
        ));
    }
    Ok(())
}

impl QuorumControl {
    /// CreateTopics: one result per requested topic, in request order. With `validate_only` no
    /// records are returned and topic ids are nil.
    ///
    /// Errors per topic: `INVALID_REQUEST` (duplicate name in the request, counts given together
    /// with assignments), `INVALID_TOPIC_EXCEPTION`, `TOPIC_ALREADY_EXISTS`, `INVALID_PARTITIONS`,
    /// `INVALID_REPLICATION_FACTOR` (also: fewer active brokers than the factor),
    /// `INVALID_REPLICA_ASSIGNMENT`, `INVALID_CONFIG` (empty config name).
    pub fn create_topics(
        &mut self,
        image: &MetadataImage,
        topics: &[CreateTopic],
        validate_only: bool,
    ) -> Decision<Vec<Result<CreatedTopic, ControllerError>>> {
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for t in topics {
            *counts.entry(t.name.as_str()).or_default() += 1;
        }
        let mut batch = Batch::new(image);
        let mut replies = Vec::with_capacity(topics.len());
        for t in topics {
            if counts[t.name.as_str()] > 1 {
                replies.push(Err(err(
                    ErrorCode::INVALID_REQUEST,
                    format!("topic {:?} appears more than once in the request", t.name),
                )));
                continue;
            }
            let reply = self.create_topic(&mut batch, t, validate_only);
            replies.push(reply);
        }
        Decision {
            records: if validate_only {
                Vec::new()
            } else {
                batch.records
            },
            reply: replies,
        }
    }

    fn create_topic(
        &mut self,
        batch: &mut Batch<'_>,
        t: &CreateTopic,
        validate_only: bool,
    ) -> Result<CreatedTopic, ControllerError> {
        validate_topic_name(&t.name)?;
        if t.configs.keys().any(|k| k.is_empty()) {
            return Err(err(ErrorCode::INVALID_CONFIG, "empty config name"));
        }
        if batch.view.topics.contains_key(&t.name) {
            return Err(err(
                ErrorCode::TOPIC_ALREADY_EXISTS,
                format!("topic {:?} already exists", t.name),
            ));
        }
        let assignments = if t.assignments.is_empty() {
            let n = match t.num_partitions {
                -1 => self.config.default_num_partitions,
                n => n,
            };
            if n <= 0 || n > MAX_PARTITIONS {
                return Err(err(
                    ErrorCode::INVALID_PARTITIONS,
                    format!("number of partitions must be in 1..={MAX_PARTITIONS}, got {n}"),
                ));
            }
            let rf = match t.replication_factor {
                -1 => self.config.default_replication_factor,
                rf => rf,
            };
            if rf <= 0 {
                return Err(err(
                    ErrorCode::INVALID_REPLICATION_FACTOR,
                    format!("replication factor must be positive, got {rf}"),
                ));
            }
            self.place(&batch.view, 0, n, rf)?
        } else {
            if t.num_partitions != -1 || t.replication_factor != -1 {
                return Err(err(
                    ErrorCode::INVALID_REQUEST,
                    "num_partitions and replication_factor must be -1 with explicit assignments",
                ));
            }
            validate_assignments(&batch.view, &t.assignments, 0)?
        };
        let num_partitions = assignments.len() as i32;
        let replication_factor = assignments.first().map_or(0, |r| r.len()) as i16;
        if validate_only {
            return Ok(CreatedTopic {
                topic_id: Uuid::nil(),
                num_partitions,
                replication_factor,
            });
        }
        let topic_id = self.new_topic_id(&batch.view);
        batch.push(MetadataRecord::TopicRecord {
            name: t.name.clone(),
            topic_id,
        });
        for (name, value) in &t.configs {
            batch.push(MetadataRecord::ConfigRecord {
                resource_type: RESOURCE_TOPIC,
                resource_name: t.name.clone(),
                name: name.clone(),
                value: Some(value.clone()),
            });
        }
        for (p, replicas) in assignments.into_iter().enumerate() {
            batch.push(new_partition_record(
                &batch.view,
                topic_id,
                p as i32,
                replicas,
            ));
        }
        Ok(CreatedTopic {
            topic_id,
            num_partitions,
            replication_factor,
        })
    }

    /// DeleteTopics: one result (the deleted topic's id) per name, in request order.
    ///
    /// Errors per name: `UNKNOWN_TOPIC_OR_PARTITION`, `INVALID_REQUEST` (name repeated).
    pub fn delete_topics(
        &mut self,
        image: &MetadataImage,
        names: &[String],
    ) -> Decision<Vec<Result<Uuid, ControllerError>>> {
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for n in names {
            *counts.entry(n.as_str()).or_default() += 1;
        }
        let mut records = Vec::new();
        let replies = names
            .iter()
            .map(|n| {
                if counts[n.as_str()] > 1 {
                    return Err(err(
                        ErrorCode::INVALID_REQUEST,
                        format!("topic {n:?} appears more than once in the request"),
                    ));
                }
                let t = image.topics.get(n).ok_or_else(|| {
                    err(
                        ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
                        format!("topic {n:?} does not exist"),
                    )
                })?;
                records.push(MetadataRecord::RemoveTopicRecord {
                    topic_id: t.topic_id,
                });
                Ok(t.topic_id)
            })
            .collect();
        Decision {
            records,
            reply: replies,
        }
    }

    /// CreatePartitions: grows topic `name` to `count` partitions, placing the new ones with the
    /// topic's replication factor (that of partition 0).
    ///
    /// Errors: `UNKNOWN_TOPIC_OR_PARTITION`, `INVALID_PARTITIONS` (count not above the current one or
    /// above [`MAX_PARTITIONS`]), `INVALID_REPLICATION_FACTOR` (too few active brokers).
    pub fn create_partitions(
        &mut self,
        image: &MetadataImage,
        name: &str,
        count: i32,
        validate_only: bool,
    ) -> Result<Vec<MetadataRecord>, ControllerError> {
        let t = image.topics.get(name).ok_or_else(|| {
            err(
                ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
                format!("topic {name:?} does not exist"),
            )
        })?;
        let current = t.partitions.len() as i32;
        if count <= current {
            return Err(err(
                ErrorCode::INVALID_PARTITIONS,
                format!("topic {name:?} has {current} partitions; {count} would not add any"),
            ));
        }
        if count > MAX_PARTITIONS {
            return Err(err(
                ErrorCode::INVALID_PARTITIONS,
                format!("at most {MAX_PARTITIONS} partitions per topic"),
            ));
        }
        let rf = t
            .partitions
            .values()
            .next()
            .map_or(1, |p| p.replicas.len().max(1)) as i16;
        let assignments = self.place(image, current, count - current, rf)?;
        if validate_only {
            return Ok(Vec::new());
        }
        let topic_id = t.topic_id;
        Ok(assignments
            .into_iter()
            .enumerate()
            .map(|(i, replicas)| {
                new_partition_record(image, topic_id, current + i as i32, replicas)
            })
            .collect())
    }

    /// IncrementalAlterConfigs: `ops` are `(name, Some(value))` to set and `(name, None)` to delete.
    /// Values are stored verbatim (validating them is the broker's job).
    ///
    /// Errors: `INVALID_REQUEST` (unsupported resource type, bad broker name, empty topic name),
    /// `UNKNOWN_TOPIC_OR_PARTITION`, `INVALID_CONFIG` (empty config name).
    pub fn alter_configs(
        &mut self,
        image: &MetadataImage,
        resource_type: i8,
        resource_name: &str,
        ops: &[(String, Option<String>)],
        validate_only: bool,
    ) -> Result<Vec<MetadataRecord>, ControllerError> {
        match resource_type {
            RESOURCE_TOPIC => {
                if !image.topics.contains_key(resource_name) {
                    return Err(err(
                        ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
                        format!("topic {resource_name:?} does not exist"),
                    ));
                }
            }
            RESOURCE_BROKER => {
                if !resource_name.is_empty()
                    && resource_name.parse::<i32>().map_or(true, |id| id < 0)
                {
                    return Err(err(
                        ErrorCode::INVALID_REQUEST,
                        format!("broker resource name {resource_name:?} is not a broker id"),
                    ));
                }
            }
            // KIP-714 subscriptions: the broker validated the configs (Kafka's ClientMetricsConfigs).
            RESOURCE_CLIENT_METRICS if !resource_name.is_empty() => {}
            // Group configs (KIP-848/KIP-932): the broker validated them (Kafka's GroupConfig).
            RESOURCE_GROUP if !resource_name.is_empty() => {}
            other => {
                return Err(err(
                    ErrorCode::INVALID_REQUEST,
                    format!("unsupported config resource type {other}"),
                ))
            }
        }
        if ops.iter().any(|(n, _)| n.is_empty()) {
            return Err(err(ErrorCode::INVALID_CONFIG, "empty config name"));
        }
        if validate_only {
            return Ok(Vec::new());
        }
        Ok(ops
            .iter()
            .map(|(name, value)| MetadataRecord::ConfigRecord {
                resource_type,
                resource_name: resource_name.to_string(),
                name: name.clone(),
                value: value.clone(),
            })
            .collect())
    }

    /// Round-robin placement over the active brokers that are not cordoned (KIP-1066), starting at a random offset per call: partition
    /// `first + i` starts at broker `start + first + i` (mod n), so the leader (first replica) rotates with
    /// the partition. Without racks the brokers are in id order and the replicas are the next `rf`; with
    /// `broker.rack` set (KIP-36) they are in rack-alternating order (each rack's first broker, then each
    /// rack's second, ...) and each further replica is the next broker on a rack the partition is not on
    /// yet, until every rack has one (Kafka's rack-aware assignment); a broker without a rack counts as a
    /// rack of its own.
    fn place(
        &mut self,
        image: &MetadataImage,
        first: i32,
        count: i32,
        rf: i16,
    ) -> Result<Vec<Vec<BrokerId>>, ControllerError> {
        let usable: Vec<BrokerId> = image
            .brokers
            .keys()
            .copied()
            .filter(|&b| image.accepts_new_replicas(b))
            .collect();
        if rf <= 0 || usable.len() < rf as usize {
            return Err(err(
                ErrorCode::INVALID_REPLICATION_FACTOR,
                format!(
                    "replication factor {rf} needs that many active, uncordoned brokers; {} are",
                    usable.len()
                ),
            ));
        }
        let n = usable.len();
        let start = self.rng.gen_range(0..n);
        let racks: Vec<Option<&str>> = (usable.iter())
            .map(|b| image.brokers.get(b).and_then(|r| r.rack.as_deref()))
            .collect();
        if racks.iter().all(Option::is_none) {
            return Ok((0..count as usize)
                .map(|i| {
                    (0..rf as usize)
                        .map(|j| usable[(start + first as usize + i + j) % n])
                        .collect()
                })
                .collect());
        }
        let order = rack_alternating(&usable, &racks);
        Ok((0..count as usize)
            .map(|i| rack_aware_replicas(&order, (start + first as usize + i) % n, rf as usize))
            .collect())
    }

    fn new_topic_id(&mut self, image: &MetadataImage) -> Uuid {
        loop {
            let id = uuid::Builder::from_random_bytes(self.rng.gen()).into_uuid();
            if !id.is_nil() && image.topic_by_id(id).is_none() {
                return id;
            }
        }
    }
}

/// `brokers` (with their `racks`, `None` = a rack of its own) in rack-alternating order: each rack's first
/// broker, then each rack's second, ...; racks and brokers within a rack in id order.
fn rack_alternating<'a>(
    brokers: &[BrokerId],
    racks: &[Option<&'a str>],
) -> Vec<(BrokerId, Option<&'a str>)> {
    let mut by_rack: std::collections::BTreeMap<(Option<&str>, Option<BrokerId>), Vec<BrokerId>> =
        std::collections::BTreeMap::new();
    for (b, r) in brokers.iter().zip(racks) {
        // A broker without a rack is alone on its own.
        let key = (*r, r.is_none().then_some(*b));
        by_rack.entry(key).or_default().push(*b);
    }
    let longest = by_rack.values().map(Vec::len).max().unwrap_or(0);
    (0..longest)
        .flat_map(|i| {
            (by_rack.iter())
                .filter_map(move |((rack, _), bs)| bs.get(i).map(|b| (*b, *rack)))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// `rf` replicas from `order` starting at `start`: the first there, each next one the following broker
/// on a rack not used yet, or — once every rack is used — the following broker not chosen yet.
fn rack_aware_replicas(
    order: &[(BrokerId, Option<&str>)],
    start: usize,
    rf: usize,
) -> Vec<BrokerId> {
    let n = order.len();
    let rack_count = {
        let mut seen: Vec<(Option<&str>, Option<BrokerId>)> =
            order.iter().map(|c| rack_key(*c)).collect();
        seen.sort();
        seen.dedup();
        seen.len()
    };
    let mut chosen: Vec<(BrokerId, Option<&str>)> = vec![order[start % n]];
    let mut k = start;
    while chosen.len() < rf {
        k += 1;
        let cand = order[k % n];
        if chosen.iter().any(|c| c.0 == cand.0) {
            continue;
        }
        let rack_used = chosen.iter().any(|c| rack_key(*c) == rack_key(cand));
        if rack_used && chosen.len() < rack_count {
            continue;
        }
        chosen.push(cand);
    }
    chosen.into_iter().map(|(b, _)| b).collect()
}

/// The rack a broker counts as on: its `broker.rack`, or itself alone without one.
fn rack_key((b, r): (BrokerId, Option<&str>)) -> (Option<&str>, Option<BrokerId>) {
    (r, r.is_none().then_some(b))
}

/// A new partition: ISR = active replicas, leader = first of them.
fn new_partition_record(
    image: &MetadataImage,
    topic_id: Uuid,
    partition_id: i32,
    replicas: Vec<BrokerId>,
) -> MetadataRecord {
    let isr: Vec<BrokerId> = replicas
        .iter()
        .copied()
        .filter(|&r| image.is_active_broker(r))
        .collect();
    let leader = isr.first().copied().unwrap_or(NO_LEADER);
    MetadataRecord::PartitionRecord {
        topic_id,
        partition_id,
        replicas,
        isr,
        leader,
        leader_epoch: LeaderEpoch(0),
        partition_epoch: PartitionEpoch(0),
        directories: Vec::new(),
    }
}

/// Validates explicit replica assignments: partitions `first..first+n` each listed once, every list
/// non-empty, of one length, of distinct registered brokers, at least one of them active.
fn validate_assignments(
    image: &MetadataImage,
    assignments: &[(i32, Vec<BrokerId>)],
    first: i32,
) -> Result<Vec<Vec<BrokerId>>, ControllerError> {
    let bad = |m: String| err(ErrorCode::INVALID_REPLICA_ASSIGNMENT, m);
    if assignments.len() > MAX_PARTITIONS as usize {
        return Err(err(
            ErrorCode::INVALID_PARTITIONS,
            format!("at most {MAX_PARTITIONS} partitions per topic"),
        ));
    }
    let mut sorted: Vec<&(i32, Vec<BrokerId>)> = assignments.iter().collect();
    sorted.sort_by_key(|(p, _)| *p);
    let rf = sorted[0].1.len();
    let mut out = Vec::with_capacity(sorted.len());
    for (i, (p, replicas)) in sorted.into_iter().enumerate() {
        if *p != first + i as i32 {
            return Err(bad(format!(
                "partitions must be numbered consecutively from {first}; found {p}"
            )));
        }
        if replicas.is_empty() || replicas.len() != rf {
            return Err(bad(format!(
                "partition {p}: every partition needs the same, non-zero number of replicas"
            )));
        }
        let distinct: BTreeSet<BrokerId> = replicas.iter().copied().collect();
        if distinct.len() != replicas.len() {
            return Err(bad(format!(
                "partition {p}: duplicate replica in {replicas:?}"
            )));
        }
        if let Some(r) = replicas.iter().find(|r| !image.brokers.contains_key(r)) {
            return Err(bad(format!("partition {p}: broker {r} is not registered")));
        }
        if !replicas.iter().any(|&r| image.is_active_broker(r)) {
            return Err(bad(format!(
                "partition {p}: all replicas {replicas:?} are fenced or shutting down"
            )));
        }
        out.push(replicas.clone());
    }
    Ok(out)
}
