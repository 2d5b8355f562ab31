//! Datatype decoding and naming (MPI-3.1 §4.1.13, §6.8), datatype attributes (§6.7.4), and the
//! types that stand for Fortran kinds (`MPI_Type_match_size`, `MPI_Type_create_f90_*`, §17.1.9).
//!
//! `MPI_Type_get_contents` returns predefined argument types as their handles and derived ones
//! as new handles the caller frees. `MPI_Type_match_size` returns the sized Fortran types
//! (`MPI_REAL8`, `MPI_INTEGER4`, ...), as MPICH does; the f90 constructors return one cached,
//! committed handle per (kind, precision, range) whose envelope gives those arguments back.

use super::util::{c_string, write, write_string};
use crate::attr::{Obj, ObjKind};
use crate::ffi::*;
use crate::kinds::TypeArg;
use crate::state::Mpi;
use crate::typetable::{Combiner, Record};
use reflex_engine::{Datatype, ErrorClass, MpiError, Result};
use std::ffi::{c_char, c_int, c_void};

/// `MPI_MAX_OBJECT_NAME`.
const MAX_OBJECT_NAME: usize = 128;

/// How many arguments of each kind made a datatype, and how.
pub(super) struct Envelope {
    pub(super) ints: usize,
    pub(super) addrs: usize,
    /// Large counts: arguments of an MPI-4 `_c` constructor.
    pub(super) counts: usize,
    pub(super) types: usize,
    pub(super) combiner: Combiner,
}

/// The envelope of a datatype.
pub(super) fn envelope(w: &Mpi, h: MPI_Datatype) -> Result<Envelope> {
    if crate::datatypes::builtin(h).is_some() {
        let named = Envelope {
            ints: 0,
            addrs: 0,
            counts: 0,
            types: 0,
            combiner: Combiner::Named,
        };
        return Ok(named);
    }
    let r = w.objects.types.record(h)?;
    Ok(Envelope {
        ints: r.ints.len(),
        addrs: r.addrs.len(),
        counts: r.counts.len(),
        types: r.types.len(),
        combiner: r.combiner,
    })
}

/// MPI-4.0 §5.1.13: the MPI-3 decoding calls cannot describe a type made from large counts.
fn needs_large_counts(h: MPI_Datatype, call: &str) -> MpiError {
    MpiError::new(
        ErrorClass::Type,
        format!("datatype {h:#x} was made by a large-count constructor: use {call}_c"),
    )
}

/// `MPI_Type_get_envelope`.
pub fn type_get_envelope(
    w: &mut Mpi,
    datatype: TypeArg,
    num_integers: *mut c_int,
    num_addresses: *mut c_int,
    num_datatypes: *mut c_int,
    combiner: *mut c_int,
) -> Result<()> {
    let e = envelope(w, datatype.handle)?;
    if e.counts > 0 {
        return Err(needs_large_counts(datatype.handle, "MPI_Type_get_envelope"));
    }
    write(num_integers, e.ints as c_int);
    write(num_addresses, e.addrs as c_int);
    write(num_datatypes, e.types as c_int);
    write(combiner, e.combiner as c_int);
    Ok(())
}

fn too_small(what: &str, max: usize, need: usize) -> MpiError {
    MpiError::new(
        ErrorClass::Arg,
        format!("max_{what} is {max} but the datatype has {need} (see MPI_Type_get_envelope)"),
    )
}

/// Copies `values` into the C array `p`.
fn write_all<T: Copy>(p: *mut T, values: &[T]) {
    for (i, v) in values.iter().enumerate() {
        // SAFETY: the caller's array holds max_* >= values.len() elements (checked by the caller
        // against the max_* argument, which MPI requires to be the array's size).
        unsafe { p.add(i).write(*v) };
    }
}

/// Where `MPI_Type_get_contents(_c)` writes: the caller's arrays and their sizes.
pub(super) struct ContentsOut {
    pub(super) max: [usize; 4],
    pub(super) integers: *mut c_int,
    pub(super) addresses: *mut MPI_Aint,
    pub(super) counts: *mut MPI_Count,
    pub(super) datatypes: *mut MPI_Datatype,
}

/// `MPI_Type_get_contents` (`large`: the `_c` form, which also returns large counts).
pub(super) fn contents(
    w: &mut Mpi,
    datatype: TypeArg,
    out: ContentsOut,
    large: bool,
) -> Result<()> {
    let h = datatype.handle;
    if let Some(name) = crate::datatypes::name(h) {
        return Err(MpiError::new(
            ErrorClass::Type,
            format!("{name} is predefined (MPI_COMBINER_NAMED): it has no contents"),
        ));
    }
    let record = w.objects.types.record(h)?.clone();
    if !large && !record.counts.is_empty() {
        return Err(needs_large_counts(h, "MPI_Type_get_contents"));
    }
    let have = [
        ("integers", record.ints.len()),
        ("addresses", record.addrs.len()),
        ("large_counts", record.counts.len()),
        ("datatypes", record.types.len()),
    ];
    for ((what, need), max) in have.into_iter().zip(out.max) {
        if max < need {
            return Err(too_small(what, max, need));
        }
    }
    let mut handles = Vec::with_capacity(record.types.len());
    for t in &record.types {
        handles.push(w.objects.types.handle_for(t)?);
    }
    write_all(out.integers, &record.ints);
    write_all(out.addresses, &record.addrs);
    write_all(out.counts, &record.counts);
    write_all(out.datatypes, &handles);
    Ok(())
}

/// `MPI_Type_get_contents`.
pub fn type_get_contents(
    w: &mut Mpi,
    datatype: TypeArg,
    max_integers: usize,
    max_addresses: usize,
    max_datatypes: usize,
    array_of_integers: *mut c_int,
    array_of_addresses: *mut MPI_Aint,
    array_of_datatypes: *mut MPI_Datatype,
) -> Result<()> {
    let out = ContentsOut {
        max: [max_integers, max_addresses, 0, max_datatypes],
        integers: array_of_integers,
        addresses: array_of_addresses,
        counts: std::ptr::null_mut(),
        datatypes: array_of_datatypes,
    };
    contents(w, datatype, out, false)
}

/// `MPI_Type_get_name`.
pub fn type_get_name(
    w: &mut Mpi,
    datatype: TypeArg,
    type_name: *mut c_char,
    resultlen: *mut c_int,
) -> Result<()> {
    let name = w.objects.types.name(datatype.handle)?;
    write_string(type_name, resultlen, &name, MAX_OBJECT_NAME)
}

/// `MPI_Type_set_name` (longer names are cut to `MPI_MAX_OBJECT_NAME - 1` bytes).
pub fn type_set_name(w: &mut Mpi, datatype: TypeArg, type_name: *const c_char) -> Result<()> {
    let mut name = c_string(type_name, "type_name")?;
    if name.len() >= MAX_OBJECT_NAME {
        let mut end = MAX_OBJECT_NAME - 1;
        while !name.is_char_boundary(end) {
            end -= 1;
        }
        name.truncate(end);
    }
    w.objects.types.set_name(datatype.handle, name)
}

/// `MPI_Type_set_attr`.
pub fn type_set_attr(
    w: &mut Mpi,
    datatype: TypeArg,
    type_keyval: c_int,
    attribute_val: *mut c_void,
) -> Result<()> {
    let h = datatype.handle;
    super::attr::set_attr(
        w,
        Obj::Datatype(h),
        h,
        ObjKind::Datatype,
        type_keyval,
        attribute_val,
    )
}

/// `MPI_Type_get_attr`.
pub fn type_get_attr(
    w: &mut Mpi,
    datatype: TypeArg,
    type_keyval: c_int,
    attribute_val: *mut c_void,
    flag: *mut c_int,
) -> Result<()> {
    let obj = Obj::Datatype(datatype.handle);
    super::attr::get_attr(w, obj, ObjKind::Datatype, type_keyval, attribute_val, flag)
}

/// `MPI_Type_delete_attr`.
pub fn type_delete_attr(w: &mut Mpi, datatype: TypeArg, type_keyval: c_int) -> Result<()> {
    let h = datatype.handle;
    super::attr::delete_attr(w, Obj::Datatype(h), h, ObjKind::Datatype, type_keyval)
}

/// `MPI_TYPECLASS_REAL`, `_INTEGER`, `_COMPLEX`.
const TYPECLASS_REAL: c_int = 1;
const TYPECLASS_INTEGER: c_int = 2;
const TYPECLASS_COMPLEX: c_int = 3;

/// The sized Fortran type of a type class and size (MPICH's answers to `MPI_Type_match_size`).
fn sized_type(typeclass: c_int, size: c_int) -> Option<MPI_Datatype> {
    Some(match (typeclass, size) {
        (TYPECLASS_REAL, 4) => 0x4c000427,     // MPI_REAL4
        (TYPECLASS_REAL, 8) => 0x4c000829,     // MPI_REAL8
        (TYPECLASS_REAL, 16) => 0x4c00102b,    // MPI_REAL16
        (TYPECLASS_INTEGER, 1) => 0x4c00012d,  // MPI_INTEGER1
        (TYPECLASS_INTEGER, 2) => 0x4c00022f,  // MPI_INTEGER2
        (TYPECLASS_INTEGER, 4) => 0x4c000430,  // MPI_INTEGER4
        (TYPECLASS_INTEGER, 8) => 0x4c000831,  // MPI_INTEGER8
        (TYPECLASS_COMPLEX, 8) => 0x4c000828,  // MPI_COMPLEX8
        (TYPECLASS_COMPLEX, 16) => 0x4c00102a, // MPI_COMPLEX16
        (TYPECLASS_COMPLEX, 32) => 0x4c00202c, // MPI_COMPLEX32
        _ => return None,
    })
}

/// `MPI_Type_match_size`.
pub fn type_match_size(
    _w: &mut Mpi,
    typeclass: c_int,
    size: c_int,
    datatype: *mut MPI_Datatype,
) -> Result<()> {
    if !(TYPECLASS_REAL..=TYPECLASS_COMPLEX).contains(&typeclass) {
        return Err(MpiError::new(
            ErrorClass::Arg,
            format!("typeclass {typeclass} is not an MPI_TYPECLASS_* value"),
        ));
    }
    let h = sized_type(typeclass, size).ok_or_else(|| {
        MpiError::new(
            ErrorClass::Arg,
            format!("no predefined datatype of type class {typeclass} has {size} bytes"),
        )
    })?;
    write(datatype, h);
    Ok(())
}

/// The byte size of the smallest IEEE real with decimal precision `p` and exponent range `r`
/// (`MPI_UNDEFINED` leaves a parameter free).
fn real_size(p: c_int, r: c_int) -> Option<c_int> {
    let fits = |max_p, max_r| (p == UNDEFINED || p <= max_p) && (r == UNDEFINED || r <= max_r);
    // IEEE binary32, binary64 and (as MPICH's REAL16) binary128 precisions and ranges.
    [(6, 37, 4), (15, 307, 8), (33, 4931, 16)]
        .into_iter()
        .find(|&(mp, mr, _)| fits(mp, mr))
        .map(|(_, _, size)| size)
}

/// The byte size of the smallest integer holding every value of `r` decimal digits.
fn integer_size(r: c_int) -> Option<c_int> {
    [(2, 1), (4, 2), (9, 4), (18, 8)]
        .into_iter()
        .find(|&(max, _)| r <= max)
        .map(|(_, size)| size)
}

/// The predefined type an `MPI_Type_create_f90_*` record stands for.
pub(crate) fn f90_basis(r: &Record) -> MPI_Datatype {
    let class = match r.combiner {
        Combiner::F90Real => TYPECLASS_REAL,
        Combiner::F90Complex => TYPECLASS_COMPLEX,
        _ => TYPECLASS_INTEGER,
    };
    sized_type(class, r.dt.size() as c_int).expect("f90 records stand for a sized type")
}

fn f90(
    w: &mut Mpi,
    combiner: Combiner,
    ints: Vec<c_int>,
    sized: Option<MPI_Datatype>,
    newtype: *mut MPI_Datatype,
) -> Result<()> {
    let base = sized.ok_or_else(|| {
        MpiError::new(
            ErrorClass::Arg,
            format!("no predefined type has precision/range {ints:?}"),
        )
    })?;
    let basic = crate::datatypes::builtin(base).expect("sized types are predefined");
    let key = (combiner, ints[0], ints.get(1).copied().unwrap_or(0));
    let make = || Record::new(Datatype::Basic(basic), combiner, ints, vec![], vec![]);
    let h = w.objects.types.f90(key, make)?;
    write(newtype, h);
    Ok(())
}

/// `MPI_Type_create_f90_real`.
pub fn type_create_f90_real(
    w: &mut Mpi,
    p: c_int,
    r: c_int,
    newtype: *mut MPI_Datatype,
) -> Result<()> {
    let sized = real_size(p, r).and_then(|s| sized_type(TYPECLASS_REAL, s));
    f90(w, Combiner::F90Real, vec![p, r], sized, newtype)
}

/// `MPI_Type_create_f90_complex`.
pub fn type_create_f90_complex(
    w: &mut Mpi,
    p: c_int,
    r: c_int,
    newtype: *mut MPI_Datatype,
) -> Result<()> {
    let sized = real_size(p, r).and_then(|s| sized_type(TYPECLASS_COMPLEX, 2 * s));
    f90(w, Combiner::F90Complex, vec![p, r], sized, newtype)
}

/// `MPI_Type_create_f90_integer`.
pub fn type_create_f90_integer(w: &mut Mpi, r: c_int, newtype: *mut MPI_Datatype) -> Result<()> {
    let sized = integer_size(r).and_then(|s| sized_type(TYPECLASS_INTEGER, s));
    f90(w, Combiner::F90Integer, vec![r], sized, newtype)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fortran_kinds_map_to_sizes() {
        assert_eq!(real_size(6, UNDEFINED), Some(4));
        assert_eq!(real_size(15, UNDEFINED), Some(8));
        assert_eq!(real_size(UNDEFINED, 300), Some(8));
        assert_eq!(real_size(7, 10), Some(8));
        assert_eq!(real_size(40, UNDEFINED), None);
        assert_eq!(integer_size(9), Some(4));
        assert_eq!(integer_size(18), Some(8));
        assert_eq!(integer_size(19), None);
        assert_eq!(sized_type(TYPECLASS_REAL, 8), Some(0x4c000829));
        assert_eq!(sized_type(TYPECLASS_INTEGER, 3), None);
    }
}
