//! Helpers shared by the tests and the benchmark: a seeded PRNG and self-checking packet contents.
//!
//! A packet's bytes are a function of a sequence number, so a receiver checks order and content
//! without keeping a copy: bytes 0..8 hold the number (little endian) where they fit, and byte `i`
//! past them holds `seq + i` truncated.

/// xorshift64* (Vigna, 2016): small, fast, deterministic for a given seed.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator; any seed works (zero is mapped to a fixed non-zero state).
    pub fn new(seed: u64) -> Self {
        Self(seed | 1)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A packet size in `0..=max`, small (under 64 bytes) three times out of four.
    pub fn packet_len(&mut self, max: usize) -> usize {
        let r = self.next_u64();
        let bound = if r & 3 != 0 { 64.min(max + 1) } else { max + 1 };
        ((r >> 2) % bound as u64) as usize
    }
}

/// Fills `buf` with the contents of packet `seq`.
pub fn fill(buf: &mut [u8], seq: u64) {
    let head = buf.len().min(8);
    buf[..head].copy_from_slice(&seq.to_le_bytes()[..head]);
    for (i, b) in buf.iter_mut().enumerate().skip(8) {
        *b = (seq as u8).wrapping_add(i as u8);
    }
}

/// Whether `buf` holds the contents of packet `seq`.
pub fn check(buf: &[u8], seq: u64) -> bool {
    let head = buf.len().min(8);
    buf[..head] == seq.to_le_bytes()[..head]
        && buf
            .iter()
            .enumerate()
            .skip(8)
            .all(|(i, &b)| b == (seq as u8).wrapping_add(i as u8))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_check_and_differ() {
        let mut a = vec![0; 100];
        fill(&mut a, 7);
        assert!(check(&a, 7));
        assert!(!check(&a, 8));
        let mut short = [0u8; 3];
        fill(&mut short, 0x0001_0203);
        assert!(check(&short, 0x0001_0203));
        let mut rng = Rng::new(0);
        assert!((0..1000).all(|_| rng.packet_len(100) <= 100));
        assert_eq!(Rng::new(5).next_u64(), Rng::new(5).next_u64());
    }
}
