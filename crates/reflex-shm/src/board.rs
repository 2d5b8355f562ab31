//! The collective board: shared memory where the ranks of one communicator on one node publish
//! data and flags for the shared-memory collectives (the Bill-Board Protocol of the
//! reflective-memory papers, `shared/reference/seed000c.md` P2, on cache-coherent memory).
//!
//! Layout (`L` = [`CACHE_PAD`] bytes, `n` ranks, `S` = [`SLOT_BYTES`], `K` = [`Board::slots`]):
//!
//! ```text
//!  0          header: magic, ranks, slot bytes, slots per rank         1 line
//!  L          posted[0..n]:   epoch of the rank's last barrier         1 line each
//!  L(1+n)     consumed[0..n]: epoch up to which the rank has read      1 line each
//!  L(1+2n)    slot[0..n][0..K]: S bytes each, L bytes apart: epoch (u32), length (u32), data
//! ```
//!
//! The line between two slots staggers their first lines across cache sets: at a 32 KiB stride
//! every slot's flag line would fall in the same set of the L1 cache (set index bits 6-11).
//!
//! Every word has one writer (its rank) and is read by the others, so nothing is ever reset:
//! collectives are numbered by epochs (1, 2, 3, … per communicator, wrapping). A rank publishes
//! collective e by writing its slot e mod K, data first, then the length and (Release) the epoch
//! in the slot's first word ([`Board::publish`]); a reader waits for that word, so up to 56 bytes
//! of data arrive with their flag in one cache line (one line transfer per small collective, the
//! fastbox idea; a separate flag word cost a second transfer). A rank
//! *consumes* e once it has read what it needs from the others, and may overwrite its slot for
//! collective e only after every other rank consumed e − K ([`Board::all_consumed`]): that is
//! the acknowledgement of the paper's protocol, folded into one counter per rank. The K slots let
//! a rank run up to K collectives ahead of the slowest reader, and the writer remembers how far
//! everyone had consumed when it last looked, so it reads the others' counters about once per
//! K collectives instead of at every one. K (a power of two) is 64 for up to 16 ranks (back-to-back broadcasts
//! and reduces from one root, and oversubscribed ranks, run ahead that far), falling to 8 as
//! ranks grow so that the board takes at most 32 MiB of address space up to 128 ranks (pages are
//! only touched as slots are used). Barriers use the `posted` words only.
//!
//! The creator fills the header and stores the magic last; [`Board::open`] checks it. Waiting is
//! the caller's business (the engine keeps its progress running while it polls these words).

use reflex_base::cache::CACHE_PAD;
use reflex_base::segment::{self, Segment};
use std::io;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// `"REFLXBRD"`: marks an initialised board.
const MAGIC: u64 = u64::from_le_bytes(*b"REFLXBRD");
/// Bytes of one slot, its header included.
pub const SLOT_BYTES: usize = 32 << 10;
/// Bytes at the start of a slot before the data: the epoch and the length (`u32` each).
const SLOT_HEADER: usize = 8;
/// Bytes of data a rank can publish in one collective.
pub const SLOT_DATA: usize = SLOT_BYTES - SLOT_HEADER;
/// Bytes of one hardware cache line (what one transfer between cores moves).
const LINE: usize = 64;
/// Most lines of a slot that [`Board::prefetch`] loads (small operands: 248 bytes of data).
const PREFETCH_LINES: usize = 4;
/// Most slots per rank, used in turn by consecutive epochs (with ≤ 16 ranks).
pub const MAX_SLOTS: usize = 64;
/// Fewest slots per rank (from 128 ranks).
pub const MIN_SLOTS: usize = 8;
/// Most ranks of one board.
pub const MAX_BOARD_RANKS: usize = 1024;

/// A mapped collective board.
#[derive(Debug)]
pub struct Board {
    seg: Segment,
    nranks: usize,
    slots: usize,
    /// An epoch every other rank was seen to have consumed (private to this mapping).
    seen_consumed: AtomicU32,
}

fn bad(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

/// Slots per rank on a board of `nranks` ranks: at most 1024 slots in all, within
/// `MIN_SLOTS..=MAX_SLOTS`, and a power of two, so that finding an epoch's slot is a mask (a
/// division by a count known only at run time costs 10-20 cycles, several times per collective).
fn slots_for(nranks: usize) -> usize {
    let slots = (1024 / nranks.max(1)).clamp(MIN_SLOTS, MAX_SLOTS);
    1 << slots.ilog2()
}

/// Distance between the starts of two consecutive slots.
const SLOT_STRIDE: usize = SLOT_BYTES + CACHE_PAD;

fn size_for(nranks: usize) -> usize {
    CACHE_PAD * (1 + 2 * nranks) + SLOT_STRIDE * slots_for(nranks) * nranks
}

/// `a` is at or after `b` on the wrapping epoch line.
#[inline]
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
        let board = Board::mapped(Segment::create(name, size_for(nranks))?, nranks);
        let header = board.header();
        header[1].store(nranks as u64, Ordering::Relaxed);
        header[2].store(SLOT_BYTES as u64, Ordering::Relaxed);
        header[3].store(board.slots as u64, Ordering::Relaxed);
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
        let board = Board::mapped(seg, nranks);
        let header = board.header();
        let (magic, n) = (
            header[0].load(Ordering::Acquire),
            header[1].load(Ordering::Relaxed),
        );
        let (slot, slots) = (
            header[2].load(Ordering::Relaxed),
            header[3].load(Ordering::Relaxed),
        );
        let shape = (n, slot, slots) == (nranks as u64, SLOT_BYTES as u64, board.slots as u64);
        if magic != MAGIC || !shape {
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

    fn mapped(seg: Segment, nranks: usize) -> Board {
        Board {
            seg,
            nranks,
            slots: slots_for(nranks),
            seen_consumed: AtomicU32::new(0),
        }
    }

    /// Ranks of the board.
    #[inline]
    pub fn nranks(&self) -> usize {
        self.nranks
    }

    /// Slots per rank: a rank may run this many collectives ahead of the slowest reader.
    #[inline]
    pub fn slots(&self) -> usize {
        self.slots
    }

    fn header(&self) -> &[AtomicU64; 4] {
        // SAFETY: the mapping is at least one line long (checked by `open`, sized by `create`),
        // page-aligned, and lives as long as `self`; the four words are only accessed atomically.
        unsafe { &*self.seg.as_ptr().cast::<[AtomicU64; 4]>() }
    }

    fn word(&self, line: usize) -> &AtomicU32 {
        debug_assert!(line < 1 + 2 * self.nranks);
        let at = self.seg.as_ptr().wrapping_add(line * CACHE_PAD);
        // SAFETY: a control line inside the mapping (ranks < nranks), starting with an aligned
        // word only ever accessed atomically; the mapping lives as long as `self`.
        unsafe { &*at.cast::<AtomicU32>() }
    }

    #[inline]
    fn posted_word(&self, rank: usize) -> &AtomicU32 {
        assert!(rank < self.nranks, "rank {rank} is not on this board");
        self.word(1 + rank)
    }

    #[inline]
    fn consumed_word(&self, rank: usize) -> &AtomicU32 {
        assert!(rank < self.nranks, "rank {rank} is not on this board");
        self.word(1 + self.nranks + rank)
    }

    #[inline]
    fn slot(&self, rank: usize, epoch: u32) -> *mut u8 {
        assert!(rank < self.nranks, "rank {rank} is not on this board");
        let index = rank * self.slots + (epoch as usize & (self.slots - 1));
        let offset = CACHE_PAD * (1 + 2 * self.nranks) + SLOT_STRIDE * index;
        // SAFETY: the slot lies inside the mapping (see `size_for`).
        unsafe { self.seg.as_ptr().add(offset) }
    }

    /// The epoch (0) and length (1) words of `rank`'s slot of `epoch`.
    #[inline]
    fn slot_words(&self, rank: usize, epoch: u32) -> &[AtomicU32; 2] {
        // SAFETY: the slot starts line-aligned inside the mapping with its 8-byte header, whose
        // two words are only accessed atomically; the mapping lives as long as `self`.
        unsafe { &*self.slot(rank, epoch).cast::<[AtomicU32; 2]>() }
    }

    /// Lets `f` write the first `len` data bytes of `rank`'s slot of `epoch` in place (the
    /// caller is `rank`, and every other rank has consumed `epoch - slots`).
    #[inline]
    pub fn fill<R>(
        &self,
        rank: usize,
        epoch: u32,
        len: usize,
        f: impl FnOnce(&mut [u8]) -> R,
    ) -> R {
        self.fill_at(rank, epoch, 0, len, f)
    }

    /// The first data offset at or after `at` that begins a cache line, where bytes written
    /// behind published ones share no line with them.
    pub fn line_from(at: usize) -> usize {
        (SLOT_HEADER + at).next_multiple_of(CACHE_PAD) - SLOT_HEADER
    }

    /// Lets `f` write data bytes `at..at + len` of `rank`'s slot of `epoch` in place: before
    /// the slot's publication, or after it behind the published bytes (a second result of the
    /// same collective, which the writer then announces with [`Board::post`]).
    #[inline]
    pub fn fill_at<R>(
        &self,
        rank: usize,
        epoch: u32,
        at: usize,
        len: usize,
        f: impl FnOnce(&mut [u8]) -> R,
    ) -> R {
        assert!(at + len <= SLOT_DATA, "board slot overflow");
        // SAFETY: in bounds (asserted); by the protocol only `rank` writes this slot between the
        // others' consumption of its previous use and its next use, and readers of this epoch
        // read only published bytes, which the caller does not pass here; so this is the only
        // reference to these bytes; the data do not overlap the header words.
        let data = unsafe { self.slot(rank, epoch).add(SLOT_HEADER + at) };
        // SAFETY: as above.
        f(unsafe { std::slice::from_raw_parts_mut(data, len) })
    }

    /// Publishes `rank`'s slot of `epoch`, whose first `len` data bytes are written.
    #[inline]
    pub fn publish(&self, rank: usize, epoch: u32, len: usize) {
        assert!(len <= SLOT_DATA, "board slot overflow");
        let words = self.slot_words(rank, epoch);
        words[1].store(len as u32, Ordering::Relaxed);
        words[0].store(epoch, Ordering::Release);
    }

    /// Whether `rank` has published its slot of `epoch`.
    #[inline]
    pub fn has_published(&self, rank: usize, epoch: u32) -> bool {
        reached(
            self.slot_words(rank, epoch)[0].load(Ordering::Acquire),
            epoch,
        )
    }

    /// The length `rank` published for `epoch` (after [`Board::has_published`]).
    #[inline]
    pub fn published_len(&self, rank: usize, epoch: u32) -> usize {
        self.slot_words(rank, epoch)[1].load(Ordering::Relaxed) as usize
    }

    /// Lets `f` read the first `len` data bytes of `rank`'s slot of `epoch` in place (after
    /// seeing it published).
    #[inline]
    pub fn inspect<R>(&self, rank: usize, epoch: u32, len: usize, f: impl FnOnce(&[u8]) -> R) -> R {
        self.inspect_at(rank, epoch, 0, len, f)
    }

    /// Lets `f` read data bytes `at..at + len` of `rank`'s slot of `epoch` in place, after
    /// seeing them published (or posted, for bytes written behind the published ones).
    #[inline]
    pub fn inspect_at<R>(
        &self,
        rank: usize,
        epoch: u32,
        at: usize,
        len: usize,
        f: impl FnOnce(&[u8]) -> R,
    ) -> R {
        assert!(at + len <= SLOT_DATA, "board slot overflow");
        // SAFETY: in bounds (asserted); the owner does not write these bytes again before this
        // rank consumes `epoch` (whose publication or post it saw, Acquire), so they are stable
        // while `f` runs.
        let data = unsafe { self.slot(rank, epoch).add(SLOT_HEADER + at) };
        // SAFETY: as above.
        f(unsafe { std::slice::from_raw_parts(data, len) })
    }

    /// Starts loading the lines of `rank`'s slot of `epoch` that hold its header and `len`
    /// bytes of data (at most [`PREFETCH_LINES`] lines) into this core's cache, so that a reader
    /// that will wait for that slot next finds them on their way (a hint: no effect on what any
    /// load returns). Data past the first line would otherwise cost a second transfer after the
    /// flag was seen.
    #[inline]
    pub fn prefetch(&self, rank: usize, epoch: u32, len: usize) {
        let lines = (SLOT_HEADER + len).div_ceil(LINE).clamp(1, PREFETCH_LINES);
        let slot = self.slot(rank, epoch);
        for line in 0..lines {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: a prefetch is a hint that never faults and changes no architectural state;
            // the address is inside the slot anyway (PREFETCH_LINES lines < SLOT_BYTES).
            unsafe {
                use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
                _mm_prefetch::<_MM_HINT_T0>(slot.add(line * LINE).cast::<i8>());
            }
            #[cfg(not(target_arch = "x86_64"))]
            let _ = (slot, line);
        }
    }

    /// Posts barrier `epoch` of `rank`.
    #[inline]
    pub fn post(&self, rank: usize, epoch: u32) {
        self.posted_word(rank).store(epoch, Ordering::Release);
    }

    /// Whether `rank` has posted barrier `epoch` (or a later one).
    #[inline]
    pub fn has_posted(&self, rank: usize, epoch: u32) -> bool {
        reached(self.posted_word(rank).load(Ordering::Acquire), epoch)
    }

    /// Records that `rank` has read everything it needs of epoch `epoch`.
    #[inline]
    pub fn consume(&self, rank: usize, epoch: u32) {
        self.consumed_word(rank).store(epoch, Ordering::Release);
    }

    /// Whether every rank but `me` has consumed `epoch` (so `me` may overwrite its slot). Reads
    /// the others' counters only when what it saw last time does not answer; `me` is the same
    /// rank at every call on one mapping, and `epoch` does not go backwards.
    pub fn all_consumed(&self, me: usize, epoch: u32) -> bool {
        if reached(self.seen_consumed.load(Ordering::Relaxed), epoch) {
            return true;
        }
        let mut ahead = u32::MAX;
        for r in (0..self.nranks).filter(|&r| r != me) {
            let done = self.consumed_word(r).load(Ordering::Acquire);
            if !reached(done, epoch) {
                return false;
            }
            ahead = ahead.min(done.wrapping_sub(epoch));
        }
        let seen = epoch.wrapping_add(ahead.min(i32::MAX as u32));
        self.seen_consumed.store(seen, Ordering::Relaxed);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(tag: &str) -> String {
        format!("reflex-boardtest-{}.{tag}", std::process::id())
    }

    /// A board of `nranks` ranks mapped twice (creator, other), its name already removed.
    fn two_mappings(tag: &str, nranks: usize) -> (Board, Board) {
        let n = name(tag);
        let a = Board::create(&n, nranks).unwrap();
        let b = Board::open(&n, nranks).unwrap();
        Board::unlink(&n).unwrap();
        (a, b)
    }

    #[test]
    fn publishes_and_reads_across_mappings() {
        let (a, b) = two_mappings("a", 3);
        assert!(!b.has_published(1, 1));
        a.fill(1, 1, 5, |s| s.copy_from_slice(b"hello"));
        a.fill(1, 2, 3, |s| s.copy_from_slice(b"abc"));
        a.publish(1, 1, 5);
        assert!(b.has_published(1, 1) && !b.has_published(1, 2));
        a.publish(1, 2, 3);
        assert_eq!(b.published_len(1, 1), 5);
        assert_eq!(b.inspect(1, 1, 5, |s| s.to_vec()), b"hello");
        assert_eq!(b.published_len(1, 2), 3);
        assert_eq!(b.inspect(1, 2, 3, |s| s.to_vec()), b"abc");
        a.post(2, 7);
        assert!(b.has_posted(2, 7) && !b.has_posted(2, 8) && !b.has_posted(1, 1));
        assert!(!a.all_consumed(1, 1));
        b.consume(0, 1);
        b.consume(2, 1);
        assert!(a.all_consumed(1, 1));
    }

    #[test]
    fn bytes_behind_a_publication_are_posted_separately() {
        let (a, b) = two_mappings("behind", 2);
        a.fill(1, 1, 4, |s| s.copy_from_slice(b"oper"));
        a.publish(1, 1, 4);
        a.fill_at(1, 1, 64, 5, |s| s.copy_from_slice(b"piece"));
        a.post(1, 1);
        assert!(b.has_published(1, 1) && b.has_posted(1, 1));
        assert_eq!(b.inspect(1, 1, 4, |s| s.to_vec()), b"oper");
        assert_eq!(b.inspect_at(1, 1, 64, 5, |s| s.to_vec()), b"piece");
    }

    #[test]
    fn slots_are_reused_after_the_ring_goes_round() {
        let (a, b) = two_mappings("c", 2);
        let k = a.slots() as u32;
        assert_eq!(k as usize, MAX_SLOTS);
        a.fill(0, 1, 1, |s| s[0] = 1);
        a.publish(0, 1, 1);
        // Epoch 1 + k uses epoch 1's slot: the old publication is not the new one.
        assert!(b.has_published(0, 1) && !b.has_published(0, 1 + k));
        a.fill(0, 1 + k, 1, |s| s[0] = 2);
        a.publish(0, 1 + k, 1);
        assert!(b.has_published(0, 1 + k));
        assert_eq!(b.inspect(0, 1 + k, 1, |s| s[0]), 2);
    }

    #[test]
    fn the_writer_remembers_what_was_consumed_and_looks_again_when_it_must() {
        let (a, b) = two_mappings("d", 3);
        b.consume(1, 10);
        b.consume(2, 6);
        assert!(a.all_consumed(0, 5) && a.all_consumed(0, 6));
        assert!(!a.all_consumed(0, 7));
        b.consume(2, 12);
        assert!(a.all_consumed(0, 7) && a.all_consumed(0, 10));
        assert!(!a.all_consumed(0, 11));
    }

    #[test]
    fn boards_of_many_ranks_have_fewer_slots() {
        assert_eq!(slots_for(2), MAX_SLOTS);
        assert_eq!(slots_for(16), MAX_SLOTS);
        assert_eq!(slots_for(32), 32);
        assert_eq!(slots_for(24), 32);
        assert_eq!(slots_for(100), 8);
        assert_eq!(slots_for(1024), MIN_SLOTS);
        assert!((1..=MAX_BOARD_RANKS).all(|n| slots_for(n).is_power_of_two()));
        assert!(size_for(128) <= 33 << 20);
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
