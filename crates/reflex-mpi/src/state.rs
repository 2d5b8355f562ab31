//! The process-wide MPI state behind the C ABI.
//!
//! MPI is a process-global library, so one global holds the world between `MPI_Init` and
//! `MPI_Finalize`. Below `MPI_THREAD_MULTIPLE` access is not locked: the application guarantees
//! that only one thread is inside the library at a time, which is what makes handing out `&mut`
//! sound (see `SAFETY` below), and keeping a lock off this path is part of the latency budget
//! (DESIGN.md, "Performance budget"). Under `MPI_THREAD_MULTIPLE` every access is made under the
//! process lock of [`crate::threads`], whose guard lends the state out for no longer than it is
//! held.

use reflex_engine::world::World;
use std::cell::UnsafeCell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicPtr, AtomicU8, Ordering};

/// Everything the C layer keeps while MPI is initialised.
pub struct Mpi {
    /// The engine and launcher connection.
    pub world: World,
    /// The thread level granted at initialisation.
    pub thread_level: i32,
    /// User error handlers (C function pointers), indexed by handle number.
    pub errhandlers: Vec<Option<*const c_void>>,
    /// Storage the predefined attributes point into (`MPI_TAG_UB` ...), stable while MPI runs.
    pub attr_values: Box<[i32; 8]>,
    /// The thread that called `MPI_Init` (`MPI_Is_thread_main`).
    pub main_thread: std::thread::ThreadId,
    /// Info objects, keyvals and attributes, communicator hints.
    pub objects: crate::objects::Objects,
}

/// Where the engine is in its life. It starts with the first of `MPI_Init`/`MPI_Init_thread`
/// and `MPI_Session_init`, and ends when the last of the World Model and the sessions ends
/// (MPI-4.0 §11.3): both models share it.
pub enum Phase {
    /// Before the engine starts.
    Uninitialised,
    /// While the World Model or a session is active.
    Running(Box<Mpi>),
    /// After the last of them ended (the engine cannot start again in this process).
    Finalised,
}

/// Where the World Model is (`MPI_Init` .. `MPI_Finalize`), which `MPI_Initialized`,
/// `MPI_Finalized` and the validity of `MPI_COMM_WORLD`/`MPI_COMM_SELF` follow; the engine may
/// run before and after it for sessions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorldModel {
    /// `MPI_Init` not called yet.
    NotStarted,
    /// Between `MPI_Init` and `MPI_Finalize`.
    Active,
    /// After `MPI_Finalize`.
    Ended,
}

/// [`WorldModel`] as a number; written only inside `MPI_Init`/`MPI_Finalize` (relaxed, as
/// [`crate::threads::multiple`]: changed before the application may make another call).
static WORLD_MODEL: AtomicU8 = AtomicU8::new(0);

/// The World Model's state.
#[inline]
pub fn world_model() -> WorldModel {
    match WORLD_MODEL.load(Ordering::Relaxed) {
        0 => WorldModel::NotStarted,
        1 => WorldModel::Active,
        _ => WorldModel::Ended,
    }
}

/// Records a change of the World Model (`MPI_Init`, `MPI_Finalize`).
pub(crate) fn set_world_model(model: WorldModel) {
    WORLD_MODEL.store(model as u8, Ordering::Relaxed);
}

struct Global(UnsafeCell<Phase>);

// SAFETY: accessed only from inside MPI calls, which never run concurrently: below
// MPI_THREAD_MULTIPLE the application promises it, under MULTIPLE the frames take the process lock
// of `crate::threads` before any access.
unsafe impl Sync for Global {}

static STATE: Global = Global(UnsafeCell::new(Phase::Uninitialised));

/// The library's phase.
///
/// # Safety
/// Must be called from inside an MPI call, with no other reference from `phase()` alive (the MPI
/// thread-level contract); under `MPI_THREAD_MULTIPLE`, only while holding the process lock
/// ([`crate::threads::lock`]).
pub unsafe fn phase() -> &'static mut Phase {
    // SAFETY: the caller guarantees exclusive access per the function contract.
    unsafe { &mut *STATE.0.get() }
}

/// The running state, or `None` before init / after finalize.
///
/// # Safety
/// As for [`phase`].
pub unsafe fn running() -> Option<&'static mut Mpi> {
    // SAFETY: forwarded contract.
    match unsafe { phase() } {
        Phase::Running(mpi) => Some(mpi),
        _ => None,
    }
}

/// The running state while the fast paths may use it unlocked (initialised, below
/// `MPI_THREAD_MULTIPLE`), null otherwise: [`running`] and [`crate::threads::multiple`] in one
/// load, for `fast::engine` (two loads, two tests and a pointer fewer on every fast call).
/// Set by [`publish_fast`] at the end of `MPI_Init`, cleared by [`withdraw_fast`] when
/// `MPI_Finalize` begins. Relaxed, as `threads::multiple` (same argument: set before the
/// application may make another call).
static FAST: AtomicPtr<Mpi> = AtomicPtr::new(std::ptr::null_mut());

/// Opens [`running_fast`] when MPI runs below `MPI_THREAD_MULTIPLE` (end of `MPI_Init`).
///
/// # Safety
/// As for [`phase`].
pub(crate) unsafe fn publish_fast() {
    // SAFETY: forwarded contract.
    if let (Phase::Running(mpi), false) = (unsafe { phase() }, crate::threads::multiple()) {
        FAST.store(&mut **mpi, Ordering::Relaxed);
    }
}

/// Closes [`running_fast`] (start of `MPI_Finalize`, before the state goes).
pub(crate) fn withdraw_fast() {
    FAST.store(std::ptr::null_mut(), Ordering::Relaxed);
}

/// [`running`] when no lock is needed: `None` also under `MPI_THREAD_MULTIPLE`.
///
/// # Safety
/// As for [`phase`].
#[inline(always)]
pub unsafe fn running_fast() -> Option<&'static mut Mpi> {
    // SAFETY: set only between `publish_fast` and `withdraw_fast` (boxed state alive, unmoved),
    // below MPI_THREAD_MULTIPLE: exclusive access per the function contract.
    unsafe { FAST.load(Ordering::Relaxed).as_mut() }
}
