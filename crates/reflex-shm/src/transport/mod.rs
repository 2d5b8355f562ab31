//! [`ShmTransport`]: the engine's [`Transport`] over one node segment.
//!
//! A rank owns the producer end of its `n - 1` outgoing rings and the consumer end of its `n - 1`
//! incoming ones, plus a private ring to itself (so the engine needs no special case for self
//! sends). Sending writes the packet in place into the destination's ring and rings its doorbell if
//! it sleeps ([`crate::doorbell`]); polling visits every incoming ring once per call, starting one
//! further each time (round-robin), and takes at most [`POLL_BURST`] packets, or the packets up to
//! [`POLL_BURST_BYTES`], from each, so a streaming peer can neither starve the others nor keep a
//! poll call from returning, and a waiter is not handed messages whose receives are not posted
//! yet.
//!
//! Back-pressure works with sleeping too: a rank whose send was refused (ring full) may sleep, and
//! its receiver, when a poll publishes freed room, rings the sender's doorbell the same way a sender
//! rings a receiver's. So `sleep` returns when a packet may have arrived *or* a refused destination
//! may have room again.

use crate::doorbell::{self, Slept, WakeOrdering};
use crate::ring::{heap_ring, Consumer, Producer};
use crate::segment::ShmSegment;
use reflex_base::cache::CachePadded;
use reflex_base::coop::CoopSlot;
use reflex_base::transport::{Transport, WouldBlock};
use std::io;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Most packets taken from one source in one [`Transport::poll`] call.
pub const POLL_BURST: usize = 32;
/// Packet bytes after which one [`Transport::poll`] call stops taking from a source.
///
/// A poll that drained a whole ring of large eager messages handed the engine the next
/// iteration's messages too, before their receives were posted: they went to the unexpected
/// queue (an allocation and a second copy each). With 32 KiB messages in a window of 64 both
/// ways (2 ranks), 0.2-0.8 MB of 2 MB per iteration went that way and the bidirectional rate
/// was 12-16 GB/s; stopping after 64 KiB staged nothing and gave 20-25 GB/s (2026-11-28).
pub const POLL_BURST_BYTES: usize = 64 << 10;

/// Counters of the slow paths, for benchmarks and tests.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ShmStats {
    /// Calls to `sleep` that blocked in the kernel.
    pub sleeps: u64,
    /// Of those, how many ended by their timeout.
    pub timeouts: u64,
    /// Calls to `sleep` that found a packet after raising the flag and did not block.
    pub sleeps_avoided: u64,
    /// Wake-ups this rank sent to sleeping peers.
    pub wakes_sent: u64,
}

/// One incoming ring and who writes it.
#[derive(Debug)]
struct Source {
    rank: usize,
    ring: Consumer,
}

/// The shared-memory transport of one rank.
#[derive(Debug)]
pub struct ShmTransport {
    /// Producer per destination rank (the entry for `me` is the private self ring).
    tx: Box<[Producer]>,
    /// Incoming rings, the self ring included.
    rx: Box<[Source]>,
    /// Where the next poll starts in `rx`.
    next_rx: usize,
    me: usize,
    max_packet: usize,
    ordering: WakeOrdering,
    stats: ShmStats,
    /// Declared last: dropped after the endpoints that point into it.
    seg: ShmSegment,
}

impl ShmTransport {
    /// Attaches local rank `me` to `seg`, with the cheapest wake ordering the kernel offers.
    ///
    /// A rank attaches once per segment (its pid slot records it): a second attach is refused,
    /// because the rings would no longer be fresh.
    pub fn new(seg: ShmSegment, me: usize) -> io::Result<ShmTransport> {
        let ordering =
            doorbell::choose_ordering(WakeOrdering::Membarrier).unwrap_or(WakeOrdering::Fence);
        Self::with_ordering(seg, me, ordering)
    }

    /// Attaches local rank `me` to `seg` with the given wake ordering (an error if unavailable).
    pub fn with_ordering(
        seg: ShmSegment,
        me: usize,
        ordering: WakeOrdering,
    ) -> io::Result<ShmTransport> {
        let n = seg.nranks();
        if me >= n {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "shm: local rank {me} out of range: segment {} has {n} ranks",
                    seg.name()
                ),
            ));
        }
        let ordering = doorbell::choose_ordering(ordering)?;
        let pid = std::process::id();
        if let Err(other) =
            seg.slot(me)
                .pid
                .compare_exchange(0, pid, Ordering::AcqRel, Ordering::Acquire)
        {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!(
                    "shm: local rank {me} of segment {} is already attached by pid {other}",
                    seg.name()
                ),
            ));
        }
        let (self_tx, self_rx) = heap_ring(seg.ring_bytes())?;
        let mut self_tx = Some(self_tx);
        let mut tx = Vec::with_capacity(n);
        let mut rx = Vec::with_capacity(n);
        for peer in 0..n {
            if peer == me {
                tx.extend(self_tx.take());
                continue;
            }
            // SAFETY: each ordered pair's ring has exactly one writer (rank `src`) and one reader
            // (rank `dst`); rank `me` is attached once (the pid slot's compare-exchange above), so
            // these are the only endpoints of these fresh, zero-filled rings. They live in `self`
            // together with `seg`, which is dropped after them.
            unsafe {
                tx.push(Producer::new(seg.ring(me, peer)));
                rx.push(Source {
                    rank: peer,
                    ring: Consumer::new(seg.ring(peer, me)),
                });
            }
        }
        rx.push(Source {
            rank: me,
            ring: self_rx,
        });
        Ok(ShmTransport {
            tx: tx.into_boxed_slice(),
            rx: rx.into_boxed_slice(),
            next_rx: 0,
            me,
            max_packet: seg.max_packet(),
            ordering,
            stats: ShmStats::default(),
            seg,
        })
    }

    /// This rank's index on the node.
    pub fn rank(&self) -> usize {
        self.me
    }

    /// Ranks on the node.
    pub fn nranks(&self) -> usize {
        self.tx.len()
    }

    /// The segment this transport runs over.
    pub fn segment(&self) -> &ShmSegment {
        &self.seg
    }

    /// The process id of local rank `rank`, once attached (for [`crate::cma`]).
    pub fn peer_pid(&self, rank: usize) -> Option<u32> {
        self.seg.pid(rank)
    }

    /// The wake ordering in use.
    pub fn ordering(&self) -> WakeOrdering {
        self.ordering
    }

    /// Slow-path counters.
    pub fn stats(&self) -> ShmStats {
        self.stats
    }

    /// Sources whose ring held a corrupt header and delivers nothing more (empty when healthy).
    pub fn broken_sources(&self) -> Vec<usize> {
        self.rx
            .iter()
            .filter(|s| s.ring.is_broken())
            .map(|s| s.rank)
            .collect()
    }

    /// Whether any incoming ring holds a packet or a refused outgoing ring has room again.
    fn any_pending(&self) -> bool {
        self.rx.iter().any(|s| s.ring.has_packet()) || self.tx.iter().any(Producer::room_again)
    }
}

impl Transport for ShmTransport {
    fn max_packet(&self) -> usize {
        self.max_packet
    }

    /// # Panics
    /// If `dest >= nranks` or `len > max_packet()`: both are engine bugs, not user input.
    #[inline]
    fn try_send<F: FnOnce(&mut [u8])>(
        &mut self,
        dest: usize,
        len: usize,
        fill: F,
    ) -> Result<(), WouldBlock> {
        let n = self.tx.len();
        assert!(
            dest < n,
            "shm: destination rank {dest} out of range ({n} ranks)"
        );
        self.tx[dest].try_push(len, fill)?;
        if doorbell::ring_after_publish(self.seg.slot(dest), self.ordering) {
            self.stats.wakes_sent += 1;
        }
        Ok(())
    }

    fn coop_slots(&self, sender: usize, receiver: usize) -> Option<&[CachePadded<CoopSlot>]> {
        let n = self.tx.len();
        (sender != receiver && sender < n && receiver < n)
            .then(|| self.seg.coop_slots(sender, receiver))
    }

    #[inline]
    fn poll<H: FnMut(usize, &[u8])>(&mut self, mut handler: H) -> usize {
        let n = self.rx.len();
        let start = self.next_rx;
        self.next_rx = if start + 1 == n { 0 } else { start + 1 };
        let mut delivered = 0;
        for i in 0..n {
            let j = if start + i >= n {
                start + i - n
            } else {
                start + i
            };
            let src = &mut self.rx[j];
            let published = src.ring.published();
            let mut bytes = 0;
            for _ in 0..POLL_BURST {
                if bytes >= POLL_BURST_BYTES {
                    break;
                }
                let Some(slot) = src.ring.recv_begin() else {
                    break;
                };
                bytes += slot.len();
                handler(src.rank, &slot);
                delivered += 1;
            }
            if src.ring.published() != published
                && doorbell::ring_after_publish(self.seg.slot(src.rank), self.ordering)
            {
                // Freed room: a sender that stalled on this ring may be asleep.
                self.stats.wakes_sent += 1;
            }
        }
        delivered
    }

    fn sleep(&mut self, timeout: Duration) {
        if timeout.is_zero() {
            return;
        }
        let slot = self.seg.slot(self.me);
        match doorbell::sleep(slot, timeout, || self.any_pending()) {
            Slept::Pending | Slept::NoBarrier => self.stats.sleeps_avoided += 1,
            Slept::Woken => self.stats.sleeps += 1,
            Slept::TimedOut => {
                self.stats.sleeps += 1;
                self.stats.timeouts += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests;
