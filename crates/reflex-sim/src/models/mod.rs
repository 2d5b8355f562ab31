//! Analytical latency models of collective operations, as a library behind the `reflex-models`
//! command: the reflective-memory collectives of Moorthy, Panda and Sadayappan (equations (4.1)
//! broadcast, (4.2) barrier, (4.3) simultaneous-broadcast all-reduce; `reference/seed000c.md`
//! P2), the NIC-based barrier of Yu, Buntinas, Graham and Panda
//! (T = T_init + (⌈log2 N⌉ − 1)·T_trig + T_adj; `reference/seed001_004.md` A1.10) and the
//! log-tree / linear models of Reflex's own point-to-point collective algorithms
//! (`reflex-engine/src/coll`).
//!
//! Every model here is *linear in its parameters* once the shape of the call (ranks N, fan-out r,
//! message length W) is fixed: T = Σ θ_i · φ_i(N, m, r). A model is therefore a list of parameter
//! names and one feature function φ ([`LinearModel`]); evaluating it is a dot product, and
//! fitting it to measured latencies is linear least squares ([`fit`]). The papers' published
//! parameter sets are just parameter vectors for the same feature functions ([`rm`], [`nic`]), so
//! the equations are written once.

pub mod cli;
pub mod fit;
pub mod input;
pub mod nic;
pub mod report;
pub mod rm;
pub mod tree;

/// The shape of one collective call: what a model's features depend on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Number of ranks N (≥ 1).
    pub ranks: usize,
    /// Message length in bytes (per rank for allgather/alltoall, as `bench/coll.c` counts it).
    pub bytes: usize,
    /// Fan-out r of the notification tree (reflective-memory tree models only; ≥ 2).
    pub fanout: usize,
}

/// A latency model linear in its parameters: T(shape) = Σ params[i] · features(shape)[i], in µs.
#[derive(Clone, Copy, Debug)]
pub struct LinearModel {
    /// Short name used on the command line and in the CSV's algorithm column.
    pub name: &'static str,
    /// Collectives the model describes (names as in `bench/coll.c`).
    pub collectives: &'static [&'static str],
    /// The formula, for people.
    pub formula: &'static str,
    /// Parameter names, in the order of the features.
    pub params: &'static [&'static str],
    /// Whether the model uses [`Shape::fanout`].
    pub uses_fanout: bool,
    /// Feature function φ(shape), one value per parameter.
    pub features: fn(Shape) -> Vec<f64>,
}

impl LinearModel {
    /// Predicted latency (µs) for `shape` with parameter vector `theta`.
    pub fn eval(&self, theta: &[f64], shape: Shape) -> f64 {
        dot(theta, &(self.features)(shape))
    }

    /// Whether the model applies to `collective`.
    pub fn describes(&self, collective: &str) -> bool {
        self.collectives.contains(&collective)
    }
}

/// The collectives `bench/coll.c` measures, in its order.
pub const COLLECTIVES: &[&str] = &[
    "barrier",
    "bcast",
    "reduce",
    "allreduce",
    "allgather",
    "alltoall",
];

/// Every model the fitter knows, in the order they are tried and printed.
pub fn catalogue() -> Vec<LinearModel> {
    let mut all = tree::models();
    all.extend(nic::models());
    all.extend(rm::models());
    all
}

/// The model called `name`, if any.
pub fn find_model(name: &str) -> Option<LinearModel> {
    catalogue().into_iter().find(|m| m.name == name)
}

/// Σ a_i·b_i.
pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// ⌈log_base x⌉ for integers: the least k with base^k ≥ x (0 for x ≤ 1). `base` must be ≥ 2.
pub fn ceil_log(base: usize, x: usize) -> usize {
    let (mut k, mut p) = (0, 1usize);
    while p < x {
        p = p.saturating_mul(base.max(2));
        k += 1;
    }
    k
}

/// ⌊log_base x⌋ for integers: the greatest k with base^k ≤ x (0 for x ≤ 1). `base` must be ≥ 2.
pub fn floor_log(base: usize, x: usize) -> usize {
    let (mut k, mut p) = (0, base.max(2));
    while p <= x {
        k += 1;
        match p.checked_mul(base.max(2)) {
            Some(next) => p = next,
            None => break,
        }
    }
    k
}

/// ⌈a / b⌉ for integers (b ≥ 1).
pub fn ceil_div(a: usize, b: usize) -> usize {
    a.div_ceil(b.max(1))
}

/// The rank counts predictions are printed for: 2, 4, 8, ..., 1024.
pub fn prediction_ranks() -> Vec<usize> {
    (1..=10).map(|k| 1usize << k).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_logs_match_their_definitions() {
        assert_eq!(ceil_log(2, 1), 0);
        assert_eq!(ceil_log(2, 2), 1);
        assert_eq!(ceil_log(2, 3), 2);
        assert_eq!(ceil_log(2, 1024), 10);
        assert_eq!(ceil_log(2, 1025), 11);
        assert_eq!(ceil_log(4, 4), 1);
        assert_eq!(ceil_log(4, 5), 2);
        assert_eq!(ceil_log(8, 32), 2);
        assert_eq!(floor_log(4, 1), 0);
        assert_eq!(floor_log(4, 3), 0);
        assert_eq!(floor_log(4, 4), 1);
        assert_eq!(floor_log(4, 15), 1);
        assert_eq!(floor_log(4, 16), 2);
        assert_eq!(floor_log(2, usize::MAX), 63);
        assert_eq!(ceil_div(7, 4), 2);
        assert_eq!(ceil_div(0, 4), 0);
    }

    #[test]
    fn every_model_has_one_feature_per_parameter_and_a_unique_name() {
        let all = catalogue();
        for m in &all {
            let shape = Shape {
                ranks: 8,
                bytes: 64,
                fanout: 4,
            };
            assert_eq!((m.features)(shape).len(), m.params.len(), "{}", m.name);
            assert!(m.collectives.iter().all(|c| COLLECTIVES.contains(c)));
            assert_eq!(all.iter().filter(|o| o.name == m.name).count(), 1);
        }
        for c in COLLECTIVES {
            assert!(all.iter().any(|m| m.describes(c)), "no model for {c}");
        }
    }
}
