//! Models of Reflex's point-to-point collective algorithms (`reflex-engine/src/coll/data.rs`,
//! `reduce.rs`): the classic α–β (latency–bandwidth) costs, counted in rounds.
//!
//! | model | collectives | rounds | cost |
//! |---|---|---|---|
//! | `dissemination` | barrier | ⌈log2 N⌉ | ⌈log2 N⌉·α |
//! | `binomial` | bcast, reduce | ⌈log2 N⌉ | ⌈log2 N⌉·(α + β·m) |
//! | `recursive-doubling` | allreduce | ⌊log2 N⌋, + 2 when N is not a power of two (fold in, fold out) | s·(α + β·m) |
//! | `ring-allreduce` | allreduce | 2(N−1) of m/N bytes | 2(N−1)·(α + β·m/N) |
//! | `ring` | allgather, alltoall | N−1 of the per-rank block m (= (N−1)(α + β·M/N) with M = N·m) | (N−1)·(α + β·m) |
//!
//! m is the message length in bytes as `bench/coll.c` counts it (per rank for allgather and
//! alltoall). β includes the local combine for reductions.

use super::{ceil_log, floor_log, LinearModel, Shape};

fn log2_rounds(s: Shape) -> f64 {
    ceil_log(2, s.ranks) as f64
}

fn recursive_doubling_rounds(s: Shape) -> f64 {
    let n = s.ranks.max(1);
    let fold = if n.is_power_of_two() { 0 } else { 2 };
    (floor_log(2, n) + fold) as f64
}

fn alpha_beta(rounds: f64, bytes: f64) -> Vec<f64> {
    vec![rounds, rounds * bytes]
}

/// Dissemination barrier.
pub const DISSEMINATION: LinearModel = LinearModel {
    name: "dissemination",
    collectives: &["barrier"],
    formula: "⌈log2 N⌉·α",
    params: &["alpha"],
    uses_fanout: false,
    features: |s| vec![log2_rounds(s)],
};

/// Binomial-tree broadcast and reduce.
pub const BINOMIAL: LinearModel = LinearModel {
    name: "binomial",
    collectives: &["bcast", "reduce"],
    formula: "⌈log2 N⌉·(α + β·m)",
    params: &["alpha", "beta"],
    uses_fanout: false,
    features: |s| alpha_beta(log2_rounds(s), s.bytes as f64),
};

/// Recursive-doubling allreduce with non-powers of two folded first.
pub const RECURSIVE_DOUBLING: LinearModel = LinearModel {
    name: "recursive-doubling",
    collectives: &["allreduce"],
    formula: "(⌊log2 N⌋ + 2·[N not a power of 2])·(α + β·m)",
    params: &["alpha", "beta"],
    uses_fanout: false,
    features: |s| alpha_beta(recursive_doubling_rounds(s), s.bytes as f64),
};

/// Ring allreduce (reduce-scatter then allgather).
pub const RING_ALLREDUCE: LinearModel = LinearModel {
    name: "ring-allreduce",
    collectives: &["allreduce"],
    formula: "2(N−1)·(α + β·m/N)",
    params: &["alpha", "beta"],
    uses_fanout: false,
    features: |s| {
        let n = s.ranks.max(1) as f64;
        alpha_beta(2.0 * (n - 1.0), s.bytes as f64 / n)
    },
};

/// Ring allgather; the same form fits a one-round direct exchange (allgather, alltoall).
pub const RING: LinearModel = LinearModel {
    name: "ring",
    collectives: &["allgather", "alltoall"],
    formula: "(N−1)·(α + β·m), m per rank",
    params: &["alpha", "beta"],
    uses_fanout: false,
    features: |s| alpha_beta(s.ranks.saturating_sub(1) as f64, s.bytes as f64),
};

/// The point-to-point models.
pub fn models() -> Vec<LinearModel> {
    vec![
        DISSEMINATION,
        BINOMIAL,
        RECURSIVE_DOUBLING,
        RING_ALLREDUCE,
        RING,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ranks: usize, bytes: usize) -> Shape {
        Shape {
            ranks,
            bytes,
            fanout: 2,
        }
    }

    #[test]
    fn round_counts_follow_the_algorithms() {
        let (a, b) = (2.0, 0.5);
        assert_eq!(DISSEMINATION.eval(&[a], at(5, 0)), 3.0 * a);
        assert_eq!(BINOMIAL.eval(&[a, b], at(8, 10)), 3.0 * (a + 10.0 * b));
        assert_eq!(
            RECURSIVE_DOUBLING.eval(&[a, b], at(8, 4)),
            3.0 * (a + 4.0 * b)
        );
        // 6 ranks: fold 2 into 4, two doubling rounds, unfold.
        assert_eq!(
            RECURSIVE_DOUBLING.eval(&[a, b], at(6, 4)),
            4.0 * (a + 4.0 * b)
        );
        assert_eq!(RING_ALLREDUCE.eval(&[a, b], at(4, 8)), 6.0 * (a + 2.0 * b));
        assert_eq!(RING.eval(&[a, b], at(4, 8)), 3.0 * (a + 8.0 * b));
        assert_eq!(DISSEMINATION.eval(&[a], at(1024, 0)), 10.0 * a);
    }
}
