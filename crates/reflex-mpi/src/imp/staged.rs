//! How a collective sees a buffer argument of any datatype: dense bytes in the user's memory, or
//! a packed copy (one adapter for every collective).
//!
//! The engine's collectives work on dense buffers of one wire type. A predefined type, or a
//! derived type whose data fills its extent with no gaps, is used in place. Any other derived
//! type is packed into a temporary buffer (its data in typemap order) before the collective and
//! unpacked from it afterwards, the collective then moving bytes (`MPI_BYTE`) or, for reductions,
//! `count × elements` of the one predefined type the derived type is made of; a type mixing
//! predefined types cannot be reduced by a predefined operation (`MPI_ERR_OP`, as MPICH says).
//! Value-index pairs with padding (`MPI_DOUBLE_INT`) are laid out at their extent in the copy,
//! which is what the reduction expects.

use super::pack::{pack_native, unpack_native};
use reflex_base::buf::{RecvBuf, SendBuf};
use reflex_engine::{Basic, Datatype, ErrorClass, MpiError, Result, ValueKind};
use std::ffi::c_void;

/// What the collective is for: moving data, or reducing it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Use {
    /// Bytes are moved (broadcast, gather).
    Move,
    /// Elements are combined by an operation.
    Reduce,
}

const BYTE: Basic = Basic::plain(ValueKind::Byte, 1);

/// One buffer argument as the engine sees it.
#[derive(Debug)]
pub struct Staged {
    user: *mut c_void,
    count: usize,
    dt: Datatype,
    /// The type the engine moves or reduces.
    pub wire: Datatype,
    /// Elements of `wire`.
    pub wire_count: usize,
    copy: Option<Vec<u8>>,
}

impl Staged {
    /// `count` elements of `dt` at `p`; `load` packs their current contents into the copy (an
    /// input, or an in-place buffer).
    pub fn new(
        p: *const c_void,
        count: usize,
        dt: &Datatype,
        usage: Use,
        load: bool,
    ) -> Result<Self> {
        let direct = |wire: Datatype, wire_count| Staged {
            user: p.cast_mut(),
            count,
            dt: dt.clone(),
            wire,
            wire_count,
            copy: None,
        };
        if let Datatype::Basic(_) = dt {
            return Ok(direct(dt.clone(), count));
        }
        let packed = dt.packed_len(count)?;
        let wire = Datatype::Basic(match usage {
            Use::Move => BYTE,
            Use::Reduce => dt.uniform().ok_or_else(|| {
                MpiError::new(
                    ErrorClass::Op,
                    "a predefined reduction operation needs a datatype made of one predefined \
                     type; this one mixes several",
                )
            })?,
        });
        let wire_count = packed / wire.size().max(1);
        if dt.is_dense() && wire.is_dense() {
            return Ok(direct(wire, wire_count));
        }
        let mut staged = direct(wire, wire_count);
        let mut copy = vec![0u8; staged.wire.contiguous_span(wire_count)?];
        if load {
            let mut packed_bytes = vec![0u8; packed];
            pack_native(p, count, dt, &mut packed_bytes)?;
            staged.place(&packed_bytes, &mut copy);
        }
        staged.copy = Some(copy);
        Ok(staged)
    }

    /// Lays packed bytes out in the wire layout (the same bytes unless the wire type has padding).
    fn place(&self, packed: &[u8], copy: &mut [u8]) {
        if self.wire.is_dense() {
            copy.copy_from_slice(packed);
            return;
        }
        // SAFETY: `copy` is a live, exclusively borrowed slice for the duration of this call.
        let mut dst = unsafe { RecvBuf::from_raw(copy.as_mut_ptr(), copy.len()) };
        reflex_engine::datatype::typed::unpack(&self.wire, self.wire_count, &mut dst, 0, packed);
    }

    /// The packed bytes of the wire layout in `copy`.
    fn gather_packed(&self, copy: &[u8]) -> Vec<u8> {
        if self.wire.is_dense() {
            return copy.to_vec();
        }
        let mut packed = vec![0u8; self.wire.size() * self.wire_count];
        // SAFETY: `copy` is a live slice for the duration of this call, only read.
        let src = unsafe { SendBuf::from_raw(copy.as_ptr(), copy.len()) };
        reflex_engine::datatype::typed::pack(&self.wire, self.wire_count, &src, 0, &mut packed);
        packed
    }

    fn bytes(&self) -> Result<(*mut u8, usize)> {
        let len = self.wire.contiguous_span(self.wire_count)?;
        Ok(match &self.copy {
            Some(c) => (c.as_ptr().cast_mut(), c.len()),
            None => (self.user.cast(), len),
        })
    }

    /// The buffer to read from.
    pub fn send(&self) -> Result<SendBuf> {
        let (p, len) = self.bytes()?;
        // SAFETY: either our own copy (alive as long as `self`, never reallocated) or the user's
        // buffer, which MPI requires to hold `count` elements of a dense type: `len` bytes.
        Ok(unsafe { SendBuf::from_raw(p, len) })
    }

    /// The buffer to write into.
    pub fn recv(&self) -> Result<RecvBuf> {
        let (p, len) = self.bytes()?;
        // SAFETY: as in `send`; the collective is the only writer while it runs.
        Ok(unsafe { RecvBuf::from_raw(p, len) })
    }

    /// Moves what the collective wrote into the copy back into the user's buffer.
    pub fn finish(self) -> Result<()> {
        let Some(copy) = &self.copy else {
            return Ok(());
        };
        let packed = self.gather_packed(copy);
        unpack_native(self.user, self.count, &self.dt, &packed)
    }
}
