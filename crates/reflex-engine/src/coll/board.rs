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
//! acknowledgement). While waiting, a rank keeps the engine's progress running, so point-to-point
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
use reflex_shm::board::{Board, SLOTS, SLOT_BYTES};
use std::sync::Arc;

/// The board of one communicator.
#[derive(Debug)]
pub(crate) enum CommBoard {
    /// Not usable (not all on one node, creation failed, or being set up).
    Off,
    /// Ready; `epoch` numbers the last collective run on it.
    On { board: Arc<Board>, epoch: u32 },
}

/// Empty polls of a board flag between two rounds of engine progress.
const POLLS_PER_PROGRESS: u32 = 8;
/// A published slot starts with the length of the data (so readers detect mismatched counts).
const LEN_BYTES: usize = 8;

/// Bytes this rank publishes in `coll`, when it fits a slot (`None`: not a board collective).
fn board_bytes(coll: &Coll) -> Option<usize> {
    let fits = |n: usize| (n + LEN_BYTES <= SLOT_BYTES).then_some(n);
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
        let inter = self.comms.get(comm)?.is_inter();
        if inter || self.board_base.is_none() || board_bytes(&coll).is_none() {
            return Ok(Some(coll));
        }
        let Some((board, epoch)) = self.board_of(comm)? else {
            return Ok(Some(coll));
        };
        let me = self.comms.get(comm)?.rank as usize;
        let run = BoardRun { board, me, epoch };
        let outcome = match coll {
            Coll::Barrier => self.board_barrier(&run),
            Coll::Bcast { data, root } => self.board_bcast(&run, data, root),
            Coll::Reduce {
                send,
                recv,
                op,
                root,
            } => self.board_reduce(&run, send, recv, op, Some(root)),
            Coll::Allreduce { send, recv, op } => {
                self.board_reduce(&run, send, Some(recv), op, None)
            }
            Coll::Allgather { send, recv } => self.board_allgather(&run, send, recv),
            Coll::Alltoall { send, recv, .. } => self.board_alltoall(&run, send, recv),
            _ => unreachable!("board_bytes admits board collectives only"),
        };
        // Consumed even after an error: the others must not wait for this rank's reads.
        run.board.consume(run.me, run.epoch);
        outcome.map(|()| None)
    }

    /// The board of `comm` and the epoch of the collective about to run on it, setting the
    /// board up at the first call.
    fn board_of(&mut self, comm: CommId) -> Result<Option<(Arc<Board>, u32)>> {
        if !self.comms.boards.contains_key(&comm.0) {
            self.set_up_board(comm)?;
        }
        match self.comms.boards.get_mut(&comm.0) {
            Some(CommBoard::On { board, epoch }) => {
                *epoch = epoch.wrapping_add(1);
                Ok(Some((board.clone(), *epoch)))
            }
            _ => Ok(None),
        }
    }

    /// Creates (rank 0) and maps (everyone) the board of `comm`; every rank ends with the same
    /// outcome.
    fn set_up_board(&mut self, comm: CommId) -> Result<()> {
        let c = self.comms.get(comm)?;
        let (me, n, ctx) = (c.rank as usize, c.size(), c.ctx);
        self.comms.boards.insert(comm.0, CommBoard::Off);
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
            self.comms
                .boards
                .insert(comm.0, CommBoard::On { board, epoch: 0 });
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
        self.await_board(|| run.board.has_posted(root, run.epoch))?;
        run.read(root, len, |bytes| {
            typed::unpack(&data.dt, data.count, &mut data.buf, 0, bytes);
        })
    }

    /// Allreduce (`root = None`) or reduce to `root`.
    fn board_reduce(
        &mut self,
        run: &BoardRun,
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
            let acc = self.combine_slots(run, len, input.count, &op, basic)?;
            let mut out = recv.ok_or_else(|| {
                MpiError::new(ErrorClass::Buffer, "the root has no receive buffer")
            })?;
            typed::unpack(&out.dt, out.count, &mut out.buf, 0, &acc);
        }
        Ok(())
    }

    /// Waits until this rank's slot is free, packs `data` into it and posts.
    fn publish(&mut self, run: &BoardRun, data: &SendData, len: usize) -> Result<()> {
        self.await_board(|| run.slot_free())?;
        run.board.fill(run.me, run.epoch, LEN_BYTES + len, |slot| {
            let (head, body) = slot.split_at_mut(LEN_BYTES);
            head.copy_from_slice(&(len as u64).to_le_bytes());
            typed::pack(&data.dt, data.count, &data.buf, 0, body)
        });
        run.board.post(run.me, run.epoch);
        Ok(())
    }

    /// `x0 op (x1 op (… op x[n-1]))` over every rank's slot.
    fn combine_slots(
        &mut self,
        run: &BoardRun,
        len: usize,
        count: usize,
        op: &Reducer,
        basic: Option<Basic>,
    ) -> Result<Vec<u8>> {
        let last = run.board.nranks() - 1;
        self.await_board(|| run.board.has_posted(last, run.epoch))?;
        let mut acc = run.read_exactly(last, len, <[u8]>::to_vec)?;
        for r in (0..last).rev() {
            self.await_board(|| run.board.has_posted(r, run.epoch))?;
            run.read_exactly(r, len, |x| match (op, basic) {
                (Reducer::Predefined(p), Some(b)) => crate::op::apply_packed(*p, &b, &mut acc, x),
                (Reducer::User(f), _) => f.reduce(x, &mut acc, count),
                (Reducer::Predefined(_), None) => Ok(()),
            })??;
        }
        Ok(acc)
    }

    fn board_allgather(
        &mut self,
        run: &BoardRun,
        send: Option<SendData>,
        mut recv: Vec<RecvData>,
    ) -> Result<()> {
        let n = run.board.nranks();
        super::spec::check_blocks(&recv, n, "the allgather receive buffer")?;
        let mine = match send {
            Some(s) => {
                let mut own = recv[run.me].clone();
                let bytes = s.packed_len()?;
                if bytes > own.packed_len()? {
                    return Err(MpiError::new(
                        ErrorClass::Truncate,
                        "allgather block does not fit the receive block",
                    ));
                }
                let mut tmp = vec![0u8; bytes];
                typed::pack(&s.dt, s.count, &s.buf, 0, &mut tmp);
                typed::unpack(&own.dt, own.count, &mut own.buf, 0, &tmp);
                s
            }
            None => recv[run.me].as_send(),
        };
        let len = mine.packed_len()?;
        self.publish(run, &mine, len)?;
        for k in 1..n {
            let r = (run.me + k) % n;
            self.await_board(|| run.board.has_posted(r, run.epoch))?;
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
        let packed = run
            .board
            .fill(run.me, run.epoch, LEN_BYTES + n * block, |slot| {
                let (head, body) = slot.split_at_mut(LEN_BYTES);
                let mut at = 0;
                for b in &outgoing {
                    at += typed::pack(&b.dt, b.count, &b.buf, 0, &mut body[at..]);
                }
                head.copy_from_slice(&(at as u64).to_le_bytes());
                at
            });
        run.board.post(run.me, run.epoch);
        if packed != n * block {
            return Err(MpiError::new(
                ErrorClass::Truncate,
                "alltoall blocks sent and received differ in size",
            ));
        }
        for k in 0..n {
            let r = (run.me + k) % n;
            self.await_board(|| run.board.has_posted(r, run.epoch))?;
            let into = &mut recv[r];
            run.read_exactly(r, n * block, |bytes| {
                let mine = &bytes[run.me * block..(run.me + 1) * block];
                typed::unpack(&into.dt, into.count, &mut into.buf, 0, mine);
            })?;
        }
        Ok(())
    }
}

/// One collective on a board: this rank and the collective's epoch.
struct BoardRun {
    board: Arc<Board>,
    me: usize,
    epoch: u32,
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
        Ok(self
            .board
            .inspect(rank, self.epoch, LEN_BYTES + have, |slot| {
                f(&slot[LEN_BYTES..])
            }))
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
        self.board.inspect(rank, self.epoch, LEN_BYTES, |head| {
            u64::from_le_bytes(head.try_into().expect("8-byte length")) as usize
        })
    }

    fn everyone_posted(&self) -> bool {
        (0..self.board.nranks()).all(|r| self.board.has_posted(r, self.epoch))
    }

    /// Every other rank has read what this rank published the last time it used this epoch's
    /// slot.
    fn slot_free(&self) -> bool {
        self.board
            .all_consumed(self.me, self.epoch.wrapping_sub(SLOTS as u32))
    }
}
