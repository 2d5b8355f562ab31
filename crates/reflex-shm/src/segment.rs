//! The node's shared segment: a header, one slot per rank, and one ring per ordered pair of ranks.
//!
//! Layout (offsets from the start of the mapping; `L` = [`CACHE_PAD`], 128 bytes on x86_64; `n` =
//! ranks on the node; `P` = `n * (n - 1)` rings, one per ordered pair):
//!
//! ```text
//!  0        +------------------------------------------------------------+
//!           | SegHeader: magic, version, nranks, ring_bytes, cell_bytes, |  1 line
//!           |   line_bytes, total_bytes, data_offset                     |
//!  L        +------------------------------------------------------------+
//!           | RankSlot[0]: pid, doorbell (futex word), sleeping          |  1 line each
//!           | ...                                                        |
//!           | RankSlot[n-1]                                              |
//!  L(1+n)   +------------------------------------------------------------+
//!           | RingCtl[0]: consumer's published tail                      |  1 line each
//!           | ...                                                        |
//!           | RingCtl[P-1]                                               |
//!  coop     +------------------------------------------------------------+
//!           | CoopSlot[pair 0][0..COOP_SLOTS]: claim, done, destination  |  1 line each
//!           | ...                                                        |
//!           | CoopSlot[pair P-1][..]                                     |
//!           +------------------------------------------------------------+  rounded up to 4 KiB
//!  data     | ring 0: ring_bytes of 64-byte cells                        |
//!           | ...                                                        |
//!           | ring P-1                                                   |
//!  total    +------------------------------------------------------------+
//!
//!  ring of (src -> dst) = src * (n - 1) + (dst if dst < src else dst - 1)
//! ```
//!
//! Each independently written word has its own line: the header is written once; a rank slot is
//! read by every sender (the sleeping flag) and written only when its owner sleeps or is woken; a
//! ring's control line is written by its consumer only; a cooperative-copy slot
//! (`reflex_base::coop`) by the two ranks of its pair, one message at a time. Ring data is page-aligned, and tmpfs
//! allocates pages on first touch, so idle pairs cost nothing: 64 ranks with 64 KiB rings reserve
//! 252 MiB of address space but touch only the rings in use.
//!
//! The creator fills the header and stores `magic` last (Release); [`ShmSegment::open`] checks it
//! (Acquire) and every field against the layout it computes itself before trusting any offset.

use crate::ring::{self, RingCtl, RingMem, CELL};
use reflex_base::cache::{CachePadded, CACHE_PAD};
use reflex_base::coop::CoopSlot;
use reflex_base::segment::Segment;
use std::io;
use std::mem::{offset_of, size_of};
use std::ptr::{addr_of_mut, NonNull};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// `"REFLXSHM"`: marks an initialised Reflex segment.
pub const MAGIC: u64 = u64::from_le_bytes(*b"REFLXSHM");
/// Layout version; bumped on any change to this file's shared structures.
pub const VERSION: u32 = 2;
/// Most ranks per node (the control lines grow with the square of it).
pub const MAX_RANKS: usize = 1024;
/// Cooperative-copy slots per ordered pair: as many large messages in flight at once as
/// `bench/pt2pt.c`'s window (64); further ones take the receiver-only copy.
pub const COOP_SLOTS: usize = 64;
/// Default bytes per ring: 64 KiB takes 16 KiB packets (a quarter) and keeps 64 ranks at 252 MiB.
/// The smallest ring [`ShmParams::for_node`] chooses.
pub const DEFAULT_RING_BYTES: usize = 64 << 10;
/// The largest ring [`ShmParams::for_node`] chooses.
pub const MAX_AUTO_RING_BYTES: usize = 1 << 20;
/// Bytes of incoming rings per rank that [`ShmParams::for_node`] aims at: 1 MiB rings for up to
/// 5 ranks, 512 KiB up to 9, 256 KiB up to 17, 128 KiB up to 33, 64 KiB beyond.
pub const RING_BUDGET: usize = 4 << 20;

/// Node-wide parameters, fixed when the segment is created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShmParams {
    /// Bytes of cells per ring: a power of two in `ring::MIN_RING_BYTES..=ring::MAX_RING_BYTES`.
    pub ring_bytes: usize,
}

impl Default for ShmParams {
    fn default() -> Self {
        Self {
            ring_bytes: DEFAULT_RING_BYTES,
        }
    }
}

impl ShmParams {
    /// Rings sized for a node of `nranks` ranks when `free` bytes of `/dev/shm` are free.
    ///
    /// A ring holds what a sender may run ahead of its receiver: with 64 KiB, fifteen 4 KiB
    /// messages, and a window of them in both directions at once stalls on full rings (2 ranks,
    /// `pt2pt -t bibw`, 2-8 KiB: 6.4-9.0 GB/s against 15-32 with 1 MiB rings; one way 5.7-8.5
    /// against 9.2-26, 2026-11-27). So a rank gets about [`RING_BUDGET`] of incoming rings:
    /// `RING_BUDGET / (nranks - 1)` rounded down to a power of two, within
    /// [`DEFAULT_RING_BYTES`]..=[`MAX_AUTO_RING_BYTES`], then halved (not below the default)
    /// until the segment takes at most half of the free space, so that small `/dev/shm` mounts
    /// (containers often have 64 MiB) still take the job. tmpfs gives pages on first touch: the
    /// memory used is that of the rings that carry traffic.
    pub fn for_node(nranks: usize, free: u64) -> ShmParams {
        let share = RING_BUDGET / nranks.saturating_sub(1).max(1);
        let mut ring_bytes =
            (1usize << share.max(1).ilog2()).clamp(DEFAULT_RING_BYTES, MAX_AUTO_RING_BYTES);
        let fits = |ring| Layout::new(nranks, ring).is_ok_and(|l| l.total as u64 <= free / 2);
        while ring_bytes > DEFAULT_RING_BYTES && !fits(ring_bytes) {
            ring_bytes /= 2;
        }
        ShmParams { ring_bytes }
    }
}

/// The first line of a segment.
#[repr(C)]
struct SegHeader {
    /// [`MAGIC`] once the creator finished initialising; 0 before.
    magic: AtomicU64,
    /// [`VERSION`].
    version: u32,
    /// Ranks on the node.
    nranks: u32,
    /// Bytes of cells per ring.
    ring_bytes: u32,
    /// [`CELL`], so a build with another cell size refuses the segment.
    cell_bytes: u32,
    /// [`CACHE_PAD`], likewise.
    line_bytes: u32,
    _reserved: u32,
    /// Size of the whole segment.
    total_bytes: u64,
    /// Offset of ring 0's cells.
    data_offset: u64,
}

const _: () = {
    assert!(size_of::<SegHeader>() == 48);
    assert!(offset_of!(SegHeader, magic) == 0);
    assert!(offset_of!(SegHeader, version) == 8);
    assert!(offset_of!(SegHeader, nranks) == 12);
    assert!(offset_of!(SegHeader, ring_bytes) == 16);
    assert!(offset_of!(SegHeader, line_bytes) == 24);
    assert!(offset_of!(SegHeader, total_bytes) == 32);
    assert!(size_of::<CachePadded<SegHeader>>() == CACHE_PAD);
};

/// One rank's line: who it is and how to wake it.
#[repr(C)]
pub(crate) struct RankSlot {
    /// Process id of the rank once attached (0 before); set by its owner, read by peers (CMA).
    pub(crate) pid: AtomicU32,
    /// Futex word: bumped by a sender that wakes the owner.
    pub(crate) doorbell: AtomicU32,
    /// 1 while the owner is (about to be) asleep on `doorbell`, else 0.
    pub(crate) sleeping: AtomicU32,
    _reserved: u32,
}

const _: () = {
    assert!(size_of::<RankSlot>() == 16);
    assert!(offset_of!(RankSlot, pid) == 0);
    assert!(offset_of!(RankSlot, doorbell) == 4);
    assert!(offset_of!(RankSlot, sleeping) == 8);
    assert!(size_of::<CachePadded<RankSlot>>() == CACHE_PAD);
};

/// Where everything is, for `nranks` ranks and rings of `ring_bytes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Layout {
    nranks: usize,
    ring_bytes: usize,
    ctl_offset: usize,
    coop_offset: usize,
    data_offset: usize,
    total: usize,
}

impl Layout {
    fn new(nranks: usize, ring_bytes: usize) -> Result<Layout, String> {
        if !(1..=MAX_RANKS).contains(&nranks) {
            return Err(format!(
                "invalid rank count {nranks}: want 1 to {MAX_RANKS}"
            ));
        }
        ring::ring_cells(ring_bytes)?;
        let pairs = nranks * (nranks - 1);
        let ctl_offset = CACHE_PAD * (1 + nranks);
        let coop_offset = ctl_offset + pairs * CACHE_PAD;
        let data_offset = (coop_offset + pairs * COOP_SLOTS * CACHE_PAD).next_multiple_of(4096);
        let total = pairs
            .checked_mul(ring_bytes)
            .and_then(|d| d.checked_add(data_offset))
            .ok_or_else(|| {
                format!("{nranks} ranks with {ring_bytes}-byte rings overflow the address space")
            })?;
        Ok(Layout {
            nranks,
            ring_bytes,
            ctl_offset,
            coop_offset,
            data_offset,
            total,
        })
    }

    fn pair(&self, src: usize, dst: usize) -> usize {
        debug_assert!(src != dst && src < self.nranks && dst < self.nranks);
        src * (self.nranks - 1) + dst - usize::from(dst > src)
    }
}

/// A mapped node segment, created by the node's leader or opened by the other ranks.
#[derive(Debug)]
pub struct ShmSegment {
    seg: Segment,
    layout: Layout,
}

impl ShmSegment {
    /// Creates and initialises `/dev/shm/<name>` for `nranks` ranks.
    pub fn create(name: &str, nranks: usize, params: &ShmParams) -> io::Result<ShmSegment> {
        let layout = Layout::new(nranks, params.ring_bytes).map_err(|m| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("shared segment {name}: {m}"),
            )
        })?;
        let seg = Segment::create(name, layout.total)?;
        let header = seg.as_ptr().cast::<SegHeader>();
        // SAFETY: the segment is freshly created, page-aligned, at least one line long, and nobody
        // else reads it before `magic` is set; the fields are written in place, magic last.
        unsafe {
            addr_of_mut!((*header).version).write(VERSION);
            addr_of_mut!((*header).nranks).write(nranks as u32);
            addr_of_mut!((*header).ring_bytes).write(layout.ring_bytes as u32);
            addr_of_mut!((*header).cell_bytes).write(CELL as u32);
            addr_of_mut!((*header).line_bytes).write(CACHE_PAD as u32);
            addr_of_mut!((*header).total_bytes).write(layout.total as u64);
            addr_of_mut!((*header).data_offset).write(layout.data_offset as u64);
            (*header).magic.store(MAGIC, Ordering::Release);
        }
        Ok(ShmSegment { seg, layout })
    }

    /// Maps `/dev/shm/<name>`, created by the node's leader, and checks its header.
    pub fn open(name: &str) -> io::Result<ShmSegment> {
        let seg = Segment::open(name)?;
        let bad = |what: String| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("shared segment {name}: {what}"),
            )
        };
        if seg.len() < CACHE_PAD {
            return Err(bad(format!(
                "too small ({} bytes) to be a reflex segment",
                seg.len()
            )));
        }
        // SAFETY: the mapping is page-aligned and at least one line (>= size_of::<SegHeader>()) long.
        let header = unsafe { &*seg.as_ptr().cast::<SegHeader>() };
        match header.magic.load(Ordering::Acquire) {
            MAGIC => {}
            0 => {
                return Err(bad(
                    "not initialised yet (open it after the creator's barrier)".into(),
                ))
            }
            m => return Err(bad(format!("not a reflex segment (magic {m:#x})"))),
        }
        if header.version != VERSION {
            return Err(bad(format!(
                "layout version {} but this library speaks {VERSION}",
                header.version
            )));
        }
        if header.cell_bytes as usize != CELL || header.line_bytes as usize != CACHE_PAD {
            return Err(bad(format!(
                "built for {}-byte cells and {}-byte lines, this library uses {CELL} and {CACHE_PAD}",
                header.cell_bytes, header.line_bytes
            )));
        }
        let layout =
            Layout::new(header.nranks as usize, header.ring_bytes as usize).map_err(bad)?;
        if header.total_bytes != layout.total as u64
            || header.data_offset != layout.data_offset as u64
            || seg.len() != layout.total
        {
            return Err(bad(format!(
                "size {} (header says {}) does not match the layout of {} ranks x {}-byte rings ({})",
                seg.len(),
                header.total_bytes,
                layout.nranks,
                layout.ring_bytes,
                layout.total
            )));
        }
        Ok(ShmSegment { seg, layout })
    }

    /// Ranks on the node.
    pub fn nranks(&self) -> usize {
        self.layout.nranks
    }

    /// Bytes of cells per ring.
    pub fn ring_bytes(&self) -> usize {
        self.layout.ring_bytes
    }

    /// Largest packet the rings carry.
    pub fn max_packet(&self) -> usize {
        ring::max_packet(self.layout.ring_bytes)
    }

    /// The segment's name in `/dev/shm`.
    pub fn name(&self) -> &str {
        self.seg.name()
    }

    /// Size of the mapping in bytes.
    pub fn len(&self) -> usize {
        self.seg.len()
    }

    /// Always false: a segment holds at least its header.
    pub fn is_empty(&self) -> bool {
        self.seg.is_empty()
    }

    /// The process id of `rank` once it has attached a transport, for single-copy transfers.
    pub fn pid(&self, rank: usize) -> Option<u32> {
        (rank < self.layout.nranks)
            .then(|| self.slot(rank).pid.load(Ordering::Acquire))
            .filter(|&p| p != 0)
    }

    /// The line of `rank` (`rank < nranks`).
    #[inline]
    pub(crate) fn slot(&self, rank: usize) -> &RankSlot {
        assert!(
            rank < self.layout.nranks,
            "shm: rank {rank} out of range ({} ranks)",
            self.layout.nranks
        );
        // SAFETY: in range, slots start one line in, each a CachePadded<RankSlot> (aligned); the
        // mapping outlives the borrow of `self`; all fields written concurrently are atomics.
        unsafe {
            &*self
                .seg
                .as_ptr()
                .add(CACHE_PAD * (1 + rank))
                .cast::<CachePadded<RankSlot>>()
        }
    }

    /// The cooperative-copy slots of messages from `src` to `dst` (`src != dst`, both in range).
    pub fn coop_slots(&self, src: usize, dst: usize) -> &[CachePadded<CoopSlot>] {
        let pair = self.layout.pair(src, dst);
        // SAFETY: `pair < n(n-1)`, so the pair's COOP_SLOTS lines lie inside the mapping as laid
        // out by `Layout` (checked against the file size), aligned to CACHE_PAD; the segment was
        // zero-filled at creation (a valid `CoopSlot`: all atomics); the mapping outlives the
        // borrow of `self`; every field is an atomic, so shared access across processes is sound.
        unsafe {
            std::slice::from_raw_parts(
                self.seg
                    .as_ptr()
                    .add(self.layout.coop_offset + pair * COOP_SLOTS * CACHE_PAD)
                    .cast::<CachePadded<CoopSlot>>(),
                COOP_SLOTS,
            )
        }
    }

    /// The memory of the ring from `src` to `dst` (`src != dst`, both in range).
    pub(crate) fn ring(&self, src: usize, dst: usize) -> RingMem {
        let pair = self.layout.pair(src, dst);
        let base = self.seg.as_ptr();
        // SAFETY: `pair < n(n-1)`, so the control line and the cells lie inside the mapping as laid
        // out by `Layout` (checked against the file size); both are aligned (lines to CACHE_PAD,
        // cells to a page); the segment was zero-filled at creation; ring_bytes / CELL is a power
        // of two (validated). The view must not outlive `self`: only ShmTransport uses it, and it
        // drops its endpoints before the segment.
        unsafe {
            let ctl = NonNull::new_unchecked(
                base.add(self.layout.ctl_offset + pair * CACHE_PAD)
                    .cast::<RingCtl>(),
            );
            let cells = NonNull::new_unchecked(
                base.add(self.layout.data_offset + pair * self.layout.ring_bytes),
            );
            RingMem::new(ctl, cells, (self.layout.ring_bytes / CELL) as u64)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reflex_base::segment::{segment_name, unlink};

    pub(crate) fn test_name(tag: &str) -> String {
        segment_name(&format!("shmtest{}-{tag}", std::process::id()), 0)
    }

    #[test]
    fn layout_is_dense_and_page_aligned() {
        let l = Layout::new(64, DEFAULT_RING_BYTES).unwrap();
        assert_eq!(l.data_offset % 4096, 0);
        assert_eq!(l.total, l.data_offset + 64 * 63 * DEFAULT_RING_BYTES);
        assert!(
            l.total < 290 << 20,
            "64 ranks stay near 252 MiB of rings + 32 MiB of copy slots: {}",
            l.total
        );
        let l = Layout::new(4, 1024).unwrap();
        let pairs: Vec<usize> = (0..4)
            .flat_map(|s| (0..4).filter(move |&d| d != s).map(move |d| (s, d)))
            .map(|(s, d)| l.pair(s, d))
            .collect();
        assert_eq!(pairs, (0..12).collect::<Vec<_>>());
        assert_eq!(Layout::new(1, 1024).unwrap().total, 4096);
        assert_eq!(l.coop_offset, l.ctl_offset + 12 * CACHE_PAD);
        assert!(l.coop_offset + 12 * COOP_SLOTS * CACHE_PAD <= l.data_offset);
        assert!(Layout::new(0, 1024).is_err());
        assert!(Layout::new(MAX_RANKS + 1, 1024).is_err());
        assert!(Layout::new(4, 1000).is_err());
    }

    #[test]
    fn rings_are_sized_by_the_node_and_the_free_space() {
        let plenty = u64::MAX;
        let ring = |n, free| ShmParams::for_node(n, free).ring_bytes;
        let by_ranks: Vec<usize> = [1, 2, 5, 6, 9, 10, 17, 18, 33, 34, 64, 1024]
            .iter()
            .map(|&n| ring(n, plenty) >> 10)
            .collect();
        assert_eq!(
            by_ranks,
            [1024, 1024, 1024, 512, 512, 256, 256, 128, 128, 64, 64, 64]
        );
        // 8 ranks want 512 KiB rings (28 MiB of segment); 64 MiB free takes them, 40 MiB halves
        // them, and with almost nothing free the default stays (creation then says why it fails).
        let total = |n, ring| Layout::new(n, ring).unwrap().total as u64;
        assert!(total(8, 512 << 10) <= 32 << 20);
        assert_eq!(ring(8, 64 << 20), 512 << 10);
        assert_eq!(ring(8, 40 << 20), 256 << 10);
        assert_eq!(ring(8, 1 << 20), DEFAULT_RING_BYTES);
        for n in [2, 7, 100] {
            for free in [0, 1 << 20, 64 << 20, 1 << 30, plenty] {
                let r = ring(n, free);
                assert!(Layout::new(n, r).is_ok(), "{n} ranks, {free} free: {r}");
                assert!(r == DEFAULT_RING_BYTES || total(n, r) <= free / 2);
            }
        }
    }

    #[test]
    fn open_sees_what_create_wrote() {
        let name = test_name("open");
        let params = ShmParams { ring_bytes: 4096 };
        let a = ShmSegment::create(&name, 3, &params).unwrap();
        let b = ShmSegment::open(&name).unwrap();
        unlink(&name).unwrap();
        assert_eq!(
            (b.nranks(), b.ring_bytes(), b.max_packet(), b.len()),
            (3, 4096, 1016, a.len())
        );
        assert_eq!(b.pid(0), None);
        a.slot(2).pid.store(77, Ordering::Release);
        assert_eq!(b.pid(2), Some(77));
        assert_eq!(b.pid(3), None);
    }

    /// Damages the header in way `which`; returns the words the refusal must contain.
    fn damage(header: *mut SegHeader, which: usize) -> &'static str {
        // SAFETY: the header is mapped and only this thread touches the segment.
        unsafe {
            match which {
                0 => (*header).magic.store(1, Ordering::Release),
                1 => addr_of_mut!((*header).version).write(VERSION + 1),
                _ => addr_of_mut!((*header).nranks).write(3),
            }
        }
        ["not a reflex", "version", "does not match"][which.min(2)]
    }

    #[test]
    fn open_refuses_foreign_or_damaged_segments() {
        let name = test_name("damaged");
        for which in 0..3 {
            let seg = ShmSegment::create(&name, 2, &ShmParams { ring_bytes: 1024 }).unwrap();
            let want = damage(seg.seg.as_ptr().cast(), which);
            let err = ShmSegment::open(&name).unwrap_err();
            unlink(&name).unwrap();
            assert!(err.to_string().contains(want), "{err}");
            assert!(err.to_string().contains(&name), "{err}");
        }
        let err = ShmSegment::create(&name, 0, &ShmParams::default()).unwrap_err();
        assert!(err.to_string().contains("rank count"), "{err}");
    }
}
