//! Mutual liveness over a launcher connection: both sides send a heartbeat every
//! [`HEARTBEAT_PERIOD`] of silence and give up on a peer not heard from for
//! [`HEARTBEAT_TIMEOUT`] (the REXEC proposal of "2 s / 3 misses", `seed000a.md` §1.3). Time is
//! passed in, so the rule is testable without waiting. A job stopped with Ctrl-Z stops its
//! `mpiexec` too, so both sides [`Liveness::suspend`] the rule while the job is stopped and
//! [`Liveness::resume`] it, counting from the moment of the resume, when it continues.

use std::time::{Duration, Instant};

/// Longest silence before a heartbeat is sent.
pub const HEARTBEAT_PERIOD: Duration = Duration::from_secs(2);
/// Longest silence from the peer before it is declared dead (3 missed heartbeats).
pub const HEARTBEAT_TIMEOUT: Duration = Duration::from_secs(6);

/// What [`Liveness::tick`] asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Beat {
    Nothing,
    /// Send a heartbeat now.
    Send,
    /// The peer has been silent too long.
    PeerDead,
}

/// When we last heard from and spoke to the peer, and whether the rule is suspended.
#[derive(Debug, Clone, Copy)]
pub struct Liveness {
    heard: Instant,
    spoke: Instant,
    suspended: bool,
}

impl Liveness {
    /// Starts counting at `now`.
    pub fn new(now: Instant) -> Self {
        Self {
            heard: now,
            spoke: now,
            suspended: false,
        }
    }

    /// The job is stopped on purpose: send nothing and expect nothing until [`Self::resume`].
    pub fn suspend(&mut self) {
        self.suspended = true;
    }

    /// The job continues at `now`: count both silences from here, as on a new connection
    /// (the time spent stopped is nobody's silence).
    pub fn resume(&mut self, now: Instant) {
        *self = Self::new(now);
    }

    /// Anything arrived from the peer.
    pub fn heard(&mut self, now: Instant) {
        self.heard = now;
    }

    /// Anything was sent to the peer.
    pub fn spoke(&mut self, now: Instant) {
        self.spoke = now;
    }

    /// What to do at `now`.
    pub fn tick(&mut self, now: Instant) -> Beat {
        if self.suspended {
            Beat::Nothing
        } else if now.saturating_duration_since(self.heard) >= HEARTBEAT_TIMEOUT {
            Beat::PeerDead
        } else if now.saturating_duration_since(self.spoke) >= HEARTBEAT_PERIOD {
            self.spoke = now;
            Beat::Send
        } else {
            Beat::Nothing
        }
    }

    /// How long until [`Liveness::tick`] may have something to do (for poll timeouts).
    pub fn next_deadline(&self, now: Instant) -> Duration {
        if self.suspended {
            return Duration::MAX;
        }
        let beat = (self.spoke + HEARTBEAT_PERIOD).saturating_duration_since(now);
        let dead = (self.heard + HEARTBEAT_TIMEOUT).saturating_duration_since(now);
        beat.min(dead)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn beats_then_declares_death() {
        let t0 = Instant::now();
        let mut l = Liveness::new(t0);
        assert_eq!(l.tick(t0 + Duration::from_secs(1)), Beat::Nothing);
        assert_eq!(l.tick(t0 + HEARTBEAT_PERIOD), Beat::Send);
        assert_eq!(l.tick(t0 + HEARTBEAT_PERIOD), Beat::Nothing);
        l.heard(t0 + Duration::from_secs(5));
        assert_eq!(l.tick(t0 + Duration::from_secs(7)), Beat::Send);
        assert_eq!(l.tick(t0 + Duration::from_secs(11)), Beat::PeerDead);
        assert!(l.next_deadline(t0 + Duration::from_secs(11)).is_zero());
    }

    #[test]
    fn a_suspended_peer_is_never_dead_and_counts_again_from_the_resume() {
        let t0 = Instant::now();
        let mut l = Liveness::new(t0);
        l.suspend();
        let t1 = t0 + Duration::from_secs(600);
        assert_eq!(l.tick(t1), Beat::Nothing);
        assert_eq!(l.next_deadline(t1), Duration::MAX);
        l.resume(t1);
        assert_eq!(l.tick(t1 + Duration::from_secs(1)), Beat::Nothing);
        assert_eq!(l.tick(t1 + HEARTBEAT_PERIOD), Beat::Send);
        assert_eq!(l.tick(t1 + HEARTBEAT_TIMEOUT), Beat::PeerDead);
    }
}
