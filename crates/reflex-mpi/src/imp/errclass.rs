//! User-defined error classes, codes and strings (MPI-3.1 section 8.5), the MPI-1 names of the
//! communicator error-handler calls, and `MPI_Get_address`. The numbering of user-defined
//! classes and codes is `crate::errors`'s; `MPI_LASTUSEDCODE` follows it.

use super::env::{comm_create_errhandler, comm_get_errhandler, comm_set_errhandler};
use super::util::{c_string, write};
use crate::ffi::*;
use crate::state::Mpi;
use reflex_engine::{CommId, ErrorClass, MpiError, Result};
use std::ffi::{c_char, c_int, c_void};

/// `MPI_MAX_ERROR_STRING`.
const MAX_ERROR_STRING: usize = 512;

/// `MPI_Add_error_class`.
pub fn add_error_class(_w: &mut Mpi, errorclass: *mut c_int) -> Result<()> {
    write(errorclass, crate::errors::add_class());
    Ok(())
}

/// `MPI_Add_error_code`: a new code of a predefined or user-defined class.
pub fn add_error_code(_w: &mut Mpi, errorclass: c_int, errorcode: *mut c_int) -> Result<()> {
    write(errorcode, crate::errors::add_code(errorclass)?);
    Ok(())
}

/// `MPI_Add_error_string`: only user-defined classes and codes take a string.
pub fn add_error_string(_w: &mut Mpi, errorcode: c_int, string: *const c_char) -> Result<()> {
    let text = c_string(string, "string")?;
    if text.len() >= MAX_ERROR_STRING {
        return Err(MpiError::new(
            ErrorClass::Arg,
            format!(
                "error string of {} characters does not fit MPI_MAX_ERROR_STRING ({MAX_ERROR_STRING})",
                text.len()
            ),
        ));
    }
    crate::errors::set_string(errorcode, &text)
}

/// `MPI_Errhandler_create` (MPI-1 name of `MPI_Comm_create_errhandler`).
pub fn errhandler_create(
    w: &mut Mpi,
    comm_errhandler_fn: *const c_void,
    errhandler: *mut MPI_Errhandler,
) -> Result<()> {
    comm_create_errhandler(w, comm_errhandler_fn, errhandler)
}

/// `MPI_Errhandler_get` (MPI-1 name of `MPI_Comm_get_errhandler`).
pub fn errhandler_get(w: &mut Mpi, comm: CommId, errhandler: *mut MPI_Errhandler) -> Result<()> {
    comm_get_errhandler(w, comm, errhandler)
}

/// `MPI_Errhandler_set` (MPI-1 name of `MPI_Comm_set_errhandler`).
pub fn errhandler_set(w: &mut Mpi, comm: CommId, errhandler: MPI_Errhandler) -> Result<()> {
    comm_set_errhandler(w, comm, errhandler)
}

/// `MPI_Get_address`: the address itself (Reflex's `MPI_BOTTOM` is 0).
pub fn get_address(_w: &mut Mpi, location: *const c_void, address: *mut MPI_Aint) -> Result<()> {
    write(address, location as MPI_Aint);
    Ok(())
}

/// `MPI_Address` (MPI-1 name of `MPI_Get_address`).
pub fn address(w: &mut Mpi, location: *mut c_void, address: *mut MPI_Aint) -> Result<()> {
    get_address(w, location, address)
}
