//! Message counters for tools (`MPI_T` performance variables): messages and bytes this process
//! sent and received, the deepest the unexpected-message queue has been, and collectives started.
//!
//! Plain per-process `u64` adds in fields the engine owns (no atomics, no branches): a send is
//! counted where its first packet is handed to the transport or queued for it (the eager paths
//! with no request, and `Engine::start_send` for everything else: rendezvous,
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

#[cfg(test)]
mod tests {
    use crate::request::SendMode;
    use crate::testing::{run_ranks, small_tuning};
    use crate::{Basic, Datatype, ValueKind, COMM_WORLD};
    use reflex_base::buf::{RecvBuf, SendBuf};

    fn byte() -> Datatype {
        Datatype::Basic(Basic::plain(ValueKind::Byte, 1))
    }

    #[test]
    fn every_message_counts_once_on_each_side() {
        // Eager, rendezvous (above the 256-byte eager limit) and synchronous, each once.
        const LENS: [usize; 3] = [8, 3000, 16];
        run_ranks(2, 8, 4096, small_tuning(), |e| {
            let total = LENS.iter().sum::<usize>() as u64;
            if e.world_rank() == 0 {
                for (tag, n) in LENS.into_iter().enumerate() {
                    let mode = match tag {
                        2 => SendMode::Synchronous,
                        _ => SendMode::Standard,
                    };
                    let out = SendBuf::from_slice(Box::leak(vec![1u8; n].into_boxed_slice()));
                    e.send(out, n, byte(), 1, tag as i32, COMM_WORLD, mode)
                        .unwrap();
                }
                // The harness's final barrier may already have sent this rank an (empty)
                // message: received bytes are exact, received messages 0 or 1.
                let t = e.traffic();
                assert_eq!((t.messages_sent, t.bytes_sent), (3, total));
                assert!(t.messages_received <= 1 && t.bytes_received == 0, "{t:?}");
                return;
            }
            for (tag, n) in LENS.into_iter().enumerate() {
                let buf = RecvBuf::from_slice(Box::leak(vec![0u8; n].into_boxed_slice()));
                e.recv(buf, n, byte(), 0, tag as i32, COMM_WORLD).unwrap();
            }
            let t = e.traffic();
            assert_eq!(t.bytes_received, total);
            assert!((3..=4).contains(&t.messages_received), "{t:?}");
            assert_eq!(t.messages_sent, 0);
        });
    }
}
