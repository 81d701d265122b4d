//! Request and response messages, generated at build time by `build.rs` from `schema/*.schema`
//! (see the header doc of `build.rs` for the schema format).
//!
//! Each message lives in its own module named after its schema file, e.g.
//! [`produce_request`] holds [`ProduceRequest`], [`produce_request::TopicProduceData`] and
//! [`produce_request::PartitionProduceData`]. Every struct derives `Debug, Clone, PartialEq`,
//! implements `Default` with Kafka's default values, and [`Encode`]/[`Decode`] for every
//! version in its module's `MIN_VERSION..=MAX_VERSION`. Fields absent in a version are skipped
//! when encoding and keep their default when decoding.

use crate::api_key::ApiKey;
use crate::codec::{Decode, DecodeError, Encode, EncodeError, Encoder};
use bytes::Bytes;

include!(concat!(env!("OUT_DIR"), "/messages.rs"));
