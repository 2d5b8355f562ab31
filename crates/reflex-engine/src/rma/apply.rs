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

/// The width of the hardware atomic that can update elements of `basic`, wherever they are
/// aligned (4- and 8-byte numbers).
#[inline]
fn atomic_width(basic: &Basic) -> Option<AtomicWidth> {
    let numeric = matches!(
        basic.kind,
        ValueKind::Signed | ValueKind::Unsigned | ValueKind::Float | ValueKind::Logical
    );
    match (numeric, basic.size) {
        (true, 4) => Some(AtomicWidth::W4),
        (true, 8) => Some(AtomicWidth::W8),
        _ => None,
    }
}

/// How every accumulate, fetch-and-op and compare-and-swap in shared memory updates the element
/// of `basic` at address `addr`: with the hardware atomic of the returned width, or (`None`)
/// under the target's accumulate mutex. The general path here and the direct one
/// (`rma/direct_atomic.rs`) both ask this function, and the answer depends only on the element
/// type and the address, so all operations on one element take the same path and exclude each
/// other (a mutex holder's plain read-combine-write never races with an atomic).
#[inline]
pub(crate) fn element_atomic(basic: &Basic, addr: usize) -> Option<AtomicWidth> {
    atomic_width(basic).filter(|w| addr.is_multiple_of(w.bytes()))
}

/// The element types compare-and-swap takes (MPI-3.1 §11.3.4: C integer, Fortran integer,
/// logical, byte; characters too, as MPICH, since they compare as bytes).
#[inline]
pub(crate) fn cas_allowed(basic: &Basic) -> bool {
    matches!(
        basic.kind,
        ValueKind::Signed
            | ValueKind::Unsigned
            | ValueKind::Logical
            | ValueKind::Byte
            | ValueKind::Char
    )
}

/// The low `w` bytes of `v` (an element's bit pattern) as native-endian bytes at `[..w]`.
#[inline]
fn element_bytes(v: u64, w: AtomicWidth) -> [u8; 8] {
    let mut out = [0u8; 8];
    match w {
        AtomicWidth::W4 => out[..4].copy_from_slice(&(v as u32).to_ne_bytes()),
        AtomicWidth::W8 => out = v.to_ne_bytes(),
    }
    out
}

/// Writes the element `v` of width `w` into `out` (exactly `w` bytes).
#[inline]
pub(crate) fn element_store(out: &mut [u8], v: u64, w: AtomicWidth) {
    match w {
        AtomicWidth::W4 => out[..4].copy_from_slice(&(v as u32).to_ne_bytes()),
        AtomicWidth::W8 => out[..8].copy_from_slice(&v.to_ne_bytes()),
    }
}

/// The bit pattern of the element in the first `w` bytes of `b` (as [`element_bytes`] lays it).
#[inline]
pub(crate) fn element_value(b: &[u8], w: AtomicWidth) -> u64 {
    match w {
        AtomicWidth::W4 => u64::from(u32::from_ne_bytes([b[0], b[1], b[2], b[3]])),
        AtomicWidth::W8 => u64::from_ne_bytes(b[..8].try_into().expect("8 bytes")),
    }
}

/// `target = operand op target` on the element at offset `at` of `span`, for which
/// [`element_atomic`] chose width `w`, in one hardware atomic step: one instruction where the
/// operation is one (integer SUM and bitwise ops, REPLACE, NO_OP), a compare-and-swap loop
/// around [`op::float_one`] for floats, else a compare-and-swap loop around
/// [`op::apply_packed`] (the same arithmetic as every other path). Returns the old value; `None`,
/// with nothing changed, when `op` is not defined on the type. Inlined whole into the direct
/// path except the last case (each call of a single-element accumulate paid a frame and the
/// type's comparisons again before).
#[inline(always)]
pub(crate) fn atomic_combine(
    span: &RecvBuf,
    at: usize,
    w: AtomicWidth,
    (op, basic): (ReduceOp, &Basic),
    operand: u64,
) -> Option<u64> {
    use reflex_base::buf::AtomicRmw;
    let integer = matches!(basic.kind, ValueKind::Signed | ValueKind::Unsigned);
    let rmw = match op {
        ReduceOp::NoOp => AtomicRmw::Load,
        ReduceOp::Replace => AtomicRmw::Swap,
        ReduceOp::Sum if integer => AtomicRmw::Add,
        ReduceOp::Band if integer => AtomicRmw::And,
        ReduceOp::Bor if integer => AtomicRmw::Or,
        ReduceOp::Bxor if integer => AtomicRmw::Xor,
        _ if matches!(basic.kind, ValueKind::Float) => {
            return float_combine(span, at, w, op, operand)
        }
        _ => return packed_combine(span, (at, w), (op, basic), operand),
    };
    span.atomic_rmw(at, w, rmw, operand)
}

/// [`atomic_combine`] of an operation that is neither one instruction nor float arithmetic
/// (integer MIN, MAX and PROD, the logical operations, and those undefined on the type).
#[inline(never)]
fn packed_combine(
    span: &RecvBuf,
    (at, w): (usize, AtomicWidth),
    (op, basic): (ReduceOp, &Basic),
    operand: u64,
) -> Option<u64> {
    let (n, operand) = (w.bytes(), element_bytes(operand, w));
    let updated = span.atomic_try_update(at, w, |v| {
        let mut bytes = element_bytes(v, w);
        op::apply_packed(op, basic, &mut bytes[..n], &operand[..n]).ok()?;
        Some(element_value(&bytes, w))
    })?;
    updated.ok()
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
        if let Some(w) = atomic_width(basic) {
            // Runs hold whole elements, all aligned alike: each run is atomic or not as a whole.
            let runs = shape.runs(input.len());
            let base = span.addr();
            let all = runs
                .iter()
                .all(|&(at, _)| element_atomic(basic, base + at).is_some());
            let mut update = || by_element(span, &runs, (op, basic, w), input, fetch);
            // The mutex is held while any element is combined without an atomic.
            return Ok(if all { update() } else { locked(mutex, update) });
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

/// [`atomic_combine`] on a 4- or 8-byte float: a compare-and-swap loop around
/// [`op::float_one`], the arithmetic every path uses.
#[inline]
fn float_combine(
    span: &RecvBuf,
    at: usize,
    w: AtomicWidth,
    op: ReduceOp,
    operand: u64,
) -> Option<u64> {
    let updated = match w {
        AtomicWidth::W4 => {
            let a = f32::from_bits(operand as u32);
            span.atomic_try_update(at, w, |v| {
                let b = f32::from_bits(v as u32);
                op::float_one(op, a, b).map(|r| u64::from(r.to_bits()))
            })
        }
        AtomicWidth::W8 => {
            let a = f64::from_bits(operand);
            span.atomic_try_update(at, w, |v| {
                op::float_one(op, a, f64::from_bits(v)).map(f64::to_bits)
            })
        }
    };
    updated?.ok()
}

/// Accumulate of elements of `w` bytes over `runs`: with [`atomic_combine`] where
/// [`element_atomic`] says so, else by a plain read-combine-write (the caller holds the mutex
/// then).
fn by_element(
    span: &mut RecvBuf,
    runs: &[(usize, usize)],
    (op, basic, w): (ReduceOp, &Basic, AtomicWidth),
    input: &[u8],
    fetch: bool,
) -> Vec<u8> {
    let n = w.bytes();
    let mut old = Vec::with_capacity(if fetch { input.len() } else { 0 });
    let mut at_input = 0;
    let base = span.addr();
    for &(at, len) in runs {
        let operands = &input[at_input..at_input + len];
        at_input += len;
        if element_atomic(basic, base + at).is_none() {
            let run = &mut span.as_mut_slice()[at..at + len];
            if fetch {
                old.extend_from_slice(run);
            }
            // Checked by `check_op`: the operation applies to the type.
            let _ = op::apply_packed(op, basic, run, operands);
            continue;
        }
        for (k, operand) in operands.chunks_exact(n).enumerate() {
            let operand = element_value(operand, w);
            let before = atomic_combine(span, at + k * n, w, (op, basic), operand);
            if fetch {
                old.extend_from_slice(&element_bytes(before.unwrap_or(0), w)[..n]);
            }
        }
    }
    old
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
    if !cas_allowed(basic) || span.len() < n || origin.len() < n || compare.len() < n {
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
    match (sharing, element_atomic(basic, span.addr())) {
        (Sharing::Private, _) => Ok(swap(span)),
        (Sharing::Shared { .. }, Some(w)) => {
            let (want, new) = (element_value(compare, w), element_value(origin, w));
            let old = span.atomic_try_update(0, w, |v| (v == want).then_some(new));
            let old = old.map_or(0, |r| r.unwrap_or_else(|v| v));
            Ok(element_bytes(old, w)[..n].to_vec())
        }
        (Sharing::Shared { mutex }, None) => Ok(locked(mutex, || swap(span))),
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
    fn the_atomic_choice_depends_on_type_and_address_only() {
        let f32t = Basic::plain(ValueKind::Float, 4);
        let i16t = Basic::plain(ValueKind::Signed, 2);
        assert_eq!(element_atomic(&I64, 64), Some(AtomicWidth::W8));
        assert_eq!(element_atomic(&I64, 68), None);
        assert_eq!(element_atomic(&f32t, 68), Some(AtomicWidth::W4));
        assert_eq!(element_atomic(&i16t, 64), None);
        let pair = Basic {
            kind: ValueKind::Pair {
                value: crate::datatype::PairValue::Int,
            },
            size: 8,
            extent: 8,
        };
        assert_eq!(element_atomic(&pair, 64), None);
    }

    /// One element combined by `atomic_combine` and by the general arithmetic, from `old`.
    fn both_ways(op: ReduceOp, basic: &Basic, old: &[u8], operand: &[u8]) -> (Vec<u8>, Vec<u8>) {
        let n = old.len();
        let w = atomic_width(basic).unwrap();
        let span = buf(&mut [0u8; 8]);
        span.slice(0, 8).as_mut_slice()[..n].copy_from_slice(old);
        let before = atomic_combine(&span, 0, w, (op, basic), element_value(operand, w));
        assert_eq!(
            before.map(|v| element_bytes(v, w)[..n].to_vec()),
            Some(old.to_vec())
        );
        let mut general = old.to_vec();
        op::apply_packed(op, basic, &mut general, operand).unwrap();
        (span.as_slice()[..n].to_vec(), general)
    }

    #[test]
    fn atomic_combine_computes_what_the_general_path_does() {
        use ReduceOp::*;
        let int_ops = [
            Max, Min, Sum, Prod, Land, Band, Lor, Bor, Lxor, Bxor, Replace, NoOp,
        ];
        for v in [(-7i64, 5i64), (12, -3), (0, 9)] {
            for op in int_ops {
                let (a, b) = both_ways(op, &I64, &v.0.to_ne_bytes(), &v.1.to_ne_bytes());
                assert_eq!(a, b, "{op:?} on i64 {v:?}");
                let i32t = Basic::plain(ValueKind::Signed, 4);
                let (x, y) = (v.0 as i32, v.1 as i32);
                let (a, b) = both_ways(op, &i32t, &x.to_ne_bytes(), &y.to_ne_bytes());
                assert_eq!(a, b, "{op:?} on i32 {v:?}");
            }
        }
        let (f32t, f64t) = (
            Basic::plain(ValueKind::Float, 4),
            Basic::plain(ValueKind::Float, 8),
        );
        for v in [(1.5f64, -2.25f64), (-0.0, 0.0), (3.0, f64::NAN)] {
            for op in [Max, Min, Sum, Prod, Replace, NoOp] {
                let (a, b) = both_ways(op, &f64t, &v.0.to_ne_bytes(), &v.1.to_ne_bytes());
                assert_eq!(a, b, "{op:?} on f64 {v:?}");
                let (x, y) = (v.0 as f32, v.1 as f32);
                let (a, b) = both_ways(op, &f32t, &x.to_ne_bytes(), &y.to_ne_bytes());
                assert_eq!(a, b, "{op:?} on f32 {v:?}");
            }
        }
    }

    #[test]
    fn an_undefined_atomic_changes_nothing() {
        let f64t = Basic::plain(ValueKind::Float, 8);
        let span = buf(&mut [0u8; 8]);
        span.slice(0, 8)
            .as_mut_slice()
            .copy_from_slice(&2.5f64.to_ne_bytes());
        let r = atomic_combine(&span, 0, AtomicWidth::W8, (ReduceOp::Band, &f64t), 1);
        assert_eq!(r, None);
        assert_eq!(span.as_slice(), 2.5f64.to_ne_bytes());
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
