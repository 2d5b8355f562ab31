//! The hot connection: the peer whose frames arrived last is read directly by every poll, and
//! once it keeps delivering it leaves the epoll set.
//!
//! A rank that spins for its peer's answer (a ping-pong, a ring) would pay `epoll_wait` plus
//! `recv` per poll; reading the hot connection directly pays one `recv`, and epoll is asked for
//! the other connections on one poll in [`EPOLL_EVERY`]. A socket that is in an epoll set also
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

use crate::transport::{Link, TcpTransport};

/// While a peer is hot, epoll is asked on one poll in this many (the others read the hot
/// connection only: one system call per poll, and per message, instead of two).
pub(crate) const EPOLL_EVERY: u32 = 4;

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
    pub polls_without_epoll: u32,
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
