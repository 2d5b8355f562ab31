//! Which bytes of a partitioned message travel together (pure arithmetic, unit-tested).
//!
//! The sender's buffer is `P` partitions of `sb` packed bytes, the receiver's `R` partitions of
//! `rb`. Data travels as one message per *receive* partition (a *piece*): piece `j` carries
//! bytes `[j·rb, (j+1)·rb)` of the sender's packed stream, so a receive partition has arrived
//! exactly when its message has, which is what `MPI_Parrived` reports, and the sender may send
//! piece `j` once every send partition that *covers* those bytes is ready. When the two sides'
//! totals differ (erroneous in MPI-4.0) the last piece takes whatever the sender has left, so the
//! receiver sees a truncation or a short count instead of waiting forever.

use std::ops::{Range, RangeInclusive};

/// One side's partitioning: `parts` partitions of `bytes` packed bytes each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Split {
    pub(crate) parts: usize,
    pub(crate) bytes: usize,
}

impl Split {
    /// Packed bytes of the whole buffer.
    pub(crate) fn total(self) -> usize {
        self.parts * self.bytes
    }
}

/// The bytes of the sender's stream (split `send`) that piece `j` of `recv` carries.
pub(crate) fn piece_range(recv: Split, send: Split, j: usize) -> Range<usize> {
    let total = send.total();
    let lo = (j * recv.bytes).min(total);
    let hi = if j + 1 == recv.parts {
        total
    } else {
        ((j + 1) * recv.bytes).min(total)
    };
    lo..hi.max(lo)
}

/// The send partitions whose bytes piece `bytes` holds (an empty piece goes with the partition
/// its offset falls in, or the last one).
pub(crate) fn covering(send: Split, bytes: &Range<usize>) -> RangeInclusive<usize> {
    let last = send.parts - 1;
    if send.bytes == 0 {
        return 0..=last;
    }
    let first = (bytes.start / send.bytes).min(last);
    if bytes.is_empty() {
        return first..=first;
    }
    first..=((bytes.end - 1) / send.bytes).min(last)
}

/// The pieces that send partition `i` may complete: a superset of those whose covering holds
/// `i` (callers check each).
pub(crate) fn pieces_of(recv: Split, send: Split, i: usize) -> Range<usize> {
    if recv.bytes == 0 || send.bytes == 0 {
        return 0..recv.parts;
    }
    let first = (i * send.bytes / recv.bytes).min(recv.parts - 1);
    let end = if i + 1 == send.parts {
        recv.parts
    } else {
        ((i + 1) * send.bytes / recv.bytes + 1).min(recv.parts)
    };
    first..end
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(parts: usize, bytes: usize) -> Split {
        Split { parts, bytes }
    }

    /// Every send partition appears in the covering of some piece it is a candidate of, and
    /// every piece's covering is found from each partition in it.
    fn consistent(recv: Split, send: Split) {
        for j in 0..recv.parts {
            let cover = covering(send, &piece_range(recv, send, j));
            for i in cover {
                assert!(
                    pieces_of(recv, send, i).contains(&j),
                    "{recv:?} {send:?} {j} {i}"
                );
            }
        }
    }

    #[test]
    fn equal_splits_map_one_to_one() {
        let (r, s) = (split(4, 8), split(4, 8));
        for j in 0..4 {
            assert_eq!(piece_range(r, s, j), j * 8..j * 8 + 8);
            assert_eq!(covering(s, &piece_range(r, s, j)), j..=j);
        }
        consistent(r, s);
    }

    #[test]
    fn a_receive_partition_waits_for_every_send_partition_it_spans() {
        // 3 send partitions of 4 bytes, 2 receive partitions of 6 bytes.
        let (r, s) = (split(2, 6), split(3, 4));
        assert_eq!(covering(s, &piece_range(r, s, 0)), 0..=1);
        assert_eq!(covering(s, &piece_range(r, s, 1)), 1..=2);
        consistent(r, s);
        // 2 send partitions of 6 bytes, 4 receive partitions of 3 bytes.
        let (r, s) = (split(4, 3), split(2, 6));
        assert_eq!(covering(s, &piece_range(r, s, 1)), 0..=0);
        assert_eq!(covering(s, &piece_range(r, s, 2)), 1..=1);
        consistent(r, s);
    }

    #[test]
    fn mismatched_totals_put_the_rest_in_the_last_piece() {
        let (r, s) = (split(2, 4), split(3, 4)); // 12 bytes sent, 8 expected
        assert_eq!(piece_range(r, s, 1), 4..12);
        assert_eq!(covering(s, &piece_range(r, s, 1)), 1..=2);
        consistent(r, s);
        let (r, s) = (split(4, 4), split(1, 4)); // 4 bytes sent, 16 expected
        assert_eq!(piece_range(r, s, 3), 4..4);
        assert_eq!(covering(s, &piece_range(r, s, 3)), 0..=0);
        consistent(r, s);
    }

    #[test]
    fn empty_partitions_need_every_partition() {
        let (r, s) = (split(3, 0), split(2, 0));
        assert_eq!(covering(s, &piece_range(r, s, 2)), 0..=1);
        consistent(r, s);
        consistent(split(3, 5), split(7, 0));
        consistent(split(5, 0), split(3, 2));
    }
}
