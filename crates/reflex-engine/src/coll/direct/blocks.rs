//! Single-copy allgather(v) and alltoall: every rank reads its blocks straight out of the
//! others' buffers (see the parent module).

use super::{addr, mismatch, plain, Exposed, Lent, Staged};
use crate::coll::board::BoardRun;
use crate::coll::large::pieces;
use crate::coll::spec::{check_blocks, check_root, RecvData, SendData};
use crate::datatype::typed;
use crate::engine::Engine;
use crate::error::{ErrorClass, MpiError, Result};
use reflex_base::transport::Transport;

impl<T: Transport> Engine<T> {
    /// Allgather(v): every rank exposes its block and reads the others' into `recv`.
    pub(super) fn direct_allgather(
        &mut self,
        run: &BoardRun,
        send: Option<SendData>,
        recv: Vec<RecvData>,
    ) -> Result<()> {
        let n = run.board.nranks();
        check_blocks(&recv, n, "the allgather receive buffer")?;
        let mut blocks = stage_all(recv)?;
        let own = send.as_ref().map(Lent::new).transpose()?;
        let mine = match &own {
            Some(l) => l.bytes(),
            None => blocks[run.me].bytes(),
        };
        let exposed = Exposed {
            pid: std::process::id(),
            src: addr(mine),
            dst: 0,
            len: mine.len(),
        };
        let mut outcome = self.take_blocks(run, exposed, &mut blocks, |p| (p.src, p.len));
        if let (Some(own), Ok(())) = (&own, &outcome) {
            outcome = copy_own(own.bytes(), blocks[run.me].bytes_mut());
        }
        self.finish_blocks(run, blocks, outcome)
    }

    /// Regular alltoall, not in place: rank r reads block r of every other rank's send
    /// buffer.
    pub(super) fn direct_alltoall(
        &mut self,
        run: &BoardRun,
        send: Vec<SendData>,
        recv: Vec<RecvData>,
    ) -> Result<()> {
        let (n, me) = (run.board.nranks(), run.me);
        check_blocks(&recv, n, "the alltoall receive buffer")?;
        check_blocks(&send, n, "the alltoall send buffer")?;
        let mut blocks = stage_all(recv)?;
        let block = send[0].packed_len()?;
        let packed = match adjacent(&send, block)? {
            true => None,
            false => Some(pack_all(&send, block)?),
        };
        let first = packed.as_deref().map_or_else(|| send[0].buf.addr(), addr);
        let exposed = Exposed {
            pid: std::process::id(),
            src: first,
            dst: block,
            len: n * block,
        };
        let place = |p: &Exposed| (p.src + me * p.dst, p.dst);
        let mut outcome = self.take_blocks(run, exposed, &mut blocks, place);
        if outcome.is_ok() {
            let own = match &packed {
                Some(v) => &v[me * block..(me + 1) * block],
                None => send[me].buf.as_slice(),
            };
            outcome = copy_own(own, blocks[me].bytes_mut());
        }
        self.finish_blocks(run, blocks, outcome)
    }

    /// Shows `mine`, then reads into `blocks[r]`, for every other rank r, the bytes `place(peer)`
    /// names (address in rank r's memory, length): first from the ranks that have already shown
    /// their buffers, so that an oversubscribed rank works instead of waiting for one that is
    /// not running.
    fn take_blocks(
        &mut self,
        run: &BoardRun,
        mine: Exposed,
        blocks: &mut [Staged],
        place: impl Fn(&Exposed) -> (usize, usize),
    ) -> Result<()> {
        self.show(run, mine)?;
        let n = blocks.len();
        let mut pending: Vec<usize> = (1..n).map(|k| (run.me + k) % n).collect();
        let shown = |r: usize| run.board.has_published(r, run.epoch());
        while !pending.is_empty() {
            self.await_board(|| pending.iter().any(|&r| shown(r)))?;
            let ready: Vec<usize> = pending.iter().copied().filter(|&r| shown(r)).collect();
            for &r in &ready {
                let peer = self.exposed(run, r)?;
                let (at, len) = place(&peer);
                let into = blocks[r].bytes_mut();
                if len != into.len() {
                    return Err(mismatch(r, len, into.len()));
                }
                peer.fetch(at, &mut into[..len])?;
            }
            pending.retain(|r| !ready.contains(r));
        }
        Ok(())
    }

    /// Broadcast from `root` on 3 ranks or more: every other rank reads the root's buffer or,
    /// on many cores ([`crate::coll::select::CollTuning::bcast_in_pieces`]), a scatter and
    /// an allgather with no intermediate copy: the message is cut into one piece per rank; rank
    /// r reads piece r from the root's buffer into its own and posts, then takes every other
    /// piece from the rank that holds it (piece k from rank k once k has posted, the root's
    /// piece from the root). The root's memory is then read about once instead of once per
    /// rank, which on 16 cores was the bound (1 MiB: every rank reading the root took 3.5x the
    /// peers' time, 2.3-2.9x with 32 and 64 ranks there). A piece whose holder has not posted
    /// within the spinning budget is read from the root instead, so a rank that is not running
    /// delays nobody.
    pub(super) fn direct_bcast(&mut self, run: &BoardRun, data: RecvData, root: i32) -> Result<()> {
        let n = run.board.nranks();
        let root = check_root(root, n)?;
        let mut buf = Staged::new(data)?;
        let bytes = buf.bytes();
        let mine = Exposed {
            pid: std::process::id(),
            src: addr(bytes),
            dst: 0,
            len: bytes.len(),
        };
        let outcome = match self.tuning.coll.bcast_in_pieces(n, mine.len) {
            _ if run.me == root => self.show(run, mine),
            true => self
                .expose(run, mine)
                .and_then(|peers| self.bcast_pieces(run, &peers, root, buf.bytes_mut())),
            false => self.exposed(run, root).and_then(|p| {
                let into = buf.bytes_mut();
                match p.len == into.len() {
                    true => p.fetch(p.src, &mut into[..p.len]),
                    false => Err(mismatch(root, p.len, into.len())),
                }
            }),
        };
        self.finish_blocks(run, vec![buf], outcome)
    }

    /// A non-root's part of [`Engine::direct_bcast`]: its own piece from the root, then the
    /// others' from whoever has them.
    fn bcast_pieces(
        &mut self,
        run: &BoardRun,
        peers: &[Exposed],
        root: usize,
        into: &mut [u8],
    ) -> Result<()> {
        let (n, me, len) = (peers.len(), run.me, peers[root].len);
        if len != into.len() {
            return Err(mismatch(root, len, into.len()));
        }
        let parts = pieces(len, 1, n);
        let copy = |holder: usize, k: usize, into: &mut [u8]| {
            let (at, size) = parts[k];
            peers[holder].fetch(peers[holder].src + at, &mut into[at..at + size])
        };
        copy(root, me, into)?;
        run.board.post(me, run.epoch());
        let ready = |k: usize| k == root || run.board.has_posted(k, run.epoch());
        let mut pending: Vec<usize> = (1..n).map(|k| (me + k) % n).collect();
        while !pending.is_empty() {
            self.spin_on_board(|| pending.iter().any(|&k| ready(k)))?;
            let found = pending.iter().position(|&k| ready(k));
            let k = pending.swap_remove(found.unwrap_or(0));
            copy(if found.is_some() { k } else { root }, k, into)?;
        }
        Ok(())
    }

    /// Leaves the collective and unpacks the staged blocks when all went well.
    fn finish_blocks(
        &mut self,
        run: &BoardRun,
        blocks: Vec<Staged>,
        outcome: Result<()>,
    ) -> Result<()> {
        let left = self.leave(run);
        if outcome.is_ok() {
            blocks.into_iter().for_each(Staged::finish);
        }
        outcome.and(left)
    }
}

fn stage_all(recv: Vec<RecvData>) -> Result<Vec<Staged>> {
    recv.into_iter().map(Staged::new).collect()
}

/// Whether the send blocks (`block` bytes each) are dense and one after the other in memory.
fn adjacent(send: &[SendData], block: usize) -> Result<bool> {
    let start = send[0].buf.addr();
    for (j, d) in send.iter().enumerate() {
        let fits = plain(&d.dt, d.buf.len(), d.packed_len()?) && d.buf.len() == block;
        if !fits || (block > 0 && d.buf.addr() != start + j * block) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The send blocks packed one after the other (each must have `block` bytes).
fn pack_all(send: &[SendData], block: usize) -> Result<Vec<u8>> {
    let mut all = vec![0u8; send.len() * block];
    for (d, into) in send.iter().zip(all.chunks_exact_mut(block.max(1))) {
        let have = d.packed_len()?;
        if have != block {
            return Err(MpiError::new(
                ErrorClass::Truncate,
                format!("alltoall send blocks differ in size: {have} and {block} bytes"),
            ));
        }
        typed::pack(&d.dt, d.count, &d.buf, 0, into);
    }
    Ok(all)
}

/// Copies this rank's own block.
fn copy_own(from: &[u8], to: &mut [u8]) -> Result<()> {
    let (have, room) = (from.len(), to.len());
    if have > room {
        return Err(MpiError::new(
            ErrorClass::Truncate,
            format!("this rank's block has {have} bytes, its receive block {room}"),
        ));
    }
    to[..have].copy_from_slice(from);
    Ok(())
}
