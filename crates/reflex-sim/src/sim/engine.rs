//! The simulation engine: one [`Simulator`] owns the network state, the routing function, the
//! traffic generator and the run's RNG (no globals). [`Simulator::step`] advances one cycle in
//! two phases: `evaluate` reads the state left by the previous cycle and records grants and flit
//! moves, `update` applies them. Because every decision sees the same start-of-cycle state (a
//! freed buffer slot is visible one cycle later, like a credit), the order in which switches are
//! visited does not change the result.

use std::collections::VecDeque;

use super::network::{InputUnit, NetMap, Packet, PacketSlab, Peer, Run, NONE};
use super::stats::{DiscardCause, SimResult, StatsCollector};
use super::traffic::{Message, TrafficGen};
use super::{Selection, SimConfig, Switching};
use crate::error::{Result, SimError};
use crate::rng::SimRng;
use crate::routing::tables::{AnyRouting, Candidate, RouteQuery, Routing};
use crate::topology::Topology;

/// Marks a move whose source is a host (the low bits hold the host number).
const FROM_HOST: u32 = 1 << 31;

#[derive(Clone, Copy, Debug)]
struct Move {
    /// Input unit, or `FROM_HOST | host`.
    from: u32,
}

#[derive(Clone, Debug, Default)]
pub(super) struct HostState {
    pub(super) queue: VecDeque<Message>,
    /// Packet being injected (`NONE` if none) and flits of it sent.
    pub(super) current: u32,
    pub(super) sent: u32,
    pub(super) paused: bool,
}

/// A flit-level network simulation (see the module docs).
pub struct Simulator {
    pub(super) topo: Topology,
    pub(super) cfg: SimConfig,
    pub(super) routing: AnyRouting,
    pub(super) vcs: usize,
    /// Routing names one VC (0) but the network has several: any VC may be used.
    expand_vcs: bool,
    pub(super) net: NetMap,
    pub(super) units: Vec<InputUnit>,
    pub(super) out_owner: Vec<u32>,
    out_rr: Vec<u32>,
    arb_ptr: Vec<u32>,
    arb_free_at: Vec<u64>,
    /// Switches whose routing is stopped (static reconfiguration); headers wait there.
    pub(super) blocked: Vec<bool>,
    pub(super) hosts: Vec<HostState>,
    pub(super) packets: PacketSlab,
    traffic: TrafficGen,
    rng: SimRng,
    pub(super) now: u64,
    stats: StatsCollector,
    grants: Vec<(u32, u32)>,
    moves: Vec<Move>,
    discards: Vec<(u32, DiscardCause)>,
    cands: Vec<Candidate>,
    options: Vec<u32>,
    pub(super) flits_in_network: u64,
    last_move: u64,
}

impl Simulator {
    /// A simulator of `topo` routed by `routing`, configured by `cfg`.
    pub fn new(topo: Topology, routing: AnyRouting, cfg: &SimConfig) -> Result<Self> {
        let vcs = (cfg.vcs as usize).max(routing.vcs()).max(1);
        if vcs > 64 {
            return Err(SimError::invalid("at most 64 virtual channels"));
        }
        let max_len = cfg.traffic.lengths.max();
        if cfg.buffer_flits < 1
            || (cfg.switching == Switching::VirtualCutThrough && cfg.buffer_flits < max_len)
        {
            return Err(SimError::invalid(format!(
                "buffers of {} flits cannot hold a {max_len}-flit packet under virtual cut-through",
                cfg.buffer_flits
            )));
        }
        if topo.hosts() == 0 {
            return Err(SimError::invalid("the network has no hosts"));
        }
        let mut rng = SimRng::new(cfg.seed);
        let traffic = TrafficGen::new(&topo, &cfg.traffic, &mut rng)?;
        let net = NetMap::new(&topo);
        let ports = net.ports();
        let end = cfg.warmup_cycles + cfg.measure_cycles;
        Ok(Simulator {
            expand_vcs: routing.vcs() == 1 && vcs > 1,
            units: vec![InputUnit::new(); ports * vcs],
            out_owner: vec![NONE; ports * vcs],
            out_rr: vec![0; ports],
            arb_ptr: vec![0; topo.switches()],
            arb_free_at: vec![0; topo.switches()],
            blocked: vec![false; topo.switches()],
            hosts: (0..topo.hosts())
                .map(|_| HostState {
                    current: NONE,
                    ..Default::default()
                })
                .collect(),
            packets: PacketSlab::default(),
            stats: StatsCollector::new(cfg.warmup_cycles, end, cfg.window_cycles),
            cfg: cfg.clone(),
            routing,
            vcs,
            net,
            topo,
            traffic,
            rng,
            now: 0,
            grants: Vec::new(),
            moves: Vec::new(),
            discards: Vec::new(),
            cands: Vec::new(),
            options: Vec::new(),
            flits_in_network: 0,
            last_move: 0,
        })
    }

    /// Current cycle.
    pub fn now(&self) -> u64 {
        self.now
    }

    /// The topology being simulated.
    pub fn topology(&self) -> &Topology {
        &self.topo
    }

    /// The routing function in use.
    pub fn routing(&self) -> &AnyRouting {
        &self.routing
    }

    /// Mutable routing function (partial table updates during reconfiguration).
    pub fn routing_mut(&mut self) -> &mut AnyRouting {
        &mut self.routing
    }

    /// Longest packet the traffic can generate, in flits.
    pub fn max_packet_len(&self) -> u32 {
        self.cfg.traffic.lengths.max()
    }

    /// Flits inside switch buffers.
    pub fn flits_in_network(&self) -> u64 {
        self.flits_in_network
    }

    /// Queues a message from host `src` to host `dst` created now (trace replay and tests).
    pub fn send(&mut self, src: usize, dst: usize, len: u32) -> Result<()> {
        if src >= self.hosts.len() || dst >= self.hosts.len() || src == dst || len == 0 {
            return Err(SimError::invalid(format!(
                "cannot send {len} flits from host {src} to host {dst}"
            )));
        }
        self.stats.generated(self.now, len);
        self.hosts[src].queue.push_back(Message {
            dst: dst as u32,
            len,
            created: self.now,
        });
        Ok(())
    }

    /// Steps until no packet is queued or in flight, at most `limit` cycles; returns whether the
    /// network drained.
    pub fn drain(&mut self, limit: u64) -> Result<bool> {
        let stop = self.now + limit;
        while self.now < stop {
            if self.packets.alive() == 0 && self.hosts.iter().all(|h| h.queue.is_empty()) {
                return Ok(true);
            }
            self.step()?;
        }
        Ok(false)
    }

    /// Runs warm-up and measurement and returns the measurements.
    pub fn run(&mut self) -> Result<SimResult> {
        let end = self.cfg.warmup_cycles + self.cfg.measure_cycles;
        while self.now < end {
            self.step()?;
        }
        Ok(self.result())
    }

    /// Measurements so far.
    pub fn result(&self) -> SimResult {
        self.stats.finish(
            self.topo.hosts(),
            self.topo.live_switches(),
            self.now,
            self.cfg.cycle_ns,
        )
    }

    /// Advances one cycle; fails when the watchdog fires.
    pub fn step(&mut self) -> Result<()> {
        self.generate();
        self.evaluate();
        self.update();
        self.now += 1;
        if self.flits_in_network > 0 && self.now - self.last_move > self.cfg.watchdog_cycles {
            return Err(SimError::Deadlock(self.diagnose_deadlock()));
        }
        Ok(())
    }

    fn generate(&mut self) {
        let (now, limit) = (self.now, self.cfg.source_queue);
        let Simulator {
            traffic,
            rng,
            hosts,
            stats,
            ..
        } = self;
        traffic.generate(now, rng, |h, m| {
            stats.generated(now, m.len);
            if hosts[h].queue.len() >= limit {
                stats.source_drop();
            } else {
                hosts[h].queue.push_back(m);
            }
        });
    }

    fn evaluate(&mut self) {
        self.grants.clear();
        self.moves.clear();
        self.discards.clear();
        for s in 0..self.topo.switches() {
            if self.topo.switch_up(s) && !self.blocked[s] && self.now >= self.arb_free_at[s] {
                self.arbitrate(s);
            }
        }
        for gp in 0..self.net.ports() {
            self.transfer(gp);
        }
        for h in 0..self.hosts.len() {
            let hs = &self.hosts[h];
            if hs.paused || (hs.current == NONE && hs.queue.is_empty()) {
                continue;
            }
            let u = self.net.host_port[h] as usize * self.vcs;
            if self.units[u].occ < self.cfg.buffer_flits
                && self.topo.switch_up(self.topo.host_switch(h))
            {
                self.moves.push(Move {
                    from: FROM_HOST | h as u32,
                });
            }
        }
    }

    /// Packet and arrival cycle of a header waiting for routing in unit `u`.
    fn header_ready(&self, u: usize) -> Option<(u32, u64)> {
        let unit = &self.units[u];
        let run = unit.runs.front()?;
        (unit.granted == NONE
            && run.sent == 0
            && run.flits > 0
            && self.now >= run.arrived + u64::from(self.cfg.routing_delay))
        .then_some((run.pkt, run.arrived))
    }

    /// The switch's arbiter handles the next ready header in round-robin order.
    fn arbitrate(&mut self, s: usize) {
        let base = self.net.port_base[s] as usize * self.vcs;
        let count = (self.net.port_base[s + 1] - self.net.port_base[s]) as usize * self.vcs;
        for i in 0..count {
            let off = (self.arb_ptr[s] as usize + i) % count;
            let Some((pkt, arrived)) = self.header_ready(base + off) else {
                continue;
            };
            self.arb_ptr[s] = ((off + 1) % count) as u32;
            self.arb_free_at[s] = self.now + u64::from(self.cfg.arbiter_cycles.max(1));
            match self.route(s, base + off, pkt) {
                Ok(Some(ov)) => self.grants.push(((base + off) as u32, ov)),
                Ok(None) => {}
                // Tables may be in the middle of a reconfiguration: wait a while for a route.
                Err(DiscardCause::NoRoute) if self.now - arrived < self.cfg.no_route_wait => {}
                Err(cause) => self.discards.push((pkt, cause)),
            }
            return;
        }
    }

    /// Chooses a free output VC for the header of `pkt` in unit `u` of switch `s`.
    fn route(
        &mut self,
        s: usize,
        u: usize,
        pkt: u32,
    ) -> std::result::Result<Option<u32>, DiscardCause> {
        let p = *self.packets.get(pkt);
        let v = self.vcs;
        self.options.clear();
        if p.dst_sw as usize == s {
            let gp = self.net.host_port[p.dst as usize] as usize;
            self.options.extend(
                (0..v)
                    .map(|k| (gp * v + k) as u32)
                    .filter(|&ov| self.out_owner[ov as usize] == NONE),
            );
            return Ok(self.options.first().copied());
        }
        if !self.topo.switch_up(p.dst_sw as usize) {
            return Err(DiscardCause::DestinationDown);
        }
        let gp_in = u / v;
        let in_ch = self.net.in_channel[gp_in];
        let q = RouteQuery {
            switch: s,
            in_channel: (in_ch != NONE).then_some(in_ch as usize),
            in_vc: u % v,
            src: p.src_sw as usize,
            dst: p.dst_sw as usize,
            hops: p.hops as usize,
        };
        self.cands.clear();
        self.routing.candidates(&q, &mut self.cands);
        if self.cands.is_empty() {
            return Err(DiscardCause::NoRoute);
        }
        let mut any_live = false;
        for escape in [false, true] {
            for i in 0..self.cands.len() {
                let k = self.cands[i];
                if k.escape != escape {
                    continue;
                }
                let gp = self.net.channel_port[k.channel as usize] as usize;
                let Peer::Link { down_port } = self.net.peer[gp] else {
                    continue;
                };
                any_live = true;
                let vcs = if self.expand_vcs {
                    0..v
                } else {
                    usize::from(k.vc)..usize::from(k.vc) + 1
                };
                for vc in vcs {
                    let ov = gp * v + vc;
                    if self.out_owner[ov] != NONE {
                        continue;
                    }
                    if self.cfg.switching == Switching::VirtualCutThrough {
                        let down = &self.units[down_port as usize * v + vc];
                        if self.cfg.buffer_flits - down.occ < p.len {
                            continue;
                        }
                    }
                    self.options.push(ov as u32);
                }
            }
            if !self.options.is_empty() {
                let pick = match self.cfg.selection {
                    Selection::First => 0,
                    Selection::Random => self.rng.below(self.options.len()),
                };
                return Ok(Some(self.options[pick]));
            }
        }
        if any_live {
            Ok(None)
        } else {
            Err(DiscardCause::NoRoute)
        }
    }

    /// The output port sends at most one flit, taking its VCs in round-robin order.
    fn transfer(&mut self, gp: usize) {
        let v = self.vcs;
        for i in 0..v {
            let vc = (self.out_rr[gp] as usize + i) % v;
            let owner = self.out_owner[gp * v + vc];
            if owner == NONE {
                continue;
            }
            let has_flit = self.units[owner as usize]
                .runs
                .front()
                .is_some_and(|r| r.flits > 0);
            let room = match self.net.peer[gp] {
                Peer::Host(_) => true,
                Peer::Link { down_port } => {
                    self.units[down_port as usize * v + vc].occ < self.cfg.buffer_flits
                }
                Peer::Unused => false,
            };
            if has_flit && room {
                self.moves.push(Move { from: owner });
                self.out_rr[gp] = ((vc + 1) % v) as u32;
                return;
            }
        }
    }

    fn update(&mut self) {
        for i in 0..self.grants.len() {
            let (u, ov) = self.grants[i];
            self.units[u as usize].granted = ov;
            self.out_owner[ov as usize] = u;
        }
        for i in 0..self.moves.len() {
            let m = self.moves[i];
            if m.from & FROM_HOST != 0 {
                self.inject_flit((m.from & !FROM_HOST) as usize);
            } else {
                self.forward_flit(m.from as usize);
            }
        }
        if !self.moves.is_empty() {
            self.last_move = self.now;
        }
        for i in 0..self.discards.len() {
            let (pkt, cause) = self.discards[i];
            self.discard_packet(pkt, cause);
        }
    }

    fn inject_flit(&mut self, h: usize) {
        let now = self.now;
        if self.hosts[h].current == NONE {
            let Some(m) = self.hosts[h].queue.pop_front() else {
                return;
            };
            let pkt = self.packets.insert(Packet {
                src: h as u32,
                dst: m.dst,
                src_sw: self.topo.host_switch(h) as u32,
                dst_sw: self.topo.host_switch(m.dst as usize) as u32,
                len: m.len,
                delivered: 0,
                hops: 0,
                created: m.created,
                injected: now,
                alive: true,
            });
            self.hosts[h].current = pkt;
            self.hosts[h].sent = 0;
        }
        let pkt = self.hosts[h].current;
        let u = self.net.host_port[h] as usize * self.vcs;
        self.push_flit(u, pkt, false);
        self.flits_in_network += 1;
        self.stats.injected_flit(now);
        let hs = &mut self.hosts[h];
        hs.sent += 1;
        if hs.sent == self.packets.get(pkt).len {
            hs.current = NONE;
        }
    }

    fn push_flit(&mut self, u: usize, pkt: u32, via_link: bool) {
        let len = self.packets.get(pkt).len;
        let unit = &mut self.units[u];
        unit.occ += 1;
        match unit.runs.back_mut() {
            // A run that already received the whole packet belongs to an earlier pass of it
            // (adaptive routing can bring a packet back through the same buffer).
            Some(r) if r.pkt == pkt && r.sent + r.flits < len => r.flits += 1,
            _ => {
                unit.runs.push_back(Run {
                    pkt,
                    flits: 1,
                    sent: 0,
                    arrived: self.now,
                });
                if via_link {
                    self.packets.get_mut(pkt).hops += 1;
                }
            }
        }
    }

    fn forward_flit(&mut self, u: usize) {
        let v = self.vcs;
        let unit = &mut self.units[u];
        let ov = unit.granted as usize;
        let Some(run) = unit.runs.front_mut() else {
            return;
        };
        let pkt = run.pkt;
        run.flits -= 1;
        run.sent += 1;
        unit.occ -= 1;
        if run.sent == self.packets.get(pkt).len {
            unit.runs.pop_front();
            unit.granted = NONE;
            self.out_owner[ov] = NONE;
        }
        match self.net.peer[ov / v] {
            Peer::Link { down_port } => self.push_flit(down_port as usize * v + ov % v, pkt, true),
            Peer::Host(_) => self.deliver_flit(pkt),
            Peer::Unused => self.flits_in_network -= 1,
        }
    }

    fn deliver_flit(&mut self, pkt: u32) {
        self.flits_in_network -= 1;
        self.stats.delivered_flit(self.now);
        let p = self.packets.get_mut(pkt);
        p.delivered += 1;
        if p.delivered == p.len {
            let (created, injected, hops) = (p.created, p.injected, p.hops);
            self.stats
                .delivered_packet(self.now, created, injected, hops);
            self.packets.remove(pkt);
        }
    }

    /// Removes every flit of `pkt` from the network and counts it as discarded.
    pub(crate) fn discard_packet(&mut self, pkt: u32, cause: DiscardCause) {
        if !self.packets.get(pkt).alive {
            return;
        }
        for u in 0..self.units.len() {
            let unit = &mut self.units[u];
            // A packet that looped may have several runs in one buffer.
            while let Some(i) = unit.runs.iter().position(|r| r.pkt == pkt) {
                let flits = unit.runs.remove(i).map_or(0, |r| r.flits);
                unit.occ -= flits;
                self.flits_in_network -= u64::from(flits);
                if i == 0 && unit.granted != NONE {
                    self.out_owner[unit.granted as usize] = NONE;
                    unit.granted = NONE;
                }
            }
        }
        for hs in &mut self.hosts {
            if hs.current == pkt {
                hs.current = NONE;
            }
        }
        self.stats.discarded(self.now, cause);
        self.packets.remove(pkt);
    }

    /// Packets with at least one flit in a buffer of switch `s`.
    pub(crate) fn packets_at_switch(&self, s: usize) -> Vec<u32> {
        let lo = self.net.port_base[s] as usize * self.vcs;
        let hi = self.net.port_base[s + 1] as usize * self.vcs;
        let mut out: Vec<u32> = self.units[lo..hi]
            .iter()
            .flat_map(|u| u.runs.iter().map(|r| r.pkt))
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Discards every packet in the network (static reconfiguration flush).
    pub fn discard_all(&mut self, cause: DiscardCause) -> usize {
        let mut pkts: Vec<u32> = self
            .units
            .iter()
            .flat_map(|u| u.runs.iter().map(|r| r.pkt))
            .collect();
        pkts.sort_unstable();
        pkts.dedup();
        for &p in &pkts {
            self.discard_packet(p, cause);
        }
        pkts.len()
    }

    /// Stops or resumes routing at switch `s` (headers wait while stopped).
    pub fn set_blocked(&mut self, s: usize, blocked: bool) {
        self.blocked[s] = blocked;
    }

    /// Stops or resumes injection at host `h` (messages keep queueing).
    pub fn set_host_paused(&mut self, h: usize, paused: bool) {
        self.hosts[h].paused = paused;
    }

    /// Packets holding an output VC of global port `gp` (their worm crosses its link).
    fn owners_of_port(&self, gp: usize) -> impl Iterator<Item = u32> + '_ {
        (0..self.vcs).filter_map(move |vc| {
            let owner = self.out_owner[gp * self.vcs + vc];
            (owner != NONE)
                .then(|| self.units[owner as usize].runs.front().map(|r| r.pkt))
                .flatten()
        })
    }

    /// Switches `s` up or down: packets inside a failing switch, or holding a channel into it, are
    /// discarded (`ComponentFailure`); the wiring is rebuilt. Routing tables are not touched.
    pub fn set_switch(&mut self, s: usize, up: bool) -> Result<()> {
        if !up {
            let mut doomed = self.packets_at_switch(s);
            for gp in 0..self.net.ports() {
                if let Peer::Link { down_port } = self.net.peer[gp] {
                    if self.net.port_switch[down_port as usize] as usize == s {
                        doomed.extend(self.owners_of_port(gp));
                    }
                }
            }
            for &h in &self.topo.hosts_of(s).collect::<Vec<_>>() {
                if self.hosts[h].current != NONE {
                    doomed.push(self.hosts[h].current);
                }
            }
            self.discard_all_of(doomed);
        }
        self.topo.set_switch(s, up)?;
        self.net = NetMap::new(&self.topo);
        Ok(())
    }

    /// Enables or disables link `l`. A failing link loses the packets whose worm crosses it
    /// (some flit sent, tail not yet: `ComponentFailure`); a header granted the link but not yet
    /// sent gives the grant back and is routed again. Routing tables are not touched.
    pub fn set_link(&mut self, l: usize, up: bool) -> Result<()> {
        if l >= self.topo.links() {
            return Err(SimError::invalid(format!("unknown link {l}")));
        }
        if !up {
            let mut doomed = Vec::new();
            for c in [2 * l, 2 * l + 1] {
                let gp = self.net.channel_port[c] as usize;
                for vc in 0..self.vcs {
                    let ov = gp * self.vcs + vc;
                    let owner = self.out_owner[ov];
                    if owner == NONE {
                        continue;
                    }
                    match self.units[owner as usize].runs.front() {
                        Some(r) if r.sent > 0 => doomed.push(r.pkt),
                        _ => {
                            self.units[owner as usize].granted = NONE;
                            self.out_owner[ov] = NONE;
                        }
                    }
                }
            }
            self.discard_all_of(doomed);
        }
        self.topo.set_link(l, up)?;
        self.net = NetMap::new(&self.topo);
        Ok(())
    }

    fn discard_all_of(&mut self, mut doomed: Vec<u32>) {
        doomed.sort_unstable();
        doomed.dedup();
        for p in doomed {
            self.discard_packet(p, DiscardCause::ComponentFailure);
        }
    }
}
