//! The hot path of a blocking receive: an eager message taken straight from the transport into the
//! user's buffer, with no request, no posted-queue entry and no unexpected copy.
//!
//! It applies only when nothing else could match first: no receive is posted and no matching
//! message waits in the unexpected queue. While polling, any packet that is not the awaited eager
//! message goes through the normal protocol core. Once a matching message has to go the normal way
//! (a rendezvous RTS or a synchronous send, which need the core's bookkeeping), nothing later may be
//! taken directly, or it would overtake it: the receive then falls back to the general path, which
//! finds that message first in the unexpected queue.

use crate::core::{pattern_matches, recv_status};
use crate::engine::Engine;
use crate::error::Result;
use crate::packet::{self, Packet, FLAG_SYNC};
use crate::request::Status;
use reflex_base::buf::RecvBuf;
use reflex_base::copy::copy_bytes;
use reflex_base::transport::Transport;

/// What happened to the direct receive.
enum Outcome {
    Waiting,
    Taken(Status),
    /// A matching message went to the core; the caller must use the general path.
    Diverted,
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
            let core = &mut e.core;
            let world_of = &e.world_of_index;
            events += e.fabric.poll(|src, bytes| {
                if let Outcome::Waiting = outcome {
                    match packet::decode(bytes) {
                        Ok(Packet::Eager { env, payload })
                            if pattern_matches(ctx, source, tag, &env) =>
                        {
                            if env.flags & FLAG_SYNC == 0 {
                                let dst = buf.as_mut_slice();
                                let n = dst.len().min(payload.len());
                                copy_bytes(&mut dst[..n], &payload[..n]);
                                outcome = Outcome::Taken(recv_status(
                                    env.src as i32,
                                    env.tag,
                                    payload.len(),
                                    n,
                                ));
                                return;
                            }
                            outcome = Outcome::Diverted;
                        }
                        Ok(Packet::Rts { env, .. }) if pattern_matches(ctx, source, tag, &env) => {
                            outcome = Outcome::Diverted
                        }
                        _ => {}
                    }
                }
                core.on_packet(world_of[src], bytes);
            });
            if e.core.outbox_len > 0 {
                events += e.flush_outbox();
            }
            Some(events)
        })?;
        Ok(match outcome {
            Outcome::Taken(status) => Some(status),
            _ => None,
        })
    }
}
