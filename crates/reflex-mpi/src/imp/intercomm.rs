//! Intercommunicator calls (MPI-3.1 §6.6): create, merge, and the remote-group queries. The
//! engine does the agreement (`reflex_engine::comm_bridge`, `comm_idup`), waited for without the
//! lock under `MPI_THREAD_MULTIPLE`; point-to-point calls and
//! collectives take intercommunicators like any other communicator.

use super::util::write;
use crate::ffi::*;
use crate::handles;
use crate::state::Mpi;
use reflex_engine::{CommId, ErrorClass, MpiError, Result};
use std::ffi::c_int;

/// `MPI_Intercomm_create`.
pub fn intercomm_create(
    w: &mut Mpi,
    local_comm: CommId,
    local_leader: c_int,
    peer_comm: MPI_Comm,
    remote_leader: c_int,
    tag: c_int,
    newintercomm: *mut MPI_Comm,
) -> Result<()> {
    let engine = &mut w.world.engine;
    let is_leader = engine.comm(local_comm)?.rank as c_int == local_leader;
    // The peer communicator is significant at the local leader only.
    let peer = match is_leader {
        true => crate::kinds::comm(w, peer_comm)?,
        false => local_comm,
    };
    let start = move |w: &mut Mpi| {
        let leader = local_leader as usize;
        let engine = &mut w.world.engine;
        engine
            .intercomm_icreate(local_comm, leader, peer, remote_leader, tag)
            .map(Some)
    };
    super::comm::wait_made(w, start, |_, _| Ok(()), newintercomm)
}

/// `MPI_Intercomm_merge`.
pub fn intercomm_merge(
    w: &mut Mpi,
    intercomm: CommId,
    high: c_int,
    newintracomm: *mut MPI_Comm,
) -> Result<()> {
    let start = move |w: &mut Mpi| w.world.engine.comm_imerge(intercomm, high != 0).map(Some);
    super::comm::wait_made(w, start, |_, _| Ok(()), newintracomm)
}

/// `MPI_Comm_test_inter`.
pub fn comm_test_inter(w: &mut Mpi, comm: CommId, flag: *mut c_int) -> Result<()> {
    let inter = w.world.engine.comm(comm)?.is_inter();
    write(flag, inter as c_int);
    Ok(())
}

/// `MPI_Comm_remote_size`.
pub fn comm_remote_size(w: &mut Mpi, comm: CommId, size: *mut c_int) -> Result<()> {
    let c = w.world.engine.comm(comm)?;
    let remote = c.remote.as_ref().ok_or_else(not_inter)?;
    write(size, remote.size() as c_int);
    Ok(())
}

/// `MPI_Comm_remote_group`.
pub fn comm_remote_group(w: &mut Mpi, comm: CommId, group: *mut MPI_Group) -> Result<()> {
    let id = w.world.engine.comm_remote_group(comm)?;
    write(group, handles::group_handle(id));
    Ok(())
}

fn not_inter() -> MpiError {
    MpiError::new(
        ErrorClass::Comm,
        "the communicator is not an intercommunicator",
    )
}
