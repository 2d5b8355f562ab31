//! MPICH's `MPIX_` extensions that its Fortran binding (`libmpichfort.so.12`) links against, so
//! that the binding loads on Reflex and a program that calls them gets an answer, not a "symbol
//! lookup error". Each `MPIX_X` forwards to `PMPIX_X`, as the generated MPI functions do.
//!
//! - Fault tolerance (ULFM: `MPIX_Comm_failure_ack`, `_failure_get_acked`, `_agree`,
//!   `_shrink`, `_revoke`): a rank that dies ends a Reflex job, so no survivor ever sees a failed
//!   process. Acknowledging does nothing, the acknowledged group is `MPI_GROUP_EMPTY`, agreement
//!   is the bitwise AND of the flags (an `MPI_Allreduce`), and shrinking duplicates the
//!   communicator. `MPIX_Comm_revoke` returns `MPI_ERR_UNSUPPORTED_OPERATION`: revoking must
//!   interrupt the pending operations of every other rank, which Reflex cannot do.
//! - GPU queries (`MPIX_GPU_query_support`, `MPIX_Query_{cuda,ze,hip}_support`): Reflex supports
//!   no GPU memory, so every answer is 0.
//! - `MPIX_Delete_error_class`, `_code`, `_string` (MPI-4.1's `MPI_Remove_error_*`): retire a
//!   user-defined error class, code or string (`errors.rs`).

use crate::ffi::{MPI_Comm, MPI_Group, SUCCESS};
use crate::generated::{PMPI_Allreduce, PMPI_Comm_test_inter};
use reflex_engine::{ErrorClass, MpiError};
use std::ffi::{c_int, c_void};

/// `MPI_INT`.
const INT: crate::ffi::MPI_Datatype = 0x4c00_0405;
/// `MPI_BAND`.
const BAND: crate::ffi::MPI_Op = 0x5800_0006;
/// `MPIX_GPU_SUPPORT_CUDA`, `_ZE` and `_HIP` (MPICH 4.0.2's `mpi.h`).
const GPU_TYPES: [c_int; 3] = [0, 1, 2];

/// Declares `MPIX_$name`, which forwards to `PMPIX_$name`, its implementation.
macro_rules! forward {
    ($mpix:ident => $pmpix:ident ($($arg:ident: $ty:ty),*)) => {
        #[doc = concat!("`", stringify!($mpix), "`: forwards to `", stringify!($pmpix), "`.")]
        ///
        /// # Safety
        #[doc = concat!("As for `", stringify!($pmpix), "`.")]
        #[no_mangle]
        pub unsafe extern "C" fn $mpix($($arg: $ty),*) -> c_int {
            // SAFETY: the same contract.
            unsafe { $pmpix($($arg),*) }
        }
    };
}

forward!(MPIX_Comm_failure_ack => PMPIX_Comm_failure_ack(comm: MPI_Comm));
forward!(MPIX_Comm_failure_get_acked => PMPIX_Comm_failure_get_acked(comm: MPI_Comm, failedgrp: *mut MPI_Group));
forward!(MPIX_Comm_agree => PMPIX_Comm_agree(comm: MPI_Comm, flag: *mut c_int));
forward!(MPIX_Comm_shrink => PMPIX_Comm_shrink(comm: MPI_Comm, newcomm: *mut MPI_Comm));
forward!(MPIX_Comm_revoke => PMPIX_Comm_revoke(comm: MPI_Comm));
forward!(MPIX_GPU_query_support => PMPIX_GPU_query_support(gpu_type: c_int, is_supported: *mut c_int));
forward!(MPIX_Query_cuda_support => PMPIX_Query_cuda_support());
forward!(MPIX_Query_ze_support => PMPIX_Query_ze_support());
forward!(MPIX_Query_hip_support => PMPIX_Query_hip_support());
forward!(MPIX_Delete_error_class => PMPIX_Delete_error_class(errorclass: c_int));
forward!(MPIX_Delete_error_code => PMPIX_Delete_error_code(errorcode: c_int));
forward!(MPIX_Delete_error_string => PMPIX_Delete_error_string(errorcode: c_int));

/// `PMPIX_Comm_failure_ack`: no process of `comm` has failed, so there is nothing to
/// acknowledge.
///
/// # Safety
/// None beyond MPI's: `comm` is checked.
#[no_mangle]
pub unsafe extern "C" fn PMPIX_Comm_failure_ack(comm: MPI_Comm) -> c_int {
    crate::call::world("MPIX_Comm_failure_ack", Some(comm), |w| {
        crate::kinds::comm(w, comm).map(drop)
    })
}

/// `PMPIX_Comm_failure_get_acked`: the acknowledged failed processes, always none.
///
/// # Safety
/// `failedgrp` is NULL (an error) or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn PMPIX_Comm_failure_get_acked(
    comm: MPI_Comm,
    failedgrp: *mut MPI_Group,
) -> c_int {
    crate::call::world("MPIX_Comm_failure_get_acked", Some(comm), |w| {
        crate::kinds::comm(w, comm)?;
        crate::kinds::out_ptr(failedgrp, "failedgrp")?;
        // SAFETY: checked non-NULL; valid for a write by the caller's contract.
        unsafe { failedgrp.write(crate::handles::GROUP_EMPTY) };
        Ok(())
    })
}

/// `PMPIX_Comm_agree`: `*flag` becomes the bitwise AND of every process's `*flag`
/// (collective over an intracommunicator).
///
/// # Safety
/// `flag` is NULL (an error) or valid for a read and a write.
#[no_mangle]
pub unsafe extern "C" fn PMPIX_Comm_agree(comm: MPI_Comm, flag: *mut c_int) -> c_int {
    let checked = crate::call::world("MPIX_Comm_agree", Some(comm), |w| {
        crate::kinds::comm(w, comm)?;
        crate::kinds::out_ptr(flag, "flag")?;
        let mut inter = 0;
        // SAFETY: a valid communicator and a local output.
        unsafe { PMPI_Comm_test_inter(comm, &mut inter) };
        match inter {
            0 => Ok(()),
            _ => Err(MpiError::new(
                ErrorClass::Comm,
                "MPIX_Comm_agree: an intercommunicator is not supported (only intracommunicators)"
                    .to_string(),
            )),
        }
    });
    if checked != SUCCESS {
        return checked;
    }
    // SAFETY: `flag` is one int, read and written in place (MPI_IN_PLACE is the address -1).
    unsafe {
        PMPI_Allreduce(
            crate::ffi::IN_PLACE as *const c_void,
            flag.cast(),
            1,
            INT,
            BAND,
            comm,
        )
    }
}

/// `PMPIX_Comm_shrink`: a new communicator of the processes of `comm` that have not failed,
/// which is all of them (`MPI_Comm_dup` without the attributes and info).
///
/// # Safety
/// `newcomm` is NULL (an error) or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn PMPIX_Comm_shrink(comm: MPI_Comm, newcomm: *mut MPI_Comm) -> c_int {
    crate::call::world("MPIX_Comm_shrink", Some(comm), |w| {
        let id = crate::kinds::comm(w, comm)?;
        crate::kinds::out_ptr(newcomm, "newcomm")?;
        let new = w.world.engine.comm_dup(id)?;
        // SAFETY: checked non-NULL; valid for a write by the caller's contract.
        unsafe { newcomm.write(crate::handles::comm_handle(new)) };
        Ok(())
    })
}

/// `PMPIX_Comm_revoke`: not supported (see the module documentation).
///
/// # Safety
/// None beyond MPI's: `comm` is checked.
#[no_mangle]
pub unsafe extern "C" fn PMPIX_Comm_revoke(comm: MPI_Comm) -> c_int {
    crate::call::world("MPIX_Comm_revoke", Some(comm), |w| {
        crate::kinds::comm(w, comm)?;
        Err(MpiError::new(
            ErrorClass::UnsupportedOperation,
            "MPIX_Comm_revoke: Reflex does not support revoking communicators (a failed rank \
             ends the job instead)"
                .to_string(),
        ))
    })
}

/// `PMPIX_GPU_query_support`: whether `gpu_type`'s memory may be passed to MPI: never.
///
/// # Safety
/// `is_supported` is NULL (an error) or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn PMPIX_GPU_query_support(
    gpu_type: c_int,
    is_supported: *mut c_int,
) -> c_int {
    crate::call::world("MPIX_GPU_query_support", None, |_| {
        crate::kinds::out_ptr(is_supported, "is_supported")?;
        if !GPU_TYPES.contains(&gpu_type) {
            return Err(MpiError::new(
                ErrorClass::Arg,
                format!("MPIX_GPU_query_support: {gpu_type} is not an MPIX_GPU_SUPPORT_ value"),
            ));
        }
        // SAFETY: checked non-NULL; valid for a write by the caller's contract.
        unsafe { is_supported.write(0) };
        Ok(())
    })
}

/// `PMPIX_Query_cuda_support`: 0, no CUDA memory.
///
/// # Safety
/// None.
#[no_mangle]
pub unsafe extern "C" fn PMPIX_Query_cuda_support() -> c_int {
    0
}

/// `PMPIX_Query_ze_support`: 0, no Level Zero memory.
///
/// # Safety
/// None.
#[no_mangle]
pub unsafe extern "C" fn PMPIX_Query_ze_support() -> c_int {
    0
}

/// `PMPIX_Query_hip_support`: 0, no HIP memory.
///
/// # Safety
/// None.
#[no_mangle]
pub unsafe extern "C" fn PMPIX_Query_hip_support() -> c_int {
    0
}

/// `PMPIX_Delete_error_class`: removes a user-defined error class that has no codes left.
///
/// # Safety
/// None: the class is checked.
#[no_mangle]
pub unsafe extern "C" fn PMPIX_Delete_error_class(errorclass: c_int) -> c_int {
    crate::call::world("MPIX_Delete_error_class", None, |_| {
        crate::errors::remove_class(errorclass)
    })
}

/// `PMPIX_Delete_error_code`: removes a user-defined error code.
///
/// # Safety
/// None: the code is checked.
#[no_mangle]
pub unsafe extern "C" fn PMPIX_Delete_error_code(errorcode: c_int) -> c_int {
    crate::call::world("MPIX_Delete_error_code", None, |_| {
        crate::errors::remove_code(errorcode)
    })
}

/// `PMPIX_Delete_error_string`: the string of a user-defined class or code becomes empty.
///
/// # Safety
/// None: the code is checked.
#[no_mangle]
pub unsafe extern "C" fn PMPIX_Delete_error_string(errorcode: c_int) -> c_int {
    crate::call::world("MPIX_Delete_error_string", None, |_| {
        crate::errors::remove_string(errorcode)
    })
}
