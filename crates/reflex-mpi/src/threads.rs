//! `MPI_THREAD_MULTIPLE`: one process-wide lock around every call, and blocking calls that wait
//! without it.
//!
//! # Design
//!
//! The state behind the C ABI ([`crate::state`]) is one unlocked global, handed to each call as
//! `&mut Mpi`. Up to `MPI_THREAD_SERIALIZED` the application promises that one thread at a time is
//! inside MPI, so nothing is locked: the frame of every call ([`crate::call::world`]) pays exactly
//! one relaxed atomic load and a branch ([`multiple`]) and then runs as before.
//!
//! When `MPI_Init_thread` grants `MPI_THREAD_MULTIPLE` (only when asked for; `MPI_Init` and lower
//! levels keep the lock-free path), [`multiple`] turns true for the rest of the process and every
//! frame takes one process-wide mutex ([`lock`]) before it touches the state, and drops it on the
//! way out. Errors are dispatched to the handlers under the lock, exactly as without it.
//!
//! A call must not keep the lock while it waits: a thread blocked in `MPI_Recv` would keep out the
//! very thread of the same process whose `MPI_Send` it waits for. Nor may the lock be released
//! while any `&mut Mpi` or `&mut Engine` obtained under it lives: another thread would then alias
//! it, and the compiler may keep fields in registers across the release. So under `MULTIPLE` a
//! blocking call is split in three, all in the call frame ([`wait_deferred`]):
//!
//! 1. under the lock, the call starts its nonblocking form (for instance `irecv`) and hands the
//!    frame a *step* ([`defer`], or [`block_on`] for the common "one engine request" case): a
//!    closure that checks once, without waiting, whether the operation is done, and if so finishes
//!    it (retires the request, writes the status, returns the handle) and says so;
//! 2. the frame runs the step at once; while it reports "not yet", the frame drops every reference
//!    to the state, releases the lock, backs off (spin, then `sched_yield`, then short sleeps
//!    growing up to the engine's doorbell sleep), takes the lock again, re-obtains the state from
//!    the lock guard (the borrow checker ties it to the guard, so it cannot outlive it), drives the
//!    engine's progress once, and runs the step again;
//! 3. the step that completes the operation also finishes it, under the same lock hold.
//!
//! Every waiting thread thus drives progress for the whole process: its progress call advances
//! the other threads' requests too, whoever created them, and a request created by one thread can
//! be waited for or tested by another (requests live in the shared engine).
//!
//! Calls made from inside a call (error handlers, attribute callbacks, user reduction operations
//! calling MPI) run on the thread that already holds the lock: the lock counts its depth per
//! thread and such nested calls neither lock again nor defer their waits (an outer `&mut Mpi` is
//! alive, so they wait in place, holding the lock, as every call does without `MULTIPLE`).
//!
//! # Limitations
//!
//! - Blocking point-to-point calls, waits, blocking collectives, every communicator constructor
//!   (intra- and intercommunicators, `MPI_Comm_split_type`), the window constructors and
//!   `MPI_Win_free`, `MPI_Win_fence`, `MPI_Win_start`, `MPI_Win_wait`, `MPI_Win_lock(_all)`,
//!   `MPI_Buffer_detach` and `MPI_Comm_disconnect`'s barrier wait without the lock ([`block_on`]
//!   for one engine request, [`poll_on`] for an operation the engine advances in polled steps).
//!   Waits that need only the progress of the other processes (`MPI_Win_complete`, unlocks,
//!   flushes: a target serves them from whichever of its threads is inside MPI) still wait
//!   holding it, as do the calls that need another call of another process: blocking and
//!   split collective file I/O (the nonblocking forms do not wait) and dynamic processes
//!   (accept, connect, spawn, join). Two threads of one process in such calls that need each
//!   other's processes can deadlock (MPICH's threads/spawn/th_taskmanager: two threads spawning
//!   at once).
//! - `MPI_Finalize` while another thread is inside MPI is the application's error (MPI-3.1 §12.4.3
//!   requires the other threads to have finished their calls). Reflex takes the lock for it, and a
//!   call that was waiting returns `MPI_ERR_OTHER` when it finds MPI finalised.
//! - The lock is one mutex: threads' calls are serialised, not run in parallel. Waiting threads
//!   poll, they do not sleep on the transport's doorbell (that needs the engine, hence the lock).

use crate::state::{self, Mpi};
use reflex_engine::fabric::Fabric;
use reflex_engine::{Completion, Engine, ErrorClass, MpiError, RequestId, Result};
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError, TryLockError};
use std::time::Duration;

/// `MPI_THREAD_MULTIPLE`.
pub const THREAD_MULTIPLE: i32 = 3;

/// Set once, by `MPI_Init_thread`, when `MPI_THREAD_MULTIPLE` is granted; never cleared.
static MULTIPLE: AtomicBool = AtomicBool::new(false);

/// The process-wide lock of `MPI_THREAD_MULTIPLE`.
static LOCK: Mutex<()> = Mutex::new(());

/// Threads blocked on [`LOCK`]: a waiting call that sees one yields instead of spinning, so that
/// the mutex (which is not fair) goes to the blocked thread.
static BLOCKED: AtomicU32 = AtomicU32::new(0);

thread_local! {
    /// How many calls this thread is inside while holding [`LOCK`] (nested calls count).
    static DEPTH: Cell<u32> = const { Cell::new(0) };
    /// The step a deferred blocking call hands its frame (see [`defer`]).
    static PENDING: RefCell<Option<Step>> = const { RefCell::new(None) };
}

/// Checks once whether a deferred operation is done; when it is, finishes it and returns true.
pub type Step = Box<dyn FnMut(&mut Mpi) -> Result<bool>>;

/// True once `MPI_THREAD_MULTIPLE` was granted: calls must lock. The single-threaded fast path's
/// only cost (one relaxed load and a branch).
///
/// Relaxed is enough: the flag is set inside `MPI_Init_thread`, and MPI forbids calls from other
/// threads before that returns; threads the application creates or wakes later are ordered after
/// it by the application's own synchronisation.
#[inline(always)]
pub fn multiple() -> bool {
    MULTIPLE.load(Ordering::Relaxed)
}

/// Records the granted thread level (called by `MPI_Init_thread`, before any other call can run,
/// and by the progress thread's start); from `MPI_THREAD_MULTIPLE` on, the unlocked fast paths
/// close ([`crate::state::running_fast`]), whatever order the two happen in.
pub(crate) fn set_level(level: i32) {
    if level >= THREAD_MULTIPLE {
        MULTIPLE.store(true, Ordering::Relaxed);
        crate::state::withdraw_fast();
    }
}

/// The lock held by one call (or a nested call of the thread that holds it).
pub struct Held {
    guard: Option<MutexGuard<'static, ()>>,
}

/// Takes the process lock, or only counts the depth when this thread holds it already. (Cold:
/// only `MPI_THREAD_MULTIPLE` calls it, and the single-threaded frames must not grow.)
#[cold]
#[inline(never)]
pub fn lock() -> Held {
    let depth = DEPTH.get();
    let guard = (depth == 0).then(acquire);
    DEPTH.set(depth + 1);
    Held { guard }
}

/// Locks [`LOCK`], counting this thread in [`BLOCKED`] while it has to wait. A panic never
/// unwinds while the lock is held (the frames catch them), so poisoning carries no meaning here.
fn acquire() -> MutexGuard<'static, ()> {
    match LOCK.try_lock() {
        Ok(guard) => guard,
        Err(TryLockError::Poisoned(p)) => p.into_inner(),
        Err(TryLockError::WouldBlock) => {
            BLOCKED.fetch_add(1, Ordering::Relaxed);
            let guard = LOCK.lock().unwrap_or_else(PoisonError::into_inner);
            BLOCKED.fetch_sub(1, Ordering::Relaxed);
            guard
        }
    }
}

impl Held {
    /// The running state, borrowed from the lock: it cannot outlive the hold.
    pub fn running(&mut self) -> Option<&mut Mpi> {
        // SAFETY: this thread holds LOCK (directly or through an outer call of its own), and under
        // MPI_THREAD_MULTIPLE every access to the state is made under LOCK; the returned borrow is
        // tied to `self`, so it ends before the lock can be released.
        unsafe { state::running() }
    }

    /// True for the outermost call of this thread (the one that took the mutex).
    fn outermost(&self) -> bool {
        self.guard.is_some()
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        DEPTH.set(DEPTH.get() - 1);
        // The guard field is dropped after this, releasing the mutex once the depth is back.
    }
}

/// True when the current call must leave its wait to the frame (see the module docs): the level is
/// `MPI_THREAD_MULTIPLE` and this is the outermost call of the thread. False without `MULTIPLE`
/// after one field comparison.
#[inline]
pub fn deferring(w: &Mpi) -> bool {
    w.thread_level >= THREAD_MULTIPLE && outermost_call()
}

/// True when this thread is in exactly one call. Out of line: the compiler would otherwise read
/// the thread-local (a `__tls_get_addr` call in a shared library) before testing the level.
#[cold]
#[inline(never)]
fn outermost_call() -> bool {
    DEPTH.get() == 1
}

/// Hands the frame `step`, to be retried, with the lock released between tries, until it returns
/// `Ok(true)` (done and finished) or an error (dispatched to the error handler). Only valid when
/// [`deferring`] is true, as the last thing the call does before returning `Ok(())`.
pub fn defer(step: impl FnMut(&mut Mpi) -> Result<bool> + 'static) -> Result<()> {
    PENDING.with_borrow_mut(|p| *p = Some(Box::new(step)));
    Ok(())
}

/// Runs a blocking operation that is one engine request: `start` begins it and returns the
/// request; once the request completes it is retired and `finish` gets its completion (to write
/// the status, return its error...).
///
/// Without `MULTIPLE` (or in a nested call) this is `start`, `Engine::wait_retire`, `finish`. Under
/// `MULTIPLE` the wait happens in the frame, without the lock.
///
/// ```ignore
/// // a blocking collective on top of its nonblocking schedule (imp/coll/mod.rs, Mode::Blocking):
/// if threads::deferring(w) {
///     let start = move |w: &mut Mpi| w.world.engine.coll_start(comm, coll);
///     return threads::block_on(w, start, |_, c| c.status.error.map_or(Ok(()), |e| Err(*e)));
/// }
/// w.world.engine.collective(comm, coll) // single-threaded: as before
/// ```
pub fn block_on(
    w: &mut Mpi,
    start: impl FnOnce(&mut Mpi) -> Result<RequestId>,
    finish: impl FnOnce(&mut Mpi, Completion) -> Result<()> + 'static,
) -> Result<()> {
    let id = start(w)?;
    if !deferring(w) {
        let c = w.world.engine.wait_retire(id)?;
        return finish(w, c);
    }
    if let Some(c) = try_retire(w, id)? {
        return finish(w, c); // complete at once (an eager send, an unexpected message)
    }
    let mut finish = Some(finish);
    defer(move |w| {
        let Some(c) = try_retire(w, id)? else {
            return Ok(false);
        };
        let f = finish.take().expect("a step is not run again once done");
        f(w, c).map(|()| true)
    })
}

/// Runs a blocking operation the engine advances by polls rather than as one request: `poll`
/// advances it without waiting and returns its result once there is one; `finish` gets that
/// result (to write handles, register objects...).
///
/// Without `MULTIPLE` (or in a nested call) this is [`Engine::wait_for`], then `finish`. Under
/// `MULTIPLE` `poll` is retried by the frame, without the lock in between.
pub fn poll_on<R: 'static>(
    w: &mut Mpi,
    mut poll: impl FnMut(&mut Engine<Fabric>) -> Result<Option<R>> + 'static,
    finish: impl FnOnce(&mut Mpi, R) -> Result<()> + 'static,
) -> Result<()> {
    if !deferring(w) {
        let r = w.world.engine.wait_for(&mut poll)?;
        return finish(w, r);
    }
    if let Some(r) = poll(&mut w.world.engine)? {
        return finish(w, r);
    }
    let mut finish = Some(finish);
    defer(move |w| {
        let Some(r) = poll(&mut w.world.engine)? else {
            return Ok(false);
        };
        let f = finish.take().expect("a step is not run again once done");
        f(w, r).map(|()| true)
    })
}

/// [`poll_on`] for an operation whose poll only tells whether it is done (and finished).
pub fn poll_until(
    w: &mut Mpi,
    mut done: impl FnMut(&mut Engine<Fabric>) -> Result<bool> + 'static,
) -> Result<()> {
    poll_on(w, move |e| Ok(done(e)?.then_some(())), |_, ()| Ok(()))
}

/// Retires `id` if it is complete (no progress made).
pub fn try_retire(w: &mut Mpi, id: RequestId) -> Result<Option<Completion>> {
    let e = &mut w.world.engine;
    if !e.is_complete(id)? {
        return Ok(None);
    }
    e.retire(id).map(Some)
}

/// Takes the step the call just deferred, if any.
pub(crate) fn take_deferred() -> Option<Step> {
    PENDING.with_borrow_mut(Option::take)
}

/// What a deferred wait ends with: done, an error to dispatch, or MPI gone.
pub(crate) enum Waited {
    /// The step finished the operation.
    Done,
    /// The step (or progress) failed: the error to dispatch.
    Failed(MpiError),
    /// `MPI_Finalize` ran while the call waited.
    Finalised,
}

/// Retries `step` until it finishes, releasing the lock between tries (module docs, step 2).
/// `held` is the outermost hold of the call that deferred; the lock is held again on return.
pub(crate) fn wait_deferred(mut held: Held, mut step: Step) -> (Held, Waited) {
    debug_assert!(
        held.outermost(),
        "only the outermost call releases the lock"
    );
    let mut backoff: Option<Backoff> = None;
    loop {
        let Some(mpi) = held.running() else {
            return (held, Waited::Finalised);
        };
        let outcome = crate::call::guarded(|| step(&mut *mpi));
        let tuning = mpi.world.engine.tuning();
        match outcome {
            Ok(true) => return (held, Waited::Done),
            Ok(false) => {}
            Err(e) => return (held, Waited::Failed(e)),
        }
        let backoff = backoff.get_or_insert_with(|| Backoff::new(tuning));
        // Moving `held` ends every borrow obtained from it: nothing outlives the release.
        drop(held);
        backoff.pause();
        held = lock();
        let Some(mpi) = held.running() else {
            return (held, Waited::Finalised);
        };
        match crate::call::guarded(|| mpi.world.engine.poll()) {
            Ok(events) => backoff.record(events),
            Err(e) => return (held, Waited::Failed(e)),
        }
    }
}

/// The error a call that waited returns when MPI was finalised meanwhile.
pub(crate) fn finalised_while_waiting(name: &str) -> MpiError {
    MpiError::new(
        ErrorClass::Other,
        format!("MPI_Finalize was called while {name} was waiting (the application's error)"),
    )
}

/// Spin, then yield, then sleep: the pause between two tries of a deferred wait.
struct Backoff {
    idle: u32,
    spin: u32,
    yields: u32,
    sleep: Duration,
    max_sleep: Duration,
}

/// `spin_loop` hints per spinning pause: short, since a message that arrives during the pause waits
/// for its end (threads blocked on the mutex are handed it by yielding, see [`BLOCKED`]).
const SPIN_BATCH: u32 = 4;
/// First sleep once spinning and yielding found nothing; it doubles up to the doorbell sleep.
const FIRST_SLEEP: Duration = Duration::from_micros(20);

impl Backoff {
    fn new(t: reflex_engine::Tuning) -> Self {
        Self {
            idle: 0,
            spin: t.spin_polls,
            yields: t.yield_polls,
            sleep: FIRST_SLEEP,
            max_sleep: t.sleep.max(FIRST_SLEEP),
        }
    }

    /// Something happened: start spinning again.
    fn record(&mut self, events: usize) {
        if events > 0 {
            self.idle = 0;
            self.sleep = FIRST_SLEEP;
        }
    }

    fn pause(&mut self) {
        self.idle = self.idle.saturating_add(1);
        if BLOCKED.load(Ordering::Relaxed) > 0 {
            std::thread::yield_now();
        } else if self.idle <= self.spin {
            for _ in 0..SPIN_BATCH {
                std::hint::spin_loop();
            }
        } else if self.idle <= self.spin.saturating_add(self.yields) {
            std::thread::yield_now();
        } else {
            std::thread::sleep(self.sleep);
            self.sleep = (self.sleep * 2).min(self.max_sleep);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tests that take the process lock run one at a time (the test harness runs tests on
    /// parallel threads).
    static SERIAL: Mutex<()> = Mutex::new(());

    fn serial() -> MutexGuard<'static, ()> {
        SERIAL.lock().unwrap_or_else(PoisonError::into_inner)
    }

    #[test]
    fn nested_calls_count_depth_and_take_the_mutex_once() {
        let _serial = serial();
        let outer = lock();
        assert!(outer.outermost());
        let inner = lock(); // would deadlock if it locked the mutex again
        assert!(!inner.outermost());
        assert_eq!(DEPTH.get(), 2);
        drop(inner);
        assert_eq!(DEPTH.get(), 1);
        drop(outer);
        assert_eq!(DEPTH.get(), 0);
        assert!(LOCK.try_lock().is_ok(), "released by the outermost hold");
    }

    #[test]
    fn a_blocked_thread_is_counted_and_gets_the_lock_once_released() {
        let _serial = serial();
        let held = lock();
        let other = std::thread::spawn(|| {
            let h = lock();
            assert!(h.outermost());
        });
        while BLOCKED.load(Ordering::Relaxed) == 0 {
            std::thread::yield_now();
        }
        drop(held);
        other.join().expect("the other thread took the lock");
        assert_eq!(BLOCKED.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn a_deferred_step_is_handed_to_the_frame_once() {
        defer(|_| Ok(true)).expect("defer never fails");
        assert!(take_deferred().is_some());
        assert!(take_deferred().is_none());
    }
}
