//! Reading and writing topologies as text.
//!
//! **Edge list** (`reflex-sim`'s own format; `#` starts a comment):
//! ```text
//! switches 9 ports 8 hosts 4     # first line: N switches, P ports each, hosts on ports 0..H
//! ports 3 12                     # optional: switch 3 has 12 ports
//! host 3 10                      # optional: one more host on port 10 of switch 3
//! 0 1                            # link on the first free port of each switch
//! 0:5 2:4                        # link between port 5 of switch 0 and port 4 of switch 2
//! ```
//! **BookSim2 `anynet`**: one line per router, `router R` followed by `node H` / `router S` pairs
//! (BookSim2 `src/networks/anynet.cpp` `readFile`); a line may also start with `node H router R`.
//! Mentions of the same link from both routers collapse into one link. Ports are assigned hosts
//! first (by node id), then links (by neighbour id); a router has as many ports as attachments.
//! Host numbers follow (router, port) order, which equals the node ids of files this module writes.
//!
//! Every error names the line and the reason; nothing panics on bad input.

use std::collections::{BTreeMap, BTreeSet};

use super::{Location, Topology, TopologyBuilder};
use crate::error::{Result, SimError};

/// Reads a topology file, choosing the format by its first meaningful word.
pub fn read_path(path: &str) -> Result<Topology> {
    let text =
        std::fs::read_to_string(path).map_err(|e| SimError::io(format!("reading {path}"), e))?;
    read_str(path, &text)
}

/// Parses `text` (named `what` in errors) in either format.
pub fn read_str(what: &str, text: &str) -> Result<Topology> {
    let first = meaningful_lines(text)
        .next()
        .map(|(_, l)| l.split_whitespace().next().unwrap_or(""));
    match first {
        Some("router") | Some("node") => read_anynet(what, text),
        Some(_) => read_edge_list(what, text),
        None => Err(SimError::parse(what, 0, "empty topology file")),
    }
}

fn meaningful_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.split('#').next().unwrap_or("").trim()))
        .filter(|(_, l)| !l.is_empty())
}

fn number(what: &str, line: usize, tok: &str, name: &str) -> Result<usize> {
    tok.parse::<usize>()
        .map_err(|_| SimError::parse(what, line, format!("bad {name} `{tok}`: expected a number")))
}

/// Parses the edge-list format.
pub fn read_edge_list(what: &str, text: &str) -> Result<Topology> {
    let mut lines = meaningful_lines(text);
    let (hline, header) = lines
        .next()
        .ok_or_else(|| SimError::parse(what, 0, "empty topology file"))?;
    let mut b = parse_header(what, hline, header)?;
    for (ln, l) in lines {
        let toks: Vec<&str> = l.split_whitespace().collect();
        match toks.as_slice() {
            ["ports", s, p] => {
                let s = switch_of(what, ln, s, &b)?;
                let p = number(what, ln, p, "port count")?;
                b.ports[s] = p;
            }
            ["host", s, p] => {
                let s = switch_of(what, ln, s, &b)?;
                let p = port_of(what, ln, s, p, &b)?;
                b.add_host(s, p);
            }
            [x, y] => add_edge(what, ln, x, y, &mut b)?,
            _ => {
                return Err(SimError::parse(
                    what,
                    ln,
                    format!(
                        "cannot read `{l}`: expected `A B`, `A:PA B:PB`, `ports S P` or `host S P`"
                    ),
                ))
            }
        }
    }
    b.build()
        .map_err(|e| SimError::parse(what, 0, e.to_string()))
}

fn parse_header(what: &str, ln: usize, header: &str) -> Result<TopologyBuilder> {
    let toks: Vec<&str> = header.split_whitespace().collect();
    if toks.first() != Some(&"switches") || toks.len() & 1 != 0 {
        return Err(SimError::parse(
            what,
            ln,
            "first line must be `switches N [ports P] [hosts H]`",
        ));
    }
    let (mut n, mut ports, mut hosts) = (0, 8, 4);
    for kv in toks.chunks(2) {
        let v = number(what, ln, kv[1], kv[0])?;
        match kv[0] {
            "switches" => n = v,
            "ports" => ports = v,
            "hosts" => hosts = v,
            k => {
                return Err(SimError::parse(
                    what,
                    ln,
                    format!("unknown header key `{k}`"),
                ))
            }
        }
    }
    if n == 0 || hosts > ports {
        return Err(SimError::parse(
            what,
            ln,
            "need at least one switch and hosts <= ports",
        ));
    }
    Ok(TopologyBuilder::uniform(n, ports, hosts))
}

fn switch_of(what: &str, ln: usize, tok: &str, b: &TopologyBuilder) -> Result<usize> {
    let s = number(what, ln, tok, "switch")?;
    if s >= b.switches() {
        return Err(SimError::parse(
            what,
            ln,
            format!("unknown switch {s} (network has {} switches)", b.switches()),
        ));
    }
    Ok(s)
}

fn port_of(what: &str, ln: usize, s: usize, tok: &str, b: &TopologyBuilder) -> Result<usize> {
    let p = number(what, ln, tok, "port")?;
    if p >= b.ports[s] {
        return Err(SimError::parse(
            what,
            ln,
            format!("switch {s} has no port {p} (it has {})", b.ports[s]),
        ));
    }
    if b.port_used(s, p) {
        return Err(SimError::parse(
            what,
            ln,
            format!("port {p} of switch {s} is already used"),
        ));
    }
    Ok(p)
}

fn add_edge(what: &str, ln: usize, x: &str, y: &str, b: &mut TopologyBuilder) -> Result<()> {
    let end = |tok: &str, b: &TopologyBuilder| -> Result<(usize, Option<usize>)> {
        match tok.split_once(':') {
            Some((s, p)) => {
                let s = switch_of(what, ln, s, b)?;
                Ok((s, Some(port_of(what, ln, s, p, b)?)))
            }
            None => Ok((switch_of(what, ln, tok, b)?, None)),
        }
    };
    let (a, pa) = end(x, b)?;
    let (c, pc) = end(y, b)?;
    if a == c {
        return Err(SimError::parse(
            what,
            ln,
            format!("link from switch {a} to itself"),
        ));
    }
    if b.linked(a, c) {
        return Err(SimError::parse(
            what,
            ln,
            format!("parallel link between switches {a} and {c}"),
        ));
    }
    let free = |s: usize, p: Option<usize>, b: &TopologyBuilder| {
        p.or_else(|| b.free_port(s))
            .ok_or_else(|| SimError::parse(what, ln, format!("switch {s} has no free port")))
    };
    let pa = free(a, pa, b)?;
    let pc = free(c, pc, b)?;
    b.add_link(a, pa, c, pc);
    Ok(())
}

/// Writes the edge-list format (compact header when hosts sit on ports `0..H` everywhere).
pub fn write_edge_list(t: &Topology) -> String {
    let n = t.switches();
    let p0 = t.ports(0);
    let h0 = t.hosts_of(0).count();
    let uniform_ports = (0..n).all(|s| t.ports(s) == p0);
    let uniform_hosts = (0..n).all(|s| {
        (0..t.ports(s)).all(|p| matches!(t.neighbour(s, p), Location::Host(_)) == (p < h0))
    });
    let mut out = String::from("# reflex-sim edge list\n");
    let hosts = if uniform_hosts { h0 } else { 0 };
    out.push_str(&format!("switches {n} ports {p0} hosts {hosts}\n"));
    if !uniform_ports {
        for s in (0..n).filter(|&s| t.ports(s) != p0) {
            out.push_str(&format!("ports {s} {}\n", t.ports(s)));
        }
    }
    if !uniform_hosts {
        for h in 0..t.hosts() {
            let (s, p) = t.host_port(h);
            out.push_str(&format!("host {s} {p}\n"));
        }
    }
    for l in t.link_list() {
        out.push_str(&format!("{}:{} {}:{}\n", l.a, l.a_port, l.b, l.b_port));
    }
    out
}

/// Parses BookSim2's `anynet` format (see module docs).
pub fn read_anynet(what: &str, text: &str) -> Result<Topology> {
    let mut routers: BTreeSet<usize> = BTreeSet::new();
    let mut node_router: BTreeMap<usize, usize> = BTreeMap::new();
    let mut edges: BTreeSet<(usize, usize)> = BTreeSet::new();
    for (ln, l) in meaningful_lines(text) {
        let toks: Vec<&str> = l.split_whitespace().collect();
        if toks.len() & 1 != 0 {
            return Err(SimError::parse(
                what,
                ln,
                "expected `router R` / `node N` pairs",
            ));
        }
        let mut items = Vec::new();
        for pair in toks.chunks(2) {
            let id = number(what, ln, pair[1], pair[0])?;
            match pair[0] {
                "router" => items.push((true, id)),
                "node" => items.push((false, id)),
                t => {
                    return Err(SimError::parse(
                        what,
                        ln,
                        format!("expected `router` or `node`, found `{t}`"),
                    ))
                }
            }
        }
        let (head_is_router, head) = items[0];
        for &(is_router, id) in &items[1..] {
            match (head_is_router, is_router) {
                (true, true) if id == head => {
                    return Err(SimError::parse(
                        what,
                        ln,
                        format!("router {id} linked to itself"),
                    ))
                }
                (true, true) => {
                    edges.insert((head.min(id), head.max(id)));
                    routers.extend([head, id]);
                }
                (false, false) => {
                    return Err(SimError::parse(what, ln, "can not connect node to node"))
                }
                (true, false) | (false, true) => {
                    let (node, router) = if head_is_router {
                        (id, head)
                    } else {
                        (head, id)
                    };
                    if let Some(&prev) = node_router.get(&node) {
                        if prev != router {
                            return Err(SimError::parse(
                                what,
                                ln,
                                format!("node {node} is connected to routers {prev} and {router}"),
                            ));
                        }
                    }
                    node_router.insert(node, router);
                    routers.insert(router);
                }
            }
        }
        if head_is_router {
            routers.insert(head);
        }
    }
    let n = match routers.last() {
        Some(&max) => max + 1,
        None => return Err(SimError::parse(what, 0, "no routers")),
    };
    if let Some(missing) = (0..n).find(|r| !routers.contains(r)) {
        return Err(SimError::parse(
            what,
            0,
            format!("router ids must be 0..{n}; router {missing} is missing"),
        ));
    }
    let mut ports = vec![0usize; n];
    for &r in node_router.values() {
        ports[r] += 1;
    }
    for &(a, c) in &edges {
        ports[a] += 1;
        ports[c] += 1;
    }
    let mut b = TopologyBuilder::new(ports);
    for &r in node_router.values() {
        let p = b.free_port(r).unwrap_or(0);
        b.add_host(r, p);
    }
    for &(a, c) in &edges {
        b.connect(a, c)
            .map_err(|e| SimError::parse(what, 0, e.to_string()))?;
    }
    b.build()
        .map_err(|e| SimError::parse(what, 0, e.to_string()))
}

/// Writes BookSim2's `anynet` format (node ids = host numbers).
pub fn write_anynet(t: &Topology) -> String {
    let mut out = String::new();
    for s in 0..t.switches() {
        out.push_str(&format!("router {s}"));
        for h in t.hosts_of(s) {
            out.push_str(&format!(" node {h}"));
        }
        for l in t.link_list().iter().filter(|l| l.a == s) {
            out.push_str(&format!(" router {}", l.b));
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SimRng;
    use crate::topology::generate::irregular;

    #[test]
    fn edge_list_round_trip() {
        let t = irregular(9, 8, 4, &mut SimRng::new(5)).unwrap();
        let text = write_edge_list(&t);
        let u = read_str("x", &text).unwrap();
        assert_eq!(t.link_list(), u.link_list());
        assert_eq!(u.hosts(), 36);
    }

    #[test]
    fn anynet_round_trip_and_booksim_example() {
        let t = irregular(16, 8, 4, &mut SimRng::new(2)).unwrap();
        let u = read_str("x", &write_anynet(&t)).unwrap();
        assert_eq!(u.links(), t.links());
        assert_eq!(u.hosts(), 64);
        for s in 0..16 {
            assert_eq!(t.distances_from(s), u.distances_from(s));
        }
        // The example shipped with BookSim2.
        let ex = "router 0 node 0 node 1 node 2 router 1\nrouter 1 node 3 node 4 node 5\nrouter 2 node 6 node 7 node 8 router 1 router 0\n";
        let e = read_str("anynet_file", ex).unwrap();
        assert_eq!((e.switches(), e.hosts(), e.links()), (3, 9, 3));
    }

    #[test]
    fn bad_files_name_line_and_reason() {
        let cases = [
            ("switches 3\n0 1\n1 7\n", "line 3: unknown switch 7"),
            ("switches 3\n0 1\n1 0\n", "line 3: parallel link"),
            ("switches 3\n0 0\n", "line 2: link from switch 0 to itself"),
            ("switches 3\n0:9 1\n", "line 2: switch 0 has no port 9"),
            (
                "switches 3\n0:0 1\n",
                "line 2: port 0 of switch 0 is already used",
            ),
            ("switches 3\n0 x\n", "line 2: bad switch `x`"),
            ("switches 2 ports 5\n0 1\n0 1 2\n", "line 3: cannot read"),
            ("switches two\n", "line 1: bad switches `two`"),
            ("# nothing\n", "empty topology file"),
            (
                "router 0 node 1\nrouter 1 node 1\n",
                "line 2: node 1 is connected to routers 0 and 1",
            ),
            (
                "router 0 switch 1\n",
                "line 1: expected `router` or `node`, found `switch`",
            ),
            ("router 0 router\n", "line 1: expected `router R`"),
            ("router 0 router 2\n", "router 1 is missing"),
        ];
        for (text, want) in cases {
            let err = read_str("t", text).unwrap_err().to_string();
            assert!(err.contains(want), "{text:?}: got `{err}`, want `{want}`");
        }
    }
}
