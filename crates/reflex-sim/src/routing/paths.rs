//! Shortest *legal* paths under a turn-restriction set, and deterministic path selection.
//!
//! [`LegalPaths`] runs, for each destination, a backward BFS over channels: `rem(d, c)` is the
//! number of hops still needed after traversing channel `c` when only allowed turns are taken
//! (no U-turns). This works for any turn set, so up*/down* (a turn set induced by an orientation),
//! planted cyclic routings and topological minimal routing share the code. Paper A fills routing
//! tables with "all the possible shortest paths between every pair of nodes (or just one of them
//! if deterministic routing is preferred)"; [`PathSet`] is the deterministic case, with the
//! selection policy the paper leaves open (seed000b.md §A.1.4): first, random or least-loaded.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::orientation::Orientation;
use crate::rng::SimRng;
use crate::topology::Topology;

/// Marker for "unreachable".
pub const UNREACHABLE: u32 = u32::MAX;

/// A turn-permission function: may a packet that arrived on `cin` (`None` = from a host) leave
/// on `cout`?
pub trait Turns {
    /// Whether the turn is allowed.
    fn allowed(&self, topo: &Topology, cin: Option<usize>, cout: usize) -> bool;
}

impl Turns for Orientation {
    fn allowed(&self, topo: &Topology, cin: Option<usize>, cout: usize) -> bool {
        self.turn_allowed(topo, cin, cout)
    }
}

/// All turns allowed (topological minimal routing).
#[derive(Clone, Copy, Debug, Default)]
pub struct AnyTurn;

impl Turns for AnyTurn {
    fn allowed(&self, _: &Topology, _: Option<usize>, _: usize) -> bool {
        true
    }
}

/// Remaining legal hop counts for every (destination, channel) and (source, destination).
#[derive(Clone, Debug)]
pub struct LegalPaths {
    n: usize,
    channels: usize,
    /// `rem[d * channels + c]`.
    rem: Vec<u32>,
    /// `dist[s * n + d]`.
    dist: Vec<u32>,
    /// Allowed successor channels of each channel.
    succ: Vec<Vec<usize>>,
    /// Allowed first channels per switch (all live out channels for injection).
    first: Vec<Vec<usize>>,
}

impl LegalPaths {
    /// Computes legal distances for the turn set `turns` on the live part of `topo`.
    pub fn new(topo: &Topology, turns: &impl Turns) -> Self {
        let n = topo.switches();
        let channels = topo.channels();
        let out_of = |x: usize| {
            topo.adjacent(x)
                .iter()
                .map(move |nb| topo.channel(nb.link, x))
        };
        let mut succ = vec![Vec::new(); channels];
        for (c, list) in succ.iter_mut().enumerate() {
            if topo.link_live(c / 2) {
                let x = topo.channel_dst(c);
                list.extend(
                    out_of(x).filter(|&o| o / 2 != c / 2 && turns.allowed(topo, Some(c), o)),
                );
            }
        }
        let first: Vec<Vec<usize>> = (0..n)
            .map(|x| {
                out_of(x)
                    .filter(|&o| turns.allowed(topo, None, o))
                    .collect()
            })
            .collect();
        let mut pred = vec![Vec::new(); channels];
        for (c, list) in succ.iter().enumerate() {
            for &o in list {
                pred[o].push(c);
            }
        }
        let mut rem = vec![UNREACHABLE; n * channels];
        let mut queue = VecDeque::new();
        for d in 0..n {
            let row = &mut rem[d * channels..(d + 1) * channels];
            for c in (0..channels).filter(|&c| topo.link_live(c / 2) && topo.channel_dst(c) == d) {
                row[c] = 0;
                queue.push_back(c);
            }
            while let Some(c) = queue.pop_front() {
                for &p in &pred[c] {
                    if row[p] == UNREACHABLE {
                        row[p] = row[c] + 1;
                        queue.push_back(p);
                    }
                }
            }
        }
        let mut dist = vec![UNREACHABLE; n * n];
        for s in (0..n).filter(|&s| topo.switch_up(s)) {
            for d in 0..n {
                dist[s * n + d] = if s == d {
                    0
                } else {
                    first[s]
                        .iter()
                        .map(|&c| rem[d * channels + c])
                        .min()
                        .unwrap_or(UNREACHABLE)
                        .saturating_add(1)
                };
            }
        }
        LegalPaths {
            n,
            channels,
            rem,
            dist,
            succ,
            first,
        }
    }

    /// Number of switches.
    pub fn switches(&self) -> usize {
        self.n
    }

    /// Legal distance from switch `s` to `d` (`UNREACHABLE` if none).
    pub fn distance(&self, s: usize, d: usize) -> u32 {
        self.dist[s * self.n + d]
    }

    /// Hops still needed toward `d` after traversing channel `c`.
    pub fn remaining(&self, d: usize, c: usize) -> u32 {
        self.rem[d * self.channels + c]
    }

    /// Remaining hops in state `cin` at switch `x` (host injection when `cin` is `None`).
    pub fn state_remaining(&self, x: usize, cin: Option<usize>, d: usize) -> u32 {
        match cin {
            Some(c) => self.remaining(d, c),
            None => self.distance(x, d),
        }
    }

    /// Allowed next channels on a shortest legal path toward `d`, from state (`x`, `cin`).
    pub fn next_channels(
        &self,
        x: usize,
        cin: Option<usize>,
        d: usize,
    ) -> impl Iterator<Item = usize> + '_ {
        let here = self.state_remaining(x, cin, d);
        let list: &[usize] = match cin {
            Some(c) => &self.succ[c],
            None => &self.first[x],
        };
        list.iter().copied().filter(move |&o| {
            here != UNREACHABLE && here > 0 && self.remaining(d, o).saturating_add(1) == here
        })
    }
}

/// How one path per pair is chosen among the shortest legal ones.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PathPolicy {
    /// Lowest output port at every hop.
    First,
    /// Uniformly random at every hop (seeded).
    Random,
    /// The next channel that carries the fewest already-chosen paths (pairs in id order),
    /// which balances "crossing paths"; ties to the lowest port.
    #[default]
    LeastLoaded,
}

/// One switch-level path (list of channels) per ordered pair of live switches.
#[derive(Clone, Debug)]
pub struct PathSet {
    n: usize,
    paths: Vec<Vec<usize>>,
}

impl PathSet {
    /// Chooses one shortest legal path per pair. Unreachable pairs get an empty path.
    pub fn select(
        topo: &Topology,
        legal: &LegalPaths,
        policy: PathPolicy,
        rng: &mut SimRng,
    ) -> Self {
        let n = topo.switches();
        let mut load = vec![0u32; topo.channels()];
        let mut paths = vec![Vec::new(); n * n];
        let mut options = Vec::new();
        for s in (0..n).filter(|&s| topo.switch_up(s)) {
            for d in (0..n).filter(|&d| d != s && legal.distance(s, d) != UNREACHABLE) {
                let mut x = s;
                let mut cin = None;
                let mut path = Vec::new();
                while x != d {
                    options.clear();
                    options.extend(legal.next_channels(x, cin, d));
                    let c = match policy {
                        PathPolicy::First => options[0],
                        PathPolicy::Random => options[rng.below(options.len())],
                        PathPolicy::LeastLoaded => *options
                            .iter()
                            .min_by_key(|&&c| load[c])
                            .unwrap_or(&options[0]),
                    };
                    load[c] += 1;
                    path.push(c);
                    cin = Some(c);
                    x = topo.channel_dst(c);
                }
                paths[s * n + d] = path;
            }
        }
        PathSet { n, paths }
    }

    /// Builds a path set from explicit paths (`paths[s * n + d]`), e.g. a planted routing.
    pub fn from_paths(n: usize, paths: Vec<Vec<usize>>) -> Self {
        PathSet { n, paths }
    }

    /// Number of switches.
    pub fn switches(&self) -> usize {
        self.n
    }

    /// Channels of the path from `s` to `d` (empty when `s == d`).
    pub fn path(&self, s: usize, d: usize) -> &[usize] {
        &self.paths[s * self.n + d]
    }

    /// Number of chosen paths through each channel.
    pub fn channel_load(&self, channels: usize) -> Vec<u32> {
        let mut load = vec![0u32; channels];
        for p in &self.paths {
            for &c in p {
                load[c] += 1;
            }
        }
        load
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::tests::ring;

    #[test]
    fn ring_updown_distances_by_hand() {
        // Ring 0-1-2-3-0, ranks 3,2,1,0: switch 0 is the root, 3 the bottom (down→up
        // forbidden at 3).
        let t = ring(4, 1);
        let o = Orientation::from_ranks(&t, &[3, 2, 1, 0]);
        let lp = LegalPaths::new(&t, &o);
        // 2 -> 0: 2-1-0 (up, up) or 2-3-0 (down, up: forbidden). Legal distance 2, one way.
        assert_eq!(lp.distance(2, 0), 2);
        let via: Vec<usize> = lp
            .next_channels(2, None, 0)
            .map(|c| t.channel_dst(c))
            .collect();
        assert_eq!(via, vec![1]);
        // 1 -> 3: 1-0-3 (up, down) and 1-2-3 (down, down) are both legal.
        assert_eq!(lp.next_channels(1, None, 3).count(), 2);
        // Without restrictions 2 -> 0 has two shortest paths.
        let free = LegalPaths::new(&t, &AnyTurn);
        assert_eq!(free.next_channels(2, None, 0).count(), 2);
    }

    #[test]
    fn path_policies() {
        let t = ring(4, 1);
        let o = Orientation::from_ranks(&t, &[3, 2, 1, 0]);
        let lp = LegalPaths::new(&t, &o);
        let first = PathSet::select(&t, &lp, PathPolicy::First, &mut SimRng::new(0));
        assert_eq!(first.path(2, 0).len(), 2);
        assert_eq!(t.channel_dst(first.path(2, 0)[0]), 1);
        let ll = PathSet::select(&t, &lp, PathPolicy::LeastLoaded, &mut SimRng::new(0));
        let load = ll.channel_load(t.channels());
        assert_eq!(
            load.iter().sum::<u32>() as usize,
            (0..4)
                .flat_map(|s| (0..4).map(move |d| (s, d)))
                .map(|(s, d)| lp.distance(s, d) as usize)
                .sum::<usize>()
        );
    }
}
