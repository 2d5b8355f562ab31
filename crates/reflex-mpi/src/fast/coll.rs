//! Fast paths of `MPI_Barrier`, `MPI_Bcast`, `MPI_Reduce` and `MPI_Allreduce`: predefined types
//! (and operations) on a communicator whose shared-memory board is set up, straight to the
//! engine's dense board collectives ([`reflex_engine::coll::dense`]) with no kind conversions,
//! datatype objects or collective description. Like the point-to-point fast paths, each returns
//! `None` having done nothing when the call is not the common case, and the ordinary path
//! handles (and checks) it. A collective that ran and failed (a peer died) reports its error
//! through the ordinary frame, so that the communicator's error handler sees it.

use super::{dense_len, engine};
use crate::ffi::{MPI_Comm, MPI_Datatype, MPI_Op, IN_PLACE, SUCCESS};
use crate::{datatypes, handles, ops};
use reflex_base::buf::{RecvBuf, SendBuf};
use reflex_engine::coll::DenseReduce;
use reflex_engine::Result;
use std::ffi::{c_int, c_void};

/// The return code of a collective that ran.
#[inline]
fn finished(name: &'static str, comm: MPI_Comm, outcome: Result<()>) -> c_int {
    match outcome {
        Ok(()) => SUCCESS,
        Err(e) => failed(name, comm, e),
    }
}

#[cold]
#[inline(never)]
fn failed(name: &'static str, comm: MPI_Comm, error: reflex_engine::MpiError) -> c_int {
    crate::call::world(name, Some(comm), |_| Err(error))
}

/// `MPI_Barrier` on a board.
#[inline]
pub fn barrier(comm: MPI_Comm) -> Option<c_int> {
    let id = handles::comm_id(comm)?;
    let outcome = engine()?.barrier_dense(id)?;
    Some(finished("MPI_Barrier", comm, outcome))
}

/// `MPI_Bcast` of a predefined type on a board.
#[inline]
pub fn bcast(
    buf: *mut c_void,
    count: c_int,
    dt: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> Option<c_int> {
    let len = dense_len(count, dt).filter(|_| !buf.is_null())?;
    let id = handles::comm_id(comm)?;
    // SAFETY: MPI requires the buffer to hold `count` elements of `dt`, the `len` bytes from
    // `buf` (not NULL), readable at the root and writable elsewhere during the call.
    let buf = unsafe { RecvBuf::from_raw(buf.cast(), len) };
    let outcome = engine()?.bcast_dense(id, buf, root)?;
    Some(finished("MPI_Bcast", comm, outcome))
}

/// The operand and result buffers of a reduction of `count` elements of predefined type `dt`
/// with predefined operation `op`; `recv` only where the result is significant.
#[inline]
fn reduction(
    [send, recv]: [*const c_void; 2],
    count: c_int,
    dt: MPI_Datatype,
    op: MPI_Op,
    root: Option<c_int>,
) -> Option<DenseReduce> {
    let len = dense_len(count, dt)?;
    let (basic, op) = (datatypes::builtin(dt)?, ops::predefined(op)?);
    // Aliased buffers go the general way, which reports them where they are used.
    if send.is_null() || std::ptr::eq(send, recv) {
        return None;
    }
    // SAFETY: MPI requires a send buffer that is not MPI_IN_PLACE to hold `count` elements of
    // `dt`, the `len` bytes from `send` (not NULL), for the call.
    let send = (send as usize != IN_PLACE).then(|| unsafe { SendBuf::from_raw(send.cast(), len) });
    // SAFETY: where the result is significant (the engine writes nowhere else) MPI requires
    // `recv` to hold `len` writable bytes; a NULL one is left out.
    let recv = (!recv.is_null()).then(|| unsafe { RecvBuf::from_raw(recv.cast_mut().cast(), len) });
    Some(DenseReduce {
        send,
        recv,
        count: count as usize,
        basic,
        op,
        root,
    })
}

/// `MPI_Reduce` of a predefined type and operation on a board.
#[inline]
pub fn reduce(
    send: *const c_void,
    recv: *mut c_void,
    count: c_int,
    dt: MPI_Datatype,
    op: MPI_Op,
    root: c_int,
    comm: MPI_Comm,
) -> Option<c_int> {
    let r = reduction([send, recv.cast_const()], count, dt, op, Some(root))?;
    let id = handles::comm_id(comm)?;
    let outcome = engine()?.reduce_dense(id, r)?;
    Some(finished("MPI_Reduce", comm, outcome))
}

/// `MPI_Allreduce` of a predefined type and operation on a board.
#[inline]
pub fn allreduce(
    send: *const c_void,
    recv: *mut c_void,
    count: c_int,
    dt: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> Option<c_int> {
    let r = reduction([send, recv.cast_const()], count, dt, op, None)?;
    let id = handles::comm_id(comm)?;
    let outcome = engine()?.reduce_dense(id, r)?;
    Some(finished("MPI_Allreduce", comm, outcome))
}

/// The buffers of a regular allgather (`per_send = 1`) or alltoall (`per_send = n`): blocks of
/// `rcount` elements of `rtype`, the same bytes as `scount` of `stype` (unless the send buffer
/// is `MPI_IN_PLACE`, then `None`); `recv` holds `n` blocks; this rank is `me`. `None` where the
/// general way must run.
#[inline]
fn blocks(
    (send, scount, stype): Side<*const c_void>,
    (recv, rcount, rtype): Side<*mut c_void>,
    (n, me): (usize, usize),
    per_send: usize,
) -> Option<(Option<SendBuf>, RecvBuf)> {
    let block = dense_len(rcount, rtype)?;
    // A send buffer at the receive buffer, or (one block for all) at this rank's own block of
    // it: aliased, which the general way reports.
    let (s, r) = (send as usize, recv as usize);
    let own = r + if per_send == 1 { me * block } else { 0 };
    if recv.is_null() || send.is_null() || s == r || s == own {
        return None;
    }
    let send = match send as usize == IN_PLACE {
        true => None,
        false => {
            (dense_len(scount, stype)? == block).then_some(())?;
            // SAFETY: MPI requires the send buffer to hold `per_send` blocks of `scount` elements
            // of `stype` (each `block` bytes, dense) for the call.
            Some(unsafe { SendBuf::from_raw(send.cast(), per_send.checked_mul(block)?) })
        }
    };
    // SAFETY: MPI requires the receive buffer to hold `n` blocks of `rcount` elements of `rtype`
    // (each `block` bytes, dense), writable during the call.
    let recv = unsafe { RecvBuf::from_raw(recv.cast(), n.checked_mul(block)?) };
    Some((send, recv))
}

/// One side of a regular exchange: buffer, count and type.
type Side<P> = (P, c_int, MPI_Datatype);

/// A regular allgather (`to_each = false`: one block goes to everyone) or alltoall
/// (`to_each = true`: a block for each rank) on a board.
#[inline]
fn regular(
    name: &'static str,
    to_each: bool,
    send: Side<*const c_void>,
    recv: Side<*mut c_void>,
    comm: MPI_Comm,
) -> Option<c_int> {
    let id = handles::comm_id(comm)?;
    let e = engine()?;
    let c = e.comm(id).ok()?;
    let (n, me) = (c.size(), c.rank as usize);
    let (send, recv) = blocks(send, recv, (n, me), if to_each { n } else { 1 })?;
    let outcome = match to_each {
        true => e.alltoall_dense(id, send, recv)?,
        false => e.allgather_dense(id, send, recv)?,
    };
    Some(finished(name, comm, outcome))
}

/// `MPI_Allgather` of predefined types on a board.
#[inline]
pub fn allgather(
    send: *const c_void,
    scount: c_int,
    stype: MPI_Datatype,
    recv: *mut c_void,
    rcount: c_int,
    rtype: MPI_Datatype,
    comm: MPI_Comm,
) -> Option<c_int> {
    let (s, r) = ((send, scount, stype), (recv, rcount, rtype));
    regular("MPI_Allgather", false, s, r, comm)
}

/// `MPI_Alltoall` of predefined types on a board.
#[inline]
pub fn alltoall(
    send: *const c_void,
    scount: c_int,
    stype: MPI_Datatype,
    recv: *mut c_void,
    rcount: c_int,
    rtype: MPI_Datatype,
    comm: MPI_Comm,
) -> Option<c_int> {
    let (s, r) = ((send, scount, stype), (recv, rcount, rtype));
    regular("MPI_Alltoall", true, s, r, comm)
}
