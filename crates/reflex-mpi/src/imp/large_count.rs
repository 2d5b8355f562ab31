//! The MPI-4 large-count (`_c`) variants whose arguments convert exactly as their `int` forms do.
//!
//! The shims convert an `MPI_Count` count through the same `COUNT` kind as an `int` one (to
//! `usize`, rejecting negatives), so the implementation is the same function; outputs of type
//! `MPI_Count` reuse the `_x` forms of MPI-3. Calls whose array arguments change type (indexed
//! and struct constructors with `MPI_Count` arrays, `Type_get_contents_c`) and `Type_contiguous_c`
//! (whose count may exceed an `int`) are not listed here.

pub use super::{
    bsend as bsend_c, bsend_init as bsend_init_c, get_elements_x as get_elements_c,
    ibsend as ibsend_c, imrecv as imrecv_c, irecv as irecv_c, irsend as irsend_c, isend as isend_c,
    isendrecv as isendrecv_c, isendrecv_replace as isendrecv_replace_c, issend as issend_c,
    mrecv as mrecv_c, recv as recv_c, recv_init as recv_init_c, reduce_local as reduce_local_c,
    rsend as rsend_c, rsend_init as rsend_init_c, send as send_c, send_init as send_init_c,
    sendrecv as sendrecv_c, sendrecv_replace as sendrecv_replace_c, ssend as ssend_c,
    ssend_init as ssend_init_c, type_get_extent_x as type_get_extent_c,
    type_get_true_extent_x as type_get_true_extent_c, type_size_x as type_size_c,
};

/// The collectives: their count and displacement arrays are generic over `int`/`MPI_Count`/`MPI_Aint`.
pub use super::{
    allgather as allgather_c, allgather_init as allgather_init_c, allgatherv as allgatherv_c,
    allgatherv_init as allgatherv_init_c, allreduce as allreduce_c,
    allreduce_init as allreduce_init_c, alltoall as alltoall_c, alltoall_init as alltoall_init_c,
    alltoallv as alltoallv_c, alltoallv_init as alltoallv_init_c, alltoallw as alltoallw_c,
    alltoallw_init as alltoallw_init_c, bcast as bcast_c, bcast_init as bcast_init_c,
    exscan as exscan_c, exscan_init as exscan_init_c, gather as gather_c,
    gather_init as gather_init_c, gatherv as gatherv_c, gatherv_init as gatherv_init_c,
    iallgather as iallgather_c, iallgatherv as iallgatherv_c, iallreduce as iallreduce_c,
    ialltoall as ialltoall_c, ialltoallv as ialltoallv_c, ialltoallw as ialltoallw_c,
    ibcast as ibcast_c, iexscan as iexscan_c, igather as igather_c, igatherv as igatherv_c,
    ineighbor_allgather as ineighbor_allgather_c, ineighbor_allgatherv as ineighbor_allgatherv_c,
    ineighbor_alltoall as ineighbor_alltoall_c, ineighbor_alltoallv as ineighbor_alltoallv_c,
    ineighbor_alltoallw as ineighbor_alltoallw_c, ireduce as ireduce_c,
    ireduce_scatter as ireduce_scatter_c, ireduce_scatter_block as ireduce_scatter_block_c,
    iscan as iscan_c, iscatter as iscatter_c, iscatterv as iscatterv_c,
    neighbor_allgather as neighbor_allgather_c,
    neighbor_allgather_init as neighbor_allgather_init_c,
    neighbor_allgatherv as neighbor_allgatherv_c,
    neighbor_allgatherv_init as neighbor_allgatherv_init_c,
    neighbor_alltoall as neighbor_alltoall_c, neighbor_alltoall_init as neighbor_alltoall_init_c,
    neighbor_alltoallv as neighbor_alltoallv_c,
    neighbor_alltoallv_init as neighbor_alltoallv_init_c,
    neighbor_alltoallw as neighbor_alltoallw_c,
    neighbor_alltoallw_init as neighbor_alltoallw_init_c, reduce as reduce_c,
    reduce_init as reduce_init_c, reduce_scatter as reduce_scatter_c,
    reduce_scatter_block as reduce_scatter_block_c,
    reduce_scatter_block_init as reduce_scatter_block_init_c,
    reduce_scatter_init as reduce_scatter_init_c, scan as scan_c, scan_init as scan_init_c,
    scatter as scatter_c, scatter_init as scatter_init_c, scatterv as scatterv_c,
    scatterv_init as scatterv_init_c,
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

/// MPI-IO: the counts convert through the same `COUNT` kind.
pub use super::{
    file_get_type_extent as file_get_type_extent_c, file_iread as file_iread_c,
    file_iread_all as file_iread_all_c, file_iread_at as file_iread_at_c,
    file_iread_at_all as file_iread_at_all_c, file_iwrite as file_iwrite_c,
    file_iwrite_all as file_iwrite_all_c, file_iwrite_at as file_iwrite_at_c,
    file_iwrite_at_all as file_iwrite_at_all_c, file_read as file_read_c,
    file_read_all as file_read_all_c, file_read_all_begin as file_read_all_begin_c,
    file_read_at as file_read_at_c, file_read_at_all as file_read_at_all_c,
    file_read_at_all_begin as file_read_at_all_begin_c, file_write as file_write_c,
    file_write_all as file_write_all_c, file_write_all_begin as file_write_all_begin_c,
    file_write_at as file_write_at_c, file_write_at_all as file_write_at_all_c,
    file_write_at_all_begin as file_write_at_all_begin_c,
};

/// MPI-IO with the shared file pointer.
pub use super::{
    file_iread_shared as file_iread_shared_c, file_iwrite_shared as file_iwrite_shared_c,
    file_read_ordered as file_read_ordered_c, file_read_ordered_begin as file_read_ordered_begin_c,
    file_read_shared as file_read_shared_c, file_write_ordered as file_write_ordered_c,
    file_write_ordered_begin as file_write_ordered_begin_c,
    file_write_shared as file_write_shared_c,
};
