//! The engine object: transport + protocol core + communicators, and the progress loop.
//!
//! Progress is explicit (no thread): every blocking call spins on [`Engine::progress`], which drains
//! the loopback queue (messages to self), polls the transport, and pushes queued work into the
//! transport as room appears. Waiting is spin-then-block, as DESIGN.md asks: a bounded number of
//! empty polls, then a bounded number of `sched_yield`s, then a futex sleep on the transport's
//! doorbell (a sender rings it). With more ranks than cores the spin budget shrinks, so an idle rank
//! hands its core to one that has work instead of burning its time slice.

use crate::comm::{Comm, Comms, Groups};
use crate::core::{Core, Out};
use crate::error::{ErrorClass, MpiError, Result};
use crate::packet::{self, Envelope};
use crate::request::{OutBuf, RequestId, SendPhase};
use reflex_base::transport::{Transport, WouldBlock};
use std::time::Duration;

/// Protocol and waiting parameters (from `reflex_base::config`).
#[derive(Debug, Clone, Copy)]
pub struct Tuning {
    /// Largest message sent eagerly.
    pub eager_limit: usize,
    /// Chunk size of a streamed rendezvous.
    pub chunk: usize,
    /// Largest message sent eagerly to a peer behind a byte stream (TCP).
    pub stream_eager_limit: usize,
    /// Chunk size of a streamed rendezvous to a peer behind a byte stream.
    pub stream_chunk: usize,
    /// Empty polls before yielding (the first half back to back, the second with PAUSE).
    pub spin_polls: u32,
    /// Yields before sleeping on the doorbell.
    pub yield_polls: u32,
    /// Longest single doorbell sleep.
    pub sleep: Duration,
    /// Gather non-contiguous sends straight into the cells (else pack into a temporary first).
    pub direct_send: bool,
    /// Scatter non-contiguous receives straight from the cells (else unpack at completion).
    pub direct_recv: bool,
    /// Smallest average block of a non-contiguous message read in place over iovecs.
    pub iov_min: usize,
    /// Which collective schedules run (`REFLEX_COLL_*`).
    pub coll: crate::coll::select::CollTuning,
    /// Cooperative copy of large messages: its chunk setting (0: by size), `None` when off.
    pub coop_chunk: Option<usize>,
}

/// How long a link must have been broken by a failure before a sleeping wait reports it: a
/// dying rank's links break too, and its launcher ends the job well within this time.
pub const LINK_FAILURE_GRACE: Duration = Duration::from_secs(3);

impl Default for Tuning {
    fn default() -> Self {
        Self {
            eager_limit: 64 << 10,
            chunk: 16 << 10,
            stream_eager_limit: 64 << 10,
            stream_chunk: 512 << 10,
            spin_polls: 1000,
            yield_polls: 100,
            sleep: Duration::from_millis(1),
            direct_send: true,
            direct_recv: true,
            iov_min: 16 << 10,
            coll: Default::default(),
            coop_chunk: None,
        }
    }
}

/// Lengths of the engine's queues at one moment ([`Engine::queue_lengths`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueLengths {
    /// Messages that arrived before their receive was posted.
    pub unexpected: usize,
    /// Receives posted and not yet matched.
    pub posted: usize,
    /// Sends and control packets waiting for room in the transport.
    pub outbox: usize,
    /// Collective schedules and partitioned requests being advanced.
    pub schedules: usize,
}

/// The MPI engine of one process, generic over its transport (static dispatch on the hot path).
#[derive(Debug)]
pub struct Engine<T: Transport> {
    pub(crate) fabric: T,
    pub(crate) core: Core,
    pub(crate) comms: Comms,
    pub(crate) groups: Groups,
    pub(crate) tuning: Tuning,
    /// Transport index of each world rank.
    pub(crate) route: Vec<usize>,
    /// World rank of each transport index (the inverse of `route`).
    pub(crate) world_of_index: Vec<usize>,
    /// Eager limit and chunk size towards each world rank.
    pub(crate) paths: crate::path::PathLimits,
    pub(crate) messages: crate::p2p::Messages,
    /// What progress advances: collective schedules in progress, communicators being made and
    /// active partitioned requests (`crate::partitioned`).
    pub(crate) colls: Vec<crate::request::RequestId>,
    /// The state of partitioned requests.
    pub(crate) parts: crate::partitioned::Parts,
    /// Communicators being made without blocking, by request (`crate::comm_idup`).
    pub(crate) making: std::collections::HashMap<u32, crate::comm_idup::PendingComm>,
    /// Intercommunicators being made by `MPI_Intercomm_create`, by request
    /// (`crate::comm_bridge`).
    pub(crate) bridging: std::collections::HashMap<u32, crate::comm_bridge::PendingBridge>,
    /// What the completed splits and creates made, by request, until taken.
    pub(crate) made: std::collections::HashMap<u32, Option<crate::comm::CommId>>,
    /// Set while schedules are being advanced (sends they post must not re-enter).
    pub(crate) advancing: bool,
    /// Name base of collective boards, when every rank shares this node's memory.
    pub(crate) board_base: Option<String>,
    /// The last operation and type the collective fast path found defined on each other, and
    /// the loop that combines them ([`crate::op::combiner`]).
    pub(crate) op_defined: Option<(
        crate::op::ReduceOp,
        crate::datatype::Basic,
        Option<crate::op::Combine>,
    )>,
    /// One-sided communication windows.
    pub(crate) wins: crate::rma::Windows,
    /// Name base of shared segments this process creates (the node segment's, when there is one).
    pub(crate) segment_base: Option<String>,
    /// How long the next wait spins ([`crate::spin`]).
    pub(crate) spin: crate::spin::SpinBudget,
    /// Every addressable process: this job's ranks, then those of other jobs ([`crate::procs`]).
    pub(crate) procs: crate::procs::Procs,
    /// Ports this process opened (`MPI_Open_port`), for accept.
    pub(crate) ports: crate::dynproc::port::Ports,
}

impl<T: Transport> Engine<T> {
    /// Builds an engine for world rank `me` of `nranks`, reaching rank `r` through transport index
    /// `route[r]`. `single_copy` enables `process_vm_readv` rendezvous.
    pub fn new(fabric: T, me: usize, route: Vec<usize>, tuning: Tuning, single_copy: bool) -> Self {
        let nranks = route.len();
        let mut tuning = tuning;
        tuning.eager_limit = tuning
            .eager_limit
            .min(fabric.max_packet() - packet::EAGER_HEADER);
        tuning.chunk = tuning
            .chunk
            .clamp(1, fabric.max_packet() - packet::DATA_HEADER);
        let mut world_of_index = vec![0; route.iter().max().map_or(0, |m| m + 1)];
        for (world, &index) in route.iter().enumerate() {
            world_of_index[index] = world;
        }
        let paths = crate::path::PathLimits::new(&fabric, me, &route, &tuning);
        let mut engine = Self {
            world_of_index,
            paths,
            fabric,
            core: Core::new(me, nranks, single_copy, tuning.iov_min),
            comms: Comms::default(),
            groups: Groups::default(),
            tuning,
            route,
            messages: Default::default(),
            colls: Vec::new(),
            parts: Default::default(),
            making: Default::default(),
            bridging: Default::default(),
            made: Default::default(),
            advancing: false,
            board_base: None,
            op_defined: None,
            wins: Default::default(),
            segment_base: None,
            spin: crate::spin::SpinBudget::new(tuning.spin_polls),
            procs: crate::procs::Procs::new(0, nranks),
            ports: Default::default(),
        };
        engine.core.coop.chunk = tuning.coop_chunk.filter(|_| single_copy);
        engine.install_predefined_comms(nranks);
        engine
    }

    fn install_predefined_comms(&mut self, nranks: usize) {
        let me = self.core.me as u32;
        let world = crate::comm::Group {
            members: (0..nranks as u32).collect(),
        };
        let own = crate::comm::Group {
            members: vec![me].into(),
        };
        let fatal = crate::ERRORS_ARE_FATAL;
        self.comms.insert(Comm {
            name: "MPI_COMM_WORLD".into(),
            ..Comm::intra(0, me, world.clone(), fatal)
        });
        self.comms.insert(Comm {
            name: "MPI_COMM_SELF".into(),
            ..Comm::intra(2, 0, own, fatal)
        });
        // Same context on every process without an exchange: all install it at start-up.
        self.comms.insert(Comm {
            name: "(sessions)".into(),
            ..Comm::intra(4, me, world, fatal)
        });
        self.comms.next_ctx = 6;
    }

    /// This process's world rank.
    pub fn world_rank(&self) -> usize {
        self.core.me
    }

    /// Number of world ranks.
    pub fn world_size(&self) -> usize {
        self.procs.world()
    }

    /// Names this process's job (its id, `crate::procs::job_id`), before it meets other jobs.
    pub fn set_job(&mut self, job: u64) {
        self.procs.set_job(job);
    }

    /// Makes room for process `index` (of another job, the next free index): its route, its
    /// outbox and its path limits. The transport must reach it once this returns.
    pub(crate) fn grow_to(&mut self, index: usize) {
        debug_assert_eq!(
            index,
            self.route.len(),
            "processes are added in index order"
        );
        self.route.push(index);
        self.world_of_index.push(index);
        self.core.outbox.push(std::collections::VecDeque::new());
        self.paths.push(&self.fabric, index, &self.tuning);
    }

    /// Tuning in effect.
    pub fn tuning(&self) -> Tuning {
        self.tuning
    }

    /// Bytes copied so far, by kind (tests check which path a message took).
    pub fn copy_stats(&self) -> crate::msgbuf::CopyStats {
        self.core.stats
    }

    /// Messages and bytes sent and received so far (tools' counters, `crate::traffic`).
    pub fn traffic(&self) -> crate::traffic::Traffic {
        self.core.traffic
    }

    /// Queue lengths now: (unexpected messages, posted receives, units of work waiting for room
    /// in the transport, collective schedules and partitioned requests in progress).
    pub fn queue_lengths(&self) -> QueueLengths {
        QueueLengths {
            unexpected: self.core.unexpected.len(),
            posted: self.core.posted.len(),
            outbox: self.core.outbox_len,
            schedules: self.colls.len(),
        }
    }

    /// Replaces the collective settings in effect (`MPI_T_cvar_write` of a `REFLEX_COLL_*`
    /// control variable): the next collective this process starts follows them. Every process
    /// must make the same change before its next collective, as the schedules must agree.
    pub fn set_coll_tuning(&mut self, coll: crate::coll::select::CollTuning) {
        self.tuning.coll = coll;
    }

    /// Advances every operation once; returns how many events happened.
    pub fn progress(&mut self) -> usize {
        let mut events = self.drain_loopback();
        let mut arrivals = crate::placement::Arrivals {
            core: &mut self.core,
            world_of: &self.world_of_index,
        };
        events += self.fabric.poll_into(&mut arrivals);
        if self.core.outbox_len > 0 {
            events += self.flush_outbox();
        }
        events + self.advance_background(events)
    }

    /// Advances what progresses besides packets (after a poll that found `events`): nonblocking
    /// collectives, window requests served for others, cooperative copies. Every wait must call
    /// it, the fast receive's included, or a peer waiting for one of them waits forever.
    #[inline]
    pub(crate) fn advance_background(&mut self, events: usize) -> usize {
        let mut more = 0;
        if !self.colls.is_empty() {
            more += self.advance_schedules();
        }
        if self.wins.any_private() {
            more += self.serve_windows();
        }
        if self.core.coop.busy() {
            more += self.advance_coop(events + more == 0);
        }
        more
    }

    /// Names shared segments this process creates (windows) after `base`, so that a launcher
    /// that removes the job's segments removes them too.
    pub fn set_segment_base(&mut self, base: String) {
        self.segment_base = Some(base);
    }

    /// The name base of shared segments this process creates.
    pub(crate) fn segment_base(&self) -> String {
        self.segment_base
            .clone()
            .unwrap_or_else(|| format!("reflex-solo-{}", self.core.pid))
    }

    /// The name base of this node's shared segments, when the launcher set one (the job and the
    /// node: every rank on the node has the same, ranks on other nodes another).
    pub fn node_segment_base(&self) -> Option<&str> {
        self.segment_base.as_deref()
    }

    /// What names this process's shared-memory domain (`MPI_COMM_TYPE_SHARED`): the node's
    /// segment (job and node index, so that emulated nodes on one host stay apart, as the
    /// transports keep them), else the host name.
    pub fn shared_domain(&self) -> String {
        self.segment_base
            .clone()
            .unwrap_or_else(crate::world::host_name)
    }

    /// Reports (once) a protocol error found while polling.
    pub(crate) fn check_fatal(&mut self) -> Result<()> {
        match self.core.fatal.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Progresses until `done` holds, spinning, then yielding, then sleeping on the doorbell.
    pub(crate) fn wait_until(&mut self, mut done: impl FnMut(&Self) -> bool) -> Result<()> {
        self.wait_with(|e| if done(e) { None } else { Some(e.progress()) })
    }

    /// Progresses until `poll` (which advances an operation without waiting) has its result:
    /// the blocking form of the operations that `MPI_THREAD_MULTIPLE` callers poll without the
    /// library lock (window creation, PSCW, locks, `MPI_Buffer_detach`).
    pub fn wait_for<R>(
        &mut self,
        mut poll: impl FnMut(&mut Self) -> Result<Option<R>>,
    ) -> Result<R> {
        let mut outcome = None;
        self.wait_with(|e| match poll(e) {
            Ok(None) => Some(e.progress()),
            done => {
                outcome = Some(done);
                None
            }
        })?;
        match outcome {
            Some(Ok(Some(r))) => Ok(r),
            Some(Err(e)) => Err(e),
            _ => Err(MpiError::new(
                ErrorClass::Intern,
                "a wait ended before its operation did",
            )),
        }
    }

    /// Runs `step` (one round of progress returning its event count, or `None` once the awaited
    /// condition holds) with the spin → yield → sleep policy between rounds that found nothing.
    pub(crate) fn wait_with(
        &mut self,
        mut step: impl FnMut(&mut Self) -> Option<usize>,
    ) -> Result<()> {
        let mut idle: u32 = 0;
        let mut shared = false;
        let mut waited = false;
        loop {
            let Some(events) = step(self) else {
                if waited {
                    self.spin.ended(shared);
                }
                return Ok(());
            };
            waited = true;
            self.check_fatal()?;
            if events > 0 {
                idle = 0;
                continue;
            }
            idle = idle.saturating_add(1);
            let spin = self.spin.polls();
            if idle <= spin / 2 {
                // Poll again at once: no `spin_loop` hint. On this project's 2-core KVM guest a
                // PAUSE costs 60-90 ns even in short bursts between other work (measured
                // 2026-11-26, `bench/README.md`), several poll rounds' worth, and a packet that
                // lands meanwhile waits for it.
                continue;
            }
            if idle <= spin {
                // The second half of the spin with PAUSE, so that a rank still spins about as
                // long as before it yields (on a loaded machine a yield can hand the core away
                // for a whole time slice).
                std::hint::spin_loop();
                continue;
            }
            // Past the spin, before yielding or sleeping: a wait for queued work to a peer whose
            // link failed would yield forever otherwise.
            self.check_links()?;
            if idle <= spin.saturating_add(self.tuning.yield_polls)
                || self.core.outbox_len > 0
                || self.core.coop.awaiting_peer()
            {
                // Queued work waits for the peer to drain a ring, and a cooperative receive for
                // the peer's last chunks: neither rings a doorbell of ours.
                shared |= crate::spin::SpinBudget::yield_cpu();
            } else {
                self.fabric.sleep(self.tuning.sleep);
            }
        }
    }

    /// Fails a wait that would yield or sleep, or a poll that found nothing (`MPI_Test`,
    /// `MPI_Iprobe`, ...: [`Self::poll`]), while a link to a peer is broken by a failure (no
    /// message from that peer can come, and this call may need one): an error of class
    /// `MPI_ERR_OTHER`, raised again by every later such call, so that the job ends under the
    /// default error handler instead of hanging or polling forever.
    pub(crate) fn check_links(&self) -> Result<()> {
        match self.fabric.failed_link(LINK_FAILURE_GRACE) {
            Some((peer, why)) => Err(MpiError::new(
                ErrorClass::Other,
                format!(
                    "the connection to rank {peer} failed ({why}); no message from it can arrive"
                ),
            )),
            None => Ok(()),
        }
    }

    /// Delivers the packets this process sent itself.
    pub(crate) fn drain_loopback(&mut self) -> usize {
        let mut events = 0;
        while let Some(pkt) = self.core.loopback.pop_front() {
            let me = self.core.me;
            self.core.on_packet(me, &pkt);
            events += 1;
        }
        events
    }

    /// Hands queued work to the transport, per destination, until each queue empties or blocks.
    pub(crate) fn flush_outbox(&mut self) -> usize {
        let mut sent = 0;
        for dest in 0..self.core.outbox.len() {
            while let Some(&item) = self.core.outbox[dest].front() {
                match self.emit(dest, item) {
                    Ok(()) => {
                        self.core.outbox[dest].pop_front();
                        self.core.outbox_len -= 1;
                        sent += 1;
                    }
                    Err(WouldBlock) => break,
                }
            }
        }
        sent
    }

    /// Queues `item` for `dest`, or emits it at once when nothing is queued ahead of it.
    pub(crate) fn submit(&mut self, dest: usize, item: Out) {
        if self.core.outbox[dest].is_empty() && self.emit(dest, item).is_ok() {
            return;
        }
        self.core.queue_out(dest, item);
    }

    /// Tries to put one unit of work on the wire.
    fn emit(&mut self, dest: usize, item: Out) -> std::result::Result<(), WouldBlock> {
        let mut wire = Wire {
            fabric: &mut self.fabric,
            loopback: &mut self.core.loopback,
            me: self.core.me,
            index: self.route[dest],
        };
        let mut ctx = EmitCtx {
            requests: &mut self.core.requests,
            stats: &mut self.core.stats,
            limits: self.paths.of(dest),
            pid: self.core.pid,
        };
        let outcome = match item {
            Out::Control(bytes, len) => {
                let len = len as usize;
                return wire.send(dest, len, |b| b.copy_from_slice(&bytes[..len]));
            }
            Out::Send(id) => {
                let done = emit_first_packet(&mut wire, dest, &mut ctx, id)?;
                let awaits = ctx.requests.send_mut(id).map(|s| s.phase);
                if awaits == Some(SendPhase::AwaitReply) && dest != self.core.me {
                    self.core.coop.sent_rts(dest);
                }
                done
            }
            Out::Data(id) => emit_chunks(&mut wire, dest, &mut ctx, id)?,
        };
        if let Some(id) = outcome {
            self.core.complete_send(id);
        }
        Ok(())
    }
}

/// The transport plus the loopback queue: where packets to one destination go.
struct Wire<'a, T> {
    fabric: &'a mut T,
    loopback: &'a mut std::collections::VecDeque<Vec<u8>>,
    me: usize,
    index: usize,
}

impl<T: Transport> Wire<'_, T> {
    fn send(
        &mut self,
        dest: usize,
        len: usize,
        fill: impl FnOnce(&mut [u8]),
    ) -> std::result::Result<(), WouldBlock> {
        if dest == self.me {
            let mut bytes = vec![0u8; len];
            fill(&mut bytes);
            self.loopback.push_back(bytes);
            return Ok(());
        }
        self.fabric.try_send(self.index, len, fill)
    }

    /// Largest packet towards any destination (messages to oneself have no limit).
    fn max_packet(&self) -> usize {
        self.fabric.max_packet()
    }
}

/// What emitting a send needs besides the wire.
struct EmitCtx<'a> {
    requests: &'a mut crate::request::Requests,
    stats: &'a mut crate::msgbuf::CopyStats,
    limits: crate::path::Limits,
    pid: u32,
}

/// Sends the eager packet or the RTS of send `id`; returns the request if it is now complete.
fn emit_first_packet<T: Transport>(
    wire: &mut Wire<'_, T>,
    dest: usize,
    ctx: &mut EmitCtx<'_>,
    id: RequestId,
) -> std::result::Result<Option<RequestId>, WouldBlock> {
    let Some(send) = ctx.requests.send_mut(id) else {
        return Ok(None);
    };
    let mut env: Envelope = send.env;
    env.sreq = id.0;
    let len = send.buf.len();
    if len <= ctx.limits.eager {
        if dest == wire.me {
            wire.send(dest, packet::EAGER_HEADER + len, |b| {
                packet::encode_eager_header(b, &env);
                send.buf.pack(0, &mut b[packet::EAGER_HEADER..], ctx.stats);
            })?;
        } else {
            let gather = ctx.limits.gather;
            try_send_eager(
                wire.fabric,
                wire.index,
                gather,
                &env,
                &mut send.buf,
                ctx.stats,
            )?;
        }
        if env.flags & packet::FLAG_SYNC != 0 {
            send.phase = SendPhase::AwaitAck;
            return Ok(None);
        }
        return Ok(Some(id));
    }
    send_rts(wire, dest, &send.buf, env, ctx.pid)?;
    send.phase = SendPhase::AwaitReply;
    Ok(None)
}

/// Sends the RTS of a large message: the buffer's address, plus the datatype description when it
/// is not contiguous (or, when the description does not fit a packet, a demand to be streamed).
fn send_rts<T: Transport>(
    wire: &mut Wire<'_, T>,
    dest: usize,
    buf: &OutBuf,
    mut env: Envelope,
    pid: u32,
) -> std::result::Result<(), WouldBlock> {
    if let Some(bytes) = buf.contiguous() {
        let addr = bytes.as_ptr() as u64;
        return wire.send(dest, packet::RTS_LEN, |b| {
            packet::encode_rts(b, &env, pid, addr)
        });
    }
    let OutBuf::Typed(t) = buf else {
        return Ok(());
    };
    let program = t.dt.program();
    let described = program
        .as_ref()
        .map(|p| (p, packet::RTS_LEN + crate::datatype::wire::encoded_len(p)))
        .filter(|(_, len)| *len <= wire.max_packet());
    match described {
        Some((p, len)) => {
            let lo = t.dt.span(t.count).map_or(0, |(lo, _)| lo);
            let addr = (t.buf.addr() as u64).wrapping_sub(lo as i64 as u64);
            wire.send(dest, len, |b| {
                packet::encode_rts_typed(b, &env, (pid, addr), p, t.count, t.dt.extent())
            })
        }
        None => {
            env.flags |= packet::FLAG_STREAM_ONLY;
            wire.send(dest, packet::RTS_LEN, |b| {
                packet::encode_rts(b, &env, pid, 0)
            })
        }
    }
}

/// Streams the DATA chunks of send `id` until done (returns it) or the transport is full.
fn emit_chunks<T: Transport>(
    wire: &mut Wire<'_, T>,
    dest: usize,
    ctx: &mut EmitCtx<'_>,
    id: RequestId,
) -> std::result::Result<Option<RequestId>, WouldBlock> {
    let Some(send) = ctx.requests.send_mut(id) else {
        return Ok(None);
    };
    let SendPhase::Streaming {
        mut next,
        peer_req: rreq,
    } = send.phase
    else {
        return Ok(None);
    };
    let total = send.buf.len();
    while next < total {
        let n = ctx.limits.chunk.min(total - next);
        let stats = &mut *ctx.stats;
        let result = match send.buf.contiguous() {
            Some(bytes) if dest != wire.me && ctx.limits.gather => {
                let mut head = [0u8; packet::DATA_HEADER];
                packet::encode_data_header(&mut head, rreq, next as u64);
                wire.fabric
                    .try_send_parts(wire.index, &head, &bytes[next..next + n])
            }
            // Into another process's ring: a copy that another core reads next.
            Some(bytes) if dest != wire.me => {
                let counter = send.buf.copy_counter(stats);
                wire.fabric
                    .try_send(wire.index, packet::DATA_HEADER + n, |b| {
                        let (head, payload) = b.split_at_mut(packet::DATA_HEADER);
                        packet::encode_data_header(head, rreq, next as u64);
                        reflex_base::stream_copy::copy_to_reader(payload, &bytes[next..next + n]);
                        *counter += n as u64;
                    })
            }
            _ => wire.send(dest, packet::DATA_HEADER + n, |b| {
                packet::encode_data_header(b, rreq, next as u64);
                send.buf.pack(next, &mut b[packet::DATA_HEADER..], stats);
            }),
        };
        if result.is_err() {
            send.phase = SendPhase::Streaming {
                next,
                peer_req: rreq,
            };
            return Err(WouldBlock);
        }
        next += n;
    }
    Ok(Some(id))
}

/// Sends an eager packet (header and the whole message) to transport index `index`: a contiguous
/// buffer as [`send_dense_eager`], else packed into the transport.
pub(crate) fn try_send_eager<T: Transport>(
    fabric: &mut T,
    index: usize,
    gather: bool,
    env: &Envelope,
    buf: &mut OutBuf,
    stats: &mut crate::msgbuf::CopyStats,
) -> std::result::Result<(), WouldBlock> {
    if let Some(body) = buf.contiguous() {
        send_dense_eager(fabric, index, gather, env, body)?;
        if !gather {
            *buf.copy_counter(stats) += body.len() as u64;
        }
        return Ok(());
    }
    fabric.try_send(index, packet::EAGER_HEADER + buf.len(), |b| {
        packet::encode_eager_header(b, env);
        buf.pack(0, &mut b[packet::EAGER_HEADER..], stats);
    })
}

/// Sends the eager packet of the contiguous message `body`: handed to the transport by reference
/// when `gather` holds (no copy here), else copied into the transport after its header.
#[inline]
pub(crate) fn send_dense_eager<T: Transport>(
    fabric: &mut T,
    index: usize,
    gather: bool,
    env: &Envelope,
    body: &[u8],
) -> std::result::Result<(), WouldBlock> {
    let head = packet::eager_header(env);
    if gather {
        return fabric.try_send_parts(index, &head, body);
    }
    fabric.try_send(index, packet::EAGER_HEADER + body.len(), |b| {
        let (h, payload) = b.split_at_mut(packet::EAGER_HEADER);
        h.copy_from_slice(&head);
        reflex_base::stream_copy::copy_to_reader(payload, body);
    })
}
