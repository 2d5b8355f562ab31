//! The one seeded random-number generator of a run ([`SimRng`], ChaCha8). Every random choice of a
//! generator, heuristic or simulation takes `&mut SimRng`; the same seed gives the same result.
//! Independent streams (e.g. parallel sweep points) are derived with [`SimRng::derive`].

use rand_chacha::rand_core::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Seeded generator with the few draws the simulator needs.
#[derive(Clone, Debug)]
pub struct SimRng {
    inner: ChaCha8Rng,
}

impl SimRng {
    /// Generator for `seed`.
    pub fn new(seed: u64) -> Self {
        SimRng {
            inner: ChaCha8Rng::seed_from_u64(seed),
        }
    }

    /// An independent generator for sub-task `index` of the run seeded with `seed`
    /// (splitmix64 of both, so streams do not overlap in practice).
    pub fn derive(seed: u64, index: u64) -> Self {
        let mut z = seed ^ index.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        SimRng::new(z ^ (z >> 31))
    }

    /// Uniform 64-bit value.
    pub fn next_u64(&mut self) -> u64 {
        self.inner.next_u64()
    }

    /// Uniform integer in `0..n` (`n > 0`; returns 0 for `n == 0`). Uses Lemire's multiply-shift
    /// with rejection, so there is no modulo bias.
    pub fn below(&mut self, n: usize) -> usize {
        if n <= 1 {
            return 0;
        }
        let n = n as u64;
        loop {
            let m = u128::from(self.next_u64()) * u128::from(n);
            let low = m as u64;
            if low >= n.wrapping_neg() % n {
                return (m >> 64) as usize;
            }
        }
    }

    /// Uniform float in `[0, 1)` with 53 random bits.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// `true` with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    /// Fisher-Yates shuffle.
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i + 1);
            items.swap(i, j);
        }
    }

    /// Geometric number of failures before the first success of a Bernoulli(`p`) process,
    /// i.e. the gap between two message generations when each cycle generates with probability `p`.
    pub fn geometric(&mut self, p: f64) -> u64 {
        if p >= 1.0 {
            return 0;
        }
        if p <= 0.0 {
            return u64::MAX / 4;
        }
        let u = 1.0 - self.unit(); // (0, 1]
        (u.ln() / (1.0 - p).ln()).floor().min((u64::MAX / 4) as f64) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream() {
        let mut a = SimRng::new(7);
        let mut b = SimRng::new(7);
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
        assert_ne!(
            SimRng::derive(7, 0).next_u64(),
            SimRng::derive(7, 1).next_u64()
        );
    }

    #[test]
    fn below_stays_in_range() {
        let mut r = SimRng::new(1);
        let mut seen = [false; 5];
        for _ in 0..1000 {
            seen[r.below(5)] = true;
        }
        assert!(seen.iter().all(|s| *s));
        assert_eq!(r.below(0), 0);
    }
}
