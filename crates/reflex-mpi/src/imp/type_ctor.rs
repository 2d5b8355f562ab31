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
//!
//! The builders below the MPI names (`make_*`) take native sizes and offsets and the [`Args`] to
//! record, so the MPI-4 `_c` forms (`super::large_count_types`) build from their `MPI_Count`
//! arguments directly, never narrowed to the `int`s of the MPI-3 forms.

use super::util::{raw_array, write};
use crate::ffi::*;
use crate::kinds::TypeArg;
use crate::state::Mpi;
use crate::typegrid;
use crate::typetable::{Combiner, Record, TypeRef};
use reflex_engine::datatype::{Block, Layout};
use reflex_engine::{Datatype, ErrorClass, MpiError, Result};
use std::ffi::c_int;
use std::fmt::Display;
use std::rc::Rc;

/// What a constructor records: for `MPI_Type_get_contents`, the integer and address arguments
/// of an MPI-3 form; for `MPI_Type_get_contents_c`, the integer and large-count (`MPI_Count`)
/// arguments of a `_c` form (MPI-4.0 §5.1.13).
#[derive(Debug, Default)]
pub(crate) struct Args {
    pub ints: Vec<c_int>,
    pub addrs: Vec<MPI_Aint>,
    pub counts: Vec<MPI_Count>,
}

impl Args {
    /// An MPI-3 form's arguments.
    pub fn mpi3(ints: Vec<c_int>, addrs: Vec<MPI_Aint>) -> Self {
        Self {
            ints,
            addrs,
            counts: Vec::new(),
        }
    }

    /// A `_c` form's arguments.
    pub fn large(ints: Vec<c_int>, counts: Vec<MPI_Count>) -> Self {
        Self {
            ints,
            addrs: Vec::new(),
            counts,
        }
    }
}

/// Registers the type `dt` made by `combiner` from `args` and `types`, and stores its new handle
/// in `newtype`.
fn create(
    w: &mut Mpi,
    newtype: *mut MPI_Datatype,
    dt: Datatype,
    (combiner, args): (Combiner, Args),
    types: Vec<TypeRef>,
) -> Result<()> {
    let mut record = Record::new(dt, combiner, args.ints, args.addrs, types);
    record.counts = args.counts;
    let h = w.objects.types.insert(Rc::new(record))?;
    write(newtype, h);
    Ok(())
}

/// [`create`] for a type with the one datatype argument `old`.
fn create_from(
    w: &mut Mpi,
    newtype: *mut MPI_Datatype,
    dt: Datatype,
    made: (Combiner, Args),
    old: &TypeArg,
) -> Result<()> {
    let old = w.objects.types.type_ref(old.handle)?;
    create(w, newtype, dt, made, vec![old])
}

fn overflow(what: &str) -> MpiError {
    MpiError::new(
        ErrorClass::Count,
        format!("{what} overflows the address space"),
    )
}

/// `n` elements of `extent` bytes, in bytes.
pub(crate) fn scaled<T: Copy + TryInto<isize>>(n: T, extent: isize, what: &str) -> Result<isize> {
    n.try_into()
        .ok()
        .and_then(|n: isize| n.checked_mul(extent))
        .ok_or_else(|| overflow(what))
}

/// The block lengths of a constructor: each must be non-negative.
pub(crate) fn lengths<T: Copy + Display + TryInto<usize>>(raw: &[T]) -> Result<Vec<usize>> {
    raw.iter()
        .enumerate()
        .map(|(i, &b)| {
            b.try_into().map_err(|_| {
                MpiError::new(
                    ErrorClass::Arg,
                    format!("array_of_blocklengths[{i}] is {b}, must be non-negative"),
                )
            })
        })
        .collect()
}

/// Element displacements scaled to bytes.
pub(crate) fn element_disps<T: Copy + TryInto<isize>>(
    disps: &[T],
    extent: isize,
) -> Result<Vec<isize>> {
    disps
        .iter()
        .map(|&d| scaled(d, extent, "indexed displacement"))
        .collect()
}

/// Byte displacements as the engine's offsets.
pub(crate) fn byte_disps<T: Copy + TryInto<isize>>(disps: &[T]) -> Result<Vec<isize>> {
    element_disps(disps, 1)
}

/// A count that came from a C `int` (the kinds made it a `usize`), back as one.
fn len(count: usize) -> Result<c_int> {
    c_int::try_from(count).map_err(|_| overflow("count"))
}

fn ints_of(count: usize, rest: impl IntoIterator<Item = c_int>) -> Result<Vec<c_int>> {
    Ok(std::iter::once(len(count)?).chain(rest).collect())
}

/// `count` blocks of `blocklength` elements of `old`, `stride` bytes apart.
pub(crate) fn make_vector(
    w: &mut Mpi,
    (count, blocklength, stride): (usize, usize, isize),
    made: (Combiner, Args),
    oldtype: TypeArg,
    newtype: *mut MPI_Datatype,
) -> Result<()> {
    let layout = Layout::vector(count, blocklength, stride, oldtype.dt.clone())?;
    create_from(w, newtype, Datatype::derived(layout), made, &oldtype)
}

/// Blocks of `lens[i]` elements of `old` at byte displacements `disps[i]`.
pub(crate) fn make_blocks(
    w: &mut Mpi,
    (lens, disps): (&[usize], &[isize]),
    made: (Combiner, Args),
    oldtype: TypeArg,
    newtype: *mut MPI_Datatype,
) -> Result<()> {
    let blocks = lens
        .iter()
        .zip(disps)
        .map(|(&count, &disp)| Block {
            count,
            disp,
            dt: oldtype.dt.clone(),
        })
        .collect();
    let layout = Layout::blocks(blocks, false)?;
    create_from(w, newtype, Datatype::derived(layout), made, &oldtype)
}

/// A struct type: blocks of `lens[i]` elements of `handles[i]` at byte displacements
/// `disps[i]`; the extent is padded to the strictest alignment inside (MPI-3.1 §4.1.6).
pub(crate) fn make_struct(
    w: &mut Mpi,
    (lens, disps, handles): (&[usize], &[isize], &[MPI_Datatype]),
    args: Args,
    newtype: *mut MPI_Datatype,
) -> Result<()> {
    let mut types = Vec::with_capacity(handles.len());
    for (i, &h) in handles.iter().enumerate() {
        let t =
            w.objects.types.type_ref(h).map_err(|e| {
                MpiError::new(e.class, format!("array_of_types[{i}]: {}", e.message))
            })?;
        types.push(t);
    }
    let blocks = (0..handles.len())
        .map(|i| Block {
            count: lens[i],
            disp: disps[i],
            dt: types[i].datatype(),
        })
        .collect();
    let dt = Datatype::derived(Layout::blocks(blocks, true)?);
    create(w, newtype, dt, (Combiner::Struct, args), types)
}

/// `old` with its bounds set to `lb` and `lb + extent`.
pub(crate) fn make_resized(
    w: &mut Mpi,
    oldtype: TypeArg,
    (lb, extent): (isize, isize),
    args: Args,
    newtype: *mut MPI_Datatype,
) -> Result<()> {
    let layout = Layout::resized(oldtype.dt.clone(), lb, extent)?;
    let made = (Combiner::Resized, args);
    create_from(w, newtype, Datatype::derived(layout), made, &oldtype)
}

/// The `subsizes` block at `starts` of an array of `sizes` (see [`typegrid::subarray`]).
pub(crate) fn make_subarray(
    w: &mut Mpi,
    (sizes, subsizes, starts): (&[MPI_Count], &[MPI_Count], &[MPI_Count]),
    (order, args): (c_int, Args),
    oldtype: TypeArg,
    newtype: *mut MPI_Datatype,
) -> Result<()> {
    let dt = typegrid::subarray(sizes, subsizes, starts, order, oldtype.dt.clone())?;
    create_from(w, newtype, dt, (Combiner::Subarray, args), &oldtype)
}

/// This process's part of a distributed array (see [`typegrid::darray`]).
pub(crate) fn make_darray(
    w: &mut Mpi,
    a: &typegrid::Darray<'_>,
    args: Args,
    oldtype: TypeArg,
    newtype: *mut MPI_Datatype,
) -> Result<()> {
    let dt = typegrid::darray(a, oldtype.dt.clone())?;
    create_from(w, newtype, dt, (Combiner::Darray, args), &oldtype)
}

/// `MPI_Type_contiguous`.
pub fn type_contiguous(
    w: &mut Mpi,
    count: usize,
    oldtype: TypeArg,
    newtype: *mut MPI_Datatype,
) -> Result<()> {
    let args = Args::mpi3(ints_of(count, [])?, vec![]);
    make_contiguous(w, count, args, oldtype, newtype)
}

/// `count` consecutive elements of `old`.
pub(crate) fn make_contiguous(
    w: &mut Mpi,
    count: usize,
    args: Args,
    oldtype: TypeArg,
    newtype: *mut MPI_Datatype,
) -> Result<()> {
    let extent = oldtype.dt.extent();
    let made = (Combiner::Contiguous, args);
    make_vector(w, (count, 1, extent), made, oldtype, newtype)
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
    let bytes = scaled(stride, oldtype.dt.extent(), "vector stride")?;
    let args = Args::mpi3(ints_of(count, [len(blocklength)?, stride])?, vec![]);
    let made = (Combiner::Vector, args);
    make_vector(w, (count, blocklength, bytes), made, oldtype, newtype)
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
    let args = Args::mpi3(ints_of(count, [len(blocklength)?])?, vec![stride]);
    let made = (Combiner::Hvector, args);
    make_vector(w, (count, blocklength, stride), made, oldtype, newtype)
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

/// `MPI_Type_indexed`.
pub fn type_indexed(
    w: &mut Mpi,
    count: usize,
    array_of_blocklengths: *const c_int,
    array_of_displacements: *const c_int,
    oldtype: TypeArg,
    newtype: *mut MPI_Datatype,
) -> Result<()> {
    let n = len(count)?;
    let raw_lens = raw_array(array_of_blocklengths, n, "array_of_blocklengths")?;
    let disps = raw_array(array_of_displacements, n, "array_of_displacements")?;
    let bytes = element_disps(disps, oldtype.dt.extent())?;
    let args = Args::mpi3(
        ints_of(count, raw_lens.iter().chain(disps).copied())?,
        vec![],
    );
    let made = (Combiner::Indexed, args);
    make_blocks(w, (&lengths(raw_lens)?, &bytes), made, oldtype, newtype)
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
    let n = len(count)?;
    let raw_lens = raw_array(array_of_blocklengths, n, "array_of_blocklengths")?;
    let disps = raw_array(array_of_displacements, n, "array_of_displacements")?;
    let args = Args::mpi3(ints_of(count, raw_lens.iter().copied())?, disps.to_vec());
    let made = (Combiner::Hindexed, args);
    make_blocks(w, (&lengths(raw_lens)?, disps), made, oldtype, newtype)
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
    let bytes = element_disps(disps, oldtype.dt.extent())?;
    let rest = std::iter::once(len(blocklength)?).chain(disps.iter().copied());
    let made = (
        Combiner::IndexedBlock,
        Args::mpi3(ints_of(count, rest)?, vec![]),
    );
    make_blocks(
        w,
        (&vec![blocklength; count], &bytes),
        made,
        oldtype,
        newtype,
    )
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
    let args = Args::mpi3(ints_of(count, [len(blocklength)?])?, disps.to_vec());
    let made = (Combiner::HindexedBlock, args);
    make_blocks(
        w,
        (&vec![blocklength; count], disps),
        made,
        oldtype,
        newtype,
    )
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
    let raw_lens = raw_array(array_of_blocklengths, n, "array_of_blocklengths")?;
    let disps = raw_array(array_of_displacements, n, "array_of_displacements")?;
    let handles = raw_array(array_of_types, n, "array_of_types")?;
    let args = Args::mpi3(ints_of(count, raw_lens.iter().copied())?, disps.to_vec());
    make_struct(w, (&lengths(raw_lens)?, disps, handles), args, newtype)
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
    let args = Args::mpi3(vec![], vec![lb, extent]);
    make_resized(w, oldtype, (lb, extent), args, newtype)
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

/// `ints` as large counts.
fn widened(ints: &[c_int]) -> Vec<MPI_Count> {
    ints.iter().map(|&v| MPI_Count::from(v)).collect()
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
    let args = Args::mpi3(
        [&[ndims], sizes, subsizes, starts, &[order]].concat(),
        vec![],
    );
    let shape = (widened(sizes), widened(subsizes), widened(starts));
    let shape = (&shape.0[..], &shape.1[..], &shape.2[..]);
    make_subarray(w, shape, (order, args), oldtype, newtype)
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
    let gsizes = dims(array_of_gsizes, ndims, "array_of_gsizes")?;
    let wide = widened(gsizes);
    let a = typegrid::Darray {
        size,
        rank,
        gsizes: &wide,
        distribs: dims(array_of_distribs, ndims, "array_of_distribs")?,
        dargs: dims(array_of_dargs, ndims, "array_of_dargs")?,
        psizes: dims(array_of_psizes, ndims, "array_of_psizes")?,
        order,
    };
    let head: &[c_int] = &[size, rank, ndims];
    let ints = [head, gsizes, a.distribs, a.dargs, a.psizes, &[order]].concat();
    make_darray(w, &a, Args::mpi3(ints, vec![]), oldtype, newtype)
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
