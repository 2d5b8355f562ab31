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
//! writer's slot, which small data share. While waiting, a rank keeps the engine's progress running, so point-to-point
//! traffic and nonblocking collectives still advance. The board of a communicator is created at
//! its first eligible collective: rank 0 creates the file, everyone maps it, then it is unlinked,
//! so nothing is left in `/dev/shm` even if the job dies; all ranks agree (with a point-to-point
//! exchange) on whether it worked, and fall back to schedules together when it did not.

use super::reduce::predefined_basic;
use super::spec::{Coll, RecvData, Reducer, SendData};
use crate::comm::CommId;
use crate::datatype::{typed, Basic};
use crate::engine::Engine;
use crate::error::{ErrorClass, MpiError, Result};
use reflex_base::transport::Transport;
use reflex_shm::board::{Board, SLOT_DATA};
use std::sync::Arc;

/// The board of one communicator.
#[derive(Debug)]
pub(crate) enum CommBoard {
    /// Not usable (not all on one node, creation failed, or being set up).
    Off,
    /// Ready; `epoch` numbers the last collective run on it; `scratch` is the accumulator of
    /// reductions, kept between calls.
    On {
        board: Arc<Board>,
        epoch: u32,
        scratch: Vec<u8>,
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
        let (inter, me) = (c.is_inter(), c.rank as usize);
        if inter || self.board_base.is_none() || board_bytes(&coll).is_none() {
            return Ok(Some(coll));
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
        // Consumed even after an error: the others must not wait for this rank's reads.
        run.board.consume(run.me, run.epoch);
        if let Some(CommBoard::On { scratch, .. }) = self.comms.board_mut(comm) {
            *scratch = run.scratch;
        }
        outcome.map(|()| None)
    }

    /// The board of `comm` with the epoch of the collective rank `me` is about to run on it and
    /// the reduction accumulator (lent), setting the board up at the first call.
    fn board_of(&mut self, comm: CommId, me: usize) -> Result<Option<BoardRun>> {
        if self.comms.board_mut(comm).is_none() {
            self.set_up_board(comm)?;
        }
        match self.comms.board_mut(comm) {
            Some(CommBoard::On {
                board,
                epoch,
                scratch,
            }) => {
                *epoch = epoch.wrapping_add(1);
                Ok(Some(BoardRun {
                    board: board.clone(),
                    me,
                    epoch: *epoch,
                    scratch: std::mem::take(scratch),
                }))
            }
            _ => Ok(None),
        }
    }

    /// Creates (rank 0) and maps (everyone) the board of `comm`; every rank ends with the same
    /// outcome.
    fn set_up_board(&mut self, comm: CommId) -> Result<()> {
        let c = self.comms.get(comm)?;
        let (me, n, ctx) = (c.rank as usize, c.size(), c.ctx);
        *self.comms.board_mut(comm) = Some(CommBoard::Off);
        if n < 2 {
            return Ok(());
        }
        let name = format!("{}.c{ctx}", self.board_base.clone().unwrap_or_default());
        let created = (me == 0).then(|| Board::create(&name, n));
        let leader_ok = created.as_ref().map(|b| b.is_ok());
        let said = self.allgather_bytes(comm, vec![u8::from(leader_ok.unwrap_or(false))])?;
        let mine = match created {
            Some(made) => made.ok(),
            None if said[0] == [1] => Board::open(&name, n).ok(),
            None => None,
        };
        let all = self.allgather_bytes(comm, vec![u8::from(mine.is_some())])?;
        if me == 0 && leader_ok == Some(true) {
            let _ = Board::unlink(&name);
        }
        if let (Some(board), true) = (mine, all.iter().all(|v| v == &[1])) {
            let board = Arc::new(board);
            let on = CommBoard::On {
                board,
                epoch: 0,
                scratch: Vec::new(),
            };
            *self.comms.board_mut(comm) = Some(on);
        }
        Ok(())
    }

    /// Polls `ready` until it holds, running the engine's progress every few polls and giving
    /// the CPU away after the spinning budget (oversubscribed ranks need the core back).
    fn await_board(&mut self, ready: impl Fn() -> bool) -> Result<()> {
        let mut polls = 0u32;
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
            if polls > self.tuning.spin_polls {
                std::thread::yield_now();
            }
        }
        Ok(())
    }

    fn board_barrier(&mut self, run: &BoardRun) -> Result<()> {
        run.board.post(run.me, run.epoch);
        self.await_board(|| run.everyone_posted())
    }

    fn board_bcast(&mut self, run: &BoardRun, mut data: RecvData, root: i32) -> Result<()> {
        let root = super::spec::check_root(root, run.board.nranks())?;
        let len = data.packed_len()?;
        if run.me == root {
            return self.publish(run, &data.as_send(), len);
        }
        self.await_board(|| run.board.has_published(root, run.epoch))?;
        run.read(root, len, |bytes| {
            typed::unpack(&data.dt, data.count, &mut data.buf, 0, bytes);
        })
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
        let root = root
            .map(|r| super::spec::check_root(r, run.board.nranks()))
            .transpose()?;
        let reads = root.is_none_or(|r| r == run.me);
        let input = match (send, &recv) {
            (Some(s), _) => s,
            (None, Some(r)) if reads => r.as_send(),
            _ => {
                return Err(MpiError::new(
                    ErrorClass::Buffer,
                    "MPI_IN_PLACE is only valid at the root of a reduction",
                ))
            }
        };
        let basic = match &op {
            Reducer::Predefined(p) => Some(predefined_basic(*p, &input.dt)?),
            Reducer::User(_) => None,
        };
        let len = input.packed_len()?;
        self.publish(run, &input, len)?;
        if reads {
            let mut out = recv.ok_or_else(|| {
                MpiError::new(ErrorClass::Buffer, "the root has no receive buffer")
            })?;
            let mut acc = std::mem::take(&mut run.scratch);
            let combined = self.combine_slots(run, &mut acc, len, input.count, &op, basic);
            if combined.is_ok() {
                typed::unpack(&out.dt, out.count, &mut out.buf, 0, &acc);
            }
            run.scratch = acc;
            combined?;
        }
        Ok(())
    }

    /// Waits until this rank's slot is free, packs `data` into it and posts.
    fn publish(&mut self, run: &BoardRun, data: &SendData, len: usize) -> Result<()> {
        self.await_board(|| run.slot_free())?;
        run.board.fill(run.me, run.epoch, len, |slot| {
            typed::pack(&data.dt, data.count, &data.buf, 0, slot)
        });
        run.board.publish(run.me, run.epoch, len);
        Ok(())
    }

    /// `acc = x0 op (x1 op (… op x[n-1]))` over every rank's slot.
    fn combine_slots(
        &mut self,
        run: &BoardRun,
        acc: &mut Vec<u8>,
        len: usize,
        count: usize,
        op: &Reducer,
        basic: Option<Basic>,
    ) -> Result<()> {
        let last = run.board.nranks() - 1;
        self.await_board(|| run.board.has_published(last, run.epoch))?;
        run.read_exactly(last, len, |x| {
            acc.clear();
            acc.extend_from_slice(x);
        })?;
        for r in (0..last).rev() {
            self.await_board(|| run.board.has_published(r, run.epoch))?;
            run.read_exactly(r, len, |x| match (op, basic) {
                (Reducer::Predefined(p), Some(b)) => crate::op::apply_packed(*p, &b, acc, x),
                (Reducer::User(f), _) => f.reduce(x, acc, count),
                (Reducer::Predefined(_), None) => Ok(()),
            })??;
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
        self.publish(run, &mine, len)?;
        // The own block comes back out of the slot it was just packed into.
        let first = if copy_own { 0 } else { 1 };
        for k in first..n {
            let r = (run.me + k) % n;
            self.await_board(|| run.board.has_published(r, run.epoch))?;
            let block = &mut recv[r];
            let want = block.packed_len()?;
            run.read(r, want, |bytes| {
                typed::unpack(&block.dt, block.count, &mut block.buf, 0, bytes);
            })?;
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
        self.await_board(|| run.slot_free())?;
        let packed = run.board.fill(run.me, run.epoch, n * block, |slot| {
            let mut at = 0;
            for b in &outgoing {
                at += typed::pack(&b.dt, b.count, &b.buf, 0, &mut slot[at..]);
            }
            at
        });
        run.board.publish(run.me, run.epoch, packed);
        if packed != n * block {
            return Err(MpiError::new(
                ErrorClass::Truncate,
                "alltoall blocks sent and received differ in size",
            ));
        }
        for k in 0..n {
            let r = (run.me + k) % n;
            self.await_board(|| run.board.has_published(r, run.epoch))?;
            let into = &mut recv[r];
            run.read_exactly(r, n * block, |bytes| {
                let mine = &bytes[run.me * block..(run.me + 1) * block];
                typed::unpack(&into.dt, into.count, &mut into.buf, 0, mine);
            })?;
        }
        Ok(())
    }
}

/// One collective on a board: this rank, the collective's epoch and the reduction accumulator.
struct BoardRun {
    board: Arc<Board>,
    me: usize,
    epoch: u32,
    scratch: Vec<u8>,
}

impl BoardRun {
    /// Runs `f` on what `rank` published, which must fit the `room` bytes the reader has.
    fn read<R>(&self, rank: usize, room: usize, f: impl FnOnce(&[u8]) -> R) -> Result<R> {
        let have = self.published_len(rank);
        if have > room {
            return Err(MpiError::new(
                ErrorClass::Truncate,
                format!("collective arguments differ across ranks: rank {rank} sent {have} bytes, {room} expected"),
            ));
        }
        Ok(self.board.inspect(rank, self.epoch, have, f))
    }

    /// Like [`BoardRun::read`], for operands that must have exactly `len` bytes.
    fn read_exactly<R>(&self, rank: usize, len: usize, f: impl FnOnce(&[u8]) -> R) -> Result<R> {
        let have = self.published_len(rank);
        if have != len {
            return Err(MpiError::new(
                ErrorClass::Truncate,
                format!("collective arguments differ across ranks: rank {rank} contributed {have} bytes, this rank {len}"),
            ));
        }
        self.read(rank, len, f)
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
