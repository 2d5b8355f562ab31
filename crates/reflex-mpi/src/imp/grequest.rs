//! Generalized requests (MPI-3.1 §12.2): `MPI_Grequest_start` and `MPI_Grequest_complete`.
//!
//! The engine keeps a generalized request like any other (wait, test, free and cancel find it in
//! its slab) and completes it when the application says so; it never calls the application. The
//! callbacks live here, behind the engine's [`Generalized`] trait, and the engine hands them back
//! when one is due: on retirement through wait/test ([`Completion::settle`](reflex_engine::Completion::settle):
//! `query_fn` fills the status, then `free_fn`), at `MPI_Request_free` or `MPI_Grequest_complete`
//! for a request freed before it completed (`free_fn` runs in whichever call comes last), at
//! `MPI_Cancel` (`cancel_fn`) and at `MPI_Request_get_status` (`query_fn`). They are called with
//! no engine borrow held, since they may call MPI themselves (`MPI_Status_set_elements`...).

use super::util::{c_status, status_bytes, write};
use crate::ffi::*;
use crate::handles;
use crate::state::Mpi;
use reflex_engine::request::{Generalized, Hooks};
use reflex_engine::{ErrorClass, MpiError, RequestId, Result, Status};
use std::ffi::{c_int, c_void};
use std::sync::Arc;

/// `MPI_Grequest_query_function`.
type QueryFn = unsafe extern "C" fn(*mut c_void, *mut MPI_Status) -> c_int;
/// `MPI_Grequest_free_function`.
type FreeFn = unsafe extern "C" fn(*mut c_void) -> c_int;
/// `MPI_Grequest_cancel_function`.
type CancelFn = unsafe extern "C" fn(*mut c_void, c_int) -> c_int;

/// The three C callbacks of one generalized request and their `extra_state`. A NULL callback
/// counts as one that does nothing and succeeds (MPI requires all three; MPICH would crash).
struct Callbacks {
    query: Option<QueryFn>,
    free: Option<FreeFn>,
    cancel: Option<CancelFn>,
    extra: *mut c_void,
}

// SAFETY: the pointers are the application's functions and its opaque state, which MPI hands back
// to those functions only; the MPI thread level governs which threads may call into the library
// and so into them (MPI_Grequest_complete from another thread needs MPI_THREAD_MULTIPLE).
unsafe impl Send for Callbacks {}
// SAFETY: as above; the record is never mutated after creation.
unsafe impl Sync for Callbacks {}

/// A callback's return code as a result (the code itself is what the MPI call returns).
fn outcome(code: c_int) -> Result<()> {
    match code {
        SUCCESS => Ok(()),
        code => Err(crate::errors::existing(code)),
    }
}

impl Generalized for Callbacks {
    fn query(&self, status: &mut Status) -> Result<()> {
        let Some(f) = self.query else {
            return Ok(());
        };
        let mut c = c_status(status);
        // SAFETY: a C callback called with its own extra_state and a valid, writable status.
        let code = unsafe { f(self.extra, &mut c) };
        *status = Status {
            source: c.MPI_SOURCE,
            tag: c.MPI_TAG,
            bytes: status_bytes(&c) as usize,
            cancelled: c.count_hi_and_cancelled & 1 != 0,
            error: None,
        };
        outcome(code)
    }

    fn free(&self) -> Result<()> {
        // SAFETY: a C callback called with its own extra_state, as MPI_Grequest_start registered.
        self.free
            .map_or(Ok(()), |f| outcome(unsafe { f(self.extra) }))
    }

    fn cancel(&self, complete: bool) -> Result<()> {
        let Some(f) = self.cancel else {
            return Ok(());
        };
        // SAFETY: a C callback called with its own extra_state and a flag.
        outcome(unsafe { f(self.extra, c_int::from(complete)) })
    }
}

/// A callback pointer of `MPI_Grequest_start` as its C type (NULL becomes `None`).
///
/// # Safety
/// `p` must be NULL or a function of C type `F` (a function pointer type).
unsafe fn callback<F: Copy>(p: *const c_void) -> Option<F> {
    // SAFETY: F is a function pointer type (same size as a data pointer on the targets MPI runs
    // on), and `p` points to such a function unless it is NULL, which is filtered out first.
    (!p.is_null()).then(|| unsafe { std::mem::transmute_copy::<*const c_void, F>(&p) })
}

/// `MPI_Grequest_start`.
pub fn grequest_start(
    w: &mut Mpi,
    query_fn: *const c_void,
    free_fn: *const c_void,
    cancel_fn: *const c_void,
    extra_state: *mut c_void,
    request: *mut MPI_Request,
) -> Result<()> {
    // SAFETY: MPI requires the three arguments to be the callbacks of their documented C types.
    let callbacks = unsafe {
        Callbacks {
            query: callback::<QueryFn>(query_fn),
            free: callback::<FreeFn>(free_fn),
            cancel: callback::<CancelFn>(cancel_fn),
            extra: extra_state,
        }
    };
    let id = w.world.engine.grequest_start(Hooks(Arc::new(callbacks)));
    write(request, handles::request_handle(id));
    Ok(())
}

/// The request behind handle `h` (`MPI_REQUEST_NULL` is an error).
fn request_id(h: MPI_Request, call: &str) -> Result<RequestId> {
    handles::request_id(h).ok_or_else(|| {
        MpiError::new(
            ErrorClass::Request,
            format!("{call}: {h:#x} is not a request handle"),
        )
    })
}

/// `MPI_Grequest_complete`: may run `free_fn` when the request was freed already.
pub fn grequest_complete(w: &mut Mpi, request: MPI_Request) -> Result<()> {
    let id = request_id(request, "MPI_Grequest_complete")?;
    let due = w.world.engine.grequest_complete(id)?;
    due.map_or(Ok(()), |hooks| hooks.0.free())
}

/// The `cancel_fn` of `id` when it is a generalized request (run by `MPI_Cancel`, with whether
/// `MPI_Grequest_complete` was called already); `None` for any other request.
pub(super) fn cancel_hook(w: &mut Mpi, id: RequestId) -> Result<Option<Result<()>>> {
    let hooks = w.world.engine.generalized(id)?;
    Ok(hooks.map(|(hooks, complete)| hooks.0.cancel(complete)))
}

/// Runs `query_fn` on the status `MPI_Request_get_status` found for a complete request, when
/// `id` is a generalized request (nothing otherwise).
pub(super) fn query_status(w: &mut Mpi, id: RequestId, status: &mut Status) -> Result<()> {
    match w.world.engine.generalized(id)? {
        Some((hooks, _)) => hooks.0.query(status),
        None => Ok(()),
    }
}
