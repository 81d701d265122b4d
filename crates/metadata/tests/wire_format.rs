//! The JSON of the broker-controller RPC, the raft log entries and the snapshots, pinned byte for byte.
//!
//! These strings were produced by the controller crate before the records, the image and the request
//! types moved here; a broker and a controller of different builds must keep understanding each other,
//! so a change here is a wire-format change.

use metadata::rpc::{ClientRequest, ClientResponse};
use metadata::*;
use types::{BrokerEpoch, BrokerId, ErrorCode, LeaderEpoch, PartitionEpoch, ProducerId};
use uuid::Uuid;

const RECORDS: &str = r#"[{"type":"RegisterBrokerRecord","broker_id":1,"incarnation_id":"00000000-0000-0000-0000-000000000001","host":"h","port":9092,"rack":"r"},{"type":"BrokerRegistrationChangeRecord","broker_id":1,"broker_epoch":3,"fenced":false,"in_controlled_shutdown":null},{"type":"TopicRecord","name":"t","topic_id":"00000000-0000-0000-0000-000000000007"},{"type":"PartitionRecord","topic_id":"00000000-0000-0000-0000-000000000007","partition_id":0,"replicas":[1],"isr":[1],"leader":1,"leader_epoch":0,"partition_epoch":0},{"type":"PartitionChangeRecord","topic_id":"00000000-0000-0000-0000-000000000007","partition_id":0,"isr":null,"leader":-1},{"type":"ConfigRecord","resource_type":2,"resource_name":"t","name":"retention.ms","value":"5"},{"type":"ConfigRecord","resource_type":4,"resource_name":"","name":"a","value":"1"},{"type":"ProducerIdsRecord","broker_id":1,"broker_epoch":3,"next_producer_id":1000}]"#;
const IMAGE: &str = r#"{"offset":10,"cluster_id":"c","brokers":{"1":{"broker_id":1,"broker_epoch":3,"incarnation_id":"00000000-0000-0000-0000-000000000001","host":"h","port":9092,"rack":"r","fenced":false,"in_controlled_shutdown":false}},"topics":{"t":{"name":"t","topic_id":"00000000-0000-0000-0000-000000000007","partitions":{"0":{"replicas":[1],"isr":[1],"leader":-1,"leader_epoch":1,"partition_epoch":1}},"configs":{"retention.ms":"5"}}},"broker_configs":{"":{"a":"1"}},"next_producer_id":1000}"#;
const REQUESTS: &str = r#"[{"RegisterBroker":{"broker_id":1,"incarnation_id":"00000000-0000-0000-0000-000000000007","host":"h","port":1,"rack":null}},{"Heartbeat":{"broker_id":1,"broker_epoch":2,"metadata_offset":3,"want_fence":false,"want_shutdown":true}},{"CreateTopics":{"topics":[{"name":"t","num_partitions":-1,"replication_factor":-1,"assignments":[[0,[1,2]]],"configs":{"k":"v"}}],"validate_only":false}},{"AlterPartition":{"broker_id":1,"broker_epoch":2,"topic_id":"00000000-0000-0000-0000-000000000007","partition":0,"leader_epoch":1,"partition_epoch":2,"new_isr":[1]}},{"AlterConfigs":{"resource_type":2,"resource_name":"t","ops":[["a",null]],"validate_only":true}},{"FetchMetadata":{"since_offset":-1,"max_wait_ms":5}},"DescribeQuorum",{"ElectLeaders":{"election":"Unclean","partitions":[["t",0]]}}]"#;
const RESPONSES: &str = r#"[{"Error":{"code":36,"message":"x"}},{"NotController":{"leader":2}},{"RegisterBroker":{"Ok":5}},{"Heartbeat":{"Ok":{"is_fenced":false,"is_caught_up":true,"should_shut_down":false}}},{"CreateTopics":[{"Ok":{"topic_id":"00000000-0000-0000-0000-000000000007","num_partitions":1,"replication_factor":1}},{"Err":{"code":36,"message":"e"}}]},{"AlterPartition":{"Ok":{"replicas":[1],"isr":[1],"leader":1,"leader_epoch":2,"partition_epoch":3}}},{"AllocateProducerIds":{"Ok":[1000,1000]}},{"FetchMetadata":{"Ok":{"Records":[[3,{"type":"TopicRecord","name":"t","topic_id":"00000000-0000-0000-0000-000000000007"}]]}}},{"DescribeQuorum":{"Ok":{"leader_id":1,"leader_epoch":2,"high_watermark":3,"voters":{"1":"127.0.0.1:9093"}}}},{"ElectLeaders":[{"topic":"t","partition":0,"error_code":84,"message":null}]}]"#;

/// Records of each kind of change, the image they replay into, and broker requests and answers.
#[test]
fn json_is_unchanged() {
    let id = Uuid::from_u128(7);
    let mut img = MetadataImage {
        cluster_id: "c".into(),
        ..MetadataImage::default()
    };
    let recs = vec![
        MetadataRecord::RegisterBrokerRecord {
            broker_id: BrokerId(1),
            incarnation_id: Uuid::from_u128(1),
            host: "h".into(),
            port: 9092,
            rack: Some("r".into()),
            listeners: Vec::new(),
            log_dirs: Vec::new(),
        },
        MetadataRecord::BrokerRegistrationChangeRecord {
            broker_id: BrokerId(1),
            broker_epoch: BrokerEpoch(3),
            fenced: Some(false),
            in_controlled_shutdown: None,
            log_dir_offline: None,
            offline_log_dirs: None,
        },
        MetadataRecord::TopicRecord {
            name: "t".into(),
            topic_id: id,
        },
        MetadataRecord::PartitionRecord {
            topic_id: id,
            partition_id: 0,
            replicas: vec![BrokerId(1)],
            isr: vec![BrokerId(1)],
            leader: BrokerId(1),
            leader_epoch: LeaderEpoch(0),
            partition_epoch: PartitionEpoch(0),
            directories: Vec::new(),
        },
        MetadataRecord::isr_leader_change(id, 0, None, Some(NO_LEADER)),
        MetadataRecord::ConfigRecord {
            resource_type: RESOURCE_TOPIC,
            resource_name: "t".into(),
            name: "retention.ms".into(),
            value: Some("5".into()),
        },
        MetadataRecord::ConfigRecord {
            resource_type: RESOURCE_BROKER,
            resource_name: "".into(),
            name: "a".into(),
            value: Some("1".into()),
        },
        MetadataRecord::ProducerIdsRecord {
            broker_id: BrokerId(1),
            broker_epoch: BrokerEpoch(3),
            next_producer_id: ProducerId(1000),
        },
    ];
    for (i, r) in recs.iter().enumerate() {
        img.apply(3 + i as i64, r);
    }
    assert_eq!(serde_json::to_string(&recs).unwrap(), RECORDS);
    assert_eq!(
        serde_json::to_string(&serde_json::from_str::<Vec<MetadataRecord>>(RECORDS).unwrap())
            .unwrap(),
        RECORDS
    );
    assert_eq!(serde_json::to_string(&img).unwrap(), IMAGE);
    assert_eq!(
        serde_json::to_string(&serde_json::from_str::<MetadataImage>(IMAGE).unwrap()).unwrap(),
        IMAGE
    );
    let reqs = vec![
        ClientRequest::RegisterBroker(RegisterBroker {
            broker_id: BrokerId(1),
            incarnation_id: id,
            host: "h".into(),
            port: 1,
            rack: None,
            listeners: Vec::new(),
            log_dirs: Vec::new(),
        }),
        ClientRequest::Heartbeat(Heartbeat {
            broker_id: BrokerId(1),
            broker_epoch: BrokerEpoch(2),
            metadata_offset: 3,
            want_fence: false,
            want_shutdown: true,
            offline_log_dirs: Vec::new(),
        }),
        ClientRequest::CreateTopics {
            topics: vec![CreateTopic {
                name: "t".into(),
                num_partitions: -1,
                replication_factor: -1,
                assignments: vec![(0, vec![BrokerId(1), BrokerId(2)])],
                configs: [("k".to_string(), "v".to_string())].into(),
            }],
            validate_only: false,
        },
        ClientRequest::AlterPartition(AlterPartition {
            broker_id: BrokerId(1),
            broker_epoch: BrokerEpoch(2),
            topic_id: id,
            partition: 0,
            leader_epoch: LeaderEpoch(1),
            partition_epoch: PartitionEpoch(2),
            new_isr: vec![BrokerId(1)],
        }),
        ClientRequest::AlterConfigs {
            resource_type: 2,
            resource_name: "t".into(),
            ops: vec![("a".into(), None)],
            validate_only: true,
        },
        ClientRequest::FetchMetadata {
            since_offset: -1,
            max_wait_ms: 5,
        },
        ClientRequest::DescribeQuorum,
        ClientRequest::ElectLeaders {
            election: ElectionType::Unclean,
            partitions: Some(vec![("t".into(), 0)]),
        },
    ];
    assert_eq!(serde_json::to_string(&reqs).unwrap(), REQUESTS);
    assert_eq!(
        serde_json::to_string(&serde_json::from_str::<Vec<ClientRequest>>(REQUESTS).unwrap())
            .unwrap(),
        REQUESTS
    );
    let resps = vec![
        ClientResponse::Error(ControllerError::new(ErrorCode::TOPIC_ALREADY_EXISTS, "x")),
        ClientResponse::NotController {
            leader: Some(BrokerId(2)),
            leader_addr: None,
        },
        ClientResponse::RegisterBroker(Ok(BrokerEpoch(5))),
        ClientResponse::Heartbeat(Ok(HeartbeatReply {
            is_fenced: false,
            is_caught_up: true,
            should_shut_down: false,
        })),
        ClientResponse::CreateTopics(vec![
            Ok(CreatedTopic {
                topic_id: id,
                num_partitions: 1,
                replication_factor: 1,
            }),
            Err(ControllerError::new(ErrorCode::TOPIC_ALREADY_EXISTS, "e")),
        ]),
        ClientResponse::AlterPartition(Ok(PartitionRegistration {
            replicas: vec![BrokerId(1)],
            isr: vec![BrokerId(1)],
            leader: BrokerId(1),
            leader_epoch: LeaderEpoch(2),
            partition_epoch: PartitionEpoch(3),
            adding_replicas: Vec::new(),
            removing_replicas: Vec::new(),
            directories: Vec::new(),
        })),
        ClientResponse::AllocateProducerIds(Ok((ProducerId(1000), 1000))),
        ClientResponse::FetchMetadata(Ok(MetadataUpdate::Records(vec![(3, recs[2].clone())]))),
        ClientResponse::DescribeQuorum(Ok(QuorumInfo {
            leader_id: Some(BrokerId(1)),
            leader_epoch: 2,
            high_watermark: 3,
            voters: [(BrokerId(1), "127.0.0.1:9093".parse().unwrap())].into(),
            current_voters: Vec::new(),
            observers: Vec::new(),
            directory_ids: Default::default(),
        })),
        ClientResponse::ElectLeaders(vec![ElectionResult {
            topic: "t".into(),
            partition: 0,
            error_code: 84,
            message: None,
        }]),
    ];
    assert_eq!(serde_json::to_string(&resps).unwrap(), RESPONSES);
    assert_eq!(
        serde_json::to_string(&serde_json::from_str::<Vec<ClientResponse>>(RESPONSES).unwrap())
            .unwrap(),
        RESPONSES
    );
}

/// The log-dir fields (KIP-858, added later) are absent from the JSON at their defaults, so older
/// encodings decode unchanged, and present when set.
#[test]
fn log_dir_fields_are_optional_on_the_wire() {
    let dir = Uuid::from_u128(9);
    let rec = MetadataRecord::BrokerRegistrationChangeRecord {
        broker_id: BrokerId(1),
        broker_epoch: types::BrokerEpoch(3),
        fenced: None,
        in_controlled_shutdown: None,
        log_dir_offline: Some(true),
        offline_log_dirs: None,
    };
    let json = serde_json::to_string(&rec).unwrap();
    assert_eq!(
        json,
        r#"{"type":"BrokerRegistrationChangeRecord","broker_id":1,"broker_epoch":3,"fenced":null,"in_controlled_shutdown":null,"log_dir_offline":true}"#
    );
    assert_eq!(serde_json::from_str::<MetadataRecord>(&json).unwrap(), rec);
    let with_dirs = MetadataRecord::BrokerRegistrationChangeRecord {
        broker_id: BrokerId(1),
        broker_epoch: types::BrokerEpoch(3),
        fenced: None,
        in_controlled_shutdown: None,
        log_dir_offline: None,
        offline_log_dirs: Some(vec![dir]),
    };
    let json = serde_json::to_string(&with_dirs).unwrap();
    assert!(
        json.ends_with(r#""offline_log_dirs":["00000000-0000-0000-0000-000000000009"]}"#),
        "{json}"
    );
    assert_eq!(
        serde_json::from_str::<MetadataRecord>(&json).unwrap(),
        with_dirs
    );
    let hb = Heartbeat {
        broker_id: BrokerId(1),
        broker_epoch: types::BrokerEpoch(2),
        metadata_offset: 3,
        want_fence: false,
        want_shutdown: false,
        offline_log_dirs: vec![dir],
    };
    let json = serde_json::to_string(&hb).unwrap();
    assert!(
        json.ends_with(r#""offline_log_dirs":["00000000-0000-0000-0000-000000000009"]}"#),
        "{json}"
    );
    let old = r#"{"broker_id":1,"broker_epoch":2,"metadata_offset":3,"want_fence":false,"want_shutdown":false}"#;
    assert!(serde_json::from_str::<Heartbeat>(old)
        .unwrap()
        .offline_log_dirs
        .is_empty());
    // A partition's directories: absent when unassigned, and a change naming none keeps them.
    let mut change = MetadataRecord::isr_leader_change(Uuid::nil(), 0, None, None);
    let json = serde_json::to_string(&change).unwrap();
    assert!(!json.contains("directories"), "{json}");
    if let MetadataRecord::PartitionChangeRecord { directories, .. } = &mut change {
        *directories = Some(vec![dir]);
    }
    let json = serde_json::to_string(&change).unwrap();
    assert_eq!(
        serde_json::from_str::<MetadataRecord>(&json).unwrap(),
        change
    );
}

/// DescribeQuorum's replication progress (KIP-836 fields, added after the strings above were pinned): absent
/// when empty, so the pinned answer above is unchanged and decodes with none; present when set.
#[test]
fn quorum_progress_fields_are_optional_on_the_wire() {
    let progress = |id, last_offset, at| ReplicaProgress {
        replica_id: BrokerId(id),
        last_offset,
        last_fetch_ms: at,
        last_caught_up_ms: -1,
    };
    let info = QuorumInfo {
        leader_id: Some(BrokerId(1)),
        leader_epoch: 2,
        high_watermark: 3,
        voters: [(BrokerId(1), "127.0.0.1:9093".parse().unwrap())].into(),
        current_voters: vec![progress(1, 3, 100)],
        observers: vec![progress(4, 2, 90)],
        directory_ids: Default::default(),
    };
    let json = serde_json::to_string(&info).unwrap();
    assert_eq!(
        json,
        r#"{"leader_id":1,"leader_epoch":2,"high_watermark":3,"voters":{"1":"127.0.0.1:9093"},"current_voters":[{"replica_id":1,"last_offset":3,"last_fetch_ms":100,"last_caught_up_ms":-1}],"observers":[{"replica_id":4,"last_offset":2,"last_fetch_ms":90,"last_caught_up_ms":-1}]}"#
    );
    assert_eq!(serde_json::from_str::<QuorumInfo>(&json).unwrap(), info);
    let old =
        r#"{"leader_id":1,"leader_epoch":2,"high_watermark":3,"voters":{"1":"127.0.0.1:9093"}}"#;
    let old = serde_json::from_str::<QuorumInfo>(old).unwrap();
    assert!(old.current_voters.is_empty() && old.observers.is_empty());
}

const WITH_OFFSET_REQUEST: &str = r#"{"WithOffset":{"AlterConfigs":{"resource_type":4,"resource_name":"","ops":[["a","1"]],"validate_only":false}}}"#;
const WITH_OFFSET_RESPONSE: &str =
    r#"{"WithOffset":{"offset":12,"response":{"AlterConfigs":{"Ok":null}}}}"#;

/// The read-your-writes wrapper (added after the strings above were pinned): a request asking for the
/// metadata offset of its outcome, and the answer carrying it.
#[test]
fn with_offset_json_is_unchanged() {
    let req = ClientRequest::WithOffset(Box::new(ClientRequest::AlterConfigs {
        resource_type: RESOURCE_BROKER,
        resource_name: String::new(),
        ops: vec![("a".into(), Some("1".into()))],
        validate_only: false,
    }));
    assert_eq!(serde_json::to_string(&req).unwrap(), WITH_OFFSET_REQUEST);
    let back: ClientRequest = serde_json::from_str(WITH_OFFSET_REQUEST).unwrap();
    assert_eq!(serde_json::to_string(&back).unwrap(), WITH_OFFSET_REQUEST);
    let resp = ClientResponse::WithOffset {
        offset: 12,
        response: Box::new(ClientResponse::AlterConfigs(Ok(()))),
    };
    assert_eq!(serde_json::to_string(&resp).unwrap(), WITH_OFFSET_RESPONSE);
    let back: ClientResponse = serde_json::from_str(WITH_OFFSET_RESPONSE).unwrap();
    assert_eq!(serde_json::to_string(&back).unwrap(), WITH_OFFSET_RESPONSE);
}

/// A registration with named listeners carries them as `listeners`; one without (every log written before
/// named listeners) reads with none and answers every listener name with its `host`/`port`.
#[test]
fn named_listeners_are_an_optional_field() {
    use metadata::BrokerEndpoint;
    let rec = MetadataRecord::RegisterBrokerRecord {
        broker_id: BrokerId(1),
        incarnation_id: Uuid::from_u128(1),
        host: "h".into(),
        port: 9093,
        rack: None,
        log_dirs: Vec::new(),
        listeners: vec![BrokerEndpoint {
            name: "SSL".into(),
            host: "h".into(),
            port: 9093,
            security_protocol: 1,
        }],
    };
    let json = serde_json::to_string(&rec).unwrap();
    assert_eq!(
        json,
        r#"{"type":"RegisterBrokerRecord","broker_id":1,"incarnation_id":"00000000-0000-0000-0000-000000000001","host":"h","port":9093,"rack":null,"listeners":[{"name":"SSL","host":"h","port":9093,"security_protocol":1}]}"#
    );
    let mut img = MetadataImage::default();
    img.apply(3, &serde_json::from_str(&json).unwrap());
    let b = &img.brokers[&BrokerId(1)];
    assert_eq!(b.endpoint("SSL"), Some(("h", 9093)));
    assert_eq!(b.endpoint("PLAINTEXT"), None);
    let old: MetadataImage = serde_json::from_str(IMAGE).unwrap();
    assert_eq!(old.brokers[&BrokerId(1)].endpoint("ANY"), Some(("h", 9092)));
}

const ACL_RECORDS: &str = r#"[{"type":"AccessControlEntryRecord","id":"00000000-0000-0000-0000-000000000009","acl":{"resource_type":2,"resource_name":"t","pattern_type":4,"principal":"User:a","host":"*","operation":3,"permission_type":3}},{"type":"RemoveAccessControlEntryRecord","id":"00000000-0000-0000-0000-000000000009"}]"#;
const ACL_IMAGE: &str = r#"{"offset":1,"cluster_id":"","brokers":{},"topics":{},"broker_configs":{},"next_producer_id":0,"acls":{"00000000-0000-0000-0000-000000000009":{"resource_type":2,"resource_name":"t","pattern_type":4,"principal":"User:a","host":"*","operation":3,"permission_type":3}}}"#;
const ACL_REQUESTS: &str = r#"[{"CreateAcls":{"acls":[{"resource_type":2,"resource_name":"t","pattern_type":4,"principal":"User:a","host":"*","operation":3,"permission_type":3}]}},{"DeleteAcls":{"ids":["00000000-0000-0000-0000-000000000009"]}}]"#;
const ACL_RESPONSES: &str =
    r#"[{"CreateAcls":{"Ok":null}},{"DeleteAcls":{"Err":{"code":42,"message":"m"}}}]"#;

/// The ACL records (KIP-801), an image holding an ACL (an image without ACLs keeps its JSON: the field is
/// omitted), and the CreateAcls/DeleteAcls requests and answers.
#[test]
fn acl_json_is_unchanged() {
    let id = Uuid::from_u128(9);
    let acl = AclEntry {
        resource_type: 2,
        resource_name: "t".into(),
        pattern_type: 4,
        principal: "User:a".into(),
        host: "*".into(),
        operation: 3,
        permission_type: 3,
    };
    let recs = vec![
        MetadataRecord::AccessControlEntryRecord {
            id,
            acl: acl.clone(),
        },
        MetadataRecord::RemoveAccessControlEntryRecord { id },
    ];
    assert_eq!(serde_json::to_string(&recs).unwrap(), ACL_RECORDS);
    let back: Vec<MetadataRecord> = serde_json::from_str(ACL_RECORDS).unwrap();
    assert_eq!(back, recs);
    let mut img = MetadataImage::default();
    img.apply(1, &recs[0]);
    assert_eq!(serde_json::to_string(&img).unwrap(), ACL_IMAGE);
    let back: MetadataImage = serde_json::from_str(ACL_IMAGE).unwrap();
    assert_eq!(back, img);
    img.apply(2, &recs[1]);
    assert!(img.acls.is_empty());
    assert!(!serde_json::to_string(&img).unwrap().contains("acls"));
    let reqs = vec![
        ClientRequest::CreateAcls { acls: vec![acl] },
        ClientRequest::DeleteAcls { ids: vec![id] },
    ];
    assert_eq!(serde_json::to_string(&reqs).unwrap(), ACL_REQUESTS);
    let resps = vec![
        ClientResponse::CreateAcls(Ok(())),
        ClientResponse::DeleteAcls(Err(ControllerError::new(ErrorCode::INVALID_REQUEST, "m"))),
    ];
    assert_eq!(serde_json::to_string(&resps).unwrap(), ACL_RESPONSES);
}

const QUOTA_RECORDS: &str = r#"[{"type":"ClientQuotaRecord","entity":{"user":"default","client_id":{"name":"c1"}},"key":"producer_byte_rate","value":1048576.0},{"type":"ClientQuotaRecord","entity":{"user":"default","client_id":{"name":"c1"}},"key":"producer_byte_rate","value":null}]"#;
const QUOTA_IMAGE: &str = r#"{"offset":1,"cluster_id":"","brokers":{},"topics":{},"broker_configs":{},"next_producer_id":0,"client_quotas":[{"entity":{"user":"default","client_id":{"name":"c1"}},"values":{"producer_byte_rate":1048576.0}}]}"#;

/// The client quota record (Kafka's `ClientQuotaRecord`, a removal as a null value), an image holding a quota
/// (without quotas the field is omitted), and the AlterClientQuotas request.
#[test]
fn client_quota_json_is_unchanged() {
    use metadata::quota::{
        ClientQuotaChange, ClientQuotaEntity, EntityName, QuotaAlteration, QuotaValue,
    };
    let entity = ClientQuotaEntity::of(
        Some(EntityName::Default),
        Some(EntityName::Name("c1".into())),
    );
    let change = |value| {
        MetadataRecord::ClientQuotaRecord(ClientQuotaChange {
            entity: entity.clone(),
            key: "producer_byte_rate".into(),
            value,
        })
    };
    let recs = vec![change(Some(QuotaValue(1048576.0))), change(None)];
    assert_eq!(serde_json::to_string(&recs).unwrap(), QUOTA_RECORDS);
    let back: Vec<MetadataRecord> = serde_json::from_str(QUOTA_RECORDS).unwrap();
    assert_eq!(back, recs);
    let mut img = MetadataImage::default();
    img.apply(1, &recs[0]);
    assert_eq!(serde_json::to_string(&img).unwrap(), QUOTA_IMAGE);
    let back: MetadataImage = serde_json::from_str(QUOTA_IMAGE).unwrap();
    assert_eq!(back, img);
    img.apply(2, &recs[1]);
    assert!(!serde_json::to_string(&img)
        .unwrap()
        .contains("client_quotas"));
    let alteration =
        QuotaAlteration::new(entity, vec![("consumer_byte_rate".into(), None)]).unwrap();
    let req = ClientRequest::AlterClientQuotas {
        entries: vec![alteration],
        validate_only: true,
    };
    assert_eq!(
        serde_json::to_string(&req).unwrap(),
        r#"{"AlterClientQuotas":{"entries":[{"entity":{"user":"default","client_id":{"name":"c1"}},"ops":[["consumer_byte_rate",null]]}],"validate_only":true}}"#
    );
}
