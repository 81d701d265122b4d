//! Offsets, epochs, broker ids and producer ids: the integers that cross crate boundaries, each with its own type so that an
//! offset cannot be passed where an epoch is expected (Redpanda's `model/fundamental.h` idea).
//!
//! Each is `#[repr(transparent)]` over the integer Kafka puts on the wire; the protocol crate's message structs
//! keep the raw integers and the conversion happens at the protocol edge (`Offset::new(p.fetch_offset)`,
//! `hw.get()`). With the `serde` feature each serializes as its plain integer.

use std::fmt;

macro_rules! raw_newtype {
    ($name:ident, $raw:ty) => {
        impl $name {
            /// Wraps a raw value as carried on the wire.
            #[inline]
            pub const fn new(raw: $raw) -> Self {
                $name(raw)
            }

            /// The raw value, for the wire and for arithmetic the type does not offer.
            #[inline]
            pub const fn get(self) -> $raw {
                self.0
            }

            /// Kafka's -1: none / unknown (see the type's documentation for what it means here).
            pub const NONE: $name = $name(-1);

            /// True for [`Self::NONE`] (-1).
            #[inline]
            pub const fn is_none(self) -> bool {
                self.0 == -1
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.0, f)
            }
        }

        impl From<$name> for $raw {
            #[inline]
            fn from(v: $name) -> $raw {
                v.0
            }
        }
    };
}

/// A position in a partition's log (Kafka's `offset`, INT64): the offset of one record, or one of the log's
/// bounds — LogStartOffset (first offset still in the log), HighWatermark (first offset not yet replicated to
/// the whole ISR) and LogEndOffset (the offset the next appended record gets). Counts records, not bytes.
///
/// [`Offset::NONE`] (-1) is Kafka's "no offset" where an API uses it (an empty append's first offset, an unknown
/// epoch's end offset, a ListOffsets miss). Valid offsets are ≥ 0.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(transparent))]
#[repr(transparent)]
pub struct Offset(pub i64);

raw_newtype!(Offset, i64);

impl Offset {
    /// The first offset of a new log.
    pub const ZERO: Offset = Offset(0);

    /// The offset after this one. Panics on overflow (an offset near `i64::MAX` is a bug).
    #[inline]
    #[must_use]
    pub fn next(self) -> Offset {
        self + 1
    }

    /// `self + delta`, or `None` on overflow.
    #[inline]
    pub fn checked_add(self, delta: i64) -> Option<Offset> {
        self.0.checked_add(delta).map(Offset)
    }
}

/// `offset + delta`, panicking on overflow (as `i64 + i64` does in debug builds, but in release builds too).
impl std::ops::Add<i64> for Offset {
    type Output = Offset;
    #[inline]
    fn add(self, delta: i64) -> Offset {
        self.checked_add(delta)
            .unwrap_or_else(|| panic!("offset overflow: {self} + {delta}"))
    }
}

/// The epoch of a partition's leader (Kafka's `leader_epoch`, INT32), bumped by the controller on every leader
/// change; the log's leader-epoch checkpoint records the first offset each epoch appended (KIP-101, KIP-279).
///
/// [`LeaderEpoch::NONE`] (-1) is Kafka's "unknown / not given" (`RecordBatch.NO_PARTITION_LEADER_EPOCH`, and the
/// `current_leader_epoch` a client sends when it does not fence). Valid epochs are ≥ 0.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(transparent))]
#[repr(transparent)]
pub struct LeaderEpoch(pub i32);

raw_newtype!(LeaderEpoch, i32);

/// A broker's id (Kafka's `broker.id` / `node.id`, INT32): names a broker in the metadata image, in replica
/// lists and ISRs, and as a partition's leader.
///
/// [`BrokerId::NONE`] (-1) is Kafka's "no broker": a partition without a leader (`LeaderAndIsr.NO_LEADER`),
/// an unknown coordinator. Registered brokers have ids ≥ 0.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(transparent))]
#[repr(transparent)]
pub struct BrokerId(pub i32);

raw_newtype!(BrokerId, i32);

/// A broker's registration epoch (Kafka's `broker_epoch`, INT64, KIP-631): the metadata offset of the
/// broker's latest RegisterBroker record, given to it by the controller. Heartbeats, fence/unfence and
/// AllocateProducerIds name it, and anything naming an older registration is refused (STALE_BROKER_EPOCH).
///
/// [`BrokerEpoch::NONE`] (-1) is "not registered yet". Registered epochs are ≥ 0.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(transparent))]
#[repr(transparent)]
pub struct BrokerEpoch(pub i64);

raw_newtype!(BrokerEpoch, i64);

/// The version of a partition's registration (Kafka's `partition_epoch`, INT32), bumped by the controller
/// on every change to the partition's leader, ISR or replicas; a leader's AlterPartition names the epoch it
/// saw, and a stale one is rejected (`INVALID_UPDATE_VERSION`, KIP-497). Starts at 0.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(transparent))]
#[repr(transparent)]
pub struct PartitionEpoch(pub i32);

raw_newtype!(PartitionEpoch, i32);

impl PartitionEpoch {
    /// The next epoch (saturating at `i32::MAX`, as the controller's replay does).
    #[inline]
    #[must_use]
    pub const fn next(self) -> PartitionEpoch {
        PartitionEpoch(self.0.saturating_add(1))
    }
}

/// An idempotent or transactional producer's id (Kafka's `producer_id`, INT64), handed out by the controller
/// (InitProducerId) and carried in every record batch header.
///
/// [`ProducerId::NONE`] (-1) is Kafka's `RecordBatch.NO_PRODUCER_ID`: the batch is from a plain producer.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(transparent))]
#[repr(transparent)]
pub struct ProducerId(pub i64);

raw_newtype!(ProducerId, i64);

/// The epoch of a producer id (Kafka's `producer_epoch`, INT16), bumped when a transactional producer
/// re-initializes, fencing the older instance.
///
/// [`ProducerEpoch::NONE`] (-1) is Kafka's `RecordBatch.NO_PRODUCER_EPOCH`.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(transparent))]
#[repr(transparent)]
pub struct ProducerEpoch(pub i16);

raw_newtype!(ProducerEpoch, i16);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offset_arithmetic_and_order() {
        let o = Offset::new(41);
        assert_eq!(o.next(), Offset(42));
        assert_eq!(o + 9, Offset(50));
        assert_eq!(o + -41, Offset::ZERO);
        assert!(Offset::NONE < Offset::ZERO && Offset::ZERO < o);
        assert_eq!(Offset(i64::MAX).checked_add(1), None);
        assert_eq!(Offset(i64::MIN).checked_add(-1), None);
        assert_eq!(o.get(), 41);
        assert_eq!(i64::from(o), 41);
    }

    #[test]
    #[should_panic(expected = "offset overflow")]
    fn offset_next_panics_on_overflow() {
        let _ = Offset(i64::MAX).next();
    }

    #[test]
    fn sentinels_are_minus_one() {
        assert!(Offset::NONE.is_none() && Offset::NONE.get() == -1);
        assert!(LeaderEpoch::NONE.is_none() && LeaderEpoch::NONE.get() == -1);
        assert!(ProducerId::NONE.is_none() && ProducerId::NONE.get() == -1);
        assert!(ProducerEpoch::NONE.is_none() && ProducerEpoch::NONE.get() == -1);
        assert!(BrokerId::NONE.is_none() && BrokerId::NONE.get() == -1);
        assert!(PartitionEpoch::NONE.is_none() && PartitionEpoch::NONE.get() == -1);
        assert!(!Offset::ZERO.is_none() && !LeaderEpoch(0).is_none());
        assert!(!BrokerId(0).is_none() && !PartitionEpoch(0).is_none());
    }

    #[test]
    fn display_is_the_raw_integer() {
        assert_eq!(Offset(7).to_string(), "7");
        assert_eq!(LeaderEpoch(-1).to_string(), "-1");
        assert_eq!(ProducerId(1000).to_string(), "1000");
        assert_eq!(format!("{:>3}", ProducerEpoch(2)), "  2");
        assert_eq!(BrokerId(3).to_string(), "3");
        assert_eq!(PartitionEpoch(-1).to_string(), "-1");
    }

    #[cfg(feature = "serde")]
    #[test]
    fn serde_is_the_plain_integer() {
        assert_eq!(serde_json::to_string(&Offset(12)).unwrap(), "12");
        assert_eq!(
            serde_json::from_str::<LeaderEpoch>("-1").unwrap(),
            LeaderEpoch::NONE
        );
        assert_eq!(
            serde_json::from_str::<ProducerId>("9").unwrap(),
            ProducerId(9)
        );
        assert_eq!(serde_json::to_string(&ProducerEpoch(3)).unwrap(), "3");
        assert_eq!(serde_json::to_string(&BrokerId(-1)).unwrap(), "-1");
        assert_eq!(
            serde_json::from_str::<Vec<BrokerId>>("[1,2]").unwrap(),
            vec![BrokerId(1), BrokerId(2)]
        );
        assert_eq!(
            serde_json::from_str::<PartitionEpoch>("4").unwrap(),
            PartitionEpoch(4)
        );
    }

    #[test]
    fn transparent_layout() {
        assert_eq!(std::mem::size_of::<Offset>(), 8);
        assert_eq!(std::mem::size_of::<LeaderEpoch>(), 4);
        assert_eq!(std::mem::size_of::<ProducerId>(), 8);
        assert_eq!(std::mem::size_of::<ProducerEpoch>(), 2);
        assert_eq!(std::mem::size_of::<BrokerId>(), 4);
        assert_eq!(std::mem::size_of::<PartitionEpoch>(), 4);
    }

    #[test]
    fn partition_epoch_next_saturates() {
        assert_eq!(PartitionEpoch(0).next(), PartitionEpoch(1));
        assert_eq!(PartitionEpoch(i32::MAX).next(), PartitionEpoch(i32::MAX));
    }
}
