//! Rings in private (heap) memory: a rank's packets to itself, tests and benchmarks.
//!
//! The same protocol as the shared rings, over one zeroed allocation laid out like a ring in the
//! segment (control line, then cells); the allocation lives as long as either endpoint.

use super::{ring_cells, Consumer, Producer, RingCtl, RingMem};
use reflex_base::cache::CACHE_PAD;
use std::alloc::{self, Layout};
use std::io;
use std::ptr::NonNull;
use std::sync::Arc;

/// One zeroed allocation: a [`RingCtl`] then the cells.
struct HeapMem {
    ptr: NonNull<u8>,
    layout: Layout,
}

// SAFETY: the allocation is plain memory owned by this value; the endpoints access it under the
// ring protocol only, from whichever thread holds them.
unsafe impl Send for HeapMem {}
// SAFETY: `&HeapMem` gives no access to the bytes; see Send.
unsafe impl Sync for HeapMem {}

impl Drop for HeapMem {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from `alloc_zeroed(layout)` and is freed once, here.
        unsafe { alloc::dealloc(self.ptr.as_ptr(), self.layout) };
    }
}

/// A fresh ring of `ring_bytes` bytes of cells in private memory, as its two endpoints.
pub fn heap_ring(ring_bytes: usize) -> io::Result<(Producer, Consumer)> {
    let ncells =
        ring_cells(ring_bytes).map_err(|m| io::Error::new(io::ErrorKind::InvalidInput, m))?;
    let layout = Layout::from_size_align(CACHE_PAD + ring_bytes, CACHE_PAD)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("ring layout: {e}")))?;
    // SAFETY: the layout has a non-zero size (ring_bytes >= MIN_RING_BYTES).
    let raw = unsafe { alloc::alloc_zeroed(layout) };
    let ptr = NonNull::new(raw).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::OutOfMemory,
            format!("cannot allocate a ring of {ring_bytes} bytes"),
        )
    })?;
    let owner = Arc::new(HeapMem { ptr, layout });
    // SAFETY: the control line sits at offset 0 (aligned to CACHE_PAD) and the cells right after it
    // (aligned to CACHE_PAD, hence to CELL), all inside the zeroed allocation, which `owner` keeps
    // alive as long as either endpoint; ncells is a power of two (ring_cells checked it).
    let mem = unsafe {
        let cells = NonNull::new_unchecked(ptr.as_ptr().add(CACHE_PAD));
        RingMem::new(ptr.cast::<RingCtl>(), cells, ncells).with_owner(owner)
    };
    // SAFETY: the ring is fresh and these are its only two endpoints.
    Ok(unsafe { (Producer::new(mem.clone()), Consumer::new(mem)) })
}
