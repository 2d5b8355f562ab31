//! Message buffers: what a send reads and a receive writes, seen as packed streams, and the copy
//! counters that prove which path a message took.
//!
//! A message travels as its packed stream (the data bytes of its elements in typemap order). A
//! dense application buffer *is* its packed stream and is copied as one range; a non-contiguous
//! one ([`Typed`]) is gathered into (or scattered out of) the transport's cells at any offset by
//! the datatype cursor: one copy on each side, no temporary buffer (VIRTUS, `seed000c.md` P1).
//! Engine-owned buffers hold buffered sends, collective temporaries, and, when the experiment
//! switches `REFLEX_DIRECT_SEND`/`REFLEX_DIRECT_RECV` are off, the packed copy of a typed message.
//!
//! [`CopyStats`] counts every byte the engine copies, by kind, so tests can check that each path
//! copies exactly what it should.

use crate::datatype::cursor::Resume;
use crate::datatype::{typed, Datatype};
use reflex_base::buf::{RecvBuf, SendBuf};
use reflex_base::copy::copy_bytes;

/// Bytes the engine copied, by kind (cumulative since the engine started).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CopyStats {
    /// Copied out of application send buffers (into cells, chunks or temporary buffers).
    pub packed: u64,
    /// Copied into application receive buffers (from cells or temporary buffers).
    pub unpacked: u64,
    /// Copied between engine-owned temporary buffers and the transport (unexpected messages,
    /// staged sends and receives, buffered sends).
    pub staged: u64,
    /// Moved by single-copy reads of another process's memory (`process_vm_readv`).
    pub single_copy: u64,
}

impl CopyStats {
    /// Counters accumulated since `earlier` was taken.
    pub fn since(&self, earlier: &CopyStats) -> CopyStats {
        CopyStats {
            packed: self.packed - earlier.packed,
            unpacked: self.unpacked - earlier.unpacked,
            staged: self.staged - earlier.staged,
            single_copy: self.single_copy - earlier.single_copy,
        }
    }
}

/// Large temporary buffers kept for reuse, so that staged transfers do not pay for fresh pages
/// (page faults and zeroing) on every message.
#[derive(Debug, Default)]
pub(crate) struct Spares {
    bufs: Vec<Vec<u8>>,
    bytes: usize,
}

impl Spares {
    /// Buffers smaller than this are not worth keeping.
    const MIN: usize = 64 << 10;
    /// Most bytes kept.
    const MAX_BYTES: usize = 64 << 20;
    /// Most buffers kept.
    const MAX_COUNT: usize = 32;

    /// A buffer of `len` bytes (contents unspecified).
    pub(crate) fn take(&mut self, len: usize) -> Vec<u8> {
        if len < Self::MIN {
            return vec![0; len];
        }
        match self.bufs.iter().position(|b| b.capacity() >= len) {
            Some(i) => {
                let mut v = self.bufs.swap_remove(i);
                self.bytes -= v.capacity();
                // Shrinking is free; growing within the capacity zeroes only the difference.
                v.resize(len, 0);
                v
            }
            None => vec![0; len],
        }
    }

    /// Returns a buffer for reuse (dropped when small or when enough are kept).
    pub(crate) fn give(&mut self, v: Vec<u8>) {
        let cap = v.capacity();
        if cap >= Self::MIN
            && self.bufs.len() < Self::MAX_COUNT
            && self.bytes + cap <= Self::MAX_BYTES
        {
            self.bytes += cap;
            self.bufs.push(v);
        }
    }
}

/// `count` elements of a non-dense datatype in an application buffer that wraps exactly the
/// memory they touch ([`Datatype::span`]).
#[derive(Debug, Clone)]
pub(crate) struct Typed<B> {
    pub(crate) buf: B,
    pub(crate) dt: Datatype,
    pub(crate) count: usize,
    /// Where the last pack or unpack stopped (streamed messages continue from there).
    pub(crate) at: Option<Resume>,
}

impl<B> Typed<B> {
    /// `count` elements of `dt` in `buf`.
    pub(crate) fn new(buf: B, dt: &Datatype, count: usize) -> Self {
        Self {
            buf,
            dt: dt.clone(),
            count,
            at: None,
        }
    }
}

impl<B> Typed<B> {
    /// Bytes of the packed stream.
    pub(crate) fn packed_len(&self) -> usize {
        self.dt.packed_len(self.count).unwrap_or(0)
    }
}

/// Bytes a send reads.
#[derive(Debug)]
pub(crate) enum OutBuf {
    /// A dense application buffer (its own packed stream).
    User(SendBuf),
    /// A non-contiguous application buffer (boxed: a small request is cheaper to create and drop).
    Typed(Box<Typed<SendBuf>>),
    /// An engine-owned packed buffer.
    Owned(Vec<u8>),
}

impl OutBuf {
    /// Bytes of the packed stream.
    pub(crate) fn len(&self) -> usize {
        match self {
            OutBuf::User(b) => b.len(),
            OutBuf::Typed(t) => t.packed_len(),
            OutBuf::Owned(v) => v.len(),
        }
    }

    /// The packed stream as one slice, when it is stored that way.
    #[inline]
    pub(crate) fn contiguous(&self) -> Option<&[u8]> {
        match self {
            OutBuf::User(b) => Some(b.as_slice()),
            OutBuf::Typed(_) => None,
            OutBuf::Owned(v) => Some(v),
        }
    }

    /// Copies packed bytes `[offset, offset + dst.len())` into `dst`; returns how many there were.
    #[inline]
    pub(crate) fn pack(&mut self, offset: usize, dst: &mut [u8], stats: &mut CopyStats) -> usize {
        let n = match self {
            OutBuf::Typed(t) => {
                let n = typed::pack_resuming(&t.dt, t.count, &t.buf, offset, dst, &mut t.at);
                stats.packed += n as u64;
                return n;
            }
            OutBuf::User(b) => copy_from(b.as_slice(), offset, dst),
            OutBuf::Owned(v) => copy_from(v, offset, dst),
        };
        *self.copy_counter(stats) += n as u64;
        n
    }

    /// The counter that bytes copied out of this buffer go to: `staged` for an engine-owned
    /// copy, `packed` for the application's buffer.
    #[inline]
    pub(crate) fn copy_counter<'s>(&self, stats: &'s mut CopyStats) -> &'s mut u64 {
        match self {
            OutBuf::Owned(_) => &mut stats.staged,
            _ => &mut stats.packed,
        }
    }

    /// An engine-owned packed copy of the whole stream (buffered sends, `REFLEX_DIRECT_SEND=off`).
    pub(crate) fn packed_copy(&mut self, stats: &mut CopyStats, spares: &mut Spares) -> Vec<u8> {
        let mut v = spares.take(self.len());
        self.pack(0, &mut v, stats);
        v
    }
}

fn copy_from(src: &[u8], offset: usize, dst: &mut [u8]) -> usize {
    let n = dst.len().min(src.len().saturating_sub(offset));
    if n > 0 {
        copy_bytes(&mut dst[..n], &src[offset..offset + n]);
    }
    n
}

/// Bytes a receive writes.
#[derive(Debug)]
pub(crate) enum InBuf {
    /// A dense application buffer.
    User(RecvBuf),
    /// A non-contiguous application buffer (boxed, as in [`OutBuf`]).
    Typed(Box<Typed<RecvBuf>>),
    /// An engine-owned buffer (collective temporaries).
    Owned(Vec<u8>),
    /// Received into `tmp`, unpacked into `to` when the receive completes.
    Staged {
        tmp: Vec<u8>,
        to: Box<Typed<RecvBuf>>,
    },
}

impl InBuf {
    /// Packed bytes the buffer holds.
    pub(crate) fn capacity(&self) -> usize {
        match self {
            InBuf::User(b) => b.len(),
            InBuf::Typed(t) => t.packed_len(),
            InBuf::Owned(v) => v.len(),
            InBuf::Staged { tmp, .. } => tmp.len(),
        }
    }

    /// The packed bytes as one slice, when the buffer is stored that way.
    pub(crate) fn contiguous_mut(&mut self) -> Option<&mut [u8]> {
        match self {
            InBuf::User(b) => Some(b.as_mut_slice()),
            InBuf::Typed(_) => None,
            InBuf::Owned(v) | InBuf::Staged { tmp: v, .. } => Some(v),
        }
    }

    /// Copies `src`, the packed bytes from `offset` on, into the buffer; returns how many fitted.
    #[inline]
    pub(crate) fn unpack(&mut self, offset: usize, src: &[u8], stats: &mut CopyStats) -> usize {
        let (n, owned) = match self {
            InBuf::User(b) => (copy_into(b.as_mut_slice(), offset, src), false),
            InBuf::Typed(t) => (
                typed::unpack_resuming(&t.dt, t.count, &mut t.buf, offset, src, &mut t.at),
                false,
            ),
            InBuf::Owned(v) | InBuf::Staged { tmp: v, .. } => (copy_into(v, offset, src), true),
        };
        if owned {
            stats.staged += n as u64;
        } else {
            stats.unpacked += n as u64;
        }
        n
    }

    /// Completes a staged receive of `bytes` packed bytes: unpacks them into the application's
    /// buffer (nothing to do for the other kinds).
    #[inline]
    pub(crate) fn finish(&mut self, bytes: usize, stats: &mut CopyStats) {
        if let InBuf::Staged { tmp, to } = self {
            stats.unpacked += unpack_staged(tmp, to, bytes) as u64;
        }
    }
}

/// Unpacks the first `bytes` of `tmp` into `to`; returns the bytes unpacked. Out of line: the
/// eager receive of a dense buffer, which only tests for it, stays small.
#[inline(never)]
fn unpack_staged(tmp: &[u8], to: &mut Typed<RecvBuf>, bytes: usize) -> usize {
    typed::unpack(
        &to.dt,
        to.count,
        &mut to.buf,
        0,
        &tmp[..bytes.min(tmp.len())],
    )
}

#[inline]
fn copy_into(dst: &mut [u8], offset: usize, src: &[u8]) -> usize {
    let n = src.len().min(dst.len().saturating_sub(offset));
    if n > 0 {
        copy_bytes(&mut dst[offset..offset + n], &src[..n]);
    }
    n
}

/// Copies a whole message from `out` into `inb` within this process (a rendezvous with oneself);
/// returns the bytes that fitted. Non-contiguous on both sides goes through a bounce buffer.
pub(crate) fn transfer(out: &mut OutBuf, inb: &mut InBuf, stats: &mut CopyStats) -> usize {
    if let Some(src) = out.contiguous() {
        return inb.unpack(0, src, stats);
    }
    const BOUNCE: usize = 64 << 10;
    let mut bounce = vec![0u8; BOUNCE.min(out.len())];
    let (mut offset, mut copied) = (0, 0);
    while offset < out.len() {
        let n = out.pack(offset, &mut bounce, stats);
        copied += inb.unpack(offset, &bounce[..n], stats);
        offset += n;
    }
    copied
}
