//! Reflex's shared-memory transport: the Memory Channel of today (DESIGN.md, "Shared memory").
//!
//! Ranks of one node exchange packets through per-pair lock-free rings in one shared segment, after
//! UMP (`shared/reference/seed002_003.md` §A1.4); see the crate README for the map of files.
//! - [`ring`]: the single-producer single-consumer packet ring (model-checked with loom).

#![warn(missing_docs)]

pub mod ring;
mod sync;
pub mod testkit;
