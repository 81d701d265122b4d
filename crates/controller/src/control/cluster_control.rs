//! Broker registration, heartbeats, session expiry and fencing, controlled shutdown (Kafka's
//! `ClusterControlManager` and `BrokerHeartbeatManager`), and what a broker leaving or arriving does
//! to leaderships and ISRs.

use metadata::{
    AssignReplicasToDirs, BrokerRegistration, ControllerError, HeartbeatReply, MetadataImage,
    MetadataRecord, PartitionRegistration, DIRECTORY_LOST, DIRECTORY_UNASSIGNED, NO_LEADER,
};
use types::{BrokerId, ErrorCode};
use uuid::Uuid;

/// Which partitions a broker's leaving or arriving concerns: `(view, topic id, partition index,
/// registration)` → whether to look at it.
type PartitionFilter<'f> = &'f dyn Fn(&MetadataImage, Uuid, i32, &PartitionRegistration) -> bool;

/// Every partition.
fn all_partitions(_: &MetadataImage, _: Uuid, _: i32, _: &PartitionRegistration) -> bool {
    true
}

use super::{
    err, Batch, Decision, Heartbeat, QuorumControl, RegisterBroker,
    MAX_PREFERRED_ELECTIONS_PER_TICK,
};

impl QuorumControl {
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
        if req.broker_id.get() < 0 {
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
            listeners: req.listeners.clone(),
            log_dirs: req.log_dirs.clone(),
        });
        self.last_contact_ms.insert(req.broker_id, now_ms);
        Ok(batch.records)
    }

    /// UnregisterBroker (KIP-500): removes `broker_id`'s registration (Kafka's `UnregisterBrokerRecord`)
    /// after moving its leaderships and ISR memberships away as fencing does. As in Kafka, a live broker
    /// is not refused: its next heartbeat is answered BROKER_ID_NOT_REGISTERED and it registers again.
    ///
    /// Errors: `BROKER_ID_NOT_REGISTERED` (Kafka's message) for an id without a registration.
    pub fn unregister_broker(
        &mut self,
        image: &MetadataImage,
        broker_id: BrokerId,
    ) -> Result<Vec<MetadataRecord>, ControllerError> {
        let Some(reg) = image.brokers.get(&broker_id) else {
            return Err(err(
                ErrorCode::BROKER_ID_NOT_REGISTERED,
                format!("Broker ID {broker_id} is not currently registered"),
            ));
        };
        let broker_epoch = reg.broker_epoch;
        let mut batch = Batch::new(image);
        self.broker_leaves(&mut batch, broker_id, true);
        batch.push(MetadataRecord::UnregisterBrokerRecord {
            broker_id,
            broker_epoch,
        });
        self.last_contact_ms.remove(&broker_id);
        self.heartbeat_offsets.remove(&broker_id);
        Ok(batch.records)
    }

    /// BrokerHeartbeat: refreshes the session, records a change of the broker's log dir state (see
    /// [`log_dir_change`](Self::log_dir_change)), unfences a caught-up broker, fences one that asks for
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
        self.heartbeat_offsets
            .insert(hb.broker_id, hb.metadata_offset);
        let caught_up = hb.metadata_offset >= reg.broker_epoch.get();
        let (id, epoch) = (hb.broker_id, hb.broker_epoch);
        let mut batch = Batch::new(image);
        self.log_dir_change(&mut batch, reg, &hb.offline_log_dirs);
        let mut should_shut_down = false;
        if hb.want_shutdown {
            if !reg.in_controlled_shutdown {
                batch.push(MetadataRecord::BrokerRegistrationChangeRecord {
                    broker_id: id,
                    broker_epoch: epoch,
                    fenced: None,
                    in_controlled_shutdown: Some(true),
                    log_dir_offline: None,
                    offline_log_dirs: None,
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

    /// A heartbeat's `OfflineLogDirs` (KIP-858) differ from the registration's: records the new set, and
    /// whether it covers every directory of the broker (or is Kafka's `DirectoryId.LOST`). The replicas
    /// in a directory gone offline leave: their leaderships move to other ISR members whose replicas are
    /// online (or the partition loses its leader) and they leave their ISRs, as when the broker is fenced
    /// — only for those replicas. While offline, [`MetadataImage::is_replica_online`] keeps them from
    /// being elected or added to an ISR; with every directory offline the broker gets no new replicas
    /// either. A directory back online (broker unfenced): leaderless partitions its replicas can lead
    /// get a leader; its followers rejoin ISRs through the leaders' AlterPartition.
    fn log_dir_change(&self, batch: &mut Batch<'_>, reg: &BrokerRegistration, offline: &[Uuid]) {
        let mut dirs = offline.to_vec();
        dirs.sort();
        dirs.dedup();
        let all = dirs.contains(&DIRECTORY_LOST)
            || (!dirs.is_empty() && reg.log_dirs.is_empty())
            || (!reg.log_dirs.is_empty() && reg.log_dirs.iter().all(|d| dirs.contains(d)));
        if reg.log_dir_offline == all && reg.offline_log_dirs == dirs {
            return;
        }
        let id = reg.broker_id;
        batch.push(MetadataRecord::BrokerRegistrationChangeRecord {
            broker_id: id,
            broker_epoch: reg.broker_epoch,
            fenced: None,
            in_controlled_shutdown: None,
            log_dir_offline: (reg.log_dir_offline != all).then_some(all),
            offline_log_dirs: (reg.offline_log_dirs != dirs).then_some(dirs),
        });
        if reg.fenced {
            return; // a fenced broker leads nothing and is in no ISR that fencing could shrink
        }
        let dir_offline = |view: &MetadataImage, _: Uuid, _: i32, p: &PartitionRegistration| {
            view.is_replica_dir_offline(id, p)
        };
        self.replicas_leave(batch, id, true, &dir_offline);
        if !reg.in_controlled_shutdown {
            let dir_online = |view: &MetadataImage, _: Uuid, _: i32, p: &PartitionRegistration| {
                !view.is_replica_dir_offline(id, p)
            };
            self.replicas_arrive(batch, id, &dir_online);
        }
    }

    /// AssignReplicasToDirs (KIP-858): records the directory of each listed replica of the broker whose
    /// image entry differs (a `PartitionChangeRecord` with `directories`); a replica that turns out to be
    /// in one of the broker's offline directories then leaves, as in
    /// [`log_dir_change`](Self::log_dir_change). Partitions that no longer exist or no longer have the
    /// broker as a replica, and directories the broker did not register, are skipped.
    ///
    /// Errors: `STALE_BROKER_EPOCH` (an unknown broker or an old registration's epoch).
    pub fn assign_replicas_to_dirs(
        &mut self,
        image: &MetadataImage,
        req: &AssignReplicasToDirs,
    ) -> Result<Vec<MetadataRecord>, ControllerError> {
        super::check_broker_epoch(image, req.broker_id, req.broker_epoch)?;
        let broker = req.broker_id;
        let reg = &image.brokers[&broker];
        let mut batch = Batch::new(image);
        for &(topic_id, partition_id, dir) in &req.assignments {
            let known = dir == DIRECTORY_UNASSIGNED || reg.log_dirs.contains(&dir);
            let Some(p) = batch.view.partition(topic_id, partition_id) else {
                continue;
            };
            if !known || p.directory_of(broker) == dir {
                continue;
            }
            let Some(directories) = p.directories_with(broker, dir) else {
                continue;
            };
            batch.push(MetadataRecord::directories_change(
                topic_id,
                partition_id,
                directories,
            ));
            let p = batch.view.partition(topic_id, partition_id);
            if !reg.fenced && p.is_some_and(|p| batch.view.is_replica_dir_offline(broker, p)) {
                let this = |view: &MetadataImage, t: Uuid, i: i32, p: &PartitionRegistration| {
                    (t, i) == (topic_id, partition_id) && view.is_replica_dir_offline(broker, p)
                };
                self.replicas_leave(&mut batch, broker, true, &this);
            }
        }
        Ok(batch.records)
    }

    /// The periodic check (Kafka's `maybeFenceOneStaleBroker`): fences every unfenced broker whose
    /// session expired at `now_ms`, moving its leaderships and ISR memberships away. Then, with
    /// `auto_leader_rebalance` and once per `leader_imbalance_check_interval_ms`, elects preferred
    /// leaders (Kafka's `maybeBalancePartitionLeaders`, see [`elect_preferred_leaders`](Self::elect_preferred_leaders)).
    /// Last, once per `balancer.check_interval_ms`, the automatic balancing step (see [`super::balancer`]).
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
        self.track_dead_brokers(&batch.view, now_ms);
        self.maybe_balance(&mut batch, now_ms);
        batch.records
    }

    /// Moves leaderships and ISR memberships away from `broker` (Kafka's
    /// `generateLeaderAndIsrUpdates`). With `fencing`, a partition whose leadership cannot move
    /// loses its leader; without (controlled shutdown) it is left alone. Returns whether any record
    /// was added.
    fn broker_leaves(&self, batch: &mut Batch<'_>, broker: BrokerId, fencing: bool) -> bool {
        self.replicas_leave(batch, broker, fencing, &all_partitions)
    }

    /// [`broker_leaves`](Self::broker_leaves) for the partitions `filter` selects only (the replicas in
    /// a failed directory). The new leader is an ISR member whose replica is online.
    fn replicas_leave(
        &self,
        batch: &mut Batch<'_>,
        broker: BrokerId,
        fencing: bool,
        filter: PartitionFilter<'_>,
    ) -> bool {
        let mut changes = Vec::new();
        let view = &batch.view;
        for t in view.topics.values() {
            for (&pid, p) in &t.partitions {
                if !p.isr.contains(&broker) && p.leader != broker {
                    continue;
                }
                if !filter(view, t.topic_id, pid, p) {
                    continue;
                }
                let mut new_isr: Vec<BrokerId> =
                    p.isr.iter().copied().filter(|&r| r != broker).collect();
                if new_isr.is_empty() {
                    // Kafka keeps the last ISR member so that it can come back as leader.
                    new_isr = p.isr.clone();
                }
                let mut leader = None;
                if p.leader == broker {
                    let candidate = p.replicas.iter().copied().find(|&r| {
                        r != broker && new_isr.contains(&r) && view.is_replica_online(r, p)
                    });
                    match candidate {
                        Some(c) => leader = Some(c),
                        None => {
                            let unclean = self
                                .config
                                .unclean_leader_election
                                .then(|| {
                                    p.replicas
                                        .iter()
                                        .copied()
                                        .find(|&r| r != broker && view.is_replica_online(r, p))
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
                    changes.push(MetadataRecord::isr_leader_change(
                        t.topic_id, pid, isr, leader,
                    ));
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
    fn broker_arrives(&self, batch: &mut Batch<'_>, broker: BrokerId) {
        self.replicas_arrive(batch, broker, &all_partitions);
    }

    /// [`broker_arrives`](Self::broker_arrives) for the partitions `filter` selects only (the replicas
    /// of a directory back online): a leaderless partition with a replica on `broker` gets the first
    /// ISR member whose replica is online, or (unclean election) `broker`'s online replica.
    fn replicas_arrive(
        &self,
        batch: &mut Batch<'_>,
        broker: BrokerId,
        filter: PartitionFilter<'_>,
    ) {
        let mut changes = Vec::new();
        let view = &batch.view;
        for t in view.topics.values() {
            for (&pid, p) in &t.partitions {
                if p.leader != NO_LEADER || !p.replicas.contains(&broker) {
                    continue;
                }
                if !filter(view, t.topic_id, pid, p) {
                    continue;
                }
                let clean = p
                    .replicas
                    .iter()
                    .copied()
                    .find(|&r| p.isr.contains(&r) && view.is_replica_online(r, p));
                let change = match clean {
                    Some(l) => Some((l, None)),
                    None if self.config.unclean_leader_election
                        && view.is_replica_online(broker, p) =>
                    {
                        Some((broker, Some(vec![broker])))
                    }
                    None => None,
                };
                if let Some((leader, isr)) = change {
                    changes.push(MetadataRecord::isr_leader_change(
                        t.topic_id,
                        pid,
                        isr,
                        Some(leader),
                    ));
                }
            }
        }
        for c in changes {
            batch.push(c);
        }
    }
}
