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
//! The callbacks are C functions, or Fortran subroutines once MPICH's Fortran binding marked the
//! request (`MPII_Grequest_set_lang_f77`, `mpich_fortran.rs`; [`grequest_set_fortran`]).

use super::util::{c_status, status_bytes, write};
use crate::ffi::*;
use crate::handles;
use crate::state::Mpi;
use reflex_engine::request::{Generalized, Hooks};
use reflex_engine::{ErrorClass, MpiError, RequestId, Result, Status};
use std::any::Any;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// `MPI_Grequest_query_function`.
type QueryFn = unsafe extern "C" fn(*mut c_void, *mut MPI_Status) -> c_int;
/// `MPI_Grequest_free_function`.
type FreeFn = unsafe extern "C" fn(*mut c_void) -> c_int;
/// `MPI_Grequest_cancel_function`.
type CancelFn = unsafe extern "C" fn(*mut c_void, c_int) -> c_int;
/// The Fortran query subroutine: `(EXTRA_STATE, STATUS, IERROR)`, all by reference.
type FortranQueryFn = unsafe extern "C" fn(*mut c_void, *mut MPI_Fint, *mut MPI_Fint);
/// The Fortran free subroutine: `(EXTRA_STATE, IERROR)`.
type FortranFreeFn = unsafe extern "C" fn(*mut c_void, *mut MPI_Fint);
/// The Fortran cancel subroutine: `(EXTRA_STATE, COMPLETE, IERROR)`.
type FortranCancelFn = unsafe extern "C" fn(*mut c_void, *const MPI_Fint, *mut MPI_Fint);

/// The three callbacks of one generalized request and their `extra_state`. A NULL callback
/// counts as one that does nothing and succeeds (MPI requires all three; MPICH would crash).
///
/// They are C functions unless MPICH's Fortran binding marked the request with
/// `MPII_Grequest_set_lang_f77` right after `MPI_Grequest_start` (`fortran`): then they are
/// Fortran subroutines, called as MPICH calls them, every argument by reference, the error code
/// in a last `IERROR` argument, and `extra_state` the address of the application's
/// `INTEGER(KIND=MPI_ADDRESS_KIND)` (what the binding passed), the status an `MPI_STATUS_SIZE`
/// integer array, which in MPICH's ABI (and `TYPE(MPI_Status)`) has `MPI_Status`'s layout.
struct Callbacks {
    query: *const c_void,
    free: *const c_void,
    cancel: *const c_void,
    extra: *mut c_void,
    fortran: AtomicBool,
}

// SAFETY: the pointers are the application's functions and its opaque state, which MPI hands back
// to those functions only; the MPI thread level governs which threads may call into the library
// and so into them (MPI_Grequest_complete from another thread needs MPI_THREAD_MULTIPLE).
unsafe impl Send for Callbacks {}
// SAFETY: as above; the only mutation after creation is the atomic language flag.
unsafe impl Sync for Callbacks {}

/// A callback's return code as a result (the code itself is what the MPI call returns).
fn outcome(code: c_int) -> Result<()> {
    match code {
        SUCCESS => Ok(()),
        code => Err(crate::errors::existing(code)),
    }
}

/// A non-NULL callback pointer as the function type `F`.
///
/// # Safety
/// `p` must be a function of type `F` (a function pointer type).
unsafe fn as_fn<F: Copy>(p: *const c_void) -> F {
    // SAFETY: F is a function pointer type (same size as a data pointer on the targets MPI runs
    // on), and `p` points to such a function (the caller's contract).
    unsafe { std::mem::transmute_copy::<*const c_void, F>(&p) }
}

impl Callbacks {
    fn fortran(&self) -> bool {
        self.fortran.load(Ordering::Relaxed)
    }

    /// Runs `query_fn` (not NULL) on `c`; its error code.
    fn call_query(&self, c: &mut MPI_Status) -> c_int {
        if self.fortran() {
            let mut ierr: MPI_Fint = SUCCESS;
            // SAFETY: a Fortran subroutine registered by MPICH's binding, called with its own
            // extra_state, a writable status of MPI_STATUS_SIZE integers and IERROR.
            unsafe {
                as_fn::<FortranQueryFn>(self.query)(
                    self.extra,
                    std::ptr::from_mut(c).cast(),
                    &mut ierr,
                )
            };
            ierr
        } else {
            // SAFETY: a C callback called with its own extra_state and a writable status.
            unsafe { as_fn::<QueryFn>(self.query)(self.extra, c) }
        }
    }

    /// Runs `free_fn` (not NULL); its error code.
    fn call_free(&self) -> c_int {
        if self.fortran() {
            let mut ierr: MPI_Fint = SUCCESS;
            // SAFETY: a Fortran subroutine called with its own extra_state and IERROR.
            unsafe { as_fn::<FortranFreeFn>(self.free)(self.extra, &mut ierr) };
            ierr
        } else {
            // SAFETY: a C callback called with its own extra_state.
            unsafe { as_fn::<FreeFn>(self.free)(self.extra) }
        }
    }

    /// Runs `cancel_fn` (not NULL); its error code.
    fn call_cancel(&self, complete: bool) -> c_int {
        let flag = c_int::from(complete);
        if self.fortran() {
            let mut ierr: MPI_Fint = SUCCESS;
            // SAFETY: a Fortran subroutine called with its own extra_state, a LOGICAL (gfortran's
            // default LOGICAL is an integer, .TRUE. being 1) and IERROR.
            unsafe { as_fn::<FortranCancelFn>(self.cancel)(self.extra, &flag, &mut ierr) };
            ierr
        } else {
            // SAFETY: a C callback called with its own extra_state and a flag.
            unsafe { as_fn::<CancelFn>(self.cancel)(self.extra, flag) }
        }
    }
}

impl Generalized for Callbacks {
    fn query(&self, status: &mut Status) -> Result<()> {
        if self.query.is_null() {
            return Ok(());
        }
        let mut c = c_status(status);
        let code = self.call_query(&mut c);
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
        match self.free.is_null() {
            true => Ok(()),
            false => outcome(self.call_free()),
        }
    }

    fn cancel(&self, complete: bool) -> Result<()> {
        match self.cancel.is_null() {
            true => Ok(()),
            false => outcome(self.call_cancel(complete)),
        }
    }
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
    // MPI requires the three arguments to be the callbacks of their documented types; they are
    // called only through `Callbacks`.
    let callbacks = Callbacks {
        query: query_fn,
        free: free_fn,
        cancel: cancel_fn,
        extra: extra_state,
        fortran: AtomicBool::new(false),
    };
    let id = w.world.engine.grequest_start(Hooks(Arc::new(callbacks)));
    write(request, handles::request_handle(id));
    Ok(())
}

/// The request behind handle `h` (`MPI_REQUEST_NULL` is an error).
pub(super) fn request_id(h: MPI_Request, call: &str) -> Result<RequestId> {
    handles::request_id(h).ok_or_else(|| {
        MpiError::new(
            ErrorClass::Request,
            format!("{call}: {h:#x} is not a request handle"),
        )
    })
}

/// `MPII_Grequest_set_lang_f77` (MPICH's Fortran binding, right after `MPI_Grequest_start`): the
/// callbacks of `request` are Fortran subroutines.
pub fn grequest_set_fortran(w: &mut Mpi, request: MPI_Request) -> Result<()> {
    let id = request_id(request, "MPII_Grequest_set_lang_f77")?;
    let hooks = w.world.engine.generalized(id)?.map(|(hooks, _)| hooks);
    let any: Option<&dyn Any> = hooks.as_ref().map(|h| -> &dyn Any { h.0.as_ref() });
    match any.and_then(|a| a.downcast_ref::<Callbacks>()) {
        Some(callbacks) => {
            callbacks.fortran.store(true, Ordering::Relaxed);
            Ok(())
        }
        None => Err(MpiError::new(
            ErrorClass::Request,
            format!("MPII_Grequest_set_lang_f77: {request:#x} is not a generalized request"),
        )),
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// What the Fortran test subroutines saw: (queries, frees, last COMPLETE).
    struct Seen(c_int, c_int, MPI_Fint);

    unsafe extern "C" fn f_query(extra: *mut c_void, status: *mut MPI_Fint, ierr: *mut MPI_Fint) {
        // SAFETY: called by Callbacks with the test's extra_state, a status and IERROR.
        unsafe {
            (*extra.cast::<Seen>()).0 += 1;
            *status.add(2) = 5; // MPI_SOURCE
            *status.add(3) = 77; // MPI_TAG
            *status = 12; // count_lo: 12 bytes
            *ierr = ErrorClass::Tag as MPI_Fint;
        }
    }

    unsafe extern "C" fn f_free(extra: *mut c_void, ierr: *mut MPI_Fint) {
        // SAFETY: as above.
        unsafe {
            (*extra.cast::<Seen>()).1 += 1;
            *ierr = SUCCESS;
        }
    }

    unsafe extern "C" fn f_cancel(
        extra: *mut c_void,
        complete: *const MPI_Fint,
        ierr: *mut MPI_Fint,
    ) {
        // SAFETY: as above.
        unsafe {
            (*extra.cast::<Seen>()).2 = *complete;
            *ierr = SUCCESS;
        }
    }

    #[test]
    fn fortran_callbacks_take_references_and_return_ierror() {
        let mut seen = Seen(0, 0, -1);
        let callbacks = Callbacks {
            query: f_query as *const c_void,
            free: f_free as *const c_void,
            cancel: f_cancel as *const c_void,
            extra: std::ptr::from_mut(&mut seen).cast(),
            fortran: AtomicBool::new(true),
        };
        let mut status = Status::empty();
        let err = callbacks.query(&mut status).unwrap_err();
        assert_eq!(err.class, ErrorClass::Tag);
        assert_eq!((status.source, status.tag, status.bytes), (5, 77, 12));
        callbacks.cancel(true).unwrap();
        callbacks.free().unwrap();
        assert_eq!((seen.0, seen.1, seen.2), (1, 1, 1));
    }
}
