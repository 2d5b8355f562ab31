//! Streamed board collectives: a regular alltoall, a reduce or a broadcast too large for one
//! board slot runs as a sequence of slot-sized pieces, one board epoch per piece, through the
//! same protocol as the small board collectives ([`super::board`]): a writer fills its slot of
//! the piece's epoch and publishes it, readers copy or combine out of it and consume the epoch, and a writer
//! reuses a slot only once everyone consumed the epoch that last used it. With 64 slots per
//! rank a writer runs up to 64 pieces (2 MiB) ahead of its readers, so writers and readers copy
//! at the same time, on their own cores.
//!
//! Why two copies through shared memory instead of the one of [`super::direct`]: on this
//! project's 2-core VM (AMD EPYC Zen 3 under KVM) the kernel's `process_vm_readv` moves only
//! 7-8 GB/s per core, a user-space copy of the same 64 KiB-4 MiB buffers 25-40 GB/s, so a copy
//! into the slot and one out of it, by two cores at once, take less time than one cross-memory
//! read (measured cells in `select.rs`). The selection table ([`super::select`],
//! `REFLEX_COLL_STREAM`) decides when.
//!
//! - alltoall: piece k of the collective carries bytes `k·c .. (k+1)·c` of every block a rank
//!   sends to another rank (c = a slot over n − 1 blocks, in whole cache lines): the block for
//!   rank `me + d` at position d − 1 of the slot. A rank's own block is copied straight from its
//!   send to its receive buffer (nothing in place). In place works as on the board: a rank packs
//!   its piece of every outgoing block before it reads the same piece of any incoming one.
//! - bcast: the root packs piece k into its slot, every other rank unpacks it from there
//!   (one copy in, n − 1 out, instead of n − 1 cross-memory reads of the root's buffer).
//! - reduce: piece k carries whole elements `k·c ..` of every operand; the root combines them
//!   in rank order, `x0 op (x1 op (… op x[n-1]))` as every board reduction does (bit-identical,
//!   non-commutative operations in order), straight into its receive buffer when that is dense.
//!
//! Every rank takes the same number of epochs, decided by sizes all ranks agree on (the block or
//! the operand and its element size); arguments are checked before the first piece.

use super::board::{BoardRun, Operands, ReduceArgs};
use super::select::Streamed;
use super::spec::{check_blocks, check_root, Coll, RecvData, Reducer, SendData};
use crate::comm::CommId;
use crate::datatype::typed;
use crate::engine::Engine;
use crate::error::{ErrorClass, MpiError, Result};
use reflex_base::cache::CACHE_PAD;
use reflex_base::transport::Transport;
use reflex_shm::board::SLOT_DATA;

/// Which streamed collective `coll` is, with the bytes the selection table weighs (one block,
/// or the operand) and the size of the unit a piece must hold whole; `None`: not streamable.
fn streamed(coll: &Coll) -> Option<(Streamed, usize, usize)> {
    match coll {
        Coll::Alltoall {
            recv,
            regular: true,
            ..
        } => Some((Streamed::Alltoall, recv.first()?.packed_len().ok()?, 1)),
        Coll::Bcast { data, .. } => Some((Streamed::Bcast, data.packed_len().ok()?, 1)),
        Coll::Reduce { send, recv, .. } => {
            let (count, len) = match (send, recv) {
                (Some(s), _) => (s.count, s.packed_len().ok()?),
                (None, Some(r)) => (r.count, r.packed_len().ok()?),
                (None, None) => return None,
            };
            let unit = (len / count.max(1)).max(1);
            (unit <= SLOT_DATA).then_some((Streamed::Reduce, len, unit))
        }
        _ => None,
    }
}

impl<T: Transport> Engine<T> {
    /// Runs `coll` (too large for a board slot) streamed through `comm`'s board (this rank
    /// `me` of `n`) when the selection table says so; otherwise hands `coll` back.
    pub(super) fn try_stream(
        &mut self,
        comm: CommId,
        (me, n): (usize, usize),
        coll: Coll,
    ) -> Result<Option<Coll>> {
        let Some((kind, bytes, _)) = streamed(&coll) else {
            return Ok(Some(coll));
        };
        if n < 2 || !self.tuning.coll.board_stream(kind, n, bytes) {
            return Ok(Some(coll));
        }
        let Some(mut run) = self.board_of(comm, me)? else {
            return Ok(Some(coll));
        };
        let outcome = match coll {
            Coll::Alltoall { send, recv, .. } => self.stream_alltoall(&mut run, send, recv),
            Coll::Bcast { data, root } => self.stream_bcast(&mut run, data, root),
            Coll::Reduce {
                send,
                recv,
                op,
                root,
            } => self.stream_reduce(&mut run, send, recv, op, root),
            _ => unreachable!("streamed admits these only"),
        };
        self.end_run(comm, run);
        outcome.map(|()| None)
    }

    /// Regular alltoall in pieces (see the module documentation); `send` is `None` in place.
    fn stream_alltoall(
        &mut self,
        run: &mut BoardRun,
        send: Option<Vec<SendData>>,
        mut recv: Vec<RecvData>,
    ) -> Result<()> {
        let (n, me) = (run.board.nranks(), run.me);
        check_blocks(&recv, n, "the alltoall receive buffer")?;
        let block = recv[0].packed_len()?;
        let in_place = send.is_none();
        let out = match send {
            Some(blocks) => blocks,
            None => recv.iter().map(RecvData::as_send).collect(),
        };
        check_blocks(&out, n, "the alltoall send buffer")?;
        for (s, r) in out.iter().zip(&recv) {
            same_block(s.packed_len()?, block)?;
            same_block(r.packed_len()?, block)?;
        }
        let piece = alltoall_piece(n);
        let mut from = 0;
        while from < block {
            let m = piece.min(block - from);
            self.publish(run, (n - 1) * m, |slot| {
                for (d, at) in slot.chunks_exact_mut(m).take(n - 1).enumerate() {
                    let j = (me + 1 + d) % n;
                    typed::pack(&out[j].dt, out[j].count, &out[j].buf, from, at);
                }
                (n - 1) * m
            })?;
            if from == 0 && !in_place {
                copy_own(run, &out[me], &mut recv[me], block);
            }
            for r in run.ranks_from_me().skip(1) {
                self.await_board(|| run.board.has_published(r, run.epoch()))?;
                let at = ((me + n - r) % n - 1) * m;
                let into = &mut recv[r];
                run.read_exactly(r, (n - 1) * m, |bytes| {
                    typed::unpack(
                        &into.dt,
                        into.count,
                        &mut into.buf,
                        from,
                        &bytes[at..at + m],
                    );
                })?;
            }
            from += m;
            if from < block {
                run.advance();
            }
        }
        Ok(())
    }

    /// Broadcast from `root` in pieces: the root packs each into its slot, the others unpack it
    /// from there.
    fn stream_bcast(&mut self, run: &mut BoardRun, mut data: RecvData, root: i32) -> Result<()> {
        let root = check_root(root, run.board.nranks())?;
        let len = data.packed_len()?;
        let send = data.as_send();
        let piece = SLOT_DATA / CACHE_PAD * CACHE_PAD;
        let mut from = 0;
        while from < len {
            let m = piece.min(len - from);
            self.bcast_on(
                run,
                root,
                m,
                |slot| typed::pack(&send.dt, send.count, &send.buf, from, slot),
                |bytes| {
                    typed::unpack(&data.dt, data.count, &mut data.buf, from, bytes);
                },
            )?;
            from += m;
            if from < len {
                run.advance();
            }
        }
        Ok(())
    }

    /// Reduce to `root` in pieces (see the module documentation).
    fn stream_reduce(
        &mut self,
        run: &mut BoardRun,
        send: Option<SendData>,
        recv: Option<RecvData>,
        op: Reducer,
        root: i32,
    ) -> Result<()> {
        let args = ReduceArgs::check(run, send, recv, &op, Some(root))?;
        let in_place = args.send.is_none();
        let input = match (args.send, &args.out) {
            (Some(s), _) => s,
            (None, Some(out)) => out.as_send(),
            (None, None) => unreachable!("ReduceArgs::check wants an operand"),
        };
        let len = input.packed_len()?;
        let whole = Operands::new((len, args.count), true, &op, args.basic);
        let chunk = (SLOT_DATA / whole.unit()).max(1) * whole.unit();
        let mut reader = args
            .out
            .map(|out| Reader::new(out, (&input, in_place), len, run));
        let mut from = 0;
        let mut outcome = Ok(());
        while from < len && outcome.is_ok() {
            let m = chunk.min(len - from);
            let o = whole.piece(m);
            outcome = match &mut reader {
                None => self.publish(run, m, |slot| {
                    typed::pack(&input.dt, input.count, &input.buf, from, slot)
                }),
                Some(reader) => reader.combine(self, run, &input, (from, m), &o),
            };
            from += m;
            if from < len {
                run.advance();
            }
        }
        if let Some(reader) = reader {
            reader.finish(run);
        }
        outcome
    }
}

/// Bytes of every block in one piece of an alltoall on `n` ranks: a slot shared by the n − 1
/// outgoing blocks, in whole cache lines.
fn alltoall_piece(n: usize) -> usize {
    let share = SLOT_DATA / (n - 1).max(1);
    match share >= CACHE_PAD {
        true => share / CACHE_PAD * CACHE_PAD,
        false => share.max(1),
    }
}

/// Copies this rank's own alltoall block of `len` packed bytes (through scratch pieces when
/// the receive buffer is not its packed form).
fn copy_own(run: &mut BoardRun, from: &SendData, to: &mut RecvData, len: usize) {
    if plain(&to.dt, to.buf.len(), len) {
        typed::pack(&from.dt, from.count, &from.buf, 0, to.buf.as_mut_slice());
        return;
    }
    let mut scratch = run.take_scratch();
    scratch.resize(SLOT_DATA.min(len), 0);
    let mut at = 0;
    while at < len {
        let m = scratch.len().min(len - at);
        typed::pack(&from.dt, from.count, &from.buf, at, &mut scratch[..m]);
        typed::unpack(&to.dt, to.count, &mut to.buf, at, &scratch[..m]);
        at += m;
    }
    run.give_scratch(scratch);
}

/// Whether a buffer of `span` bytes of `dt` is its own packed form of `len` bytes.
fn plain(dt: &crate::datatype::Datatype, span: usize, len: usize) -> bool {
    dt.is_dense() && span == len
}

fn same_block(have: usize, block: usize) -> Result<()> {
    match have == block {
        true => Ok(()),
        false => Err(MpiError::new(
            ErrorClass::Truncate,
            format!("alltoall blocks differ in size: {have} and {block} bytes"),
        )),
    }
}

/// The root of a streamed reduce: where its pieces are combined (straight in its receive buffer
/// when that is dense, else in scratch then unpacked) and its own operand's pieces.
struct Reader {
    out: RecvData,
    /// The receive buffer is the packed result: pieces are combined straight into it.
    direct: bool,
    /// The root's operand is read where it lies (dense, not in place: in place it is the
    /// receive buffer, copied aside before being overwritten).
    borrow_own: bool,
    scratch: Vec<u8>,
}

impl Reader {
    fn new(
        out: RecvData,
        (input, in_place): (&SendData, bool),
        len: usize,
        run: &mut BoardRun,
    ) -> Self {
        let direct = plain(&out.dt, out.buf.len(), len);
        let borrow_own = !in_place && plain(&input.dt, input.buf.len(), len);
        let mut scratch = run.take_scratch();
        scratch.resize(2 * SLOT_DATA.min(len), 0);
        Self {
            out,
            direct,
            borrow_own,
            scratch,
        }
    }

    /// Combines bytes `from..from + m` of every operand into the result.
    fn combine<T: Transport>(
        &mut self,
        engine: &mut Engine<T>,
        run: &BoardRun,
        input: &SendData,
        (from, m): (usize, usize),
        o: &Operands<'_>,
    ) -> Result<()> {
        let half = self.scratch.len() / 2;
        let (acc, own) = self.scratch.split_at_mut(half);
        let (acc, own) = (&mut acc[..m], &mut own[..m]);
        let mine: &[u8] = match self.borrow_own {
            true => &input.buf.as_slice()[from..from + m],
            false => {
                typed::pack(&input.dt, input.count, &input.buf, from, own);
                own
            }
        };
        if self.direct {
            let acc = &mut self.out.buf.as_mut_slice()[from..from + m];
            return engine.combine_slots(run, (acc, 0), Some(mine), o);
        }
        engine.combine_slots(run, (acc, 0), Some(mine), o)?;
        typed::unpack(&self.out.dt, self.out.count, &mut self.out.buf, from, acc);
        Ok(())
    }

    fn finish(self, run: &mut BoardRun) {
        run.give_scratch(self.scratch);
    }
}

#[cfg(test)]
mod tests {
    use super::alltoall_piece;
    use reflex_base::cache::CACHE_PAD;
    use reflex_shm::board::SLOT_DATA;

    #[test]
    fn alltoall_pieces_share_one_slot_in_whole_lines() {
        assert_eq!(alltoall_piece(2), SLOT_DATA / CACHE_PAD * CACHE_PAD);
        assert_eq!(alltoall_piece(3) % CACHE_PAD, 0);
        assert!(alltoall_piece(8) * 7 <= SLOT_DATA);
        assert!(alltoall_piece(1024) * 1023 <= SLOT_DATA && alltoall_piece(1024) > 0);
    }
}
