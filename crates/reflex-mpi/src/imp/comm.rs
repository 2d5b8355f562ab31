//! Communicator and group calls of the foundation (the completeness issue adds the rest).

use super::util::write;
use crate::ffi::*;
use crate::handles;
use crate::state::Mpi;
use reflex_engine::{CommId, ErrorClass, GroupId, MpiError, Result};
use std::ffi::c_int;

/// `MPI_Comm_rank`.
pub fn comm_rank(w: &mut Mpi, comm: CommId, rank: *mut c_int) -> Result<()> {
    write(rank, w.world.engine.comm(comm)?.rank as c_int);
    Ok(())
}

/// `MPI_Comm_size`.
pub fn comm_size(w: &mut Mpi, comm: CommId, size: *mut c_int) -> Result<()> {
    write(size, w.world.engine.comm(comm)?.size() as c_int);
    Ok(())
}

/// `MPI_Comm_dup`.
pub fn comm_dup(w: &mut Mpi, comm: CommId, newcomm: *mut MPI_Comm) -> Result<()> {
    let id = w.world.engine.comm_dup(comm)?;
    write(newcomm, handles::comm_handle(id));
    Ok(())
}

/// `MPI_Comm_split`.
pub fn comm_split(
    w: &mut Mpi,
    comm: CommId,
    color: c_int,
    key: c_int,
    newcomm: *mut MPI_Comm,
) -> Result<()> {
    let id = w.world.engine.comm_split(comm, color, key)?;
    write(newcomm, id.map_or(handles::COMM_NULL, handles::comm_handle));
    Ok(())
}

/// `MPI_Comm_create`.
pub fn comm_create(
    w: &mut Mpi,
    comm: CommId,
    group: GroupId,
    newcomm: *mut MPI_Comm,
) -> Result<()> {
    let id = w.world.engine.comm_create(comm, group)?;
    write(newcomm, id.map_or(handles::COMM_NULL, handles::comm_handle));
    Ok(())
}

/// `MPI_Comm_free`.
pub fn comm_free(w: &mut Mpi, comm: *mut MPI_Comm) -> Result<()> {
    // SAFETY: the kinds check or MPI guarantees a valid pointer.
    let h = unsafe { *comm };
    let id = crate::kinds::comm(w, h)?;
    w.world.engine.comm_free(id)?;
    write(comm, handles::COMM_NULL);
    Ok(())
}

/// `MPI_Comm_compare`.
pub fn comm_compare(w: &mut Mpi, comm1: CommId, comm2: CommId, result: *mut c_int) -> Result<()> {
    write(result, w.world.engine.comm_compare(comm1, comm2)? as c_int);
    Ok(())
}

/// `MPI_Comm_test_inter`: Reflex has intracommunicators only so far.
pub fn comm_test_inter(w: &mut Mpi, comm: CommId, flag: *mut c_int) -> Result<()> {
    w.world.engine.comm(comm)?;
    write(flag, 0);
    Ok(())
}

/// `MPI_Comm_group`.
pub fn comm_group(w: &mut Mpi, comm: CommId, group: *mut MPI_Group) -> Result<()> {
    let id = w.world.engine.comm_group(comm)?;
    write(group, handles::group_handle(id));
    Ok(())
}

/// `MPI_Group_size`.
pub fn group_size(w: &mut Mpi, group: GroupId, size: *mut c_int) -> Result<()> {
    write(size, w.world.engine.group(group)?.size() as c_int);
    Ok(())
}

/// `MPI_Group_rank`.
pub fn group_rank(w: &mut Mpi, group: GroupId, rank: *mut c_int) -> Result<()> {
    write(
        rank,
        w.world
            .engine
            .group_rank(group)?
            .map_or(UNDEFINED, |r| r as c_int),
    );
    Ok(())
}

/// `MPI_Group_free`.
pub fn group_free(w: &mut Mpi, group: *mut MPI_Group) -> Result<()> {
    // SAFETY: valid pointer per the kinds check / MPI.
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
    write(
        result,
        w.world.engine.group_compare(group1, group2)? as c_int,
    );
    Ok(())
}

fn int_array<'a>(p: *const c_int, n: c_int, what: &str) -> Result<&'a [c_int]> {
    let n = usize::try_from(n)
        .map_err(|_| MpiError::new(ErrorClass::Arg, format!("{what} count {n} is negative")))?;
    if n > 0 && p.is_null() {
        return Err(MpiError::new(ErrorClass::Arg, format!("{what} is NULL")));
    }
    if n == 0 {
        return Ok(&[]);
    }
    // SAFETY: MPI requires the array to hold `n` ints for the duration of the call.
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
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
    for (i, r) in out.iter().enumerate() {
        let value = if input[i] == reflex_engine::PROC_NULL {
            reflex_engine::PROC_NULL
        } else {
            r.map_or(UNDEFINED, |r| r as c_int)
        };
        // SAFETY: MPI requires ranks2 to hold n entries.
        write(unsafe { ranks2.add(i) }, value);
    }
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
    let id = w
        .world
        .engine
        .group_select(group, int_array(ranks, n, "ranks")?, false)?;
    write(newgroup, handles::group_handle(id));
    Ok(())
}

/// `MPI_Group_excl`.
pub fn group_excl(
    w: &mut Mpi,
    group: GroupId,
    n: c_int,
    ranks: *const c_int,
    newgroup: *mut MPI_Group,
) -> Result<()> {
    let id = w
        .world
        .engine
        .group_select(group, int_array(ranks, n, "ranks")?, true)?;
    write(newgroup, handles::group_handle(id));
    Ok(())
}
