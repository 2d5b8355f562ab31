//! The frame of every exported call: the panic boundary and the error-handler dispatch.
//!
//! Nothing unwinds across the C boundary: a panic inside Reflex becomes an `MPI_ERR_INTERN` error.
//! An error is registered (class + precise message, see [`crate::errors`]) and handed to the error
//! handler of the communicator the call names (else `MPI_COMM_WORLD`'s): fatal handlers print one
//! line and end the whole job through the launcher; `MPI_ERRORS_RETURN` returns the code; a user
//! handler is called, then the code is returned.
//!
//! Thread levels: up to `MPI_THREAD_SERIALIZED` the frame hands the body the unlocked state after
//! one relaxed load of [`threads::multiple`]; under `MPI_THREAD_MULTIPLE` it takes the process lock
//! first and runs the waits of blocking calls itself, without the lock (see [`crate::threads`]).

use crate::ffi::{MPI_Comm, SUCCESS};
use crate::handles;
use crate::state::{self, Mpi};
use crate::threads::{self, Held, Waited};
use reflex_engine::{ErrorClass, MpiError, Result};
use std::ffi::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};

fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

/// Runs `body` with the initialised state; errors go to the handler of `comm` (a communicator,
/// window or session handle; else the world's).
///
/// The body has one call site, shared by both thread levels, so that it is inlined here as before
/// `MPI_THREAD_MULTIPLE` existed; what `MULTIPLE` adds is out of line ([`threads::lock`] before,
/// [`finish_locked`] after).
pub fn world(
    name: &'static str,
    comm: Option<MPI_Comm>,
    body: impl FnOnce(&mut Mpi) -> Result<()>,
) -> c_int {
    let held = threads::multiple().then(threads::lock);
    // SAFETY: we are inside an MPI call: below MPI_THREAD_MULTIPLE no other thread is (the
    // thread-level contract of `state::running`); under it `held` is the process lock, and `mpi`
    // is not used once `held` has moved into `finish_locked` (which may release it).
    let Some(mpi) = (unsafe { state::running() }) else {
        return not_running(name);
    };
    let outcome = guarded(|| body(&mut *mpi));
    if let Some(held) = held {
        return finish_locked(held, name, comm, outcome);
    }
    match outcome {
        Ok(()) => SUCCESS,
        Err(error) => dispatch(mpi, name, comm, &error),
    }
}

/// The end of a call under `MPI_THREAD_MULTIPLE`: a blocking call that deferred its wait is
/// waited for here, the lock released between tries; errors are dispatched under the lock.
#[cold]
#[inline(never)]
fn finish_locked(
    held: Held,
    name: &'static str,
    comm: Option<MPI_Comm>,
    outcome: Result<()>,
) -> c_int {
    let deferred = threads::take_deferred();
    let (mut held, error) = match (outcome, deferred) {
        (Ok(()), None) => return SUCCESS,
        (Err(e), _) => (held, e),
        (Ok(()), Some(step)) => match threads::wait_deferred(held, step) {
            (_, Waited::Done) => return SUCCESS,
            (held, Waited::Failed(e)) => (held, e),
            (held, Waited::Finalised) => {
                drop(held);
                let e = threads::finalised_while_waiting(name);
                return crate::errors::register(name, &e);
            }
        },
    };
    match held.running() {
        Some(mpi) => dispatch(mpi, name, comm, &error),
        None => crate::errors::register(name, &error),
    }
}

/// Runs `body` inside the panic boundary: a panic becomes an `MPI_ERR_INTERN` error.
#[inline]
pub fn guarded<R>(body: impl FnOnce() -> Result<R>) -> Result<R> {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(|payload| {
        Err(MpiError::new(
            ErrorClass::Intern,
            format!("internal error (panic): {}", panic_message(payload)),
        ))
    })
}

/// Runs a call that is legal at any time (before `MPI_Init` too); errors are returned.
pub fn anytime(name: &'static str, body: impl FnOnce() -> Result<()>) -> c_int {
    let _held = threads::multiple().then(threads::lock);
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => SUCCESS,
        Ok(Err(e)) => crate::errors::register(name, &e),
        Err(payload) => crate::errors::register(
            name,
            &MpiError::new(ErrorClass::Intern, panic_message(payload)),
        ),
    }
}

/// What every function Reflex does not implement yet returns.
#[cold]
pub fn unsupported(name: &'static str) -> c_int {
    let e = MpiError::new(
        ErrorClass::UnsupportedOperation,
        format!("{name} is not implemented by Reflex yet"),
    );
    let mut held: Option<Held> = threads::multiple().then(threads::lock);
    let running = match &mut held {
        Some(held) => held.running(),
        // SAFETY: inside an MPI call, below MPI_THREAD_MULTIPLE.
        None => unsafe { state::running() },
    };
    match running {
        Some(mpi) => dispatch(mpi, name, None, &e),
        None => crate::errors::register(name, &e),
    }
}

/// Unimplemented functions that return a value instead of an error code.
#[cold]
pub fn unsupported_value<T: Default>(name: &'static str) -> T {
    eprintln!("reflex: {name} is not implemented by Reflex yet");
    T::default()
}

#[cold]
fn not_running(name: &str) -> c_int {
    // SAFETY: inside an MPI call; under MPI_THREAD_MULTIPLE the caller holds the lock.
    let when = match unsafe { state::phase() } {
        state::Phase::Finalised => "after MPI_Finalize (and the last MPI_Session_finalize)",
        _ => "before MPI_Init (or MPI_Session_init)",
    };
    eprintln!("reflex: fatal error: {name} called {when}");
    std::process::exit(1);
}

/// Hands `error` to the right error handler and returns the code the call returns.
#[cold]
pub fn dispatch(mpi: &mut Mpi, name: &str, comm: Option<MPI_Comm>, error: &MpiError) -> c_int {
    let code = crate::errors::register(name, error);
    if let Some(file) = comm.and_then(handles::file_of_target) {
        let handler = mpi.objects.files.errhandler(file);
        let fh = file.map_or(std::ptr::null_mut(), handles::file_handle);
        return object_handler(mpi, name, handler, code, fh);
    }
    if let Some(session) = comm.and_then(handles::session_index) {
        if let Ok(s) = mpi.objects.sessions.get(session) {
            let handler = s.errhandler;
            let handle = handles::session_handle(session);
            return object_handler(mpi, name, handler, code, handle);
        }
    }
    if let Some(win) = comm.and_then(handles::win_id) {
        if let Some(handler) = mpi.objects.wins.get(&win).map(|x| x.errhandler) {
            return crate::imp::win_dispatch(mpi, name, win, handler, code);
        }
    }
    let comm_id = comm
        .and_then(handles::comm_id)
        .filter(|c| mpi.world.engine.comm(*c).is_ok());
    let comm_id = comm_id.unwrap_or(reflex_engine::COMM_WORLD);
    let handler = mpi
        .world
        .engine
        .comm(comm_id)
        .map(|c| c.errhandler)
        .unwrap_or(handles::ERRORS_ARE_FATAL);
    match handler {
        handles::ERRORS_RETURN => code,
        h => match handles::errhandler_index(h)
            .and_then(|i| mpi.errhandlers.get(i as usize).copied().flatten())
        {
            Some(function) => {
                let mut c_comm = handles::comm_handle(comm_id);
                let mut c_code = code;
                // SAFETY: the pointer was registered by MPI_Comm_create_errhandler as an
                // MPI_Comm_errhandler_function, whose C signature is (MPI_Comm *, int *, ...).
                let f: unsafe extern "C" fn(*mut MPI_Comm, *mut c_int) =
                    unsafe { std::mem::transmute(function) };
                // SAFETY: both pointers are valid locals for the duration of the call.
                unsafe { f(&mut c_comm, &mut c_code) };
                code
            }
            None => fatal(mpi, name, code),
        },
    }
}

/// Runs the error handler of a window or file (`obj` is its C handle): returns the code for
/// `MPI_ERRORS_RETURN` and after a user handler, ends the job for the fatal ones.
pub fn object_handler<H>(
    mpi: &mut Mpi,
    name: &str,
    handler: crate::ffi::MPI_Errhandler,
    code: c_int,
    mut obj: H,
) -> c_int {
    if handler == handles::ERRORS_RETURN {
        return code;
    }
    let function = handles::errhandler_index(handler)
        .and_then(|i| mpi.errhandlers.get(i as usize).copied().flatten());
    let Some(function) = function else {
        fatal(mpi, name, code)
    };
    let mut c_code = code;
    // SAFETY: the pointer was registered by MPI_Win_create_errhandler,
    // MPI_File_create_errhandler or MPI_Session_create_errhandler, whose C signature is
    // (H *, int *, ...) for the object's handle type H (the caller passes the handle of the
    // object kind the handler was set on).
    let f: unsafe extern "C" fn(*mut H, *mut c_int) = unsafe { std::mem::transmute(function) };
    // SAFETY: both pointers are valid locals for the duration of the call.
    unsafe { f(&mut obj, &mut c_code) };
    code
}

/// The fatal error handler: one line on stderr, then the whole job ends through the launcher.
pub fn fatal(mpi: &mut Mpi, name: &str, code: c_int) -> ! {
    let rank = mpi.world.engine.world_rank();
    // The registered text (a user-defined code shows its own string).
    let text = crate::errors::string_value(code)
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| format!("error code {code}"));
    let prefix = format!("{name}: ");
    let text = text.strip_prefix(&prefix).unwrap_or(&text);
    eprintln!("reflex: fatal error on rank {rank} in {name}: {text}");
    mpi.world
        .abort(1, &format!("fatal error in {name}: {text}"))
}
