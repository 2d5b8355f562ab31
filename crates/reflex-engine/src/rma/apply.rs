//! What one-sided operations do to the target's memory, wherever they run: in the target process
//! (a request arrived by message) or in the origin process (the window's memory is shared).
//!
//! The target datatype lays the operation's packed bytes over a *span* of the target's memory
//! (from the lowest to the highest byte it touches): a dense span takes them as one copy, a
//! typed one through the datatype's compiled program. Accumulates combine element by element
//! (`target = origin op target`, MPI-3.1 §11.3.4). In shared memory, other processes may update
//! the same elements at the same time, so an accumulate is made atomic per element: with a
//! hardware compare-and-swap when the elements are 4- or 8-byte numbers at aligned addresses,
//! otherwise under the target's accumulate mutex. The choice depends only on the element type
//! and the address, so every accumulate that touches one element takes the same path and they
//! exclude each other.

use crate::datatype::cursor::Placement;
use crate::datatype::program::Program;
use crate::datatype::{Basic, ValueKind};
use crate::error::{ErrorClass, MpiError, Result};
use crate::op::{self, ReduceOp};
use reflex_base::buf::{AtomicWidth, RecvBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// How the operation's packed bytes lie in the target span.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Shape<'p> {
    /// One run from the span's start.
    Dense,
    /// `count` elements of a program, the application's address `origin` bytes into the span.
    Typed {
        program: &'p Program,
        count: usize,
        extent: isize,
        origin: usize,
    },
}

impl Shape<'_> {
    fn placement(&self) -> Option<Placement<'_>> {
        match *self {
            Shape::Dense => None,
            Shape::Typed {
                program,
                count,
                extent,
                origin,
            } => Some(Placement {
                program,
                count,
                extent,
                origin,
            }),
        }
    }

    /// `(offset in the span, len)` of the memory behind `len` packed bytes.
    fn runs(&self, len: usize) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        match self.placement() {
            None => out.push((0, len)),
            Some(p) => {
                p.runs(0, len, &mut out);
            }
        }
        out
    }
}

/// Who else may touch the span while an operation runs.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Sharing<'a> {
    /// Only this process (requests are served one at a time).
    Private,
    /// Other processes too; `mutex` is the target's accumulate mutex.
    Shared { mutex: &'a AtomicU32 },
}

/// Put: scatters `data` over the span.
pub(crate) fn write(span: &mut RecvBuf, shape: &Shape, data: &[u8]) {
    match shape.placement() {
        None => span.as_mut_slice()[..data.len()].copy_from_slice(data),
        Some(p) => {
            p.unpack(span.as_mut_slice(), 0, data, &mut None);
        }
    }
}

/// Get: gathers the span's packed bytes into `out`.
pub(crate) fn read(span: &RecvBuf, shape: &Shape, out: &mut [u8]) {
    match shape.placement() {
        None => out.copy_from_slice(&span.as_slice()[..out.len()]),
        Some(p) => {
            p.pack(span.as_slice(), 0, out, &mut None);
        }
    }
}

/// The hardware atomic that can update elements of `basic` under `op`, if any.
fn atomic_width(basic: &Basic, op: ReduceOp) -> Option<AtomicWidth> {
    let numeric = matches!(
        basic.kind,
        ValueKind::Signed | ValueKind::Unsigned | ValueKind::Float | ValueKind::Logical
    );
    if !numeric || matches!(op, ReduceOp::Minloc | ReduceOp::Maxloc) {
        return None;
    }
    match basic.size {
        4 => Some(AtomicWidth::W4),
        8 => Some(AtomicWidth::W8),
        _ => None,
    }
}

/// Accumulate (`Accumulate`, `Get_accumulate`, `Fetch_and_op`): combines `input` into the span
/// element by element; returns the packed values the span held before (empty unless `fetch`).
pub(crate) fn accumulate(
    span: &mut RecvBuf,
    shape: &Shape,
    (op, basic): (ReduceOp, &Basic),
    input: &[u8],
    fetch: bool,
    sharing: Sharing,
) -> Result<Vec<u8>> {
    if input.is_empty() {
        return Ok(Vec::new()); // nothing to combine (MPICH accepts any operation then, too)
    }
    check_op(op, basic)?;
    if let Sharing::Shared { mutex } = sharing {
        if let Some(w) = atomic_width(basic, op) {
            let runs = shape.runs(input.len());
            let base = span.addr();
            if runs.iter().all(|&(at, len)| {
                (base + at).is_multiple_of(w.bytes()) && len.is_multiple_of(w.bytes())
            }) {
                return Ok(atomic_accumulate(span, &runs, (op, basic, w), input, fetch));
            }
        }
        return Ok(locked(mutex, || {
            combine(span, shape, (op, basic), input, fetch)
        }));
    }
    Ok(combine(span, shape, (op, basic), input, fetch))
}

/// Rejects an operation that is not defined on the element type (before touching anything).
pub(crate) fn check_op(op: ReduceOp, basic: &Basic) -> Result<()> {
    let n = basic.size as usize;
    let (mut a, b) = (vec![0u8; n], vec![0u8; n]);
    op::apply_packed(op, basic, &mut a, &b)
}

/// Read, combine and write back under exclusion (the caller's).
fn combine(
    span: &mut RecvBuf,
    shape: &Shape,
    (op, basic): (ReduceOp, &Basic),
    input: &[u8],
    fetch: bool,
) -> Vec<u8> {
    let mut values = vec![0u8; input.len()];
    read(span, shape, &mut values);
    let old = if fetch { values.clone() } else { Vec::new() };
    // Checked by `check_op`: the operation applies to the type.
    let _ = op::apply_packed(op, basic, &mut values, input);
    if op != ReduceOp::NoOp {
        write(span, shape, &values);
    }
    old
}

fn atomic_accumulate(
    span: &mut RecvBuf,
    runs: &[(usize, usize)],
    (op, basic, w): (ReduceOp, &Basic, AtomicWidth),
    input: &[u8],
    fetch: bool,
) -> Vec<u8> {
    let n = w.bytes();
    let mut old = Vec::with_capacity(if fetch { input.len() } else { 0 });
    let mut at_input = 0;
    for &(at, len) in runs {
        for k in (0..len).step_by(n) {
            let operand = &input[at_input..at_input + n];
            at_input += n;
            let before = span.atomic_update(at + k, w, |v| combine_word(v, operand, op, basic, n));
            if fetch {
                let v = before.unwrap_or(0).to_ne_bytes();
                old.extend_from_slice(&v[..n]);
            }
        }
    }
    old
}

/// `operand op value` on one element held in the low bytes of a word.
fn combine_word(value: u64, operand: &[u8], op: ReduceOp, basic: &Basic, n: usize) -> u64 {
    let mut bytes = value.to_ne_bytes();
    let _ = op::apply_packed(op, basic, &mut bytes[..n], operand);
    u64::from_ne_bytes(bytes)
}

/// `Compare_and_swap` on the element at the span's start: stores `origin` if the element equals
/// `compare`; returns the element's old value.
pub(crate) fn compare_and_swap(
    span: &mut RecvBuf,
    basic: &Basic,
    origin: &[u8],
    compare: &[u8],
    sharing: Sharing,
) -> Result<Vec<u8>> {
    let n = basic.size as usize;
    let allowed = matches!(
        basic.kind,
        ValueKind::Signed | ValueKind::Unsigned | ValueKind::Logical | ValueKind::Byte
    );
    if !allowed || span.len() < n || origin.len() < n || compare.len() < n {
        return Err(MpiError::new(
            ErrorClass::Type,
            "compare-and-swap needs one integer, logical or byte element",
        ));
    }
    let swap = |span: &mut RecvBuf| {
        let old = span.as_slice()[..n].to_vec();
        if old == compare[..n] {
            span.as_mut_slice()[..n].copy_from_slice(&origin[..n]);
        }
        old
    };
    let width = match n {
        4 => Some(AtomicWidth::W4),
        8 => Some(AtomicWidth::W8),
        _ => None,
    };
    match (sharing, width) {
        (Sharing::Private, _) => Ok(swap(span)),
        (Sharing::Shared { .. }, Some(w)) if span.addr().is_multiple_of(n) => {
            let word = |b: &[u8]| {
                let mut v = [0u8; 8];
                v[..n].copy_from_slice(&b[..n]);
                u64::from_ne_bytes(v)
            };
            let (want, new) = (word(compare), word(origin));
            let old = span
                .atomic_update(0, w, |v| if v == want { new } else { v })
                .unwrap_or(0);
            Ok(old.to_ne_bytes()[..n].to_vec())
        }
        (Sharing::Shared { mutex }, _) => Ok(locked(mutex, || swap(span))),
    }
}

/// Runs `f` holding `mutex` (a spin lock: holders only copy a few bytes).
fn locked<R>(mutex: &AtomicU32, f: impl FnOnce() -> R) -> R {
    let mut spins = 0u32;
    while mutex
        .compare_exchange_weak(0, 1, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        spins = spins.wrapping_add(1);
        if spins.is_multiple_of(64) {
            std::thread::yield_now();
        } else {
            std::hint::spin_loop();
        }
    }
    let r = f();
    mutex.store(0, Ordering::Release);
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn buf(v: &mut [u8]) -> RecvBuf {
        // The tests keep `v` alive while they use the buffer.
        let leaked: &'static mut [u8] = Box::leak(v.to_vec().into_boxed_slice());
        RecvBuf::from_slice(leaked)
    }

    const I64: Basic = Basic::plain(ValueKind::Signed, 8);

    #[test]
    fn accumulate_adds_and_fetches_old_values() {
        let mut span = buf(&mut [0u8; 16]);
        let one: Vec<u8> = [5i64, 7].iter().flat_map(|v| v.to_ne_bytes()).collect();
        let mutex = AtomicU32::new(0);
        for sharing in [Sharing::Private, Sharing::Shared { mutex: &mutex }] {
            accumulate(
                &mut span,
                &Shape::Dense,
                (ReduceOp::Sum, &I64),
                &one,
                false,
                sharing,
            )
            .unwrap();
        }
        let old = accumulate(
            &mut span,
            &Shape::Dense,
            (ReduceOp::NoOp, &I64),
            &one,
            true,
            Sharing::Private,
        )
        .unwrap();
        assert_eq!(old[..8], 10i64.to_ne_bytes());
        assert_eq!(old[8..], 14i64.to_ne_bytes());
    }

    #[test]
    fn an_operation_undefined_on_the_type_changes_nothing() {
        let mut span = buf(&mut [1u8; 8]);
        let f64t = Basic::plain(ValueKind::Float, 8);
        let e = accumulate(
            &mut span,
            &Shape::Dense,
            (ReduceOp::Band, &f64t),
            &[0; 8],
            false,
            Sharing::Private,
        );
        assert_eq!(e.unwrap_err().class, ErrorClass::Op);
        assert_eq!(span.as_slice(), &[1u8; 8]);
    }

    #[test]
    fn compare_and_swap_swaps_only_on_equality() {
        let mutex = AtomicU32::new(0);
        let mut span = buf(&mut [0u8; 8]);
        let shared = Sharing::Shared { mutex: &mutex };
        let old = compare_and_swap(
            &mut span,
            &I64,
            &9i64.to_ne_bytes(),
            &1i64.to_ne_bytes(),
            shared,
        )
        .unwrap();
        assert_eq!(old, 0i64.to_ne_bytes());
        let old = compare_and_swap(
            &mut span,
            &I64,
            &9i64.to_ne_bytes(),
            &0i64.to_ne_bytes(),
            shared,
        )
        .unwrap();
        assert_eq!(old, 0i64.to_ne_bytes());
        assert_eq!(span.as_slice(), 9i64.to_ne_bytes());
    }
}
