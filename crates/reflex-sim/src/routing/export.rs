//! Table exports.
//!
//! - [`switch_tables`]: distributed tables as text, one line per (switch, input port, destination
//!   switch) with its output ports (input `h` = from a host), as Paper A's "(destination, input
//!   port) → output port" tables.
//! - [`source_routes`]: one line per host pair with the port sequence a Myrinet-style host puts in
//!   the header (switch output ports, the last one to the destination host).
//! - [`destination_routes`] and [`opensm_lfts`]: destination-based up*/down* (one output port per
//!   switch and destination, as InfiniBand LFTs need) and its export in the dump format that
//!   OpenSM's file routing engine loads (`opensm -R file -U FILE`; the format written by OpenSM's
//!   `dump_ucast_lfts` and `dump_lfts.sh`). A switch with a down-only path to the destination
//!   takes it; otherwise it goes up toward the nearest switch that has one. Every route is thus
//!   up*-then-down* whatever way a packet arrived, which keeps the tables deadlock-free, at the
//!   price of occasionally non-minimal routes.
//!
//! OpenSM identities are synthetic and documented here: switch `s` has LID `s + 1` and node GUID
//! `0x5245_0000_0000_0000 + s + 1`; host `h` has LID `N + h + 1` and port GUID
//! `0x5245_0001_0000_0000 + h + 1`; switch port `p` is InfiniBand port `p + 1` (port 0 is the
//! switch's management port).

use std::collections::VecDeque;
use std::fmt::Write;

use super::orientation::Orientation;
use super::paths::{PathSet, UNREACHABLE};
use super::tables::TableRouting;
use crate::topology::Topology;

/// Distributed tables as text.
pub fn switch_tables(topo: &Topology, t: &TableRouting) -> String {
    let mut out =
        String::from("# switch in_port dest_switch : out_ports   (in_port h = from a host)\n");
    for x in (0..topo.switches()).filter(|&x| topo.switch_up(x)) {
        let mut ins: Vec<(String, Option<usize>)> = vec![("h".into(), None)];
        ins.extend(
            topo.adjacent(x)
                .iter()
                .map(|nb| (nb.port.to_string(), Some(topo.channel(nb.link, nb.switch)))),
        );
        for (name, cin) in ins {
            for d in (0..topo.switches()).filter(|&d| d != x && topo.switch_up(d)) {
                let ports: Vec<String> = t
                    .lookup(x, cin, d)
                    .iter()
                    .map(|k| topo.channel_out_port(k.channel as usize).to_string())
                    .collect();
                let _ = writeln!(out, "{x} {name} {d} : {}", ports.join(" "));
            }
        }
    }
    out
}

/// Source routes (port sequences) for every host pair.
pub fn source_routes(topo: &Topology, paths: &PathSet) -> String {
    let mut out = String::from(
        "# src_host dst_host : output ports along the path (last = port of the destination host)\n",
    );
    for h in 0..topo.hosts() {
        for g in (0..topo.hosts()).filter(|&g| g != h) {
            let (s, d) = (topo.host_switch(h), topo.host_switch(g));
            let mut ports: Vec<String> = paths
                .path(s, d)
                .iter()
                .map(|&c| topo.channel_out_port(c).to_string())
                .collect();
            ports.push(topo.host_port(g).1.to_string());
            let _ = writeln!(out, "{h} {g} : {}", ports.join(" "));
        }
    }
    out
}

/// Destination-based up*/down* next hops: `next[x][d]` = output port of switch `x` toward switch
/// `d` (`None` when `x == d` or unreachable).
pub fn destination_routes(topo: &Topology, o: &Orientation) -> Vec<Vec<Option<usize>>> {
    let n = topo.switches();
    let mut next = vec![vec![None; n]; n];
    for d in (0..n).filter(|&d| topo.switch_up(d)) {
        // Down-only distance to d: BFS backwards from d over down traversals x -> y.
        let mut down = vec![UNREACHABLE; n];
        down[d] = 0;
        let mut queue = VecDeque::from([d]);
        while let Some(y) = queue.pop_front() {
            for nb in topo.adjacent(y) {
                // x = nb.switch reaches y going down when y is not the up end.
                if down[nb.switch] == UNREACHABLE && o.up_end(nb.link) == Some(nb.switch) {
                    down[nb.switch] = down[y] + 1;
                    queue.push_back(nb.switch);
                }
            }
        }
        // Table distance: the down path when there is one, else up to the best neighbour.
        let mut dist = down.clone();
        let mut queue: VecDeque<usize> = (0..n).filter(|&x| down[x] != UNREACHABLE).collect();
        let mut order: Vec<usize> = queue.iter().copied().collect();
        order.sort_by_key(|&x| down[x]);
        queue = order.into();
        while let Some(y) = queue.pop_front() {
            for nb in topo.adjacent(y) {
                // x = nb.switch goes up to y when y is the up end.
                if dist[nb.switch] == UNREACHABLE && o.up_end(nb.link) == Some(y) {
                    dist[nb.switch] = dist[y] + 1;
                    queue.push_back(nb.switch);
                }
            }
        }
        for x in (0..n).filter(|&x| x != d && topo.switch_up(x)) {
            next[x][d] = topo
                .adjacent(x)
                .iter()
                .filter(|nb| {
                    let going_up = o.up_end(nb.link) == Some(nb.switch);
                    if down[x] != UNREACHABLE {
                        !going_up && down[nb.switch].saturating_add(1) == down[x]
                    } else {
                        going_up && dist[nb.switch].saturating_add(1) == dist[x]
                    }
                })
                .map(|nb| nb.port)
                .next();
        }
    }
    next
}

/// Follows [`destination_routes`] into one switch path per pair (for checks and metrics).
pub fn destination_paths(topo: &Topology, o: &Orientation) -> PathSet {
    let n = topo.switches();
    let next = destination_routes(topo, o);
    let mut paths = vec![Vec::new(); n * n];
    for s in 0..n {
        for d in (0..n).filter(|&d| d != s) {
            let mut x = s;
            while let Some(p) = next[x][d] {
                let Some(c) = topo.channel_out_of(x, p) else {
                    break;
                };
                paths[s * n + d].push(c);
                x = topo.channel_dst(c);
                if paths[s * n + d].len() > n {
                    break;
                }
            }
        }
    }
    PathSet::from_paths(n, paths)
}

/// LFT dump for OpenSM's file routing engine (identities in the module docs).
pub fn opensm_lfts(topo: &Topology, o: &Orientation) -> String {
    let n = topo.switches();
    let next = destination_routes(topo, o);
    let max_lid = n + topo.hosts();
    let mut out = String::new();
    for x in (0..n).filter(|&x| topo.switch_up(x)) {
        let _ = writeln!(
            out,
            "Unicast lids [0x0-0x{max_lid:x}] of switch Lid {} guid 0x{:016x} ('reflex-sim switch {x}'):",
            x + 1,
            0x5245_0000_0000_0000u64 + x as u64 + 1
        );
        let mut lines = 0;
        for d in (0..n).filter(|&d| topo.switch_up(d)) {
            let port = if d == x {
                Some(0)
            } else {
                next[x][d].map(|p| p + 1)
            };
            if let Some(p) = port {
                let _ = writeln!(
                    out,
                    "0x{:04x} {p:03} : (Switch portguid 0x{:016x}: 'reflex-sim switch {d}')",
                    d + 1,
                    0x5245_0000_0000_0000u64 + d as u64 + 1
                );
                lines += 1;
            }
        }
        for h in 0..topo.hosts() {
            let (d, hp) = topo.host_port(h);
            let port = if d == x {
                Some(hp + 1)
            } else {
                next[x][d].map(|p| p + 1)
            };
            if let (Some(p), true) = (port, topo.switch_up(d)) {
                let _ = writeln!(
                    out,
                    "0x{:04x} {p:03} : (Channel Adapter portguid 0x{:016x}: 'reflex-sim host {h}')",
                    n + h + 1,
                    0x5245_0001_0000_0000u64 + h as u64 + 1
                );
                lines += 1;
            }
        }
        let _ = writeln!(out, "{lines} lids valid of {} entries\n", max_lid + 1);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::check_deadlock_free;
    use crate::rng::SimRng;
    use crate::routing::tables::SourceRouting;
    use crate::routing::trees::{bfs_orientation, dfs_orientation};
    use crate::topology::generate::irregular;
    use crate::topology::tests::ring;

    #[test]
    fn destination_based_tables_are_deadlock_free_and_complete() {
        for seed in 0..8 {
            let t = irregular(16, 8, 4, &mut SimRng::new(seed)).unwrap();
            for o in [bfs_orientation(&t, 0), dfs_orientation(&t, 3)] {
                let ps = destination_paths(&t, &o);
                for s in 0..16 {
                    for d in (0..16).filter(|&d| d != s) {
                        let p = ps.path(s, d);
                        assert!(
                            !p.is_empty() && t.channel_dst(*p.last().unwrap()) == d,
                            "{s}->{d}"
                        );
                    }
                }
                check_deadlock_free(&t, &SourceRouting::new(ps)).unwrap();
            }
        }
    }

    #[test]
    fn exports_by_hand() {
        let t = ring(4, 1);
        let o = Orientation::from_ranks(&t, &[3, 2, 1, 0]);
        let lft = opensm_lfts(&t, &o);
        assert!(lft.starts_with("Unicast lids [0x0-0x8] of switch Lid 1 guid 0x5245000000000001"));
        // Switch 0 reaches its own host (LID 5) on IB port 1 (local port 0).
        assert!(lft.contains("0x0005 001 : (Channel Adapter"));
        assert_eq!(lft.matches("lids valid of 9 entries").count(), 4);
        let tables = TableRouting::all_shortest(&t, &o, 0, false);
        let text = switch_tables(&t, &tables);
        assert!(text.lines().any(|l| l.starts_with("2 h 0 : ")));
        let ps = destination_paths(&t, &o);
        let routes = source_routes(&t, &ps);
        assert_eq!(routes.lines().count(), 1 + 4 * 3);
    }
}
