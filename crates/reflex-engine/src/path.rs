//! Protocol limits per destination: the eager limit and rendezvous chunk size depend on the kind
//! of path a peer is reached by, and a packet to a byte-stream path is gathered, not packed.
//!
//! Shared memory and TCP want opposite things. Through shared-memory cells a packet costs a few
//! cache-line handoffs, so small eager packets and small chunks keep the rings flowing (and
//! rendezvous there is a single `process_vm_readv`). Over TCP every packet costs system calls
//! and an epoll round, while the kernel copies the bytes anyway: fewer, larger packets win (the
//! 2026-11-23 measurement in docs/cluster.md: 16 KiB chunks gave 1.1 GB/s at 256 KiB, 256 KiB
//! chunks ~3x more), and a contiguous payload is handed to the kernel from the user's buffer
//! ([`Transport::try_send_parts`]) instead of being packed into the transport first. Each
//! destination's [`Limits`] are fixed at start-up from [`Transport::is_stream`].

use crate::engine::Tuning;
use crate::packet;
use reflex_base::transport::Transport;

/// How the engine sends to one destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limits {
    /// Largest message sent eagerly.
    pub eager: usize,
    /// Payload bytes of one streamed DATA chunk.
    pub chunk: usize,
    /// Hand contiguous payloads to the transport by reference ([`Transport::try_send_parts`]).
    pub gather: bool,
}

/// The [`Limits`] of every world rank, and the largest eager limit (a quick first test).
#[derive(Debug, Default)]
pub(crate) struct PathLimits {
    by_rank: Box<[Limits]>,
    /// The largest `eager` of any destination.
    pub eager_max: usize,
}

impl PathLimits {
    /// Limits towards every world rank `r`, reached through transport index `route[r]`; rank
    /// `me` (loopback) gets the memory limits.
    pub(crate) fn new<T: Transport>(fabric: &T, me: usize, route: &[usize], t: &Tuning) -> Self {
        let by_rank: Box<[Limits]> = route
            .iter()
            .enumerate()
            .map(|(rank, &index)| limits_to(fabric, (rank == me).then_some(index), index, t))
            .collect();
        let eager_max = by_rank.iter().map(|l| l.eager).max().unwrap_or(0);
        Self { by_rank, eager_max }
    }

    /// Adds the limits towards a new process (of another job), reached at transport `index`.
    pub(crate) fn push<T: Transport>(&mut self, fabric: &T, index: usize, t: &Tuning) {
        let limits = limits_to(fabric, None, index, t);
        self.eager_max = self.eager_max.max(limits.eager);
        let mut all = std::mem::take(&mut self.by_rank).into_vec();
        all.push(limits);
        self.by_rank = all.into();
    }

    /// The limits towards world rank `rank`.
    #[inline]
    pub(crate) fn of(&self, rank: usize) -> Limits {
        self.by_rank[rank]
    }
}

/// The limits towards transport `index` (`me` = `Some(index)` for this process itself, which
/// gets the memory limits).
fn limits_to<T: Transport>(fabric: &T, me: Option<usize>, index: usize, t: &Tuning) -> Limits {
    let stream = me.is_none() && fabric.is_stream(index);
    let max_packet = match me {
        Some(_) => fabric.max_packet(),
        None => fabric.max_packet_to(index),
    };
    let (eager, chunk) = if stream {
        (t.stream_eager_limit, t.stream_chunk)
    } else {
        (t.eager_limit, t.chunk)
    };
    Limits {
        eager: eager.min(max_packet - packet::EAGER_HEADER),
        chunk: chunk.clamp(1, max_packet - packet::DATA_HEADER),
        gather: stream,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reflex_base::transport::WouldBlock;

    /// Ranks 0 and 1 share memory (1 KiB packets), rank 2 is behind a stream (64 KiB packets).
    struct TwoKinds;

    impl Transport for TwoKinds {
        fn max_packet(&self) -> usize {
            1024
        }
        fn max_packet_to(&self, dest: usize) -> usize {
            if dest == 2 {
                64 << 10
            } else {
                1024
            }
        }
        fn is_stream(&self, dest: usize) -> bool {
            dest == 2
        }
        fn try_send<F: FnOnce(&mut [u8])>(
            &mut self,
            _: usize,
            _: usize,
            _: F,
        ) -> Result<(), WouldBlock> {
            Err(WouldBlock)
        }
        fn poll<H: FnMut(usize, &[u8])>(&mut self, _: H) -> usize {
            0
        }
        fn sleep(&mut self, _: std::time::Duration) {}
    }

    #[test]
    fn limits_follow_the_kind_of_path_and_its_packet_size() {
        let t = Tuning {
            eager_limit: 4096,
            chunk: 4096,
            stream_eager_limit: 8192,
            stream_chunk: 1 << 20,
            ..Tuning::default()
        };
        let p = PathLimits::new(&TwoKinds, 0, &[0, 1, 2], &t);
        let memory = Limits {
            eager: 1024 - packet::EAGER_HEADER,
            chunk: 1024 - packet::DATA_HEADER,
            gather: false,
        };
        assert_eq!(p.of(0), memory, "loopback");
        assert_eq!(p.of(1), memory, "shared memory");
        let stream = Limits {
            eager: 8192,
            chunk: (64 << 10) - packet::DATA_HEADER,
            gather: true,
        };
        assert_eq!(p.of(2), stream, "stream");
        assert_eq!(p.eager_max, 8192);
    }
}
