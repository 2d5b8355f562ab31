//! The optional progress thread (`REFLEX_PROGRESS_THREAD=on`): the NIC-offloaded progress of
//! the papers (a NIC that runs barriers and forwards broadcasts while the host computes), done
//! with a host thread.
//!
//! Without it, a nonblocking collective or a rendezvous transfer advances only while its process
//! is inside an MPI call, so `MPI_Iallreduce`, then C µs of computation, then `MPI_Wait` takes
//! about C + T. With it, a thread of each rank takes the process lock, polls the engine once
//! (which runs collective schedules and transfers), releases the lock and pauses:
//! `REFLEX_PROGRESS_US` while something is in flight, 1 ms when nothing is, so an idle rank costs
//! little CPU. Every MPI call of the application then takes the process lock as under
//! `MPI_THREAD_MULTIPLE` (the level reported to the application is still the one it asked for).
//!
//! The thread ends by itself once `MPI_Finalize` has run: it finds no running state when it next
//! takes the lock. It is never joined, so `MPI_Finalize` does not wait for its pause.

use crate::threads;
use std::time::Duration;

/// The pause when nothing is in flight.
const IDLE_PAUSE: Duration = Duration::from_millis(1);

/// Starts the progress thread, polling every `busy_pause` while operations are pending.
pub fn start(busy_pause: Duration) -> std::io::Result<()> {
    threads::set_level(threads::THREAD_MULTIPLE);
    std::thread::Builder::new()
        .name("reflex-progress".into())
        .spawn(move || run(busy_pause))
        .map(|_| ())
}

fn run(busy_pause: Duration) {
    // Short pauses must stay short: the default timer slack (50 µs) would stretch a 20 µs sleep
    // to 70 µs, and every step of a transfer waits for one poll.
    // SAFETY: prctl(PR_SET_TIMERSLACK) takes a number of nanoseconds and touches no memory.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1000) };
    loop {
        let busy = {
            let mut held = threads::lock();
            let Some(mpi) = held.running() else {
                return; // MPI_Finalize has run
            };
            let engine = &mut mpi.world.engine;
            // Errors (a peer that died) surface in the application's own calls.
            let events = crate::call::guarded(|| engine.poll()).unwrap_or(0);
            events > 0 || engine.busy()
        };
        std::thread::sleep(if busy { busy_pause } else { IDLE_PAUSE });
    }
}
