//! Datatype constructors (MPI-3.1 §4.1.2-4.1.7, and the MPI-1 names MPI-3.0 removed), plus
//! `MPI_Type_dup`, `MPI_Type_commit` and `MPI_Type_free`.
//!
//! Each constructor checks its arrays (a negative block length is `MPI_ERR_ARG`, a negative
//! count was already `MPI_ERR_COUNT` by its kind), builds the engine layout (every constructor is
//! a vector, a list of blocks, a resize, or for subarray/darray a composition of them, see
//! [`crate::typegrid`]), and records the arguments for `MPI_Type_get_contents`. Element
//! displacements (vector strides, indexed displacements) are scaled by the old type's extent here,
//! with overflow checks. The MPI-1 names record the combiners MPICH records for them from C
//! (`MPI_COMBINER_HVECTOR`, `_HINDEXED`, `_STRUCT`).

use super::util::{raw_array, write};
use crate::ffi::*;
use crate::kinds::TypeArg;
use crate::state::Mpi;
use crate::typegrid;
use crate::typetable::{Combiner, Record, TypeRef};
use reflex_engine::datatype::{Block, Layout};
use reflex_engine::{Datatype, ErrorClass, MpiError, Result};
use std::ffi::c_int;
use std::rc::Rc;

/// Registers `record` and stores its new handle in `newtype`.
fn create(w: &mut Mpi, newtype: *mut MPI_Datatype, record: Record) -> Result<()> {
    let h = w.objects.types.insert(Rc::new(record))?;
    write(newtype, h);
    Ok(())
}

/// A record with one datatype argument, `old`.
fn derived(
    w: &Mpi,
    layout: Layout,
    combiner: Combiner,
    ints: Vec<c_int>,
    addrs: Vec<MPI_Aint>,
    old: &TypeArg,
) -> Result<Record> {
    let old = w.objects.types.type_ref(old.handle)?;
    Ok(Record::new(
        Datatype::derived(layout),
        combiner,
        ints,
        addrs,
        vec![old],
    ))
}

fn overflow(what: &str) -> MpiError {
    MpiError::new(
        ErrorClass::Count,
        format!("{what} overflows the address space"),
    )
}

/// `n` elements of `extent` bytes, in bytes.
fn scaled(n: isize, extent: isize, what: &str) -> Result<isize> {
    n.checked_mul(extent).ok_or_else(|| overflow(what))
}

/// The block lengths of a constructor: each must be non-negative.
fn blocklengths(p: *const c_int, count: usize) -> Result<Vec<usize>> {
    let raw = raw_array(p, len(count)?, "array_of_blocklengths")?;
    raw.iter()
        .enumerate()
        .map(|(i, &b)| {
            usize::try_from(b).map_err(|_| {
                MpiError::new(
                    ErrorClass::Arg,
                    format!("array_of_blocklengths[{i}] is {b}, must be non-negative"),
                )
            })
        })
        .collect()
}

/// A count that came from a C `int` (the kinds made it a `usize`), back as one.
fn len(count: usize) -> Result<c_int> {
    c_int::try_from(count).map_err(|_| overflow("count"))
}

fn ints_of(count: usize, rest: impl IntoIterator<Item = c_int>) -> Result<Vec<c_int>> {
    Ok(std::iter::once(len(count)?).chain(rest).collect())
}

/// `MPI_Type_contiguous`.
pub fn type_contiguous(
    w: &mut Mpi,
    count: usize,
    oldtype: TypeArg,
    newtype: *mut MPI_Datatype,
) -> Result<()> {
    let ints = ints_of(count, [])?;
    contiguous(w, count, ints, oldtype, newtype)
}

/// A contiguous type of any `count`, recorded with no arguments (`MPI_Type_contiguous_c`
/// records its large count itself).
pub fn type_contiguous_any(
    w: &mut Mpi,
    count: usize,
    oldtype: TypeArg,
    newtype: *mut MPI_Datatype,
) -> Result<()> {
    contiguous(w, count, vec![], oldtype, newtype)
}

fn contiguous(
    w: &mut Mpi,
    count: usize,
    ints: Vec<c_int>,
    oldtype: TypeArg,
    newtype: *mut MPI_Datatype,
) -> Result<()> {
    let layout = Layout::vector(count, 1, oldtype.dt.extent(), oldtype.dt.clone())?;
    let r = derived(w, layout, Combiner::Contiguous, ints, vec![], &oldtype)?;
    create(w, newtype, r)
}

/// `MPI_Type_vector`: the stride counts elements of the old type.
pub fn type_vector(
    w: &mut Mpi,
    count: usize,
    blocklength: usize,
    stride: c_int,
    oldtype: TypeArg,
    newtype: *mut MPI_Datatype,
) -> Result<()> {
    let bytes = scaled(stride as isize, oldtype.dt.extent(), "vector stride")?;
    let layout = Layout::vector(count, blocklength, bytes, oldtype.dt.clone())?;
    let ints = ints_of(count, [len(blocklength)?, stride])?;
    let r = derived(w, layout, Combiner::Vector, ints, vec![], &oldtype)?;
    create(w, newtype, r)
}

/// `MPI_Type_create_hvector`: the stride is in bytes.
pub fn type_create_hvector(
    w: &mut Mpi,
    count: usize,
    blocklength: usize,
    stride: MPI_Aint,
    oldtype: TypeArg,
    newtype: *mut MPI_Datatype,
) -> Result<()> {
    let layout = Layout::vector(count, blocklength, stride, oldtype.dt.clone())?;
    let ints = ints_of(count, [len(blocklength)?])?;
    let r = derived(w, layout, Combiner::Hvector, ints, vec![stride], &oldtype)?;
    create(w, newtype, r)
}

/// `MPI_Type_hvector` (MPI-1 name).
pub fn type_hvector(
    w: &mut Mpi,
    count: usize,
    blocklength: usize,
    stride: MPI_Aint,
    oldtype: TypeArg,
    newtype: *mut MPI_Datatype,
) -> Result<()> {
    type_create_hvector(w, count, blocklength, stride, oldtype, newtype)
}

/// Blocks of `old` at byte displacements.
fn blocks_of(lens: &[usize], disps: &[isize], old: &Datatype) -> Result<Layout> {
    let blocks = lens
        .iter()
        .zip(disps)
        .map(|(&count, &disp)| Block {
            count,
            disp,
            dt: old.clone(),
        })
        .collect();
    Layout::blocks(blocks, false)
}

/// Element displacements scaled to bytes.
fn element_disps(disps: &[c_int], extent: isize) -> Result<Vec<isize>> {
    disps
        .iter()
        .map(|&d| scaled(d as isize, extent, "indexed displacement"))
        .collect()
}

/// `MPI_Type_indexed`.
pub fn type_indexed(
    w: &mut Mpi,
    count: usize,
    array_of_blocklengths: *const c_int,
    array_of_displacements: *const c_int,
    oldtype: TypeArg,
    newtype: *mut MPI_Datatype,
) -> Result<()> {
    let lens = blocklengths(array_of_blocklengths, count)?;
    let disps = raw_array(
        array_of_displacements,
        len(count)?,
        "array_of_displacements",
    )?;
    let layout = blocks_of(
        &lens,
        &element_disps(disps, oldtype.dt.extent())?,
        &oldtype.dt,
    )?;
    let raw_lens = raw_array(array_of_blocklengths, len(count)?, "array_of_blocklengths")?;
    let ints = ints_of(count, raw_lens.iter().chain(disps).copied())?;
    let r = derived(w, layout, Combiner::Indexed, ints, vec![], &oldtype)?;
    create(w, newtype, r)
}

/// `MPI_Type_create_hindexed`.
pub fn type_create_hindexed(
    w: &mut Mpi,
    count: usize,
    array_of_blocklengths: *const c_int,
    array_of_displacements: *const MPI_Aint,
    oldtype: TypeArg,
    newtype: *mut MPI_Datatype,
) -> Result<()> {
    let lens = blocklengths(array_of_blocklengths, count)?;
    let disps = raw_array(
        array_of_displacements,
        len(count)?,
        "array_of_displacements",
    )?;
    let layout = blocks_of(&lens, disps, &oldtype.dt)?;
    let raw_lens = raw_array(array_of_blocklengths, len(count)?, "array_of_blocklengths")?;
    let ints = ints_of(count, raw_lens.iter().copied())?;
    let r = derived(
        w,
        layout,
        Combiner::Hindexed,
        ints,
        disps.to_vec(),
        &oldtype,
    )?;
    create(w, newtype, r)
}

/// `MPI_Type_hindexed` (MPI-1 name).
pub fn type_hindexed(
    w: &mut Mpi,
    count: usize,
    array_of_blocklengths: *mut c_int,
    array_of_displacements: *mut MPI_Aint,
    oldtype: TypeArg,
    newtype: *mut MPI_Datatype,
) -> Result<()> {
    type_create_hindexed(
        w,
        count,
        array_of_blocklengths,
        array_of_displacements,
        oldtype,
        newtype,
    )
}

/// `MPI_Type_create_indexed_block`.
pub fn type_create_indexed_block(
    w: &mut Mpi,
    count: usize,
    blocklength: usize,
    array_of_displacements: *const c_int,
    oldtype: TypeArg,
    newtype: *mut MPI_Datatype,
) -> Result<()> {
    let disps = raw_array(
        array_of_displacements,
        len(count)?,
        "array_of_displacements",
    )?;
    let lens = vec![blocklength; count];
    let layout = blocks_of(
        &lens,
        &element_disps(disps, oldtype.dt.extent())?,
        &oldtype.dt,
    )?;
    let ints = ints_of(
        count,
        std::iter::once(len(blocklength)?).chain(disps.iter().copied()),
    )?;
    let r = derived(w, layout, Combiner::IndexedBlock, ints, vec![], &oldtype)?;
    create(w, newtype, r)
}

/// `MPI_Type_create_hindexed_block`.
pub fn type_create_hindexed_block(
    w: &mut Mpi,
    count: usize,
    blocklength: usize,
    array_of_displacements: *const MPI_Aint,
    oldtype: TypeArg,
    newtype: *mut MPI_Datatype,
) -> Result<()> {
    let disps = raw_array(
        array_of_displacements,
        len(count)?,
        "array_of_displacements",
    )?;
    let layout = blocks_of(&vec![blocklength; count], disps, &oldtype.dt)?;
    let ints = ints_of(count, [len(blocklength)?])?;
    let r = derived(
        w,
        layout,
        Combiner::HindexedBlock,
        ints,
        disps.to_vec(),
        &oldtype,
    )?;
    create(w, newtype, r)
}

/// `MPI_Type_create_struct`: blocks of different types; the extent is padded to the strictest
/// alignment inside (MPI-3.1 §4.1.6).
pub fn type_create_struct(
    w: &mut Mpi,
    count: usize,
    array_of_blocklengths: *const c_int,
    array_of_displacements: *const MPI_Aint,
    array_of_types: *const MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> Result<()> {
    let n = len(count)?;
    let lens = blocklengths(array_of_blocklengths, count)?;
    let disps = raw_array(array_of_displacements, n, "array_of_displacements")?;
    let handles = raw_array(array_of_types, n, "array_of_types")?;
    let mut types = Vec::with_capacity(count);
    for (i, &h) in handles.iter().enumerate() {
        let t =
            w.objects.types.type_ref(h).map_err(|e| {
                MpiError::new(e.class, format!("array_of_types[{i}]: {}", e.message))
            })?;
        types.push(t);
    }
    let blocks = (0..count)
        .map(|i| Block {
            count: lens[i],
            disp: disps[i],
            dt: types[i].datatype(),
        })
        .collect();
    let layout = Layout::blocks(blocks, true)?;
    let raw_lens = raw_array(array_of_blocklengths, n, "array_of_blocklengths")?;
    let ints = ints_of(count, raw_lens.iter().copied())?;
    let record = Record::new(
        Datatype::derived(layout),
        Combiner::Struct,
        ints,
        disps.to_vec(),
        types,
    );
    create(w, newtype, record)
}

/// `MPI_Type_struct` (MPI-1 name).
pub fn type_struct(
    w: &mut Mpi,
    count: usize,
    array_of_blocklengths: *mut c_int,
    array_of_displacements: *mut MPI_Aint,
    array_of_types: *mut MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> Result<()> {
    type_create_struct(
        w,
        count,
        array_of_blocklengths,
        array_of_displacements,
        array_of_types,
        newtype,
    )
}

/// `MPI_Type_create_resized`.
pub fn type_create_resized(
    w: &mut Mpi,
    oldtype: TypeArg,
    lb: MPI_Aint,
    extent: MPI_Aint,
    newtype: *mut MPI_Datatype,
) -> Result<()> {
    let layout = Layout::resized(oldtype.dt.clone(), lb, extent)?;
    let r = derived(
        w,
        layout,
        Combiner::Resized,
        vec![],
        vec![lb, extent],
        &oldtype,
    )?;
    create(w, newtype, r)
}

/// The `n` ints at `p` for an array argument of `ndims` entries (`MPI_ERR_ARG` if negative).
fn dims<'a>(p: *const c_int, ndims: c_int, what: &str) -> Result<&'a [c_int]> {
    if ndims <= 0 {
        return Err(MpiError::new(
            ErrorClass::Arg,
            format!("ndims is {ndims}, must be positive"),
        ));
    }
    raw_array(p, ndims, what)
}

/// A record whose engine type `dt` was built from `old` elsewhere.
fn record_of(
    w: &Mpi,
    dt: Datatype,
    combiner: Combiner,
    ints: Vec<c_int>,
    old: &TypeArg,
) -> Result<Record> {
    let old = w.objects.types.type_ref(old.handle)?;
    Ok(Record::new(dt, combiner, ints, vec![], vec![old]))
}

/// `MPI_Type_create_subarray`.
pub fn type_create_subarray(
    w: &mut Mpi,
    ndims: c_int,
    array_of_sizes: *const c_int,
    array_of_subsizes: *const c_int,
    array_of_starts: *const c_int,
    order: c_int,
    oldtype: TypeArg,
    newtype: *mut MPI_Datatype,
) -> Result<()> {
    let sizes = dims(array_of_sizes, ndims, "array_of_sizes")?;
    let subsizes = dims(array_of_subsizes, ndims, "array_of_subsizes")?;
    let starts = dims(array_of_starts, ndims, "array_of_starts")?;
    let dt = typegrid::subarray(sizes, subsizes, starts, order, oldtype.dt.clone())?;
    let ints = [&[ndims], sizes, subsizes, starts, &[order]].concat();
    let r = record_of(w, dt, Combiner::Subarray, ints, &oldtype)?;
    create(w, newtype, r)
}

/// `MPI_Type_create_darray`.
pub fn type_create_darray(
    w: &mut Mpi,
    size: c_int,
    rank: c_int,
    ndims: c_int,
    array_of_gsizes: *const c_int,
    array_of_distribs: *const c_int,
    array_of_dargs: *const c_int,
    array_of_psizes: *const c_int,
    order: c_int,
    oldtype: TypeArg,
    newtype: *mut MPI_Datatype,
) -> Result<()> {
    let a = typegrid::Darray {
        size,
        rank,
        gsizes: dims(array_of_gsizes, ndims, "array_of_gsizes")?,
        distribs: dims(array_of_distribs, ndims, "array_of_distribs")?,
        dargs: dims(array_of_dargs, ndims, "array_of_dargs")?,
        psizes: dims(array_of_psizes, ndims, "array_of_psizes")?,
        order,
    };
    let dt = typegrid::darray(&a, oldtype.dt.clone())?;
    let head: &[c_int] = &[size, rank, ndims];
    let ints = [head, a.gsizes, a.distribs, a.dargs, a.psizes, &[order]].concat();
    let r = record_of(w, dt, Combiner::Darray, ints, &oldtype)?;
    create(w, newtype, r)
}

/// `MPI_Type_dup`: the same type under a new handle, committed if the old one was, with the
/// old one's attributes copied through their copy callbacks.
pub fn type_dup(w: &mut Mpi, oldtype: TypeArg, newtype: *mut MPI_Datatype) -> Result<()> {
    let old = w.objects.types.type_ref(oldtype.handle)?;
    let committed = match &old {
        TypeRef::Named(_) => true,
        TypeRef::Derived(r) => r.committed(),
    };
    let record = Record::new(oldtype.dt.clone(), Combiner::Dup, vec![], vec![], vec![old]);
    if committed {
        record.commit();
    }
    let h = w.objects.types.insert(Rc::new(record))?;
    let (from, to) = (
        crate::attr::Obj::Datatype(oldtype.handle),
        crate::attr::Obj::Datatype(h),
    );
    if let Err(e) = super::attr::copy_all(w, from, oldtype.handle, to) {
        // The half-made duplicate goes away with whatever was copied onto it.
        super::attr::delete_all(w, to, h)?;
        w.objects.types.remove(h)?;
        return Err(e);
    }
    write(newtype, h);
    Ok(())
}

/// `MPI_Type_commit` (a predefined type is always committed).
pub fn type_commit(w: &mut Mpi, datatype: *mut MPI_Datatype) -> Result<()> {
    // SAFETY: the kinds check made sure the pointer is non-NULL; MPI requires it readable.
    let h = unsafe { *datatype };
    if crate::datatypes::builtin(h).is_some() {
        return Ok(());
    }
    w.objects.types.record(h)?.commit();
    Ok(())
}

/// `MPI_Type_free`: deletes the attributes (their callbacks run, last set first) and the handle.
/// Types built from this one and pending operations keep using it.
pub fn type_free(w: &mut Mpi, datatype: *mut MPI_Datatype) -> Result<()> {
    // SAFETY: as in `type_commit`.
    let h = unsafe { *datatype };
    w.objects.types.any(h)?;
    if !w.objects.types.is_permanent(h) && crate::datatypes::builtin(h).is_none() {
        super::attr::delete_all(w, crate::attr::Obj::Datatype(h), h)?;
    }
    w.objects.types.remove(h)?;
    write(datatype, crate::handles::DATATYPE_NULL);
    Ok(())
}
