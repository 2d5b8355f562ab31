//! The hot connection: the peer whose frames arrived last is read directly by every poll, and
//! once it keeps delivering it leaves the epoll set.
//!
//! A rank that spins for its peer's answer (a ping-pong, a ring) would pay `epoll_wait` plus
//! `recv` per poll; reading the hot connection directly pays one `recv`, and epoll is asked for
//! the other connections on one poll in [`EPOLL_EVERY`] (in [`EPOLL_EVERY_QUIET`] once they
//! have long had nothing to say). A socket that is in an epoll set also
//! costs its *sender*: every segment that arrives runs the epoll callback (lock, ready list,
//! wake-up) in the sending core's network path, which is the critical path of a ping-pong. So
//! after [`DETACH_AFTER`] direct deliveries in a row the hot connection is deleted from the set
//! ("detached"); it is added back ("attached") before the rank blocks in `epoll_wait`, when
//! another peer becomes hot, and when a send to it has to wait for room (epoll then watches it
//! for writability). Level-triggered epoll reports data that arrived while a connection was
//! out of the set as soon as it is back, so nothing is missed.
//!
//! Measured on the project's VM (2026-11-27, `pt2pt -t latency` over loopback TCP, 8 B, best of
//! interleaved runs): 4.68-4.72 µs one way with the connection in the set, 4.35-4.43 detached; a
//! C ping-pong spinning on `recv` of a socket in no epoll set takes 3.9-4.0, in a set 4.1-4.2.
//! Asking epoll on one poll in 32 instead of 4 once it keeps finding nothing (2026-11-28, with
//! small frames sent by one `send(2)`, 10 interleaved rounds): best 4.31 -> 4.20 µs, median
//! 4.46 -> 4.38 (one in 64 always: 4.16 / 4.31, but a quiet peer would wait twice as long).

use crate::transport::{Link, TcpTransport};

/// While a peer is hot, epoll is asked on one poll in this many (the others read the hot
/// connection only: one system call per poll, and per message, instead of two).
pub(crate) const EPOLL_EVERY: u32 = 4;

/// Once epoll has found nothing [`QUIET_ASKS`] times in a row (only the hot peer talks: a
/// ping-pong, a pipeline between two ranks), it is asked on one poll in this many: each ask
/// is a system call that the hot peer's next frame may have to wait out. Any event brings the
/// shorter period back.
pub(crate) const EPOLL_EVERY_QUIET: u32 = 32;

/// Empty epoll answers in a row after which the quiet period applies (with [`EPOLL_EVERY`],
/// about 64 polls in which no other connection had anything).
pub(crate) const QUIET_ASKS: u32 = 16;

/// Direct deliveries in a row from the hot peer before its connection leaves the epoll set
/// (an attach and a detach cost a system call each; a peer that keeps answering repays them).
pub(crate) const DETACH_AFTER: u32 = 8;

/// The hot peer and what the polls know about it (whether its connection is out of the epoll
/// set is the connection's own `detached` flag).
#[derive(Debug, Default)]
pub(crate) struct Hot {
    /// The peer whose frames arrived last, read directly by every poll.
    pub peer: Option<usize>,
    /// Its direct deliveries in a row since it became hot or was last attached.
    streak: u32,
    /// Polls since epoll was last asked.
    polls_without_epoll: u32,
    /// Empty epoll answers in a row.
    quiet_asks: u32,
}

impl Hot {
    /// Counts a poll that read the hot connection; returns whether epoll is due.
    pub fn epoll_due(&mut self) -> bool {
        self.polls_without_epoll += 1;
        let every = if self.quiet_asks >= QUIET_ASKS {
            EPOLL_EVERY_QUIET
        } else {
            EPOLL_EVERY
        };
        self.polls_without_epoll >= every
    }

    /// Records what epoll answered (`events` ready connections).
    pub fn asked(&mut self, events: usize) {
        self.polls_without_epoll = 0;
        self.quiet_asks = if events == 0 {
            self.quiet_asks.saturating_add(1)
        } else {
            0
        };
    }
}

impl TcpTransport {
    /// Makes `peer` hot (epoll saw it deliver): the previous hot connection goes back into the
    /// epoll set.
    pub(crate) fn heat(&mut self, peer: usize) {
        if self.hot.peer != Some(peer) {
            self.attach_hot();
            self.hot.peer = Some(peer);
            self.hot.streak = 0;
        }
    }

    /// Forgets the hot peer (its link is gone, and with it the connection).
    pub(crate) fn cool(&mut self) {
        self.hot.peer = None;
        self.hot.streak = 0;
    }

    /// Counts a direct delivery from the hot peer and detaches its connection after
    /// [`DETACH_AFTER`] in a row, unless epoll is watching it for room to send.
    pub(crate) fn hot_delivered(&mut self) {
        let Some(peer) = self.hot.peer else { return };
        self.hot.streak += 1;
        if self.hot.streak < DETACH_AFTER {
            return;
        }
        let Link::Up(conn) = &mut self.links[peer] else {
            return;
        };
        if !conn.detached && !conn.watching_out && self.epoll.delete(&conn.stream).is_ok() {
            conn.detached = true;
            self.stats.detaches += 1;
        }
    }

    /// Puts a detached hot connection back into the epoll set (before blocking, when another
    /// peer becomes hot; `watch_out` does it when a send must wait for room).
    pub(crate) fn attach_hot(&mut self) {
        let Some(peer) = self.hot.peer else { return };
        let Link::Up(conn) = &mut self.links[peer] else {
            return;
        };
        if !conn.detached {
            return;
        }
        self.hot.streak = 0;
        if let Err(e) = Self::attach(&self.epoll, conn, peer as u64) {
            self.break_link(peer, format!("cannot watch the connection: {e}"));
            self.cool();
        }
    }

    /// Whether the connection to `peer` is out of the epoll set (tests).
    #[cfg(test)]
    pub(crate) fn detached(&self, peer: usize) -> bool {
        matches!(&self.links[peer], Link::Up(conn) if conn.detached)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Polls until epoll is due; returns how many it took.
    fn polls_to_ask(hot: &mut Hot) -> u32 {
        (1..=EPOLL_EVERY_QUIET).find(|_| hot.epoll_due()).unwrap()
    }

    #[test]
    fn epoll_is_asked_less_often_while_it_finds_nothing() {
        let mut hot = Hot::default();
        for _ in 0..QUIET_ASKS {
            assert_eq!(polls_to_ask(&mut hot), EPOLL_EVERY);
            hot.asked(0);
        }
        assert_eq!(polls_to_ask(&mut hot), EPOLL_EVERY_QUIET);
        hot.asked(0);
        assert_eq!(polls_to_ask(&mut hot), EPOLL_EVERY_QUIET);
        // One event brings the short period back.
        hot.asked(1);
        assert_eq!(polls_to_ask(&mut hot), EPOLL_EVERY);
    }
}
