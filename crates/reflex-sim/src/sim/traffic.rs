//! Traffic: destination patterns, message lengths and the injection process.
//!
//! Patterns are those of Paper A (uniform, bit-reversal, perfect shuffle, matrix transpose,
//! local) plus hot-spot (an extension; no paper uses it). Permutations are defined on host numbers
//! with `b = log2(hosts)` bits (hosts must be a power of two); matrix transpose rotates the
//! address by `floor(b/2)` bits, which is the usual transpose for even `b` and the rule
//! seed000b.md §A.2 suggests for odd `b`. A host that a permutation maps to itself sends nothing.
//! Local traffic sends `fraction` of the messages uniformly to hosts whose switch is within
//! `radius` switch-to-switch hops (host links not counted), the rest uniformly.
//!
//! Each host generates messages as a Bernoulli process per cycle with probability
//! `rate / mean_length` (`rate` in flits per cycle per host), drawn as geometric gaps.

use serde::{Deserialize, Serialize};

use crate::error::{Result, SimError};
use crate::rng::SimRng;
use crate::topology::Topology;

/// Destination pattern.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Pattern {
    /// Uniform among the other hosts.
    Uniform,
    /// Reverse the address bits.
    BitReversal,
    /// Rotate the address left by one bit.
    PerfectShuffle,
    /// Rotate the address left by `floor(bits/2)`.
    Transpose,
    /// `fraction` of messages to hosts within `radius` switch hops, the rest uniform.
    Local {
        /// Radius in switch-to-switch hops (Paper A: 5 links).
        radius: u32,
        /// Fraction of local messages (Paper A: 0.6).
        fraction: f64,
    },
    /// `fraction` of messages to host `host`, the rest uniform.
    HotSpot {
        /// The hot host.
        host: usize,
        /// Fraction sent to it.
        fraction: f64,
    },
}

/// Message length distribution.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Lengths {
    /// Every message has `flits` flits.
    Fixed {
        /// Length in flits.
        flits: u32,
    },
    /// `short` flits, or `long` flits with probability `long_fraction` (Paper A: 32/512, 0.25).
    Bimodal {
        /// Short length.
        short: u32,
        /// Long length.
        long: u32,
        /// Probability of a long message.
        long_fraction: f64,
    },
}

impl Lengths {
    /// Mean length in flits.
    pub fn mean(&self) -> f64 {
        match self {
            Lengths::Fixed { flits } => f64::from(*flits),
            Lengths::Bimodal {
                short,
                long,
                long_fraction,
            } => f64::from(*short) * (1.0 - long_fraction) + f64::from(*long) * long_fraction,
        }
    }

    /// Longest possible message.
    pub fn max(&self) -> u32 {
        match self {
            Lengths::Fixed { flits } => *flits,
            Lengths::Bimodal { short, long, .. } => (*short).max(*long),
        }
    }

    fn draw(&self, rng: &mut SimRng) -> u32 {
        match self {
            Lengths::Fixed { flits } => *flits,
            Lengths::Bimodal {
                short,
                long,
                long_fraction,
            } => {
                if rng.chance(*long_fraction) {
                    *long
                } else {
                    *short
                }
            }
        }
    }
}

/// Traffic description.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrafficSpec {
    /// Destination pattern.
    pub pattern: Pattern,
    /// Message lengths.
    pub lengths: Lengths,
    /// Offered load in flits per cycle per host.
    pub rate: f64,
}

/// A generated message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Message {
    /// Destination host.
    pub dst: u32,
    /// Length in flits.
    pub len: u32,
    /// Generation cycle.
    pub created: u64,
}

/// Per-host message generator.
#[derive(Clone, Debug)]
pub struct TrafficGen {
    spec: TrafficSpec,
    hosts: usize,
    bits: u32,
    next: Vec<u64>,
    prob: f64,
    /// Hosts within the local radius, per host (local pattern only).
    near: Vec<Vec<u32>>,
}

impl TrafficGen {
    /// Validates `spec` for `topo` and draws the first generation times.
    pub fn new(topo: &Topology, spec: &TrafficSpec, rng: &mut SimRng) -> Result<Self> {
        let hosts = topo.hosts();
        if hosts < 2 {
            return Err(SimError::invalid("traffic needs at least two hosts"));
        }
        let mean = spec.lengths.mean();
        if !(spec.rate >= 0.0 && spec.rate.is_finite()) || mean < 1.0 {
            return Err(SimError::invalid(
                "traffic rate must be >= 0 and lengths >= 1 flit",
            ));
        }
        let bits = hosts.trailing_zeros();
        let needs_pow2 = matches!(
            spec.pattern,
            Pattern::BitReversal | Pattern::PerfectShuffle | Pattern::Transpose
        );
        if needs_pow2 && !hosts.is_power_of_two() {
            return Err(SimError::invalid(format!(
                "{:?} traffic needs a power-of-two host count, not {hosts}",
                spec.pattern
            )));
        }
        let mut near = Vec::new();
        match spec.pattern {
            Pattern::Local { radius, fraction } => {
                if !(0.0..=1.0).contains(&fraction) {
                    return Err(SimError::invalid("local fraction must be in [0, 1]"));
                }
                let dist = topo.distance_matrix();
                near = (0..hosts)
                    .map(|h| {
                        let s = topo.host_switch(h);
                        (0..hosts)
                            .filter(|&g| g != h && dist[s][topo.host_switch(g)] <= radius)
                            .map(|g| g as u32)
                            .collect()
                    })
                    .collect();
            }
            Pattern::HotSpot { host, fraction }
                if host >= hosts || !(0.0..=1.0).contains(&fraction) =>
            {
                return Err(SimError::invalid(
                    "hot-spot host must exist and fraction be in [0, 1]",
                ));
            }
            _ => {}
        }
        let prob = (spec.rate / mean).min(1.0);
        let next = (0..hosts).map(|_| rng.geometric(prob)).collect();
        Ok(TrafficGen {
            spec: spec.clone(),
            hosts,
            bits,
            next,
            prob,
            near,
        })
    }

    /// The traffic description.
    pub fn spec(&self) -> &TrafficSpec {
        &self.spec
    }

    /// Destination of a message from `src`, or `None` when the pattern maps `src` to itself.
    pub fn destination(&self, src: usize, rng: &mut SimRng) -> Option<usize> {
        let uniform = |rng: &mut SimRng| {
            let d = rng.below(self.hosts - 1);
            if d >= src {
                d + 1
            } else {
                d
            }
        };
        let b = self.bits;
        let mask = (1usize << b) - 1;
        let rot = |x: usize, k: u32| {
            if b == 0 {
                x
            } else {
                ((x << (k % b)) | (x >> ((b - k % b) % b))) & mask
            }
        };
        let d = match self.spec.pattern {
            Pattern::Uniform => uniform(rng),
            Pattern::BitReversal => {
                (0..b).fold(0, |acc, i| acc | (((src >> i) & 1) << (b - 1 - i)))
            }
            Pattern::PerfectShuffle => rot(src, 1),
            Pattern::Transpose => rot(src, b / 2),
            Pattern::Local { fraction, .. } => {
                let near = &self.near[src];
                if !near.is_empty() && rng.chance(fraction) {
                    near[rng.below(near.len())] as usize
                } else {
                    uniform(rng)
                }
            }
            Pattern::HotSpot { host, fraction } => {
                if host != src && rng.chance(fraction) {
                    host
                } else {
                    uniform(rng)
                }
            }
        };
        (d != src).then_some(d)
    }

    /// Calls `sink(host, message)` for every message generated at cycle `now`.
    pub fn generate(&mut self, now: u64, rng: &mut SimRng, mut sink: impl FnMut(usize, Message)) {
        if self.prob <= 0.0 {
            return;
        }
        for h in 0..self.hosts {
            while self.next[h] <= now {
                let len = self.spec.lengths.draw(rng);
                if let Some(dst) = self.destination(h, rng) {
                    sink(
                        h,
                        Message {
                            dst: dst as u32,
                            len,
                            created: now,
                        },
                    );
                }
                self.next[h] = now + 1 + rng.geometric(self.prob);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::tests::ring;

    fn gen(pattern: Pattern, hosts_per: usize) -> (Topology, TrafficGen) {
        let t = ring(4, hosts_per);
        let spec = TrafficSpec {
            pattern,
            lengths: Lengths::Fixed { flits: 4 },
            rate: 0.5,
        };
        let g = TrafficGen::new(&t, &spec, &mut SimRng::new(1)).unwrap();
        (t, g)
    }

    #[test]
    fn permutations_by_hand() {
        let mut rng = SimRng::new(0);
        let (_, g) = gen(Pattern::BitReversal, 2); // 8 hosts, 3 bits
        assert_eq!(g.destination(1, &mut rng), Some(4)); // 001 -> 100
        assert_eq!(g.destination(3, &mut rng), Some(6)); // 011 -> 110
        assert_eq!(g.destination(5, &mut rng), None); // 101 -> 101
        let (_, g) = gen(Pattern::PerfectShuffle, 2);
        assert_eq!(g.destination(3, &mut rng), Some(6)); // 011 -> 110
        assert_eq!(g.destination(4, &mut rng), Some(1)); // 100 -> 001
        let (_, g) = gen(Pattern::Transpose, 4); // 16 hosts, 4 bits: swap halves
        assert_eq!(g.destination(0b0111, &mut rng), Some(0b1101));
        assert_eq!(g.destination(0b0001, &mut rng), Some(0b0100));
    }

    #[test]
    fn uniform_never_self_and_rate_is_respected() {
        let (t, mut g) = gen(Pattern::Uniform, 2);
        let mut rng = SimRng::new(3);
        let mut count = 0;
        for now in 0..20_000 {
            g.generate(now, &mut rng, |h, m| {
                assert_ne!(h, m.dst as usize);
                count += 1;
            });
        }
        // 8 hosts * 20000 cycles * 0.5 / 4 = 20000 messages expected.
        assert!((18_000..22_000).contains(&count), "{count}");
        assert!(TrafficGen::new(
            &ring(3, 1),
            &TrafficSpec {
                pattern: Pattern::BitReversal,
                lengths: Lengths::Fixed { flits: 1 },
                rate: 0.1
            },
            &mut rng
        )
        .is_err());
        let _ = t;
    }

    #[test]
    fn local_stays_near() {
        let (t, g) = gen(
            Pattern::Local {
                radius: 1,
                fraction: 1.0,
            },
            1,
        );
        let mut rng = SimRng::new(0);
        for _ in 0..100 {
            let d = g.destination(0, &mut rng).unwrap();
            assert!(t.distances_from(0)[t.host_switch(d)] <= 1);
        }
    }
}
