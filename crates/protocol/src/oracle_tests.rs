//! Differential tests against the `kafka-protocol` crate (a dev-dependency, used only here).
//!
//! For every implemented API, every version both codecs support, requests and responses:
//! 1. build a sample message with every field valid in that version set (non-default values),
//! 2. encode it with ours, decode the bytes with theirs (must consume all bytes), compare the
//!    two models field by field (their and our `Debug` output reduced to a stream of
//!    `field:` names and literal values), re-encode theirs and compare bytes,
//! 3. decode their bytes with ours and compare with the original sample.
//!
//! Header versions are checked too. The error-code table is compared with theirs.

use crate::codec::*;
use crate::messages::*;
use crate::sample::Seq;
use crate::*;
use bytes::{Bytes, BytesMut};
use kafka_protocol::messages as theirs;
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, Message};

/// Reduce a `Debug` string to field names and literal values, ignoring type names, wrappers
/// (`Some`, newtypes, `Memory`) and collection punctuation.
fn tokens(debug: &str) -> Vec<String> {
    let c: Vec<char> = debug.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < c.len() {
        let ch = c[i];
        if ch == '"' || (ch == 'b' && i + 1 < c.len() && c[i + 1] == '"') {
            let start = i;
            i += if ch == 'b' { 2 } else { 1 };
            while i < c.len() && c[i] != '"' {
                if c[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            let mut lit: String = c[start..i].iter().collect();
            // Strings and bytes print alike except for the `b` prefix.
            if lit.starts_with('b') {
                lit.remove(0);
            }
            out.push(lit);
        } else if ch.is_ascii_alphabetic() || ch == '_' {
            let start = i;
            while i < c.len() && (c[i].is_ascii_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            let word: String = c[start..i].iter().collect();
            if i < c.len() && c[i] == ':' && word != "unknown_tagged_fields" {
                out.push(format!("{word}:"));
            } else if matches!(word.as_str(), "true" | "false" | "None") {
                out.push(word);
            }
        } else if ch == '-' || ch.is_ascii_digit() {
            let start = i;
            i += 1;
            while i < c.len() && (c[i].is_ascii_hexdigit() || c[i] == '-' || c[i] == '.') {
                i += 1;
            }
            out.push(c[start..i].iter().collect());
        } else {
            i += 1;
        }
    }
    out
}

/// Fields of the newest Kafka (4.4) that the oracle crate does not know yet: ApiVersionsRequest
/// v5 `cluster_id`/`node_id`, DeleteGroupsResponse v3 `error_message`, DescribeLogDirsResponse v5
/// `is_cordoned`, AddRaftVoterRequest v1 `ack_when_committed` (the oracle has v0 only), and the
/// share-group fields of KIP-932's later versions: ShareFetchRequest v2 `share_acquire_mode`,
/// ShareFetch/ShareAcknowledgeRequest v2 `is_renew_ack`, ShareAcknowledgeResponse v2
/// `acquisition_lock_timeout_ms`, DescribeShareGroupOffsetsResponse v1 `lag`,
/// WriteShareGroupStateRequest/ReadShareGroupStateSummaryResponse v1 `delivery_complete_count`
/// (the oracle has ShareFetch/ShareAcknowledge v1 and the others v0 only). In versions both
/// know they hold their default, so they are skipped when our
/// token stream has them and theirs does not.
const NEWER_THAN_ORACLE: &[&str] = &[
    "cluster_id:",
    "node_id:",
    "error_message:",
    "is_cordoned:",
    "cordoned_log_dirs:",
    "topic_id:",
    "transaction_version:",
    "ack_when_committed:",
    "share_acquire_mode:",
    "is_renew_ack:",
    "acquisition_lock_timeout_ms:",
    "lag:",
    "delivery_complete_count:",
];

/// Fields the oracle's model still has but Kafka 4.4 removed: ShareFetchRequest
/// `FetchPartition.partition_max_bytes` (on the wire only in the early-access v0, which 4.4 dropped).
/// Not on the wire in the versions both know, they hold their default there, so they are skipped
/// when theirs has them and ours does not.
const REMOVED_SINCE_ORACLE: &[&str] = &["partition_max_bytes:"];

/// Fields Kafka renamed after the oracle's snapshot (ours, theirs), or that the oracle escapes.
const RENAMED: &[(&str, &str)] = &[
    ("generation_id_or_member_epoch:", "generation_id:"),
    ("match:", "_match:"),
];

/// Compare our tokens with theirs, skipping fields of ours listed in [`NEWER_THAN_ORACLE`]
/// that theirs lacks at that position, and fields of theirs listed in [`REMOVED_SINCE_ORACLE`].
fn same_model(ours: &[String], theirs: &[String]) -> bool {
    let (mut i, mut j) = (0, 0);
    while i < ours.len() {
        if j < theirs.len()
            && (ours[i] == theirs[j] || RENAMED.contains(&(ours[i].as_str(), theirs[j].as_str())))
        {
            i += 1;
            j += 1;
            continue;
        }
        if NEWER_THAN_ORACLE.contains(&ours[i].as_str()) {
            // These fields are scalars: skip the name and its one value.
            i += 2;
            continue;
        }
        if j < theirs.len() && REMOVED_SINCE_ORACLE.contains(&theirs[j].as_str()) {
            j += 2;
            continue;
        }
        return false;
    }
    j == theirs.len()
}

fn ours_bytes(v: &impl Encode, version: i16) -> Bytes {
    let mut e = Encoder::new();
    v.encode(&mut e, version).unwrap();
    e.into_bytes().unwrap()
}

fn check<O, T>(what: &str, version: i16, ours: &O)
where
    O: Encode + Decode + std::fmt::Debug + PartialEq,
    T: Encodable + Decodable + std::fmt::Debug,
{
    let a = ours_bytes(ours, version);
    let mut buf = a.clone();
    let t = T::decode(&mut buf, version).unwrap_or_else(|e| {
        panic!("{what} v{version}: theirs failed to decode ours: {e}\n{ours:?}")
    });
    assert!(
        buf.is_empty(),
        "{what} v{version}: theirs left {} bytes",
        buf.len()
    );
    let (ot, tt) = (tokens(&format!("{ours:?}")), tokens(&format!("{t:?}")));
    assert!(
        same_model(&ot, &tt),
        "{what} v{version}: models differ\nours:   {ours:?}\ntheirs: {t:?}"
    );
    let mut b = BytesMut::new();
    t.encode(&mut b, version)
        .unwrap_or_else(|e| panic!("{what} v{version}: theirs failed to encode: {e}"));
    assert_eq!(b.len(), t.compute_size(version).unwrap());
    let b = b.freeze();
    assert_eq!(a, b, "{what} v{version}: bytes differ");
    let mut buf = b;
    let back = O::decode(&mut buf, version)
        .unwrap_or_else(|e| panic!("{what} v{version}: ours failed on theirs: {e}"));
    assert!(buf.is_empty());
    assert_eq!(&back, ours, "{what} v{version}: reverse decode differs");
}

macro_rules! oracle {
    ($seq:expr, $count:expr, $( $api:ident => $req:ident, $resp:ident; )*) => {
        $(
            {
                let (lo, hi) = supported_versions(ApiKey::$api).unwrap();
                // Only versions the oracle knows (it may lag behind the newest Kafka; the schema
                // files are checked against Kafka's own jar by tools/check_against_kafka_jar.py).
                let lo = lo.max(<theirs::$req as Message>::VERSIONS.min);
                let hi = hi.min(<theirs::$req as Message>::VERSIONS.max);
                for v in lo..=hi {
                    assert_eq!(
                        request_header_version(ApiKey::$api, v),
                        <theirs::$req as HeaderVersion>::header_version(v),
                        "{} v{v} request header", stringify!($api)
                    );
                    assert_eq!(
                        response_header_version(ApiKey::$api, v),
                        <theirs::$resp as HeaderVersion>::header_version(v),
                        "{} v{v} response header", stringify!($api)
                    );
                    for _ in 0..6 {
                        let q = match sample_request(ApiKey::$api, v, $seq).unwrap() {
                            RequestBody::$api(q) => q,
                            _ => unreachable!(),
                        };
                        check::<$req, theirs::$req>(stringify!($req), v, &q);
                        let r = match sample_response(ApiKey::$api, v, $seq).unwrap() {
                            ResponseBody::$api(r) => r,
                            _ => unreachable!(),
                        };
                        check::<$resp, theirs::$resp>(stringify!($resp), v, &r);
                        $count += 1;
                    }
                }
            }
        )*
    };
}

#[test]
fn tokens_ignore_wrappers() {
    assert_eq!(
        tokens(
            r#"X { a: Some(Memory(b"\x01:")), b: TopicName("t"), c: [1, -2], unknown_tagged_fields: {} }"#
        ),
        vec!["a:", r#""\x01:""#, "b:", r#""t""#, "c:", "1", "-2"]
    );
}

#[test]
fn differential_against_kafka_protocol_crate() {
    let seed = std::env::var("PROTOCOL_TEST_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x0dd_c0de_u64);
    eprintln!("seed = {seed} (set PROTOCOL_TEST_SEED to reproduce)");
    let s = &mut Seq::new(seed);
    let mut count = 0usize;
    oracle!(s, count,
        Produce => ProduceRequest, ProduceResponse;
        Fetch => FetchRequest, FetchResponse;
        ListOffsets => ListOffsetsRequest, ListOffsetsResponse;
        Metadata => MetadataRequest, MetadataResponse;
        OffsetCommit => OffsetCommitRequest, OffsetCommitResponse;
        OffsetFetch => OffsetFetchRequest, OffsetFetchResponse;
        FindCoordinator => FindCoordinatorRequest, FindCoordinatorResponse;
        JoinGroup => JoinGroupRequest, JoinGroupResponse;
        Heartbeat => HeartbeatRequest, HeartbeatResponse;
        LeaveGroup => LeaveGroupRequest, LeaveGroupResponse;
        SyncGroup => SyncGroupRequest, SyncGroupResponse;
        DescribeGroups => DescribeGroupsRequest, DescribeGroupsResponse;
        ListGroups => ListGroupsRequest, ListGroupsResponse;
        SaslHandshake => SaslHandshakeRequest, SaslHandshakeResponse;
        ApiVersions => ApiVersionsRequest, ApiVersionsResponse;
        CreateTopics => CreateTopicsRequest, CreateTopicsResponse;
        DeleteTopics => DeleteTopicsRequest, DeleteTopicsResponse;
        DeleteRecords => DeleteRecordsRequest, DeleteRecordsResponse;
        InitProducerId => InitProducerIdRequest, InitProducerIdResponse;
        OffsetForLeaderEpoch => OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse;
        DescribeConfigs => DescribeConfigsRequest, DescribeConfigsResponse;
        AlterConfigs => AlterConfigsRequest, AlterConfigsResponse;
        AlterReplicaLogDirs => AlterReplicaLogDirsRequest, AlterReplicaLogDirsResponse;
        DescribeLogDirs => DescribeLogDirsRequest, DescribeLogDirsResponse;
        CreatePartitions => CreatePartitionsRequest, CreatePartitionsResponse;
        DeleteGroups => DeleteGroupsRequest, DeleteGroupsResponse;
        IncrementalAlterConfigs => IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse;
        OffsetDelete => OffsetDeleteRequest, OffsetDeleteResponse;
        DescribeCluster => DescribeClusterRequest, DescribeClusterResponse;
        AddPartitionsToTxn => AddPartitionsToTxnRequest, AddPartitionsToTxnResponse;
        AddOffsetsToTxn => AddOffsetsToTxnRequest, AddOffsetsToTxnResponse;
        EndTxn => EndTxnRequest, EndTxnResponse;
        WriteTxnMarkers => WriteTxnMarkersRequest, WriteTxnMarkersResponse;
        TxnOffsetCommit => TxnOffsetCommitRequest, TxnOffsetCommitResponse;
        DescribeAcls => DescribeAclsRequest, DescribeAclsResponse;
        CreateAcls => CreateAclsRequest, CreateAclsResponse;
        DeleteAcls => DeleteAclsRequest, DeleteAclsResponse;
        SaslAuthenticate => SaslAuthenticateRequest, SaslAuthenticateResponse;
        ElectLeaders => ElectLeadersRequest, ElectLeadersResponse;
        AlterPartitionReassignments => AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse;
        ListPartitionReassignments => ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse;
        DescribeClientQuotas => DescribeClientQuotasRequest, DescribeClientQuotasResponse;
        AlterClientQuotas => AlterClientQuotasRequest, AlterClientQuotasResponse;
        DescribeUserScramCredentials => DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse;
        AlterUserScramCredentials => AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse;
        DescribeProducers => DescribeProducersRequest, DescribeProducersResponse;
        DescribeTransactions => DescribeTransactionsRequest, DescribeTransactionsResponse;
        ListTransactions => ListTransactionsRequest, ListTransactionsResponse;
        ConsumerGroupHeartbeat => ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse;
        ConsumerGroupDescribe => ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse;
        DescribeTopicPartitions => DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse;
        ListConfigResources => ListConfigResourcesRequest, ListConfigResourcesResponse;
        GetTelemetrySubscriptions => GetTelemetrySubscriptionsRequest, GetTelemetrySubscriptionsResponse;
        PushTelemetry => PushTelemetryRequest, PushTelemetryResponse;
        DescribeQuorum => DescribeQuorumRequest, DescribeQuorumResponse;
        AlterPartition => AlterPartitionRequest, AlterPartitionResponse;
        BrokerRegistration => BrokerRegistrationRequest, BrokerRegistrationResponse;
        BrokerHeartbeat => BrokerHeartbeatRequest, BrokerHeartbeatResponse;
        UpdateFeatures => UpdateFeaturesRequest, UpdateFeaturesResponse;
        UnregisterBroker => UnregisterBrokerRequest, UnregisterBrokerResponse;
        AddRaftVoter => AddRaftVoterRequest, AddRaftVoterResponse;
        RemoveRaftVoter => RemoveRaftVoterRequest, RemoveRaftVoterResponse;
        ShareGroupHeartbeat => ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse;
        ShareGroupDescribe => ShareGroupDescribeRequest, ShareGroupDescribeResponse;
        ShareFetch => ShareFetchRequest, ShareFetchResponse;
        ShareAcknowledge => ShareAcknowledgeRequest, ShareAcknowledgeResponse;
        InitializeShareGroupState => InitializeShareGroupStateRequest, InitializeShareGroupStateResponse;
        ReadShareGroupState => ReadShareGroupStateRequest, ReadShareGroupStateResponse;
        WriteShareGroupState => WriteShareGroupStateRequest, WriteShareGroupStateResponse;
        DeleteShareGroupState => DeleteShareGroupStateRequest, DeleteShareGroupStateResponse;
        ReadShareGroupStateSummary => ReadShareGroupStateSummaryRequest, ReadShareGroupStateSummaryResponse;
        DescribeShareGroupOffsets => DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsResponse;
        AlterShareGroupOffsets => AlterShareGroupOffsetsRequest, AlterShareGroupOffsetsResponse;
        DeleteShareGroupOffsets => DeleteShareGroupOffsetsRequest, DeleteShareGroupOffsetsResponse;
    );
    // Every implemented API is covered above.
    assert_eq!(IMPLEMENTED_APIS.len(), 74);
    assert!(count > 500, "{count}");
}

#[test]
fn defaults_match_kafka_protocol_crate() {
    // Defaults drive what absent fields decode to and whether tagged fields are written.
    macro_rules! same_default {
        ($($t:ident),*) => {$(
            assert!(
                same_model(
                    &tokens(&format!("{:?}", $t::default())),
                    &tokens(&format!("{:?}", theirs::$t::default()))
                ),
                "{} default", stringify!($t)
            );
        )*};
    }
    same_default!(
        ProduceRequest,
        ProduceResponse,
        FetchRequest,
        FetchResponse,
        ListOffsetsRequest,
        ListOffsetsResponse,
        MetadataRequest,
        MetadataResponse,
        ApiVersionsRequest,
        ApiVersionsResponse,
        CreateTopicsRequest,
        CreateTopicsResponse,
        InitProducerIdRequest,
        InitProducerIdResponse,
        JoinGroupRequest,
        JoinGroupResponse,
        DescribeClusterRequest,
        DescribeClusterResponse,
        OffsetCommitRequest,
        OffsetFetchRequest,
        OffsetForLeaderEpochRequest
    );
    assert_eq!(
        tokens(&format!("{:?}", fetch_response::PartitionData::default())),
        tokens(&format!(
            "{:?}",
            theirs::fetch_response::PartitionData::default()
        ))
    );
    assert_eq!(
        tokens(&format!("{:?}", fetch_request::FetchPartition::default())),
        tokens(&format!(
            "{:?}",
            theirs::fetch_request::FetchPartition::default()
        ))
    );
}

#[test]
fn error_codes_match_kafka_protocol_crate() {
    use kafka_protocol::error::ResponseError;
    for code in ErrorCode::all() {
        if code.0 == 0 {
            continue;
        }
        let t = ResponseError::try_from_code(code.0)
            .unwrap_or_else(|| panic!("{code} unknown to theirs"));
        assert_eq!(t.code(), code.0);
        assert_eq!(t.is_retriable(), code.is_retriable(), "{code}");
    }
    for c in -1..200i16 {
        if let Some(t) = ResponseError::try_from_code(c) {
            if !matches!(t, ResponseError::Unknown(_)) {
                assert_ne!(ErrorCode(c).name(), "UNKNOWN", "missing code {c}");
            }
        }
    }
}

use crate::error::ErrorCode;
