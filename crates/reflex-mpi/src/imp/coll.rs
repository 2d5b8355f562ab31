//! Collective calls (the foundation's set: barrier, broadcast, reduce, allreduce, gather,
//! allgather). `MPI_IN_PLACE` is accepted where the standard allows it. Buffers of any datatype
//! go through [`Staged`]: used in place when dense, else packed around the collective.

use super::staged::{Staged, Use};
use super::userop::user_reduce;
use super::util::is_in_place;
use crate::kinds::TypeArg;
use crate::ops::OpArg;
use crate::state::Mpi;
use reflex_base::buf::RecvBuf;
use reflex_engine::{CommId, Datatype, ErrorClass, MpiError, Result};
use std::ffi::{c_int, c_void};

/// `MPI_Barrier`.
pub fn barrier(w: &mut Mpi, comm: CommId) -> Result<()> {
    w.world.engine.barrier(comm)
}

fn is_root(w: &Mpi, comm: CommId, root: c_int) -> Result<bool> {
    Ok(w.world.engine.comm(comm)?.rank as c_int == root)
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
    let root_here = is_root(w, comm, root)?;
    let buf = Staged::new(buffer, count, &dt, Use::Move, root_here)?;
    let (recv, n, wire) = (buf.recv()?, buf.wire_count, buf.wire.clone());
    w.world.engine.bcast(recv, n, wire, root, comm)?;
    if root_here {
        return Ok(());
    }
    buf.finish()
}

/// The send side of a reduction or gather: `None` for `MPI_IN_PLACE` where it is allowed.
fn send_side(
    sendbuf: *const c_void,
    in_place_ok: bool,
    count: usize,
    dt: &Datatype,
    usage: Use,
) -> Result<Option<Staged>> {
    if is_in_place(sendbuf) && in_place_ok {
        return Ok(None);
    }
    Staged::new(sendbuf, count, dt, usage, true).map(Some)
}

/// `MPI_Reduce`.
#[allow(clippy::too_many_arguments)] // the MPI call's own parameter list
pub fn reduce(
    w: &mut Mpi,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: usize,
    datatype: TypeArg,
    op: OpArg,
    root: c_int,
    comm: CommId,
) -> Result<()> {
    crate::kinds::committed(w, &datatype)?;
    let op = match op {
        OpArg::Predefined(op) => op,
        OpArg::User(_, u) => {
            return user_reduce(w, sendbuf, recvbuf, count, &datatype, u, root, comm)
        }
    };
    let dt = datatype.dt;
    let root_here = is_root(w, comm, root)?;
    let send = send_side(sendbuf, root_here, count, &dt, Use::Reduce)?;
    let recv = match root_here {
        true => Some(Staged::new(
            recvbuf,
            count,
            &dt,
            Use::Reduce,
            send.is_none(),
        )?),
        false => None,
    };
    let sbuf = send.as_ref().map(Staged::send).transpose()?;
    let rbuf = match &recv {
        Some(r) => r.recv()?,
        None => RecvBuf::empty(),
    };
    w.world.engine.reduce(sbuf, rbuf, count, dt, op, root, comm)
}

/// `MPI_Allreduce`.
pub fn allreduce(
    w: &mut Mpi,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: usize,
    datatype: TypeArg,
    op: OpArg,
    comm: CommId,
) -> Result<()> {
    crate::kinds::committed(w, &datatype)?;
    let op = match op {
        OpArg::Predefined(op) => op,
        OpArg::User(_, u) => {
            user_reduce(w, sendbuf, recvbuf, count, &datatype, u, 0, comm)?;
            return bcast(w, recvbuf, count, datatype.dt, 0, comm);
        }
    };
    let dt = datatype.dt;
    let send = send_side(sendbuf, true, count, &dt, Use::Reduce)?;
    let recv = Staged::new(recvbuf, count, &dt, Use::Reduce, send.is_none())?;
    let sbuf = send.as_ref().map(Staged::send).transpose()?;
    w.world
        .engine
        .allreduce(sbuf, recv.recv()?, count, dt, op, comm)
}

/// The engine's send argument of a gather.
type GatherSend = Option<(reflex_base::buf::SendBuf, usize, Datatype)>;

fn gather_send(send: &Option<Staged>) -> Result<GatherSend> {
    send.as_ref()
        .map(|s| Ok((s.send()?, s.wire_count, s.wire.clone())))
        .transpose()
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
    let send = send_side(sendbuf, root_here, sendcount, &sendtype, Use::Move)?;
    if !root_here {
        let s = gather_send(&send)?;
        let (rdt, rcount) = match &send {
            Some(s) => (s.wire.clone(), s.wire_count),
            None => (recvtype, recvcount),
        };
        let empty = RecvBuf::empty();
        return w.world.engine.gather(s, empty, rcount, rdt, root, comm);
    }
    let total = recvcount.saturating_mul(size);
    let recv = Staged::new(recvbuf, total, &recvtype, Use::Move, send.is_none())?;
    let per_rank = recv.wire_count / size.max(1);
    let (rbuf, wire) = (recv.recv()?, recv.wire.clone());
    w.world
        .engine
        .gather(gather_send(&send)?, rbuf, per_rank, wire, root, comm)?;
    recv.finish()
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
    let send = send_side(sendbuf, true, sendcount, &sendtype, Use::Move)?;
    let total = recvcount.saturating_mul(size);
    let recv = Staged::new(recvbuf, total, &recvtype, Use::Move, send.is_none())?;
    let per_rank = recv.wire_count / size.max(1);
    let (rbuf, wire) = (recv.recv()?, recv.wire.clone());
    w.world
        .engine
        .allgather(gather_send(&send)?, rbuf, per_rank, wire, comm)?;
    recv.finish()
}

/// Bytes per rank of a buffer holding `size` equal blocks.
fn block_bytes(s: &Staged, size: usize) -> Result<usize> {
    Ok(s.wire.contiguous_span(s.wire_count)? / size.max(1))
}

/// `MPI_Alltoall`.
#[allow(clippy::too_many_arguments)] // the MPI call's own parameter list
pub fn alltoall(
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
    let send = send_side(
        sendbuf,
        true,
        sendcount.saturating_mul(size),
        &sendtype,
        Use::Move,
    )?;
    let total = recvcount.saturating_mul(size);
    let recv = Staged::new(recvbuf, total, &recvtype, Use::Move, send.is_none())?;
    let block = block_bytes(&recv, size)?;
    if let Some(s) = &send {
        let sent = block_bytes(s, size)?;
        if sent != block {
            return Err(MpiError::new(
                ErrorClass::Truncate,
                format!("alltoall blocks differ: {sent} bytes sent per rank, {block} received"),
            ));
        }
    }
    let sbuf = send.as_ref().map(Staged::send).transpose()?;
    w.world.engine.alltoall(sbuf, recv.recv()?, block, comm)?;
    recv.finish()
}
