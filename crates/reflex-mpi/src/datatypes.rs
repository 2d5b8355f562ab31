//! The predefined datatypes of MPICH's ABI: handle value → name, kind, size and extent.
//!
//! MPICH encodes a basic type's size in bits 8..16 of its handle and gives each predefined type a
//! distinct index in bits 0..8; the table below spells every type out anyway (kind matters for
//! reductions, and the pair types are padded structs whose handles carry no size). Lookup is the
//! hot path of every communication call: [`builtin`] indexes a table by the low byte (the pair
//! types `0x8c00000N` by `N`) and compares the full handle, no search and no lock.

use reflex_engine::{Basic, PairValue, ValueKind};

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

/// Every predefined datatype handle with its name (`MPI_Type_get_name`) and description.
pub const BUILTIN: &[(i32, &str, Basic)] = &[
    (0x4c000101, "MPI_CHAR", b(Char, 1)),
    (0x4c000118, "MPI_SIGNED_CHAR", b(Signed, 1)),
    (0x4c000102, "MPI_UNSIGNED_CHAR", b(Unsigned, 1)),
    (0x4c00010d, "MPI_BYTE", b(Byte, 1)),
    (0x4c00040e, "MPI_WCHAR", b(Char, 4)),
    (0x4c000203, "MPI_SHORT", b(Signed, 2)),
    (0x4c000204, "MPI_UNSIGNED_SHORT", b(Unsigned, 2)),
    (0x4c000405, "MPI_INT", b(Signed, 4)),
    (0x4c000406, "MPI_UNSIGNED", b(Unsigned, 4)),
    (0x4c000807, "MPI_LONG", b(Signed, 8)),
    (0x4c000808, "MPI_UNSIGNED_LONG", b(Unsigned, 8)),
    (0x4c00040a, "MPI_FLOAT", b(Float, 4)),
    (0x4c00080b, "MPI_DOUBLE", b(Float, 8)),
    (0x4c00100c, "MPI_LONG_DOUBLE", b(Float, 16)),
    (0x4c000809, "MPI_LONG_LONG_INT", b(Signed, 8)),
    (0x4c000819, "MPI_UNSIGNED_LONG_LONG", b(Unsigned, 8)),
    (0x4c00010f, "MPI_PACKED", b(Byte, 1)),
    (0x4c000010, "MPI_LB", b(LbMarker, 0)),
    (0x4c000011, "MPI_UB", b(UbMarker, 0)),
    (0x4c000816, "MPI_2INT", pair(PairValue::Int, 8, 8)),
    (
        0x8c000000u32 as i32,
        "MPI_FLOAT_INT",
        pair(PairValue::Float, 8, 8),
    ),
    (
        0x8c000001u32 as i32,
        "MPI_DOUBLE_INT",
        pair(PairValue::Double, 12, 16),
    ),
    (
        0x8c000002u32 as i32,
        "MPI_LONG_INT",
        pair(PairValue::Long, 12, 16),
    ),
    (
        0x8c000003u32 as i32,
        "MPI_SHORT_INT",
        pair(PairValue::Short, 6, 8),
    ),
    (
        0x8c000004u32 as i32,
        "MPI_LONG_DOUBLE_INT",
        pair(PairValue::LongDouble, 20, 32),
    ),
    (0x4c00081e, "MPI_COMPLEX", b(Complex, 8)),
    (0x4c001022, "MPI_DOUBLE_COMPLEX", b(Complex, 16)),
    (0x4c00041d, "MPI_LOGICAL", b(Logical, 4)),
    (0x4c00041c, "MPI_REAL", b(Float, 4)),
    (0x4c00081f, "MPI_DOUBLE_PRECISION", b(Float, 8)),
    (0x4c00041b, "MPI_INTEGER", b(Signed, 4)),
    (0x4c000820, "MPI_2INTEGER", pair(PairValue::Int, 8, 8)),
    (0x4c000821, "MPI_2REAL", pair(PairValue::Float, 8, 8)),
    (
        0x4c001023,
        "MPI_2DOUBLE_PRECISION",
        pair(PairValue::Double, 16, 16),
    ),
    (0x4c00011a, "MPI_CHARACTER", b(Char, 1)),
    (0x4c000427, "MPI_REAL4", b(Float, 4)),
    (0x4c000829, "MPI_REAL8", b(Float, 8)),
    (0x4c00102b, "MPI_REAL16", b(Float, 16)),
    (0x4c000828, "MPI_COMPLEX8", b(Complex, 8)),
    (0x4c00102a, "MPI_COMPLEX16", b(Complex, 16)),
    (0x4c00202c, "MPI_COMPLEX32", b(Complex, 32)),
    (0x4c00012d, "MPI_INTEGER1", b(Signed, 1)),
    (0x4c00022f, "MPI_INTEGER2", b(Signed, 2)),
    (0x4c000430, "MPI_INTEGER4", b(Signed, 4)),
    (0x4c000831, "MPI_INTEGER8", b(Signed, 8)),
    (0x4c000137, "MPI_INT8_T", b(Signed, 1)),
    (0x4c000238, "MPI_INT16_T", b(Signed, 2)),
    (0x4c000439, "MPI_INT32_T", b(Signed, 4)),
    (0x4c00083a, "MPI_INT64_T", b(Signed, 8)),
    (0x4c00013b, "MPI_UINT8_T", b(Unsigned, 1)),
    (0x4c00023c, "MPI_UINT16_T", b(Unsigned, 2)),
    (0x4c00043d, "MPI_UINT32_T", b(Unsigned, 4)),
    (0x4c00083e, "MPI_UINT64_T", b(Unsigned, 8)),
    (0x4c00013f, "MPI_C_BOOL", b(Logical, 1)),
    (0x4c000840, "MPI_C_COMPLEX", b(Complex, 8)), // also MPI_C_FLOAT_COMPLEX (one handle)
    (0x4c001041, "MPI_C_DOUBLE_COMPLEX", b(Complex, 16)),
    (0x4c002042, "MPI_C_LONG_DOUBLE_COMPLEX", b(Complex, 32)),
    (0x4c000246, "MPIX_C_FLOAT16", b(Float, 2)),
    (0x4c000843, "MPI_AINT", b(Signed, 8)),
    (0x4c000844, "MPI_OFFSET", b(Signed, 8)),
    (0x4c000845, "MPI_COUNT", b(Signed, 8)),
    (0x4c000133, "MPI_CXX_BOOL", b(Logical, 1)),
    (0x4c000834, "MPI_CXX_FLOAT_COMPLEX", b(Complex, 8)),
    (0x4c001035, "MPI_CXX_DOUBLE_COMPLEX", b(Complex, 16)),
    (0x4c002036, "MPI_CXX_LONG_DOUBLE_COMPLEX", b(Complex, 32)),
];

/// Handles `0x4c0000NN` by `NN` (the index MPICH gives each predefined type).
const BY_INDEX: [Option<u8>; 0x80] = index_table(0x4c);
/// The pair types `0x8c00000N` by `N`.
const PAIRS: [Option<u8>; 0x80] = index_table(0x8c);

const fn index_table(family: u32) -> [Option<u8>; 0x80] {
    let mut out = [None; 0x80];
    let mut i = 0;
    while i < BUILTIN.len() {
        let h = BUILTIN[i].0 as u32;
        if h >> 24 == family {
            assert!(
                h & 0xff < 0x80,
                "predefined datatype index out of the table"
            );
            out[(h & 0xff) as usize] = Some(i as u8);
        }
        i += 1;
    }
    out
}

/// `(handle, size)` of the predefined types `0x4c0000NN` whose elements are one run of bytes
/// (extent = size), by `NN`; elsewhere `(!NN, 0)`, a handle whose low bits are not `NN` and so
/// matches nothing that looks there (no second test for empty slots).
const DENSE: [(i32, u32); 0x80] = dense_table();

const fn dense_table() -> [(i32, u32); 0x80] {
    let mut out = [(0, 0); 0x80];
    let mut i = 0;
    while i < out.len() {
        out[i] = (!(i as i32), 0);
        i += 1;
    }
    i = 0;
    while i < BUILTIN.len() {
        let (h, _, b) = &BUILTIN[i];
        let short_int = matches!(
            b.kind,
            ValueKind::Pair {
                value: PairValue::Short
            }
        );
        if (*h as u32) >> 24 == 0x4c && b.size == b.extent && !short_int {
            out[(*h & 0x7f) as usize] = (*h, b.size);
        }
        i += 1;
    }
    out
}

/// Bytes per element of a predefined datatype whose elements are one run of bytes (the fast
/// paths' test: one table load, no `Basic`).
#[inline]
pub fn dense_size(handle: i32) -> Option<usize> {
    let (h, size) = DENSE[(handle & 0x7f) as usize];
    (h == handle).then_some(size as usize)
}

fn entry(handle: i32) -> Option<&'static (i32, &'static str, Basic)> {
    let table = match (handle as u32) >> 24 {
        0x4c => &BY_INDEX,
        0x8c => &PAIRS,
        _ => return None,
    };
    let e = &BUILTIN[(*table.get((handle & 0xff) as usize)?)? as usize];
    (e.0 == handle).then_some(e)
}

/// The predefined datatype a handle names.
#[inline]
pub fn builtin(handle: i32) -> Option<Basic> {
    entry(handle).map(|e| e.2)
}

/// The MPI name of a predefined datatype (`"MPI_INT"`).
pub fn name(handle: i32) -> Option<&'static str> {
    entry(handle).map(|e| e.1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_agree_with_the_size_bits_of_sized_handles() {
        for (h, _, basic) in BUILTIN {
            let h = *h as u32;
            if h & 0xff00_0000 == 0x4c00_0000 && !matches!(basic.kind, ValueKind::Pair { .. }) {
                assert_eq!((h >> 8) & 0xff, basic.size, "handle {h:#x}");
            }
        }
        assert!(builtin(0x0c00_0000).is_none());
    }

    #[test]
    fn dense_sizes_are_those_of_the_dense_predefined_types() {
        use reflex_engine::Datatype;
        for (h, name, basic) in BUILTIN {
            let dense = Datatype::Basic(*basic).dense_basic_len(1);
            let family = (*h as u32) >> 24 == 0x4c;
            assert_eq!(dense_size(*h), dense.filter(|_| family), "{name}");
        }
        assert_eq!(dense_size(0x4c00_0405), Some(4)); // MPI_INT
        assert_eq!(dense_size(0x4c01_0405), None);
        assert_eq!(dense_size(0), None);
        assert_eq!(dense_size(0x8c00_0001_u32 as i32), None); // MPI_DOUBLE_INT: a pair, not in the table
                                                              // empty slots (there are some) match no handle, not even the bit pattern they hold
        let empty = |(i, h): (usize, i32)| (h & 0x7f) as usize != i;
        assert!(DENSE.iter().enumerate().any(|(i, e)| empty((i, e.0))));
        for (i, &(h, _)) in DENSE.iter().enumerate() {
            if empty((i, h)) {
                assert_eq!(dense_size(h), None, "slot {i:#x}");
                assert_eq!(dense_size(0x4c00_0000 | i as i32), None, "slot {i:#x}");
            }
        }
    }

    #[test]
    fn every_handle_is_found_by_index_and_nothing_else_is() {
        for (i, (h, name, basic)) in BUILTIN.iter().enumerate() {
            assert_eq!(builtin(*h), Some(*basic), "{name}");
            assert_eq!(super::name(*h), Some(*name));
            // indexes are distinct within each family
            assert!(BUILTIN[..i]
                .iter()
                .all(|(g, _, _)| g & 0xff != h & 0xff || g >> 24 != h >> 24));
        }
        assert_eq!(name(0x4c000405), Some("MPI_INT"));
        for bad in [
            0x4c000000,
            0x4c000105,
            0x8c000005u32 as i32,
            0xcc000001u32 as i32,
            0x4c010405,
        ] {
            assert!(builtin(bad).is_none(), "{bad:#x}");
        }
    }
}
