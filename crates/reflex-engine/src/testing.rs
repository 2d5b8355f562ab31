//! An in-process transport for tests: ranks are threads, rings are bounded queues.
//!
//! It honours the whole [`Transport`] contract (per-pair FIFO, bounded capacity with `WouldBlock`,
//! `max_packet`), so the engine's protocols, back-pressure and matching can be tested with many ranks
//! in one process, quickly and deterministically enough, without shared memory.

use reflex_base::cache::CachePadded;
use reflex_base::coop::CoopSlot;
use reflex_base::transport::{Transport, WouldBlock};
use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// Cooperative-copy slots per ordered pair: few, so that tests also see a receiver run out.
pub const COOP_SLOTS: usize = 4;

/// One inbox per rank: packets tagged with their source.
type Inbox = (Mutex<VecDeque<(usize, Vec<u8>)>>, Condvar);

/// A rank's endpoint of the in-memory transport.
#[derive(Debug)]
pub struct MemTransport {
    me: usize,
    inboxes: Arc<Vec<Inbox>>,
    /// Most packets one inbox holds from all sources together.
    capacity: usize,
    max_packet: usize,
    /// Ranks below this index form one "node", the others another; packets between the two
    /// nodes count as travelling on a byte stream ([`Transport::is_stream`]).
    split: usize,
    /// [`COOP_SLOTS`] cooperative-copy slots per ordered pair (ranks share one process).
    coop: Arc<Vec<CachePadded<CoopSlot>>>,
}

impl MemTransport {
    /// Endpoints for `n` ranks, each inbox holding at most `capacity` packets of up to `max_packet` bytes.
    pub fn mesh(n: usize, capacity: usize, max_packet: usize) -> Vec<MemTransport> {
        Self::mesh_split(n, n, capacity, max_packet)
    }

    /// As [`MemTransport::mesh`], with ranks `0..split` and `split..n` on two "nodes" joined by
    /// a byte stream (so the engine uses its stream limits between them).
    pub fn mesh_split(
        n: usize,
        split: usize,
        capacity: usize,
        max_packet: usize,
    ) -> Vec<MemTransport> {
        let inboxes: Arc<Vec<Inbox>> = Arc::new(
            (0..n)
                .map(|_| (Mutex::new(VecDeque::new()), Condvar::new()))
                .collect(),
        );
        let coop: Arc<Vec<CachePadded<CoopSlot>>> = Arc::new(
            (0..n * n * COOP_SLOTS)
                .map(|_| Default::default())
                .collect(),
        );
        (0..n)
            .map(|me| MemTransport {
                coop: coop.clone(),
                me,
                inboxes: inboxes.clone(),
                capacity,
                max_packet,
                split,
            })
            .collect()
    }
}

impl Transport for MemTransport {
    fn max_packet(&self) -> usize {
        self.max_packet
    }

    fn is_stream(&self, dest: usize) -> bool {
        (self.me < self.split) != (dest < self.split)
    }

    fn try_send<F: FnOnce(&mut [u8])>(
        &mut self,
        dest: usize,
        len: usize,
        fill: F,
    ) -> Result<(), WouldBlock> {
        assert!(
            len <= self.max_packet,
            "packet of {len} bytes exceeds max_packet"
        );
        let (queue, ready) = &self.inboxes[dest];
        let mut q = queue.lock().expect("inbox lock");
        if q.len() >= self.capacity {
            return Err(WouldBlock);
        }
        let mut bytes = vec![0u8; len];
        fill(&mut bytes);
        q.push_back((self.me, bytes));
        ready.notify_all();
        Ok(())
    }

    fn poll<H: FnMut(usize, &[u8])>(&mut self, mut handler: H) -> usize {
        let batch: Vec<(usize, Vec<u8>)> = self.inboxes[self.me]
            .0
            .lock()
            .expect("inbox lock")
            .drain(..)
            .collect();
        for (src, bytes) in &batch {
            handler(*src, bytes);
        }
        batch.len()
    }

    fn coop_slots(&self, sender: usize, receiver: usize) -> Option<&[CachePadded<CoopSlot>]> {
        let n = self.inboxes.len();
        let at = (sender * n + receiver) * COOP_SLOTS;
        (sender != receiver).then(|| &self.coop[at..at + COOP_SLOTS])
    }

    fn sleep(&mut self, timeout: Duration) {
        let (queue, ready) = &self.inboxes[self.me];
        let q = queue.lock().expect("inbox lock");
        if q.is_empty() {
            let _ = ready.wait_timeout(q, timeout).expect("inbox lock");
        }
    }
}

/// Runs `body` on `n` engines connected by a [`MemTransport`] (one thread per rank; inboxes of
/// `capacity` packets of at most `max_packet` bytes), then a barrier; panics if any rank did.
pub fn run_ranks(
    n: usize,
    capacity: usize,
    max_packet: usize,
    tuning: crate::Tuning,
    body: impl Fn(&mut crate::Engine<MemTransport>) + Send + Sync + Copy + 'static,
) {
    run_ranks_split(n, n, capacity, max_packet, tuning, body);
}

/// As [`run_ranks`], with the two "nodes" of [`MemTransport::mesh_split`].
pub fn run_ranks_split(
    n: usize,
    split: usize,
    capacity: usize,
    max_packet: usize,
    tuning: crate::Tuning,
    body: impl Fn(&mut crate::Engine<MemTransport>) + Send + Sync + Copy + 'static,
) {
    let handles: Vec<_> = MemTransport::mesh_split(n, split, capacity, max_packet)
        .into_iter()
        .enumerate()
        .map(|(rank, t)| {
            std::thread::spawn(move || {
                // Single copies (reads within this one process) only when a test asks for the
                // cooperative copy.
                let single_copy = tuning.coop_chunk.is_some();
                let mut e = crate::Engine::new(t, rank, (0..n).collect(), tuning, single_copy);
                body(&mut e);
                e.barrier(crate::COMM_WORLD).expect("final barrier");
            })
        })
        .collect();
    for h in handles {
        h.join().expect("rank thread panicked");
    }
}

/// Tuning for tests: a 256-byte eager limit and 1000-byte chunks (so small messages already take
/// the rendezvous and streaming paths) and short spins (many rank threads share few cores).
pub fn small_tuning() -> crate::Tuning {
    crate::Tuning {
        eager_limit: 256,
        chunk: 1000,
        spin_polls: 10,
        yield_polls: 10,
        sleep: Duration::from_micros(100),
        ..crate::Tuning::default()
    }
}
