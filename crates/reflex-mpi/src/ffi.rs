//! C types of MPICH's ABI as Rust sees them (values and layouts from MPICH's `mpi.h`).
#![allow(non_camel_case_types, non_snake_case)] // the C names, so generated shims read like mpi.h

use std::ffi::c_int;

/// `MPI_Comm`.
pub type MPI_Comm = c_int;
/// `MPI_Group`.
pub type MPI_Group = c_int;
/// `MPI_Datatype`.
pub type MPI_Datatype = c_int;
/// `MPI_Request`.
pub type MPI_Request = c_int;
/// `MPI_Op`.
pub type MPI_Op = c_int;
/// `MPI_Errhandler`.
pub type MPI_Errhandler = c_int;
/// `MPI_Info`.
pub type MPI_Info = c_int;
/// `MPI_Win`.
pub type MPI_Win = c_int;
/// `MPI_Message`.
pub type MPI_Message = c_int;
/// `MPI_Session` (MPI-4).
pub type MPI_Session = c_int;
/// `MPI_File` (a pointer in MPICH).
pub type MPI_File = *mut std::ffi::c_void;
/// `MPI_Aint`.
pub type MPI_Aint = isize;
/// `MPI_Offset`.
pub type MPI_Offset = i64;
/// `MPI_Count`.
pub type MPI_Count = i64;
/// `MPI_Fint`.
pub type MPI_Fint = c_int;
/// The opaque handles of the tool interface.
pub type MPI_T_handle = *mut std::ffi::c_void;

/// `MPI_Status`, MPICH layout: the byte count split in two ints, the low bit of the second being
/// the cancelled flag.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct MPI_Status {
    /// Low 32 bits of the byte count.
    pub count_lo: c_int,
    /// High bits of the byte count (shifted left by one) and the cancelled flag (bit 0).
    pub count_hi_and_cancelled: c_int,
    /// Source rank.
    pub MPI_SOURCE: c_int,
    /// Tag.
    pub MPI_TAG: c_int,
    /// Error code (multi-completion calls).
    pub MPI_ERROR: c_int,
}

const _: () = assert!(std::mem::size_of::<MPI_Status>() == 20);

/// `MPI_F08_status` (same layout, the Fortran 2008 binding's name).
pub type MPI_F08_status = MPI_Status;

/// `MPI_STATUS_IGNORE` / `MPI_STATUSES_IGNORE`: the address 1.
pub const STATUS_IGNORE: usize = 1;
/// `MPI_IN_PLACE`: the address -1.
pub const IN_PLACE: usize = usize::MAX;
/// `MPI_SUCCESS`.
pub const SUCCESS: c_int = 0;
/// `MPI_UNDEFINED`.
pub const UNDEFINED: c_int = -32766;
