//! One TCP connection's byte plumbing: a receive buffer that frames are parsed in place from,
//! and the unsent tail of at most one outgoing frame.
//!
//! Sending writes a whole frame with one system call (`MSG_NOSIGNAL`: a closed peer must not
//! kill a C program with SIGPIPE): a small frame is copied together and sent with `send(2)`, a
//! large one gathered by `sendmsg(2)` from the frame header and the caller's buffers (its
//! payload goes from the application's buffer to the kernel without a copy here). What
//! the kernel does not take is copied here and must be flushed before the next frame goes out,
//! so user space holds at most one frame per peer; the real send queue is the socket's send
//! buffer, bounded by the kernel (back-pressure = `WouldBlock`).
//! Receiving reads into a buffer of [`RX_CHUNK`] bytes (grown to hold one frame of up to the
//! packet limit when a header announces it) and hands out complete frames as slices of it.

use std::io::{self, ErrorKind, IoSlice, Read, Write};
use std::net::TcpStream;
use std::ops::Range;
use std::os::fd::AsRawFd;

use nix::errno::Errno;
use nix::sys::socket::{sendmsg, MsgFlags, SockaddrIn};

use reflex_base::transport::{PLACE_HEAD, PLACE_MIN};

use crate::frame::{parse_header, FrameError, Header, Kind, HEADER_LEN};

/// Initial receive buffer: enough for many small frames per `read(2)`.
pub const RX_CHUNK: usize = 64 * 1024;

/// Frames up to this many bytes are copied into one buffer and sent with `send(2)`: on the
/// project's VM (loopback, 8 B to 4 KiB payloads, C ping-pong, 2026-11-28) a `sendmsg(2)` of a
/// header and a payload took 0.1-0.3 µs longer than copying them together and sending once
/// (the kernel's per-call message and per-segment iovec handling); at 8 KiB the two are even,
/// at 16 KiB the copy loses.
pub const GATHER_LIMIT: usize = 4096 + 256;

/// What one read produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadOutcome {
    /// `n` new bytes are buffered.
    Data(usize),
    /// Nothing to read now.
    Empty,
    /// The peer closed its end.
    Eof,
}

/// A connection (see the module documentation).
#[derive(Debug)]
pub struct Conn {
    pub stream: TcpStream,
    rx: Vec<u8>,
    rx_start: usize,
    rx_end: usize,
    tx: Vec<u8>,
    tx_off: usize,
    /// Whether epoll currently watches this connection for writability.
    pub watching_out: bool,
    /// Whether the connection is out of the epoll set, read directly by every poll while its
    /// peer keeps answering (`crate::hot`).
    pub detached: bool,
    /// The frame being landed in the sink's buffer, if any (`crate::place`).
    pub placing: Option<Placing>,
    /// The sink declined to place the frame at the head of the buffer: buffer it whole.
    pub declined: bool,
    /// The bytes of a split packet that this socket's next reads carry (`crate::stripe`).
    pub landing: Option<Range<usize>>,
    /// The sequence number of the next split packet's piece on this socket.
    pub next_seq: u32,
}

/// A large frame whose payload is read straight into the sink's buffer.
#[derive(Debug, Clone, Copy)]
pub struct Placing {
    /// Packet bytes in all.
    pub len: usize,
    /// Packet bytes landed so far.
    pub at: usize,
    head: [u8; PLACE_HEAD],
}

impl Placing {
    /// A packet of `len` bytes that begins with `first` (at least `PLACE_HEAD` bytes of it).
    pub fn new(first: &[u8], len: usize) -> Self {
        let mut head = [0u8; PLACE_HEAD];
        head.copy_from_slice(&first[..PLACE_HEAD]);
        Self {
            len,
            at: first.len(),
            head,
        }
    }

    /// The packet's first bytes, which name it to the sink.
    pub fn head(&self) -> &[u8] {
        &self.head
    }
}

impl Conn {
    /// Wraps a connected (or connecting) non-blocking stream.
    pub fn new(stream: TcpStream) -> Self {
        Self {
            stream,
            rx: Vec::new(),
            rx_start: 0,
            rx_end: 0,
            tx: Vec::new(),
            tx_off: 0,
            watching_out: false,
            detached: false,
            placing: None,
            declined: false,
            landing: None,
            next_seq: 0,
        }
    }

    /// Whether part of a frame waits to be sent.
    pub fn tx_pending(&self) -> bool {
        self.tx_off < self.tx.len()
    }

    /// Queues bytes to send once the socket is connected (the hello of an outgoing connection).
    pub fn queue(&mut self, bytes: &[u8]) {
        self.tx.extend_from_slice(bytes);
    }

    /// Writes queued bytes; returns whether the queue is empty now.
    pub fn flush(&mut self) -> io::Result<bool> {
        while self.tx_pending() {
            match self.stream.write(&self.tx[self.tx_off..]) {
                Ok(0) => return Err(ErrorKind::WriteZero.into()),
                Ok(n) => self.tx_off += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(false),
                Err(e) => return Err(e),
            }
        }
        self.tx.clear();
        self.tx_off = 0;
        Ok(true)
    }

    /// Sends `frame` (header and payload) after anything queued; keeps what the kernel refuses.
    pub fn send(&mut self, frame: &[u8]) -> io::Result<()> {
        self.send_parts(&mut [IoSlice::new(frame)])
    }

    /// Sends the concatenation of `parts` after anything queued; keeps what the kernel refuses.
    /// A frame of up to [`GATHER_LIMIT`] bytes is gathered into the queue and goes out with one
    /// `send(2)`; a larger one with one `sendmsg(2)` from the parts themselves (not copied).
    pub fn send_parts(&mut self, parts: &mut [IoSlice<'_>]) -> io::Result<()> {
        let len: usize = parts.iter().map(|part| part.len()).sum();
        if len <= GATHER_LIMIT {
            self.queue_parts(parts);
            return self.flush().map(drop);
        }
        let mut parts = parts;
        if self.flush()? {
            while !parts.is_empty() {
                let flags = MsgFlags::MSG_NOSIGNAL;
                let fd = self.stream.as_raw_fd();
                match sendmsg::<SockaddrIn>(fd, parts, &[], flags, None) {
                    Ok(0) => return Err(ErrorKind::WriteZero.into()),
                    Ok(n) => IoSlice::advance_slices(&mut parts, n),
                    Err(Errno::EINTR) => {}
                    Err(Errno::EAGAIN) => break,
                    Err(e) => return Err(e.into()),
                }
            }
        }
        self.queue_parts(parts);
        Ok(())
    }

    /// Queues the concatenation of `parts` after anything queued.
    fn queue_parts(&mut self, parts: &[IoSlice<'_>]) {
        for part in parts {
            self.queue(part);
        }
    }

    /// Reads once into the buffer, making room for at least the frame being received.
    pub fn read(&mut self, max_data: usize) -> io::Result<ReadOutcome> {
        let need = self.bytes_wanted(max_data);
        self.make_room(need);
        // A frame that may be placed is read only up to a chunk: the rest should land in place.
        let end = if self.may_place(max_data) {
            self.rx.len().min(self.rx_end + RX_CHUNK)
        } else {
            self.rx.len()
        };
        loop {
            match self.stream.read(&mut self.rx[self.rx_end..end]) {
                Ok(0) => return Ok(ReadOutcome::Eof),
                Ok(n) => {
                    self.rx_end += n;
                    return Ok(ReadOutcome::Data(n));
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(ReadOutcome::Empty),
                Err(e) => return Err(e),
            }
        }
    }

    /// The next complete frame in the buffer: its header and the range of its payload (valid
    /// until [`Conn::consume`]). A malformed header is an error.
    pub fn next_frame(
        &self,
        max_data: usize,
    ) -> Result<Option<(Header, Range<usize>)>, FrameError> {
        let buffered = &self.rx[self.rx_start..self.rx_end];
        let Some(head) = buffered.first_chunk::<HEADER_LEN>() else {
            return Ok(None);
        };
        let header = parse_header(head, max_data)?;
        if buffered.len() < HEADER_LEN + header.len {
            return Ok(None);
        }
        let from = self.rx_start + HEADER_LEN;
        Ok(Some((header, from..from + header.len)))
    }

    /// The header and buffered payload bytes of an incomplete frame at the head of the buffer.
    pub fn partial_frame(&self, max_data: usize) -> Option<(Header, &[u8])> {
        let buffered = &self.rx[self.rx_start..self.rx_end];
        let header = parse_header(buffered.first_chunk::<HEADER_LEN>()?, max_data).ok()?;
        let payload = &buffered[HEADER_LEN..];
        (payload.len() < header.len).then_some((header, payload))
    }

    /// Whether the next frame might be placed: its header is not in yet, or it is a large
    /// DATA frame that the sink has not declined, or a piece of a split packet.
    fn may_place(&self, max_data: usize) -> bool {
        match self.peek_header(max_data) {
            None => true,
            Some(Ok(h)) => match h.kind {
                Kind::Data => h.len >= PLACE_MIN && !self.declined,
                Kind::Head | Kind::Part => true,
                _ => false,
            },
            Some(Err(_)) => false,
        }
    }

    /// The header of the frame at the head of the buffer, once its bytes are in.
    pub fn peek_header(&self, max_data: usize) -> Option<Result<Header, FrameError>> {
        let buffered = &self.rx[self.rx_start..self.rx_end];
        Some(parse_header(
            buffered.first_chunk::<HEADER_LEN>()?,
            max_data,
        ))
    }

    /// The buffered bytes, from the head of the current frame on.
    pub fn buffered(&self) -> &[u8] {
        &self.rx[self.rx_start..self.rx_end]
    }

    /// Drops the first `n` buffered bytes (part of a frame that was taken elsewhere).
    pub fn skip(&mut self, n: usize) {
        self.rx_start += n;
        debug_assert!(self.rx_start <= self.rx_end);
        if self.rx_start == self.rx_end {
            self.rx_start = 0;
            self.rx_end = 0;
        }
    }

    /// Forgets the buffered bytes (the sink took them).
    pub fn drop_buffered(&mut self) {
        self.rx_start = 0;
        self.rx_end = 0;
    }

    /// Reads once into `dst` (the sink's buffer), bypassing the receive buffer.
    pub fn read_into(&mut self, dst: &mut [u8]) -> io::Result<ReadOutcome> {
        loop {
            match self.stream.read(dst) {
                Ok(0) => return Ok(ReadOutcome::Eof),
                Ok(n) => return Ok(ReadOutcome::Data(n)),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(ReadOutcome::Empty),
                Err(e) => return Err(e),
            }
        }
    }

    /// The bytes of a payload range from [`Conn::next_frame`].
    pub fn payload(&self, range: Range<usize>) -> &[u8] {
        &self.rx[range]
    }

    /// Drops the frame whose payload is `range` from the buffer.
    pub fn consume(&mut self, range: Range<usize>) {
        self.declined = false;
        self.rx_start = range.end;
        if self.rx_start == self.rx_end {
            self.rx_start = 0;
            self.rx_end = 0;
        }
    }

    /// Whether bytes of an incomplete frame are buffered (a close now would cut a frame).
    pub fn has_partial(&self) -> bool {
        self.rx_end > self.rx_start || self.placing.is_some() || self.landing.is_some()
    }

    /// Bytes the buffer must be able to hold: the current frame if its header is in, else a
    /// chunk. A malformed header is reported by [`Conn::next_frame`]; here it counts as small.
    fn bytes_wanted(&self, max_data: usize) -> usize {
        let buffered = &self.rx[self.rx_start..self.rx_end];
        let frame = buffered
            .first_chunk::<HEADER_LEN>()
            .and_then(|h| parse_header(h, max_data).ok())
            .map_or(0, |h| HEADER_LEN + h.len);
        frame.max(RX_CHUNK)
    }

    /// Ensures free space after the buffered bytes: compacts, then grows to `need` in total.
    fn make_room(&mut self, need: usize) {
        if self.rx.len() < need {
            self.rx.resize(need, 0);
        }
        if self.rx_end == self.rx.len() || self.rx.len() - self.rx_start < need {
            self.rx.copy_within(self.rx_start..self.rx_end, 0);
            self.rx_end -= self.rx_start;
            self.rx_start = 0;
        }
        if self.rx_end == self.rx.len() {
            // Only reachable when a complete frame is still buffered: never read into nothing
            // (a zero-length read would look like end of file).
            self.rx.resize(self.rx.len() + RX_CHUNK, 0);
        }
    }
}
