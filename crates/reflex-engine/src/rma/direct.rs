//! The direct path of `MPI_Put` and `MPI_Get` on shared-memory windows: a Memory Channel store,
//! nothing more (the atomics are in `direct_atomic.rs`, flush and locks in `direct_sync.rs`).
//!
//! When the window's memory is mapped here, both datatypes are one run of bytes and the access
//! epoch, rank and range are in order, a Put or Get is one copy (`reflex-base`'s `copy_bytes`:
//! inline up to 128 bytes, and clear of the 4K-aliasing slow path of `memcpy`). This
//! module does exactly that with one window lookup and no `Result` in between; in every other
//! case (including every error) it does nothing and says so, and the general path of
//! [`super::origin`] and [`super::sync`] runs, checks everything again and reports what is wrong.
//! Keeping the error text out of here keeps the path to a few dozen instructions.

use super::origin::{Side, Target};
use super::{Memory, WinId};
use crate::datatype::Datatype;
use crate::engine::Engine;
use reflex_base::buf::{RecvBuf, SendBuf};
use reflex_base::copy::copy_bytes;
use reflex_base::transport::Transport;

impl<T: Transport> Engine<T> {
    /// `MPI_Put` of the bytes of `origin` to displacement `disp` of rank `target` (both
    /// datatypes one run of bytes), done at once; `false` (nothing done) when the general path
    /// must run.
    #[inline]
    pub fn rma_put_bytes(&mut self, id: WinId, origin: &SendBuf, target: i32, disp: isize) -> bool {
        match self.direct_region(id, target, disp, origin.len()) {
            Some(mut region) => {
                copy_bytes(region.as_mut_slice(), origin.as_slice());
                true
            }
            None => false,
        }
    }

    /// `MPI_Get` into the bytes of `origin` from displacement `disp` of rank `target` (both
    /// datatypes one run of bytes), done at once; `false` (nothing done) when the general path
    /// must run.
    #[inline]
    pub fn rma_get_bytes(
        &mut self,
        id: WinId,
        origin: &mut RecvBuf,
        target: i32,
        disp: isize,
    ) -> bool {
        match self.direct_region(id, target, disp, origin.len()) {
            Some(region) => {
                copy_bytes(origin.as_mut_slice(), region.as_slice());
                true
            }
            None => false,
        }
    }

    /// [`Self::rma_put_bytes`] for an operation of the general path.
    pub(super) fn put_direct(
        &mut self,
        id: WinId,
        origin: &Side<SendBuf>,
        target: &Target,
    ) -> bool {
        dense_pair(&origin.dt, origin.buf.len(), target)
            && self.rma_put_bytes(id, &origin.buf, target.rank, target.disp)
    }

    /// [`Self::rma_get_bytes`] for an operation of the general path.
    pub(super) fn get_direct(
        &mut self,
        id: WinId,
        origin: &mut Side<RecvBuf>,
        target: &Target,
    ) -> bool {
        dense_pair(&origin.dt, origin.buf.len(), target)
            && self.rma_get_bytes(id, &mut origin.buf, target.rank, target.disp)
    }

    /// The `len` bytes at displacement `disp` of rank `target`'s memory, when a direct access may
    /// touch them now.
    #[inline(always)] // one short path for Put, Get and the atomics
    pub(super) fn direct_region(
        &self,
        id: WinId,
        target: i32,
        disp: isize,
        len: usize,
    ) -> Option<RecvBuf> {
        let w = self.wins.find(id)?;
        let Memory::Shared { regions, .. } = &w.mem else {
            return None;
        };
        let rank = usize::try_from(target).ok()?;
        let reach = regions.get(rank)?;
        if !w.epoch.allows_now(rank) {
            return None;
        }
        let start = usize::try_from(disp.checked_mul(reach.unit)?).ok()?;
        reach.mem.range(start, len)
    }
}

/// Whether an origin buffer of `len` bytes of `origin` and `target`'s elements are both one run
/// of the same bytes.
fn dense_pair(origin: &Datatype, len: usize, target: &Target) -> bool {
    origin.is_dense() && target.dt.dense_basic_len(target.count) == Some(len)
}
