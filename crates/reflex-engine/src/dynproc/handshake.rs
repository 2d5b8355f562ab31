//! What two groups tell each other to connect (accept/connect, join), and the framing on the
//! socket between their roots.
//!
//! A side's [`Offer`] is its highest context-id proposal and, for every member in group-rank
//! order, its global identity and the business card of its bridge (`reflex_tcp::bridge`):
//!
//! ```text
//! proposal u32 | count u32 | count x (job u64 | rank u32 | card_len u16 | card bytes)
//! ```
//! (little endian). On the socket every message is a frame: `u32 length` then the bytes, at most
//! [`MAX_FRAME`]. A connector first sends [`CONNECT_MAGIC`] and the port's nonce; the acceptor
//! answers nothing at all to a wrong one (it closes the connection and waits for the next). The
//! parsers are total: any bytes give an offer or a message saying what is wrong.

use crate::procs::{GlobalId, GLOBAL_ID_LEN};
use std::io::{self, Read, Write};

/// Largest frame accepted (an offer of about 10 000 processes).
pub const MAX_FRAME: usize = 1 << 20;
/// `"RFXC"` then a version: the first bytes a connector sends.
pub const CONNECT_MAGIC: [u8; 6] = *b"RFXC\x01\x00";

/// One side's contribution to the exchange.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offer {
    /// The side's highest proposal for the new context id.
    pub proposal: u32,
    /// Every member: identity and bridge card.
    pub members: Vec<(GlobalId, String)>,
}

impl Offer {
    /// The bytes of this offer.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&self.proposal.to_le_bytes());
        out.extend_from_slice(&(self.members.len() as u32).to_le_bytes());
        for (id, card) in &self.members {
            out.extend_from_slice(&id.encode());
            out.extend_from_slice(&(card.len() as u16).to_le_bytes());
            out.extend_from_slice(card.as_bytes());
        }
        out
    }

    /// Parses an offer.
    pub fn decode(b: &[u8]) -> Result<Offer, String> {
        let mut r = Reader(b);
        let proposal = r.u32()?;
        let count = r.u32()? as usize;
        // Each member takes at least 14 bytes: no allocation beyond what the bytes can hold.
        if count > b.len() / (GLOBAL_ID_LEN + 2) {
            return Err(format!("an offer of {count} members in {} bytes", b.len()));
        }
        let mut members = Vec::with_capacity(count);
        for _ in 0..count {
            let id = GlobalId::decode(r.take(GLOBAL_ID_LEN)?).ok_or("a short identity")?;
            let len = u16::from_le_bytes(r.take(2)?.try_into().map_err(|_| "a short length")?);
            let card = std::str::from_utf8(r.take(len as usize)?)
                .map_err(|_| "a card that is not UTF-8")?;
            members.push((id, card.to_owned()));
        }
        if !r.0.is_empty() {
            return Err(format!("{} bytes after the offer", r.0.len()));
        }
        Ok(Offer { proposal, members })
    }
}

/// A bounds-checked reader over a byte slice.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if self.0.len() < n {
            return Err(format!("the offer ends {} bytes early", n - self.0.len()));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().map_err(|_| "short")?,
        ))
    }
}

/// Writes `bytes` as one frame.
pub fn write_frame(w: &mut impl Write, bytes: &[u8]) -> io::Result<()> {
    w.write_all(&(bytes.len() as u32).to_le_bytes())?;
    w.write_all(bytes)?;
    w.flush()
}

/// Reads one frame (an error for one over [`MAX_FRAME`]).
pub fn read_frame(r: &mut impl Read) -> io::Result<Vec<u8>> {
    let mut len = [0u8; 4];
    r.read_exact(&mut len)?;
    let len = u32::from_le_bytes(len) as usize;
    if len > MAX_FRAME {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a frame of {len} bytes (at most {MAX_FRAME})"),
        ));
    }
    let mut bytes = vec![0u8; len];
    r.read_exact(&mut bytes)?;
    Ok(bytes)
}

/// The connector's greeting: magic and the port's nonce.
pub fn greeting(nonce: u64) -> [u8; 14] {
    let mut g = [0u8; 14];
    g[..6].copy_from_slice(&CONNECT_MAGIC);
    g[6..].copy_from_slice(&nonce.to_le_bytes());
    g
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Offer {
        Offer {
            proposal: 42,
            members: vec![
                (
                    GlobalId { job: 7, rank: 0 },
                    "tcp1;port=1;cookie=2;addrs=".into(),
                ),
                (GlobalId { job: 7, rank: 3 }, String::new()),
            ],
        }
    }

    #[test]
    fn offers_round_trip_and_frames_too() {
        let o = sample();
        assert_eq!(Offer::decode(&o.encode()), Ok(o.clone()));
        let mut wire = Vec::new();
        write_frame(&mut wire, &o.encode()).unwrap();
        let back = read_frame(&mut wire.as_slice()).unwrap();
        assert_eq!(Offer::decode(&back), Ok(o));
        let huge = (MAX_FRAME as u32 + 1).to_le_bytes();
        assert!(read_frame(&mut huge.as_slice()).is_err());
    }

    #[test]
    fn damaged_offers_are_refused_not_panicked_on() {
        let good = sample().encode();
        for cut in 0..good.len() {
            assert!(Offer::decode(&good[..cut]).is_err(), "cut at {cut}");
        }
        let mut longer = good.clone();
        longer.push(0);
        assert!(Offer::decode(&longer).is_err());
        let mut many = good.clone();
        many[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(Offer::decode(&many).is_err());
        reflex_base::mutate::run(&[good], 20_000, 11, |b| {
            let _ = Offer::decode(b);
        });
    }
}
