//! The pure, deterministic controller decision logic (Kafka's `ClusterControlManager`,
//! `ReplicationControlManager`, `BrokerHeartbeatManager`, `ProducerIdControlManager`).
//!
//! [`QuorumControl`] takes the committed [`MetadataImage`], a request and the current time `now_ms`
//! (milliseconds on any monotonic clock), and returns the records to append plus the reply. It does
//! no I/O. The only state it keeps besides the image is in memory on the active controller: the time
//! of each broker's last heartbeat (KIP-631: sessions are not logged) and the random source used to
//! pick topic ids and placement offsets (seeded, so tests are reproducible). Replaying the returned
//! records with [`MetadataImage::apply`] is how the decision takes effect; nothing here mutates the
//! image.
//!
//! Rules (Kafka as reference):
//! - Brokers register fenced; a heartbeat of a caught-up broker (`metadata_offset >=` its broker
//!   epoch, which is the offset of its registration record) unfences it. A broker silent for
//!   `session_timeout_ms` is fenced by [`QuorumControl::tick`].
//! - A broker that leaves (fenced, or in controlled shutdown) is removed from every ISR, except that
//!   the last ISR member stays; partitions it led get the first other replica (in `replicas` order)
//!   that is in the ISR and active, else (with unclean election) any active replica with ISR reset
//!   to it, else no leader (-1). Controlled shutdown leaves a partition alone when its leadership
//!   cannot move; the broker is told to shut down (and is fenced) once nothing can move.
//! - A broker that becomes active is elected leader of leaderless partitions whose ISR holds it (or
//!   of any leaderless partition it replicates, with unclean election).
//! - Every leader change bumps the leader epoch, every change bumps the partition epoch (on replay).

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use metadata::{
    ControllerError, CreateTopic, CreatedTopic, ElectionResult, ElectionType, HeartbeatReply,
    MetadataImage, MetadataRecord, PartitionRegistration, NO_LEADER, RESOURCE_BROKER,
    RESOURCE_TOPIC,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use types::ErrorCode;
use uuid::Uuid;

/// The requests [`QuorumControl`] decides on; they moved to the `metadata` crate with the other
/// broker-controller formats.
pub use metadata::{AlterPartition, Heartbeat, RegisterBroker};

/// Most partitions one topic may have (bounds allocation on bad input).
pub const MAX_PARTITIONS: i32 = 100_000;
/// Producer ids handed out per AllocateProducerIds (Kafka's block size, KIP-730).
pub const PRODUCER_ID_BLOCK_SIZE: i32 = 1000;
/// Longest legal topic name (Kafka `Topic.MAX_NAME_LENGTH`).
pub const MAX_TOPIC_NAME_LEN: usize = 249;

/// Static settings of the decision logic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ControlConfig {
    /// `broker.session.timeout.ms`.
    pub session_timeout_ms: i64,
    /// `num.partitions`, used for `num_partitions = -1`.
    pub default_num_partitions: i32,
    /// `default.replication.factor`, used for `replication_factor = -1`.
    pub default_replication_factor: i16,
    /// `unclean.leader.election.enable`.
    pub unclean_leader_election: bool,
    /// `auto.leader.rebalance.enable` (Kafka default true): the periodic check moves each partition's
    /// leadership back to its preferred replica (the first of its replicas) when that replica is in the ISR
    /// and active.
    pub auto_leader_rebalance: bool,
    /// `leader.imbalance.check.interval.seconds` in ms (Kafka default 300 s): the period of that check.
    pub leader_imbalance_check_interval_ms: i64,
}

/// At most this many preferred-leader elections per check; more wait for the next tick (as Kafka's
/// controller bounds each balancing step).
const MAX_PREFERRED_ELECTIONS_PER_TICK: usize = 1000;

/// Records to append plus the reply to send once they are committed.
#[derive(Clone, Debug, PartialEq)]
pub struct Decision<T> {
    /// Records to append as one batch (empty: nothing to write).
    pub records: Vec<MetadataRecord>,
    /// Reply to the requester.
    pub reply: T,
}

/// The decision logic of the active controller; see the module doc.
#[derive(Debug)]
pub struct QuorumControl {
    config: ControlConfig,
    last_contact_ms: BTreeMap<i32, i64>,
    /// When the next preferred-leader check is due (set on activation and after each check).
    next_balance_ms: Option<i64>,
    rng: StdRng,
}

/// A working view: the committed image plus the records decided so far in this decision, applied to
/// a private copy (made on the first record).
struct Batch<'a> {
    view: Cow<'a, MetadataImage>,
    records: Vec<MetadataRecord>,
}

impl<'a> Batch<'a> {
    fn new(image: &'a MetadataImage) -> Self {
        Batch {
            view: Cow::Borrowed(image),
            records: Vec::new(),
        }
    }

    fn push(&mut self, record: MetadataRecord) {
        let offset = self.view.offset + 1;
        self.view.to_mut().apply(offset, &record);
        self.records.push(record);
    }
}

fn err(code: ErrorCode, message: impl Into<String>) -> ControllerError {
    ControllerError::new(code, message)
}

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
    /// A controller with no broker sessions, drawing randomness from `seed`.
    pub fn new(config: ControlConfig, seed: u64) -> Self {
        QuorumControl {
            config,
            last_contact_ms: BTreeMap::new(),
            next_balance_ms: None,
            rng: StdRng::seed_from_u64(seed),
        }
    }

    /// The static settings.
    pub fn config(&self) -> &ControlConfig {
        &self.config
    }

    /// Called when this node becomes the active controller: every registered broker gets a fresh
    /// session starting at `now_ms` (KIP-631: sessions live only in the active controller's memory).
    pub fn activate(&mut self, image: &MetadataImage, now_ms: i64) {
        self.last_contact_ms = image.brokers.keys().map(|&id| (id, now_ms)).collect();
        self.next_balance_ms =
            Some(now_ms.saturating_add(self.config.leader_imbalance_check_interval_ms.max(0)));
    }

    /// True when `broker_id` heartbeated within the session timeout.
    pub fn has_valid_session(&self, broker_id: i32, now_ms: i64) -> bool {
        self.last_contact_ms
            .get(&broker_id)
            .is_some_and(|&t| now_ms.saturating_sub(t) < self.config.session_timeout_ms)
    }

    /// BrokerRegistration: the records to append. The broker epoch of the new registration is the
    /// offset at which these records are committed.
    ///
    /// Errors: `INVALID_REQUEST` for a negative id; `DUPLICATE_BROKER_REGISTRATION` when another
    /// incarnation of the id holds a live session.
    pub fn register_broker(
        &mut self,
        image: &MetadataImage,
        req: &RegisterBroker,
        now_ms: i64,
    ) -> Result<Vec<MetadataRecord>, ControllerError> {
        if req.broker_id < 0 {
            return Err(err(ErrorCode::INVALID_REQUEST, "negative broker id"));
        }
        let mut batch = Batch::new(image);
        if let Some(existing) = image.brokers.get(&req.broker_id) {
            if existing.incarnation_id != req.incarnation_id
                && self.has_valid_session(req.broker_id, now_ms)
            {
                return Err(err(
                    ErrorCode::DUPLICATE_BROKER_REGISTRATION,
                    format!(
                        "another incarnation of broker {} has a live session",
                        req.broker_id
                    ),
                ));
            }
            if !existing.fenced {
                // The old registration goes away: move its leaderships and ISR memberships first.
                self.broker_leaves(&mut batch, req.broker_id, true);
            }
        }
        batch.push(MetadataRecord::RegisterBrokerRecord {
            broker_id: req.broker_id,
            incarnation_id: req.incarnation_id,
            host: req.host.clone(),
            port: req.port,
            rack: req.rack.clone(),
        });
        self.last_contact_ms.insert(req.broker_id, now_ms);
        Ok(batch.records)
    }

    /// BrokerHeartbeat: refreshes the session, unfences a caught-up broker, fences one that asks for
    /// it, and drives controlled shutdown.
    ///
    /// Errors: `BROKER_ID_NOT_REGISTERED`, `STALE_BROKER_EPOCH`.
    pub fn heartbeat(
        &mut self,
        image: &MetadataImage,
        hb: &Heartbeat,
        now_ms: i64,
    ) -> Result<Decision<HeartbeatReply>, ControllerError> {
        let reg = image.brokers.get(&hb.broker_id).ok_or_else(|| {
            err(
                ErrorCode::BROKER_ID_NOT_REGISTERED,
                format!("broker {} is not registered", hb.broker_id),
            )
        })?;
        if reg.broker_epoch != hb.broker_epoch {
            return Err(err(
                ErrorCode::STALE_BROKER_EPOCH,
                format!(
                    "broker {} epoch {} is not the registered epoch {}",
                    hb.broker_id, hb.broker_epoch, reg.broker_epoch
                ),
            ));
        }
        self.last_contact_ms.insert(hb.broker_id, now_ms);
        let caught_up = hb.metadata_offset >= reg.broker_epoch;
        let (id, epoch) = (hb.broker_id, hb.broker_epoch);
        let mut batch = Batch::new(image);
        let mut should_shut_down = false;
        if hb.want_shutdown {
            if !reg.in_controlled_shutdown {
                batch.push(MetadataRecord::BrokerRegistrationChangeRecord {
                    broker_id: id,
                    broker_epoch: epoch,
                    fenced: None,
                    in_controlled_shutdown: Some(true),
                });
            }
            if reg.fenced {
                should_shut_down = true;
            } else {
                let moved = self.broker_leaves(&mut batch, id, false);
                if !moved && reg.in_controlled_shutdown {
                    // Nothing left to move (and the previous heartbeat's moves are committed):
                    // done. The broker is fenced as it goes.
                    self.broker_leaves(&mut batch, id, true);
                    batch.push(MetadataRecord::FenceBrokerRecord {
                        broker_id: id,
                        broker_epoch: epoch,
                    });
                    should_shut_down = true;
                }
            }
        } else if reg.fenced {
            if !hb.want_fence && caught_up && !reg.in_controlled_shutdown {
                batch.push(MetadataRecord::UnfenceBrokerRecord {
                    broker_id: id,
                    broker_epoch: epoch,
                });
                self.broker_arrives(&mut batch, id);
            }
        } else if hb.want_fence {
            self.broker_leaves(&mut batch, id, true);
            batch.push(MetadataRecord::FenceBrokerRecord {
                broker_id: id,
                broker_epoch: epoch,
            });
        }
        let is_fenced = batch.view.brokers.get(&id).is_none_or(|b| b.fenced);
        Ok(Decision {
            records: batch.records,
            reply: HeartbeatReply {
                is_fenced,
                is_caught_up: caught_up,
                should_shut_down,
            },
        })
    }

    /// The periodic check (Kafka's `maybeFenceOneStaleBroker`): fences every unfenced broker whose
    /// session expired at `now_ms`, moving its leaderships and ISR memberships away. Then, with
    /// `auto_leader_rebalance` and once per `leader_imbalance_check_interval_ms`, elects preferred
    /// leaders (Kafka's `maybeBalancePartitionLeaders`, see [`elect_preferred_leaders`](Self::elect_preferred_leaders)).
    pub fn tick(&mut self, image: &MetadataImage, now_ms: i64) -> Vec<MetadataRecord> {
        let mut batch = Batch::new(image);
        for (&id, reg) in &image.brokers {
            if reg.fenced {
                continue;
            }
            let last = *self.last_contact_ms.entry(id).or_insert(now_ms);
            if now_ms.saturating_sub(last) < self.config.session_timeout_ms {
                continue;
            }
            self.broker_leaves(&mut batch, id, true);
            batch.push(MetadataRecord::FenceBrokerRecord {
                broker_id: id,
                broker_epoch: reg.broker_epoch,
            });
        }
        if self.config.auto_leader_rebalance {
            let interval = self.config.leader_imbalance_check_interval_ms.max(0);
            let due = *self
                .next_balance_ms
                .get_or_insert(now_ms.saturating_add(interval));
            if now_ms >= due {
                let more =
                    Self::elect_preferred_leaders(&mut batch, MAX_PREFERRED_ELECTIONS_PER_TICK);
                // More imbalanced partitions than one step elects: continue on the next tick.
                self.next_balance_ms = Some(if more {
                    now_ms
                } else {
                    now_ms.saturating_add(interval)
                });
            }
        }
        batch.records
    }

    /// ElectLeaders (KIP-460): elects leaders of `partitions` (topic name, index), or of every partition when
    /// `None` — then only partitions where an election happened or failed are reported, not those that
    /// needed none (as Kafka's controller does). Results come in request order.
    ///
    /// Preferred: the first replica becomes leader when it is in the ISR and active, else
    /// `PREFERRED_LEADER_NOT_AVAILABLE`; `ELECTION_NOT_NEEDED` when it already leads. Unclean: a
    /// partition without a leader gets its first active ISR member, else its first active replica (the
    /// ISR becomes just that replica: records only the old ISR had are lost, which is what an unclean
    /// election means), else `ELIGIBLE_LEADERS_NOT_AVAILABLE`; `ELECTION_NOT_NEEDED` when it has a
    /// leader. Unknown partitions: `UNKNOWN_TOPIC_OR_PARTITION`.
    pub fn elect_leaders(
        &self,
        image: &MetadataImage,
        election: ElectionType,
        partitions: Option<&[(String, i32)]>,
    ) -> Decision<Vec<ElectionResult>> {
        let mut batch = Batch::new(image);
        let wanted: Vec<(String, i32)> = match partitions {
            Some(p) => p.to_vec(),
            None => image
                .topics
                .values()
                .flat_map(|t| t.partitions.keys().map(|&p| (t.name.clone(), p)))
                .collect(),
        };
        let mut results = Vec::with_capacity(wanted.len());
        for (topic, partition) in wanted {
            let outcome = Self::elect_one(&mut batch, election, &topic, partition);
            let (error_code, message) = match outcome {
                Ok(()) => (ErrorCode::NONE, None),
                Err((code, msg)) => (code, Some(msg)),
            };
            if partitions.is_none() && error_code == ErrorCode::ELECTION_NOT_NEEDED {
                continue;
            }
            results.push(ElectionResult {
                topic,
                partition,
                error_code: error_code.0,
                message,
            });
        }
        Decision {
            records: batch.records,
            reply: results,
        }
    }

    fn elect_one(
        batch: &mut Batch<'_>,
        election: ElectionType,
        topic: &str,
        partition: i32,
    ) -> Result<(), (ErrorCode, String)> {
        let unknown = || {
            (
                ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
                format!("{topic}-{partition} does not exist"),
            )
        };
        let t = batch.view.topics.get(topic).ok_or_else(unknown)?;
        let p = t.partitions.get(&partition).ok_or_else(unknown)?;
        let topic_id = t.topic_id;
        let (leader, isr) = match election {
            ElectionType::Preferred => {
                let preferred = p.replicas.first().copied().ok_or_else(unknown)?;
                if p.leader == preferred {
                    return Err((
                        ErrorCode::ELECTION_NOT_NEEDED,
                        "the preferred replica is the leader".into(),
                    ));
                }
                if !p.isr.contains(&preferred) || !batch.view.is_active_broker(preferred) {
                    return Err((
                        ErrorCode::PREFERRED_LEADER_NOT_AVAILABLE,
                        format!("preferred replica {preferred} is not in the ISR or not active"),
                    ));
                }
                (preferred, None)
            }
            ElectionType::Unclean => {
                if p.leader != NO_LEADER {
                    return Err((
                        ErrorCode::ELECTION_NOT_NEEDED,
                        format!("partition has leader {}", p.leader),
                    ));
                }
                let active = |r: &i32| batch.view.is_active_broker(*r);
                if let Some(&r) = p.isr.iter().find(|r| active(r)) {
                    (r, None)
                } else if let Some(&r) = p.replicas.iter().find(|r| active(r)) {
                    (r, Some(vec![r]))
                } else {
                    return Err((
                        ErrorCode::ELIGIBLE_LEADERS_NOT_AVAILABLE,
                        "no replica is active".into(),
                    ));
                }
            }
        };
        batch.push(MetadataRecord::PartitionChangeRecord {
            topic_id,
            partition_id: partition,
            isr,
            leader: Some(leader),
        });
        Ok(())
    }

    /// The periodic preferred-leader election (KIP-183's PREFERRED type, as [`elect_leaders`](Self::elect_leaders)
    /// does it): every partition not led by its first replica, while that replica is in the ISR and active,
    /// gets it as leader (new LeaderEpoch; the ISR is unchanged, so no acknowledged record can be lost). At
    /// most `limit` elections; returns whether candidates were left over.
    fn elect_preferred_leaders(batch: &mut Batch<'_>, limit: usize) -> bool {
        let candidates: Vec<(String, i32)> = batch
            .view
            .topics
            .values()
            .flat_map(|t| {
                t.partitions
                    .iter()
                    .filter(|(_, p)| p.replicas.first().is_some_and(|&r| r != p.leader))
                    .map(|(&pid, _)| (t.name.clone(), pid))
            })
            .collect();
        let mut elected = 0;
        for (topic, partition) in candidates {
            if elected == limit {
                return true;
            }
            if Self::elect_one(batch, ElectionType::Preferred, &topic, partition).is_ok() {
                elected += 1;
            }
        }
        false
    }

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

    /// AlterPartition (KIP-497): a leader's ISR change. Returns the registration as it will be once
    /// the records commit (unchanged, with no records, when the ISR is already the requested set).
    ///
    /// Errors: `STALE_BROKER_EPOCH` (unknown broker or other epoch), `UNKNOWN_TOPIC_ID`,
    /// `UNKNOWN_TOPIC_OR_PARTITION`, `FENCED_LEADER_EPOCH`, `INVALID_REQUEST` (not the leader, ISR
    /// empty / with duplicates / outside the replicas / without the leader), `INVALID_UPDATE_VERSION`
    /// (partition epoch mismatch), `INELIGIBLE_REPLICA` (a new member is fenced or shutting down).
    pub fn alter_partition(
        &mut self,
        image: &MetadataImage,
        req: &AlterPartition,
    ) -> Result<Decision<PartitionRegistration>, ControllerError> {
        check_broker_epoch(image, req.broker_id, req.broker_epoch)?;
        let topic = image.topic_by_id(req.topic_id).ok_or_else(|| {
            err(
                ErrorCode::UNKNOWN_TOPIC_ID,
                format!("topic id {} does not exist", req.topic_id),
            )
        })?;
        let cur = topic.partitions.get(&req.partition).ok_or_else(|| {
            err(
                ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
                format!("partition {}-{} does not exist", topic.name, req.partition),
            )
        })?;
        if req.leader_epoch != cur.leader_epoch {
            return Err(err(
                ErrorCode::FENCED_LEADER_EPOCH,
                format!(
                    "leader epoch {} is not the current {}",
                    req.leader_epoch, cur.leader_epoch
                ),
            ));
        }
        if req.broker_id != cur.leader {
            return Err(err(
                ErrorCode::INVALID_REQUEST,
                format!("broker {} is not the leader {}", req.broker_id, cur.leader),
            ));
        }
        if req.partition_epoch != cur.partition_epoch {
            return Err(err(
                ErrorCode::INVALID_UPDATE_VERSION,
                format!(
                    "partition epoch {} is not the current {}",
                    req.partition_epoch, cur.partition_epoch
                ),
            ));
        }
        let set: BTreeSet<i32> = req.new_isr.iter().copied().collect();
        if req.new_isr.is_empty()
            || set.len() != req.new_isr.len()
            || !set.iter().all(|r| cur.replicas.contains(r))
            || !set.contains(&cur.leader)
        {
            return Err(err(
                ErrorCode::INVALID_REQUEST,
                format!(
                    "ISR {:?} must be distinct replicas of {:?} including the leader {}",
                    req.new_isr, cur.replicas, cur.leader
                ),
            ));
        }
        if let Some(bad) = req
            .new_isr
            .iter()
            .find(|r| !cur.isr.contains(r) && !image.is_active_broker(**r))
        {
            return Err(err(
                ErrorCode::INELIGIBLE_REPLICA,
                format!("replica {bad} is fenced, shutting down or unregistered"),
            ));
        }
        let cur_set: BTreeSet<i32> = cur.isr.iter().copied().collect();
        if cur_set == set {
            return Ok(Decision {
                records: Vec::new(),
                reply: cur.clone(),
            });
        }
        let mut next = cur.clone();
        next.isr = req.new_isr.clone();
        next.partition_epoch = next.partition_epoch.saturating_add(1);
        Ok(Decision {
            records: vec![MetadataRecord::PartitionChangeRecord {
                topic_id: req.topic_id,
                partition_id: req.partition,
                isr: Some(req.new_isr.clone()),
                leader: None,
            }],
            reply: next,
        })
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

    /// AllocateProducerIds (KIP-730): the next block of [`PRODUCER_ID_BLOCK_SIZE`] ids.
    ///
    /// Errors: `STALE_BROKER_EPOCH`, `UNKNOWN_SERVER_ERROR` when ids are exhausted.
    pub fn allocate_producer_ids(
        &mut self,
        image: &MetadataImage,
        broker_id: i32,
        broker_epoch: i64,
    ) -> Result<Decision<(i64, i32)>, ControllerError> {
        check_broker_epoch(image, broker_id, broker_epoch)?;
        let first = image.next_producer_id;
        let next = first
            .checked_add(PRODUCER_ID_BLOCK_SIZE as i64)
            .ok_or_else(|| err(ErrorCode::UNKNOWN_SERVER_ERROR, "producer ids exhausted"))?;
        Ok(Decision {
            records: vec![MetadataRecord::ProducerIdsRecord {
                broker_id,
                broker_epoch,
                next_producer_id: next,
            }],
            reply: (first, PRODUCER_ID_BLOCK_SIZE),
        })
    }

    /// Round-robin placement over active brokers sorted by id, starting at a random offset per call:
    /// partition `first + i` gets brokers `start + first + i + j` (mod n) for `j < rf`; the leader
    /// (first replica) rotates with the partition.
    fn place(
        &mut self,
        image: &MetadataImage,
        first: i32,
        count: i32,
        rf: i16,
    ) -> Result<Vec<Vec<i32>>, ControllerError> {
        let usable: Vec<i32> = image
            .brokers
            .keys()
            .copied()
            .filter(|&b| image.is_active_broker(b))
            .collect();
        if rf <= 0 || usable.len() < rf as usize {
            return Err(err(
                ErrorCode::INVALID_REPLICATION_FACTOR,
                format!(
                    "replication factor {rf} needs that many active brokers; {} are",
                    usable.len()
                ),
            ));
        }
        let n = usable.len();
        let start = self.rng.gen_range(0..n);
        Ok((0..count as usize)
            .map(|i| {
                (0..rf as usize)
                    .map(|j| usable[(start + first as usize + i + j) % n])
                    .collect()
            })
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

    /// Moves leaderships and ISR memberships away from `broker` (Kafka's
    /// `generateLeaderAndIsrUpdates`). With `fencing`, a partition whose leadership cannot move
    /// loses its leader; without (controlled shutdown) it is left alone. Returns whether any record
    /// was added.
    fn broker_leaves(&self, batch: &mut Batch<'_>, broker: i32, fencing: bool) -> bool {
        let mut changes = Vec::new();
        for t in batch.view.topics.values() {
            for (&pid, p) in &t.partitions {
                if !p.isr.contains(&broker) && p.leader != broker {
                    continue;
                }
                let mut new_isr: Vec<i32> =
                    p.isr.iter().copied().filter(|&r| r != broker).collect();
                if new_isr.is_empty() {
                    // Kafka keeps the last ISR member so that it can come back as leader.
                    new_isr = p.isr.clone();
                }
                let mut leader = None;
                if p.leader == broker {
                    let candidate = p.replicas.iter().copied().find(|&r| {
                        r != broker && new_isr.contains(&r) && batch.view.is_active_broker(r)
                    });
                    match candidate {
                        Some(c) => leader = Some(c),
                        None => {
                            let unclean =
                                self.config
                                    .unclean_leader_election
                                    .then(|| {
                                        p.replicas.iter().copied().find(|&r| {
                                            r != broker && batch.view.is_active_broker(r)
                                        })
                                    })
                                    .flatten();
                            if let Some(u) = unclean {
                                leader = Some(u);
                                new_isr = vec![u];
                            } else if fencing {
                                leader = Some(NO_LEADER);
                            } else {
                                continue; // controlled shutdown: cannot move, leave it
                            }
                        }
                    }
                }
                let isr = (new_isr != p.isr).then_some(new_isr);
                if isr.is_some() || leader.is_some() {
                    changes.push(MetadataRecord::PartitionChangeRecord {
                        topic_id: t.topic_id,
                        partition_id: pid,
                        isr,
                        leader,
                    });
                }
            }
        }
        let any = !changes.is_empty();
        for c in changes {
            batch.push(c);
        }
        any
    }

    /// Elects `broker` (now active) leader of leaderless partitions it can lead.
    fn broker_arrives(&self, batch: &mut Batch<'_>, broker: i32) {
        let mut changes = Vec::new();
        for t in batch.view.topics.values() {
            for (&pid, p) in &t.partitions {
                if p.leader != NO_LEADER || !p.replicas.contains(&broker) {
                    continue;
                }
                let clean = p
                    .replicas
                    .iter()
                    .copied()
                    .find(|&r| p.isr.contains(&r) && batch.view.is_active_broker(r));
                let change = match clean {
                    Some(l) => Some((l, None)),
                    None if self.config.unclean_leader_election => {
                        Some((broker, Some(vec![broker])))
                    }
                    None => None,
                };
                if let Some((leader, isr)) = change {
                    changes.push(MetadataRecord::PartitionChangeRecord {
                        topic_id: t.topic_id,
                        partition_id: pid,
                        isr,
                        leader: Some(leader),
                    });
                }
            }
        }
        for c in changes {
            batch.push(c);
        }
    }
}

fn check_broker_epoch(
    image: &MetadataImage,
    broker_id: i32,
    broker_epoch: i64,
) -> Result<(), ControllerError> {
    match image.brokers.get(&broker_id) {
        Some(b) if b.broker_epoch == broker_epoch => Ok(()),
        Some(b) => Err(err(
            ErrorCode::STALE_BROKER_EPOCH,
            format!(
                "broker {broker_id} epoch {broker_epoch} is not the registered epoch {}",
                b.broker_epoch
            ),
        )),
        None => Err(err(
            ErrorCode::STALE_BROKER_EPOCH,
            format!("broker {broker_id} is not registered"),
        )),
    }
}

/// A new partition: ISR = active replicas, leader = first of them.
fn new_partition_record(
    image: &MetadataImage,
    topic_id: Uuid,
    partition_id: i32,
    replicas: Vec<i32>,
) -> MetadataRecord {
    let isr: Vec<i32> = replicas
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
        leader_epoch: 0,
        partition_epoch: 0,
    }
}

/// Validates explicit replica assignments: partitions `first..first+n` each listed once, every list
/// non-empty, of one length, of distinct registered brokers, at least one of them active.
fn validate_assignments(
    image: &MetadataImage,
    assignments: &[(i32, Vec<i32>)],
    first: i32,
) -> Result<Vec<Vec<i32>>, ControllerError> {
    let bad = |m: String| err(ErrorCode::INVALID_REPLICA_ASSIGNMENT, m);
    if assignments.len() > MAX_PARTITIONS as usize {
        return Err(err(
            ErrorCode::INVALID_PARTITIONS,
            format!("at most {MAX_PARTITIONS} partitions per topic"),
        ));
    }
    let mut sorted: Vec<&(i32, Vec<i32>)> = assignments.iter().collect();
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
        let distinct: BTreeSet<i32> = replicas.iter().copied().collect();
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

#[cfg(test)]
mod tests;
