//! Request and response headers. Source: Kafka protocol guide, "Headers"; KIP-482 (header v2/v1
//! with tagged fields). Request header v1: api key, api version, correlation id, client id
//! (NULLABLE_STRING, never compact); v2 adds tagged fields. Response header v0: correlation id;
//! v1 adds tagged fields. ApiVersions responses always use response header v0 (KIP-511), so
//! that a client can parse the answer to a version it sent above our maximum.

use crate::api_key::ApiKey;
use crate::codec::*;
use crate::messages::{request_flexible_min, response_flexible_min};
use bytes::Bytes;

/// Request header version used by `api_key` in `api_version`: 2 for flexible request versions,
/// 1 otherwise (also for APIs this codec does not implement).
pub fn request_header_version(api_key: ApiKey, api_version: i16) -> i16 {
    match request_flexible_min(api_key) {
        Some(f) if api_version >= f => 2,
        _ => 1,
    }
}

/// Response header version used by `api_key` in `api_version`: 1 for flexible response versions,
/// 0 otherwise. ApiVersions is always 0 (pitfall 1: the header must not change shape, even for
/// v3+, so that clients can read an UNSUPPORTED_VERSION answer).
pub fn response_header_version(api_key: ApiKey, api_version: i16) -> i16 {
    if api_key == ApiKey::ApiVersions {
        return 0;
    }
    match response_flexible_min(api_key) {
        Some(f) if api_version >= f => 1,
        _ => 0,
    }
}

/// The header at the front of every request.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RequestHeader {
    /// API key of the request.
    pub request_api_key: i16,
    /// API version of the request.
    pub request_api_version: i16,
    /// Echoed back in the response header.
    pub correlation_id: i32,
    /// Client id (header v1+; always a non-compact NULLABLE_STRING).
    pub client_id: Option<String>,
    /// Tagged fields unknown to this codec (header v2), kept and re-encoded.
    pub unknown_tagged_fields: Vec<(u32, Bytes)>,
}

impl RequestHeader {
    /// Read `(api_key, api_version, correlation_id)` from the first 8 bytes of a request frame
    /// (the bytes after the 4-byte size prefix) without decoding the rest; `None` if shorter.
    pub fn peek(frame: &[u8]) -> Option<(i16, i16, i32)> {
        if frame.len() < 8 {
            return None;
        }
        let k = i16::from_be_bytes([frame[0], frame[1]]);
        let v = i16::from_be_bytes([frame[2], frame[3]]);
        let c = i32::from_be_bytes([frame[4], frame[5], frame[6], frame[7]]);
        Some((k, v, c))
    }

    /// Encode in header version `header_version` (0, 1 or 2).
    pub fn encode(&self, enc: &mut Encoder, header_version: i16) -> Result<(), EncodeError> {
        enc.put_i16(self.request_api_key);
        enc.put_i16(self.request_api_version);
        enc.put_i32(self.correlation_id);
        if header_version >= 1 {
            enc.put_nullable_string(self.client_id.as_deref(), false)?;
        }
        if header_version >= 2 {
            enc.put_tagged_fields(Vec::new(), &self.unknown_tagged_fields)?;
        }
        Ok(())
    }

    /// Decode in header version `header_version` (0, 1 or 2).
    pub fn decode(buf: &mut Bytes, header_version: i16) -> Result<Self, DecodeError> {
        let mut h = RequestHeader {
            request_api_key: get_i16(buf)?,
            request_api_version: get_i16(buf)?,
            correlation_id: get_i32(buf)?,
            ..Default::default()
        };
        if header_version >= 1 {
            h.client_id = get_nullable_string(buf, false)?;
        }
        if header_version >= 2 {
            let n = get_tagged_count(buf)?;
            let mut last = None;
            for _ in 0..n {
                let f = get_tagged_field(buf, &mut last)?;
                h.unknown_tagged_fields.push(f);
            }
        }
        Ok(h)
    }
}

/// The header at the front of every response.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ResponseHeader {
    /// Correlation id of the request being answered.
    pub correlation_id: i32,
    /// Tagged fields unknown to this codec (header v1), kept and re-encoded.
    pub unknown_tagged_fields: Vec<(u32, Bytes)>,
}

impl ResponseHeader {
    /// Encode in header version `header_version` (0 or 1).
    pub fn encode(&self, enc: &mut Encoder, header_version: i16) -> Result<(), EncodeError> {
        enc.put_i32(self.correlation_id);
        if header_version >= 1 {
            enc.put_tagged_fields(Vec::new(), &self.unknown_tagged_fields)?;
        }
        Ok(())
    }

    /// Decode in header version `header_version` (0 or 1).
    pub fn decode(buf: &mut Bytes, header_version: i16) -> Result<Self, DecodeError> {
        let mut h = ResponseHeader {
            correlation_id: get_i32(buf)?,
            ..Default::default()
        };
        if header_version >= 1 {
            let n = get_tagged_count(buf)?;
            let mut last = None;
            for _ in 0..n {
                let f = get_tagged_field(buf, &mut last)?;
                h.unknown_tagged_fields.push(f);
            }
        }
        Ok(h)
    }
}
