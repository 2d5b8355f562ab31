//! Typed buffers: `count` elements of a datatype in an application buffer, moved as a packed stream.
//!
//! The C layer wraps exactly the memory the elements touch ([`Datatype::span`]): the buffer starts
//! at the lowest byte any element holds, which may lie before the address the application passed
//! (negative displacements or lower bounds). [`pack`] and [`unpack`] move any byte range of the
//! packed stream between such a buffer and contiguous bytes, the primitive under every transfer
//! (eager cells, streamed chunks, unexpected messages, `MPI_Pack`).

use super::cursor::{Placement, Resume};
use super::program::Program;
use super::Datatype;
use reflex_base::buf::{RecvBuf, SendBuf};
use reflex_base::copy::copy_bytes;

/// Where the application's address lies relative to the start of a buffer wrapping `count`
/// elements of `dt` (wrapping arithmetic: it lies after the start when the span begins below it,
/// "before" it when the data starts above the address).
fn origin(dt: &Datatype, count: usize) -> usize {
    dt.span(count)
        .map_or(0, |(lo, _)| lo.wrapping_neg() as usize)
}

/// Copies the packed bytes `[offset, offset + dst.len())` of `count` elements of `dt` in `src` into
/// `dst`; returns how many there were (fewer at the end of the stream).
pub fn pack(dt: &Datatype, count: usize, src: &SendBuf, offset: usize, dst: &mut [u8]) -> usize {
    pack_resuming(dt, count, src, offset, dst, &mut None)
}

/// Copies `src`, the packed bytes from `offset` on, into `count` elements of `dt` in `dst`;
/// returns how many fitted.
pub fn unpack(dt: &Datatype, count: usize, dst: &mut RecvBuf, offset: usize, src: &[u8]) -> usize {
    unpack_resuming(dt, count, dst, offset, src, &mut None)
}

/// [`pack`], continuing from the position `saved` by the previous call when it ends at `offset`
/// (a message streamed chunk by chunk walks its datatype once, not once per chunk).
pub fn pack_resuming(
    dt: &Datatype,
    count: usize,
    src: &SendBuf,
    offset: usize,
    dst: &mut [u8],
    saved: &mut Option<Resume>,
) -> usize {
    let bytes = src.as_slice();
    if dt.is_dense() {
        let n = dst.len().min(bytes.len().saturating_sub(offset));
        if n > 0 {
            copy_bytes(&mut dst[..n], &bytes[offset..offset + n]);
        }
        return n;
    }
    let Some(program) = dt.program() else {
        return 0;
    };
    placement(dt, count, &program).pack(bytes, offset, dst, saved)
}

/// [`unpack`], continuing from a saved position (see [`pack_resuming`]).
pub fn unpack_resuming(
    dt: &Datatype,
    count: usize,
    dst: &mut RecvBuf,
    offset: usize,
    src: &[u8],
    saved: &mut Option<Resume>,
) -> usize {
    let bytes = dst.as_mut_slice();
    if dt.is_dense() {
        let n = src.len().min(bytes.len().saturating_sub(offset));
        if n > 0 {
            copy_bytes(&mut bytes[offset..offset + n], &src[..n]);
        }
        return n;
    }
    let Some(program) = dt.program() else {
        return 0;
    };
    placement(dt, count, &program).unpack(bytes, offset, src, saved)
}

fn placement<'p>(dt: &Datatype, count: usize, program: &'p Program) -> Placement<'p> {
    Placement {
        program,
        count,
        extent: dt.extent(),
        origin: origin(dt, count),
    }
}

/// The `(offset in the buffer, len)` memory runs behind packed bytes `[offset, offset + limit)`.
pub fn runs(
    dt: &Datatype,
    count: usize,
    offset: usize,
    limit: usize,
    out: &mut Vec<(usize, usize)>,
) -> usize {
    if dt.is_dense() {
        let total = dt.packed_len(count).unwrap_or(0);
        let n = limit.min(total.saturating_sub(offset));
        if n > 0 {
            out.push((offset, n));
        }
        return n;
    }
    let Some(program) = dt.program() else {
        return 0;
    };
    placement(dt, count, &program).runs(offset, limit, out)
}
