//! The wire format of a TCP connection between two ranks: an 8-byte header before every frame.
//!
//! ```text
//!  0      4      5          8
//!  | len  | kind | reserved |  payload (len bytes) ...
//!  u32 LE   u8     3 x 0
//! ```
//! Kinds: `DATA` carries one engine packet; `HELLO` opens a connection (initiator to acceptor,
//! [`Hello`]); `ACCEPT` / `REJECT` answer it (no payload). The parser is bounds-checked and
//! total: any 8 bytes give either a header whose length is within the limit of its kind, or a
//! [`FrameError`] (a peer that sends one is disconnected). Reserved bytes must be zero, so
//! garbage from something that is not a Reflex rank is refused at its first header.

use std::fmt;

/// Bytes of a frame header.
pub const HEADER_LEN: usize = 8;
/// Bytes of a [`Hello`] payload.
pub const HELLO_LEN: usize = 24;
/// `"RFXT"`: the first bytes of every hello.
pub const HELLO_MAGIC: u32 = u32::from_le_bytes(*b"RFXT");
/// Version of this wire format; a hello with another one is refused.
pub const WIRE_VERSION: u16 = 1;

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
}

impl Kind {
    fn code(self) -> u8 {
        match self {
            Kind::Data => 1,
            Kind::Hello => 2,
            Kind::Accept => 3,
            Kind::Reject => 4,
        }
    }

    fn from_code(code: u8) -> Option<Kind> {
        Some(match code {
            1 => Kind::Data,
            2 => Kind::Hello,
            3 => Kind::Accept,
            4 => Kind::Reject,
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
        Kind::Hello => HELLO_LEN,
        Kind::Accept | Kind::Reject => 0,
    };
    let len64 = u64::from(len);
    if len64 > max as u64 || (kind == Kind::Hello && len as usize != HELLO_LEN) {
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
///  0 magic u32 | 4 version u16 | 6 pad u16 | 8 from u32 | 12 to u32 | 16 cookie u64   (LE)
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hello {
    /// The initiator's rank.
    pub from: u32,
    /// The rank the initiator wants (the acceptor checks it is itself).
    pub to: u32,
    /// The acceptor's cookie, from its business card.
    pub cookie: u64,
}

impl Hello {
    /// The header and payload of this hello, ready to send.
    pub fn encode(&self) -> [u8; HEADER_LEN + HELLO_LEN] {
        let mut out = [0u8; HEADER_LEN + HELLO_LEN];
        encode_header(&mut out, Kind::Hello, HELLO_LEN);
        let b = &mut out[HEADER_LEN..];
        b[0..4].copy_from_slice(&HELLO_MAGIC.to_le_bytes());
        b[4..6].copy_from_slice(&WIRE_VERSION.to_le_bytes());
        b[8..12].copy_from_slice(&self.from.to_le_bytes());
        b[12..16].copy_from_slice(&self.to.to_le_bytes());
        b[16..24].copy_from_slice(&self.cookie.to_le_bytes());
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
        if b[6] != 0 || b[7] != 0 {
            return Err(FrameError::BadHello("padding is not zero"));
        }
        let mut cookie = [0u8; 8];
        cookie.copy_from_slice(&b[16..24]);
        Ok(Hello {
            from: u32_at(8),
            to: u32_at(12),
            cookie: u64::from_le_bytes(cookie),
        })
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
        ] {
            encode_header(&mut h, kind, len);
            assert_eq!(parse_header(&h, MAX), Ok(Header { kind, len }));
        }
        let hello = Hello {
            from: 3,
            to: 9,
            cookie: 0xdead_beef_0bad_f00d,
        };
        let bytes = hello.encode();
        let mut head = [0u8; HEADER_LEN];
        head.copy_from_slice(&bytes[..HEADER_LEN]);
        assert_eq!(parse_header(&head, MAX).unwrap().kind, Kind::Hello);
        assert_eq!(Hello::parse(&bytes[HEADER_LEN..]), Ok(hello));
    }

    #[test]
    fn refuses_malformed_headers() {
        let cases: [([u8; 8], &str); 6] = [
            ([0, 0, 0, 0, 0, 0, 0, 0], "unknown frame kind 0"),
            ([0, 0, 0, 0, 9, 0, 0, 0], "unknown frame kind 9"),
            ([0, 0, 0, 0, 1, 0, 1, 0], "reserved"),
            ([1, 0, 1, 0, 1, 0, 0, 0], "exceeds the limit of 65536"),
            ([23, 0, 0, 0, 2, 0, 0, 0], "Hello frame of 23 bytes"),
            ([1, 0, 0, 0, 3, 0, 0, 0], "Accept frame of 1 bytes"),
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
        }
        .encode();
        let body = &good[HEADER_LEN..];
        assert!(Hello::parse(&body[..23]).is_err());
        for (i, why) in [(0, "magic"), (4, "version"), (6, "padding")] {
            let mut bad = body.to_vec();
            bad[i] ^= 0x40;
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
