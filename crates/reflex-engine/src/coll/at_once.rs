//! Board collectives without the general run's machinery: the front of the dense fast paths
//! ([`super::dense`]) for `MPI_Barrier`, `MPI_Bcast`, `MPI_Reduce`, `MPI_Allreduce`,
//! `MPI_Allgather` and `MPI_Alltoall`.
//!
//! The general path wraps every board collective in a [`BoardRun`]: a reference count on the
//! board, the scratch buffer lent and returned, two lookups, a spinning budget. Most calls in a
//! loop of collectives need none of it:
//! - in a stream of broadcasts (or reduces) from one root, the root usually finds its next slot
//!   free and a reader finds the root's data already there (the root runs up to a ring of slots
//!   ahead), so the call has nothing to wait for; [`Engine::bcast_at_once`] and
//!   [`Engine::reduce_at_once`] run it in a few loads and stores, or return `false` having
//!   changed nothing, and the general path runs the call (and judges what is wrong with it);
//! - in barrier, allreduce, allgather and alltoall every rank publishes, then waits for the
//!   others: the functions here publish when the slot is free (`None` otherwise, nothing
//!   changed), poll a short while ([`QUICK_POLLS`]), and only if the others are not there by
//!   then does the general wait (engine progress, yielding the CPU) take over from the same
//!   point ([`Engine::finish`]).
//!
//! The protocol is the general path's (the same slots, epochs, acknowledgements and order of
//! combination), so ranks taking either path interoperate. The general run's length is most of
//! what goes; its reference count's two locked instructions (full fences, which keep the next
//! call's loads from starting early) are about 5 ns of it. On this project's 2-core VM (2 ranks, `bench/coll.c`, 2026-11-27, best of
//! interleaved rounds) a stream of 4-byte broadcasts went from 73-76 to 27-30 ns per call,
//! allreduce of 4 bytes from 0.150 to 0.111 µs, allgather and alltoall of 4 bytes from
//! 0.133-0.137 to 0.106-0.113 µs.

use super::board::{BoardRun, Operands};
use super::dense::copy_out;
use super::dense::DenseReduce;
use super::spec::Reducer;
use crate::comm::CommId;
use crate::engine::Engine;
use crate::error::Result;
use crate::op::Combine;
use reflex_base::buf::{RecvBuf, SendBuf};
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

    /// [`Engine::board_now`] for a rooted collective, with `root` when it names a rank.
    #[inline]
    fn rooted_now(&mut self, comm: CommId, bytes: usize, root: i32) -> Option<(Now<'_>, usize)> {
        let now = self.board_now(comm, bytes)?;
        let root = usize::try_from(root).ok().filter(|&r| r < now.n)?;
        Some((now, root))
    }

    /// How many times an exchange polls for the others before the general wait takes over:
    /// [`QUICK_POLLS`], or less when this rank's spinning budget is smaller (a shared core);
    /// `None` when the node has more ranks than cores: there the others are seldom there
    /// already, and a rank that publishes and polls before waiting the general way made
    /// exchanges of 4 ranks on 2 cores slower (3.3 -> 4.7 µs per 4-byte allreduce).
    #[inline]
    fn quick_polls(&self) -> Option<u32> {
        let crowded = self.tuning.coll.oversubscribed;
        (!crowded).then(|| self.spin.polls().min(QUICK_POLLS))
    }

    /// Ends a call that ran here: rank `me` acknowledges epoch `e`, now the board's last. The
    /// spinning budget is left alone, as after any wait that found its condition at once
    /// ([`crate::spin`]).
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
        let Some((Now { me, board, e, .. }, root)) = self.rooted_now(comm, len, root) else {
            return false;
        };
        if me == root {
            if !publish_now(board, (me, e), buf.as_slice()) {
                return false;
            }
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
        let coll = self.tuning.coll;
        let Some((
            Now {
                me,
                n,
                board,
                e,
                scratch,
            },
            root,
        )) = self.rooted_now(comm, len, root)
        else {
            return false;
        };
        if r.count >= n && coll.reduce_in_pieces(n, len) {
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
            if !publish_now(board, (me, e), own) {
                return false;
            }
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
            combine_kept(board, (n, e), (me, own), acc, combine);
            copy_bytes(out.slice(0, len).as_mut_slice(), acc);
        }
        self.ran_at_once(comm, me, e);
        true
    }

    /// `MPI_Allreduce` of `len` bytes: when this rank's slot is free, publishes its operand and
    /// combines every rank's as soon as they are all there (after a short spin, the general
    /// wait takes over from the same point); `None` when it did not start (nothing changed).
    #[inline]
    pub(super) fn allreduce_at_once(
        &mut self,
        comm: CommId,
        r: &DenseReduce,
        len: usize,
        combine: Option<Combine>,
    ) -> Option<Result<()>> {
        let (combine, out) = (combine?, r.recv.as_ref()?);
        let polls = self.quick_polls()?;
        let coll = self.tuning.coll;
        let Now {
            me,
            n,
            board,
            e,
            scratch,
        } = self.board_now(comm, len)?;
        if r.count >= n && coll.reduce_in_pieces(n, len) {
            return None;
        }
        let own = r.send.as_ref().map_or(out.as_slice(), SendBuf::as_slice);
        if own.len() != len || out.len() != len {
            return None;
        }
        if !publish_now(board, (me, e), own) {
            return None;
        }
        if !poll_all(board, (n, e), len, polls) {
            let op = Reducer::Predefined(r.op);
            let o = Operands::resolved((len, r.count), false, (&op, Some(r.basic)), Some(combine));
            return Some(self.finish(comm, me, |en, run| {
                let mut acc = run.take_scratch();
                acc.resize(len, 0);
                let outcome = en.combine_slots(run, (&mut acc[..len], 0), None, &o);
                if outcome.is_ok() {
                    copy_bytes(out.slice(0, len).as_mut_slice(), &acc[..len]);
                }
                run.give_scratch(acc);
                outcome
            }));
        }
        scratch.resize(len, 0);
        let acc = &mut scratch[..len];
        combine_published(board, (n, e), acc, combine);
        copy_bytes(out.slice(0, len).as_mut_slice(), acc);
        self.ran_at_once(comm, me, e);
        Some(Ok(()))
    }

    /// `MPI_Allgather` of `len`-byte blocks: this rank's from `send` (`None`: in place, its
    /// block of `recv`), every rank's into its block of `recv`; publishes and reads as
    /// [`Engine::allreduce_at_once`] does.
    #[inline]
    pub(super) fn allgather_at_once(
        &mut self,
        comm: CommId,
        send: Option<&SendBuf>,
        recv: &RecvBuf,
        len: usize,
    ) -> Option<Result<()>> {
        let block = |r: usize| recv.slice(r * len, len);
        let own = send.is_some();
        self.exchange_at_once(
            comm,
            len,
            |me| send.copied().unwrap_or_else(|| block(me).as_send()),
            |board, (me, e), r| {
                if r != me || own {
                    board.inspect(r, e, len, copy_out(&mut block(r)));
                }
            },
            |en, run| {
                en.allgather_take(run, false, |run, r| {
                    run.read_exactly(r, len, copy_out(&mut block(r)))
                })
            },
        )
    }

    /// `MPI_Alltoall` of `block`-byte blocks: `send` (`None`: in place, `recv`) and `recv` have
    /// one block per rank; publishes and reads as [`Engine::allreduce_at_once`] does.
    #[inline]
    pub(super) fn alltoall_at_once(
        &mut self,
        comm: CommId,
        send: Option<&SendBuf>,
        recv: &RecvBuf,
        block: usize,
    ) -> Option<Result<()>> {
        let all = block.checked_mul(self.comms.find(comm)?.size())?;
        let put = |r: usize, bytes: &[u8]| copy_out(&mut recv.slice(r * block, block))(bytes);
        self.exchange_at_once(
            comm,
            all,
            |_| send.copied().unwrap_or_else(|| recv.as_send()),
            |board, (me, e), r| {
                board.inspect(r, e, all, |bytes| {
                    put(r, &bytes[me * block..(me + 1) * block])
                });
            },
            |en, run| en.alltoall_take(run, block, put),
        )
    }

    /// An exchange of `all` bytes per rank: publishes `outgoing(me)` when this rank's slot is
    /// free (`None` when not: nothing changed), takes this rank's own part (`take(board, (me,
    /// e), me)`), polls for the others and takes theirs, from the next rank round; or, when they
    /// are not all there by then, finishes the general way with `rest`.
    fn exchange_at_once(
        &mut self,
        comm: CommId,
        all: usize,
        outgoing: impl FnOnce(usize) -> SendBuf,
        mut take: impl FnMut(&Board, (usize, u32), usize),
        rest: impl FnOnce(&mut Self, &mut BoardRun) -> Result<()>,
    ) -> Option<Result<()>> {
        let polls = self.quick_polls()?;
        let Now {
            me, n, board, e, ..
        } = self.board_now(comm, all)?;
        if !publish_now(board, (me, e), outgoing(me).as_slice()) {
            return None;
        }
        take(board, (me, e), me);
        if !poll_all(board, (n, e), all, polls) {
            return Some(self.finish(comm, me, rest));
        }
        for r in others(me, n) {
            take(board, (me, e), r);
        }
        self.ran_at_once(comm, me, e);
        Some(Ok(()))
    }

    /// `MPI_Barrier`: posts this rank's arrival and returns as soon as every rank's is there
    /// (after a short spin, the general wait takes over from the same point).
    #[inline]
    pub(super) fn barrier_at_once(&mut self, comm: CommId) -> Option<Result<()>> {
        let polls = self.quick_polls()?;
        let Now {
            me, n, board, e, ..
        } = self.board_now(comm, 0)?;
        board.post(me, e);
        if !poll(polls, || (0..n).all(|p| board.has_posted(p, e))) {
            let all = |run: &BoardRun| (0..n).all(|p| run.board.has_posted(p, run.epoch()));
            return Some(self.finish(comm, me, |en, run| en.await_board(|| all(run))));
        }
        self.ran_at_once(comm, me, e);
        Some(Ok(()))
    }

    /// Finishes, the general way (waiting with progress, yielding the CPU), a collective whose
    /// own part ran here for the board's next epoch.
    #[cold]
    fn finish(
        &mut self,
        comm: CommId,
        me: usize,
        rest: impl FnOnce(&mut Self, &mut BoardRun) -> Result<()>,
    ) -> Result<()> {
        let Some(run) = self.begin_run(comm, me) else {
            unreachable!("the board was usable a moment ago");
        };
        let finished = self.on_board(comm, run, rest);
        finished.unwrap_or_else(|| unreachable!("on_board always runs"))
    }
}

/// Most polls for the other ranks before a collective that published its part waits the
/// general way (engine progress, yielding the CPU).
const QUICK_POLLS: u32 = 64;

/// Publishes `bytes` in rank `me`'s slot of epoch `e` when the slot is free; whether it was
/// (nothing changed when not).
fn publish_now(board: &Board, (me, e): (usize, u32), bytes: &[u8]) -> bool {
    if !free(board, me, e) {
        return false;
    }
    board.fill(me, e, bytes.len(), |slot| copy_bytes(slot, bytes));
    board.publish(me, e, bytes.len());
    true
}

/// Polls up to `polls` times for every rank's publication of `want` bytes for epoch `e`;
/// whether they all came.
fn poll_all(board: &Board, (n, e): (usize, u32), want: usize, polls: u32) -> bool {
    poll(polls, || {
        (0..n).all(|p| board.has_published(p, e) && board.published_len(p, e) == want)
    })
}

/// Polls `ready` up to `polls` times; whether it came to hold.
#[inline]
fn poll(polls: u32, ready: impl Fn() -> bool) -> bool {
    for _ in 0..polls {
        if ready() {
            return true;
        }
        std::hint::spin_loop();
    }
    ready()
}

/// The other ranks from `me + 1` round to `me - 1` (readers that start at different slots do
/// not all read one slot at once).
fn others(me: usize, n: usize) -> impl Iterator<Item = usize> {
    (me + 1..n).chain(0..me)
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

/// `acc = x0 op (x1 op (… op x[n-1]))` over every rank's operand published for epoch `e` (the
/// general path's order, so every rank's result is the same to the bit).
fn combine_published(board: &Board, (n, e): (usize, u32), acc: &mut [u8], combine: Combine) {
    for p in (0..n).rev() {
        board.inspect(p, e, acc.len(), |x| fold(acc, x, p == n - 1, combine));
    }
}

/// [`combine_published`] where rank `me`'s operand is `own`, not on the board (a reduce's
/// root keeps its own).
fn combine_kept(
    board: &Board,
    (n, e): (usize, u32),
    (me, own): (usize, &[u8]),
    acc: &mut [u8],
    combine: Combine,
) {
    for p in (0..n).rev() {
        match p == me {
            true => fold(acc, own, p == n - 1, combine),
            false => board.inspect(p, e, acc.len(), |x| fold(acc, x, p == n - 1, combine)),
        }
    }
}

/// One step of a combination: the first operand (`last`, the highest rank) is copied, the
/// others combined into `acc`.
#[inline]
fn fold(acc: &mut [u8], x: &[u8], last: bool, combine: Combine) {
    match last {
        true => copy_bytes(acc, x),
        false => combine(acc, x),
    }
}
