//! The "behavioral routing metrics" of Paper A's Table 1 (seed000b.md §A.3), computed for an
//! orientation and a deterministic path set on the live switches:
//!
//! - average distance: mean shortest legal path length over ordered pairs `s != d`
//!   (the published values are integer sums over N(N-1) pairs);
//! - average topological distance: the same without routing restrictions;
//! - restrictions per node: forbidden ordered turns / N (34/9 = 3.78 for Paper A's example);
//! - long paths: pairs whose legal distance exceeds the topological one, divided by N² (the
//!   denominator that fits the published roundings, §S.3 item 6);
//! - diameter: the largest legal distance;
//! - crossing paths: the largest number of chosen paths through one channel;
//! - independent cycles: M - N + 1.

use serde::Serialize;

use crate::routing::orientation::Orientation;
use crate::routing::paths::{LegalPaths, PathSet, UNREACHABLE};
use crate::topology::Topology;

/// One row of Table 1.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RoutingMetrics {
    /// Live switches.
    pub switches: usize,
    /// Average legal distance.
    pub avg_distance: f64,
    /// Average topological distance.
    pub avg_topological_distance: f64,
    /// Forbidden ordered turns per switch.
    pub restrictions_per_node: f64,
    /// Total forbidden ordered turns.
    pub restrictions: usize,
    /// Percentage of non-minimal paths (denominator N²).
    pub long_paths_pct: f64,
    /// Largest legal distance.
    pub diameter: u32,
    /// Largest number of chosen paths through one channel.
    pub crossing_paths: u32,
    /// M - N + 1.
    pub independent_cycles: usize,
    /// Ordered pairs without a legal path (0 for a correct orientation).
    pub unreachable_pairs: usize,
}

impl RoutingMetrics {
    /// Computes the metrics of `orientation` with the chosen `paths`.
    pub fn compute(topo: &Topology, orientation: &Orientation, paths: &PathSet) -> Self {
        let legal = LegalPaths::new(topo, orientation);
        let live: Vec<usize> = (0..topo.switches())
            .filter(|&s| topo.switch_up(s))
            .collect();
        let n = live.len();
        let (mut sum, mut topo_sum, mut long, mut unreachable, mut diameter) =
            (0u64, 0u64, 0usize, 0usize, 0u32);
        for &s in &live {
            let td = topo.distances_from(s);
            for &d in live.iter().filter(|&&d| d != s) {
                let ld = legal.distance(s, d);
                if ld == UNREACHABLE {
                    unreachable += 1;
                    continue;
                }
                sum += u64::from(ld);
                topo_sum += u64::from(td[d]);
                long += usize::from(ld > td[d]);
                diameter = diameter.max(ld);
            }
        }
        let pairs = (n * n.saturating_sub(1)).max(1) as f64;
        let restrictions = orientation.restrictions(topo);
        RoutingMetrics {
            switches: n,
            avg_distance: sum as f64 / pairs,
            avg_topological_distance: topo_sum as f64 / pairs,
            restrictions_per_node: restrictions as f64 / n.max(1) as f64,
            restrictions,
            long_paths_pct: 100.0 * long as f64 / (n * n).max(1) as f64,
            diameter,
            crossing_paths: paths
                .channel_load(topo.channels())
                .into_iter()
                .max()
                .unwrap_or(0),
            independent_cycles: topo.independent_cycles(),
            unreachable_pairs: unreachable,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SimRng;
    use crate::routing::paths::PathPolicy;
    use crate::topology::tests::ring;

    #[test]
    fn ring_metrics_by_hand() {
        // Ring of 4, root 0, bottom 3 (see paths tests). Legal distances equal topological ones
        // except 2->0 and 0->2? Both have a legal 2-hop path, so no long paths.
        let t = ring(4, 1);
        let o = Orientation::from_ranks(&t, &[3, 2, 1, 0]);
        let legal = LegalPaths::new(&t, &o);
        let ps = PathSet::select(&t, &legal, PathPolicy::First, &mut SimRng::new(0));
        let m = RoutingMetrics::compute(&t, &o, &ps);
        // 8 pairs at distance 1, 4 pairs at distance 2: 16/12.
        assert!((m.avg_distance - 16.0 / 12.0).abs() < 1e-12);
        assert_eq!(m.avg_topological_distance, m.avg_distance);
        assert_eq!(m.restrictions, 2);
        assert_eq!(m.restrictions_per_node, 0.5);
        assert_eq!(m.long_paths_pct, 0.0);
        assert_eq!(m.diameter, 2);
        assert_eq!(m.independent_cycles, 1);
        assert_eq!(m.unreachable_pairs, 0);
        assert!(m.crossing_paths >= 2);
    }

    #[test]
    fn ring_of_six_has_long_paths() {
        // Ring of 6 with a BFS from 0: levels 0,1,2,3,2,1; bottom is 3 (up links to 2 and 4).
        // 2 -> 4 must go 2-1-0-5-4 (4 hops) instead of 2-3-4 (2 hops).
        let t = ring(6, 1);
        let o = crate::routing::trees::bfs_orientation(&t, 0);
        let legal = LegalPaths::new(&t, &o);
        assert_eq!(legal.distance(2, 4), 4);
        assert_eq!(legal.distance(4, 2), 4);
        let ps = PathSet::select(&t, &legal, PathPolicy::First, &mut SimRng::new(0));
        let m = RoutingMetrics::compute(&t, &o, &ps);
        assert_eq!(m.diameter, 4);
        // Long pairs: 2<->4 only (3 is reached directly from both).
        assert!((m.long_paths_pct - 100.0 * 2.0 / 36.0).abs() < 1e-9);
    }
}
