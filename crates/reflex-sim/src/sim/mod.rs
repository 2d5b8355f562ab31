//! Flit-level simulator of switch-based networks.
//!
//! The router model follows Paper A's Myrinet-like switch (seed000b.md §A.2): input-buffered,
//! one crossbar arbiter per switch that handles one header at a time in demand-slotted
//! round-robin order (a header that finds its outputs busy waits for its next turn), a
//! `routing_delay` from header arrival to the first routing attempt (150 ns = 24 cycles of
//! 6.25 ns), then one 1-byte flit per cycle per link. Switching is wormhole (an output VC is held
//! from header grant to tail) or virtual cut-through (a header is granted only when the downstream
//! VC buffer can take the whole packet), with any number of VCs; the VCs of a physical link share
//! its bandwidth flit by flit, and every VC buffer connects straight to the crossbar (Paper C).
//!
//! Structure (style-models.md rules 21-23): [`crate::topology`] gives the port graph,
//! [`crate::routing`] the candidate sets, [`Selection`] picks among free candidates, the engine
//! steps every component in two phases (evaluate from the state at the start of the cycle, then
//! update), and [`traffic`] generates messages. All randomness comes from one seeded RNG; the same
//! configuration and seed give the same result. A watchdog reports a deadlock when no flit moves
//! for `watchdog_cycles` cycles while packets are in the network.

pub mod engine;
pub mod network;
pub mod stats;
pub mod sweep;
pub mod traffic;
mod watchdog;

use serde::{Deserialize, Serialize};

pub use engine::Simulator;
pub use stats::{SimResult, WindowSample};
pub use traffic::{Lengths, Pattern, TrafficSpec};

/// Switching technique.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Switching {
    /// Wormhole (Paper A).
    Wormhole,
    /// Virtual cut-through (Paper C).
    VirtualCutThrough,
}

/// How a header picks among free candidates of the highest priority class.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Selection {
    /// The first free candidate in routing order (lowest port).
    #[default]
    First,
    /// A uniformly random free candidate.
    Random,
}

fn default_routing_delay() -> u32 {
    24
}
fn default_one() -> u32 {
    1
}
fn default_buffer() -> u32 {
    80
}
fn default_cycle_ns() -> f64 {
    6.25
}
fn default_watchdog() -> u64 {
    50_000
}
fn default_no_route_wait() -> u64 {
    5_000
}
fn default_queue() -> usize {
    2_000
}

/// Simulation parameters (defaults: Paper A's Myrinet timing).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimConfig {
    /// Switching technique.
    pub switching: Switching,
    /// Virtual channels per physical channel (at least what the routing needs).
    #[serde(default = "default_one")]
    pub vcs: u32,
    /// Flits per VC input buffer. Default 80: the size of a Myrinet slack buffer (external
    /// knowledge; Paper A does not state buffer sizes). VCT needs at least the longest packet.
    #[serde(default = "default_buffer")]
    pub buffer_flits: u32,
    /// Cycles from header arrival to its first routing attempt (150 ns / 6.25 ns = 24).
    #[serde(default = "default_routing_delay")]
    pub routing_delay: u32,
    /// Cycles the switch arbiter is busy per header it handles.
    #[serde(default = "default_one")]
    pub arbiter_cycles: u32,
    /// Nanoseconds per cycle (one flit per cycle per link; Paper A: 6.25 ns, 1-byte flits).
    #[serde(default = "default_cycle_ns")]
    pub cycle_ns: f64,
    /// Candidate selection.
    #[serde(default)]
    pub selection: Selection,
    /// Cycles before measurement starts.
    pub warmup_cycles: u64,
    /// Measured cycles.
    pub measure_cycles: u64,
    /// Cycles without any flit moving (with packets in the network) that count as a deadlock.
    #[serde(default = "default_watchdog")]
    pub watchdog_cycles: u64,
    /// Messages a host queues before it drops new ones (counted as source drops).
    #[serde(default = "default_queue")]
    pub source_queue: usize,
    /// Cycles a header without any routing option waits (tables may be being updated) before it
    /// is discarded as `no_route`.
    #[serde(default = "default_no_route_wait")]
    pub no_route_wait: u64,
    /// Width of the time-series windows (0 = no time series).
    #[serde(default)]
    pub window_cycles: u64,
    /// Traffic.
    pub traffic: TrafficSpec,
    /// Seed of the run's single RNG.
    #[serde(default)]
    pub seed: u64,
}

impl SimConfig {
    /// Paper A's setting: wormhole, Myrinet timing, uniform traffic of `flits`-flit messages.
    pub fn paper_a(flits: u32, rate: f64) -> Self {
        SimConfig {
            switching: Switching::Wormhole,
            vcs: 1,
            buffer_flits: default_buffer(),
            routing_delay: default_routing_delay(),
            arbiter_cycles: 1,
            cycle_ns: default_cycle_ns(),
            selection: Selection::First,
            warmup_cycles: 20_000,
            measure_cycles: 50_000,
            watchdog_cycles: default_watchdog(),
            source_queue: default_queue(),
            no_route_wait: default_no_route_wait(),
            window_cycles: 0,
            traffic: TrafficSpec {
                pattern: Pattern::Uniform,
                lengths: Lengths::Fixed { flits },
                rate,
            },
            seed: 1,
        }
    }
}

#[cfg(test)]
mod tests;
