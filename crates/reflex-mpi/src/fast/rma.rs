//! Fast paths of the one-sided calls on shared-memory windows: `MPI_Put` and `MPI_Get` as one
//! copy, `MPI_Accumulate`, `MPI_Get_accumulate`, `MPI_Fetch_and_op` and `MPI_Compare_and_swap`
//! as hardware atomics on the target's memory, and `MPI_Win_flush`. Each recognises the common
//! case from the raw C arguments (predefined datatypes whose elements are one run of bytes, the
//! same type and count on every side of an atomic, a predefined operation, non-NULL buffers) and
//! hands it to the engine's direct path (`reflex-engine`'s `rma/direct*.rs`), which checks the
//! window, epoch, rank and range; anything else returns `None` having done nothing, and the
//! ordinary path checks every argument and reports any error (see the parent module).

use super::{dense_len, engine};
use crate::ffi::{MPI_Aint, MPI_Datatype, MPI_Op, MPI_Win, SUCCESS};
use crate::{datatypes, handles, ops};
use reflex_base::buf::{RecvBuf, SendBuf};
use reflex_engine::{Basic, ReduceOp, WinId};
use std::ffi::{c_int, c_void};

/// The byte count and window of a Put or Get whose origin (`counts[0]` of `types[0]` at `addr`)
/// and target (`counts[1]` of `types[1]`) are both one run of the same length.
#[inline]
fn transfer(
    addr: *const c_void,
    counts: [c_int; 2],
    types: [MPI_Datatype; 2],
    win: MPI_Win,
) -> Option<(usize, WinId)> {
    let len = dense_len(counts[0], types[0])?;
    // The usual call names one type and count twice: one lookup then.
    let same = counts[0] == counts[1] && types[0] == types[1];
    if (!same && dense_len(counts[1], types[1])? != len) || addr.is_null() {
        return None;
    }
    Some((len, handles::win_id(win)?))
}

/// `MPI_Put` as one copy into a shared-memory window.
#[allow(clippy::too_many_arguments)] // the parameters of MPI_Put
#[inline]
pub fn put(
    addr: *const c_void,
    count: c_int,
    dt: MPI_Datatype,
    rank: c_int,
    disp: MPI_Aint,
    tcount: c_int,
    tdt: MPI_Datatype,
    win: MPI_Win,
) -> Option<c_int> {
    let (len, id) = transfer(addr, [count, tcount], [dt, tdt], win)?;
    // SAFETY: MPI requires the origin buffer to hold `count` elements of `dt`, the `len` bytes
    // from `addr` (not NULL, checked above).
    let origin = unsafe { SendBuf::from_raw(addr.cast(), len) };
    engine()?
        .rma_put_bytes(id, &origin, rank, disp)
        .then_some(SUCCESS)
}

/// `MPI_Get` as one copy out of a shared-memory window.
#[allow(clippy::too_many_arguments)] // the parameters of MPI_Get
#[inline]
pub fn get(
    addr: *mut c_void,
    count: c_int,
    dt: MPI_Datatype,
    rank: c_int,
    disp: MPI_Aint,
    tcount: c_int,
    tdt: MPI_Datatype,
    win: MPI_Win,
) -> Option<c_int> {
    let (len, id) = transfer(addr, [count, tcount], [dt, tdt], win)?;
    // SAFETY: MPI requires the origin buffer to hold `count` elements of `dt` (the `len` bytes
    // from `addr`, not NULL) and to be left alone until the call returns.
    let mut origin = unsafe { RecvBuf::from_raw(addr.cast(), len) };
    engine()?
        .rma_get_bytes(id, &mut origin, rank, disp)
        .then_some(SUCCESS)
}

/// `MPI_Win_flush` of a shared-memory window: one memory fence.
#[inline]
pub fn win_flush(rank: c_int, win: MPI_Win) -> Option<c_int> {
    let id = handles::win_id(win)?;
    engine()?
        .win_flush_direct(id, Some(rank))
        .then_some(SUCCESS)
}

/// `MPI_Win_flush_all` of a shared-memory window: one memory fence.
#[inline]
pub fn win_flush_all(win: MPI_Win) -> Option<c_int> {
    let id = handles::win_id(win)?;
    engine()?.win_flush_direct(id, None).then_some(SUCCESS)
}

/// `MPI_Win_lock` of a shared-memory window whose lock is free: one compare-and-swap.
#[inline]
pub fn win_lock(lock_type: c_int, rank: c_int, assert: c_int, win: MPI_Win) -> Option<c_int> {
    let kind = crate::imp::rma::lock_kind(lock_type)?;
    let id = handles::win_id(win)?;
    engine()?
        .win_lock_direct(id, kind, rank, assert)
        .then_some(SUCCESS)
}

/// `MPI_Win_unlock` of a shared-memory window: a fence and a store.
#[inline]
pub fn win_unlock(rank: c_int, win: MPI_Win) -> Option<c_int> {
    let id = handles::win_id(win)?;
    engine()?.win_unlock_direct(id, rank).then_some(SUCCESS)
}

/// `MPI_Win_lock_all` of a shared-memory window whose ranks all grant a shared lock now.
#[inline]
pub fn win_lock_all(assert: c_int, win: MPI_Win) -> Option<c_int> {
    let id = handles::win_id(win)?;
    engine()?.win_lock_all_direct(id, assert).then_some(SUCCESS)
}

/// `MPI_Win_unlock_all` of a shared-memory window.
#[inline]
pub fn win_unlock_all(win: MPI_Win) -> Option<c_int> {
    let id = handles::win_id(win)?;
    engine()?.win_unlock_all_direct(id).then_some(SUCCESS)
}

/// The element type and count shared by every `(count, datatype)` side of an atomic: one
/// predefined type whose elements are one run of bytes, the same count everywhere.
#[inline]
fn elements(
    first: (c_int, MPI_Datatype),
    others: &[(c_int, MPI_Datatype)],
) -> Option<(Basic, usize)> {
    if others.iter().any(|&side| side != first) {
        return None;
    }
    let basic = datatypes::builtin(first.1).filter(|b| b.size == b.extent)?;
    Some((basic, usize::try_from(first.0).ok()?))
}

/// `count` elements of `basic` at `addr` (not NULL), read.
#[inline]
fn input(addr: *const c_void, basic: Basic, count: usize) -> Option<SendBuf> {
    let len = count.checked_mul(basic.size as usize)?;
    // SAFETY: MPI requires the buffer to hold `count` elements of the type, the `len` bytes from
    // `addr` (not NULL, checked here).
    (!addr.is_null()).then(|| unsafe { SendBuf::from_raw(addr.cast(), len) })
}

/// `count` elements of `basic` at `addr` (not NULL), written.
#[inline]
fn output(addr: *mut c_void, basic: Basic, count: usize) -> Option<RecvBuf> {
    let len = count.checked_mul(basic.size as usize)?;
    // SAFETY: MPI requires the buffer to hold `count` elements of the type (the `len` bytes from
    // `addr`, not NULL) and to be left alone until the call returns.
    (!addr.is_null()).then(|| unsafe { RecvBuf::from_raw(addr.cast(), len) })
}

/// The origin buffer of an accumulate with `op` (none is read for `MPI_NO_OP`).
#[inline]
fn operands(addr: *const c_void, op: ReduceOp, basic: Basic, count: usize) -> Option<SendBuf> {
    match op {
        ReduceOp::NoOp => Some(SendBuf::empty()),
        _ => input(addr, basic, count),
    }
}

/// `MPI_Accumulate` as hardware atomics on a shared-memory window.
#[allow(clippy::too_many_arguments)] // the parameters of MPI_Accumulate
#[inline]
pub fn accumulate(
    addr: *const c_void,
    count: c_int,
    dt: MPI_Datatype,
    rank: c_int,
    disp: MPI_Aint,
    tcount: c_int,
    tdt: MPI_Datatype,
    op: MPI_Op,
    win: MPI_Win,
) -> Option<c_int> {
    let (basic, n) = elements((tcount, tdt), &[(count, dt)])?;
    let (op, id) = (ops::predefined(op)?, handles::win_id(win)?);
    let origin = input(addr, basic, n)?;
    let e = engine()?;
    let done = if n == 1 {
        e.rma_accumulate_one_direct(id, (op, basic), &origin, None, (rank, disp))
    } else {
        e.rma_accumulate_direct(id, (op, basic), (&origin, n), None, (rank, disp))
    };
    done.then_some(SUCCESS)
}

/// `MPI_Get_accumulate` as hardware atomics on a shared-memory window.
#[allow(clippy::too_many_arguments)] // the parameters of MPI_Get_accumulate
#[inline]
pub fn get_accumulate(
    addr: *const c_void,
    count: c_int,
    dt: MPI_Datatype,
    raddr: *mut c_void,
    rcount: c_int,
    rdt: MPI_Datatype,
    rank: c_int,
    disp: MPI_Aint,
    tcount: c_int,
    tdt: MPI_Datatype,
    op: MPI_Op,
    win: MPI_Win,
) -> Option<c_int> {
    let op = ops::predefined(op)?;
    let origin = match op {
        ReduceOp::NoOp => None,
        _ => Some((count, dt)),
    };
    let (basic, n) = elements((tcount, tdt), &[(rcount, rdt)])?;
    if origin.is_some_and(|o| o != (tcount, tdt)) {
        return None;
    }
    fetch_op(addr, raddr, (op, basic, n), (rank, disp), win)
}

/// `MPI_Fetch_and_op` as one hardware atomic on a shared-memory window.
#[inline]
pub fn fetch_and_op(
    addr: *const c_void,
    raddr: *mut c_void,
    dt: MPI_Datatype,
    rank: c_int,
    disp: MPI_Aint,
    op: MPI_Op,
    win: MPI_Win,
) -> Option<c_int> {
    let (basic, n) = elements((1, dt), &[])?;
    fetch_op(
        addr,
        raddr,
        (ops::predefined(op)?, basic, n),
        (rank, disp),
        win,
    )
}

/// The common part of `MPI_Get_accumulate` and `MPI_Fetch_and_op`.
#[inline]
fn fetch_op(
    addr: *const c_void,
    raddr: *mut c_void,
    (op, basic, n): (ReduceOp, Basic, usize),
    target: (c_int, MPI_Aint),
    win: MPI_Win,
) -> Option<c_int> {
    let id = handles::win_id(win)?;
    let origin = operands(addr, op, basic, n)?;
    let mut result = output(raddr, basic, n)?;
    let e = engine()?;
    let done = if n == 1 {
        e.rma_accumulate_one_direct(id, (op, basic), &origin, Some(&mut result), target)
    } else {
        e.rma_accumulate_direct(id, (op, basic), (&origin, n), Some(&mut result), target)
    };
    done.then_some(SUCCESS)
}

/// `MPI_Compare_and_swap` as one hardware compare-and-swap on a shared-memory window.
#[inline]
pub fn compare_and_swap(
    addr: *const c_void,
    caddr: *const c_void,
    raddr: *mut c_void,
    dt: MPI_Datatype,
    rank: c_int,
    disp: MPI_Aint,
    win: MPI_Win,
) -> Option<c_int> {
    let (basic, _) = elements((1, dt), &[])?;
    let id = handles::win_id(win)?;
    let (origin, compare) = (input(addr, basic, 1)?, input(caddr, basic, 1)?);
    let mut result = output(raddr, basic, 1)?;
    engine()?
        .rma_compare_and_swap_direct(id, basic, (&origin, &compare, &mut result), (rank, disp))
        .then_some(SUCCESS)
}
