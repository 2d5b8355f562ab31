//! Schedules that cut a message into per-rank pieces and pass them round a ring or by doubling
//! distance: the large-message broadcast and allreduce, and Bruck's allgather.
//!
//! - **Scatter-allgather broadcast** (van de Geijn): the root's packed message is scattered in n
//!   pieces, then a ring allgather rebuilds it everywhere: about 2·m bytes through each rank
//!   instead of m·log2 n.
//! - **Ring allreduce**: a ring reduce-scatter (n − 1 rounds; after round k a rank holds the
//!   partial sum of k + 2 ranks for one piece) then a ring allgather of the finished pieces.
//!   Each piece is reduced along a fixed chain by one rank and copied to the others, so the
//!   result is bit-identical everywhere and the same run to run; the chain does not follow rank
//!   order, so only commutative operations take this path.
//! - **Rabenseifner allreduce**: a reduce-scatter by recursive halving, then an allgather by
//!   recursive doubling (2·log2 n rounds, about 2·m bytes per rank). Halving runs from distance
//!   1 up, so every partial covers a contiguous block of ranks and is combined with its
//!   neighbouring block lower first: rank order holds and non-commutative operations may take it.
//!   Non-powers of two are folded first, as in recursive doubling.
//! - **Bruck allgather**: in round k every rank sends the 2^k blocks it has gathered to rank −
//!   2^k and receives as many from rank + 2^k: ⌈log2 n⌉ rounds for any n, then the blocks are
//!   rotated into place while unpacking.
//!
//! Pieces live in temporaries; [`Step::Splice`] and [`Step::Extract`] move them in and out of
//! the whole packed message.

use super::reduce::{absorb_lower, absorb_upper, fold, load, setup, unfold, Fold};
use super::sched::{Builder, Dst, Src, Step, TempId};
use super::spec::{RecvData, Reducer, SendData};
use crate::error::Result;

/// Byte ranges of `n` pieces of `total` bytes, in `unit`-byte elements as evenly as possible.
pub(super) fn pieces(total: usize, unit: usize, n: usize) -> Vec<(usize, usize)> {
    let units = total / unit.max(1);
    let mut at = 0;
    (0..n)
        .map(|p| {
            let len = (units / n + usize::from(p < units % n)) * unit;
            at += len;
            (at - len, len)
        })
        .collect()
}

/// Ring allgather of pieces (rank-relative order `rel`) within `whole`, every rank starting
/// with its own piece `rel`; step tag `tag`.
fn ring_allgather(b: &mut Builder, whole: TempId, parts: &[(usize, usize)], root: usize, tag: u8) {
    let n = b.size;
    let rel = (b.rank + n - root) % n;
    let (left, right) = ((b.rank + n - 1) % n, (b.rank + 1) % n);
    for k in 0..n - 1 {
        let (out, into) = ((rel + n - k) % n, (rel + n - k - 1) % n);
        let incoming = b.temp(parts[into].1);
        b.send(right, tag, Src::TempPart(whole, parts[out].0, parts[out].1));
        b.recv(left, tag, Dst::Temp(incoming));
        b.end_round();
        b.step(Step::Splice {
            from: incoming,
            to: whole,
            at: parts[into].0,
        });
    }
}

/// `MPI_Bcast` by scatter and ring allgather.
pub(crate) fn scatter_allgather_bcast(b: &mut Builder, data: RecvData, root: usize) -> Result<()> {
    let (n, me) = (b.size, b.rank);
    let total = data.packed_len()?;
    // Cut the packed bytes, not elements: ranks may describe the same bytes with different
    // datatypes (one strided type here, n ints there), and every rank must cut alike.
    let parts = pieces(total, 1, n);
    let rel = (me + n - root) % n;
    let whole = b.temp(total);
    if me == root {
        b.step(Step::Pack {
            from: data.as_send(),
            to: whole,
        });
        for (q, &(at, len)) in parts.iter().enumerate().skip(1) {
            b.send((q + root) % n, 1, Src::TempPart(whole, at, len));
        }
        b.end_round();
    } else {
        let mine = b.temp(parts[rel].1);
        b.recv(root, 1, Dst::Temp(mine));
        b.end_round();
        b.step(Step::Splice {
            from: mine,
            to: whole,
            at: parts[rel].0,
        });
    }
    ring_allgather(b, whole, &parts, root, 2);
    if me != root {
        b.step(Step::Unpack {
            from: whole,
            offset: 0,
            to: data,
        });
    }
    Ok(())
}

/// `MPI_Allreduce` by ring reduce-scatter and ring allgather (commutative `op`, at least one
/// element per rank).
pub(crate) fn ring_allreduce(
    b: &mut Builder,
    input: SendData,
    recv: RecvData,
    op: Reducer,
) -> Result<()> {
    let (n, me) = (b.size, b.rank);
    let shape = setup(b, op, &input.dt, input.count)?;
    let unit = shape.len / shape.count.max(1);
    let parts = pieces(shape.len, unit, n);
    let whole = load(b, input, shape.len);
    let segs: Vec<TempId> = parts.iter().map(|&(_, len)| b.temp(len)).collect();
    for (&(at, _), &seg) in parts.iter().zip(&segs) {
        b.step(Step::Extract {
            from: whole,
            at,
            to: seg,
        });
    }
    let (left, right) = ((me + n - 1) % n, (me + 1) % n);
    for k in 0..n - 1 {
        let (out, into) = ((me + n - k) % n, (me + 2 * n - k - 1) % n);
        let incoming = b.temp(parts[into].1);
        b.send(right, 0, Src::Temp(segs[out]));
        b.recv(left, 0, Dst::Temp(incoming));
        b.end_round();
        b.step(Step::Combine {
            lower: incoming,
            upper: segs[into],
            count: parts[into].1 / unit.max(1),
            into_lower: false,
        });
    }
    for k in 0..n - 1 {
        let (out, into) = ((me + 1 + n - k) % n, (me + n - k) % n);
        b.send(right, 1, Src::Temp(segs[out]));
        b.recv(left, 1, Dst::Temp(segs[into]));
        b.end_round();
    }
    for (&(at, _), &seg) in parts.iter().zip(&segs) {
        b.step(Step::Splice {
            from: seg,
            to: whole,
            at,
        });
    }
    b.step(Step::Unpack {
        from: whole,
        offset: 0,
        to: recv,
    });
    Ok(())
}

/// Byte offset and length of pieces `lo..hi`.
fn span(parts: &[(usize, usize)], lo: usize, hi: usize) -> (usize, usize) {
    let start = parts[lo].0;
    let end = parts[hi - 1].0 + parts[hi - 1].1;
    (start, end - start)
}

/// `MPI_Allreduce` by Rabenseifner's algorithm (at least one element per participant).
pub(crate) fn rabenseifner_allreduce(
    b: &mut Builder,
    input: SendData,
    recv: RecvData,
    op: Reducer,
) -> Result<()> {
    let shape = setup(b, op, &input.dt, input.count)?;
    let unit = (shape.len / shape.count.max(1)).max(1);
    let acc = load(b, input, shape.len);
    let fold = fold(b, acc, &shape);
    if let Some(nr) = fold.newrank {
        let parts = pieces(shape.len, unit, fold.p2);
        let mine = halve(b, acc, &parts, unit, &fold, nr);
        redouble(b, acc, &parts, &fold, nr, mine);
    }
    unfold(b, acc, &fold);
    b.step(Step::Unpack {
        from: acc,
        offset: 0,
        to: recv,
    });
    Ok(())
}

/// Reduce-scatter by recursive halving from distance 1 up: participant `nr` ends holding the
/// reduction of pieces `lo..hi` (returned) in `acc`.
fn halve(
    b: &mut Builder,
    acc: TempId,
    parts: &[(usize, usize)],
    unit: usize,
    fold: &Fold,
    nr: usize,
) -> (usize, usize) {
    let (mut lo, mut hi) = (0, fold.p2);
    let mut mask = 1;
    while mask < fold.p2 {
        let mid = (lo + hi) / 2;
        let (keep, give) = match nr & mask {
            0 => ((lo, mid), (mid, hi)),
            _ => ((mid, hi), (lo, mid)),
        };
        let (k_at, k_len) = span(parts, keep.0, keep.1);
        let (g_at, g_len) = span(parts, give.0, give.1);
        let (theirs, mine) = (b.temp(k_len), b.temp(k_len));
        let partner = fold.peer(nr ^ mask);
        b.send(partner, 1, Src::TempPart(acc, g_at, g_len));
        b.recv(partner, 1, Dst::Temp(theirs));
        b.end_round();
        b.step(Step::Extract {
            from: acc,
            at: k_at,
            to: mine,
        });
        match (nr ^ mask) < nr {
            true => absorb_lower(b, mine, theirs, k_len / unit),
            false => absorb_upper(b, mine, theirs, k_len / unit),
        }
        b.step(Step::Splice {
            from: mine,
            to: acc,
            at: k_at,
        });
        (lo, hi) = keep;
        mask <<= 1;
    }
    (lo, hi)
}

/// Allgather by recursive doubling from the largest distance down, undoing [`halve`]: starting
/// from pieces `mine`, every participant ends with the whole vector in `acc`.
fn redouble(
    b: &mut Builder,
    acc: TempId,
    parts: &[(usize, usize)],
    fold: &Fold,
    nr: usize,
    mine: (usize, usize),
) {
    let (mut lo, mut hi) = mine;
    let mut mask = fold.p2;
    while mask > 1 {
        mask >>= 1;
        let width = hi - lo;
        let other = match nr & mask {
            0 => (hi, hi + width),
            _ => (lo - width, lo),
        };
        let (m_at, m_len) = span(parts, lo, hi);
        let (o_at, o_len) = span(parts, other.0, other.1);
        let theirs = b.temp(o_len);
        let partner = fold.peer(nr ^ mask);
        b.send(partner, 2, Src::TempPart(acc, m_at, m_len));
        b.recv(partner, 2, Dst::Temp(theirs));
        b.end_round();
        b.step(Step::Splice {
            from: theirs,
            to: acc,
            at: o_at,
        });
        (lo, hi) = (lo.min(other.0), hi.max(other.1));
    }
}

/// `MPI_Allgather` by Bruck's algorithm; every block packs to `len` bytes and this rank's own
/// block is already in `recv[rank]`.
pub(crate) fn bruck_allgather(b: &mut Builder, recv: Vec<RecvData>, len: usize) {
    let (n, me) = (b.size, b.rank);
    let gathered = b.temp(n * len);
    let own = b.temp(len);
    b.step(Step::Pack {
        from: recv[me].as_send(),
        to: own,
    });
    b.step(Step::Splice {
        from: own,
        to: gathered,
        at: 0,
    });
    let mut dist = 1;
    let mut tag = 0u8;
    while dist < n {
        let count = dist.min(n - dist);
        let incoming = b.temp(count * len);
        b.send(
            (me + n - dist) % n,
            tag,
            Src::TempPart(gathered, 0, count * len),
        );
        b.recv((me + dist) % n, tag, Dst::Temp(incoming));
        b.end_round();
        b.step(Step::Splice {
            from: incoming,
            to: gathered,
            at: dist * len,
        });
        dist *= 2;
        tag = tag.wrapping_add(1);
    }
    // Block i of `gathered` is rank (rank + i)'s.
    for (i, block) in (1..n).map(|i| (i, recv[(me + i) % n].clone())) {
        b.step(Step::Unpack {
            from: gathered,
            offset: i * len,
            to: block,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::pieces;

    #[test]
    fn pieces_cover_the_message_in_whole_elements() {
        assert_eq!(pieces(40, 4, 3), [(0, 16), (16, 12), (28, 12)]);
        assert_eq!(pieces(8, 4, 3), [(0, 4), (4, 4), (8, 0)]);
        assert_eq!(pieces(0, 4, 2), [(0, 0), (0, 0)]);
    }
}
