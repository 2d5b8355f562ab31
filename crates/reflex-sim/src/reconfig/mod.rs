//! Reconfiguration after topology changes (Paper C, seed000b.md §C.1).
//!
//! Timed [`Event`]s switch switches or links off and on during a simulation (a link is named by
//! the two switches it joins). Changes are handled one at a time: a change due while a
//! reconfiguration is still running happens when that reconfiguration ends (its record says by
//! how much it was delayed). The network uses
//! adaptive routing with an up*/down* escape VC (virtual cut-through, 2 VCs). After each event a
//! control-plane *plan* ([`plan`]) schedules partial table updates; control messages travel in
//! their own buffers, so they are modelled as delays (`hop_cycles` per hop plus `process_cycles`
//! per switch) and counted, not simulated flit by flit.
//!
//! - **Static** (Autonet): a POST from the initiator stops routing and flushes every switch it
//!   reaches (packets discarded as `static_flush`); when the collection phase ends at the
//!   initiator every packet still in the network is discarded, new up*/down* tables (a POST
//!   orientation rooted at the initiator) are distributed down the tree, and each switch resumes
//!   routing and injection when its tables arrive.
//! - **Dynamic** (Topology Task + Partial Progressive Reconfiguration): see [`ppr`]; traffic keeps
//!   flowing, only packets inside failed components or without any route are discarded, and every
//!   partial update is verified by the union check of [`crate::check::check_tables_union`].

pub mod plan;
pub mod ppr;

use serde::{Deserialize, Serialize};

use crate::error::{Result, SimError};
use crate::routing::tables::AnyRouting;
use crate::routing::{AdaptiveRouting, OrientationSpec};
use crate::sim::{SimConfig, SimResult, Simulator, Switching};
use crate::topology::Topology;

/// A topology change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum EventKind {
    /// Switch off a switch (its links go down).
    SwitchDown {
        /// Switch.
        switch: usize,
    },
    /// Switch a switch back on.
    SwitchUp {
        /// Switch.
        switch: usize,
    },
    /// Take down the link between switches `a` and `b`.
    LinkDown {
        /// One end.
        a: usize,
        /// The other end.
        b: usize,
    },
    /// Bring the link between switches `a` and `b` back up.
    LinkUp {
        /// One end.
        a: usize,
        /// The other end.
        b: usize,
    },
}

impl std::fmt::Display for EventKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EventKind::SwitchDown { switch } => write!(f, "switch {switch} down"),
            EventKind::SwitchUp { switch } => write!(f, "switch {switch} up"),
            EventKind::LinkDown { a, b } => write!(f, "link {a}-{b} down"),
            EventKind::LinkUp { a, b } => write!(f, "link {a}-{b} up"),
        }
    }
}

/// A topology change at a cycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Event {
    /// Cycle.
    pub at: u64,
    /// Change.
    #[serde(flatten)]
    pub kind: EventKind,
}

/// Reconfiguration technique.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    /// Autonet-style static reconfiguration.
    Static,
    /// Topology Task + Partial Progressive Reconfiguration.
    Dynamic,
}

fn default_detect() -> u64 {
    100
}
fn default_hop() -> u64 {
    40
}
fn default_process() -> u64 {
    100
}

/// Control-plane timing (not stated in Paper C; documented assumptions).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ControlTiming {
    /// Cycles for neighbours to detect a failure or an arrival.
    #[serde(default = "default_detect")]
    pub detect_cycles: u64,
    /// Cycles for a control message to cross one link (routing delay + 16 flits).
    #[serde(default = "default_hop")]
    pub hop_cycles: u64,
    /// Cycles a switch spends processing one control message.
    #[serde(default = "default_process")]
    pub process_cycles: u64,
}

impl Default for ControlTiming {
    fn default() -> Self {
        ControlTiming {
            detect_cycles: default_detect(),
            hop_cycles: default_hop(),
            process_cycles: default_process(),
        }
    }
}

/// What one reconfiguration did.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ReconfigRecord {
    /// The topology change.
    pub event: Option<EventKind>,
    /// Cycle of the topology change.
    pub event_at: u64,
    /// Cycles the change waited for the previous reconfiguration to finish (the protocols
    /// handle one change at a time; 0 when it happened on time).
    pub delayed: u64,
    /// Cycles from the change to the last table update.
    pub duration: u64,
    /// Control messages sent.
    pub control_messages: u64,
    /// Partial-update steps verified by the union CDG check (dynamic only).
    pub steps_checked: u64,
    /// Link-reversal rounds of PPR (dynamic only).
    pub ppr_rounds: u64,
}

/// Result of a run with events.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ReconfigResult {
    /// Simulation measurements (with the time series).
    pub sim: SimResult,
    /// One record per event.
    pub reconfigurations: Vec<ReconfigRecord>,
}

/// Rejects an event that names a missing switch or link or falls after the run's last cycle.
fn validate_event(topo: &Topology, e: &Event, end: u64) -> Result<()> {
    let unknown = |s: usize| s >= topo.switches();
    let bad = match e.kind {
        EventKind::SwitchDown { switch } | EventKind::SwitchUp { switch } if unknown(switch) => {
            Some(format!(
                "no switch {switch} (the network has {})",
                topo.switches()
            ))
        }
        EventKind::LinkDown { a, b } | EventKind::LinkUp { a, b }
            if unknown(a) || unknown(b) || topo.find_link(a, b).is_none() =>
        {
            Some(format!("switches {a} and {b} are not linked"))
        }
        _ if e.at >= end => Some(format!("the run ends at cycle {end}")),
        _ => None,
    };
    match bad {
        Some(why) => Err(SimError::invalid(format!(
            "event \"{}\" at cycle {}: {why}",
            e.kind, e.at
        ))),
        None => Ok(()),
    }
}

/// Simulates `topo` with adaptive routing (escape orientation `escape`) and `events`, handling
/// each with `strategy`.
pub fn run_with_events(
    topo: &Topology,
    escape: &OrientationSpec,
    cfg: &SimConfig,
    events: &[Event],
    strategy: Strategy,
    timing: &ControlTiming,
) -> Result<ReconfigResult> {
    if cfg.switching != Switching::VirtualCutThrough {
        return Err(SimError::invalid(
            "reconfiguration is modelled for virtual cut-through (Paper C)",
        ));
    }
    let end = cfg.warmup_cycles + cfg.measure_cycles;
    for e in events {
        validate_event(topo, e, end)?;
    }
    let o = escape.orient(topo)?;
    let routing = AnyRouting::Adaptive(AdaptiveRouting::new(topo, &o, true));
    let mut sim = Simulator::new(topo.clone(), routing, cfg)?;
    let mut orientation = o;
    let mut events = events.to_vec();
    events.sort_by_key(|e| e.at);
    let mut next_event = 0;
    let mut queue: Vec<plan::Scheduled> = Vec::new();
    let mut records = Vec::new();
    while sim.now() < end {
        // A change that comes while a reconfiguration is still running waits for its end.
        if let Some(e) = events
            .get(next_event)
            .filter(|e| e.at <= sim.now() && queue.is_empty())
        {
            next_event += 1;
            let mut p = plan::make(&mut sim, &mut orientation, e, strategy, timing)?;
            p.record.delayed = sim.now() - e.at;
            records.push(p.record);
            queue.extend(p.actions);
            queue.sort_by_key(|a| std::cmp::Reverse(a.at));
        }
        while queue.last().is_some_and(|a| a.at <= sim.now()) {
            if let Some(a) = queue.pop() {
                plan::apply(&mut sim, a.action);
            }
        }
        sim.step()?;
    }
    Ok(ReconfigResult {
        sim: sim.result(),
        reconfigurations: records,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::{Lengths, Pattern, TrafficSpec};
    use crate::topology::generate::TopologySpec;

    fn cfg() -> SimConfig {
        let mut c = SimConfig::paper_a(16, 0.04);
        c.switching = Switching::VirtualCutThrough;
        c.vcs = 2;
        c.buffer_flits = 32;
        c.warmup_cycles = 0;
        c.measure_cycles = 12_000;
        c.window_cycles = 500;
        c.traffic = TrafficSpec {
            pattern: Pattern::Uniform,
            lengths: Lengths::Fixed { flits: 16 },
            rate: 0.04,
        };
        c
    }

    #[test]
    fn static_and_dynamic_survive_root_failure() {
        let t = TopologySpec::Irregular {
            switches: 12,
            ports: 8,
            hosts_per_switch: 4,
            seed: 4,
        }
        .build()
        .unwrap();
        let events = [
            Event {
                at: 3_000,
                kind: EventKind::SwitchDown { switch: 0 },
            },
            Event {
                at: 7_000,
                kind: EventKind::SwitchUp { switch: 0 },
            },
        ];
        let timing = ControlTiming::default();
        let st = run_with_events(
            &t,
            &OrientationSpec::Mdst,
            &cfg(),
            &events,
            Strategy::Static,
            &timing,
        )
        .unwrap();
        let dy = run_with_events(
            &t,
            &OrientationSpec::Mdst,
            &cfg(),
            &events,
            Strategy::Dynamic,
            &timing,
        )
        .unwrap();
        assert_eq!(st.reconfigurations.len(), 2);
        assert_eq!(dy.reconfigurations.len(), 2);
        assert!(dy.reconfigurations.iter().all(|r| r.steps_checked >= 1));
        let total = |r: &ReconfigResult| r.sim.discarded.values().sum::<u64>();
        assert!(st.sim.discarded.contains_key("static_flush"));
        assert!(!dy.sim.discarded.contains_key("static_flush"));
        assert!(
            total(&dy) <= total(&st),
            "dynamic {:?} static {:?}",
            dy.sim.discarded,
            st.sim.discarded
        );
        // Static stops traffic: some window during reconfiguration delivers nothing.
        let quiet = |r: &ReconfigResult| {
            r.sim
                .series
                .iter()
                .filter(|w| w.start >= 3_000 && w.start < 7_000 && w.delivered == 0)
                .count()
        };
        assert!(quiet(&st) >= 1);
        assert_eq!(quiet(&dy), 0);
        assert!(dy.sim.delivered_packets > 0);
    }

    #[test]
    fn overlapping_changes_wait_for_the_running_reconfiguration() {
        let t = TopologySpec::Irregular {
            switches: 12,
            ports: 8,
            hosts_per_switch: 4,
            seed: 4,
        }
        .build()
        .unwrap();
        let l = t.adjacent(0)[0];
        let (a, b) = (0, l.switch);
        let events = [
            Event {
                at: 1_000,
                kind: EventKind::SwitchDown { switch: 0 },
            },
            Event {
                at: 1_050,
                kind: EventKind::SwitchUp { switch: 0 },
            },
            Event {
                at: 1_100,
                kind: EventKind::LinkDown { a, b },
            },
        ];
        let mut c = cfg();
        c.measure_cycles = 9_000;
        let r = run_with_events(
            &t,
            &OrientationSpec::Mdst,
            &c,
            &events,
            Strategy::Dynamic,
            &ControlTiming::default(),
        )
        .unwrap();
        let recs = &r.reconfigurations;
        assert_eq!(recs.len(), 3);
        assert_eq!((recs[0].event_at, recs[0].delayed), (1_000, 0));
        assert_eq!(recs[1].event_at, 1_000 + recs[0].duration + 1);
        assert_eq!(recs[1].delayed, recs[1].event_at - 1_050);
        assert_eq!(recs[2].event, Some(EventKind::LinkDown { a, b }));
        assert!(recs[2].event_at > recs[1].event_at + recs[1].duration);
        let bad = [Event {
            at: 9_000,
            kind: EventKind::LinkUp { a, b },
        }];
        let err = run_with_events(
            &t,
            &OrientationSpec::Mdst,
            &c,
            &bad,
            Strategy::Dynamic,
            &ControlTiming::default(),
        )
        .unwrap_err();
        assert!(
            err.to_string().contains("the run ends at cycle 9000"),
            "{err}"
        );
    }
}
