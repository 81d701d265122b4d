//! Compression codecs of RecordBatch v2 (attributes bits 0–2). The records section of a batch
//! (everything after the 61-byte header) is compressed as one unit.
//!
//! - gzip (1): RFC 1952 stream(s), decoded with `flate2` (concatenated members accepted).
//! - snappy (2): either raw snappy (librdkafka) or xerial-framed (`\x82SNAPPY\0` + version +
//!   compatible version, then `[i32 BE length][raw snappy block]*`, used by the Java client and
//!   franz-go). Both are accepted on decode; the encoder writes the xerial framing by default.
//! - lz4 (3): LZ4 frame format (independent blocks), via `lz4_flex`.
//! - zstd (4): zstd frame(s), via `zstd`.
//!
//! Every decoder is bounded: output beyond `max_len` bytes is an error
//! ([`RecordError::DecompressedTooLarge`]) so a small "zip bomb" can't exhaust memory.

use super::RecordError;
use std::io::{Read, Write};

/// The compression codec recorded in a batch's attributes (bits 0–2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Compression {
    /// 0: no compression.
    None,
    /// 1: gzip.
    Gzip,
    /// 2: snappy.
    Snappy,
    /// 3: lz4 (frame format).
    Lz4,
    /// 4: zstd (needs Produce v7+ / Fetch v10+).
    Zstd,
}

impl Compression {
    /// All codecs, in id order.
    pub const ALL: [Compression; 5] = [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ];

    /// Decodes attribute bits 0–2. Ids 5–7 → [`RecordError::UnsupportedCompression`].
    pub fn from_id(id: u8) -> Result<Self, RecordError> {
        Ok(match id {
            0 => Compression::None,
            1 => Compression::Gzip,
            2 => Compression::Snappy,
            3 => Compression::Lz4,
            4 => Compression::Zstd,
            other => return Err(RecordError::UnsupportedCompression(other)),
        })
    }

    /// The attribute id (0–4).
    pub fn id(self) -> u8 {
        match self {
            Compression::None => 0,
            Compression::Gzip => 1,
            Compression::Snappy => 2,
            Compression::Lz4 => 3,
            Compression::Zstd => 4,
        }
    }
}

const XERIAL_MAGIC: [u8; 8] = [0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0];
const XERIAL_HEADER_LEN: usize = 16;
/// Block size the xerial encoder uses (32 KiB, as snappy-java's default).
const XERIAL_BLOCK: usize = 32 * 1024;
/// Largest zstd window we accept (2^27 = 128 MiB, libzstd's own default limit).
const ZSTD_WINDOW_LOG_MAX: u32 = 27;

fn codec_err(codec: &str, e: impl std::fmt::Display) -> RecordError {
    RecordError::Corrupt(format!("{codec} decompression failed: {e}"))
}

/// Reads `r` to the end, failing once more than `max_len` bytes come out.
fn read_bounded(r: impl Read, max_len: usize, codec: &str) -> Result<Vec<u8>, RecordError> {
    let mut out = Vec::new();
    let n = r
        .take(max_len as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| codec_err(codec, e))?;
    if n > max_len {
        return Err(RecordError::DecompressedTooLarge(max_len));
    }
    Ok(out)
}

/// Decompresses `data` compressed with `codec`, producing at most `max_len` bytes.
/// Errors: [`RecordError::Corrupt`] for undecodable input, [`RecordError::DecompressedTooLarge`].
pub fn decompress(codec: Compression, data: &[u8], max_len: usize) -> Result<Vec<u8>, RecordError> {
    match codec {
        Compression::None => {
            if data.len() > max_len {
                return Err(RecordError::DecompressedTooLarge(max_len));
            }
            Ok(data.to_vec())
        }
        Compression::Gzip => read_bounded(flate2::read::MultiGzDecoder::new(data), max_len, "gzip"),
        Compression::Snappy => {
            if data.starts_with(&XERIAL_MAGIC) {
                decompress_xerial(data, max_len)
            } else {
                let mut out = Vec::new();
                snappy_raw_into(data, max_len, &mut out)?;
                Ok(out)
            }
        }
        Compression::Lz4 => read_bounded(lz4_flex::frame::FrameDecoder::new(data), max_len, "lz4"),
        Compression::Zstd => {
            let mut dec =
                zstd::stream::read::Decoder::with_buffer(data).map_err(|e| codec_err("zstd", e))?;
            dec.window_log_max(ZSTD_WINDOW_LOG_MAX)
                .map_err(|e| codec_err("zstd", e))?;
            read_bounded(dec, max_len, "zstd")
        }
    }
}

fn snappy_raw_into(block: &[u8], max_len: usize, out: &mut Vec<u8>) -> Result<(), RecordError> {
    let n = snap::raw::decompress_len(block).map_err(|e| codec_err("snappy", e))?;
    if out.len().saturating_add(n) > max_len {
        return Err(RecordError::DecompressedTooLarge(max_len));
    }
    let start = out.len();
    out.resize(start + n, 0);
    let written = snap::raw::Decoder::new()
        .decompress(block, &mut out[start..])
        .map_err(|e| codec_err("snappy", e))?;
    out.truncate(start + written);
    Ok(())
}

fn decompress_xerial(data: &[u8], max_len: usize) -> Result<Vec<u8>, RecordError> {
    if data.len() < XERIAL_HEADER_LEN {
        return Err(codec_err("snappy", "truncated xerial header"));
    }
    let mut pos = XERIAL_HEADER_LEN;
    let mut out = Vec::new();
    while pos < data.len() {
        let Some(len_bytes) = data.get(pos..pos + 4) else {
            return Err(codec_err("snappy", "truncated xerial block length"));
        };
        let len = i32::from_be_bytes(len_bytes.try_into().expect("4 bytes"));
        pos += 4;
        if len < 0 || len as usize > data.len() - pos {
            return Err(codec_err("snappy", "xerial block length out of range"));
        }
        snappy_raw_into(&data[pos..pos + len as usize], max_len, &mut out)?;
        pos += len as usize;
    }
    Ok(out)
}

/// Compresses `data` with `codec`. Snappy output is xerial-framed when `snappy_xerial`, raw
/// otherwise. lz4 output is one LZ4 frame with independent 64 KiB blocks and no checksums.
pub fn compress(
    codec: Compression,
    data: &[u8],
    snappy_xerial: bool,
) -> Result<Vec<u8>, RecordError> {
    let io = |e: std::io::Error| RecordError::Corrupt(format!("compression failed: {e}"));
    Ok(match codec {
        Compression::None => data.to_vec(),
        Compression::Gzip => {
            let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            enc.write_all(data).map_err(io)?;
            enc.finish().map_err(io)?
        }
        Compression::Snappy if !snappy_xerial => snap::raw::Encoder::new()
            .compress_vec(data)
            .map_err(|e| RecordError::Corrupt(format!("snappy compression failed: {e}")))?,
        Compression::Snappy => {
            let mut out = Vec::with_capacity(data.len() / 2 + XERIAL_HEADER_LEN);
            out.extend_from_slice(&XERIAL_MAGIC);
            out.extend_from_slice(&1i32.to_be_bytes());
            out.extend_from_slice(&1i32.to_be_bytes());
            let mut enc = snap::raw::Encoder::new();
            for chunk in data.chunks(XERIAL_BLOCK) {
                let c = enc
                    .compress_vec(chunk)
                    .map_err(|e| RecordError::Corrupt(format!("snappy compression failed: {e}")))?;
                out.extend_from_slice(&(c.len() as i32).to_be_bytes());
                out.extend_from_slice(&c);
            }
            out
        }
        Compression::Lz4 => {
            let mut enc = lz4_flex::frame::FrameEncoder::new(Vec::new());
            enc.write_all(data).map_err(io)?;
            enc.finish()
                .map_err(|e| RecordError::Corrupt(format!("lz4 compression failed: {e}")))?
        }
        Compression::Zstd => zstd::bulk::compress(data, 3).map_err(io)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_all_codecs() {
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        for codec in Compression::ALL {
            for xerial in [false, true] {
                let c = compress(codec, &data, xerial).unwrap();
                assert_eq!(
                    decompress(codec, &c, data.len()).unwrap(),
                    data,
                    "{codec:?}"
                );
                assert!(matches!(
                    decompress(codec, &c, data.len() - 1),
                    Err(RecordError::DecompressedTooLarge(_))
                ));
            }
        }
    }

    #[test]
    fn zip_bomb_is_bounded() {
        let data = vec![0u8; 50 << 20];
        for codec in [
            Compression::Gzip,
            Compression::Snappy,
            Compression::Lz4,
            Compression::Zstd,
        ] {
            let c = compress(codec, &data, true).unwrap();
            assert!(matches!(
                decompress(codec, &c, 1 << 20),
                Err(RecordError::DecompressedTooLarge(_))
            ));
        }
    }

    #[test]
    fn garbage_is_error() {
        for codec in [
            Compression::Gzip,
            Compression::Snappy,
            Compression::Lz4,
            Compression::Zstd,
        ] {
            assert!(decompress(codec, b"definitely not compressed data", 1000).is_err());
        }
        let mut x = XERIAL_MAGIC.to_vec();
        x.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 1, 0x7f, 0xff, 0xff, 0xff]);
        assert!(decompress(Compression::Snappy, &x, 1000).is_err());
    }
}
