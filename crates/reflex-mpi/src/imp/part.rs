//! Partitioned point-to-point communication (MPI-4.0 chapter 4): the C arguments of
//! `MPI_Psend_init`, `MPI_Precv_init`, `MPI_Pready`, `MPI_Pready_range`, `MPI_Pready_list` and
//! `MPI_Parrived`, handed to the engine (`reflex_engine`'s `partitioned` module holds the
//! protocol). Start, wait, test, free and status queries are those of every persistent request
//! (`super::wait`).

use super::grequest::request_id;
use super::util::{recv_buf, send_buf, write};
use crate::ffi::*;
use crate::handles;
use crate::info::InfoId;
use crate::state::Mpi;
use reflex_engine::{CommId, Datatype, ErrorClass, MpiError, Result};
use std::ffi::{c_int, c_void};

/// Elements of all `partitions` partitions of `count` (a negative partition count is left to
/// the engine's check, which names it).
fn total(partitions: c_int, count: usize) -> Result<usize> {
    count
        .checked_mul(usize::try_from(partitions).unwrap_or(0))
        .ok_or_else(|| {
            MpiError::new(
                ErrorClass::Count,
                format!("{partitions} partitions of {count} elements overflow"),
            )
        })
}

/// `MPI_Psend_init`.
pub fn psend_init(
    w: &mut Mpi,
    buf: *const c_void,
    partitions: c_int,
    count: usize,
    dt: Datatype,
    dest: c_int,
    tag: c_int,
    comm: CommId,
    _info: Option<InfoId>,
    request: *mut MPI_Request,
) -> Result<()> {
    let sbuf = send_buf(buf, total(partitions, count)?, &dt)?;
    let id = w
        .world
        .engine
        .psend_init(sbuf, partitions, count, dt, dest, tag, comm)?;
    write(request, handles::request_handle(id));
    Ok(())
}

/// `MPI_Precv_init` (MPICH names the source `dest`; wildcards are not allowed, the `RANK` and
/// `TAG` kinds reject them).
pub fn precv_init(
    w: &mut Mpi,
    buf: *mut c_void,
    partitions: c_int,
    count: usize,
    dt: Datatype,
    source: c_int,
    tag: c_int,
    comm: CommId,
    _info: Option<InfoId>,
    request: *mut MPI_Request,
) -> Result<()> {
    let rbuf = recv_buf(buf, total(partitions, count)?, &dt)?;
    let id = w
        .world
        .engine
        .precv_init(rbuf, partitions, count, dt, source, tag, comm)?;
    write(request, handles::request_handle(id));
    Ok(())
}

/// `MPI_Pready`.
pub fn pready(w: &mut Mpi, partition: c_int, request: MPI_Request) -> Result<()> {
    let id = request_id(request, "MPI_Pready")?;
    w.world.engine.pready(id, &[partition])
}

/// `MPI_Pready_range`: partitions `low..=high`.
pub fn pready_range(w: &mut Mpi, low: c_int, high: c_int, request: MPI_Request) -> Result<()> {
    let id = request_id(request, "MPI_Pready_range")?;
    if low > high {
        return Err(MpiError::new(
            ErrorClass::Arg,
            format!("partition_low {low} is above partition_high {high}"),
        ));
    }
    let list: Vec<c_int> = (low..=high).collect();
    w.world.engine.pready(id, &list)
}

/// `MPI_Pready_list`.
pub fn pready_list(
    w: &mut Mpi,
    length: c_int,
    partitions: *mut c_int,
    request: MPI_Request,
) -> Result<()> {
    let id = request_id(request, "MPI_Pready_list")?;
    let n = usize::try_from(length)
        .map_err(|_| MpiError::new(ErrorClass::Arg, format!("length {length} is negative")))?;
    if n == 0 {
        return w.world.engine.pready(id, &[]);
    }
    if partitions.is_null() {
        return Err(MpiError::new(
            ErrorClass::Arg,
            "array_of_partitions is NULL",
        ));
    }
    // SAFETY: non-NULL, and MPI requires `length` partition numbers there.
    let list = unsafe { std::slice::from_raw_parts(partitions, n) };
    w.world.engine.pready(id, list)
}

/// `MPI_Parrived`.
pub fn parrived(
    w: &mut Mpi,
    request: MPI_Request,
    partition: c_int,
    flag: *mut c_int,
) -> Result<()> {
    let id = request_id(request, "MPI_Parrived")?;
    let arrived = w.world.engine.parrived(id, partition)?;
    write(flag, c_int::from(arrived));
    Ok(())
}
