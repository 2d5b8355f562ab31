//! Collective calls (the foundation's set: barrier, broadcast, reduce, allreduce, gather,
//! allgather). `MPI_IN_PLACE` is accepted where the standard allows it.

use super::util::{is_in_place, recv_buf, send_buf};
use crate::state::Mpi;
use reflex_engine::{CommId, Datatype, ReduceOp, Result};
use std::ffi::{c_int, c_void};

/// `MPI_Barrier`.
pub fn barrier(w: &mut Mpi, comm: CommId) -> Result<()> {
    w.world.engine.barrier(comm)
}

/// `MPI_Bcast`.
pub fn bcast(
    w: &mut Mpi,
    buffer: *mut c_void,
    count: usize,
    dt: Datatype,
    root: c_int,
    comm: CommId,
) -> Result<()> {
    let buf = recv_buf(buffer, count, dt)?;
    w.world.engine.bcast(buf, count, dt, root, comm)
}

fn is_root(w: &Mpi, comm: CommId, root: c_int) -> Result<bool> {
    Ok(w.world.engine.comm(comm)?.rank as c_int == root)
}

/// `MPI_Reduce`.
#[allow(clippy::too_many_arguments)] // the MPI call's own parameter list
pub fn reduce(
    w: &mut Mpi,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: usize,
    dt: Datatype,
    op: ReduceOp,
    root: c_int,
    comm: CommId,
) -> Result<()> {
    let root_here = is_root(w, comm, root)?;
    let send = if is_in_place(sendbuf) && root_here {
        None
    } else {
        Some(send_buf(sendbuf, count, dt)?)
    };
    let recv = if root_here {
        recv_buf(recvbuf, count, dt)?
    } else {
        reflex_base::buf::RecvBuf::empty()
    };
    w.world.engine.reduce(send, recv, count, dt, op, root, comm)
}

/// `MPI_Allreduce`.
pub fn allreduce(
    w: &mut Mpi,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: usize,
    dt: Datatype,
    op: ReduceOp,
    comm: CommId,
) -> Result<()> {
    let send = if is_in_place(sendbuf) {
        None
    } else {
        Some(send_buf(sendbuf, count, dt)?)
    };
    let recv = recv_buf(recvbuf, count, dt)?;
    w.world.engine.allreduce(send, recv, count, dt, op, comm)
}

/// `MPI_Gather`.
#[allow(clippy::too_many_arguments)] // the MPI call's own parameter list
pub fn gather(
    w: &mut Mpi,
    sendbuf: *const c_void,
    sendcount: usize,
    sendtype: Datatype,
    recvbuf: *mut c_void,
    recvcount: usize,
    recvtype: Datatype,
    root: c_int,
    comm: CommId,
) -> Result<()> {
    let root_here = is_root(w, comm, root)?;
    let size = w.world.engine.comm(comm)?.size();
    let send = if is_in_place(sendbuf) && root_here {
        None
    } else {
        Some((send_buf(sendbuf, sendcount, sendtype)?, sendcount, sendtype))
    };
    let recv = if root_here {
        recv_buf(recvbuf, recvcount * size, recvtype)?
    } else {
        reflex_base::buf::RecvBuf::empty()
    };
    w.world
        .engine
        .gather(send, recv, recvcount, recvtype, root, comm)
}

/// `MPI_Allgather`.
#[allow(clippy::too_many_arguments)] // the MPI call's own parameter list
pub fn allgather(
    w: &mut Mpi,
    sendbuf: *const c_void,
    sendcount: usize,
    sendtype: Datatype,
    recvbuf: *mut c_void,
    recvcount: usize,
    recvtype: Datatype,
    comm: CommId,
) -> Result<()> {
    let size = w.world.engine.comm(comm)?.size();
    let send = if is_in_place(sendbuf) {
        None
    } else {
        Some((send_buf(sendbuf, sendcount, sendtype)?, sendcount, sendtype))
    };
    let recv = recv_buf(recvbuf, recvcount * size, recvtype)?;
    w.world
        .engine
        .allgather(send, recv, recvcount, recvtype, comm)
}
