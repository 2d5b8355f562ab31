//! The request message of a one-sided operation between processes that do not share the
//! window's memory: a fixed little-endian header, the target datatype's description when it is
//! not dense, then (for put and accumulate) the origin data when it fits the message.
//!
//! ```text
//!  0  kind u8 | op u8 | lock u8 | basic kind u8 | basic size u32 | basic extent u32 | pad u32
//! 16  disp u64      target address: byte offset in the window, or an absolute address (dynamic)
//! 24  lo i64        offset of the lowest byte the target datatype touches, from disp
//! 32  span u64      bytes from that lowest byte to the highest
//! 40  len u64       packed bytes of the operation
//! 48  reply i32 | desc u32 | inline u32 | pad u32
//! 64  description (desc bytes) | inline data (inline bytes)
//! ```
//!
//! Everything is validated on arrival ([`Request::decode`]): a malformed request is an error
//! reported to the target, never trusted.

use crate::datatype::wire::RemoteLayout;
use crate::datatype::{Basic, PairValue, ValueKind};
use crate::error::{ErrorClass, MpiError, Result};
use crate::op::ReduceOp;

/// Bytes of the fixed header.
pub(crate) const HEADER: usize = 64;

/// What a request asks the target to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Put = 1,
    Get = 2,
    Acc = 3,
    GetAcc = 4,
    Cas = 5,
    Flush = 6,
    Lock = 7,
    Unlock = 8,
}

const KINDS: [Kind; 8] = [
    Kind::Put,
    Kind::Get,
    Kind::Acc,
    Kind::GetAcc,
    Kind::Cas,
    Kind::Flush,
    Kind::Lock,
    Kind::Unlock,
];

const OPS: [ReduceOp; 14] = [
    ReduceOp::Max,
    ReduceOp::Min,
    ReduceOp::Sum,
    ReduceOp::Prod,
    ReduceOp::Land,
    ReduceOp::Band,
    ReduceOp::Lor,
    ReduceOp::Bor,
    ReduceOp::Lxor,
    ReduceOp::Bxor,
    ReduceOp::Minloc,
    ReduceOp::Maxloc,
    ReduceOp::Replace,
    ReduceOp::NoOp,
];

const PAIRS: [PairValue; 6] = [
    PairValue::Float,
    PairValue::Double,
    PairValue::Long,
    PairValue::Short,
    PairValue::Int,
    PairValue::LongDouble,
];

/// The fixed part of a request.
#[derive(Debug, Clone)]
pub(crate) struct Request {
    pub(crate) kind: Kind,
    pub(crate) op: ReduceOp,
    /// Exclusive (1) or shared (0) for a lock request.
    pub(crate) exclusive: bool,
    /// Element type of accumulate operations (bytes otherwise).
    pub(crate) basic: Basic,
    pub(crate) disp: u64,
    pub(crate) lo: i64,
    pub(crate) span: u64,
    pub(crate) len: u64,
    pub(crate) reply: i32,
}

/// A decoded request: the header, the target layout (None: dense) and where the inline data is.
#[derive(Debug)]
pub(crate) struct Decoded {
    pub(crate) req: Request,
    pub(crate) layout: Option<RemoteLayout>,
    /// Range of the inline data in the message.
    pub(crate) data: std::ops::Range<usize>,
}

fn basic_code(b: &Basic) -> u8 {
    match b.kind {
        ValueKind::Signed => 1,
        ValueKind::Unsigned => 2,
        ValueKind::Float => 3,
        ValueKind::Complex => 4,
        ValueKind::Logical => 5,
        ValueKind::Byte => 6,
        ValueKind::Char => 7,
        ValueKind::Pair { value } => 16 + PAIRS.iter().position(|p| *p == value).unwrap_or(0) as u8,
        ValueKind::LbMarker | ValueKind::UbMarker => 6,
    }
}

fn basic_of(code: u8, size: u32, extent: u32) -> Option<Basic> {
    let kind = match code {
        1 => ValueKind::Signed,
        2 => ValueKind::Unsigned,
        3 => ValueKind::Float,
        4 => ValueKind::Complex,
        5 => ValueKind::Logical,
        6 => ValueKind::Byte,
        7 => ValueKind::Char,
        c if (16..22).contains(&c) => ValueKind::Pair {
            value: PAIRS[(c - 16) as usize],
        },
        _ => return None,
    };
    (size > 0 && size <= 32 && extent >= size && extent <= 32).then_some(Basic {
        kind,
        size,
        extent,
    })
}

fn malformed(why: &str) -> MpiError {
    MpiError::new(
        ErrorClass::Intern,
        format!("malformed one-sided request: {why}"),
    )
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

impl Request {
    /// A request of `kind` with no data.
    pub(crate) fn control(kind: Kind, reply: i32) -> Self {
        Self {
            kind,
            op: ReduceOp::NoOp,
            exclusive: false,
            basic: Basic::plain(ValueKind::Byte, 1),
            disp: 0,
            lo: 0,
            span: 0,
            len: 0,
            reply,
        }
    }

    /// The message: header, then `desc`, then `inline`.
    pub(crate) fn encode(&self, desc: &[u8], inline: &[u8]) -> Vec<u8> {
        let mut b = vec![0u8; HEADER + desc.len() + inline.len()];
        b[0] = self.kind as u8;
        b[1] = OPS.iter().position(|o| *o == self.op).unwrap_or(0) as u8;
        b[2] = u8::from(self.exclusive);
        b[3] = basic_code(&self.basic);
        b[4..8].copy_from_slice(&self.basic.size.to_le_bytes());
        b[8..12].copy_from_slice(&self.basic.extent.to_le_bytes());
        b[16..24].copy_from_slice(&self.disp.to_le_bytes());
        b[24..32].copy_from_slice(&self.lo.to_le_bytes());
        b[32..40].copy_from_slice(&self.span.to_le_bytes());
        b[40..48].copy_from_slice(&self.len.to_le_bytes());
        b[48..52].copy_from_slice(&self.reply.to_le_bytes());
        b[52..56].copy_from_slice(&(desc.len() as u32).to_le_bytes());
        b[56..60].copy_from_slice(&(inline.len() as u32).to_le_bytes());
        b[HEADER..HEADER + desc.len()].copy_from_slice(desc);
        b[HEADER + desc.len()..].copy_from_slice(inline);
        b
    }

    /// Decodes and validates a request message.
    pub(crate) fn decode(b: &[u8]) -> Result<Decoded> {
        if b.len() < HEADER {
            return Err(malformed("shorter than its header"));
        }
        let kind = *KINDS
            .get(usize::from(b[0]).wrapping_sub(1))
            .ok_or_else(|| malformed("unknown kind"))?;
        let op = *OPS
            .get(usize::from(b[1]))
            .ok_or_else(|| malformed("unknown operation"))?;
        let basic = basic_of(b[3], u32_at(b, 4), u32_at(b, 8))
            .ok_or_else(|| malformed("unknown element type"))?;
        let req = Request {
            kind,
            op,
            exclusive: b[2] != 0,
            basic,
            disp: u64_at(b, 16),
            lo: u64_at(b, 24) as i64,
            span: u64_at(b, 32),
            len: u64_at(b, 40),
            reply: u32_at(b, 48) as i32,
        };
        let desc = u32_at(b, 52) as usize;
        let inline = u32_at(b, 56) as usize;
        if HEADER + desc + inline != b.len() {
            return Err(malformed("lengths do not add up to the message"));
        }
        let layout = match desc {
            0 if req.span != req.len => return Err(malformed("dense span differs from length")),
            0 => None,
            _ => Some(RemoteLayout::decode(&b[HEADER..HEADER + desc], req.len)?),
        };
        let start = HEADER + desc;
        Ok(Decoded {
            req,
            layout,
            data: start..start + inline,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_survives_the_wire() {
        let mut r = Request::control(Kind::Acc, 77);
        r.op = ReduceOp::Maxloc;
        r.basic = Basic {
            kind: ValueKind::Pair {
                value: PairValue::Double,
            },
            size: 12,
            extent: 16,
        };
        r.disp = 4096;
        r.span = 24;
        r.len = 24;
        let bytes = r.encode(&[], &[7; 24]);
        let d = Request::decode(&bytes).unwrap();
        assert_eq!(d.req.kind, Kind::Acc);
        assert_eq!(d.req.op, ReduceOp::Maxloc);
        assert_eq!(d.req.basic, r.basic);
        assert_eq!((d.req.disp, d.req.reply), (4096, 77));
        assert_eq!(&bytes[d.data], &[7; 24]);
    }

    #[test]
    fn malformed_requests_are_rejected() {
        let good = Request::control(Kind::Flush, 3).encode(&[], &[]);
        assert!(Request::decode(&good[..10]).is_err());
        let mut bad = good.clone();
        bad[0] = 99;
        assert!(Request::decode(&bad).is_err());
        let mut bad = good.clone();
        bad[56] = 5; // claims inline bytes it does not carry
        assert!(Request::decode(&bad).is_err());
        let mut bad = good;
        bad[3] = 200;
        assert!(Request::decode(&bad).is_err());
    }
}
