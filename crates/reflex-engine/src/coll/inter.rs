//! Collectives on intercommunicators (MPI-3.1 §5.2.2): data flows from one group to the other.
//!
//! Rooted collectives name the root by `MPI_ROOT` at the root itself, `MPI_PROC_NULL` at the
//! other processes of its group (which take no part), and by its rank in the remote group
//! everywhere in the other group. The schedules combine the intracommunicator algorithms, run
//! inside each group on the hidden local context, with transfers between the groups:
//!
//! | collective | schedule |
//! |---|---|
//! | barrier | local barrier, leaders swap a token, local barrier |
//! | bcast | root → remote leader, then a local binomial bcast |
//! | gather(v), scatter(v) | direct between the root and every remote process |
//! | allgather(v), alltoall(v,w) | direct between every pair of processes of the two groups |
//! | reduce | local binomial reduce in rank order, leader → root |
//! | allreduce | local reduce, leaders swap results, local bcast |
//! | reduce_scatter(_block) | local reduce, leaders swap results, local scatter |
//!
//! `MPI_IN_PLACE` is not allowed on intercommunicators; scans and the neighbourhood
//! collectives are not defined on them.

use super::data;
use super::reduce::{load, reduce_tree, result_buffer, scatter_result, setup};
use super::sched::{Builder, Dst, Src};
use super::spec::{check_blocks, check_root, Coll, RecvData, Reducer, SendData};
use crate::error::{ErrorClass, MpiError, Result};
use crate::request::PROC_NULL;

/// `MPI_ROOT` (MPICH's value): the root of a rooted intercommunicator collective.
pub const ROOT: i32 = -3;

/// Step tag of the transfers between the groups.
const ACROSS: u8 = 2;

/// What a process does in a rooted collective.
enum Side {
    /// It is the root.
    Root,
    /// It is in the root's group but not the root: nothing.
    Idle,
    /// It is in the other group; the root is this remote rank.
    Leaf(usize),
}

fn side(b: &Builder, root: i32) -> Result<Side> {
    match root {
        ROOT => Ok(Side::Root),
        PROC_NULL => Ok(Side::Idle),
        r => check_root(r, b.remote_size).map(Side::Leaf),
    }
}

fn given<T>(data: Option<T>) -> Result<T> {
    data.ok_or_else(|| {
        MpiError::new(
            ErrorClass::Buffer,
            "MPI_IN_PLACE is not allowed on an intercommunicator",
        )
    })
}

/// Compiles `coll` on an intercommunicator.
pub(crate) fn schedule(b: &mut Builder, coll: Coll) -> Result<()> {
    match coll {
        Coll::Barrier => {
            barrier(b);
            Ok(())
        }
        Coll::Bcast { data, root } => bcast(b, data, root),
        Coll::Gather { send, recv, root } => gather(b, send, recv, root),
        Coll::Scatter { send, recv, root } => scatter(b, send, recv, root),
        Coll::Allgather { send, recv } => {
            let send = given(send)?;
            let blocks = vec![send; b.remote_size];
            exchange(b, blocks, recv)
        }
        Coll::Alltoall { send, recv, .. } => exchange(b, given(send)?, recv),
        Coll::Reduce {
            send,
            recv,
            op,
            root,
        } => reduce(b, send, recv, op, root),
        Coll::Allreduce { send, recv, op } => allreduce(b, given(send)?, recv, op),
        Coll::ReduceScatter {
            send,
            recv,
            counts,
            op,
        } => reduce_scatter(b, given(send)?, recv, &counts, op),
        Coll::Scan { exclusive, .. } => Err(MpiError::new(
            ErrorClass::Comm,
            format!(
                "{} is not defined on intercommunicators",
                if exclusive { "MPI_Exscan" } else { "MPI_Scan" }
            ),
        )),
        Coll::Neighbor { .. } => Err(MpiError::new(
            ErrorClass::Topology,
            "an intercommunicator has no process topology",
        )),
    }
}

/// Nobody leaves before everybody of the other group has entered: the leaders swap a token
/// once their groups are all in, and the second local barrier holds the others until then.
fn barrier(b: &mut Builder) {
    data::barrier(b);
    if b.rank == 0 {
        let leader = b.remote(0);
        b.recv(leader, ACROSS, Dst::Empty);
        b.send(leader, ACROSS, Src::Empty);
        b.end_round();
    }
    data::barrier(b);
}

fn bcast(b: &mut Builder, data: RecvData, root: i32) -> Result<()> {
    match side(b, root)? {
        Side::Root => b.send(b.remote(0), ACROSS, Src::User(data.as_send())),
        Side::Idle => {}
        Side::Leaf(r) => {
            if b.rank == 0 {
                b.recv(b.remote(r), ACROSS, Dst::User(data.clone()));
                b.end_round();
            }
            data::bcast(b, data, 0)?;
        }
    }
    Ok(())
}

fn gather(b: &mut Builder, send: Option<SendData>, recv: Vec<RecvData>, root: i32) -> Result<()> {
    match side(b, root)? {
        Side::Root => {
            check_blocks(&recv, b.remote_size, "the receive buffer")?;
            for (r, block) in recv.into_iter().enumerate() {
                b.recv(b.remote(r), ACROSS, Dst::User(block));
            }
        }
        Side::Idle => {}
        Side::Leaf(r) => b.send(b.remote(r), ACROSS, Src::User(given(send)?)),
    }
    Ok(())
}

fn scatter(b: &mut Builder, send: Vec<SendData>, recv: Option<RecvData>, root: i32) -> Result<()> {
    match side(b, root)? {
        Side::Root => {
            check_blocks(&send, b.remote_size, "the send buffer")?;
            for (r, block) in send.into_iter().enumerate() {
                b.send(b.remote(r), ACROSS, Src::User(block));
            }
        }
        Side::Idle => {}
        Side::Leaf(r) => b.recv(b.remote(r), ACROSS, Dst::User(given(recv)?)),
    }
    Ok(())
}

/// Block `r` of `send` goes to remote rank `r`, block `r` of `recv` comes from it.
fn exchange(b: &mut Builder, send: Vec<SendData>, recv: Vec<RecvData>) -> Result<()> {
    check_blocks(&send, b.remote_size, "the send buffer")?;
    check_blocks(&recv, b.remote_size, "the receive buffer")?;
    for (r, (out, into)) in send.into_iter().zip(recv).enumerate() {
        b.recv(b.remote(r), ACROSS, Dst::User(into));
        b.send(b.remote(r), ACROSS, Src::User(out));
    }
    Ok(())
}

fn reduce(
    b: &mut Builder,
    send: Option<SendData>,
    recv: Option<RecvData>,
    op: Reducer,
    root: i32,
) -> Result<()> {
    match side(b, root)? {
        Side::Root => b.recv(b.remote(0), ACROSS, Dst::User(result_buffer(recv)?)),
        Side::Idle => {}
        Side::Leaf(r) => {
            let input = given(send)?;
            let shape = setup(b, op, &input.dt, input.count)?;
            let acc = load(b, input, shape.len);
            if reduce_tree(b, acc, &shape, 0) {
                b.send(b.remote(r), ACROSS, Src::Temp(acc));
            }
        }
    }
    Ok(())
}

fn allreduce(b: &mut Builder, input: SendData, recv: RecvData, op: Reducer) -> Result<()> {
    let shape = setup(b, op, &input.dt, input.count)?;
    let acc = load(b, input, shape.len);
    if reduce_tree(b, acc, &shape, 0) {
        let leader = b.remote(0);
        b.recv(leader, ACROSS, Dst::User(recv.clone()));
        b.send(leader, ACROSS, Src::Temp(acc));
        b.end_round();
    }
    data::bcast(b, recv, 0)
}

/// Both groups reduce a vector of `counts` summed elements (the same length on both sides, as
/// the standard requires); each group's result is scattered over the other by its `counts`.
fn reduce_scatter(
    b: &mut Builder,
    input: SendData,
    recv: RecvData,
    counts: &[usize],
    op: Reducer,
) -> Result<()> {
    check_blocks(counts, b.size, "the reduce-scatter counts")?;
    let total: usize = counts.iter().sum();
    let dt = input.dt.clone();
    let shape = setup(b, op, &dt, total)?;
    let mine = recv.first(counts[b.rank]);
    let acc = load(b, input, shape.len);
    if !reduce_tree(b, acc, &shape, 0) {
        b.recv(0, 1, Dst::User(mine));
        return Ok(());
    }
    let theirs = b.temp(shape.len);
    let leader = b.remote(0);
    b.recv(leader, ACROSS, Dst::Temp(theirs));
    b.send(leader, ACROSS, Src::Temp(acc));
    b.end_round();
    scatter_result(b, theirs, counts, dt.size(), mine);
    Ok(())
}
