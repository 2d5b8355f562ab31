//! Selection policies: which hosts get the ranks of a job of N slots.
//!
//! REXEC decouples discovery from selection: a policy maps the list of available hosts (with
//! their configuration and state) to a set of hosts, and each `vexecd` implements one, e.g.
//! lowest CPU load (`seed000a.md` §1.2). Here a policy is a [`Policy`] trait object chosen by
//! name; each returns `(host index, slots)` pairs in placement order (mpiexec gives each host
//! that many consecutive ranks). Hosts come sorted by name, so every choice is deterministic.
//! - [`LeastLoad`] (`least-load`): one slot at a time to the host whose busy slots per core
//!   (load average or ranks, plus what was just handed out) would be lowest: spreads a job
//!   over idle hosts, in proportion to their cores;
//! - [`RoundRobin`] (`round-robin`): one slot per host in turn, each request starting after
//!   the host where the last one stopped: spreads successive jobs, ignores load;
//! - [`Fill`] (`fill`): fills the free slots of one host after another, in name order, before
//!   touching the next (packs jobs, leaves whole hosts free); what does not fit is dealt one
//!   slot per host in turn.

use super::membership::HostState;

/// A way of choosing hosts.
pub trait Policy: Send {
    /// The name a request uses.
    fn name(&self) -> &'static str;
    /// `(index into hosts, slots)` for `slots` ranks (non-empty `hosts`, `slots` > 0); every
    /// host at most once, slots adding up to `slots`.
    fn select(&mut self, hosts: &[HostState], slots: u32) -> Vec<(usize, u32)>;
}

/// Names of the policies, the default first.
pub const NAMES: [&str; 3] = ["least-load", "round-robin", "fill"];

/// The policy called `name`.
pub fn by_name(name: &str) -> Option<Box<dyn Policy>> {
    match name {
        "least-load" => Some(Box::new(LeastLoad)),
        "round-robin" => Some(Box::new(RoundRobin::default())),
        "fill" => Some(Box::new(Fill)),
        _ => None,
    }
}

/// Adds one slot for `host` to a placement, keeping first-use order.
fn add(placement: &mut Vec<(usize, u32)>, host: usize, slots: u32) {
    match placement.iter_mut().find(|(h, _)| *h == host) {
        Some((_, n)) => *n += slots,
        None => placement.push((host, slots)),
    }
}

/// Deals `slots` one at a time over `order` (cyclically, starting at `start`).
fn deal(placement: &mut Vec<(usize, u32)>, order: &[usize], start: usize, slots: u32) -> usize {
    let mut at = start;
    for _ in 0..slots {
        add(placement, order[at % order.len()], 1);
        at += 1;
    }
    at % order.len().max(1)
}

/// Lowest busy slots per core first.
#[derive(Debug, Default)]
pub struct LeastLoad;

impl Policy for LeastLoad {
    fn name(&self) -> &'static str {
        NAMES[0]
    }

    fn select(&mut self, hosts: &[HostState], slots: u32) -> Vec<(usize, u32)> {
        let mut busy: Vec<u64> = hosts.iter().map(HostState::busy_milli).collect();
        let cores: Vec<u64> = hosts.iter().map(|h| u64::from(h.cores.max(1))).collect();
        let mut placement = Vec::new();
        for _ in 0..slots {
            // After taking one more slot, whose busy/cores is lowest? (Cross-multiplied; ties
            // go to the earlier name.)
            let best = (0..hosts.len())
                .min_by(|&a, &b| ((busy[a] + 1000) * cores[b]).cmp(&((busy[b] + 1000) * cores[a])))
                .unwrap_or(0);
            busy[best] += 1000;
            add(&mut placement, best, 1);
        }
        placement
    }
}

/// One slot per host in turn, continuing where the last request stopped.
#[derive(Debug, Default)]
pub struct RoundRobin {
    /// The host after the last one dealt to (by name, so hosts may come and go).
    next: Option<String>,
}

impl Policy for RoundRobin {
    fn name(&self) -> &'static str {
        NAMES[1]
    }

    fn select(&mut self, hosts: &[HostState], slots: u32) -> Vec<(usize, u32)> {
        let start = self
            .next
            .as_ref()
            .and_then(|n| hosts.iter().position(|h| &h.name >= n))
            .unwrap_or(0);
        let order: Vec<usize> = (0..hosts.len()).collect();
        let mut placement = Vec::new();
        let end = deal(&mut placement, &order, start, slots);
        self.next = Some(hosts[end].name.clone());
        placement
    }
}

/// Free slots of one host after another.
#[derive(Debug, Default)]
pub struct Fill;

impl Policy for Fill {
    fn name(&self) -> &'static str {
        NAMES[2]
    }

    fn select(&mut self, hosts: &[HostState], slots: u32) -> Vec<(usize, u32)> {
        let mut placement = Vec::new();
        let mut left = slots;
        for (i, h) in hosts.iter().enumerate() {
            let take = h.free_slots().min(left);
            if take > 0 {
                add(&mut placement, i, take);
                left -= take;
            }
        }
        let order: Vec<usize> = (0..hosts.len()).collect();
        deal(&mut placement, &order, 0, left);
        placement
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(name: &str, cores: u32, load_milli: u32, ranks: u32) -> HostState {
        HostState {
            name: name.into(),
            port: 7290,
            cores,
            load_milli,
            ranks,
            jobs: 0,
            pending: 0,
        }
    }

    fn run<'a>(policy: &mut dyn Policy, hosts: &'a [HostState], slots: u32) -> Vec<(&'a str, u32)> {
        let got = policy.select(hosts, slots);
        assert_eq!(got.iter().map(|(_, n)| n).sum::<u32>(), slots);
        got.into_iter()
            .map(|(i, n)| (hosts[i].name.as_str(), n))
            .collect()
    }

    #[test]
    fn least_load_prefers_idle_hosts_in_proportion_to_cores() {
        let hosts = [
            host("a", 4, 3900, 0), // busy
            host("b", 4, 0, 0),
            host("c", 8, 0, 2), // 2 ranks running on 8 cores
            host("d", 4, 1000, 0),
        ];
        let mut p = LeastLoad;
        assert_eq!(run(&mut p, &hosts, 1), [("b", 1)]);
        assert_eq!(run(&mut p, &hosts, 2), [("b", 1), ("c", 1)]);
        // b: 4 free, c: 6 free, d: 3 free; filled evenly by fraction busy.
        assert_eq!(run(&mut p, &hosts, 8), [("b", 3), ("c", 4), ("d", 1)]);
        // More ranks than cores: every host takes some, the busy one last.
        let all = run(&mut p, &hosts, 40);
        assert_eq!(all.len(), 4);
        assert_eq!(all.iter().find(|(n, _)| *n == "a").unwrap().1, 6);
    }

    #[test]
    fn round_robin_continues_where_the_last_request_stopped() {
        let hosts = [host("a", 2, 0, 0), host("b", 2, 0, 0), host("c", 2, 0, 0)];
        let mut p = RoundRobin::default();
        assert_eq!(run(&mut p, &hosts, 2), [("a", 1), ("b", 1)]);
        assert_eq!(run(&mut p, &hosts, 2), [("c", 1), ("a", 1)]);
        assert_eq!(run(&mut p, &hosts, 4), [("b", 2), ("c", 1), ("a", 1)]);
        // The next host left the cluster: continue with the one after it.
        let fewer = [host("a", 2, 0, 0), host("c", 2, 0, 0)];
        let mut p = RoundRobin {
            next: Some("b".into()),
        };
        assert_eq!(run(&mut p, &fewer, 1), [("c", 1)]);
        assert_eq!(run(&mut p, &fewer, 1), [("a", 1)]);
    }

    #[test]
    fn fill_packs_hosts_in_order() {
        let hosts = [host("a", 4, 0, 3), host("b", 4, 0, 0), host("c", 4, 0, 0)];
        let mut p = Fill;
        assert_eq!(run(&mut p, &hosts, 5), [("a", 1), ("b", 4)]);
        assert_eq!(run(&mut p, &hosts, 9), [("a", 1), ("b", 4), ("c", 4)]);
        // Beyond every free slot: the rest one per host in turn.
        assert_eq!(run(&mut p, &hosts, 12), [("a", 2), ("b", 5), ("c", 5)]);
    }

    #[test]
    fn policies_by_name() {
        for name in NAMES {
            assert_eq!(by_name(name).unwrap().name(), name);
        }
        assert!(by_name("random").is_none());
    }
}
