//! The shared counters of a cooperative copy: the sender and the receiver of one large message
//! both copy it, chunk by chunk, each claiming the next chunk from one shared word.
//!
//! A [`CoopSlot`] lives in memory both processes map (the node segment, one array per ordered
//! pair of ranks). The receiver owns the slot: it [`CoopSlot::open`]s it for one message (a new
//! generation), tells the sender the slot and generation (a packet), and starts copying at once;
//! the sender joins whenever it polls. Each side takes the next chunk with [`CoopSlot::claim`],
//! copies it (the receiver with `process_vm_readv`, the sender with `process_vm_writev`) and
//! counts it with [`CoopSlot::finish`]. The message is complete when [`CoopSlot::progress`] says
//! every chunk is done; only then may the receiver reuse the slot and the sender its buffer.
//!
//! ```text
//! claim  u64: generation (bits 32..64) | chunks (bits 16..32) | next chunk (bits 0..16)
//! done   u64: chunks copied | ABORTED (bit 63)
//! dst, len, chunk u64; pid u32       written by the receiver before `claim`, read after a claim
//! ```
//!
//! Why a claim is safe against reuse: a claim is a compare-and-swap that also checks the
//! generation and the chunk count, so it never changes another message's word, and a successful
//! claim holds the message open (`done` cannot reach the count before the claimant finishes), so
//! the fields the claimant reads after it still describe its message. A sender that lost the
//! race (the message finished, or the slot was reopened) finds no chunk and stops. A side whose
//! copy fails marks the message [`CoopProgress::Aborted`]; the receiver then copies it all alone.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Most chunks of one message (the width of a claim word's counters).
pub const MAX_CHUNKS: usize = u16::MAX as usize;

/// Bit of `done` set by a side whose copy failed.
const ABORTED: u64 = 1 << 63;

/// The counters and destination of one cooperative copy (see the module docs for the protocol).
#[repr(C)]
#[derive(Debug, Default)]
pub struct CoopSlot {
    claim: AtomicU64,
    done: AtomicU64,
    dst: AtomicU64,
    len: AtomicU64,
    chunk: AtomicU64,
    pid: AtomicU32,
    _reserved: u32,
}

const _: () = assert!(std::mem::size_of::<CoopSlot>() == 48);

/// What a receiver publishes when it opens a slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CoopTarget {
    /// The receiver's process.
    pub pid: u32,
    /// Address of the receive buffer in that process.
    pub dst: u64,
    /// Bytes to copy (the message, cut to the receive buffer).
    pub len: usize,
    /// Bytes per chunk (the last one may be shorter).
    pub chunk: usize,
}

impl CoopTarget {
    /// How many chunks the copy has, when it fits [`MAX_CHUNKS`] and has any.
    pub fn chunks(&self) -> Option<usize> {
        let n = self.len.div_ceil(self.chunk.max(1));
        (1..=MAX_CHUNKS).contains(&n).then_some(n)
    }

    /// Byte range `(offset, len)` of chunk `index`.
    pub fn range(&self, index: usize) -> (usize, usize) {
        let offset = index * self.chunk;
        (offset, self.chunk.min(self.len - offset))
    }
}

/// A run of chunks won by [`CoopSlot::claim`]: its byte range and the receiver's buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Claimed {
    /// Offset of the chunk in the message.
    pub offset: usize,
    /// Bytes in the run.
    pub len: usize,
    /// Chunks in the run.
    pub chunks: usize,
    /// The receiver and its buffer.
    pub target: CoopTarget,
}

/// Where a copy stands, as the receiver sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CoopProgress {
    /// Chunks are still being copied (this many are done).
    Copying(usize),
    /// Every chunk is copied.
    Done,
    /// A side failed to copy a chunk it had claimed; no side copies any more.
    Aborted,
}

fn pack(generation: u32, chunks: usize, next: usize) -> u64 {
    (u64::from(generation) << 32) | ((chunks as u64) << 16) | next as u64
}

impl CoopSlot {
    /// Receiver: starts a new copy in this (free) slot; returns its generation, or `None` when
    /// `target` has no chunks or more than [`MAX_CHUNKS`].
    pub fn open(&self, target: CoopTarget) -> Option<u32> {
        let chunks = target.chunks()?;
        let generation = ((self.claim.load(Ordering::Relaxed) >> 32) as u32).wrapping_add(1);
        self.done.store(0, Ordering::Relaxed);
        self.dst.store(target.dst, Ordering::Relaxed);
        self.len.store(target.len as u64, Ordering::Relaxed);
        self.chunk.store(target.chunk as u64, Ordering::Relaxed);
        self.pid.store(target.pid, Ordering::Relaxed);
        self.claim
            .store(pack(generation, chunks, 0), Ordering::Release);
        Some(generation)
    }

    /// Either side: takes the next chunk of copy `generation`, or `None` when it has no chunk
    /// left (or the slot moved on to another copy).
    pub fn claim(&self, generation: u32) -> Option<Claimed> {
        self.claim_share(generation, 1)
    }

    /// Either side: takes the next chunks of copy `generation`, as one run: half of those left
    /// (guided self-scheduling, so that the other side still finds work and the two finish
    /// together), at least 1 and at most `most`; `None` when none is left.
    pub fn claim_share(&self, generation: u32, most: usize) -> Option<Claimed> {
        self.claim_run(generation, |left| (left / 2).clamp(1, most.max(1)))
    }

    /// Either side: takes every chunk of copy `generation` still left, up to `most`, as one run
    /// (when the other side is busy elsewhere and would not help); `None` when none is left.
    pub fn claim_rest(&self, generation: u32, most: usize) -> Option<Claimed> {
        self.claim_run(generation, |left| left.min(most.max(1)))
    }

    /// Takes `take(left)` chunks (at least 1, at most `left`) of copy `generation`.
    fn claim_run(&self, generation: u32, take: impl Fn(usize) -> usize) -> Option<Claimed> {
        let mut word = self.claim.load(Ordering::Acquire);
        loop {
            let chunks = ((word >> 16) & 0xffff) as usize;
            let next = (word & 0xffff) as usize;
            if (word >> 32) as u32 != generation || next >= chunks {
                return None;
            }
            let take = take(chunks - next).clamp(1, chunks - next);
            match self.claim.compare_exchange_weak(
                word,
                word + take as u64,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => break Some(self.claimed(next, take)),
                Err(now) => word = now,
            }
        }
    }

    /// Chunks `index..index + count` of the copy this slot holds (valid while a claim holds it
    /// open).
    fn claimed(&self, index: usize, count: usize) -> Claimed {
        let target = CoopTarget {
            pid: self.pid.load(Ordering::Relaxed),
            dst: self.dst.load(Ordering::Relaxed),
            len: self.len.load(Ordering::Relaxed) as usize,
            chunk: self.chunk.load(Ordering::Relaxed) as usize,
        };
        let (offset, _) = target.range(index);
        let (last, last_len) = target.range(index + count - 1);
        Claimed {
            offset,
            len: last + last_len - offset,
            chunks: count,
            target,
        }
    }

    /// Either side: counts a claimed run as copied (its bytes are in place).
    pub fn finish(&self, run: &Claimed) {
        self.done.fetch_add(run.chunks as u64, Ordering::Release);
    }

    /// Either side: the copy of a claimed chunk failed; stops the cooperation.
    pub fn abort(&self) {
        self.done.fetch_or(ABORTED, Ordering::Release);
    }

    /// Receiver: where copy `generation` (opened with `chunks` chunks) stands.
    pub fn progress(&self, chunks: usize) -> CoopProgress {
        let done = self.done.load(Ordering::Acquire);
        if done & ABORTED != 0 {
            CoopProgress::Aborted
        } else if done as usize >= chunks {
            CoopProgress::Done
        } else {
            CoopProgress::Copying(done as usize)
        }
    }

    /// Receiver, after [`CoopProgress::Aborted`]: claims every chunk left, so that no side
    /// starts one any more (the receiver then copies the whole message alone).
    pub fn close(&self, generation: u32) {
        while self.claim(generation).is_some() {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn target(len: usize, chunk: usize) -> CoopTarget {
        CoopTarget {
            pid: 7,
            dst: 0x1000,
            len,
            chunk,
        }
    }

    #[test]
    fn chunks_cover_the_message_once() {
        let slot = CoopSlot::default();
        let g = slot.open(target(100, 32)).unwrap();
        let got: Vec<(usize, usize)> = std::iter::from_fn(|| slot.claim(g))
            .map(|c| (c.offset, c.len))
            .collect();
        assert_eq!(got, [(0, 32), (32, 32), (64, 32), (96, 4)]);
        assert_eq!(slot.progress(4), CoopProgress::Copying(0));
        for c in [0, 32, 64, 96] {
            let run = Claimed {
                offset: c,
                len: 32,
                chunks: 1,
                target: target(100, 32),
            };
            slot.finish(&run);
        }
        assert_eq!(slot.progress(4), CoopProgress::Done);
    }

    #[test]
    fn the_rest_goes_in_runs_of_at_most_the_bound() {
        let slot = CoopSlot::default();
        let g = slot.open(target(1000, 10)).unwrap();
        assert_eq!(slot.claim(g).map(|c| c.chunks), Some(1));
        let runs: Vec<(usize, usize)> = std::iter::from_fn(|| slot.claim_rest(g, 40))
            .map(|c| (c.offset, c.chunks))
            .collect();
        assert_eq!(runs, [(10, 40), (410, 40), (810, 19)]);
        let g = slot.open(target(95, 10)).unwrap();
        let all = slot.claim_rest(g, 100).unwrap();
        assert_eq!((all.offset, all.len, all.chunks), (0, 95, 10));
        assert!(slot.claim_rest(g, 100).is_none());
    }

    #[test]
    fn shares_take_half_of_what_is_left_within_bounds() {
        let slot = CoopSlot::default();
        let g = slot.open(target(1000, 10)).unwrap();
        let runs: Vec<(usize, usize, usize)> = std::iter::from_fn(|| slot.claim_share(g, 30))
            .map(|c| (c.offset, c.len, c.chunks))
            .collect();
        let want = [(0, 300, 30), (300, 300, 30), (600, 200, 20), (800, 100, 10)];
        assert_eq!(runs[..4], want);
        assert_eq!(runs.iter().map(|r| r.2).sum::<usize>(), 100);
        assert_eq!(runs.last().unwrap().2, 1);
        let g = slot.open(target(95, 10)).unwrap();
        let last = std::iter::from_fn(|| slot.claim_share(g, 100))
            .last()
            .unwrap();
        assert_eq!(
            (last.offset, last.len),
            (90, 5),
            "the short last chunk ends the run"
        );
    }

    #[test]
    fn a_reopened_slot_refuses_the_old_generation() {
        let slot = CoopSlot::default();
        let old = slot.open(target(64, 32)).unwrap();
        assert!(slot.claim(old).is_some());
        let new = slot.open(target(96, 32)).unwrap();
        assert_ne!(old, new);
        assert_eq!(
            slot.claim(old),
            None,
            "a stale claim must not touch the new copy"
        );
        assert_eq!(slot.claim(new).unwrap().target.len, 96);
        assert_eq!(slot.progress(3), CoopProgress::Copying(0));
    }

    #[test]
    fn sizes_outside_the_counters_are_refused() {
        let slot = CoopSlot::default();
        assert_eq!(slot.open(target(0, 32)), None);
        assert_eq!(slot.open(target(MAX_CHUNKS * 2 + 1, 2)), None);
        assert!(slot.open(target(MAX_CHUNKS * 2, 2)).is_some());
    }

    #[test]
    fn an_abort_is_seen_and_closing_takes_the_rest() {
        let slot = CoopSlot::default();
        let g = slot.open(target(128, 32)).unwrap();
        let run = slot.claim(g).unwrap();
        slot.abort();
        slot.finish(&run);
        assert_eq!(slot.progress(4), CoopProgress::Aborted);
        slot.close(g);
        assert_eq!(slot.claim(g), None);
    }

    #[test]
    fn two_threads_claim_every_chunk_exactly_once() {
        for round in 0..50 {
            let slot = Arc::new(CoopSlot::default());
            let chunks = 200 + round;
            let g = slot.open(target(chunks * 8, 8)).unwrap();
            let other = {
                let slot = slot.clone();
                std::thread::spawn(move || {
                    let mut mine = Vec::new();
                    while let Some(c) = slot.claim(g) {
                        mine.push(c.offset / 8);
                        slot.finish(&c);
                    }
                    mine
                })
            };
            let mut all = Vec::new();
            while let Some(c) = slot.claim_share(g, 16) {
                all.extend((0..c.chunks).map(|k| c.offset / 8 + k));
                slot.finish(&c);
            }
            all.extend(other.join().unwrap());
            all.sort_unstable();
            assert_eq!(all, (0..chunks).collect::<Vec<_>>());
            assert_eq!(slot.progress(chunks), CoopProgress::Done);
        }
    }
}
