//! The selection table: which point-to-point schedule runs a collective, by communicator size
//! and message size, unless a `REFLEX_COLL_*` setting forces one (for experiments and sweeps).
//!
//! Locality is decided before this table: a blocking collective on a communicator inside one
//! node that fits the shared-memory board runs there ([`super::board`]); everything else comes
//! here. Under `auto`:
//!
//! | collective | choice |
//! |---|---|
//! | barrier | dissemination |
//! | bcast | binomial; scatter + ring allgather from `REFLEX_COLL_LARGE` bytes on ≥ 4 ranks† |
//! | allreduce | recursive doubling; Rabenseifner (commutative operations) from `REFLEX_COLL_LARGE` bytes on ≥ 3 ranks† (≥ 1 element per rank); ring only when forced (commutative operations) |
//! | allgather | direct up to 2 KiB blocks on ≤ 8 ranks, Bruck† for such blocks on more ranks, else ring |
//! | alltoall | direct; pairwise from `REFLEX_COLL_LARGE` bytes per block on > 8 ranks† |
//!
//! † only when no core runs two ranks.
//!
//! Above a board slot, before single-copy: a regular alltoall (blocks up to 512 KiB) or a
//! reduce on 2 ranks of their own cores, and a broadcast on 3+ ranks sharing cores, stream
//! through the board ([`super::stream`], `REFLEX_COLL_STREAM`; [`CollTuning::board_stream`]).
//!
//! A broadcast that runs single-copy ([`super::direct`]) has every rank read the root's buffer,
//! or, from `REFLEX_COLL_LARGE` bytes on ≥ 4 ranks of a node with ≥ 4 cores (oversubscribed
//! or not), or when the scatter + allgather schedule is forced, goes in pieces: rank r reads
//! piece r from the root, then the other pieces from the ranks holding them, so that the root's
//! memory is not read by every rank at once.
//!
//! The many-round schedules (ring, scatter-allgather, Bruck, pairwise) are chosen only when
//! every rank has a core of its own: with more ranks than cores each round waits for a context
//! switch, and on this project's 2-core machine 8 ranks ran the ring allreduce of 1 MiB in 8.9 ms
//! against 6.4 ms for recursive doubling, the scatter-allgather bcast in 5.4 ms against 1.1 ms
//! (`bench/coll_tune.py --quick --ranks 8`). The `REFLEX_COLL_LARGE` default (64 KiB) follows
//! common practice for dedicated cores; `bench/coll_tune.py` measures the crossover on a machine.
//!
//! A forced algorithm that cannot run a given call (a ring or Rabenseifner allreduce of a
//! non-commutative operation, Bruck over blocks of different sizes) falls back to the `auto`
//! choice.

use reflex_base::config::{AllgatherAlgo, AllreduceAlgo, AlltoallAlgo, BarrierAlgo, BcastAlgo};
use reflex_base::config::{ByteSize, CollStream, Config};

/// Cores from which a single-copy broadcast goes in pieces: with every rank reading the root's
/// buffer, the readers on 16 cores (1 MiB, 16 ranks) took 3.5x the peers' time, 2.3-2.9x
/// with 32 and 64 ranks on those cores, while on 2 cores the pieces' extra synchronisation
/// cost more (4-8 ranks) than the shared source did.
const PIECES_MIN_CORES: usize = 4;

/// Bytes per rank from which a board reduction goes in pieces on dedicated cores: on 16 cores
/// the root combining 16 operands of 16 KiB took 24 µs against Open MPI's tree's 18.
const SPLIT_PIECE_MIN: usize = 512;

/// Largest alltoall block streamed through the board under `auto` (2 ranks). On the 2-core VM
/// (2026-11-27, best of 3 interleaved rounds, µs, single-copy -> streamed): 32 KiB 8.8 -> 6.5,
/// 64 KiB 12.9 -> 10.1, 256 KiB 38.7 -> 33.9, 512 KiB 69.9 -> 60.1, but 1 MiB 118 -> 140 and
/// 2 MiB 235 -> 345: out of the caches the second copy costs memory bandwidth that the one
/// cross-memory read does not.
const STREAM_ALLTOALL_MAX: usize = 512 << 10;

/// (A broadcast streams under `auto` on 3+ ranks sharing cores, every size above a slot: on the
/// 2-core VM, 2026-11-27, best of 3 rounds, µs, single-copy -> streamed, 4 ranks: 256 KiB
/// 61 -> 22, 4 MiB 1285 -> 624; 8 ranks: 256 KiB 128 -> 53, 4 MiB 3391 -> 2237 (Open MPI 58,
/// 1528, 121, 3228): every reader of the single copy reads the root's memory at the kernel's
/// 7-8 GB/s. Untried on dedicated cores, where the single copy in pieces was tuned.)
///
/// Largest reduce operand streamed through the board under `auto` (2 ranks): every size measured
/// gained (same runs: 64 KiB 12.1 -> 7.3, 256 KiB 35.4 -> 27.6, 2 MiB 286 -> 165, 4 MiB
/// 566 -> 375), since the single-copy reduce reads half of the peer's operand and writes half
/// of the result across processes, at the kernel's 7-8 GB/s.
const STREAM_REDUCE_MAX: usize = usize::MAX;

/// Allgather blocks up to this many bytes go to every rank in one round (or by Bruck).
const ALLGATHER_SMALL: usize = 2048;

/// The collective settings, as the engine uses them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CollTuning {
    pub barrier: BarrierAlgo,
    pub bcast: BcastAlgo,
    pub allreduce: AllreduceAlgo,
    pub allgather: AllgatherAlgo,
    pub alltoall: AlltoallAlgo,
    /// Whether collectives above a board slot stream through the board.
    pub stream: CollStream,
    /// Fan-out of the k-nomial broadcast.
    pub fanout: usize,
    /// Latency of the postal-model broadcast, in send times.
    pub lambda: usize,
    /// Where the large-message schedules start, in bytes.
    pub large: usize,
    /// More ranks than cores: `auto` keeps to few-round schedules.
    pub oversubscribed: bool,
    /// Cores of this node (at least 1).
    pub cores: usize,
}

impl Default for CollTuning {
    fn default() -> Self {
        Self::from_config(&Config::default())
    }
}

impl CollTuning {
    /// The settings of `config`.
    pub fn from_config(config: &Config) -> Self {
        Self {
            barrier: config.coll_barrier,
            bcast: config.coll_bcast,
            allreduce: config.coll_allreduce,
            allgather: config.coll_allgather,
            alltoall: config.coll_alltoall,
            stream: config.coll_stream,
            fanout: config.coll_fanout.max(2) as usize,
            lambda: config.coll_lambda.max(1) as usize,
            large: ByteSize::get(config.coll_large),
            oversubscribed: false,
            cores: 1,
        }
    }

    /// Whether `auto` may pick a many-round schedule for `bytes` (dedicated cores, large).
    fn many_rounds(&self, bytes: usize) -> bool {
        !self.oversubscribed && bytes >= self.large
    }

    /// The barrier of `n` ranks.
    pub(crate) fn barrier(&self) -> Barrier {
        match self.barrier {
            BarrierAlgo::Pairwise => Barrier::Pairwise,
            BarrierAlgo::Auto | BarrierAlgo::Dissemination => Barrier::Dissemination,
        }
    }

    /// The broadcast of `bytes` to `n` ranks.
    pub(crate) fn bcast(&self, n: usize, bytes: usize) -> Bcast {
        match self.bcast {
            BcastAlgo::Binomial => Bcast::Knomial(2),
            BcastAlgo::Knomial => Bcast::Knomial(self.fanout),
            BcastAlgo::Postal => Bcast::Postal(self.lambda),
            BcastAlgo::ScatterAllgather if bytes >= n => Bcast::ScatterAllgather,
            _ if self.many_rounds(bytes) && n >= 4 => Bcast::ScatterAllgather,
            _ => Bcast::Knomial(2),
        }
    }

    /// Whether a single-copy broadcast of `bytes` to `n` ranks goes in pieces (every rank
    /// reads one piece from the root, then the others from the ranks that hold them) rather
    /// than every rank reading the whole message from the root.
    pub(crate) fn bcast_in_pieces(&self, n: usize, bytes: usize) -> bool {
        match self.bcast {
            BcastAlgo::ScatterAllgather => true,
            BcastAlgo::Auto => n >= 4 && self.cores >= PIECES_MIN_CORES && bytes >= self.large,
            _ => false,
        }
    }

    /// Whether a reduce or allreduce of `bytes` on `n` ranks' shared-memory board goes in
    /// pieces (every rank reduces one piece of all operands, the readers gather the pieces)
    /// rather than the readers combining every operand whole.
    pub(crate) fn reduce_in_pieces(&self, n: usize, bytes: usize) -> bool {
        match self.allreduce {
            AllreduceAlgo::Rabenseifner | AllreduceAlgo::Ring => true,
            AllreduceAlgo::Auto => {
                let spread = !self.oversubscribed && self.cores >= PIECES_MIN_CORES;
                spread && n >= 4 && bytes >= SPLIT_PIECE_MIN * n
            }
            AllreduceAlgo::RecursiveDoubling => false,
        }
    }

    /// Whether a blocking `kind` of `bytes` per rank, too large for one board slot, on `n`
    /// ranks of one node streams through the board in slot-sized pieces
    /// ([`super::stream`]) rather than running single-copy or on a schedule.
    pub(crate) fn board_stream(&self, kind: Streamed, n: usize, bytes: usize) -> bool {
        match self.stream {
            CollStream::On => true,
            CollStream::Off => false,
            // Readers of a broadcast wait for the root only, which runs 64 pieces ahead; in
            // an alltoall or a reduce every piece waits for every rank, and oversubscribed
            // ranks would hand each over through a context switch.
            CollStream::Auto => match kind {
                Streamed::Bcast => n >= 3 && self.oversubscribed,
                _ => n == 2 && !self.oversubscribed && bytes <= kind.auto_max(),
            },
        }
    }

    /// The allreduce of `count` elements (`bytes` packed) over `n` ranks.
    pub(crate) fn allreduce(
        &self,
        n: usize,
        count: usize,
        bytes: usize,
        commutes: bool,
    ) -> Allreduce {
        let pieces_fit = count >= n && n >= 2;
        match self.allreduce {
            AllreduceAlgo::Ring if pieces_fit && commutes => Allreduce::Ring,
            // Recursive halving combines blocks in an order that is not the ranks' order.
            AllreduceAlgo::Rabenseifner if pieces_fit && commutes => Allreduce::Rabenseifner,
            AllreduceAlgo::RecursiveDoubling => Allreduce::RecursiveDoubling,
            _ if pieces_fit && commutes && n >= 3 && self.many_rounds(bytes) => {
                Allreduce::Rabenseifner
            }
            _ => Allreduce::RecursiveDoubling,
        }
    }

    /// The allgather over `n` ranks whose largest block has `largest` bytes (`uniform`: all
    /// blocks have that size).
    pub(crate) fn allgather(&self, n: usize, largest: usize, uniform: bool) -> Allgather {
        match self.allgather {
            AllgatherAlgo::Direct => Allgather::Direct,
            AllgatherAlgo::Ring => Allgather::Ring,
            AllgatherAlgo::Bruck if uniform => Allgather::Bruck,
            _ if largest > ALLGATHER_SMALL || (n > 8 && !uniform) => Allgather::Ring,
            _ if n > 8 && !self.oversubscribed => Allgather::Bruck,
            _ => Allgather::Direct,
        }
    }

    /// The alltoall over `n` ranks whose largest block has `largest` bytes.
    pub(crate) fn alltoall(&self, n: usize, largest: usize) -> Alltoall {
        match self.alltoall {
            AlltoallAlgo::Direct => Alltoall::Direct,
            AlltoallAlgo::Pairwise => Alltoall::Pairwise,
            AlltoallAlgo::Auto if n > 8 && self.many_rounds(largest) => Alltoall::Pairwise,
            AlltoallAlgo::Auto => Alltoall::Direct,
        }
    }
}

/// A collective that may stream through the board ([`CollTuning::board_stream`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Streamed {
    /// Regular alltoall; `bytes` is one block.
    Alltoall,
    /// Reduce to a root; `bytes` is the operand.
    Reduce,
    /// Broadcast; `bytes` is the message.
    Bcast,
}

impl Streamed {
    /// Largest `bytes` that `auto` streams on 2 ranks of dedicated cores.
    fn auto_max(self) -> usize {
        match self {
            Streamed::Alltoall => STREAM_ALLTOALL_MAX,
            Streamed::Reduce => STREAM_REDUCE_MAX,
            Streamed::Bcast => usize::MAX,
        }
    }
}

/// A barrier schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Barrier {
    Dissemination,
    Pairwise,
}

/// A broadcast schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Bcast {
    /// k-nomial tree of this fan-out (2: binomial).
    Knomial(usize),
    /// Postal-model tree for this λ.
    Postal(usize),
    ScatterAllgather,
}

/// An allreduce schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Allreduce {
    RecursiveDoubling,
    Ring,
    Rabenseifner,
}

/// An allgather schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Allgather {
    Direct,
    Ring,
    Bruck,
}

/// An alltoall schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Alltoall {
    Direct,
    Pairwise,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_follows_the_table_and_forced_choices_fall_back_when_they_cannot_run() {
        let t = CollTuning::default();
        assert_eq!(t.bcast(8, 1 << 20), Bcast::ScatterAllgather);
        assert_eq!(t.bcast(2, 1 << 20), Bcast::Knomial(2));
        assert_eq!(
            t.allreduce(4, 1 << 18, 1 << 20, true),
            Allreduce::Rabenseifner
        );
        // Recursive halving would combine a non-commutative operation out of rank order.
        assert_eq!(
            t.allreduce(4, 1 << 18, 1 << 20, false),
            Allreduce::RecursiveDoubling
        );
        let halving = CollTuning {
            allreduce: AllreduceAlgo::Rabenseifner,
            ..t
        };
        assert_eq!(
            halving.allreduce(4, 4, 16, false),
            Allreduce::RecursiveDoubling
        );
        assert_eq!(halving.allreduce(4, 4, 16, true), Allreduce::Rabenseifner);
        assert_eq!(
            t.allreduce(4, 2, 1 << 20, false),
            Allreduce::RecursiveDoubling
        );
        assert_eq!(t.allgather(16, 64, true), Allgather::Bruck);
        assert_eq!(t.allgather(4, 64, true), Allgather::Direct);
        assert_eq!(t.allgather(4, 1 << 16, true), Allgather::Ring);
        let forced = CollTuning {
            allreduce: AllreduceAlgo::Ring,
            allgather: AllgatherAlgo::Bruck,
            bcast: BcastAlgo::Postal,
            ..t
        };
        assert_eq!(
            forced.allreduce(4, 2, 8, true),
            Allreduce::RecursiveDoubling
        );
        assert_eq!(forced.allreduce(4, 4, 16, true), Allreduce::Ring);
        assert_eq!(
            forced.allreduce(4, 4, 16, false),
            Allreduce::RecursiveDoubling
        );
        assert_eq!(forced.allgather(4, 64, false), Allgather::Direct);
        assert_eq!(forced.bcast(4, 4), Bcast::Postal(2));
        let crowded = CollTuning {
            oversubscribed: true,
            ..t
        };
        assert_eq!(crowded.bcast(8, 1 << 20), Bcast::Knomial(2));
        assert_eq!(
            crowded.allreduce(4, 1 << 18, 1 << 20, true),
            Allreduce::RecursiveDoubling
        );
        assert_eq!(crowded.allgather(16, 64, true), Allgather::Direct);
    }

    #[test]
    fn two_ranks_on_their_own_cores_stream_alltoall_up_to_a_limit_and_every_reduce() {
        let pair = CollTuning {
            cores: 2,
            ..CollTuning::default()
        };
        assert!(pair.board_stream(Streamed::Alltoall, 2, 64 << 10));
        assert!(!pair.board_stream(Streamed::Alltoall, 2, 4 << 20));
        assert!(pair.board_stream(Streamed::Reduce, 2, 4 << 20));
        assert!(!pair.board_stream(Streamed::Reduce, 4, 64 << 10));
        let crowded = CollTuning {
            oversubscribed: true,
            ..pair
        };
        assert!(!crowded.board_stream(Streamed::Reduce, 2, 64 << 10));
        let on = CollTuning {
            stream: CollStream::On,
            ..crowded
        };
        assert!(on.board_stream(Streamed::Alltoall, 8, 4 << 20));
        let off = CollTuning {
            stream: CollStream::Off,
            ..pair
        };
        assert!(!off.board_stream(Streamed::Reduce, 2, 64 << 10));
        assert!(crowded.board_stream(Streamed::Bcast, 8, 4 << 20));
        assert!(!crowded.board_stream(Streamed::Bcast, 2, 4 << 20));
        assert!(!pair.board_stream(Streamed::Bcast, 2, 4 << 20));
    }

    #[test]
    fn single_copy_broadcasts_go_in_pieces_on_many_cores() {
        let two = CollTuning::default();
        let many = CollTuning { cores: 16, ..two };
        let big = 1 << 20;
        assert!(!two.bcast_in_pieces(8, big));
        assert!(many.bcast_in_pieces(4, big) && !many.bcast_in_pieces(3, big));
        assert!(!many.bcast_in_pieces(16, 1024));
        let crowded = CollTuning {
            oversubscribed: true,
            ..many
        };
        assert!(crowded.bcast_in_pieces(64, big));
        let forced = CollTuning {
            bcast: BcastAlgo::ScatterAllgather,
            ..two
        };
        assert!(forced.bcast_in_pieces(3, 1));
        let binomial = CollTuning {
            bcast: BcastAlgo::Binomial,
            ..many
        };
        assert!(!binomial.bcast_in_pieces(16, big));
    }

    #[test]
    fn board_reductions_go_in_pieces_on_dedicated_cores() {
        let two = CollTuning::default();
        let many = CollTuning { cores: 16, ..two };
        assert!(!two.reduce_in_pieces(8, 1 << 14));
        assert!(many.reduce_in_pieces(16, 1 << 14) && many.reduce_in_pieces(4, 2048));
        assert!(!many.reduce_in_pieces(16, 256) && !many.reduce_in_pieces(3, 1 << 14));
        let crowded = CollTuning {
            oversubscribed: true,
            ..many
        };
        assert!(!crowded.reduce_in_pieces(32, 1 << 14));
        let ring = CollTuning {
            allreduce: AllreduceAlgo::Ring,
            ..two
        };
        assert!(ring.reduce_in_pieces(2, 4));
        let doubling = CollTuning {
            allreduce: AllreduceAlgo::RecursiveDoubling,
            ..many
        };
        assert!(!doubling.reduce_in_pieces(16, 1 << 14));
    }
}
