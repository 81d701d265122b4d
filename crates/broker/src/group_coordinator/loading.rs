//! Loading and unloading groups: replaying `__consumer_offsets` at startup (standalone) or per partition on
//! becoming its leader (Kafka's `onElection` / `onResignation`), dropping the groups of a partition no
//! longer led, deleting the offsets of deleted topics, and the [`MetadataPublisher`] that drives it.

use super::*;
use coordinator::ReplayEntry;
use imbl::ordmap::DiffItem;

/// How far a partition is replayed.
#[derive(Clone, Copy, Debug)]
enum ReplayTo {
    /// Up to the HighWatermark (standalone startup).
    HighWatermark,
    /// Up to the LogEndOffset (a new leader: everything in its log is its own history).
    LogEnd,
}

impl GroupCoordinatorService {
    /// Standalone: replays `__consumer_offsets` into the coordinator, then marks it loaded (blocking; call from
    /// the blocking pool). Returns the number of records replayed. Cluster mode: nothing to do (partitions
    /// load on leadership, [`on_partition_leadership`](Self::on_partition_leadership)); returns 0.
    pub fn load(&self) -> usize {
        if self.cluster_mode {
            self.loaded.store(true, Ordering::Release);
            self.timer.notify_one();
            tracing::info!(
                "group coordinator started (cluster mode: partitions load on leadership)"
            );
            return 0;
        }
        let started = std::time::Instant::now();
        let mut replayed = 0usize;
        let mut skipped = 0usize;
        {
            let mut st = self.state.lock();
            if let Some(topic) = self.metadata.topic(OFFSETS_TOPIC) {
                self.num_partitions
                    .store(topic.partitions, Ordering::Release);
                for p in 0..topic.partitions {
                    let (r, s) =
                        self.replay_partition(p, &mut st.coordinator, ReplayTo::HighWatermark);
                    replayed += r;
                    skipped += s;
                }
            }
            let now = st.now(&*self.clock);
            let fx = st.coordinator.loaded(now);
            let _ = self.apply(&mut st, fx);
            self.forget_missing_topics(&mut st, now);
        }
        self.loaded.store(true, Ordering::Release);
        self.timer.notify_one();
        tracing::info!(
            records = replayed,
            skipped,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "group coordinator loaded"
        );
        replayed
    }

    /// Cluster mode hook (Kafka's `onElection` / `onResignation`): this broker became (`is_leader`) or stopped
    /// being the leader of `__consumer_offsets` partition `partition`. Call it after the ReplicaManager has
    /// applied the new partition state, and without holding ReplicaManager or partition locks.
    ///
    /// Becoming leader: the partition is marked loading (its groups get COORDINATOR_LOAD_IN_PROGRESS) and
    /// replayed from its LogStartOffset to its LogEndOffset — on the blocking pool when called inside a tokio
    /// runtime, else inline — then its groups are served here. Repeated calls for a partition already led are
    /// no-ops. Losing leadership: its groups, offsets and timers are dropped at once (parked JoinGroup/SyncGroup
    /// requests are answered NOT_COORDINATOR) and they get NOT_COORDINATOR from then on; a load still running
    /// for it is discarded. Standalone (not cluster mode) this does nothing.
    pub fn on_partition_leadership(self: &Arc<Self>, partition: i32, is_leader: bool) {
        if !self.cluster_mode {
            return;
        }
        if let Some(t) = self.metadata.topic(OFFSETS_TOPIC) {
            self.num_partitions.store(t.partitions, Ordering::Release);
        }
        if is_leader {
            let id = self.load_ids.fetch_add(1, Ordering::Relaxed) + 1;
            {
                let mut parts = self.partitions.lock();
                if parts.contains_key(&partition) {
                    return;
                }
                parts.insert(partition, Coordination::Loading(id));
            }
            tracing::info!(
                partition,
                "loading {OFFSETS_TOPIC} partition (became its leader)"
            );
            match tokio::runtime::Handle::try_current() {
                Ok(handle) => {
                    let (this, io) = (self.clone(), self.load_io);
                    handle.spawn(async move {
                        let loaded = io.run(move || this.load_partition(partition, id)).await;
                        if let Err(e) = loaded {
                            tracing::error!(partition, error = %e, "{OFFSETS_TOPIC} partition load failed");
                        }
                    });
                }
                Err(_) => self.load_partition(partition, id),
            }
        } else {
            self.unload_partition(partition);
        }
    }

    /// Topics were deleted: every group coordinated here forgets its committed offsets for them (tombstones
    /// written), and Empty groups left without offsets are deleted (Kafka's `onPartitionsDeleted`). A write
    /// failure is logged; the offsets are gone from memory either way, as the topic is.
    pub fn on_topics_deleted(&self, topics: &[String]) {
        if topics.is_empty() || !self.is_loaded() {
            return;
        }
        let mut st = self.state.lock();
        if topics.iter().any(|t| t == OFFSETS_TOPIC) && !self.cluster_mode {
            // `__consumer_offsets` itself is gone: every group and offset with it (parked joins and syncs
            // get NOT_COORDINATOR); it is created again on the next group request. (In a cluster the
            // partitions' leadership ends, which unloads them.)
            let fx = st.coordinator.unload_groups(|_| true);
            let _ = self.apply(&mut st, fx);
        }
        let topics: Vec<String> = topics
            .iter()
            .filter(|t| *t != OFFSETS_TOPIC)
            .cloned()
            .collect();
        let now = st.now(&*self.clock);
        let fx = st.coordinator.delete_topics_offsets(now, &topics);
        if let Err(e) = self.apply(&mut st, fx) {
            tracing::warn!(
                ?topics,
                error = %e,
                "writing offset tombstones of deleted topics failed"
            );
        }
    }

    /// Replays one partition into a fresh coordinator and, if load `id` is still current, merges it.
    pub(super) fn load_partition(&self, partition: i32, id: u64) {
        let started = std::time::Instant::now();
        let mut scratch = GroupCoordinator::new(group_config(&self.config));
        let (replayed, skipped) = self.replay_partition(partition, &mut scratch, ReplayTo::LogEnd);
        {
            let mut st = self.state.lock();
            {
                let mut parts = self.partitions.lock();
                if parts.get(&partition) != Some(&Coordination::Loading(id)) {
                    tracing::info!(
                        partition,
                        "{OFFSETS_TOPIC} partition load superseded; discarded"
                    );
                    return;
                }
                parts.insert(partition, Coordination::Loaded);
            }
            self.note_loaded(&mut st, partition);
            let now = st.now(&*self.clock);
            let fx = st.coordinator.load_groups(now, scratch);
            let _ = self.apply(&mut st, fx);
            self.apply_deferred_completions(&mut st, partition, now);
            self.forget_missing_topics(&mut st, now);
        }
        self.timer.notify_one();
        tracing::info!(
            partition,
            records = replayed,
            skipped,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "{OFFSETS_TOPIC} partition loaded"
        );
    }

    /// Deletes the committed offsets of topics that no longer exist (tombstones written). Loading replays
    /// offsets whose topic was deleted while this broker did not coordinate them (a coordinator failover, or a
    /// crash between a DeleteTopics and its tombstones); without this a topic re-created under the same name
    /// would be read from an offset of the old log.
    fn forget_missing_topics(&self, st: &mut State, now: i64) {
        let gone: Vec<String> = st
            .coordinator
            .committed_topics()
            .into_iter()
            .filter(|t| self.metadata.topic(t).is_none())
            .collect();
        if gone.is_empty() {
            return;
        }
        tracing::info!(topics = ?gone, "deleting committed offsets of topics that no longer exist");
        let fx = st.coordinator.delete_topics_offsets(now, &gone);
        if let Err(e) = self.apply(st, fx) {
            tracing::warn!(
                error = %e,
                "writing offset tombstones of deleted topics failed"
            );
        }
    }

    /// Drops the groups of a partition no longer led here and answers their parked requests.
    fn unload_partition(&self, partition: i32) {
        if !self.partitions.lock().contains_key(&partition) {
            return; // not led here: nothing to unload (cheap check before the coordinator lock)
        }
        let mut st = self.state.lock();
        if self.partitions.lock().remove(&partition).is_none() {
            return;
        }
        st.last_written.remove(&partition);
        st.completions.remove(&partition);
        let n = self.num_partitions.load(Ordering::Acquire);
        let belongs = |g: &str| partition_for(g, n) == partition;
        let fx = st.coordinator.unload_groups(belongs);
        let _ = self.apply(&mut st, fx);
        let mut stale: Vec<RequestId> = st
            .pending
            .iter()
            .filter(|(_, (g, _))| belongs(g))
            .map(|(id, _)| *id)
            .collect();
        // Answered in request order, not the map's (random) order: a simulation's run depends on its seed.
        stale.sort_unstable();
        for id in stale {
            match st.pending.remove(&id) {
                Some((_, Pending::Join(tx))) => {
                    let _ = tx.send(Err(CoordinatorError::NotCoordinator));
                }
                Some((_, Pending::Sync(tx))) => {
                    let _ = tx.send(Err(CoordinatorError::NotCoordinator));
                }
                None => {}
            }
        }
        drop(st);
        self.timer.notify_one();
        tracing::info!(
            partition,
            "unloaded {OFFSETS_TOPIC} partition (no longer its leader)"
        );
    }

    /// Replays partition `p` of `__consumer_offsets` from its LogStartOffset to `to` into `into`. Returns
    /// (records replayed, records skipped).
    fn replay_partition(
        &self,
        p: i32,
        into: &mut GroupCoordinator,
        to: ReplayTo,
    ) -> (usize, usize) {
        let mut replayed = 0usize;
        let mut skipped = 0usize;
        let Some(partition) = self.replica_manager.partition(OFFSETS_TOPIC, p) else {
            tracing::warn!(partition = p, "{OFFSETS_TOPIC} partition is not hosted");
            return (0, 0);
        };
        let (start, end) = {
            let log = partition.offsets();
            let end = match to {
                ReplayTo::HighWatermark => log.high_watermark(),
                ReplayTo::LogEnd => log.log_end_offset(),
            };
            (log.log_start_offset(), end)
        };
        let mut offset = start;
        while offset < end {
            let read = partition.read_records(offset, LOAD_READ_BYTES, end, true);
            let bytes = match read {
                Ok(info) => match storage::records_to_bytes(&info.records) {
                    Ok(b) => b,
                    Err(e) => {
                        tracing::warn!(partition = p, %offset, error = %e, "cannot read {OFFSETS_TOPIC}");
                        break;
                    }
                },
                Err(e) => {
                    tracing::warn!(partition = p, %offset, error = %e, "cannot read {OFFSETS_TOPIC}");
                    break;
                }
            };
            if bytes.is_empty() {
                break;
            }
            let before = offset;
            for batch in batches(&bytes) {
                let batch = match batch {
                    Ok(b) => b,
                    Err(e) => {
                        // A short read at the end of the slice: continue from the last whole batch.
                        tracing::debug!(partition = p, %offset, error = %e, "partial batch");
                        break;
                    }
                };
                let next = types::Offset(batch.next_offset());
                if next <= offset {
                    continue;
                }
                let n = self.num_partitions.load(Ordering::Acquire);
                let (r, s) = replay_batch((p, n), &batch, offset, into);
                replayed += r;
                skipped += s;
                offset = next;
            }
            if offset == before {
                tracing::warn!(
                    partition = p,
                    %offset,
                    "no progress loading {OFFSETS_TOPIC}; stopping"
                );
                break;
            }
        }
        (replayed, skipped)
    }
}

/// Replays the records of one batch of `__consumer_offsets` partition `p` (of `partitions`) at or after
/// `from` into `into` (Kafka's `CoordinatorLoaderImpl`): a data batch's offset commits and group records with
/// their offsets, and the producer id when the batch is TRANSACTIONAL; a control batch's COMMIT/ABORT marker
/// for its producer and partition. Returns (replayed, skipped).
pub(super) fn replay_batch(
    (p, partitions): (i32, i32),
    batch: &protocol::record::RecordBatch,
    from: types::Offset,
    into: &mut GroupCoordinator,
) -> (usize, usize) {
    let (mut replayed, mut skipped) = (0usize, 0usize);
    let records = match batch.records() {
        Ok(records) => records,
        Err(e) => {
            tracing::warn!(partition = p, offset = %from, error = %e,
                "skipping unreadable {OFFSETS_TOPIC} batch");
            return (0, 0);
        }
    };
    let producer_id = types::ProducerId(batch.producer_id());
    for r in records.iter().filter(|r| r.offset >= from.get()) {
        if batch.is_control() {
            match storage::EndTransactionMarker::parse(r) {
                Ok(marker) => {
                    into.replay_entry(ReplayEntry::EndTransaction {
                        offset: r.offset,
                        producer_id,
                        commit: !marker.is_abort(),
                        offsets_partition: (p, partitions),
                    });
                    replayed += 1;
                }
                Err(e) => {
                    skipped += 1;
                    tracing::debug!(partition = p, offset = r.offset, error = %e,
                        "skipping {OFFSETS_TOPIC} control record");
                }
            }
            continue;
        }
        let Some(key) = r.key.as_deref() else {
            skipped += 1;
            continue;
        };
        match decode_record(key, r.value.as_deref()) {
            Ok(record) => {
                into.replay_entry(ReplayEntry::Record {
                    offset: r.offset,
                    producer_id: batch.is_transactional().then_some(producer_id),
                    record,
                });
                replayed += 1;
            }
            Err(e) => {
                skipped += 1;
                tracing::warn!(partition = p, offset = r.offset, error = %e,
                    "skipping undecodable {OFFSETS_TOPIC} record");
            }
        }
    }
    (replayed, skipped)
}

/// The group coordinator's [`MetadataPublisher`] (Kafka's `onElection` / `onResignation` and
/// `onPartitionsDeleted`): each image tells it which topics are gone and which `__consumer_offsets`
/// partitions this broker (`node_id`) now leads or no longer leads.
#[derive(Debug)]
pub struct GroupCoordinatorPublisher {
    /// The coordinator told of each image.
    pub groups: Arc<GroupCoordinatorService>,
    /// This broker's id.
    pub node_id: types::BrokerId,
}

impl MetadataPublisher for GroupCoordinatorPublisher {
    fn on_image(&self, previous: &metadata::MetadataImage, current: &metadata::MetadataImage) {
        // Topics gone (deleted, or re-created with another id): their committed offsets go too. The diff
        // visits only what changed between the two images (they share the rest).
        let deleted: Vec<String> = previous
            .topics
            .diff(&current.topics)
            .filter_map(|d| match d {
                DiffItem::Remove(name, _) => Some(name.clone()),
                DiffItem::Update { old, new } if old.1.topic_id != new.1.topic_id => {
                    Some(old.0.clone())
                }
                _ => None,
            })
            .collect();
        self.groups.on_topics_deleted(&deleted);
        let leads = |image: &metadata::MetadataImage, p: i32| {
            image
                .topics
                .get(OFFSETS_TOPIC)
                .and_then(|t| t.partitions.get(&p))
                .is_some_and(|r| r.leader == self.node_id)
        };
        let count = |image: &metadata::MetadataImage| {
            image
                .topics
                .get(OFFSETS_TOPIC)
                .map_or(0, |t| t.partitions.len() as i32)
        };
        for p in 0..count(previous).max(count(current)) {
            let (was, is) = (leads(previous, p), leads(current, p));
            if was != is {
                self.groups.on_partition_leadership(p, is);
            }
        }
    }
}
