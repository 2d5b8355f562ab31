//! Fast paths of the calls marked `fast` in `abi/implemented.txt`: `MPI_Send`, `MPI_Recv`,
//! `MPI_Isend` and `MPI_Irecv` of small messages of predefined types (one eager packet), and the
//! one-sided calls on shared-memory windows ([`rma`]: Put and Get as plain copies, the
//! accumulates as hardware atomics, lock, unlock and flush as a few atomics or fences), and
//! blocking barrier, bcast, reduce, allreduce, allgather and alltoall on a shared-memory board
//! ([`coll`]). In all of them the generic frame of a call (kind conversions, datatype objects, `Result`s passed
//! through four layers) would cost several times the work.
//!
//! Each function either completes the call and returns `Some(MPI_SUCCESS)`, or returns `None`
//! having done nothing, and the generated shim goes on with the ordinary path, which checks every
//! argument again and reports any error through the error handler. So a fast path only has to
//! recognise the common case (below `MPI_THREAD_MULTIPLE`, predefined types whose extent is their
//! size, matching lengths, a window of mapped memory, an open epoch, a range inside the target's
//! memory); it never produces an error itself.

mod coll;
mod rma;

pub use coll::{allgather, allreduce, alltoall, barrier, bcast, reduce};
pub use rma::*;

use crate::ffi::{MPI_Comm, MPI_Datatype, MPI_Request, MPI_Status, SUCCESS};
use crate::kinds::TAG_UB;
use crate::{datatypes, handles, state};
use reflex_base::buf::{RecvBuf, SendBuf};
use reflex_engine::{CommId, Engine, ANY_TAG};
use std::ffi::{c_int, c_void};

/// The engine, when a fast path may use it: inside an initialised MPI below
/// `MPI_THREAD_MULTIPLE`.
#[inline]
pub(crate) fn engine() -> Option<&'static mut Engine<reflex_engine::fabric::Fabric>> {
    // SAFETY: inside an MPI call, below MPI_THREAD_MULTIPLE whenever this is `Some` (no other
    // thread: the contract of `state::running_fast`); the reference does not outlive the call.
    unsafe { state::running_fast() }.map(|mpi| &mut mpi.world.engine)
}

/// Bytes of `count` elements of the predefined datatype `h` when they are one run of bytes.
#[inline]
pub(crate) fn dense_len(count: c_int, h: MPI_Datatype) -> Option<usize> {
    usize::try_from(count)
        .ok()?
        .checked_mul(datatypes::dense_size(h)?)
}

/// The byte length and communicator of a buffer of `count` elements of the predefined type `dt`,
/// when the arguments are valid as they stand (otherwise the ordinary path reports them).
#[inline]
fn dense_args(
    null_buf: bool,
    count: c_int,
    dt: MPI_Datatype,
    tag_ok: bool,
    comm: MPI_Comm,
) -> Option<(usize, CommId)> {
    // A NULL buffer is fine for zero elements (common for empty messages); with more, the
    // ordinary path reports it.
    if (null_buf && count != 0) || !tag_ok {
        return None;
    }
    Some((dense_len(count, dt)?, handles::comm_id(comm)?))
}

/// A send buffer and its communicator (see [`dense_args`]).
#[inline]
fn send_args(
    buf: *const c_void,
    count: c_int,
    dt: MPI_Datatype,
    tag: c_int,
    comm: MPI_Comm,
) -> Option<(SendBuf, CommId)> {
    let tag_ok = (0..=TAG_UB).contains(&tag);
    let (len, id) = dense_args(buf.is_null(), count, dt, tag_ok, comm)?;
    // SAFETY: MPI requires the buffer to hold `count` elements of `dt`, the `len` bytes from
    // `buf` (not NULL, checked above), unchanged until the send completes.
    let buf = unsafe { SendBuf::from_raw(buf.cast(), len) };
    Some((buf, id))
}

/// A receive buffer and its communicator (see [`dense_args`]).
#[inline]
fn recv_args(
    buf: *mut c_void,
    count: c_int,
    dt: MPI_Datatype,
    tag: c_int,
    comm: MPI_Comm,
) -> Option<(RecvBuf, CommId)> {
    let tag_ok = tag == ANY_TAG || (0..=TAG_UB).contains(&tag);
    let (len, id) = dense_args(buf.is_null(), count, dt, tag_ok, comm)?;
    // SAFETY: MPI requires the buffer to hold `count` elements of `dt` (the `len` bytes from
    // `buf`, not NULL) and to be left alone until the receive completes.
    let buf = unsafe { RecvBuf::from_raw(buf.cast(), len) };
    Some((buf, id))
}

/// `MPI_Send` of a small message of a predefined type: one eager packet, no request.
#[inline]
pub fn send(
    buf: *const c_void,
    count: c_int,
    dt: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
) -> Option<c_int> {
    let (buf, id) = send_args(buf, count, dt, tag, comm)?;
    engine()?
        .send_bytes_eager(buf, dest, tag, id)
        .then_some(SUCCESS)
}

/// `MPI_Recv` of a predefined type, taken straight from the transport when the message arrives
/// eagerly, or from the unexpected queue when it is there already (no request either way). A
/// message that does not fit is `MPI_ERR_TRUNCATE`, reported by the ordinary frame.
#[inline]
pub fn recv(
    buf: *mut c_void,
    count: c_int,
    dt: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    status: *mut MPI_Status,
) -> Option<c_int> {
    let (buf, id) = recv_args(buf, count, dt, tag, comm)?;
    let st = engine()?.recv_bytes_direct(buf, source, tag, id)?;
    Some(crate::imp::recv_done(comm, status, st))
}

/// `MPI_Sendrecv` whose send goes out at once as one eager packet (as `MPI_Send`'s fast path):
/// the send is then complete, so the receive may run as `MPI_Recv` does, straight from the
/// transport when it can; the standard's concurrent send and receive, with nothing left to
/// overlap. Declines, having sent nothing, when either half is not the common case (the receive
/// half's arguments are checked before the send).
#[allow(clippy::too_many_arguments)] // the parameters of MPI_Sendrecv
#[inline]
pub fn sendrecv(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    dest: c_int,
    sendtag: c_int,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    source: c_int,
    recvtag: c_int,
    comm: MPI_Comm,
    status: *mut MPI_Status,
) -> Option<c_int> {
    let (out, id) = send_args(sendbuf, sendcount, sendtype, sendtag, comm)?;
    let (into, _) = recv_args(recvbuf, recvcount, recvtype, recvtag, comm)?;
    let engine = engine()?;
    if !engine.receives_from(id, source) || !engine.send_bytes_eager(out, dest, sendtag, id) {
        return None;
    }
    if let Some(st) = engine.recv_bytes_direct(into, source, recvtag, id) {
        return Some(crate::imp::recv_done(comm, status, st));
    }
    let recv = (recvbuf, recvcount, recvtype, source, recvtag);
    Some(sendrecv_receive(recv, comm, status))
}

/// The receive half of a fast `MPI_Sendrecv` whose send went out, the general way.
#[cold]
#[inline(never)]
fn sendrecv_receive(
    (buf, count, dt, source, tag): (*mut c_void, c_int, MPI_Datatype, c_int, c_int),
    comm: MPI_Comm,
    status: *mut MPI_Status,
) -> c_int {
    crate::call::world("MPI_Sendrecv", Some(comm), |w| {
        let comm = crate::kinds::comm(w, comm)?;
        let count = crate::kinds::count(count, "recvcount")?;
        let dt = crate::kinds::datatype(w, dt)?;
        let source = crate::kinds::source(w, comm, source)?;
        let tag = crate::kinds::recv_tag(tag)?;
        crate::imp::recv(w, buf, count, dt, source, tag, comm, status)
    })
}

/// Writes the handle of request `id` to `request` (the caller checked it is not NULL).
fn hand_out(request: *mut MPI_Request, id: reflex_engine::RequestId) -> c_int {
    // SAFETY: not NULL (checked by the caller); MPI requires a writable request.
    unsafe { request.write(handles::request_handle(id)) };
    SUCCESS
}

/// `MPI_Isend` of a small message of a predefined type: its eager packet leaves at once and the
/// request is complete from the start.
#[inline]
pub fn isend(
    buf: *const c_void,
    count: c_int,
    dt: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> Option<c_int> {
    let (buf, id) = send_args(buf, count, dt, tag, comm).filter(|_| !request.is_null())?;
    let req = engine()?.isend_bytes_eager(buf, dest, tag, id)?;
    Some(hand_out(request, req))
}

/// `MPI_Irecv` into a buffer of a predefined type.
#[inline]
pub fn irecv(
    buf: *mut c_void,
    count: c_int,
    dt: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> Option<c_int> {
    let (buf, id) = recv_args(buf, count, dt, tag, comm).filter(|_| !request.is_null())?;
    let req = engine()?.irecv_bytes(buf, source, tag, id)?;
    Some(hand_out(request, req))
}
