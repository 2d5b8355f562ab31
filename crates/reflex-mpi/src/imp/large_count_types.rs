//! MPI-4 large-count (`_c`) datatype constructors, queries and packing calls.
//!
//! Their arrays and positions are `MPI_Count`; each call narrows them to the types of its MPI-3
//! form (an error of class `MPI_ERR_COUNT` names a value that does not fit) and runs that form, so
//! the datatype records the same combiner and arguments. `Type_get_envelope_c` therefore reports no
//! large counts, and `Type_get_contents_c` returns every argument in the integer and address
//! arrays: exact for every type whose arguments fit in an `int`. The one exception is
//! `Type_contiguous_c` with a count beyond `INT_MAX` (a message of more than 2 GiB described as
//! one type, the common large-count case): no MPI-3 record holds that count, so it is built as the
//! MPI-3 composition `struct{vector(q, INT_MAX, INT_MAX, old), contiguous(r, old)}` with
//! `count = q * INT_MAX + r`, which `Type_get_envelope`/`Type_get_contents` describe exactly
//! (the same type mpi4py builds for an MPI-3 library, and expects from one).

use super::*;
use crate::ffi::{MPI_Aint, MPI_Count, MPI_Datatype};
use crate::kinds::TypeArg;
use crate::state::Mpi;
use reflex_engine::{CommId, Datatype, ErrorClass, MpiError, Result};
use std::ffi::{c_char, c_int, c_void};

/// Reads `n` large counts at `p` as `T`s.
fn narrow<T: TryFrom<MPI_Count>>(p: *const MPI_Count, n: usize, what: &str) -> Result<Vec<T>> {
    if n == 0 {
        return Ok(Vec::new());
    }
    if p.is_null() {
        return Err(MpiError::new(ErrorClass::Arg, format!("{what} is NULL")));
    }
    // SAFETY: MPI requires the caller's array to hold `n` entries.
    let values = unsafe { std::slice::from_raw_parts(p, n) };
    values.iter().map(|&v| one(v, what)).collect()
}

/// One large count as a `T`.
fn one<T: TryFrom<MPI_Count>>(v: MPI_Count, what: &str) -> Result<T> {
    T::try_from(v).map_err(|_| {
        MpiError::new(
            ErrorClass::Count,
            format!("{what} value {v} does not fit this implementation's MPI-3 form"),
        )
    })
}

/// Runs `call` with an `int`/`MPI_Aint` position read from and written back to an `MPI_Count`.
fn with_position<P: TryFrom<MPI_Count> + TryInto<MPI_Count> + Copy>(
    position: *mut MPI_Count,
    call: impl FnOnce(*mut P) -> Result<()>,
) -> Result<()> {
    if position.is_null() {
        return Err(MpiError::new(ErrorClass::Arg, "position is NULL"));
    }
    // SAFETY: non-NULL; MPI requires a readable and writable position.
    let mut p: P = one(unsafe { position.read() }, "position")?;
    call(&mut p)?;
    // SAFETY: as above.
    unsafe { position.write(widen(p)) };
    Ok(())
}

/// Runs `call` with an `int`/`MPI_Aint` output written to an `MPI_Count`.
fn with_output<P: Default + TryInto<MPI_Count> + Copy>(
    out: *mut MPI_Count,
    call: impl FnOnce(*mut P) -> Result<()>,
) -> Result<()> {
    let mut v = P::default();
    call(&mut v)?;
    util::write(out, widen(v));
    Ok(())
}

/// An `int` or `MPI_Aint` as an `MPI_Count` (both fit on every platform Reflex builds for).
fn widen<P: TryInto<MPI_Count>>(v: P) -> MPI_Count {
    v.try_into().unwrap_or(MPI_Count::MAX)
}

/// `MPI_Type_contiguous_c`: up to `INT_MAX` elements, `MPI_Type_contiguous`; beyond, the
/// struct of a vector of `INT_MAX`-element blocks and a contiguous remainder (module docs).
pub fn type_contiguous_c(
    w: &mut Mpi,
    count: usize,
    oldtype: TypeArg,
    newtype: *mut MPI_Datatype,
) -> Result<()> {
    const BLOCK: usize = c_int::MAX as usize;
    if count <= BLOCK {
        return type_contiguous(w, count, oldtype, newtype);
    }
    let (q, r) = (count / BLOCK, count % BLOCK);
    let tail_disp = MPI_Aint::try_from(q * BLOCK)
        .ok()
        .and_then(|n| n.checked_mul(oldtype.dt.extent() as MPI_Aint))
        .ok_or_else(|| {
            MpiError::new(
                ErrorClass::Count,
                format!("count {count} of this datatype overflows the address space"),
            )
        })?;
    let mut parts = [crate::handles::DATATYPE_NULL; 2];
    let same = |t: &TypeArg| TypeArg {
        handle: t.handle,
        dt: t.dt.clone(),
    };
    type_vector(w, q, BLOCK, c_int::MAX, same(&oldtype), &mut parts[0])?;
    let built = type_contiguous(w, r, oldtype, &mut parts[1]).and_then(|()| {
        let lens = [1, 1];
        let disps = [0, tail_disp];
        type_create_struct(w, 2, lens.as_ptr(), disps.as_ptr(), parts.as_ptr(), newtype)
    });
    for part in &mut parts {
        if *part != crate::handles::DATATYPE_NULL {
            type_free(w, part)?;
        }
    }
    built
}

/// `MPI_Type_vector_c`.
pub fn type_vector_c(
    w: &mut Mpi,
    count: usize,
    blocklength: usize,
    stride: MPI_Count,
    oldtype: TypeArg,
    newtype: *mut MPI_Datatype,
) -> Result<()> {
    let stride = one(stride, "stride")?;
    type_vector(w, count, blocklength, stride, oldtype, newtype)
}

/// `MPI_Type_create_hvector_c`.
pub fn type_create_hvector_c(
    w: &mut Mpi,
    count: usize,
    blocklength: usize,
    stride: MPI_Count,
    oldtype: TypeArg,
    newtype: *mut MPI_Datatype,
) -> Result<()> {
    let stride = one(stride, "stride")?;
    type_create_hvector(w, count, blocklength, stride, oldtype, newtype)
}

/// `MPI_Type_indexed_c`.
pub fn type_indexed_c(
    w: &mut Mpi,
    count: usize,
    blocklengths: *const MPI_Count,
    displacements: *const MPI_Count,
    oldtype: TypeArg,
    newtype: *mut MPI_Datatype,
) -> Result<()> {
    let lens: Vec<c_int> = narrow(blocklengths, count, "array_of_blocklengths")?;
    let disps: Vec<c_int> = narrow(displacements, count, "array_of_displacements")?;
    type_indexed(w, count, lens.as_ptr(), disps.as_ptr(), oldtype, newtype)
}

/// `MPI_Type_create_hindexed_c`.
pub fn type_create_hindexed_c(
    w: &mut Mpi,
    count: usize,
    blocklengths: *const MPI_Count,
    displacements: *const MPI_Count,
    oldtype: TypeArg,
    newtype: *mut MPI_Datatype,
) -> Result<()> {
    let lens: Vec<c_int> = narrow(blocklengths, count, "array_of_blocklengths")?;
    let disps: Vec<MPI_Aint> = narrow(displacements, count, "array_of_displacements")?;
    type_create_hindexed(w, count, lens.as_ptr(), disps.as_ptr(), oldtype, newtype)
}

/// `MPI_Type_create_indexed_block_c`.
pub fn type_create_indexed_block_c(
    w: &mut Mpi,
    count: usize,
    blocklength: usize,
    displacements: *const MPI_Count,
    oldtype: TypeArg,
    newtype: *mut MPI_Datatype,
) -> Result<()> {
    let disps: Vec<c_int> = narrow(displacements, count, "array_of_displacements")?;
    type_create_indexed_block(w, count, blocklength, disps.as_ptr(), oldtype, newtype)
}

/// `MPI_Type_create_hindexed_block_c`.
pub fn type_create_hindexed_block_c(
    w: &mut Mpi,
    count: usize,
    blocklength: usize,
    displacements: *const MPI_Count,
    oldtype: TypeArg,
    newtype: *mut MPI_Datatype,
) -> Result<()> {
    let disps: Vec<MPI_Aint> = narrow(displacements, count, "array_of_displacements")?;
    type_create_hindexed_block(w, count, blocklength, disps.as_ptr(), oldtype, newtype)
}

/// `MPI_Type_create_struct_c`.
pub fn type_create_struct_c(
    w: &mut Mpi,
    count: usize,
    blocklengths: *const MPI_Count,
    displacements: *const MPI_Count,
    types: *const MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> Result<()> {
    let lens: Vec<c_int> = narrow(blocklengths, count, "array_of_blocklengths")?;
    let disps: Vec<MPI_Aint> = narrow(displacements, count, "array_of_displacements")?;
    type_create_struct(w, count, lens.as_ptr(), disps.as_ptr(), types, newtype)
}

/// `MPI_Type_create_subarray_c`.
pub fn type_create_subarray_c(
    w: &mut Mpi,
    ndims: c_int,
    sizes: *const MPI_Count,
    subsizes: *const MPI_Count,
    starts: *const MPI_Count,
    order: c_int,
    oldtype: TypeArg,
    newtype: *mut MPI_Datatype,
) -> Result<()> {
    let n = usize::try_from(ndims).unwrap_or(0);
    let sizes: Vec<c_int> = narrow(sizes, n, "array_of_sizes")?;
    let subsizes: Vec<c_int> = narrow(subsizes, n, "array_of_subsizes")?;
    let starts: Vec<c_int> = narrow(starts, n, "array_of_starts")?;
    type_create_subarray(
        w,
        ndims,
        sizes.as_ptr(),
        subsizes.as_ptr(),
        starts.as_ptr(),
        order,
        oldtype,
        newtype,
    )
}

/// `MPI_Type_create_darray_c`.
pub fn type_create_darray_c(
    w: &mut Mpi,
    size: c_int,
    rank: c_int,
    ndims: c_int,
    gsizes: *const MPI_Count,
    distribs: *const c_int,
    dargs: *const c_int,
    psizes: *const c_int,
    order: c_int,
    oldtype: TypeArg,
    newtype: *mut MPI_Datatype,
) -> Result<()> {
    let n = usize::try_from(ndims).unwrap_or(0);
    let gsizes: Vec<c_int> = narrow(gsizes, n, "array_of_gsizes")?;
    type_create_darray(
        w,
        size,
        rank,
        ndims,
        gsizes.as_ptr(),
        distribs,
        dargs,
        psizes,
        order,
        oldtype,
        newtype,
    )
}

/// `MPI_Type_create_resized_c`.
pub fn type_create_resized_c(
    w: &mut Mpi,
    oldtype: TypeArg,
    lb: MPI_Count,
    extent: MPI_Count,
    newtype: *mut MPI_Datatype,
) -> Result<()> {
    let (lb, extent) = (one(lb, "lb")?, one(extent, "extent")?);
    type_create_resized(w, oldtype, lb, extent, newtype)
}

/// `MPI_Type_get_envelope_c` (no large counts: see the module documentation).
pub fn type_get_envelope_c(
    w: &mut Mpi,
    datatype: TypeArg,
    num_integers: *mut MPI_Count,
    num_addresses: *mut MPI_Count,
    num_large_counts: *mut MPI_Count,
    num_datatypes: *mut MPI_Count,
    combiner: *mut c_int,
) -> Result<()> {
    let (mut ni, mut na, mut nd): (c_int, c_int, c_int) = (0, 0, 0);
    type_get_envelope(w, datatype, &mut ni, &mut na, &mut nd, combiner)?;
    util::write(num_integers, MPI_Count::from(ni));
    util::write(num_addresses, MPI_Count::from(na));
    util::write(num_large_counts, 0);
    util::write(num_datatypes, MPI_Count::from(nd));
    Ok(())
}

/// `MPI_Type_get_contents_c`.
pub fn type_get_contents_c(
    w: &mut Mpi,
    datatype: TypeArg,
    max_integers: usize,
    max_addresses: usize,
    _max_large_counts: usize,
    max_datatypes: usize,
    integers: *mut c_int,
    addresses: *mut MPI_Aint,
    _large_counts: *mut MPI_Count,
    datatypes: *mut MPI_Datatype,
) -> Result<()> {
    type_get_contents(
        w,
        datatype,
        max_integers,
        max_addresses,
        max_datatypes,
        integers,
        addresses,
        datatypes,
    )
}

/// `MPI_Pack_c`.
pub fn pack_c(
    w: &mut Mpi,
    inbuf: *const c_void,
    incount: usize,
    datatype: Datatype,
    outbuf: *mut c_void,
    outsize: usize,
    position: *mut MPI_Count,
    comm: CommId,
) -> Result<()> {
    with_position(position, |p: *mut c_int| {
        pack(w, inbuf, incount, datatype, outbuf, outsize, p, comm)
    })
}

/// `MPI_Unpack_c`.
pub fn unpack_c(
    w: &mut Mpi,
    inbuf: *const c_void,
    insize: usize,
    position: *mut MPI_Count,
    outbuf: *mut c_void,
    outcount: usize,
    datatype: Datatype,
    comm: CommId,
) -> Result<()> {
    with_position(position, |p: *mut c_int| {
        unpack(w, inbuf, insize, p, outbuf, outcount, datatype, comm)
    })
}

/// `MPI_Pack_size_c`.
pub fn pack_size_c(
    w: &mut Mpi,
    incount: usize,
    datatype: Datatype,
    comm: CommId,
    size: *mut MPI_Count,
) -> Result<()> {
    with_output(size, |s: *mut c_int| {
        pack_size(w, incount, datatype, comm, s)
    })
}

/// `MPI_Pack_external_c`.
pub fn pack_external_c(
    w: &mut Mpi,
    datarep: *const c_char,
    inbuf: *const c_void,
    incount: usize,
    datatype: TypeArg,
    outbuf: *mut c_void,
    outsize: usize,
    position: *mut MPI_Count,
) -> Result<()> {
    with_position(position, |p: *mut MPI_Aint| {
        pack_external(w, datarep, inbuf, incount, datatype, outbuf, outsize, p)
    })
}

/// `MPI_Unpack_external_c`.
pub fn unpack_external_c(
    w: &mut Mpi,
    datarep: *const c_char,
    inbuf: *const c_void,
    insize: usize,
    position: *mut MPI_Count,
    outbuf: *mut c_void,
    outcount: usize,
    datatype: TypeArg,
) -> Result<()> {
    with_position(position, |p: *mut MPI_Aint| {
        unpack_external(w, datarep, inbuf, insize, p, outbuf, outcount, datatype)
    })
}

/// `MPI_Pack_external_size_c`.
pub fn pack_external_size_c(
    w: &mut Mpi,
    datarep: *const c_char,
    incount: usize,
    datatype: TypeArg,
    size: *mut MPI_Count,
) -> Result<()> {
    with_output(size, |s: *mut MPI_Aint| {
        pack_external_size(w, datarep, incount, datatype, s)
    })
}

/// `MPI_Buffer_attach_c`.
pub fn buffer_attach_c(w: &mut Mpi, buffer: *mut c_void, size: MPI_Count) -> Result<()> {
    pt2pt::attach(w, buffer, size)
}

/// `MPI_Buffer_detach_c`.
pub fn buffer_detach_c(w: &mut Mpi, buffer_addr: *mut c_void, size: *mut MPI_Count) -> Result<()> {
    let len = pt2pt::detach(w, buffer_addr)?;
    util::write(size, widen(len));
    Ok(())
}
