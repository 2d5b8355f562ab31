//! How long a waiting rank spins before it gives its CPU away, adapted to whether it shares
//! that CPU.
//!
//! A rank waiting for a peer first polls (`REFLEX_SPIN_POLLS` empty rounds), then yields, then
//! sleeps on its doorbell. Spinning is right while the peer runs on another core: the answer
//! lands during the spin. It is wrong when the peer (or anything else) waits for this rank's
//! core: every hand-over then costs the whole spin first. `mpiexec` knows when there are more
//! ranks than cores and cuts the spin at start-up, but the kernel may also put two ranks on one
//! core when other work occupies the rest (a compile beside a ping-pong: Debian's NetPIPE took
//! 30 µs per message that way, 1000 empty polls each).
//!
//! So a wait learns from its yields: `sched_yield` on a core nobody else wants returns in about
//! 0.5-1.2 µs on this project's VM, while one that hands the core to another task takes that
//! task's turn (5 µs on average for two ranks yielding to each other). A wait in which a yield
//! took longer than [`GAVE_AWAY`] halves the spin for the next wait (down to [`MIN_SPIN`]); a
//! wait that polled and ended without one doubles it back up to the configured budget. On
//! dedicated cores waits end while spinning and the budget stays whole.
//!
//! A wait whose condition held at its first check (the data was already there) teaches nothing
//! and leaves the budget alone. Counting it as a spin that succeeded kept the budget at its
//! ceiling with 8 ranks on 2 cores: an allreduce checks each rank's slot in turn, most checks
//! succeed at once, and every wait that did poll then spun its whole (useless) budget before
//! yielding. Loops of 4-byte allreduce / alltoall on 8 ranks took 12.1 / 11.7 µs a call that
//! way, 8.0 / 8.1 with the budget held at 16 polls (2026-11-27, 2-core VM).

use std::time::{Duration, Instant};

/// A yield that took longer than this handed the CPU to another task.
const GAVE_AWAY: Duration = Duration::from_micros(3);
/// The shortest spin: a few polls still catch an answer already on its way.
const MIN_SPIN: u32 = 16;

/// The spin budget of one rank's waits.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SpinBudget {
    now: u32,
    max: u32,
}

impl SpinBudget {
    /// A budget of `max` empty polls, the configured spin.
    pub(crate) fn new(max: u32) -> Self {
        Self { now: max, max }
    }

    /// Empty polls the next wait spins for.
    #[inline]
    pub(crate) fn polls(&self) -> u32 {
        self.now
    }

    /// Yields the CPU; whether the yield handed it to another task (it took long).
    pub(crate) fn yield_cpu() -> bool {
        let start = Instant::now();
        std::thread::yield_now();
        start.elapsed() > GAVE_AWAY
    }

    /// Records the end of a wait: `shared` when one of its yields handed the CPU away.
    #[inline]
    pub(crate) fn ended(&mut self, shared: bool) {
        self.now = match shared {
            true => (self.now / 2).max(MIN_SPIN.min(self.max)),
            false => self
                .now
                .saturating_mul(2)
                .clamp(MIN_SPIN.min(self.max), self.max),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_waits_shorten_the_spin_and_others_restore_it() {
        let mut s = SpinBudget::new(1000);
        s.ended(false);
        assert_eq!(s.polls(), 1000);
        for _ in 0..10 {
            s.ended(true);
        }
        assert_eq!(s.polls(), MIN_SPIN);
        s.ended(false);
        assert_eq!(s.polls(), 2 * MIN_SPIN);
        for _ in 0..10 {
            s.ended(false);
        }
        assert_eq!(s.polls(), 1000);
    }

    #[test]
    fn a_budget_below_the_minimum_is_kept() {
        let mut s = SpinBudget::new(10);
        s.ended(true);
        assert_eq!(s.polls(), 10);
        let mut zero = SpinBudget::new(0);
        zero.ended(false);
        zero.ended(true);
        assert_eq!(zero.polls(), 0);
    }
}
