//! Datatype size and bounds queries (MPI-3.1 §4.1.5, §4.1.7, §4.1.8, and the MPI-1 names
//! `MPI_Type_extent`/`_lb`/`_ub`), and setting status fields (generalized requests and layered
//! libraries use these). Every query accepts an uncommitted type.

use super::util::{c_status, status_bytes, write};
use crate::ffi::*;
use crate::kinds::TypeArg;
use crate::state::Mpi;
use reflex_engine::{Datatype, ErrorClass, MpiError, Result, Status};
use std::ffi::c_int;

/// An `int` result, or `MPI_UNDEFINED` when it does not fit (MPI-3.1 §4.1.5).
fn int_or_undefined(n: usize) -> c_int {
    c_int::try_from(n).unwrap_or(UNDEFINED)
}

/// `MPI_Type_size`.
pub fn type_size(_w: &mut Mpi, dt: TypeArg, size: *mut c_int) -> Result<()> {
    write(size, int_or_undefined(dt.dt.size()));
    Ok(())
}

/// `MPI_Type_size_x`.
pub fn type_size_x(_w: &mut Mpi, dt: TypeArg, size: *mut MPI_Count) -> Result<()> {
    write(size, dt.dt.size() as MPI_Count);
    Ok(())
}

/// `(lb, extent)` and `(true lb, true extent)` of a datatype.
fn extents(dt: &Datatype) -> ((isize, isize), (isize, isize)) {
    let b = dt.bounds();
    ((b.lb, b.extent()), (b.true_lb, b.true_ub - b.true_lb))
}

/// `MPI_Type_get_extent`.
pub fn type_get_extent(
    _w: &mut Mpi,
    dt: TypeArg,
    lb: *mut MPI_Aint,
    extent: *mut MPI_Aint,
) -> Result<()> {
    let ((l, e), _) = extents(&dt.dt);
    write(lb, l);
    write(extent, e);
    Ok(())
}

/// `MPI_Type_get_extent_x`.
pub fn type_get_extent_x(
    _w: &mut Mpi,
    dt: TypeArg,
    lb: *mut MPI_Count,
    extent: *mut MPI_Count,
) -> Result<()> {
    let ((l, e), _) = extents(&dt.dt);
    write(lb, l as MPI_Count);
    write(extent, e as MPI_Count);
    Ok(())
}

/// `MPI_Type_get_true_extent`.
pub fn type_get_true_extent(
    _w: &mut Mpi,
    dt: TypeArg,
    true_lb: *mut MPI_Aint,
    true_extent: *mut MPI_Aint,
) -> Result<()> {
    let (_, (l, e)) = extents(&dt.dt);
    write(true_lb, l);
    write(true_extent, e);
    Ok(())
}

/// `MPI_Type_get_true_extent_x`.
pub fn type_get_true_extent_x(
    _w: &mut Mpi,
    dt: TypeArg,
    true_lb: *mut MPI_Count,
    true_extent: *mut MPI_Count,
) -> Result<()> {
    let (_, (l, e)) = extents(&dt.dt);
    write(true_lb, l as MPI_Count);
    write(true_extent, e as MPI_Count);
    Ok(())
}

/// `MPI_Type_extent` (MPI-1 name).
pub fn type_extent(_w: &mut Mpi, dt: TypeArg, extent: *mut MPI_Aint) -> Result<()> {
    write(extent, dt.dt.extent());
    Ok(())
}

/// `MPI_Type_lb` (MPI-1 name).
pub fn type_lb(_w: &mut Mpi, dt: TypeArg, displacement: *mut MPI_Aint) -> Result<()> {
    write(displacement, dt.dt.bounds().lb);
    Ok(())
}

/// `MPI_Type_ub` (MPI-1 name).
pub fn type_ub(_w: &mut Mpi, dt: TypeArg, displacement: *mut MPI_Aint) -> Result<()> {
    write(displacement, dt.dt.bounds().ub);
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

/// `MPI_Status_set_elements`: `count` elements of `dt` received, i.e. `count × size` bytes of
/// packed data (MPICH's reading of it; `MPI_Get_count` then returns `count`).
pub fn status_set_elements(
    _w: &mut Mpi,
    status: *mut MPI_Status,
    dt: TypeArg,
    count: usize,
) -> Result<()> {
    let bytes = dt.dt.packed_len(count)? as u64;
    modify_status(status, |st| set_bytes(st, bytes))
}

/// `MPI_Status_set_elements_x`.
pub fn status_set_elements_x(
    w: &mut Mpi,
    status: *mut MPI_Status,
    dt: TypeArg,
    count: usize,
) -> Result<()> {
    status_set_elements(w, status, dt, count)
}

/// `MPI_Status_set_cancelled`.
pub fn status_set_cancelled(_w: &mut Mpi, status: *mut MPI_Status, flag: c_int) -> Result<()> {
    modify_status(status, |st| set_count(st, status_bytes(st), flag != 0))
}
