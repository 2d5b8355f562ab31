//! Performance variables: counters the engine and the transports keep anyway, or keep for tools
//! at the cost of a plain add (`reflex_engine::traffic`), every one `MPI_UNSIGNED_LONG_LONG`,
//! bound to no object.
//!
//! Three behaviours (MPI-4.0 §15.3.7), by how a tool would use each variable:
//! - message and copy counters (class `COUNTER`) are **not continuous**: a handle counts only
//!   while started (`MPI_T_pvar_start` .. `MPI_T_pvar_stop`), from 0, and can be reset or
//!   written (its own count; the engine's is never touched);
//! - queue lengths (class `LEVEL`) and the unexpected queue's peak (`HIGHWATERMARK`, since the
//!   engine started) are **continuous** and read-only: they show the engine's value now;
//! - the transports' slow-path counters (class `COUNTER`) are continuous and read-only too:
//!   counts since the engine started (0 for a transport the process does not use).
//!
//! Before the engine starts every variable reads 0; after it ends, its last value.

use super::error;
use super::live::Counters;
use reflex_engine::{ErrorClass, Result};
use std::ffi::c_int;

/// `MPI_UNSIGNED_LONG_LONG` (MPICH's handle).
pub const MPI_UNSIGNED_LONG_LONG: c_int = 0x4c00_0819;
/// `MPI_T_PVAR_CLASS_*` values used here.
pub const CLASS_LEVEL: c_int = 241;
pub const CLASS_HIGHWATERMARK: c_int = 244;
pub const CLASS_COUNTER: c_int = 246;

/// One performance variable.
#[derive(Debug)]
pub struct Pvar {
    pub name: &'static str,
    pub desc: &'static str,
    pub class: c_int,
    /// Active from the handle's allocation on, never started or stopped.
    pub continuous: bool,
    /// Cannot be written or reset.
    pub readonly: bool,
    /// Its category's name (`super::category`).
    pub category: &'static str,
    /// Its value in a set of counters.
    pub read: fn(&Counters) -> u64,
}

/// A counter that handles start, stop, reset and write.
const fn counter(
    name: &'static str,
    desc: &'static str,
    category: &'static str,
    read: fn(&Counters) -> u64,
) -> Pvar {
    Pvar {
        name,
        desc,
        class: CLASS_COUNTER,
        continuous: false,
        readonly: false,
        category,
        read,
    }
}

/// A continuous read-only variable of `class`.
const fn watch(
    name: &'static str,
    desc: &'static str,
    class: c_int,
    category: &'static str,
    read: fn(&Counters) -> u64,
) -> Pvar {
    Pvar {
        name,
        desc,
        class,
        continuous: true,
        readonly: true,
        category,
        read,
    }
}

const P2P: &str = "reflex_p2p";
const COPY: &str = "reflex_copy";
const SHM: &str = "reflex_shm";
const TCP: &str = "reflex_tcp";

/// Every performance variable.
pub const TABLE: &[Pvar] = &[
    counter(
        "reflex_messages_sent",
        "messages this process sent (point-to-point, and the messages of collective schedules, \
         one-sided and partitioned communication; not collectives run on the shared-memory \
         board)",
        P2P,
        |c| c.traffic.messages_sent,
    ),
    counter(
        "reflex_bytes_sent",
        "payload bytes of the messages this process sent",
        P2P,
        |c| c.traffic.bytes_sent,
    ),
    counter(
        "reflex_messages_received",
        "messages that arrived for this process (matched at once or queued as unexpected)",
        P2P,
        |c| c.traffic.messages_received,
    ),
    counter(
        "reflex_bytes_received",
        "payload bytes of the messages that arrived for this process (as sent)",
        P2P,
        |c| c.traffic.bytes_received,
    ),
    watch(
        "reflex_unexpected_queue_length",
        "messages that arrived before their receive was posted, waiting now",
        CLASS_LEVEL,
        P2P,
        |c| c.queues.unexpected as u64,
    ),
    watch(
        "reflex_unexpected_queue_peak",
        "most messages the unexpected queue has held at once since MPI started",
        CLASS_HIGHWATERMARK,
        P2P,
        |c| c.traffic.unexpected_peak,
    ),
    watch(
        "reflex_posted_queue_length",
        "receives posted and not yet matched now",
        CLASS_LEVEL,
        P2P,
        |c| c.queues.posted as u64,
    ),
    watch(
        "reflex_outbox_length",
        "sends and control packets waiting for room in the transport now (back-pressure)",
        CLASS_LEVEL,
        P2P,
        |c| c.queues.outbox as u64,
    ),
    counter(
        "reflex_collectives_started",
        "collective operations this process started: on the shared-memory board, or as a \
         schedule of messages (nonblocking ones, each start of a persistent one, blocking ones \
         that do not fit the board)",
        "reflex_coll",
        |c| c.traffic.collectives,
    ),
    watch(
        "reflex_schedules_in_progress",
        "collective schedules and partitioned requests being advanced now",
        CLASS_LEVEL,
        "reflex_coll",
        |c| c.queues.schedules as u64,
    ),
    counter(
        "reflex_copy_packed_bytes",
        "bytes copied out of application send buffers (into shared-memory cells, chunks or \
         temporary buffers)",
        COPY,
        |c| c.copies.packed,
    ),
    counter(
        "reflex_copy_unpacked_bytes",
        "bytes copied into application receive buffers (from cells or temporary buffers)",
        COPY,
        |c| c.copies.unpacked,
    ),
    counter(
        "reflex_copy_staged_bytes",
        "bytes copied between engine temporary buffers and the transport (unexpected messages, \
         staged and buffered sends)",
        COPY,
        |c| c.copies.staged,
    ),
    counter(
        "reflex_copy_single_bytes",
        "bytes moved by single-copy reads and writes of another process's memory \
         (process_vm_readv/writev)",
        COPY,
        |c| c.copies.single_copy,
    ),
    counter(
        "reflex_copy_streamed_bytes",
        "bytes of eager packets and pipeline chunks copied into shared memory with non-temporal \
         stores, because the receiving core looked far (see reflex_base::stream_copy)",
        COPY,
        |c| c.streamed,
    ),
    watch(
        "reflex_shm_sleeps",
        "waits that blocked in the kernel on the shared-memory doorbell, since MPI started",
        CLASS_COUNTER,
        SHM,
        |c| c.shm.sleeps,
    ),
    watch(
        "reflex_shm_sleep_timeouts",
        "doorbell sleeps that ended by their timeout, since MPI started",
        CLASS_COUNTER,
        SHM,
        |c| c.shm.timeouts,
    ),
    watch(
        "reflex_shm_sleeps_avoided",
        "doorbell sleeps not taken because a packet arrived meanwhile, since MPI started",
        CLASS_COUNTER,
        SHM,
        |c| c.shm.sleeps_avoided,
    ),
    watch(
        "reflex_shm_wakes_sent",
        "wake-ups this process sent to sleeping peers, since MPI started",
        CLASS_COUNTER,
        SHM,
        |c| c.shm.wakes_sent,
    ),
    watch(
        "reflex_tcp_connects",
        "TCP connections this process established, since MPI started",
        CLASS_COUNTER,
        TCP,
        |c| c.tcp.connects,
    ),
    watch(
        "reflex_tcp_accepts",
        "TCP connections this process accepted and kept, since MPI started",
        CLASS_COUNTER,
        TCP,
        |c| c.tcp.accepts,
    ),
    watch(
        "reflex_tcp_partial_sends",
        "TCP frames the kernel did not take whole, since MPI started",
        CLASS_COUNTER,
        TCP,
        |c| c.tcp.partial_sends,
    ),
    watch(
        "reflex_tcp_would_block",
        "TCP sends refused for lack of room (back-pressure), since MPI started",
        CLASS_COUNTER,
        TCP,
        |c| c.tcp.would_block,
    ),
    watch(
        "reflex_tcp_stripes_sent",
        "packets split across several TCP streams, since MPI started",
        CLASS_COUNTER,
        TCP,
        |c| c.tcp.stripes_sent,
    ),
    watch(
        "reflex_tcp_detaches",
        "times a TCP connection whose peer kept answering left the epoll set (read directly), since MPI started",
        CLASS_COUNTER,
        TCP,
        |c| c.tcp.detaches,
    ),
];

/// The variable at `index` (`MPI_T_ERR_INVALID_INDEX` otherwise).
pub fn get(index: c_int) -> Result<(usize, &'static Pvar)> {
    usize::try_from(index)
        .ok()
        .and_then(|i| TABLE.get(i).map(|p| (i, p)))
        .ok_or_else(|| {
            error(
                ErrorClass::TInvalidIndex,
                format!(
                    "{index} is not a performance variable index (there are {})",
                    TABLE.len()
                ),
            )
        })
}

/// The index of the variable named `name` of class `class`.
pub fn index_of(name: &str, class: c_int) -> Option<usize> {
    TABLE
        .iter()
        .position(|p| p.name == name && p.class == class)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_lookups_need_the_class() {
        for (i, p) in TABLE.iter().enumerate() {
            assert_eq!(TABLE.iter().filter(|q| q.name == p.name).count(), 1);
            assert_eq!(index_of(p.name, p.class), Some(i));
            assert!(p.continuous || !p.readonly, "{}", p.name);
        }
        assert_eq!(index_of("reflex_messages_sent", CLASS_LEVEL), None);
        assert!(get(-1).is_err() && get(TABLE.len() as c_int).is_err());
        let mut c = Counters::default();
        c.traffic.bytes_sent = 9;
        assert_eq!((get(1).unwrap().1.read)(&c), 9);
    }
}
