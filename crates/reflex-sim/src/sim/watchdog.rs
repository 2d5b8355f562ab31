//! Deadlock diagnosis for the watchdog: starting from a buffer that holds flits, follow what it
//! waits for (a header waits for the owner of a candidate output VC; a granted packet waits for
//! room in the downstream buffer) until a buffer repeats, and print that wait-for cycle.

use super::engine::Simulator;
use super::network::{Peer, NONE};
use crate::routing::tables::{RouteQuery, Routing};

impl Simulator {
    fn unit_name(&self, u: usize) -> String {
        let gp = u / self.vcs;
        let unit = &self.units[u];
        let state = match unit.runs.front() {
            Some(r) => {
                let p = self.packets.get(r.pkt);
                let to = if unit.granted == NONE {
                    "waiting".to_string()
                } else {
                    let ov = unit.granted as usize;
                    format!(
                        "granted p{} vc{}",
                        self.net.port_local[ov / self.vcs],
                        ov % self.vcs
                    )
                };
                format!(
                    " [{} flits; front packet {} to s{} has {} here, {} sent, {to}]",
                    unit.occ, r.pkt, p.dst_sw, r.flits, r.sent
                )
            }
            None => " [empty]".to_string(),
        };
        format!(
            "s{}:p{} vc{}{state}",
            self.net.port_switch[gp],
            self.net.port_local[gp],
            u % self.vcs
        )
    }

    /// What unit `u` waits for, if anything.
    fn waits_for(&self, u: usize) -> Option<usize> {
        let unit = &self.units[u];
        let run = unit.runs.front()?;
        let v = self.vcs;
        if unit.granted != NONE {
            let ov = unit.granted as usize;
            return match self.net.peer[ov / v] {
                Peer::Link { down_port } => Some(down_port as usize * v + ov % v),
                _ => None,
            };
        }
        let p = self.packets.get(run.pkt);
        let s = self.net.port_switch[u / v] as usize;
        if p.dst_sw as usize == s {
            let gp = self.net.host_port[p.dst as usize] as usize;
            return (0..v)
                .map(|k| self.out_owner[gp * v + k])
                .find(|&o| o != NONE)
                .map(|o| o as usize);
        }
        let in_ch = self.net.in_channel[u / v];
        let q = RouteQuery {
            switch: s,
            in_channel: (in_ch != NONE).then_some(in_ch as usize),
            in_vc: u % v,
            src: p.src_sw as usize,
            dst: p.dst_sw as usize,
            hops: p.hops as usize,
        };
        let mut cands = Vec::new();
        self.routing.candidates(&q, &mut cands);
        cands.iter().find_map(|k| {
            let gp = self.net.channel_port[k.channel as usize] as usize;
            let o = self.out_owner[gp * v + usize::from(k.vc).min(v - 1)];
            (o != NONE).then_some(o as usize)
        })
    }

    /// Where the flits of `pkt` are.
    fn locate_packet(&self, pkt: u32) -> String {
        let mut parts: Vec<String> = Vec::new();
        for (u, unit) in self.units.iter().enumerate() {
            if let Some(i) = unit.runs.iter().position(|r| r.pkt == pkt) {
                let gp = u / self.vcs;
                let (s, p, v) = (
                    self.net.port_switch[gp],
                    self.net.port_local[gp],
                    u % self.vcs,
                );
                parts.push(format!(
                    "s{s}:p{p} vc{v} (run {i} of {}, {} flits)",
                    unit.runs.len(),
                    unit.runs[i].flits
                ));
            }
        }
        for (h, hs) in self
            .hosts
            .iter()
            .enumerate()
            .filter(|(_, hs)| hs.current == pkt)
        {
            parts.push(format!("host {h} ({} flits sent)", hs.sent));
        }
        format!("; packet {pkt} has flits in: {}", parts.join(", "))
    }

    /// A description of a wait-for cycle (or of the longest wait chain found).
    pub(super) fn diagnose_deadlock(&self) -> String {
        let mut text = format!(
            "no flit moved for {} cycles at cycle {} with {} flits in the network",
            self.cfg.watchdog_cycles, self.now, self.flits_in_network
        );
        for start in (0..self.units.len()).filter(|&u| self.units[u].occ > 0) {
            let mut chain = vec![start];
            let mut u = start;
            while let Some(next) = self.waits_for(u) {
                if let Some(pos) = chain.iter().position(|&x| x == next) {
                    let names: Vec<String> =
                        chain[pos..].iter().map(|&x| self.unit_name(x)).collect();
                    text.push_str(&format!(
                        "; wait-for cycle: {} -> {}",
                        names.join(" -> "),
                        names[0]
                    ));
                    if let Some(r) = self.units[next].runs.front() {
                        text.push_str(&self.locate_packet(r.pkt));
                    }
                    return text;
                }
                chain.push(next);
                u = next;
            }
        }
        text
    }
}

impl Simulator {
    /// Checks flit conservation: every live packet's flits are in buffers, delivered, or not yet
    /// injected, and the buffer counters agree. Used by tests and when debugging the engine.
    pub fn audit(&self) -> crate::error::Result<()> {
        let fail = |m: String| {
            Err(crate::error::SimError::Check(format!(
                "cycle {}: {m}",
                self.now
            )))
        };
        let mut per_packet: std::collections::HashMap<u32, u32> = std::collections::HashMap::new();
        let mut total = 0u64;
        for (u, unit) in self.units.iter().enumerate() {
            let sum: u32 = unit.runs.iter().map(|r| r.flits).sum();
            if sum != unit.occ || unit.occ > self.cfg.buffer_flits {
                return fail(format!(
                    "unit {u} holds {sum} flits but counts {}",
                    unit.occ
                ));
            }
            total += u64::from(sum);
            for r in &unit.runs {
                *per_packet.entry(r.pkt).or_insert(0) += r.flits;
            }
        }
        if total != self.flits_in_network {
            return fail(format!(
                "{total} flits in buffers, counter says {}",
                self.flits_in_network
            ));
        }
        for (&pkt, &flits) in &per_packet {
            let p = self.packets.get(pkt);
            let unsent = self
                .hosts
                .iter()
                .find(|h| h.current == pkt)
                .map_or(0, |h| p.len - h.sent);
            if !p.alive || flits + p.delivered + unsent != p.len {
                return fail(format!(
                    "packet {pkt}: {flits} in buffers + {} delivered + {unsent} unsent != {} (alive {})",
                    p.delivered, p.len, p.alive
                ));
            }
        }
        Ok(())
    }
}
