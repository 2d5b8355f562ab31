//! Groups (MPI-3.1 section 6.3): queries, translation, comparison, and the constructors.
//! The set logic is the engine's (`reflex_engine::group_ops`); this file converts arrays.

use super::util::{int_array, raw_array, write, write_ints};
use crate::ffi::*;
use crate::handles;
use crate::state::Mpi;
use reflex_engine::group_ops::SetOp;
use reflex_engine::{GroupId, Result};
use std::ffi::c_int;

/// `MPI_Group_size`.
pub fn group_size(w: &mut Mpi, group: GroupId, size: *mut c_int) -> Result<()> {
    write(size, w.world.engine.group(group)?.size() as c_int);
    Ok(())
}

/// `MPI_Group_rank`.
pub fn group_rank(w: &mut Mpi, group: GroupId, rank: *mut c_int) -> Result<()> {
    let r = w.world.engine.group_rank(group)?;
    write(rank, r.map_or(UNDEFINED, |r| r as c_int));
    Ok(())
}

/// `MPI_Group_free`.
pub fn group_free(w: &mut Mpi, group: *mut MPI_Group) -> Result<()> {
    // SAFETY: the kinds check made sure the pointer is non-NULL.
    let id = crate::kinds::group(unsafe { *group })?;
    w.world.engine.group_free(id)?;
    write(group, handles::GROUP_NULL);
    Ok(())
}

/// `MPI_Group_compare`.
pub fn group_compare(
    w: &mut Mpi,
    group1: GroupId,
    group2: GroupId,
    result: *mut c_int,
) -> Result<()> {
    let c = w.world.engine.group_compare(group1, group2)?;
    write(result, c as c_int);
    Ok(())
}

/// `MPI_Group_translate_ranks`.
pub fn group_translate_ranks(
    w: &mut Mpi,
    group1: GroupId,
    n: c_int,
    ranks1: *const c_int,
    group2: GroupId,
    ranks2: *mut c_int,
) -> Result<()> {
    let input = int_array(ranks1, n, "ranks1")?;
    let out = w.world.engine.group_translate(group1, input, group2)?;
    write_ints(
        ranks2,
        out.iter().zip(input).map(|(r, &i)| {
            if i == reflex_engine::PROC_NULL {
                reflex_engine::PROC_NULL
            } else {
                r.map_or(UNDEFINED, |r| r as c_int)
            }
        }),
    )?;
    Ok(())
}

fn new_group(id: GroupId, newgroup: *mut MPI_Group) -> Result<()> {
    write(newgroup, handles::group_handle(id));
    Ok(())
}

/// `MPI_Group_incl`.
pub fn group_incl(
    w: &mut Mpi,
    group: GroupId,
    n: c_int,
    ranks: *const c_int,
    newgroup: *mut MPI_Group,
) -> Result<()> {
    let ranks = int_array(ranks, n, "ranks")?;
    new_group(w.world.engine.group_select(group, ranks, false)?, newgroup)
}

/// `MPI_Group_excl`.
pub fn group_excl(
    w: &mut Mpi,
    group: GroupId,
    n: c_int,
    ranks: *const c_int,
    newgroup: *mut MPI_Group,
) -> Result<()> {
    let ranks = int_array(ranks, n, "ranks")?;
    new_group(w.world.engine.group_select(group, ranks, true)?, newgroup)
}

/// `MPI_Group_range_incl`.
pub fn group_range_incl(
    w: &mut Mpi,
    group: GroupId,
    n: c_int,
    ranges: *mut [c_int; 3],
    newgroup: *mut MPI_Group,
) -> Result<()> {
    let ranges = raw_array(ranges.cast_const(), n, "ranges")?;
    let id = w.world.engine.group_select_ranges(group, ranges, false)?;
    new_group(id, newgroup)
}

/// `MPI_Group_range_excl`.
pub fn group_range_excl(
    w: &mut Mpi,
    group: GroupId,
    n: c_int,
    ranges: *mut [c_int; 3],
    newgroup: *mut MPI_Group,
) -> Result<()> {
    let ranges = raw_array(ranges.cast_const(), n, "ranges")?;
    let id = w.world.engine.group_select_ranges(group, ranges, true)?;
    new_group(id, newgroup)
}

/// `MPI_Group_union`.
pub fn group_union(
    w: &mut Mpi,
    group1: GroupId,
    group2: GroupId,
    newgroup: *mut MPI_Group,
) -> Result<()> {
    let id = w.world.engine.group_combine(group1, group2, SetOp::Union)?;
    new_group(id, newgroup)
}

/// `MPI_Group_intersection`.
pub fn group_intersection(
    w: &mut Mpi,
    group1: GroupId,
    group2: GroupId,
    newgroup: *mut MPI_Group,
) -> Result<()> {
    let id = w
        .world
        .engine
        .group_combine(group1, group2, SetOp::Intersection)?;
    new_group(id, newgroup)
}

/// `MPI_Group_difference`.
pub fn group_difference(
    w: &mut Mpi,
    group1: GroupId,
    group2: GroupId,
    newgroup: *mut MPI_Group,
) -> Result<()> {
    let id = w
        .world
        .engine
        .group_combine(group1, group2, SetOp::Difference)?;
    new_group(id, newgroup)
}
