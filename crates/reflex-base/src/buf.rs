//! User buffers handed to Reflex through the C ABI.
//!
//! An MPI call receives a raw pointer and a length; the MPI standard makes the caller keep that memory
//! valid (and, for a receive buffer, untouched) until the operation completes. [`SendBuf`] and
//! [`RecvBuf`] carry that promise: they are created by the ABI layer with an `unsafe` constructor that
//! states the obligation once, and from then on the engine reads and writes them with safe methods, so
//! the engine itself needs no `unsafe` code.

use std::ptr::NonNull;

/// Memory the engine may read: the source of a send.
#[derive(Debug, Clone, Copy)]
pub struct SendBuf {
    ptr: NonNull<u8>,
    len: usize,
}

/// Memory the engine may write: the destination of a receive.
#[derive(Debug, Clone, Copy)]
pub struct RecvBuf {
    ptr: NonNull<u8>,
    len: usize,
}

// Send/Sync reason for all four impls: the buffers are plain addresses; the MPI standard forbids
// the application from touching them while an operation is pending, so whichever thread progresses
// the operation has exclusive (RecvBuf) or shared read (SendBuf) access.
// SAFETY: see above.
unsafe impl Send for SendBuf {}
// SAFETY: see above.
unsafe impl Sync for SendBuf {}
// SAFETY: see above.
unsafe impl Send for RecvBuf {}
// SAFETY: see above.
unsafe impl Sync for RecvBuf {}

impl SendBuf {
    /// An empty buffer (count 0 or `MPI_PROC_NULL` peers).
    pub const fn empty() -> Self {
        Self {
            ptr: NonNull::dangling(),
            len: 0,
        }
    }

    /// Wraps `len` readable bytes at `ptr`.
    ///
    /// # Safety
    /// When `len > 0`, `ptr` must be valid for reads of `len` bytes and not be written by anyone
    /// until the engine is done with the buffer (the operation completes), as the MPI standard
    /// requires of a send buffer.
    pub unsafe fn from_raw(ptr: *const u8, len: usize) -> Self {
        match NonNull::new(ptr as *mut u8) {
            Some(ptr) if len > 0 => Self { ptr, len },
            _ => Self::empty(),
        }
    }

    /// Wraps a Rust slice (tests, internal temporary buffers).
    pub fn from_slice(bytes: &'static [u8]) -> Self {
        // SAFETY: a 'static slice stays valid and, being shared, is never written.
        unsafe { Self::from_raw(bytes.as_ptr(), bytes.len()) }
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when the buffer holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Start address, as a peer process would use it for a single-copy read.
    pub fn addr(&self) -> usize {
        self.ptr.as_ptr() as usize
    }

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: the constructor's contract makes `ptr..ptr+len` readable and unmodified while the
        // engine holds the buffer; `empty()` has len 0 with a dangling, aligned pointer.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// A sub-range `[offset, offset+len)`, clamped to the buffer.
    pub fn slice(&self, offset: usize, len: usize) -> SendBuf {
        let offset = offset.min(self.len);
        let len = len.min(self.len - offset);
        // SAFETY: a sub-range of a valid buffer is valid under the same contract.
        unsafe { SendBuf::from_raw(self.ptr.as_ptr().add(offset), len) }
    }
}

impl RecvBuf {
    /// An empty buffer.
    pub const fn empty() -> Self {
        Self {
            ptr: NonNull::dangling(),
            len: 0,
        }
    }

    /// Wraps `len` writable bytes at `ptr`.
    ///
    /// # Safety
    /// When `len > 0`, `ptr` must be valid for writes of `len` bytes and not be accessed by anyone
    /// else until the engine is done with the buffer (the operation completes), as the MPI standard
    /// requires of a receive buffer.
    pub unsafe fn from_raw(ptr: *mut u8, len: usize) -> Self {
        match NonNull::new(ptr) {
            Some(ptr) if len > 0 => Self { ptr, len },
            _ => Self::empty(),
        }
    }

    /// Wraps a leaked Rust slice (tests, internal temporary buffers).
    pub fn from_slice(bytes: &'static mut [u8]) -> Self {
        // SAFETY: a 'static exclusive slice is valid and nobody else can reach it.
        unsafe { Self::from_raw(bytes.as_mut_ptr(), bytes.len()) }
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when the buffer holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Start address (for single-copy reads into it).
    pub fn addr(&self) -> usize {
        self.ptr.as_ptr() as usize
    }

    /// The bytes, writable.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: the constructor's contract gives the engine exclusive access to `ptr..ptr+len`
        // while it holds the buffer; `empty()` has len 0.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    /// The bytes, read-only (e.g. to send a received buffer on, or read an in-place buffer).
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: as for `as_mut_slice`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// A sub-range `[offset, offset+len)`, clamped to the buffer.
    #[inline]
    pub fn slice(&self, offset: usize, len: usize) -> RecvBuf {
        let offset = offset.min(self.len);
        let len = len.min(self.len - offset);
        // SAFETY: a sub-range of a valid buffer is valid under the same contract.
        unsafe { RecvBuf::from_raw(self.ptr.as_ptr().add(offset), len) }
    }

    /// Reads the same memory as a send buffer (Sendrecv_replace, in-place collectives).
    pub fn as_send(&self) -> SendBuf {
        // SAFETY: the memory is valid for reads too, and the engine sequences its own accesses.
        unsafe { SendBuf::from_raw(self.ptr.as_ptr(), self.len) }
    }
}

/// The width of an element updated with a hardware atomic ([`RecvBuf::atomic_update`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AtomicWidth {
    /// 4 bytes (`AtomicU32`).
    W4,
    /// 8 bytes (`AtomicU64`).
    W8,
}

impl AtomicWidth {
    /// Bytes of an element.
    pub fn bytes(self) -> usize {
        match self {
            AtomicWidth::W4 => 4,
            AtomicWidth::W8 => 8,
        }
    }
}

impl RecvBuf {
    /// Replaces the element at `offset` with `update(old)` in one hardware atomic step (a
    /// compare-and-swap loop), so that processes sharing the memory and updating it the same way
    /// never lose an update; returns the old value. `None` (nothing done) when the element is
    /// outside the buffer or not aligned to its width. Values are native-endian bit patterns.
    pub fn atomic_update(
        &self,
        offset: usize,
        width: AtomicWidth,
        mut update: impl FnMut(u64) -> u64,
    ) -> Option<u64> {
        let n = width.bytes();
        let end = offset.checked_add(n)?;
        let at = self.addr().checked_add(offset)?;
        if end > self.len || !at.is_multiple_of(n) {
            return None;
        }
        let ptr = self.ptr.as_ptr().wrapping_add(offset);
        use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::AcqRel, Ordering::Acquire};
        match width {
            AtomicWidth::W4 => {
                // SAFETY: in bounds and 4-aligned (checked above); the buffer's contract makes the
                // memory valid, and every concurrent writer of this element uses atomics too.
                let a = unsafe { AtomicU32::from_ptr(ptr.cast()) };
                let r = a.fetch_update(AcqRel, Acquire, |v| Some(update(u64::from(v)) as u32));
                Some(u64::from(r.unwrap_or_else(|v| v)))
            }
            AtomicWidth::W8 => {
                // SAFETY: as above, 8-aligned.
                let a = unsafe { AtomicU64::from_ptr(ptr.cast()) };
                let r = a.fetch_update(AcqRel, Acquire, |v| Some(update(v)));
                Some(r.unwrap_or_else(|v| v))
            }
        }
    }
}
