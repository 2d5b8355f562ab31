//! Wire format of the engine's active messages (the packets the transport carries).
//!
//! All of MPI point-to-point is built from nine packet kinds (the MPICH-ch4 "active message"
//! approach): an eager message carries its payload; a large message sends a request-to-send (RTS),
//! and the receiver either reads the payload in one copy (`process_vm_readv`) and answers FIN, or
//! answers clear-to-send (CTS) and the sender streams DATA chunks, or (cooperative copy, see
//! `crate::coop`) answers COOP, naming the shared slot through which the sender may help it copy,
//! and FIN once the copy is complete. Synchronous eager sends get a
//! SYNC_ACK when matched. `MPI_Cancel` of a send that awaits its receiver (a synchronous eager
//! send before its SYNC_ACK, a rendezvous before its CTS or FIN) sends CANCEL; the receiver takes
//! the message out of its unexpected queue if it is still there and answers CANCEL_ACK with the
//! outcome (flags bit 0: cancelled). Fields are little-endian at fixed offsets; decoding checks every length,
//! so a malformed packet is an error, never a panic or an out-of-bounds read.
//!
//! ```text
//! match header (EAGER, RTS), 32 bytes:
//!  0 kind u8 | 1 flags u8 | 2 pad u16 | 4 ctx u32 | 8 src u32 | 12 tag i32 | 16 len u64 | 24 sreq u32 | 28 pid u32
//!  RTS appends: 32 addr u64 [| 40 the sender's datatype, see datatype::wire, when non-contiguous]
//!  EAGER appends: the payload (len bytes)
//! CTS:  0 kind | 4 sreq u32 | 8 rreq u32                     (12 bytes)
//! DATA: 0 kind | 4 rreq u32 | 8 offset u64 | 16 payload      (16 + n bytes)
//! FIN, SYNC_ACK, CANCEL, CANCEL_ACK: 0 kind | 1 flags u8 | 4 sreq u32   (8 bytes)
//! COOP: 0 kind | 4 sreq u32 | 8 slot u32 | 12 generation u32 (16 bytes)
//! ```

use crate::error::{ErrorClass, MpiError, Result};

const KIND_EAGER: u8 = 1;
const KIND_RTS: u8 = 2;
const KIND_CTS: u8 = 3;
const KIND_DATA: u8 = 4;
const KIND_FIN: u8 = 5;
const KIND_SYNC_ACK: u8 = 6;
const KIND_COOP: u8 = 7;
const KIND_CANCEL: u8 = 8;
const KIND_CANCEL_ACK: u8 = 9;

/// The sender wants to know when the message is matched (`MPI_Ssend`).
pub const FLAG_SYNC: u8 = 1;

/// The sender's data cannot be read in place (a datatype too complex to describe in the RTS):
/// the receiver must ask for it to be streamed.
pub const FLAG_STREAM_ONLY: u8 = 2;

/// A collective schedule's message sent after the sender's part of that collective failed (a
/// block of another length than expected arrived there): the receive completes with an error
/// too, so that every rank below the failure in a tree hears of it.
pub const FLAG_UPSTREAM_FAILED: u8 = 4;

/// Bytes before an eager payload.
pub const EAGER_HEADER: usize = 32;
/// Bytes of an RTS packet.
pub const RTS_LEN: usize = 40;
/// Bytes before a DATA payload.
pub const DATA_HEADER: usize = 16;
/// Bytes of a CTS packet.
pub const CTS_LEN: usize = 12;
/// Bytes of a FIN, SYNC_ACK, CANCEL or CANCEL_ACK packet.
pub const ACK_LEN: usize = 8;
/// Bytes of a COOP packet.
pub const COOP_LEN: usize = 16;

/// The matching envelope of a message plus the sender's bookkeeping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Envelope {
    /// Context id of the communicator (point-to-point or collective).
    pub ctx: u32,
    /// Rank of the sender in the communicator.
    pub src: u32,
    /// Message tag.
    pub tag: i32,
    /// Total message length in bytes.
    pub len: u64,
    /// Sender's request id (for SYNC_ACK, CTS, FIN).
    pub sreq: u32,
    /// Packet flags ([`FLAG_SYNC`]).
    pub flags: u8,
}

/// A decoded packet; payload slices borrow from the packet bytes.
#[derive(Debug, PartialEq, Eq)]
pub enum Packet<'a> {
    /// A whole message.
    Eager {
        /// Envelope.
        env: Envelope,
        /// The message bytes.
        payload: &'a [u8],
    },
    /// Request to send a large message; the sender's buffer is at `addr` in process `pid`.
    Rts {
        /// Envelope.
        env: Envelope,
        /// Sender's process id, for a single-copy read.
        pid: u32,
        /// Address of the sender's buffer in its process.
        addr: u64,
        /// The sender's datatype description (empty when its data is contiguous at `addr`).
        layout: &'a [u8],
    },
    /// Receiver matched an RTS and asks for the data to be streamed.
    Cts {
        /// Sender's request.
        sreq: u32,
        /// Receiver's request.
        rreq: u32,
    },
    /// One streamed chunk of a large message.
    Data {
        /// Receiver's request.
        rreq: u32,
        /// Byte offset of the chunk in the message.
        offset: u64,
        /// The chunk.
        payload: &'a [u8],
    },
    /// Receiver finished reading the sender's buffer.
    Fin {
        /// Sender's request.
        sreq: u32,
    },
    /// A synchronous eager message was matched.
    SyncAck {
        /// Sender's request.
        sreq: u32,
    },
    /// The sender asks to withdraw the unmatched message of its send `sreq`.
    Cancel {
        /// Sender's request.
        sreq: u32,
    },
    /// The receiver's answer to CANCEL: whether the message was withdrawn before any receive
    /// matched it.
    CancelAck {
        /// Sender's request.
        sreq: u32,
        /// The message was withdrawn.
        cancelled: bool,
    },
    /// The receiver copies the message and invites the sender to copy chunks too.
    Coop {
        /// Sender's request.
        sreq: u32,
        /// The shared slot of the copy (among those of this pair).
        slot: u32,
        /// The slot's generation for this message.
        generation: u32,
    },
}

#[cold]
#[inline(never)]
fn malformed(what: &str, len: usize) -> MpiError {
    MpiError::new(
        ErrorClass::Intern,
        format!("malformed {what} packet of {len} bytes"),
    )
}

#[inline(always)]
fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("four bytes"))
}

#[inline(always)]
fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("eight bytes"))
}

/// The envelope of a match header (the caller checked that `b` holds one): one bounds check,
/// then loads at fixed offsets.
#[inline(always)]
fn envelope_at(b: &[u8]) -> Envelope {
    let h: &[u8; EAGER_HEADER] = b[..EAGER_HEADER].try_into().expect("a match header");
    Envelope {
        flags: h[1],
        ctx: u32_at(h, 4),
        src: u32_at(h, 8),
        tag: u32_at(h, 12) as i32,
        len: u64_at(h, 16),
        sreq: u32_at(h, 24),
    }
}

/// Decodes one packet, checking every length.
#[inline]
pub fn decode(b: &[u8]) -> Result<Packet<'_>> {
    let Some(&kind) = b.first() else {
        return Err(malformed("empty", 0));
    };
    let need = |n: usize, what: &str| {
        if b.len() < n {
            Err(malformed(what, b.len()))
        } else {
            Ok(())
        }
    };
    match kind {
        KIND_EAGER => {
            need(EAGER_HEADER, "eager")?;
            let env = envelope_at(b);
            let payload = &b[EAGER_HEADER..];
            if payload.len() as u64 != env.len {
                return Err(malformed("eager (length mismatch)", b.len()));
            }
            Ok(Packet::Eager { env, payload })
        }
        KIND_RTS => {
            need(RTS_LEN, "rts")?;
            Ok(Packet::Rts {
                env: envelope_at(b),
                pid: u32_at(b, 28),
                addr: u64_at(b, 32),
                layout: &b[RTS_LEN..],
            })
        }
        KIND_CTS => {
            need(CTS_LEN, "cts")?;
            Ok(Packet::Cts {
                sreq: u32_at(b, 4),
                rreq: u32_at(b, 8),
            })
        }
        KIND_DATA => {
            need(DATA_HEADER, "data")?;
            Ok(Packet::Data {
                rreq: u32_at(b, 4),
                offset: u64_at(b, 8),
                payload: &b[DATA_HEADER..],
            })
        }
        KIND_FIN => {
            need(ACK_LEN, "fin")?;
            Ok(Packet::Fin { sreq: u32_at(b, 4) })
        }
        KIND_SYNC_ACK => {
            need(ACK_LEN, "sync-ack")?;
            Ok(Packet::SyncAck { sreq: u32_at(b, 4) })
        }
        KIND_CANCEL => {
            need(ACK_LEN, "cancel")?;
            Ok(Packet::Cancel { sreq: u32_at(b, 4) })
        }
        KIND_CANCEL_ACK => {
            need(ACK_LEN, "cancel-ack")?;
            Ok(Packet::CancelAck {
                sreq: u32_at(b, 4),
                cancelled: b[1] & 1 != 0,
            })
        }
        KIND_COOP => {
            need(COOP_LEN, "coop")?;
            Ok(Packet::Coop {
                sreq: u32_at(b, 4),
                slot: u32_at(b, 8),
                generation: u32_at(b, 12),
            })
        }
        other => Err(MpiError::new(
            ErrorClass::Intern,
            format!("unknown packet kind {other}"),
        )),
    }
}

/// The 32-byte match header of `kind` (see the module doc), built in registers.
#[inline]
fn envelope_bytes(kind: u8, env: &Envelope, pid: u32) -> [u8; EAGER_HEADER] {
    let words = [
        u64::from(kind) | u64::from(env.flags) << 8 | u64::from(env.ctx) << 32,
        u64::from(env.src) | u64::from(env.tag as u32) << 32,
        env.len,
        u64::from(env.sreq) | u64::from(pid) << 32,
    ];
    let mut b = [0u8; EAGER_HEADER];
    b[..8].copy_from_slice(&words[0].to_le_bytes());
    b[8..16].copy_from_slice(&words[1].to_le_bytes());
    b[16..24].copy_from_slice(&words[2].to_le_bytes());
    b[24..].copy_from_slice(&words[3].to_le_bytes());
    b
}

#[inline]
fn put_envelope(b: &mut [u8], kind: u8, env: &Envelope, pid: u32) {
    b[..EAGER_HEADER].copy_from_slice(&envelope_bytes(kind, env, pid));
}

/// The header of an eager packet; the payload follows it.
#[inline]
pub fn eager_header(env: &Envelope) -> [u8; EAGER_HEADER] {
    envelope_bytes(KIND_EAGER, env, 0)
}

/// Writes an eager header into `b[..EAGER_HEADER]`; the caller writes the payload after it.
#[inline]
pub fn encode_eager_header(b: &mut [u8], env: &Envelope) {
    put_envelope(b, KIND_EAGER, env, 0);
}

/// Writes an RTS packet into `b[..RTS_LEN]`.
pub fn encode_rts(b: &mut [u8], env: &Envelope, pid: u32, addr: u64) {
    put_envelope(b, KIND_RTS, env, pid);
    b[32..40].copy_from_slice(&addr.to_le_bytes());
}

/// Writes an RTS for a non-contiguous buffer: `addr` is the application's address and the
/// sender's `count` elements of `program` follow (`b.len() == RTS_LEN + wire::encoded_len`).
pub fn encode_rts_typed(
    b: &mut [u8],
    env: &Envelope,
    (pid, addr): (u32, u64),
    program: &crate::datatype::Program,
    count: usize,
    extent: isize,
) {
    encode_rts(b, env, pid, addr);
    crate::datatype::wire::encode(&mut b[RTS_LEN..], program, count, extent);
}

/// Writes a CTS packet into `b[..CTS_LEN]`.
pub fn encode_cts(b: &mut [u8], sreq: u32, rreq: u32) {
    b[..4].copy_from_slice(&[KIND_CTS, 0, 0, 0]);
    b[4..8].copy_from_slice(&sreq.to_le_bytes());
    b[8..12].copy_from_slice(&rreq.to_le_bytes());
}

/// Writes a DATA header into `b[..DATA_HEADER]`; the caller writes the chunk after it.
pub fn encode_data_header(b: &mut [u8], rreq: u32, offset: u64) {
    b[..4].copy_from_slice(&[KIND_DATA, 0, 0, 0]);
    b[4..8].copy_from_slice(&rreq.to_le_bytes());
    b[8..16].copy_from_slice(&offset.to_le_bytes());
}

/// Writes a FIN packet into `b[..ACK_LEN]`.
pub fn encode_fin(b: &mut [u8], sreq: u32) {
    b[..4].copy_from_slice(&[KIND_FIN, 0, 0, 0]);
    b[4..8].copy_from_slice(&sreq.to_le_bytes());
}

/// Writes a SYNC_ACK packet into `b[..ACK_LEN]`.
pub fn encode_sync_ack(b: &mut [u8], sreq: u32) {
    b[..4].copy_from_slice(&[KIND_SYNC_ACK, 0, 0, 0]);
    b[4..8].copy_from_slice(&sreq.to_le_bytes());
}

/// Writes a CANCEL packet into `b[..ACK_LEN]`.
pub fn encode_cancel(b: &mut [u8], sreq: u32) {
    b[..4].copy_from_slice(&[KIND_CANCEL, 0, 0, 0]);
    b[4..8].copy_from_slice(&sreq.to_le_bytes());
}

/// Writes a CANCEL_ACK packet into `b[..ACK_LEN]`.
pub fn encode_cancel_ack(b: &mut [u8], sreq: u32, cancelled: bool) {
    b[..4].copy_from_slice(&[KIND_CANCEL_ACK, u8::from(cancelled), 0, 0]);
    b[4..8].copy_from_slice(&sreq.to_le_bytes());
}

/// Writes a COOP packet into `b[..COOP_LEN]`.
pub fn encode_coop(b: &mut [u8], sreq: u32, slot: u32, generation: u32) {
    b[..4].copy_from_slice(&[KIND_COOP, 0, 0, 0]);
    b[4..8].copy_from_slice(&sreq.to_le_bytes());
    b[8..12].copy_from_slice(&slot.to_le_bytes());
    b[12..16].copy_from_slice(&generation.to_le_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> Envelope {
        Envelope {
            ctx: 4,
            src: 3,
            tag: -7,
            len: 5,
            sreq: 9,
            flags: FLAG_SYNC,
        }
    }

    #[test]
    fn eager_round_trip() {
        let mut b = vec![0u8; EAGER_HEADER + 5];
        encode_eager_header(&mut b, &env());
        b[EAGER_HEADER..].copy_from_slice(b"hello");
        assert_eq!(
            decode(&b).unwrap(),
            Packet::Eager {
                env: env(),
                payload: b"hello"
            }
        );
    }

    #[test]
    fn control_round_trips() {
        let mut b = [0u8; RTS_LEN];
        encode_rts(&mut b, &env(), 77, 0xdead_beef);
        assert_eq!(
            decode(&b).unwrap(),
            Packet::Rts {
                env: env(),
                pid: 77,
                addr: 0xdead_beef,
                layout: &[]
            }
        );
        encode_cts(&mut b, 1, 2);
        assert_eq!(
            decode(&b[..CTS_LEN]).unwrap(),
            Packet::Cts { sreq: 1, rreq: 2 }
        );
        encode_fin(&mut b, 5);
        assert_eq!(decode(&b[..ACK_LEN]).unwrap(), Packet::Fin { sreq: 5 });
        encode_sync_ack(&mut b, 6);
        assert_eq!(decode(&b[..ACK_LEN]).unwrap(), Packet::SyncAck { sreq: 6 });
        encode_cancel(&mut b, 7);
        assert_eq!(decode(&b[..ACK_LEN]).unwrap(), Packet::Cancel { sreq: 7 });
        for cancelled in [false, true] {
            encode_cancel_ack(&mut b, 7, cancelled);
            let ack = Packet::CancelAck { sreq: 7, cancelled };
            assert_eq!(decode(&b[..ACK_LEN]).unwrap(), ack);
        }
        assert!(decode(&b[..ACK_LEN - 1]).is_err());
        encode_coop(&mut b, 8, 63, u32::MAX);
        assert_eq!(
            decode(&b[..COOP_LEN]).unwrap(),
            Packet::Coop {
                sreq: 8,
                slot: 63,
                generation: u32::MAX
            }
        );
        assert!(decode(&b[..COOP_LEN - 1]).is_err());
        encode_data_header(&mut b, 3, 1 << 40);
        assert_eq!(
            decode(&b[..DATA_HEADER + 2]).unwrap(),
            Packet::Data {
                rreq: 3,
                offset: 1 << 40,
                payload: &b[16..18]
            }
        );
    }

    #[test]
    fn truncated_and_garbage_packets_are_errors() {
        let mut b = vec![0u8; EAGER_HEADER + 5];
        encode_eager_header(&mut b, &env());
        assert!(decode(&b[..EAGER_HEADER + 4]).is_err());
        for n in 0..RTS_LEN {
            let mut p = [0u8; RTS_LEN];
            encode_rts(&mut p, &env(), 1, 2);
            assert!(decode(&p[..n]).is_err());
        }
        assert!(decode(&[99, 0, 0, 0]).is_err());
        // every prefix of arbitrary bytes decodes or errors, never panics
        let noise: Vec<u8> = (0..64u32).map(|i| (i * 37 % 251) as u8).collect();
        for k in 0..=9u8 {
            for n in 0..noise.len() {
                let mut v = noise[..n].to_vec();
                if let Some(first) = v.first_mut() {
                    *first = k;
                }
                let _ = decode(&v);
            }
        }
    }
}
