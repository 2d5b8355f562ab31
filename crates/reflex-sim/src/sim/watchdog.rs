//! Deadlock diagnosis for the watchdog: starting from a buffer that holds flits, follow what it
//! waits for (a header waits for the owner of a candidate output VC; a granted packet waits for
//! room in the downstream buffer) until a buffer repeats, and print that wait-for cycle.

use super::engine::Simulator;
use super::network::{Peer, NONE};
use crate::routing::tables::{RouteQuery, Routing};

impl Simulator {
    fn unit_name(&self, u: usize) -> String {
        let gp = u / self.vcs;
        format!(
            "s{}:p{} vc{}",
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
                    return text;
                }
                chain.push(next);
                u = next;
            }
        }
        text
    }
}
