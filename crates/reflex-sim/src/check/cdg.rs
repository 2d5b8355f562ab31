//! Channel dependency graphs, their construction from routing functions and cycle search
//! (see the parent module).

use std::collections::HashSet;

use crate::error::{Result, SimError};
use crate::routing::tables::{Candidate, RouteQuery, Routing, TableRouting};
use crate::topology::Topology;

/// A channel dependency graph over (channel, VC) nodes, `node = channel * vcs + vc`.
#[derive(Clone, Debug)]
pub struct Cdg {
    vcs: usize,
    edges: Vec<Vec<u32>>,
}

impl Cdg {
    /// Empty graph for `channels` channels with `vcs` VCs each.
    pub fn new(channels: usize, vcs: usize) -> Self {
        Cdg {
            vcs,
            edges: vec![Vec::new(); channels * vcs],
        }
    }

    /// Adds the dependency (c1, v1) → (c2, v2) (duplicates are ignored).
    pub fn add(&mut self, c1: usize, v1: usize, c2: usize, v2: usize) {
        let (a, b) = (c1 * self.vcs + v1, (c2 * self.vcs + v2) as u32);
        if !self.edges[a].contains(&b) {
            self.edges[a].push(b);
        }
    }

    /// Number of dependencies.
    pub fn dependencies(&self) -> usize {
        self.edges.iter().map(Vec::len).sum()
    }

    /// A cycle of (channel, vc) nodes, if any (iterative three-colour DFS).
    pub fn find_cycle(&self) -> Option<Vec<(usize, usize)>> {
        let n = self.edges.len();
        let mut color = vec![0u8; n];
        let mut parent = vec![u32::MAX; n];
        for s in 0..n {
            if color[s] != 0 {
                continue;
            }
            color[s] = 1;
            let mut stack = vec![(s, 0usize)];
            while let Some(&mut (x, ref mut i)) = stack.last_mut() {
                if let Some(&y) = self.edges[x].get(*i) {
                    *i += 1;
                    let y = y as usize;
                    if color[y] == 0 {
                        color[y] = 1;
                        parent[y] = x as u32;
                        stack.push((y, 0));
                    } else if color[y] == 1 {
                        let mut cyc = vec![y];
                        let mut z = x;
                        while z != y {
                            cyc.push(z);
                            z = parent[z] as usize;
                        }
                        cyc.reverse();
                        return Some(
                            cyc.into_iter()
                                .map(|v| (v / self.vcs, v % self.vcs))
                                .collect(),
                        );
                    }
                } else {
                    color[x] = 2;
                    stack.pop();
                }
            }
        }
        None
    }
}

/// Renders a cycle as `s3:p5->s7:p4 vc0 => ...`.
pub fn describe_cycle(topo: &Topology, cycle: &[(usize, usize)]) -> String {
    let hop = |&(c, v): &(usize, usize)| {
        format!(
            "s{}:p{}->s{}:p{} vc{v}",
            topo.channel_src(c),
            topo.channel_out_port(c),
            topo.channel_dst(c),
            topo.channel_in_port(c)
        )
    };
    let mut parts: Vec<String> = cycle.iter().map(hop).collect();
    if let Some(first) = cycle.first() {
        parts.push(hop(first));
    }
    parts.join(" => ")
}

/// Result of following every reachable routing state.
#[derive(Clone, Debug)]
pub struct Exploration {
    /// Full CDG.
    pub cdg: Cdg,
    /// Direct dependencies among escape candidates only.
    pub escape_cdg: Cdg,
    /// Reachable states visited.
    pub states: usize,
    /// Descriptions of states (switch ≠ destination) with no candidate at all.
    pub unroutable: Vec<String>,
    /// Descriptions of states with candidates but no escape candidate.
    pub no_escape: Vec<String>,
    /// Descriptions of routes that revisit a state (loops) or exceed the hop bound.
    pub loops: Vec<String>,
}

type State = (usize, Option<usize>, usize, usize);

/// Explores all states reachable from every live source switch (see module docs).
pub fn explore(topo: &Topology, routing: &impl Routing) -> Exploration {
    let vcs = routing.vcs();
    let n = topo.switches();
    let mut ex = Exploration {
        cdg: Cdg::new(topo.channels(), vcs),
        escape_cdg: Cdg::new(topo.channels(), vcs),
        states: 0,
        unroutable: Vec::new(),
        no_escape: Vec::new(),
        loops: Vec::new(),
    };
    let hop_bound = topo.channels() * vcs + 1;
    let mut cands: Vec<Candidate> = Vec::new();
    let live: Vec<usize> = (0..n).filter(|&s| topo.switch_up(s)).collect();
    for &d in &live {
        // Source-independent routings share visited states across sources.
        let mut visited: HashSet<State> = HashSet::new();
        for &s in live.iter().filter(|&&s| s != d) {
            if routing.source_dependent() {
                visited.clear();
            }
            let mut stack: Vec<(State, bool)> = vec![((s, None, 0, 0), false)];
            while let Some(((x, cin, vin, hops), in_escape)) = stack.pop() {
                let key = if routing.source_dependent() {
                    (x, cin, vin, hops)
                } else {
                    (x, cin, vin, 0)
                };
                if !visited.insert(key) {
                    continue;
                }
                ex.states += 1;
                if hops > hop_bound {
                    ex.loops
                        .push(format!("route {s}->{d} exceeds {hop_bound} hops"));
                    continue;
                }
                cands.clear();
                let q = RouteQuery {
                    switch: x,
                    in_channel: cin,
                    in_vc: vin,
                    src: s,
                    dst: d,
                    hops,
                };
                routing.candidates(&q, &mut cands);
                let here = || {
                    format!(
                        "switch {x} (from {}) toward {d}",
                        cin.map_or("host".into(), |c| format!("channel {c}"))
                    )
                };
                if cands.is_empty() {
                    ex.unroutable.push(here());
                    continue;
                }
                if vcs > 1 && !cands.iter().any(|k| k.escape) {
                    ex.no_escape.push(here());
                }
                for k in cands.iter() {
                    let c = k.channel as usize;
                    if !topo.link_live(c / 2) || topo.channel_src(c) != x {
                        ex.unroutable.push(format!(
                            "{}: candidate channel {c} is not a live channel out of switch {x}",
                            here()
                        ));
                        continue;
                    }
                    if let Some(ci) = cin {
                        ex.cdg.add(ci, vin, c, usize::from(k.vc));
                        if in_escape && k.escape {
                            ex.escape_cdg.add(ci, vin, c, usize::from(k.vc));
                        }
                    }
                    let y = topo.channel_dst(c);
                    if y != d {
                        stack.push(((y, Some(c), usize::from(k.vc), hops + 1), k.escape));
                    }
                }
            }
        }
    }
    ex
}

/// Summary returned by successful checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CheckSummary {
    /// Reachable routing states.
    pub states: usize,
    /// Channel dependencies.
    pub dependencies: usize,
}

fn first_problem(list: &[String], what: &str) -> Result<()> {
    match list.first() {
        None => Ok(()),
        Some(p) => Err(SimError::Check(format!(
            "{what}: {p} ({} such states)",
            list.len()
        ))),
    }
}

/// Connectivity plus an acyclic CDG (deadlock freedom without relying on escape channels).
pub fn check_deadlock_free(topo: &Topology, routing: &impl Routing) -> Result<CheckSummary> {
    let ex = explore(topo, routing);
    first_problem(&ex.unroutable, "no route")?;
    first_problem(&ex.loops, "routing loop")?;
    if let Some(cycle) = ex.cdg.find_cycle() {
        return Err(SimError::Check(format!(
            "cyclic channel dependencies ({} channels): {}",
            cycle.len(),
            describe_cycle(topo, &cycle)
        )));
    }
    Ok(CheckSummary {
        states: ex.states,
        dependencies: ex.cdg.dependencies(),
    })
}

/// Duato's escape condition (see module docs).
pub fn check_escape(topo: &Topology, routing: &impl Routing) -> Result<CheckSummary> {
    let ex = explore(topo, routing);
    first_problem(&ex.unroutable, "no route")?;
    first_problem(&ex.loops, "routing loop")?;
    first_problem(&ex.no_escape, "no escape candidate")?;
    if let Some(cycle) = ex.escape_cdg.find_cycle() {
        return Err(SimError::Check(format!(
            "cyclic escape dependencies ({} channels): {}",
            cycle.len(),
            describe_cycle(topo, &cycle)
        )));
    }
    Ok(CheckSummary {
        states: ex.states,
        dependencies: ex.escape_cdg.dependencies(),
    })
}

/// Acyclicity of the union of every entry of several table sets (one VC each; see module docs).
pub fn check_tables_union(topo: &Topology, tables: &[&TableRouting]) -> Result<usize> {
    let mut cdg = Cdg::new(topo.channels(), 1);
    for t in tables {
        for c in 0..topo.channels() {
            let x = topo.channel_dst(c);
            for d in (0..t.switches()).filter(|&d| d != x) {
                for k in t.lookup(x, Some(c), d) {
                    cdg.add(c, 0, k.channel as usize, 0);
                }
            }
        }
    }
    match cdg.find_cycle() {
        None => Ok(cdg.dependencies()),
        Some(cycle) => Err(SimError::Check(format!(
            "cyclic dependencies in the union of {} table sets: {}",
            tables.len(),
            describe_cycle(topo, &cycle)
        ))),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::rng::SimRng;
    use crate::routing::orientation::Orientation;
    use crate::routing::paths::{AnyTurn, LegalPaths, PathPolicy, PathSet};
    use crate::routing::tables::{AdaptiveRouting, SourceRouting};
    use crate::routing::trees::{bfs_orientation, ud_dfs};
    use crate::topology::generate::irregular;
    use crate::topology::tests::ring;

    /// Clockwise routing on a ring: every packet goes +1 around, a classic CDG cycle.
    pub(crate) fn clockwise(t: &Topology) -> SourceRouting {
        let n = t.switches();
        let mut paths = vec![Vec::new(); n * n];
        for s in 0..n {
            for d in (0..n).filter(|&d| d != s) {
                let mut x = s;
                while x != d {
                    let y = (x + 1) % n;
                    let nb = t.adjacent(x).iter().find(|nb| nb.switch == y).unwrap();
                    paths[s * n + d].push(t.channel(nb.link, x));
                    x = y;
                }
            }
        }
        SourceRouting::new(PathSet::from_paths(n, paths))
    }

    #[test]
    fn finds_planted_cycle() {
        let t = ring(4, 1);
        let err = check_deadlock_free(&t, &clockwise(&t))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("cyclic channel dependencies (4 channels)"),
            "{err}"
        );
        assert!(err.contains("s0:p"), "{err}");
    }

    #[test]
    fn minimal_routing_on_ring_is_cyclic_updown_is_not() {
        let t = ring(5, 1);
        let min = TableRouting::all_shortest(&t, &AnyTurn, 0, false);
        assert!(check_deadlock_free(&t, &min).is_err());
        let ud = TableRouting::all_shortest(&t, &bfs_orientation(&t, 0), 0, false);
        let s = check_deadlock_free(&t, &ud).unwrap();
        assert!(s.dependencies > 0);
    }

    #[test]
    fn escape_condition() {
        let t = ring(5, 1);
        let o = bfs_orientation(&t, 0);
        check_escape(&t, &AdaptiveRouting::new(&t, &o, true)).unwrap();
        check_escape(&t, &AdaptiveRouting::new(&t, &o, false)).unwrap();
        // A cyclic "escape" (minimal routing) must be rejected.
        let bad = AdaptiveRouting::new(&t, &AnyTurn, true);
        assert!(check_escape(&t, &bad)
            .unwrap_err()
            .to_string()
            .contains("cyclic escape"));
    }

    #[test]
    fn union_of_two_orientations_can_cycle() {
        let t = ring(4, 1);
        let a =
            TableRouting::all_shortest(&t, &Orientation::from_ranks(&t, &[3, 2, 1, 0]), 0, false);
        let b =
            TableRouting::all_shortest(&t, &Orientation::from_ranks(&t, &[1, 0, 3, 2]), 0, false);
        check_tables_union(&t, &[&a]).unwrap();
        assert!(check_tables_union(&t, &[&a, &b]).is_err());
    }

    #[test]
    fn random_topologies_pass_all_checks() {
        // 100 random topologies per size is the release-mode sweep (`reflex-sim check-random`);
        // the debug test keeps a smaller sample.
        for seed in 0..6 {
            let t = irregular(12, 8, 4, &mut SimRng::new(seed)).unwrap();
            for o in [
                bfs_orientation(&t, 0),
                ud_dfs(&t, PathPolicy::LeastLoaded).unwrap().0,
            ] {
                let legal = LegalPaths::new(&t, &o);
                check_deadlock_free(&t, &TableRouting::from_legal(&t, &legal, 0, false)).unwrap();
                let ps = PathSet::select(&t, &legal, PathPolicy::Random, &mut SimRng::new(seed));
                check_deadlock_free(&t, &SourceRouting::new(ps)).unwrap();
                check_escape(&t, &AdaptiveRouting::new(&t, &o, true)).unwrap();
            }
        }
    }
}
