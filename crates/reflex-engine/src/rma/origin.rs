//! The origin's side of `MPI_Put`, `MPI_Get`, `MPI_Accumulate`, `MPI_Get_accumulate`,
//! `MPI_Fetch_and_op`, `MPI_Compare_and_swap` and their request-based forms.
//!
//! Every operation is checked the same way (target rank, epoch, range, matching type
//! signatures), then either done at once in the shared segment, or sent as a request: data that
//! fits goes in the request message (so the origin buffer is free at once), larger data follows
//! as a message of its own, straight from the origin buffer; results (get, fetch) come back as a
//! message received straight into the origin's buffer.

use super::apply::{self, Shape, Sharing};
use super::target::{TAG_DATA, TAG_REQ};
use super::wire::{Kind, Request};
use super::{Memory, WinId, Window};
use crate::datatype::{typed, Basic, Datatype};
use crate::engine::Engine;
use crate::error::{ErrorClass, MpiError, Result};
use crate::op::ReduceOp;
use crate::packet::Envelope;
use crate::request::{OutBuf, Request as Req, RequestId, SendMode, Status, PROC_NULL};
use reflex_base::buf::{RecvBuf, SendBuf};
use reflex_base::transport::Transport;
use reflex_shm::window::WinSegment;
use std::sync::Arc;

/// An application buffer with its count and datatype.
#[derive(Debug, Clone)]
pub struct Side<B> {
    /// The memory (wrapping exactly what the elements touch).
    pub buf: B,
    /// Elements.
    pub count: usize,
    /// Their type.
    pub dt: Datatype,
}

/// Where an operation lands: rank, displacement (in the target's units; an address for a
/// dynamic window), count and datatype.
#[derive(Debug, Clone)]
pub struct Target {
    /// Rank in the window's group (or `MPI_PROC_NULL`).
    pub rank: i32,
    /// `target_disp`.
    pub disp: isize,
    /// Elements at the target.
    pub count: usize,
    /// Their type.
    pub dt: Datatype,
}

/// An operation checked against the window: target rank and where its bytes lie there.
struct Placed {
    rank: usize,
    /// Byte offset of the span in the target's memory (an address for a dynamic window).
    start: u64,
    /// The span's lowest byte relative to the displacement's address.
    lo: isize,
    span: usize,
    /// Packed bytes moved.
    len: usize,
}

fn arg(msg: String) -> MpiError {
    MpiError::new(ErrorClass::Arg, msg)
}

impl<T: Transport> Engine<T> {
    /// `MPI_Put`/`MPI_Rput`; with `request`, also returns a request that completes when the
    /// origin buffer may be reused.
    pub fn rma_put(
        &mut self,
        id: WinId,
        origin: Side<SendBuf>,
        target: Target,
        request: bool,
    ) -> Result<Option<RequestId>> {
        if self.put_direct(id, &origin, &target) {
            return Ok(self.done_request(request));
        }
        let Some(p) = self.place(id, &target)? else {
            return Ok(self.done_request(request));
        };
        check_lengths(&origin.dt, origin.count, p.len, "origin")?;
        if p.len == 0 {
            return Ok(self.done_request(request)); // nothing to move: no message either
        }
        if let Some((mut span, _)) = self.shared_target(id, &p)? {
            if origin.dt.is_dense() && target.dt.is_dense() {
                // The common case is one plain copy, with nothing in between.
                span.as_mut_slice()[..p.len].copy_from_slice(&origin.buf.as_slice()[..p.len]);
            } else {
                let data = packed(&origin);
                with_shape(&target.dt, target.count, p.lo, |s| {
                    apply::write(&mut span, s, &data)
                });
            }
            return Ok(self.done_request(request));
        }
        let req = self.request_of(Kind::Put, &p, ReduceOp::Replace, None);
        let sent = self.send_request(id, &p, req, &target, origin)?;
        Ok(self.link_request(id, sent, request))
    }

    /// `MPI_Get`/`MPI_Rget`; the request completes when the data has arrived.
    pub fn rma_get(
        &mut self,
        id: WinId,
        mut origin: Side<RecvBuf>,
        target: Target,
        request: bool,
    ) -> Result<Option<RequestId>> {
        if self.get_direct(id, &mut origin, &target) {
            return Ok(self.done_request(request));
        }
        let Some(p) = self.place(id, &target)? else {
            return Ok(self.done_request(request));
        };
        check_lengths(&origin.dt, origin.count, p.len, "origin")?;
        if p.len == 0 {
            return Ok(self.done_request(request));
        }
        if let Some((span, _)) = self.shared_target(id, &p)? {
            if origin.dt.is_dense() && target.dt.is_dense() {
                let mut out = origin.buf;
                out.as_mut_slice()[..p.len].copy_from_slice(&span.as_slice()[..p.len]);
                return Ok(self.done_request(request));
            }
            let mut data = vec![0u8; p.len];
            with_shape(&target.dt, target.count, p.lo, |s| {
                apply::read(&span, s, &mut data)
            });
            unpack_into(origin, &data);
            return Ok(self.done_request(request));
        }
        let reply = self.expect_reply(id, p.rank, origin)?;
        let mut req = self.request_of(Kind::Get, &p, ReduceOp::NoOp, None);
        req.reply = reply.1;
        let empty = Side {
            buf: SendBuf::empty(),
            count: 0,
            dt: target.dt.clone(),
        };
        self.send_request(id, &p, req, &target, empty)?;
        Ok(self.link_request(id, Some(reply.0), request))
    }

    /// `MPI_Accumulate`/`MPI_Raccumulate`.
    pub fn rma_accumulate(
        &mut self,
        id: WinId,
        origin: Side<SendBuf>,
        target: Target,
        op: ReduceOp,
        request: bool,
    ) -> Result<Option<RequestId>> {
        let Some(p) = self.place(id, &target)? else {
            return Ok(self.done_request(request));
        };
        check_lengths(&origin.dt, origin.count, p.len, "origin")?;
        if op == ReduceOp::NoOp {
            return Err(MpiError::new(
                ErrorClass::Op,
                "MPI_NO_OP is for MPI_Get_accumulate and MPI_Fetch_and_op only (MPI-3.1 §11.3.4)",
            ));
        }
        let Some(basic) = element_type((&origin.dt, "origin"), &target.dt, p.len)? else {
            return Ok(self.done_request(request));
        };
        if let Some((mut span, seg)) = self.shared_target(id, &p)? {
            let sharing = Sharing::Shared {
                mutex: seg.mutex_word(p.rank),
            };
            let input = packed(&origin);
            with_shape(&target.dt, target.count, p.lo, |s| {
                apply::accumulate(&mut span, s, (op, &basic), &input, false, sharing)
            })?;
            return Ok(self.done_request(request));
        }
        check_basic_op(op, &basic, p.len)?;
        let req = self.request_of(Kind::Acc, &p, op, Some(basic));
        let sent = self.send_request(id, &p, req, &target, origin)?;
        Ok(self.link_request(id, sent, request))
    }

    /// `MPI_Get_accumulate`/`MPI_Rget_accumulate`/`MPI_Fetch_and_op`: the target's old values
    /// come back into `result`.
    pub fn rma_get_accumulate(
        &mut self,
        id: WinId,
        origin: Side<SendBuf>,
        result: Side<RecvBuf>,
        target: Target,
        op: ReduceOp,
        request: bool,
    ) -> Result<Option<RequestId>> {
        let Some(p) = self.place(id, &target)? else {
            return Ok(self.done_request(request));
        };
        check_lengths(&result.dt, result.count, p.len, "result")?;
        let origin = if op == ReduceOp::NoOp {
            Side {
                buf: SendBuf::empty(),
                count: 0,
                dt: target.dt.clone(),
            }
        } else {
            check_lengths(&origin.dt, origin.count, p.len, "origin")?;
            origin
        };
        let Some(basic) = element_type((&result.dt, "result"), &target.dt, p.len)? else {
            return Ok(self.done_request(request));
        };
        if let Some((mut span, seg)) = self.shared_target(id, &p)? {
            let sharing = Sharing::Shared {
                mutex: seg.mutex_word(p.rank),
            };
            let input = match op {
                ReduceOp::NoOp => vec![0u8; p.len],
                _ => packed(&origin),
            };
            let old = with_shape(&target.dt, target.count, p.lo, |s| {
                apply::accumulate(&mut span, s, (op, &basic), &input, true, sharing)
            })?;
            unpack_into(result, &old);
            return Ok(self.done_request(request));
        }
        check_basic_op(op, &basic, p.len)?;
        let reply = self.expect_reply(id, p.rank, result)?;
        let mut req = self.request_of(Kind::GetAcc, &p, op, Some(basic));
        req.reply = reply.1;
        self.send_request(id, &p, req, &target, origin)?;
        Ok(self.link_request(id, Some(reply.0), request))
    }

    /// `MPI_Compare_and_swap` on one element of `dt`.
    #[allow(clippy::too_many_arguments)] // the MPI call's own parameter list
    pub fn rma_compare_and_swap(
        &mut self,
        id: WinId,
        origin: SendBuf,
        compare: SendBuf,
        result: RecvBuf,
        dt: Datatype,
        rank: i32,
        disp: isize,
    ) -> Result<()> {
        let target = Target {
            rank,
            disp,
            count: 1,
            dt: dt.clone(),
        };
        let Some(p) = self.place(id, &target)? else {
            return Ok(());
        };
        let basic = dt
            .basic()
            .filter(|_| matches!(dt, Datatype::Basic(_)))
            .ok_or_else(|| {
                MpiError::new(
                    ErrorClass::Type,
                    "MPI_Compare_and_swap takes a predefined datatype",
                )
            })?;
        if !apply::cas_allowed(&basic) {
            return Err(MpiError::new(
                ErrorClass::Type,
                "MPI_Compare_and_swap takes an integer, logical, byte or character type (MPI-3.1 11.3.4), not a floating-point, complex or pair one",
            ));
        }
        let n = basic.size as usize;
        let (o, c) = (
            &origin.as_slice()[..n.min(origin.len())],
            &compare.as_slice()[..n.min(compare.len())],
        );
        if let Some((mut span, seg)) = self.shared_target(id, &p)? {
            let sharing = Sharing::Shared {
                mutex: seg.mutex_word(p.rank),
            };
            let old = apply::compare_and_swap(&mut span, &basic, o, c, sharing)?;
            let mut result = result;
            let k = n.min(result.len());
            result.as_mut_slice()[..k].copy_from_slice(&old[..k]);
            return Ok(());
        }
        let side = Side {
            buf: result,
            count: 1,
            dt: dt.clone(),
        };
        let reply = self.expect_reply(id, p.rank, side)?;
        let mut req = self.request_of(Kind::Cas, &p, ReduceOp::Replace, Some(basic));
        req.reply = reply.1;
        let mut inline = o.to_vec();
        inline.extend_from_slice(c);
        let msg = req.encode(&[], &inline);
        self.post_request(id, p.rank, msg)?;
        Ok(())
    }

    /// The target span of a shared window (and its segment, for the accumulate mutex); `None`
    /// for a private window.
    fn shared_target(&self, id: WinId, p: &Placed) -> Result<Option<(RecvBuf, Arc<WinSegment>)>> {
        Ok(match &self.wins.get(id)?.mem {
            Memory::Shared { regions, seg, .. } => Some((
                regions[p.rank].mem.slice(p.start as usize, p.span),
                seg.clone(),
            )),
            _ => None,
        })
    }

    /// Checks an operation on `target` and finds its bytes there; `None` for `MPI_PROC_NULL`.
    fn place(&self, id: WinId, target: &Target) -> Result<Option<Placed>> {
        if target.rank == PROC_NULL {
            return Ok(None);
        }
        let w = self.wins.get(id)?;
        let rank = self.win_rank(w, target.rank)?;
        if !w.epoch.allows(rank) {
            return Err(MpiError::new(
                ErrorClass::RmaSync,
                format!("no access epoch is open for rank {rank} (call a fence, start, lock or lock_all first)"),
            ));
        }
        let (lo, span) = target.dt.span(target.count)?;
        let len = target.dt.packed_len(target.count)?;
        let start = span_start(w, rank, target.disp, lo, span)?;
        Ok(Some(Placed {
            rank,
            start,
            lo,
            span,
            len,
        }))
    }

    /// A completed request for the application, when it asked for one.
    fn done_request(&mut self, request: bool) -> Option<RequestId> {
        request.then(|| self.core.requests.insert(Req::completed(Status::empty())))
    }

    /// The application's request for an operation whose last transfer is `transfer`.
    fn link_request(
        &mut self,
        id: WinId,
        transfer: Option<RequestId>,
        request: bool,
    ) -> Option<RequestId> {
        let Some(transfer) = transfer.filter(|_| request) else {
            return self.done_request(request);
        };
        let user = self
            .core
            .requests
            .insert(Req::new(crate::request::Op::Null));
        if let Ok(w) = self.wins.get_mut(id) {
            w.origin.linked.push((transfer, user));
        }
        Some(user)
    }

    fn request_of(&self, kind: Kind, p: &Placed, op: ReduceOp, basic: Option<Basic>) -> Request {
        let mut r = Request::control(kind, 0);
        r.op = op;
        if let Some(b) = basic {
            r.basic = b;
        }
        r.disp = p.start;
        r.lo = p.lo as i64;
        r.span = p.span as u64;
        r.len = p.len as u64;
        r
    }

    /// Posts a receive for the reply of an operation on `rank`; returns it and its tag.
    fn expect_reply(
        &mut self,
        id: WinId,
        rank: usize,
        into: Side<RecvBuf>,
    ) -> Result<(RequestId, i32)> {
        let inb = self.in_buf(into.buf, into.count, &into.dt)?;
        let w = self.wins.get_mut(id)?;
        let tag = w.origin.next_tag;
        w.origin.next_tag = super::target::next_reply_tag(tag);
        let ctx = w.ctx;
        let rid = self.core.new_recv(inb, rank as i32, tag, None);
        self.core.post_recv(rid, ctx, rank as i32, tag);
        self.wins.get_mut(id)?.origin.pending.push((rank, rid));
        Ok((rid, tag))
    }

    /// Sends request `req` with `data` inline when it fits, else followed by a data message;
    /// returns that data message's send, if any.
    fn send_request(
        &mut self,
        id: WinId,
        p: &Placed,
        req: Request,
        target: &Target,
        data: Side<SendBuf>,
    ) -> Result<Option<RequestId>> {
        let desc = describe(&target.dt, target.count);
        let room = self
            .tuning
            .eager_limit
            .saturating_sub(super::wire::HEADER + desc.len());
        let carries = matches!(req.kind, Kind::Put | Kind::Acc | Kind::GetAcc) && data.count > 0;
        if !carries || p.len <= room {
            let inline = if carries { packed(&data) } else { Vec::new() };
            let msg = req.encode(&desc, &inline);
            self.post_request(id, p.rank, msg)?;
            return Ok(None);
        }
        let msg = req.encode(&desc, &[]);
        self.post_request(id, p.rank, msg)?;
        let out = self.out_buf(data.buf, data.count, &data.dt)?;
        let rid = self.win_send(id, p.rank, TAG_DATA, out)?;
        self.wins.get_mut(id)?.origin.pending.push((p.rank, rid));
        Ok(Some(rid))
    }

    /// Sends a request message to `rank` (fire and forget: it carries its own copy).
    pub(crate) fn post_request(&mut self, id: WinId, rank: usize, msg: Vec<u8>) -> Result<()> {
        let rid = self.win_send(id, rank, TAG_REQ, OutBuf::Owned(msg))?;
        self.detach(rid);
        self.wins.get_mut(id)?.origin.touched.insert(rank);
        Ok(())
    }

    /// Sends `buf` to window rank `rank` with `tag` on the window's communicator.
    pub(crate) fn win_send(
        &mut self,
        id: WinId,
        rank: usize,
        tag: i32,
        buf: OutBuf,
    ) -> Result<RequestId> {
        let w = self.wins.get(id)?;
        let env = Envelope {
            ctx: w.ctx,
            src: w.rank as u32,
            tag,
            len: buf.len() as u64,
            sreq: 0,
            flags: 0,
        };
        let dest = w.members[rank] as usize;
        self.start_send(buf, dest, env, SendMode::Standard, None)
    }

    /// Lets request `rid` finish on its own and be released then.
    pub(crate) fn detach(&mut self, rid: RequestId) {
        if let Some(req) = self.core.requests.get_mut(rid) {
            req.detached = true;
            if req.complete {
                self.core.release(rid);
            }
        }
    }
}

/// Byte offset (or address) of an operation's span at `rank`, checked against its memory.
fn span_start(w: &Window, rank: usize, disp: isize, lo: isize, span: usize) -> Result<u64> {
    if matches!(w.mem, Memory::Dynamic(_)) {
        // An address: the target checks it against what is attached.
        return Ok((disp as i64).wrapping_add(lo as i64) as u64);
    }
    let unit = w.units[rank] as i128;
    let start = disp as i128 * unit + lo as i128;
    let size = w.sizes[rank] as i128;
    if span > 0 && (start < 0 || start + span as i128 > size) {
        return Err(MpiError::new(
            ErrorClass::RmaRange,
            format!(
                "the operation touches bytes {start}..{} of rank {rank}'s window, which has {size}",
                start + span as i128
            ),
        ));
    }
    Ok(start.max(0) as u64)
}

/// Checks that `count` elements of `dt` carry `len` bytes (matching type signatures).
fn check_lengths(dt: &Datatype, count: usize, len: usize, what: &str) -> Result<()> {
    let have = dt.packed_len(count)?;
    if have != len {
        return Err(arg(format!(
            "the {what} buffer holds {have} bytes of data but the target datatype {len}"
        )));
    }
    Ok(())
}

/// The one predefined type an accumulate operation of `len` bytes combines; `None` when it
/// combines nothing (`len` is 0: the caller completes it at once, with no message). Types must
/// be built from the same predefined type even then (MPI-3.1 §11.3.4; Open MPI checks it too,
/// MPICH does not), except that a type of size 0 has no basic component to disagree with.
fn element_type(
    (mine, what): (&Datatype, &str),
    target: &Datatype,
    len: usize,
) -> Result<Option<Basic>> {
    if mine.size() == 0 || target.size() == 0 {
        return Ok(None); // no element at all, hence len == 0
    }
    match (mine.basic(), target.basic()) {
        (Some(a), Some(b)) if a.kind == b.kind && a.size == b.size => Ok((len > 0).then_some(b)),
        _ => Err(MpiError::new(
            ErrorClass::Type,
            format!(
                "accumulate operations need {what} and target datatypes built from one same \
                 predefined type"
            ),
        )),
    }
}

/// Rejects an operation that is not defined on `basic` before anything is sent (an operation
/// with no data is accepted, as MPICH does).
fn check_basic_op(op: ReduceOp, basic: &Basic, len: usize) -> Result<()> {
    if len == 0 {
        return Ok(());
    }
    apply::check_op(op, basic)
}

/// The packed bytes of an origin buffer.
fn packed(side: &Side<SendBuf>) -> Vec<u8> {
    let len = side.dt.packed_len(side.count).unwrap_or(0);
    let mut out = vec![0u8; len];
    typed::pack(&side.dt, side.count, &side.buf, 0, &mut out);
    out
}

/// Unpacks `data` into an origin buffer.
fn unpack_into(mut side: Side<RecvBuf>, data: &[u8]) {
    typed::unpack(&side.dt, side.count, &mut side.buf, 0, data);
}

/// Runs `f` with the shape of `count` elements of `dt` in their span (`lo`: the span's start
/// relative to the address).
pub(crate) fn with_shape<R>(
    dt: &Datatype,
    count: usize,
    lo: isize,
    f: impl FnOnce(&Shape) -> R,
) -> R {
    let program = if dt.is_dense() { None } else { dt.program() };
    let shape = match &program {
        Some(p) => Shape::Typed {
            program: p,
            count,
            extent: dt.extent(),
            origin: lo.wrapping_neg() as usize,
        },
        None => Shape::Dense,
    };
    f(&shape)
}

/// The wire description of `count` elements of `dt` (empty when dense).
fn describe(dt: &Datatype, count: usize) -> Vec<u8> {
    if dt.is_dense() {
        return Vec::new();
    }
    let Some(program) = dt.program() else {
        return Vec::new();
    };
    let mut b = vec![0u8; crate::datatype::wire::encoded_len(&program)];
    crate::datatype::wire::encode(&mut b, &program, count, dt.extent());
    b
}
