//! `reflex-sim`: the interconnect simulator of Reflex.
//!
//! It studies switch-based networks of workstations with irregular topologies, following three
//! CANPC 2000 papers (summarised in `reference/seed000b.md`): up*/down* routing on BFS, POST and
//! DFS spanning trees (Sancho, Robles, Duato), optimised link orientations found by exhaustive
//! search or a genetic algorithm (Alfaro et al.), and dynamic reconfiguration with adaptive
//! routing (Bermúdez et al.). The pieces are kept apart:
//!
//! - [`topology`]: port graphs, generators and file formats;
//! - [`routing`]: orientations, legal paths and routing tables (candidate sets; routing never
//!   sees buffer state);
//! - [`check`]: correct-graph, channel-dependency and escape (Duato) checks;
//! - [`metrics`]: the routing metrics of Paper A's Table 1;
//! - [`sim`]: the flit-level wormhole / virtual cut-through simulator (two-phase clock, one seeded
//!   RNG, no globals), traffic, selection policy and sweeps;
//! - [`reconfig`]: timed topology events, static and dynamic reconfiguration;
//! - [`report`]: CSV/JSON/SVG output and the `reproduce` command;
//! - [`models`]: analytical collective models (reflective-memory (4.1)-(4.3), NIC barrier,
//!   log-tree algorithms), least-squares fitting and the `reflex-models` command.
#![forbid(unsafe_code)]

pub mod check;
pub mod cli;
pub mod error;
pub mod metrics;
pub mod models;
pub mod reconfig;
pub mod report;
pub mod rng;
pub mod routing;
pub mod sim;
pub mod topology;

pub use error::{Result, SimError};
