//! Single-copy reduce and allreduce: one piece of the vector per rank, combined in rank order
//! from the others' operands read in cache-sized chunks (see the parent module).

use super::{addr, mismatch, Exposed, Lent, Staged};
use crate::coll::board::{BoardRun, Operands, ReduceArgs};
use crate::coll::large::pieces;
use crate::coll::spec::{RecvData, Reducer, SendData};
use crate::engine::Engine;
use crate::error::Result;
use reflex_base::transport::Transport;

/// Bytes of a piece reduced per step: the operands of one step stay in the L2 cache.
const CHUNK: usize = 64 << 10;

impl<T: Transport> Engine<T> {
    /// Reduce (to `root`) or allreduce (`root = None`) of application data.
    pub(super) fn direct_reduce_of(
        &mut self,
        run: &mut BoardRun,
        send: Option<SendData>,
        recv: Option<RecvData>,
        op: Reducer,
        root: Option<i32>,
    ) -> Result<()> {
        let args = ReduceArgs::check(run, send, recv, &op, root)?;
        let (root, send, basic, count) = (args.root, args.send, args.basic, args.count);
        let mut out = args.out.map(Staged::new).transpose()?;
        let input = send.as_ref().map(Lent::new).transpose()?;
        let len = operand(input.as_ref(), out.as_ref()).len();
        let operands = Operands::new((len, count), root.is_some(), &op, basic);
        let result = self.direct_reduce(run, &operands, input.as_ref(), out.as_mut(), root);
        if let (Ok(()), Some(o)) = (&result, out) {
            o.finish();
        }
        result
    }
}

impl<T: Transport> Engine<T> {
    /// Reduces every rank's operand (`input`, or `out` in place; `o.len` bytes) into `out`
    /// (the root's, or every rank's when `root` is `None`), one piece per rank; then the
    /// allreduce gathers the pieces.
    fn direct_reduce(
        &mut self,
        run: &mut BoardRun,
        o: &Operands<'_>,
        input: Option<&Lent>,
        mut out: Option<&mut Staged>,
        root: Option<usize>,
    ) -> Result<()> {
        let mine = Exposed {
            pid: std::process::id(),
            src: addr(operand(input, out.as_deref())),
            dst: out.as_deref().map_or(0, |b| addr(b.bytes())),
            len: o.len,
        };
        let peers = self.expose(run, mine)?;
        let parts = pieces(o.len, o.unit(), peers.len());
        let piece = Piece {
            peers: &peers,
            at: parts[run.me].0,
            len: parts[run.me].1,
            root,
        };
        let mut outcome = match peers.iter().position(|p| p.len != o.len) {
            Some(r) => Err(mismatch(r, peers[r].len, o.len)),
            None => reduce_piece(run, o, input, out.as_deref_mut(), &piece),
        };
        if let (None, Some(out)) = (root, out) {
            run.board.post(run.me, run.epoch());
            if outcome.is_ok() {
                outcome = self.gather_pieces(run, &peers, &parts, out.bytes_mut());
            }
        }
        let left = self.leave(run);
        outcome.and(left)
    }

    /// Allreduce, second half: reads every other rank's finished piece (once it has posted)
    /// from its receive buffer into the same place of `out`.
    fn gather_pieces(
        &mut self,
        run: &BoardRun,
        peers: &[Exposed],
        parts: &[(usize, usize)],
        out: &mut [u8],
    ) -> Result<()> {
        let n = peers.len();
        for k in 1..n {
            let r = (run.me + k) % n;
            self.await_board(|| run.board.has_posted(r, run.epoch()))?;
            let (at, len) = parts[r];
            peers[r].fetch(peers[r].dst + at, &mut out[at..at + len])?;
        }
        Ok(())
    }
}

/// This rank's operand of a reduction: `input`, or the receive buffer `out` in place.
fn operand<'a>(input: Option<&'a Lent>, out: Option<&'a Staged>) -> &'a [u8] {
    match (input, out) {
        (Some(i), _) => i.bytes(),
        (None, Some(o)) => o.bytes(),
        (None, None) => &[],
    }
}

/// The piece of a reduction this rank computes: bytes `at..at + len` of the operands, whose
/// owners are `peers`; the result goes to `root` (everyone's own buffer when `None`).
struct Piece<'a> {
    peers: &'a [Exposed],
    at: usize,
    len: usize,
    root: Option<usize>,
}

/// Reduces this rank's piece in chunks and puts each result where it belongs: straight into
/// `out` when this rank keeps the result, else through a scratch chunk into the root's buffer.
fn reduce_piece(
    run: &mut BoardRun,
    o: &Operands<'_>,
    input: Option<&Lent>,
    mut out: Option<&mut Staged>,
    piece: &Piece<'_>,
) -> Result<()> {
    let chunk = (CHUNK / o.unit()).max(1) * o.unit();
    let mut scratch = run.take_scratch();
    scratch.resize(3 * chunk, 0);
    let (acc, rest) = scratch.split_at_mut(chunk);
    let (x, keep) = rest.split_at_mut(chunk);
    let keeps_result = piece.root.is_none_or(|r| r == run.me);
    let mut done = 0;
    let mut outcome = Ok(());
    while done < piece.len && outcome.is_ok() {
        let (from, m) = (piece.at + done, chunk.min(piece.len - done));
        let (acc, x, keep) = (&mut acc[..m], &mut x[..m], &mut keep[..m]);
        outcome = match (keeps_result, out.as_deref_mut()) {
            (true, Some(out)) => {
                // In place, this rank's operand is where the result goes: kept aside first.
                let mine = match input {
                    Some(input) => &input.bytes()[from..from + m],
                    None => {
                        keep.copy_from_slice(&out.bytes()[from..from + m]);
                        &*keep
                    }
                };
                let acc = &mut out.bytes_mut()[from..from + m];
                combine_chunk(run.me, o, mine, piece.peers, from, acc, x)
            }
            _ => {
                let mine = &operand(input, None)[from..from + m];
                let root = piece.root.map_or(&piece.peers[0], |r| &piece.peers[r]);
                combine_chunk(run.me, o, mine, piece.peers, from, acc, x)
                    .and_then(|()| root.deliver(root.dst + from, acc))
            }
        };
        done += m;
    }
    run.give_scratch(scratch);
    outcome
}

/// `acc = x0 op (x1 op (… op x[n-1]))` on bytes `from..from + acc.len()` of the operands, this
/// rank's being `mine`, the others' read through `x` (for a commutative operation the last two
/// may swap, which saves the last rank a copy; every element is still combined in one fixed
/// order, by one rank).
fn combine_chunk(
    me: usize,
    o: &Operands<'_>,
    mine: &[u8],
    peers: &[Exposed],
    from: usize,
    acc: &mut [u8],
    x: &mut [u8],
) -> Result<()> {
    let mut last = peers.len() - 1;
    if last != me {
        peers[last].fetch(peers[last].src + from, acc)?;
    } else if last > 0 && o.op.commutative() {
        // `x[n-2] op x[n-1]` as `x[n-1] op x[n-2]`: this rank's operand needs no copy.
        last -= 1;
        peers[last].fetch(peers[last].src + from, acc)?;
        o.combine(acc, mine)?;
    } else {
        acc.copy_from_slice(mine);
    }
    for r in (0..last).rev() {
        if r == me {
            o.combine(acc, mine)?;
        } else {
            peers[r].fetch(peers[r].src + from, x)?;
            o.combine(acc, x)?;
        }
    }
    Ok(())
}
