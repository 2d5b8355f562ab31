//! Lazy connection set-up between two ranks, as I/O-free rules (one TCP connection per pair).
//!
//! A rank opens the connection to a peer the first time it sends to it: it connects, sends a
//! [`Hello`](crate::frame::Hello) and waits for `ACCEPT` before it sends any data (until then
//! `try_send` answers `WouldBlock` and the engine queues). Both ranks of a pair may start at the
//! same moment; [`judge_hello`] then keeps exactly one of the two connections: the one opened
//! by the lower rank. Since no data travels before `ACCEPT`, dropping the other connection loses
//! nothing, and the pair's packets stay in FIFO order on the single connection kept.
//!
//! Why exactly one survives, for ranks `lo < hi` that both connect:
//! - `hi` receives `lo`'s hello while its own attempt is pending: `lo` is lower, so `hi` accepts
//!   it and abandons its own attempt;
//! - `lo` receives `hi`'s hello while its own attempt is pending (or already up): it rejects it.
//!
//! A hello that arrives while the link is already up is rejected too (the other side has
//! abandoned that attempt by then). A rejected initiator goes back to idle: the peer's winning
//! connection is on its way.

use crate::frame::Hello;

/// The state of this rank's link to one peer, as far as the rules care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkPhase {
    /// No connection and no attempt.
    Idle,
    /// Our own attempt is under way (connecting, or hello sent and no answer yet).
    Connecting,
    /// A connection is established.
    Up,
    /// The peer closed or broke the connection; it is not reopened.
    Broken,
}

/// What to do with a hello received on an accepted connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Keep this connection (answer `ACCEPT`); when `abandon_own`, drop our own attempt.
    Accept {
        /// The sender.
        peer: usize,
        /// Whether our own pending attempt to the sender must be dropped.
        abandon_own: bool,
    },
    /// Answer `REJECT` and close: the peer's other connection wins.
    Reject {
        /// The sender.
        peer: usize,
    },
    /// Close without an answer: the hello is not from a rank of this job.
    Refuse(String),
}

/// Decides about a hello received by rank `me` of `nranks`, whose cookie is `cookie`;
/// `phase(peer)` is the current state of the link to the sender.
pub fn judge_hello(
    me: usize,
    nranks: usize,
    cookie: u64,
    hello: &Hello,
    phase: impl Fn(usize) -> LinkPhase,
) -> Verdict {
    if hello.cookie != cookie {
        return Verdict::Refuse("wrong cookie".into());
    }
    if hello.to as usize != me {
        return Verdict::Refuse(format!("hello for rank {} reached rank {me}", hello.to));
    }
    let peer = hello.from as usize;
    if peer >= nranks || peer == me {
        return Verdict::Refuse(format!("hello from impossible rank {peer}"));
    }
    match phase(peer) {
        LinkPhase::Idle => Verdict::Accept {
            peer,
            abandon_own: false,
        },
        LinkPhase::Connecting if peer < me => Verdict::Accept {
            peer,
            abandon_own: true,
        },
        LinkPhase::Connecting | LinkPhase::Up => Verdict::Reject { peer },
        LinkPhase::Broken => Verdict::Refuse(format!("rank {peer} already broke its connection")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hello(from: u32, to: u32) -> Hello {
        Hello {
            from,
            to,
            cookie: 7,
        }
    }

    #[test]
    fn refuses_strangers() {
        let idle = |_| LinkPhase::Idle;
        let wrong_cookie = Hello {
            cookie: 8,
            ..hello(1, 0)
        };
        for h in [wrong_cookie, hello(1, 2), hello(4, 0), hello(0, 0)] {
            assert!(
                matches!(judge_hello(0, 4, 7, &h, idle), Verdict::Refuse(_)),
                "{h:?}"
            );
        }
        let broken = |_| LinkPhase::Broken;
        assert!(matches!(
            judge_hello(0, 4, 7, &hello(1, 0), broken),
            Verdict::Refuse(_)
        ));
    }

    /// Simulates two ranks that both connect, with every order of hello arrival: exactly one
    /// connection must end up accepted by its acceptor, and it must be the lower rank's.
    #[test]
    fn simultaneous_connects_keep_the_lower_ranks_connection() {
        let (lo, hi) = (1usize, 3usize);
        for lo_first in [true, false] {
            let mut phase = [LinkPhase::Connecting, LinkPhase::Connecting]; // [lo's view, hi's view]
            let mut accepted = Vec::new();
            let order = if lo_first { [hi, lo] } else { [lo, hi] };
            for receiver in order {
                let (sender, view) = if receiver == lo { (hi, 0) } else { (lo, 1) };
                let h = hello(sender as u32, receiver as u32);
                match judge_hello(receiver, 4, 7, &h, |_| phase[view]) {
                    Verdict::Accept { abandon_own, .. } => {
                        assert!(abandon_own);
                        accepted.push(sender);
                        phase[view] = LinkPhase::Up;
                    }
                    Verdict::Reject { .. } => {}
                    Verdict::Refuse(why) => panic!("{why}"),
                }
            }
            assert_eq!(accepted, [lo], "lo_first={lo_first}");
        }
    }

    #[test]
    fn a_single_connect_is_accepted_and_a_late_one_rejected() {
        let v = judge_hello(2, 4, 7, &hello(3, 2), |_| LinkPhase::Idle);
        assert_eq!(
            v,
            Verdict::Accept {
                peer: 3,
                abandon_own: false
            }
        );
        let v = judge_hello(2, 4, 7, &hello(3, 2), |_| LinkPhase::Up);
        assert_eq!(v, Verdict::Reject { peer: 3 });
    }
}
