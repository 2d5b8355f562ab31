//! The "external32" data representation (MPI-3.1 §13.5.2): big-endian, IEEE, fixed sizes.
//!
//! Conversion works on one predefined type at a time, between its native bytes as packed (data
//! only, in typemap order: what `MPI_Pack` produces) and its external bytes. A predefined type is
//! one or two *fields* (a value-index pair is two); each field is an integer, a float or raw bytes
//! with a native and an external size from Table 13.2: `long` and `unsigned long` are 4 bytes
//! there, `wchar_t` 2, `long double` a 16-byte IEEE binary128 (converted from the x87 80-bit
//! format exactly: same sign and biased exponent, the fraction moved to the top of 112 bits).
//! An integer that does not fit its external size is `MPI_ERR_CONVERSION`, never truncated
//! silently. Walking a derived type's leaves in typemap order is `imp/pack.rs`'s job.

use crate::datatypes;
use crate::ffi::MPI_Datatype;
use reflex_engine::{ErrorClass, MpiError, PairValue, Result, ValueKind};

const LONG: MPI_Datatype = 0x4c000807;
const UNSIGNED_LONG: MPI_Datatype = 0x4c000808;
const WCHAR: MPI_Datatype = 0x4c00040e;

/// One scalar inside a predefined type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    /// An integer stored in `native` bytes, `ext` bytes in external32.
    Int {
        native: usize,
        ext: usize,
        signed: bool,
    },
    /// An IEEE float of `size` bytes (16: x87 extended natively, binary128 externally).
    Float(usize),
    /// Bytes copied as they are (`MPI_BYTE`, `MPI_PACKED`, `MPI_CHAR`).
    Raw(usize),
}

impl Field {
    fn native(self) -> usize {
        match self {
            Field::Int { native, .. } => native,
            Field::Float(n) | Field::Raw(n) => n,
        }
    }

    fn ext(self) -> usize {
        match self {
            Field::Int { ext, .. } => ext,
            Field::Float(n) | Field::Raw(n) => n,
        }
    }
}

fn int(native: usize, signed: bool) -> Field {
    Field::Int {
        native,
        ext: native,
        signed,
    }
}

/// The fields of predefined type `h`, in memory order (`None`: not a predefined type).
fn fields(h: MPI_Datatype) -> Option<Vec<Field>> {
    let b = datatypes::builtin(h)?;
    let size = b.size as usize;
    Some(match (h, b.kind) {
        (LONG | UNSIGNED_LONG, _) => vec![Field::Int {
            native: 8,
            ext: 4,
            signed: h == LONG,
        }],
        (WCHAR, _) => vec![Field::Int {
            native: 4,
            ext: 2,
            signed: false,
        }],
        (_, ValueKind::Signed) => vec![int(size, true)],
        (_, ValueKind::Unsigned | ValueKind::Logical) => vec![int(size, false)],
        (_, ValueKind::Float) => vec![Field::Float(size)],
        (_, ValueKind::Complex) => vec![Field::Float(size / 2); 2],
        (_, ValueKind::Byte | ValueKind::Char) => vec![Field::Raw(size)],
        (_, ValueKind::LbMarker | ValueKind::UbMarker) => Vec::new(),
        (_, ValueKind::Pair { value }) => {
            let first = match value {
                PairValue::Float => Field::Float(4),
                PairValue::Double => Field::Float(8),
                PairValue::LongDouble => Field::Float(16),
                PairValue::Long => Field::Int {
                    native: 8,
                    ext: 4,
                    signed: true,
                },
                PairValue::Short => int(2, true),
                PairValue::Int => int(4, true),
            };
            // The second half is an int, or (MPI_2REAL, MPI_2DOUBLE_PRECISION) a second value.
            let second = match size - first.native() {
                4 if first == Field::Float(4) && h != 0x8c000000u32 as i32 => Field::Float(4),
                8 => Field::Float(8),
                n => int(n, true),
            };
            vec![first, second]
        }
    })
}

fn unknown(h: MPI_Datatype) -> MpiError {
    MpiError::new(
        ErrorClass::Type,
        format!("{h:#x} is not a predefined datatype (external32 converts predefined types)"),
    )
}

/// Bytes one element of predefined type `h` takes in external32.
pub fn ext_size(h: MPI_Datatype) -> Result<usize> {
    Ok(fields(h)
        .ok_or_else(|| unknown(h))?
        .iter()
        .map(|f| f.ext())
        .sum())
}

/// Converts `n` packed native elements of `h` (`native`, `n × size` bytes) to external32 in `out`
/// (`n × ext_size` bytes).
pub fn encode(h: MPI_Datatype, n: usize, native: &[u8], out: &mut [u8]) -> Result<()> {
    let fields = fields(h).ok_or_else(|| unknown(h))?;
    let (mut src, mut dst) = (0, 0);
    for _ in 0..n {
        for &f in &fields {
            let (a, b) = (&native[src..src + f.native()], &mut out[dst..dst + f.ext()]);
            encode_field(f, a, b, h)?;
            src += f.native();
            dst += f.ext();
        }
    }
    Ok(())
}

/// Converts `n` external32 elements of `h` back to packed native bytes.
pub fn decode(h: MPI_Datatype, n: usize, ext: &[u8], out: &mut [u8]) -> Result<()> {
    let fields = fields(h).ok_or_else(|| unknown(h))?;
    let (mut src, mut dst) = (0, 0);
    for _ in 0..n {
        for &f in &fields {
            let (a, b) = (&ext[src..src + f.ext()], &mut out[dst..dst + f.native()]);
            decode_field(f, a, b);
            src += f.ext();
            dst += f.native();
        }
    }
    Ok(())
}

fn encode_field(f: Field, native: &[u8], out: &mut [u8], h: MPI_Datatype) -> Result<()> {
    match f {
        Field::Raw(_) => out.copy_from_slice(native),
        Field::Float(16) => out.copy_from_slice(&x87_to_binary128(native)),
        Field::Float(_) => reverse_into(native, out),
        Field::Int {
            native: n,
            ext,
            signed,
        } => {
            if ext < n && !fits(native, ext, signed) {
                return Err(MpiError::new(
                    ErrorClass::Conversion,
                    format!(
                        "a value of datatype {} does not fit the {ext} bytes external32 gives it",
                        datatypes::name(h).unwrap_or("?")
                    ),
                ));
            }
            reverse_into(&native[..ext], out);
        }
    }
    Ok(())
}

fn decode_field(f: Field, ext: &[u8], out: &mut [u8]) {
    match f {
        Field::Raw(_) => out.copy_from_slice(ext),
        Field::Float(16) => out.copy_from_slice(&binary128_to_x87(ext)),
        Field::Float(_) => reverse_into(ext, out),
        Field::Int { ext: e, signed, .. } => {
            reverse_into(ext, &mut out[..e]);
            let negative = signed && ext[0] & 0x80 != 0;
            out[e..].fill(if negative { 0xff } else { 0 });
        }
    }
}

/// Whether the little-endian integer `native` survives truncation to `ext` bytes.
fn fits(native: &[u8], ext: usize, signed: bool) -> bool {
    let fill = if signed && native[ext - 1] & 0x80 != 0 {
        0xff
    } else {
        0
    };
    native[ext..].iter().all(|&b| b == fill)
}

fn reverse_into(src: &[u8], dst: &mut [u8]) {
    for (d, s) in dst.iter_mut().zip(src.iter().rev()) {
        *d = *s;
    }
}

/// x87 extended (little-endian: 64-bit significand with explicit integer bit, then 15-bit
/// exponent and sign, then 6 padding bytes) to big-endian IEEE binary128.
fn x87_to_binary128(native: &[u8]) -> [u8; 16] {
    let significand = u64::from_le_bytes(native[..8].try_into().expect("8 bytes"));
    let sign_exp = u16::from_le_bytes([native[8], native[9]]);
    // Drop the explicit integer bit; the 63 fraction bits go to the top of 112.
    let fraction = ((significand << 1) as u128) << 48;
    let bits = (u128::from(sign_exp) << 112) | fraction;
    bits.to_be_bytes()
}

/// Big-endian IEEE binary128 to x87 extended (the low 49 fraction bits are rounded off by
/// truncation: x87 keeps 63).
fn binary128_to_x87(ext: &[u8]) -> [u8; 16] {
    let bits = u128::from_be_bytes(ext.try_into().expect("16 bytes"));
    let sign_exp = (bits >> 112) as u16;
    let fraction = ((bits >> 49) as u64) & ((1 << 63) - 1);
    let integer = u64::from(sign_exp & 0x7fff != 0) << 63;
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&(integer | fraction).to_le_bytes());
    out[8..10].copy_from_slice(&sign_exp.to_le_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const INT: MPI_Datatype = 0x4c000405;
    const DOUBLE: MPI_Datatype = 0x4c00080b;
    const SHORT_INT: MPI_Datatype = 0x8c000003u32 as i32;
    const LONG_DOUBLE: MPI_Datatype = 0x4c00100c;

    fn enc(h: MPI_Datatype, native: &[u8], n: usize) -> Vec<u8> {
        let mut out = vec![0xee; ext_size(h).unwrap() * n];
        encode(h, n, native, &mut out).unwrap();
        out
    }

    #[test]
    fn ints_and_doubles_are_big_endian() {
        assert_eq!(enc(INT, &1i32.to_ne_bytes(), 1), [0, 0, 0, 1]);
        assert_eq!(
            enc(INT, &(-2i32).to_ne_bytes(), 1),
            [0xff, 0xff, 0xff, 0xfe]
        );
        assert_eq!(
            enc(DOUBLE, &1.0f64.to_ne_bytes(), 1),
            [0x3f, 0xf0, 0, 0, 0, 0, 0, 0]
        );
        let mut back = [0u8; 8];
        decode(DOUBLE, 1, &[0xc0, 0, 0, 0, 0, 0, 0, 0], &mut back).unwrap();
        assert_eq!(f64::from_ne_bytes(back), -2.0);
    }

    #[test]
    fn long_is_four_bytes_and_refuses_what_does_not_fit() {
        assert_eq!(ext_size(LONG).unwrap(), 4);
        assert_eq!(
            enc(LONG, &(-3i64).to_ne_bytes(), 1),
            [0xff, 0xff, 0xff, 0xfd]
        );
        let mut back = [0u8; 8];
        decode(LONG, 1, &[0xff, 0xff, 0xff, 0xfd], &mut back).unwrap();
        assert_eq!(i64::from_ne_bytes(back), -3);
        decode(UNSIGNED_LONG, 1, &[0xff, 0xff, 0xff, 0xfd], &mut back).unwrap();
        assert_eq!(u64::from_ne_bytes(back), 0xffff_fffd);
        let mut out = [0u8; 4];
        let err = encode(LONG, 1, &(1i64 << 40).to_ne_bytes(), &mut out).unwrap_err();
        assert_eq!(err.class, ErrorClass::Conversion);
        assert_eq!(ext_size(WCHAR).unwrap(), 2);
    }

    #[test]
    fn pair_types_convert_field_by_field_without_padding() {
        // MPI_SHORT_INT packs as 2 + 4 native bytes; external32 is 6 bytes.
        let mut native = Vec::new();
        native.extend_from_slice(&7i16.to_ne_bytes());
        native.extend_from_slice(&(-1i32).to_ne_bytes());
        assert_eq!(enc(SHORT_INT, &native, 1), [0, 7, 0xff, 0xff, 0xff, 0xff]);
        assert_eq!(ext_size(0x8c000001u32 as i32).unwrap(), 12); // MPI_DOUBLE_INT
        assert_eq!(ext_size(0x8c000002u32 as i32).unwrap(), 8); // MPI_LONG_INT
        assert_eq!(ext_size(0x4c001023).unwrap(), 16); // MPI_2DOUBLE_PRECISION
    }

    #[test]
    fn long_double_becomes_binary128_and_back() {
        // 1.0L: significand 0x8000000000000000, exponent 0x3fff.
        let mut native = [0u8; 16];
        native[..8].copy_from_slice(&(1u64 << 63).to_le_bytes());
        native[8..10].copy_from_slice(&0x3fffu16.to_le_bytes());
        let ext = enc(LONG_DOUBLE, &native, 1);
        let mut want = [0u8; 16];
        want[0] = 0x3f;
        want[1] = 0xff;
        assert_eq!(ext, want);
        let mut back = [0u8; 16];
        decode(LONG_DOUBLE, 1, &ext, &mut back).unwrap();
        assert_eq!(back, native);
    }

    #[test]
    fn non_predefined_handles_are_type_errors() {
        assert_eq!(
            ext_size(0xcc000001u32 as i32).unwrap_err().class,
            ErrorClass::Type
        );
    }
}
