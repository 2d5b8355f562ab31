//! Completing requests (MPI-3.1 §3.7): wait/test for one, any, all and some, plus the status
//! queries. A completed non-persistent request's handle becomes `MPI_REQUEST_NULL`; a null or
//! inactive entry is skipped and yields the empty status, as the standard says.
//!
//! The blocking forms wait in the engine, except under `MPI_THREAD_MULTIPLE`
//! ([`threads::deferring`]): there they hand the call frame a check that is retried, without the
//! process lock, until it completes something (the frame drives progress between tries).
//!
//! A generalized request's callbacks run where it is retired (`query_fn`, then `free_fn`:
//! [`Completion::settle`]), at `MPI_Request_free`, `MPI_Cancel` and `MPI_Request_get_status`
//! (see [`super::grequest`]).

use super::grequest;
use super::util::{c_status, status_bytes, write, write_status, write_status_and_error};
use crate::ffi::*;
use crate::handles;
use crate::kinds::TypeArg;
use crate::state::Mpi;
use crate::threads;
use reflex_engine::{Completion, ErrorClass, MpiError, RequestId, Result, Status};
use std::ffi::c_int;

/// `MPI_ERR_IN_STATUS`.
const ERR_IN_STATUS: ErrorClass = ErrorClass::InStatus;

fn read_request(p: *mut MPI_Request) -> Result<Option<RequestId>> {
    // SAFETY: the kinds check or the caller made sure `p` is non-NULL; MPI requires it valid.
    let h = unsafe { *p };
    if h == handles::REQUEST_NULL {
        return Ok(None);
    }
    handles::request_id(h).map(Some).ok_or_else(|| {
        MpiError::new(
            ErrorClass::Request,
            format!("{h:#x} is not a request handle"),
        )
    })
}

fn requests(count: usize, array: *mut MPI_Request) -> Result<Vec<Option<RequestId>>> {
    if count > 0 && array.is_null() {
        return Err(MpiError::new(ErrorClass::Arg, "array of requests is NULL"));
    }
    // SAFETY: MPI requires `array` to hold `count` requests.
    (0..count)
        .map(|i| read_request(unsafe { array.add(i) }))
        .collect()
}

fn finish(p: *mut MPI_Request, c: &Completion) {
    if c.freed {
        write(p, handles::REQUEST_NULL);
    }
}

fn status_at(statuses: *mut MPI_Status, i: usize) -> *mut MPI_Status {
    if statuses.is_null() || statuses as usize == STATUS_IGNORE {
        statuses
    } else {
        // SAFETY: MPI requires the status array to hold one entry per request.
        unsafe { statuses.add(i) }
    }
}

/// `MPI_Wait`.
pub fn wait(w: &mut Mpi, request: *mut MPI_Request, status: *mut MPI_Status) -> Result<()> {
    let Some(id) = read_request(request)? else {
        write_status_and_error(status, &Status::empty()); // an empty status has error MPI_SUCCESS
        return Ok(());
    };
    threads::block_on(
        w,
        |_| Ok(id),
        move |_, mut c| {
            c.settle();
            finish(request, &c);
            write_status(status, &c.status);
            c.status.error.map_or(Ok(()), |e| Err(*e))
        },
    )
}

/// `MPI_Test`.
pub fn test(
    w: &mut Mpi,
    request: *mut MPI_Request,
    flag: *mut c_int,
    status: *mut MPI_Status,
) -> Result<()> {
    let Some(id) = read_request(request)? else {
        write(flag, 1);
        write_status_and_error(status, &Status::empty()); // an empty status has error MPI_SUCCESS
        return Ok(());
    };
    match w.world.engine.test(id)? {
        Some(mut c) => {
            c.settle();
            finish(request, &c);
            write(flag, 1);
            write_status(status, &c.status);
            c.status.error.map_or(Ok(()), |e| Err(*e))
        }
        None => {
            write(flag, 0);
            Ok(())
        }
    }
}

fn retire_at(
    w: &mut Mpi,
    array: *mut MPI_Request,
    ids: &[Option<RequestId>],
    i: usize,
) -> Result<Completion> {
    let id = ids[i].expect("ready requests are non-null");
    let mut c = w.world.engine.retire(id)?;
    c.settle();
    // SAFETY: `i` < count, the array length MPI guarantees.
    finish(unsafe { array.add(i) }, &c);
    Ok(c)
}

/// How a multi-request call finds the complete requests.
#[derive(Clone, Copy, PartialEq, Eq)]
enum How {
    /// Waits in the engine for at least one.
    Block,
    /// Progresses once (the `Test` forms).
    Test,
    /// Looks without progressing (a deferred wait's step: the frame progresses between tries).
    Check,
}

impl How {
    /// The positions in `ids` of the complete active requests (nothing retired).
    fn ready(self, w: &mut Mpi, ids: &[Option<RequestId>]) -> Result<Vec<usize>> {
        let e = &mut w.world.engine;
        match self {
            How::Block => e.wait_some_ready(ids),
            How::Test => e.test_some_ready(ids),
            How::Check => e.completed_among(ids),
        }
    }

    /// `Block`, or `Check` when the wait is deferred to the frame.
    fn blocking(w: &Mpi) -> How {
        if threads::deferring(w) {
            How::Check
        } else {
            How::Block
        }
    }
}

/// Completes one of `array` if one is complete (`how`); true when it did or none is active.
fn any(
    w: &mut Mpi,
    count: usize,
    array: *mut MPI_Request,
    index: *mut c_int,
    status: *mut MPI_Status,
    how: How,
) -> Result<bool> {
    let ids = requests(count, array)?;
    let ready = how.ready(w, &ids)?;
    let Some(&i) = ready.first() else {
        let none_active = w.world.engine.active_among(&ids)? == 0;
        if none_active {
            write(index, UNDEFINED);
            write_status_and_error(status, &Status::empty()); // an empty status has error MPI_SUCCESS
        }
        return Ok(none_active);
    };
    let c = retire_at(w, array, &ids, i)?;
    write(index, i as c_int);
    write_status(status, &c.status);
    c.status.error.map_or(Ok(true), |e| Err(*e))
}

/// `MPI_Waitany`.
pub fn waitany(
    w: &mut Mpi,
    count: usize,
    array: *mut MPI_Request,
    index: *mut c_int,
    status: *mut MPI_Status,
) -> Result<()> {
    match How::blocking(w) {
        How::Check => threads::defer(move |w| any(w, count, array, index, status, How::Check)),
        how => any(w, count, array, index, status, how).map(|_| ()),
    }
}

/// `MPI_Testany`.
pub fn testany(
    w: &mut Mpi,
    count: usize,
    array: *mut MPI_Request,
    index: *mut c_int,
    flag: *mut c_int,
    status: *mut MPI_Status,
) -> Result<()> {
    let done = any(w, count, array, index, status, How::Test)?;
    if !done {
        write(index, UNDEFINED);
    }
    write(flag, c_int::from(done));
    Ok(())
}

/// Retires every request of `ids`, writing statuses; `MPI_ERR_IN_STATUS` if any failed.
fn retire_all(
    w: &mut Mpi,
    array: *mut MPI_Request,
    ids: &[Option<RequestId>],
    statuses: *mut MPI_Status,
) -> Result<()> {
    let mut failed = false;
    for (i, id) in ids.iter().enumerate() {
        let st = match id {
            Some(id) if w.world.engine.is_active(*id)? => retire_at(w, array, ids, i)?.status,
            Some(id) => w.world.engine.retire(*id).map(|_| Status::empty())?,
            None => Status::empty(),
        };
        failed |= record_status(statuses, i, &st);
    }
    in_status(failed)
}

/// Writes entry `i` of a status array (unless ignored); returns whether that status has an error.
fn record_status(statuses: *mut MPI_Status, i: usize, st: &Status) -> bool {
    write_status_with_error(status_at(statuses, i), st, statuses);
    st.error.is_some()
}

/// `MPI_ERR_IN_STATUS` when any request of a multi-completion call failed.
fn in_status(failed: bool) -> Result<()> {
    if failed {
        return Err(MpiError::new(
            ERR_IN_STATUS,
            "one or more requests failed; see the statuses",
        ));
    }
    Ok(())
}

/// Multi-completion calls set `MPI_ERROR` in every status they write.
fn write_status_with_error(p: *mut MPI_Status, st: &Status, array: *mut MPI_Status) {
    if array.is_null() || array as usize == STATUS_IGNORE {
        return;
    }
    write_status_and_error(p, st);
}

/// `MPI_Waitall`: waits for and retires each request in turn (no allocation on this path).
pub fn waitall(
    w: &mut Mpi,
    count: usize,
    array: *mut MPI_Request,
    statuses: *mut MPI_Status,
) -> Result<()> {
    if count > 0 && array.is_null() {
        return Err(MpiError::new(ErrorClass::Arg, "array of requests is NULL"));
    }
    if threads::deferring(w) {
        return threads::defer(move |w| all_if_complete(w, count, array, statuses));
    }
    let mut failed = false;
    for i in 0..count {
        // SAFETY: MPI requires `array` to hold `count` requests.
        let slot = unsafe { array.add(i) };
        let st = match read_request(slot)? {
            Some(RequestId::SENT) => {
                write(slot, handles::REQUEST_NULL); // a send complete from its start
                Status::empty()
            }
            Some(id) => {
                let mut c = w.world.engine.wait_retire(id)?;
                c.settle();
                finish(slot, &c);
                c.status
            }
            None => Status::empty(),
        };
        failed |= record_status(statuses, i, &st);
    }
    in_status(failed)
}

/// `MPI_Testall`: completes all only when all are complete.
pub fn testall(
    w: &mut Mpi,
    count: usize,
    array: *mut MPI_Request,
    flag: *mut c_int,
    statuses: *mut MPI_Status,
) -> Result<()> {
    w.world.engine.poll()?;
    let outcome = all_if_complete(w, count, array, statuses);
    // All complete and one failed (MPI_ERR_IN_STATUS): the flag is still true.
    let all = match &outcome {
        Ok(all) => *all,
        Err(e) => e.class == ERR_IN_STATUS,
    };
    write(flag, c_int::from(all));
    outcome.map(|_| ())
}

/// Retires every request of `array` if all active ones are complete (no progress made).
fn all_if_complete(
    w: &mut Mpi,
    count: usize,
    array: *mut MPI_Request,
    statuses: *mut MPI_Status,
) -> Result<bool> {
    let ids = requests(count, array)?;
    let ready = w.world.engine.completed_among(&ids)?;
    if ready.len() < w.world.engine.active_among(&ids)? {
        return Ok(false);
    }
    retire_all(w, array, &ids, statuses).map(|()| true)
}

/// Completes the complete requests of `array` (`how`); true when it wrote `outcount` (with
/// `How::Check`, not when nothing is complete yet).
fn some(
    w: &mut Mpi,
    incount: usize,
    array: *mut MPI_Request,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut MPI_Status,
    how: How,
) -> Result<bool> {
    let ids = requests(incount, array)?;
    if w.world.engine.active_among(&ids)? == 0 {
        write(outcount, UNDEFINED);
        return Ok(true);
    }
    let ready = how.ready(w, &ids)?;
    if ready.is_empty() && how == How::Check {
        return Ok(false);
    }
    let mut failed = false;
    for (k, &i) in ready.iter().enumerate() {
        let c = retire_at(w, array, &ids, i)?;
        // SAFETY: MPI requires `indices` to hold up to incount entries.
        write(unsafe { indices.add(k) }, i as c_int);
        failed |= record_status(statuses, k, &c.status);
    }
    write(outcount, ready.len() as c_int);
    in_status(failed).map(|()| true)
}

/// `MPI_Waitsome`.
pub fn waitsome(
    w: &mut Mpi,
    incount: usize,
    array: *mut MPI_Request,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut MPI_Status,
) -> Result<()> {
    match How::blocking(w) {
        How::Check => threads::defer(move |w| {
            some(w, incount, array, outcount, indices, statuses, How::Check)
        }),
        how => some(w, incount, array, outcount, indices, statuses, how).map(|_| ()),
    }
}

/// `MPI_Testsome`.
pub fn testsome(
    w: &mut Mpi,
    incount: usize,
    array: *mut MPI_Request,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut MPI_Status,
) -> Result<()> {
    some(w, incount, array, outcount, indices, statuses, How::Test).map(|_| ())
}

/// `MPI_Start`.
pub fn start(w: &mut Mpi, request: *mut MPI_Request) -> Result<()> {
    let id = read_request(request)?
        .ok_or_else(|| MpiError::new(ErrorClass::Request, "MPI_Start on MPI_REQUEST_NULL"))?;
    w.world.engine.start(id)
}

/// `MPI_Startall`.
pub fn startall(w: &mut Mpi, count: usize, array: *mut MPI_Request) -> Result<()> {
    for id in requests(count, array)? {
        let id = id.ok_or_else(|| {
            MpiError::new(ErrorClass::Request, "MPI_Startall with MPI_REQUEST_NULL")
        })?;
        w.world.engine.start(id)?;
    }
    Ok(())
}

/// `MPI_Request_free`.
pub fn request_free(w: &mut Mpi, request: *mut MPI_Request) -> Result<()> {
    let id = read_request(request)?.ok_or_else(|| {
        MpiError::new(ErrorClass::Request, "MPI_Request_free on MPI_REQUEST_NULL")
    })?;
    let due = w.world.engine.request_free(id)?;
    write(request, handles::REQUEST_NULL);
    due.map_or(Ok(()), |hooks| hooks.0.free()) // a complete generalized request's free_fn
}

/// `MPI_Request_get_status`.
pub fn request_get_status(
    w: &mut Mpi,
    request: MPI_Request,
    flag: *mut c_int,
    status: *mut MPI_Status,
) -> Result<()> {
    let mut h = request;
    let Some(id) = read_request(&mut h)? else {
        write(flag, 1);
        write_status_and_error(status, &Status::empty()); // an empty status has error MPI_SUCCESS
        return Ok(());
    };
    let Some(mut st) = w.world.engine.request_status(id)? else {
        write(flag, 0);
        return Ok(());
    };
    let queried = grequest::query_status(w, id, &mut st);
    write_status(status, &st);
    write(flag, 1);
    queried
}

/// `MPI_Cancel`.
pub fn cancel(w: &mut Mpi, request: *mut MPI_Request) -> Result<()> {
    let id = read_request(request)?
        .ok_or_else(|| MpiError::new(ErrorClass::Request, "MPI_Cancel on MPI_REQUEST_NULL"))?;
    if let Some(cancelled) = grequest::cancel_hook(w, id)? {
        return cancelled;
    }
    w.world.engine.cancel(id)
}

pub(super) fn read_status(p: *const MPI_Status) -> Result<MPI_Status> {
    if p.is_null() || p as usize == STATUS_IGNORE {
        return Err(MpiError::new(
            ErrorClass::Arg,
            "status argument is NULL or MPI_STATUS_IGNORE",
        ));
    }
    // SAFETY: non-NULL, not the ignore marker; MPI requires a valid status.
    Ok(unsafe { *p })
}

/// `MPI_Test_cancelled`.
pub fn test_cancelled(_w: &mut Mpi, status: *const MPI_Status, flag: *mut c_int) -> Result<()> {
    write(flag, read_status(status)?.count_hi_and_cancelled & 1);
    Ok(())
}

/// A count for a C `int`, `MPI_UNDEFINED` when there is none or it does not fit.
fn int_count<N: TryInto<c_int>>(n: Option<N>) -> c_int {
    n.and_then(|n| n.try_into().ok()).unwrap_or(UNDEFINED)
}

/// `MPI_Get_count`: whole elements of `dt` in the received packed bytes.
pub fn get_count(
    _w: &mut Mpi,
    status: *const MPI_Status,
    dt: TypeArg,
    count: *mut c_int,
) -> Result<()> {
    let bytes = status_bytes(&read_status(status)?);
    write(count, int_count(dt.dt.count_of(bytes as usize)));
    Ok(())
}

/// `MPI_Get_elements`: predefined elements in the received bytes (`MPI_UNDEFINED` when they end
/// inside one).
pub fn get_elements(
    _w: &mut Mpi,
    status: *const MPI_Status,
    dt: TypeArg,
    count: *mut c_int,
) -> Result<()> {
    let bytes = status_bytes(&read_status(status)?);
    write(count, int_count(dt.dt.elements_of(bytes as usize)));
    Ok(())
}

/// `MPI_Get_elements_x`.
pub fn get_elements_x(
    _w: &mut Mpi,
    status: *const MPI_Status,
    dt: TypeArg,
    count: *mut MPI_Count,
) -> Result<()> {
    let bytes = status_bytes(&read_status(status)?);
    let n = dt.dt.elements_of(bytes as usize);
    write(count, n.map_or(UNDEFINED as MPI_Count, |n| n as MPI_Count));
    Ok(())
}

#[allow(dead_code)] // kept for MPI_Status_set_elements (completeness issue)
fn status_of(st: &Status) -> MPI_Status {
    c_status(st)
}
