//! The atomics the ring protocol uses, from `std` normally and from `loom` in test builds under
//! `--cfg loom` (loom is a dev-dependency, so a plain build with that flag keeps `std`).
//!
//! The model-checked code (the [`crate::ring`] protocol) takes its atomics only from here, as
//! crossbeam-utils (`mod primitive`) and tokio (`crate::loom`) do, so that one source is both run and
//! model-checked. Code that places atomics in shared memory by address (segment layout, doorbells)
//! uses `std` directly: loom atomics cannot live in a mapped file.

#[cfg(all(loom, test))]
pub(crate) use loom::sync::atomic::{AtomicU64, Ordering};
#[cfg(not(all(loom, test)))]
pub(crate) use std::sync::atomic::{AtomicU64, Ordering};
