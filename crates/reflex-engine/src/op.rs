//! Predefined reduction operations (`MPI_SUM`, `MPI_MAXLOC`, ...) on the basic datatypes.
//!
//! [`apply`] computes `inout[i] = input[i] op inout[i]` element by element, the order MPI defines for
//! user functions, decoding elements from bytes with `from_ne_bytes` (no `unsafe`, no alignment
//! assumptions on the buffers). Which operations apply to which kinds of value follows MPI-3.1
//! §5.9.2; anything else is `MPI_ERR_OP`.

use crate::datatype::{Basic, PairValue, ValueKind};
use crate::error::{ErrorClass, MpiError, Result};

/// A predefined reduction operation.
#[allow(missing_docs)] // each variant is the MPI operation of the same name
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReduceOp {
    Max,
    Min,
    Sum,
    Prod,
    Land,
    Band,
    Lor,
    Bor,
    Lxor,
    Bxor,
    Minloc,
    Maxloc,
    Replace,
    NoOp,
}

fn unsupported(op: ReduceOp, b: &Basic) -> MpiError {
    MpiError::new(
        ErrorClass::Op,
        format!(
            "{op:?} is not defined on a {}-byte {:?} datatype",
            b.size, b.kind
        ),
    )
}

macro_rules! fold {
    ($t:ty, $inout:expr, $input:expr, |$a:ident, $b:ident| $e:expr) => {{
        const N: usize = std::mem::size_of::<$t>();
        let (inout, _) = $inout.as_chunks_mut::<N>();
        let (input, _) = $input.as_chunks::<N>();
        for (io, i) in inout.iter_mut().zip(input) {
            let $a = <$t>::from_ne_bytes(*i);
            let $b = <$t>::from_ne_bytes(*io);
            *io = ($e).to_ne_bytes();
        }
    }};
}

/// The element loop of one type and one expression as a [`Combine`] (a closure that captures
/// nothing, so it is a plain function).
macro_rules! combine_fn {
    ($t:ty, |$a:ident, $b:ident| $e:expr) => {
        (|inout: &mut [u8], input: &[u8]| fold!($t, inout, input, |$a, $b| $e)) as Combine
    };
}

macro_rules! integer_ops {
    ($t:ty, $op:expr) => {
        match $op {
            ReduceOp::Max => combine_fn!($t, |a, b| a.max(b)),
            ReduceOp::Min => combine_fn!($t, |a, b| a.min(b)),
            ReduceOp::Sum => combine_fn!($t, |a, b| a.wrapping_add(b)),
            ReduceOp::Prod => combine_fn!($t, |a, b| a.wrapping_mul(b)),
            ReduceOp::Land => combine_fn!($t, |a, b| <$t>::from(a != 0 && b != 0)),
            ReduceOp::Lor => combine_fn!($t, |a, b| <$t>::from(a != 0 || b != 0)),
            ReduceOp::Lxor => combine_fn!($t, |a, b| <$t>::from((a != 0) != (b != 0))),
            ReduceOp::Band => combine_fn!($t, |a, b| a & b),
            ReduceOp::Bor => combine_fn!($t, |a, b| a | b),
            ReduceOp::Bxor => combine_fn!($t, |a, b| a ^ b),
            _ => return None,
        }
    };
}

macro_rules! float_ops {
    ($t:ty, $op:expr) => {
        match $op {
            ReduceOp::Max => combine_fn!($t, |a, b| float_max(a, b)),
            ReduceOp::Min => combine_fn!($t, |a, b| float_min(a, b)),
            ReduceOp::Sum => combine_fn!($t, |a, b| a + b),
            ReduceOp::Prod => combine_fn!($t, |a, b| a * b),
            _ => return None,
        }
    };
}

/// MPI_MAX of two floats as every path computes it (`a` when it is greater, else `b`).
#[inline(always)]
fn float_max<F: PartialOrd>(a: F, b: F) -> F {
    if a > b {
        a
    } else {
        b
    }
}

/// MPI_MIN of two floats as every path computes it (`a` when it is less, else `b`).
#[inline(always)]
fn float_min<F: PartialOrd>(a: F, b: F) -> F {
    if a < b {
        a
    } else {
        b
    }
}

/// `a op b` on one floating-point value (`a` the operand, `b` the element it combines into), as
/// [`apply`] computes it for each element; `None` when `op` is not defined on floats. For the
/// one-sided atomics, which combine one element per compare-and-swap.
#[inline]
pub fn float_one<F>(op: ReduceOp, a: F, b: F) -> Option<F>
where
    F: PartialOrd + std::ops::Add<Output = F> + std::ops::Mul<Output = F>,
{
    Some(match op {
        ReduceOp::Max => float_max(a, b),
        ReduceOp::Min => float_min(a, b),
        ReduceOp::Sum => a + b,
        ReduceOp::Prod => a * b,
        _ => return None,
    })
}

/// `inout[i] = input[i] op inout[i]` on the bytes of whole elements of one type: the loop of
/// one operation on one type, found once by [`combiner`], so that callers combining many small
/// operands (the board reductions) skip the dispatch on every one.
pub type Combine = fn(&mut [u8], &[u8]);

/// The loop combining elements of `basic` with `op` when each element takes one machine
/// operation (integers, floats, logicals, bytes); `None` for the others (no-op, replace, long
/// double, complex, pairs) and where MPI leaves `op` undefined on the type.
pub fn combiner(op: ReduceOp, basic: &Basic) -> Option<Combine> {
    Some(match (basic.kind, basic.size) {
        (ValueKind::Signed, 1) => integer_ops!(i8, op),
        (ValueKind::Signed, 2) => integer_ops!(i16, op),
        (ValueKind::Signed, 4) => integer_ops!(i32, op),
        (ValueKind::Signed, 8) => integer_ops!(i64, op),
        (ValueKind::Unsigned, 1) => integer_ops!(u8, op),
        (ValueKind::Unsigned, 2) => integer_ops!(u16, op),
        (ValueKind::Unsigned, 4) => integer_ops!(u32, op),
        (ValueKind::Unsigned, 8) => integer_ops!(u64, op),
        (ValueKind::Byte, 1) if matches!(op, ReduceOp::Band | ReduceOp::Bor | ReduceOp::Bxor) => {
            integer_ops!(u8, op)
        }
        (ValueKind::Logical, 1) if is_logical(op) => integer_ops!(u8, op),
        (ValueKind::Logical, 4) if is_logical(op) => integer_ops!(u32, op),
        (ValueKind::Float, 4) => float_ops!(f32, op),
        (ValueKind::Float, 8) => float_ops!(f64, op),
        _ => return None,
    })
}

/// `inout = input op inout`, element-wise over whole elements of `basic`.
pub fn apply(op: ReduceOp, basic: &Basic, inout: &mut [u8], input: &[u8]) -> Result<()> {
    match op {
        ReduceOp::NoOp => return Ok(()),
        ReduceOp::Replace => {
            inout.copy_from_slice(&input[..inout.len()]);
            return Ok(());
        }
        _ => {}
    }
    if let Some(combine) = combiner(op, basic) {
        combine(inout, input);
        return Ok(());
    }
    match (basic.kind, basic.size) {
        (ValueKind::Float, 16) => long_double_ops(op, basic, inout, input),
        (ValueKind::Complex, 8) => complex_ops::<4>(op, basic, inout, input),
        (ValueKind::Complex, 16) => complex_ops::<8>(op, basic, inout, input),
        #[cfg(target_arch = "x86_64")]
        (ValueKind::Complex, 32) => long_double_complex_ops(op, basic, inout, input),
        (ValueKind::Pair { value }, _) if matches!(op, ReduceOp::Minloc | ReduceOp::Maxloc) => {
            let geometry = PairGeometry {
                stride: basic.extent as usize,
                index: value.index_offset(),
            };
            pair_ops(op, value, geometry, inout, input)
        }
        _ => Err(unsupported(op, basic)),
    }
}

/// [`apply`] on packed streams (what the collectives combine): elements follow each other
/// without the padding of their in-memory layout, which matters for the pair types.
pub fn apply_packed(op: ReduceOp, basic: &Basic, inout: &mut [u8], input: &[u8]) -> Result<()> {
    match basic.kind {
        ValueKind::Pair { value } if matches!(op, ReduceOp::Minloc | ReduceOp::Maxloc) => {
            let geometry = PairGeometry {
                stride: basic.size as usize,
                index: value.value_size(),
            };
            pair_ops(op, value, geometry, inout, input)
        }
        _ => apply(op, basic, inout, input),
    }
}

/// Whether `op` is defined on elements of `basic` (MPI-3.1 §5.9.2); `MPI_ERR_OP` if not. Tried
/// on one zero element on the stack: no allocation, so the fast paths can afford it per call.
pub fn check(op: ReduceOp, basic: &Basic) -> Result<()> {
    const ROOM: usize = 64; // above the largest predefined element (32 bytes)
    let n = (basic.size as usize).min(ROOM);
    let mut one = [0u8; ROOM];
    apply_packed(op, basic, &mut one[..n], &[0u8; ROOM][..n])
}

/// Where the elements of a pair array are: distance between elements, offset of the index.
#[derive(Debug, Clone, Copy)]
struct PairGeometry {
    stride: usize,
    index: usize,
}

/// MAX, MIN, SUM and PROD on C `long double` (x87 80-bit in 16 bytes; arithmetic on the FPU).
fn long_double_ops(op: ReduceOp, basic: &Basic, inout: &mut [u8], input: &[u8]) -> Result<()> {
    use reflex_base::x87;
    use std::cmp::Ordering;
    for (io, i) in inout
        .chunks_exact_mut(x87::SIZE)
        .zip(input.chunks_exact(x87::SIZE))
    {
        let take = match op {
            ReduceOp::Max => x87::compare(i, io) == Ordering::Greater,
            ReduceOp::Min => x87::compare(i, io) == Ordering::Less,
            #[cfg(target_arch = "x86_64")]
            ReduceOp::Sum => {
                x87::combine(x87::Arith::Sum, i, io);
                false
            }
            #[cfg(target_arch = "x86_64")]
            ReduceOp::Prod => {
                x87::combine(x87::Arith::Prod, i, io);
                false
            }
            _ => return Err(unsupported(op, basic)),
        };
        if take {
            io.copy_from_slice(i);
        }
    }
    Ok(())
}

fn is_logical(op: ReduceOp) -> bool {
    matches!(op, ReduceOp::Land | ReduceOp::Lor | ReduceOp::Lxor)
}

/// Complex sum and product on pairs of `H`-byte floats.
fn complex_ops<const H: usize>(
    op: ReduceOp,
    basic: &Basic,
    inout: &mut [u8],
    input: &[u8],
) -> Result<()> {
    let read = |b: &[u8]| -> f64 {
        if H == 4 {
            f32::from_ne_bytes(b.try_into().expect("4 bytes")) as f64
        } else {
            f64::from_ne_bytes(b.try_into().expect("8 bytes"))
        }
    };
    let write = |b: &mut [u8], v: f64| {
        if H == 4 {
            b.copy_from_slice(&(v as f32).to_ne_bytes())
        } else {
            b.copy_from_slice(&v.to_ne_bytes())
        }
    };
    for (io, i) in inout.chunks_exact_mut(2 * H).zip(input.chunks_exact(2 * H)) {
        let (ar, ai) = (read(&i[..H]), read(&i[H..]));
        let (br, bi) = (read(&io[..H]), read(&io[H..]));
        let (re, im) = match op {
            ReduceOp::Sum => (ar + br, ai + bi),
            ReduceOp::Prod => (ar * br - ai * bi, ar * bi + ai * br),
            _ => return Err(unsupported(op, basic)),
        };
        write(&mut io[..H], re);
        write(&mut io[H..2 * H], im);
    }
    Ok(())
}

/// Complex sum and product on pairs of C `long double`s (`MPI_C_LONG_DOUBLE_COMPLEX`), on the
/// FPU: a product is `(ar br - ai bi, ar bi + ai br)`, a difference a sum with the sign flipped.
#[cfg(target_arch = "x86_64")]
fn long_double_complex_ops(
    op: ReduceOp,
    basic: &Basic,
    inout: &mut [u8],
    input: &[u8],
) -> Result<()> {
    use reflex_base::x87::{combine, Arith, SIZE};
    let product = |a: &[u8], b: &[u8]| {
        let mut p = [0u8; SIZE];
        p.copy_from_slice(&b[..SIZE]);
        combine(Arith::Prod, a, &mut p);
        p
    };
    for (io, i) in inout
        .chunks_exact_mut(2 * SIZE)
        .zip(input.chunks_exact(2 * SIZE))
    {
        let (ar, ai) = i.split_at(SIZE);
        match op {
            ReduceOp::Sum => {
                let (br, bi) = io.split_at_mut(SIZE);
                combine(Arith::Sum, ar, br);
                combine(Arith::Sum, ai, bi);
            }
            ReduceOp::Prod => {
                let (br, bi) = io.split_at(SIZE);
                let (mut re, mut minus) = (product(ar, br), product(ai, bi));
                minus[9] ^= 0x80; // the sign bit of the 80-bit value
                combine(Arith::Sum, &minus, &mut re);
                let (mut im, cross) = (product(ar, bi), product(ai, br));
                combine(Arith::Sum, &cross, &mut im);
                io[..SIZE].copy_from_slice(&re);
                io[SIZE..2 * SIZE].copy_from_slice(&im);
            }
            _ => return Err(unsupported(op, basic)),
        }
    }
    Ok(())
}

/// MINLOC/MAXLOC on (value, int index) structs: the better value wins; ties keep the lower index.
fn pair_ops(
    op: ReduceOp,
    value: PairValue,
    at: PairGeometry,
    inout: &mut [u8],
    input: &[u8],
) -> Result<()> {
    let (vsize, ioff) = (value.value_size(), at.index);
    let read_value = |b: &[u8]| -> f64 {
        match value {
            PairValue::Float => f32::from_ne_bytes(b[..4].try_into().expect("4 bytes")) as f64,
            PairValue::Double => f64::from_ne_bytes(b[..8].try_into().expect("8 bytes")),
            PairValue::Long => i64::from_ne_bytes(b[..8].try_into().expect("8 bytes")) as f64,
            PairValue::Short => i16::from_ne_bytes(b[..2].try_into().expect("2 bytes")) as f64,
            PairValue::Int | PairValue::LongDouble => {
                i32::from_ne_bytes(b[..4].try_into().expect("4 bytes")) as f64
            }
        }
    };
    let exact_less = |a: &[u8], b: &[u8]| -> std::cmp::Ordering {
        match value {
            PairValue::LongDouble => reflex_base::x87::compare(&a[..16], &b[..16]),
            PairValue::Long => i64::from_ne_bytes(a[..8].try_into().expect("8"))
                .cmp(&i64::from_ne_bytes(b[..8].try_into().expect("8"))),
            _ => read_value(a)
                .partial_cmp(&read_value(b))
                .unwrap_or(std::cmp::Ordering::Equal),
        }
    };
    for (io, i) in inout
        .chunks_exact_mut(at.stride)
        .zip(input.chunks_exact(at.stride))
    {
        let index = |b: &[u8]| i32::from_ne_bytes(b[ioff..ioff + 4].try_into().expect("4 bytes"));
        let order = exact_less(i, io);
        let take_input = match (op, order) {
            (ReduceOp::Minloc, std::cmp::Ordering::Less)
            | (ReduceOp::Maxloc, std::cmp::Ordering::Greater) => true,
            (_, std::cmp::Ordering::Equal) => index(i) < index(io),
            _ => false,
        };
        if take_input {
            io[..vsize].copy_from_slice(&i[..vsize]);
            io[ioff..ioff + 4].copy_from_slice(&i[ioff..ioff + 4]);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ints(v: &[i32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_ne_bytes()).collect()
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn long_double_complex_sum_and_product() {
        use reflex_base::x87::from_i64;
        let complex = |re: i64, im: i64| [from_i64(re), from_i64(im)].concat();
        let ldc = Basic::plain(ValueKind::Complex, 32);
        let mut acc = complex(3, 4);
        apply(ReduceOp::Prod, &ldc, &mut acc, &complex(1, 2)).unwrap();
        assert_eq!(acc, complex(-5, 10)); // (1 + 2i)(3 + 4i)
        apply(ReduceOp::Sum, &ldc, &mut acc, &complex(6, -3)).unwrap();
        assert_eq!(acc, complex(1, 7));
        assert!(apply(ReduceOp::Max, &ldc, &mut acc, &complex(0, 0)).is_err());
    }

    #[test]
    fn integer_sum_max_and_bitwise() {
        let int = Basic::plain(ValueKind::Signed, 4);
        let mut acc = ints(&[1, -5, 7]);
        apply(ReduceOp::Sum, &int, &mut acc, &ints(&[2, 3, -7])).unwrap();
        assert_eq!(acc, ints(&[3, -2, 0]));
        apply(ReduceOp::Max, &int, &mut acc, &ints(&[0, 0, 0])).unwrap();
        assert_eq!(acc, ints(&[3, 0, 0]));
        apply(ReduceOp::Bor, &int, &mut acc, &ints(&[4, 1, 2])).unwrap();
        assert_eq!(acc, ints(&[7, 1, 2]));
    }

    #[test]
    fn float_rejects_bitwise() {
        let dbl = Basic::plain(ValueKind::Float, 8);
        let mut acc = 1.5f64.to_ne_bytes().to_vec();
        apply(ReduceOp::Prod, &dbl, &mut acc, &2.0f64.to_ne_bytes()).unwrap();
        assert_eq!(f64::from_ne_bytes(acc[..].try_into().unwrap()), 3.0);
        assert_eq!(
            apply(ReduceOp::Band, &dbl, &mut acc, &[0; 8])
                .unwrap_err()
                .class,
            ErrorClass::Op
        );
    }

    #[test]
    fn minloc_prefers_lower_index_on_ties() {
        let two_int = Basic {
            kind: ValueKind::Pair {
                value: PairValue::Int,
            },
            size: 8,
            extent: 8,
        };
        let mut acc = ints(&[5, 3, 9, 1]);
        apply(ReduceOp::Minloc, &two_int, &mut acc, &ints(&[5, 2, 8, 4])).unwrap();
        assert_eq!(acc, ints(&[5, 2, 8, 4]));
        apply(ReduceOp::Maxloc, &two_int, &mut acc, &ints(&[5, 0, 7, 0])).unwrap();
        assert_eq!(acc, ints(&[5, 0, 8, 4]));
    }

    #[test]
    fn complex_product() {
        let c = Basic::plain(ValueKind::Complex, 16);
        let z = |re: f64, im: f64| [re.to_ne_bytes(), im.to_ne_bytes()].concat();
        let mut acc = z(1.0, 2.0);
        apply(ReduceOp::Prod, &c, &mut acc, &z(3.0, -1.0)).unwrap();
        assert_eq!(acc, z(5.0, 5.0));
    }

    #[test]
    fn minloc_on_packed_pairs_steps_by_size_not_extent() {
        // MPI_DOUBLE_INT: 12 bytes of data, extent 16; packed elements follow each other.
        let pair = Basic {
            kind: ValueKind::Pair {
                value: PairValue::Double,
            },
            size: 12,
            extent: 16,
        };
        let packed = |v: &[(f64, i32)]| -> Vec<u8> {
            v.iter()
                .flat_map(|(x, i)| x.to_ne_bytes().into_iter().chain(i.to_ne_bytes()))
                .collect()
        };
        let mut acc = packed(&[(3.0, 0), (1.0, 0)]);
        apply_packed(
            ReduceOp::Minloc,
            &pair,
            &mut acc,
            &packed(&[(2.0, 1), (1.0, 1)]),
        )
        .unwrap();
        assert_eq!(
            acc,
            packed(&[(2.0, 1), (1.0, 0)]),
            "smaller value wins, ties: lower index"
        );
    }
}
