//! Board collectives that need no waiting, run in a few loads and stores: the front of the
//! dense fast paths ([`super::dense`]) for `MPI_Bcast` and `MPI_Reduce`.
//!
//! In a stream of broadcasts (or reduces) from one root, the root usually finds its next slot
//! free and a reader usually finds the root's data already there, because the root runs up to
//! a ring of slots ahead. Such a call has nothing to wait for, so it needs none of the general
//! run's machinery ([`super::board::BoardRun`]): no reference count on the board, no scratch
//! buffer lent and returned, no second lookup, no spinning budget. Each function here checks
//! that its call is of that kind and runs it with the same protocol as the general path (the
//! same slot, epoch and acknowledgement), or returns `false` having changed nothing, and the
//! general path runs the call (and judges what is wrong with it). Leaving the locked
//! instructions of a reference count out matters beyond their own cost: each one keeps the next
//! call's loads from starting early. On this project's 2-core VM a 2-rank stream of 4-byte
//! broadcasts went from 73-76 to 27-30 ns per call (`bench/coll.c`, 2026-11-27).

use super::dense::DenseReduce;
use crate::comm::CommId;
use crate::engine::Engine;
use crate::op::Combine;
use reflex_base::buf::RecvBuf;
use reflex_base::copy::copy_bytes;
use reflex_base::transport::Transport;
use reflex_shm::board::{Board, SLOT_DATA};

impl<T: Transport> Engine<T> {
    /// Where a call on `comm` stands, when `comm` has a usable board and `bytes` fit a slot.
    #[inline]
    fn board_now(&mut self, comm: CommId, bytes: usize) -> Option<Now<'_>> {
        let c = self.comms.find(comm)?;
        let (me, n) = (c.rank as usize, c.size());
        let (board, epoch, scratch) = self.comms.board_on(comm)?;
        let e = epoch.wrapping_add(1);
        (bytes <= SLOT_DATA).then_some(Now {
            me,
            n,
            board,
            e,
            scratch,
        })
    }

    /// Ends a call that ran here: rank `me` acknowledges epoch `e`, now the board's last.
    #[inline]
    fn ran_at_once(&mut self, comm: CommId, me: usize, e: u32) {
        if let Some((board, epoch, _)) = self.comms.board_on(comm) {
            board.consume(me, e);
            *epoch = e;
        }
        self.core.traffic.collectives += 1;
    }

    /// `MPI_Bcast` of `buf`'s bytes from `root` when the root's slot is free (at the root) or
    /// the root's data is published (elsewhere); whether it ran.
    #[inline]
    pub(super) fn bcast_at_once(&mut self, comm: CommId, buf: &mut RecvBuf, root: i32) -> bool {
        let len = buf.len();
        let Some(Now {
            me, n, board, e, ..
        }) = self.board_now(comm, len)
        else {
            return false;
        };
        let root = root as usize;
        if root >= n {
            return false;
        }
        if me == root {
            if !free(board, me, e) {
                return false;
            }
            board.fill(me, e, len, |slot| copy_bytes(slot, buf.as_slice()));
            board.publish(me, e, len);
        } else {
            if !board.has_published(root, e) {
                return false;
            }
            let have = board.published_len(root, e);
            if have > len {
                return false;
            }
            board.inspect(root, e, have, |bytes| {
                copy_bytes(&mut buf.as_mut_slice()[..have], bytes)
            });
        }
        self.ran_at_once(comm, me, e);
        true
    }

    /// `MPI_Reduce` of `len` bytes to `root` when this rank's slot is free (a non-root rank,
    /// which publishes its operand) or every other rank's operand is published (the root, which
    /// combines them with `combine`); whether it ran. Reductions that would go in pieces
    /// ([`super::split`]) are left to the general path.
    #[inline]
    pub(super) fn reduce_at_once(
        &mut self,
        comm: CommId,
        r: &DenseReduce,
        (len, root): (usize, i32),
        combine: Option<Combine>,
    ) -> bool {
        let pieces = |n| r.count >= n && self.tuning.coll.reduce_in_pieces(n, len);
        let n = match self.comms.find(comm) {
            Some(c) => c.size(),
            None => return false,
        };
        if pieces(n) {
            return false;
        }
        let Some(Now {
            me,
            n,
            board,
            e,
            scratch,
        }) = self.board_now(comm, len)
        else {
            return false;
        };
        let root = root as usize;
        if root >= n {
            return false;
        }
        let own = match (&r.send, &r.recv) {
            (Some(s), _) => s.as_slice(),
            (None, Some(o)) if me == root => o.as_slice(),
            _ => return false,
        };
        if own.len() != len {
            return false;
        }
        if me != root {
            if !free(board, me, e) {
                return false;
            }
            board.fill(me, e, len, |slot| copy_bytes(slot, own));
            board.publish(me, e, len);
        } else {
            let (Some(combine), Some(out)) = (combine, &r.recv) else {
                return false;
            };
            let ready =
                |p| p == me || board.has_published(p, e) && board.published_len(p, e) == len;
            if out.len() != len || !(0..n).all(ready) {
                return false;
            }
            scratch.resize(len, 0);
            let acc = &mut scratch[..len];
            // acc = x0 op (x1 op (… op x[n-1])), the general path's order.
            for p in (0..n).rev() {
                let mut fold = |x: &[u8]| match p == n - 1 {
                    true => copy_bytes(acc, x),
                    false => combine(acc, x),
                };
                match p == me {
                    true => fold(own),
                    false => board.inspect(p, e, len, fold),
                }
            }
            copy_bytes(out.slice(0, len).as_mut_slice(), acc);
        }
        self.ran_at_once(comm, me, e);
        true
    }
}

/// A collective about to run on a communicator's board.
struct Now<'a> {
    /// This rank and the communicator's size.
    me: usize,
    n: usize,
    board: &'a Board,
    /// The epoch of this collective.
    e: u32,
    /// The board's scratch buffer (a reduction's accumulator).
    scratch: &'a mut Vec<u8>,
}

/// Whether rank `me` may write its slot of epoch `e` (every other rank consumed the epoch that
/// used it last).
#[inline]
fn free(board: &Board, me: usize, e: u32) -> bool {
    board.all_consumed(me, e.wrapping_sub(board.slots() as u32))
}
