//! Topology generators, described by a typed [`TopologySpec`].
//!
//! - `irregular`: the papers' random NOW rule (seed000b.md §A.2, "external: random port pairing, a
//!   connected graph, at most one link between two switches"): every switch has `ports` ports,
//!   `hosts_per_switch` of them to hosts; the other ports are shuffled and paired at random,
//!   skipping self-links and parallel links; a draw that is not connected is thrown away and drawn
//!   again. Some ports may stay unused.
//! - `hierarchical`: groups of irregular sub-networks joined by a random tree of group links plus a
//!   few extra links (Paper B's Fig. 4 family: sub-networks whose only connections pass near a root).
//! - `mesh`, `torus` (any number of dimensions) and `fat_tree` (k-ary n-tree) for sanity checks.
//! - `file`: an edge-list or BookSim2 `anynet` file (see [`super::format`]).

use serde::{Deserialize, Serialize};

use super::{Topology, TopologyBuilder};
use crate::error::{Result, SimError};
use crate::rng::SimRng;

fn default_ports() -> usize {
    8
}
fn default_hosts() -> usize {
    4
}
fn default_one() -> usize {
    1
}

/// How to obtain a topology.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum TopologySpec {
    /// Random irregular network (see module docs).
    Irregular {
        /// Number of switches.
        switches: usize,
        /// Ports per switch (default 8).
        #[serde(default = "default_ports")]
        ports: usize,
        /// Ports per switch used by hosts (default 4).
        #[serde(default = "default_hosts")]
        hosts_per_switch: usize,
        /// Generator seed.
        seed: u64,
    },
    /// Groups of irregular sub-networks joined sparsely.
    Hierarchical {
        /// Number of groups.
        groups: usize,
        /// Switches per group.
        group_size: usize,
        /// Ports per switch (default 8).
        #[serde(default = "default_ports")]
        ports: usize,
        /// Ports per switch used by hosts (default 4).
        #[serde(default = "default_hosts")]
        hosts_per_switch: usize,
        /// Links between groups beyond the joining tree (default 1).
        #[serde(default = "default_one")]
        extra_links: usize,
        /// Generator seed.
        seed: u64,
    },
    /// Mesh with the given extent per dimension.
    Mesh {
        /// Switches per dimension.
        dims: Vec<usize>,
        /// Hosts per switch (default 1).
        #[serde(default = "default_one")]
        hosts_per_switch: usize,
    },
    /// Torus (every extent at least 3, so that no parallel links appear).
    Torus {
        /// Switches per dimension.
        dims: Vec<usize>,
        /// Hosts per switch (default 1).
        #[serde(default = "default_one")]
        hosts_per_switch: usize,
    },
    /// k-ary n-tree fat tree: `n` levels of `k^(n-1)` switches with `2k` ports, `k^n` hosts.
    FatTree {
        /// Arity.
        k: usize,
        /// Levels.
        n: usize,
    },
    /// A file in the edge-list or `anynet` format (chosen by content).
    File {
        /// Path of the file.
        path: String,
    },
}

impl TopologySpec {
    /// Builds the topology.
    pub fn build(&self) -> Result<Topology> {
        match self {
            TopologySpec::Irregular {
                switches,
                ports,
                hosts_per_switch,
                seed,
            } => irregular(
                *switches,
                *ports,
                *hosts_per_switch,
                &mut SimRng::new(*seed),
            ),
            TopologySpec::Hierarchical {
                groups,
                group_size,
                ports,
                hosts_per_switch,
                extra_links,
                seed,
            } => {
                let shape = HierarchicalShape {
                    groups: *groups,
                    group_size: *group_size,
                    ports: *ports,
                    hosts_per_switch: *hosts_per_switch,
                    extra_links: *extra_links,
                };
                hierarchical(&shape, &mut SimRng::new(*seed))
            }
            TopologySpec::Mesh {
                dims,
                hosts_per_switch,
            } => grid(dims, *hosts_per_switch, false),
            TopologySpec::Torus {
                dims,
                hosts_per_switch,
            } => grid(dims, *hosts_per_switch, true),
            TopologySpec::FatTree { k, n } => fat_tree(*k, *n),
            TopologySpec::File { path } => super::format::read_path(path),
        }
    }

    /// Short human-readable label (used in reports).
    pub fn label(&self) -> String {
        match self {
            TopologySpec::Irregular { switches, seed, .. } => {
                format!("irregular-{switches}sw-s{seed}")
            }
            TopologySpec::Hierarchical {
                groups,
                group_size,
                seed,
                ..
            } => {
                format!("hier-{groups}x{group_size}-s{seed}")
            }
            TopologySpec::Mesh { dims, .. } => format!("mesh-{dims:?}"),
            TopologySpec::Torus { dims, .. } => format!("torus-{dims:?}"),
            TopologySpec::FatTree { k, n } => format!("fattree-{k}-{n}"),
            TopologySpec::File { path } => path.clone(),
        }
    }
}

/// Most draws tried before giving up on a connected irregular network.
const MAX_ATTEMPTS: usize = 10_000;

/// Random irregular network (see module docs).
pub fn irregular(
    switches: usize,
    ports: usize,
    hosts: usize,
    rng: &mut SimRng,
) -> Result<Topology> {
    if switches == 0 {
        return Err(SimError::invalid(
            "an irregular network needs at least one switch",
        ));
    }
    if hosts > ports {
        return Err(SimError::invalid(format!(
            "{hosts} hosts per switch do not fit in {ports} ports"
        )));
    }
    if switches > 1 && hosts == ports {
        return Err(SimError::invalid(
            "no ports left for switch-to-switch links",
        ));
    }
    for _ in 0..MAX_ATTEMPTS {
        let mut b = TopologyBuilder::uniform(switches, ports, hosts);
        let members: Vec<usize> = (0..switches).collect();
        pair_ports(&mut b, &members, ports - hosts, rng)?;
        let t = b.build()?;
        if t.is_connected() {
            return Ok(t);
        }
    }
    Err(SimError::invalid(format!(
        "no connected network with {switches} switches and {} switch ports found in {MAX_ATTEMPTS} draws",
        ports - hosts
    )))
}

/// Pairs up to `per_switch` free ports of each switch in `members` at random, skipping self and
/// parallel links.
fn pair_ports(
    b: &mut TopologyBuilder,
    members: &[usize],
    per_switch: usize,
    rng: &mut SimRng,
) -> Result<()> {
    let mut stubs: Vec<usize> = members
        .iter()
        .flat_map(|&s| std::iter::repeat_n(s, per_switch))
        .collect();
    rng.shuffle(&mut stubs);
    while let Some(a) = stubs.pop() {
        if let Some(j) = stubs.iter().rposition(|&c| c != a && !b.linked(a, c)) {
            let c = stubs.remove(j);
            b.connect(a, c)?;
        }
    }
    Ok(())
}

/// Shape of a hierarchical network.
#[derive(Clone, Copy, Debug)]
pub struct HierarchicalShape {
    /// Number of groups.
    pub groups: usize,
    /// Switches per group.
    pub group_size: usize,
    /// Ports per switch.
    pub ports: usize,
    /// Host ports per switch.
    pub hosts_per_switch: usize,
    /// Inter-group links beyond the joining tree.
    pub extra_links: usize,
}

/// Hierarchical network: irregular groups (one port per switch kept for group links) joined by a
/// random tree of links between groups plus `extra_links` more.
pub fn hierarchical(shape: &HierarchicalShape, rng: &mut SimRng) -> Result<Topology> {
    let HierarchicalShape {
        groups,
        group_size,
        ports,
        hosts_per_switch,
        extra_links,
    } = *shape;
    if groups == 0 || group_size == 0 || hosts_per_switch + 2 > ports {
        return Err(SimError::invalid(
            "hierarchical network needs groups, switches and 2 free ports per switch",
        ));
    }
    let n = groups * group_size;
    for _ in 0..MAX_ATTEMPTS {
        let mut b = TopologyBuilder::uniform(n, ports, hosts_per_switch);
        for g in 0..groups {
            let members: Vec<usize> = (g * group_size..(g + 1) * group_size).collect();
            pair_ports(&mut b, &members, ports - hosts_per_switch - 1, rng)?;
        }
        let mut order: Vec<usize> = (0..groups).collect();
        rng.shuffle(&mut order);
        let mut pairs: Vec<(usize, usize)> = (1..groups)
            .map(|i| (order[rng.below(i)], order[i]))
            .collect();
        for _ in 0..extra_links.min(groups * groups) {
            if groups > 1 {
                let x = rng.below(groups);
                let y = (x + 1 + rng.below(groups - 1)) % groups;
                pairs.push((x, y));
            }
        }
        for (gx, gy) in pairs {
            let pick = |b: &TopologyBuilder, g: usize, rng: &mut SimRng| {
                let free: Vec<usize> = (g * group_size..(g + 1) * group_size)
                    .filter(|&s| b.free_port(s).is_some())
                    .collect();
                (!free.is_empty()).then(|| free[rng.below(free.len())])
            };
            if let (Some(x), Some(y)) = (pick(&b, gx, rng), pick(&b, gy, rng)) {
                if !b.linked(x, y) {
                    b.connect(x, y)?;
                }
            }
        }
        let t = b.build()?;
        if t.is_connected() {
            return Ok(t);
        }
    }
    Err(SimError::invalid("no connected hierarchical network found"))
}

/// Mesh or torus with `dims` extents, row-major switch numbering.
pub fn grid(dims: &[usize], hosts: usize, wrap: bool) -> Result<Topology> {
    if dims.is_empty() || dims.contains(&0) {
        return Err(SimError::invalid(
            "grid needs at least one dimension, each of extent >= 1",
        ));
    }
    if wrap && dims.iter().any(|&d| d < 3) {
        return Err(SimError::invalid(
            "torus extents must be at least 3 (smaller ones give parallel links)",
        ));
    }
    let n: usize = dims.iter().product();
    let mut b = TopologyBuilder::uniform(n, hosts + 2 * dims.len(), hosts);
    let mut stride = 1;
    for (i, &d) in dims.iter().enumerate() {
        for s in 0..n {
            let coord = (s / stride) % d;
            let next = if coord + 1 < d {
                Some(s + stride)
            } else if wrap {
                Some(s + stride - d * stride)
            } else {
                None
            };
            if let Some(t) = next {
                b.add_link(s, hosts + 2 * i, t, hosts + 2 * i + 1);
            }
        }
        stride *= d;
    }
    b.build()
}

/// k-ary n-tree (see [`TopologySpec::FatTree`]). Switch `l * k^(n-1) + w` is switch `w` of level
/// `l` (level 0 = leaves); it links to the level-`l+1` switches whose digits equal `w`'s except
/// digit `l`.
pub fn fat_tree(k: usize, n: usize) -> Result<Topology> {
    if k < 2 || n < 1 || k.checked_pow(n as u32).is_none_or(|h| h > 1 << 16) {
        return Err(SimError::invalid(
            "fat tree needs k >= 2, n >= 1 and at most 65536 hosts",
        ));
    }
    let per_level = k.pow(n as u32 - 1);
    let mut b = TopologyBuilder::new(vec![2 * k; n * per_level]);
    for w in 0..per_level {
        for p in 0..k {
            b.add_host(w, p);
        }
    }
    for l in 0..n - 1 {
        let digit_weight = k.pow(l as u32);
        for w in 0..per_level {
            let digit = (w / digit_weight) % k;
            for j in 0..k {
                let w2 = w - digit * digit_weight + j * digit_weight;
                b.add_link(l * per_level + w, k + j, (l + 1) * per_level + w2, digit);
            }
        }
    }
    b.build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn irregular_is_connected_simple_and_seeded() {
        for seed in 0..20 {
            let t = irregular(16, 8, 4, &mut SimRng::new(seed)).unwrap();
            assert!(t.is_connected());
            assert_eq!(t.hosts(), 64);
            for s in 0..16 {
                assert!(t.adjacent(s).len() <= 4);
            }
            let again = irregular(16, 8, 4, &mut SimRng::new(seed)).unwrap();
            assert_eq!(t.link_list(), again.link_list());
        }
    }

    #[test]
    fn grids_and_fat_tree() {
        let m = grid(&[3, 3], 1, false).unwrap();
        assert_eq!(m.links(), 12);
        assert_eq!(m.distances_from(0)[8], 4);
        let t = grid(&[4, 4], 1, true).unwrap();
        assert_eq!(t.links(), 32);
        assert_eq!(t.distances_from(0)[10], 4);
        assert!(grid(&[2, 4], 1, true).is_err());
        let f = fat_tree(2, 3).unwrap();
        assert_eq!(f.switches(), 12);
        assert_eq!(f.hosts(), 8);
        assert_eq!(f.links(), 16);
        assert!(f.is_connected());
        // Leaves 0 and 3 differ in both digits: up two levels and down again.
        assert_eq!(f.distances_from(0)[3], 4);
    }

    #[test]
    fn hierarchical_connected() {
        let shape = HierarchicalShape {
            groups: 3,
            group_size: 5,
            ports: 8,
            hosts_per_switch: 4,
            extra_links: 1,
        };
        let t = hierarchical(&shape, &mut SimRng::new(3)).unwrap();
        assert!(t.is_connected());
        assert_eq!(t.switches(), 15);
    }

    #[test]
    fn spec_rejects_unknown_keys() {
        let ok: TopologySpec =
            serde_json::from_str(r#"{"kind":"irregular","switches":9,"seed":1}"#).unwrap();
        assert_eq!(ok.build().unwrap().switches(), 9);
        let bad = serde_json::from_str::<TopologySpec>(
            r#"{"kind":"irregular","switches":9,"seed":1,"sede":2}"#,
        );
        assert!(bad.is_err());
    }
}
