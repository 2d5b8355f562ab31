//! Arithmetic on the x87 80-bit extended format, C's `long double` on x86_64 Linux (16 bytes in
//! memory, the first 10 significant), for the reductions on `MPI_LONG_DOUBLE`: Rust has no such
//! type, so sums and products run on the FPU itself; comparisons decode the bits.

use std::cmp::Ordering;

/// Bytes of a `long double` in memory (10 significant, 6 of padding).
pub const SIZE: usize = 16;

/// An arithmetic operation of [`combine`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arith {
    /// `inout = input + inout`.
    Sum,
    /// `inout = input * inout`.
    Prod,
}

/// `inout = input op inout` on one `long double` (the first 10 bytes of each slice are used).
///
/// # Panics
/// If a slice is shorter than 10 bytes.
#[cfg(target_arch = "x86_64")]
pub fn combine(op: Arith, input: &[u8], inout: &mut [u8]) {
    assert!(
        input.len() >= 10 && inout.len() >= 10,
        "long double needs 10 bytes"
    );
    let (a, b) = (input.as_ptr(), inout.as_mut_ptr());
    // Load both, combine popping one, store popping the other: the x87 stack is left as found.
    macro_rules! fpu {
        ($op:literal) => {
            // SAFETY: `a` and `b` address at least 10 bytes each (asserted), `b` writable; the
            // x87 registers used are declared clobbered.
            unsafe {
                std::arch::asm!(
                    "fld tbyte ptr [{a}]",
                    "fld tbyte ptr [{b}]",
                    concat!($op, " st(1), st"),
                    "fstp tbyte ptr [{b}]",
                    a = in(reg) a,
                    b = in(reg) b,
                    out("st(0)") _, out("st(1)") _,
                    options(nostack),
                )
            }
        };
    }
    match op {
        Arith::Sum => fpu!("faddp"),
        Arith::Prod => fpu!("fmulp"),
    }
}

/// The `long double` of integer `v`, exact (64 significant bits), in its 16 bytes of memory.
pub fn from_i64(v: i64) -> [u8; SIZE] {
    let mut out = [0u8; SIZE];
    if v == 0 {
        return out;
    }
    let m = v.unsigned_abs();
    let shift = m.leading_zeros();
    out[..8].copy_from_slice(&(m << shift).to_le_bytes());
    let exponent = 16383 + 63 - shift as u16;
    let top = exponent | if v < 0 { 0x8000 } else { 0 };
    out[8..10].copy_from_slice(&top.to_le_bytes());
    out
}

/// Orders two `long double`s by value (NaNs compare equal to everything; -0 equals +0).
pub fn compare(a: &[u8], b: &[u8]) -> Ordering {
    let (ka, kb) = (key(a), key(b));
    match (ka, kb) {
        (Some(x), Some(y)) => x.cmp(&y),
        _ => Ordering::Equal,
    }
}

/// A signed integer ordered like the value (`None` for NaN).
fn key(b: &[u8]) -> Option<i128> {
    let mantissa = u64::from_le_bytes(b[..8].try_into().expect("8 bytes"));
    let top = u16::from_le_bytes(b[8..10].try_into().expect("2 bytes"));
    let exponent = top & 0x7fff;
    if exponent == 0x7fff && mantissa << 1 != 0 {
        return None;
    }
    let magnitude = (i128::from(exponent) << 64) | i128::from(mantissa);
    Some(if top & 0x8000 != 0 {
        -magnitude
    } else {
        magnitude
    })
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    fn ld(v: i64) -> [u8; 16] {
        from_i64(v)
    }

    #[test]
    fn sums_products_and_orders() {
        let mut acc = ld(5);
        combine(Arith::Sum, &ld(-7), &mut acc);
        assert_eq!(acc[..10], ld(-2)[..10]);
        combine(Arith::Prod, &ld(-3), &mut acc);
        assert_eq!(acc[..10], ld(6)[..10]);
        assert_eq!(compare(&ld(-9), &ld(2)), Ordering::Less);
        assert_eq!(compare(&ld(4), &ld(3)), Ordering::Greater);
        assert_eq!(compare(&ld(0), &ld(0)), Ordering::Equal);
    }
}
