//! Doorbells: how a rank that ran out of spinning sleeps, and how a sender wakes it (spin-then-block).
//!
//! Each rank's slot holds a futex word (`doorbell`) and a `sleeping` flag. The two sides:
//!
//! ```text
//!  sleeper (rank r)                         sender (to rank r)
//!  seen = doorbell.load()                   header.store(READY|len, Release)   // publish
//!  sleeping.store(1)                        ORDER                              // see below
//!  BARRIER                                  if sleeping.load() == 1            // one cached load
//!  if any incoming ring has a packet:           && sleeping.swap(0) == 1:      // one waker only
//!      sleeping.store(0); return                doorbell += 1
//!  futex_wait(doorbell, seen, timeout)          futex_wake(doorbell)
//!  sleeping.store(0)
//! ```
//!
//! This is Dekker's pattern: each side stores, then loads what the other stores. A lost wake-up
//! would need the sender to read `sleeping == 0` *and* the sleeper to miss the packet, which the
//! store-load ordering on both sides rules out: whichever side's barrier comes second sees the
//! other's store. If the sender's bump lands between the sleeper's check and its `futex_wait`, the
//! kernel sees `doorbell != seen` and does not sleep.
//!
//! The sender's store-load ordering is on the fast path of every send, so it is made as cheap as
//! possible ([`WakeOrdering`]):
//! - [`WakeOrdering::Membarrier`] (the default where the kernel has it): the sender has only a
//!   *compiler* fence; the sleeper's BARRIER is `membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED)`, which
//!   makes every running thread of every registered process execute a full barrier (Linux 4.16,
//!   `membarrier(2)`; the pattern of its man page). If the sender's flag load comes before that
//!   barrier point, so did its publish (program order, kept by the compiler fence), and the barrier
//!   makes the publish visible to the sleeper's re-check; if after, it sees `sleeping == 1`. The
//!   sleeper pays about 1-2 µs per sleep, on a path that is about to block anyway.
//! - [`WakeOrdering::Fence`]: the sender issues a `SeqCst` fence (`mfence` on x86, 10-30 ns), and the
//!   sleeper a `SeqCst` fence too: the C++ fence-fence rule gives the ordering.
//!
//! The sleeper always issues a `SeqCst` fence and, where the kernel supports it, the membarrier, so
//! senders of either kind may be mixed. All shared words here are `std` atomics: they live in the
//! mapped file, where loom cannot model them; the protocol is small enough to argue by hand (above).

use crate::segment::RankSlot;
use reflex_base::futex::{futex_wait, futex_wake};
use std::io;
use std::sync::atomic::{compiler_fence, fence, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

/// How a sender orders its publish before it reads the receiver's `sleeping` flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WakeOrdering {
    /// A full fence on every send: works on every kernel.
    Fence,
    /// A compiler fence on sends; sleepers issue `membarrier(2)` instead. Needs Linux 4.16 or later.
    Membarrier,
}

/// `<linux/membarrier.h>` commands used here.
const MEMBARRIER_CMD_QUERY: libc::c_int = 0;
const MEMBARRIER_CMD_GLOBAL_EXPEDITED: libc::c_int = 1 << 1;
const MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED: libc::c_int = 1 << 2;

fn membarrier(cmd: libc::c_int) -> io::Result<libc::c_long> {
    // SAFETY: membarrier takes two integers (cmd, flags; cpu_id unused) and touches no memory of ours.
    let rc = unsafe { libc::syscall(libc::SYS_membarrier, cmd, 0u32, 0i32) };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

/// Whether this kernel offers the global expedited membarrier (asked once per process).
pub(crate) fn membarrier_supported() -> bool {
    static SUPPORTED: OnceLock<bool> = OnceLock::new();
    *SUPPORTED.get_or_init(|| {
        let want = (MEMBARRIER_CMD_GLOBAL_EXPEDITED | MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED)
            as libc::c_long;
        membarrier(MEMBARRIER_CMD_QUERY).is_ok_and(|cmds| cmds & want == want)
    })
}

/// Picks the wake ordering for this process: `Membarrier` if `wanted` and the kernel agrees.
///
/// Registers the process as a target of expedited barriers (idempotent), which a `Membarrier`
/// sender must be before its first send.
pub(crate) fn choose_ordering(wanted: WakeOrdering) -> io::Result<WakeOrdering> {
    if wanted == WakeOrdering::Fence {
        return Ok(WakeOrdering::Fence);
    }
    if !membarrier_supported() {
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "membarrier global expedited is not available",
        ));
    }
    membarrier(MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED)
        .map_err(|e| io::Error::new(e.kind(), format!("cannot register for membarrier: {e}")))?;
    Ok(WakeOrdering::Membarrier)
}

/// The sender's half: after publishing a packet to the owner of `slot`, wake it if it sleeps.
#[inline(always)]
pub(crate) fn ring_after_publish(slot: &RankSlot, ordering: WakeOrdering) -> bool {
    match ordering {
        WakeOrdering::Fence => fence(Ordering::SeqCst),
        WakeOrdering::Membarrier => compiler_fence(Ordering::SeqCst),
    }
    if slot.sleeping.load(Ordering::Relaxed) == 0 {
        return false;
    }
    wake(slot)
}

/// Wakes the owner of `slot`, unless another sender just did (the swap elects one waker).
#[cold]
#[inline(never)]
fn wake(slot: &RankSlot) -> bool {
    if slot.sleeping.swap(0, Ordering::Relaxed) == 0 {
        return false;
    }
    slot.doorbell.fetch_add(1, Ordering::Release);
    // A failure here would mean an unmapped word, impossible for a live segment; the sleeper's
    // timeout bounds the damage anyway.
    let _ = futex_wake(&slot.doorbell, 1);
    true
}

/// How a [`sleep`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Slept {
    /// A packet was already there after the barrier: did not block.
    Pending,
    /// Blocked and was woken (or the doorbell moved before blocking, or a signal came).
    Woken,
    /// Blocked until the timeout.
    TimedOut,
    /// Could not issue the barrier that makes blocking safe: returned at once.
    NoBarrier,
}

/// The sleeper's half: block on `slot`'s doorbell unless `pending()` finds a packet after the flag is
/// up and the barrier done.
pub(crate) fn sleep(slot: &RankSlot, timeout: Duration, pending: impl Fn() -> bool) -> Slept {
    let seen = slot.doorbell.load(Ordering::Acquire);
    slot.sleeping.store(1, Ordering::Relaxed);
    fence(Ordering::SeqCst);
    if membarrier_supported() && membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED).is_err() {
        slot.sleeping.store(0, Ordering::Relaxed);
        return Slept::NoBarrier;
    }
    if pending() {
        slot.sleeping.store(0, Ordering::Relaxed);
        return Slept::Pending;
    }
    let r = futex_wait(&slot.doorbell, seen, Some(timeout));
    slot.sleeping.store(0, Ordering::Relaxed);
    match r {
        Ok(reflex_base::futex::FutexWait::TimedOut) => Slept::TimedOut,
        _ => Slept::Woken,
    }
}
