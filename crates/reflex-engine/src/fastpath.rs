//! The hot path of a blocking receive: an eager message taken straight from the transport into the
//! user's buffer, with no request, no posted-queue entry and no unexpected copy; or, when it is
//! already in the unexpected queue, copied from there, again with no request.
//!
//! A message that matches a receive posted earlier is that receive's (MPI matches in posting
//! order): it goes through the normal protocol core, like every packet that is not the awaited
//! eager message. Once a matching message has to go the normal way (a rendezvous RTS or a
//! synchronous send, which need the core's bookkeeping), nothing later may be taken directly, or it
//! would overtake it: the receive then falls back to the general path, which finds that message
//! first in the unexpected queue.

use crate::core::{pattern_matches, recv_status, Body, Core};
use crate::engine::Engine;
use crate::error::Result;
use crate::packet::{self, Envelope, Packet, FLAG_SYNC};
use crate::placement::Arrivals;
use crate::request::Status;
use reflex_base::buf::RecvBuf;
use reflex_base::copy::copy_bytes;
use reflex_base::transport::{Sink, Transport};

/// What happened to the direct receive.
enum Outcome {
    Waiting,
    Taken(Status),
    /// A matching message went to the core; the caller must use the general path.
    Diverted,
}

/// Whether a message with envelope `env` is the blocking receive's (`ctx`, `source`, `tag`): it
/// matches, and no receive posted before it does (those come first, MPI's matching order).
#[inline]
fn ours(core: &Core, ctx: u32, source: i32, tag: i32, env: &Envelope) -> bool {
    pattern_matches(ctx, source, tag, env) && !core.posted.iter().any(|p| p.matches(env))
}

/// The sink of the direct receive's polls: the awaited eager message lands in the user's
/// buffer; every other packet, and every large packet landed in place (a rendezvous receive
/// posted earlier may be streaming in meanwhile), goes to the core as in any poll.
struct Direct<'a, 'b> {
    arrivals: Arrivals<'a>,
    outcome: &'b mut Outcome,
    buf: &'b mut RecvBuf,
    /// Context, source and tag of the receive.
    pattern: (u32, i32, i32),
}

impl Direct<'_, '_> {
    /// Takes `bytes` if it is the awaited message; whether it did.
    #[inline]
    fn take(&mut self, bytes: &[u8]) -> bool {
        if !matches!(self.outcome, Outcome::Waiting) {
            return false;
        }
        let (ctx, source, tag) = self.pattern;
        let core = &mut *self.arrivals.core;
        match packet::decode(bytes) {
            Ok(Packet::Eager { env, payload }) if ours(core, ctx, source, tag, &env) => {
                if env.flags & FLAG_SYNC != 0 {
                    *self.outcome = Outcome::Diverted;
                    return false;
                }
                let dst = self.buf.as_mut_slice();
                let n = dst.len().min(payload.len());
                copy_bytes(&mut dst[..n], &payload[..n]);
                core.traffic.received(env.len);
                *self.outcome =
                    Outcome::Taken(recv_status(env.src as i32, env.tag, payload.len(), n));
                true
            }
            Ok(Packet::Rts { env, .. }) if ours(core, ctx, source, tag, &env) => {
                *self.outcome = Outcome::Diverted;
                false
            }
            _ => false,
        }
    }
}

impl Sink for Direct<'_, '_> {
    #[inline]
    fn packet(&mut self, src: usize, bytes: &[u8]) {
        if !self.take(bytes) {
            self.arrivals.packet(src, bytes);
        }
    }

    fn place(&mut self, src: usize, head: &[u8], len: usize, at: usize) -> Option<&mut [u8]> {
        self.arrivals.place(src, head, len, at)
    }

    fn placed(&mut self, src: usize, head: &[u8], len: usize) {
        self.arrivals.placed(src, head, len)
    }
}

impl<T: Transport> Engine<T> {
    /// Receives into `buf` directly if the awaited message arrives eagerly; `None` means the
    /// general path must finish the receive.
    pub(crate) fn recv_direct(
        &mut self,
        mut buf: RecvBuf,
        ctx: u32,
        source: i32,
        tag: i32,
    ) -> Result<Option<Status>> {
        let mut outcome = Outcome::Waiting;
        self.wait_with(|e| {
            if !matches!(outcome, Outcome::Waiting) {
                return None;
            }
            let mut events = e.drain_loopback();
            if e.core
                .unexpected
                .iter()
                .any(|u| pattern_matches(ctx, source, tag, &u.env))
            {
                outcome = Outcome::Diverted;
                return None;
            }
            let mut direct = Direct {
                arrivals: Arrivals {
                    core: &mut e.core,
                    world_of: &e.world_of_index,
                },
                outcome: &mut outcome,
                buf: &mut buf,
                pattern: (ctx, source, tag),
            };
            events += e.fabric.poll_into(&mut direct);
            if e.core.outbox_len > 0 {
                events += e.flush_outbox();
            }
            Some(events + e.advance_background(events))
        })?;
        Ok(match outcome {
            Outcome::Taken(status) => Some(status),
            _ => None,
        })
    }

    /// Receives unexpected message `i` into `buf` with no request when it is a plain eager
    /// message; `None`, the message left in place, for a rendezvous or synchronous one.
    pub(crate) fn take_unexpected_eager(&mut self, i: usize, mut buf: RecvBuf) -> Option<Status> {
        let msg = &self.core.unexpected[i];
        let Body::Eager(payload) = &msg.body else {
            return None;
        };
        if msg.env.flags & FLAG_SYNC != 0 {
            return None; // its SYNC_ACK is the core's to send
        }
        let dst = buf.as_mut_slice();
        let n = dst.len().min(payload.len());
        copy_bytes(&mut dst[..n], &payload[..n]);
        self.core.stats.unpacked += n as u64;
        let status = recv_status(msg.env.src as i32, msg.env.tag, payload.len(), n);
        self.core.unexpected.remove(i);
        Some(status)
    }
}

#[cfg(test)]
mod tests {
    use crate::error::ErrorClass;
    use crate::request::{SendMode, ANY_SOURCE, ANY_TAG};
    use crate::testing::{run_ranks, small_tuning};
    use crate::{Basic, Datatype, ValueKind, COMM_WORLD};
    use reflex_base::buf::{RecvBuf, SendBuf};

    fn byte() -> Datatype {
        Datatype::Basic(Basic::plain(ValueKind::Byte, 1))
    }

    fn buffer(n: usize) -> RecvBuf {
        RecvBuf::from_slice(Box::leak(vec![0u8; n].into_boxed_slice()))
    }

    #[test]
    fn a_blocking_receive_takes_unexpected_eager_messages_in_order_without_a_request() {
        run_ranks(2, 8, 4096, small_tuning(), |e| {
            if e.world_rank() == 0 {
                let mut sends = Vec::new();
                for (tag, mode) in [1, 2, 3, 4].into_iter().zip([
                    SendMode::Standard,
                    SendMode::Standard,
                    SendMode::Standard,
                    SendMode::Synchronous,
                ]) {
                    let out = SendBuf::from_slice(Box::leak(vec![tag as u8; 8].into_boxed_slice()));
                    sends.push(e.isend(out, 8, byte(), 1, tag, COMM_WORLD, mode).unwrap());
                }
                for s in sends {
                    e.wait(s).unwrap();
                }
                for tag in [9, 8] {
                    let out = SendBuf::from_slice(Box::leak(vec![tag as u8; 8].into_boxed_slice()));
                    let s = e.isend(out, 8, byte(), 1, tag, COMM_WORLD, SendMode::Standard);
                    e.wait(s.unwrap()).unwrap();
                }
                return;
            }
            while e.core.unexpected.len() < 4 {
                e.progress();
            }
            let slots = e.core.requests.live();
            let take = |e: &mut crate::Engine<_>, n, source, tag| {
                let buf = buffer(n);
                let st = e.recv_bytes_direct(buf, source, tag, COMM_WORLD);
                (st, buf)
            };
            // By tag, past an older message; then the older one by wildcards.
            let (st, buf) = take(e, 8, 0, 2);
            let st = st.expect("taken from the unexpected queue");
            assert_eq!((st.source, st.tag, st.bytes), (0, 2, 8));
            assert!(st.error.is_none() && buf.as_slice() == [2; 8]);
            let (st, buf) = take(e, 8, ANY_SOURCE, ANY_TAG);
            assert_eq!(st.map(|s| s.tag), Some(1), "the oldest match first");
            assert_eq!(buf.as_slice(), [1; 8]);
            // Too small a buffer: the status says how much fitted, with MPI_ERR_TRUNCATE.
            let (st, buf) = take(e, 4, 0, 3);
            let st = st.expect("taken");
            assert_eq!(st.bytes, 4);
            assert_eq!(st.error.map(|e| e.class), Some(ErrorClass::Truncate));
            assert_eq!(buf.as_slice(), [3; 4]);
            assert_eq!(e.core.requests.live(), slots, "no request was made");
            // A synchronous message needs the core's acknowledgement: left for the general path.
            let (st, _) = take(e, 8, 0, 4);
            assert!(st.is_none() && e.core.unexpected.len() == 1);
            let st = e.recv(buffer(8), 8, byte(), 0, 4, COMM_WORLD).unwrap();
            assert_eq!((st.tag, st.bytes), (4, 8));
            assert!(e.core.unexpected.is_empty());
            // With a receive posted before it, a blocking one still takes its own message
            // directly, and leaves the posted receive the message that matches both.
            let early = buffer(8);
            let r = e.irecv(early, 8, byte(), 0, 9, COMM_WORLD).unwrap();
            let slots = e.core.requests.live();
            let (st, buf) = take(e, 8, ANY_SOURCE, ANY_TAG);
            assert_eq!(st.map(|s| s.tag), Some(8), "tag 9 is the posted receive's");
            assert_eq!(
                (buf.as_slice(), e.core.requests.live()),
                (&[8u8; 8][..], slots)
            );
            assert_eq!(e.wait(r).unwrap().tag, 9);
            assert_eq!(early.as_slice(), [9; 8]);
        });
    }
}
