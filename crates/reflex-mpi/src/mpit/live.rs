//! What the interface reads of the process: the configuration in effect and the engine's
//! counters, whether or not the engine runs.
//!
//! Before the engine starts, the configuration is the one `MPI_Init` will read (the
//! environment's `REFLEX_*` settings; the defaults if one of them is malformed, in which case
//! `MPI_Init` will fail and say why) and every counter is 0. While it runs, both come from the
//! engine (the configuration with the control-variable writes made since). When it ends,
//! [`engine_ending`] keeps a copy of both, which the interface shows from then on.

use reflex_base::config::Config;
use reflex_engine::engine::QueueLengths;
use reflex_engine::fabric::{ShmStats, TcpStats};
use reflex_engine::{CopyStats, Traffic};
use std::sync::Mutex;

/// Every counter a performance variable reads, taken at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    pub traffic: Traffic,
    pub copies: CopyStats,
    pub queues: QueueLengths,
    pub shm: ShmStats,
    pub tcp: TcpStats,
    /// `reflex_base::stream_copy::streamed_bytes`.
    pub streamed: u64,
}

/// The configuration and counters of an engine that has ended.
static ENDED: Mutex<Option<(Config, Counters)>> = Mutex::new(None);

fn ended() -> Option<(Config, Counters)> {
    ENDED.lock().unwrap_or_else(|p| p.into_inner()).clone()
}

fn counters_of(mpi: &crate::state::Mpi) -> Counters {
    let engine = &mpi.world.engine;
    let (shm, tcp) = engine.transport_stats();
    Counters {
        traffic: engine.traffic(),
        copies: engine.copy_stats(),
        queues: engine.queue_lengths(),
        shm: shm.unwrap_or_default(),
        tcp: tcp.unwrap_or_default(),
        streamed: reflex_base::stream_copy::streamed_bytes(),
    }
}

/// Called as the engine ends (`engine_leave`): keeps its configuration and final counters.
pub fn engine_ending(mpi: &crate::state::Mpi) {
    // An ended engine has no queues.
    let last = Counters {
        queues: QueueLengths::default(),
        ..counters_of(mpi)
    };
    *ENDED.lock().unwrap_or_else(|p| p.into_inner()) = Some((mpi.world.config.clone(), last));
}

/// The running state, inside an MPI_T frame.
fn running() -> Option<&'static mut crate::state::Mpi> {
    // Called only inside `mpit::frame`, which holds the process lock under MPI_THREAD_MULTIPLE;
    // below it the application makes no other MPI call meanwhile (the thread-level contract
    // MPI_T calls that touch the engine share with every MPI call).
    // SAFETY: no other reference to the MPI state lives while this one is used (above).
    unsafe { crate::state::running() }
}

/// The configuration in effect (or that will be).
pub fn config() -> Config {
    if let Some(mpi) = running() {
        return mpi.world.config.clone();
    }
    if let Some((config, _)) = ended() {
        return config;
    }
    Config::from_env().map(|c| c.config).unwrap_or_default()
}

/// The counters now.
pub fn counters() -> Counters {
    match running() {
        Some(mpi) => counters_of(mpi),
        None => ended().map(|(_, c)| c).unwrap_or_default(),
    }
}

/// The running state, for control-variable writes (`None` before and after the engine runs).
pub fn running_mpi() -> Option<&'static mut crate::state::Mpi> {
    running()
}
