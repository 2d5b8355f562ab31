//! Link orientations (the "directed graphs" of Paper B): every live link gets an *up end*.
//! Up*/down* routing then allows a path of zero or more up hops followed by zero or more down
//! hops; the forbidden turn is down→up (Autonet; seed000b.md §0).
//!
//! An orientation is *correct* (Papers B and C, §2.1) when it is acyclic (arcs point to the up
//! end) and has exactly one *root*: a node that is the source of no arc, i.e. the up end of all of
//! its links. [`Orientation::validate`] checks both and names the offending roots or a cycle.
//! [`Orientation::from_ranks`] turns any total order of the switches into an orientation (higher
//! rank = up end); BFS, POST and DFS orientations are all built that way.

use crate::error::{Result, SimError};
use crate::topology::Topology;

/// Up end per link (`None` for links that were not live when the orientation was made).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Orientation {
    up: Vec<Option<usize>>,
}

impl Orientation {
    /// Orientation where, on every live link, the end with the higher `rank` is up.
    /// Ranks of the two ends of a live link must differ.
    pub fn from_ranks(topo: &Topology, rank: &[u64]) -> Self {
        let up = (0..topo.links())
            .map(|l| {
                let k = topo.link(l);
                topo.link_live(l)
                    .then(|| if rank[k.b] > rank[k.a] { k.b } else { k.a })
            })
            .collect();
        Orientation { up }
    }

    /// Orientation from Paper B's chromosome: bit `l` set means the higher-numbered end of link
    /// `l` is up. Bits of links that are not live are ignored.
    pub fn from_bits(topo: &Topology, bits: &[bool]) -> Self {
        let up = (0..topo.links())
            .map(|l| {
                let k = topo.link(l);
                topo.link_live(l).then(|| {
                    if bits.get(l).copied().unwrap_or(false) {
                        k.b
                    } else {
                        k.a
                    }
                })
            })
            .collect();
        Orientation { up }
    }

    /// Paper B's chromosome (see [`Orientation::from_bits`]); dead links give `false`.
    pub fn bits(&self, topo: &Topology) -> Vec<bool> {
        self.up
            .iter()
            .enumerate()
            .map(|(l, u)| *u == Some(topo.link(l).b))
            .collect()
    }

    /// Up end of link `l`, if it was live.
    pub fn up_end(&self, l: usize) -> Option<usize> {
        self.up.get(l).copied().flatten()
    }

    /// Whether traversing channel `c` goes up (arrives at the up end).
    pub fn channel_up(&self, topo: &Topology, c: usize) -> bool {
        self.up_end(c / 2) == Some(topo.channel_dst(c))
    }

    /// Whether the turn from channel `cin` (into a switch) to `cout` (out of it) is allowed:
    /// everything except down→up. `None` means the packet comes from a host.
    pub fn turn_allowed(&self, topo: &Topology, cin: Option<usize>, cout: usize) -> bool {
        match cin {
            None => true,
            Some(c) => self.channel_up(topo, c) || !self.channel_up(topo, cout),
        }
    }

    /// Reverses link `l` (no-op for a dead link).
    pub fn flip(&mut self, topo: &Topology, l: usize) {
        if let Some(u) = self.up[l] {
            let k = topo.link(l);
            self.up[l] = Some(if u == k.a { k.b } else { k.a });
        }
    }

    /// Makes `end` the up end of live link `l` (no-op for a dead link or a switch not on it).
    pub fn set_up_end(&mut self, topo: &Topology, l: usize, end: usize) {
        let k = topo.link(l);
        if topo.link_live(l) && (end == k.a || end == k.b) {
            self.up[l] = Some(end);
        }
    }

    /// Forgets links that are no longer live (links that became live stay without a direction).
    pub fn restrict_to_live(&self, topo: &Topology) -> Self {
        let up = (0..topo.links()).map(|l| {
            if topo.link_live(l) {
                self.up.get(l).copied().flatten()
            } else {
                None
            }
        });
        Orientation { up: up.collect() }
    }

    /// Number of live links of `x` whose up end is the neighbour ("up links" of `x`).
    pub fn up_degree(&self, topo: &Topology, x: usize) -> usize {
        topo.adjacent(x)
            .iter()
            .filter(|n| self.up_end(n.link) == Some(n.switch))
            .count()
    }

    /// Forbidden ordered turns at `x`: arriving down from one up-neighbour and leaving up to
    /// another, `k(k-1)` for `k` up links (Paper A's restriction count, seed000b.md §A.1.5).
    pub fn restrictions_at(&self, topo: &Topology, x: usize) -> usize {
        let k = self.up_degree(topo, x);
        k * k.saturating_sub(1)
    }

    /// Total forbidden ordered turns.
    pub fn restrictions(&self, topo: &Topology) -> usize {
        (0..topo.switches())
            .filter(|&x| topo.switch_up(x))
            .map(|x| self.restrictions_at(topo, x))
            .sum()
    }

    /// Live switches that are the up end of all their live links (roots).
    pub fn roots(&self, topo: &Topology) -> Vec<usize> {
        (0..topo.switches())
            .filter(|&x| topo.switch_up(x) && self.up_degree(topo, x) == 0)
            .collect()
    }

    /// A directed cycle (switches in order), if the orientation has one.
    pub fn find_cycle(&self, topo: &Topology) -> Option<Vec<usize>> {
        let n = topo.switches();
        let succ = |x: usize| {
            topo.adjacent(x)
                .iter()
                .filter(move |nb| self.up_end(nb.link) == Some(nb.switch))
                .map(|nb| nb.switch)
        };
        let mut color = vec![0u8; n];
        let mut parent = vec![usize::MAX; n];
        for s in 0..n {
            if color[s] != 0 || !topo.switch_up(s) {
                continue;
            }
            let mut stack: Vec<(usize, Vec<usize>)> = vec![(s, succ(s).collect())];
            color[s] = 1;
            while let Some((x, next)) = stack.last_mut() {
                let x = *x;
                match next.pop() {
                    Some(y) if color[y] == 0 => {
                        color[y] = 1;
                        parent[y] = x;
                        stack.push((y, succ(y).collect()));
                    }
                    Some(y) if color[y] == 1 => {
                        let mut cycle = vec![y];
                        let mut z = x;
                        while z != y {
                            cycle.push(z);
                            z = parent[z];
                        }
                        cycle.reverse();
                        return Some(cycle);
                    }
                    Some(_) => {}
                    None => {
                        color[x] = 2;
                        stack.pop();
                    }
                }
            }
        }
        None
    }

    /// Checks Paper B's correctness conditions; the error names the roots or a cycle.
    pub fn validate(&self, topo: &Topology) -> Result<()> {
        if let Some(l) = (0..topo.links()).find(|&l| topo.link_live(l) && self.up_end(l).is_none())
        {
            return Err(SimError::Check(format!("live link {l} has no direction")));
        }
        if let Some(c) = self.find_cycle(topo) {
            let path: Vec<String> = c.iter().map(|x| x.to_string()).collect();
            return Err(SimError::Check(format!(
                "orientation has a cycle: {} -> {}",
                path.join(" -> "),
                c[0]
            )));
        }
        match self.roots(topo).as_slice() {
            [_] => Ok(()),
            [] => Err(SimError::Check("orientation has no root".into())),
            many => Err(SimError::Check(format!(
                "orientation has {} roots: {:?}",
                many.len(),
                many
            ))),
        }
    }

    /// Whether [`Orientation::validate`] passes.
    pub fn is_correct(&self, topo: &Topology) -> bool {
        self.validate(topo).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::tests::ring;

    #[test]
    fn ranks_give_correct_graph() {
        let t = ring(4, 1);
        let o = Orientation::from_ranks(&t, &[3, 2, 1, 0]);
        assert_eq!(o.roots(&t), vec![0]);
        assert!(o.is_correct(&t));
        // Switch 3 is the up end of no link (up links to 2 and 0): 2 forbidden turns.
        assert_eq!(o.restrictions_at(&t, 3), 2);
        assert_eq!(o.restrictions(&t), 2);
        let back = Orientation::from_bits(&t, &o.bits(&t));
        assert_eq!(back, o);
    }

    #[test]
    fn detects_cycle_and_two_roots() {
        let t = ring(4, 1);
        // Every link's up end is the next switch around the ring: a cycle.
        let mut o = Orientation::from_ranks(&t, &[3, 2, 1, 0]);
        for l in 0..t.links() {
            let k = t.link(l);
            let next = if (k.a + 1) % 4 == k.b { k.b } else { k.a };
            if o.up_end(l) != Some(next) {
                o.flip(&t, l);
            }
        }
        let err = o.validate(&t).unwrap_err().to_string();
        assert!(err.contains("cycle"), "{err}");
        let two = Orientation::from_ranks(&t, &[3, 0, 2, 1]);
        assert!(two
            .validate(&t)
            .unwrap_err()
            .to_string()
            .contains("2 roots"));
    }
}
