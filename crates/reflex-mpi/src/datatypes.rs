//! The predefined datatypes of MPICH's ABI: handle value → kind, size and extent.
//!
//! MPICH encodes a basic type's size in bits 8..16 of its handle; the table below spells every
//! type out anyway (kind matters for reductions, and the pair types are padded structs whose
//! handles carry no size).

use reflex_engine::{Basic, Datatype, PairValue, ValueKind};

const fn b(kind: ValueKind, size: u32) -> Basic {
    Basic::plain(kind, size)
}

const fn pair(value: PairValue, size: u32, extent: u32) -> Basic {
    Basic {
        kind: ValueKind::Pair { value },
        size,
        extent,
    }
}

use ValueKind::{Byte, Char, Complex, Float, LbMarker, Logical, Signed, UbMarker, Unsigned};

/// Every predefined datatype handle with its description.
pub const BUILTIN: &[(i32, Basic)] = &[
    (0x4c000101, b(Char, 1)),                                    // MPI_CHAR
    (0x4c000118, b(Signed, 1)),                                  // MPI_SIGNED_CHAR
    (0x4c000102, b(Unsigned, 1)),                                // MPI_UNSIGNED_CHAR
    (0x4c00010d, b(Byte, 1)),                                    // MPI_BYTE
    (0x4c00040e, b(Char, 4)),                                    // MPI_WCHAR
    (0x4c000203, b(Signed, 2)),                                  // MPI_SHORT
    (0x4c000204, b(Unsigned, 2)),                                // MPI_UNSIGNED_SHORT
    (0x4c000405, b(Signed, 4)),                                  // MPI_INT
    (0x4c000406, b(Unsigned, 4)),                                // MPI_UNSIGNED
    (0x4c000807, b(Signed, 8)),                                  // MPI_LONG
    (0x4c000808, b(Unsigned, 8)),                                // MPI_UNSIGNED_LONG
    (0x4c00040a, b(Float, 4)),                                   // MPI_FLOAT
    (0x4c00080b, b(Float, 8)),                                   // MPI_DOUBLE
    (0x4c00100c, b(Float, 16)),                                  // MPI_LONG_DOUBLE
    (0x4c000809, b(Signed, 8)),                                  // MPI_LONG_LONG_INT
    (0x4c000819, b(Unsigned, 8)),                                // MPI_UNSIGNED_LONG_LONG
    (0x4c00010f, b(Byte, 1)),                                    // MPI_PACKED
    (0x4c000010, b(LbMarker, 0)),                                // MPI_LB
    (0x4c000011, b(UbMarker, 0)),                                // MPI_UB
    (0x4c000816, pair(PairValue::Int, 8, 8)),                    // MPI_2INT
    (0x8c000000u32 as i32, pair(PairValue::Float, 8, 8)),        // MPI_FLOAT_INT
    (0x8c000001u32 as i32, pair(PairValue::Double, 12, 16)),     // MPI_DOUBLE_INT
    (0x8c000002u32 as i32, pair(PairValue::Long, 12, 16)),       // MPI_LONG_INT
    (0x8c000003u32 as i32, pair(PairValue::Short, 6, 8)),        // MPI_SHORT_INT
    (0x8c000004u32 as i32, pair(PairValue::LongDouble, 20, 32)), // MPI_LONG_DOUBLE_INT
    (0x4c00081e, b(Complex, 8)),                                 // MPI_COMPLEX
    (0x4c001022, b(Complex, 16)),                                // MPI_DOUBLE_COMPLEX
    (0x4c00041d, b(Logical, 4)),                                 // MPI_LOGICAL
    (0x4c00041c, b(Float, 4)),                                   // MPI_REAL
    (0x4c00081f, b(Float, 8)),                                   // MPI_DOUBLE_PRECISION
    (0x4c00041b, b(Signed, 4)),                                  // MPI_INTEGER
    (0x4c000820, pair(PairValue::Int, 8, 8)),                    // MPI_2INTEGER
    (0x4c000821, pair(PairValue::Float, 8, 8)),                  // MPI_2REAL
    (0x4c001023, pair(PairValue::Double, 16, 16)),               // MPI_2DOUBLE_PRECISION
    (0x4c00011a, b(Char, 1)),                                    // MPI_CHARACTER
    (0x4c000427, b(Float, 4)),                                   // MPI_REAL4
    (0x4c000829, b(Float, 8)),                                   // MPI_REAL8
    (0x4c00102b, b(Float, 16)),                                  // MPI_REAL16
    (0x4c000828, b(Complex, 8)),                                 // MPI_COMPLEX8
    (0x4c00102a, b(Complex, 16)),                                // MPI_COMPLEX16
    (0x4c00202c, b(Complex, 32)),                                // MPI_COMPLEX32
    (0x4c00012d, b(Signed, 1)),                                  // MPI_INTEGER1
    (0x4c00022f, b(Signed, 2)),                                  // MPI_INTEGER2
    (0x4c000430, b(Signed, 4)),                                  // MPI_INTEGER4
    (0x4c000831, b(Signed, 8)),                                  // MPI_INTEGER8
    (0x4c000137, b(Signed, 1)),                                  // MPI_INT8_T
    (0x4c000238, b(Signed, 2)),                                  // MPI_INT16_T
    (0x4c000439, b(Signed, 4)),                                  // MPI_INT32_T
    (0x4c00083a, b(Signed, 8)),                                  // MPI_INT64_T
    (0x4c00013b, b(Unsigned, 1)),                                // MPI_UINT8_T
    (0x4c00023c, b(Unsigned, 2)),                                // MPI_UINT16_T
    (0x4c00043d, b(Unsigned, 4)),                                // MPI_UINT32_T
    (0x4c00083e, b(Unsigned, 8)),                                // MPI_UINT64_T
    (0x4c00013f, b(Logical, 1)),                                 // MPI_C_BOOL
    (0x4c000840, b(Complex, 8)),                                 // MPI_C_FLOAT_COMPLEX
    (0x4c001041, b(Complex, 16)),                                // MPI_C_DOUBLE_COMPLEX
    (0x4c002042, b(Complex, 32)),                                // MPI_C_LONG_DOUBLE_COMPLEX
    (0x4c000246, b(Float, 2)),                                   // MPIX_C_FLOAT16
    (0x4c000843, b(Signed, 8)),                                  // MPI_AINT
    (0x4c000844, b(Signed, 8)),                                  // MPI_OFFSET
    (0x4c000845, b(Signed, 8)),                                  // MPI_COUNT
    (0x4c000133, b(Logical, 1)),                                 // MPI_CXX_BOOL
    (0x4c000834, b(Complex, 8)),                                 // MPI_CXX_FLOAT_COMPLEX
    (0x4c001035, b(Complex, 16)),                                // MPI_CXX_DOUBLE_COMPLEX
    (0x4c002036, b(Complex, 32)),                                // MPI_CXX_LONG_DOUBLE_COMPLEX
];

/// The predefined datatype a handle names.
pub fn builtin(handle: i32) -> Option<Datatype> {
    BUILTIN
        .iter()
        .find(|(h, _)| *h == handle)
        .map(|(_, basic)| Datatype::Basic(*basic))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_agree_with_the_size_bits_of_sized_handles() {
        for (h, basic) in BUILTIN {
            let h = *h as u32;
            if h & 0xff00_0000 == 0x4c00_0000 && !matches!(basic.kind, ValueKind::Pair { .. }) {
                assert_eq!((h >> 8) & 0xff, basic.size, "handle {h:#x}");
            }
        }
        assert!(builtin(0x0c00_0000).is_none());
    }
}
