//! How a collective sees a buffer argument of any datatype: dense bytes in the user's memory, or
//! a packed copy (one adapter for every collective).
//!
//! The engine's collectives work on dense buffers of one wire type. A predefined type, or a
//! derived type whose data fills its extent with no gaps, is used in place. Any other derived
//! type is packed into a temporary buffer (its data in typemap order) before the collective and
//! unpacked from it afterwards, the collective then moving bytes (`MPI_BYTE`). Predefined
//! reduction operations are defined on predefined types only (MPI-3.1 §5.9.2): a derived type
//! with one is `MPI_ERR_OP` on every rank, as in MPICH and Open MPI (user-defined operations,
//! which do take derived types, are folded by `userop.rs`).

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
        if usage == Use::Reduce {
            return Err(MpiError::new(
                ErrorClass::Op,
                "predefined reduction operations apply to predefined datatypes only (MPI-3.1 \
                 5.9.2); use an operation from MPI_Op_create for a derived datatype",
            ));
        }
        let packed = dt.packed_len(count)?;
        let wire = Datatype::Basic(BYTE);
        if dt.is_dense() {
            return Ok(direct(wire, packed));
        }
        let mut copy = vec![0u8; packed];
        if load {
            pack_native(p, count, dt, &mut copy)?;
        }
        Ok(Staged {
            copy: Some(copy),
            ..direct(wire, packed)
        })
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
        unpack_native(self.user, self.count, &self.dt, copy)
    }
}
