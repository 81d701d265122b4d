//! Zig-zag variable-length integers as used inside RecordBatch v2 records (Kafka protocol guide,
//! "Record": `varint` / `varlong`, protobuf encoding with zig-zag sign mapping).

use super::RecordError;

/// Reads a zig-zag varint (at most 5 bytes) from `buf` at `*pos`, advancing `*pos`.
/// Errors with [`RecordError::InvalidRecord`] when the bytes run out or the encoding is too long.
#[inline]
pub fn read_varint(buf: &[u8], pos: &mut usize) -> Result<i32, RecordError> {
    let raw = read_unsigned(buf, pos, 5)?;
    if raw > u32::MAX as u64 {
        return Err(RecordError::InvalidRecord("varint out of range".into()));
    }
    let raw = raw as u32;
    Ok(((raw >> 1) as i32) ^ -((raw & 1) as i32))
}

/// Reads a zig-zag varlong (at most 10 bytes) from `buf` at `*pos`, advancing `*pos`.
#[inline]
pub fn read_varlong(buf: &[u8], pos: &mut usize) -> Result<i64, RecordError> {
    let raw = read_unsigned(buf, pos, 10)?;
    Ok(((raw >> 1) as i64) ^ -((raw & 1) as i64))
}

/// One- and two-byte encodings (values below 16,384: most lengths, deltas and counts in a batch of small
/// records) take the inlined fast path; longer ones the out-of-line loop.
#[inline(always)]
fn read_unsigned(buf: &[u8], pos: &mut usize, max_len: usize) -> Result<u64, RecordError> {
    if let Some(&b) = buf.get(*pos) {
        if b & 0x80 == 0 {
            *pos += 1;
            return Ok(b as u64);
        }
        // Two bytes (128..16383: a small record's length, a value length, an offset delta): inline too.
        if let Some(&b1) = buf.get(*pos + 1) {
            if b1 & 0x80 == 0 {
                *pos += 2;
                return Ok((b & 0x7f) as u64 | (b1 as u64) << 7);
            }
        }
    }
    read_unsigned_multi(buf, pos, max_len)
}

#[inline(never)]
fn read_unsigned_multi(buf: &[u8], pos: &mut usize, max_len: usize) -> Result<u64, RecordError> {
    let mut value: u64 = 0;
    let mut shift = 0u32;
    for i in 0..max_len {
        let Some(&b) = buf.get(*pos + i) else {
            return Err(RecordError::InvalidRecord("truncated varint".into()));
        };
        value |= ((b & 0x7f) as u64).checked_shl(shift).unwrap_or(0);
        if b & 0x80 == 0 {
            *pos += i + 1;
            return Ok(value);
        }
        shift += 7;
    }
    Err(RecordError::InvalidRecord("varint too long".into()))
}

/// Appends a zig-zag varint.
pub fn write_varint(out: &mut Vec<u8>, v: i32) {
    write_unsigned(out, ((v << 1) ^ (v >> 31)) as u32 as u64);
}

/// Appends a zig-zag varlong.
pub fn write_varlong(out: &mut Vec<u8>, v: i64) {
    write_unsigned(out, ((v << 1) ^ (v >> 63)) as u64);
}

fn write_unsigned(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Size in bytes of the zig-zag varint encoding of `v`.
pub fn varint_size(v: i32) -> usize {
    let mut u = ((v << 1) ^ (v >> 31)) as u32;
    let mut n = 1;
    while u >= 0x80 {
        u >>= 7;
        n += 1;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        for v in [0i32, 1, -1, 63, -64, 64, 300, i32::MAX, i32::MIN] {
            let mut out = Vec::new();
            write_varint(&mut out, v);
            assert_eq!(out.len(), varint_size(v));
            let mut pos = 0;
            assert_eq!(read_varint(&out, &mut pos).unwrap(), v);
            assert_eq!(pos, out.len());
        }
        for v in [0i64, -1, i64::MAX, i64::MIN, 1 << 40] {
            let mut out = Vec::new();
            write_varlong(&mut out, v);
            let mut pos = 0;
            assert_eq!(read_varlong(&out, &mut pos).unwrap(), v);
        }
    }

    #[test]
    fn every_encoding_length_boundary_reads_back() {
        // Zig-zag values around 2^7, 2^14, 2^21 (one-, two-, three-byte encodings), both signs.
        for base in [0i64, 1 << 6, 1 << 13, 1 << 20, 1 << 27] {
            for v in [base - 1, base, base + 1, -base - 1, -base, -base + 1] {
                let mut out = Vec::new();
                write_varlong(&mut out, v);
                out.push(0x55); // what follows is left alone
                let mut pos = 0;
                assert_eq!(read_varlong(&out, &mut pos).unwrap(), v, "{v}");
                assert_eq!(pos, out.len() - 1, "{v}");
            }
        }
        // A two-byte prefix cut short is an error, not a one-byte read.
        assert!(read_varint(&[0x80], &mut 0).is_err());
    }

    #[test]
    fn bad_input() {
        let mut pos = 0;
        assert!(read_varint(&[0x80, 0x80], &mut pos).is_err());
        assert!(read_varint(&[0xff; 6], &mut pos).is_err());
        assert!(read_varint(&[0xff, 0xff, 0xff, 0xff, 0x7f], &mut pos).is_err());
        assert!(read_varlong(&[0xff; 11], &mut pos).is_err());
    }
}
