//! Futex wait and wake on a 32-bit word, across processes (Linux `futex(2)`).
//!
//! These are the block half of Reflex's spin-then-block waiting: a rank that found nothing to do
//! for a while sleeps on a *doorbell* word in shared memory, and a peer that gives it work bumps the
//! word and wakes it. The calls use the shared (not `FUTEX_PRIVATE_FLAG`) operations, because the
//! word lives in a mapping shared by several processes; the kernel then keys the wait queue by the
//! backing page rather than by the virtual address, so each process may map the segment anywhere.
//!
//! Lost wake-ups are avoided the usual way (Drepper, "Futexes Are Tricky", 2011): the waiter reads
//! the word, re-checks its condition, and passes the value it read as `expected`; the kernel sleeps
//! only if the word still holds it. A waker changes the word *before* calling [`futex_wake`].

use std::io;
use std::sync::atomic::AtomicU32;
use std::time::Duration;

/// How a [`futex_wait`] returned (none of these is an error).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FutexWait {
    /// Woken by [`futex_wake`] (or spuriously: callers re-check their condition).
    Woken,
    /// The word no longer held `expected`, so the call did not sleep.
    Changed,
    /// The timeout passed.
    TimedOut,
    /// A signal interrupted the wait.
    Interrupted,
}

/// Sleeps while `word` holds `expected`, at most `timeout` (forever with `None`).
///
/// Returns `Err` only for errors that mean a bug (an unaligned or unmapped word).
pub fn futex_wait(
    word: &AtomicU32,
    expected: u32,
    timeout: Option<Duration>,
) -> io::Result<FutexWait> {
    let ts = timeout.map(duration_to_timespec);
    let ts_ptr = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `word` is a valid, aligned 32-bit atomic for the whole call (it is borrowed); the
    // kernel only reads it. `ts_ptr` is null or points to `ts`, alive until the call returns. The
    // remaining arguments (uaddr2, val3) are ignored by FUTEX_WAIT.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            expected,
            ts_ptr,
            std::ptr::null::<u32>(),
            0u32,
        )
    };
    if rc == 0 {
        return Ok(FutexWait::Woken);
    }
    let err = io::Error::last_os_error();
    match err.raw_os_error() {
        Some(libc::EAGAIN) => Ok(FutexWait::Changed),
        Some(libc::ETIMEDOUT) => Ok(FutexWait::TimedOut),
        Some(libc::EINTR) => Ok(FutexWait::Interrupted),
        _ => Err(io::Error::new(
            err.kind(),
            format!("futex wait failed: {err}"),
        )),
    }
}

/// Wakes at most `n` processes sleeping on `word`; returns how many were woken.
pub fn futex_wake(word: &AtomicU32, n: u32) -> io::Result<usize> {
    let n = n.min(i32::MAX as u32);
    // SAFETY: `word` is a valid, aligned 32-bit atomic (borrowed for the call); FUTEX_WAKE does not
    // access memory through it, it only uses its address as the wait-queue key. The timeout,
    // uaddr2 and val3 arguments are ignored by FUTEX_WAKE.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE,
            n,
            std::ptr::null::<libc::timespec>(),
            std::ptr::null::<u32>(),
            0u32,
        )
    };
    if rc < 0 {
        let err = io::Error::last_os_error();
        return Err(io::Error::new(
            err.kind(),
            format!("futex wake failed: {err}"),
        ));
    }
    Ok(rc as usize)
}

/// A relative timeout as the kernel wants it, saturating instead of overflowing.
fn duration_to_timespec(d: Duration) -> libc::timespec {
    libc::timespec {
        tv_sec: d.as_secs().min(i64::MAX as u64) as libc::time_t,
        tv_nsec: d.subsec_nanos() as libc::c_long,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;
    use std::sync::Arc;

    #[test]
    fn wait_returns_at_once_when_the_word_changed() {
        let w = AtomicU32::new(5);
        assert_eq!(futex_wait(&w, 4, None).unwrap(), FutexWait::Changed);
    }

    #[test]
    fn wait_times_out() {
        let w = AtomicU32::new(0);
        let r = futex_wait(&w, 0, Some(Duration::from_micros(1))).unwrap();
        // A spurious wake-up is allowed by the kernel's contract, so accept it too.
        assert!(matches!(r, FutexWait::TimedOut | FutexWait::Woken), "{r:?}");
    }

    #[test]
    fn huge_timeouts_saturate() {
        let ts = duration_to_timespec(Duration::from_secs(u64::MAX));
        assert_eq!(ts.tv_sec, i64::MAX as libc::time_t);
    }

    #[test]
    fn wake_reaches_a_waiter_in_another_thread() {
        let w = Arc::new(AtomicU32::new(0));
        let w2 = Arc::clone(&w);
        let waiter = std::thread::spawn(move || {
            // Correct whatever the interleaving: the loop ends once the word changed.
            while w2.load(Ordering::Acquire) == 0 {
                futex_wait(&w2, 0, None).unwrap();
            }
        });
        w.store(1, Ordering::Release);
        futex_wake(&w, 1).unwrap();
        waiter.join().unwrap();
    }

    #[test]
    fn wake_without_waiters_wakes_nobody() {
        let w = AtomicU32::new(0);
        assert_eq!(futex_wake(&w, u32::MAX).unwrap(), 0);
    }
}
