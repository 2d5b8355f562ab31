//! The selector's view of the cluster: every host heard from recently, with its last state.
//!
//! REXEC's `vexecd` caches announcements and times out hosts not heard from within "a small
//! multiple" of the announcement interval (`seed000a.md` §1.2); here a host is dropped after
//! `expiry` of silence (3 intervals by default) and comes back with its next announcement, so
//! a restarted daemon reappears within one interval. Freshness, per host (its first name):
//! - the sender's clock must be within `max_skew` of ours (so an old capture is useless);
//! - within one daemon instance the sequence number must grow (no repeats);
//! - a new instance (a restarted daemon) must be newer than the last one heard.
//!
//! Freshness is remembered after a host expires, so a replay cannot resurrect it. Each dropped
//! datagram is counted by reason ([`Stats`]). Time is passed in, so everything is testable.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use super::announce::{open, Announcement, Rejected};
use crate::cluster_key::ClusterKey;

/// Most hosts remembered (bounds the memory an authenticated sender can make us use).
pub const MAX_HOSTS: usize = 65_536;

/// One live host, as a selection policy sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostState {
    /// The name to connect to (the first announced one).
    pub name: String,
    pub port: u16,
    /// Slots the host offers.
    pub cores: u32,
    /// One-minute load average x 1000.
    pub load_milli: u32,
    /// Ranks running, as announced.
    pub ranks: u32,
    pub jobs: u32,
    /// Slots this selector handed out since the host's last announcement.
    pub pending: u32,
}

impl HostState {
    /// Busy slots: the larger of the load average and the ranks it runs, plus what this
    /// selector just gave it (the announcement does not show that yet).
    pub fn busy_milli(&self) -> u64 {
        u64::from(self.load_milli).max(u64::from(self.ranks) * 1000)
            + u64::from(self.pending) * 1000
    }

    /// Slots not busy (rounded down).
    pub fn free_slots(&self) -> u32 {
        let busy = self.busy_milli().div_ceil(1000);
        u64::from(self.cores).saturating_sub(busy) as u32
    }
}

/// Datagrams counted by what became of them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    pub accepted: u64,
    pub malformed: u64,
    pub forged: u64,
    pub replayed: u64,
    pub expired: u64,
}

#[derive(Debug, Clone, Copy)]
struct Freshness {
    instance: u64,
    seq: u64,
    time_ms: u64,
}

#[derive(Debug)]
struct Entry {
    state: HostState,
    heard: Instant,
}

/// Hosts heard from, and what was last heard from each.
#[derive(Debug)]
pub struct Membership {
    key: ClusterKey,
    expiry: Duration,
    max_skew_ms: u64,
    live: BTreeMap<String, Entry>,
    seen: HashMap<String, Freshness>,
    stats: Stats,
}

impl Membership {
    /// An empty table that believes datagrams sealed with `key`.
    pub fn new(key: ClusterKey, expiry: Duration, max_skew: Duration) -> Self {
        Self {
            key,
            expiry,
            max_skew_ms: max_skew.as_millis() as u64,
            live: BTreeMap::new(),
            seen: HashMap::new(),
            stats: Stats::default(),
        }
    }

    /// Takes one datagram received at `now` (`now_ms`: our Unix time); returns the host's
    /// name and whether it is new (joined or came back), or why it was dropped (and counts it).
    pub fn receive(
        &mut self,
        datagram: &[u8],
        now: Instant,
        now_ms: u64,
    ) -> Result<(String, bool), Rejected> {
        let result = open(datagram, &self.key).and_then(|a| self.admit(a, now, now_ms));
        let counter = match &result {
            Ok(_) => &mut self.stats.accepted,
            Err(Rejected::Malformed(_)) => &mut self.stats.malformed,
            Err(Rejected::Forged) => &mut self.stats.forged,
            Err(Rejected::Replayed(_)) => &mut self.stats.replayed,
        };
        *counter += 1;
        result
    }

    fn admit(
        &mut self,
        a: Announcement,
        now: Instant,
        now_ms: u64,
    ) -> Result<(String, bool), Rejected> {
        let skew = now_ms.abs_diff(a.time_ms);
        if skew > self.max_skew_ms {
            return Err(Rejected::Replayed(format!(
                "sent {skew} ms away from our clock"
            )));
        }
        let name = a.names[0].clone();
        match self.seen.get(&name) {
            Some(f) if f.instance == a.instance && a.seq <= f.seq => {
                return Err(Rejected::Replayed(format!(
                    "sequence {} after {}",
                    a.seq, f.seq
                )));
            }
            Some(f) if f.instance != a.instance && a.time_ms <= f.time_ms => {
                return Err(Rejected::Replayed("from an older daemon instance".into()));
            }
            None if self.seen.len() >= MAX_HOSTS => {
                return Err(Rejected::Malformed(format!("more than {MAX_HOSTS} hosts")));
            }
            _ => {}
        }
        self.seen.insert(
            name.clone(),
            Freshness {
                instance: a.instance,
                seq: a.seq,
                time_ms: a.time_ms,
            },
        );
        let state = HostState {
            name: name.clone(),
            port: a.port,
            cores: a.cores,
            load_milli: a.load_milli,
            ranks: a.ranks,
            jobs: a.jobs,
            pending: 0,
        };
        let new = self
            .live
            .insert(name.clone(), Entry { state, heard: now })
            .is_none();
        Ok((name, new))
    }

    /// Drops the hosts silent for longer than the expiry; returns their names.
    pub fn expire(&mut self, now: Instant) -> Vec<String> {
        let gone: Vec<String> = self
            .live
            .iter()
            .filter(|(_, e)| now.saturating_duration_since(e.heard) > self.expiry)
            .map(|(name, _)| name.clone())
            .collect();
        for name in &gone {
            self.live.remove(name);
        }
        self.stats.expired += gone.len() as u64;
        gone
    }

    /// The live hosts, by name.
    pub fn hosts(&self) -> Vec<HostState> {
        self.live.values().map(|e| e.state.clone()).collect()
    }

    /// Notes that `slots` more ranks were just placed on `name`.
    pub fn reserve(&mut self, name: &str, slots: u32) {
        if let Some(e) = self.live.get_mut(name) {
            e.state.pending = e.state.pending.saturating_add(slots);
        }
    }

    /// The counters.
    pub fn stats(&self) -> Stats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discovery::announce::seal;

    const T0: u64 = 1_790_000_000_000;

    fn key() -> ClusterKey {
        ClusterKey::from_bytes([7; 32])
    }

    fn datagram(name: &str, instance: u64, seq: u64, time_ms: u64) -> Vec<u8> {
        let a = Announcement {
            instance,
            seq,
            time_ms,
            port: 7290,
            cores: 4,
            load_milli: 500,
            ranks: 0,
            jobs: 0,
            names: vec![name.into()],
        };
        seal(&a, &key()).unwrap()
    }

    fn table() -> Membership {
        Membership::new(key(), Duration::from_secs(3), Duration::from_secs(30))
    }

    fn names(m: &Membership) -> Vec<String> {
        m.hosts().into_iter().map(|h| h.name).collect()
    }

    #[test]
    fn replays_and_stale_clocks_are_dropped_and_counted() {
        let mut m = table();
        let now = Instant::now();
        let first = datagram("a", 1, 1, T0);
        assert_eq!(m.receive(&first, now, T0).unwrap(), ("a".into(), true));
        // The same datagram again, and an older one of the same instance.
        assert!(matches!(
            m.receive(&first, now, T0),
            Err(Rejected::Replayed(_))
        ));
        m.receive(&datagram("a", 1, 5, T0 + 10), now, T0).unwrap();
        assert!(matches!(
            m.receive(&datagram("a", 1, 4, T0 + 20), now, T0),
            Err(Rejected::Replayed(_))
        ));
        // A "restart" older than what we heard is a replay of an earlier instance.
        assert!(matches!(
            m.receive(&datagram("a", 2, 1, T0 - 5), now, T0),
            Err(Rejected::Replayed(_))
        ));
        // Too far from our clock, either way.
        for t in [T0 - 31_000, T0 + 31_000] {
            assert!(matches!(
                m.receive(&datagram("b", 1, 1, t), now, T0),
                Err(Rejected::Replayed(_))
            ));
        }
        // Forged and malformed ones.
        let mut forged = datagram("c", 1, 1, T0);
        let n = forged.len();
        forged[n - 1] ^= 0xff;
        assert_eq!(m.receive(&forged, now, T0), Err(Rejected::Forged));
        assert!(matches!(
            m.receive(b"hello", now, T0),
            Err(Rejected::Malformed(_))
        ));
        let s = m.stats();
        assert_eq!(
            (s.accepted, s.replayed, s.forged, s.malformed),
            (2, 5, 1, 1)
        );
        assert_eq!(names(&m), ["a"]);
    }

    #[test]
    fn silent_hosts_expire_and_come_back_after_a_restart() {
        let mut m = table();
        let t = Instant::now();
        m.receive(&datagram("a", 1, 1, T0), t, T0).unwrap();
        m.receive(&datagram("b", 1, 1, T0), t, T0).unwrap();
        let t2 = t + Duration::from_secs(2);
        let again = m.receive(&datagram("b", 1, 2, T0 + 2000), t2, T0 + 2000);
        assert_eq!(again.unwrap(), ("b".into(), false));
        assert!(m.expire(t + Duration::from_secs(3)).is_empty());
        assert_eq!(m.expire(t + Duration::from_secs(4)), ["a"]);
        assert_eq!(names(&m), ["b"]);
        // The old datagram of "a" cannot bring it back; its restarted daemon can.
        let t5 = t + Duration::from_secs(5);
        assert!(m.receive(&datagram("a", 1, 1, T0), t5, T0 + 5000).is_err());
        let back = m.receive(&datagram("a", 9, 1, T0 + 5000), t5, T0 + 5000);
        assert_eq!(back.unwrap(), ("a".into(), true));
        assert_eq!(names(&m), ["a", "b"]);
        assert_eq!(m.stats().expired, 1);
    }

    #[test]
    fn reservations_count_as_busy_until_the_next_announcement() {
        let mut m = table();
        let t = Instant::now();
        m.receive(&datagram("a", 1, 1, T0), t, T0).unwrap();
        assert_eq!(m.hosts()[0].free_slots(), 3); // 4 cores, load 0.5
        m.reserve("a", 2);
        assert_eq!(m.hosts()[0].free_slots(), 1);
        m.receive(&datagram("a", 1, 2, T0), t, T0).unwrap();
        assert_eq!(m.hosts()[0].pending, 0);
    }
}
