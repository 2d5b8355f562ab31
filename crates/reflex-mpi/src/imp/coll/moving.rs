//! The collectives that move data: barrier, broadcast, gather(v), scatter(v), allgather(v),
//! alltoall(v,w) and the neighbourhood allgather(v) and alltoall(v,w).

use super::super::util::is_in_place;
use super::blocks::{
    recv_blocks, recv_one, regular, send_blocks, send_one, typed, varying, Count, Displ,
};
use super::forms;
use crate::ffi::MPI_Datatype;
use crate::kinds::buffer_significant;
use crate::state::Mpi;
use reflex_engine::coll::{Coll, RecvData, SendData};
use reflex_engine::{CommId, Datatype, Result};
use std::ffi::{c_int, c_void};

/// Whether this process is the root of a rooted collective, and the number of blocks the
/// root's buffer has (the remote group's size on an intercommunicator).
fn root_and_blocks(w: &Mpi, comm: CommId, root: c_int) -> Result<(bool, usize)> {
    Ok((super::is_root(w, comm, root)?, blocks(w, comm)?))
}

/// The number of blocks of an unrooted collective's buffers.
fn blocks(w: &Mpi, comm: CommId) -> Result<usize> {
    Ok(w.world.engine.comm(comm)?.peers().size())
}

fn barrier_coll(_w: &mut Mpi, _comm: CommId) -> Result<Coll> {
    Ok(Coll::Barrier)
}
forms!(barrier, ibarrier, barrier_init = barrier_coll());

fn bcast_coll(
    w: &mut Mpi,
    buffer: *mut c_void,
    count: usize,
    datatype: Datatype,
    root: c_int,
    comm: CommId,
) -> Result<Coll> {
    // Not significant in the root's group of an intercommunicator, but for the root.
    let count = match buffer_significant(w, comm, root, true)? {
        true => count,
        false => 0,
    };
    let data = recv_one(buffer, count, &datatype)?;
    Ok(Coll::Bcast { data, root })
}
forms!(bcast, ibcast, bcast_init = bcast_coll(
    buffer: *mut c_void, count: usize, datatype: Datatype, root: c_int
));

/// This rank's block: `None` for `MPI_IN_PLACE` (where the engine checks it is allowed).
fn own_block(p: *const c_void, count: usize, dt: &Datatype) -> Result<Option<SendData>> {
    if is_in_place(p) {
        return Ok(None);
    }
    send_one(p, count, dt).map(Some)
}

/// This rank's contribution to a rooted collective: `None` for `MPI_IN_PLACE`, and in the
/// root's group of an intercommunicator, where it is not significant.
fn contribution(
    w: &Mpi,
    comm: CommId,
    root: c_int,
    p: *const c_void,
    count: usize,
    dt: &Datatype,
) -> Result<Option<SendData>> {
    match buffer_significant(w, comm, root, false)? {
        true => own_block(p, count, dt),
        false => Ok(None),
    }
}

/// The root's blocks (none elsewhere: the arguments are not significant there).
fn at_root<T>(here: bool, blocks: impl FnOnce() -> Result<Vec<T>>) -> Result<Vec<T>> {
    if here {
        blocks()
    } else {
        Ok(Vec::new())
    }
}

fn gather_coll(
    w: &mut Mpi,
    sendbuf: *const c_void,
    sendcount: usize,
    sendtype: Datatype,
    recvbuf: *mut c_void,
    recvcount: usize,
    recvtype: Datatype,
    root: c_int,
    comm: CommId,
) -> Result<Coll> {
    let (here, n) = root_and_blocks(w, comm, root)?;
    let recv = at_root(here, || {
        recv_blocks(recvbuf, regular(n, recvcount, &recvtype)?)
    })?;
    let send = contribution(w, comm, root, sendbuf, sendcount, &sendtype)?;
    Ok(Coll::Gather { send, recv, root })
}
forms!(gather, igather, gather_init = gather_coll(
    sendbuf: *const c_void, sendcount: usize, sendtype: Datatype,
    recvbuf: *mut c_void, recvcount: usize, recvtype: Datatype, root: c_int
));

fn gatherv_coll<C: Count, D: Displ>(
    w: &mut Mpi,
    sendbuf: *const c_void,
    sendcount: usize,
    sendtype: Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const C,
    displs: *const D,
    recvtype: Datatype,
    root: c_int,
    comm: CommId,
) -> Result<Coll> {
    let (here, n) = root_and_blocks(w, comm, root)?;
    let recv = at_root(here, || {
        recv_blocks(recvbuf, varying(n, recvcounts, displs, &recvtype)?)
    })?;
    let send = contribution(w, comm, root, sendbuf, sendcount, &sendtype)?;
    Ok(Coll::Gather { send, recv, root })
}
forms!(gatherv, igatherv, gatherv_init<C: Count, D: Displ> = gatherv_coll(
    sendbuf: *const c_void, sendcount: usize, sendtype: Datatype,
    recvbuf: *mut c_void, recvcounts: *const C, displs: *const D, recvtype: Datatype, root: c_int
));

/// This rank's receive block: `None` for `MPI_IN_PLACE`, and in the root's group of an
/// intercommunicator, where it is not significant.
fn landing(
    w: &Mpi,
    comm: CommId,
    root: c_int,
    p: *mut c_void,
    count: usize,
    dt: &Datatype,
) -> Result<Option<RecvData>> {
    if is_in_place(p) || !buffer_significant(w, comm, root, false)? {
        return Ok(None);
    }
    recv_one(p, count, dt).map(Some)
}

fn scatter_coll(
    w: &mut Mpi,
    sendbuf: *const c_void,
    sendcount: usize,
    sendtype: Datatype,
    recvbuf: *mut c_void,
    recvcount: usize,
    recvtype: Datatype,
    root: c_int,
    comm: CommId,
) -> Result<Coll> {
    let (here, n) = root_and_blocks(w, comm, root)?;
    let send = at_root(here, || {
        send_blocks(sendbuf, regular(n, sendcount, &sendtype)?)
    })?;
    let recv = landing(w, comm, root, recvbuf, recvcount, &recvtype)?;
    Ok(Coll::Scatter { send, recv, root })
}
forms!(scatter, iscatter, scatter_init = scatter_coll(
    sendbuf: *const c_void, sendcount: usize, sendtype: Datatype,
    recvbuf: *mut c_void, recvcount: usize, recvtype: Datatype, root: c_int
));

fn scatterv_coll<C: Count, D: Displ>(
    w: &mut Mpi,
    sendbuf: *const c_void,
    sendcounts: *const C,
    displs: *const D,
    sendtype: Datatype,
    recvbuf: *mut c_void,
    recvcount: usize,
    recvtype: Datatype,
    root: c_int,
    comm: CommId,
) -> Result<Coll> {
    let (here, n) = root_and_blocks(w, comm, root)?;
    let send = at_root(here, || {
        send_blocks(sendbuf, varying(n, sendcounts, displs, &sendtype)?)
    })?;
    let recv = landing(w, comm, root, recvbuf, recvcount, &recvtype)?;
    Ok(Coll::Scatter { send, recv, root })
}
forms!(scatterv, iscatterv, scatterv_init<C: Count, D: Displ> = scatterv_coll(
    sendbuf: *const c_void, sendcounts: *const C, displs: *const D, sendtype: Datatype,
    recvbuf: *mut c_void, recvcount: usize, recvtype: Datatype, root: c_int
));

fn allgather_coll(
    w: &mut Mpi,
    sendbuf: *const c_void,
    sendcount: usize,
    sendtype: Datatype,
    recvbuf: *mut c_void,
    recvcount: usize,
    recvtype: Datatype,
    comm: CommId,
) -> Result<Coll> {
    let n = blocks(w, comm)?;
    let recv = recv_blocks(recvbuf, regular(n, recvcount, &recvtype)?)?;
    let send = own_block(sendbuf, sendcount, &sendtype)?;
    Ok(Coll::Allgather { send, recv })
}
forms!(allgather, iallgather, allgather_init = allgather_coll(
    sendbuf: *const c_void, sendcount: usize, sendtype: Datatype,
    recvbuf: *mut c_void, recvcount: usize, recvtype: Datatype
));

fn allgatherv_coll<C: Count, D: Displ>(
    w: &mut Mpi,
    sendbuf: *const c_void,
    sendcount: usize,
    sendtype: Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const C,
    displs: *const D,
    recvtype: Datatype,
    comm: CommId,
) -> Result<Coll> {
    let n = blocks(w, comm)?;
    let recv = recv_blocks(recvbuf, varying(n, recvcounts, displs, &recvtype)?)?;
    let send = own_block(sendbuf, sendcount, &sendtype)?;
    Ok(Coll::Allgather { send, recv })
}
forms!(allgatherv, iallgatherv, allgatherv_init<C: Count, D: Displ> = allgatherv_coll(
    sendbuf: *const c_void, sendcount: usize, sendtype: Datatype,
    recvbuf: *mut c_void, recvcounts: *const C, displs: *const D, recvtype: Datatype
));

/// The send blocks of an alltoall: `None` for `MPI_IN_PLACE`.
fn outgoing(
    p: *const c_void,
    blocks: impl FnOnce() -> Result<Vec<super::blocks::Block>>,
) -> Result<Option<Vec<SendData>>> {
    if is_in_place(p) {
        return Ok(None);
    }
    send_blocks(p, blocks()?).map(Some)
}

fn alltoall_coll(
    w: &mut Mpi,
    sendbuf: *const c_void,
    sendcount: usize,
    sendtype: Datatype,
    recvbuf: *mut c_void,
    recvcount: usize,
    recvtype: Datatype,
    comm: CommId,
) -> Result<Coll> {
    let n = blocks(w, comm)?;
    let recv = recv_blocks(recvbuf, regular(n, recvcount, &recvtype)?)?;
    let send = outgoing(sendbuf, || regular(n, sendcount, &sendtype))?;
    Ok(Coll::Alltoall {
        send,
        recv,
        regular: true,
    })
}
forms!(alltoall, ialltoall, alltoall_init = alltoall_coll(
    sendbuf: *const c_void, sendcount: usize, sendtype: Datatype,
    recvbuf: *mut c_void, recvcount: usize, recvtype: Datatype
));

fn alltoallv_coll<C: Count, D: Displ>(
    w: &mut Mpi,
    sendbuf: *const c_void,
    sendcounts: *const C,
    sdispls: *const D,
    sendtype: Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const C,
    rdispls: *const D,
    recvtype: Datatype,
    comm: CommId,
) -> Result<Coll> {
    let n = blocks(w, comm)?;
    let recv = recv_blocks(recvbuf, varying(n, recvcounts, rdispls, &recvtype)?)?;
    let send = outgoing(sendbuf, || varying(n, sendcounts, sdispls, &sendtype))?;
    Ok(Coll::Alltoall {
        send,
        recv,
        regular: false,
    })
}
forms!(alltoallv, ialltoallv, alltoallv_init<C: Count, D: Displ> = alltoallv_coll(
    sendbuf: *const c_void, sendcounts: *const C, sdispls: *const D, sendtype: Datatype,
    recvbuf: *mut c_void, recvcounts: *const C, rdispls: *const D, recvtype: Datatype
));

fn alltoallw_coll<C: Count, D: Displ>(
    w: &mut Mpi,
    sendbuf: *const c_void,
    sendcounts: *const C,
    sdispls: *const D,
    sendtypes: *const MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const C,
    rdispls: *const D,
    recvtypes: *const MPI_Datatype,
    comm: CommId,
) -> Result<Coll> {
    let n = blocks(w, comm)?;
    let recv = recv_blocks(recvbuf, typed(w, n, recvcounts, rdispls, recvtypes)?)?;
    let send = outgoing(sendbuf, || typed(w, n, sendcounts, sdispls, sendtypes))?;
    Ok(Coll::Alltoall {
        send,
        recv,
        regular: false,
    })
}
forms!(alltoallw, ialltoallw, alltoallw_init<C: Count, D: Displ> = alltoallw_coll(
    sendbuf: *const c_void, sendcounts: *const C, sdispls: *const D,
    sendtypes: *const MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const C,
    rdispls: *const D, recvtypes: *const MPI_Datatype
));

/// (in-degree, out-degree) of this process in `comm`'s topology.
fn degrees(w: &Mpi, comm: CommId) -> Result<(usize, usize)> {
    let (ins, outs) = w.world.engine.neighbors(comm)?;
    Ok((ins.len(), outs.len()))
}

fn neighbor_allgather_coll(
    w: &mut Mpi,
    sendbuf: *const c_void,
    sendcount: usize,
    sendtype: Datatype,
    recvbuf: *mut c_void,
    recvcount: usize,
    recvtype: Datatype,
    comm: CommId,
) -> Result<Coll> {
    let (indegree, outdegree) = degrees(w, comm)?;
    let recv = recv_blocks(recvbuf, regular(indegree, recvcount, &recvtype)?)?;
    let send = vec![send_one(sendbuf, sendcount, &sendtype)?; outdegree];
    Ok(Coll::Neighbor { send, recv })
}
forms!(neighbor_allgather, ineighbor_allgather, neighbor_allgather_init = neighbor_allgather_coll(
    sendbuf: *const c_void, sendcount: usize, sendtype: Datatype,
    recvbuf: *mut c_void, recvcount: usize, recvtype: Datatype
));

fn neighbor_allgatherv_coll<C: Count, D: Displ>(
    w: &mut Mpi,
    sendbuf: *const c_void,
    sendcount: usize,
    sendtype: Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const C,
    displs: *const D,
    recvtype: Datatype,
    comm: CommId,
) -> Result<Coll> {
    let (indegree, outdegree) = degrees(w, comm)?;
    let recv = recv_blocks(recvbuf, varying(indegree, recvcounts, displs, &recvtype)?)?;
    let send = vec![send_one(sendbuf, sendcount, &sendtype)?; outdegree];
    Ok(Coll::Neighbor { send, recv })
}
forms!(neighbor_allgatherv, ineighbor_allgatherv, neighbor_allgatherv_init<C: Count, D: Displ>
    = neighbor_allgatherv_coll(
    sendbuf: *const c_void, sendcount: usize, sendtype: Datatype,
    recvbuf: *mut c_void, recvcounts: *const C, displs: *const D, recvtype: Datatype
));

fn neighbor_alltoall_coll(
    w: &mut Mpi,
    sendbuf: *const c_void,
    sendcount: usize,
    sendtype: Datatype,
    recvbuf: *mut c_void,
    recvcount: usize,
    recvtype: Datatype,
    comm: CommId,
) -> Result<Coll> {
    let (indegree, outdegree) = degrees(w, comm)?;
    let recv = recv_blocks(recvbuf, regular(indegree, recvcount, &recvtype)?)?;
    let send = send_blocks(sendbuf, regular(outdegree, sendcount, &sendtype)?)?;
    Ok(Coll::Neighbor { send, recv })
}
forms!(neighbor_alltoall, ineighbor_alltoall, neighbor_alltoall_init = neighbor_alltoall_coll(
    sendbuf: *const c_void, sendcount: usize, sendtype: Datatype,
    recvbuf: *mut c_void, recvcount: usize, recvtype: Datatype
));

fn neighbor_alltoallv_coll<C: Count, D: Displ>(
    w: &mut Mpi,
    sendbuf: *const c_void,
    sendcounts: *const C,
    sdispls: *const D,
    sendtype: Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const C,
    rdispls: *const D,
    recvtype: Datatype,
    comm: CommId,
) -> Result<Coll> {
    let (indegree, outdegree) = degrees(w, comm)?;
    let recv = recv_blocks(recvbuf, varying(indegree, recvcounts, rdispls, &recvtype)?)?;
    let send = send_blocks(sendbuf, varying(outdegree, sendcounts, sdispls, &sendtype)?)?;
    Ok(Coll::Neighbor { send, recv })
}
forms!(neighbor_alltoallv, ineighbor_alltoallv, neighbor_alltoallv_init<C: Count, D: Displ>
    = neighbor_alltoallv_coll(
    sendbuf: *const c_void, sendcounts: *const C, sdispls: *const D, sendtype: Datatype,
    recvbuf: *mut c_void, recvcounts: *const C, rdispls: *const D, recvtype: Datatype
));

fn neighbor_alltoallw_coll<C: Count, D: Displ>(
    w: &mut Mpi,
    sendbuf: *const c_void,
    sendcounts: *const C,
    sdispls: *const D,
    sendtypes: *const MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const C,
    rdispls: *const D,
    recvtypes: *const MPI_Datatype,
    comm: CommId,
) -> Result<Coll> {
    let (indegree, outdegree) = degrees(w, comm)?;
    let recv = recv_blocks(recvbuf, typed(w, indegree, recvcounts, rdispls, recvtypes)?)?;
    let send = send_blocks(
        sendbuf,
        typed(w, outdegree, sendcounts, sdispls, sendtypes)?,
    )?;
    Ok(Coll::Neighbor { send, recv })
}
forms!(neighbor_alltoallw, ineighbor_alltoallw, neighbor_alltoallw_init<C: Count, D: Displ>
    = neighbor_alltoallw_coll(
    sendbuf: *const c_void, sendcounts: *const C, sdispls: *const D,
    sendtypes: *const MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const C,
    rdispls: *const D, recvtypes: *const MPI_Datatype
));
