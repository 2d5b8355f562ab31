//! Point-to-point operations (MPI-3.1 chapter 3) on top of the protocol core.
//!
//! Blocking calls are their nonblocking form plus a wait, except the hottest one: a standard send
//! that fits in one eager packet and finds its path empty goes straight into the transport with no
//! request at all. Matched probes move a message from the unexpected queue into a message handle.

use crate::comm::CommId;
use crate::core::{Out, Unexpected};
use crate::datatype::Datatype;
use crate::engine::{send_dense_eager, try_send_eager, Engine};
use crate::error::{ErrorClass, MpiError, Result};
use crate::msgbuf::Typed;
use crate::packet::{self, Envelope};
use crate::request::{
    Hooks, InBuf, Op, OutBuf, Persistent, RecvOp, RecvPhase, Request, RequestId, SendCancel,
    SendMode, SendOp, SendPhase, Status, PROC_NULL,
};
use reflex_base::buf::{RecvBuf, SendBuf};
use reflex_base::slots::Slots;
use reflex_base::transport::Transport;

/// A message taken by `MPI_Mprobe`/`MPI_Improbe`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Message {
    /// `MPI_MESSAGE_NO_PROC`: the probe named `MPI_PROC_NULL`.
    NoProc,
    /// A real message, by slot.
    Id(u32),
}

/// Messages taken by matched probes and not yet received.
#[derive(Debug, Default)]
pub(crate) struct Messages {
    slots: Slots<Unexpected>,
}

impl Messages {
    fn insert(&mut self, msg: Unexpected) -> u32 {
        self.slots.insert(msg) as u32
    }

    fn take(&mut self, id: u32) -> Option<Unexpected> {
        self.slots.remove(id as usize)
    }
}

fn probe_status(u: &Unexpected) -> Status {
    Status {
        source: u.env.src as i32,
        tag: u.env.tag,
        bytes: u.env.len as usize,
        cancelled: false,
        error: None,
    }
}

pub(crate) fn null_status() -> Status {
    Status::from_proc_null()
}

/// Checks that the caller wrapped the memory `count` elements of `dt` touch.
fn check_span(count: usize, dt: &Datatype, available: usize) -> Result<usize> {
    let len = dt.packed_len(count)?;
    let (_, span) = dt.span(count)?;
    if span > available {
        return Err(MpiError::new(
            ErrorClass::Buffer,
            format!("{count} elements span {span} bytes but the buffer wraps {available}"),
        ));
    }
    Ok(len)
}

/// Most runs the per-receive overlap check of interleaved elements enumerates.
const RECV_OVERLAP_CHECK_RUNS: u64 = 1 << 16;

/// Rejects a receive whose elements would write some byte twice (MPI-3.1 §3.2.2 makes it
/// erroneous; Reflex reports it rather than leave the result to the order of the copies).
pub(crate) fn check_no_overlap(count: usize, dt: &Datatype) -> Result<()> {
    let Some(layout) = dt.layout() else {
        return Ok(());
    };
    let p = layout.program();
    let b = dt.bounds();
    let interleaved = count > 1 && dt.extent().unsigned_abs() < (b.true_ub - b.true_lb) as usize;
    let overlap = !p.disjoint
        || (interleaved
            && p.runs.saturating_mul(count as u64) <= RECV_OVERLAP_CHECK_RUNS
            && p.exact_disjoint(count, dt.extent()) == Some(false));
    if overlap {
        return Err(MpiError::new(
            ErrorClass::Type,
            "the receive datatype's blocks overlap (a byte would be written twice)",
        ));
    }
    Ok(())
}

impl<T: Transport> Engine<T> {
    /// What a send of `count` elements of `dt` from `buf` reads: the dense buffer itself, the
    /// typed buffer (gathered on the fly), or a packed copy when direct sending is off.
    pub(crate) fn out_buf(&mut self, buf: SendBuf, count: usize, dt: &Datatype) -> Result<OutBuf> {
        let len = check_span(count, dt, buf.len())?;
        if dt.is_dense() {
            return Ok(OutBuf::User(buf.slice(0, len)));
        }
        let mut typed = OutBuf::Typed(Box::new(Typed::new(buf, dt, count)));
        if self.tuning.direct_send {
            return Ok(typed);
        }
        let core = &mut self.core;
        Ok(OutBuf::Owned(
            typed.packed_copy(&mut core.stats, &mut core.spares),
        ))
    }

    /// What a receive of `count` elements of `dt` into `buf` writes.
    pub(crate) fn in_buf(&mut self, buf: RecvBuf, count: usize, dt: &Datatype) -> Result<InBuf> {
        let len = check_span(count, dt, buf.len())?;
        if dt.is_dense() {
            return Ok(InBuf::User(buf.slice(0, len)));
        }
        check_no_overlap(count, dt)?;
        let to = Box::new(Typed::new(buf, dt, count));
        if self.tuning.direct_recv {
            return Ok(InBuf::Typed(to));
        }
        Ok(InBuf::Staged {
            tmp: self.core.spares.take(len),
            to,
        })
    }

    /// Starts a send of `count` elements of `dt` from `buf` to `dest` (`MPI_Isend` family).
    #[allow(clippy::too_many_arguments)] // the MPI call's own parameter list
    pub fn isend(
        &mut self,
        buf: SendBuf,
        count: usize,
        dt: Datatype,
        dest: i32,
        tag: i32,
        comm: CommId,
        mode: SendMode,
    ) -> Result<RequestId> {
        let mut out = self.out_buf(buf, count, &dt)?;
        // An eager message that goes out at once is complete at once: no send state to keep.
        if matches!(mode, SendMode::Standard | SendMode::Ready)
            && self.try_send_eager_now(&mut out, dest, tag, comm)
        {
            return Ok(self
                .core
                .requests
                .insert(Request::completed(Status::empty())));
        }
        self.start_user_send(out, dest, tag, comm, mode, None)
    }

    /// A standard send that takes a copy of its data at once, so the buffer may change as soon as
    /// this returns (`MPI_Isendrecv_replace` receives into it).
    pub fn isend_copied(
        &mut self,
        buf: SendBuf,
        count: usize,
        dt: Datatype,
        (dest, tag): (i32, i32),
        comm: CommId,
    ) -> Result<RequestId> {
        let mut out = self.out_buf(buf, count, &dt)?;
        if self.try_send_eager_now(&mut out, dest, tag, comm) {
            return Ok(self
                .core
                .requests
                .insert(Request::completed(Status::empty())));
        }
        if !matches!(out, OutBuf::Owned(_)) {
            let core = &mut self.core;
            out = OutBuf::Owned(out.packed_copy(&mut core.stats, &mut core.spares));
        }
        self.start_user_send(out, dest, tag, comm, SendMode::Standard, None)
    }

    /// Starts a send of all of `buf`, into request `into` (persistent) or a new one.
    fn start_user_send(
        &mut self,
        buf: OutBuf,
        dest: i32,
        tag: i32,
        comm: CommId,
        mode: SendMode,
        into: Option<RequestId>,
    ) -> Result<RequestId> {
        let c = self.comms.get(comm)?;
        c.check_rank(dest, "destination")?;
        if dest == PROC_NULL {
            return Ok(self.install_completed(into, null_status()));
        }
        let flags = if mode == SendMode::Synchronous {
            packet::FLAG_SYNC
        } else {
            0
        };
        let env = Envelope {
            ctx: c.ctx,
            src: c.rank,
            tag,
            len: buf.len() as u64,
            sreq: 0,
            flags,
        };
        let dest_world = c.world_of(dest as usize);
        self.start_send(buf, dest_world, env, mode, into)
    }

    /// Creates (or fills `into`) and submits a send; a buffered send copies and completes at once.
    pub(crate) fn start_send(
        &mut self,
        mut buf: OutBuf,
        dest_world: usize,
        env: Envelope,
        mode: SendMode,
        into: Option<RequestId>,
    ) -> Result<RequestId> {
        self.core.traffic.sent(env.len);
        if mode == SendMode::Buffered {
            let bsend_reserved = self.core.bsend.reserve(env.len as usize)?;
            let core = &mut self.core;
            let copy = OutBuf::Owned(buf.packed_copy(&mut core.stats, &mut core.spares));
            let op = SendOp {
                buf: copy,
                env,
                phase: SendPhase::Queued,
                bsend_reserved,
            };
            let mut internal = Request::new(Op::Send(op));
            internal.detached = true; // released (and its reservation returned) once on the wire
            let internal = self.core.requests.insert(internal);
            self.submit(dest_world, Out::Send(internal));
            return Ok(self.install_completed(into, Status::empty()));
        }
        let op = SendOp {
            buf,
            env,
            phase: SendPhase::Queued,
            bsend_reserved: 0,
        };
        let id = self.core.install(into, Op::Send(op));
        if let Some(req) = self.core.requests.get_mut(id) {
            req.peer = dest_world as u32;
            req.cancel = SendCancel::No;
        }
        self.submit(dest_world, Out::Send(id));
        Ok(id)
    }

    /// A request that is already complete with `status` (PROC_NULL peers, buffered sends).
    fn install_completed(&mut self, into: Option<RequestId>, status: Status) -> RequestId {
        let id = self.core.install(into, Op::Null);
        self.core.complete(id, status);
        id
    }

    /// Blocking send (`MPI_Send`, `MPI_Ssend`, `MPI_Bsend`, `MPI_Rsend`).
    #[allow(clippy::too_many_arguments)] // the MPI call's own parameter list
    pub fn send(
        &mut self,
        buf: SendBuf,
        count: usize,
        dt: Datatype,
        dest: i32,
        tag: i32,
        comm: CommId,
        mode: SendMode,
    ) -> Result<()> {
        let mut out = self.out_buf(buf, count, &dt)?;
        if matches!(mode, SendMode::Standard | SendMode::Ready)
            && self.try_send_eager_now(&mut out, dest, tag, comm)
        {
            return Ok(());
        }
        let id = self.start_user_send(out, dest, tag, comm, mode, None)?;
        self.wait(id).map(|_| ())
    }

    /// `MPI_Send` of a dense buffer as one eager packet, with no request and no datatype (the
    /// `fast` calls of reflex-mpi). False when the general path must run, nothing having been
    /// done: a rank out of range or `MPI_PROC_NULL`, an unknown communicator, a message above the
    /// peer's eager limit, work queued for the peer, a full ring, a self-send.
    #[inline]
    pub fn send_bytes_eager(&mut self, buf: SendBuf, dest: i32, tag: i32, comm: CommId) -> bool {
        let body = buf.as_slice();
        let Some((index, gather, env)) = self.eager_route(body.len(), dest, tag, comm) else {
            return false;
        };
        if send_dense_eager(&mut self.fabric, index, gather, &env, body).is_err() {
            return false;
        }
        if !gather {
            self.core.stats.packed += body.len() as u64;
        }
        self.core.traffic.sent(env.len);
        true
    }

    /// `MPI_Isend` of a dense buffer whose eager packet goes out at once: the request is complete
    /// from the start, and is the shared [`RequestId::SENT`] (no request of its own is made).
    /// `None` when the general path must run (as [`Engine::send_bytes_eager`]).
    #[inline]
    pub fn isend_bytes_eager(
        &mut self,
        buf: SendBuf,
        dest: i32,
        tag: i32,
        comm: CommId,
    ) -> Option<RequestId> {
        self.send_bytes_eager(buf, dest, tag, comm)
            .then_some(RequestId::SENT)
    }

    /// `MPI_Irecv` into a dense buffer: the request built in its slot and queued (or matched
    /// against the unexpected queue at once). `None`, nothing done, for an unknown communicator,
    /// an invalid source or `MPI_PROC_NULL`: the general path answers them.
    #[inline]
    pub fn irecv_bytes(
        &mut self,
        buf: RecvBuf,
        source: i32,
        tag: i32,
        comm: CommId,
    ) -> Option<RequestId> {
        let c = self.comms.find(comm)?;
        if source == PROC_NULL || c.check_source(source).is_err() {
            return None;
        }
        let ctx = c.ctx;
        let op = RecvOp {
            buf: InBuf::User(buf),
            source,
            tag,
            phase: RecvPhase::Posted,
            upstream_failed: false,
        };
        let id = self.core.requests.insert(Request::new(Op::Recv(op)));
        self.core.post_recv(id, ctx, source, tag);
        Some(id)
    }

    /// Where an eager packet of `len` bytes to `dest` of `comm` may go at once, with no request:
    /// the transport index, whether the transport gathers, and the envelope. `None` when the
    /// general path must decide (an unknown communicator, `PROC_NULL` or a rank out of range, a
    /// message above the peer's eager limit, work queued for the peer, a self-send).
    #[inline]
    fn eager_route(
        &self,
        len: usize,
        dest: i32,
        tag: i32,
        comm: CommId,
    ) -> Option<(usize, bool, Envelope)> {
        if len > self.paths.eager_max {
            return None;
        }
        let c = self.comms.find(comm)?;
        let dest_world = c.peer_world(dest)?;
        let limits = self.paths.of(dest_world);
        if dest_world == self.core.me
            || len > limits.eager
            || !self.core.outbox[dest_world].is_empty()
        {
            return None;
        }
        let env = Envelope {
            ctx: c.ctx,
            src: c.rank,
            tag,
            len: len as u64,
            sreq: 0,
            flags: 0,
        };
        Some((self.route[dest_world], limits.gather, env))
    }

    /// The hot path of `MPI_Send`: a message that fits one eager packet, to a peer with nothing
    /// queued ahead of it, goes straight into the transport with no request. Returns false when
    /// the general path must be taken (large message, queued work, full ring, self-send; the
    /// general path reports a bad rank or communicator).
    #[inline]
    fn try_send_eager_now(&mut self, buf: &mut OutBuf, dest: i32, tag: i32, comm: CommId) -> bool {
        let Some((index, gather, env)) = self.eager_route(buf.len(), dest, tag, comm) else {
            return false;
        };
        let stats = &mut self.core.stats;
        let sent = try_send_eager(&mut self.fabric, index, gather, &env, buf, stats).is_ok();
        if sent {
            self.core.traffic.sent(env.len);
        }
        sent
    }

    /// Starts a receive of up to `count` elements of `dt` into `buf` (`MPI_Irecv`).
    pub fn irecv(
        &mut self,
        buf: RecvBuf,
        count: usize,
        dt: Datatype,
        source: i32,
        tag: i32,
        comm: CommId,
    ) -> Result<RequestId> {
        let inb = self.in_buf(buf, count, &dt)?;
        self.start_user_recv(inb, source, tag, comm, None)
    }

    fn start_user_recv(
        &mut self,
        buf: InBuf,
        source: i32,
        tag: i32,
        comm: CommId,
        into: Option<RequestId>,
    ) -> Result<RequestId> {
        let c = self.comms.get(comm)?;
        c.check_source(source)?;
        if source == PROC_NULL {
            return Ok(self.install_completed(into, null_status()));
        }
        let ctx = c.ctx;
        let id = self.core.new_recv(buf, source, tag, into);
        self.core.post_recv(id, ctx, source, tag);
        Ok(id)
    }

    /// Blocking receive (`MPI_Recv`): the direct path when nothing could match ahead of it.
    pub fn recv(
        &mut self,
        buf: RecvBuf,
        count: usize,
        dt: Datatype,
        source: i32,
        tag: i32,
        comm: CommId,
    ) -> Result<Status> {
        if dt.is_dense() {
            let len = check_span(count, &dt, buf.len())?;
            if let Some(status) = self.recv_bytes_direct(buf.slice(0, len), source, tag, comm) {
                return Ok(status);
            }
        }
        let id = self.irecv(buf, count, dt, source, tag, comm)?;
        self.wait(id)
    }

    /// `MPI_Recv` into a dense buffer with no request: the message taken from the unexpected
    /// queue, or straight from the transport when it arrives eagerly (see `fastpath.rs`). `None`
    /// when the general path must run: an invalid or null source, an unknown communicator, a
    /// rendezvous or synchronous message, an error. Packets that arrived meanwhile were handed to
    /// the protocol core, where the general path finds them.
    #[inline]
    pub fn recv_bytes_direct(
        &mut self,
        buf: RecvBuf,
        source: i32,
        tag: i32,
        comm: CommId,
    ) -> Option<Status> {
        let c = self.comms.get(comm).ok()?;
        c.check_source(source).ok()?;
        let ctx = c.ctx;
        if source == PROC_NULL {
            return None;
        }
        if let Some(i) = self.find_unexpected(ctx, source, tag) {
            return self.take_unexpected_eager(i, buf);
        }
        self.recv_direct(buf, ctx, source, tag).ok().flatten()
    }

    /// Whether `source` may be received from on `comm`: one of its ranks, `MPI_ANY_SOURCE` or
    /// `MPI_PROC_NULL` (the fast `MPI_Sendrecv` asks before it sends).
    #[inline]
    pub fn receives_from(&self, comm: CommId, source: i32) -> bool {
        self.comms
            .find(comm)
            .is_some_and(|c| c.check_source(source).is_ok())
    }

    /// `MPI_Iprobe`: the status of the first matching unexpected message, if any.
    pub fn iprobe(&mut self, source: i32, tag: i32, comm: CommId) -> Result<Option<Status>> {
        let (ctx, source) = self.probe_pattern(source, comm)?;
        if source == PROC_NULL {
            return Ok(Some(null_status()));
        }
        self.poll()?;
        Ok(self
            .find_unexpected(ctx, source, tag)
            .map(|i| probe_status(&self.core.unexpected[i])))
    }

    /// `MPI_Probe`: waits for a matching message and returns its status.
    pub fn probe(&mut self, source: i32, tag: i32, comm: CommId) -> Result<Status> {
        let (ctx, source) = self.probe_pattern(source, comm)?;
        if source == PROC_NULL {
            return Ok(null_status());
        }
        self.wait_until(|e| e.find_unexpected(ctx, source, tag).is_some())?;
        let i = self
            .find_unexpected(ctx, source, tag)
            .expect("waited for it");
        Ok(probe_status(&self.core.unexpected[i]))
    }

    /// `MPI_Improbe`: takes the first matching message, if any.
    pub fn improbe(
        &mut self,
        source: i32,
        tag: i32,
        comm: CommId,
    ) -> Result<Option<(Message, Status)>> {
        let (ctx, source) = self.probe_pattern(source, comm)?;
        if source == PROC_NULL {
            return Ok(Some((Message::NoProc, null_status())));
        }
        self.poll()?;
        Ok(self
            .find_unexpected(ctx, source, tag)
            .map(|i| self.take_message(i)))
    }

    /// `MPI_Mprobe`: waits for and takes a matching message.
    pub fn mprobe(&mut self, source: i32, tag: i32, comm: CommId) -> Result<(Message, Status)> {
        let (ctx, source) = self.probe_pattern(source, comm)?;
        if source == PROC_NULL {
            return Ok((Message::NoProc, null_status()));
        }
        self.wait_until(|e| e.find_unexpected(ctx, source, tag).is_some())?;
        let i = self
            .find_unexpected(ctx, source, tag)
            .expect("waited for it");
        Ok(self.take_message(i))
    }

    /// `MPI_Imrecv`: receives a message taken by a matched probe.
    pub fn imrecv(
        &mut self,
        buf: RecvBuf,
        count: usize,
        dt: Datatype,
        message: Message,
    ) -> Result<RequestId> {
        let inb = self.in_buf(buf, count, &dt)?;
        let id = match message {
            Message::NoProc => {
                return Ok(self.core.requests.insert(Request::completed(null_status())))
            }
            Message::Id(m) => m,
        };
        let msg = self.messages.take(id).ok_or_else(|| {
            MpiError::new(
                ErrorClass::Request,
                format!("message handle {id} was already received or never existed"),
            )
        })?;
        let rid = self
            .core
            .new_recv(inb, msg.env.src as i32, msg.env.tag, None);
        self.core.deliver_unexpected(rid, msg);
        Ok(rid)
    }

    /// `MPI_Mrecv`.
    pub fn mrecv(
        &mut self,
        buf: RecvBuf,
        count: usize,
        dt: Datatype,
        message: Message,
    ) -> Result<Status> {
        let id = self.imrecv(buf, count, dt, message)?;
        self.wait(id)
    }

    fn probe_pattern(&self, source: i32, comm: CommId) -> Result<(u32, i32)> {
        let c = self.comms.get(comm)?;
        c.check_source(source)?;
        Ok((c.ctx, source))
    }

    fn find_unexpected(&self, ctx: u32, source: i32, tag: i32) -> Option<usize> {
        self.core
            .unexpected
            .iter()
            .position(|u| crate::core::pattern_matches(ctx, source, tag, &u.env))
    }

    fn take_message(&mut self, index: usize) -> (Message, Status) {
        let msg = self
            .core
            .unexpected
            .remove(index)
            .expect("index is in range");
        let status = probe_status(&msg);
        (Message::Id(self.messages.insert(msg)), status)
    }

    /// `MPI_Send_init` family: a persistent send, inactive until started.
    #[allow(clippy::too_many_arguments)] // the MPI call's own parameter list
    pub fn send_init(
        &mut self,
        buf: SendBuf,
        count: usize,
        dt: Datatype,
        dest: i32,
        tag: i32,
        comm: CommId,
        mode: SendMode,
    ) -> Result<RequestId> {
        check_span(count, &dt, buf.len())?;
        self.comms.get(comm)?.check_rank(dest, "destination")?;
        let template = Persistent::Send {
            buf,
            count,
            dt,
            dest,
            tag,
            comm: comm.0,
            mode,
        };
        Ok(self.insert_persistent(template))
    }

    /// `MPI_Recv_init`: a persistent receive, inactive until started.
    pub fn recv_init(
        &mut self,
        buf: RecvBuf,
        count: usize,
        dt: Datatype,
        source: i32,
        tag: i32,
        comm: CommId,
    ) -> Result<RequestId> {
        check_span(count, &dt, buf.len())?;
        check_no_overlap(count, &dt)?;
        let c = self.comms.get(comm)?;
        c.check_source(source)?;
        let template = Persistent::Recv {
            buf,
            count,
            dt,
            source,
            tag,
            comm: comm.0,
        };
        Ok(self.insert_persistent(template))
    }

    pub(crate) fn insert_persistent(&mut self, template: Persistent) -> RequestId {
        let mut req = Request::completed(Status::empty());
        req.persistent = Some(Box::new(template));
        req.active = false;
        self.core.requests.insert(req)
    }

    /// `MPI_Start`: activates a persistent request.
    pub fn start(&mut self, id: RequestId) -> Result<()> {
        let req = self.core.requests.get(id).ok_or_else(|| bad_request(id))?;
        let Some(template) = req.persistent.as_deref().cloned() else {
            return Err(MpiError::new(
                ErrorClass::Request,
                "MPI_Start needs a persistent request",
            ));
        };
        if req.active {
            return Err(MpiError::new(
                ErrorClass::Request,
                "MPI_Start on a persistent request that is still active",
            ));
        }
        match template {
            Persistent::Send {
                buf,
                count,
                dt,
                dest,
                tag,
                comm,
                mode,
            } => {
                let out = self.out_buf(buf, count, &dt)?;
                self.start_user_send(out, dest, tag, CommId(comm), mode, Some(id))?
            }
            Persistent::Recv {
                buf,
                count,
                dt,
                source,
                tag,
                comm,
            } => {
                let inb = self.in_buf(buf, count, &dt)?;
                self.start_user_recv(inb, source, tag, CommId(comm), Some(id))?
            }
            Persistent::Coll(sched) => self.start_schedule(sched.fresh(), Some(id))?,
            Persistent::Part => return self.part_start(id),
        };
        Ok(())
    }

    /// `MPI_Request_free`: the application drops its handle; the operation still completes.
    /// Returns the callbacks of a complete generalized request, released now: its `free_fn` is
    /// due (else `MPI_Grequest_complete` hands them back later).
    pub fn request_free(&mut self, id: RequestId) -> Result<Option<Hooks>> {
        if id == RequestId::SENT {
            return Ok(None); // complete, and shared: nothing to release
        }
        let req = self
            .core
            .requests
            .get_mut(id)
            .ok_or_else(|| bad_request(id))?;
        if let Op::Pair { .. } = req.op {
            self.release_parts(id);
            self.core.requests.remove(id);
            return Ok(None);
        }
        req.detached = true;
        if !req.complete {
            return Ok(None);
        }
        let hooks = match &req.op {
            Op::Generalized(hooks) => Some(hooks.clone()),
            _ => None,
        };
        let partitioned = matches!(req.persistent.as_deref(), Some(Persistent::Part));
        self.core.release(id);
        if partitioned {
            self.part_free(id);
        }
        Ok(hooks)
    }

    /// `MPI_Buffer_attach`.
    pub fn buffer_attach(&mut self, addr: usize, size: usize) -> Result<()> {
        self.core.bsend.attach(addr, size)
    }

    /// `MPI_Buffer_detach`: waits until every buffered message is on its way, then returns the buffer.
    pub fn buffer_detach(&mut self) -> Result<(usize, usize)> {
        self.wait_for(Self::buffer_detach_try)
    }

    /// `MPI_Buffer_detach` without waiting: the buffer once every buffered message is on its way
    /// (`None` until then).
    pub fn buffer_detach_try(&mut self) -> Result<Option<(usize, usize)>> {
        if self.core.bsend.used > 0 {
            return Ok(None);
        }
        let detached = self.core.bsend.detach();
        detached
            .map(Some)
            .ok_or_else(|| MpiError::new(ErrorClass::Buffer, "no buffer is attached"))
    }
}

pub(crate) fn bad_request(id: RequestId) -> MpiError {
    MpiError::new(
        ErrorClass::Request,
        format!(
            "request {} does not exist (already completed or freed?)",
            id.0
        ),
    )
}
