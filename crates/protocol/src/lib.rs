//! Kafka wire protocol codec. No I/O: everything here works on byte buffers.
//!
//! * [`messages`]: request/response structs generated from `schema/*.schema` by `build.rs`.
//! * [`codec`]: [`Encoder`] (zero-copy [`Chunk`]s for records), bounded decoding primitives,
//!   [`Encode`]/[`Decode`] traits and errors.
//! * [`header`]: [`RequestHeader`], [`ResponseHeader`] and header-version rules.
//! * [`frame`]: whole frames — [`decode_request`] / [`encode_response`] for the broker,
//!   [`encode_request`] / [`decode_response`] for clients and tests.
//! * [`ErrorCode`]: every Kafka error code (re-exported from the `types` crate). [`ApiKey`]: every Kafka API key.
//! * [`record`]: RecordBatch v2.

#![warn(missing_docs)]

pub mod api_key;
pub mod codec;
pub mod error;
pub mod frame;
pub mod header;
pub mod messages;
#[cfg(test)]
mod oracle_tests;
pub mod record;
#[cfg(test)]
mod sample;
#[cfg(test)]
mod tests;

pub use api_key::ApiKey;
pub use codec::{Chunk, Decode, DecodeError, Encode, EncodeError, Encoder};
pub use error::ErrorCode;
pub use frame::{decode_request, decode_response, encode_request, encode_response, MAX_FRAME_SIZE};
pub use header::{request_header_version, response_header_version, RequestHeader, ResponseHeader};
pub use messages::{supported_versions, RequestBody, ResponseBody, IMPLEMENTED_APIS};
