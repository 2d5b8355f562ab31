//! Large DATA frames read straight into their final buffer (`Sink::place`).
//!
//! A rendezvous chunk over TCP is one frame of up to `REFLEX_TCP_CHUNK` bytes. Buffering it in
//! the connection and letting the engine copy it out would cost a second copy of every byte on
//! the receiving side (the first is the kernel's). Instead, once the start of a frame of at
//! least `PLACE_MIN` bytes is buffered (its first read is capped at one chunk of the receive
//! buffer), the transport shows it to the sink; when the sink names the buffer the rest belongs
//! in, the buffered start is handed over and the rest is read with `recv` into that buffer
//! directly, over as many polls as it takes (the frame's first `PLACE_HEAD` bytes are kept to
//! name it each time), and `Sink::placed` reports the end. A declined frame is buffered whole
//! as before. Nothing else may arrive on the connection meanwhile: frames are in order.

use std::io;

use reflex_base::transport::{Sink, PLACE_HEAD, PLACE_MIN};

use crate::conn::{Placing, ReadOutcome};
use crate::frame::Kind;
use crate::transport::{Link, TcpTransport};

impl TcpTransport {
    /// Offers the incomplete frame buffered on the link to `peer` to the sink; when it is taken,
    /// starts landing the rest. Returns the packets completed (0 or 1).
    pub(crate) fn start_placing<S: Sink>(&mut self, peer: usize, sink: &mut S) -> usize {
        let max = self.max_packet;
        let Link::Up(conn) = &mut self.links[peer] else {
            return 0;
        };
        if conn.declined || conn.placing.is_some() {
            return 0;
        }
        let Some((header, first)) = conn.partial_frame(max) else {
            return 0;
        };
        // More than the kept head: the sink tells the first offer (`at == head.len()`) from
        // the later ones (which show the kept head only).
        if header.kind != Kind::Data || header.len < PLACE_MIN || first.len() <= PLACE_HEAD {
            return 0;
        }
        let placing = Placing::new(first, header.len);
        let Some(dst) = sink.place(peer, first, header.len, first.len()) else {
            conn.declined = true;
            return 0;
        };
        conn.drop_buffered();
        let outcome = conn.read_into(dst);
        self.landed(peer, placing, outcome, sink)
    }

    /// Reads once more of the frame being placed on the link to `peer` into the sink's buffer;
    /// returns 1 when the frame is complete.
    pub(crate) fn land<S: Sink>(&mut self, peer: usize, sink: &mut S) -> usize {
        let Link::Up(conn) = &mut self.links[peer] else {
            return 0;
        };
        let Some(placing) = conn.placing else {
            return 0;
        };
        let Some(dst) = sink.place(peer, placing.head(), placing.len, placing.at) else {
            self.refused(peer, "the rest of a frame it took");
            return 0;
        };
        let outcome = conn.read_into(dst);
        self.landed(peer, placing, outcome, sink)
    }

    /// Breaks the link to `peer` because the sink would not take the rest of a packet it took
    /// the start of (`Sink::place` promises to): the bytes cannot be put back. A bug in the
    /// engine, not the peer's fault, and said at once: the peer's later sends are lost.
    pub(crate) fn refused(&mut self, peer: usize, what: &str) {
        let reason = format!("internal error: the engine refused {what}; connection closed");
        eprintln!(
            "reflex: tcp: {} (link to rank {peer}): {reason}",
            self.name()
        );
        self.break_link(peer, reason);
    }

    /// The bytes one read of the middle of a frame on stream `stream` of `peer` got, or `None`
    /// when the link broke (the end of the socket, or an error).
    pub(crate) fn bytes_read(
        &mut self,
        peer: usize,
        stream: usize,
        outcome: io::Result<ReadOutcome>,
    ) -> Option<usize> {
        let reason = match outcome {
            Ok(ReadOutcome::Data(n)) => return Some(n),
            Ok(ReadOutcome::Empty) => return Some(0),
            Ok(ReadOutcome::Eof) if stream == 0 => {
                format!("rank {peer} closed its connection in the middle of a frame")
            }
            Ok(ReadOutcome::Eof) => {
                format!("rank {peer} closed stream {stream} in the middle of a frame")
            }
            Err(e) => format!("connection lost: {e}"),
        };
        self.break_link(peer, reason);
        None
    }

    /// Books one read of a frame being placed; returns 1 when the frame is complete.
    fn landed<S: Sink>(
        &mut self,
        peer: usize,
        mut placing: Placing,
        outcome: io::Result<ReadOutcome>,
        sink: &mut S,
    ) -> usize {
        match self.bytes_read(peer, 0, outcome) {
            Some(n) => placing.at += n,
            None => return 0,
        }
        let Link::Up(conn) = &mut self.links[peer] else {
            return 0;
        };
        if placing.at < placing.len {
            conn.placing = Some(placing);
            return 0;
        }
        conn.placing = None;
        sink.placed(peer, placing.head(), placing.len);
        1
    }
}
