//! The plan of a two-phase collective access (ROMIO's collective buffering, Thakur et al.): which
//! ranks move which file bytes, and in how many rounds.
//!
//! Every rank of the file's communicator describes its access ([`Extent`]: the first and last
//! file byte it touches, how many runs, and its hints); all ranks gather the descriptions and
//! derive the same [`Plan`] from them. The file span the ranks touch together is cut into one
//! contiguous *domain* per aggregator, and each domain into *windows* of at most the collective
//! buffer's size, one per round. In round `r`, every rank hands aggregator `a` the pieces of
//! its runs that fall into `a`'s window `r` ([`Plan::pieces`]); the aggregator then moves its
//! window's bytes with a few large system calls instead of every rank moving its many small runs.

use std::ops::Range;

/// Whether a collective access may go through aggregators (the `romio_cb_read` /
/// `romio_cb_write` hint: `enable`, `disable`, `automatic`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Buffering {
    /// Aggregate when the ranks' accesses are non-contiguous and interleave.
    Automatic = 0,
    /// Always aggregate.
    Enable = 1,
    /// Never aggregate.
    Disable = 2,
}

/// The collective-buffering hints of one rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hints {
    /// `romio_cb_read` or `romio_cb_write`, whichever the access is.
    pub buffering: Buffering,
    /// `cb_nodes`: how many ranks aggregate (0: every rank).
    pub aggregators: u32,
    /// `cb_buffer_size`: bytes an aggregator moves per round.
    pub buffer: u64,
}

/// Default `cb_buffer_size` (ROMIO's is 16 MiB as well).
pub const DEFAULT_BUFFER: u64 = 16 << 20;
/// Smallest collective buffer accepted (smaller hints are raised to it).
const MIN_BUFFER: u64 = 4096;
/// An automatic decision does not aggregate when it would take more rounds than this (ranks far
/// apart in a sparse file: each round costs message exchanges even when it is empty).
const MAX_AUTOMATIC_ROUNDS: u64 = 1024;
/// An automatic decision aggregates only runs shorter than this on average, for writes and for
/// reads. Measured on a local file system (page cache, 2 and 4 ranks, `bench/io.py`,
/// 2026-11-27): through aggregators, 64-byte blocks are written 5-9x and read 3x faster than
/// independently, 1 KiB blocks written 1.5-2x faster but read 1.5x slower; at 4 KiB writes are
/// even (each rank's own system calls are then long enough).
const AUTOMATIC_RUN_MAX: [u64; 2] = [4096, 512];

/// Which way a collective access moves data (the automatic choice differs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Into the file.
    Write = 0,
    /// Out of the file.
    Read = 1,
}

impl Default for Hints {
    fn default() -> Self {
        Self {
            buffering: Buffering::Automatic,
            aggregators: 0,
            buffer: DEFAULT_BUFFER,
        }
    }
}

/// One rank's access as the others learn it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extent {
    /// File bytes `[lo, hi)` from the first run's start to the last run's end (empty when the
    /// rank moves nothing).
    pub lo: u64,
    /// See `lo`.
    pub hi: u64,
    /// Number of file runs.
    pub runs: u64,
    /// Bytes in them.
    pub bytes: u64,
    /// The rank's hints.
    pub hints: Hints,
}

/// Bytes of an [`Extent`] on the wire.
pub const EXTENT_BYTES: usize = 45;

impl Extent {
    /// The extent of `runs` (file offset, length), in any order.
    pub fn of(runs: &[(u64, usize)], hints: Hints) -> Self {
        let lo = runs.iter().map(|r| r.0).min().unwrap_or(0);
        let hi = runs.iter().map(|r| r.0 + r.1 as u64).max().unwrap_or(0);
        Self {
            lo,
            hi: hi.max(lo),
            runs: runs.len() as u64,
            bytes: runs.iter().map(|r| r.1 as u64).sum(),
            hints,
        }
    }

    /// Little-endian wire form.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(EXTENT_BYTES);
        for w in [self.lo, self.hi, self.runs, self.bytes, self.hints.buffer] {
            out.extend_from_slice(&w.to_le_bytes());
        }
        out.extend_from_slice(&self.hints.aggregators.to_le_bytes());
        out.push(self.hints.buffering as u8);
        out
    }

    /// Reads [`Extent::encode`]'s form (`None` when it is not one).
    pub fn decode(b: &[u8]) -> Option<Self> {
        if b.len() != EXTENT_BYTES {
            return None;
        }
        let word = |i: usize| u64::from_le_bytes(b[8 * i..8 * i + 8].try_into().unwrap_or([0; 8]));
        let buffering = match b[44] {
            0 => Buffering::Automatic,
            1 => Buffering::Enable,
            2 => Buffering::Disable,
            _ => return None,
        };
        Some(Self {
            lo: word(0),
            hi: word(1),
            runs: word(2),
            bytes: word(3),
            hints: Hints {
                buffering,
                aggregators: u32::from_le_bytes(b[40..44].try_into().ok()?),
                buffer: word(4),
            },
        })
    }

    fn is_empty(&self) -> bool {
        self.runs == 0 || self.hi == self.lo
    }
}

/// A piece of a rank's access that one aggregator moves in one round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Piece {
    /// First file byte.
    pub at: u64,
    /// Bytes.
    pub len: usize,
    /// Where the bytes sit in the rank's packed data.
    pub data: usize,
}

/// Who moves what: the span of file bytes, the aggregators and their domains, the rounds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The file bytes the ranks touch together.
    pub span: Range<u64>,
    /// The ranks that aggregate, in domain order.
    pub aggregators: Vec<usize>,
    /// Bytes of each domain (the last may be cut short by the span).
    pub domain: u64,
    /// Bytes of each window (the collective buffer).
    pub window: u64,
    /// Rounds every rank takes part in.
    pub rounds: u64,
}

impl Plan {
    /// The plan every rank derives from all ranks' extents, or `None` when the access should
    /// be independent (nothing to move, collective buffering disabled, or — automatically —
    /// contiguous or disjoint accesses, or too sparse a span).
    pub fn agree(extents: &[Extent], dir: Direction) -> Option<Self> {
        let first = extents.first()?;
        let buffering = Self::buffering(extents);
        let busy: Vec<&Extent> = extents.iter().filter(|e| !e.is_empty()).collect();
        let lo = busy.iter().map(|e| e.lo).min()?;
        let hi = busy.iter().map(|e| e.hi).max()?;
        let n = extents.len();
        let count = match first.hints.aggregators {
            0 => n,
            k => (k as usize).min(n),
        };
        let window = first.hints.buffer.max(MIN_BUFFER);
        let domain = (hi - lo).div_ceil(count as u64);
        let rounds = domain.div_ceil(window);
        let plan = Self {
            span: lo..hi,
            // Spread over the ranks (and so over the nodes, when ranks fill nodes in order).
            aggregators: (0..count).map(|a| a * n / count).collect(),
            domain,
            window,
            rounds,
        };
        match buffering {
            Buffering::Disable => None,
            Buffering::Enable => Some(plan),
            Buffering::Automatic => {
                let short = AUTOMATIC_RUN_MAX[dir as usize];
                (interleaved(&busy, short) && rounds <= MAX_AUTOMATIC_ROUNDS).then_some(plan)
            }
        }
    }

    /// Disable wins over enable, which wins over automatic (the hints should be the same on
    /// every rank; this keeps the ranks agreed when they are not).
    fn buffering(extents: &[Extent]) -> Buffering {
        let any = |b| extents.iter().any(|e| e.hints.buffering == b);
        match (any(Buffering::Disable), any(Buffering::Enable)) {
            (true, _) => Buffering::Disable,
            (false, true) => Buffering::Enable,
            _ => Buffering::Automatic,
        }
    }

    /// The file bytes aggregator number `a` (an index into `aggregators`) moves in `round`.
    pub fn window_of(&self, a: usize, round: u64) -> Range<u64> {
        let start = self.span.start + a as u64 * self.domain + round * self.window;
        let domain_end = self.span.start + (a as u64 + 1) * self.domain;
        let end = (start + self.window).min(domain_end).min(self.span.end);
        start.min(end)..end
    }

    /// The pieces of `runs` (file offset, length, in data order) that each aggregator (by
    /// index) moves in `round`: [`Plan::pieces`] for all of them in one pass over the runs.
    pub fn split(&self, runs: &[(u64, usize)], round: u64) -> Vec<Vec<Piece>> {
        let mut out = vec![Vec::new(); self.aggregators.len()];
        let last = self.aggregators.len() as u64 - 1;
        let mut data = 0;
        for &(at, len) in runs {
            let end = at + len as u64;
            let first = at.saturating_sub(self.span.start) / self.domain.max(1);
            let final_ = end.saturating_sub(self.span.start + 1) / self.domain.max(1);
            for a in first.min(last)..=final_.min(last) {
                let w = self.window_of(a as usize, round);
                let (lo, hi) = (at.max(w.start), end.min(w.end));
                if lo < hi {
                    out[a as usize].push(Piece {
                        at: lo,
                        len: (hi - lo) as usize,
                        data: data + (lo - at) as usize,
                    });
                }
            }
            data += len;
        }
        out
    }

    /// The pieces of `runs` (file offset, length, in data order) that aggregator `a` moves in
    /// `round`, with their places in the packed data.
    pub fn pieces(&self, runs: &[(u64, usize)], a: usize, round: u64) -> Vec<Piece> {
        let w = self.window_of(a, round);
        let mut out = Vec::new();
        let mut data = 0;
        for &(at, len) in runs {
            let end = at + len as u64;
            let (lo, hi) = (at.max(w.start), end.min(w.end));
            if lo < hi {
                out.push(Piece {
                    at: lo,
                    len: (hi - lo) as usize,
                    data: data + (lo - at) as usize,
                });
            }
            data += len;
        }
        out
    }
}

/// Whether some rank's access is non-contiguous, the runs are shorter than `short` on average,
/// and the ranks'
/// extents overlap (the pattern collective buffering helps: many small runs from several ranks
/// that together make long ones).
fn interleaved(busy: &[&Extent], short: u64) -> bool {
    let (runs, bytes) = busy
        .iter()
        .fold((0, 0), |(r, b), e| (r + e.runs, b + e.bytes));
    if !busy.iter().any(|e| e.runs > 1) || bytes >= short * runs {
        return false;
    }
    let mut spans: Vec<(u64, u64)> = busy.iter().map(|e| (e.lo, e.hi)).collect();
    spans.sort_unstable();
    spans.windows(2).any(|p| p[1].0 < p[0].1)
}

/// Which bytes of a range the pieces of a window cover, one bit per byte (a window is at most the
/// collective buffer, 16 MiB by default: 2 MiB of bits), so that the stretches come out in
/// order without sorting the pieces.
pub struct Coverage {
    base: u64,
    len: u64,
    bits: Vec<u64>,
}

impl Coverage {
    /// Nothing of the bytes `range` covered yet.
    pub fn new(range: Range<u64>) -> Self {
        let len = range.end.saturating_sub(range.start);
        Self {
            base: range.start,
            len,
            bits: vec![0; len.div_ceil(64) as usize],
        }
    }

    /// Covers the bytes `[at, at + len)` (clipped to the range).
    pub fn mark(&mut self, at: u64, len: usize) {
        let from = at.saturating_sub(self.base).min(self.len);
        let to = (at + len as u64).saturating_sub(self.base).min(self.len);
        let (mut i, end) = (from, to);
        while i < end {
            let (word, bit) = ((i / 64) as usize, i % 64);
            let n = (64 - bit).min(end - i);
            let mask = if n == 64 {
                u64::MAX
            } else {
                ((1u64 << n) - 1) << bit
            };
            self.bits[word] |= mask;
            i += n;
        }
    }

    /// The covered stretches, in order.
    pub fn stretches(&self) -> Vec<Range<u64>> {
        let mut out: Vec<Range<u64>> = Vec::new();
        let mut i = 0u64;
        while i < self.len {
            let (word, bit) = ((i / 64) as usize, i % 64);
            let w = self.bits[word] >> bit;
            let covered = w & 1 == 1;
            let run = match covered {
                true => (!w).trailing_zeros() as u64,
                false => w.trailing_zeros() as u64,
            }
            .min(64 - bit)
            .min(self.len - i);
            if covered {
                let (s, e) = (self.base + i, self.base + i + run);
                match out.last_mut() {
                    Some(last) if last.end == s => last.end = e,
                    _ => out.push(s..e),
                }
            }
            i += run;
        }
        out
    }
}

/// Joins stretches whose gap is at most `gap` bytes (a read then takes the gap along: data
/// sieving, one large read instead of several small ones).
pub fn sieve(stretches: Vec<Range<u64>>, gap: u64) -> Vec<Range<u64>> {
    let mut out: Vec<Range<u64>> = Vec::new();
    for s in stretches {
        match out.last_mut() {
            Some(last) if s.start <= last.end + gap => last.end = last.end.max(s.end),
            _ => out.push(s),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn extent(runs: &[(u64, usize)]) -> Extent {
        Extent::of(runs, Hints::default())
    }

    /// Rank `r` of `n` owns `block`-byte blocks `r, r + n, ...` of `total` bytes.
    fn interleaved_runs(r: u64, n: u64, block: usize, total: u64) -> Vec<(u64, usize)> {
        (0..total / (n * block as u64))
            .map(|k| ((k * n + r) * block as u64, block))
            .collect()
    }

    #[test]
    fn extents_round_trip_on_the_wire() {
        let mut e = extent(&[(10, 5), (40, 2)]);
        e.hints.buffering = Buffering::Enable;
        e.hints.aggregators = 3;
        assert_eq!((e.lo, e.hi, e.runs, e.bytes), (10, 42, 2, 7));
        assert_eq!(Extent::decode(&e.encode()), Some(e));
        assert_eq!(Extent::decode(&[0; 5]), None);
    }

    #[test]
    fn interleaved_accesses_aggregate_and_blocks_do_not() {
        let mixed: Vec<Extent> = (0..4)
            .map(|r| extent(&interleaved_runs(r, 4, 8, 4096)))
            .collect();
        let plan = Plan::agree(&mixed, Direction::Write).expect("interleaved runs aggregate");
        assert_eq!(plan.span, 0..4096);
        assert_eq!(plan.aggregators, vec![0, 1, 2, 3]);
        assert_eq!((plan.domain, plan.rounds), (1024, 1));
        let blocks: Vec<Extent> = (0..4).map(|r| extent(&[(r * 100, 100)])).collect();
        assert_eq!(Plan::agree(&blocks, Direction::Write), None);
        let disjoint = vec![extent(&[(0, 1), (5, 1)]), extent(&[(10, 1), (20, 1)])];
        assert_eq!(Plan::agree(&disjoint, Direction::Write), None);
        assert_eq!(
            Plan::agree(&[extent(&[]), extent(&[])], Direction::Write),
            None
        );
        let long: Vec<Extent> = (0..2)
            .map(|r| extent(&interleaved_runs(r, 2, 4096, 1 << 20)))
            .collect();
        assert_eq!(
            Plan::agree(&long, Direction::Write),
            None,
            "4 KiB runs go independently"
        );
        let kib: Vec<Extent> = (0..2)
            .map(|r| extent(&interleaved_runs(r, 2, 1024, 1 << 20)))
            .collect();
        assert!(Plan::agree(&kib, Direction::Write).is_some());
        assert_eq!(
            Plan::agree(&kib, Direction::Read),
            None,
            "1 KiB runs are read independently"
        );
    }

    #[test]
    fn hints_force_or_forbid_and_pick_aggregators() {
        let mut blocks: Vec<Extent> = (0..6).map(|r| extent(&[(r * 100, 100)])).collect();
        blocks[3].hints.buffering = Buffering::Enable;
        blocks[0].hints.aggregators = 2;
        blocks[0].hints.buffer = 1; // raised to the minimum
        let plan = Plan::agree(&blocks, Direction::Write).expect("enabled");
        assert_eq!(plan.aggregators, vec![0, 3]);
        assert_eq!((plan.domain, plan.window, plan.rounds), (300, 4096, 1));
        blocks[5].hints.buffering = Buffering::Disable;
        assert_eq!(Plan::agree(&blocks, Direction::Write), None);
    }

    #[test]
    fn windows_cover_the_span_once() {
        let mut e = extent(&[(100, 10), (200, 10)]);
        e.hints.buffering = Buffering::Enable;
        e.hints.buffer = 4096;
        let far = extent(&[(100 + 3 * 4096 + 7, 1)]);
        let plan = Plan::agree(&[e, far], Direction::Write).unwrap();
        let mut covered = Vec::new();
        for a in 0..plan.aggregators.len() {
            for r in 0..plan.rounds {
                covered.push(plan.window_of(a, r));
            }
        }
        covered.retain(|w| !w.is_empty());
        covered.sort_by_key(|w| w.start);
        assert_eq!(covered.first().unwrap().start, plan.span.start);
        assert_eq!(covered.last().unwrap().end, plan.span.end);
        for pair in covered.windows(2) {
            assert_eq!(pair[0].end, pair[1].start);
        }
    }

    #[test]
    fn pieces_are_cut_at_window_edges_and_keep_their_data_places() {
        let mut e = extent(&[(0, 6), (10, 6)]);
        e.hints.buffering = Buffering::Enable;
        e.hints.aggregators = 2;
        let plan = Plan::agree(&[e, extent(&[])], Direction::Write).unwrap();
        assert_eq!(plan.window_of(0, 0), 0..8);
        assert_eq!(plan.window_of(1, 0), 8..16);
        let runs = [(0, 6), (10, 6)];
        assert_eq!(
            plan.pieces(&runs, 0, 0),
            vec![Piece {
                at: 0,
                len: 6,
                data: 0
            }]
        );
        assert_eq!(
            plan.pieces(&runs, 1, 0),
            vec![Piece {
                at: 10,
                len: 6,
                data: 6
            }]
        );
        let straddling = [(5, 6)];
        let parts: Vec<Piece> = (0..2)
            .flat_map(|a| plan.pieces(&straddling, a, 0))
            .collect();
        assert_eq!(
            parts,
            vec![
                Piece {
                    at: 5,
                    len: 3,
                    data: 0
                },
                Piece {
                    at: 8,
                    len: 3,
                    data: 3
                }
            ]
        );
    }

    fn stretches(pieces: &[(u64, usize)], range: Range<u64>) -> Vec<Range<u64>> {
        let mut c = Coverage::new(range);
        for &(at, len) in pieces {
            c.mark(at, len);
        }
        c.stretches()
    }

    #[test]
    fn coverage_merges_pieces_and_sieving_joins_small_gaps() {
        let s = stretches(
            &[(10, 5), (0, 4), (4, 2), (12, 10), (30, 0), (40, 1)],
            0..41,
        );
        assert_eq!(s, vec![0..6, 10..22, 40..41]);
        assert_eq!(sieve(s.clone(), 3), vec![0..6, 10..22, 40..41]);
        assert_eq!(sieve(s.clone(), 4), vec![0..22, 40..41]);
        assert_eq!(sieve(s, 18), vec![0..41]);
        // word edges, a base that is not a multiple of 64, clipping
        let long = stretches(&[(1000, 200), (1199, 1), (1300, 64), (990, 8)], 995..1400);
        assert_eq!(long, vec![995..998, 1000..1200, 1300..1364]);
        assert_eq!(stretches(&[(0, 128)], 0..128), vec![0..128]);
        assert!(stretches(&[], 5..5).is_empty());
    }

    #[test]
    fn a_pass_over_the_runs_splits_them_by_aggregator() {
        let mut e = extent(&[(0, 3), (5, 20)]);
        e.hints.buffering = Buffering::Enable;
        e.hints.aggregators = 3;
        e.hints.buffer = 4096;
        let plan = Plan::agree(&[e, extent(&[]), extent(&[])], Direction::Write).unwrap();
        assert_eq!(plan.domain, 9);
        let runs = [(0, 3), (5, 20)];
        let split = plan.split(&runs, 0);
        for (a, got) in split.iter().enumerate() {
            assert_eq!(got, &plan.pieces(&runs, a, 0), "aggregator {a}");
        }
        assert_eq!(
            split[1],
            vec![Piece {
                at: 9,
                len: 9,
                data: 7
            }]
        );
    }
}
