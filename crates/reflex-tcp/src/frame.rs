//! The wire format of a TCP connection between two ranks: an 8-byte header before every frame.
//!
//! ```text
//!  0      4      5          8
//!  | len  | kind | reserved |  payload (len bytes) ...
//!  u32 LE   u8     3 x 0
//! ```
//! Kinds: `DATA` carries one engine packet; `HELLO` opens a connection (initiator to acceptor,
//! [`Hello`]); `ACCEPT` / `REJECT` answer it (no payload). With several streams per peer
//! (`crate::stripe`), a large packet travels as `HEAD` (on stream 0) plus one `PART` per other
//! stream; their payload starts with a [`Stripe`] header (`u32 seq`, then `u32 total` for a
//! `HEAD` or `u32 offset` for a `PART`) before the piece's bytes. The parser is bounds-checked and
//! total: any 8 bytes give either a header whose length is within the limit of its kind, or a
//! [`FrameError`] (a peer that sends one is disconnected). Reserved bytes must be zero, so
//! garbage from something that is not a Reflex rank is refused at its first header.

use std::fmt;

/// Bytes of a frame header.
pub const HEADER_LEN: usize = 8;
/// Bytes of a [`Hello`] payload.
pub const HELLO_LEN: usize = 32;
/// `"RFXT"`: the first bytes of every hello.
pub const HELLO_MAGIC: u32 = u32::from_le_bytes(*b"RFXT");
/// Version of this wire format; a hello with another one is refused.
pub const WIRE_VERSION: u16 = 3;
/// Bytes of a [`Stripe`] header, at the start of a `HEAD` or `PART` payload.
pub const STRIPE_LEN: usize = 8;
/// Most streams (sockets) per peer.
pub const MAX_STREAMS: usize = 8;

/// What a frame is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// One engine packet.
    Data,
    /// Connection request ([`Hello`]).
    Hello,
    /// The acceptor keeps this connection; data may follow.
    Accept,
    /// The acceptor keeps the other connection of a simultaneous pair (see `link.rs`).
    Reject,
    /// The first piece of a packet split across the streams (on stream 0).
    Head,
    /// Another piece of a split packet (on the other streams).
    Part,
}

impl Kind {
    fn code(self) -> u8 {
        match self {
            Kind::Data => 1,
            Kind::Hello => 2,
            Kind::Accept => 3,
            Kind::Reject => 4,
            Kind::Head => 5,
            Kind::Part => 6,
        }
    }

    fn from_code(code: u8) -> Option<Kind> {
        Some(match code {
            1 => Kind::Data,
            2 => Kind::Hello,
            3 => Kind::Accept,
            4 => Kind::Reject,
            5 => Kind::Head,
            6 => Kind::Part,
            _ => return None,
        })
    }
}

/// A parsed header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// What the frame is.
    pub kind: Kind,
    /// Payload bytes that follow.
    pub len: usize,
}

/// Why a header or hello was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameError {
    /// The kind byte is not one of [`Kind`].
    UnknownKind(u8),
    /// Bytes 5..8 are not zero.
    ReservedNotZero,
    /// The length exceeds what the kind allows.
    TooLong {
        /// The frame's kind.
        kind: Kind,
        /// The announced length.
        len: u64,
        /// The limit for that kind.
        max: usize,
    },
    /// The hello payload is wrong.
    BadHello(&'static str),
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownKind(k) => write!(f, "unknown frame kind {k}"),
            Self::ReservedNotZero => f.write_str("reserved header bytes are not zero"),
            Self::TooLong { kind, len, max } => {
                write!(
                    f,
                    "{kind:?} frame of {len} bytes exceeds the limit of {max}"
                )
            }
            Self::BadHello(why) => write!(f, "bad hello: {why}"),
        }
    }
}

impl std::error::Error for FrameError {}

/// Writes a header for `kind` with `len` payload bytes into `out[..HEADER_LEN]`.
///
/// # Panics
/// If `out` is shorter than [`HEADER_LEN`] or `len` exceeds `u32::MAX` (caller bugs).
pub fn encode_header(out: &mut [u8], kind: Kind, len: usize) {
    let len = u32::try_from(len).expect("frame length fits u32");
    out[..4].copy_from_slice(&len.to_le_bytes());
    out[4] = kind.code();
    out[5..HEADER_LEN].fill(0);
}

/// Parses a header; `max_data` is the largest `DATA` payload accepted.
pub fn parse_header(bytes: &[u8; HEADER_LEN], max_data: usize) -> Result<Header, FrameError> {
    let len = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    let kind = Kind::from_code(bytes[4]).ok_or(FrameError::UnknownKind(bytes[4]))?;
    if bytes[5..].iter().any(|&b| b != 0) {
        return Err(FrameError::ReservedNotZero);
    }
    let max = match kind {
        Kind::Data => max_data,
        Kind::Head | Kind::Part => max_data.saturating_add(STRIPE_LEN),
        Kind::Hello => HELLO_LEN,
        Kind::Accept | Kind::Reject => 0,
    };
    let len64 = u64::from(len);
    let too_short = match kind {
        Kind::Hello => len as usize != HELLO_LEN,
        Kind::Head | Kind::Part => (len as usize) <= STRIPE_LEN,
        _ => false,
    };
    if len64 > max as u64 || too_short {
        return Err(FrameError::TooLong {
            kind,
            len: len64,
            max,
        });
    }
    Ok(Header {
        kind,
        len: len as usize,
    })
}

/// The payload of a `HELLO`: who connects, to whom, and proof that it read the acceptor's card.
///
/// ```text
///  0 magic u32 | 4 version u16 | 6 stream u8 | 7 streams u8 | 8 from u32 | 12 to u32 | 16 cookie u64
/// 24 job u64
/// ```
/// (little endian). `streams` is how many sockets the initiator opens to the acceptor (1 to
/// [`MAX_STREAMS`]; both ranks must agree) and `stream` which one this is. `job` is the
/// initiator's job id on a bridge between jobs (`TcpTransport::bind_bridge`), where `from` and
/// `to` are ranks within their own jobs; 0 between the ranks of one job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hello {
    /// The initiator's rank.
    pub from: u32,
    /// The rank the initiator wants (the acceptor checks it is itself).
    pub to: u32,
    /// The acceptor's cookie, from its business card.
    pub cookie: u64,
    /// Which of the pair's streams this connection is (0: the first, opened lazily).
    pub stream: u8,
    /// Streams per peer the initiator uses.
    pub streams: u8,
    /// The initiator's job (bridges between jobs; 0 within a job).
    pub job: u64,
}

impl Hello {
    /// The header and payload of this hello, ready to send.
    pub fn encode(&self) -> [u8; HEADER_LEN + HELLO_LEN] {
        let mut out = [0u8; HEADER_LEN + HELLO_LEN];
        encode_header(&mut out, Kind::Hello, HELLO_LEN);
        let b = &mut out[HEADER_LEN..];
        b[0..4].copy_from_slice(&HELLO_MAGIC.to_le_bytes());
        b[4..6].copy_from_slice(&WIRE_VERSION.to_le_bytes());
        b[6] = self.stream;
        b[7] = self.streams;
        b[8..12].copy_from_slice(&self.from.to_le_bytes());
        b[12..16].copy_from_slice(&self.to.to_le_bytes());
        b[16..24].copy_from_slice(&self.cookie.to_le_bytes());
        b[24..32].copy_from_slice(&self.job.to_le_bytes());
        out
    }

    /// Parses a hello payload (exactly [`HELLO_LEN`] bytes).
    pub fn parse(b: &[u8]) -> Result<Hello, FrameError> {
        if b.len() != HELLO_LEN {
            return Err(FrameError::BadHello("wrong length"));
        }
        let u32_at = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        if u32_at(0) != HELLO_MAGIC {
            return Err(FrameError::BadHello("wrong magic"));
        }
        if u16::from_le_bytes([b[4], b[5]]) != WIRE_VERSION {
            return Err(FrameError::BadHello("unsupported wire version"));
        }
        if b[7] == 0 || usize::from(b[7]) > MAX_STREAMS {
            return Err(FrameError::BadHello("stream count out of range"));
        }
        if b[6] >= b[7] {
            return Err(FrameError::BadHello("stream index out of range"));
        }
        let u64_at = |i: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&b[i..i + 8]);
            u64::from_le_bytes(w)
        };
        Ok(Hello {
            from: u32_at(8),
            to: u32_at(12),
            cookie: u64_at(16),
            job: u64_at(24),
            stream: b[6],
            streams: b[7],
        })
    }
}

/// The header at the start of a `HEAD` or `PART` payload: the split packet's sequence number
/// (per direction of a pair, from 0) and, for a `HEAD`, the packet's total length or, for a
/// `PART`, the offset of its piece in the packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stripe {
    /// Which split packet of the pair (counts up from 0).
    pub seq: u32,
    /// `HEAD`: the packet's length; `PART`: where the piece starts in it.
    pub value: u32,
}

impl Stripe {
    /// The header's bytes.
    pub fn encode(&self) -> [u8; STRIPE_LEN] {
        let mut out = [0u8; STRIPE_LEN];
        out[..4].copy_from_slice(&self.seq.to_le_bytes());
        out[4..].copy_from_slice(&self.value.to_le_bytes());
        out
    }

    /// Parses the header (any 8 bytes are one; the stripe rules judge the values).
    pub fn parse(b: &[u8; STRIPE_LEN]) -> Stripe {
        Stripe {
            seq: u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
            value: u32::from_le_bytes([b[4], b[5], b[6], b[7]]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MAX: usize = 1 << 16;

    #[test]
    fn round_trips() {
        let mut h = [0u8; HEADER_LEN];
        for (kind, len) in [
            (Kind::Data, 0),
            (Kind::Data, MAX),
            (Kind::Hello, HELLO_LEN),
            (Kind::Accept, 0),
            (Kind::Reject, 0),
            (Kind::Head, STRIPE_LEN + 1),
            (Kind::Part, MAX + STRIPE_LEN),
        ] {
            encode_header(&mut h, kind, len);
            assert_eq!(parse_header(&h, MAX), Ok(Header { kind, len }));
        }
        let hello = Hello {
            from: 3,
            to: 9,
            cookie: 0xdead_beef_0bad_f00d,
            stream: 1,
            streams: 2,
            job: 0x0102_0304_0506_0708,
        };
        let bytes = hello.encode();
        let mut head = [0u8; HEADER_LEN];
        head.copy_from_slice(&bytes[..HEADER_LEN]);
        assert_eq!(parse_header(&head, MAX).unwrap().kind, Kind::Hello);
        assert_eq!(Hello::parse(&bytes[HEADER_LEN..]), Ok(hello));
        let stripe = Stripe {
            seq: 7,
            value: 0x0102_0304,
        };
        assert_eq!(Stripe::parse(&stripe.encode()), stripe);
    }

    #[test]
    fn refuses_malformed_headers() {
        let cases: [([u8; 8], &str); 9] = [
            ([0, 0, 0, 0, 0, 0, 0, 0], "unknown frame kind 0"),
            ([0, 0, 0, 0, 9, 0, 0, 0], "unknown frame kind 9"),
            ([0, 0, 0, 0, 1, 0, 1, 0], "reserved"),
            ([1, 0, 1, 0, 1, 0, 0, 0], "exceeds the limit of 65536"),
            ([31, 0, 0, 0, 2, 0, 0, 0], "Hello frame of 31 bytes"),
            ([1, 0, 0, 0, 3, 0, 0, 0], "Accept frame of 1 bytes"),
            ([8, 0, 0, 0, 5, 0, 0, 0], "Head frame of 8 bytes"),
            ([0, 0, 0, 0, 6, 0, 0, 0], "Part frame of 0 bytes"),
            ([9, 0, 1, 0, 6, 0, 0, 0], "exceeds the limit of 65544"),
        ];
        for (bytes, want) in cases {
            let err = parse_header(&bytes, MAX).unwrap_err().to_string();
            assert!(err.contains(want), "{bytes:?}: {err}");
        }
        // "GET / HTTP/1.1": a stray client is refused at once.
        let http: [u8; 8] = *b"GET / HT";
        assert!(parse_header(&http, MAX).is_err());
    }

    #[test]
    fn refuses_bad_hellos() {
        let good = Hello {
            from: 1,
            to: 2,
            cookie: 3,
            stream: 0,
            streams: 4,
            job: 0,
        }
        .encode();
        let body = &good[HEADER_LEN..];
        assert!(Hello::parse(&body[..31]).is_err());
        let edits = [
            (0, body[0] ^ 0x40, "magic"),
            (4, body[4] ^ 0x40, "version"),
            (6, 4, "stream index"),
            (7, 9, "stream count"),
            (7, 0, "stream count"),
        ];
        for (i, value, why) in edits {
            let mut bad = body.to_vec();
            bad[i] = value;
            let err = Hello::parse(&bad).unwrap_err().to_string();
            assert!(err.contains(why), "{err}");
        }
    }

    proptest! {
        #[test]
        fn header_parser_is_total(bytes in any::<[u8; 8]>(), max in 0usize..(1 << 20)) {
            if let Ok(h) = parse_header(&bytes, max) {
                let limit = match h.kind {
                    Kind::Data => max,
                    Kind::Head | Kind::Part => max + STRIPE_LEN,
                    Kind::Hello => HELLO_LEN,
                    _ => 0,
                };
                prop_assert!(h.len <= limit);
                let mut again = [0u8; 8];
                encode_header(&mut again, h.kind, h.len);
                prop_assert_eq!(again, bytes);
            }
        }

        #[test]
        fn hello_parser_is_total(bytes in proptest::collection::vec(any::<u8>(), 0..40)) {
            if let Ok(h) = Hello::parse(&bytes) {
                prop_assert_eq!(&h.encode()[HEADER_LEN..], &bytes[..]);
            }
        }
    }
}
