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

    /// The sub-range `[offset, offset+len)` when it lies inside the buffer (no clamping: the
    /// one-sided direct path's range check).
    #[inline]
    pub fn range(&self, offset: usize, len: usize) -> Option<RecvBuf> {
        (len <= self.len.checked_sub(offset)?).then(|| RecvBuf {
            // SAFETY: `offset <= self.len`, so the pointer stays inside (or one past) the buffer
            // and is not NULL; the sub-range is valid under the constructor's contract.
            ptr: unsafe { self.ptr.add(offset) },
            len,
        })
    }

    /// This buffer and `next`, which starts where it ends, as one (two windows' attached
    /// regions side by side); `None` when they are not adjacent.
    pub fn join(&self, next: &RecvBuf) -> Option<RecvBuf> {
        if self.is_empty() || self.addr().checked_add(self.len)? != next.addr() {
            return None;
        }
        Some(RecvBuf {
            ptr: self.ptr,
            len: self.len.checked_add(next.len)?,
        })
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

/// A read-modify-write the processor does in one instruction ([`RecvBuf::atomic_rmw`]); every
/// other update is a compare-and-swap loop ([`RecvBuf::atomic_try_update`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AtomicRmw {
    /// Wrapping integer addition (`lock xadd`).
    Add,
    /// Bitwise and.
    And,
    /// Bitwise or.
    Or,
    /// Bitwise exclusive or.
    Xor,
    /// Replace (`xchg`).
    Swap,
    /// Read only (an acquire load).
    Load,
}

/// The atomic view of an element in the buffer.
enum Cell<'a> {
    W4(&'a std::sync::atomic::AtomicU32),
    W8(&'a std::sync::atomic::AtomicU64),
}

impl RecvBuf {
    /// The element of `width` at `offset` as an atomic, when it lies inside the buffer and is
    /// aligned to its width.
    #[inline]
    fn cell(&self, offset: usize, width: AtomicWidth) -> Option<Cell<'_>> {
        use std::sync::atomic::{AtomicU32, AtomicU64};
        let n = width.bytes();
        let end = offset.checked_add(n)?;
        let ptr = self.ptr.as_ptr().wrapping_add(offset);
        if end > self.len || !(ptr as usize).is_multiple_of(n) {
            return None;
        }
        Some(match width {
            // SAFETY: in bounds and 4-aligned (checked above); the buffer's contract makes the
            // memory valid, and every concurrent writer of this element uses atomics too.
            AtomicWidth::W4 => Cell::W4(unsafe { AtomicU32::from_ptr(ptr.cast()) }),
            // SAFETY: as above, 8-aligned.
            AtomicWidth::W8 => Cell::W8(unsafe { AtomicU64::from_ptr(ptr.cast()) }),
        })
    }

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
        let r = self.atomic_try_update(offset, width, |v| Some(update(v)))?;
        Some(r.unwrap_or_else(|v| v))
    }

    /// [`Self::atomic_update`] where `update` may decline (`None`): the element is then left as
    /// it is and `Err(old)` returned; `Ok(old)` when it was replaced.
    #[inline]
    pub fn atomic_try_update(
        &self,
        offset: usize,
        width: AtomicWidth,
        mut update: impl FnMut(u64) -> Option<u64>,
    ) -> Option<Result<u64, u64>> {
        use std::sync::atomic::Ordering::{AcqRel, Acquire};
        Some(match self.cell(offset, width)? {
            Cell::W4(a) => a
                .fetch_update(AcqRel, Acquire, |v| update(u64::from(v)).map(|n| n as u32))
                .map(u64::from)
                .map_err(u64::from),
            Cell::W8(a) => a.fetch_update(AcqRel, Acquire, update),
        })
    }

    /// `op` with `operand` (its low `width` bytes) on the element at `offset`, one instruction;
    /// returns the old value. `None` (nothing done) as for [`Self::atomic_update`].
    #[inline]
    pub fn atomic_rmw(
        &self,
        offset: usize,
        width: AtomicWidth,
        op: AtomicRmw,
        operand: u64,
    ) -> Option<u64> {
        use std::sync::atomic::Ordering::{AcqRel, Acquire};
        macro_rules! rmw {
            ($a:expr, $v:expr) => {
                match op {
                    AtomicRmw::Add => $a.fetch_add($v, AcqRel),
                    AtomicRmw::And => $a.fetch_and($v, AcqRel),
                    AtomicRmw::Or => $a.fetch_or($v, AcqRel),
                    AtomicRmw::Xor => $a.fetch_xor($v, AcqRel),
                    AtomicRmw::Swap => $a.swap($v, AcqRel),
                    AtomicRmw::Load => $a.load(Acquire),
                }
            };
        }
        Some(match self.cell(offset, width)? {
            Cell::W4(a) => u64::from(rmw!(a, operand as u32)),
            Cell::W8(a) => rmw!(a, operand),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 32 zero bytes, 8-aligned.
    fn words() -> RecvBuf {
        let leaked: &'static mut [u64] = Box::leak(vec![0u64; 4].into_boxed_slice());
        // SAFETY: a leaked allocation of 32 bytes, reached only through this buffer.
        unsafe { RecvBuf::from_raw(leaked.as_mut_ptr().cast(), 32) }
    }

    #[test]
    fn rmw_returns_the_old_value_and_updates_in_place() {
        use AtomicRmw::*;
        use AtomicWidth::{W4, W8};
        let b = words();
        // (offset, width, op, operand, old value expected), in order
        let steps = [
            (8, W8, Add, 5, 0),
            (8, W8, Add, u64::MAX, 5),
            (8, W8, Load, 0, 4),
            (0, W4, Swap, 0xf0, 0),
            (0, W4, Or, 0x0f, 0xf0),
            (0, W4, And, 0x3c, 0xff),
            (0, W4, Xor, 0xff, 0x3c),
            (0, W4, Load, 0, 0xc3),
            (4, W4, Load, 0, 0), // the other half of the word is untouched
        ];
        for (at, w, op, operand, old) in steps {
            assert_eq!(
                b.atomic_rmw(at, w, op, operand),
                Some(old),
                "{op:?} at {at}"
            );
        }
    }

    #[test]
    fn misaligned_or_outside_elements_are_refused() {
        let b = words();
        assert_eq!(b.atomic_rmw(4, AtomicWidth::W8, AtomicRmw::Add, 1), None);
        assert_eq!(b.atomic_rmw(32, AtomicWidth::W4, AtomicRmw::Add, 1), None);
        assert_eq!(b.atomic_try_update(2, AtomicWidth::W4, Some), None);
    }

    #[test]
    fn a_declined_update_leaves_the_element() {
        let b = words();
        b.atomic_rmw(16, AtomicWidth::W8, AtomicRmw::Swap, 7);
        assert_eq!(
            b.atomic_try_update(16, AtomicWidth::W8, |_| None),
            Some(Err(7))
        );
        assert_eq!(
            b.atomic_try_update(16, AtomicWidth::W8, |v| Some(v * 3)),
            Some(Ok(7))
        );
        assert_eq!(b.atomic_update(16, AtomicWidth::W8, |v| v), Some(21));
    }

    #[test]
    fn range_is_exact_or_nothing() {
        let b = words();
        let r = b.range(8, 24).expect("the last 24 bytes");
        assert_eq!((r.addr() - b.addr(), r.len()), (8, 24));
        assert_eq!(b.range(32, 0).map(|r| r.len()), Some(0));
        assert!(b.range(8, 25).is_none());
        assert!(b.range(33, 0).is_none());
        assert!(b.range(usize::MAX, 1).is_none());
    }
}
