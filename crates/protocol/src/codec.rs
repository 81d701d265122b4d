//! Primitive encoding and bounded decoding of the Kafka wire types.
//!
//! Source: Kafka protocol guide, "Protocol Primitive Types" and KIP-482 (flexible versions:
//! compact strings/arrays/bytes, unsigned varints and tagged fields).
//!
//! Decoding is bounded (pitfall 11): every length and count read from the wire is checked
//! against the bytes that remain before anything is allocated, so a hostile frame can never
//! make us allocate more than a small multiple of its own size.

use crate::record::{FileSlice, Records};
use bytes::{Buf, BufMut, Bytes, BytesMut};
use std::fmt;
use uuid::Uuid;

/// Error while decoding a frame.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The API key is not one this codec knows (or not one Kafka defines).
    #[error("unsupported API key {0}")]
    UnsupportedApiKey(i16),
    /// The API key is known but the version is outside the range this codec supports.
    #[error("unsupported version {version} for API key {api_key}")]
    UnsupportedVersion {
        /// Raw API key.
        api_key: i16,
        /// Requested version.
        version: i16,
    },
    /// The bytes do not form a valid message: truncated, negative lengths, counts larger than
    /// the remaining bytes, invalid UTF-8, trailing bytes...
    #[error("malformed frame: {0}")]
    Malformed(String),
}

/// Error while encoding a message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EncodeError {
    /// The message type does not exist in the requested version.
    #[error("unsupported version {version} for API key {api_key}")]
    UnsupportedVersion {
        /// Raw API key.
        api_key: i16,
        /// Requested version.
        version: i16,
    },
    /// A field holds null (`None`) in a version where the field is not nullable.
    #[error("field {0} is null but not nullable in this version")]
    NullNotAllowed(&'static str),
    /// A length does not fit the wire representation (e.g. a string over 32767 bytes).
    #[error("value too large: {0}")]
    TooLarge(&'static str),
    /// A tagged field contained file-backed records (cannot be measured up front).
    #[error("file-backed records are not allowed in tagged fields")]
    FileInTaggedField,
    /// The body does not belong to the API key it is encoded for.
    #[error("body does not match API key {0}")]
    BodyMismatch(i16),
}

fn malformed(what: &str) -> DecodeError {
    DecodeError::Malformed(what.to_string())
}

/// Encode a value for one API version.
pub trait Encode {
    /// Append the wire form of `self` in `version` to `enc`.
    fn encode(&self, enc: &mut Encoder, version: i16) -> Result<(), EncodeError>;
}

/// Decode a value for one API version.
pub trait Decode: Sized {
    /// Read `Self` in `version` from the front of `buf`, advancing it.
    fn decode(buf: &mut Bytes, version: i16) -> Result<Self, DecodeError>;
}

/// One piece of an encoded frame: bytes in memory or a range of a segment file. A response is
/// written to the socket chunk by chunk (`writev` for memory, `sendfile` for files).
#[derive(Debug, Clone)]
pub enum Chunk {
    /// Bytes in memory.
    Bytes(Bytes),
    /// A file range, sent without copying it through user space.
    File(FileSlice),
}

impl Chunk {
    /// Length in bytes.
    pub fn len(&self) -> usize {
        match self {
            Chunk::Bytes(b) => b.len(),
            Chunk::File(f) => f.len as usize,
        }
    }

    /// True when the chunk has no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Builds an encoded message: a growing buffer plus the chunks already closed off. `records`
/// values are never copied: memory records become their own [`Chunk::Bytes`], file records a
/// [`Chunk::File`].
#[derive(Debug, Default)]
pub struct Encoder {
    buf: BytesMut,
    chunks: Vec<Chunk>,
    chunk_bytes: usize,
    size_prefix: bool,
}

impl Encoder {
    /// An empty encoder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Total bytes encoded so far (memory and file chunks).
    pub fn len(&self) -> usize {
        self.chunk_bytes + self.buf.len()
    }

    /// True when nothing has been encoded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn flush(&mut self) {
        if !self.buf.is_empty() {
            let b = self.buf.split().freeze();
            self.chunk_bytes += b.len();
            self.chunks.push(Chunk::Bytes(b));
        }
    }

    /// An encoder whose output starts with a 4-byte INT32 size prefix (the frame size, not
    /// counting the prefix itself), filled in by [`Encoder::finish`].
    pub fn with_size_prefix() -> Self {
        let mut e = Self::new();
        e.size_prefix = true;
        e.buf.put_i32(0);
        e
    }

    /// Close the encoder and return its chunks, in order. With a size prefix, a frame larger
    /// than `i32::MAX` bytes gets the prefix `i32::MAX` (callers bound their responses).
    pub fn finish(mut self) -> Vec<Chunk> {
        if self.size_prefix {
            let size = i32::try_from(self.len() - 4)
                .unwrap_or(i32::MAX)
                .to_be_bytes();
            if self.chunks.is_empty() {
                self.buf[..4].copy_from_slice(&size);
            } else if let Some(Chunk::Bytes(first)) = self.chunks.first_mut() {
                // The prefix was flushed with the first chunk: rebuild that (small) chunk.
                let mut b = BytesMut::from(&first[..]);
                b[..4].copy_from_slice(&size);
                *first = b.freeze();
            }
        }
        self.flush();
        self.chunks
    }

    /// Close the encoder and return its bytes; fails if it holds file chunks.
    pub fn into_bytes(self) -> Result<Bytes, EncodeError> {
        if self.chunks.is_empty() && !self.size_prefix {
            return Ok(self.buf.freeze());
        }
        let mut out = BytesMut::with_capacity(self.len());
        for c in self.finish() {
            match c {
                Chunk::Bytes(b) => out.put_slice(&b),
                Chunk::File(_) => return Err(EncodeError::FileInTaggedField),
            }
        }
        Ok(out.freeze())
    }

    /// Append raw bytes (copied).
    pub fn put_slice(&mut self, b: &[u8]) {
        self.buf.put_slice(b);
    }

    /// Append an INT8.
    pub fn put_i8(&mut self, v: i8) {
        self.buf.put_i8(v);
    }
    /// Append an INT16 (big endian).
    pub fn put_i16(&mut self, v: i16) {
        self.buf.put_i16(v);
    }
    /// Append an INT32 (big endian).
    pub fn put_i32(&mut self, v: i32) {
        self.buf.put_i32(v);
    }
    /// Append an INT64 (big endian).
    pub fn put_i64(&mut self, v: i64) {
        self.buf.put_i64(v);
    }
    /// Append a UINT16 (big endian).
    pub fn put_u16(&mut self, v: u16) {
        self.buf.put_u16(v);
    }
    /// Append a FLOAT64 (IEEE 754, big endian).
    pub fn put_f64(&mut self, v: f64) {
        self.buf.put_f64(v);
    }
    /// Append a BOOLEAN (one byte, 0 or 1).
    pub fn put_bool(&mut self, v: bool) {
        self.buf.put_u8(v as u8);
    }
    /// Append a UUID (16 bytes).
    pub fn put_uuid(&mut self, v: &Uuid) {
        self.buf.put_slice(v.as_bytes());
    }

    /// Append an UNSIGNED_VARINT (LEB128, at most 5 bytes).
    pub fn put_uvarint(&mut self, mut v: u32) {
        while v >= 0x80 {
            self.buf.put_u8((v as u8 & 0x7f) | 0x80);
            v >>= 7;
        }
        self.buf.put_u8(v as u8);
    }

    /// Append a VARINT (zigzag LEB128).
    pub fn put_varint(&mut self, v: i32) {
        self.put_uvarint(((v << 1) ^ (v >> 31)) as u32);
    }

    /// Append an UNSIGNED_VARLONG / VARLONG (zigzag LEB128, at most 10 bytes).
    pub fn put_varlong(&mut self, v: i64) {
        let mut u = ((v << 1) ^ (v >> 63)) as u64;
        while u >= 0x80 {
            self.buf.put_u8((u as u8 & 0x7f) | 0x80);
            u >>= 7;
        }
        self.buf.put_u8(u as u8);
    }

    fn put_len(
        &mut self,
        len: Option<usize>,
        flexible: bool,
        short: bool,
    ) -> Result<(), EncodeError> {
        match (len, flexible) {
            (None, true) => self.put_uvarint(0),
            (Some(n), true) => {
                let n = u32::try_from(n)
                    .ok()
                    .and_then(|n| n.checked_add(1))
                    .ok_or(EncodeError::TooLarge("length"))?;
                self.put_uvarint(n);
            }
            (None, false) if short => self.put_i16(-1),
            (None, false) => self.put_i32(-1),
            (Some(n), false) if short => {
                self.put_i16(i16::try_from(n).map_err(|_| EncodeError::TooLarge("string"))?)
            }
            (Some(n), false) => {
                self.put_i32(i32::try_from(n).map_err(|_| EncodeError::TooLarge("length"))?)
            }
        }
        Ok(())
    }

    /// Append a STRING (INT16 length) or COMPACT_STRING (flexible).
    pub fn put_string(&mut self, s: &str, flexible: bool) -> Result<(), EncodeError> {
        self.put_len(Some(s.len()), flexible, true)?;
        self.buf.put_slice(s.as_bytes());
        Ok(())
    }

    /// Append a NULLABLE_STRING or COMPACT_NULLABLE_STRING.
    pub fn put_nullable_string(
        &mut self,
        s: Option<&str>,
        flexible: bool,
    ) -> Result<(), EncodeError> {
        match s {
            Some(s) => self.put_string(s, flexible),
            None => self.put_len(None, flexible, true),
        }
    }

    /// Append BYTES (INT32 length) or COMPACT_BYTES.
    pub fn put_bytes(&mut self, b: &[u8], flexible: bool) -> Result<(), EncodeError> {
        self.put_len(Some(b.len()), flexible, false)?;
        self.buf.put_slice(b);
        Ok(())
    }

    /// Append NULLABLE_BYTES or COMPACT_NULLABLE_BYTES.
    pub fn put_nullable_bytes(
        &mut self,
        b: Option<&[u8]>,
        flexible: bool,
    ) -> Result<(), EncodeError> {
        match b {
            Some(b) => self.put_bytes(b, flexible),
            None => self.put_len(None, flexible, false),
        }
    }

    /// Append the payload of a records value without its length (zero copy: memory bytes become
    /// their own chunk, file slices a [`Chunk::File`]).
    pub fn put_records(&mut self, r: &Records) {
        match r {
            Records::Memory(b) if b.len() <= 64 => self.buf.put_slice(b),
            Records::Memory(b) => {
                self.flush();
                self.chunk_bytes += b.len();
                self.chunks.push(Chunk::Bytes(b.clone()));
            }
            Records::File(f) => {
                if f.len == 0 {
                    return;
                }
                self.flush();
                self.chunk_bytes += f.len as usize;
                self.chunks.push(Chunk::File(f.clone()));
            }
        }
    }

    /// Append a RECORDS field: (compact) nullable length followed by the records.
    pub fn put_nullable_records(
        &mut self,
        r: Option<&Records>,
        flexible: bool,
    ) -> Result<(), EncodeError> {
        match r {
            Some(r) => {
                self.put_len(Some(r.len()), flexible, false)?;
                self.put_records(r);
                Ok(())
            }
            None => self.put_len(None, flexible, false),
        }
    }

    /// Append an ARRAY / COMPACT_ARRAY, encoding each element with `f`.
    pub fn put_array<T>(
        &mut self,
        items: &[T],
        flexible: bool,
        mut f: impl FnMut(&mut Encoder, &T) -> Result<(), EncodeError>,
    ) -> Result<(), EncodeError> {
        self.put_len(Some(items.len()), flexible, false)?;
        for item in items {
            f(self, item)?;
        }
        Ok(())
    }

    /// Append a nullable ARRAY / COMPACT_ARRAY.
    pub fn put_nullable_array<T>(
        &mut self,
        items: Option<&[T]>,
        flexible: bool,
        f: impl FnMut(&mut Encoder, &T) -> Result<(), EncodeError>,
    ) -> Result<(), EncodeError> {
        match items {
            Some(items) => self.put_array(items, flexible, f),
            None => self.put_len(None, flexible, false),
        }
    }

    /// Append a tagged-field section: `known` (already encoded, tag order) merged with
    /// `unknown` (kept from decoding), sorted by tag as the protocol requires.
    pub fn put_tagged_fields(
        &mut self,
        mut known: Vec<(u32, Bytes)>,
        unknown: &[(u32, Bytes)],
    ) -> Result<(), EncodeError> {
        known.extend(unknown.iter().cloned());
        known.sort_by_key(|(t, _)| *t);
        self.put_uvarint(
            u32::try_from(known.len()).map_err(|_| EncodeError::TooLarge("tagged fields"))?,
        );
        for (tag, data) in &known {
            self.put_uvarint(*tag);
            self.put_uvarint(
                u32::try_from(data.len()).map_err(|_| EncodeError::TooLarge("tagged field"))?,
            );
            self.buf.put_slice(data);
        }
        Ok(())
    }
}

/// Encode one tagged field's value into its own buffer (its size must precede it on the wire).
pub fn encode_tagged(
    f: impl FnOnce(&mut Encoder) -> Result<(), EncodeError>,
) -> Result<Bytes, EncodeError> {
    let mut e = Encoder::new();
    f(&mut e)?;
    e.into_bytes()
}

/// Materialize chunks into one buffer, reading file chunks with `pread` (tests only: this crate does no I/O;
/// the broker sends file chunks with `sendfile`).
#[cfg(test)]
pub(crate) fn chunks_to_bytes(chunks: &[Chunk]) -> std::io::Result<Bytes> {
    use std::os::unix::fs::FileExt;
    let total: usize = chunks.iter().map(Chunk::len).sum();
    let mut out = BytesMut::with_capacity(total);
    for c in chunks {
        match c {
            Chunk::Bytes(b) => out.put_slice(b),
            Chunk::File(f) => {
                let start = out.len();
                out.resize(start + f.len as usize, 0);
                f.file.read_exact_at(&mut out[start..], f.position)?;
            }
        }
    }
    Ok(out.freeze())
}

// ---------------------------------------------------------------------------------------------
// Decoding. Every function checks `remaining()` before reading or allocating.

fn need(buf: &Bytes, n: usize, what: &str) -> Result<(), DecodeError> {
    if buf.remaining() < n {
        Err(DecodeError::Malformed(format!(
            "truncated {what}: need {n} bytes, have {}",
            buf.remaining()
        )))
    } else {
        Ok(())
    }
}

/// Read an INT8.
pub fn get_i8(buf: &mut Bytes) -> Result<i8, DecodeError> {
    need(buf, 1, "int8")?;
    Ok(buf.get_i8())
}
/// Read an INT16.
pub fn get_i16(buf: &mut Bytes) -> Result<i16, DecodeError> {
    need(buf, 2, "int16")?;
    Ok(buf.get_i16())
}
/// Read an INT32.
pub fn get_i32(buf: &mut Bytes) -> Result<i32, DecodeError> {
    need(buf, 4, "int32")?;
    Ok(buf.get_i32())
}
/// Read an INT64.
pub fn get_i64(buf: &mut Bytes) -> Result<i64, DecodeError> {
    need(buf, 8, "int64")?;
    Ok(buf.get_i64())
}
/// Read a UINT16.
pub fn get_u16(buf: &mut Bytes) -> Result<u16, DecodeError> {
    need(buf, 2, "uint16")?;
    Ok(buf.get_u16())
}
/// Read a FLOAT64.
pub fn get_f64(buf: &mut Bytes) -> Result<f64, DecodeError> {
    need(buf, 8, "float64")?;
    Ok(buf.get_f64())
}
/// Read a BOOLEAN (any non-zero byte is true, as Kafka does).
pub fn get_bool(buf: &mut Bytes) -> Result<bool, DecodeError> {
    need(buf, 1, "bool")?;
    Ok(buf.get_u8() != 0)
}
/// Read a UUID.
pub fn get_uuid(buf: &mut Bytes) -> Result<Uuid, DecodeError> {
    need(buf, 16, "uuid")?;
    let mut b = [0u8; 16];
    buf.copy_to_slice(&mut b);
    Ok(Uuid::from_bytes(b))
}

/// Read an UNSIGNED_VARINT; more than 5 bytes is malformed.
pub fn get_uvarint(buf: &mut Bytes) -> Result<u32, DecodeError> {
    let mut v: u32 = 0;
    for i in 0..5 {
        need(buf, 1, "varint")?;
        let b = buf.get_u8();
        if i == 4 && b > 0x0f {
            return Err(malformed("varint overflows 32 bits"));
        }
        v |= ((b & 0x7f) as u32) << (7 * i);
        if b & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err(malformed("varint longer than 5 bytes"))
}

/// Read a VARINT (zigzag).
pub fn get_varint(buf: &mut Bytes) -> Result<i32, DecodeError> {
    let u = get_uvarint(buf)?;
    Ok(((u >> 1) as i32) ^ -((u & 1) as i32))
}

/// Read a VARLONG (zigzag); more than 10 bytes is malformed.
pub fn get_varlong(buf: &mut Bytes) -> Result<i64, DecodeError> {
    let mut v: u64 = 0;
    for i in 0..10 {
        need(buf, 1, "varlong")?;
        let b = buf.get_u8();
        if i == 9 && b > 0x01 {
            return Err(malformed("varlong overflows 64 bits"));
        }
        v |= ((b & 0x7f) as u64) << (7 * i);
        if b & 0x80 == 0 {
            return Ok(((v >> 1) as i64) ^ -((v & 1) as i64));
        }
    }
    Err(malformed("varlong longer than 10 bytes"))
}

/// Read a length: `None` for null. Non-flexible: INT16 (`short`) or INT32, -1 = null, other
/// negatives malformed. Flexible: UNSIGNED_VARINT N+1, 0 = null. The length is checked against
/// the remaining bytes when `bytes_per_item` > 0 (each item takes at least that many bytes).
fn get_len(
    buf: &mut Bytes,
    flexible: bool,
    short: bool,
    what: &str,
) -> Result<Option<usize>, DecodeError> {
    let n: i64 = if flexible {
        get_uvarint(buf)? as i64 - 1
    } else if short {
        get_i16(buf)? as i64
    } else {
        get_i32(buf)? as i64
    };
    if n == -1 {
        return Ok(None);
    }
    if n < 0 {
        return Err(DecodeError::Malformed(format!(
            "negative {what} length {n}"
        )));
    }
    let n = n as usize;
    if n > buf.remaining() {
        return Err(DecodeError::Malformed(format!(
            "{what} length {n} exceeds the {} remaining bytes",
            buf.remaining()
        )));
    }
    Ok(Some(n))
}

fn non_null<T>(v: Option<T>, what: &str) -> Result<T, DecodeError> {
    v.ok_or_else(|| DecodeError::Malformed(format!("null {what} where not nullable")))
}

fn utf8(b: Bytes) -> Result<String, DecodeError> {
    String::from_utf8(b.to_vec()).map_err(|_| malformed("string is not valid UTF-8"))
}

/// Read a STRING / COMPACT_STRING (null is malformed).
pub fn get_string(buf: &mut Bytes, flexible: bool) -> Result<String, DecodeError> {
    let n = non_null(get_len(buf, flexible, true, "string")?, "string")?;
    utf8(buf.split_to(n))
}

/// Read a NULLABLE_STRING / COMPACT_NULLABLE_STRING.
pub fn get_nullable_string(buf: &mut Bytes, flexible: bool) -> Result<Option<String>, DecodeError> {
    match get_len(buf, flexible, true, "string")? {
        None => Ok(None),
        Some(n) => utf8(buf.split_to(n)).map(Some),
    }
}

/// Read BYTES / COMPACT_BYTES (zero copy; null is malformed).
pub fn get_bytes(buf: &mut Bytes, flexible: bool) -> Result<Bytes, DecodeError> {
    let n = non_null(get_len(buf, flexible, false, "bytes")?, "bytes")?;
    Ok(buf.split_to(n))
}

/// Read NULLABLE_BYTES / COMPACT_NULLABLE_BYTES (zero copy).
pub fn get_nullable_bytes(buf: &mut Bytes, flexible: bool) -> Result<Option<Bytes>, DecodeError> {
    Ok(get_len(buf, flexible, false, "bytes")?.map(|n| buf.split_to(n)))
}

/// Read a RECORDS field (nullable) as in-memory records (zero copy).
pub fn get_nullable_records(
    buf: &mut Bytes,
    flexible: bool,
) -> Result<Option<Records>, DecodeError> {
    Ok(get_nullable_bytes(buf, flexible)?.map(Records::Memory))
}

/// Read an ARRAY / COMPACT_ARRAY (null is malformed). The count must not exceed the remaining
/// bytes; capacity is reserved only up to a small bound.
pub fn get_array<T>(
    buf: &mut Bytes,
    flexible: bool,
    f: impl FnMut(&mut Bytes) -> Result<T, DecodeError>,
) -> Result<Vec<T>, DecodeError> {
    non_null(get_nullable_array(buf, flexible, f)?, "array")
}

/// Read a nullable ARRAY / COMPACT_ARRAY.
pub fn get_nullable_array<T>(
    buf: &mut Bytes,
    flexible: bool,
    mut f: impl FnMut(&mut Bytes) -> Result<T, DecodeError>,
) -> Result<Option<Vec<T>>, DecodeError> {
    let Some(n) = get_len(buf, flexible, false, "array")? else {
        return Ok(None);
    };
    let mut v = Vec::with_capacity(n.min(64));
    for _ in 0..n {
        v.push(f(buf)?);
    }
    Ok(Some(v))
}

/// Read the header of a tagged-field section: the count, bounded by the remaining bytes.
pub fn get_tagged_count(buf: &mut Bytes) -> Result<u32, DecodeError> {
    let n = get_uvarint(buf)?;
    if n as usize > buf.remaining() {
        return Err(malformed("tagged field count exceeds the remaining bytes"));
    }
    Ok(n)
}

/// Read one tagged field: `(tag, value bytes)`. Tags must be strictly increasing: `last` holds
/// the previous tag of this section.
pub fn get_tagged_field(
    buf: &mut Bytes,
    last: &mut Option<u32>,
) -> Result<(u32, Bytes), DecodeError> {
    let tag = get_uvarint(buf)?;
    if let Some(prev) = *last {
        if tag <= prev {
            return Err(malformed("tagged fields out of order"));
        }
    }
    *last = Some(tag);
    let size = get_uvarint(buf)? as usize;
    need(buf, size, "tagged field")?;
    Ok((tag, buf.split_to(size)))
}

/// Check that a tagged field's value was consumed entirely.
pub fn expect_empty(buf: &Bytes, what: &str) -> Result<(), DecodeError> {
    if buf.has_remaining() {
        Err(DecodeError::Malformed(format!(
            "{} trailing bytes in {what}",
            buf.remaining()
        )))
    } else {
        Ok(())
    }
}

/// Display helper for hex dumps in error messages.
pub struct Hex<'a>(pub &'a [u8]);

impl fmt::Display for Hex<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uvarint_round_trip_and_limits() {
        for v in [0u32, 1, 127, 128, 300, 16383, 16384, u32::MAX] {
            let mut e = Encoder::new();
            e.put_uvarint(v);
            let mut b = e.into_bytes().unwrap();
            assert_eq!(get_uvarint(&mut b).unwrap(), v);
            assert!(b.is_empty());
        }
        let mut b = Bytes::from_static(&[0xff, 0xff, 0xff, 0xff, 0xff, 0x01]);
        assert!(matches!(
            get_uvarint(&mut b),
            Err(DecodeError::Malformed(_))
        ));
        let mut b = Bytes::from_static(&[0xff, 0xff, 0xff, 0xff, 0x1f]);
        assert!(get_uvarint(&mut b).is_err());
        let mut b = Bytes::from_static(&[0x80]);
        assert!(get_uvarint(&mut b).is_err());
    }

    #[test]
    fn varlong_round_trip_and_limits() {
        for v in [0i64, -1, 1, i64::MIN, i64::MAX, 300, -300] {
            let mut e = Encoder::new();
            e.put_varlong(v);
            let mut b = e.into_bytes().unwrap();
            assert_eq!(get_varlong(&mut b).unwrap(), v);
        }
        let mut b = Bytes::from(vec![0xffu8; 11]);
        assert!(get_varlong(&mut b).is_err());
        for v in [0i32, -1, i32::MIN, i32::MAX] {
            let mut e = Encoder::new();
            e.put_varint(v);
            let mut b = e.into_bytes().unwrap();
            assert_eq!(get_varint(&mut b).unwrap(), v);
        }
    }

    #[test]
    fn huge_lengths_are_malformed() {
        // STRING length 32767 with 2 bytes behind it.
        let mut b = Bytes::from_static(&[0x7f, 0xff, b'a', b'b']);
        assert!(matches!(
            get_string(&mut b, false),
            Err(DecodeError::Malformed(_))
        ));
        // ARRAY count 2^31 - 1.
        let mut b = Bytes::from_static(&[0x7f, 0xff, 0xff, 0xff, 0, 0]);
        assert!(get_array(&mut b, false, get_i8).is_err());
        // ARRAY count -2 (negative, not null).
        let mut b = Bytes::from_static(&[0xff, 0xff, 0xff, 0xfe]);
        assert!(get_nullable_array(&mut b, false, get_i8).is_err());
        // -1 is null.
        let mut b = Bytes::from_static(&[0xff, 0xff, 0xff, 0xff]);
        assert_eq!(get_nullable_array(&mut b, false, get_i8).unwrap(), None);
        // Compact array count 2^31 (varint 0x80000001).
        let mut b = Bytes::from_static(&[0x81, 0x80, 0x80, 0x80, 0x08]);
        assert!(get_array(&mut b, true, get_i8).is_err());
        // null where not nullable.
        let mut b = Bytes::from_static(&[0x00]);
        assert!(get_string(&mut b, true).is_err());
        // huge bytes length
        let mut b = Bytes::from_static(&[0x7f, 0xff, 0xff, 0xff]);
        assert!(get_bytes(&mut b, false).is_err());
    }

    #[test]
    fn records_are_zero_copy_chunks() {
        let big = Bytes::from(vec![7u8; 1000]);
        let mut e = Encoder::new();
        e.put_i32(1);
        e.put_nullable_records(Some(&Records::Memory(big.clone())), false)
            .unwrap();
        e.put_i16(2);
        assert_eq!(e.len(), 4 + 4 + 1000 + 2);
        let chunks = e.finish();
        assert_eq!(chunks.len(), 3);
        match &chunks[1] {
            Chunk::Bytes(b) => assert_eq!(b.as_ptr(), big.as_ptr()),
            _ => panic!("expected memory chunk"),
        }
        let all = chunks_to_bytes(&chunks).unwrap();
        assert_eq!(all.len(), 1010);
    }

    #[test]
    fn file_records_become_file_chunks() {
        use std::io::Write;
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(b"0123456789").unwrap();
        let slice = FileSlice {
            file: std::sync::Arc::new(f),
            position: 2,
            len: 5,
        };
        let mut e = Encoder::new();
        e.put_nullable_records(Some(&Records::File(slice)), true)
            .unwrap();
        assert_eq!(e.len(), 6);
        let chunks = e.finish();
        assert!(matches!(chunks[1], Chunk::File(_)));
        assert_eq!(&chunks_to_bytes(&chunks).unwrap()[..], b"\x0623456");
    }
}
