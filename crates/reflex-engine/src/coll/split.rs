//! Board reductions in pieces: on a node of many cores the root of a board reduce (every rank
//! of an allreduce) combining all n operands whole is the bound as n grows (16 ranks of 16 KiB:
//! 24 µs against 18 for Open MPI's tree). Here the operand is cut into one piece per rank
//! (whole elements, [`super::large::pieces`]); every rank publishes its operand as usual, reduces
//! its piece of all operands in rank order, `x0 op (x1 op (… op x[n-1]))` as the whole-operand
//! path does (the same expression, so results stay bit-identical and non-commutative operations
//! keep their order), writes the piece into its own slot behind its operand and posts; the
//! readers (the root, or everyone) copy the pieces out of the slots. The work and the cache
//! traffic are spread over every core instead of falling on the readers.
//!
//! The choice is [`super::select::CollTuning::reduce_in_pieces`], the same on every rank (it
//! depends on the rank count, the size and the node's configuration only); a reduction whose
//! operand and piece do not both fit a slot stays whole. A rank always posts, even when its own
//! reading failed (a peer that published another length: every reader sees that mismatch
//! itself), so that no reader waits for a piece that will never come.

use super::board::{BoardRun, Operands};
use super::large::pieces;
use crate::engine::Engine;
use crate::error::Result;
use reflex_base::copy::copy_bytes;
use reflex_base::transport::Transport;
use reflex_shm::board::{Board, SLOT_DATA};

impl<T: Transport> Engine<T> {
    /// Whether the reduction of `o` on `run`'s board goes in pieces.
    pub(super) fn splits(&self, run: &BoardRun, o: &Operands<'_>) -> bool {
        let n = run.board.nranks();
        // The divisions last: small reductions, the common case, are answered without them.
        if o.count < n || !self.tuning.coll.reduce_in_pieces(n, o.len) {
            return false;
        }
        let piece = (o.count / n + 1) * o.unit();
        Board::line_from(o.len) + piece <= SLOT_DATA
    }

    /// Publishes this rank's operand (`pack`), reduces and posts its piece, and (with an `out`)
    /// gathers every piece into the result.
    pub(super) fn reduce_split(
        &mut self,
        run: &mut BoardRun,
        o: &Operands<'_>,
        pack: impl FnOnce(&mut [u8]) -> usize,
        out: Option<impl FnOnce(&[u8])>,
    ) -> Result<()> {
        self.publish(run, o.len, pack)?;
        let parts = pieces(o.len, o.unit(), run.board.nranks());
        let (at, size) = parts[run.me];
        let mut result = run.take_scratch();
        result.resize(o.len, 0);
        let piece = &mut result[at..at + size];
        let mut outcome = self.combine_slots(run, (piece, at), None, o);
        let behind = Board::line_from(o.len);
        let (me, epoch) = (run.me, run.epoch());
        run.board
            .fill_at(me, epoch, behind, size, |s| copy_bytes(s, piece));
        run.board.post(me, epoch);
        if let (Some(out), Ok(())) = (out, &outcome) {
            outcome = self.gather_board_pieces(run, &parts, &mut result);
            if outcome.is_ok() {
                out(&result);
            }
        }
        run.give_scratch(result);
        outcome
    }

    /// Copies every other rank's piece, once posted, from its slot into its place in `result`.
    fn gather_board_pieces(
        &mut self,
        run: &BoardRun,
        parts: &[(usize, usize)],
        result: &mut [u8],
    ) -> Result<()> {
        let epoch = run.epoch();
        let behind = Board::line_from(result.len());
        for r in run.ranks_from_me().skip(1) {
            self.await_board(|| run.board.has_posted(r, epoch))?;
            let (at, size) = parts[r];
            let into = &mut result[at..at + size];
            run.board
                .inspect_at(r, epoch, behind, size, |p| copy_bytes(into, p));
        }
        Ok(())
    }
}
