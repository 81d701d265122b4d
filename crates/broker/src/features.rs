//! The feature flags (KIP-584) this broker supports and the levels it has finalized: the one table
//! ApiVersions (supported and finalized features), `kafka-features.sh describe` and UpdateFeatures read.
//!
//! Runnel's finalized levels are fixed: they are the levels whose semantics Runnel implements, and no
//! code path changes them (no `FeatureLevelRecord` in the metadata log, nothing in the standalone
//! registry). UpdateFeatures therefore accepts only the current level of a feature (see
//! `server/apis/update_features.rs`).
//!
//! A feature listed with a supported range of 0–0 is one Kafka 4.4 defines whose higher levels Runnel
//! does not implement. Listing it (rather than leaving it out) lets UpdateFeatures answer an upgrade with
//! Kafka's "only supports versions 0-0" instead of "does not support this feature"; clients decide on
//! the finalized level, which is absent (Kafka leaves level-0 features out of the finalized list) exactly
//! as when the feature is not listed at all. ApiVersions before v4 leaves every feature with supported
//! minimum 0 out (KAFKA-17492).

/// One feature: its name, the range of levels this broker supports and the finalized level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Feature {
    /// Kafka's feature name, e.g. `transaction.version`.
    pub name: &'static str,
    /// Lowest supported level.
    pub min_supported: i16,
    /// Highest supported level.
    pub max_supported: i16,
    /// The finalized level (0 = not finalized: left out of ApiVersions' finalized features).
    pub finalized: i16,
}

/// `metadata.version` (Kafka's `MetadataVersion`): level 12 is `IBP_3_6_IV0`. Runnel's metadata has
/// what the levels up to 12 add — KRaft registration and heartbeats, AlterPartition v2+ with topic
/// ids, ACLs, SCRAM credentials (11, `IBP_3_5_IV2`) — and, as 12 requires, an ISR shrink bumps only the
/// partition epoch, never the leader epoch (`PartitionChangeRecord` bumps the leader epoch only with a
/// new leader). It has none of 13's metadata transactions (`BeginTransactionRecord`), 14's delegation
/// tokens, 15's controller registrations, 17's directory assignment (KIP-858) or 23's ELR.
pub const METADATA_VERSION_LEVEL: i16 = 12;

/// `transaction.version` (KIP-890, KIP-1022): level 2 is transaction version 2 — the epoch bumped at
/// every commit or abort, partitions added by the leaders' verification (Produce v12, TxnOffsetCommit
/// v5) instead of the client's AddPartitionsToTxn/AddOffsetsToTxn. Clients that predate it keep
/// transaction version 1 through the older request versions, which are still served.
pub const TRANSACTION_VERSION_LEVEL: i16 = 2;

/// Name of the `transaction.version` feature.
pub const TRANSACTION_VERSION: &str = "transaction.version";
/// Name of the `kraft.version` feature.
pub const KRAFT_VERSION: &str = "kraft.version";
/// Name of the `metadata.version` feature.
pub const METADATA_VERSION: &str = "metadata.version";

/// Every feature this broker supports, in name order.
///
/// - `eligible.leader.replicas.version` 0: no ELR (KIP-966).
/// - `group.version` 0–1, finalized at 1: the consumer rebalance protocol (KIP-848,
///   ConsumerGroupHeartbeat and ConsumerGroupDescribe) is served, as Kafka 4.x does by default.
/// - `kraft.version` 0–1, finalized at 1 (KIP-853): the voters live in the metadata log (openraft's
///   membership) from the first start, so AddRaftVoter and RemoveRaftVoter are served
///   (`controller::voter_changes`) — what level 1 means in Kafka, which refuses them at level 0.
/// - `metadata.version` [`METADATA_VERSION_LEVEL`].
/// - `share.version` 0–1, finalized at 1: share groups (KIP-932, ShareGroupHeartbeat, ShareGroupDescribe,
///   ShareFetch, ShareAcknowledge) are served, as Kafka 4.2+ does by default.
/// - `streams.version` 0: no streams rebalance protocol (KIP-1071).
/// - `transaction.version` 0–[`TRANSACTION_VERSION_LEVEL`], finalized at 2.
pub const FEATURES: &[Feature] = &[
    fixed_at_zero("eligible.leader.replicas.version"),
    Feature {
        name: "group.version",
        min_supported: 0,
        max_supported: 1,
        finalized: 1,
    },
    Feature {
        name: KRAFT_VERSION,
        min_supported: 0,
        max_supported: 1,
        finalized: 1,
    },
    Feature {
        name: METADATA_VERSION,
        min_supported: METADATA_VERSION_LEVEL,
        max_supported: METADATA_VERSION_LEVEL,
        finalized: METADATA_VERSION_LEVEL,
    },
    Feature {
        name: "share.version",
        min_supported: 0,
        max_supported: 1,
        finalized: 1,
    },
    fixed_at_zero("streams.version"),
    Feature {
        name: TRANSACTION_VERSION,
        min_supported: 0,
        max_supported: TRANSACTION_VERSION_LEVEL,
        finalized: TRANSACTION_VERSION_LEVEL,
    },
];

const fn fixed_at_zero(name: &'static str) -> Feature {
    Feature {
        name,
        min_supported: 0,
        max_supported: 0,
        finalized: 0,
    }
}

/// The feature named `name`, if this broker supports it.
pub fn feature(name: &str) -> Option<&'static Feature> {
    FEATURES.iter().find(|f| f.name == name)
}

/// The finalized features: those at a level above 0.
pub fn finalized() -> impl Iterator<Item = &'static Feature> {
    FEATURES.iter().filter(|f| f.finalized > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finalized_levels_are_supported_and_names_sorted() {
        for f in FEATURES {
            assert!(f.min_supported <= f.finalized || f.finalized == 0, "{f:?}");
            assert!(f.finalized <= f.max_supported, "{f:?}");
        }
        assert!(FEATURES.windows(2).all(|w| w[0].name < w[1].name));
        let names: Vec<_> = finalized().map(|f| f.name).collect();
        assert_eq!(
            names,
            [
                "group.version",
                KRAFT_VERSION,
                METADATA_VERSION,
                "share.version",
                TRANSACTION_VERSION
            ]
        );
        assert_eq!(feature("group.version").map(|f| f.max_supported), Some(1));
        assert_eq!(feature("share.version").map(|f| f.max_supported), Some(1));
        assert!(feature("foo.version").is_none());
    }
}
