//! Host lists and rank placement for `mpiexec -hosts a,b:2` / `-f hostfile` / `-ppn N`.
//!
//! Hydra's rules, as far as Reflex implements them: a host is `name` or `name:slots` (slots
//! default to 1); a hostfile has one host per line (`name`, `name:slots` or `name slots=N`,
//! `#` comments). Ranks are dealt host by host, `ppn` (or the host's slots) consecutive ranks at
//! a time, cycling through the list until every rank is placed, so `-hosts a:2,b:2 -n 4` gives
//! ranks 0,1 to `a` and 2,3 to `b`. The placement is published to the ranks as
//! `PMI_process_mapping` (launchers.md §2.2), which the engine uses to find its node's ranks.

use std::fmt;

/// One entry of a host list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostEntry {
    pub name: String,
    pub slots: u32,
    /// Its daemon's port, when a selector said (else `-reflexd-port` or 7290).
    pub port: Option<u16>,
}

/// A host list that does not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostError(pub String);

impl fmt::Display for HostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn entry(name: &str, slots: Option<&str>) -> Result<HostEntry, HostError> {
    let name = name.trim();
    if name.is_empty() || name.contains(char::is_whitespace) {
        return Err(HostError(format!("{name:?} is not a host name")));
    }
    let slots = match slots {
        None => 1,
        Some(s) => s
            .trim()
            .parse::<u32>()
            .ok()
            .filter(|&n| n > 0)
            .ok_or_else(|| HostError(format!("host {name}: {s:?} is not a number of slots")))?,
    };
    Ok(HostEntry {
        name: name.to_owned(),
        slots,
        port: None,
    })
}

/// Parses `a,b:2,c`.
pub fn parse_host_list(list: &str) -> Result<Vec<HostEntry>, HostError> {
    let hosts: Vec<HostEntry> = list
        .split(',')
        .filter(|h| !h.trim().is_empty())
        .map(|h| match h.split_once(':') {
            Some((name, slots)) => entry(name, Some(slots)),
            None => entry(h, None),
        })
        .collect::<Result<_, _>>()?;
    if hosts.is_empty() {
        return Err(HostError("the host list is empty".into()));
    }
    Ok(hosts)
}

/// Parses a hostfile's text.
pub fn parse_hostfile(text: &str) -> Result<Vec<HostEntry>, HostError> {
    let mut hosts = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let parsed = match line.split_once(char::is_whitespace) {
            Some((name, rest)) => {
                let slots = rest.trim().strip_prefix("slots=").ok_or_else(|| {
                    HostError(format!("hostfile line {}: expected 'name slots=N'", n + 1))
                })?;
                entry(name, Some(slots))
            }
            None => match line.split_once(':') {
                Some((name, slots)) => entry(name, Some(slots)),
                None => entry(line, None),
            },
        };
        hosts.push(parsed.map_err(|e| HostError(format!("hostfile line {}: {e}", n + 1)))?);
    }
    if hosts.is_empty() {
        return Err(HostError("the hostfile names no host".into()));
    }
    Ok(hosts)
}

/// The host index of every rank `0..n`.
pub fn place_ranks(hosts: &[HostEntry], n: u32, ppn: Option<u32>) -> Vec<usize> {
    let mut owner = Vec::with_capacity(n as usize);
    while owner.len() < n as usize {
        for (h, host) in hosts.iter().enumerate() {
            let take = ppn.unwrap_or(host.slots).max(1);
            for _ in 0..take {
                if owner.len() == n as usize {
                    return owner;
                }
                owner.push(h);
            }
        }
    }
    owner
}

/// Renumbers the hosts that received ranks as nodes `0..`, in order of first rank; returns
/// the node of every rank and the host index of every node.
pub fn nodes_of(owner: &[usize]) -> (Vec<u32>, Vec<usize>) {
    let mut hosts_used: Vec<usize> = Vec::new();
    let nodes = owner
        .iter()
        .map(|h| match hosts_used.iter().position(|u| u == h) {
            Some(i) => i as u32,
            None => {
                hosts_used.push(*h);
                (hosts_used.len() - 1) as u32
            }
        })
        .collect();
    (nodes, hosts_used)
}

/// `PMI_process_mapping` for the node of every rank: runs of consecutive ranks on one node,
/// merged into `(start,count,ranks)` blocks, and cut to one period when the pattern repeats.
pub fn process_mapping(nodes: &[u32]) -> String {
    let mut runs: Vec<(u32, u32)> = Vec::new(); // (node, ranks)
    for &node in nodes {
        match runs.last_mut() {
            Some((n, count)) if *n == node => *count += 1,
            _ => runs.push((node, 1)),
        }
    }
    let mut blocks: Vec<(u32, u32, u32)> = Vec::new(); // (start, nodes, ranks per node)
    for (node, count) in runs {
        match blocks.last_mut() {
            Some((start, k, per)) if *per == count && *start + *k == node => *k += 1,
            _ => blocks.push((node, 1, count)),
        }
    }
    let period = (1..=blocks.len())
        .find(|&p| {
            blocks.len().is_multiple_of(p) && (0..blocks.len()).all(|i| blocks[i] == blocks[i % p])
        })
        .unwrap_or(blocks.len());
    let body: String = blocks[..period]
        .iter()
        .map(|(s, k, r)| format!(",({s},{k},{r})"))
        .collect();
    format!("(vector{body})")
}

#[cfg(test)]
mod tests {
    use super::*;
    use reflex_pmi::mapping::parse_process_mapping;

    #[test]
    fn parses_lists_and_files() {
        let hosts = parse_host_list("a, b:2,,c:1").unwrap();
        let names: Vec<(&str, u32)> = hosts.iter().map(|h| (h.name.as_str(), h.slots)).collect();
        assert_eq!(names, [("a", 1), ("b", 2), ("c", 1)]);
        for bad in ["", "a:0", "a:x", "a b"] {
            assert!(parse_host_list(bad).is_err(), "{bad:?}");
        }
        let file = "# cluster\nn1\nn2:4\nn3 slots=2 # big\n\n";
        let hosts = parse_hostfile(file).unwrap();
        assert_eq!(hosts[1].slots, 4);
        assert_eq!(hosts[2].slots, 2);
        assert!(parse_hostfile("n1 cpus=2")
            .unwrap_err()
            .0
            .contains("line 1"));
        assert!(parse_hostfile("# nothing\n").is_err());
    }

    #[test]
    fn places_like_hydra() {
        let hosts = parse_host_list("a:2,b:2").unwrap();
        assert_eq!(place_ranks(&hosts, 4, None), [0, 0, 1, 1]);
        assert_eq!(place_ranks(&hosts, 6, None), [0, 0, 1, 1, 0, 0]);
        assert_eq!(place_ranks(&hosts, 3, Some(1)), [0, 1, 0]);
        let three = parse_host_list("a,b,c").unwrap();
        assert_eq!(place_ranks(&three, 2, None), [0, 1]);
    }

    #[test]
    fn mappings_decode_to_the_placement() {
        let cases: [&[u32]; 6] = [
            &[0, 0, 1, 1],
            &[0, 0, 1, 1, 0, 0, 1, 1],
            &[0, 1, 0, 1, 0],
            &[0, 0, 0, 1, 2, 2],
            &[0],
            &[0, 1, 2, 3, 0, 1, 2, 3],
        ];
        for nodes in cases {
            let mapping = process_mapping(nodes);
            assert!(mapping.len() < 1000);
            let decoded = parse_process_mapping(&mapping, nodes.len() as u32).unwrap();
            assert_eq!(decoded, nodes, "{mapping}");
        }
        assert_eq!(
            process_mapping(&[0, 0, 1, 1, 0, 0, 1, 1]),
            "(vector,(0,2,2))"
        );
        let (nodes, used) = nodes_of(&[2, 2, 0, 0]);
        assert_eq!((nodes, used), (vec![0, 0, 1, 1], vec![2, 0]));
    }
}
