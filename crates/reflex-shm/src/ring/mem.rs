//! Where a ring's bytes live: raw shared (or heap) memory normally, a loom model under `--cfg loom`.
//!
//! The protocol in [`super`] sees a ring only through [`RingMem`]: the header word of a cell, the
//! consumer's published position, a pointer to a cell's bytes, and two no-op hooks
//! (`track_write`/`track_read`) that under loom record every payload access in a per-cell
//! `loom::cell::UnsafeCell`, so that loom reports a producer write not ordered before a consumer read.
//!
//! One difference of the model: in real memory the header word of a cell is the first 8 bytes of
//! the cell, overwritten by the payload of packets that span it; in the model headers are separate
//! atomics that keep their last value. Both are "any stale value" to the protocol, which never reads
//! a header it has not itself zeroed or been published (see the proof in `super`'s docs).

use super::CELL;
use crate::sync::AtomicU64;

#[cfg(not(all(loom, test)))]
pub(crate) use raw::RingMem;

#[cfg(all(loom, test))]
pub(crate) use model::RingMem;

/// The shared control block of one ring: the consumer's published position, alone on its line.
#[cfg(not(all(loom, test)))]
#[repr(C)]
#[derive(Debug, Default)]
pub struct RingCtl {
    /// Cells the consumer has finished with (monotonic, never wraps in practice: 2^64 cells).
    /// Written only by the consumer, with Release; read by the producer, with Acquire.
    pub(crate) tail: reflex_base::cache::CachePadded<AtomicU64>,
}

#[cfg(not(all(loom, test)))]
const _: () = assert!(std::mem::size_of::<RingCtl>() == reflex_base::cache::CACHE_PAD);

#[cfg(not(all(loom, test)))]
mod raw {
    use super::{AtomicU64, RingCtl, CELL};
    use std::any::Any;
    use std::ptr::NonNull;
    use std::sync::Arc;

    /// A view of one ring in memory that outlives it (see [`RingMem::new`]).
    #[derive(Debug, Clone)]
    pub(crate) struct RingMem {
        cells: NonNull<u8>,
        ctl: NonNull<RingCtl>,
        ncells: u64,
        /// Keeps owned (heap) ring memory alive as long as an endpoint uses it.
        _owner: Option<Arc<dyn Any + Send + Sync>>,
    }

    impl RingMem {
        /// A view of the ring whose control block is at `ctl` and whose `ncells` cells start at `cells`.
        ///
        /// # Safety
        /// - `ctl` points to a `RingCtl` and `cells` to `ncells * CELL` bytes, both aligned (`ctl` to
        ///   its type, `cells` to `CELL`), valid for reads and writes for as long as any copy of the
        ///   view is used, and accessed by other processes or threads only through this protocol;
        /// - `ncells` is a power of two;
        /// - all of it was zeroed before the ring was first used.
        pub(crate) unsafe fn new(ctl: NonNull<RingCtl>, cells: NonNull<u8>, ncells: u64) -> Self {
            debug_assert!(ncells.is_power_of_two());
            debug_assert_eq!(cells.as_ptr() as usize % CELL, 0);
            Self {
                cells,
                ctl,
                ncells,
                _owner: None,
            }
        }

        /// The same view, keeping `owner` (the allocation holding the ring) alive while it exists.
        pub(crate) fn with_owner(self, owner: Arc<dyn Any + Send + Sync>) -> Self {
            Self {
                _owner: Some(owner),
                ..self
            }
        }

        pub(crate) fn ncells(&self) -> u64 {
            self.ncells
        }

        /// The header word at the start of cell `idx`.
        #[inline(always)]
        pub(crate) fn header(&self, idx: u64) -> &AtomicU64 {
            debug_assert!(idx < self.ncells);
            // SAFETY: idx < ncells, so the cell is inside the ring (`new`'s contract); cells are
            // CELL-aligned, so the word is aligned for AtomicU64; the memory outlives `self`.
            unsafe {
                &*self
                    .cells
                    .as_ptr()
                    .add(idx as usize * CELL)
                    .cast::<AtomicU64>()
            }
        }

        /// The consumer's published position.
        #[inline(always)]
        pub(crate) fn tail(&self) -> &AtomicU64 {
            // SAFETY: `ctl` points to a live, aligned RingCtl (`new`'s contract).
            unsafe { &self.ctl.as_ref().tail }
        }

        /// The first byte of cell `idx`.
        #[inline(always)]
        pub(crate) fn cell_ptr(&self, idx: u64) -> *mut u8 {
            debug_assert!(idx < self.ncells);
            // SAFETY: idx < ncells keeps the offset inside the ring.
            unsafe { self.cells.as_ptr().add(idx as usize * CELL) }
        }

        #[inline(always)]
        pub(crate) fn track_write(&self, _idx: u64, _cells: u64) {}

        #[inline(always)]
        pub(crate) fn track_read(&self, _idx: u64, _cells: u64) {}
    }
}

#[cfg(all(loom, test))]
mod model {
    use super::{AtomicU64, CELL};
    use std::sync::Arc;

    #[repr(C, align(64))]
    struct Cell(std::cell::UnsafeCell<[u8; CELL]>);

    struct Inner {
        headers: Box<[AtomicU64]>,
        tail: AtomicU64,
        bytes: Box<[Cell]>,
        access: Box<[loom::cell::UnsafeCell<()>]>,
    }

    // SAFETY: the plain bytes are only accessed under the ring protocol, whose ordering loom checks
    // through `access`; everything else in `Inner` is a loom synchronisation object.
    unsafe impl Send for Inner {}
    // SAFETY: as for Send.
    unsafe impl Sync for Inner {}

    /// A ring modelled for loom: headers and the tail are loom atomics, payload accesses are tracked.
    #[derive(Clone)]
    pub(crate) struct RingMem(Arc<Inner>);

    impl RingMem {
        /// A fresh, zeroed model ring of `ncells` cells (a power of two).
        pub(crate) fn new_model(ncells: u64) -> Self {
            let n = ncells as usize;
            Self(Arc::new(Inner {
                headers: (0..n).map(|_| AtomicU64::new(0)).collect(),
                tail: AtomicU64::new(0),
                bytes: (0..n)
                    .map(|_| Cell(std::cell::UnsafeCell::new([0; CELL])))
                    .collect(),
                access: (0..n).map(|_| loom::cell::UnsafeCell::new(())).collect(),
            }))
        }

        pub(crate) fn ncells(&self) -> u64 {
            self.0.headers.len() as u64
        }

        pub(crate) fn header(&self, idx: u64) -> &AtomicU64 {
            &self.0.headers[idx as usize]
        }

        pub(crate) fn tail(&self) -> &AtomicU64 {
            &self.0.tail
        }

        pub(crate) fn cell_ptr(&self, idx: u64) -> *mut u8 {
            // Derived from the whole slice, so that a pointer may span consecutive cells.
            let base = self.0.bytes.as_ptr().cast::<u8>().cast_mut();
            // SAFETY: idx < ncells keeps the offset inside the allocation.
            unsafe { base.add(idx as usize * CELL) }
        }

        pub(crate) fn track_write(&self, idx: u64, cells: u64) {
            for c in idx..idx + cells {
                self.0.access[c as usize].with_mut(|_| ());
            }
        }

        pub(crate) fn track_read(&self, idx: u64, cells: u64) {
            for c in idx..idx + cells {
                self.0.access[c as usize].with(|_| ());
            }
        }
    }
}
