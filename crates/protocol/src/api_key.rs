//! Kafka API keys. Source: Kafka protocol guide, "Api Keys" (every key Kafka defines up to 4.x).

/// A Kafka API key (the first INT16 of every request header).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(i16)]
pub enum ApiKey {
    /// API key 0.
    Produce = 0,
    /// API key 1.
    Fetch = 1,
    /// API key 2.
    ListOffsets = 2,
    /// API key 3.
    Metadata = 3,
    /// API key 8.
    OffsetCommit = 8,
    /// API key 9.
    OffsetFetch = 9,
    /// API key 10.
    FindCoordinator = 10,
    /// API key 11.
    JoinGroup = 11,
    /// API key 12.
    Heartbeat = 12,
    /// API key 13.
    LeaveGroup = 13,
    /// API key 14.
    SyncGroup = 14,
    /// API key 15.
    DescribeGroups = 15,
    /// API key 16.
    ListGroups = 16,
    /// API key 17.
    SaslHandshake = 17,
    /// API key 18.
    ApiVersions = 18,
    /// API key 19.
    CreateTopics = 19,
    /// API key 20.
    DeleteTopics = 20,
    /// API key 21.
    DeleteRecords = 21,
    /// API key 22.
    InitProducerId = 22,
    /// API key 23.
    OffsetForLeaderEpoch = 23,
    /// API key 24.
    AddPartitionsToTxn = 24,
    /// API key 25.
    AddOffsetsToTxn = 25,
    /// API key 26.
    EndTxn = 26,
    /// API key 27.
    WriteTxnMarkers = 27,
    /// API key 28.
    TxnOffsetCommit = 28,
    /// API key 29.
    DescribeAcls = 29,
    /// API key 30.
    CreateAcls = 30,
    /// API key 31.
    DeleteAcls = 31,
    /// API key 32.
    DescribeConfigs = 32,
    /// API key 33.
    AlterConfigs = 33,
    /// API key 34.
    AlterReplicaLogDirs = 34,
    /// API key 35.
    DescribeLogDirs = 35,
    /// API key 36.
    SaslAuthenticate = 36,
    /// API key 37.
    CreatePartitions = 37,
    /// API key 38.
    CreateDelegationToken = 38,
    /// API key 39.
    RenewDelegationToken = 39,
    /// API key 40.
    ExpireDelegationToken = 40,
    /// API key 41.
    DescribeDelegationToken = 41,
    /// API key 42.
    DeleteGroups = 42,
    /// API key 43.
    ElectLeaders = 43,
    /// API key 44.
    IncrementalAlterConfigs = 44,
    /// API key 45.
    AlterPartitionReassignments = 45,
    /// API key 46.
    ListPartitionReassignments = 46,
    /// API key 47.
    OffsetDelete = 47,
    /// API key 48.
    DescribeClientQuotas = 48,
    /// API key 49.
    AlterClientQuotas = 49,
    /// API key 50.
    DescribeUserScramCredentials = 50,
    /// API key 51.
    AlterUserScramCredentials = 51,
    /// API key 52.
    Vote = 52,
    /// API key 53.
    BeginQuorumEpoch = 53,
    /// API key 54.
    EndQuorumEpoch = 54,
    /// API key 55.
    DescribeQuorum = 55,
    /// API key 56.
    AlterPartition = 56,
    /// API key 57.
    UpdateFeatures = 57,
    /// API key 58.
    Envelope = 58,
    /// API key 59.
    FetchSnapshot = 59,
    /// API key 60.
    DescribeCluster = 60,
    /// API key 61.
    DescribeProducers = 61,
    /// API key 62.
    BrokerRegistration = 62,
    /// API key 63.
    BrokerHeartbeat = 63,
    /// API key 64.
    UnregisterBroker = 64,
    /// API key 65.
    DescribeTransactions = 65,
    /// API key 66.
    ListTransactions = 66,
    /// API key 67.
    AllocateProducerIds = 67,
    /// API key 68.
    ConsumerGroupHeartbeat = 68,
    /// API key 69.
    ConsumerGroupDescribe = 69,
    /// API key 70.
    ControllerRegistration = 70,
    /// API key 71.
    GetTelemetrySubscriptions = 71,
    /// API key 72.
    PushTelemetry = 72,
    /// API key 73.
    AssignReplicasToDirs = 73,
    /// API key 74.
    ListConfigResources = 74,
    /// API key 75.
    DescribeTopicPartitions = 75,
    /// API key 76.
    ShareGroupHeartbeat = 76,
    /// API key 77.
    ShareGroupDescribe = 77,
    /// API key 78.
    ShareFetch = 78,
    /// API key 79.
    ShareAcknowledge = 79,
    /// API key 80.
    AddRaftVoter = 80,
    /// API key 81.
    RemoveRaftVoter = 81,
    /// API key 82.
    UpdateRaftVoter = 82,
    /// API key 83.
    InitializeShareGroupState = 83,
    /// API key 84.
    ReadShareGroupState = 84,
    /// API key 85.
    WriteShareGroupState = 85,
    /// API key 86.
    DeleteShareGroupState = 86,
    /// API key 87.
    ReadShareGroupStateSummary = 87,
    /// API key 90.
    DescribeShareGroupOffsets = 90,
    /// API key 91.
    AlterShareGroupOffsets = 91,
    /// API key 92.
    DeleteShareGroupOffsets = 92,
}

impl ApiKey {
    /// Every API key, in numeric order.
    pub const ALL: &'static [ApiKey] = &[
        ApiKey::Produce,
        ApiKey::Fetch,
        ApiKey::ListOffsets,
        ApiKey::Metadata,
        ApiKey::OffsetCommit,
        ApiKey::OffsetFetch,
        ApiKey::FindCoordinator,
        ApiKey::JoinGroup,
        ApiKey::Heartbeat,
        ApiKey::LeaveGroup,
        ApiKey::SyncGroup,
        ApiKey::DescribeGroups,
        ApiKey::ListGroups,
        ApiKey::SaslHandshake,
        ApiKey::ApiVersions,
        ApiKey::CreateTopics,
        ApiKey::DeleteTopics,
        ApiKey::DeleteRecords,
        ApiKey::InitProducerId,
        ApiKey::OffsetForLeaderEpoch,
        ApiKey::AddPartitionsToTxn,
        ApiKey::AddOffsetsToTxn,
        ApiKey::EndTxn,
        ApiKey::WriteTxnMarkers,
        ApiKey::TxnOffsetCommit,
        ApiKey::DescribeAcls,
        ApiKey::CreateAcls,
        ApiKey::DeleteAcls,
        ApiKey::DescribeConfigs,
        ApiKey::AlterConfigs,
        ApiKey::AlterReplicaLogDirs,
        ApiKey::DescribeLogDirs,
        ApiKey::SaslAuthenticate,
        ApiKey::CreatePartitions,
        ApiKey::CreateDelegationToken,
        ApiKey::RenewDelegationToken,
        ApiKey::ExpireDelegationToken,
        ApiKey::DescribeDelegationToken,
        ApiKey::DeleteGroups,
        ApiKey::ElectLeaders,
        ApiKey::IncrementalAlterConfigs,
        ApiKey::AlterPartitionReassignments,
        ApiKey::ListPartitionReassignments,
        ApiKey::OffsetDelete,
        ApiKey::DescribeClientQuotas,
        ApiKey::AlterClientQuotas,
        ApiKey::DescribeUserScramCredentials,
        ApiKey::AlterUserScramCredentials,
        ApiKey::Vote,
        ApiKey::BeginQuorumEpoch,
        ApiKey::EndQuorumEpoch,
        ApiKey::DescribeQuorum,
        ApiKey::AlterPartition,
        ApiKey::UpdateFeatures,
        ApiKey::Envelope,
        ApiKey::FetchSnapshot,
        ApiKey::DescribeCluster,
        ApiKey::DescribeProducers,
        ApiKey::BrokerRegistration,
        ApiKey::BrokerHeartbeat,
        ApiKey::UnregisterBroker,
        ApiKey::DescribeTransactions,
        ApiKey::ListTransactions,
        ApiKey::AllocateProducerIds,
        ApiKey::ConsumerGroupHeartbeat,
        ApiKey::ConsumerGroupDescribe,
        ApiKey::ControllerRegistration,
        ApiKey::GetTelemetrySubscriptions,
        ApiKey::PushTelemetry,
        ApiKey::AssignReplicasToDirs,
        ApiKey::ListConfigResources,
        ApiKey::DescribeTopicPartitions,
        ApiKey::ShareGroupHeartbeat,
        ApiKey::ShareGroupDescribe,
        ApiKey::ShareFetch,
        ApiKey::ShareAcknowledge,
        ApiKey::AddRaftVoter,
        ApiKey::RemoveRaftVoter,
        ApiKey::UpdateRaftVoter,
        ApiKey::InitializeShareGroupState,
        ApiKey::ReadShareGroupState,
        ApiKey::WriteShareGroupState,
        ApiKey::DeleteShareGroupState,
        ApiKey::ReadShareGroupStateSummary,
        ApiKey::DescribeShareGroupOffsets,
        ApiKey::AlterShareGroupOffsets,
        ApiKey::DeleteShareGroupOffsets,
    ];

    /// The key for a raw value, `None` if Kafka defines no such key.
    pub fn from_i16(v: i16) -> Option<ApiKey> {
        Some(match v {
            0 => ApiKey::Produce,
            1 => ApiKey::Fetch,
            2 => ApiKey::ListOffsets,
            3 => ApiKey::Metadata,
            8 => ApiKey::OffsetCommit,
            9 => ApiKey::OffsetFetch,
            10 => ApiKey::FindCoordinator,
            11 => ApiKey::JoinGroup,
            12 => ApiKey::Heartbeat,
            13 => ApiKey::LeaveGroup,
            14 => ApiKey::SyncGroup,
            15 => ApiKey::DescribeGroups,
            16 => ApiKey::ListGroups,
            17 => ApiKey::SaslHandshake,
            18 => ApiKey::ApiVersions,
            19 => ApiKey::CreateTopics,
            20 => ApiKey::DeleteTopics,
            21 => ApiKey::DeleteRecords,
            22 => ApiKey::InitProducerId,
            23 => ApiKey::OffsetForLeaderEpoch,
            24 => ApiKey::AddPartitionsToTxn,
            25 => ApiKey::AddOffsetsToTxn,
            26 => ApiKey::EndTxn,
            27 => ApiKey::WriteTxnMarkers,
            28 => ApiKey::TxnOffsetCommit,
            29 => ApiKey::DescribeAcls,
            30 => ApiKey::CreateAcls,
            31 => ApiKey::DeleteAcls,
            32 => ApiKey::DescribeConfigs,
            33 => ApiKey::AlterConfigs,
            34 => ApiKey::AlterReplicaLogDirs,
            35 => ApiKey::DescribeLogDirs,
            36 => ApiKey::SaslAuthenticate,
            37 => ApiKey::CreatePartitions,
            38 => ApiKey::CreateDelegationToken,
            39 => ApiKey::RenewDelegationToken,
            40 => ApiKey::ExpireDelegationToken,
            41 => ApiKey::DescribeDelegationToken,
            42 => ApiKey::DeleteGroups,
            43 => ApiKey::ElectLeaders,
            44 => ApiKey::IncrementalAlterConfigs,
            45 => ApiKey::AlterPartitionReassignments,
            46 => ApiKey::ListPartitionReassignments,
            47 => ApiKey::OffsetDelete,
            48 => ApiKey::DescribeClientQuotas,
            49 => ApiKey::AlterClientQuotas,
            50 => ApiKey::DescribeUserScramCredentials,
            51 => ApiKey::AlterUserScramCredentials,
            52 => ApiKey::Vote,
            53 => ApiKey::BeginQuorumEpoch,
            54 => ApiKey::EndQuorumEpoch,
            55 => ApiKey::DescribeQuorum,
            56 => ApiKey::AlterPartition,
            57 => ApiKey::UpdateFeatures,
            58 => ApiKey::Envelope,
            59 => ApiKey::FetchSnapshot,
            60 => ApiKey::DescribeCluster,
            61 => ApiKey::DescribeProducers,
            62 => ApiKey::BrokerRegistration,
            63 => ApiKey::BrokerHeartbeat,
            64 => ApiKey::UnregisterBroker,
            65 => ApiKey::DescribeTransactions,
            66 => ApiKey::ListTransactions,
            67 => ApiKey::AllocateProducerIds,
            68 => ApiKey::ConsumerGroupHeartbeat,
            69 => ApiKey::ConsumerGroupDescribe,
            70 => ApiKey::ControllerRegistration,
            71 => ApiKey::GetTelemetrySubscriptions,
            72 => ApiKey::PushTelemetry,
            73 => ApiKey::AssignReplicasToDirs,
            74 => ApiKey::ListConfigResources,
            75 => ApiKey::DescribeTopicPartitions,
            76 => ApiKey::ShareGroupHeartbeat,
            77 => ApiKey::ShareGroupDescribe,
            78 => ApiKey::ShareFetch,
            79 => ApiKey::ShareAcknowledge,
            80 => ApiKey::AddRaftVoter,
            81 => ApiKey::RemoveRaftVoter,
            82 => ApiKey::UpdateRaftVoter,
            83 => ApiKey::InitializeShareGroupState,
            84 => ApiKey::ReadShareGroupState,
            85 => ApiKey::WriteShareGroupState,
            86 => ApiKey::DeleteShareGroupState,
            87 => ApiKey::ReadShareGroupStateSummary,
            90 => ApiKey::DescribeShareGroupOffsets,
            91 => ApiKey::AlterShareGroupOffsets,
            92 => ApiKey::DeleteShareGroupOffsets,
            _ => return None,
        })
    }

    /// Kafka's name of the API (as in `kafka-broker-api-versions`), e.g. `"Produce"`.
    pub fn name(self) -> &'static str {
        match self {
            ApiKey::Produce => "Produce",
            ApiKey::Fetch => "Fetch",
            ApiKey::ListOffsets => "ListOffsets",
            ApiKey::Metadata => "Metadata",
            ApiKey::OffsetCommit => "OffsetCommit",
            ApiKey::OffsetFetch => "OffsetFetch",
            ApiKey::FindCoordinator => "FindCoordinator",
            ApiKey::JoinGroup => "JoinGroup",
            ApiKey::Heartbeat => "Heartbeat",
            ApiKey::LeaveGroup => "LeaveGroup",
            ApiKey::SyncGroup => "SyncGroup",
            ApiKey::DescribeGroups => "DescribeGroups",
            ApiKey::ListGroups => "ListGroups",
            ApiKey::SaslHandshake => "SaslHandshake",
            ApiKey::ApiVersions => "ApiVersions",
            ApiKey::CreateTopics => "CreateTopics",
            ApiKey::DeleteTopics => "DeleteTopics",
            ApiKey::DeleteRecords => "DeleteRecords",
            ApiKey::InitProducerId => "InitProducerId",
            ApiKey::OffsetForLeaderEpoch => "OffsetForLeaderEpoch",
            ApiKey::AddPartitionsToTxn => "AddPartitionsToTxn",
            ApiKey::AddOffsetsToTxn => "AddOffsetsToTxn",
            ApiKey::EndTxn => "EndTxn",
            ApiKey::WriteTxnMarkers => "WriteTxnMarkers",
            ApiKey::TxnOffsetCommit => "TxnOffsetCommit",
            ApiKey::DescribeAcls => "DescribeAcls",
            ApiKey::CreateAcls => "CreateAcls",
            ApiKey::DeleteAcls => "DeleteAcls",
            ApiKey::DescribeConfigs => "DescribeConfigs",
            ApiKey::AlterConfigs => "AlterConfigs",
            ApiKey::AlterReplicaLogDirs => "AlterReplicaLogDirs",
            ApiKey::DescribeLogDirs => "DescribeLogDirs",
            ApiKey::SaslAuthenticate => "SaslAuthenticate",
            ApiKey::CreatePartitions => "CreatePartitions",
            ApiKey::CreateDelegationToken => "CreateDelegationToken",
            ApiKey::RenewDelegationToken => "RenewDelegationToken",
            ApiKey::ExpireDelegationToken => "ExpireDelegationToken",
            ApiKey::DescribeDelegationToken => "DescribeDelegationToken",
            ApiKey::DeleteGroups => "DeleteGroups",
            ApiKey::ElectLeaders => "ElectLeaders",
            ApiKey::IncrementalAlterConfigs => "IncrementalAlterConfigs",
            ApiKey::AlterPartitionReassignments => "AlterPartitionReassignments",
            ApiKey::ListPartitionReassignments => "ListPartitionReassignments",
            ApiKey::OffsetDelete => "OffsetDelete",
            ApiKey::DescribeClientQuotas => "DescribeClientQuotas",
            ApiKey::AlterClientQuotas => "AlterClientQuotas",
            ApiKey::DescribeUserScramCredentials => "DescribeUserScramCredentials",
            ApiKey::AlterUserScramCredentials => "AlterUserScramCredentials",
            ApiKey::Vote => "Vote",
            ApiKey::BeginQuorumEpoch => "BeginQuorumEpoch",
            ApiKey::EndQuorumEpoch => "EndQuorumEpoch",
            ApiKey::DescribeQuorum => "DescribeQuorum",
            ApiKey::AlterPartition => "AlterPartition",
            ApiKey::UpdateFeatures => "UpdateFeatures",
            ApiKey::Envelope => "Envelope",
            ApiKey::FetchSnapshot => "FetchSnapshot",
            ApiKey::DescribeCluster => "DescribeCluster",
            ApiKey::DescribeProducers => "DescribeProducers",
            ApiKey::BrokerRegistration => "BrokerRegistration",
            ApiKey::BrokerHeartbeat => "BrokerHeartbeat",
            ApiKey::UnregisterBroker => "UnregisterBroker",
            ApiKey::DescribeTransactions => "DescribeTransactions",
            ApiKey::ListTransactions => "ListTransactions",
            ApiKey::AllocateProducerIds => "AllocateProducerIds",
            ApiKey::ConsumerGroupHeartbeat => "ConsumerGroupHeartbeat",
            ApiKey::ConsumerGroupDescribe => "ConsumerGroupDescribe",
            ApiKey::ControllerRegistration => "ControllerRegistration",
            ApiKey::GetTelemetrySubscriptions => "GetTelemetrySubscriptions",
            ApiKey::PushTelemetry => "PushTelemetry",
            ApiKey::AssignReplicasToDirs => "AssignReplicasToDirs",
            ApiKey::ListConfigResources => "ListConfigResources",
            ApiKey::DescribeTopicPartitions => "DescribeTopicPartitions",
            ApiKey::ShareGroupHeartbeat => "ShareGroupHeartbeat",
            ApiKey::ShareGroupDescribe => "ShareGroupDescribe",
            ApiKey::ShareFetch => "ShareFetch",
            ApiKey::ShareAcknowledge => "ShareAcknowledge",
            ApiKey::AddRaftVoter => "AddRaftVoter",
            ApiKey::RemoveRaftVoter => "RemoveRaftVoter",
            ApiKey::UpdateRaftVoter => "UpdateRaftVoter",
            ApiKey::InitializeShareGroupState => "InitializeShareGroupState",
            ApiKey::ReadShareGroupState => "ReadShareGroupState",
            ApiKey::WriteShareGroupState => "WriteShareGroupState",
            ApiKey::DeleteShareGroupState => "DeleteShareGroupState",
            ApiKey::ReadShareGroupStateSummary => "ReadShareGroupStateSummary",
            ApiKey::DescribeShareGroupOffsets => "DescribeShareGroupOffsets",
            ApiKey::AlterShareGroupOffsets => "AlterShareGroupOffsets",
            ApiKey::DeleteShareGroupOffsets => "DeleteShareGroupOffsets",
        }
    }
}

impl std::fmt::Display for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}({})", self.name(), *self as i16)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        for k in ApiKey::ALL {
            assert_eq!(ApiKey::from_i16(*k as i16), Some(*k));
        }
        assert_eq!(ApiKey::from_i16(-1), None);
        assert_eq!(ApiKey::from_i16(i16::MAX), None);
        assert_eq!(ApiKey::Produce.name(), "Produce");
        assert_eq!(ApiKey::ApiVersions as i16, 18);
    }
}
