//! One-sided operations and synchronisation (MPI-3.1 §11.3, §11.5): the C arguments become the
//! engine's [`Side`]s and [`Target`]s; user-defined operations are rejected (MPI allows only
//! predefined ones in RMA); the request-based forms hand back an engine request.

use super::util::{recv_buf, send_buf, write};
use crate::ffi::*;
use crate::handles;
use crate::ops::OpArg;
use crate::state::Mpi;
use reflex_engine::rma::origin::{Side, Target};
use reflex_engine::rma::sync::Locking;
use reflex_engine::{
    Datatype, ErrorClass, GroupId, LockKind, MpiError, ReduceOp, RequestId, Result, WinId,
};
use std::ffi::{c_int, c_void};

/// `MPI_LOCK_EXCLUSIVE`.
const LOCK_EXCLUSIVE: c_int = 234;
/// `MPI_LOCK_SHARED`.
const LOCK_SHARED: c_int = 235;

/// The lock an `MPI_Win_lock` lock type names.
#[inline]
pub(crate) fn lock_kind(lock_type: c_int) -> Option<LockKind> {
    match lock_type {
        LOCK_EXCLUSIVE => Some(LockKind::Exclusive),
        LOCK_SHARED => Some(LockKind::Shared),
        _ => None,
    }
}

fn predefined(op: OpArg) -> Result<ReduceOp> {
    match op {
        OpArg::Predefined(op) => Ok(op),
        OpArg::User(..) => Err(MpiError::new(
            ErrorClass::Op,
            "one-sided accumulate operations take predefined operations only",
        )),
    }
}

fn target(rank: c_int, disp: MPI_Aint, count: usize, dt: Datatype) -> Target {
    Target {
        rank,
        disp,
        count,
        dt,
    }
}

fn origin_in(
    p: *const c_void,
    count: usize,
    dt: Datatype,
) -> Result<Side<reflex_base::buf::SendBuf>> {
    Ok(Side {
        buf: send_buf(p, count, &dt)?,
        count,
        dt,
    })
}

fn origin_out(
    p: *mut c_void,
    count: usize,
    dt: Datatype,
) -> Result<Side<reflex_base::buf::RecvBuf>> {
    Ok(Side {
        buf: recv_buf(p, count, &dt)?,
        count,
        dt,
    })
}

/// Writes the request of a request-based operation.
fn hand_out(request: *mut MPI_Request, id: Option<RequestId>) -> Result<()> {
    let id = id.ok_or_else(|| {
        MpiError::new(
            ErrorClass::Intern,
            "no request for a request-based operation",
        )
    })?;
    write(request, handles::request_handle(id));
    Ok(())
}

/// Defines an operation's blocking form and its request-based `MPI_R…` form from one body, in
/// which `$req` tells whether the application asked for a request.
macro_rules! with_request_form {
    ($name:ident, $rname:ident, $doc:literal, ($($p:ident: $t:ty),* $(,)?), |$w:ident, $req:ident| $body:expr) => {
        #[doc = concat!("`MPI_", $doc, "`.")]
        pub fn $name($w: &mut Mpi, $($p: $t),*) -> Result<()> {
            let $req = false;
            $body.map(drop)
        }

        #[doc = concat!("`MPI_R", $doc, "`: the request completes with the local part of the operation.")]
        pub fn $rname($w: &mut Mpi, $($p: $t),*, request: *mut MPI_Request) -> Result<()> {
            let $req = true;
            hand_out(request, $body?)
        }
    };
}

with_request_form!(
    put, rput, "Put",
    (
        origin_addr: *const c_void, origin_count: usize, origin_datatype: Datatype,
        target_rank: c_int, target_disp: MPI_Aint, target_count: usize,
        target_datatype: Datatype, win: WinId,
    ),
    |w, req| {
        let o = origin_in(origin_addr, origin_count, origin_datatype)?;
        let t = target(target_rank, target_disp, target_count, target_datatype);
        w.world.engine.rma_put(win, o, t, req)
    }
);

with_request_form!(
    get, rget, "Get",
    (
        origin_addr: *mut c_void, origin_count: usize, origin_datatype: Datatype,
        target_rank: c_int, target_disp: MPI_Aint, target_count: usize,
        target_datatype: Datatype, win: WinId,
    ),
    |w, req| {
        let o = origin_out(origin_addr, origin_count, origin_datatype)?;
        let t = target(target_rank, target_disp, target_count, target_datatype);
        w.world.engine.rma_get(win, o, t, req)
    }
);

with_request_form!(
    accumulate, raccumulate, "Accumulate",
    (
        origin_addr: *const c_void, origin_count: usize, origin_datatype: Datatype,
        target_rank: c_int, target_disp: MPI_Aint, target_count: usize,
        target_datatype: Datatype, op: OpArg, win: WinId,
    ),
    |w, req| {
        let op = predefined(op)?;
        let o = origin_in(origin_addr, origin_count, origin_datatype)?;
        let t = target(target_rank, target_disp, target_count, target_datatype);
        w.world.engine.rma_accumulate(win, o, t, op, req)
    }
);

with_request_form!(
    get_accumulate, rget_accumulate, "Get_accumulate",
    (
        origin_addr: *const c_void, origin_count: usize, origin_datatype: Datatype,
        result_addr: *mut c_void, result_count: usize, result_datatype: Datatype,
        target_rank: c_int, target_disp: MPI_Aint, target_count: usize,
        target_datatype: Datatype, op: OpArg, win: WinId,
    ),
    |w, req| {
        let t = target(target_rank, target_disp, target_count, target_datatype);
        let o = (origin_addr, origin_count, origin_datatype);
        let r = (result_addr, result_count, result_datatype);
        get_accumulate_with(w, o, r, t, op, win, req)
    }
);

/// The shared body of `MPI_Get_accumulate`, `MPI_Rget_accumulate` and `MPI_Fetch_and_op`.
fn get_accumulate_with(
    w: &mut Mpi,
    (origin_addr, origin_count, origin_datatype): (*const c_void, usize, Datatype),
    (result_addr, result_count, result_datatype): (*mut c_void, usize, Datatype),
    t: Target,
    op: OpArg,
    win: WinId,
    request: bool,
) -> Result<Option<RequestId>> {
    let op = predefined(op)?;
    let o = if op == ReduceOp::NoOp {
        Side {
            buf: reflex_base::buf::SendBuf::empty(),
            count: 0,
            dt: origin_datatype,
        }
    } else {
        origin_in(origin_addr, origin_count, origin_datatype)?
    };
    let r = origin_out(result_addr, result_count, result_datatype)?;
    w.world.engine.rma_get_accumulate(win, o, r, t, op, request)
}

/// `MPI_Fetch_and_op`: a get-accumulate of one element.
pub fn fetch_and_op(
    w: &mut Mpi,
    origin_addr: *const c_void,
    result_addr: *mut c_void,
    datatype: Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    op: OpArg,
    win: WinId,
) -> Result<()> {
    let t = target(target_rank, target_disp, 1, datatype.clone());
    let o = (origin_addr, 1, datatype.clone());
    let r = (result_addr, 1, datatype);
    get_accumulate_with(w, o, r, t, op, win, false).map(drop)
}

/// `MPI_Compare_and_swap`.
pub fn compare_and_swap(
    w: &mut Mpi,
    origin_addr: *const c_void,
    compare_addr: *const c_void,
    result_addr: *mut c_void,
    datatype: Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    win: WinId,
) -> Result<()> {
    let o = send_buf(origin_addr, 1, &datatype)?;
    let c = send_buf(compare_addr, 1, &datatype)?;
    let r = recv_buf(result_addr, 1, &datatype)?;
    w.world
        .engine
        .rma_compare_and_swap(win, o, c, r, datatype, target_rank, target_disp)
}

/// `MPI_Win_fence`.
/// Under `MPI_THREAD_MULTIPLE` its barrier is waited for without the lock, so that threads may
/// fence different windows at once.
pub fn win_fence(w: &mut Mpi, assert: c_int, win: WinId) -> Result<()> {
    if !crate::threads::deferring(w) {
        return w.world.engine.win_fence(win, assert);
    }
    let start = move |w: &mut Mpi| w.world.engine.win_fence_start(win, assert);
    crate::threads::block_on(w, start, move |w, done| match done.status.error {
        Some(e) => Err(*e),
        None => w.world.engine.win_fence_finish(win, assert),
    })
}

/// `MPI_Win_post`.
pub fn win_post(w: &mut Mpi, group: GroupId, assert: c_int, win: WinId) -> Result<()> {
    w.world.engine.win_post(win, group, assert)
}

/// `MPI_Win_start`. Under `MPI_THREAD_MULTIPLE` it waits for the posts without the lock (as do
/// `MPI_Win_wait` and the locks below): another thread of a target may still have to post.
pub fn win_start(w: &mut Mpi, group: GroupId, assert: c_int, win: WinId) -> Result<()> {
    if !crate::threads::deferring(w) {
        return w.world.engine.win_start(win, group, assert);
    }
    crate::threads::poll_until(w, move |e| e.win_start_try(win, group, assert))
}

/// `MPI_Win_complete`.
pub fn win_complete(w: &mut Mpi, win: WinId) -> Result<()> {
    w.world.engine.win_complete(win)
}

/// `MPI_Win_wait`.
pub fn win_wait(w: &mut Mpi, win: WinId) -> Result<()> {
    if !crate::threads::deferring(w) {
        return w.world.engine.win_wait(win);
    }
    crate::threads::poll_until(w, move |e| e.win_test(win))
}

/// `MPI_Win_test`.
pub fn win_test(w: &mut Mpi, win: WinId, flag: *mut c_int) -> Result<()> {
    let done = w.world.engine.win_test(win)?;
    write(flag, c_int::from(done));
    Ok(())
}

/// `MPI_Win_lock`.
pub fn win_lock(
    w: &mut Mpi,
    lock_type: c_int,
    rank: c_int,
    assert: c_int,
    win: WinId,
) -> Result<()> {
    let kind = lock_kind(lock_type).ok_or_else(|| {
        MpiError::new(
            ErrorClass::Locktype,
            format!("{lock_type} is neither MPI_LOCK_EXCLUSIVE nor MPI_LOCK_SHARED"),
        )
    })?;
    let locking = w.world.engine.win_lock_begin(win, kind, rank, assert)?;
    take_locks(w, win, locking)
}

/// Takes the locks `locking` begun: `Engine::wait_for`, or under `MPI_THREAD_MULTIPLE` polled
/// without the library lock (the holder may be another thread of a process whose lock this
/// thread's wait would keep).
fn take_locks(w: &mut Mpi, win: WinId, locking: Option<Locking>) -> Result<()> {
    let Some(mut l) = locking else {
        return Ok(());
    };
    crate::threads::poll_until(w, move |e| e.win_lock_step(win, &mut l))
}

/// `MPI_Win_unlock`.
pub fn win_unlock(w: &mut Mpi, rank: c_int, win: WinId) -> Result<()> {
    w.world.engine.win_unlock(win, rank)
}

/// `MPI_Win_lock_all`.
pub fn win_lock_all(w: &mut Mpi, assert: c_int, win: WinId) -> Result<()> {
    let locking = w.world.engine.win_lock_all_begin(win, assert)?;
    take_locks(w, win, locking)
}

/// `MPI_Win_unlock_all`.
pub fn win_unlock_all(w: &mut Mpi, win: WinId) -> Result<()> {
    w.world.engine.win_unlock_all(win)
}

/// `MPI_Win_flush`.
pub fn win_flush(w: &mut Mpi, rank: c_int, win: WinId) -> Result<()> {
    w.world.engine.win_flush(win, Some(rank))
}

/// `MPI_Win_flush_all`.
pub fn win_flush_all(w: &mut Mpi, win: WinId) -> Result<()> {
    w.world.engine.win_flush(win, None)
}

/// `MPI_Win_flush_local`.
pub fn win_flush_local(w: &mut Mpi, rank: c_int, win: WinId) -> Result<()> {
    w.world.engine.win_flush_local(win, Some(rank))
}

/// `MPI_Win_flush_local_all`.
pub fn win_flush_local_all(w: &mut Mpi, win: WinId) -> Result<()> {
    w.world.engine.win_flush_local(win, None)
}

/// `MPI_Win_sync`.
pub fn win_sync(w: &mut Mpi, win: WinId) -> Result<()> {
    w.world.engine.win_sync(win)
}

/// The large-count forms convert their counts as the `int` ones do.
pub use self::{
    accumulate as accumulate_c, get as get_c, get_accumulate as get_accumulate_c, put as put_c,
    raccumulate as raccumulate_c, rget as rget_c, rget_accumulate as rget_accumulate_c,
    rput as rput_c,
};
