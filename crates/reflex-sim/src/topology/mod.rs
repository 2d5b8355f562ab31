//! Network topology: switches with numbered ports, bidirectional switch-to-switch links and hosts
//! attached to switch ports (the system model shared by the three CANPC 2000 routing papers,
//! reference/seed000b.md §0).
//!
//! Links are numbered canonically, as in Paper B's chromosome loci: scan switch 0 port 0, then the
//! following ports and switches, and number each link the first time it is met. Hence every link
//! `l` has endpoints `a < b`. A link's two directed *channels* are `2l` (a→b) and `2l+1` (b→a).
//! Switches and links can be switched off and on again (reconfiguration) without renumbering:
//! a link is *live* when it is enabled and both of its switches are up.

pub mod format;
pub mod generate;

use std::collections::VecDeque;

use crate::error::{Result, SimError};

/// What is plugged into a switch port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Location {
    /// Nothing.
    Unused,
    /// Host (processing node) number.
    Host(usize),
    /// The other end of link `link`: `port` of `switch`.
    Switch {
        /// Remote switch.
        switch: usize,
        /// Port at the remote switch.
        port: usize,
        /// Link id.
        link: usize,
    },
}

/// A bidirectional switch-to-switch link (`a < b`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Link {
    /// Lower-numbered switch.
    pub a: usize,
    /// Port of `a`.
    pub a_port: usize,
    /// Higher-numbered switch.
    pub b: usize,
    /// Port of `b`.
    pub b_port: usize,
}

/// One live neighbour of a switch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Neighbour {
    /// Neighbouring switch.
    pub switch: usize,
    /// Link id.
    pub link: usize,
    /// Local port.
    pub port: usize,
    /// Port at the neighbour.
    pub remote_port: usize,
}

/// Port-graph topology (see the module docs).
#[derive(Clone, Debug)]
pub struct Topology {
    ports: Vec<usize>,
    port_map: Vec<Vec<Location>>,
    links: Vec<Link>,
    hosts: Vec<(usize, usize)>,
    switch_up: Vec<bool>,
    link_enabled: Vec<bool>,
    adj: Vec<Vec<Neighbour>>,
}

/// Collects switches, hosts and links, then validates them into a [`Topology`].
#[derive(Clone, Debug, Default)]
pub struct TopologyBuilder {
    ports: Vec<usize>,
    hosts: Vec<(usize, usize)>,
    links: Vec<(usize, usize, usize, usize)>,
}

impl TopologyBuilder {
    /// Builder for switches with the given port counts.
    pub fn new(ports: Vec<usize>) -> Self {
        TopologyBuilder {
            ports,
            ..Default::default()
        }
    }

    /// Builder for `switches` switches with `ports` ports each and `hosts` hosts on ports `0..hosts`.
    pub fn uniform(switches: usize, ports: usize, hosts: usize) -> Self {
        let mut b = TopologyBuilder::new(vec![ports; switches]);
        for s in 0..switches {
            for p in 0..hosts.min(ports) {
                b.add_host(s, p);
            }
        }
        b
    }

    /// Number of switches.
    pub fn switches(&self) -> usize {
        self.ports.len()
    }

    /// Attaches a host to `port` of `switch`.
    pub fn add_host(&mut self, switch: usize, port: usize) -> &mut Self {
        self.hosts.push((switch, port));
        self
    }

    /// Adds a link between `port_a` of `a` and `port_b` of `b`.
    pub fn add_link(&mut self, a: usize, port_a: usize, b: usize, port_b: usize) -> &mut Self {
        self.links.push((a, port_a, b, port_b));
        self
    }

    /// First port of `switch` not used by a host or link, if any.
    pub fn free_port(&self, switch: usize) -> Option<usize> {
        (0..*self.ports.get(switch)?).find(|&p| !self.port_used(switch, p))
    }

    /// Whether `port` of `switch` is taken by a host or a link.
    pub fn port_used(&self, switch: usize, port: usize) -> bool {
        self.hosts.iter().any(|&(s, q)| s == switch && q == port)
            || self
                .links
                .iter()
                .any(|&(a, pa, b, pb)| (a == switch && pa == port) || (b == switch && pb == port))
    }

    /// Whether `a` and `b` are already linked.
    pub fn linked(&self, a: usize, b: usize) -> bool {
        self.links
            .iter()
            .any(|&(x, _, y, _)| (x == a && y == b) || (x == b && y == a))
    }

    /// Adds a link on the first free port of each switch.
    pub fn connect(&mut self, a: usize, b: usize) -> Result<&mut Self> {
        let pa = self
            .free_port(a)
            .ok_or_else(|| SimError::invalid(format!("switch {a} has no free port")))?;
        let pb = self
            .free_port(b)
            .ok_or_else(|| SimError::invalid(format!("switch {b} has no free port")))?;
        Ok(self.add_link(a, pa, b, pb))
    }

    /// Validates ports, self-links and parallel links, numbers links canonically.
    pub fn build(&self) -> Result<Topology> {
        let n = self.ports.len();
        let mut port_map: Vec<Vec<Location>> = self
            .ports
            .iter()
            .map(|&p| vec![Location::Unused; p])
            .collect();
        let mut claim = |s: usize, p: usize, loc: Location| -> Result<()> {
            let slot = port_map
                .get_mut(s)
                .ok_or_else(|| {
                    SimError::invalid(format!("unknown switch {s} (network has {n} switches)"))
                })?
                .get_mut(p)
                .ok_or_else(|| SimError::invalid(format!("switch {s} has no port {p}")))?;
            if *slot != Location::Unused {
                return Err(SimError::invalid(format!(
                    "port {p} of switch {s} is used twice"
                )));
            }
            *slot = loc;
            Ok(())
        };
        let mut hosts = self.hosts.clone();
        hosts.sort_unstable();
        for (h, &(s, p)) in hosts.iter().enumerate() {
            claim(s, p, Location::Host(h))?;
        }
        let mut seen = std::collections::HashSet::new();
        for &(a, pa, b, pb) in &self.links {
            if a == b {
                return Err(SimError::invalid(format!("link from switch {a} to itself")));
            }
            if !seen.insert((a.min(b), a.max(b))) {
                return Err(SimError::invalid(format!(
                    "parallel links between switches {a} and {b}"
                )));
            }
            // Link ids are provisional here; canonical ids are assigned below.
            claim(
                a,
                pa,
                Location::Switch {
                    switch: b,
                    port: pb,
                    link: usize::MAX,
                },
            )?;
            claim(
                b,
                pb,
                Location::Switch {
                    switch: a,
                    port: pa,
                    link: usize::MAX,
                },
            )?;
        }
        let mut links = Vec::with_capacity(self.links.len());
        for s in 0..n {
            for p in 0..port_map[s].len() {
                if let Location::Switch {
                    switch: t,
                    port: q,
                    link: usize::MAX,
                } = port_map[s][p]
                {
                    let id = links.len();
                    links.push(Link {
                        a: s,
                        a_port: p,
                        b: t,
                        b_port: q,
                    });
                    port_map[s][p] = Location::Switch {
                        switch: t,
                        port: q,
                        link: id,
                    };
                    port_map[t][q] = Location::Switch {
                        switch: s,
                        port: p,
                        link: id,
                    };
                }
            }
        }
        let mut topo = Topology {
            ports: self.ports.clone(),
            port_map,
            link_enabled: vec![true; links.len()],
            links,
            hosts,
            switch_up: vec![true; n],
            adj: Vec::new(),
        };
        topo.rebuild_adjacency();
        Ok(topo)
    }
}

impl Topology {
    fn rebuild_adjacency(&mut self) {
        let mut adj = vec![Vec::new(); self.ports.len()];
        for (l, link) in self.links.iter().enumerate() {
            if self.link_live(l) {
                adj[link.a].push(Neighbour {
                    switch: link.b,
                    link: l,
                    port: link.a_port,
                    remote_port: link.b_port,
                });
                adj[link.b].push(Neighbour {
                    switch: link.a,
                    link: l,
                    port: link.b_port,
                    remote_port: link.a_port,
                });
            }
        }
        for list in &mut adj {
            list.sort_unstable_by_key(|n| n.port);
        }
        self.adj = adj;
    }

    /// Number of switches (up or down).
    pub fn switches(&self) -> usize {
        self.ports.len()
    }

    /// Number of hosts.
    pub fn hosts(&self) -> usize {
        self.hosts.len()
    }

    /// Number of links (live or not).
    pub fn links(&self) -> usize {
        self.links.len()
    }

    /// Number of directed channels (`2 * links()`).
    pub fn channels(&self) -> usize {
        2 * self.links.len()
    }

    /// Link `l`.
    pub fn link(&self, l: usize) -> &Link {
        &self.links[l]
    }

    /// All links.
    pub fn link_list(&self) -> &[Link] {
        &self.links
    }

    /// Port count of `switch`.
    pub fn ports(&self, switch: usize) -> usize {
        self.ports[switch]
    }

    /// Largest port count.
    pub fn max_ports(&self) -> usize {
        self.ports.iter().copied().max().unwrap_or(0)
    }

    /// What is plugged into `port` of `switch`.
    pub fn neighbour(&self, switch: usize, port: usize) -> Location {
        self.port_map[switch][port]
    }

    /// (switch, port) of host `h`.
    pub fn host_port(&self, h: usize) -> (usize, usize) {
        self.hosts[h]
    }

    /// Switch of host `h`.
    pub fn host_switch(&self, h: usize) -> usize {
        self.hosts[h].0
    }

    /// Hosts attached to `switch`.
    pub fn hosts_of(&self, switch: usize) -> impl Iterator<Item = usize> + '_ {
        self.port_map[switch].iter().filter_map(|l| {
            if let Location::Host(h) = l {
                Some(*h)
            } else {
                None
            }
        })
    }

    /// Live neighbours of `switch`, by increasing local port.
    pub fn adjacent(&self, switch: usize) -> &[Neighbour] {
        &self.adj[switch]
    }

    /// Whether `switch` is up.
    pub fn switch_up(&self, switch: usize) -> bool {
        self.switch_up[switch]
    }

    /// Whether link `l` is live (enabled and both ends up).
    pub fn link_live(&self, l: usize) -> bool {
        let k = &self.links[l];
        self.link_enabled[l] && self.switch_up[k.a] && self.switch_up[k.b]
    }

    /// Number of live switches.
    pub fn live_switches(&self) -> usize {
        self.switch_up.iter().filter(|u| **u).count()
    }

    /// Number of live links.
    pub fn live_links(&self) -> usize {
        (0..self.links.len()).filter(|&l| self.link_live(l)).count()
    }

    /// Switches `switch` up or down (its links follow).
    pub fn set_switch(&mut self, switch: usize, up: bool) -> Result<()> {
        *self
            .switch_up
            .get_mut(switch)
            .ok_or_else(|| SimError::invalid(format!("unknown switch {switch}")))? = up;
        self.rebuild_adjacency();
        Ok(())
    }

    /// Enables or disables link `l`.
    pub fn set_link(&mut self, l: usize, up: bool) -> Result<()> {
        *self
            .link_enabled
            .get_mut(l)
            .ok_or_else(|| SimError::invalid(format!("unknown link {l}")))? = up;
        self.rebuild_adjacency();
        Ok(())
    }

    /// The link between switches `a` and `b` (live or not), if they are wired together.
    pub fn find_link(&self, a: usize, b: usize) -> Option<usize> {
        let (lo, hi) = (a.min(b), a.max(b));
        self.links.iter().position(|k| k.a == lo && k.b == hi)
    }

    /// Channel leaving `from` on link `l`.
    pub fn channel(&self, l: usize, from: usize) -> usize {
        if self.links[l].a == from {
            2 * l
        } else {
            2 * l + 1
        }
    }

    /// Source switch of channel `c`.
    pub fn channel_src(&self, c: usize) -> usize {
        let k = &self.links[c / 2];
        if c & 1 == 0 {
            k.a
        } else {
            k.b
        }
    }

    /// Destination switch of channel `c`.
    pub fn channel_dst(&self, c: usize) -> usize {
        let k = &self.links[c / 2];
        if c & 1 == 0 {
            k.b
        } else {
            k.a
        }
    }

    /// Output port of channel `c` at its source switch.
    pub fn channel_out_port(&self, c: usize) -> usize {
        let k = &self.links[c / 2];
        if c & 1 == 0 {
            k.a_port
        } else {
            k.b_port
        }
    }

    /// Input port of channel `c` at its destination switch.
    pub fn channel_in_port(&self, c: usize) -> usize {
        let k = &self.links[c / 2];
        if c & 1 == 0 {
            k.b_port
        } else {
            k.a_port
        }
    }

    /// Channel arriving at `switch` through `port`, if that port holds a live link.
    pub fn channel_into(&self, switch: usize, port: usize) -> Option<usize> {
        match self.port_map[switch][port] {
            Location::Switch {
                switch: from, link, ..
            } if self.link_live(link) => Some(self.channel(link, from)),
            _ => None,
        }
    }

    /// Channel leaving `switch` through `port`, if that port holds a live link.
    pub fn channel_out_of(&self, switch: usize, port: usize) -> Option<usize> {
        match self.port_map[switch][port] {
            Location::Switch { link, .. } if self.link_live(link) => {
                Some(self.channel(link, switch))
            }
            _ => None,
        }
    }

    /// Hop distances from `src` over live links (`u32::MAX` = unreachable).
    pub fn distances_from(&self, src: usize) -> Vec<u32> {
        let mut dist = vec![u32::MAX; self.switches()];
        if !self.switch_up[src] {
            return dist;
        }
        dist[src] = 0;
        let mut queue = VecDeque::from([src]);
        while let Some(x) = queue.pop_front() {
            for nb in &self.adj[x] {
                if dist[nb.switch] == u32::MAX {
                    dist[nb.switch] = dist[x] + 1;
                    queue.push_back(nb.switch);
                }
            }
        }
        dist
    }

    /// All-pairs hop distances (row = source).
    pub fn distance_matrix(&self) -> Vec<Vec<u32>> {
        (0..self.switches())
            .map(|s| self.distances_from(s))
            .collect()
    }

    /// Whether all live switches are mutually reachable.
    pub fn is_connected(&self) -> bool {
        let Some(first) = (0..self.switches()).find(|&s| self.switch_up[s]) else {
            return true;
        };
        let d = self.distances_from(first);
        (0..self.switches()).all(|s| !self.switch_up[s] || d[s] != u32::MAX)
    }

    /// Average distance from `s` to the other live switches (the "average topological distance"
    /// of a node, used by Paper A's DFS heuristic and root choice).
    pub fn average_distance_from(&self, s: usize) -> f64 {
        let d = self.distances_from(s);
        let (sum, cnt) = d
            .iter()
            .enumerate()
            .filter(|&(t, &x)| t != s && self.switch_up[t] && x != u32::MAX)
            .fold((0u64, 0u64), |(a, c), (_, &x)| (a + u64::from(x), c + 1));
        if cnt == 0 {
            0.0
        } else {
            sum as f64 / cnt as f64
        }
    }

    /// Number of independent cycles `M - N + 1` of the live graph (Paper A §3).
    pub fn independent_cycles(&self) -> usize {
        (self.live_links() + 1).saturating_sub(self.live_switches())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A ring of `n` switches, `hosts` hosts each, 8 ports.
    pub(crate) fn ring(n: usize, hosts: usize) -> Topology {
        let mut b = TopologyBuilder::uniform(n, 8, hosts);
        for s in 0..n {
            b.connect(s, (s + 1) % n).unwrap();
        }
        b.build().unwrap()
    }

    #[test]
    fn canonical_numbering_and_channels() {
        let mut b = TopologyBuilder::uniform(3, 4, 1);
        b.add_link(2, 1, 0, 3).add_link(0, 1, 1, 1);
        let t = b.build().unwrap();
        // Switch 0 port 1 is met first: link 0 = (0,1); link 1 = (0,2) on port 3.
        assert_eq!(
            t.link(0),
            &Link {
                a: 0,
                a_port: 1,
                b: 1,
                b_port: 1
            }
        );
        assert_eq!(
            t.link(1),
            &Link {
                a: 0,
                a_port: 3,
                b: 2,
                b_port: 1
            }
        );
        assert_eq!(t.channel(1, 2), 3);
        assert_eq!(t.channel_src(3), 2);
        assert_eq!(t.channel_dst(3), 0);
        assert_eq!(t.channel_out_port(3), 1);
        assert_eq!(t.channel_in_port(3), 3);
        assert_eq!(t.channel_into(0, 3), Some(3));
        assert_eq!(t.hosts(), 3);
        assert_eq!(t.host_port(2), (2, 0));
    }

    #[test]
    fn rejects_bad_links() {
        let mut b = TopologyBuilder::uniform(2, 4, 1);
        b.add_link(0, 1, 1, 1).add_link(1, 2, 0, 2);
        assert!(b.build().unwrap_err().to_string().contains("parallel"));
        let mut b = TopologyBuilder::uniform(2, 4, 1);
        b.add_link(0, 0, 1, 1);
        assert!(b.build().unwrap_err().to_string().contains("used twice"));
        let mut b = TopologyBuilder::uniform(2, 4, 1);
        b.add_link(0, 1, 0, 2);
        assert!(b.build().is_err());
    }

    #[test]
    fn distances_and_failures() {
        let mut t = ring(6, 1);
        assert_eq!(t.distances_from(0), vec![0, 1, 2, 3, 2, 1]);
        assert_eq!(t.independent_cycles(), 1);
        t.set_switch(1, false).unwrap();
        assert_eq!(t.distances_from(0)[2], 4);
        assert!(t.is_connected());
        t.set_switch(4, false).unwrap();
        assert!(!t.is_connected());
        t.set_switch(1, true).unwrap();
        t.set_switch(4, true).unwrap();
        assert_eq!(t.live_links(), 6);
        let l = t.find_link(3, 2).unwrap();
        assert_eq!(t.find_link(2, 3), Some(l));
        assert_eq!(t.find_link(0, 3), None);
        t.set_link(l, false).unwrap();
        assert!(!t.link_live(l));
        assert_eq!(t.distances_from(2)[3], 5);
    }
}
