//! Metadata (key 3), v0–13. Source: Kafka protocol guide; KIP-516 (topic ids, v10+), KIP-430 (authorized
//! operations, v8+).
//!
//! Lists this broker, the cluster id, and the requested topics (all of them for a null list). Unknown topics
//! are auto-created with `num.partitions` when `auto.create.topics.enable` is on and the request allows it
//! (v4+ `allow_auto_topic_creation`; always allowed below v4).

use authorizer::{AclOperation, ResourceType, CLUSTER_NAME};
use protocol::error::ErrorCode;
use protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use protocol::messages::{MetadataRequest, MetadataResponse};
use uuid::Uuid;

use super::errors::topic_error_code;
use super::KafkaApis;
use crate::metadata::TopicMetadata;
use crate::server::context::RequestContext;
use crate::topics::validate_topic_name;

/// Sentinel for "authorized operations not requested" (`Integer.MIN_VALUE`).
const AUTHORIZED_OPERATIONS_OMITTED: i32 = i32::MIN;

/// Answers a Metadata request.
pub async fn handle(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: MetadataRequest,
) -> MetadataResponse {
    let version = ctx.api_version();
    let config = apis.config();
    let node = config.node_id.get();
    let allow_auto_create =
        config.auto_create_topics_enable && (version < 4 || request.allow_auto_topic_creation);
    let mut topics = Vec::new();
    match request.topics {
        // v0 used an empty list for "all topics"; v1+ uses null.
        None => list_all(apis, ctx, &mut topics),
        Some(ref requested) if requested.is_empty() && version == 0 => {
            list_all(apis, ctx, &mut topics)
        }
        Some(requested) => {
            for t in requested {
                let topic = match t.name {
                    Some(name) => describe_by_name(apis, ctx, &name, allow_auto_create).await,
                    None => describe_by_id(apis, ctx, t.topic_id),
                };
                topics.push(topic);
            }
        }
    }
    for t in topics.iter_mut() {
        t.topic_authorized_operations = match &t.name {
            Some(name) if request.include_topic_authorized_operations && t.error_code == 0 => {
                ctx.authorized_operations(ResourceType::Topic, name)
            }
            _ => AUTHORIZED_OPERATIONS_OMITTED,
        };
    }
    let cluster_authorized_operations = if request.include_cluster_authorized_operations {
        ctx.authorized_operations(ResourceType::Cluster, CLUSTER_NAME)
    } else {
        AUTHORIZED_OPERATIONS_OMITTED
    };
    let image = apis.metadata_cache().image();
    // Each broker's endpoint on the listener the client came in on; brokers without it are left out
    // (Kafka's `getAliveBrokerNodes(listenerName)`).
    let listener = ctx.listener_name();
    let mut brokers: Vec<MetadataResponseBroker> = image
        .brokers
        .values()
        .filter(|b| !b.fenced)
        .filter_map(|b| {
            let (host, port) = b.endpoint(listener)?;
            Some(MetadataResponseBroker {
                node_id: b.broker_id.get(),
                host: host.to_string(),
                port: i32::from(port),
                rack: b.rack.clone(),
                ..Default::default()
            })
        })
        .collect();
    if image.brokers.is_empty() {
        // A cluster member not yet registered: the client reached this broker, so name it.
        let me = config.advertised_for(listener);
        brokers.push(MetadataResponseBroker {
            node_id: node,
            host: me.host.clone(),
            port: i32::from(me.port),
            rack: None,
            ..Default::default()
        });
    }
    // Clients send admin requests to the controller id: answer this broker (alive, since the client reached
    // it; it forwards to the active controller), as Kafka answers a live broker in KRaft mode. Naming the
    // active controller would stall clients that cache it after it dies.
    let controller_id = node;
    MetadataResponse {
        brokers,
        cluster_id: Some(apis.metadata.cluster_id().to_string()),
        controller_id,
        topics,
        cluster_authorized_operations,
        ..Default::default()
    }
}

/// Every topic the principal may DESCRIBE (the others are left out silently, as Kafka does).
fn list_all(apis: &KafkaApis, ctx: &RequestContext, out: &mut Vec<MetadataResponseTopic>) {
    let image = apis.metadata_cache().image();
    for (name, topic) in apis.metadata.topics() {
        if ctx.is_allowed(AclOperation::Describe, ResourceType::Topic, &name) {
            out.push(image_topic_response(&image, &name, &topic));
        }
    }
}

/// A named topic: TOPIC_AUTHORIZATION_FAILED without DESCRIBE (whether it exists or not); auto-created when
/// allowed and the principal may CREATE on the cluster or the topic (else TOPIC_AUTHORIZATION_FAILED).
async fn describe_by_name(
    apis: &KafkaApis,
    ctx: &RequestContext,
    name: &str,
    allow_auto_create: bool,
) -> MetadataResponseTopic {
    let error = |code: ErrorCode| MetadataResponseTopic {
        error_code: code.0,
        name: Some(name.to_string()),
        ..Default::default()
    };
    if let Err(d) = ctx.authorize(AclOperation::Describe, ResourceType::Topic, name) {
        return error(ErrorCode::from(d));
    }
    if let Some(topic) = apis.metadata.topic(name) {
        return topic_response(apis, name, &topic);
    }
    if let Err(e) = validate_topic_name(name) {
        return error(topic_error_code(&e));
    }
    if !allow_auto_create {
        return error(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION);
    }
    if let Err(d) = ctx
        .authorize_cluster(AclOperation::Create)
        .or_else(|_| ctx.authorize(AclOperation::Create, ResourceType::Topic, name))
    {
        return error(ErrorCode::from(d));
    }
    match apis
        .topics
        .create_topic(name, -1, -1, Default::default(), false)
        .await
    {
        Ok(topic) => topic_response(apis, name, &topic),
        // A concurrent Metadata request created it first.
        Err(e) if e.is_already_exists() => match apis.metadata.topic(name) {
            Some(topic) => topic_response(apis, name, &topic),
            None => error(ErrorCode::LEADER_NOT_AVAILABLE),
        },
        Err(e) => error(topic_error_code(&e)),
    }
}

fn describe_by_id(apis: &KafkaApis, ctx: &RequestContext, id: Uuid) -> MetadataResponseTopic {
    match apis.metadata.topic_by_id(id) {
        Some((name, _)) if !ctx.is_allowed(AclOperation::Describe, ResourceType::Topic, &name) => {
            MetadataResponseTopic {
                error_code: ErrorCode::TOPIC_AUTHORIZATION_FAILED.0,
                name: None,
                topic_id: id,
                ..Default::default()
            }
        }
        Some((name, topic)) => topic_response(apis, &name, &topic),
        None => MetadataResponseTopic {
            error_code: ErrorCode::UNKNOWN_TOPIC_ID.0,
            name: None,
            topic_id: id,
            ..Default::default()
        },
    }
}

fn topic_response(apis: &KafkaApis, name: &str, topic: &TopicMetadata) -> MetadataResponseTopic {
    image_topic_response(&apis.metadata_cache().image(), name, topic)
}

/// A topic as the metadata image has it: leader (LEADER_NOT_AVAILABLE while there is none), leader
/// epoch, replicas, ISR, and replicas on brokers that are fenced or gone as offline.
pub(super) fn image_topic_response(
    image: &metadata::MetadataImage,
    name: &str,
    topic: &TopicMetadata,
) -> MetadataResponseTopic {
    let partitions = image
        .topics
        .get(name)
        .map(|t| {
            t.partitions
                .iter()
                .map(|(p, reg)| MetadataResponsePartition {
                    error_code: if reg.leader.is_none() {
                        ErrorCode::LEADER_NOT_AVAILABLE.0
                    } else {
                        0
                    },
                    partition_index: *p,
                    leader_id: reg.leader.get(),
                    leader_epoch: reg.leader_epoch.get(),
                    replica_nodes: reg.replicas.iter().map(|r| r.get()).collect(),
                    isr_nodes: reg.isr.iter().map(|r| r.get()).collect(),
                    offline_replicas: reg
                        .replicas
                        .iter()
                        .filter(|&&r| {
                            let fenced = image.brokers.get(&r).is_none_or(|b| b.fenced);
                            fenced || image.is_replica_dir_offline(r, reg)
                        })
                        .map(|r| r.get())
                        .collect(),
                    ..Default::default()
                })
                .collect()
        })
        .unwrap_or_default();
    MetadataResponseTopic {
        error_code: 0,
        name: Some(name.to_string()),
        topic_id: topic.topic_id,
        is_internal: name.starts_with("__"),
        partitions,
        ..Default::default()
    }
}
