//! The reductions: reduce, allreduce, reduce-scatter (and its block form), scan and exscan.
//!
//! Predefined operations are applied by the engine to the one basic type the datatype holds
//! (so a contiguous or vector type of doubles reduces like doubles); user operations go through
//! [`UserReducer`], which calls the application's function with the datatype's handle.

use super::super::userop::UserReducer;
use super::super::util::is_in_place;
use super::blocks::{recv_one, send_one, Count};
use super::forms;
use crate::kinds::TypeArg;
use crate::ops::OpArg;
use crate::state::Mpi;
use reflex_engine::coll::{Coll, Reducer, SendData};
use reflex_engine::{CommId, ErrorClass, MpiError, Result};
use std::ffi::{c_int, c_void};

/// The engine's form of `op` on elements of `dt` (which must be committed).
///
/// Predefined operations are defined on predefined datatypes only (MPI-3.1 §5.9.2, unlike
/// `MPI_Accumulate`): a derived type with one is `MPI_ERR_OP` on every rank, as in MPICH and
/// Open MPI, although the engine could reduce a derived type of one basic type.
fn reducer(w: &Mpi, op: OpArg, dt: &TypeArg) -> Result<Reducer> {
    crate::kinds::committed(w, dt)?;
    match op {
        OpArg::Predefined(_) if dt.dt.layout().is_some() => Err(MpiError::new(
            ErrorClass::Op,
            "predefined reduction operations apply to predefined datatypes only (MPI-3.1 \
             5.9.2); use an operation from MPI_Op_create for a derived datatype",
        )),
        OpArg::Predefined(p) => Ok(Reducer::Predefined(p)),
        OpArg::User(_, u) => Ok(UserReducer::reducer(u, dt)),
    }
}

/// This rank's input: `None` for `MPI_IN_PLACE` (where the engine checks it is allowed).
fn input(p: *const c_void, count: usize, dt: &TypeArg) -> Result<Option<SendData>> {
    if is_in_place(p) {
        return Ok(None);
    }
    send_one(p, count, &dt.dt).map(Some)
}

fn reduce_coll(
    w: &mut Mpi,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: usize,
    datatype: TypeArg,
    op: OpArg,
    root: c_int,
    comm: CommId,
) -> Result<Coll> {
    let op = reducer(w, op, &datatype)?;
    let here = super::is_root(w, comm, root)?;
    let recv = match here {
        true => Some(recv_one(recvbuf, count, &datatype.dt)?),
        false => None,
    };
    let send = match crate::kinds::buffer_significant(w, comm, root, false)? {
        true => input(sendbuf, count, &datatype)?,
        false => None,
    };
    Ok(Coll::Reduce {
        send,
        recv,
        op,
        root,
    })
}
forms!(reduce, ireduce, reduce_init = reduce_coll(
    sendbuf: *const c_void, recvbuf: *mut c_void, count: usize, datatype: TypeArg, op: OpArg,
    root: c_int
));

fn allreduce_coll(
    w: &mut Mpi,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: usize,
    datatype: TypeArg,
    op: OpArg,
    _comm: CommId,
) -> Result<Coll> {
    let op = reducer(w, op, &datatype)?;
    let recv = recv_one(recvbuf, count, &datatype.dt)?;
    let send = input(sendbuf, count, &datatype)?;
    Ok(Coll::Allreduce { send, recv, op })
}
forms!(allreduce, iallreduce, allreduce_init = allreduce_coll(
    sendbuf: *const c_void, recvbuf: *mut c_void, count: usize, datatype: TypeArg, op: OpArg
));

/// A reduce-scatter with `counts[r]` result elements for rank `r`.
fn reduce_scatter_of(
    w: &mut Mpi,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    counts: Vec<usize>,
    datatype: TypeArg,
    op: OpArg,
    comm: CommId,
) -> Result<Coll> {
    let op = reducer(w, op, &datatype)?;
    let me = w.world.engine.comm(comm)?.rank as usize;
    let total: usize = counts.iter().sum();
    let send = input(sendbuf, total, &datatype)?;
    // In place, the receive buffer holds the whole input vector.
    let recv_count = if send.is_none() { total } else { counts[me] };
    let recv = recv_one(recvbuf, recv_count, &datatype.dt)?;
    Ok(Coll::ReduceScatter {
        send,
        recv,
        counts,
        op,
    })
}

fn reduce_scatter_coll<C: Count>(
    w: &mut Mpi,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcounts: *const C,
    datatype: TypeArg,
    op: OpArg,
    comm: CommId,
) -> Result<Coll> {
    let n = w.world.engine.comm(comm)?.size();
    let counts = super::blocks::counts(recvcounts, n, "recvcounts")?;
    reduce_scatter_of(w, sendbuf, recvbuf, counts, datatype, op, comm)
}
forms!(reduce_scatter, ireduce_scatter, reduce_scatter_init<C: Count> = reduce_scatter_coll(
    sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: *const C, datatype: TypeArg,
    op: OpArg
));

fn reduce_scatter_block_coll(
    w: &mut Mpi,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcount: usize,
    datatype: TypeArg,
    op: OpArg,
    comm: CommId,
) -> Result<Coll> {
    let n = w.world.engine.comm(comm)?.size();
    reduce_scatter_of(w, sendbuf, recvbuf, vec![recvcount; n], datatype, op, comm)
}
forms!(reduce_scatter_block, ireduce_scatter_block, reduce_scatter_block_init
    = reduce_scatter_block_coll(
    sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: usize, datatype: TypeArg, op: OpArg
));

/// An inclusive or exclusive prefix reduction.
fn prefix(
    w: &mut Mpi,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: usize,
    datatype: TypeArg,
    op: OpArg,
    exclusive: bool,
) -> Result<Coll> {
    let op = reducer(w, op, &datatype)?;
    let recv = recv_one(recvbuf, count, &datatype.dt)?;
    let send = input(sendbuf, count, &datatype)?;
    Ok(Coll::Scan {
        send,
        recv,
        op,
        exclusive,
    })
}

fn scan_coll(
    w: &mut Mpi,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: usize,
    datatype: TypeArg,
    op: OpArg,
    _comm: CommId,
) -> Result<Coll> {
    prefix(w, sendbuf, recvbuf, count, datatype, op, false)
}
forms!(scan, iscan, scan_init = scan_coll(
    sendbuf: *const c_void, recvbuf: *mut c_void, count: usize, datatype: TypeArg, op: OpArg
));

fn exscan_coll(
    w: &mut Mpi,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: usize,
    datatype: TypeArg,
    op: OpArg,
    _comm: CommId,
) -> Result<Coll> {
    prefix(w, sendbuf, recvbuf, count, datatype, op, true)
}
forms!(exscan, iexscan, exscan_init = exscan_coll(
    sendbuf: *const c_void, recvbuf: *mut c_void, count: usize, datatype: TypeArg, op: OpArg
));
