//! The cleaner's offset map (Kafka's `SkimpyOffsetMap`): key hash → offset of the key's latest record over
//! the dirty section, in a memory bound (`log.cleaner.dedupe.buffer.size`).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};

/// Hasher for keys that are already uniform hashes: takes the first u64 written.
#[derive(Default)]
struct PassThrough(u64);

impl Hasher for PassThrough {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ *b as u64;
        }
    }
    fn write_u64(&mut self, v: u64) {
        if self.0 == 0 {
            self.0 = v;
        }
    }
}

/// Bounded map from key hash (128 bits) to the offset of the key's latest record (Kafka's
/// `SkimpyOffsetMap`: a hash collision may wrongly drop a record, with probability ~2^-128
/// per pair).
pub(crate) struct OffsetMap {
    map: HashMap<(u64, u64), i64, BuildHasherDefault<PassThrough>>,
    max_entries: usize,
}

/// Bytes per hash-table bucket: 24-byte entry + control byte.
const BUCKET_BYTES: usize = 25;

fn key_hash(key: &[u8]) -> (u64, u64) {
    let mut a = std::collections::hash_map::DefaultHasher::new();
    0xA5u8.hash(&mut a);
    key.hash(&mut a);
    let mut b = std::collections::hash_map::DefaultHasher::new();
    0x5Au8.hash(&mut b);
    key.hash(&mut b);
    (a.finish(), b.finish())
}

impl OffsetMap {
    /// A map using at most about `memory` bytes: the largest power-of-two bucket count that
    /// fits, filled to 7/8 at most (so the table never grows past it).
    pub(crate) fn new(memory: usize) -> Self {
        let mut buckets = 16usize;
        while buckets * 2 * BUCKET_BYTES <= memory {
            buckets *= 2;
        }
        OffsetMap {
            map: HashMap::default(),
            max_entries: buckets / 8 * 7,
        }
    }

    /// Records `offset` for `key`; false when the map is full and the key is new.
    pub(crate) fn put(&mut self, key: &[u8], offset: i64) -> bool {
        let h = key_hash(key);
        if self.map.len() >= self.max_entries && !self.map.contains_key(&h) {
            return false;
        }
        self.map.insert(h, offset);
        true
    }

    /// Keys recorded.
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    /// The offset of `key`'s latest record, if recorded.
    pub(crate) fn get(&self, key: &[u8]) -> Option<i64> {
        self.map.get(&key_hash(key)).copied()
    }

    /// Memory the table takes now, bytes.
    pub(crate) fn memory_bytes(&self) -> usize {
        // hashbrown keeps capacity*8/7 buckets (a power of two).
        (self.map.capacity() * 8 / 7).next_power_of_two() * BUCKET_BYTES
    }
}
