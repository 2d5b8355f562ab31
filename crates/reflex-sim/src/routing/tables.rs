//! Routing functions as candidate sets, shared by the deadlock checker and the simulator
//! (style-models.md rule 22: one routing implementation, two consumers).
//!
//! A routing function answers [`Routing::candidates`] for a [`RouteQuery`] (where the header is,
//! how it arrived, where it goes) with a list of (output channel, virtual channel) pairs. It never
//! sees buffer state; choosing among candidates is the simulator's selection policy.
//!
//! - [`TableRouting`]: distributed tables indexed by (input channel or host, destination), filled
//!   with all shortest legal paths of a turn set (Paper A: "all the possible shortest paths").
//! - [`SourceRouting`]: one path per switch pair, chosen at the source host (Myrinet, Paper A).
//! - [`AdaptiveRouting`]: fully adaptive minimal routing on VC 0 plus an escape [`TableRouting`]
//!   on VC 1 (Silla & Duato, Paper C). Under virtual cut-through a packet may return from the
//!   escape VC to the adaptive one; under wormhole it stays on the escape VC.

use super::paths::{AnyTurn, LegalPaths, PathSet, Turns};
use crate::topology::Topology;

/// One routing option.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// Output channel.
    pub channel: u32,
    /// Virtual channel on it.
    pub vc: u8,
    /// Whether this is an escape option (lower priority).
    pub escape: bool,
}

/// What the routing function may know about a header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RouteQuery {
    /// Switch holding the header.
    pub switch: usize,
    /// Channel it arrived on (`None` = from a host).
    pub in_channel: Option<usize>,
    /// Virtual channel it arrived on.
    pub in_vc: usize,
    /// Source switch.
    pub src: usize,
    /// Destination switch (`!= switch`).
    pub dst: usize,
    /// Switch-to-switch hops taken so far.
    pub hops: usize,
}

/// A routing function (see module docs).
pub trait Routing {
    /// Virtual channels per physical channel it uses.
    fn vcs(&self) -> usize;
    /// Whether candidates depend on the source switch and hop count (source routing), not only on
    /// (switch, input channel, input VC, destination).
    fn source_dependent(&self) -> bool;
    /// Appends the candidates for `q` to `out` (in priority order).
    fn candidates(&self, q: &RouteQuery, out: &mut Vec<Candidate>);
}

/// Distributed routing tables on one virtual channel.
#[derive(Clone, Debug)]
pub struct TableRouting {
    n: usize,
    channels: usize,
    vc: u8,
    escape: bool,
    /// `(start, len)` into `pool` per `state * n + dst`; state = channel, or `channels + switch`
    /// for host injection.
    entries: Vec<(u32, u16)>,
    pool: Vec<Candidate>,
}

impl TableRouting {
    /// Tables with all shortest legal paths of `turns`, on virtual channel `vc`.
    pub fn all_shortest(topo: &Topology, turns: &impl Turns, vc: u8, escape: bool) -> Self {
        Self::from_legal(topo, &LegalPaths::new(topo, turns), vc, escape)
    }

    /// Tables with all shortest paths recorded in `legal`.
    pub fn from_legal(topo: &Topology, legal: &LegalPaths, vc: u8, escape: bool) -> Self {
        let n = topo.switches();
        let channels = topo.channels();
        let mut t = TableRouting {
            n,
            channels,
            vc,
            escape,
            entries: vec![(0, 0); (channels + n) * n],
            pool: Vec::new(),
        };
        for x in 0..n {
            t.fill_rows(topo, legal, x);
        }
        t
    }

    fn state(&self, x: usize, cin: Option<usize>) -> usize {
        cin.unwrap_or(self.channels + x)
    }

    /// (Re)computes the rows of switch `x` (its input channels and host injection) from `legal`.
    fn fill_rows(&mut self, topo: &Topology, legal: &LegalPaths, x: usize) {
        let ins: Vec<Option<usize>> = std::iter::once(None)
            .chain(
                topo.adjacent(x)
                    .iter()
                    .map(|nb| Some(topo.channel(nb.link, nb.switch))),
            )
            .collect();
        for cin in ins {
            let st = self.state(x, cin);
            for d in (0..self.n).filter(|&d| d != x) {
                let start = self.pool.len();
                let (vc, escape) = (self.vc, self.escape);
                self.pool
                    .extend(legal.next_channels(x, cin, d).map(|c| Candidate {
                        channel: c as u32,
                        vc,
                        escape,
                    }));
                self.entries[st * self.n + d] = (start as u32, (self.pool.len() - start) as u16);
            }
        }
    }

    /// Copies the rows of switch `x` from `other` (a partial table update during
    /// reconfiguration). Rows of input channels that are not live in `topo` are cleared.
    pub fn install_rows(&mut self, topo: &Topology, other: &TableRouting, x: usize) {
        let mut states = vec![self.channels + x];
        states.extend((0..self.channels).filter(|&c| topo.channel_dst(c) == x));
        for st in states {
            for d in 0..self.n {
                let list = other.entry(st, d).to_vec();
                let start = self.pool.len();
                self.pool.extend(list);
                self.entries[st * self.n + d] = (start as u32, (self.pool.len() - start) as u16);
            }
        }
    }

    /// Removes every candidate that uses channel `c` (a local update after a link failure).
    pub fn remove_channel(&mut self, c: usize) {
        for e in &mut self.entries {
            let (s, l) = (e.0 as usize, e.1 as usize);
            if self.pool[s..s + l].iter().any(|k| k.channel as usize == c) {
                let kept: Vec<Candidate> = self.pool[s..s + l]
                    .iter()
                    .copied()
                    .filter(|k| k.channel as usize != c)
                    .collect();
                self.pool[s..s + kept.len()].copy_from_slice(&kept);
                e.1 = kept.len() as u16;
            }
        }
    }

    fn entry(&self, state: usize, d: usize) -> &[Candidate] {
        let (s, l) = self.entries[state * self.n + d];
        &self.pool[s as usize..s as usize + l as usize]
    }

    /// Candidates in state (`x`, `cin`) toward `d`.
    pub fn lookup(&self, x: usize, cin: Option<usize>, d: usize) -> &[Candidate] {
        self.entry(self.state(x, cin), d)
    }

    /// Number of switches.
    pub fn switches(&self) -> usize {
        self.n
    }
}

impl Routing for TableRouting {
    fn vcs(&self) -> usize {
        usize::from(self.vc) + 1
    }
    fn source_dependent(&self) -> bool {
        false
    }
    fn candidates(&self, q: &RouteQuery, out: &mut Vec<Candidate>) {
        out.extend_from_slice(self.lookup(q.switch, q.in_channel, q.dst));
    }
}

/// Deterministic source routing: the path is fixed at the source.
#[derive(Clone, Debug)]
pub struct SourceRouting {
    paths: PathSet,
}

impl SourceRouting {
    /// Routing that follows `paths`.
    pub fn new(paths: PathSet) -> Self {
        SourceRouting { paths }
    }

    /// The underlying paths.
    pub fn paths(&self) -> &PathSet {
        &self.paths
    }
}

impl Routing for SourceRouting {
    fn vcs(&self) -> usize {
        1
    }
    fn source_dependent(&self) -> bool {
        true
    }
    fn candidates(&self, q: &RouteQuery, out: &mut Vec<Candidate>) {
        if let Some(&c) = self.paths.path(q.src, q.dst).get(q.hops) {
            out.push(Candidate {
                channel: c as u32,
                vc: 0,
                escape: false,
            });
        }
    }
}

/// Minimal adaptive routing (VC 0) with an escape table (VC 1).
#[derive(Clone, Debug)]
pub struct AdaptiveRouting {
    minimal: TableRouting,
    escape: TableRouting,
    /// Virtual cut-through: a packet on the escape VC may go back to the adaptive VC.
    pub may_leave_escape: bool,
}

impl AdaptiveRouting {
    /// Adaptive routing over `topo` with escape turns `escape_turns`.
    pub fn new(topo: &Topology, escape_turns: &impl Turns, may_leave_escape: bool) -> Self {
        AdaptiveRouting {
            minimal: TableRouting::all_shortest(topo, &AnyTurn, 0, false),
            escape: TableRouting::all_shortest(topo, escape_turns, 1, true),
            may_leave_escape,
        }
    }

    /// Builds it from already computed tables (reconfiguration installs rows into them).
    pub fn from_tables(
        minimal: TableRouting,
        escape: TableRouting,
        may_leave_escape: bool,
    ) -> Self {
        AdaptiveRouting {
            minimal,
            escape,
            may_leave_escape,
        }
    }

    /// The adaptive (VC 0) tables.
    pub fn minimal(&self) -> &TableRouting {
        &self.minimal
    }

    /// The escape (VC 1) tables.
    pub fn escape(&self) -> &TableRouting {
        &self.escape
    }

    /// Mutable access to both tables (for partial updates).
    pub fn tables_mut(&mut self) -> (&mut TableRouting, &mut TableRouting) {
        (&mut self.minimal, &mut self.escape)
    }
}

impl Routing for AdaptiveRouting {
    fn vcs(&self) -> usize {
        2
    }
    fn source_dependent(&self) -> bool {
        false
    }
    fn candidates(&self, q: &RouteQuery, out: &mut Vec<Candidate>) {
        let on_escape = q.in_vc == 1 && q.in_channel.is_some();
        if on_escape && !self.may_leave_escape {
            out.extend_from_slice(self.escape.lookup(q.switch, q.in_channel, q.dst));
            return;
        }
        // Adaptive channels first; the minimal tables do not depend on how the packet arrived,
        // except that going straight back over the arrival link is never offered (after a
        // non-minimal escape hop it would make the packet oscillate).
        let back = q.in_channel.map(|c| (c ^ 1) as u32);
        out.extend(
            self.minimal
                .lookup(q.switch, None, q.dst)
                .iter()
                .filter(|k| Some(k.channel) != back),
        );
        // A packet that arrived on an adaptive channel enters the escape network afresh.
        let escape_state = if on_escape { q.in_channel } else { None };
        out.extend_from_slice(self.escape.lookup(q.switch, escape_state, q.dst));
    }
}

/// Any of the routing functions, with static dispatch for the simulator's hot path.
#[derive(Clone, Debug)]
pub enum AnyRouting {
    /// Distributed tables.
    Table(TableRouting),
    /// Source routes.
    Source(SourceRouting),
    /// Adaptive with escape.
    Adaptive(AdaptiveRouting),
}

impl Routing for AnyRouting {
    fn vcs(&self) -> usize {
        match self {
            AnyRouting::Table(r) => r.vcs(),
            AnyRouting::Source(r) => r.vcs(),
            AnyRouting::Adaptive(r) => r.vcs(),
        }
    }
    fn source_dependent(&self) -> bool {
        matches!(self, AnyRouting::Source(_))
    }
    fn candidates(&self, q: &RouteQuery, out: &mut Vec<Candidate>) {
        match self {
            AnyRouting::Table(r) => r.candidates(q, out),
            AnyRouting::Source(r) => r.candidates(q, out),
            AnyRouting::Adaptive(r) => r.candidates(q, out),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routing::orientation::Orientation;
    use crate::topology::tests::ring;

    #[test]
    fn adaptive_candidates_by_hand() {
        let t = ring(4, 1);
        let o = Orientation::from_ranks(&t, &[3, 2, 1, 0]);
        let r = AdaptiveRouting::new(&t, &o, true);
        let mut out = Vec::new();
        let q = RouteQuery {
            switch: 2,
            in_channel: None,
            in_vc: 0,
            src: 2,
            dst: 0,
            hops: 0,
        };
        r.candidates(&q, &mut out);
        // Two minimal adaptive options (via 1 and via 3) and one escape option (via 1, up).
        assert_eq!(out.iter().filter(|c| !c.escape).count(), 2);
        let esc: Vec<_> = out.iter().filter(|c| c.escape).collect();
        assert_eq!(esc.len(), 1);
        assert_eq!(t.channel_dst(esc[0].channel as usize), 1);
        assert_eq!(esc[0].vc, 1);
    }

    #[test]
    fn install_and_remove_rows() {
        let t = ring(4, 1);
        let a =
            TableRouting::all_shortest(&t, &Orientation::from_ranks(&t, &[3, 2, 1, 0]), 0, false);
        let b =
            TableRouting::all_shortest(&t, &Orientation::from_ranks(&t, &[0, 1, 2, 3]), 0, false);
        let mut m = a.clone();
        m.install_rows(&t, &b, 1);
        assert_eq!(m.lookup(1, None, 3), b.lookup(1, None, 3));
        assert_eq!(m.lookup(2, None, 0), a.lookup(2, None, 0));
        let c = a.lookup(1, None, 3)[0].channel as usize;
        m.remove_channel(c);
        assert!(m.lookup(1, None, 3).iter().all(|k| k.channel as usize != c));
    }
}
