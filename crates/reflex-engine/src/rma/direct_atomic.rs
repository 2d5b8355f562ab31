//! The direct path of `MPI_Accumulate`, `MPI_Get_accumulate`, `MPI_Fetch_and_op` and
//! `MPI_Compare_and_swap` on shared-memory windows: hardware atomics straight on the target's
//! memory (Memory Channel's remote store, with the processor's read-modify-write on top).
//!
//! It takes the common case only: one predefined element type on every side, elements in one
//! run, a predefined operation, an open access epoch, the range inside the target's memory, and
//! elements that [`apply::element_atomic`] (the one choice every accumulate in shared memory
//! follows) gives to a hardware atomic. Each element is then one `lock xadd`/`and`/`or`/`xor`/
//! `xchg`, a load, or a compare-and-swap loop around the common arithmetic
//! ([`apply::atomic_combine`]), with no datatype object, packed copy or `Result` in between. In
//! every other case, including every error, it does nothing and says so, and the general path of
//! [`super::origin`] checks everything again and reports what is wrong; elements that need the
//! accumulate mutex are always left to it.

use super::apply::{self, atomic_combine, element_atomic};
use super::WinId;
use crate::datatype::Basic;
use crate::engine::Engine;
use crate::op::ReduceOp;
use reflex_base::buf::{AtomicWidth, RecvBuf, SendBuf};
use reflex_base::transport::Transport;

impl<T: Transport> Engine<T> {
    /// `MPI_Accumulate` (`result` `None`), `MPI_Get_accumulate` or `MPI_Fetch_and_op` (the old
    /// values into `result`) of `count` elements of `basic` from `origin` (ignored for
    /// `MPI_NO_OP`) to displacement `disp` of rank `target`, every side one run of `basic`; done
    /// at once with hardware atomics, or `false` (nothing done) when the general path must run.
    #[inline]
    pub fn rma_accumulate_direct(
        &mut self,
        id: WinId,
        (op, basic): (ReduceOp, Basic),
        (origin, count): (&SendBuf, usize),
        result: Option<&mut RecvBuf>,
        (target, disp): (i32, isize),
    ) -> bool {
        let fetch = result.is_some();
        if op == ReduceOp::NoOp && !fetch {
            return false; // MPI_ERR_OP for MPI_Accumulate, reported by the general path
        }
        let n = basic.size as usize;
        let Some(len) = count.checked_mul(n).filter(|&l| l > 0) else {
            return false;
        };
        let input = origin.as_slice();
        let sides = (origin, result.as_deref());
        let Some((span, w)) = self.atomic_span(id, (op, &basic), sides, len, (target, disp)) else {
            return false;
        };
        let mut result = result;
        for k in 0..count {
            let at = k * n;
            let operand = match op {
                ReduceOp::NoOp => 0,
                _ => apply::element_value(&input[at..], w),
            };
            // Only the first element can fail (the operation is not defined on the type: the
            // same answer for every element), before anything changed.
            let Some(old) = atomic_combine(&span, at, w, (op, &basic), operand) else {
                return false;
            };
            if let Some(r) = result.as_deref_mut() {
                apply::element_store(&mut r.as_mut_slice()[at..at + n], old, w);
            }
        }
        true
    }

    /// [`Self::rma_accumulate_direct`] of one element (every `MPI_Fetch_and_op`, and the usual
    /// single-value `MPI_Accumulate` and `MPI_Get_accumulate`): the same steps without the
    /// loop, the count arithmetic or the slicing per element, in a function small enough to keep
    /// its few values in registers (the loop's, inlined into one function with this case, saved
    /// six registers and spilled a dozen values on every call). The element still goes through
    /// [`element_atomic`] and [`atomic_combine`], so it is updated exactly as every other path
    /// updates it, and two origins' accumulates of it exclude each other whichever path each
    /// takes.
    #[inline]
    pub fn rma_accumulate_one_direct(
        &mut self,
        id: WinId,
        (op, basic): (ReduceOp, Basic),
        origin: &SendBuf,
        result: Option<&mut RecvBuf>,
        (target, disp): (i32, isize),
    ) -> bool {
        let n = basic.size as usize;
        let sides = (origin, result.as_deref());
        let Some((span, w)) = self.atomic_span(id, (op, &basic), sides, n, (target, disp)) else {
            return false;
        };
        let operand = match (op, &result) {
            // MPI_ERR_OP for MPI_Accumulate, reported by the general path (checked here, off the
            // way of the other operations: as the first test it cost 30 instructions per call).
            (ReduceOp::NoOp, None) => return false,
            (ReduceOp::NoOp, Some(_)) => 0,
            _ => apply::element_value(origin.as_slice(), w),
        };
        let Some(old) = atomic_combine(&span, 0, w, (op, &basic), operand) else {
            return false;
        };
        if let Some(r) = result {
            apply::element_store(r.as_mut_slice(), old, w);
        }
        true
    }

    /// The `len` bytes at displacement `disp` of rank `target` that an accumulate of `basic`
    /// with `op` updates, and the width of the hardware atomic that updates their elements,
    /// when its operands (`origin`, read unless the operation is `MPI_NO_OP`, and `result`) hold
    /// `len` bytes and a direct access may touch them now; `None` when the general path must
    /// run, among others for the elements of the accumulate mutex.
    #[inline(always)]
    fn atomic_span(
        &self,
        id: WinId,
        (op, basic): (ReduceOp, &Basic),
        (origin, result): (&SendBuf, Option<&RecvBuf>),
        len: usize,
        (target, disp): (i32, isize),
    ) -> Option<(RecvBuf, AtomicWidth)> {
        let short = |have: usize| have < len;
        if len == 0
            || (op != ReduceOp::NoOp && short(origin.len()))
            || result.is_some_and(|r| short(r.len()))
        {
            return None;
        }
        let span = self.direct_region(id, target, disp, len)?;
        let w = element_atomic(basic, span.addr())?;
        Some((span, w))
    }

    /// `MPI_Compare_and_swap` of one element of `basic` at displacement `disp` of rank `target`:
    /// stores `origin` there if it holds `compare`, the old value into `result`; done at once with
    /// a hardware compare-and-swap, or `false` (nothing done) when the general path must run.
    #[inline]
    pub fn rma_compare_and_swap_direct(
        &mut self,
        id: WinId,
        basic: Basic,
        (origin, compare, result): (&SendBuf, &SendBuf, &mut RecvBuf),
        (target, disp): (i32, isize),
    ) -> bool {
        let n = basic.size as usize;
        let short = [origin.len(), compare.len(), result.len()]
            .iter()
            .any(|&l| l < n);
        if short || !apply::cas_allowed(&basic) {
            return false;
        }
        let Some(span) = self.direct_region(id, target, disp, n) else {
            return false;
        };
        let Some(w) = element_atomic(&basic, span.addr()) else {
            return false;
        };
        let want = apply::element_value(compare.as_slice(), w);
        let new = apply::element_value(origin.as_slice(), w);
        match span.atomic_try_update(0, w, |v| (v == want).then_some(new)) {
            Some(old) => {
                let old = old.unwrap_or_else(|v| v);
                apply::element_store(&mut result.as_mut_slice()[..n], old, w);
                true
            }
            None => false,
        }
    }
}
