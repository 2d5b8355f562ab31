//! The collective board: shared memory where the ranks of one communicator on one node publish
//! data and flags for the shared-memory collectives (the Bill-Board Protocol of the
//! reflective-memory papers, `shared/reference/seed000c.md` P2, on cache-coherent memory).
//!
//! Layout (`L` = [`CACHE_PAD`] bytes, `n` ranks, `S` = [`SLOT_BYTES`], `K` = [`SLOTS`]):
//!
//! ```text
//!  0          header: magic, ranks, slot bytes                        1 line
//!  L          posted[0..n]:   epoch of the rank's last publication    1 line each
//!  L(1+n)     consumed[0..n]: epoch up to which the rank has read     1 line each
//!  L(1+2n)    slot[0..n][0..K]: S bytes of published data each
//! ```
//!
//! Every word has one writer (its rank) and is read by the others, so nothing is ever reset:
//! collectives are numbered by epochs (1, 2, 3, … per communicator, wrapping), a rank *posts*
//! epoch e after writing its slot for collective e, and *consumes* e once it has read what it
//! needs from the others. A rank may overwrite its slot for collective e only after every other
//! rank consumed e − K ([`Board::all_consumed`]), epoch e using slot e mod K: that is the
//! acknowledgement of the paper's protocol, folded into one counter per rank, and the K slots
//! let a rank run up to K collectives ahead of the slowest reader (back-to-back broadcasts from
//! one root do not wait for every reader each time). Data is copied in and out with plain memory
//! copies, ordered by the Release store of `posted` and the Acquire loads of its readers.
//!
//! The creator fills the header and stores the magic last; [`Board::open`] checks it. Waiting is
//! the caller's business (the engine keeps its progress running while it polls these words).

use reflex_base::cache::CACHE_PAD;
use reflex_base::segment::{self, Segment};
use std::io;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// `"REFLXBRD"`: marks an initialised board.
const MAGIC: u64 = u64::from_le_bytes(*b"REFLXBRD");
/// Bytes of data a rank can publish in one collective.
pub const SLOT_BYTES: usize = 32 << 10;
/// Slots per rank, used in turn by consecutive epochs.
pub const SLOTS: usize = 8;
/// Most ranks of one board.
pub const MAX_BOARD_RANKS: usize = 1024;

/// A mapped collective board.
#[derive(Debug)]
pub struct Board {
    seg: Segment,
    nranks: usize,
}

fn bad(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

fn size_for(nranks: usize) -> usize {
    CACHE_PAD * (1 + 2 * nranks) + SLOT_BYTES * SLOTS * nranks
}

/// `a` is at or after `b` on the wrapping epoch line.
pub fn reached(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) >= 0
}

impl Board {
    /// Creates the board `name` for `nranks` ranks (the file must not exist).
    pub fn create(name: &str, nranks: usize) -> io::Result<Board> {
        if !(1..=MAX_BOARD_RANKS).contains(&nranks) {
            return Err(bad(format!(
                "a collective board holds 1 to {MAX_BOARD_RANKS} ranks, not {nranks}"
            )));
        }
        let board = Board {
            seg: Segment::create(name, size_for(nranks))?,
            nranks,
        };
        let header = board.header();
        header[1].store(nranks as u64, Ordering::Relaxed);
        header[2].store(SLOT_BYTES as u64, Ordering::Relaxed);
        header[0].store(MAGIC, Ordering::Release);
        Ok(board)
    }

    /// Maps the existing board `name`, checking it was made for `nranks` ranks by this build.
    pub fn open(name: &str, nranks: usize) -> io::Result<Board> {
        let seg = Segment::open(name)?;
        if seg.len() < CACHE_PAD || seg.len() != size_for(nranks) {
            return Err(bad(format!(
                "collective board {name} has {} bytes, not the {} of {nranks} ranks",
                seg.len(),
                size_for(nranks)
            )));
        }
        let board = Board { seg, nranks };
        let header = board.header();
        let (magic, n) = (
            header[0].load(Ordering::Acquire),
            header[1].load(Ordering::Relaxed),
        );
        let slot = header[2].load(Ordering::Relaxed);
        if magic != MAGIC || n != nranks as u64 || slot != SLOT_BYTES as u64 {
            return Err(bad(format!(
                "collective board {name} is not a board of {nranks} ranks of this build"
            )));
        }
        Ok(board)
    }

    /// Removes the name of board `name` (mappings stay valid).
    pub fn unlink(name: &str) -> io::Result<()> {
        segment::unlink(name)
    }

    /// Ranks of the board.
    pub fn nranks(&self) -> usize {
        self.nranks
    }

    fn header(&self) -> &[AtomicU64; 3] {
        // SAFETY: the mapping is at least one line long (checked by `open`, sized by `create`),
        // page-aligned, and lives as long as `self`; the three words are only accessed atomically.
        unsafe { &*self.seg.as_ptr().cast::<[AtomicU64; 3]>() }
    }

    fn word(&self, line: usize) -> &AtomicU32 {
        debug_assert!(line < 1 + 2 * self.nranks);
        let at = self.seg.as_ptr().wrapping_add(line * CACHE_PAD);
        // SAFETY: a control line inside the mapping (ranks < nranks), starting with an aligned
        // word only ever accessed atomically; the mapping lives as long as `self`.
        unsafe { &*at.cast::<AtomicU32>() }
    }

    fn posted_word(&self, rank: usize) -> &AtomicU32 {
        assert!(rank < self.nranks, "rank {rank} is not on this board");
        self.word(1 + rank)
    }

    fn consumed_word(&self, rank: usize) -> &AtomicU32 {
        assert!(rank < self.nranks, "rank {rank} is not on this board");
        self.word(1 + self.nranks + rank)
    }

    fn slot(&self, rank: usize, epoch: u32) -> *mut u8 {
        assert!(rank < self.nranks, "rank {rank} is not on this board");
        let index = rank * SLOTS + epoch as usize % SLOTS;
        let offset = CACHE_PAD * (1 + 2 * self.nranks) + SLOT_BYTES * index;
        // SAFETY: the slot lies inside the mapping (see `size_for`).
        unsafe { self.seg.as_ptr().add(offset) }
    }

    /// Lets `f` write the first `len` bytes of `rank`'s slot of `epoch` in place (the caller is
    /// `rank`, and every other rank has consumed `epoch - SLOTS`).
    pub fn fill<R>(
        &self,
        rank: usize,
        epoch: u32,
        len: usize,
        f: impl FnOnce(&mut [u8]) -> R,
    ) -> R {
        assert!(len <= SLOT_BYTES, "board slot overflow");
        // SAFETY: in bounds (asserted); by the protocol only `rank` touches this slot between the
        // others' consumption of its previous use and its next post, so this is the only reference.
        f(unsafe { std::slice::from_raw_parts_mut(self.slot(rank, epoch), len) })
    }

    /// Lets `f` read the first `len` bytes of `rank`'s slot of `epoch` in place (after seeing its
    /// post of `epoch`).
    pub fn inspect<R>(&self, rank: usize, epoch: u32, len: usize, f: impl FnOnce(&[u8]) -> R) -> R {
        assert!(len <= SLOT_BYTES, "board slot overflow");
        // SAFETY: in bounds (asserted); the owner does not write the slot again before this rank
        // consumes `epoch` (whose post it saw, Acquire), so the bytes are stable while `f` runs.
        f(unsafe { std::slice::from_raw_parts(self.slot(rank, epoch), len) })
    }

    /// Publishes epoch `epoch` of `rank` (its slot is written).
    pub fn post(&self, rank: usize, epoch: u32) {
        self.posted_word(rank).store(epoch, Ordering::Release);
    }

    /// Whether `rank` has posted `epoch` (or later).
    pub fn has_posted(&self, rank: usize, epoch: u32) -> bool {
        reached(self.posted_word(rank).load(Ordering::Acquire), epoch)
    }

    /// Records that `rank` has read everything it needs of epoch `epoch`.
    pub fn consume(&self, rank: usize, epoch: u32) {
        self.consumed_word(rank).store(epoch, Ordering::Release);
    }

    /// Whether every rank but `me` has consumed `epoch` (so `me` may overwrite its slot).
    pub fn all_consumed(&self, me: usize, epoch: u32) -> bool {
        (0..self.nranks)
            .filter(|&r| r != me)
            .all(|r| reached(self.consumed_word(r).load(Ordering::Acquire), epoch))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(tag: &str) -> String {
        format!("reflex-boardtest-{}.{tag}", std::process::id())
    }

    #[test]
    fn publishes_and_reads_across_mappings() {
        let n = name("a");
        let a = Board::create(&n, 3).unwrap();
        let b = Board::open(&n, 3).unwrap();
        Board::unlink(&n).unwrap();
        assert!(!b.has_posted(1, 1));
        a.fill(1, 1, 5, |s| s.copy_from_slice(b"hello"));
        a.fill(1, 2, 5, |s| s.copy_from_slice(b"world"));
        a.post(1, 1);
        assert!(b.has_posted(1, 1) && !b.has_posted(1, 2));
        assert_eq!(b.inspect(1, 1, 5, |s| s.to_vec()), b"hello");
        assert_eq!(b.inspect(1, 2, 5, |s| s.to_vec()), b"world");
        assert!(!a.all_consumed(1, 1));
        b.consume(0, 1);
        b.consume(2, 1);
        assert!(a.all_consumed(1, 1));
    }

    #[test]
    fn epochs_compare_across_wrap_around() {
        assert!(reached(5, 5) && reached(6, 5) && !reached(4, 5));
        assert!(reached(2, u32::MAX) && !reached(u32::MAX, 2));
    }

    #[test]
    fn open_rejects_a_board_of_another_size() {
        let n = name("b");
        let _a = Board::create(&n, 2).unwrap();
        let err = Board::open(&n, 3).unwrap_err();
        Board::unlink(&n).unwrap();
        assert!(err.to_string().contains("not the"), "{err}");
    }
}
