//! Single-copy reads of a peer's memory for rendezvous (the kernel's cross-memory attach).
//!
//! The receiver reads the sender's data straight into its own buffer with `process_vm_readv`.
//! Either side may be non-contiguous: the sender's blocks come from the datatype description in
//! its RTS, the receiver's from its own datatype, and the two iovec lists are generated batch by
//! batch over the same range of the packed stream, so the kernel copies block to block with no
//! packing on either side.

use crate::core::Offer;
use crate::datatype::cursor::Placement;
use crate::datatype::typed;
use crate::error::{ErrorClass, MpiError, Result};
use crate::msgbuf::{CopyStats, InBuf};

/// Most packed bytes one batch of iovecs covers.
const BATCH: usize = 4 << 20;

/// Reads the first `min(len, capacity)` packed bytes of the message `offer` describes into `dst`;
/// returns how many were read.
pub(crate) fn read_offer(
    offer: &Offer,
    len: usize,
    dst: &mut InBuf,
    stats: &mut CopyStats,
) -> Result<usize> {
    let total = len.min(dst.capacity());
    let (mut remote, mut local) = (Vec::new(), Vec::new());
    let mut offset = 0;
    while offset < total {
        let n = BATCH.min(total - offset);
        remote.clear();
        remote_runs(offer, offset, n, &mut remote);
        let moved = match dst {
            InBuf::User(b) => reflex_shm::cma::read_into(offer.pid, &remote, b, &[(offset, n)]),
            InBuf::Typed(t) => {
                local.clear();
                typed::runs(&t.dt, t.count, offset, n, &mut local);
                reflex_shm::cma::read_into(offer.pid, &remote, &mut t.buf, &local)
            }
            InBuf::Owned(v) | InBuf::Staged { tmp: v, .. } => {
                reflex_shm::cma::read(offer.pid, &remote, &mut [&mut v[offset..offset + n]])
            }
        }
        .map_err(|e| failure(offer.pid, e.to_string()))?;
        if moved != n {
            return Err(failure(offer.pid, format!("moved {moved} of {n} bytes")));
        }
        stats.single_copy += n as u64;
        offset += n;
    }
    Ok(total)
}

/// The sender's `(address, len)` ranges behind packed bytes `[offset, offset + n)`.
fn remote_runs(offer: &Offer, offset: usize, n: usize, out: &mut Vec<(usize, usize)>) {
    match &offer.layout {
        None => out.push((offer.addr as usize + offset, n)),
        Some(l) => {
            let place = Placement {
                program: &l.program,
                count: l.count,
                extent: l.extent,
                origin: offer.addr as usize,
            };
            place.runs(offset, n, out);
        }
    }
}

fn failure(pid: u32, why: String) -> MpiError {
    MpiError::new(
        ErrorClass::Other,
        format!("single-copy read from process {pid} failed: {why}"),
    )
}
