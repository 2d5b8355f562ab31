//! MPI-4 large-count (`_c`) datatype constructors, queries and packing calls.
//!
//! Their arrays and positions are `MPI_Count`. A constructor narrows them to the types of its
//! MPI-3 form (an error of class `MPI_ERR_COUNT` names a value that does not fit) and runs that
//! form, then records the arguments as MPI-4.0 §5.1.13 has `MPI_Type_get_contents_c` return
//! them: every `MPI_Count` argument among the large counts, the `int` ones among the integers,
//! no addresses. `MPI_Type_contiguous_c` needs no narrowing: its count may exceed `INT_MAX` (a
//! message of more than 2 GiB described as one type, the common large-count case). The MPI-3
//! `MPI_Type_get_envelope`/`MPI_Type_get_contents` refuse such types (`MPI_ERR_TYPE`).

use super::*;
use crate::ffi::{MPI_Aint, MPI_Count, MPI_Datatype};
use crate::kinds::TypeArg;
use crate::state::Mpi;
use reflex_engine::{CommId, Datatype, ErrorClass, MpiError, Result};
use std::ffi::{c_char, c_int, c_void};

/// The `n` values of the caller's array `p` (a NULL array is an error unless `n` is 0).
fn read<'a, T>(p: *const T, n: usize, what: &str) -> Result<&'a [T]> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(MpiError::new(ErrorClass::Arg, format!("{what} is NULL")));
    }
    // SAFETY: MPI requires the caller's array to hold `n` entries, unchanged during the call.
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

/// Large counts as `T`s (the MPI-3 form's type), each checked to fit.
fn narrow<T: TryFrom<MPI_Count>>(values: &[MPI_Count], what: &str) -> Result<Vec<T>> {
    values.iter().map(|&v| one(v, what)).collect()
}

/// The large counts `[count, blocklengths…, displacements…]` of an indexed or struct type
/// (MPI-4.0 §5.1.13), and its block lengths and displacements narrowed to its MPI-3 form's
/// types.
fn blocks<D: TryFrom<MPI_Count>>(
    count: usize,
    blocklengths: *const MPI_Count,
    displacements: *const MPI_Count,
) -> Result<(Vec<MPI_Count>, Vec<c_int>, Vec<D>)> {
    let lens = read(blocklengths, count, "array_of_blocklengths")?;
    let disps = read(displacements, count, "array_of_displacements")?;
    let counts = [&[widen(count)], lens, disps].concat();
    let narrowed = (
        narrow(lens, "array_of_blocklengths")?,
        narrow(disps, "array_of_displacements")?,
    );
    Ok((counts, narrowed.0, narrowed.1))
}

/// Runs the MPI-3 form `make` into a handle of its own, then records the new type's
/// arguments as its `_c` form had them (`ints`, `counts`: MPI-4.0 §5.1.13) and returns it in
/// `newtype`. The engine's type is the MPI-3 form's: the same layout.
fn made_large(
    w: &mut Mpi,
    newtype: *mut MPI_Datatype,
    (ints, counts): (Vec<c_int>, Vec<MPI_Count>),
    make: impl FnOnce(&mut Mpi, *mut MPI_Datatype) -> Result<()>,
) -> Result<()> {
    let mut h = crate::handles::DATATYPE_NULL;
    make(w, &mut h)?;
    if let Err(e) = w.objects.types.set_large_args(h, ints, counts) {
        type_free(w, &mut h)?;
        return Err(e);
    }
    util::write(newtype, h);
    Ok(())
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

/// `MPI_Type_contiguous_c`: any count the address space allows (no MPI-3 form is needed).
pub fn type_contiguous_c(
    w: &mut Mpi,
    count: usize,
    oldtype: TypeArg,
    newtype: *mut MPI_Datatype,
) -> Result<()> {
    made_large(w, newtype, (vec![], vec![widen(count)]), |w, h| {
        type_contiguous_any(w, count, oldtype, h)
    })
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
    let counts = vec![widen(count), widen(blocklength), stride];
    let stride = one(stride, "stride")?;
    made_large(w, newtype, (vec![], counts), |w, h| {
        type_vector(w, count, blocklength, stride, oldtype, h)
    })
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
    let counts = vec![widen(count), widen(blocklength), stride];
    let stride = one(stride, "stride")?;
    made_large(w, newtype, (vec![], counts), |w, h| {
        type_create_hvector(w, count, blocklength, stride, oldtype, h)
    })
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
    let (counts, lens, disps) = blocks::<c_int>(count, blocklengths, displacements)?;
    made_large(w, newtype, (vec![], counts), |w, h| {
        type_indexed(w, count, lens.as_ptr(), disps.as_ptr(), oldtype, h)
    })
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
    let (counts, lens, disps) = blocks::<MPI_Aint>(count, blocklengths, displacements)?;
    made_large(w, newtype, (vec![], counts), |w, h| {
        type_create_hindexed(w, count, lens.as_ptr(), disps.as_ptr(), oldtype, h)
    })
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
    let raw = read(displacements, count, "array_of_displacements")?;
    let counts = [&[widen(count), widen(blocklength)], raw].concat();
    let disps: Vec<c_int> = narrow(raw, "array_of_displacements")?;
    made_large(w, newtype, (vec![], counts), |w, h| {
        type_create_indexed_block(w, count, blocklength, disps.as_ptr(), oldtype, h)
    })
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
    let raw = read(displacements, count, "array_of_displacements")?;
    let counts = [&[widen(count), widen(blocklength)], raw].concat();
    let disps: Vec<MPI_Aint> = narrow(raw, "array_of_displacements")?;
    made_large(w, newtype, (vec![], counts), |w, h| {
        type_create_hindexed_block(w, count, blocklength, disps.as_ptr(), oldtype, h)
    })
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
    let (counts, lens, disps) = blocks::<MPI_Aint>(count, blocklengths, displacements)?;
    made_large(w, newtype, (vec![], counts), |w, h| {
        type_create_struct(w, count, lens.as_ptr(), disps.as_ptr(), types, h)
    })
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
    let (sizes, subsizes, starts) = (
        read(sizes, n, "array_of_sizes")?,
        read(subsizes, n, "array_of_subsizes")?,
        read(starts, n, "array_of_starts")?,
    );
    let large = (vec![ndims, order], [sizes, subsizes, starts].concat());
    let sizes: Vec<c_int> = narrow(sizes, "array_of_sizes")?;
    let subsizes: Vec<c_int> = narrow(subsizes, "array_of_subsizes")?;
    let starts: Vec<c_int> = narrow(starts, "array_of_starts")?;
    made_large(w, newtype, large, |w, h| {
        let shape = (sizes.as_ptr(), subsizes.as_ptr(), starts.as_ptr());
        type_create_subarray(w, ndims, shape.0, shape.1, shape.2, order, oldtype, h)
    })
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
    let raw = read(gsizes, n, "array_of_gsizes")?;
    let mut ints = vec![size, rank, ndims];
    for (p, what) in [
        (distribs, "array_of_distribs"),
        (dargs, "array_of_dargs"),
        (psizes, "array_of_psizes"),
    ] {
        ints.extend_from_slice(read(p, n, what)?);
    }
    ints.push(order);
    let gsizes: Vec<c_int> = narrow(raw, "array_of_gsizes")?;
    made_large(w, newtype, (ints, raw.to_vec()), |w, h| {
        let grid = (distribs, dargs, psizes);
        type_create_darray(
            w,
            size,
            rank,
            ndims,
            gsizes.as_ptr(),
            grid.0,
            grid.1,
            grid.2,
            order,
            oldtype,
            h,
        )
    })
}

/// `MPI_Type_create_resized_c`.
pub fn type_create_resized_c(
    w: &mut Mpi,
    oldtype: TypeArg,
    lb: MPI_Count,
    extent: MPI_Count,
    newtype: *mut MPI_Datatype,
) -> Result<()> {
    let counts = vec![lb, extent];
    let (lb, extent) = (one(lb, "lb")?, one(extent, "extent")?);
    made_large(w, newtype, (vec![], counts), |w, h| {
        type_create_resized(w, oldtype, lb, extent, h)
    })
}

/// `MPI_Type_get_envelope_c`.
pub fn type_get_envelope_c(
    w: &mut Mpi,
    datatype: TypeArg,
    num_integers: *mut MPI_Count,
    num_addresses: *mut MPI_Count,
    num_large_counts: *mut MPI_Count,
    num_datatypes: *mut MPI_Count,
    combiner: *mut c_int,
) -> Result<()> {
    let e = type_query::envelope(w, datatype.handle)?;
    util::write(num_integers, widen(e.ints));
    util::write(num_addresses, widen(e.addrs));
    util::write(num_large_counts, widen(e.counts));
    util::write(num_datatypes, widen(e.types));
    util::write(combiner, e.combiner as c_int);
    Ok(())
}

/// `MPI_Type_get_contents_c`.
pub fn type_get_contents_c(
    w: &mut Mpi,
    datatype: TypeArg,
    max_integers: usize,
    max_addresses: usize,
    max_large_counts: usize,
    max_datatypes: usize,
    integers: *mut c_int,
    addresses: *mut MPI_Aint,
    large_counts: *mut MPI_Count,
    datatypes: *mut MPI_Datatype,
) -> Result<()> {
    let out = type_query::ContentsOut {
        max: [max_integers, max_addresses, max_large_counts, max_datatypes],
        integers,
        addresses,
        counts: large_counts,
        datatypes,
    };
    type_query::contents(w, datatype, out, true)
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
