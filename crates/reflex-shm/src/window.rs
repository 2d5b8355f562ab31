//! Shared-memory windows: one segment holding every rank's window memory plus a line of
//! synchronisation words per rank, mapped by all ranks of the window, so that one-sided
//! operations between them are plain loads, stores and hardware atomics (Memory Channel's
//! remotely writable regions, `shared/reference/seed002_003.md`, on cache-coherent memory; the
//! memory behind `MPI_Win_allocate_shared` and, on one node, `MPI_Win_allocate`).
//!
//! Layout (`L` = [`CACHE_PAD`] bytes, `n` ranks, `s_i` the size rank `i` asked for):
//!
//! ```text
//!  0        header: magic, ranks, data bytes                       1 line
//!  L        control[0..n]: lock word (u64), accumulate mutex (u32)  1 line each
//!  L(1+n)   pscw[0..n]: rank r's counters of posts and of completions  whole lines each
//!           made to it: posts[t] written by rank t, completions[o] by rank o (u32 each)
//!  ...      padding to a page, then the data: s_0 | s_1 | ... | s_{n-1}, back to back
//! ```
//!
//! The data of consecutive ranks is contiguous, as `MPI_Win_allocate_shared` promises by
//! default. The lock word implements `MPI_Win_lock`: [`EXCLUSIVE`] set by one exclusive holder,
//! or a count of shared holders. The accumulate mutex serialises accumulate operations on element
//! types that have no hardware atomic. The counters serve general active-target
//! synchronisation (`MPI_Win_post`/`start`/`complete`/`wait`) with no message: a target's post
//! adds one to `posts[target]` of each origin, an origin's complete adds one to
//! `completions[origin]` of each target, and the waiting side compares them with how many it
//! has already taken (at most one of each is ever outstanding per pair). The creator fills the header and stores the magic last;
//! [`WinSegment::open`] checks it against the layout the opener computed from the same sizes.

use reflex_base::buf::RecvBuf;
use reflex_base::cache::CACHE_PAD;
use reflex_base::segment::{self, Segment};
use std::io;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// `"REFLXWIN"`: marks an initialised window segment.
const MAGIC: u64 = u64::from_le_bytes(*b"REFLXWIN");
/// The lock word's exclusive bit; below it, the number of shared holders.
pub const EXCLUSIVE: u64 = 1 << 63;
const PAGE: usize = 4096;

/// A mapped shared window.
#[derive(Debug)]
pub struct WinSegment {
    seg: Segment,
    /// Byte offset of each rank's data inside the mapping, plus the end.
    starts: Vec<usize>,
}

fn bad(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

/// Bytes of one rank's PSCW counters in a window of `n` ranks (two `u32` per rank, whole lines).
fn pscw_block(n: usize) -> usize {
    (8 * n).div_ceil(CACHE_PAD) * CACHE_PAD
}

/// Offsets of each rank's data and the end, for `sizes`.
fn layout(sizes: &[usize]) -> io::Result<Vec<usize>> {
    let n = sizes.len();
    let control = CACHE_PAD * (1 + n) + n * pscw_block(n);
    let mut at = control.div_ceil(PAGE) * PAGE;
    let mut starts = Vec::with_capacity(sizes.len() + 1);
    for &s in sizes {
        starts.push(at);
        at = at
            .checked_add(s)
            .ok_or_else(|| bad("window sizes overflow".into()))?;
    }
    starts.push(at);
    Ok(starts)
}

impl WinSegment {
    /// Creates the segment `name` for ranks of the given data sizes (the file must not exist).
    pub fn create(name: &str, sizes: &[usize]) -> io::Result<WinSegment> {
        let starts = layout(sizes)?;
        let total = *starts.last().expect("at least the end");
        let win = WinSegment {
            seg: Segment::create(name, total.max(PAGE))?,
            starts,
        };
        let header = win.header();
        header[1].store(sizes.len() as u64, Ordering::Relaxed);
        header[2].store(total as u64, Ordering::Relaxed);
        header[0].store(MAGIC, Ordering::Release);
        Ok(win)
    }

    /// Maps the existing segment `name`, checking that it was made for these sizes.
    pub fn open(name: &str, sizes: &[usize]) -> io::Result<WinSegment> {
        let starts = layout(sizes)?;
        let total = *starts.last().expect("at least the end");
        let seg = Segment::open(name)?;
        if seg.len() != total.max(PAGE) {
            return Err(bad(format!(
                "window segment {name} has {} bytes, not {}",
                seg.len(),
                total.max(PAGE)
            )));
        }
        let win = WinSegment { seg, starts };
        let header = win.header();
        let ok = header[0].load(Ordering::Acquire) == MAGIC
            && header[1].load(Ordering::Relaxed) == sizes.len() as u64
            && header[2].load(Ordering::Relaxed) == total as u64;
        if !ok {
            return Err(bad(format!(
                "window segment {name} is not a window of these sizes"
            )));
        }
        Ok(win)
    }

    /// Removes the name of segment `name` (mappings stay valid).
    pub fn unlink(name: &str) -> io::Result<()> {
        segment::unlink(name)
    }

    /// Ranks of the window.
    pub fn nranks(&self) -> usize {
        self.starts.len() - 1
    }

    fn header(&self) -> &[AtomicU64; 3] {
        // SAFETY: the mapping is at least a page (see `create`/`open`), page-aligned, and lives as
        // long as `self`; the three words are only accessed atomically.
        unsafe { &*self.seg.as_ptr().cast::<[AtomicU64; 3]>() }
    }

    fn control(&self, rank: usize) -> *mut u8 {
        assert!(rank < self.nranks(), "rank {rank} is not in this window");
        self.seg.as_ptr().wrapping_add(CACHE_PAD * (1 + rank))
    }

    /// The `MPI_Win_lock` word of `rank` ([`EXCLUSIVE`] or a count of shared holders).
    pub fn lock_word(&self, rank: usize) -> &AtomicU64 {
        // SAFETY: a control line inside the mapping (rank checked), 8-aligned, only accessed
        // atomically; the mapping lives as long as `self`.
        unsafe { &*self.control(rank).cast::<AtomicU64>() }
    }

    /// The accumulate mutex of `rank` (0 free, 1 held).
    pub fn mutex_word(&self, rank: usize) -> &AtomicU32 {
        // SAFETY: as for `lock_word`, the word after it.
        unsafe { &*self.control(rank).wrapping_add(8).cast::<AtomicU32>() }
    }

    /// The `u32` counter `which` (0 posts, 1 completions) of `rank` that rank `from` writes.
    fn pscw_word(&self, rank: usize, which: usize, from: usize) -> &AtomicU32 {
        let n = self.nranks();
        assert!(
            rank < n && from < n,
            "rank {rank} or {from} is not in this window"
        );
        let at = CACHE_PAD * (1 + n) + rank * pscw_block(n) + 4 * (which * n + from);
        // SAFETY: a word of `rank`'s counter block (2n words) in the mapping, which outlives
        // `self`; ranks checked, 4-aligned, only accessed atomically.
        unsafe { &*self.seg.as_ptr().wrapping_add(at).cast::<AtomicU32>() }
    }

    /// How many times rank `target` posted (`MPI_Win_post`) an exposure epoch to `origin`.
    pub fn posts(&self, origin: usize, target: usize) -> &AtomicU32 {
        self.pscw_word(origin, 0, target)
    }

    /// How many times rank `origin` completed (`MPI_Win_complete`) an access epoch at `target`.
    pub fn completions(&self, target: usize, origin: usize) -> &AtomicU32 {
        self.pscw_word(target, 1, origin)
    }

    /// `rank`'s data, as memory every rank of the window may read and write.
    pub fn region(&self, rank: usize) -> RecvBuf {
        assert!(rank < self.nranks(), "rank {rank} is not in this window");
        let (start, end) = (self.starts[rank], self.starts[rank + 1]);
        // SAFETY: `start..end` lies inside the mapping, which the caller keeps (it holds `self`)
        // as long as it uses the buffer; concurrent access by other ranks is the MPI program's
        // business (RMA synchronisation), as for any window memory.
        unsafe { RecvBuf::from_raw(self.seg.as_ptr().wrapping_add(start), end - start) }
    }

    /// Address of `rank`'s data in this process (`MPI_Win_shared_query`), valid for size 0 too.
    pub fn region_addr(&self, rank: usize) -> usize {
        assert!(rank < self.nranks(), "rank {rank} is not in this window");
        self.seg.as_ptr() as usize + self.starts[rank]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reflex_base::buf::AtomicWidth;

    fn name(tag: &str) -> String {
        format!("reflex-wintest-{}.{tag}", std::process::id())
    }

    #[test]
    fn regions_are_contiguous_and_shared_between_mappings() {
        let n = name("a");
        let a = WinSegment::create(&n, &[10, 0, 6]).unwrap();
        let b = WinSegment::open(&n, &[10, 0, 6]).unwrap();
        WinSegment::unlink(&n).unwrap();
        assert_eq!(a.region_addr(1) - a.region_addr(0), 10);
        assert_eq!(a.region_addr(2), a.region_addr(1));
        assert!(a.region(1).is_empty());
        a.region(2).as_mut_slice().copy_from_slice(b"shared");
        assert_eq!(b.region(2).as_slice(), b"shared");
        b.lock_word(0).fetch_add(1, Ordering::AcqRel);
        assert_eq!(a.lock_word(0).load(Ordering::Acquire), 1);
    }

    #[test]
    fn atomic_updates_are_seen_through_every_mapping() {
        let n = name("b");
        let a = WinSegment::create(&n, &[16]).unwrap();
        let b = WinSegment::open(&n, &[16]).unwrap();
        WinSegment::unlink(&n).unwrap();
        for _ in 0..5 {
            a.region(0).atomic_update(8, AtomicWidth::W8, |v| v + 2);
            b.region(0).atomic_update(8, AtomicWidth::W8, |v| v + 1);
        }
        let old = a.region(0).atomic_update(8, AtomicWidth::W8, |v| v);
        assert_eq!(old, Some(15));
        assert_eq!(a.region(0).atomic_update(3, AtomicWidth::W4, |v| v), None);
    }

    #[test]
    fn pscw_counters_are_one_word_per_pair_and_direction() {
        let n = name("d");
        let a = WinSegment::create(&n, &[8; 20]).unwrap();
        let b = WinSegment::open(&n, &[8; 20]).unwrap();
        WinSegment::unlink(&n).unwrap();
        for r in 0..20 {
            for t in 0..20 {
                a.posts(r, t)
                    .fetch_add((100 * r + t) as u32, Ordering::Release);
                a.completions(r, t)
                    .fetch_add((10000 + 100 * r + t) as u32, Ordering::Release);
            }
        }
        for r in 0..20 {
            for t in 0..20 {
                assert_eq!(b.posts(r, t).load(Ordering::Acquire), (100 * r + t) as u32);
                let done = b.completions(r, t).load(Ordering::Acquire);
                assert_eq!(done, (10000 + 100 * r + t) as u32);
            }
        }
        assert!(
            b.region(0).as_slice().iter().all(|&x| x == 0),
            "counters stay off the data"
        );
        assert_eq!(a.lock_word(19).load(Ordering::Acquire), 0);
    }

    #[test]
    fn open_rejects_other_sizes() {
        let n = name("c");
        let _a = WinSegment::create(&n, &[100, 100]).unwrap();
        assert!(WinSegment::open(&n, &[100, 101]).is_err());
        WinSegment::unlink(&n).unwrap();
    }
}
