//! Board collectives on dense bytes: the engine side of the C layer's fast paths for
//! `MPI_Barrier`, `MPI_Bcast`, `MPI_Reduce`, `MPI_Allreduce`, `MPI_Allgather` and `MPI_Alltoall`
//! of predefined types.
//!
//! The buffers are runs of bytes whose packed form is their memory (predefined types whose
//! extent is their size), so packing into a slot and unpacking out of one are plain copies, and
//! the collective runs on the same board algorithms as the general path ([`super::board`]) without
//! building a [`super::Coll`], datatype objects or a schedule.
//!
//! Each function either runs the collective and returns `Some` of its outcome, or returns `None`
//! having changed nothing: when the communicator has no usable board yet (the general path sets
//! it up at its first collective), the message does not fit a slot, or an argument is one the
//! general path must judge (a root out of range, `MPI_IN_PLACE` where it is not allowed, an
//! operation undefined on the type). An error inside a collective that ran (a peer that died
//! while this rank waited) is `Some(Err)`.

use super::board::{BoardRun, Operands};
use super::spec::Reducer;
use crate::comm::CommId;
use crate::datatype::Basic;
use crate::engine::Engine;
use crate::error::Result;
use crate::op::ReduceOp;
use reflex_base::buf::{RecvBuf, SendBuf};
use reflex_base::copy::copy_bytes;
use reflex_base::transport::Transport;
use reflex_shm::board::SLOT_DATA;

/// A reduction of dense bytes: `count` elements of `basic` combined with `op`.
#[derive(Debug)]
pub struct DenseReduce {
    /// This rank's operand; `None` for `MPI_IN_PLACE` (the operand is then `recv`'s content).
    pub send: Option<SendBuf>,
    /// Where the result goes: every rank of an allreduce, the root of a reduce (`None`
    /// elsewhere, where the receive buffer is not significant).
    pub recv: Option<RecvBuf>,
    /// Number of elements.
    pub count: usize,
    /// Their predefined type.
    pub basic: Basic,
    /// The predefined operation.
    pub op: ReduceOp,
    /// The root of a reduce; `None` for an allreduce.
    pub root: Option<i32>,
}

impl<T: Transport> Engine<T> {
    /// The next collective on `comm`'s board, when one is set up and `len` bytes fit a slot;
    /// `root` (if any) must name a rank.
    fn dense_run(&mut self, comm: CommId, len: usize, root: Option<i32>) -> Option<BoardRun> {
        if len > SLOT_DATA || self.board_base.is_none() {
            return None;
        }
        let c = self.comms.get(comm).ok()?;
        let (me, n) = (c.rank as usize, c.size());
        if root.is_some_and(|r| usize::try_from(r).map_or(true, |r| r >= n)) {
            return None;
        }
        self.begin_run(comm, me)
    }

    /// Runs `body` on the next collective of `comm`'s board and ends it.
    pub(super) fn on_board(
        &mut self,
        comm: CommId,
        mut run: BoardRun,
        body: impl FnOnce(&mut Self, &mut BoardRun) -> Result<()>,
    ) -> Option<Result<()>> {
        self.core.traffic.collectives += 1;
        let outcome = body(self, &mut run);
        self.end_run(comm, run);
        Some(outcome)
    }

    /// `MPI_Barrier` on `comm`'s board.
    pub fn barrier_dense(&mut self, comm: CommId) -> Option<Result<()>> {
        if let Some(outcome) = self.barrier_at_once(comm) {
            return Some(outcome);
        }
        let run = self.dense_run(comm, 0, None)?;
        self.on_board(comm, run, |e, run| e.board_barrier(run))
    }

    /// `MPI_Bcast` of the bytes of `buf` from `root`.
    pub fn bcast_dense(&mut self, comm: CommId, mut buf: RecvBuf, root: i32) -> Option<Result<()>> {
        if self.bcast_at_once(comm, &mut buf, root) {
            return Some(Ok(()));
        }
        let len = buf.len();
        let run = self.dense_run(comm, len, Some(root))?;
        let from = buf.as_send();
        self.on_board(comm, run, |e, run| {
            e.bcast_on(run, root as usize, len, copy_in(&from), copy_out(&mut buf))
        })
    }

    /// `MPI_Reduce` (with a root) or `MPI_Allreduce` of dense bytes.
    pub fn reduce_dense(&mut self, comm: CommId, r: DenseReduce) -> Option<Result<()>> {
        let combine = match self.op_defined {
            Some((op, basic, combine)) if (op, basic) == (r.op, r.basic) => combine,
            _ => {
                crate::op::check(r.op, &r.basic).ok()?;
                let combine = crate::op::combiner(r.op, &r.basic);
                self.op_defined = Some((r.op, r.basic, combine));
                combine
            }
        };
        let len = r.count.checked_mul(r.basic.size as usize)?;
        match r.root {
            Some(root) if self.reduce_at_once(comm, &r, (len, root), combine) => {
                return Some(Ok(()));
            }
            None => {
                if let Some(outcome) = self.allreduce_at_once(comm, &r, len, combine) {
                    return Some(outcome);
                }
            }
            Some(_) => {}
        }
        let me = self.comms.get(comm).ok()?.rank as i32;
        let reads = r.root.is_none_or(|root| root == me);
        let mut out = r.recv.filter(|b| reads && b.len() == len);
        let input = match (r.send, &out) {
            (Some(s), _) if s.len() == len => s,
            (None, Some(o)) => o.as_send(),
            _ => return None,
        };
        if reads && out.is_none() {
            return None;
        }
        let run = self.dense_run(comm, len, r.root)?;
        let op = Reducer::Predefined(r.op);
        let shape = (len, r.count);
        let operands = Operands::resolved(shape, r.root.is_some(), (&op, Some(r.basic)), combine);
        self.on_board(comm, run, |e, run| {
            let out = out.as_mut().map(copy_out);
            e.reduce_on(run, operands, copy_in(&input), out)
        })
    }
}

impl<T: Transport> Engine<T> {
    /// `MPI_Allgather` of equal blocks: this rank's from `send` (`None`: in place, its block of
    /// `recv`), every rank's into its block of `recv`, which has one block per rank.
    pub fn allgather_dense(
        &mut self,
        comm: CommId,
        send: Option<SendBuf>,
        recv: RecvBuf,
    ) -> Option<Result<()>> {
        let (_, len) = self.block_of(comm, &recv, send.as_ref(), false)?;
        if let Some(outcome) = self.allgather_at_once(comm, send.as_ref(), &recv, len) {
            return Some(outcome);
        }
        let run = self.dense_run(comm, len, None)?;
        let own = send.is_some();
        let mine = send.unwrap_or_else(|| recv.slice(run.me * len, len).as_send());
        self.on_board(comm, run, |e, run| {
            e.allgather_on(run, len, copy_in(&mine), own, |run, r| {
                run.read_exactly(r, len, copy_out(&mut recv.slice(r * len, len)))
            })
        })
    }

    /// `MPI_Alltoall` of equal blocks: `send` (`None`: in place, `recv`) and `recv` have one
    /// block per rank.
    pub fn alltoall_dense(
        &mut self,
        comm: CommId,
        send: Option<SendBuf>,
        recv: RecvBuf,
    ) -> Option<Result<()>> {
        let (n, block) = self.block_of(comm, &recv, send.as_ref(), true)?;
        if let Some(outcome) = self.alltoall_at_once(comm, send.as_ref(), &recv, block) {
            return Some(outcome);
        }
        let run = self.dense_run(comm, n * block, None)?;
        let out = send.unwrap_or_else(|| recv.as_send());
        self.on_board(comm, run, |e, run| {
            e.alltoall_on(run, block, copy_in(&out), |r, bytes| {
                copy_out(&mut recv.slice(r * block, block))(bytes);
            })
        })
    }

    /// The rank count and block length of a regular allgather (`to_each = false`) or alltoall:
    /// `recv` holds one block per rank, `send` (if any) one block, or one per rank.
    fn block_of(
        &self,
        comm: CommId,
        recv: &RecvBuf,
        send: Option<&SendBuf>,
        to_each: bool,
    ) -> Option<(usize, usize)> {
        let n = self.comms.get(comm).ok()?.size();
        let block = recv.len() / n;
        let per_send = if to_each { n } else { 1 };
        let fits = recv.len() == n * block && send.is_none_or(|s| s.len() == per_send * block);
        fits.then_some((n, block))
    }
}

/// Packs `from` into a slot: a copy.
fn copy_in(from: &SendBuf) -> impl FnOnce(&mut [u8]) -> usize + '_ {
    |slot| {
        copy_bytes(slot, from.as_slice());
        slot.len()
    }
}

/// Unpacks a slot's bytes into `to`: a copy of as many bytes as were published (the board
/// checked they fit).
pub(super) fn copy_out(to: &mut RecvBuf) -> impl FnOnce(&[u8]) + '_ {
    |bytes| copy_bytes(&mut to.as_mut_slice()[..bytes.len()], bytes)
}
