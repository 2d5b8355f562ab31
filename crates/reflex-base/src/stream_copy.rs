//! Copies into memory that another core reads next (a packet in a shared-memory ring: eager
//! messages, and the chunks of the two-copy rendezvous pipeline), choosing at run time between
//! plain stores and non-temporal ones.
//!
//! A plain store to a line that the reading core holds must first take the line from that core
//! (a read for ownership), and a ring's lines were always last held by its reader. How much that
//! costs depends on where the two cores are: on this project's 2-vCPU AMD EPYC VM the host
//! sometimes runs the vCPUs close together and sometimes far apart (the "slow mode" of
//! `docs/results-history.md`, where every cross-core line costs about 4x). Non-temporal stores
//! write whole lines without fetching them, and the reader then takes the lines from memory.
//! Measured 2026-11-28 (`pt2pt -t latency`, 2 ranks, one message at a time):
//!
//! | one way | close, plain | close, non-temporal | far, plain | far, non-temporal |
//! |---|---|---|---|---|
//! | 8 KiB | 0.89-0.91 µs | 1.19 | 3.25-4.17 | 1.45 |
//! | 16 KiB | 1.63-1.64 | 2.00 | 7.23-7.94 | 2.26-2.29 |
//!
//! and with many messages in flight (`-t bw`) non-temporal stores halved the bandwidth when close
//! (16 KiB: 33.6 -> 17.4 GB/s). So neither is right everywhere, and [`copy_to_reader`] measures:
//! it times its plain copies (the time-stamp counter, a few ns) against a plain copy within this
//! core measured once ([`baseline`]); when most of a window of [`WINDOW`] copies run slower
//! than [`SLOW_FACTOR`] times that, the reader is far and it streams, and every
//! [`PROBE_EVERY`]th copy while streaming is a timed plain one again, which switches back as
//! soon as one is fast (being preempted only ever makes a copy slower, so a fast one is proof).
//! Copies below [`STREAM_MIN`] are always plain: there the reader's extra cost outweighs the
//! writer's saving even when far.
//!
//! The state is per thread (an engine's sends come from one thread at a time); other targets
//! than x86_64 always copy plainly.

#[cfg(target_arch = "x86_64")]
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::copy::copy_bytes;

/// Smallest copy that may stream.
pub const STREAM_MIN: usize = 8 * 1024;
/// Plain copies judged per decision.
pub const WINDOW: u32 = 8;
/// Slow copies of a window that make the copies stream.
pub const SLOW_IN_WINDOW: u32 = 6;
/// A plain copy is slow when it takes this many times the [`baseline`] per byte (plain copies
/// into a ring took 3-9x when the reader was close, 15-45x when far).
pub const SLOW_FACTOR: u64 = 12;
/// While streaming, one copy in this many is a timed plain one.
pub const PROBE_EVERY: u32 = 64;

/// Bytes this process has copied with non-temporal stores (every thread).
static STREAMED: AtomicU64 = AtomicU64::new(0);

/// Bytes [`copy_to_reader`] has streamed in this process so far (MPI_T
/// `reflex_copy_streamed_bytes`).
pub fn streamed_bytes() -> u64 {
    STREAMED.load(Ordering::Relaxed)
}

/// Copies `src` into `dst`, which another core reads next (see the module documentation).
///
/// # Panics
/// When the lengths differ.
#[inline]
pub fn copy_to_reader(dst: &mut [u8], src: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    if dst.len() >= STREAM_MIN {
        assert_eq!(dst.len(), src.len(), "copy_to_reader: lengths differ");
        return x86::adaptive(dst, src);
    }
    copy_bytes(dst, src);
}

/// Whether plain copies or streaming ones are in use, and the evidence so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Chooser {
    streaming: bool,
    /// Plain copies timed in this window, and how many of them were slow.
    timed: u32,
    slow: u32,
    /// Copies streamed since the last probe.
    streamed: u32,
}

impl Chooser {
    /// Whether the next copy should stream (otherwise it is a timed plain copy).
    pub fn stream_next(&mut self) -> bool {
        if !self.streaming {
            return false;
        }
        self.streamed += 1;
        if self.streamed < PROBE_EVERY {
            return true;
        }
        self.streamed = 0;
        false
    }

    /// Takes the verdict on a timed plain copy: `slow` when it took over [`SLOW_FACTOR`] times
    /// the baseline.
    pub fn observe(&mut self, slow: bool) {
        if self.streaming {
            if !slow {
                *self = Self::default();
            }
            return;
        }
        self.timed += 1;
        self.slow += u32::from(slow);
        if self.timed == WINDOW {
            let stream = self.slow >= SLOW_IN_WINDOW;
            *self = Self {
                streaming: stream,
                ..Self::default()
            };
        }
    }

    /// Whether copies stream now.
    pub fn is_streaming(&self) -> bool {
        self.streaming
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::*;
    use crate::copy::{backward_blocks, lanes, Lane, BLOCK, LANE};
    use std::arch::x86_64::{_mm_sfence, _mm_stream_si128, _rdtsc};
    use std::sync::OnceLock;

    thread_local! {
        static CHOOSER: Cell<Chooser> = const { Cell::new(Chooser {
            streaming: false, timed: 0, slow: 0, streamed: 0,
        }) };
    }

    pub(super) fn adaptive(dst: &mut [u8], src: &[u8]) {
        let mut chooser = CHOOSER.get();
        if chooser.stream_next() {
            stream_backward(dst, src);
            STREAMED.fetch_add(dst.len() as u64, Ordering::Relaxed);
        } else {
            let start = ticks();
            copy_bytes(dst, src);
            let took = ticks().wrapping_sub(start);
            let limit = baseline_per_kib() * SLOW_FACTOR * dst.len() as u64 / 1024;
            chooser.observe(took > limit);
        }
        CHOOSER.set(chooser);
    }

    fn ticks() -> u64 {
        // SAFETY: reading the time-stamp counter has no preconditions.
        unsafe { _rdtsc() }
    }

    /// Time-stamp ticks per KiB of a plain 16 KiB copy between two buffers of this thread that
    /// are in its cache: the best of a few, measured once per process.
    pub(super) fn baseline_per_kib() -> u64 {
        static BASELINE: OnceLock<u64> = OnceLock::new();
        *BASELINE.get_or_init(|| {
            let (src, mut dst) = (vec![1u8; 16 * 1024], vec![0u8; 16 * 1024]);
            let best = (0..32)
                .map(|_| {
                    let start = ticks();
                    copy_bytes(&mut dst, std::hint::black_box(&src));
                    ticks().wrapping_sub(start)
                })
                .min()
                .unwrap_or(0);
            (best / 16).max(1)
        })
    }

    /// [`backward_blocks`] with non-temporal stores for the blocks, then a store fence, so that
    /// a later Release store (the ring's publish) is ordered after them. Backwards, as
    /// `copy_bytes` goes where 4K aliasing threatens, so that no load follows a store aliased
    /// to it.
    pub(super) fn stream_backward(dst: &mut [u8], src: &[u8]) {
        backward_blocks(dst, src, |d, s| {
            let v = lanes::<Lane, { BLOCK / LANE }>(s, 0);
            for (i, lane) in v.into_iter().enumerate() {
                // SAFETY: `d` is a 64-byte block of `dst` starting on a 64-byte boundary, so
                // lane `i`'s 16 bytes are inside it and 16-byte aligned, as the store requires.
                unsafe { _mm_stream_si128(d.as_mut_ptr().add(LANE * i).cast(), lane) };
            }
        });
        // SAFETY: a fence has no preconditions; it orders the streaming stores above before
        // every later store.
        unsafe { _mm_sfence() };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(n: usize, seed: u8) -> Vec<u8> {
        (0..n)
            .map(|i| (i as u8).wrapping_mul(13) ^ seed ^ (i >> 9) as u8)
            .collect()
    }

    #[test]
    fn a_window_of_slow_copies_streams_and_one_fast_probe_stops_it() {
        let mut c = Chooser::default();
        for i in 0..WINDOW {
            assert!(!c.stream_next());
            c.observe(i < SLOW_IN_WINDOW - 1); // one slow copy too few
        }
        assert!(!c.is_streaming());
        for i in 0..WINDOW {
            assert!(!c.stream_next());
            c.observe(i < SLOW_IN_WINDOW);
        }
        assert!(c.is_streaming());
        let streamed = (0..3 * PROBE_EVERY).filter(|_| {
            let s = c.stream_next();
            if !s {
                c.observe(true); // the probe is slow: keep streaming
            }
            s
        });
        assert_eq!(streamed.count() as u32, 3 * (PROBE_EVERY - 1));
        assert!(c.is_streaming());
        while c.stream_next() {}
        c.observe(false);
        assert_eq!(
            c,
            Chooser::default(),
            "a fast probe goes back to plain copies"
        );
    }

    #[test]
    fn every_path_copies_every_alignment_exactly() {
        for len in [
            STREAM_MIN - 1,
            STREAM_MIN,
            STREAM_MIN + 1,
            3 * STREAM_MIN + 77,
        ] {
            for (so, do_) in [(0, 0), (0, 1), (7, 0), (13, 50), (64, 63), (8, 40)] {
                let src = pattern(so + len, 9);
                let want_at = |dst: &[u8]| {
                    let mut want = pattern(do_ + len + 5, 100);
                    want[do_..do_ + len].copy_from_slice(&src[so..]);
                    assert!(dst == want, "len {len}, src offset {so}, dst offset {do_}");
                };
                let mut dst = pattern(do_ + len + 5, 100);
                copy_to_reader(&mut dst[do_..do_ + len], &src[so..]);
                want_at(&dst);
                #[cfg(target_arch = "x86_64")]
                {
                    let mut dst = pattern(do_ + len + 5, 100);
                    x86::stream_backward(&mut dst[do_..do_ + len], &src[so..]);
                    want_at(&dst);
                    assert!(x86::baseline_per_kib() >= 1);
                }
            }
        }
    }
}
