//! Two-phase collective reads and writes: the rounds of a [`Plan`], with the exchanges between
//! the ranks and the aggregators and the aggregators' file access.
//!
//! A round of a write: every rank tells each aggregator how many bytes it sends (one word per
//! pair), then sends it the pieces of its data in the aggregator's window (a header of
//! `(offset, length)` pairs, then the bytes); the aggregator lays them out in one buffer, in
//! rank order (where pieces overlap, the higher rank's bytes stay, as if the ranks had written
//! in rank order), and writes each stretch the pieces cover with one `pwrite` (bytes nobody
//! wrote are never written, so nothing is read back first). A round of a read sends the headers
//! only; the aggregator reads the stretches asked for, joining those less than
//! [`SIEVE_GAP`] apart into one read, and answers each rank with the end of file it saw and the
//! bytes of its pieces.
//!
//! A failed read or write on an aggregator does not stop the rounds (the other ranks are
//! waiting for them): the first such error is returned at the end, and the caller's agreement
//! makes it every rank's error.

use super::access::{read_at_most, write_run};
use super::plan::{sieve, Coverage, Direction, Extent, Hints, Piece, Plan};
use crate::comm::CommId;
use crate::engine::Engine;
use crate::error::{ErrorClass, MpiError, Result};
use reflex_base::transport::Transport;
use std::fs::File;
use std::ops::Range;

/// Tag of the message sizes of a round.
const TAG_SIZES: i32 = 6;
/// Tag of the pieces sent to an aggregator (headers, with the data of a write).
const TAG_PIECES: i32 = 7;
/// Tag of an aggregator's answers to a read.
const TAG_ANSWERS: i32 = 8;
/// Gaps up to this many bytes between stretches an aggregator reads are read along with them.
pub const SIEVE_GAP: u64 = 64 << 10;

/// Bytes of one piece in a header.
const PIECE_BYTES: usize = 16;

fn word(b: &[u8], i: usize) -> Option<u64> {
    Some(u64::from_le_bytes(
        b.get(8 * i..8 * i + 8)?.try_into().ok()?,
    ))
}

fn malformed() -> MpiError {
    MpiError::new(
        ErrorClass::Intern,
        "a collective file access received a malformed message (do all ranks call it alike?)",
    )
}

/// A header of `pieces` followed by their bytes out of `data` (when given).
fn encode(pieces: &[Piece], data: Option<&[u8]>) -> Vec<u8> {
    let body: usize = data.map_or(0, |_| pieces.iter().map(|p| p.len).sum());
    let mut out = Vec::with_capacity(8 + PIECE_BYTES * pieces.len() + body);
    out.extend_from_slice(&(pieces.len() as u64).to_le_bytes());
    for p in pieces {
        out.extend_from_slice(&p.at.to_le_bytes());
        out.extend_from_slice(&(p.len as u64).to_le_bytes());
    }
    if let Some(data) = data {
        for p in pieces {
            out.extend_from_slice(&data[p.data..p.data + p.len]);
        }
    }
    out
}

/// The `(offset, length)` pairs of a message and where its bytes start, checked against the
/// window (and, for a write, against the bytes that follow).
fn decode(msg: &[u8], window: &Range<u64>, with_data: bool) -> Result<(Vec<(u64, usize)>, usize)> {
    let count = usize::try_from(word(msg, 0).ok_or_else(malformed)?).map_err(|_| malformed())?;
    let body = count
        .checked_mul(PIECE_BYTES)
        .and_then(|b| b.checked_add(8))
        .filter(|&b| b <= msg.len())
        .ok_or_else(malformed)?;
    let mut pieces = Vec::with_capacity(count);
    let mut total = 0usize;
    for i in 0..count {
        let (at, len) = (word(msg, 1 + 2 * i), word(msg, 2 + 2 * i));
        let (at, len) = (at.ok_or_else(malformed)?, len.ok_or_else(malformed)?);
        let end = at.checked_add(len).ok_or_else(malformed)?;
        if at < window.start || end > window.end {
            return Err(malformed());
        }
        total += len as usize;
        pieces.push((at, len as usize));
    }
    if with_data && msg.len() != body + total {
        return Err(malformed());
    }
    Ok((pieces, body))
}

/// The window's pieces laid out in one buffer that starts at file byte `base`, and which of
/// its bytes they cover. The buffer is the file's collective buffer, kept between calls (its
/// bytes are not cleared: only covered bytes are written, and a read's answer past the end of
/// the file is ignored by the rank that gets it).
struct Layout<'a> {
    base: u64,
    bytes: &'a mut [u8],
    covered: Coverage,
}

impl<'a> Layout<'a> {
    /// Room in `buffer` for the smallest range that holds every piece (file offset, length).
    fn around(pieces: impl Iterator<Item = (u64, usize)> + Clone, buffer: &'a mut Vec<u8>) -> Self {
        let lo = pieces.clone().map(|p| p.0).min().unwrap_or(0);
        let hi = pieces.clone().map(|p| p.0 + p.1 as u64).max().unwrap_or(lo);
        let mut covered = Coverage::new(lo..hi);
        for (at, len) in pieces {
            covered.mark(at, len);
        }
        let len = (hi - lo) as usize;
        if buffer.len() < len {
            buffer.resize(len, 0);
        }
        Self {
            base: lo,
            bytes: &mut buffer[..len],
            covered,
        }
    }

    fn range(&self, at: u64, len: usize) -> Range<usize> {
        let from = (at - self.base) as usize;
        from..from + len
    }
}

/// Where one rank's bytes for a window come from: its pieces, each with its place in `bytes`.
struct Source<'a> {
    pieces: Vec<Piece>,
    bytes: &'a [u8],
}

impl<'a> Source<'a> {
    /// A message that arrived.
    fn message(msg: &'a [u8], window: &Range<u64>) -> Result<Self> {
        let (heads, mut from) = decode(msg, window, true)?;
        let mut pieces = Vec::with_capacity(heads.len());
        for (at, len) in heads {
            pieces.push(Piece {
                at,
                len,
                data: from,
            });
            from += len;
        }
        Ok(Self { pieces, bytes: msg })
    }
}

/// An aggregator's write of one window: the messages that arrived (by rank), and its own
/// pieces (`own`: this rank's number, its pieces, its packed data), which it does not send itself.
fn write_window(
    file: &File,
    window: &Range<u64>,
    arrived: &[Option<Vec<u8>>],
    own: (usize, &[Piece], &[u8]),
    buffer: &mut Vec<u8>,
) -> Result<()> {
    let mut sources = Vec::new();
    for (rank, msg) in arrived.iter().enumerate() {
        match msg {
            _ if rank == own.0 => sources.push(Source {
                pieces: own.1.to_vec(),
                bytes: own.2,
            }),
            Some(msg) => sources.push(Source::message(msg, window)?),
            None => {}
        }
    }
    let all = sources
        .iter()
        .flat_map(|s| s.pieces.iter().map(|p| (p.at, p.len)));
    let layout = Layout::around(all, buffer);
    for s in &sources {
        for p in &s.pieces {
            let to = layout.range(p.at, p.len);
            layout.bytes[to].copy_from_slice(&s.bytes[p.data..p.data + p.len]);
        }
    }
    for s in layout.covered.stretches() {
        let r = layout.range(s.start, (s.end - s.start) as usize);
        write_run(file, s.start, &layout.bytes[r])?;
    }
    Ok(())
}

/// An aggregator's read of one window: the answer to each rank that asked (the end of file
/// seen, `u64::MAX` if none, then the bytes of its pieces), and the first read error.
fn read_window(
    file: &File,
    window: &Range<u64>,
    asked: &[Option<Vec<u8>>],
    buffer: &mut Vec<u8>,
) -> (Vec<Option<Vec<u8>>>, Option<MpiError>) {
    let mut heads = Vec::with_capacity(asked.len());
    let mut failed = None;
    for msg in asked {
        match msg.as_deref().map(|m| decode(m, window, false)) {
            Some(Ok((pieces, _))) => heads.push(Some(pieces)),
            Some(Err(e)) => {
                failed.get_or_insert(e);
                heads.push(Some(Vec::new()));
            }
            None => heads.push(None),
        }
    }
    let layout = Layout::around(heads.iter().flatten().flatten().copied(), buffer);
    let mut eof = u64::MAX;
    for s in sieve(layout.covered.stretches(), SIEVE_GAP) {
        let r = layout.range(s.start, (s.end - s.start) as usize);
        match read_at_most(file, s.start, &mut layout.bytes[r.clone()]) {
            Ok(got) if got < r.len() => eof = eof.min(s.start + got as u64),
            Ok(_) => {}
            Err(e) => {
                failed.get_or_insert(e);
            }
        }
    }
    let answer = |pieces: &Vec<(u64, usize)>| {
        let mut out = eof.to_le_bytes().to_vec();
        for &(at, len) in pieces {
            out.extend_from_slice(&layout.bytes[layout.range(at, len)]);
        }
        out
    };
    (
        heads.iter().map(|h| h.as_ref().map(answer)).collect(),
        failed,
    )
}

/// What one rank sends the aggregators in one round: per rank of the communicator, the
/// message (with its length word) for the aggregator there, and the pieces in it.
struct Outgoing {
    sizes: Vec<Option<Vec<u8>>>,
    messages: Vec<Option<Vec<u8>>>,
    pieces: Vec<Vec<Piece>>,
}

impl Outgoing {
    /// This round's messages of rank `me`: the pieces (and, for a write, the `data`) for each
    /// aggregator; none for itself when it aggregates a write (it takes its own pieces as they are).
    fn new(
        plan: &Plan,
        (me, n): (usize, usize),
        runs: &[(u64, usize)],
        round: u64,
        data: Option<&[u8]>,
    ) -> Self {
        let mut out = Self {
            sizes: vec![None; n],
            messages: vec![None; n],
            pieces: vec![Vec::new(); n],
        };
        for (&rank, pieces) in plan.aggregators.iter().zip(plan.split(runs, round)) {
            let own_write = rank == me && data.is_some();
            let msg = (!pieces.is_empty() && !own_write).then(|| encode(&pieces, data));
            let size = msg.as_ref().map_or(0, Vec::len) as u64;
            out.sizes[rank] = Some(size.to_le_bytes().to_vec());
            out.messages[rank] = msg;
            out.pieces[rank] = pieces;
        }
        out
    }
}

impl<T: Transport> Engine<T> {
    /// Every rank's extent gathered, and the plan they imply (`None`: access independently).
    pub fn file_plan(
        &mut self,
        comm: CommId,
        runs: &[(u64, usize)],
        hints: Hints,
        dir: Direction,
    ) -> Result<Option<Plan>> {
        let mine = Extent::of(runs, hints).encode();
        let all = self.allgather_var(comm, &mine)?;
        let extents: Option<Vec<Extent>> = all.iter().map(|b| Extent::decode(b)).collect();
        Ok(Plan::agree(&extents.ok_or_else(malformed)?, dir))
    }

    /// Sends this round's pieces to the aggregators; an aggregator gets what every rank sent it.
    fn send_pieces(
        &mut self,
        comm: CommId,
        plan: &Plan,
        out: &mut Outgoing,
    ) -> Result<Vec<Option<Vec<u8>>>> {
        let n = out.sizes.len();
        let me = self.comms.get(comm)?.rank as usize;
        let aggregating = plan.aggregators.contains(&me);
        let words = vec![aggregating.then_some(8); n];
        let sizes = self.exchange_some(comm, TAG_SIZES, std::mem::take(&mut out.sizes), &words)?;
        let expected: Vec<Option<usize>> = sizes
            .iter()
            .map(|s| s.as_deref().and_then(|s| word(s, 0)).filter(|&l| l > 0))
            .map(|l| l.map(|l| l as usize))
            .collect();
        let messages = std::mem::take(&mut out.messages);
        self.exchange_some(comm, TAG_PIECES, messages, &expected)
    }

    /// `data` (this rank's packed bytes, in the order of `runs`) written collectively by the
    /// plan's aggregators; `buffer` is the file's collective buffer (kept between calls).
    pub fn file_write_aggregated(
        &mut self,
        comm: CommId,
        file: &File,
        plan: &Plan,
        runs: &[(u64, usize)],
        data: &[u8],
        buffer: &mut Vec<u8>,
    ) -> Result<()> {
        let c = self.comms.get(comm)?;
        let (n, me) = (c.group.size(), c.rank as usize);
        let mine = plan.aggregators.iter().position(|&r| r == me);
        let mut failed = None;
        for round in 0..plan.rounds {
            let mut out = Outgoing::new(plan, (me, n), runs, round, Some(data));
            let arrived = self.send_pieces(comm, plan, &mut out)?;
            if let Some(a) = mine {
                let own = (me, &out.pieces[me][..], data);
                let window = plan.window_of(a, round);
                if let Err(e) = write_window(file, &window, &arrived, own, buffer) {
                    failed.get_or_insert(e);
                }
            }
        }
        failed.map_or(Ok(()), Err)
    }

    /// This rank's part of a collective read into `data` (packed, in the order of `runs`);
    /// returns the bytes before the end of the file. `buffer` as for writes.
    pub fn file_read_aggregated(
        &mut self,
        comm: CommId,
        file: &File,
        plan: &Plan,
        runs: &[(u64, usize)],
        data: &mut [u8],
        buffer: &mut Vec<u8>,
    ) -> Result<usize> {
        let c = self.comms.get(comm)?;
        let (n, me) = (c.group.size(), c.rank as usize);
        let mine = plan.aggregators.iter().position(|&r| r == me);
        let (mut failed, mut valid) = (None, data.len());
        for round in 0..plan.rounds {
            let mut out = Outgoing::new(plan, (me, n), runs, round, None);
            let asked = self.send_pieces(comm, plan, &mut out)?;
            let answers = match mine {
                Some(a) => {
                    let window = plan.window_of(a, round);
                    let (answers, err) = read_window(file, &window, &asked, buffer);
                    failed = failed.or(err);
                    answers
                }
                None => vec![None; n],
            };
            let expected: Vec<Option<usize>> = out
                .pieces
                .iter()
                .map(|p| (!p.is_empty()).then(|| 8 + p.iter().map(|p| p.len).sum::<usize>()))
                .collect();
            let got = self.exchange_some(comm, TAG_ANSWERS, answers, &expected)?;
            for (answer, pieces) in got.iter().zip(&out.pieces) {
                if let Some(answer) = answer {
                    valid = valid.min(place(answer, pieces, data)?);
                }
            }
        }
        failed.map_or(Ok(valid), Err)
    }
}

/// Copies an aggregator's answer into the pieces' places in `data`; returns the first data
/// position past the end of the file it saw (`data.len()` when none is).
fn place(answer: &[u8], pieces: &[Piece], data: &mut [u8]) -> Result<usize> {
    let eof = word(answer, 0).ok_or_else(malformed)?;
    let mut from = 8;
    let mut valid = data.len();
    for p in pieces {
        let bytes = answer.get(from..from + p.len).ok_or_else(malformed)?;
        data[p.data..p.data + p.len].copy_from_slice(bytes);
        from += p.len;
        if eof < p.at + p.len as u64 {
            valid = valid.min(p.data + eof.saturating_sub(p.at) as usize);
        }
    }
    Ok(valid)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn piece(at: u64, len: usize, data: usize) -> Piece {
        Piece { at, len, data }
    }

    #[test]
    fn a_window_is_written_in_stretches_with_the_higher_rank_on_top() {
        use std::os::unix::fs::FileExt;
        let f = super::super::scratch_file("agg-write");
        f.write_all_at(&[9; 16], 0).unwrap();
        let window = 0..16;
        let r0 = encode(&[piece(2, 2, 0), piece(6, 2, 2)], Some(&[1, 1, 2, 2]));
        let r1 = encode(&[piece(4, 3, 0)], Some(&[3, 3, 3]));
        let mut buffer = vec![7; 3];
        let own = [piece(9, 1, 1)];
        let arrived = [Some(r0), None, Some(r1), None];
        write_window(&f, &window, &arrived, (1, &own, &[0, 8]), &mut buffer).unwrap();
        let mut back = [0u8; 16];
        f.read_exact_at(&mut back, 0).unwrap();
        assert_eq!(back, [9, 9, 1, 1, 3, 3, 3, 2, 9, 8, 9, 9, 9, 9, 9, 9]);
    }

    #[test]
    fn a_window_is_read_and_answered_with_the_end_of_file() {
        use std::os::unix::fs::FileExt;
        let f = super::super::scratch_file("agg-read");
        f.write_all_at(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 0).unwrap();
        let window = 0..32;
        let asked = [Some(encode(&[piece(1, 2, 0), piece(8, 4, 2)], None)), None];
        let (answers, err) = read_window(&f, &window, &asked, &mut Vec::new());
        assert!(err.is_none());
        let a = answers[0].as_ref().unwrap();
        assert_eq!(word(a, 0), Some(10));
        assert_eq!(a[8..], [2, 3, 9, 10, 0, 0]);
        assert!(answers[1].is_none());
        let mut data = [0u8; 6];
        let valid = place(a, &[piece(1, 2, 0), piece(8, 4, 2)], &mut data).unwrap();
        assert_eq!((valid, data), (4, [2, 3, 9, 10, 0, 0]));
    }

    #[test]
    fn malformed_messages_are_refused() {
        let window = 0..8;
        let outside = encode(&[piece(6, 4, 0)], Some(&[0; 4]));
        assert!(decode(&outside, &window, true).is_err());
        let short = encode(&[piece(0, 4, 0)], Some(&[0; 4]));
        assert!(decode(&short[..short.len() - 1], &window, true).is_err());
        assert!(decode(&[1, 0, 0, 0, 0, 0, 0, 0], &window, false).is_err());
        assert!(decode(&[], &window, false).is_err());
        assert!(place(&[0; 3], &[], &mut []).is_err());
    }
}
