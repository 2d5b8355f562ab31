//! Datatype queries for the predefined types, and setting status fields (generalized requests and
//! layered libraries use these). Derived datatypes have their own issue.

use super::util::{c_status, status_bytes, write};
use crate::ffi::*;
use crate::state::Mpi;
use reflex_engine::{CommId, Datatype, ErrorClass, MpiError, Result, Status};
use std::ffi::c_int;

/// `MPI_Type_size`.
pub fn type_size(_w: &mut Mpi, dt: Datatype, size: *mut c_int) -> Result<()> {
    write(size, dt.size() as c_int);
    Ok(())
}

/// `MPI_Type_size_x`.
pub fn type_size_x(_w: &mut Mpi, dt: Datatype, size: *mut MPI_Count) -> Result<()> {
    write(size, dt.size() as MPI_Count);
    Ok(())
}

/// `MPI_Type_get_extent`.
pub fn type_get_extent(
    _w: &mut Mpi,
    dt: Datatype,
    lb: *mut MPI_Aint,
    extent: *mut MPI_Aint,
) -> Result<()> {
    write(lb, 0);
    write(extent, dt.extent() as MPI_Aint);
    Ok(())
}

/// `MPI_Type_get_extent_x`.
pub fn type_get_extent_x(
    _w: &mut Mpi,
    dt: Datatype,
    lb: *mut MPI_Count,
    extent: *mut MPI_Count,
) -> Result<()> {
    write(lb, 0);
    write(extent, dt.extent() as MPI_Count);
    Ok(())
}

/// `MPI_Pack_size`: an upper bound of the packed size (contiguous bytes for basic types).
pub fn pack_size(
    _w: &mut Mpi,
    incount: usize,
    dt: Datatype,
    _comm: CommId,
    size: *mut c_int,
) -> Result<()> {
    let bytes = dt.contiguous_span(incount)?;
    let bytes = c_int::try_from(bytes).map_err(|_| {
        MpiError::new(
            ErrorClass::Count,
            format!("packed size {bytes} does not fit an int"),
        )
    })?;
    write(size, bytes);
    Ok(())
}

fn modify_status(status: *mut MPI_Status, change: impl FnOnce(&mut MPI_Status)) -> Result<()> {
    if status.is_null() || status as usize == STATUS_IGNORE {
        return Err(MpiError::new(
            ErrorClass::Arg,
            "status argument is NULL or MPI_STATUS_IGNORE",
        ));
    }
    // SAFETY: non-NULL and not the ignore marker; MPI requires a writable status.
    change(unsafe { &mut *status });
    Ok(())
}

fn set_count(st: &mut MPI_Status, bytes: u64, cancelled: bool) {
    let fresh = c_status(&Status {
        bytes: bytes as usize,
        cancelled,
        ..Status::empty()
    });
    st.count_lo = fresh.count_lo;
    st.count_hi_and_cancelled = fresh.count_hi_and_cancelled;
}

fn set_bytes(st: &mut MPI_Status, bytes: u64) {
    let cancelled = st.count_hi_and_cancelled & 1 != 0;
    set_count(st, bytes, cancelled);
}

/// `MPI_Status_set_elements`.
pub fn status_set_elements(
    _w: &mut Mpi,
    status: *mut MPI_Status,
    dt: Datatype,
    count: usize,
) -> Result<()> {
    let bytes = dt.contiguous_span(count)? as u64;
    modify_status(status, |st| set_bytes(st, bytes))
}

/// `MPI_Status_set_elements_x`.
pub fn status_set_elements_x(
    _w: &mut Mpi,
    status: *mut MPI_Status,
    dt: Datatype,
    count: usize,
) -> Result<()> {
    let bytes = dt.contiguous_span(count)? as u64;
    modify_status(status, |st| set_bytes(st, bytes))
}

/// `MPI_Status_set_cancelled`.
pub fn status_set_cancelled(_w: &mut Mpi, status: *mut MPI_Status, flag: c_int) -> Result<()> {
    modify_status(status, |st| set_count(st, status_bytes(st), flag != 0))
}
