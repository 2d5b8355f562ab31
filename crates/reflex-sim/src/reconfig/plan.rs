//! Control-plane schedules: the timed partial table updates of static and dynamic
//! reconfiguration after one event (see the parent module for the protocols), and their
//! application to a running [`Simulator`].

use std::sync::Arc;

use super::ppr::{self, adapt_orientation};
use super::{ControlTiming, Event, EventKind, ReconfigRecord, Strategy};
use crate::error::{Result, SimError};
use crate::rng::SimRng;
use crate::routing::paths::AnyTurn;
use crate::routing::tables::AnyRouting;
use crate::routing::trees::post_orientation;
use crate::routing::{AdaptiveRouting, Orientation, TableRouting};
use crate::sim::stats::DiscardCause;
use crate::sim::Simulator;
use crate::topology::Topology;

/// A partial update or control action.
#[derive(Clone, Debug)]
pub enum Action {
    /// Stop (or resume) routing at a switch and injection at its hosts.
    Block {
        /// Switch.
        switch: usize,
        /// Stop when true.
        blocked: bool,
    },
    /// Discard the packets inside a switch (static flush).
    FlushSwitch(usize),
    /// Discard every packet in the network.
    FlushAll,
    /// Drop the candidates that use these (dead) channels, everywhere.
    RemoveChannels(Vec<usize>),
    /// Install a switch's adaptive (VC 0) rows.
    InstallMinimal(usize, Arc<TableRouting>),
    /// Install a switch's escape (VC 1) rows.
    InstallEscape(usize, Arc<TableRouting>),
}

/// An action at a cycle.
#[derive(Clone, Debug)]
pub struct Scheduled {
    /// Cycle.
    pub at: u64,
    /// Action.
    pub action: Action,
}

/// The schedule for one event.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Summary.
    pub record: ReconfigRecord,
    /// Actions (any order).
    pub actions: Vec<Scheduled>,
}

/// Hop depth of every live switch in the spanning tree of a flood from `root`.
fn depths(topo: &Topology, root: usize) -> Vec<u64> {
    topo.distances_from(root)
        .into_iter()
        .map(|d| if d == u32::MAX { 0 } else { u64::from(d) })
        .collect()
}

/// Messages of a POST-like flood plus collection and distribution on the live graph.
fn flood_messages(topo: &Topology) -> u64 {
    let n = topo.live_switches() as u64;
    let m = topo.live_links() as u64;
    (2 * m).saturating_sub(n.saturating_sub(1)) + 2 * n.saturating_sub(1)
}

/// What an event changed.
#[derive(Clone, Copy, Debug)]
enum Change {
    /// A switch went down (`up == false`) or came back.
    Switch { switch: usize, up: bool },
    /// The link between `a` and `b` went down or came back.
    Link { a: usize, b: usize },
}

impl Change {
    /// Switches that detect the change (the initiator is the lowest live one).
    fn neighbours(&self, before: &Topology, after: &Topology) -> Vec<usize> {
        match *self {
            Change::Switch { switch, up } => if up { after } else { before }
                .adjacent(switch)
                .iter()
                .map(|n| n.switch)
                .collect(),
            Change::Link { a, b } => vec![a, b],
        }
    }

    /// Initiator when no neighbour is live.
    fn fallback_initiator(&self) -> usize {
        match *self {
            Change::Switch { switch, .. } => switch,
            Change::Link { a, .. } => a,
        }
    }

    /// A switch that joins the network (it becomes a leaf of the escape orientation).
    fn joining(&self) -> Option<usize> {
        match *self {
            Change::Switch { switch, up: true } => Some(switch),
            _ => None,
        }
    }
}

/// Applies the topology change of `kind` to the simulator.
fn apply_event(sim: &mut Simulator, kind: &EventKind) -> Result<Change> {
    let switches = sim.topology().switches();
    let check = |s: usize| {
        if s < switches {
            Ok(s)
        } else {
            Err(SimError::invalid(format!("{kind}: unknown switch {s}")))
        }
    };
    match *kind {
        EventKind::SwitchDown { switch } | EventKind::SwitchUp { switch } => {
            let up = matches!(kind, EventKind::SwitchUp { .. });
            sim.set_switch(check(switch)?, up)?;
            Ok(Change::Switch { switch, up })
        }
        EventKind::LinkDown { a, b } | EventKind::LinkUp { a, b } => {
            let (a, b) = (check(a)?, check(b)?);
            let link = sim.topology().find_link(a, b).ok_or_else(|| {
                SimError::invalid(format!("{kind}: switches {a} and {b} are not linked"))
            })?;
            sim.set_link(link, matches!(kind, EventKind::LinkUp { .. }))?;
            Ok(Change::Link { a, b })
        }
    }
}

/// Applies `e` to the simulator and returns the schedule that repairs the routing.
pub fn make(
    sim: &mut Simulator,
    orientation: &mut Orientation,
    e: &Event,
    strategy: Strategy,
    timing: &ControlTiming,
) -> Result<Plan> {
    let before = sim.topology().clone();
    let change = apply_event(sim, &e.kind)?;
    let topo = sim.topology().clone();
    if !topo.is_connected() {
        return Err(SimError::invalid(format!(
            "{} disconnects the network",
            e.kind
        )));
    }
    let initiator = change
        .neighbours(&before, &topo)
        .into_iter()
        .filter(|&s| topo.switch_up(s))
        .min()
        .unwrap_or(change.fallback_initiator());
    let t_detect = sim.now() + timing.detect_cycles;
    let per = timing.hop_cycles + timing.process_cycles;
    let depth = depths(&topo, initiator);
    let max_depth = depth.iter().copied().max().unwrap_or(0);
    let t_collect = t_detect + 2 * max_depth * per;
    let live: Vec<usize> = (0..topo.switches())
        .filter(|&x| topo.switch_up(x))
        .collect();
    let mut actions = Vec::new();
    let mut at = |t: u64, action: Action| actions.push(Scheduled { at: t, action });
    let mut record = ReconfigRecord {
        event: Some(e.kind),
        event_at: sim.now(),
        ..Default::default()
    };
    match strategy {
        Strategy::Static => {
            let new_o = post_orientation(&topo, initiator, &mut SimRng::new(sim.now()));
            let tables = AdaptiveRouting::new(&topo, &new_o, true);
            let (minimal, escape) = (
                Arc::new(tables.minimal().clone()),
                Arc::new(tables.escape().clone()),
            );
            for &x in &live {
                at(
                    t_detect + depth[x] * per,
                    Action::Block {
                        switch: x,
                        blocked: true,
                    },
                );
                at(t_detect + depth[x] * per, Action::FlushSwitch(x));
            }
            at(t_collect, Action::FlushAll);
            let mut last = t_collect;
            for &x in &live {
                let t = t_collect + timing.process_cycles + depth[x] * per;
                at(t, Action::InstallMinimal(x, minimal.clone()));
                at(t, Action::InstallEscape(x, escape.clone()));
                at(
                    t,
                    Action::Block {
                        switch: x,
                        blocked: false,
                    },
                );
                last = last.max(t);
            }
            record.duration = last - sim.now();
            record.control_messages = flood_messages(&topo);
            *orientation = new_o;
        }
        Strategy::Dynamic => {
            let dead: Vec<usize> = (0..before.links())
                .filter(|&l| before.link_live(l) && !topo.link_live(l))
                .flat_map(|l| [2 * l, 2 * l + 1])
                .collect();
            at(t_detect, Action::RemoveChannels(dead.clone()));
            // Topology Task: topology-only POST; adaptive tables follow the distribution.
            let minimal = Arc::new(TableRouting::all_shortest(&topo, &AnyTurn, 0, false));
            for &x in &live {
                at(
                    t_collect + depth[x] * per,
                    Action::InstallMinimal(x, minimal.clone()),
                );
            }
            // PPR, triggered by the TT root once it knows the topology.
            let mut installed = match sim.routing() {
                AnyRouting::Adaptive(a) => a.escape().clone(),
                _ => {
                    return Err(SimError::invalid(
                        "dynamic reconfiguration needs adaptive routing",
                    ))
                }
            };
            for &c in &dead {
                installed.remove_channel(c);
            }
            let start = adapt_orientation(&topo, orientation, change.joining());
            let p = ppr::plan(&topo, &start, &installed)?;
            // PPR messages share the links with the TT distribution: one extra processing step per hop.
            let ppr_per = per + timing.process_cycles;
            let drain = 2 * u64::from(sim.max_packet_len()) + timing.hop_cycles;
            let mut t = t_collect;
            let mut messages = flood_messages(&topo) + live.len() as u64;
            for (k, round) in p.rounds.iter().enumerate() {
                let mut done = t;
                for &x in &round.reversing {
                    let tx = if k == 0 {
                        t + depth[x] * ppr_per
                    } else {
                        t + ppr_per
                    };
                    at(tx, Action::InstallEscape(x, round.table.clone()));
                    for nb in topo.adjacent(x) {
                        at(
                            tx + drain + ppr_per,
                            Action::InstallEscape(nb.switch, round.table.clone()),
                        );
                        messages += 1;
                        done = done.max(tx + drain + ppr_per);
                    }
                }
                t = done;
            }
            let mut last = t;
            for &x in &live {
                let tx = t + timing.process_cycles + depth[x] * ppr_per;
                at(tx, Action::InstallEscape(x, p.table.clone()));
                last = last.max(tx);
            }
            messages += live.len() as u64;
            record.duration = last.max(t_collect + max_depth * per) - sim.now();
            record.control_messages = messages;
            record.steps_checked = p.steps_checked;
            record.ppr_rounds = p.rounds.len() as u64;
            *orientation = p.orientation;
        }
    }
    Ok(Plan { record, actions })
}

/// Applies one action to the running simulation.
pub fn apply(sim: &mut Simulator, action: Action) {
    let topo = sim.topology().clone();
    match action {
        Action::Block { switch, blocked } => {
            sim.set_blocked(switch, blocked);
            for h in topo.hosts_of(switch) {
                sim.set_host_paused(h, blocked);
            }
        }
        Action::FlushSwitch(x) => {
            for p in sim.packets_at_switch(x) {
                sim.discard_packet(p, DiscardCause::StaticFlush);
            }
        }
        Action::FlushAll => {
            sim.discard_all(DiscardCause::StaticFlush);
        }
        Action::RemoveChannels(list) => {
            if let AnyRouting::Adaptive(a) = sim.routing_mut() {
                let (minimal, escape) = a.tables_mut();
                for c in list {
                    minimal.remove_channel(c);
                    escape.remove_channel(c);
                }
            }
        }
        Action::InstallMinimal(x, table) => {
            if let AnyRouting::Adaptive(a) = sim.routing_mut() {
                a.tables_mut().0.install_rows(&topo, &table, x);
            }
        }
        Action::InstallEscape(x, table) => {
            if let AnyRouting::Adaptive(a) = sim.routing_mut() {
                a.tables_mut().1.install_rows(&topo, &table, x);
            }
        }
    }
}
