//! MPI_T handles as tagged numbers in pointer clothing.
//!
//! MPICH's ABI types every MPI_T handle as a pointer to an opaque struct
//! (`MPI_T_cvar_handle` ...). Reflex never hands out real pointers: a handle is
//! `kind << 32 | number`, never dereferenced, so a stale or forged handle is recognised by
//! lookup instead of crashing, and the null handles (`0`) and `MPI_T_PVAR_ALL_HANDLES` (the
//! address of a private static, see `crate::extras`) can never collide with one (numbers start
//! at 1; the static's address is not a multiple of 2^32 with a kind in the high bits).

use crate::ffi::MPI_T_handle;

/// What a handle stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// `MPI_T_enum`: the number is the control variable's index + 1.
    Enum = 0xe1,
    /// `MPI_T_cvar_handle`.
    Cvar = 0xe2,
    /// `MPI_T_pvar_session`.
    Session = 0xe3,
    /// `MPI_T_pvar_handle`.
    Pvar = 0xe4,
}

const SHIFT: u32 = 32;

/// The handle of `kind` numbered `number` (at least 1).
pub fn make(kind: Kind, number: u32) -> MPI_T_handle {
    std::ptr::without_provenance_mut(((kind as usize) << SHIFT) | number as usize)
}

/// The number of `h` if it is a handle of `kind`.
pub fn number(h: MPI_T_handle, kind: Kind) -> Option<u32> {
    let v = h.addr();
    let number = (v & 0xffff_ffff) as u32;
    (v >> SHIFT == kind as usize && number != 0).then_some(number)
}

/// Whether `h` is `MPI_T_PVAR_ALL_HANDLES`.
pub fn is_all_handles(h: MPI_T_handle) -> bool {
    std::ptr::eq(h.cast_const().cast(), crate::extras::pvar_all_handles())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_round_trip_and_kinds_do_not_mix() {
        let h = make(Kind::Pvar, 7);
        assert_eq!(number(h, Kind::Pvar), Some(7));
        assert_eq!(number(h, Kind::Session), None);
        assert_eq!(number(std::ptr::null_mut(), Kind::Enum), None);
        assert_eq!(number(make(Kind::Cvar, 0), Kind::Cvar), None);
        assert!(!is_all_handles(h));
    }
}
