//! Routing: link orientations (up*/down*), legal shortest paths, routing tables and the routing
//! methods of the three papers, selected by a typed [`RoutingSpec`].
//!
//! Every method first produces an [`Orientation`] (a correct directed graph), then tables:
//! distributed tables with all shortest legal paths ([`RoutingSpec::UpDown`]), deterministic
//! source routes with a path policy ([`RoutingSpec::Source`], Paper A's simulations) or minimal
//! adaptive routing with the orientation as escape ([`RoutingSpec::Adaptive`], Paper C).

pub mod export;
pub mod orientation;
pub mod paths;
pub mod search;
pub mod tables;
pub mod trees;

use serde::{Deserialize, Serialize};

pub use orientation::Orientation;
pub use paths::{LegalPaths, PathPolicy, PathSet};
pub use tables::{
    AdaptiveRouting, AnyRouting, Candidate, RouteQuery, Routing, SourceRouting, TableRouting,
};
pub use trees::RootPolicy;

use crate::error::Result;
use crate::rng::SimRng;
use crate::topology::Topology;

/// How the up*/down* orientation is obtained.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "method", rename_all = "snake_case", deny_unknown_fields)]
pub enum OrientationSpec {
    /// BFS tree, root = lowest id (Autonet MDST, Paper B).
    Mdst,
    /// BFS tree, root = minimum average distance (Paper A's UD_BFS).
    UdBfs,
    /// BFS tree with an explicit root policy.
    Bfs {
        /// Root choice.
        root: RootPolicy,
    },
    /// Propagation-order spanning tree from `initiator` (default: lowest id), seeded timing.
    Post {
        /// Initiator switch.
        #[serde(default)]
        initiator: Option<usize>,
        /// Seed of the propagation delays.
        #[serde(default)]
        seed: u64,
    },
    /// Paper A's DFS tree with node labelling and the all-roots heuristic.
    UdDfs,
    /// DFS tree from one start node.
    DfsFrom {
        /// Start node.
        start: usize,
    },
    /// Best correct orientation by exhaustive enumeration (small networks).
    Exhaustive {
        /// Largest number of links accepted.
        #[serde(default = "search::default_max_links")]
        max_links: usize,
    },
    /// Paper B's genetic algorithm.
    Genetic(search::GeneticParams),
}

impl OrientationSpec {
    /// Short name for reports (UD_BFS, MDST, POST, UD_DFS, OPT, GA, ...).
    pub fn label(&self) -> String {
        match self {
            OrientationSpec::Mdst => "MDST".into(),
            OrientationSpec::UdBfs => "UD_BFS".into(),
            OrientationSpec::Bfs { root } => format!("BFS({root:?})"),
            OrientationSpec::Post { .. } => "POST".into(),
            OrientationSpec::UdDfs => "UD_DFS".into(),
            OrientationSpec::DfsFrom { start } => format!("DFS({start})"),
            OrientationSpec::Exhaustive { .. } => "OPT".into(),
            OrientationSpec::Genetic(_) => "GA".into(),
        }
    }

    /// Computes the orientation on the live part of `topo`; the result is validated.
    pub fn orient(&self, topo: &Topology) -> Result<Orientation> {
        let o = match self {
            OrientationSpec::Mdst => {
                trees::bfs_orientation(topo, trees::choose_root(topo, RootPolicy::LowestId)?)
            }
            OrientationSpec::UdBfs => trees::bfs_orientation(
                topo,
                trees::choose_root(topo, RootPolicy::MinAverageDistance)?,
            ),
            OrientationSpec::Bfs { root } => {
                trees::bfs_orientation(topo, trees::choose_root(topo, *root)?)
            }
            OrientationSpec::Post { initiator, seed } => {
                let root = trees::choose_root(
                    topo,
                    initiator.map_or(RootPolicy::LowestId, RootPolicy::Given),
                )?;
                trees::post_orientation(topo, root, &mut SimRng::new(*seed))
            }
            OrientationSpec::UdDfs => trees::ud_dfs(topo, PathPolicy::LeastLoaded)?.0,
            OrientationSpec::DfsFrom { start } => {
                let s = trees::choose_root(topo, RootPolicy::Given(*start))?;
                trees::dfs_orientation(topo, s)
            }
            OrientationSpec::Exhaustive { max_links } => {
                search::exhaustive(topo, &search::Fitness::default(), *max_links)?.orientation
            }
            OrientationSpec::Genetic(p) => search::genetic(topo, p)?.orientation,
        };
        o.validate(topo)?;
        Ok(o)
    }
}

/// A complete routing method.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum RoutingSpec {
    /// Distributed up*/down* tables holding all shortest legal paths.
    UpDown {
        /// Orientation method.
        orientation: OrientationSpec,
    },
    /// Deterministic source routing (one shortest legal path per switch pair).
    Source {
        /// Orientation method.
        orientation: OrientationSpec,
        /// Path selection policy.
        #[serde(default)]
        policy: PathPolicy,
        /// Seed for the random policy.
        #[serde(default)]
        seed: u64,
    },
    /// Minimal adaptive routing (VC 0) with an up*/down* escape (VC 1).
    Adaptive {
        /// Orientation of the escape network.
        escape: OrientationSpec,
    },
}

/// A routing method applied to a topology.
#[derive(Clone, Debug)]
pub struct BuiltRouting {
    /// The up*/down* orientation used (escape orientation for adaptive routing).
    pub orientation: Orientation,
    /// One path per pair (the routes themselves for source routing; least-loaded otherwise),
    /// used for the crossing-paths metric.
    pub paths: PathSet,
    /// The routing function.
    pub routing: AnyRouting,
}

impl RoutingSpec {
    /// Orientation method.
    pub fn orientation(&self) -> &OrientationSpec {
        match self {
            RoutingSpec::UpDown { orientation } | RoutingSpec::Source { orientation, .. } => {
                orientation
            }
            RoutingSpec::Adaptive { escape } => escape,
        }
    }

    /// Builds the routing for `topo`. `may_leave_escape` is the switching rule for adaptive
    /// routing (true for virtual cut-through, false for wormhole).
    pub fn build(&self, topo: &Topology, may_leave_escape: bool) -> Result<BuiltRouting> {
        let orientation = self.orientation().orient(topo)?;
        let legal = LegalPaths::new(topo, &orientation);
        let (policy, seed) = match self {
            RoutingSpec::Source { policy, seed, .. } => (*policy, *seed),
            _ => (PathPolicy::LeastLoaded, 0),
        };
        let paths = PathSet::select(topo, &legal, policy, &mut SimRng::new(seed));
        let routing = match self {
            RoutingSpec::UpDown { .. } => {
                AnyRouting::Table(TableRouting::from_legal(topo, &legal, 0, false))
            }
            RoutingSpec::Source { .. } => AnyRouting::Source(SourceRouting::new(paths.clone())),
            RoutingSpec::Adaptive { .. } => {
                AnyRouting::Adaptive(AdaptiveRouting::new(topo, &orientation, may_leave_escape))
            }
        };
        Ok(BuiltRouting {
            orientation,
            paths,
            routing,
        })
    }
}
