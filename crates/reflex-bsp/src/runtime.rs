//! The BSP run of this process: its state between `bsp_begin` and `bsp_end`, the process-wide
//! slot that holds it, and the entry path every C call goes through.
//!
//! BSPlib has no handle: every call refers to the process's one run, so the state lives in one
//! `static` mutex (uncontended: BSPlib programs are single-threaded). [`with_run`] is the panic
//! and error boundary: a failed call is reported with its source location and stops the job.
//!
//! Lifecycle: `bsp_begin(p)` initialises MPI when the program has not, splits the first `p`
//! ranks off `MPI_COMM_WORLD` (the others finalise and exit, as processes that BSPlib never
//! started), opens the dynamic window in a `lock_all` epoch and starts the clock. `bsp_end` ends
//! with a last sync, frees the window and communicator, finalises MPI when BSPlib initialised it,
//! and then only pid 0 goes on (BSPlib: the code after `bsp_end` runs on process 0 alone).

use crate::bsmp::Bsmp;
use crate::config::DebugMode;
use crate::debug::Debugger;
use crate::drma::Drma;
use crate::loc::{fatal, say, usage, BspError, BspResult, Loc};
use crate::mpi::{self, Comm, Win};
use crate::registry::Registry;
use crate::sync::{self, SyncCall};
use std::ffi::{c_char, c_int};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

/// One process's BSP run.
pub struct Bsp {
    pub comm: Comm,
    pub win: Win,
    pub pid: usize,
    pub nprocs: usize,
    pub start: Instant,
    /// Supersteps completed (syncs passed).
    pub superstep: u64,
    pub reg: Registry,
    pub drma: Drma,
    pub bsmp: Bsmp,
    /// Present when `REFLEX_BSP_DEBUG` asks for checks.
    pub debug: Option<Debugger>,
    /// The memory attached to the window now, as disjoint `(start, end)` intervals.
    pub attached: Vec<(usize, usize)>,
}

/// The process-wide state.
#[derive(Default)]
struct Process {
    /// BSPlib called `MPI_Init`, so it also calls `MPI_Finalize`.
    owns_mpi: bool,
    run: Option<Bsp>,
}

static PROCESS: Mutex<Process> = Mutex::new(Process {
    owns_mpi: false,
    run: None,
});

fn process() -> MutexGuard<'static, Process> {
    // A poisoned lock means a call panicked; that call stopped the job already.
    PROCESS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Runs `f` on the current run; reports any error or panic as `call` at `at` and stops the job.
pub fn with_run<R>(call: &str, at: Loc, f: impl FnOnce(&mut Bsp) -> BspResult<R>) -> R {
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let mut p = process();
        let Some(bsp) = p.run.as_mut() else {
            return Err((
                None,
                BspError::Usage("called outside bsp_begin .. bsp_end".into()),
            ));
        };
        let pid = bsp.pid;
        match f(bsp) {
            Err(e @ (BspError::Checks | BspError::Agreed(_))) => {
                stop_together(&mut p, call, at, &e)
            }
            other => other.map_err(|e| (Some(pid), e)),
        }
    }));
    match outcome {
        Ok(Ok(value)) => value,
        Ok(Err((pid, err))) => fatal(call, at, pid, &err),
        Err(_) => fatal(
            call,
            at,
            None,
            &BspError::Usage("internal error (panic); please report".into()),
        ),
    }
}

/// Stops the job after an error that every process found at the same sync: process 0 reports
/// it, then every process closes its run and exits with status 1. A clean exit, rather than
/// `MPI_Abort` from every process at once, lets the launcher forward the report before the job
/// ends.
fn stop_together(p: &mut Process, call: &str, at: Loc, err: &BspError) -> ! {
    let Some(bsp) = p.run.take() else {
        crate::loc::stop(1)
    };
    if let (0, BspError::Agreed(msg)) = (bsp.pid, err) {
        let at = if at.is_known() {
            format!(" at {at}")
        } else {
            String::new()
        };
        say(&format!("bsp: {call}{at}: {msg}"));
    }
    if p.owns_mpi && close_run(bsp).and_then(|()| Ok(mpi::finalize()?)).is_ok() {
        std::process::exit(1);
    }
    crate::loc::stop(1)
}

/// Frees the MPI objects of a run (collective).
fn close_run(bsp: Bsp) -> BspResult {
    for &(start, _) in &bsp.attached {
        bsp.win.detach(start)?;
    }
    bsp.win.close()?;
    bsp.comm.free()?;
    Ok(())
}

/// Runs `f` on the process state outside a run (begin, end, init, queries).
fn with_process<R>(call: &str, at: Loc, f: impl FnOnce(&mut Process) -> BspResult<R>) -> R {
    match catch_unwind(AssertUnwindSafe(|| f(&mut process()))) {
        Ok(Ok(value)) => value,
        Ok(Err(err)) => fatal(call, at, None, &err),
        Err(_) => fatal(
            call,
            at,
            None,
            &BspError::Usage("internal error (panic); please report".into()),
        ),
    }
}

impl Process {
    /// Initialises MPI unless the program did.
    ///
    /// # Safety
    /// `argc` and `argv` are null or point to `main`'s arguments.
    unsafe fn ensure_mpi(&mut self, argc: *mut c_int, argv: *mut *mut *mut c_char) -> BspResult {
        if !mpi::is_running()? {
            if self.owns_mpi {
                return usage("MPI was finalised by bsp_end; a second bsp_begin is not supported");
            }
            // SAFETY: the caller's contract.
            unsafe { mpi::init(argc, argv)? };
            self.owns_mpi = true;
        }
        Ok(())
    }
}

/// `bsp_init`: initialises MPI with the program's arguments; every pid but 0 runs `spmd` at once
/// and exits, so that only pid 0 runs the rest of `main` (as BSPlib specifies).
///
/// # Safety
/// `argc`/`argv` are `main`'s arguments (or null); `spmd` is null or a function to call.
pub unsafe fn init(spmd: Option<extern "C" fn()>, mut argc: c_int, mut argv: *mut *mut c_char) {
    let rank = with_process("bsp_init", Loc::default(), |p| {
        // SAFETY: local copies of main's arguments, which MPI_Init may rewrite.
        unsafe { p.ensure_mpi(&mut argc, &mut argv)? };
        Ok(Comm::WORLD.rank()?)
    });
    if rank != 0 {
        if let Some(spmd) = spmd {
            spmd();
        }
        finish_process();
        std::process::exit(0);
    }
}

/// `bsp_begin(maxprocs)`.
pub fn begin(maxprocs: c_int, at: Loc) {
    let excluded = with_process("bsp_begin", at, |p| {
        if p.run.is_some() {
            return usage("bsp_begin was called twice");
        }
        // SAFETY: null arguments are allowed by MPI_Init.
        unsafe { p.ensure_mpi(std::ptr::null_mut(), std::ptr::null_mut())? };
        let world = Comm::WORLD.size()?;
        let Ok(wanted) = usize::try_from(maxprocs) else {
            return usage(format!("maxprocs is {maxprocs}; it must be at least 1"));
        };
        if wanted == 0 {
            return usage("maxprocs is 0; it must be at least 1");
        }
        let rank = Comm::WORLD.rank()?;
        let Some(comm) = Comm::WORLD.split(rank < wanted, rank)? else {
            if !p.owns_mpi {
                return usage(
                    "bsp_begin with fewer processes than MPI ranks needs BSPlib to initialise MPI",
                );
            }
            return Ok(true);
        };
        p.run = Some(open_run(comm, world.min(wanted))?);
        Ok(false)
    });
    if excluded {
        finish_process();
        std::process::exit(0);
    }
}

fn open_run(comm: Comm, nprocs: usize) -> BspResult<Bsp> {
    let mode = DebugMode::from_env()?;
    let win = Win::open(comm)?;
    Ok(Bsp {
        comm,
        win,
        pid: comm.rank()?,
        nprocs,
        start: Instant::now(),
        superstep: 0,
        reg: Registry::default(),
        drma: Drma::default(),
        bsmp: Bsmp::new(nprocs),
        debug: (mode != DebugMode::Off).then(|| Debugger::new(mode)),
        attached: Vec::new(),
    })
}

/// `bsp_end`: a last sync, then the run's MPI objects are freed.
pub fn end(at: Loc) {
    with_run("bsp_end", at, |bsp| sync::sync(bsp, at, SyncCall::End));
    let pid = with_process("bsp_end", at, |p| {
        let Some(bsp) = p.run.take() else {
            return usage("called outside bsp_begin .. bsp_end");
        };
        for &(start, _) in &bsp.attached {
            bsp.win.detach(start)?;
        }
        bsp.win.close()?;
        bsp.comm.free()?;
        Ok(bsp.pid)
    });
    if finish_process() && pid != 0 {
        std::process::exit(0);
    }
}

/// Finalises MPI if BSPlib initialised it; says whether it did.
fn finish_process() -> bool {
    with_process("bsp_end", Loc::default(), |p| {
        if p.owns_mpi && mpi::is_running()? {
            mpi::finalize()?;
            return Ok(true);
        }
        Ok(false)
    })
}

/// `bsp_pid`: the pid inside a run; before it, the MPI rank (0 without MPI).
pub fn pid() -> usize {
    with_process("bsp_pid", Loc::default(), |p| match &p.run {
        Some(bsp) => Ok(bsp.pid),
        None if mpi::is_running()? => Ok(Comm::WORLD.rank()?),
        None => Ok(0),
    })
}

/// `bsp_nprocs`: the processes of the run; before `bsp_begin`, the processes available.
pub fn nprocs() -> usize {
    with_process("bsp_nprocs", Loc::default(), |p| match &p.run {
        Some(bsp) => Ok(bsp.nprocs),
        None => {
            // SAFETY: null arguments are allowed by MPI_Init.
            unsafe { p.ensure_mpi(std::ptr::null_mut(), std::ptr::null_mut())? };
            Ok(Comm::WORLD.size()?)
        }
    })
}
