//! Test-only sample values: [`Sample`] is generated for every message struct by `build.rs`;
//! [`Seq`] hands out distinct, deterministic, non-default field values.

use bytes::Bytes;
use uuid::Uuid;

/// A value filled with sample data for every field valid in `version`.
pub(crate) trait Sample: Sized {
    fn sample(version: i16, s: &mut Seq) -> Self;
}

/// Deterministic source of distinct values (xorshift on a seed).
pub(crate) struct Seq {
    state: u64,
    counter: u64,
    depth: u32,
}

impl Seq {
    pub(crate) fn new(seed: u64) -> Self {
        Seq {
            state: seed | 1,
            counter: 0,
            depth: 0,
        }
    }

    fn next(&mut self) -> u64 {
        self.counter += 1;
        let mut x = self.state;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.state = x;
        x
    }

    /// Distinct small positive numbers make failures easy to read.
    fn small(&mut self) -> u64 {
        self.next();
        self.counter
    }

    pub(crate) fn bool(&mut self) -> bool {
        self.next().is_multiple_of(2)
    }
    pub(crate) fn i8(&mut self) -> i8 {
        (self.small() % 120 + 1) as i8
    }
    pub(crate) fn i16(&mut self) -> i16 {
        (self.small() % 30000 + 1) as i16
    }
    pub(crate) fn i32(&mut self) -> i32 {
        if self.next().is_multiple_of(7) {
            -(self.small() as i32)
        } else {
            1000 + self.small() as i32
        }
    }
    pub(crate) fn i64(&mut self) -> i64 {
        if self.next().is_multiple_of(5) {
            (1i64 << 40) + self.small() as i64
        } else {
            100_000 + self.small() as i64
        }
    }
    #[allow(dead_code)] // no uint16 field among the implemented APIs yet
    pub(crate) fn u16(&mut self) -> u16 {
        (self.small() % 60000 + 1) as u16
    }
    #[allow(dead_code)] // no float64 field among the implemented APIs yet
    pub(crate) fn f64(&mut self) -> f64 {
        self.small() as f64 + 0.5
    }
    pub(crate) fn uuid(&mut self) -> Uuid {
        Uuid::from_u128(((self.next() as u128) << 64) | self.small() as u128)
    }
    pub(crate) fn string(&mut self) -> String {
        let n = self.small();
        if n.is_multiple_of(11) {
            String::new()
        } else {
            format!("s{n}-é")
        }
    }
    pub(crate) fn bytes(&mut self) -> Bytes {
        let n = (self.next() % 20) as usize;
        Bytes::from(
            (0..n)
                .map(|i| (i as u8).wrapping_mul(37))
                .collect::<Vec<u8>>(),
        )
    }
    /// Whether a nullable value should be null (only where `allowed`), about one in four.
    pub(crate) fn null(&mut self, allowed: bool) -> bool {
        allowed && self.next().is_multiple_of(4)
    }
    /// Arrays get 0..=2 elements; fewer when nested deeply.
    pub(crate) fn vec<T>(&mut self, mut f: impl FnMut(&mut Seq) -> T) -> Vec<T> {
        let n = if self.depth > 3 {
            1
        } else {
            1 + (self.next() % 2) as usize
        };
        self.depth += 1;
        let v = (0..n).map(|_| f(self)).collect();
        self.depth -= 1;
        v
    }
    pub(crate) fn unknown_tagged_fields(&mut self) -> Vec<(u32, Bytes)> {
        if self.next().is_multiple_of(3) {
            vec![(1000 + (self.small() % 10) as u32, self.bytes())]
        } else {
            Vec::new()
        }
    }
}
