//! Spanning-tree based orientations.
//!
//! - **BFS** (Autonet up*/down*): the up end of a link is the end closer to the root, the lower id
//!   at equal level. Root = lowest id (Paper B's MDST), minimum average distance (Paper A's UD_BFS,
//!   after Silla & Duato) or given.
//! - **POST** (Paper B §B.1.1): the initiator floods control messages; a switch joins the tree on
//!   the first message it receives. Propagation timing is modelled by a random delay in [1, 2) per
//!   directed link (seeded), so the tree is a shortest-arrival tree; levels are tree depths.
//! - **DFS** (Paper A, UD_DFS): a DFS tree whose neighbour order prefers the neighbour with the
//!   higher average topological distance, labelled by post-order of the tree re-rooted at the end
//!   of the main branch (the reading of Paper A's labelling in seed000b.md §A.1.4); up = higher
//!   label. [`ud_dfs`] tries every start node and keeps the tree with the lowest average legal
//!   distance, ties broken on crossing paths, then on the start id.

use serde::{Deserialize, Serialize};

use super::orientation::Orientation;
use super::paths::{LegalPaths, PathPolicy, PathSet};
use crate::error::{Result, SimError};
use crate::rng::SimRng;
use crate::topology::Topology;

/// How the root of a BFS tree is chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RootPolicy {
    /// Lowest switch id (Autonet MDST).
    LowestId,
    /// Smallest average distance to the other switches, ties to the lowest id (Paper A).
    MinAverageDistance,
    /// This switch.
    Given(usize),
}

fn first_live(topo: &Topology) -> Result<usize> {
    (0..topo.switches())
        .find(|&s| topo.switch_up(s))
        .ok_or_else(|| SimError::invalid("no live switch"))
}

/// The root chosen by `policy`.
pub fn choose_root(topo: &Topology, policy: RootPolicy) -> Result<usize> {
    match policy {
        RootPolicy::LowestId => first_live(topo),
        RootPolicy::Given(s) if s < topo.switches() && topo.switch_up(s) => Ok(s),
        RootPolicy::Given(s) => Err(SimError::invalid(format!("root {s} is not a live switch"))),
        RootPolicy::MinAverageDistance => {
            let mut best = first_live(topo)?;
            let mut best_d = f64::INFINITY;
            for s in (0..topo.switches()).filter(|&s| topo.switch_up(s)) {
                let d = topo.average_distance_from(s);
                if d < best_d - 1e-12 {
                    best = s;
                    best_d = d;
                }
            }
            Ok(best)
        }
    }
}

/// Orientation from tree levels: lower level is up, lower id is up at equal level.
fn from_levels(topo: &Topology, level: &[u32]) -> Orientation {
    let n = topo.switches() as u64;
    let rank: Vec<u64> = level
        .iter()
        .enumerate()
        .map(|(s, &l)| (u64::from(u32::MAX - l.min(u32::MAX - 1))) * n + (n - s as u64))
        .collect();
    Orientation::from_ranks(topo, &rank)
}

/// BFS up*/down* orientation rooted at `root`.
pub fn bfs_orientation(topo: &Topology, root: usize) -> Orientation {
    from_levels(topo, &topo.distances_from(root))
}

/// POST orientation from `initiator`, with propagation delays drawn from `rng`.
pub fn post_orientation(topo: &Topology, initiator: usize, rng: &mut SimRng) -> Orientation {
    let n = topo.switches();
    // Dijkstra over arrival times; delays are drawn once per directed channel.
    let delay: Vec<f64> = (0..topo.channels()).map(|_| 1.0 + rng.unit()).collect();
    let mut time = vec![f64::INFINITY; n];
    let mut depth = vec![u32::MAX; n];
    let mut done = vec![false; n];
    time[initiator] = 0.0;
    depth[initiator] = 0;
    for _ in 0..n {
        let Some(x) = (0..n)
            .filter(|&x| !done[x] && time[x].is_finite())
            .min_by(|&a, &b| time[a].total_cmp(&time[b]))
        else {
            break;
        };
        done[x] = true;
        for nb in topo.adjacent(x) {
            let t = time[x] + delay[topo.channel(nb.link, x)];
            if t < time[nb.switch] {
                time[nb.switch] = t;
                depth[nb.switch] = depth[x] + 1;
            }
        }
    }
    from_levels(topo, &depth)
}

/// DFS tree from `start` with Paper A's neighbour heuristic; returns (parent, children in
/// discovery order, main branch from `start` to the first dead end).
fn dfs_tree(topo: &Topology, start: usize, avg: &[f64]) -> (Vec<Vec<usize>>, Vec<usize>) {
    let n = topo.switches();
    let mut visited = vec![false; n];
    let mut children = vec![Vec::new(); n];
    let mut main = vec![start];
    let mut main_done = false;
    let order = |x: usize| {
        let mut nbs: Vec<usize> = topo.adjacent(x).iter().map(|nb| nb.switch).collect();
        nbs.sort_by(|&a, &b| avg[b].total_cmp(&avg[a]).then(a.cmp(&b)));
        nbs
    };
    visited[start] = true;
    let mut stack: Vec<(usize, Vec<usize>)> = vec![(start, order(start))];
    while let Some((x, pending)) = stack.last_mut() {
        let x = *x;
        // `pending` is sorted best-first; take from the front.
        if let Some(pos) = pending.iter().position(|&y| !visited[y]) {
            let y = pending.remove(pos);
            visited[y] = true;
            children[x].push(y);
            if !main_done {
                main.push(y);
            }
            stack.push((y, order(y)));
        } else {
            main_done = true;
            stack.pop();
        }
    }
    (children, main)
}

/// Sancho labelling of the DFS tree from `start` (labels `1..=N` on live switches, 0 elsewhere).
pub fn dfs_labels(topo: &Topology, start: usize) -> Vec<u64> {
    let avg: Vec<f64> = (0..topo.switches())
        .map(|s| topo.average_distance_from(s))
        .collect();
    let (children, main) = dfs_tree(topo, start, &avg);
    let mut label = vec![0u64; topo.switches()];
    let mut next = 1u64;
    fn emit_sub(v: usize, children: &[Vec<usize>], label: &mut [u64], next: &mut u64) {
        for &c in &children[v] {
            emit_sub(c, children, label, next);
        }
        label[v] = *next;
        *next += 1;
    }
    // Walk the main branch from its start (label order = emission order of the re-rooted
    // post-order): block(m_{j-1}), then m_j's secondary subtrees, then m_j.
    for (j, &m) in main.iter().enumerate() {
        let main_child = main.get(j + 1).copied();
        for &c in children[m].iter().filter(|&&c| Some(c) != main_child) {
            emit_sub(c, &children, &mut label, &mut next);
        }
        label[m] = next;
        next += 1;
    }
    label
}

/// UD_DFS orientation from one start node.
pub fn dfs_orientation(topo: &Topology, start: usize) -> Orientation {
    Orientation::from_ranks(topo, &dfs_labels(topo, start))
}

/// Score used to compare candidate orientations: (average legal distance, crossing paths).
pub fn orientation_score(topo: &Topology, o: &Orientation, policy: PathPolicy) -> (f64, u32) {
    let legal = LegalPaths::new(topo, o);
    let paths = PathSet::select(topo, &legal, policy, &mut SimRng::new(0));
    let n = topo.switches();
    let (mut sum, mut cnt) = (0u64, 0u64);
    for s in (0..n).filter(|&s| topo.switch_up(s)) {
        for d in (0..n).filter(|&d| d != s && topo.switch_up(d)) {
            sum += u64::from(legal.distance(s, d).min(1 << 20));
            cnt += 1;
        }
    }
    let avg = if cnt == 0 {
        0.0
    } else {
        sum as f64 / cnt as f64
    };
    (
        avg,
        paths
            .channel_load(topo.channels())
            .into_iter()
            .max()
            .unwrap_or(0),
    )
}

/// Paper A's all-roots heuristic (see module docs). Returns the orientation and its start node.
pub fn ud_dfs(topo: &Topology, policy: PathPolicy) -> Result<(Orientation, usize)> {
    let mut best: Option<(f64, u32, usize, Orientation)> = None;
    for start in (0..topo.switches()).filter(|&s| topo.switch_up(s)) {
        let o = dfs_orientation(topo, start);
        let (avg, cross) = orientation_score(topo, &o, policy);
        let better = match &best {
            None => true,
            Some((ba, bc, _, _)) => avg < ba - 1e-12 || ((avg - ba).abs() <= 1e-12 && cross < *bc),
        };
        if better {
            best = Some((avg, cross, start, o));
        }
    }
    best.map(|(_, _, s, o)| (o, s))
        .ok_or_else(|| SimError::invalid("no live switch"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::generate::irregular;
    use crate::topology::tests::ring;

    #[test]
    fn bfs_ring_by_hand() {
        let t = ring(5, 1);
        let o = bfs_orientation(&t, 0);
        assert_eq!(o.roots(&t), vec![0]);
        // Levels 0,1,2,2,1: the 2-3 link is same-level, lower id (2) is up.
        let l23 = (0..t.links())
            .find(|&l| t.link(l).a == 2 && t.link(l).b == 3)
            .unwrap();
        assert_eq!(o.up_end(l23), Some(2));
        assert_eq!(choose_root(&t, RootPolicy::LowestId).unwrap(), 0);
        assert_eq!(choose_root(&t, RootPolicy::Given(3)).unwrap(), 3);
        assert!(choose_root(&t, RootPolicy::Given(9)).is_err());
    }

    #[test]
    fn dfs_labels_on_a_path_with_branch() {
        // 0-1-2 path plus 1-3: DFS from 0 goes 0,1,2 (2 has avg dist higher than 3? both 2.0/..)
        let mut b = crate::topology::TopologyBuilder::uniform(4, 4, 1);
        b.connect(0, 1)
            .unwrap()
            .connect(1, 2)
            .unwrap()
            .connect(1, 3)
            .unwrap();
        let t = b.build().unwrap();
        let labels = dfs_labels(&t, 0);
        // Main branch 0 -> 1 -> 2 (ties broken to the lower id); secondary branch 3 hangs at 1.
        // Emission: 0, then 3 (secondary of 1), then 1, then 2.
        assert_eq!(labels, vec![1, 3, 4, 2]);
        let o = dfs_orientation(&t, 0);
        assert_eq!(o.roots(&t), vec![2]);
    }

    #[test]
    fn all_orientations_correct_on_random_networks() {
        for seed in 0..10 {
            let t = irregular(16, 8, 4, &mut SimRng::new(seed)).unwrap();
            for s in [0, 5, 15] {
                bfs_orientation(&t, s).validate(&t).unwrap();
                dfs_orientation(&t, s).validate(&t).unwrap();
                post_orientation(&t, s, &mut SimRng::new(seed))
                    .validate(&t)
                    .unwrap();
            }
            ud_dfs(&t, PathPolicy::LeastLoaded)
                .unwrap()
                .0
                .validate(&t)
                .unwrap();
        }
    }
}
