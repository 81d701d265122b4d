//! The seeded randomness and seed selection the simulations share (SimFs, the storage crash simulation, the
//! replication and quorum simulations): one algorithm, so a seed means the same choices everywhere.

use std::time::Duration;

/// splitmix64 (Steele, Lea, Flood 2014): a fast, seedable stream of `u64`s; not for cryptography.
#[derive(Clone, Debug)]
pub struct SimRng(pub u64);

impl SimRng {
    /// The next draw.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A draw in `0..n` (`n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// True with probability `percent`/100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    /// A duration in `lo..hi` milliseconds (`hi` > `lo`).
    pub fn ms(&mut self, lo: u64, hi: u64) -> Duration {
        Duration::from_millis(lo + self.below(hi - lo))
    }
}

/// An unsigned integer from environment variable `name`, if set and valid.
pub fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

/// The seeds a simulation runs: only `SIM_SEED` when set, else `SIM_SEEDS` seeds (`default_count` when
/// unset) counting from `first`.
pub fn sim_seeds(first: u64, default_count: u64) -> Vec<u64> {
    match env_u64("SIM_SEED") {
        Some(s) => vec![s],
        None => (first..first + env_u64("SIM_SEEDS").unwrap_or(default_count)).collect(),
    }
}
