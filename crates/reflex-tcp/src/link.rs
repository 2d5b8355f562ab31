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
//!
//! With several streams per peer (`REFLEX_TCP_STREAMS`), the connection above is stream 0; once
//! it is accepted, its initiator opens the other streams, whose hellos name their index
//! ([`judge_extra_stream`]): the acceptor takes one only while the link is up, from the rank
//! whose stream 0 it accepted, for a stream not open yet. Both ranks must use the same count.

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
    /// Keep this connection as stream `stream` of the link to `peer` (answer `ACCEPT`).
    Join {
        /// The sender.
        peer: usize,
        /// Which stream it is (never 0).
        stream: usize,
    },
    /// Close without an answer: the hello is not from a rank of this job.
    Refuse(String),
}

/// Who sent a hello, as the acceptor's table of peers says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sender {
    /// The sender's peer index.
    pub peer: usize,
    /// Whether the sender's connection wins over ours when both connect at once: the lower
    /// rank's (on a bridge between jobs, the lower (job, rank)'s).
    pub wins: bool,
}

/// The sender of a hello within one job: rank `hello.from`, when the hello carries this rank's
/// cookie and names it.
pub fn job_sender(me: usize, nranks: usize, cookie: u64, hello: &Hello) -> Result<Sender, String> {
    sender(me, nranks, cookie, hello).map(|peer| Sender {
        peer,
        wins: peer < me,
    })
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
    decide_hello(job_sender(me, nranks, cookie, hello), phase)
}

/// Decides about a stream-0 hello from `who` (or why it is refused).
fn decide_hello(who: Result<Sender, String>, phase: impl Fn(usize) -> LinkPhase) -> Verdict {
    let Sender { peer, wins } = match who {
        Ok(s) => s,
        Err(why) => return Verdict::Refuse(why),
    };
    match phase(peer) {
        LinkPhase::Idle => Verdict::Accept {
            peer,
            abandon_own: false,
        },
        LinkPhase::Connecting if wins => Verdict::Accept {
            peer,
            abandon_own: true,
        },
        LinkPhase::Connecting | LinkPhase::Up => Verdict::Reject { peer },
        LinkPhase::Broken => Verdict::Refuse(format!("rank {peer} already broke its connection")),
    }
}

/// Decides about any hello received by rank `ids.0` of `ids.1` ranks, with cookie `ids.2` and
/// `ids.3` streams per peer: the streams counts must agree, then [`judge_hello`] (stream 0) or
/// [`judge_extra_stream`] (the others) rule.
pub fn judge(
    ids: (usize, usize, u64, usize),
    hello: &Hello,
    phase: impl Fn(usize) -> LinkPhase,
    joinable: impl Fn(usize, usize) -> bool,
) -> Verdict {
    let (me, nranks, cookie, streams) = ids;
    judge_from(
        job_sender(me, nranks, cookie, hello),
        streams,
        hello,
        phase,
        joinable,
    )
}

/// [`judge`] for a hello whose sender `who` was already identified (or refused): by rank within
/// a job ([`job_sender`]), or by job and rank on a bridge (`crate::bridge`).
pub fn judge_from(
    who: Result<Sender, String>,
    streams: usize,
    hello: &Hello,
    phase: impl Fn(usize) -> LinkPhase,
    joinable: impl Fn(usize, usize) -> bool,
) -> Verdict {
    let peer = match &who {
        Ok(s) => s.peer,
        Err(why) => return Verdict::Refuse(why.clone()),
    };
    if usize::from(hello.streams) != streams {
        return Verdict::Refuse(format!(
            "rank {peer} uses {} streams per peer, this rank uses {streams} \
             (REFLEX_TCP_STREAMS must be the same for every rank)",
            hello.streams
        ));
    }
    if hello.stream == 0 {
        decide_hello(who, phase)
    } else {
        decide_extra_stream(peer, hello, joinable)
    }
}

/// Decides about a hello for stream `hello.stream > 0` received by rank `me`;
/// `joinable(peer, stream)` says whether the link to `peer` is up, this rank accepted its
/// stream 0, and `stream` is not open yet.
pub fn judge_extra_stream(
    me: usize,
    nranks: usize,
    cookie: u64,
    hello: &Hello,
    joinable: impl Fn(usize, usize) -> bool,
) -> Verdict {
    match sender(me, nranks, cookie, hello) {
        Ok(peer) => decide_extra_stream(peer, hello, joinable),
        Err(why) => Verdict::Refuse(why),
    }
}

fn decide_extra_stream(
    peer: usize,
    hello: &Hello,
    joinable: impl Fn(usize, usize) -> bool,
) -> Verdict {
    let stream = usize::from(hello.stream);
    if stream == 0 || !joinable(peer, stream) {
        return Verdict::Refuse(format!("unexpected stream {stream} from rank {peer}"));
    }
    Verdict::Join { peer, stream }
}

/// The sender of a hello that carries this rank's cookie and names it, or why it is refused.
fn sender(me: usize, nranks: usize, cookie: u64, hello: &Hello) -> Result<usize, String> {
    if hello.cookie != cookie {
        return Err("wrong cookie".into());
    }
    if hello.to as usize != me {
        return Err(format!("hello for rank {} reached rank {me}", hello.to));
    }
    let peer = hello.from as usize;
    if peer >= nranks || peer == me {
        return Err(format!("hello from impossible rank {peer}"));
    }
    Ok(peer)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hello(from: u32, to: u32) -> Hello {
        Hello {
            from,
            to,
            cookie: 7,
            stream: 0,
            streams: 1,
            job: 0,
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
                    v => panic!("{v:?}"),
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

    #[test]
    fn extra_streams_join_only_an_accepted_link() {
        let extra = |stream, streams| Hello {
            stream,
            streams,
            ..hello(3, 2)
        };
        let open_ok = |_, _| true;
        let up = |_| LinkPhase::Up;
        assert_eq!(
            judge((2, 4, 7, 4), &extra(2, 4), up, open_ok),
            Verdict::Join { peer: 3, stream: 2 }
        );
        let refused = [
            (extra(2, 2), "uses 2 streams"),
            (extra(0, 2), "uses 2 streams"),
            (
                Hello {
                    cookie: 1,
                    ..extra(1, 4)
                },
                "cookie",
            ),
        ];
        for (h, why) in refused {
            match judge((2, 4, 7, 4), &h, up, open_ok) {
                Verdict::Refuse(text) => assert!(text.contains(why), "{text}"),
                v => panic!("{h:?} gave {v:?}"),
            }
        }
        let stream0 = judge_extra_stream(2, 4, 7, &extra(0, 4), open_ok);
        assert!(matches!(stream0, Verdict::Refuse(_)), "{stream0:?}");
        let taken = judge((2, 4, 7, 4), &extra(1, 4), up, |_, s| s != 1);
        assert!(matches!(taken, Verdict::Refuse(_)), "{taken:?}");
    }
}
