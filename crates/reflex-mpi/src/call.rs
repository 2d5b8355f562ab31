//! The frame of every exported call: the panic boundary and the error-handler dispatch.
//!
//! Nothing unwinds across the C boundary: a panic inside Reflex becomes an `MPI_ERR_INTERN` error.
//! An error is registered (class + precise message, see [`crate::errors`]) and handed to the error
//! handler of the communicator the call names (else `MPI_COMM_WORLD`'s): fatal handlers print one
//! line and end the whole job through the launcher; `MPI_ERRORS_RETURN` returns the code; a user
//! handler is called, then the code is returned.

use crate::ffi::{MPI_Comm, SUCCESS};
use crate::handles;
use crate::state::{self, Mpi};
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

/// Runs `body` with the initialised state; errors go to the handler of `comm` (or the world's).
pub fn world(
    name: &'static str,
    comm: Option<MPI_Comm>,
    body: impl FnOnce(&mut Mpi) -> Result<()>,
) -> c_int {
    // SAFETY: we are inside an MPI call (thread-level contract of `state::running`).
    let Some(mpi) = (unsafe { state::running() }) else {
        return not_running(name);
    };
    let outcome = catch_unwind(AssertUnwindSafe(|| body(&mut *mpi)));
    let error = match outcome {
        Ok(Ok(())) => return SUCCESS,
        Ok(Err(e)) => e,
        Err(payload) => MpiError::new(
            ErrorClass::Intern,
            format!("internal error (panic): {}", panic_message(payload)),
        ),
    };
    dispatch(mpi, name, comm, &error)
}

/// Runs a call that is legal at any time (before `MPI_Init` too); errors are returned.
pub fn anytime(name: &'static str, body: impl FnOnce() -> Result<()>) -> c_int {
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
    // SAFETY: inside an MPI call.
    match unsafe { state::running() } {
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
    // SAFETY: inside an MPI call.
    let when = match unsafe { state::phase() } {
        state::Phase::Finalised => "after MPI_Finalize",
        _ => "before MPI_Init",
    };
    eprintln!("reflex: fatal error: {name} called {when}");
    std::process::exit(1);
}

/// Hands `error` to the right error handler and returns the code the call returns.
#[cold]
pub fn dispatch(mpi: &mut Mpi, name: &str, comm: Option<MPI_Comm>, error: &MpiError) -> c_int {
    let code = crate::errors::register(name, error);
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
            None => {
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
        },
    }
}
