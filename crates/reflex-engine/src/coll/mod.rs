//! Collective operations: every MPI collective as a [`sched::Schedule`] of point-to-point rounds,
//! run blocking, nonblocking or persistent.
//!
//! [`spec`] describes what a call asks for ([`Coll`]); [`data`] and [`reduce`] compile it into
//! rounds with algorithms from the literature chosen so that results are reproducible and, for
//! reductions, bit-identical on every rank (operands are always combined in rank order, in a
//! tree whose shape depends only on the communicator size); [`sched`] runs schedules from the
//! progress engine. Collective traffic uses the communicator's second context id (`ctx + 1`),
//! so it never matches application messages.
//!
//! | collective | algorithm |
//! |---|---|
//! | barrier | dissemination, ⌈log2 n⌉ rounds |
//! | bcast | binomial tree |
//! | gather(v), scatter(v) | direct to/from the root |
//! | allgather(v) | one round of direct exchange when small, else a ring |
//! | alltoall(v,w) | one round of direct exchange |
//! | reduce | binomial tree in rank order (rooted at the root when commutative, else at 0) |
//! | allreduce | recursive doubling in rank order, non-powers of two folded first |
//! | reduce_scatter | reduce to 0, then scatter |
//! | scan, exscan | recursive doubling (prefix), in rank order |
//! | neighbour collectives | one round to the topology's neighbours |
//!
//! On intercommunicators the same algorithms run inside each group and are joined by transfers
//! between the groups ([`inter`]).
//!
//! Blocking barrier, bcast, reduce, allreduce and allgather of messages up to a board slot, on a
//! communicator within one node, run on shared memory instead ([`board`]), and so does a regular
//! alltoall whose blocks all fit one slot together. Barrier, bcast, reduce and allreduce of
//! predefined types reach the board from the C layer's fast paths too ([`dense`]), without a
//! [`Coll`]; a broadcast or reduce among those that needs no waiting runs there in a few loads
//! and stores ([`at_once`]).
//!
//! Larger bcast (3+ ranks), reduce, allreduce, allgather(v) and alltoall on such a communicator run single-copy
//! when the ranks may read each other's memory ([`direct`]): the board carries the addresses of
//! the application's buffers, and ranks copy (and reduce) straight between them.

mod at_once;
pub mod board;
pub mod data;
pub mod dense;
pub mod direct;
pub mod exchange;
pub mod inter;
pub mod large;
pub mod reduce;
pub mod sched;
pub mod select;
pub mod spec;
mod split;
mod stream;
pub mod trees;

pub use dense::DenseReduce;
pub use spec::{Coll, RecvData, Reducer, SendData, UserReduce};

use crate::comm::CommId;
use crate::engine::Engine;
use crate::error::Result;
use crate::request::{Persistent, RequestId};
use reflex_base::transport::Transport;
use sched::{Builder, Schedule};

impl<T: Transport> Engine<T> {
    /// Runs collective `coll` on `comm` to completion.
    pub fn collective(&mut self, comm: CommId, coll: Coll) -> Result<()> {
        let Some(coll) = self.try_board(comm, coll)? else {
            self.core.traffic.collectives += 1;
            return Ok(());
        };
        let id = self.coll_start(comm, coll)?;
        let status = self.wait(id)?;
        match status.error {
            Some(e) => Err(*e),
            None => Ok(()),
        }
    }

    /// Starts collective `coll` on `comm` (`MPI_Ibarrier` ...); complete it like any request.
    pub fn coll_start(&mut self, comm: CommId, coll: Coll) -> Result<RequestId> {
        let sched = self.schedule(comm, coll)?;
        self.start_schedule(sched, None)
    }

    /// A persistent collective request (`MPI_Barrier_init` ...), inactive until `MPI_Start`.
    pub fn coll_init(&mut self, comm: CommId, coll: Coll) -> Result<RequestId> {
        let sched = self.schedule(comm, coll)?;
        Ok(self.insert_persistent(Persistent::Coll(Box::new(sched))))
    }

    /// `MPI_Barrier`.
    pub fn barrier(&mut self, comm: CommId) -> Result<()> {
        self.collective(comm, Coll::Barrier)
    }

    /// Compiles `coll` for this rank of `comm`.
    fn schedule(&self, comm: CommId, coll: Coll) -> Result<Schedule> {
        let c = self.comms.get(comm)?;
        let mut b = Builder::new(comm, c);
        if c.is_inter() {
            inter::schedule(&mut b, coll)?;
            return Ok(b.finish());
        }
        let table = &self.tuning.coll;
        match coll {
            Coll::Barrier => data::barrier_with(&mut b, table),
            Coll::Bcast { data, root } => {
                let algo = table.bcast(b.size, data.packed_len()?);
                data::bcast_with(&mut b, data, root, algo)?
            }
            Coll::Gather { send, recv, root } => data::gather(&mut b, send, recv, root)?,
            Coll::Scatter { send, recv, root } => data::scatter(&mut b, send, recv, root)?,
            Coll::Allgather { send, recv } => data::allgather(&mut b, send, recv, table)?,
            Coll::Alltoall { send, recv, .. } => data::alltoall(&mut b, send, recv, table)?,
            Coll::Neighbor { send, recv } => {
                let (sources, destinations) = self.neighbors(comm)?;
                data::neighbor(&mut b, &sources, &destinations, send, recv)?
            }
            Coll::Reduce {
                send,
                recv,
                op,
                root,
            } => reduce::reduce(&mut b, send, recv, op, root)?,
            Coll::Allreduce { send, recv, op } => {
                let input = send.unwrap_or_else(|| recv.as_send());
                let (n, count) = (b.size, input.count);
                let algo = table.allreduce(n, count, input.packed_len()?, op.commutative());
                match algo {
                    select::Allreduce::Ring => large::ring_allreduce(&mut b, input, recv, op)?,
                    select::Allreduce::Rabenseifner => {
                        large::rabenseifner_allreduce(&mut b, input, recv, op)?
                    }
                    select::Allreduce::RecursiveDoubling => {
                        reduce::allreduce(&mut b, Some(input), recv, op)?
                    }
                }
            }
            Coll::ReduceScatter {
                send,
                recv,
                counts,
                op,
            } => reduce::reduce_scatter(&mut b, send, recv, &counts, op)?,
            Coll::Scan {
                send,
                recv,
                op,
                exclusive,
            } => reduce::scan(&mut b, send, recv, op, exclusive)?,
        }
        Ok(b.finish())
    }
}
