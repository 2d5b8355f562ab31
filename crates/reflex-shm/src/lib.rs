//! Reflex's shared-memory transport: the Memory Channel of today (DESIGN.md, "Shared memory").
//!
//! Ranks of one node exchange packets through per-pair lock-free rings in one shared segment, after
//! UMP (`shared/reference/seed002_003.md` §A1.4); the crate README maps concepts to files.
//! - [`ShmSegment`]: the node's segment (header, rank slots, rings), created by the node's leader;
//! - [`ShmTransport`]: one rank's [`reflex_base::transport::Transport`] over it;
//! - [`ring`]: the single-producer single-consumer packet ring (model-checked with loom);
//! - [`board`]: shared flags and slots for the shared-memory collectives;
//! - [`window`]: shared-memory RMA windows (every rank's memory and lock words in one segment);
//! - [`cma`]: single-copy transfers between processes (`process_vm_readv`) for large messages.

#![warn(missing_docs)]

#[cfg(not(all(loom, test)))]
pub mod board;
#[cfg(not(all(loom, test)))]
pub mod cma;
#[cfg(not(all(loom, test)))]
mod doorbell;
pub mod ring;
#[cfg(not(all(loom, test)))]
mod segment;
mod sync;
pub mod testkit;
#[cfg(not(all(loom, test)))]
mod transport;
#[cfg(not(all(loom, test)))]
pub mod window;

#[cfg(not(all(loom, test)))]
pub use doorbell::WakeOrdering;
#[cfg(not(all(loom, test)))]
pub use segment::{ShmParams, ShmSegment, DEFAULT_RING_BYTES, MAX_AUTO_RING_BYTES, MAX_RANKS};
#[cfg(not(all(loom, test)))]
pub use transport::{ShmStats, ShmTransport, POLL_BURST};
