//! Landing streamed DATA in place: the engine's answer to a stream transport that has the start
//! of a large packet and asks where the rest goes (`reflex_base::transport::Sink`).
//!
//! Over TCP a rendezvous chunk would otherwise be read into the connection's buffer and then
//! copied into the receive buffer. When the chunk is a DATA packet for a streaming receive whose
//! buffer is one slice (a dense user buffer or an engine-owned one), [`Arrivals::place`] hands
//! out that slice, the transport reads the payload into it straight from the kernel, and
//! [`Arrivals::placed`] books the bytes. Anything else (eager packets, derived datatypes, a
//! message longer than its buffer) is declined and arrives whole through [`Arrivals::packet`].

use crate::core::{streaming_recv, Core};
use crate::packet::{self, Packet};
use reflex_base::transport::Sink;

/// What a poll hands packets to: the protocol core, with transport indexes mapped to world
/// ranks.
pub(crate) struct Arrivals<'a> {
    pub core: &'a mut Core,
    pub world_of: &'a [usize],
}

impl Sink for Arrivals<'_> {
    fn packet(&mut self, src: usize, bytes: &[u8]) {
        self.core.on_packet(self.world_of[src], bytes);
    }

    fn place(&mut self, _src: usize, head: &[u8], len: usize, at: usize) -> Option<&mut [u8]> {
        let Ok(Packet::Data {
            rreq,
            offset,
            payload,
        }) = packet::decode(head)
        else {
            return None;
        };
        let start = usize::try_from(offset).ok()?;
        let end = start.checked_add(len.checked_sub(packet::DATA_HEADER)?)?;
        let skip = at.checked_sub(packet::DATA_HEADER)?;
        let recv = streaming_recv(&mut self.core.requests, rreq).ok()?;
        let buf = recv.buf.contiguous_mut().filter(|b| end <= b.len())?;
        if at == head.len() {
            buf[start..start + payload.len()].copy_from_slice(payload);
            self.core.stats.unpacked += payload.len() as u64;
        }
        Some(&mut buf[start + skip..end])
    }

    fn placed(&mut self, src: usize, head: &[u8], len: usize) {
        match packet::decode(head) {
            Ok(Packet::Data { rreq, .. }) => self.core.count_data(rreq, len - packet::DATA_HEADER),
            _ => self.core.record_fatal(crate::error::MpiError::new(
                crate::error::ErrorClass::Intern,
                format!("a packet from index {src} was placed but is not DATA"),
            )),
        }
    }
}
