//! The sink's request handlers: one method of [`Sink`] per API it serves (see the parent module's docs
//! for what each answers).

use super::*;

impl Sink {
    /// Runs `f` on topic `name`, registering it (with `partitions` or the default count) if new.
    /// `f` also gets the partition total of all *other* topics, to check a resize against
    /// [`MAX_TOTAL_PARTITIONS`]. Errors with UNKNOWN_TOPIC_OR_PARTITION when `name` is new and
    /// the sink already has [`MAX_TOPICS`] topics or the new partitions would pass
    /// [`MAX_TOTAL_PARTITIONS`]; the caller bounds `partitions` by [`MAX_PARTITIONS_PER_TOPIC`].
    fn with_topic<R>(
        &self,
        name: &str,
        partitions: Option<i32>,
        f: impl FnOnce(&mut Topic, usize) -> R,
    ) -> Result<R, ErrorCode> {
        let mut topics = self.topics.lock().unwrap_or_else(|e| e.into_inner());
        let n = topics.len();
        let mut total = self.total_partitions.load(Ordering::Relaxed);
        let topic = match topics.entry(name.to_string()) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                let count = partitions
                    .unwrap_or(self.partitions)
                    .clamp(1, MAX_PARTITIONS_PER_TOPIC) as usize;
                if n >= MAX_TOPICS || total.saturating_add(count) > MAX_TOTAL_PARTITIONS {
                    return Err(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION);
                }
                total += count;
                let mut id = [0u8; 16];
                id[0] = 0x5e;
                id[8..].copy_from_slice(&(n as u64 + 1).to_be_bytes());
                e.insert(Topic {
                    id,
                    next_offsets: vec![0; count],
                })
            }
        };
        let others = total.saturating_sub(topic.next_offsets.len());
        let r = f(topic, others);
        self.total_partitions
            .store(others + topic.next_offsets.len(), Ordering::Relaxed);
        Ok(r)
    }

    /// The name of the topic with id `id`, if seen.
    pub(super) fn topic_name(&self, id: &[u8]) -> Option<String> {
        let topics = self.topics.lock().unwrap_or_else(|e| e.into_inner());
        topics
            .iter()
            .find(|(_, t)| t.id[..] == *id)
            .map(|(n, _)| n.clone())
    }

    pub(super) fn topic_metadata(&self, name: &str) -> MetadataResponseTopic {
        let (id, count) =
            match self.with_topic(name, None, |t, _| (t.id, t.next_offsets.len() as i32)) {
                Ok(found) => found,
                Err(e) => {
                    return MetadataResponseTopic {
                        error_code: e.0,
                        name: Some(name.to_string()),
                        partitions: vec![],
                        ..Default::default()
                    }
                }
            };
        MetadataResponseTopic {
            error_code: 0,
            name: Some(name.to_string()),
            topic_id: uuid!(id),
            is_internal: false,
            partitions: (0..count)
                .map(|p| MetadataResponsePartition {
                    error_code: 0,
                    partition_index: p,
                    leader_id: NODE_ID,
                    leader_epoch: 0,
                    replica_nodes: vec![NODE_ID],
                    isr_nodes: vec![NODE_ID],
                    offline_replicas: vec![],
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    pub(super) fn metadata(
        &self,
        local: SocketAddr,
        version: i16,
        r: MetadataRequest,
    ) -> MetadataResponse {
        let names: Vec<String> = match r.topics {
            Some(list) if !(version == 0 && list.is_empty()) => list
                .into_iter()
                .filter_map(|t| match t.name {
                    Some(n) => Some(n),
                    None => self.topic_name(t.topic_id.as_bytes()),
                })
                .collect(),
            _ => {
                let topics = self.topics.lock().unwrap_or_else(|e| e.into_inner());
                let mut names: Vec<String> = topics.keys().cloned().collect();
                names.sort();
                names
            }
        };
        MetadataResponse {
            brokers: vec![MetadataResponseBroker {
                node_id: NODE_ID,
                host: local.ip().to_string(),
                port: i32::from(local.port()),
                rack: None,
                ..Default::default()
            }],
            cluster_id: Some("runnel-bench-sink".into()),
            controller_id: NODE_ID,
            topics: names.iter().map(|n| self.topic_metadata(n)).collect(),
            ..Default::default()
        }
    }

    pub(super) fn create_topics(&self, r: CreateTopicsRequest) -> CreateTopicsResponse {
        CreateTopicsResponse {
            topics: r
                .topics
                .into_iter()
                .map(|t| {
                    let given = (t.num_partitions > 0).then_some(t.num_partitions);
                    let result = if given.is_some_and(|n| n > MAX_PARTITIONS_PER_TOPIC) {
                        Err(ErrorCode::INVALID_PARTITIONS)
                    } else {
                        self.with_topic(&t.name, given, |topic, others| {
                            if let Some(n) = given {
                                if others.saturating_add(n as usize) > MAX_TOTAL_PARTITIONS {
                                    return Err(ErrorCode::INVALID_PARTITIONS);
                                }
                                topic.next_offsets.resize(n as usize, 0);
                            }
                            Ok((topic.id, topic.next_offsets.len() as i32))
                        })
                        .and_then(|r| r)
                    };
                    let (id, count, error) = match result {
                        Ok((id, count)) => (id, count, ErrorCode::NONE),
                        Err(e) => ([0u8; 16], -1, e),
                    };
                    CreatableTopicResult {
                        name: t.name,
                        topic_id: uuid!(id),
                        error_code: error.0,
                        num_partitions: count,
                        replication_factor: 1,
                        configs: Some(vec![]),
                        ..Default::default()
                    }
                })
                .collect(),
            ..Default::default()
        }
    }

    pub(super) fn produce(&self, r: ProduceRequest) -> ProduceResponse {
        ProduceResponse {
            responses: r
                .topic_data
                .into_iter()
                .map(|t| {
                    let name = if t.name.is_empty() {
                        self.topic_name(t.topic_id.as_bytes()).unwrap_or_default()
                    } else {
                        t.name
                    };
                    let partition_responses = t
                        .partition_data
                        .into_iter()
                        .map(|p| {
                            let counted = match &p.records {
                                Some(Records::Memory(b)) => count_records(b),
                                Some(Records::File(_)) | None => Ok(0),
                            };
                            let (error, base) = match counted {
                                Err(_) => (ErrorCode::CORRUPT_MESSAGE, -1),
                                Ok(n) => self
                                    .with_topic(&name, None, |topic, _| {
                                        match topic.next_offsets.get_mut(p.index as usize) {
                                            Some(next) if p.index >= 0 => {
                                                let base = *next;
                                                *next = next.saturating_add(n);
                                                (ErrorCode::NONE, base)
                                            }
                                            _ => (ErrorCode::UNKNOWN_TOPIC_OR_PARTITION, -1),
                                        }
                                    })
                                    .unwrap_or_else(|e| (e, -1)),
                            };
                            PartitionProduceResponse {
                                index: p.index,
                                error_code: error.0,
                                base_offset: base,
                                log_append_time_ms: -1,
                                log_start_offset: 0,
                                ..Default::default()
                            }
                        })
                        .collect();
                    TopicProduceResponse {
                        name,
                        topic_id: t.topic_id,
                        partition_responses,
                        ..Default::default()
                    }
                })
                .collect(),
            ..Default::default()
        }
    }

    pub(super) fn list_offsets(&self, r: ListOffsetsRequest) -> ListOffsetsResponse {
        ListOffsetsResponse {
            topics: r
                .topics
                .into_iter()
                .map(|t| {
                    let count = self
                        .with_topic(&t.name, None, |topic, _| topic.next_offsets.len())
                        .unwrap_or(0);
                    ListOffsetsTopicResponse {
                        partitions: t
                            .partitions
                            .iter()
                            .map(|p| {
                                let known =
                                    p.partition_index >= 0 && (p.partition_index as usize) < count;
                                ListOffsetsPartitionResponse {
                                    partition_index: p.partition_index,
                                    error_code: if known {
                                        0
                                    } else {
                                        ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.0
                                    },
                                    timestamp: -1,
                                    offset: if p.timestamp == -1 {
                                        self.fetch_records
                                    } else {
                                        0
                                    },
                                    leader_epoch: 0,
                                    ..Default::default()
                                }
                            })
                            .collect(),
                        name: t.name,
                        ..Default::default()
                    }
                })
                .collect(),
            ..Default::default()
        }
    }

    /// Answers a Fetch from the synthetic log; the flag says whether any records are returned.
    pub(super) fn fetch(&self, version: i16, r: FetchRequest) -> (FetchResponse, bool) {
        let mut budget = usize::try_from(r.max_bytes)
            .unwrap_or(0)
            .min(MAX_FETCH_RESPONSE_BYTES);
        let mut any_records = false;
        let tail = self.tail_batch.as_deref();
        let responses = r
            .topics
            .into_iter()
            .map(|t| {
                let name = if version >= 13 {
                    self.topic_name(t.topic_id.as_bytes())
                } else {
                    Some(t.topic.clone())
                };
                let count = name.as_deref().and_then(|n| {
                    self.with_topic(n, None, |topic, _| topic.next_offsets.len())
                        .ok()
                });
                let partitions = t
                    .partitions
                    .iter()
                    .map(|p| {
                        let error = match count {
                            None if version >= 13 => Some(ErrorCode::UNKNOWN_TOPIC_ID),
                            Some(c) if p.partition < 0 || p.partition as usize >= c => {
                                Some(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION)
                            }
                            None => Some(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION),
                            _ if p.fetch_offset < 0 || p.fetch_offset > self.fetch_records => {
                                Some(ErrorCode::OFFSET_OUT_OF_RANGE)
                            }
                            _ => None,
                        };
                        let mut out = BytesMut::new();
                        if error.is_none() {
                            let limit = usize::try_from(p.partition_max_bytes)
                                .unwrap_or(0)
                                .min(budget);
                            let n = append_log(
                                &mut out,
                                &self.full_batch,
                                tail,
                                p.fetch_offset,
                                self.fetch_records,
                                limit,
                                !any_records,
                            );
                            budget = budget.saturating_sub(n);
                            any_records |= n > 0;
                        }
                        PartitionData {
                            partition_index: p.partition,
                            error_code: error.map_or(0, |e| e.0),
                            high_watermark: self.fetch_records,
                            last_stable_offset: self.fetch_records,
                            log_start_offset: 0,
                            aborted_transactions: Some(vec![]),
                            preferred_read_replica: -1,
                            records: Some(Records::Memory(out.freeze())),
                            ..Default::default()
                        }
                    })
                    .collect();
                FetchableTopicResponse {
                    topic: t.topic,
                    topic_id: t.topic_id,
                    partitions,
                    ..Default::default()
                }
            })
            .collect();
        (
            FetchResponse {
                error_code: 0,
                session_id: 0,
                responses,
                ..Default::default()
            },
            any_records,
        )
    }
}
