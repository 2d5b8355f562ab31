//! The announcement datagram: what a daemon multicasts about its host, sealed with the
//! cluster key.
//!
//! ```text
//!  0 magic "RXDA" | 4 version u16 (1) | 6 flags u16 (0)                    little-endian
//!  8 instance u64 (random per daemon start) | 16 seq u64 | 24 time_ms u64 (Unix time)
//! 32 port u16 | cores u32 | load_milli u32 | ranks u32 | jobs u32
//!    names: u32 count, each u32 len + bytes (the names its host certificate gives)
//!  … HMAC-SHA256(cluster key, every byte before it): 32 bytes
//! ```
//! REXEC's `rexecd` multicasts its state once a minute and on job arrival and departure
//! (`seed000a.md` §1.2); this is that state, plus what authentication and replay detection
//! need. [`open`] never trusts its input: it checks the size bounds, the magic and version,
//! then the MAC (constant time) before it reads a single field, then reads the fields with the
//! bounds-checked reader of the launcher codec and validates the names. Freshness (sequence
//! numbers, clock skew) is the membership table's job ([`super::membership`]).

use std::fmt;

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::cluster_key::ClusterKey;
use crate::proto::codec::{Reader, Writer};

/// Datagram magic: "ReFleX Discovery Announcement".
pub const MAGIC: [u8; 4] = *b"RXDA";
/// Datagram format version.
pub const VERSION: u16 = 1;
/// Bytes of the MAC at the end.
pub const MAC_LEN: usize = 32;
/// Largest datagram sent or accepted: fits one Ethernet frame without fragmentation.
pub const MAX_DATAGRAM: usize = 1200;
/// Most names one host may announce.
pub const MAX_NAMES: usize = 8;
/// Longest name (a DNS name is at most 253 characters).
pub const MAX_NAME: usize = 253;
const HEADER: usize = 8;

/// A host's state as its daemon announces it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Announcement {
    /// Random per daemon start: a restarted daemon is a new instance whose `seq` starts over.
    pub instance: u64,
    /// Increases with every announcement of one instance.
    pub seq: u64,
    /// Unix time in milliseconds when it was sent.
    pub time_ms: u64,
    /// The daemon's TCP port.
    pub port: u16,
    /// Slots the host offers (its cores unless configured).
    pub cores: u32,
    /// One-minute load average x 1000.
    pub load_milli: u32,
    /// Ranks the daemon's jobs run now.
    pub ranks: u32,
    /// Jobs (sessions) the daemon runs now.
    pub jobs: u32,
    /// The host's names, as its certificate gives them; the first is the one to connect to.
    pub names: Vec<String>,
}

/// Why a datagram was dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rejected {
    /// Not an announcement, of another version, or badly formed.
    Malformed(String),
    /// The MAC does not match: sent without the cluster key, or altered.
    Forged,
    /// Authentic but not fresh: a repeated or older sequence number, or a clock too far off.
    Replayed(String),
}

impl fmt::Display for Rejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rejected::Malformed(why) => write!(f, "malformed: {why}"),
            Rejected::Forged => f.write_str("forged: the mac does not match the cluster key"),
            Rejected::Replayed(why) => write!(f, "replayed: {why}"),
        }
    }
}

fn malformed(why: impl Into<String>) -> Rejected {
    Rejected::Malformed(why.into())
}

fn mac(key: &ClusterKey) -> Hmac<Sha256> {
    // An HMAC takes a key of any length: this cannot fail.
    <Hmac<Sha256> as Mac>::new_from_slice(key.bytes()).expect("hmac accepts any key length")
}

/// Whether `name` may be announced: a DNS name or an IP address, printable ASCII.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b".-_:".contains(&b))
}

/// The datagram of `a`, sealed with `key`; an error if it breaks the bounds.
pub fn seal(a: &Announcement, key: &ClusterKey) -> Result<Vec<u8>, Rejected> {
    check_names(&a.names)?;
    let mut w = Writer::default();
    w.0.extend_from_slice(&MAGIC);
    w.u16(VERSION).u16(0);
    w.u64(a.instance).u64(a.seq).u64(a.time_ms).u16(a.port);
    w.u32(a.cores).u32(a.load_milli).u32(a.ranks).u32(a.jobs);
    w.list(&a.names, |w, n| {
        w.bytes(n.as_bytes());
    });
    let mut m = mac(key);
    m.update(&w.0);
    w.0.extend_from_slice(&m.finalize().into_bytes());
    if w.0.len() > MAX_DATAGRAM {
        return Err(malformed(format!(
            "{} bytes exceed {MAX_DATAGRAM}",
            w.0.len()
        )));
    }
    Ok(w.0)
}

fn check_names(names: &[String]) -> Result<(), Rejected> {
    if names.is_empty() || names.len() > MAX_NAMES {
        return Err(malformed(format!(
            "{} names (1 to {MAX_NAMES})",
            names.len()
        )));
    }
    match names.iter().find(|n| !valid_name(n)) {
        Some(bad) => Err(malformed(format!("{bad:?} is not a host name"))),
        None => Ok(()),
    }
}

/// Authenticates and decodes a datagram.
pub fn open(datagram: &[u8], key: &ClusterKey) -> Result<Announcement, Rejected> {
    if datagram.len() < HEADER + MAC_LEN || datagram.len() > MAX_DATAGRAM {
        let (min, max) = (HEADER + MAC_LEN, MAX_DATAGRAM);
        return Err(malformed(format!(
            "{} bytes, not {min} to {max}",
            datagram.len()
        )));
    }
    if datagram[..4] != MAGIC {
        return Err(malformed("not an announcement"));
    }
    let version = u16::from_le_bytes([datagram[4], datagram[5]]);
    if version != VERSION || datagram[6..8] != [0, 0] {
        return Err(malformed(format!(
            "version {version}, flags not zero or unknown"
        )));
    }
    let (signed, tag) = datagram.split_at(datagram.len() - MAC_LEN);
    let mut m = mac(key);
    m.update(signed);
    m.verify_slice(tag).map_err(|_| Rejected::Forged)?;
    let bad = |e: crate::proto::codec::CodecError| malformed(e.0);
    let mut r = Reader(&signed[HEADER..]);
    let a = Announcement {
        instance: r.u64().map_err(bad)?,
        seq: r.u64().map_err(bad)?,
        time_ms: r.u64().map_err(bad)?,
        port: r.u16().map_err(bad)?,
        cores: r.u32().map_err(bad)?,
        load_milli: r.u32().map_err(bad)?,
        ranks: r.u32().map_err(bad)?,
        jobs: r.u32().map_err(bad)?,
        names: r.list(4, Reader::string).map_err(bad)?,
    };
    r.end().map_err(bad)?;
    check_names(&a.names)?;
    if a.port == 0 {
        return Err(malformed("port 0"));
    }
    Ok(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample() -> Announcement {
        Announcement {
            instance: 0x1234_5678_9abc_def0,
            seq: 7,
            time_ms: 1_790_000_000_000,
            port: 7290,
            cores: 16,
            load_milli: 2500,
            ranks: 4,
            jobs: 1,
            names: vec!["node1".into(), "10.0.0.1".into()],
        }
    }

    fn key(b: u8) -> ClusterKey {
        ClusterKey::from_bytes([b; 32])
    }

    #[test]
    fn round_trip() {
        let d = seal(&sample(), &key(1)).unwrap();
        assert_eq!(open(&d, &key(1)).unwrap(), sample());
    }

    #[test]
    fn another_key_or_any_altered_byte_is_forged() {
        let d = seal(&sample(), &key(1)).unwrap();
        assert_eq!(open(&d, &key(2)), Err(Rejected::Forged));
        for i in HEADER..d.len() {
            let mut bad = d.clone();
            bad[i] ^= 1;
            assert_eq!(open(&bad, &key(1)), Err(Rejected::Forged), "byte {i}");
        }
    }

    #[test]
    fn malformed_datagrams_are_refused_before_the_mac() {
        let d = seal(&sample(), &key(1)).unwrap();
        let mut other_version = d.clone();
        other_version[4] = 2;
        let cases: [(&[u8], &str); 4] = [
            (&d[..20], "bytes"),
            (
                b"GET / HTTP/1.1\r\n\r\nxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
                "not an announcement",
            ),
            (&other_version, "version 2"),
            (&[0u8; MAX_DATAGRAM + 1], "bytes"),
        ];
        for (datagram, want) in cases {
            match open(datagram, &key(1)) {
                Err(Rejected::Malformed(why)) => assert!(why.contains(want), "{why}"),
                other => panic!("{want}: {other:?}"),
            }
        }
    }

    #[test]
    fn authentic_but_invalid_fields_are_refused() {
        for names in [vec![], vec!["a b".to_string()], vec!["x".repeat(300)]] {
            let a = Announcement { names, ..sample() };
            assert!(matches!(seal(&a, &key(1)), Err(Rejected::Malformed(_))));
        }
        let too_many = Announcement {
            names: (0..9).map(|i| format!("n{i}")).collect(),
            ..sample()
        };
        assert!(seal(&too_many, &key(1)).is_err());
        // A key holder sending a bad port is still refused.
        let d = seal(
            &Announcement {
                port: 0,
                ..sample()
            },
            &key(1),
        )
        .unwrap();
        assert_eq!(open(&d, &key(1)), Err(malformed("port 0")));
    }

    proptest! {
        #[test]
        fn opening_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..1400)) {
            let _ = open(&bytes, &key(1));
        }

        #[test]
        fn authentic_garbage_never_panics(body in proptest::collection::vec(any::<u8>(), 0..300)) {
            // Garbage with a valid header and MAC exercises the field reader.
            let mut d = MAGIC.to_vec();
            d.extend_from_slice(&[1, 0, 0, 0]);
            d.extend_from_slice(&body);
            let mut m = mac(&key(1));
            m.update(&d);
            d.extend_from_slice(&m.finalize().into_bytes());
            if let Ok(a) = open(&d, &key(1)) {
                prop_assert_eq!(seal(&a, &key(1)).unwrap(), d);
            }
        }
    }
}
