//! `MPI_Cancel`. A posted receive that nothing matched is taken out of the posted queue. A send
//! is cancelled while its message is not matched: one still queued here is dropped at once; a
//! synchronous eager send awaiting its SYNC_ACK, or a rendezvous awaiting its CTS or FIN, sends
//! CANCEL, and the receiver takes the message out of its unexpected queue if it is still there
//! and answers CANCEL_ACK with the outcome. Until the answer comes the send does not complete,
//! even if its own protocol ends meanwhile (a match that raced the CANCEL), so that the request
//! outlives every packet naming it and `MPI_Wait` returns whatever the receiver does (MPI-3.1
//! section 3.8.4). An eager send is complete once it leaves: its cancel fails, as the standard
//! allows.

use crate::core::{Body, Core, Out, Unexpected};
use crate::engine::Engine;
use crate::error::{ErrorClass, MpiError, Result};
use crate::p2p::{bad_request, null_status};
use crate::packet;
use crate::request::{Op, Request, RequestId, SendCancel, SendPhase, Status};
use reflex_base::transport::Transport;

impl<T: Transport> Engine<T> {
    /// `MPI_Cancel`: a posted, unmatched receive is cancelled; so is a send whose message no
    /// receive has matched yet (see [`Self::cancel_send`]); anything else completes normally.
    /// A pair cancels its receive.
    pub fn cancel(&mut self, id: RequestId) -> Result<()> {
        let req = self.core.requests.get(id).ok_or_else(|| bad_request(id))?;
        let id = match req.op {
            Op::Pair { recv, .. } => recv,
            Op::Send(_) => {
                self.cancel_send(id);
                return Ok(());
            }
            _ => id,
        };
        if let Some(pos) = self.core.posted.iter().position(|p| p.id == id) {
            self.core.posted.remove(pos);
            let mut status = null_status();
            status.cancelled = true;
            self.core.finish_recv(id, status);
        }
        Ok(())
    }

    /// Cancels send `id` if its message is not matched: still queued here, it is dropped at once;
    /// a synchronous or rendezvous send that awaits its receiver asks the receiver (CANCEL), and
    /// completes when the answer comes, cancelled or not (MPI's `MPI_Wait` after `MPI_Cancel`
    /// returns whatever the other processes do). An eager send already on its way is complete.
    fn cancel_send(&mut self, id: RequestId) {
        let Some(req) = self.core.requests.get_mut(id) else {
            return;
        };
        let (dest, Op::Send(send)) = (req.peer as usize, &req.op) else {
            return;
        };
        match (send.phase, req.cancel) {
            (SendPhase::Queued, _) => {
                let queue = &mut self.core.outbox[dest];
                let Some(at) = queue
                    .iter()
                    .position(|o| matches!(o, Out::Send(q) if *q == id))
                else {
                    return;
                };
                queue.remove(at);
                self.core.outbox_len -= 1;
                self.core.complete_cancelled(id);
            }
            (SendPhase::AwaitAck | SendPhase::AwaitReply, _) if dest == self.core.me => {
                self.cancel_send_to_self(id)
            }
            (SendPhase::AwaitAck | SendPhase::AwaitReply, SendCancel::No) => {
                req.cancel = SendCancel::Asked { finished: false };
                let encode = |b: &mut [u8]| packet::encode_cancel(b, id.0);
                self.core.queue_control(dest, encode, packet::ACK_LEN);
            }
            _ => {}
        }
    }

    /// A send to this process is cancelled at once if its message is still unexpected (after
    /// the loopback packets are handled): the outcome is known when `MPI_Cancel` returns, as
    /// programs that test the request right away expect of a send to themselves.
    fn cancel_send_to_self(&mut self, id: RequestId) {
        self.drain_loopback();
        let me = self.core.me;
        if self.core.withdraw(me, id.0) {
            self.core.complete_cancelled(id);
        }
    }
}

impl Core {
    /// Completes send `id` as cancelled: its message was never matched.
    pub(crate) fn complete_cancelled(&mut self, id: RequestId) {
        if let Some(req) = self.requests.get_mut(id) {
            req.cancel = SendCancel::No;
            if let Op::Send(send) = &mut req.op {
                send.phase = SendPhase::Done;
            }
        }
        let status = Status {
            cancelled: true,
            ..Status::empty()
        };
        self.complete(id, status);
    }

    /// CANCEL from `src_world` for its send `sreq`: the message leaves the unexpected queue if it
    /// is there (only a message whose sender still awaits an answer can be meant: the sender's
    /// request of a plain eager message may be reused), and the sender learns the outcome.
    pub(crate) fn on_cancel(&mut self, src_world: usize, sreq: u32) {
        let cancelled = self.withdraw(src_world, sreq);
        let encode = |b: &mut [u8]| packet::encode_cancel_ack(b, sreq, cancelled);
        self.queue_control(src_world, encode, packet::ACK_LEN);
    }

    /// Takes the message of send `sreq` of `src_world` out of the unexpected queue; false if it
    /// is not there (matched already).
    fn withdraw(&mut self, src_world: usize, sreq: u32) -> bool {
        let awaited = |u: &Unexpected| {
            u.src_world == src_world
                && u.env.sreq == sreq
                && (matches!(u.body, Body::Rts(_)) || u.env.flags & packet::FLAG_SYNC != 0)
        };
        let found = self.unexpected.iter().position(awaited);
        if let Some(at) = found {
            self.unexpected.remove(at);
        }
        found.is_some()
    }

    /// The answer to our CANCEL for send `id`: cancelled, or matched (then it completes when its
    /// protocol ends, or now if it ended while the answer was on its way).
    pub(crate) fn on_cancel_ack(&mut self, src_world: usize, id: RequestId, cancelled: bool) {
        let asked = match self.requests.get_mut(id) {
            Some(
                req @ Request {
                    op: Op::Send(_), ..
                },
            ) => std::mem::replace(&mut req.cancel, SendCancel::No),
            _ => SendCancel::No,
        };
        let SendCancel::Asked { finished } = asked else {
            return self.record_fatal(MpiError::new(
                ErrorClass::Intern,
                format!(
                    "cancel answer from rank {src_world} for send {} not being cancelled",
                    id.0
                ),
            ));
        };
        if cancelled {
            if self.requests.send_mut(id).map(|s| s.phase) == Some(SendPhase::AwaitReply) {
                self.coop.rts_answered(src_world);
            }
            return self.complete_cancelled(id);
        }
        if finished {
            self.complete(id, Status::empty());
        }
    }
}
