//! What a collective call asks for, as the engine receives it: one [`Coll`] value per MPI
//! collective family, with every buffer already cut into per-rank blocks by the C layer.
//!
//! A block is `count` elements of a datatype in a buffer that wraps exactly the bytes they touch
//! ([`SendData`], [`RecvData`]); v- and w-variants are the same value with different counts,
//! displacements or types per block. `None` where the standard allows `MPI_IN_PLACE`. A
//! reduction carries its operation as a [`Reducer`]: a predefined operation, applied to the one
//! basic type the datatype holds, or an application function behind the [`UserReduce`] trait
//! (the engine never calls C itself).

use crate::datatype::Datatype;
use crate::error::{ErrorClass, MpiError, Result};
use crate::op::ReduceOp;
use reflex_base::buf::{RecvBuf, SendBuf};
use std::sync::Arc;

/// `count` elements of `dt` to be read, in a buffer wrapping the bytes they touch.
#[derive(Debug, Clone)]
pub struct SendData {
    /// The bytes the elements touch.
    pub buf: SendBuf,
    /// Number of elements.
    pub count: usize,
    /// Their datatype.
    pub dt: Datatype,
}

/// `count` elements of `dt` to be written, in a buffer wrapping the bytes they touch.
#[derive(Debug, Clone)]
pub struct RecvData {
    /// The bytes the elements touch.
    pub buf: RecvBuf,
    /// Number of elements.
    pub count: usize,
    /// Their datatype.
    pub dt: Datatype,
}

impl SendData {
    /// Bytes of the packed stream.
    pub fn packed_len(&self) -> Result<usize> {
        self.dt.packed_len(self.count)
    }
}

impl RecvData {
    /// Bytes of the packed stream.
    pub fn packed_len(&self) -> Result<usize> {
        self.dt.packed_len(self.count)
    }

    /// The same elements, to be read (in-place collectives send from the receive buffer).
    pub fn as_send(&self) -> SendData {
        SendData {
            buf: self.buf.as_send(),
            count: self.count,
            dt: self.dt.clone(),
        }
    }

    /// The first `count` elements only.
    pub fn first(&self, count: usize) -> RecvData {
        RecvData {
            count,
            ..self.clone()
        }
    }
}

/// A reduction operation defined by the application (`MPI_Op_create`).
pub trait UserReduce: Send + Sync {
    /// Whether the operation may be applied in any order.
    fn commutative(&self) -> bool;
    /// `inout = input op inout` on `count` elements, both given as packed streams of the
    /// reduction's datatype.
    fn reduce(&self, input: &[u8], inout: &mut [u8], count: usize) -> Result<()>;
}

/// The operation of a reduction.
#[derive(Clone)]
pub enum Reducer {
    /// A predefined operation.
    Predefined(ReduceOp),
    /// An application function.
    User(Arc<dyn UserReduce>),
}

impl std::fmt::Debug for Reducer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reducer::Predefined(op) => write!(f, "{op:?}"),
            Reducer::User(u) => write!(f, "user(commutative: {})", u.commutative()),
        }
    }
}

impl Reducer {
    /// Whether operands may be combined in any order.
    pub fn commutative(&self) -> bool {
        match self {
            Reducer::Predefined(_) => true,
            Reducer::User(u) => u.commutative(),
        }
    }
}

/// A collective operation with its arguments (MPI-3.1 chapter 5 and 7.6).
#[derive(Debug, Clone)]
pub enum Coll {
    /// `MPI_Barrier`.
    Barrier,
    /// `MPI_Bcast`: `data` is read at the root and written elsewhere.
    Bcast {
        /// The buffer.
        data: RecvData,
        /// Rank of the root.
        root: i32,
    },
    /// `MPI_Gather(v)`: `recv` (root only) has one block per rank; `send = None` is
    /// `MPI_IN_PLACE` at the root.
    Gather {
        /// This rank's contribution.
        send: Option<SendData>,
        /// The root's blocks, by rank (empty elsewhere).
        recv: Vec<RecvData>,
        /// Rank of the root.
        root: i32,
    },
    /// `MPI_Scatter(v)`: `send` (root only) has one block per rank; `recv = None` is
    /// `MPI_IN_PLACE` at the root.
    Scatter {
        /// The root's blocks, by rank (empty elsewhere).
        send: Vec<SendData>,
        /// This rank's block.
        recv: Option<RecvData>,
        /// Rank of the root.
        root: i32,
    },
    /// `MPI_Allgather(v)`: `send = None` is `MPI_IN_PLACE` (this rank's block is already in
    /// `recv[rank]`).
    Allgather {
        /// This rank's contribution.
        send: Option<SendData>,
        /// One block per rank.
        recv: Vec<RecvData>,
    },
    /// `MPI_Alltoall(v,w)`: block `r` of `send` goes to rank `r`; `send = None` is
    /// `MPI_IN_PLACE` (what is sent is first read from `recv`).
    Alltoall {
        /// One block per destination.
        send: Option<Vec<SendData>>,
        /// One block per source.
        recv: Vec<RecvData>,
        /// `MPI_Alltoall` itself: every block of every rank has the same size (the v and w forms
        /// promise nothing a rank could check alone).
        regular: bool,
    },
    /// `MPI_Reduce`: `send = None` is `MPI_IN_PLACE` at the root (its input is in `recv`).
    Reduce {
        /// This rank's input.
        send: Option<SendData>,
        /// The result (root only).
        recv: Option<RecvData>,
        /// The operation.
        op: Reducer,
        /// Rank of the root.
        root: i32,
    },
    /// `MPI_Allreduce`: `send = None` is `MPI_IN_PLACE` (the input is in `recv`).
    Allreduce {
        /// This rank's input.
        send: Option<SendData>,
        /// The result.
        recv: RecvData,
        /// The operation.
        op: Reducer,
    },
    /// `MPI_Reduce_scatter(_block)`: the full vector (`counts` summed) is reduced and rank `r`
    /// gets the `counts[r]` elements after those of lower ranks. `send = None` is
    /// `MPI_IN_PLACE`: `recv` then holds the whole input vector and receives the result at its
    /// start.
    ReduceScatter {
        /// This rank's input vector.
        send: Option<SendData>,
        /// This rank's block of the result (the whole vector when in place).
        recv: RecvData,
        /// Elements of the result per rank.
        counts: Vec<usize>,
        /// The operation.
        op: Reducer,
    },
    /// `MPI_Scan` (inclusive) and `MPI_Exscan` (exclusive: rank 0's `recv` is not written).
    Scan {
        /// This rank's input (`None`: in `recv`).
        send: Option<SendData>,
        /// The prefix result.
        recv: RecvData,
        /// The operation.
        op: Reducer,
        /// `MPI_Exscan`.
        exclusive: bool,
    },
    /// The neighbourhood collectives (`MPI_Neighbor_allgather(v)`, `_alltoall(v,w)`): block `i`
    /// of `send` goes to the `i`-th out-neighbour of the communicator's topology, block `i` of
    /// `recv` comes from the `i`-th in-neighbour.
    Neighbor {
        /// One block per out-neighbour.
        send: Vec<SendData>,
        /// One block per in-neighbour.
        recv: Vec<RecvData>,
    },
}

impl Coll {
    /// `MPI_ERR_BUFFER` when this rank (`me` of an intracommunicator) passed one buffer as both
    /// its send and its receive buffer: a send block that starts where the receive block of the
    /// same position does (this rank's own block of a gather, scatter or allgather, any block of
    /// an alltoall, the vectors of a reduction), both non-empty. MPI forbids such aliasing
    /// (MPI-3.1 §2.3) and offers `MPI_IN_PLACE` instead; like MPICH, only identical starts are
    /// caught, so interleaved derived datatypes over one array stay allowed.
    pub fn check_aliasing(&self, me: usize) -> Result<()> {
        let same = |s: &SendData, r: &RecvData| {
            !s.buf.is_empty() && !r.buf.is_empty() && s.buf.addr() == r.buf.addr()
        };
        let own = |s: &SendData, blocks: &[RecvData]| blocks.get(me).is_some_and(|r| same(s, r));
        let aliased = match self {
            Coll::Gather {
                send: Some(s),
                recv,
                ..
            } => own(s, recv),
            Coll::Allgather {
                send: Some(s),
                recv,
            } => own(s, recv),
            Coll::Scatter {
                send,
                recv: Some(r),
                ..
            } => send.get(me).is_some_and(|s| same(s, r)),
            Coll::Alltoall {
                send: Some(s),
                recv,
                ..
            } => s.iter().zip(recv).any(|(s, r)| same(s, r)),
            Coll::Reduce {
                send: Some(s),
                recv: Some(r),
                ..
            } => same(s, r),
            Coll::Allreduce {
                send: Some(s),
                recv,
                ..
            }
            | Coll::ReduceScatter {
                send: Some(s),
                recv,
                ..
            }
            | Coll::Scan {
                send: Some(s),
                recv,
                ..
            } => same(s, recv),
            _ => false,
        };
        match aliased {
            false => Ok(()),
            true => Err(MpiError::new(
                ErrorClass::Buffer,
                "the send and receive buffers are the same memory (aliased); MPI_IN_PLACE as \
                 the send buffer says that the data is already in the receive buffer",
            )),
        }
    }
}

/// `MPI_ERR_ROOT` unless `root` is a rank of a communicator of `size`.
pub(crate) fn check_root(root: i32, size: usize) -> Result<usize> {
    usize::try_from(root)
        .ok()
        .filter(|&r| r < size)
        .ok_or_else(|| {
            MpiError::new(
                ErrorClass::Root,
                format!("root {root} is out of range for a communicator of size {size}"),
            )
        })
}

/// `MPI_ERR_ARG` unless `blocks` has one entry per rank.
pub(crate) fn check_blocks<T>(blocks: &[T], size: usize, what: &str) -> Result<()> {
    if blocks.len() == size {
        return Ok(());
    }
    Err(MpiError::new(
        ErrorClass::Arg,
        format!(
            "{what} has {} blocks for a communicator of size {size}",
            blocks.len()
        ),
    ))
}
