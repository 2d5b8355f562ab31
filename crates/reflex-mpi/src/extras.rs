//! The data objects and helper functions that MPICH's `mpi.h` names besides the MPI functions
//! (listed with their sizes in `abi/extra_symbols.txt`). Programs compiled against MPICH's header
//! reference these symbols, so `libmpi.so.12` must export them with the same sizes: a non-PIE
//! executable copies data objects into its own `.bss` using the size recorded at link time.
#![allow(non_upper_case_globals)] // reason: the C names are the ABI

use crate::ffi::{MPI_Comm, MPI_Fint, MPI_Status};
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicPtr, Ordering};

/// A word whose address stands for "no weights" / "empty weights" / "all pvar handles".
#[repr(transparent)]
pub struct Sentinel(*const c_int);

// SAFETY: the pointers are constant addresses of private statics, never written through.
unsafe impl Sync for Sentinel {}

static UNWEIGHTED_OBJ: c_int = 0;
static WEIGHTS_EMPTY_OBJ: c_int = 0;
static PVAR_ALL_HANDLES_OBJ: c_int = 0;

/// `MPI_UNWEIGHTED`.
#[no_mangle]
pub static MPI_UNWEIGHTED: Sentinel = Sentinel(&UNWEIGHTED_OBJ);
/// `MPI_WEIGHTS_EMPTY`.
#[no_mangle]
pub static MPI_WEIGHTS_EMPTY: Sentinel = Sentinel(&WEIGHTS_EMPTY_OBJ);
/// `MPI_T_PVAR_ALL_HANDLES`.
#[no_mangle]
pub static MPI_T_PVAR_ALL_HANDLES: Sentinel = Sentinel(&PVAR_ALL_HANDLES_OBJ);

/// The address `MPI_T_PVAR_ALL_HANDLES` stands for.
pub fn pvar_all_handles() -> *const c_int {
    &PVAR_ALL_HANDLES_OBJ
}

/// Whether a weights argument is `MPI_UNWEIGHTED`.
pub fn is_unweighted(p: *const c_int) -> bool {
    std::ptr::eq(p, &UNWEIGHTED_OBJ)
}

/// A Fortran status sentinel: a pointer variable whose value is the address that stands for
/// "ignore the status". It is writable data, not a constant: MPICH's Fortran binding
/// (`libmpichfort.so.12`, which Fortran programs built with `mpif90.mpich` load beside
/// `libmpi.so.12`) stores the addresses of its own Fortran objects into `MPI_F_STATUS_IGNORE` and
/// `MPI_F_STATUSES_IGNORE` when it initialises (`mpirinitc_`), so a read-only object would crash
/// every such program at start-up.
#[repr(transparent)]
pub struct StatusSentinel(AtomicPtr<c_void>);

impl StatusSentinel {
    const fn new(at: *const c_void) -> Self {
        Self(AtomicPtr::new(at.cast_mut()))
    }

    /// The address this sentinel stands for now.
    pub fn get(&self) -> *const c_void {
        self.0.load(Ordering::Relaxed)
    }
}

/// `MPIR_F08_MPI_STATUS_IGNORE_OBJ`.
#[no_mangle]
pub static MPIR_F08_MPI_STATUS_IGNORE_OBJ: MPI_Status = MPI_Status {
    count_lo: 0,
    count_hi_and_cancelled: 0,
    MPI_SOURCE: 0,
    MPI_TAG: 0,
    MPI_ERROR: 0,
};
/// `MPIR_F08_MPI_STATUSES_IGNORE_OBJ`.
#[no_mangle]
pub static MPIR_F08_MPI_STATUSES_IGNORE_OBJ: [MPI_Status; 1] = [MPI_Status {
    count_lo: 0,
    count_hi_and_cancelled: 0,
    MPI_SOURCE: 0,
    MPI_TAG: 0,
    MPI_ERROR: 0,
}];
/// `MPIR_F08_MPI_IN_PLACE`.
#[no_mangle]
pub static MPIR_F08_MPI_IN_PLACE: c_int = 0;
/// `MPIR_F08_MPI_BOTTOM`.
#[no_mangle]
pub static MPIR_F08_MPI_BOTTOM: c_int = 0;

static F_STATUS_IGNORE_OBJ: [MPI_Fint; 5] = [0; 5];
static F_STATUSES_IGNORE_OBJ: [MPI_Fint; 5] = [0; 5];

/// `MPI_F_STATUS_IGNORE`.
#[no_mangle]
pub static MPI_F_STATUS_IGNORE: StatusSentinel =
    StatusSentinel::new(F_STATUS_IGNORE_OBJ.as_ptr().cast());
/// `MPI_F_STATUSES_IGNORE`.
#[no_mangle]
pub static MPI_F_STATUSES_IGNORE: StatusSentinel =
    StatusSentinel::new(F_STATUSES_IGNORE_OBJ.as_ptr().cast());
/// `MPI_F08_STATUS_IGNORE`.
#[no_mangle]
pub static MPI_F08_STATUS_IGNORE: StatusSentinel =
    StatusSentinel::new((&MPIR_F08_MPI_STATUS_IGNORE_OBJ as *const MPI_Status).cast());
/// `MPI_F08_STATUSES_IGNORE`.
#[no_mangle]
pub static MPI_F08_STATUSES_IGNORE: StatusSentinel =
    StatusSentinel::new(MPIR_F08_MPI_STATUSES_IGNORE_OBJ.as_ptr().cast());

/// `MPIR_Dup_fn` (behind `MPI_DUP_FN` and friends): copies the attribute value and keeps it.
///
/// # Safety
/// `attribute_val_out` and `flag` must be writable, as the MPI standard requires of copy callbacks.
#[no_mangle]
pub unsafe extern "C" fn MPIR_Dup_fn(
    _oldcomm: MPI_Comm,
    _keyval: c_int,
    _extra_state: *mut c_void,
    attribute_val_in: *mut c_void,
    attribute_val_out: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    // SAFETY: per the function contract, both outputs are valid for writes.
    unsafe {
        attribute_val_out
            .cast::<*mut c_void>()
            .write(attribute_val_in);
        flag.write(1);
    }
    0
}
