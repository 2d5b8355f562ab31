//! Blocking request/reply exchange with a PMI-1 server over a Unix or TCP stream.
//!
//! Every PMI-1 request except `abort` gets exactly one reply line (launchers.md §2.2); replies
//! are matched by command name and read by key, because Hydra and Slurm order fields differently
//! and Slurm omits `msg=`.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;

use crate::codec::{LineBuffer, Message, MAX_REPLY_LINE};
use crate::PmiError;

/// The byte stream to the server.
#[derive(Debug)]
pub(crate) enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Self::Unix(s) => s.read(buf),
            Self::Tcp(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Self::Unix(s) => s.write(buf),
            Self::Tcp(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A connection to a PMI-1 server.
#[derive(Debug)]
pub(crate) struct Wire {
    stream: Stream,
    lines: LineBuffer,
}

impl Wire {
    pub(crate) fn new(stream: Stream) -> Self {
        Self {
            stream,
            lines: LineBuffer::with_limit(MAX_REPLY_LINE),
        }
    }

    /// Writes one formatted line.
    pub(crate) fn send_line(&mut self, line: &str) -> Result<(), PmiError> {
        self.stream
            .write_all(line.as_bytes())
            .map_err(|source| PmiError::Io {
                context: "write to server",
                source,
            })
    }

    /// Reads the next reply line.
    pub(crate) fn recv(&mut self, waiting_for: &'static str) -> Result<Message, PmiError> {
        let mut chunk = [0u8; 4096];
        loop {
            if let Some(line) = self.lines.next_line()? {
                return Ok(Message::parse_reply(&line)?);
            }
            match self.stream.read(&mut chunk) {
                Ok(0) => return Err(PmiError::Disconnected { waiting_for }),
                Ok(n) => self.lines.extend(&chunk[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(source) => {
                    return Err(PmiError::Io {
                        context: "read from server",
                        source,
                    })
                }
            }
        }
    }

    /// Reads a reply and checks that it is `cmd=<expected>`.
    pub(crate) fn expect(&mut self, expected: &'static str) -> Result<Message, PmiError> {
        let reply = self.recv(expected)?;
        if reply.cmd() != expected {
            let line = reply
                .to_reply_line()
                .unwrap_or_else(|_| reply.cmd().to_owned());
            return Err(PmiError::UnexpectedReply { expected, line });
        }
        Ok(reply)
    }

    /// Sends `request` and reads the `cmd=<expected>` reply, whatever its `rc`.
    pub(crate) fn call_raw(
        &mut self,
        request: &Message,
        expected: &'static str,
    ) -> Result<Message, PmiError> {
        self.send_line(&request.to_line()?)?;
        self.expect(expected)
    }

    /// Sends `request`, reads the `cmd=<expected>` reply and checks that its `rc` (if any) is 0.
    pub(crate) fn call(
        &mut self,
        request: &Message,
        expected: &'static str,
    ) -> Result<Message, PmiError> {
        let reply = self.call_raw(request, expected)?;
        check_rc(expected, &reply)?;
        Ok(reply)
    }
}

/// A reply without `rc` (Hydra's `barrier_out`, `maxes`) counts as success.
pub(crate) fn check_rc(cmd: &'static str, reply: &Message) -> Result<(), PmiError> {
    match reply.get("rc") {
        None | Some("0") => Ok(()),
        Some(rc) => Err(PmiError::Failed {
            cmd,
            rc: rc.to_owned(),
            msg: reply.get("msg").unwrap_or("no message").to_owned(),
        }),
    }
}
