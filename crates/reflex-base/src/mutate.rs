//! A seeded, deterministic input mutator for stable-Rust fuzz tests of wire parsers.
//!
//! libFuzzer (`cargo fuzz`) needs nightly and runs by hand or in a separate CI step; this module
//! gives every `cargo test` run a fixed share of the same work. [`run`] feeds a parser's fuzz body
//! the valid seeds unchanged, then `cases` mutants of them, each made by one to four of the
//! classic mutations (as libFuzzer's and AFL's): bit flips, interesting bytes, truncation,
//! 32-bit length-field edits (0, ±1 around the input's length, huge), deletions, duplications,
//! random insertions and splices of two seeds. The generator is xorshift64* (Vigna 2016), seeded,
//! so a failure repeats exactly; a panic in the body is re-raised with the case number and the
//! input in hex.

use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

/// Seeded xorshift64* generator (enough for choosing mutations; not for anything secret).
#[derive(Debug, Clone)]
pub struct Mutator {
    state: u64,
}

/// Bytes that often sit on parser edges.
const INTERESTING_BYTES: [u8; 8] = [0, 1, 0x7f, 0x80, 0xff, b';', b'=', b','];

impl Mutator {
    /// A generator for `seed` (any value; 0 is remapped).
    pub fn new(seed: u64) -> Mutator {
        Mutator {
            state: seed ^ 0x9E37_79B9_7F4A_7C15 | 1,
        }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.state;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.state = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A value in `0..n` (0 when `n` is 0); the small modulo bias does not matter here.
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }

    /// Replaces `out` with a mutant of one of `seeds` (which must not be empty).
    pub fn mutant(&mut self, seeds: &[Vec<u8>], out: &mut Vec<u8>) {
        out.clear();
        out.extend_from_slice(&seeds[self.below(seeds.len())]);
        for _ in 0..1 + self.below(4) {
            self.mutate_once(seeds, out);
        }
    }

    fn mutate_once(&mut self, seeds: &[Vec<u8>], v: &mut Vec<u8>) {
        let at = self.below(v.len() + 1);
        let last = at.min(v.len().saturating_sub(1));
        match self.below(8) {
            0 if !v.is_empty() => {
                let bit = self.below(8);
                v[last] ^= 1 << bit;
            }
            1 if !v.is_empty() => {
                let byte = INTERESTING_BYTES[self.below(INTERESTING_BYTES.len())];
                v[last] = byte;
            }
            2 => v.truncate(at),
            3 => self.edit_length(v),
            4 => {
                let end = (at + 1 + self.below(16)).min(v.len());
                v.drain(at.min(end)..end);
            }
            5 => {
                let end = (at + 1 + self.below(32)).min(v.len());
                let chunk = v[at.min(end)..end].to_vec();
                v.splice(at..at, chunk);
            }
            6 => {
                let n = 1 + self.below(8);
                let bytes: Vec<u8> = (0..n).map(|_| self.next_u64() as u8).collect();
                v.splice(at..at, bytes);
            }
            _ => {
                let other = &seeds[self.below(seeds.len())];
                let from = self.below(other.len() + 1);
                v.truncate(at);
                v.extend_from_slice(&other[from..]);
            }
        }
    }

    /// Overwrites four bytes (at 0, or anywhere) with a little-endian length near an edge.
    fn edit_length(&mut self, v: &mut [u8]) {
        if v.len() < 4 {
            return;
        }
        let at = if self.below(2) == 0 {
            0
        } else {
            self.below(v.len() - 3)
        };
        let len = v.len() as u32;
        let value = [
            0,
            1,
            len.wrapping_sub(9),
            len.wrapping_sub(8),
            len.wrapping_sub(7),
            len,
            u32::MAX,
            0x7fff_ffff,
            1 << 20,
            (1 << 20) + 1,
            self.next_u64() as u32,
        ][self.below(11)];
        v[at..at + 4].copy_from_slice(&value.to_le_bytes());
    }
}

/// Runs `body` on every seed, then on `cases` mutants drawn with `seed`. A panic in `body` is
/// raised again with the case number and the input, so a failure can be turned into a unit test.
pub fn run(seeds: &[Vec<u8>], cases: usize, seed: u64, mut body: impl FnMut(&[u8])) {
    assert!(!seeds.is_empty(), "a fuzz run needs at least one seed");
    let mut check = |case: &str, input: &[u8]| {
        if let Err(panic) = catch_unwind(AssertUnwindSafe(|| body(input))) {
            let hex: String = input.iter().map(|b| format!("{b:02x}")).collect();
            eprintln!("fuzz case {case} (seed {seed:#x}) failed on input {hex}");
            resume_unwind(panic);
        }
    };
    for (i, s) in seeds.iter().enumerate() {
        check(&format!("seed {i}"), s);
    }
    let mut m = Mutator::new(seed);
    let mut input = Vec::new();
    for case in 0..cases {
        m.mutant(seeds, &mut input);
        check(&case.to_string(), &input);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_mutants() {
        let seeds = vec![
            b"tcp1;port=1;cookie=2".to_vec(),
            vec![8, 0, 0, 0, 1, 0, 0, 0],
        ];
        let draw = |seed| {
            let mut m = Mutator::new(seed);
            let mut out = Vec::new();
            (0..200)
                .map(|_| {
                    m.mutant(&seeds, &mut out);
                    out.clone()
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(draw(7), draw(7));
        assert_ne!(draw(7), draw(8));
        // The mutants differ from the seeds and among themselves (the mutations do happen).
        let all = draw(7);
        let distinct: std::collections::HashSet<_> = all.iter().collect();
        assert!(distinct.len() > 150, "{} distinct", distinct.len());
        assert!(all.iter().any(|v| v.is_empty() || v.len() < 8));
        assert!(all.iter().any(|v| v.len() > 20));
    }

    #[test]
    fn a_failing_body_names_its_input() {
        let seeds = vec![vec![0u8; 8]];
        let got = catch_unwind(|| run(&seeds, 10_000, 1, |d| assert!(!d.contains(&0xff))));
        assert!(got.is_err(), "the body never saw a 0xff byte");
    }
}
