//! MPI-4 large-count (`_c`) datatype constructors, queries and packing calls.
//!
//! Their arrays and positions are `MPI_Count`. A constructor builds its type from them with the
//! builders its MPI-3 form uses (`super::type_ctor`'s `make_*`), never narrowed to `int`: blocks
//! of more than `INT_MAX` elements, strides and displacements beyond it, array dimensions beyond
//! it are all accepted (`MPI_ERR_COUNT` only where the bytes overflow the address space). It
//! records the arguments as MPI-4.0 §5.1.13 has `MPI_Type_get_contents_c` return them: every
//! `MPI_Count` argument among the large counts, the `int` ones among the integers, no
//! addresses. The MPI-3 `MPI_Type_get_envelope`/`MPI_Type_get_contents` refuse such types
//! (`MPI_ERR_TYPE`).

use super::*;
use crate::ffi::{MPI_Aint, MPI_Count, MPI_Datatype};
use crate::kinds::TypeArg;
use crate::state::Mpi;
use crate::typegrid;
use crate::typetable::Combiner;
use reflex_engine::{CommId, Datatype, ErrorClass, MpiError, Result};
use std::ffi::{c_char, c_int, c_void};

/// An `int` or `MPI_Aint` as an `MPI_Count` (both fit on every platform Reflex builds for).
fn widen<P: TryInto<MPI_Count>>(v: P) -> MPI_Count {
    v.try_into().unwrap_or(MPI_Count::MAX)
}

/// `MPI_Type_contiguous_c`.
pub fn type_contiguous_c(
    w: &mut Mpi,
    count: usize,
    oldtype: TypeArg,
    newtype: *mut MPI_Datatype,
) -> Result<()> {
    let args = Args::large(vec![], vec![widen(count)]);
    make_contiguous(w, count, args, oldtype, newtype)
}

/// `MPI_Type_vector_c`: the stride counts elements of the old type.
pub fn type_vector_c(
    w: &mut Mpi,
    count: usize,
    blocklength: usize,
    stride: MPI_Count,
    oldtype: TypeArg,
    newtype: *mut MPI_Datatype,
) -> Result<()> {
    let bytes = scaled(stride, oldtype.dt.extent(), "vector stride")?;
    let args = Args::large(vec![], vec![widen(count), widen(blocklength), stride]);
    let made = (Combiner::Vector, args);
    make_vector(w, (count, blocklength, bytes), made, oldtype, newtype)
}

/// `MPI_Type_create_hvector_c`: the stride is in bytes.
pub fn type_create_hvector_c(
    w: &mut Mpi,
    count: usize,
    blocklength: usize,
    stride: MPI_Count,
    oldtype: TypeArg,
    newtype: *mut MPI_Datatype,
) -> Result<()> {
    let bytes = scaled(stride, 1, "vector stride")?;
    let args = Args::large(vec![], vec![widen(count), widen(blocklength), stride]);
    let made = (Combiner::Hvector, args);
    make_vector(w, (count, blocklength, bytes), made, oldtype, newtype)
}

/// The block lengths and displacements of an indexed or struct type, and its large counts
/// `[count, blocklengths…, displacements…]` (MPI-4.0 §5.1.13).
fn blocks<'a>(
    count: usize,
    blocklengths: *const MPI_Count,
    displacements: *const MPI_Count,
) -> Result<(Vec<usize>, &'a [MPI_Count], Vec<MPI_Count>)> {
    let raw_lens = util::array(blocklengths, count, "array_of_blocklengths")?;
    let disps = util::array(displacements, count, "array_of_displacements")?;
    let counts = [&[widen(count)], raw_lens, disps].concat();
    Ok((lengths(raw_lens)?, disps, counts))
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
    let (lens, disps, counts) = blocks(count, blocklengths, displacements)?;
    let bytes = element_disps(disps, oldtype.dt.extent())?;
    let made = (Combiner::Indexed, Args::large(vec![], counts));
    make_blocks(w, (&lens, &bytes), made, oldtype, newtype)
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
    let (lens, disps, counts) = blocks(count, blocklengths, displacements)?;
    let made = (Combiner::Hindexed, Args::large(vec![], counts));
    make_blocks(w, (&lens, &byte_disps(disps)?), made, oldtype, newtype)
}

/// The displacements of an indexed-block type, and its arguments (large counts
/// `[count, blocklength, displacements…]`).
fn block_disps<'a>(
    count: usize,
    blocklength: usize,
    displacements: *const MPI_Count,
) -> Result<(&'a [MPI_Count], Args)> {
    let disps = util::array(displacements, count, "array_of_displacements")?;
    let counts = [&[widen(count), widen(blocklength)], disps].concat();
    Ok((disps, Args::large(vec![], counts)))
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
    let (disps, args) = block_disps(count, blocklength, displacements)?;
    let bytes = element_disps(disps, oldtype.dt.extent())?;
    let made = (Combiner::IndexedBlock, args);
    make_blocks(
        w,
        (&vec![blocklength; count], &bytes),
        made,
        oldtype,
        newtype,
    )
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
    let (disps, args) = block_disps(count, blocklength, displacements)?;
    let made = (Combiner::HindexedBlock, args);
    let lens = vec![blocklength; count];
    make_blocks(w, (&lens, &byte_disps(disps)?), made, oldtype, newtype)
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
    let (lens, disps, counts) = blocks(count, blocklengths, displacements)?;
    let handles = util::array(types, count, "array_of_types")?;
    let args = Args::large(vec![], counts);
    make_struct(w, (&lens, &byte_disps(disps)?, handles), args, newtype)
}

/// `ndims` of an array type, which must be positive.
fn positive_dims(ndims: c_int) -> Result<usize> {
    usize::try_from(ndims)
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| {
            MpiError::new(
                ErrorClass::Arg,
                format!("ndims is {ndims}, must be positive"),
            )
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
    let n = positive_dims(ndims)?;
    let shape = (
        util::array(sizes, n, "array_of_sizes")?,
        util::array(subsizes, n, "array_of_subsizes")?,
        util::array(starts, n, "array_of_starts")?,
    );
    let args = Args::large(vec![ndims, order], [shape.0, shape.1, shape.2].concat());
    make_subarray(w, shape, (order, args), oldtype, newtype)
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
    let n = positive_dims(ndims)?;
    let a = typegrid::Darray {
        size,
        rank,
        gsizes: util::array(gsizes, n, "array_of_gsizes")?,
        distribs: util::array(distribs, n, "array_of_distribs")?,
        dargs: util::array(dargs, n, "array_of_dargs")?,
        psizes: util::array(psizes, n, "array_of_psizes")?,
        order,
    };
    let head: &[c_int] = &[size, rank, ndims];
    let ints = [head, a.distribs, a.dargs, a.psizes, &[order]].concat();
    let args = Args::large(ints, a.gsizes.to_vec());
    make_darray(w, &a, args, oldtype, newtype)
}

/// `MPI_Type_create_resized_c`.
pub fn type_create_resized_c(
    w: &mut Mpi,
    oldtype: TypeArg,
    lb: MPI_Count,
    extent: MPI_Count,
    newtype: *mut MPI_Datatype,
) -> Result<()> {
    let args = Args::large(vec![], vec![lb, extent]);
    let bounds = (scaled(lb, 1, "lb")?, scaled(extent, 1, "extent")?);
    make_resized(w, oldtype, bounds, args, newtype)
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
    pack(w, inbuf, incount, datatype, outbuf, outsize, position, comm)
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
    unpack(w, inbuf, insize, position, outbuf, outcount, datatype, comm)
}

/// `MPI_Pack_size_c`.
pub fn pack_size_c(
    w: &mut Mpi,
    incount: usize,
    datatype: Datatype,
    comm: CommId,
    size: *mut MPI_Count,
) -> Result<()> {
    pack_size(w, incount, datatype, comm, size)
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
    pack_external(
        w, datarep, inbuf, incount, datatype, outbuf, outsize, position,
    )
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
    unpack_external(
        w, datarep, inbuf, insize, position, outbuf, outcount, datatype,
    )
}

/// `MPI_Pack_external_size_c`.
pub fn pack_external_size_c(
    w: &mut Mpi,
    datarep: *const c_char,
    incount: usize,
    datatype: TypeArg,
    size: *mut MPI_Count,
) -> Result<()> {
    pack_external_size(w, datarep, incount, datatype, size)
}

/// `MPI_Buffer_attach_c`.
pub fn buffer_attach_c(w: &mut Mpi, buffer: *mut c_void, size: MPI_Count) -> Result<()> {
    pt2pt::attach(w, buffer, size)
}

/// `MPI_Buffer_detach_c`.
pub fn buffer_detach_c(w: &mut Mpi, buffer_addr: *mut c_void, size: *mut MPI_Count) -> Result<()> {
    pt2pt::detach(w, buffer_addr, move |len| util::write(size, widen(len)))
}
