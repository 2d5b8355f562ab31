//! Shared-memory collectives: blocking collectives of small messages on a communicator whose
//! ranks all share this node's memory run on a [`Board`] instead of point-to-point schedules
//! (the reflective-memory collectives of `shared/reference/seed000c.md` P2).
//!
//! - barrier: flat all-flags: every rank posts the epoch, then waits for everyone's post;
//! - broadcast: the root packs its data into its slot once and posts; every other rank unpacks
//!   straight out of the root's slot;
//! - allreduce / reduce: simultaneous broadcast: every rank packs its input into its slot and
//!   posts; readers (everyone, or the root) combine all slots in rank order, `x0 op (x1 op …)`,
//!   the same expression on every rank, so results are bit-identical and non-commutative
//!   operations get their order;
//! - allgather: every rank publishes its block; everyone unpacks the others' blocks, starting
//!   with rank + 1 so that ranks do not all read the same slot at once (the paper's staggering).
//!
//! A rank overwrites a slot only after everyone consumed the epoch that last used it (the
//! acknowledgement); with one slot per epoch in a ring of up to 64 ([`Board::slots`]), a root of
//! back-to-back broadcasts runs that many collectives ahead of its readers, as a point-to-point
//! root runs ahead on eager sends. Readers wait on the epoch word in the first line of the
//! writer's slot, which small data share. Having combined a slot, a reducing rank prefetches
//! the same writer's next one: the writers of a reduce run ahead, so in back-to-back reductions
//! the next call's cache-line transfers overlap the rest of this one (2-rank reduce of one int
//! 0.17-0.27 -> 0.13-0.25 µs in interleaved runs). It prefetches every line an operand of this
//! call's size takes, up to four: 57 bytes and more spill past the flag's line, and that second
//! transfer otherwise starts only once the flag was seen (2-rank reduce of 16 ints, best of 8
//! interleaved rounds: 0.150 -> 0.118 µs, 2026-11-27). In broadcasts, where the reader often catches
//! up with the root, the prefetch fetched lines before they were written and doubled the time on
//! this VM at times, so readers of broadcasts do not prefetch). While waiting, a rank keeps the
//! engine's progress running, so point-to-point traffic and nonblocking collectives still
//! advance. The board of a communicator is created at its first eligible collective: rank 0 creates the file, everyone maps it, then it is unlinked,
//! so nothing is left in `/dev/shm` even if the job dies; all ranks agree (with a point-to-point
//! exchange) on whether it worked, and fall back to schedules together when it did not.

use super::reduce::predefined_basic;
use super::spec::{Coll, RecvData, Reducer, SendData};
use crate::comm::CommId;
use crate::datatype::{typed, Basic};
use crate::engine::Engine;
use crate::error::{ErrorClass, MpiError, Result};
use reflex_base::copy::copy_bytes;
use reflex_base::transport::Transport;
use reflex_shm::board::{Board, SLOT_DATA};
use std::sync::Arc;

/// The board of one communicator.
#[derive(Debug)]
pub(crate) enum CommBoard {
    /// Not usable (not all on one node, creation failed, or being set up).
    Off,
    /// Ready; `epoch` numbers the last collective run on it; `scratch` is the accumulator of
    /// reductions, kept between calls; `direct`: every rank may read the others' memory, so
    /// large collectives run single-copy ([`super::direct`]).
    On {
        board: Arc<Board>,
        epoch: u32,
        scratch: Vec<u8>,
        direct: bool,
    },
}

/// Empty polls of a board flag between two rounds of engine progress.
const POLLS_PER_PROGRESS: u32 = 8;

/// Bytes this rank publishes in `coll`, when it fits a slot (`None`: not a board collective).
fn board_bytes(coll: &Coll) -> Option<usize> {
    let fits = |n: usize| (n <= SLOT_DATA).then_some(n);
    let input = |send: &Option<SendData>, recv: Option<&RecvData>| match (send, recv) {
        (Some(s), _) => s.packed_len().ok(),
        (None, Some(r)) => r.packed_len().ok(),
        (None, None) => None,
    };
    match coll {
        Coll::Barrier => Some(0),
        Coll::Bcast { data, .. } => fits(data.packed_len().ok()?),
        Coll::Reduce { send, recv, .. } => fits(input(send, recv.as_ref())?),
        Coll::Allreduce { send, recv, .. } => fits(input(send, Some(recv))?),
        Coll::Allgather { recv, .. } => {
            let mut largest = 0;
            for block in recv {
                largest = largest.max(block.packed_len().ok()?);
            }
            fits(largest)
        }
        Coll::Alltoall {
            recv,
            regular: true,
            ..
        } => fits(recv.first()?.packed_len().ok()?.checked_mul(recv.len())?),
        _ => None,
    }
}

impl<T: Transport> Engine<T> {
    /// Lets blocking collectives of communicators within this node use boards named after
    /// `base` (the node's shared segment).
    pub fn enable_boards(&mut self, base: String) {
        self.board_base = Some(base);
    }

    /// Runs `coll` on `comm`'s board when it is a board collective and the board is usable;
    /// otherwise hands `coll` back for a schedule.
    pub(crate) fn try_board(&mut self, comm: CommId, coll: Coll) -> Result<Option<Coll>> {
        let c = self.comms.get(comm)?;
        let (inter, me, n) = (c.is_inter(), c.rank as usize, c.size());
        if inter || self.board_base.is_none() {
            return Ok(Some(coll));
        }
        if board_bytes(&coll).is_none() {
            return match self.try_stream(comm, (me, n), coll)? {
                Some(coll) => self.try_direct(comm, me, coll),
                None => Ok(None),
            };
        }
        let Some(mut run) = self.board_of(comm, me)? else {
            return Ok(Some(coll));
        };
        let outcome = match coll {
            Coll::Barrier => self.board_barrier(&run),
            Coll::Bcast { data, root } => self.board_bcast(&run, data, root),
            Coll::Reduce {
                send,
                recv,
                op,
                root,
            } => self.board_reduce(&mut run, send, recv, op, Some(root)),
            Coll::Allreduce { send, recv, op } => {
                self.board_reduce(&mut run, send, Some(recv), op, None)
            }
            Coll::Allgather { send, recv } => self.board_allgather(&run, send, recv),
            Coll::Alltoall { send, recv, .. } => self.board_alltoall(&run, send, recv),
            _ => unreachable!("board_bytes admits board collectives only"),
        };
        self.end_run(comm, run);
        outcome.map(|()| None)
    }

    /// Ends a collective on `comm`'s board: this rank's reads are acknowledged (even after an
    /// error: the others must not wait for them), the accumulator goes back and the board's
    /// epoch becomes the run's last (a streamed collective takes several).
    pub(super) fn end_run(&mut self, comm: CommId, run: BoardRun) {
        run.board.consume(run.me, run.epoch);
        if let Some(CommBoard::On { scratch, epoch, .. }) = self.comms.board_mut(comm) {
            *scratch = run.scratch;
            *epoch = run.epoch;
        }
    }

    /// Whether `comm` has a board (set up now if it had none) on which large collectives may
    /// run single-copy.
    pub(super) fn board_direct(&mut self, comm: CommId) -> Result<bool> {
        if self.comms.board_mut(comm).is_none() {
            self.set_up_board(comm)?;
        }
        let board = self.comms.board_mut(comm);
        Ok(matches!(board, Some(CommBoard::On { direct: true, .. })))
    }

    /// The board of `comm` with the epoch of the collective rank `me` is about to run on it and
    /// the reduction accumulator (lent), setting the board up at the first call.
    pub(super) fn board_of(&mut self, comm: CommId, me: usize) -> Result<Option<BoardRun>> {
        if self.comms.board_mut(comm).is_none() {
            self.set_up_board(comm)?;
        }
        Ok(self.begin_run(comm, me))
    }

    /// The next collective on `comm`'s board, when the board is set up and usable.
    pub(super) fn begin_run(&mut self, comm: CommId, me: usize) -> Option<BoardRun> {
        match self.comms.board_mut(comm) {
            Some(CommBoard::On {
                board,
                epoch,
                scratch,
                ..
            }) => {
                *epoch = epoch.wrapping_add(1);
                Some(BoardRun {
                    board: board.clone(),
                    me,
                    epoch: *epoch,
                    scratch: std::mem::take(scratch),
                })
            }
            _ => None,
        }
    }

    /// Creates (rank 0) and maps (everyone) the board of `comm`; every rank ends with the same
    /// outcome.
    fn set_up_board(&mut self, comm: CommId) -> Result<()> {
        let c = self.comms.get(comm)?;
        let (me, n, ctx) = (c.rank as usize, c.size(), c.ctx);
        // Processes of another job share no segment with this one (and every member sees the
        // same: each sees the others' job as foreign).
        let foreign = c
            .group
            .members
            .iter()
            .any(|&m| self.procs.is_foreign(m as usize));
        *self.comms.board_mut(comm) = Some(CommBoard::Off);
        if n < 2 || foreign {
            return Ok(());
        }
        let name = format!("{}.c{ctx}", self.board_base.clone().unwrap_or_default());
        let created = (me == 0).then(|| Board::create(&name, n));
        let leader_ok = created.as_ref().map(|b| b.is_ok());
        let mut hello = vec![u8::from(leader_ok.unwrap_or(false))];
        hello.extend_from_slice(&std::process::id().to_le_bytes());
        let said = self.allgather_bytes(comm, hello)?;
        let mine = match created {
            Some(made) => made.ok(),
            None if said[0][0] == 1 => Board::open(&name, n).ok(),
            None => None,
        };
        let reads = self.core.single_copy && reads_peer(&said[(me + 1) % n]);
        let able = u8::from(mine.is_some()) | u8::from(reads) << 1;
        let all = self.allgather_bytes(comm, vec![able])?;
        if me == 0 && leader_ok == Some(true) {
            let _ = Board::unlink(&name);
        }
        if let (Some(board), true) = (mine, all.iter().all(|v| v[0] & 1 == 1)) {
            let on = CommBoard::On {
                board: Arc::new(board),
                epoch: 0,
                scratch: Vec::new(),
                direct: all.iter().all(|v| v[0] & 2 == 2),
            };
            *self.comms.board_mut(comm) = Some(on);
        }
        Ok(())
    }

    /// Polls `ready` until it holds, running the engine's progress every few polls and giving
    /// the CPU away after the spinning budget (oversubscribed ranks need the core back; the
    /// budget adapts as [`crate::spin`] says).
    pub(crate) fn await_board(&mut self, ready: impl Fn() -> bool) -> Result<()> {
        if ready() {
            // Nothing waited for: no lesson for the spinning budget.
            return Ok(());
        }
        let mut polls = 0u32;
        let mut shared = false;
        while !ready() {
            polls = polls.saturating_add(1);
            if !polls.is_multiple_of(POLLS_PER_PROGRESS) {
                std::hint::spin_loop();
                continue;
            }
            if self.progress() > 0 {
                polls = 0;
            }
            self.check_fatal()?;
            if polls > self.spin.polls() {
                shared |= crate::spin::SpinBudget::yield_cpu();
            }
        }
        self.spin.ended(shared);
        Ok(())
    }

    /// Polls `ready` as [`Engine::await_board`] does, but only for the spinning budget;
    /// whether it came to hold (the caller has something else to do if not).
    pub(super) fn spin_on_board(&mut self, ready: impl Fn() -> bool) -> Result<bool> {
        for polls in 1..=self.spin.polls() {
            if ready() {
                return Ok(true);
            }
            if polls.is_multiple_of(POLLS_PER_PROGRESS) {
                self.progress();
                self.check_fatal()?;
            } else {
                std::hint::spin_loop();
            }
        }
        Ok(ready())
    }

    pub(super) fn board_barrier(&mut self, run: &BoardRun) -> Result<()> {
        run.board.post(run.me, run.epoch);
        self.await_board(|| run.everyone_posted())
    }

    fn board_bcast(&mut self, run: &BoardRun, mut data: RecvData, root: i32) -> Result<()> {
        let root = super::spec::check_root(root, run.board.nranks())?;
        let len = data.packed_len()?;
        let send = data.as_send();
        self.bcast_on(
            run,
            root,
            len,
            |slot| typed::pack(&send.dt, send.count, &send.buf, 0, slot),
            |bytes| {
                typed::unpack(&data.dt, data.count, &mut data.buf, 0, bytes);
            },
        )
    }

    /// Broadcast of `len` bytes from `root`: the root packs them into its slot, the others
    /// unpack them from there.
    pub(super) fn bcast_on(
        &mut self,
        run: &BoardRun,
        root: usize,
        len: usize,
        pack: impl FnOnce(&mut [u8]) -> usize,
        unpack: impl FnOnce(&[u8]),
    ) -> Result<()> {
        if run.me == root {
            return self.publish(run, len, pack);
        }
        self.await_board(|| run.board.has_published(root, run.epoch))?;
        run.read_exactly(root, len, unpack)
    }

    /// Allreduce (`root = None`) or reduce to `root`.
    fn board_reduce(
        &mut self,
        run: &mut BoardRun,
        send: Option<SendData>,
        recv: Option<RecvData>,
        op: Reducer,
        root: Option<i32>,
    ) -> Result<()> {
        let args = ReduceArgs::check(run, send, recv, &op, root)?;
        let input = match (args.send, &args.out) {
            (Some(s), _) => s,
            (None, out) => out
                .as_ref()
                .map(RecvData::as_send)
                .ok_or_else(no_root_buffer)?,
        };
        let shape = (input.packed_len()?, input.count);
        let operands = Operands::new(shape, args.root.is_some(), &op, args.basic);
        self.reduce_on(
            run,
            operands,
            |slot| typed::pack(&input.dt, input.count, &input.buf, 0, slot),
            args.out.map(|mut o| {
                move |acc: &[u8]| {
                    typed::unpack(&o.dt, o.count, &mut o.buf, 0, acc);
                }
            }),
        )
    }

    /// Every rank publishes its operand (`pack`); the readers (every rank of an allreduce, the
    /// root of a reduce: those with an `out`) combine all of them and hand the result to `out`.
    pub(super) fn reduce_on(
        &mut self,
        run: &mut BoardRun,
        operands: Operands<'_>,
        pack: impl FnOnce(&mut [u8]) -> usize,
        out: Option<impl FnOnce(&[u8])>,
    ) -> Result<()> {
        let len = operands.len;
        if self.splits(run, &operands) {
            return self.reduce_split(run, &operands, pack, out);
        }
        let Some(out) = out else {
            return self.publish(run, len, pack);
        };
        let mut scratch = std::mem::take(&mut run.scratch);
        scratch.resize(2 * len, 0);
        let (acc, own) = scratch.split_at_mut(len);
        // The root of a reduce keeps its operand: nobody else reads it.
        let own = match operands.to_root {
            true => {
                let packed = pack(own);
                Some(&own[..packed])
            }
            false => self.publish(run, len, pack).map(|()| None)?,
        };
        let combined = self.combine_slots(run, (acc, 0), own, &operands);
        if combined.is_ok() {
            out(acc);
        }
        run.scratch = scratch;
        combined
    }

    /// Waits until this rank's slot is free, fills it with `pack` and posts `len` bytes.
    pub(super) fn publish(
        &mut self,
        run: &BoardRun,
        len: usize,
        pack: impl FnOnce(&mut [u8]) -> usize,
    ) -> Result<()> {
        self.await_board(|| run.slot_free())?;
        run.board.fill(run.me, run.epoch, len, pack);
        run.board.publish(run.me, run.epoch, len);
        Ok(())
    }

    /// `acc = x0 op (x1 op (… op x[n-1]))` over bytes `at..at + acc.len()` of every rank's
    /// operand, in its slot (this rank's is `own` when it did not publish it).
    pub(super) fn combine_slots(
        &mut self,
        run: &BoardRun,
        (acc, at): (&mut [u8], usize),
        own: Option<&[u8]>,
        o: &Operands<'_>,
    ) -> Result<()> {
        let last = run.board.nranks() - 1;
        let span = at..at + acc.len();
        for r in (0..=last).rev() {
            let mut fold = |x: &[u8]| {
                let x = &x[span.clone()];
                if r < last {
                    return o.combine(acc, x);
                }
                copy_bytes(acc, x);
                Ok(())
            };
            if let (true, Some(x)) = (r == run.me, own) {
                check_len(r, x.len(), o.len)?;
                fold(x)?;
                continue;
            }
            self.await_board(|| run.board.has_published(r, run.epoch))?;
            run.read_exactly(r, o.len, fold)??;
            run.board
                .prefetch(r, run.epoch.wrapping_add(1), at + acc.len());
        }
        Ok(())
    }

    fn board_allgather(
        &mut self,
        run: &BoardRun,
        send: Option<SendData>,
        mut recv: Vec<RecvData>,
    ) -> Result<()> {
        let n = run.board.nranks();
        super::spec::check_blocks(&recv, n, "the allgather receive buffer")?;
        let (mine, copy_own) = match send {
            Some(s) => (s, true),
            None => (recv[run.me].as_send(), false),
        };
        let len = mine.packed_len()?;
        if len > recv[run.me].packed_len()? {
            return Err(MpiError::new(
                ErrorClass::Truncate,
                "allgather block does not fit the receive block",
            ));
        }
        let pack = |slot: &mut [u8]| typed::pack(&mine.dt, mine.count, &mine.buf, 0, slot);
        // The own block comes back out of the slot it was just packed into.
        self.allgather_on(run, len, pack, copy_own, |run, r| {
            let block = &mut recv[r];
            let want = block.packed_len()?;
            run.read_exactly(r, want, |bytes| {
                typed::unpack(&block.dt, block.count, &mut block.buf, 0, bytes);
            })
        })
    }

    /// Every rank publishes `len` bytes (`pack`); then `take(run, r)` reads rank r's block,
    /// once published, for every other rank r (and this one when `own`), starting with the
    /// next rank so that ranks do not all read the same slot at once.
    pub(super) fn allgather_on(
        &mut self,
        run: &BoardRun,
        len: usize,
        pack: impl FnOnce(&mut [u8]) -> usize,
        own: bool,
        take: impl FnMut(&BoardRun, usize) -> Result<()>,
    ) -> Result<()> {
        self.publish(run, len, pack)?;
        self.allgather_take(run, own, take)
    }

    /// The reading half of [`Engine::allgather_on`], once this rank's block is published.
    pub(super) fn allgather_take(
        &mut self,
        run: &BoardRun,
        own: bool,
        mut take: impl FnMut(&BoardRun, usize) -> Result<()>,
    ) -> Result<()> {
        for r in run.ranks_from_me().skip(usize::from(!own)) {
            self.await_board(|| run.board.has_published(r, run.epoch))?;
            take(run, r)?;
        }
        Ok(())
    }
}

impl<T: Transport> Engine<T> {
    /// Regular alltoall: every rank publishes its n blocks one after the other; rank r takes
    /// block r of every slot (in place: what goes out is packed before anything comes in).
    fn board_alltoall(
        &mut self,
        run: &BoardRun,
        send: Option<Vec<SendData>>,
        mut recv: Vec<RecvData>,
    ) -> Result<()> {
        let n = run.board.nranks();
        super::spec::check_blocks(&recv, n, "the alltoall receive buffer")?;
        let outgoing = match send {
            Some(blocks) => blocks,
            None => recv.iter().map(RecvData::as_send).collect(),
        };
        super::spec::check_blocks(&outgoing, n, "the alltoall send buffer")?;
        let block = recv[0].packed_len()?;
        let pack = |slot: &mut [u8]| {
            let mut at = 0;
            for b in &outgoing {
                at += typed::pack(&b.dt, b.count, &b.buf, 0, &mut slot[at..]);
            }
            at
        };
        self.alltoall_on(run, block, pack, |r, mine| {
            let into = &mut recv[r];
            typed::unpack(&into.dt, into.count, &mut into.buf, 0, mine);
        })
    }

    /// Every rank publishes its n blocks of `block` bytes (`pack`, which returns how many
    /// bytes it packed); then `take(r, bytes)` gets block `me` of rank r's slot, for every r.
    pub(super) fn alltoall_on(
        &mut self,
        run: &BoardRun,
        block: usize,
        pack: impl FnOnce(&mut [u8]) -> usize,
        take: impl FnMut(usize, &[u8]),
    ) -> Result<()> {
        let n = run.board.nranks();
        self.await_board(|| run.slot_free())?;
        let packed = run.board.fill(run.me, run.epoch, n * block, pack);
        run.board.publish(run.me, run.epoch, packed);
        if packed != n * block {
            return Err(MpiError::new(
                ErrorClass::Truncate,
                "alltoall blocks sent and received differ in size",
            ));
        }
        self.alltoall_take(run, block, take)
    }

    /// The reading half of [`Engine::alltoall_on`], once this rank's blocks are published.
    pub(super) fn alltoall_take(
        &mut self,
        run: &BoardRun,
        block: usize,
        mut take: impl FnMut(usize, &[u8]),
    ) -> Result<()> {
        let n = run.board.nranks();
        for r in run.ranks_from_me() {
            self.await_board(|| run.board.has_published(r, run.epoch))?;
            run.read_exactly(r, n * block, |bytes| {
                take(r, &bytes[run.me * block..(run.me + 1) * block]);
            })?;
        }
        Ok(())
    }
}

/// The operands of a board reduction: their packed length, who reads them, element count, the
/// operation and, for a predefined one, the basic type it combines.
pub(super) struct Operands<'a> {
    pub(super) len: usize,
    /// A reduce: only the root reads the operands.
    pub(super) to_root: bool,
    pub(super) count: usize,
    pub(super) op: &'a Reducer,
    pub(super) basic: Option<Basic>,
    /// The loop of a predefined operation on its type, when it has one ([`crate::op::combiner`]).
    combine: Option<crate::op::Combine>,
}

impl<'a> Operands<'a> {
    pub(super) fn new(
        (len, count): (usize, usize),
        to_root: bool,
        op: &'a Reducer,
        basic: Option<Basic>,
    ) -> Self {
        let combine = match (op, &basic) {
            (Reducer::Predefined(p), Some(b)) => crate::op::combiner(*p, b),
            _ => None,
        };
        Self::resolved((len, count), to_root, (op, basic), combine)
    }

    /// [`Operands::new`] with the operation's loop already found (`combine`: what
    /// [`crate::op::combiner`] gave for it).
    #[inline]
    pub(super) fn resolved(
        (len, count): (usize, usize),
        to_root: bool,
        (op, basic): (&'a Reducer, Option<Basic>),
        combine: Option<crate::op::Combine>,
    ) -> Self {
        Operands {
            len,
            to_root,
            count,
            op,
            basic,
            combine,
        }
    }

    /// `acc = x op acc` on whole elements (a part of the operands, or all of them).
    #[inline]
    pub(super) fn combine(&self, acc: &mut [u8], x: &[u8]) -> Result<()> {
        if let Some(combine) = self.combine {
            combine(acc, x);
            return Ok(());
        }
        match (self.op, self.basic) {
            (Reducer::Predefined(p), Some(b)) => crate::op::apply_packed(*p, &b, acc, x),
            (Reducer::User(f), _) => f.reduce(x, acc, acc.len() / self.unit()),
            (Reducer::Predefined(_), None) => Ok(()),
        }
    }

    /// The same operands restricted to `len` bytes (whole elements): one piece of a streamed
    /// reduction.
    pub(super) fn piece(&self, len: usize) -> Operands<'a> {
        Operands {
            len,
            count: len / self.unit(),
            ..*self
        }
    }

    /// Packed bytes per element.
    pub(super) fn unit(&self) -> usize {
        (self.len / self.count.max(1)).max(1)
    }
}

/// `MPI_ERR_TRUNCATE` unless rank `rank`'s operand has this rank's `len` bytes.
#[inline]
fn check_len(rank: usize, have: usize, len: usize) -> Result<()> {
    match have == len {
        true => Ok(()),
        false => Err(lengths_differ(rank, have, len)),
    }
}

#[cold]
fn lengths_differ(rank: usize, have: usize, len: usize) -> MpiError {
    MpiError::new(
        ErrorClass::Truncate,
        format!("collective arguments differ across ranks: rank {rank} contributed {have} bytes, this rank {len}"),
    )
}

/// Whether this process may read the memory of the process whose pid ends `hello` (CMA is
/// allowed by the kernel's ptrace policy).
fn reads_peer(hello: &[u8]) -> bool {
    let pid = hello.get(1..5).and_then(|b| b.try_into().ok());
    pid.is_some_and(|b| reflex_shm::cma::probe(u32::from_le_bytes(b)))
}

/// The arguments of a reduction, checked as every board reduction needs them.
pub(super) struct ReduceArgs {
    /// The root (`None`: an allreduce).
    pub(super) root: Option<usize>,
    /// This rank's operand; `None` in place (it is then in `out`).
    pub(super) send: Option<SendData>,
    /// Where this rank's result goes (every rank of an allreduce, the root of a reduce).
    pub(super) out: Option<RecvData>,
    /// The operand's element count.
    pub(super) count: usize,
    /// The basic type a predefined operation combines.
    pub(super) basic: Option<Basic>,
}

impl ReduceArgs {
    pub(super) fn check(
        run: &BoardRun,
        send: Option<SendData>,
        recv: Option<RecvData>,
        op: &Reducer,
        root: Option<i32>,
    ) -> Result<Self> {
        let root = root
            .map(|r| super::spec::check_root(r, run.board.nranks()))
            .transpose()?;
        let reads = root.is_none_or(|r| r == run.me);
        let out = recv.filter(|_| reads);
        let (count, dt) = match (&send, &out) {
            (Some(s), _) => (s.count, s.dt.clone()),
            (None, Some(r)) => (r.count, r.dt.clone()),
            (None, None) => {
                return Err(MpiError::new(
                    ErrorClass::Buffer,
                    "MPI_IN_PLACE is only valid at the root of a reduction",
                ))
            }
        };
        if reads && out.is_none() {
            return Err(no_root_buffer());
        }
        let basic = match op {
            Reducer::Predefined(p) => Some(predefined_basic(*p, &dt)?),
            Reducer::User(_) => None,
        };
        Ok(Self {
            root,
            send,
            out,
            count,
            basic,
        })
    }
}

fn no_root_buffer() -> MpiError {
    MpiError::new(ErrorClass::Buffer, "the root has no receive buffer")
}

/// One collective on a board: this rank, the collective's epoch and the reduction accumulator.
pub(super) struct BoardRun {
    pub(super) board: Arc<Board>,
    pub(super) me: usize,
    epoch: u32,
    scratch: Vec<u8>,
}

impl BoardRun {
    /// Runs `f` on what `rank` published, which must be exactly the `len` bytes this rank
    /// expects (the type signatures of a collective's ranks match, MPI-3.1 §5.1).
    pub(super) fn read_exactly<R>(
        &self,
        rank: usize,
        len: usize,
        f: impl FnOnce(&[u8]) -> R,
    ) -> Result<R> {
        check_len(rank, self.published_len(rank), len)?;
        Ok(self.board.inspect(rank, self.epoch, len, f))
    }

    /// Every rank in turn, starting with this one: `me, me + 1, …, n - 1, 0, …, me - 1` (readers
    /// that start at different slots do not all read one slot at once; no division per step).
    pub(super) fn ranks_from_me(&self) -> impl Iterator<Item = usize> {
        (self.me..self.board.nranks()).chain(0..self.me)
    }

    /// The epoch of this collective (of its current piece, when streamed).
    pub(super) fn epoch(&self) -> u32 {
        self.epoch
    }

    /// Acknowledges this epoch and moves to the next: the next piece of a streamed collective
    /// (every rank takes the same number of epochs for one collective).
    pub(super) fn advance(&mut self) {
        self.board.consume(self.me, self.epoch);
        self.epoch = self.epoch.wrapping_add(1);
    }

    /// Lends the board's scratch buffer (give it back with [`BoardRun::give_scratch`]).
    pub(super) fn take_scratch(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.scratch)
    }

    pub(super) fn give_scratch(&mut self, scratch: Vec<u8>) {
        self.scratch = scratch;
    }

    fn published_len(&self, rank: usize) -> usize {
        self.board.published_len(rank, self.epoch)
    }

    fn everyone_posted(&self) -> bool {
        (0..self.board.nranks()).all(|r| self.board.has_posted(r, self.epoch))
    }

    /// Every other rank has read what this rank published the last time it used this epoch's
    /// slot.
    fn slot_free(&self) -> bool {
        self.board
            .all_consumed(self.me, self.epoch.wrapping_sub(self.board.slots() as u32))
    }
}
