//! Collective schedules: a collective compiled into rounds of steps, advanced by the progress
//! engine (the design of libNBC and MPICH's transport schedules).
//!
//! A [`Schedule`] is a list of rounds. Entering a round runs its steps in order: local steps
//! (pack into a temporary, unpack out of one, combine two temporaries with the reduction
//! operation, copy between user blocks) happen at once; send and receive steps post internal
//! point-to-point requests on the communicator's collective context. A round is over when all its
//! requests have completed; then the next one starts. Blocking, nonblocking and persistent
//! collectives are all the same schedule: blocking ones start it and wait, nonblocking ones hand
//! out its request, persistent ones keep a template and start a copy on every `MPI_Start`.
//!
//! Temporaries are engine-owned vectors that move into the requests that send or receive them
//! and come back when those complete, so no step ever aliases memory the engine does not own and
//! no data is copied to give it to the transport. Every collective started on a communicator
//! takes the next sequence number of that communicator, carried in the tags of its messages, so
//! any number of nonblocking collectives may be in flight at once without their messages ever
//! matching each other's receives (MPI requires the same order of collective calls on every rank,
//! which makes the numbers agree).

use super::spec::{RecvData, Reducer, SendData};
use crate::comm::{Comm, CommId};
use crate::datatype::{typed, Basic};
use crate::engine::Engine;
use crate::error::{ErrorClass, MpiError, Result};
use crate::packet::{self, Envelope};
use crate::request::{InBuf, Op, OutBuf, Request, RequestId, SendMode, Status, PROC_NULL};
use reflex_base::transport::Transport;
use std::sync::Arc;

/// Index of a temporary buffer of a schedule.
pub(crate) type TempId = usize;

/// Tags of schedule messages: this bit set, then 20 bits of sequence number and 8 of step tag
/// (fixed internal exchanges such as communicator creation use small tags below it).
const TAG_BASE: i32 = 0x1000_0000;

/// The tag of step tag `step` of the collective with sequence number `seq` (also used by
/// `crate::comm_idup`, which takes a sequence number as a nonblocking collective does).
pub(crate) fn schedule_tag(seq: u32, step: u8) -> i32 {
    TAG_BASE | (((seq & 0xF_FFFF) as i32) << 8) | i32::from(step)
}

/// What a send step reads.
#[derive(Debug, Clone)]
pub(crate) enum Src {
    /// A zero-byte message (synchronisation only).
    Empty,
    /// Application data.
    User(SendData),
    /// A whole temporary (lent to the send, back when it completes).
    Temp(TempId),
    /// Part of a temporary (copied, so several may be in flight at once).
    TempPart(TempId, usize, usize),
}

/// Where a receive step writes.
#[derive(Debug, Clone)]
pub(crate) enum Dst {
    /// A zero-byte message.
    Empty,
    /// Application memory.
    User(RecvData),
    /// A whole temporary (lent to the receive, back when it completes).
    Temp(TempId),
}

/// One step of a round.
#[derive(Debug, Clone)]
pub(crate) enum Step {
    /// Send to communicator rank `peer`, with step tag `tag`.
    Send { peer: usize, tag: u8, src: Src },
    /// Receive from communicator rank `peer`, with step tag `tag`.
    Recv { peer: usize, tag: u8, dst: Dst },
    /// Pack application data into a temporary.
    Pack { from: SendData, to: TempId },
    /// Unpack a temporary, from byte `offset` on, into application memory.
    Unpack {
        from: TempId,
        offset: usize,
        to: RecvData,
    },
    /// Copy application data into application memory (a rank's own block).
    Copy { from: SendData, to: RecvData },
    /// Copy one temporary into another of the same size.
    Dup { from: TempId, to: TempId },
    /// Copy all of temporary `from` into `to` from byte `at` on.
    Splice { from: TempId, to: TempId, at: usize },
    /// Fill all of temporary `to` from `from`, starting at byte `at`.
    Extract { from: TempId, at: usize, to: TempId },
    /// `upper = lower op upper` on `count` elements; with `into_lower` the result is then swapped
    /// into `lower` (so either operand can accumulate while keeping the operand order).
    Combine {
        lower: TempId,
        upper: TempId,
        count: usize,
        into_lower: bool,
    },
}

/// A collective in rounds, with its communicator and temporaries.
///
/// Peers are numbered `0..local_size` in the local group, then on through the remote group of
/// an intercommunicator; the two halves travel on different contexts, since a sender's rank is
/// its rank in its own group either way.
#[derive(Debug, Clone)]
pub(crate) struct Schedule {
    comm: CommId,
    /// Collective context inside the local group.
    ctx: u32,
    /// Collective context between the groups of an intercommunicator.
    remote_ctx: u32,
    /// World ranks of the local group, then of the remote group.
    members: Arc<[u32]>,
    local_size: usize,
    rank: usize,
    rounds: Vec<Vec<Step>>,
    temp_lens: Vec<usize>,
    reducer: Option<(Reducer, Option<Basic>)>,
    // Run-time state (empty in a template).
    temps: Vec<Option<Vec<u8>>>,
    seq: u32,
    next: usize,
    pending: Vec<(RequestId, Option<TempId>)>,
    /// The first transfer that failed; reported when the schedule completes.
    failed: Option<MpiError>,
}

/// Builds a [`Schedule`] round by round.
#[derive(Debug)]
pub(crate) struct Builder {
    sched: Schedule,
    round: Vec<Step>,
    /// This process's rank in the communicator (its local group).
    pub(crate) rank: usize,
    /// Ranks in the communicator (its local group).
    pub(crate) size: usize,
    /// Ranks in the remote group of an intercommunicator (0 otherwise).
    pub(crate) remote_size: usize,
}

impl Builder {
    /// A schedule on communicator `id`, described by `comm`, for this process.
    pub(crate) fn new(id: CommId, comm: &Comm) -> Self {
        let (size, remote) = (comm.size(), comm.remote.as_ref());
        let remote_size = remote.map_or(0, |g| g.size());
        let members = comm.group.members.iter();
        let members = members.chain(remote.iter().flat_map(|g| g.members.iter()));
        Builder {
            sched: Schedule {
                comm: id,
                ctx: comm.local_coll_ctx(),
                remote_ctx: comm.ctx + 1,
                members: members.copied().collect(),
                local_size: size,
                rank: comm.rank as usize,
                rounds: Vec::new(),
                temp_lens: Vec::new(),
                reducer: None,
                temps: Vec::new(),
                seq: 0,
                next: 0,
                pending: Vec::new(),
                failed: None,
            },
            round: Vec::new(),
            rank: comm.rank as usize,
            size,
            remote_size,
        }
    }

    /// The peer number of rank `r` of the remote group.
    pub(crate) fn remote(&self, r: usize) -> usize {
        self.size + r
    }

    /// Sets the reduction operation of `Combine` steps (`basic`: the element type of a
    /// predefined operation).
    pub(crate) fn reducer(&mut self, op: Reducer, basic: Option<Basic>) {
        self.sched.reducer = Some((op, basic));
    }

    /// A new temporary of `len` bytes.
    pub(crate) fn temp(&mut self, len: usize) -> TempId {
        self.sched.temp_lens.push(len);
        self.sched.temp_lens.len() - 1
    }

    /// Adds a step to the current round.
    pub(crate) fn step(&mut self, step: Step) {
        self.round.push(step);
    }

    /// Sends `src` to `peer`.
    pub(crate) fn send(&mut self, peer: usize, tag: u8, src: Src) {
        self.step(Step::Send { peer, tag, src });
    }

    /// Receives from `peer` into `dst`.
    pub(crate) fn recv(&mut self, peer: usize, tag: u8, dst: Dst) {
        self.step(Step::Recv { peer, tag, dst });
    }

    /// Closes the current round (steps added later wait for its transfers).
    pub(crate) fn end_round(&mut self) {
        if !self.round.is_empty() {
            self.sched.rounds.push(std::mem::take(&mut self.round));
        }
    }

    /// The finished schedule.
    pub(crate) fn finish(mut self) -> Schedule {
        self.end_round();
        self.sched
    }
}

fn in_use(t: TempId) -> MpiError {
    MpiError::new(
        ErrorClass::Intern,
        format!("collective temporary {t} is in use by a transfer"),
    )
}

/// The error of a finished receive that brought fewer bytes than its block or temporary holds
/// (every temporary is sized for exactly what its sender sends when the ranks' arguments
/// agree): the sender's type signature differs from this rank's (MPI-3.1 §5.1 asks them to
/// match; a longer one is a truncation, reported by the receive itself). Without this check a
/// short contribution would leave stale bytes in a temporary that is then reduced or spliced.
fn short_block(req: &Request) -> Option<MpiError> {
    let Op::Recv(r) = &req.op else {
        return None;
    };
    let (have, room) = (req.status.bytes, r.buf.capacity());
    (have != room && req.status.source != PROC_NULL).then(|| {
        MpiError::new(
            ErrorClass::Truncate,
            format!(
                "collective arguments differ across ranks: rank {} sent {have} bytes for a \
                 block of {room}",
                req.status.source
            ),
        )
    })
}

/// The error of a finished receive whose sender's part of the collective had failed before it
/// sent ([`packet::FLAG_UPSTREAM_FAILED`]): the data may be anything, and this rank must not
/// report success with it.
fn upstream_failure(req: &Request) -> Option<MpiError> {
    let Op::Recv(r) = &req.op else {
        return None;
    };
    r.upstream_failed.then(|| {
        MpiError::new(
            ErrorClass::Other,
            format!(
                "collective failed upstream: rank {} had an error (arguments that differ \
                 across ranks) before it sent this rank its data",
                req.status.source
            ),
        )
    })
}

/// `MPI_ERR_TRUNCATE` for a rank's own block whose send part packs to `have` bytes and whose
/// receive part holds `room` (MPI-3.1 §5.1: their type signatures must match).
fn own_block_mismatch(have: usize, room: usize) -> MpiError {
    MpiError::new(
        ErrorClass::Truncate,
        format!(
            "collective arguments differ: this rank sends {have} bytes to itself into a block \
             of {room}"
        ),
    )
}

/// `MPI_ERR_TRUNCATE` for a block that does not fit.
fn truncated(have: usize, room: usize) -> MpiError {
    MpiError::new(
        ErrorClass::Truncate,
        format!("collective block of {have} bytes does not fit the {room} bytes given for it"),
    )
}

impl Schedule {
    /// The context of messages to and from `peer`, and the rank that peer sends as.
    fn address(&self, peer: usize) -> (u32, i32) {
        match peer.checked_sub(self.local_size) {
            Some(r) => (self.remote_ctx, r as i32),
            None => (self.ctx, peer as i32),
        }
    }

    /// A fresh copy ready to run (persistent requests start one per `MPI_Start`).
    pub(crate) fn fresh(&self) -> Schedule {
        Schedule {
            temps: Vec::new(),
            seq: 0,
            next: 0,
            pending: Vec::new(),
            failed: None,
            ..self.clone()
        }
    }

    fn temp(&mut self, t: TempId) -> Result<&mut Vec<u8>> {
        self.temps[t].as_mut().ok_or_else(|| in_use(t))
    }

    /// Takes temporary `t` out to lend it to a transfer.
    fn lend(&mut self, t: TempId) -> Result<Vec<u8>> {
        self.temps[t].take().ok_or_else(|| in_use(t))
    }

    fn tag(&self, step: u8) -> i32 {
        schedule_tag(self.seq, step)
    }

    /// Runs one local step.
    fn local(&mut self, step: Step, stats: &mut crate::CopyStats) -> Result<()> {
        match step {
            Step::Pack { from, to } => {
                let t = self.temp(to)?;
                let n = typed::pack(&from.dt, from.count, &from.buf, 0, t);
                stats.packed += n as u64;
            }
            Step::Unpack {
                from,
                offset,
                mut to,
            } => {
                let t = self.temp(from)?;
                let want = to.packed_len()?;
                let bytes = t.get(offset..offset + want).ok_or_else(|| {
                    truncated(want, t.len().saturating_sub(offset)) // cannot happen: sized by builder
                })?;
                let n = typed::unpack(&to.dt, to.count, &mut to.buf, 0, bytes);
                stats.unpacked += n as u64;
            }
            Step::Copy { from, mut to } => {
                let (have, room) = (from.packed_len()?, to.packed_len()?);
                if have != room {
                    // This rank's send and receive signatures differ. The rounds go on, so that
                    // the ranks waiting for this one's data are not left hanging: its messages
                    // now carry FLAG_UPSTREAM_FAILED and fail their receives.
                    self.failed.get_or_insert(own_block_mismatch(have, room));
                    return Ok(());
                }
                let mut tmp = vec![0u8; have];
                typed::pack(&from.dt, from.count, &from.buf, 0, &mut tmp);
                typed::unpack(&to.dt, to.count, &mut to.buf, 0, &tmp);
                stats.packed += have as u64;
                stats.unpacked += have as u64;
            }
            Step::Dup { from, to } => {
                let src = self.temps[from].take().ok_or_else(|| in_use(from))?;
                let copied = self.temp(to).map(|t| t.copy_from_slice(&src));
                self.temps[from] = Some(src);
                copied?;
            }
            Step::Splice { from, to, at } => {
                let src = self.temps[from].take().ok_or_else(|| in_use(from))?;
                let copied = self.temp(to).and_then(|t| {
                    let room = t.len().saturating_sub(at);
                    let into = t.get_mut(at..at + src.len());
                    into.map(|d| d.copy_from_slice(&src))
                        .ok_or_else(|| truncated(src.len(), room))
                });
                self.temps[from] = Some(src);
                copied?;
            }
            Step::Extract { from, at, to } => {
                let src = self.temps[from].take().ok_or_else(|| in_use(from))?;
                let copied = self.temp(to).and_then(|t| {
                    let part = src.get(at..at + t.len());
                    part.map(|p| t.copy_from_slice(p))
                        .ok_or_else(|| truncated(t.len(), src.len().saturating_sub(at)))
                });
                self.temps[from] = Some(src);
                copied?;
            }
            Step::Combine {
                lower,
                upper,
                count,
                into_lower,
            } => {
                let input = self.temps[lower].take();
                let result = self.combine(input.as_deref(), upper, count);
                self.temps[lower] = input;
                result?;
                if into_lower {
                    self.temps.swap(lower, upper);
                }
            }
            Step::Send { .. } | Step::Recv { .. } => unreachable!("transfers are posted"),
        }
        Ok(())
    }

    fn combine(&mut self, input: Option<&[u8]>, upper: TempId, count: usize) -> Result<()> {
        let input = input.ok_or_else(|| MpiError::new(ErrorClass::Intern, "operand in use"))?;
        let (op, basic) = self
            .reducer
            .clone()
            .ok_or_else(|| MpiError::new(ErrorClass::Intern, "schedule has no operation"))?;
        let inout = self.temp(upper)?;
        match (op, basic) {
            (Reducer::Predefined(op), Some(basic)) => {
                crate::op::apply_packed(op, &basic, inout, input)
            }
            (Reducer::User(f), _) => f.reduce(input, inout, count),
            (Reducer::Predefined(_), None) => Err(MpiError::new(
                ErrorClass::Op,
                "predefined operations apply to datatypes of one basic type only",
            )),
        }
    }
}

impl<T: Transport> Engine<T> {
    /// Starts `sched` (in persistent request `into`, if given) and runs it as far as it goes.
    pub(crate) fn start_schedule(
        &mut self,
        mut sched: Schedule,
        into: Option<RequestId>,
    ) -> Result<RequestId> {
        sched.seq = self.comms.next_coll_seq(sched.comm)?;
        self.core.traffic.collectives += 1;
        // Large temporaries come from the engine's pool: fresh pages would cost a page fault
        // each, every time the collective runs.
        let spares = &mut self.core.spares;
        sched.temps = sched
            .temp_lens
            .iter()
            .map(|&n| Some(spares.take(n)))
            .collect();
        let id = self.core.install(into, Op::Coll(Box::new(sched)));
        self.colls.push(id);
        self.advance_schedule(id);
        Ok(id)
    }

    /// Advances every running schedule; returns how many rounds were entered.
    pub(crate) fn advance_schedules(&mut self) -> usize {
        if self.colls.is_empty() || self.advancing {
            return 0;
        }
        self.advancing = true;
        let mut events = 0;
        let mut i = 0;
        while i < self.colls.len() {
            let id = self.colls[i];
            events += self.advance_schedule(id);
            if self.colls.get(i) == Some(&id) {
                i += 1;
            }
        }
        self.advancing = false;
        events
    }

    /// Advances schedule `id` through every round whose transfers are done; completes the
    /// request after the last one. Returns the number of rounds entered.
    fn advance_schedule(&mut self, id: RequestId) -> usize {
        let Some(mut sched) = self.take_schedule(id) else {
            // Not a schedule: a communicator being made or a partitioned request.
            if self.making.contains_key(&id.0) {
                return self.advance_making(id);
            }
            if self.bridging.contains_key(&id.0) {
                return self.advance_bridge(id);
            }
            return self.advance_partitioned(id);
        };
        let mut entered = 0;
        let outcome = loop {
            if !self.transfers_done(&sched) {
                break Ok(false);
            }
            if let Err(e) = self.collect_transfers(&mut sched) {
                // A transfer that failed (a truncated block: arguments that differ across ranks)
                // does not stop the rounds: ranks further down a tree still get what this rank
                // forwards, so they finish (with their own errors) instead of waiting forever.
                sched.failed.get_or_insert(e);
            }
            if sched.next == sched.rounds.len() {
                break Ok(true);
            }
            let round = std::mem::take(&mut sched.rounds[sched.next]);
            sched.next += 1;
            entered += 1;
            if let Err(e) = self.enter_round(&mut sched, round) {
                break Err(e);
            }
        };
        match outcome {
            Ok(false) => {
                if let Some(req) = self.core.requests.get_mut(id) {
                    req.op = Op::Coll(sched);
                }
            }
            Ok(true) => {
                let status = Status {
                    error: sched.failed.take().map(Box::new),
                    ..Status::empty()
                };
                self.finish_schedule(id, &mut sched, status);
            }
            Err(e) => {
                self.abandon_transfers(&mut sched);
                let status = Status {
                    error: Some(Box::new(e)),
                    ..Status::empty()
                };
                self.finish_schedule(id, &mut sched, status);
            }
        }
        entered
    }

    fn take_schedule(&mut self, id: RequestId) -> Option<Box<Schedule>> {
        let req = self.core.requests.get_mut(id)?;
        match std::mem::replace(&mut req.op, Op::Null) {
            Op::Coll(s) => Some(s),
            other => {
                req.op = other;
                None
            }
        }
    }

    fn finish_schedule(&mut self, id: RequestId, sched: &mut Schedule, status: Status) {
        for temp in sched.temps.drain(..).flatten() {
            self.core.spares.give(temp);
        }
        self.colls.retain(|&c| c != id);
        self.core.complete(id, status);
    }

    fn transfers_done(&self, sched: &Schedule) -> bool {
        sched
            .pending
            .iter()
            .all(|(r, _)| self.core.requests.get(*r).is_none_or(|r| r.complete))
    }

    /// Retires the finished transfers of a round, taking lent temporaries back.
    fn collect_transfers(&mut self, sched: &mut Schedule) -> Result<()> {
        let mut first_error = None;
        for (rid, back) in std::mem::take(&mut sched.pending) {
            let Some(req) = self.core.requests.remove(rid) else {
                continue;
            };
            if let Some(e) = &req.status.error {
                first_error.get_or_insert(MpiError::new(
                    e.class,
                    format!("collective arguments differ across ranks: {}", e.message),
                ));
            } else if let Some(e) = upstream_failure(&req).or_else(|| short_block(&req)) {
                first_error.get_or_insert(e);
            }
            if let (Some(t), Some(v)) = (back, owned_buffer(req)) {
                sched.temps[t] = Some(v);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// Transfers still in flight after an error are left to finish on their own.
    fn abandon_transfers(&mut self, sched: &mut Schedule) {
        for (rid, _) in std::mem::take(&mut sched.pending) {
            if let Some(req) = self.core.requests.get_mut(rid) {
                req.detached = true;
                if req.complete {
                    self.core.release(rid);
                }
            }
        }
    }

    fn enter_round(&mut self, sched: &mut Schedule, round: Vec<Step>) -> Result<()> {
        for step in round {
            match step {
                Step::Send { peer, tag, src } => self.post_send(sched, peer, tag, src)?,
                Step::Recv { peer, tag, dst } => self.post_recv(sched, peer, tag, dst)?,
                local => sched.local(local, &mut self.core.stats)?,
            }
        }
        Ok(())
    }

    fn post_send(&mut self, sched: &mut Schedule, peer: usize, tag: u8, src: Src) -> Result<()> {
        let (buf, back) = match src {
            Src::Empty => (OutBuf::Owned(Vec::new()), None),
            Src::User(d) => (self.out_buf(d.buf, d.count, &d.dt)?, None),
            Src::Temp(t) => (OutBuf::Owned(sched.lend(t)?), Some(t)),
            Src::TempPart(t, off, len) => {
                (OutBuf::Owned(sched.temp(t)?[off..off + len].to_vec()), None)
            }
        };
        let (ctx, _) = sched.address(peer);
        let env = Envelope {
            ctx,
            src: sched.rank as u32,
            tag: sched.tag(tag),
            len: buf.len() as u64,
            sreq: 0,
            flags: if sched.failed.is_some() {
                packet::FLAG_UPSTREAM_FAILED
            } else {
                0
            },
        };
        let dest = sched.members[peer] as usize;
        let rid = self.start_send(buf, dest, env, SendMode::Standard, None)?;
        sched.pending.push((rid, back));
        Ok(())
    }

    fn post_recv(&mut self, sched: &mut Schedule, peer: usize, tag: u8, dst: Dst) -> Result<()> {
        let (buf, back) = match dst {
            Dst::Empty => (InBuf::Owned(Vec::new()), None),
            Dst::User(d) => (self.in_buf(d.buf, d.count, &d.dt)?, None),
            Dst::Temp(t) => (InBuf::Owned(sched.lend(t)?), Some(t)),
        };
        let tag = sched.tag(tag);
        let (ctx, source) = sched.address(peer);
        let rid = self.core.new_recv(buf, source, tag, None);
        self.core.post_recv(rid, ctx, source, tag);
        sched.pending.push((rid, back));
        Ok(())
    }
}

/// The engine-owned buffer a finished transfer held.
fn owned_buffer(req: Request) -> Option<Vec<u8>> {
    match req.op {
        Op::Send(s) => match s.buf {
            OutBuf::Owned(v) => Some(v),
            _ => None,
        },
        Op::Recv(r) => match r.buf {
            InBuf::Owned(v) => Some(v),
            _ => None,
        },
        _ => None,
    }
}
