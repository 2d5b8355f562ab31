//! The launcher protocol's messages and their wire format (inside the TLS stream).
//!
//! ```text
//!  0 len u32 | 4 type u16 | 6 flags u16 (0) | 8 payload (len bytes)        little-endian
//! ```
//! Payload fields are fixed-size integers and length-prefixed byte strings (`u32 len | bytes`).
//! [`decode`] is total and bounds-checked: every length is checked against what is left and
//! against [`MAX_PAYLOAD`], trailing bytes are an error, and nothing is allocated before its
//! length has been checked. [`FrameBuffer`] splits a byte stream into frames. The message set
//! follows the REXEC paper's protocol (`shared/reference/seed000a.md` §1.3): hello with the
//! user's identity, the job (environment, working directory, argv), stdin and signals one way,
//! stdout/stderr, exit statuses and heartbeats the other, plus PMI lines relayed both ways and
//! job control (`Stop`/`Continue`: Ctrl-Z and `fg` of the whole job).

use std::fmt;

/// Bytes of a frame header.
pub const HEADER_LEN: usize = 8;
/// Largest payload: far above any message (stdio is forwarded in chunks of at most 64 KiB).
pub const MAX_PAYLOAD: usize = 1 << 20;
/// Protocol version carried in the hello.
pub const VERSION: u16 = 1;

/// What the job on one host should be.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LaunchSpec {
    /// The job's PMI KVS name (unique per job; names shared-memory segments).
    pub kvsname: String,
    /// Ranks in the whole job.
    pub size: u32,
    /// World ranks to start on this host, ascending.
    pub ranks: Vec<u32>,
    /// Index of this host in the job (`PMI_process_mapping` node).
    pub node: u32,
    /// The program and its arguments.
    pub argv: Vec<Vec<u8>>,
    /// The environment of every rank (`NAME`, `VALUE`), before the PMI variables.
    pub env: Vec<(Vec<u8>, Vec<u8>)>,
    /// Working directory of the ranks.
    pub cwd: Vec<u8>,
}

/// One host of a selector's answer: where its daemon listens and how many ranks to give it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SelectedHost {
    /// The name its host certificate gives (what mpiexec connects to and checks).
    pub name: String,
    pub port: u16,
    pub slots: u32,
}

/// One protocol message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Msg {
    /// Client → daemon, first: protocol version and who the user says it is.
    Hello {
        version: u16,
        uid: u32,
        user: String,
    },
    /// Daemon → client: authenticated; the daemon's host name.
    Welcome { host: String },
    /// Client → daemon: start the job's ranks on this host.
    Launch(LaunchSpec),
    /// Daemon → client: every rank started, with its process id.
    Started { pids: Vec<u32> },
    /// Client → daemon: bytes for rank 0's stdin (only the host of rank 0 receives any).
    Stdin(Vec<u8>),
    /// Client → daemon: end of stdin.
    StdinEof,
    /// Client → daemon: deliver this signal to every rank.
    Signal(i32),
    /// Client → daemon: end the job now (another host failed).
    Kill,
    /// Daemon → client: output of a rank (`err`: stderr).
    Output {
        rank: u32,
        err: bool,
        bytes: Vec<u8>,
    },
    /// Daemon → client: a PMI request line from a rank.
    PmiRequest { rank: u32, line: Vec<u8> },
    /// Client → daemon: a PMI reply line for a rank.
    PmiReply { rank: u32, line: Vec<u8> },
    /// Daemon → client: a rank ended with this status (128+S for signal S).
    Exit { rank: u32, status: i32, how: String },
    /// Daemon → client: every process of the job is gone; nothing more will come.
    Done,
    /// Either way: "still here".
    Heartbeat,
    /// Either way: a fatal error, in words; the sender closes after it.
    Error(String),
    /// Client → daemon: the user stopped the job (Ctrl-Z): stop every rank with SIGSTOP, and
    /// expect silence from the client (which stops itself) until `Continue`.
    Stop,
    /// Client → daemon: the job was resumed: continue every rank (SIGCONT), watch the client's
    /// heartbeats again.
    Continue,
    /// Client → selector: hosts for `slots` ranks by `policy` (empty: the selector's own);
    /// `slots` 0 lists every live host with its free slots.
    Select { slots: u32, policy: String },
    /// Selector → client: the hosts chosen, in placement order.
    Selected { hosts: Vec<SelectedHost> },
}

/// A frame or payload that is not valid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodecError(pub String);

impl fmt::Display for CodecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "launcher protocol: {}", self.0)
    }
}

impl std::error::Error for CodecError {}

fn bad(what: impl Into<String>) -> CodecError {
    CodecError(what.into())
}

mod tag {
    pub const HELLO: u16 = 1;
    pub const WELCOME: u16 = 2;
    pub const LAUNCH: u16 = 3;
    pub const STARTED: u16 = 4;
    pub const STDIN: u16 = 5;
    pub const STDIN_EOF: u16 = 6;
    pub const SIGNAL: u16 = 7;
    pub const KILL: u16 = 8;
    pub const OUTPUT: u16 = 9;
    pub const PMI_REQUEST: u16 = 10;
    pub const PMI_REPLY: u16 = 11;
    pub const EXIT: u16 = 12;
    pub const DONE: u16 = 13;
    pub const HEARTBEAT: u16 = 14;
    pub const ERROR: u16 = 15;
    pub const STOP: u16 = 16;
    pub const CONTINUE: u16 = 17;
    pub const SELECT: u16 = 18;
    pub const SELECTED: u16 = 19;
    /// The highest type: frames above it are refused.
    pub const LAST: u16 = SELECTED;
}

/// Appends payload fields (also used by the discovery datagrams).
#[derive(Default)]
pub(crate) struct Writer(pub(crate) Vec<u8>);

impl Writer {
    pub(crate) fn u64(&mut self, v: u64) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    pub(crate) fn u16(&mut self, v: u16) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    pub(crate) fn u32(&mut self, v: u32) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn i32(&mut self, v: i32) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    pub(crate) fn bytes(&mut self, b: &[u8]) -> &mut Self {
        self.u32(b.len() as u32);
        self.0.extend_from_slice(b);
        self
    }
    pub(crate) fn list<T>(
        &mut self,
        items: &[T],
        mut each: impl FnMut(&mut Self, &T),
    ) -> &mut Self {
        self.u32(items.len() as u32);
        for item in items {
            each(self, item);
        }
        self
    }
}

/// Reads payload fields, checking every length against what is left.
pub(crate) struct Reader<'a>(pub(crate) &'a [u8]);

impl<'a> Reader<'a> {
    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8], CodecError> {
        if n > self.0.len() {
            return Err(bad(format!(
                "field of {n} bytes with {} left",
                self.0.len()
            )));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }
    pub(crate) fn u64(&mut self) -> Result<u64, CodecError> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().unwrap_or_default(),
        ))
    }
    pub(crate) fn u16(&mut self) -> Result<u16, CodecError> {
        Ok(u16::from_le_bytes(
            self.take(2)?.try_into().unwrap_or_default(),
        ))
    }
    pub(crate) fn u32(&mut self) -> Result<u32, CodecError> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().unwrap_or_default(),
        ))
    }
    fn i32(&mut self) -> Result<i32, CodecError> {
        Ok(i32::from_le_bytes(
            self.take(4)?.try_into().unwrap_or_default(),
        ))
    }
    fn bytes(&mut self) -> Result<Vec<u8>, CodecError> {
        let n = self.u32()? as usize;
        Ok(self.take(n)?.to_vec())
    }
    pub(crate) fn string(&mut self) -> Result<String, CodecError> {
        String::from_utf8(self.bytes()?).map_err(|_| bad("string is not utf-8"))
    }
    /// A list whose items take at least `min_item` bytes each (so a count cannot promise
    /// more items than the bytes left could hold).
    pub(crate) fn list<T>(
        &mut self,
        min_item: usize,
        mut each: impl FnMut(&mut Self) -> Result<T, CodecError>,
    ) -> Result<Vec<T>, CodecError> {
        let n = self.u32()? as usize;
        if n.saturating_mul(min_item) > self.0.len() {
            return Err(bad(format!("list of {n} items does not fit")));
        }
        (0..n).map(|_| each(self)).collect()
    }
    pub(crate) fn end(&self) -> Result<(), CodecError> {
        match self.0.len() {
            0 => Ok(()),
            n => Err(bad(format!("{n} trailing bytes"))),
        }
    }
}

/// The frame (header and payload) of `msg`.
pub fn encode(msg: &Msg) -> Vec<u8> {
    let mut w = Writer::default();
    let kind = match msg {
        Msg::Hello { version, uid, user } => {
            w.u16(*version).u32(*uid).bytes(user.as_bytes());
            tag::HELLO
        }
        Msg::Welcome { host } => {
            w.bytes(host.as_bytes());
            tag::WELCOME
        }
        Msg::Launch(spec) => {
            w.bytes(spec.kvsname.as_bytes()).u32(spec.size);
            w.list(&spec.ranks, |w, r| {
                w.u32(*r);
            });
            w.u32(spec.node);
            w.list(&spec.argv, |w, a| {
                w.bytes(a);
            });
            w.list(&spec.env, |w, (k, v)| {
                w.bytes(k).bytes(v);
            });
            w.bytes(&spec.cwd);
            tag::LAUNCH
        }
        Msg::Started { pids } => {
            w.list(pids, |w, p| {
                w.u32(*p);
            });
            tag::STARTED
        }
        Msg::Stdin(b) => {
            w.bytes(b);
            tag::STDIN
        }
        Msg::StdinEof => tag::STDIN_EOF,
        Msg::Signal(s) => {
            w.i32(*s);
            tag::SIGNAL
        }
        Msg::Kill => tag::KILL,
        Msg::Output { rank, err, bytes } => {
            w.u32(*rank).u16(u16::from(*err)).bytes(bytes);
            tag::OUTPUT
        }
        Msg::PmiRequest { rank, line } => {
            w.u32(*rank).bytes(line);
            tag::PMI_REQUEST
        }
        Msg::PmiReply { rank, line } => {
            w.u32(*rank).bytes(line);
            tag::PMI_REPLY
        }
        Msg::Exit { rank, status, how } => {
            w.u32(*rank).i32(*status).bytes(how.as_bytes());
            tag::EXIT
        }
        Msg::Done => tag::DONE,
        Msg::Heartbeat => tag::HEARTBEAT,
        Msg::Error(text) => {
            w.bytes(text.as_bytes());
            tag::ERROR
        }
        Msg::Stop => tag::STOP,
        Msg::Continue => tag::CONTINUE,
        Msg::Select { slots, policy } => {
            w.u32(*slots).bytes(policy.as_bytes());
            tag::SELECT
        }
        Msg::Selected { hosts } => {
            w.list(hosts, |w, h| {
                w.bytes(h.name.as_bytes()).u16(h.port).u32(h.slots);
            });
            tag::SELECTED
        }
    };
    let payload = w.0;
    let mut frame = Vec::with_capacity(HEADER_LEN + payload.len());
    frame.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    frame.extend_from_slice(&kind.to_le_bytes());
    frame.extend_from_slice(&0u16.to_le_bytes());
    frame.extend_from_slice(&payload);
    frame
}

/// Parses a frame header: `(type, payload length)`.
pub fn parse_header(h: &[u8; HEADER_LEN]) -> Result<(u16, usize), CodecError> {
    let len = u32::from_le_bytes([h[0], h[1], h[2], h[3]]) as usize;
    let kind = u16::from_le_bytes([h[4], h[5]]);
    if h[6] != 0 || h[7] != 0 {
        return Err(bad("flags are not zero"));
    }
    if len > MAX_PAYLOAD {
        return Err(bad(format!("frame of {len} bytes exceeds {MAX_PAYLOAD}")));
    }
    if !(tag::HELLO..=tag::LAST).contains(&kind) {
        return Err(bad(format!("unknown message type {kind}")));
    }
    Ok((kind, len))
}

/// Decodes the payload of a frame of type `kind`.
pub fn decode(kind: u16, payload: &[u8]) -> Result<Msg, CodecError> {
    let mut r = Reader(payload);
    let msg = match kind {
        tag::HELLO => Msg::Hello {
            version: r.u16()?,
            uid: r.u32()?,
            user: r.string()?,
        },
        tag::WELCOME => Msg::Welcome { host: r.string()? },
        tag::LAUNCH => Msg::Launch(LaunchSpec {
            kvsname: r.string()?,
            size: r.u32()?,
            ranks: r.list(4, Reader::u32)?,
            node: r.u32()?,
            argv: r.list(4, Reader::bytes)?,
            env: r.list(8, |r| Ok((r.bytes()?, r.bytes()?)))?,
            cwd: r.bytes()?,
        }),
        tag::STARTED => Msg::Started {
            pids: r.list(4, Reader::u32)?,
        },
        tag::STDIN => Msg::Stdin(r.bytes()?),
        tag::STDIN_EOF => Msg::StdinEof,
        tag::SIGNAL => Msg::Signal(r.i32()?),
        tag::KILL => Msg::Kill,
        tag::OUTPUT => Msg::Output {
            rank: r.u32()?,
            err: match r.u16()? {
                0 => false,
                1 => true,
                _ => return Err(bad("output stream is neither 0 nor 1")),
            },
            bytes: r.bytes()?,
        },
        tag::PMI_REQUEST => Msg::PmiRequest {
            rank: r.u32()?,
            line: r.bytes()?,
        },
        tag::PMI_REPLY => Msg::PmiReply {
            rank: r.u32()?,
            line: r.bytes()?,
        },
        tag::EXIT => Msg::Exit {
            rank: r.u32()?,
            status: r.i32()?,
            how: r.string()?,
        },
        tag::DONE => Msg::Done,
        tag::HEARTBEAT => Msg::Heartbeat,
        tag::ERROR => Msg::Error(r.string()?),
        tag::STOP => Msg::Stop,
        tag::CONTINUE => Msg::Continue,
        tag::SELECT => Msg::Select {
            slots: r.u32()?,
            policy: r.string()?,
        },
        tag::SELECTED => Msg::Selected {
            hosts: r.list(10, |r| {
                Ok(SelectedHost {
                    name: r.string()?,
                    port: r.u16()?,
                    slots: r.u32()?,
                })
            })?,
        },
        other => return Err(bad(format!("unknown message type {other}"))),
    };
    r.end()?;
    Ok(msg)
}

/// Splits a byte stream into messages.
#[derive(Debug, Default)]
pub struct FrameBuffer {
    buf: Vec<u8>,
}

impl FrameBuffer {
    /// Appends received bytes.
    pub fn extend(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// The next complete message, if any; an error leaves the stream unusable.
    pub fn next_msg(&mut self) -> Result<Option<Msg>, CodecError> {
        let Some(head) = self.buf.first_chunk::<HEADER_LEN>() else {
            return Ok(None);
        };
        let (kind, len) = parse_header(head)?;
        if self.buf.len() < HEADER_LEN + len {
            return Ok(None);
        }
        let msg = decode(kind, &self.buf[HEADER_LEN..HEADER_LEN + len]);
        self.buf.drain(..HEADER_LEN + len);
        msg.map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::fuzzing::messages;
    use proptest::prelude::*;

    #[test]
    fn every_message_round_trips_through_a_stream() {
        let mut fb = FrameBuffer::default();
        let all: Vec<u8> = messages().iter().flat_map(encode).collect();
        // Byte by byte: frames split anywhere are reassembled.
        let mut got = Vec::new();
        for b in all {
            fb.extend(&[b]);
            while let Some(m) = fb.next_msg().unwrap() {
                got.push(m);
            }
        }
        assert_eq!(got, messages());
    }

    #[test]
    fn refuses_malformed_frames() {
        let mut frame = encode(&Msg::Signal(2));
        frame.push(0); // trailing byte in the payload
        frame[0] += 1;
        let mut fb = FrameBuffer::default();
        fb.extend(&frame);
        assert!(fb.next_msg().unwrap_err().0.contains("trailing"));
        for head in [
            [0, 0, 0, 0, 99, 0, 0, 0],
            [0, 0, 0, 0, 1, 0, 1, 0],
            [0, 0, 0, 0x10, 1, 0, 0, 0],
        ] {
            assert!(parse_header(&head).is_err(), "{head:?}");
        }
        // A list count that promises more than the payload holds.
        let mut w = Writer::default();
        w.u32(0xffff_ffff);
        assert!(decode(tag::STARTED, &w.0).is_err());
    }

    proptest! {
        #[test]
        fn decoder_is_total(kind in 0u16..24, payload in proptest::collection::vec(any::<u8>(), 0..200)) {
            if let Ok(msg) = decode(kind, &payload) {
                prop_assert_eq!(&encode(&msg)[HEADER_LEN..], &payload[..]);
            }
        }

        #[test]
        fn corrupted_frames_never_panic(i in 0usize..400, byte in any::<u8>()) {
            let mut all: Vec<u8> = messages().iter().flat_map(encode).collect();
            let i = i % all.len();
            all[i] = byte;
            let mut fb = FrameBuffer::default();
            fb.extend(&all);
            while let Ok(Some(_)) = fb.next_msg() {}
        }
    }
}
