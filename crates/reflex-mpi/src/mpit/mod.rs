//! The MPI tool information interface (MPI-4.0 chapter 15): control variables, performance
//! variables, categories, and event sources, for tools such as TAU, Score-P, mpiP or MPICH's
//! `mpivars`.
//!
//! The interface has a life of its own beside MPI's: `MPI_T_init_thread` and `MPI_T_finalize`
//! are reference counted ([`Tool::users`]) and legal before `MPI_Init` and after `MPI_Finalize`.
//! Its state ([`Tool`]: the control-variable handles, the performance-variable sessions and
//! their handles) sits behind one mutex, so MPI_T calls are safe from any thread
//! (`MPI_THREAD_MULTIPLE` is provided). Calls that look at the engine (reading a performance
//! variable, writing a control variable) follow MPI's own thread level for that: under
//! `MPI_THREAD_MULTIPLE` the frame takes the process lock, as every MPI call does.
//!
//! What the interface shows:
//! - control variables ([`cvar`]): every `REFLEX_*` setting of `reflex_base::config`, by its
//!   environment name, typed (byte sizes `MPI_UNSIGNED_LONG`, counts `MPI_UNSIGNED`, word
//!   choices `MPI_INT` with an `MPI_T_enum`, text `MPI_CHAR`); read-only (fixed at start-up)
//!   except the collective selection (`REFLEX_COLL_*` but `REFLEX_COLL_SHM`), which a write
//!   changes for the next collective this process starts;
//! - performance variables ([`pvar`]): the engine's message, copy and queue counters and the
//!   transports' slow-path counters;
//! - categories ([`category`]) grouping both; events: none, with one event source, the
//!   monotonic clock ([`event`]).
//!
//! Errors are returned as the bare `MPI_T_ERR_*` class (as MPICH and Open MPI do, so tools can
//! compare codes), never through an error handler ([`frame`]).

pub mod category;
pub mod cvar;
pub mod event;
pub mod handle;
pub mod live;
pub mod pvar;
pub mod session;
pub mod text;

use crate::ffi::SUCCESS;
use crate::threads;
use reflex_engine::{ErrorClass, MpiError, Result};
use std::ffi::c_int;
use std::sync::{Mutex, MutexGuard};

/// The interface's state while at least one `MPI_T_init_thread` is not yet finalized.
#[derive(Debug, Default)]
pub struct Tool {
    /// `MPI_T_init_thread` calls not yet matched by `MPI_T_finalize`.
    pub users: u32,
    /// Control-variable handles: handle number → variable index.
    pub cvar_handles: std::collections::BTreeMap<u32, usize>,
    /// Performance-variable sessions and their handles.
    pub sessions: session::Sessions,
    /// The next handle number (never reused, so a stale handle is recognised).
    next_handle: u32,
}

impl Tool {
    /// A fresh handle number; `out_of` (`MPI_T_ERR_OUT_OF_HANDLES` or `_OUT_OF_SESSIONS`) once
    /// all 2^32 - 1 have been handed out in this process.
    pub fn new_handle(&mut self, out_of: ErrorClass) -> Result<u32> {
        self.next_handle = self
            .next_handle
            .checked_add(1)
            .ok_or_else(|| error(out_of, "every handle number has been used"))?;
        Ok(self.next_handle)
    }
}

static TOOL: Mutex<Tool> = Mutex::new(Tool {
    users: 0,
    cvar_handles: std::collections::BTreeMap::new(),
    sessions: session::Sessions::new(),
    next_handle: 0,
});

fn tool() -> MutexGuard<'static, Tool> {
    TOOL.lock().unwrap_or_else(|p| p.into_inner())
}

/// An MPI_T error of `class` with a precise message.
pub fn error(class: ErrorClass, message: impl Into<String>) -> MpiError {
    MpiError::new(class, message)
}

/// `MPI_T_ERR_INVALID` for a NULL pointer where the standard requires one.
pub fn null_argument(what: &str) -> MpiError {
    error(ErrorClass::TInvalid, format!("{what} is NULL"))
}

/// Runs `body` with the interface's state, which must be initialised.
pub fn with_tool<R>(body: impl FnOnce(&mut Tool) -> Result<R>) -> Result<R> {
    let mut t = tool();
    if t.users == 0 {
        return Err(error(
            ErrorClass::TNotInitialized,
            "the tool information interface is not initialized (call MPI_T_init_thread first)",
        ));
    }
    body(&mut t)
}

/// `MPI_T_init_thread`: one more user; returns the thread level provided.
pub fn init(required: c_int) -> Result<c_int> {
    if required < 0 {
        return Err(error(
            ErrorClass::TInvalid,
            format!("required thread level {required} is not a thread level"),
        ));
    }
    let mut t = tool();
    t.users = t.users.checked_add(1).ok_or_else(|| {
        error(
            ErrorClass::TCannotInit,
            "MPI_T_init_thread called too many times",
        )
    })?;
    Ok(required.min(threads::THREAD_MULTIPLE))
}

/// `MPI_T_finalize`: one user fewer; the last frees every handle and session.
pub fn finalize() -> Result<()> {
    with_tool(|t| {
        t.users -= 1;
        if t.users == 0 {
            t.cvar_handles.clear();
            t.sessions.clear();
        }
        Ok(())
    })
}

/// The frame of every `MPI_T_*` call (call style `tool` in `abi/implemented.txt`): the panic
/// boundary, the process lock under `MPI_THREAD_MULTIPLE`, and errors returned as their bare
/// class.
pub fn frame(name: &'static str, body: impl FnOnce() -> Result<()>) -> c_int {
    let _held = threads::multiple().then(threads::lock);
    match crate::call::guarded(body) {
        Ok(()) => SUCCESS,
        Err(e) => {
            if e.class == ErrorClass::Intern {
                eprintln!("reflex: {name}: {e}");
            }
            e.class as c_int
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn init_and_finalize_are_counted() {
        // The only test that touches the process-wide state.
        assert_eq!(init(0).unwrap(), 0);
        assert_eq!(init(7).unwrap(), threads::THREAD_MULTIPLE);
        assert_eq!(init(-1).unwrap_err().class, ErrorClass::TInvalid);
        with_tool(|t| {
            let id = t.new_handle(ErrorClass::TOutOfSessions)?;
            t.sessions.create(id);
            Ok(())
        })
        .unwrap();
        finalize().unwrap();
        assert!(with_tool(|_| Ok(())).is_ok(), "one user left");
        finalize().unwrap();
        let e = with_tool(|_| Ok(())).unwrap_err();
        assert_eq!(e.class, ErrorClass::TNotInitialized);
        assert_eq!(finalize().unwrap_err().class, ErrorClass::TNotInitialized);
        assert_eq!(
            tool().sessions.free(1).unwrap_err().class,
            ErrorClass::TInvalidSession
        );
    }

    #[test]
    fn handle_numbers_run_out_with_the_class_asked_for() {
        let mut t = Tool {
            next_handle: u32::MAX - 1,
            ..Tool::default()
        };
        assert_eq!(t.new_handle(ErrorClass::TOutOfHandles).unwrap(), u32::MAX);
        let e = t.new_handle(ErrorClass::TOutOfSessions).unwrap_err();
        assert_eq!(e.class, ErrorClass::TOutOfSessions);
    }
}
