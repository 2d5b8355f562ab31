//! Single-copy collectives: bcast, reduce, allreduce, allgather(v) and alltoall of messages too
//! large for a board slot, on a communicator within one node whose ranks may read each other's
//! memory (cross-memory attach, `process_vm_readv`).
//!
//! Every rank publishes on the board where its buffers are ([`Exposed`]: pid, addresses,
//! length) instead of the data, and the others copy straight between application buffers, one
//! copy per byte as the paper's broadcast copies straight from the root's buffer:
//!
//! - bcast (3 ranks or more; two do better with point-to-point's cooperative copy, where both
//!   sides copy): every rank reads the root's buffer, or on nodes of many cores, where readers
//!   of one buffer slow each other down, one piece from the root and the others from the ranks
//!   that hold them (a scatter and an allgather with no intermediate copy);
//! - allgather(v): rank r reads every other rank's block into its own receive buffer, each as
//!   soon as its owner has shown where it is;
//! - alltoall: rank r reads block r of every other rank's send buffer;
//! - reduce / allreduce: the vector is cut into one piece per rank (whole elements) and rank r
//!   reduces piece r, reading the others' operands in chunks that stay in its L2 cache and
//!   combining them in rank order, `x0 op (x1 op (… op x[n-1]))`, the expression of the board
//!   reductions: results are bit-identical on every rank and the order holds for
//!   non-commutative operations. An allreduce keeps its piece in its receive buffer, posts, and
//!   then reads the other pieces from the others' receive buffers; a reduce writes each piece
//!   into the root's receive buffer (`process_vm_writev`). Every rank works on the reduction, so
//!   two ranks on two cores take half the time one rank would.
//!
//! Nobody returns while someone may still read its buffers: a collective ends with every rank
//! consuming the epoch and waiting until all have. In-place forms work because a rank's piece
//! of its own buffer is read only by itself before it writes it, and an allreduce overwrites
//! piece k of its buffer only after rank k has posted, that is, finished reading its operands.
//! An in-place alltoall would overwrite blocks others still read, so it stays on schedules.
//!
//! Buffers whose datatype is not dense are packed into a temporary first (and unpacked at the
//! end), so the choice of this path depends only on what every rank agrees on (sizes, kinds of
//! collective), never on one rank's datatypes.

mod blocks;
mod reduce;

use super::board::BoardRun;
use super::spec::{Coll, RecvData, SendData};
use crate::comm::CommId;
use crate::datatype::typed;
use crate::engine::Engine;
use crate::error::{ErrorClass, MpiError, Result};
use reflex_base::buf::SendBuf;
use reflex_base::transport::Transport;
use reflex_shm::cma;

/// Where a rank's buffers of one direct collective are, as published on the board.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Exposed {
    pid: u32,
    /// The data others read: the operand, the block or the first alltoall block.
    src: usize,
    /// The receive buffer (allreduce pieces, the root's result), or the alltoall block stride.
    dst: usize,
    /// Bytes at `src`: the operand or block length.
    len: usize,
}

impl Exposed {
    const BYTES: usize = 32;

    fn write(&self, slot: &mut [u8]) -> usize {
        let words = [
            self.pid as u64,
            self.src as u64,
            self.dst as u64,
            self.len as u64,
        ];
        for (at, w) in slot.chunks_exact_mut(8).zip(words) {
            at.copy_from_slice(&w.to_le_bytes());
        }
        Self::BYTES
    }

    fn read(bytes: &[u8]) -> Self {
        let word = |i: usize| {
            let b = bytes.get(i * 8..i * 8 + 8).and_then(|b| b.try_into().ok());
            b.map_or(0, u64::from_le_bytes)
        };
        Self {
            pid: word(0) as u32,
            src: word(1) as usize,
            dst: word(2) as usize,
            len: word(3) as usize,
        }
    }

    /// Copies `into.len()` bytes from address `at` of this rank's process into `into`.
    fn fetch(&self, at: usize, into: &mut [u8]) -> Result<()> {
        let want = into.len();
        let got = cma::read(self.pid, &[(at, want)], &mut [into]);
        checked(got, want, "read from", self.pid)
    }

    /// Copies `from` to address `at` of this rank's process.
    fn deliver(&self, at: usize, from: &[u8]) -> Result<()> {
        let got = cma::write(self.pid, &[from], &[(at, from.len())]);
        checked(got, from.len(), "write to", self.pid)
    }
}

fn checked(got: std::io::Result<usize>, want: usize, what: &str, pid: u32) -> Result<()> {
    match got {
        Ok(n) if n == want => Ok(()),
        Ok(n) => Err(MpiError::new(
            ErrorClass::Other,
            format!("single-copy collective: {what} process {pid} moved {n} of {want} bytes"),
        )),
        Err(e) => Err(MpiError::new(
            ErrorClass::Other,
            format!("single-copy collective: cannot {what} process {pid}: {e}"),
        )),
    }
}

fn mismatch(rank: usize, have: usize, want: usize) -> MpiError {
    MpiError::new(
        ErrorClass::Truncate,
        format!("collective arguments differ across ranks: rank {rank} has {have} bytes, {want} expected"),
    )
}

/// Whether `d`'s elements are their own packed form, starting at its buffer's address.
fn plain(dt: &crate::datatype::Datatype, span: usize, len: usize) -> bool {
    dt.is_dense() && span == len
}

/// Bytes this rank lets the others read: the application's, or a packed copy of them.
enum Lent {
    App(SendBuf),
    Packed(Vec<u8>),
}

impl Lent {
    fn new(d: &SendData) -> Result<Self> {
        let len = d.packed_len()?;
        if plain(&d.dt, d.buf.len(), len) {
            return Ok(Lent::App(d.buf));
        }
        let mut copy = vec![0u8; len];
        typed::pack(&d.dt, d.count, &d.buf, 0, &mut copy);
        Ok(Lent::Packed(copy))
    }

    fn bytes(&self) -> &[u8] {
        match self {
            Lent::App(b) => b.as_slice(),
            Lent::Packed(v) => v,
        }
    }
}

/// Where this rank's received bytes go: the application's buffer when its datatype is dense,
/// else a packed copy (of its current content, an in-place input) that [`Staged::finish`]
/// unpacks back.
struct Staged {
    app: RecvData,
    packed: Option<Vec<u8>>,
}

impl Staged {
    fn new(app: RecvData) -> Result<Self> {
        let len = app.packed_len()?;
        let packed = (!plain(&app.dt, app.buf.len(), len)).then(|| {
            let mut copy = vec![0u8; len];
            typed::pack(&app.dt, app.count, &app.buf.as_send(), 0, &mut copy);
            copy
        });
        Ok(Self { app, packed })
    }

    fn bytes(&self) -> &[u8] {
        match &self.packed {
            Some(v) => v,
            None => self.app.buf.as_slice(),
        }
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        match &mut self.packed {
            Some(v) => v,
            None => self.app.buf.as_mut_slice(),
        }
    }

    fn finish(self) {
        if let Some(copy) = self.packed {
            let mut d = self.app;
            typed::unpack(&d.dt, d.count, &mut d.buf, 0, &copy);
        }
    }
}

/// Address of the first byte of `b`, for the others to read or write.
fn addr(b: &[u8]) -> usize {
    b.as_ptr() as usize
}

impl<T: Transport> Engine<T> {
    /// Runs `coll` single-copy when it is a direct collective and `comm`'s board allows it;
    /// otherwise hands `coll` back.
    pub(super) fn try_direct(
        &mut self,
        comm: CommId,
        me: usize,
        coll: Coll,
    ) -> Result<Option<Coll>> {
        let n = self.comms.get(comm)?.size();
        if !is_direct(&coll, n) {
            return Ok(Some(coll));
        }
        if !self.board_direct(comm)? {
            return Ok(Some(coll));
        }
        let Some(mut run) = self.begin_run(comm, me) else {
            return Ok(Some(coll));
        };
        let outcome = match coll {
            Coll::Reduce {
                send,
                recv,
                op,
                root,
            } => self.direct_reduce_of(&mut run, send, recv, op, Some(root)),
            Coll::Allreduce { send, recv, op } => {
                self.direct_reduce_of(&mut run, send, Some(recv), op, None)
            }
            Coll::Allgather { send, recv } => self.direct_allgather(&run, send, recv),
            Coll::Bcast { data, root } => self.direct_bcast(&run, data, root),
            Coll::Alltoall {
                send: Some(send),
                recv,
                ..
            } => self.direct_alltoall(&run, send, recv),
            _ => unreachable!("is_direct admits these only"),
        };
        self.end_run(comm, run);
        outcome.map(|()| None)
    }

    /// Consumes this collective and waits until every rank has: nobody reads this rank's
    /// buffers any more.
    fn leave(&mut self, run: &BoardRun) -> Result<()> {
        run.board.consume(run.me, run.epoch());
        self.await_board(|| run.board.all_consumed(run.me, run.epoch()))
    }

    /// Publishes `mine`, then waits for everyone's and returns them by rank.
    fn expose(&mut self, run: &BoardRun, mine: Exposed) -> Result<Vec<Exposed>> {
        self.show(run, mine)?;
        let n = run.board.nranks();
        let mut all = vec![Exposed::default(); n];
        for k in 0..n {
            let r = (run.me + k) % n;
            all[r] = self.exposed(run, r)?;
        }
        Ok(all)
    }

    /// Publishes where this rank's buffers are.
    fn show(&mut self, run: &BoardRun, mine: Exposed) -> Result<()> {
        self.publish(run, Exposed::BYTES, |slot| mine.write(slot))
    }

    /// Where rank `r`'s buffers are, once it has published them.
    fn exposed(&mut self, run: &BoardRun, r: usize) -> Result<Exposed> {
        self.await_board(|| run.board.has_published(r, run.epoch()))?;
        run.read_exactly(r, Exposed::BYTES, Exposed::read)
    }
}

/// A collective this module runs on `n` ranks: reductions, allgather(v), alltoall (not in
/// place) and broadcasts on 3 ranks or more, whose data do not fit a board slot (the caller has
/// checked that).
fn is_direct(coll: &Coll, n: usize) -> bool {
    match coll {
        Coll::Reduce { .. } | Coll::Allreduce { .. } | Coll::Allgather { .. } => true,
        // Two ranks do better on point-to-point, where both sides copy (the cooperative copy).
        Coll::Bcast { .. } => n > 2,
        Coll::Alltoall { send, regular, .. } => send.is_some() && *regular,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exposed_buffers_survive_the_board_and_short_slots_read_as_zero() {
        let e = Exposed {
            pid: 4_000_001,
            src: 0x7fff_1234_5678,
            dst: 1 << 40,
            len: 3 << 30,
        };
        let mut slot = [0xAAu8; Exposed::BYTES];
        assert_eq!(e.write(&mut slot), Exposed::BYTES);
        assert_eq!(Exposed::read(&slot), e);
        let short = Exposed::read(&slot[..12]);
        assert_eq!((short.pid, short.src, short.len), (4_000_001, 0, 0));
    }

    #[test]
    fn another_process_that_is_gone_is_an_error_not_a_panic() {
        let gone = Exposed {
            pid: u32::MAX - 1,
            src: 4096,
            dst: 4096,
            len: 8,
        };
        let mut into = [0u8; 8];
        let e = gone.fetch(4096, &mut into).unwrap_err();
        assert_eq!(e.class, ErrorClass::Other);
        assert!(gone.deliver(4096, &into).is_err());
    }
}
