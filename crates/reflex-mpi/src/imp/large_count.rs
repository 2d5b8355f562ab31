//! The MPI-4 large-count (`_c`) variants whose arguments convert exactly as their `int` forms do.
//!
//! The shims convert an `MPI_Count` count through the same `COUNT` kind as an `int` one (to
//! `usize`, rejecting negatives), so the implementation is the same function; outputs of type
//! `MPI_Count` reuse the `_x` forms of MPI-3. Calls whose array arguments change type (indexed
//! and struct constructors with `MPI_Count` arrays, `Type_get_contents_c`) are not listed here.

pub use super::{
    allgather as allgather_c, allreduce as allreduce_c, alltoall as alltoall_c, bcast as bcast_c,
    bsend as bsend_c, bsend_init as bsend_init_c, gather as gather_c,
    get_elements_x as get_elements_c, ibsend as ibsend_c, imrecv as imrecv_c, irecv as irecv_c,
    irsend as irsend_c, isend as isend_c, issend as issend_c, mrecv as mrecv_c, recv as recv_c,
    recv_init as recv_init_c, reduce as reduce_c, reduce_local as reduce_local_c, rsend as rsend_c,
    rsend_init as rsend_init_c, send as send_c, send_init as send_init_c, sendrecv as sendrecv_c,
    sendrecv_replace as sendrecv_replace_c, ssend as ssend_c, ssend_init as ssend_init_c,
    type_contiguous as type_contiguous_c, type_get_extent_x as type_get_extent_c,
    type_get_true_extent_x as type_get_true_extent_c, type_size_x as type_size_c,
};

use crate::ffi::{MPI_Count, MPI_Status, UNDEFINED};
use crate::kinds::TypeArg;
use crate::state::Mpi;
use reflex_engine::Result;

/// `MPI_Get_count_c`: whole elements in the received bytes, as an `MPI_Count`.
pub fn get_count_c(
    _w: &mut Mpi,
    status: *const MPI_Status,
    dt: TypeArg,
    count: *mut MPI_Count,
) -> Result<()> {
    let bytes = super::util::status_bytes(&super::wait::read_status(status)?);
    let n = dt.dt.count_of(bytes as usize);
    super::util::write(count, n.map_or(UNDEFINED as MPI_Count, |n| n as MPI_Count));
    Ok(())
}
