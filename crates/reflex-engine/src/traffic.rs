//! Message counters for tools (`MPI_T` performance variables): messages and bytes this process
//! sent and received, the deepest the unexpected-message queue has been, and collectives started.
//!
//! Plain per-process `u64` adds in fields the engine owns (no atomics, no branches): a send is
//! counted where its first packet is handed to the transport or queued for it (the eager paths
//! with no request, and [`crate::engine::Engine::start_send`] for everything else: rendezvous,
//! synchronous, buffered, persistent and the sends of collective schedules, RMA and partitioned
//! communication); a receive where an eager or rendezvous envelope arrives (matched at once or
//! queued as unexpected) or where the blocking receive's direct path takes it. Control packets
//! (CTS, FIN, acknowledgements, data chunks) are not messages. Collectives run on a shared-memory
//! board send no messages. A collective is counted where it starts: on the shared-memory board
//! (the dense fast paths and `Engine::collective`), or as a schedule (blocking ones that do not
//! fit the board, nonblocking ones, each start of a persistent one).

/// Messages and bytes, cumulative since the engine started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Traffic {
    /// Messages sent (point-to-point, and those collectives, RMA and partitioned requests send).
    pub messages_sent: u64,
    /// Payload bytes of those messages.
    pub bytes_sent: u64,
    /// Messages whose envelope arrived (matched or unexpected).
    pub messages_received: u64,
    /// Payload bytes of those messages (as sent; a truncated receive keeps fewer).
    pub bytes_received: u64,
    /// Most messages the unexpected queue held at once.
    pub unexpected_peak: u64,
    /// Collective operations started (on a board or as a schedule).
    pub collectives: u64,
}

impl Traffic {
    /// Counts one message of `len` bytes sent.
    #[inline]
    pub(crate) fn sent(&mut self, len: u64) {
        self.messages_sent += 1;
        self.bytes_sent += len;
    }

    /// Counts one message of `len` bytes received.
    #[inline]
    pub(crate) fn received(&mut self, len: u64) {
        self.messages_received += 1;
        self.bytes_received += len;
    }

    /// Notes that the unexpected queue holds `len` messages.
    #[inline]
    pub(crate) fn unexpected_at(&mut self, len: usize) {
        self.unexpected_peak = self.unexpected_peak.max(len as u64);
    }
}
