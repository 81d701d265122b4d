//! Feeds arbitrary bytes to `protocol::decode_request` (the bytes after a frame's size prefix).
//! Any panic, hang or huge allocation is a bug (pitfall 11). A successful decode must also
//! re-encode (for the versions we support every decoded body is encodable).
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let frame = Bytes::copy_from_slice(data);
    if let Ok((header, body)) = protocol::decode_request(frame) {
        let _ = protocol::RequestHeader::peek(data);
        // Re-encoding must not panic; it may fail only for nulls in non-nullable positions,
        // which decoding never produces.
        protocol::encode_request(&header, &body).expect("decoded request re-encodes");
    }
});
