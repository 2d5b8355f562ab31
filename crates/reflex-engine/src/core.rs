//! The protocol core: matching and the reaction to every packet kind, with no transport inside.
//!
//! Receives are matched in posting order against messages in arrival order, on (context, source,
//! tag) with `ANY_SOURCE`/`ANY_TAG` wildcards: this plus the transport's per-pair FIFO gives MPI's
//! non-overtaking rule. A message that finds no posted receive waits in the unexpected queue (an
//! eager payload is copied out of the transport; a rendezvous keeps only its RTS). Replies the core
//! decides on (SYNC_ACK, CTS, FIN, CANCEL_ACK) are queued in the per-destination outbox, which the engine drains
//! into the transport after each poll.

use crate::datatype::wire::RemoteLayout;
use crate::error::{ErrorClass, MpiError};
use crate::msgbuf::{CopyStats, Spares};
use crate::packet::{self, Envelope, Packet};
use crate::request::{
    InBuf, Op, OutBuf, RecvOp, RecvPhase, Request, RequestId, Requests, SendCancel, SendPhase,
    Status, ANY_SOURCE, ANY_TAG,
};
use std::collections::VecDeque;

/// A receive waiting in the posted queue; the pattern is kept inline so scans touch no request.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Posted {
    pub(crate) id: RequestId,
    pub(crate) ctx: u32,
    pub(crate) source: i32,
    pub(crate) tag: i32,
}

impl Posted {
    pub(crate) fn matches(&self, env: &Envelope) -> bool {
        pattern_matches(self.ctx, self.source, self.tag, env)
    }
}

/// Does a receive pattern accept a message envelope?
pub(crate) fn pattern_matches(ctx: u32, source: i32, tag: i32, env: &Envelope) -> bool {
    ctx == env.ctx
        && (source == ANY_SOURCE || source as u32 == env.src)
        && (tag == ANY_TAG || tag == env.tag)
}

/// A rendezvous offer: where the sender's data lies and whether it may be read in place.
#[derive(Debug, Clone)]
pub(crate) struct Offer {
    /// The sender's process.
    pub(crate) pid: u32,
    /// The sender's buffer (the application's address for a non-contiguous one).
    pub(crate) addr: u64,
    /// The sender's blocks when its data is not contiguous.
    pub(crate) layout: Option<Box<RemoteLayout>>,
    /// The data may be read in place (else it must be streamed).
    pub(crate) readable: bool,
}

/// What an unmatched message left behind.
#[derive(Debug)]
pub(crate) enum Body {
    /// The eager payload, copied out of the transport.
    Eager(Vec<u8>),
    /// A rendezvous offer.
    Rts(Offer),
}

/// A message that arrived before its receive was posted (or was taken by `MPI_Mprobe`).
#[derive(Debug)]
pub(crate) struct Unexpected {
    pub(crate) env: Envelope,
    pub(crate) src_world: usize,
    pub(crate) body: Body,
}

/// One unit of work waiting for room in the transport towards one destination.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Out {
    /// The first packet (eager or RTS) of a send request.
    Send(RequestId),
    /// The next DATA chunk(s) of a streaming send request.
    Data(RequestId),
    /// A control packet (CTS, FIN, SYNC_ACK), stored inline.
    Control([u8; 16], u8),
}

/// Engine state that packet handling needs (everything but the transport).
#[derive(Debug)]
pub(crate) struct Core {
    pub(crate) me: usize,
    /// Ranks of this job: a process from this index on belongs to another job, whose memory is
    /// never read by pid (it may be on another host).
    pub(crate) world: usize,
    pub(crate) pid: u32,
    pub(crate) requests: Requests,
    pub(crate) posted: VecDeque<Posted>,
    pub(crate) unexpected: VecDeque<Unexpected>,
    pub(crate) outbox: Vec<VecDeque<Out>>,
    pub(crate) outbox_len: usize,
    pub(crate) loopback: VecDeque<Vec<u8>>,
    /// Use `process_vm_readv` for rendezvous (else stream through the transport).
    pub(crate) single_copy: bool,
    /// First fatal protocol error seen while polling (reported by the next engine call).
    pub(crate) fatal: Option<MpiError>,
    /// The attached buffer of buffered sends.
    pub(crate) bsend: crate::bsend::BsendPool,
    /// Bytes copied, by kind.
    pub(crate) stats: CopyStats,
    /// Messages sent and received (tools' counters).
    pub(crate) traffic: crate::traffic::Traffic,
    /// Smallest average block read in place over iovecs (else streamed).
    pub(crate) iov_min: usize,
    /// Temporary packed buffers kept for reuse.
    pub(crate) spares: Spares,
    /// Cooperative copies of large messages (`REFLEX_SINGLE_COPY=coop`).
    pub(crate) coop: crate::coop::Coop,
}

impl Core {
    pub(crate) fn new(me: usize, nranks: usize, single_copy: bool, iov_min: usize) -> Self {
        Self {
            me,
            world: nranks,
            pid: std::process::id(),
            requests: Requests::default(),
            posted: VecDeque::new(),
            unexpected: VecDeque::new(),
            outbox: (0..nranks).map(|_| VecDeque::new()).collect(),
            outbox_len: 0,
            loopback: VecDeque::new(),
            single_copy,
            fatal: None,
            bsend: Default::default(),
            stats: CopyStats::default(),
            traffic: Default::default(),
            iov_min,
            spares: Spares::default(),
            coop: Default::default(),
        }
    }

    pub(crate) fn queue_out(&mut self, dest: usize, item: Out) {
        self.outbox[dest].push_back(item);
        self.outbox_len += 1;
    }

    pub(crate) fn queue_control(
        &mut self,
        dest: usize,
        encode: impl FnOnce(&mut [u8]),
        len: usize,
    ) {
        let mut bytes = [0u8; 16];
        encode(&mut bytes);
        self.queue_out(dest, Out::Control(bytes, len as u8));
    }

    /// Handles one packet from world rank `src_world`.
    #[inline]
    pub(crate) fn on_packet(&mut self, src_world: usize, bytes: &[u8]) {
        match packet::decode(bytes) {
            Ok(Packet::Eager { env, payload }) => {
                self.on_message(src_world, env, MessageBody::Eager(payload))
            }
            Ok(Packet::Rts {
                env,
                pid,
                addr,
                layout,
            }) => match decode_offer(&env, (pid, addr), layout, src_world < self.world) {
                Ok(offer) => self.on_message(src_world, env, MessageBody::Rts(offer)),
                Err(e) => self.record_fatal(MpiError::new(
                    e.class,
                    format!("from rank {src_world}: {}", e.message),
                )),
            },
            Ok(Packet::Cts { sreq, rreq }) => {
                self.coop.rts_answered(src_world);
                self.on_cts(src_world, sreq, rreq)
            }
            Ok(Packet::Data {
                rreq,
                offset,
                payload,
            }) => self.on_data(rreq, offset, payload),
            Ok(Packet::Fin { sreq }) => {
                self.coop.rts_answered(src_world);
                self.complete_send(RequestId(sreq))
            }
            Ok(Packet::SyncAck { sreq }) => self.complete_send(RequestId(sreq)),
            Ok(Packet::Cancel { sreq }) => self.on_cancel(src_world, sreq),
            Ok(Packet::CancelAck { sreq, cancelled }) => {
                self.on_cancel_ack(src_world, RequestId(sreq), cancelled)
            }
            Ok(Packet::Coop {
                sreq,
                slot,
                generation,
            }) => self.on_coop(src_world, sreq, slot, generation),
            Err(e) => self.record_fatal(MpiError::new(
                e.class,
                format!("from rank {src_world}: {}", e.message),
            )),
        }
    }

    #[cold]
    pub(crate) fn record_fatal(&mut self, e: MpiError) {
        self.fatal.get_or_insert(e);
    }

    fn on_message(&mut self, src_world: usize, env: Envelope, body: MessageBody<'_>) {
        self.traffic.received(env.len);
        // Usually the oldest receive matches (messages come in the order they are awaited).
        if self.posted.front().is_some_and(|p| p.matches(&env)) {
            let posted = self.posted.pop_front().expect("it has a front");
            return self.deliver(posted.id, src_world, env, body);
        }
        let Some(pos) = self.posted.iter().position(|p| p.matches(&env)) else {
            let body = match body {
                MessageBody::Eager(payload) => {
                    self.stats.staged += payload.len() as u64;
                    Body::Eager(payload.to_vec())
                }
                MessageBody::Rts(offer) => Body::Rts(offer),
            };
            self.unexpected.push_back(Unexpected {
                env,
                src_world,
                body,
            });
            self.traffic.unexpected_at(self.unexpected.len());
            return;
        };
        let posted = self.posted.remove(pos).expect("position is in range");
        self.deliver(posted.id, src_world, env, body);
    }

    /// Delivers a matched message into receive request `id`.
    pub(crate) fn deliver(
        &mut self,
        id: RequestId,
        src_world: usize,
        env: Envelope,
        body: MessageBody<'_>,
    ) {
        if env.flags & packet::FLAG_SYNC != 0 && matches!(body, MessageBody::Eager(_)) {
            self.queue_control(
                src_world,
                |b| packet::encode_sync_ack(b, env.sreq),
                packet::ACK_LEN,
            );
        }
        if env.flags & packet::FLAG_UPSTREAM_FAILED != 0 {
            if let Some(recv) = self.requests.recv_mut(id) {
                recv.upstream_failed = true;
            }
        }
        match body {
            MessageBody::Eager(payload) => {
                let Some(req) = self.requests.get_mut(id) else {
                    return;
                };
                let Op::Recv(recv) = &mut req.op else {
                    return;
                };
                let copied = recv.buf.unpack(0, payload, &mut self.stats);
                let status = recv_status(env.src as i32, env.tag, payload.len(), copied);
                if finish_recv_in(req, status, &mut self.stats) {
                    self.release(id);
                }
            }
            MessageBody::Rts(offer) => self.start_rendezvous(id, src_world, env, offer),
        }
    }

    fn start_rendezvous(&mut self, id: RequestId, src_world: usize, env: Envelope, offer: Offer) {
        if src_world == self.me {
            return self.rendezvous_with_self(id, env);
        }
        let readable = self.single_copy && offer.readable && self.worth_reading(id, &offer);
        if readable && self.try_start_coop(id, src_world, env, &offer) {
            return;
        }
        self.rendezvous_alone(id, src_world, env, offer);
    }

    /// The receiver alone moves a matched rendezvous message: one single-copy read when allowed,
    /// else a CTS asks the sender to stream it.
    pub(crate) fn rendezvous_alone(
        &mut self,
        id: RequestId,
        src_world: usize,
        env: Envelope,
        offer: Offer,
    ) {
        if self.single_copy && offer.readable && self.worth_reading(id, &offer) {
            if let Some(recv) = self.requests.recv_mut(id) {
                let stats = &mut self.stats;
                match crate::single_copy::read_offer(&offer, env.len as usize, &mut recv.buf, stats)
                {
                    Ok(copied) => {
                        self.queue_control(
                            src_world,
                            |b| packet::encode_fin(b, env.sreq),
                            packet::ACK_LEN,
                        );
                        let status = recv_status(env.src as i32, env.tag, env.len as usize, copied);
                        return self.finish_recv(id, status);
                    }
                    // The kernel refused (e.g. ptrace restrictions): stream from now on.
                    Err(_) => self.single_copy = false,
                }
            }
        }
        if let Some(recv) = self.requests.recv_mut(id) {
            recv.phase = RecvPhase::Streaming {
                received: 0,
                expected: env.len as usize,
            };
            recv.source = env.src as i32;
            recv.tag = env.tag;
        }
        self.queue_control(
            src_world,
            |b| packet::encode_cts(b, env.sreq, id.0),
            packet::CTS_LEN,
        );
    }

    /// Whether reading in place beats streaming: both sides' blocks are large enough on average
    /// for one iovec each (tiny blocks are packed into cells faster than the kernel walks them).
    fn worth_reading(&self, id: RequestId, offer: &Offer) -> bool {
        let remote = offer
            .layout
            .as_ref()
            .map_or(usize::MAX, |l| l.program.average_run());
        let local = match self.requests.get(id).map(|r| &r.op) {
            Some(Op::Recv(RecvOp {
                buf: InBuf::Typed(t),
                ..
            })) => t.dt.program().map_or(0, |p| p.average_run()),
            _ => usize::MAX,
        };
        remote.min(local) >= self.iov_min
    }
}

/// Decodes the rendezvous offer of an RTS (validating a datatype description, if any); an offer
/// from another job (`same_job` false) is never read in place.
fn decode_offer(
    env: &Envelope,
    (pid, addr): (u32, u64),
    layout: &[u8],
    same_job: bool,
) -> crate::error::Result<Offer> {
    let layout = if layout.is_empty() {
        None
    } else {
        Some(Box::new(RemoteLayout::decode(layout, env.len)?))
    };
    Ok(Offer {
        pid,
        addr,
        layout,
        readable: same_job && env.flags & packet::FLAG_STREAM_ONLY == 0,
    })
}

/// A matched message's body, borrowed from the packet or from the unexpected queue.
#[derive(Debug)]
pub(crate) enum MessageBody<'a> {
    Eager(&'a [u8]),
    Rts(Offer),
}

/// The status of a receive that got `copied` bytes of a `len`-byte message.
#[inline]
pub(crate) fn recv_status(source: i32, tag: i32, len: usize, copied: usize) -> Status {
    let error = (copied < len).then(|| truncated(source, tag, len, copied));
    Status {
        source,
        tag,
        bytes: copied,
        cancelled: false,
        error,
    }
}

/// The error of a message of `len` bytes cut to the `copied` bytes of its receive buffer.
#[cold]
#[inline(never)]
fn truncated(source: i32, tag: i32, len: usize, copied: usize) -> Box<MpiError> {
    Box::new(MpiError::new(
        ErrorClass::Truncate,
        format!("message of {len} bytes from rank {source} (tag {tag}) truncated to a receive buffer of {copied} bytes"),
    ))
}

/// Completes receive request `req` with `status` (unpacking a staged buffer); true when the
/// application freed it already, so that it is to be released now.
#[inline]
fn finish_recv_in(req: &mut Request, status: Status, stats: &mut CopyStats) -> bool {
    if let Op::Recv(recv) = &mut req.op {
        recv.phase = RecvPhase::Done;
        recv.buf.finish(status.bytes, stats);
    }
    req.mark_complete(status)
}

impl Core {
    fn rendezvous_with_self(&mut self, rid: RequestId, env: Envelope) {
        let sid = RequestId(env.sreq);
        let Some(mut send) = self.requests.take(sid) else {
            return self.record_fatal(MpiError::new(
                ErrorClass::Intern,
                "self rendezvous lost its send request",
            ));
        };
        let status = match (&mut send.op, self.requests.recv_mut(rid)) {
            (Op::Send(op), Some(recv)) => {
                let copied = crate::msgbuf::transfer(&mut op.buf, &mut recv.buf, &mut self.stats);
                recv_status(env.src as i32, env.tag, env.len as usize, copied)
            }
            _ => Status::empty(),
        };
        if let Op::Send(op) = &mut send.op {
            op.phase = SendPhase::AwaitReply;
        }
        self.requests.put_back(sid, send);
        self.finish_recv(rid, status);
        self.complete_send(sid);
    }

    fn on_cts(&mut self, src_world: usize, sreq: u32, rreq: u32) {
        let id = RequestId(sreq);
        match self.requests.get_mut(id) {
            Some(Request {
                op: Op::Send(send), ..
            }) if send.phase == SendPhase::AwaitReply => {
                send.phase = SendPhase::Streaming {
                    next: 0,
                    peer_req: rreq,
                };
                self.queue_out(src_world, Out::Data(id));
            }
            _ => self.record_fatal(MpiError::new(
                ErrorClass::Intern,
                format!("cts from rank {src_world} for unknown send {sreq}"),
            )),
        }
    }

    fn on_data(&mut self, rreq: u32, offset: u64, payload: &[u8]) {
        match streaming_recv(&mut self.requests, rreq) {
            Ok(recv) => {
                recv.buf.unpack(offset as usize, payload, &mut self.stats);
            }
            Err(e) => return self.record_fatal(e),
        }
        self.count_data(rreq, payload.len());
    }

    /// Books `n` more bytes received by streaming receive `rreq`; completes it at the end.
    pub(crate) fn count_data(&mut self, rreq: u32, n: usize) {
        let id = RequestId(rreq);
        let Some(recv) = self.requests.recv_mut(id) else {
            return;
        };
        let RecvPhase::Streaming { received, expected } = recv.phase else {
            return;
        };
        let received = received + n;
        if received < expected {
            recv.phase = RecvPhase::Streaming { received, expected };
            return;
        }
        let status = recv_status(
            recv.source,
            recv.tag,
            expected,
            expected.min(recv.buf.capacity()),
        );
        self.finish_recv(id, status);
    }

    /// Marks receive `id` complete with `status`.
    pub(crate) fn finish_recv(&mut self, id: RequestId, status: Status) {
        let Some(req) = self.requests.get_mut(id) else {
            return;
        };
        if finish_recv_in(req, status, &mut self.stats) {
            self.release(id);
        }
    }

    /// Marks send `id` complete (its buffer is no longer needed); one whose cancellation is
    /// being asked completes when the answer comes.
    pub(crate) fn complete_send(&mut self, id: RequestId) {
        match self.requests.get_mut(id) {
            Some(Request {
                op: Op::Send(send),
                cancel,
                ..
            }) => {
                send.phase = SendPhase::Done;
                if let SendCancel::Asked { finished } = cancel {
                    *finished = true;
                    return;
                }
                self.complete(id, Status::empty());
            }
            _ => self.record_fatal(MpiError::new(
                ErrorClass::Intern,
                format!("acknowledgement for unknown send {}", id.0),
            )),
        }
    }

    /// Marks a request complete; a request the application already freed is released now.
    pub(crate) fn complete(&mut self, id: RequestId, status: Status) {
        let Some(req) = self.requests.get_mut(id) else {
            return;
        };
        if req.mark_complete(status) {
            self.release(id);
        }
    }

    /// Drops a completed request (or returns a persistent one to the inactive state), in place:
    /// only its buffered-send reservation and an engine-owned buffer are taken out of it.
    pub(crate) fn release(&mut self, id: RequestId) {
        let Some(req) = self.requests.get_mut(id) else {
            return;
        };
        if req.is_plain() {
            return self.requests.discard_plain(id);
        }
        let spare = match &mut req.op {
            Op::Send(send) => {
                self.bsend
                    .give_back(std::mem::take(&mut send.bsend_reserved));
                match &mut send.buf {
                    OutBuf::Owned(v) => Some(std::mem::take(v)),
                    _ => None,
                }
            }
            Op::Recv(RecvOp {
                buf: InBuf::Owned(v) | InBuf::Staged { tmp: v, .. },
                ..
            }) => Some(std::mem::take(v)),
            _ => None,
        };
        if req.persistent.is_some() && !req.detached {
            req.status = Status::empty();
            req.active = false;
            req.op = Op::Null;
        } else {
            self.requests.discard(id);
        }
        if let Some(v) = spare {
            self.spares.give(v);
        }
    }

    /// Posts receive `id` with the given pattern: first against the unexpected queue, else queued.
    #[inline]
    pub(crate) fn post_recv(&mut self, id: RequestId, ctx: u32, source: i32, tag: i32) {
        let found = if self.unexpected.is_empty() {
            None
        } else {
            self.unexpected
                .iter()
                .position(|u| pattern_matches(ctx, source, tag, &u.env))
        };
        match found {
            Some(pos) => {
                let msg = self.unexpected.remove(pos).expect("position is in range");
                self.deliver_unexpected(id, msg);
            }
            None => self.posted.push_back(Posted {
                id,
                ctx,
                source,
                tag,
            }),
        }
    }

    /// Delivers a message taken from the unexpected queue (or an `MPI_Mprobe` handle).
    pub(crate) fn deliver_unexpected(&mut self, id: RequestId, msg: Unexpected) {
        match msg.body {
            Body::Eager(bytes) => {
                self.deliver(id, msg.src_world, msg.env, MessageBody::Eager(&bytes))
            }
            Body::Rts(offer) => self.deliver(id, msg.src_world, msg.env, MessageBody::Rts(offer)),
        }
    }

    /// Creates a receive request over `buf` (not yet posted), in `into` or a new slot.
    pub(crate) fn new_recv(
        &mut self,
        buf: InBuf,
        source: i32,
        tag: i32,
        into: Option<RequestId>,
    ) -> RequestId {
        let op = RecvOp {
            buf,
            source,
            tag,
            phase: RecvPhase::Posted,
            upstream_failed: false,
        };
        self.install(into, Op::Recv(op))
    }

    /// Puts a fresh operation into request `into` (a persistent request being started) or a new one.
    pub(crate) fn install(&mut self, into: Option<RequestId>, op: Op) -> RequestId {
        match into.and_then(|id| self.requests.get_mut(id).map(|r| (id, r))) {
            Some((id, req)) => {
                req.active = true;
                req.op = op;
                req.complete = false;
                req.status = Status::empty();
                id
            }
            None => self.requests.insert(Request::new(op)),
        }
    }
}

/// The receive that DATA for `rreq` belongs to (it must be streaming).
pub(crate) fn streaming_recv(
    requests: &mut crate::request::Requests,
    rreq: u32,
) -> Result<&mut crate::request::RecvOp, MpiError> {
    let Some(recv) = requests.recv_mut(RequestId(rreq)) else {
        return Err(MpiError::new(
            ErrorClass::Intern,
            format!("data for unknown receive {rreq}"),
        ));
    };
    if !matches!(recv.phase, RecvPhase::Streaming { .. }) {
        return Err(MpiError::new(
            ErrorClass::Intern,
            format!("data for receive {rreq} not streaming"),
        ));
    }
    Ok(recv)
}
