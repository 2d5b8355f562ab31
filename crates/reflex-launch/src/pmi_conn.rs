//! mpiexec's end of one rank's PMI socket: non-blocking line reads and buffered replies.
//!
//! The PMI server itself ([`reflex_pmi::Server`]) does no I/O; this is the byte plumbing around
//! it for the event loop. Replies are queued and written when the socket accepts them, so a
//! rank that stops reading can never block the loop that serves every other rank.

use std::io::{ErrorKind, Read, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::UnixStream;

use reflex_pmi::codec::{CodecError, LineBuffer};

/// Most bytes read from one rank per wake-up, so one chatty rank cannot starve the others.
const READ_BUDGET: usize = 64 * 1024;

/// What a read produced.
#[derive(Debug, Default)]
pub struct Received {
    pub lines: Vec<Vec<u8>>,
    /// The rank closed its end (or the socket failed).
    pub closed: bool,
    /// The read budget ran out: more bytes may be waiting.
    pub more: bool,
    /// The rank sent a line the protocol forbids (the connection is unusable afterwards).
    pub error: Option<CodecError>,
}

/// One PMI connection.
#[derive(Debug)]
pub struct PmiConn {
    stream: UnixStream,
    lines: LineBuffer,
    out: Vec<u8>,
}

impl PmiConn {
    /// Wraps mpiexec's end of the socketpair (already non-blocking).
    pub fn new(stream: UnixStream) -> Self {
        Self {
            stream,
            lines: LineBuffer::new(),
            out: Vec::new(),
        }
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        self.stream.as_fd()
    }

    /// Whether replies are waiting for the socket to accept them.
    pub fn wants_write(&self) -> bool {
        !self.out.is_empty()
    }

    /// Reads what is available and splits it into lines.
    pub fn receive(&mut self) -> Received {
        let mut received = Received::default();
        let mut chunk = [0u8; 4096];
        let mut budget = READ_BUDGET;
        received.more = true;
        while budget > 0 {
            match self.stream.read(&mut chunk) {
                Ok(0) => {
                    received.closed = true;
                    received.more = false;
                    break;
                }
                Ok(n) => {
                    budget = budget.saturating_sub(n);
                    self.lines.extend(&chunk[..n]);
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    received.more = false;
                    break;
                }
                Err(_) => {
                    received.closed = true;
                    received.more = false;
                    break;
                }
            }
        }
        loop {
            match self.lines.next_line() {
                Ok(Some(line)) => received.lines.push(line),
                Ok(None) => break,
                Err(e) => {
                    received.error = Some(e);
                    break;
                }
            }
        }
        received
    }

    /// Queues a reply and writes as much as the socket takes.
    pub fn send(&mut self, line: &str) {
        self.out.extend_from_slice(line.as_bytes());
        self.flush();
    }

    /// Writes queued replies; a rank that has gone away simply loses them.
    pub fn flush(&mut self) {
        while !self.out.is_empty() {
            match self.stream.write(&self.out) {
                Ok(n) => {
                    self.out.drain(..n);
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(_) => {
                    self.out.clear();
                    return;
                }
            }
        }
    }
}
