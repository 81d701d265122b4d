//! Whole frames: a 4-byte INT32 size, then a header, then a body. Source: Kafka protocol
//! guide, "Requests and Responses".
//!
//! Frames handed to [`decode_request`] / [`decode_response`] are the bytes AFTER the size
//! prefix; the network layer reads the prefix, rejects sizes outside `1..=MAX_FRAME_SIZE`
//! (pitfall 11) and then reads exactly that many bytes.

use crate::api_key::ApiKey;
use crate::codec::*;
use crate::header::*;
use crate::messages::{supported_versions, RequestBody, ResponseBody};
use bytes::{Buf, Bytes};

/// Largest request frame (bytes after the size prefix) a broker should accept by default:
/// 100 MiB, Kafka's `socket.request.max.bytes` default (104857600).
pub const MAX_FRAME_SIZE: usize = 104_857_600;

/// Decode a request frame (without its size prefix) into its header and body.
///
/// Errors: [`DecodeError::UnsupportedApiKey`] for a key Kafka does not define or this codec does
/// not implement; [`DecodeError::UnsupportedVersion`] for a version outside
/// [`supported_versions`] (the header is still readable with [`RequestHeader::peek`], so the
/// broker can answer ApiVersions with UNSUPPORTED_VERSION — pitfall 1);
/// [`DecodeError::Malformed`] for anything else. Trailing bytes after the body are ignored, as Kafka
/// ignores them.
pub fn decode_request(frame: Bytes) -> Result<(RequestHeader, RequestBody), DecodeError> {
    let (key, version, _) = RequestHeader::peek(&frame)
        .ok_or_else(|| DecodeError::Malformed("frame shorter than a request header".into()))?;
    let api = ApiKey::from_i16(key).ok_or(DecodeError::UnsupportedApiKey(key))?;
    let (lo, hi) = supported_versions(api).ok_or(DecodeError::UnsupportedApiKey(key))?;
    if !(lo..=hi).contains(&version) {
        return Err(DecodeError::UnsupportedVersion {
            api_key: key,
            version,
        });
    }
    let mut buf = frame;
    let header = RequestHeader::decode(&mut buf, request_header_version(api, version))?;
    // Bytes after the body are ignored, as Apache Kafka ignores them: librdkafka 2.12 sends three extra
    // bytes after a Metadata v13 body that lists all topics, and Kafka serves it.
    let body = RequestBody::decode(api, version, &mut buf)?;
    Ok((header, body))
}

/// Encode a full response frame: size prefix, response header (version from
/// [`response_header_version`]) and `body` in `api_version`. Records in the body become their
/// own chunks (file slices stay [`Chunk::File`] for `sendfile`).
///
/// For an ApiVersions request above our maximum, answer with `api_version` 0 (pitfall 1).
pub fn encode_response(
    correlation_id: i32,
    api_key: ApiKey,
    api_version: i16,
    body: &ResponseBody,
) -> Result<Vec<Chunk>, EncodeError> {
    if body.api_key() != api_key {
        return Err(EncodeError::BodyMismatch(api_key as i16));
    }
    let mut enc = Encoder::with_size_prefix();
    let header = ResponseHeader {
        correlation_id,
        unknown_tagged_fields: Vec::new(),
    };
    header.encode(&mut enc, response_header_version(api_key, api_version))?;
    body.encode(&mut enc, api_version)?;
    Ok(enc.finish())
}

/// Encode a full request frame (with size prefix) for `header.request_api_key` /
/// `header.request_api_version`. For clients and tests; File records are not allowed.
pub fn encode_request(header: &RequestHeader, body: &RequestBody) -> Result<Bytes, EncodeError> {
    let api = body.api_key();
    if api as i16 != header.request_api_key {
        return Err(EncodeError::BodyMismatch(header.request_api_key));
    }
    let version = header.request_api_version;
    let mut enc = Encoder::with_size_prefix();
    header.encode(&mut enc, request_header_version(api, version))?;
    body.encode(&mut enc, version)?;
    enc.into_bytes()
}

/// Decode a response frame (without its size prefix) to a request of `api_key` in `version`.
/// Trailing bytes are [`DecodeError::Malformed`].
pub fn decode_response(
    api_key: ApiKey,
    version: i16,
    frame: Bytes,
) -> Result<(ResponseHeader, ResponseBody), DecodeError> {
    let mut buf = frame;
    let header = ResponseHeader::decode(&mut buf, response_header_version(api_key, version))?;
    let body = ResponseBody::decode(api_key, version, &mut buf)?;
    if buf.has_remaining() {
        return Err(DecodeError::Malformed(format!(
            "{} trailing bytes after response body",
            buf.remaining()
        )));
    }
    Ok((header, body))
}
