//! A compiled datatype on the wire: how a rendezvous sender tells the receiver where its blocks are.
//!
//! For a large non-contiguous send the RTS packet carries the sender's program, element count and
//! extent, so that the receiver can walk the *sender's* blocks (as addresses in the sender's
//! process) next to its own and copy between them with one `process_vm_readv` per batch of iovecs,
//! without either side packing. The description is untrusted input: [`RemoteLayout::decode`] checks
//! its length, the nesting of every loop, and computes sizes with overflow checks, so a malformed
//! packet is an error and never a panic; the addresses themselves are checked by the kernel.
//!
//! ```text
//! 0 count u64 | 8 extent i64 | 16 n u32 | 20 pad u32 | 24 n × instruction (32 bytes each):
//!   kind u64 (1 = copy, 2 = loop) | copy: disp i64, len u64, 0 | loop: count u64, stride i64, body u64
//! ```

use super::program::{Instr, Program};
use crate::error::{ErrorClass, MpiError, Result};

const HEADER: usize = 24;
const INSTR: usize = 32;
/// Deepest loop nesting accepted from the wire.
const MAX_DEPTH: usize = 64;

/// Bytes the description of `program` takes.
pub fn encoded_len(program: &Program) -> usize {
    HEADER + INSTR * program.instrs.len()
}

/// Writes the description of `count` elements of `program`, `extent` apart, into `b`
/// (`b.len() == encoded_len(program)`).
pub fn encode(b: &mut [u8], program: &Program, count: usize, extent: isize) {
    b[0..8].copy_from_slice(&(count as u64).to_le_bytes());
    b[8..16].copy_from_slice(&(extent as i64).to_le_bytes());
    b[16..20].copy_from_slice(&(program.instrs.len() as u32).to_le_bytes());
    b[20..24].fill(0);
    for (i, instr) in program.instrs.iter().enumerate() {
        let words: [u64; 4] = match *instr {
            Instr::Copy { disp, len } => [1, disp as u64, len as u64, 0],
            Instr::Loop {
                count,
                stride,
                body,
                ..
            } => [2, count as u64, stride as u64, body as u64],
        };
        let at = HEADER + i * INSTR;
        for (w, word) in words.iter().enumerate() {
            b[at + 8 * w..at + 8 * w + 8].copy_from_slice(&word.to_le_bytes());
        }
    }
}

/// The sender's blocks, decoded from an RTS.
#[derive(Debug, Clone)]
pub struct RemoteLayout {
    /// The sender's program.
    pub program: Program,
    /// Elements sent.
    pub count: usize,
    /// Bytes between the sender's elements.
    pub extent: isize,
}

fn malformed(why: &str) -> MpiError {
    MpiError::new(
        ErrorClass::Intern,
        format!("malformed datatype description in rts: {why}"),
    )
}

fn word(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(w)
}

impl RemoteLayout {
    /// Decodes and validates a description; its packed size must be `expected_len` bytes.
    pub fn decode(b: &[u8], expected_len: u64) -> Result<Self> {
        if b.len() < HEADER {
            return Err(malformed("too short"));
        }
        let n = u32::from_le_bytes([b[16], b[17], b[18], b[19]]) as usize;
        if b.len() != HEADER + n * INSTR || n == 0 {
            return Err(malformed("length does not match the instruction count"));
        }
        let count = usize::try_from(word(b, 0)).map_err(|_| malformed("count"))?;
        let extent = word(b, 8) as i64 as isize;
        let mut instrs = Vec::with_capacity(n);
        for i in 0..n {
            let at = HEADER + i * INSTR;
            let (kind, x, y, z) = (
                word(b, at),
                word(b, at + 8),
                word(b, at + 16),
                word(b, at + 24),
            );
            instrs.push(match kind {
                1 if y > 0 => Instr::Copy {
                    disp: x as i64 as isize,
                    len: usize::try_from(y).map_err(|_| malformed("run length"))?,
                },
                2 if x > 0 && z > 0 => Instr::Loop {
                    count: usize::try_from(x).map_err(|_| malformed("loop count"))?,
                    stride: y as i64 as isize,
                    body: usize::try_from(z).map_err(|_| malformed("loop body"))?,
                    body_size: 0,
                },
                _ => return Err(malformed("bad instruction")),
            });
        }
        let (size, depth, runs) = measure(&mut instrs, 0, n, 0)?;
        let program = Program::from_parts(instrs, depth, runs, size);
        let total = size
            .checked_mul(count)
            .ok_or_else(|| malformed("size overflow"))?;
        if total as u64 != expected_len {
            return Err(malformed("size does not match the message length"));
        }
        Ok(Self {
            program,
            count,
            extent,
        })
    }
}

/// Checks the nesting of `instrs[start..end]`, fills in loop body sizes and returns the range's
/// (data bytes, loop depth, runs).
fn measure(
    instrs: &mut [Instr],
    start: usize,
    end: usize,
    depth: usize,
) -> Result<(usize, usize, u64)> {
    if depth > MAX_DEPTH {
        return Err(malformed("loops nested too deep"));
    }
    let (mut size, mut deepest, mut runs, mut pc) = (0usize, 0usize, 0u64, start);
    while pc < end {
        match instrs[pc] {
            Instr::Copy { len, .. } => {
                size = size
                    .checked_add(len)
                    .ok_or_else(|| malformed("size overflow"))?;
                runs = runs.saturating_add(1);
                pc += 1;
            }
            Instr::Loop { count, body, .. } => {
                let body_end = (pc + 1)
                    .checked_add(body)
                    .filter(|&e| e <= end)
                    .ok_or_else(|| malformed("loop body runs past its end"))?;
                let (body_size, d, r) = measure(instrs, pc + 1, body_end, depth + 1)?;
                if let Instr::Loop { body_size: bs, .. } = &mut instrs[pc] {
                    *bs = body_size;
                }
                let bytes = body_size
                    .checked_mul(count)
                    .ok_or_else(|| malformed("size overflow"))?;
                size = size
                    .checked_add(bytes)
                    .ok_or_else(|| malformed("size overflow"))?;
                deepest = deepest.max(d + 1);
                runs = runs.saturating_add(r.saturating_mul(count as u64));
                pc = body_end;
            }
        }
    }
    Ok((size, deepest, runs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datatype::layout::Layout;
    use crate::datatype::{Basic, Datatype, ValueKind};

    #[test]
    fn a_vector_description_round_trips() {
        let int = Datatype::Basic(Basic::plain(ValueKind::Signed, 4));
        let v = Datatype::derived(Layout::vector(3, 2, -16, int).unwrap());
        let p = v.layout().unwrap().program();
        let mut b = vec![0u8; encoded_len(p)];
        encode(&mut b, p, 5, 40);
        let r = RemoteLayout::decode(&b, 5 * 24).unwrap();
        assert_eq!((r.count, r.extent), (5, 40));
        assert_eq!(r.program.instrs, p.instrs);
        assert!(RemoteLayout::decode(&b, 5 * 24 + 1).is_err());
    }

    #[test]
    fn malformed_descriptions_are_errors_never_panics() {
        let int = Datatype::Basic(Basic::plain(ValueKind::Signed, 4));
        let v = Datatype::derived(Layout::vector(3, 2, 16, int).unwrap());
        let p = v.layout().unwrap().program();
        let mut good = vec![0u8; encoded_len(p)];
        encode(&mut good, p, 1, 40);
        for cut in 0..good.len() {
            assert!(RemoteLayout::decode(&good[..cut], 24).is_err());
        }
        for at in 0..good.len() {
            let mut bad = good.clone();
            bad[at] ^= 0xff;
            let _ = RemoteLayout::decode(&bad, 24);
        }
        let mut huge_body = good.clone();
        huge_body[HEADER + 24..HEADER + 32].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(RemoteLayout::decode(&huge_body, 24).is_err());
    }
}
