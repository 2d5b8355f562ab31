//! Static wiring of the simulated network (global port numbering, what every port connects to)
//! and the per-buffer state. A *global port* numbers all switch ports consecutively; an *input
//! unit* is one VC buffer of one input port (`gport * vcs + vc`), and an *output VC* uses the same
//! numbering on the output side. Buffers hold *runs*: consecutive flits of one packet, so a buffer
//! costs O(1) per flit moved however long the packets are.

use std::collections::VecDeque;

use crate::topology::{Location, Topology};

/// "No value" marker for `u32` indices.
pub const NONE: u32 = u32::MAX;

/// What an output port leads to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Peer {
    /// Nothing (unused port or dead link).
    Unused,
    /// Ejection to a host.
    Host(u32),
    /// A link to input port `down_port` (global) of a neighbour.
    Link {
        /// Global port at the other end.
        down_port: u32,
    },
}

/// Global port numbering and wiring.
#[derive(Clone, Debug)]
pub struct NetMap {
    /// First global port of each switch (plus the total at the end).
    pub port_base: Vec<u32>,
    /// Switch of each global port.
    pub port_switch: Vec<u32>,
    /// Local port number of each global port.
    pub port_local: Vec<u32>,
    /// Peer of each global port.
    pub peer: Vec<Peer>,
    /// Channel arriving at each global port (`NONE` for hosts and unused ports).
    pub in_channel: Vec<u32>,
    /// Global port of each host.
    pub host_port: Vec<u32>,
    /// Global port at the source side of each channel.
    pub channel_port: Vec<u32>,
}

impl NetMap {
    /// Wiring of `topo` (only live links are connected).
    pub fn new(topo: &Topology) -> Self {
        let n = topo.switches();
        let mut port_base = Vec::with_capacity(n + 1);
        let mut total = 0u32;
        for s in 0..n {
            port_base.push(total);
            total += topo.ports(s) as u32;
        }
        port_base.push(total);
        let mut m = NetMap {
            port_switch: vec![0; total as usize],
            port_local: vec![0; total as usize],
            peer: vec![Peer::Unused; total as usize],
            in_channel: vec![NONE; total as usize],
            host_port: vec![0; topo.hosts()],
            channel_port: vec![NONE; topo.channels()],
            port_base,
        };
        for s in 0..n {
            for p in 0..topo.ports(s) {
                let gp = (m.port_base[s] as usize) + p;
                m.port_switch[gp] = s as u32;
                m.port_local[gp] = p as u32;
                match topo.neighbour(s, p) {
                    Location::Host(h) => {
                        m.peer[gp] = Peer::Host(h as u32);
                        m.host_port[h] = gp as u32;
                    }
                    Location::Switch { switch, port, link } => {
                        let c = topo.channel(link, s);
                        m.channel_port[c] = gp as u32;
                        if topo.link_live(link) && topo.switch_up(s) {
                            m.peer[gp] = Peer::Link {
                                down_port: m.port_base[switch] + port as u32,
                            };
                            m.in_channel[gp] = topo.channel(link, switch) as u32;
                        }
                    }
                    Location::Unused => {}
                }
            }
        }
        m
    }

    /// Number of global ports.
    pub fn ports(&self) -> usize {
        self.port_switch.len()
    }
}

/// Consecutive flits of one packet inside a buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    /// Packet slot.
    pub pkt: u32,
    /// Flits of it in this buffer.
    pub flits: u32,
    /// Flits of it that already left this buffer (the header is here while this is 0).
    pub sent: u32,
    /// Cycle its header arrived.
    pub arrived: u64,
}

/// One VC input buffer.
#[derive(Clone, Debug, Default)]
pub struct InputUnit {
    /// Runs, oldest first.
    pub runs: VecDeque<Run>,
    /// Flits held.
    pub occ: u32,
    /// Output VC granted to the front packet (`NONE` if none).
    pub granted: u32,
}

impl InputUnit {
    /// Empty buffer.
    pub fn new() -> Self {
        InputUnit {
            runs: VecDeque::new(),
            occ: 0,
            granted: NONE,
        }
    }
}

/// A packet in flight.
#[derive(Clone, Copy, Debug, Default)]
pub struct Packet {
    /// Source host.
    pub src: u32,
    /// Destination host.
    pub dst: u32,
    /// Source switch.
    pub src_sw: u32,
    /// Destination switch.
    pub dst_sw: u32,
    /// Length in flits.
    pub len: u32,
    /// Flits delivered so far.
    pub delivered: u32,
    /// Switch-to-switch hops taken by the header.
    pub hops: u32,
    /// Generation cycle.
    pub created: u64,
    /// Cycle its header entered the network.
    pub injected: u64,
    /// Whether the slot is in use.
    pub alive: bool,
}

/// Packet storage with slot reuse.
#[derive(Clone, Debug, Default)]
pub struct PacketSlab {
    slots: Vec<Packet>,
    free: Vec<u32>,
}

impl PacketSlab {
    /// Stores `p`, returning its slot.
    pub fn insert(&mut self, p: Packet) -> u32 {
        match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = p;
                i
            }
            None => {
                self.slots.push(p);
                (self.slots.len() - 1) as u32
            }
        }
    }

    /// Frees slot `i`.
    pub fn remove(&mut self, i: u32) {
        self.slots[i as usize].alive = false;
        self.free.push(i);
    }

    /// Packet in slot `i`.
    pub fn get(&self, i: u32) -> &Packet {
        &self.slots[i as usize]
    }

    /// Mutable packet in slot `i`.
    pub fn get_mut(&mut self, i: u32) -> &mut Packet {
        &mut self.slots[i as usize]
    }

    /// Packets alive.
    pub fn alive(&self) -> usize {
        self.slots.len() - self.free.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::tests::ring;

    #[test]
    fn wiring_of_a_ring() {
        let t = ring(3, 1);
        let m = NetMap::new(&t);
        assert_eq!(m.ports(), 24);
        assert_eq!(m.peer[0], Peer::Host(0));
        assert_eq!(m.host_port, vec![0, 8, 16]);
        // Switch 0 port 1 leads to switch 1 (ring(): connect(s, s+1) uses the first free ports).
        assert_eq!(m.peer[1], Peer::Link { down_port: 8 + 1 });
        let c = t.channel(0, 0);
        assert_eq!(m.channel_port[c], 1);
        assert_eq!(m.in_channel[9], c as u32);
    }
}
