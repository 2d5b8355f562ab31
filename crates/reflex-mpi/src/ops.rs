//! Reduction operation handles: MPICH's predefined values and the user-defined operations of
//! `MPI_Op_create` (MPI-3.1 §5.9.5).
//!
//! Predefined operations are `0x58000001..=0x5800000e` (`MPI_MAX` .. `MPI_NO_OP`) and map onto the
//! engine's [`ReduceOp`]. A user operation is a C function pointer and a commutativity flag; its
//! handle is MPICH's "direct operation" kind, `0x98000000 | slot`, so it never collides with a
//! predefined value or `MPI_OP_NULL`. The engine never calls user code: reductions with a user
//! operation are folded by the C layer (`imp/userop.rs`).

use crate::ffi::MPI_Op;
use crate::handles::OP_NULL;
use reflex_base::slots::Slots;
use reflex_engine::{ErrorClass, MpiError, ReduceOp, Result};
use std::ffi::c_void;

const USER: u32 = 0x9800_0000;
const SLOT_MASK: u32 = 0x00ff_ffff;

/// A user-defined operation.
#[derive(Debug, Clone, Copy)]
pub struct UserOp {
    /// The `MPI_User_function` (or `MPI_User_function_c`, see `large_count`).
    pub function: *const c_void,
    /// Whether the application declared it commutative.
    pub commute: bool,
    /// Made by `MPI_Op_create_c`: the function takes its count as an `MPI_Count *`.
    pub large_count: bool,
}

/// An operation argument checked to be valid.
#[derive(Debug, Clone, Copy)]
pub enum OpArg {
    /// A predefined operation (the engine applies it).
    Predefined(ReduceOp),
    /// A user operation, with its handle (the C layer applies it).
    User(MPI_Op, UserOp),
}

/// The user-defined operations.
#[derive(Debug, Default)]
pub struct OpTable {
    slots: Slots<UserOp>,
}

fn op_error(message: String) -> MpiError {
    MpiError::new(ErrorClass::Op, message)
}

/// The engine operation of a predefined operation handle.
#[inline]
pub fn predefined(h: MPI_Op) -> Option<ReduceOp> {
    use ReduceOp::*;
    const OPS: [ReduceOp; 14] = [
        Max, Min, Sum, Prod, Land, Band, Lor, Bor, Lxor, Bxor, Minloc, Maxloc, Replace, NoOp,
    ];
    OPS.get((h as u32).wrapping_sub(0x5800_0001) as usize)
        .copied()
}

impl OpTable {
    /// The operation a handle names.
    pub fn lookup(&self, h: MPI_Op) -> Result<OpArg> {
        if h == OP_NULL {
            return Err(op_error("MPI_OP_NULL is not a valid operation here".into()));
        }
        if let Some(op) = predefined(h) {
            return Ok(OpArg::Predefined(op));
        }
        let u = h as u32;
        let slot = (u & !SLOT_MASK == USER)
            .then(|| self.slots.get((u & SLOT_MASK) as usize).copied())
            .flatten();
        match slot {
            Some(op) => Ok(OpArg::User(h, op)),
            None if u & !SLOT_MASK == USER => Err(op_error(format!(
                "operation {h:#x} was freed (or never created)"
            ))),
            None => Err(op_error(format!("{h:#x} is not an operation handle"))),
        }
    }

    /// Registers a user operation; returns its handle.
    pub fn create(&mut self, op: UserOp) -> Result<MPI_Op> {
        let slot = self
            .slots
            .insert_below(op, SLOT_MASK as usize + 1)
            .map_err(|_| MpiError::new(ErrorClass::NoMem, "too many operations"))?;
        Ok((USER | slot as u32) as MPI_Op)
    }

    /// Frees a user operation (`MPI_ERR_OP` for a predefined one).
    pub fn free(&mut self, h: MPI_Op) -> Result<()> {
        match self.lookup(h)? {
            OpArg::Predefined(_) => Err(op_error(format!(
                "{h:#x} is a predefined operation and cannot be freed"
            ))),
            OpArg::User(..) => {
                self.slots.remove((h as u32 & SLOT_MASK) as usize);
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn predefined_and_user_handles() {
        let mut t = OpTable::default();
        assert!(matches!(
            t.lookup(0x5800_0003),
            Ok(OpArg::Predefined(ReduceOp::Sum))
        ));
        assert_eq!(t.lookup(OP_NULL).unwrap_err().class, ErrorClass::Op);
        assert_eq!(t.lookup(0x5800_0000).unwrap_err().class, ErrorClass::Op);
        let op = UserOp {
            function: std::ptr::null(),
            commute: false,
            large_count: false,
        };
        let h = t.create(op).unwrap();
        assert_eq!(h as u32 & 0xff00_0000, 0x9800_0000);
        assert!(matches!(t.lookup(h), Ok(OpArg::User(g, _)) if g == h));
        t.free(h).unwrap();
        assert!(t.lookup(h).unwrap_err().message.contains("freed"));
        assert!(t.free(0x5800_0001).is_err());
    }
}
