//! The internal entry points of MPICH that its Fortran binding calls, so that Fortran programs
//! built with `mpif90.mpich` (MPICH's `libmpichfort.so.12` on top of Reflex's `libmpi.so.12`) can
//! use attributes.
//!
//! The binding's `MPI_COMM_GET_ATTR` and friends do not call the C functions: Fortran attribute
//! values are integers, not pointers, so they call `MPII_Comm_get_attr(comm, keyval, &value,
//! &flag, type)` and `MPII_Comm_set_attr(comm, keyval, value, type)` with the attribute type
//! `MPIR_ATTR_AINT` (1: `INTEGER(KIND=MPI_ADDRESS_KIND)`, MPI-2 names) or `MPIR_ATTR_INT` (3:
//! `INTEGER`, the MPI-1 `MPI_ATTR_GET`); and after creating a keyval it registers, with
//! `MPII_Keyval_set_proxy`, two proxies through which the library calls the Fortran copy and
//! delete callbacks (their arguments are passed by reference). The types and signatures were read
//! off MPICH 4.0.2's `libmpichfort.so.12` (the constants its wrappers pass). Getting a value:
//! one set from C comes back as its address, an integer set from Fortran as itself, and a
//! predefined attribute (`MPI_TAG_UB`, `MPI_WIN_SIZE` ...) as its value, not the address of it
//! as in C (MPI-3.1 §17.2.7).
//!
//! Generalized requests: the binding's `MPI_GREQUEST_START` (all three bindings) calls the C
//! `MPI_Grequest_start` with the Fortran subroutines as callbacks, then
//! `MPII_Grequest_set_lang_f77(request)`, after which they are called with Fortran conventions
//! (`imp/grequest.rs`). MPICH's `MPIX_` functions the binding also links against are in
//! `mpix.rs`.

use crate::ffi::{MPI_Aint, MPI_Comm, MPI_Datatype, MPI_Request, MPI_Win, SUCCESS};
use crate::generated::{
    PMPI_Comm_get_attr, PMPI_Comm_set_attr, PMPI_Type_get_attr, PMPI_Type_set_attr,
    PMPI_Win_get_attr, PMPI_Win_set_attr,
};
use std::ffi::{c_int, c_void};

/// `MPIR_ATTR_PTR`: the value is a C pointer.
const ATTR_PTR: c_int = 0;
/// `MPIR_ATTR_INT`: the value is a Fortran `INTEGER` (`MPI_Fint`).
const ATTR_INT: c_int = 3;

/// What a predefined attribute's C value (a pointer) stands for in Fortran.
#[derive(Clone, Copy)]
enum Predefined {
    /// Not predefined: the word itself.
    No,
    /// The address itself (`MPI_WIN_BASE`).
    Address,
    /// The `MPI_Aint` it points to (`MPI_WIN_SIZE`).
    Aint,
    /// The `int` it points to (every other one).
    Int,
}

/// Stores `word` (an attribute's value as the C binding returns it) into `out` as `ty` wants.
///
/// # Safety
/// `out` is valid for a write of the type `ty` names; `word` points to what `kind` says.
unsafe fn store(out: *mut c_void, word: *mut c_void, kind: Predefined, ty: c_int) {
    if ty == ATTR_PTR {
        // SAFETY: the caller's contract (a pointer-sized output).
        unsafe { out.cast::<*mut c_void>().write_unaligned(word) };
        return;
    }
    let value: MPI_Aint = match kind {
        Predefined::No | Predefined::Address => word as MPI_Aint,
        // SAFETY: the C binding returned the address of the attribute's value of that type.
        Predefined::Aint => unsafe { word.cast::<MPI_Aint>().read_unaligned() },
        // SAFETY: as above.
        Predefined::Int => (unsafe { word.cast::<c_int>().read_unaligned() }) as MPI_Aint,
    };
    // SAFETY: the caller's contract (an `int` for ATTR_INT, an `MPI_Aint` otherwise).
    unsafe {
        match ty {
            ATTR_INT => out.cast::<c_int>().write_unaligned(value as c_int),
            _ => out.cast::<MPI_Aint>().write_unaligned(value),
        }
    }
}

/// Gets an attribute through the C binding's `get`, then stores it as `ty` wants.
///
/// # Safety
/// `out` and `flag` are valid for writes (MPICH's binding passes its locals).
unsafe fn get_as(
    get: impl FnOnce(*mut c_void, *mut c_int) -> c_int,
    kind: Predefined,
    (out, flag, ty): (*mut c_void, *mut c_int, c_int),
) -> c_int {
    let mut word: *mut c_void = std::ptr::null_mut();
    let rc = get(std::ptr::from_mut(&mut word).cast(), flag);
    // SAFETY: `flag` is valid (the caller's contract) and was written by a successful get.
    if rc == SUCCESS && unsafe { flag.read() } != 0 {
        // SAFETY: the caller's contract; `word` is what the C binding returned for `kind`.
        unsafe { store(out, word, kind, ty) };
    }
    rc
}

/// The C keyval of a predefined attribute as `mpif.h` names it (one above C's: MPICH's
/// Fortran `MPI_TAG_UB` is 0x64400002, its C one 0x64400001), and what its C value stands for;
/// other keyvals unchanged.
fn fortran_keyval(keyval: c_int, kind: impl Fn(c_int) -> Predefined) -> (c_int, Predefined) {
    let c = keyval.wrapping_sub(1);
    match (kind(keyval), kind(c)) {
        (Predefined::No, Predefined::No) => (keyval, Predefined::No),
        (Predefined::No, known) => (c, known),
        (known, _) => (keyval, known),
    }
}

fn comm_kind(keyval: c_int) -> Predefined {
    match crate::imp::predefined_slot(keyval) {
        Some(_) => Predefined::Int,
        None => Predefined::No,
    }
}

fn win_kind(keyval: c_int) -> Predefined {
    use crate::imp::{WIN_BASE, WIN_CREATE_FLAVOR, WIN_DISP_UNIT, WIN_MODEL, WIN_SIZE};
    match keyval {
        WIN_BASE => Predefined::Address,
        WIN_SIZE => Predefined::Aint,
        WIN_DISP_UNIT | WIN_CREATE_FLAVOR | WIN_MODEL => Predefined::Int,
        _ => Predefined::No,
    }
}

/// `MPII_Comm_get_attr`: `MPI_Comm_get_attr` for a binding whose values are of type `ty`.
///
/// # Safety
/// `attribute_val` is valid for a write of `ty`, `flag` for an `int` (MPICH's binding passes
/// its locals).
#[no_mangle]
pub unsafe extern "C" fn MPII_Comm_get_attr(
    comm: MPI_Comm,
    keyval: c_int,
    attribute_val: *mut c_void,
    flag: *mut c_int,
    ty: c_int,
) -> c_int {
    let (keyval, kind) = fortran_keyval(keyval, comm_kind);
    // SAFETY: the function's contract; PMPI_Comm_get_attr checks its own arguments.
    let get = |v, f| unsafe { PMPI_Comm_get_attr(comm, keyval, v, f) };
    // SAFETY: the function's contract.
    unsafe { get_as(get, kind, (attribute_val, flag, ty)) }
}

/// `MPII_Type_get_attr`: as [`MPII_Comm_get_attr`], for datatypes.
///
/// # Safety
/// As for [`MPII_Comm_get_attr`].
#[no_mangle]
pub unsafe extern "C" fn MPII_Type_get_attr(
    datatype: MPI_Datatype,
    keyval: c_int,
    attribute_val: *mut c_void,
    flag: *mut c_int,
    ty: c_int,
) -> c_int {
    // SAFETY: the function's contract; PMPI_Type_get_attr checks its own arguments.
    let get = |v, f| unsafe { PMPI_Type_get_attr(datatype, keyval, v, f) };
    // SAFETY: the function's contract.
    unsafe { get_as(get, Predefined::No, (attribute_val, flag, ty)) }
}

/// `MPII_Win_get_attr`: as [`MPII_Comm_get_attr`], for windows.
///
/// # Safety
/// As for [`MPII_Comm_get_attr`].
#[no_mangle]
pub unsafe extern "C" fn MPII_Win_get_attr(
    win: MPI_Win,
    keyval: c_int,
    attribute_val: *mut c_void,
    flag: *mut c_int,
    ty: c_int,
) -> c_int {
    let (keyval, kind) = fortran_keyval(keyval, win_kind);
    // SAFETY: the function's contract; PMPI_Win_get_attr checks its own arguments.
    let get = |v, f| unsafe { PMPI_Win_get_attr(win, keyval, v, f) };
    // SAFETY: the function's contract.
    unsafe { get_as(get, kind, (attribute_val, flag, ty)) }
}

/// `MPII_Comm_set_attr`: `MPI_Comm_set_attr` with an integer value in the pointer's place.
///
/// # Safety
/// None beyond MPI's: the value is stored, never dereferenced.
#[no_mangle]
pub unsafe extern "C" fn MPII_Comm_set_attr(
    comm: MPI_Comm,
    keyval: c_int,
    attribute_val: *mut c_void,
    _ty: c_int,
) -> c_int {
    // SAFETY: PMPI_Comm_set_attr checks its arguments; the value is only stored.
    unsafe { PMPI_Comm_set_attr(comm, keyval, attribute_val) }
}

/// `MPII_Type_set_attr`: as [`MPII_Comm_set_attr`], for datatypes.
///
/// # Safety
/// As for [`MPII_Comm_set_attr`].
#[no_mangle]
pub unsafe extern "C" fn MPII_Type_set_attr(
    datatype: MPI_Datatype,
    keyval: c_int,
    attribute_val: *mut c_void,
    _ty: c_int,
) -> c_int {
    // SAFETY: as in MPII_Comm_set_attr.
    unsafe { PMPI_Type_set_attr(datatype, keyval, attribute_val) }
}

/// `MPII_Win_set_attr`: as [`MPII_Comm_set_attr`], for windows.
///
/// # Safety
/// As for [`MPII_Comm_set_attr`].
#[no_mangle]
pub unsafe extern "C" fn MPII_Win_set_attr(
    win: MPI_Win,
    keyval: c_int,
    attribute_val: *mut c_void,
    _ty: c_int,
) -> c_int {
    // SAFETY: as in MPII_Comm_set_attr.
    unsafe { PMPI_Win_set_attr(win, keyval, attribute_val) }
}

/// `MPII_Keyval_set_proxy`: the copy and delete callbacks of `keyval` are to be called through
/// these proxies (MPICH's Fortran binding, right after it created the keyval).
///
/// # Safety
/// The proxies have MPICH's proxy signatures (`imp/attr.rs`).
#[no_mangle]
pub unsafe extern "C" fn MPII_Keyval_set_proxy(
    keyval: c_int,
    copy_proxy: *const c_void,
    delete_proxy: *const c_void,
) {
    crate::call::world("MPII_Keyval_set_proxy", None, |w| {
        w.objects
            .attrs
            .set_proxy(keyval, (copy_proxy, delete_proxy))
    });
}

/// `MPII_Grequest_set_lang_f77`: the query, free and cancel callbacks of the generalized
/// request `request` are Fortran subroutines (MPICH's binding, right after it started it).
///
/// # Safety
/// None beyond MPI's: `request` is a handle, checked.
#[no_mangle]
pub unsafe extern "C" fn MPII_Grequest_set_lang_f77(request: MPI_Request) {
    crate::call::world("MPII_Grequest_set_lang_f77", None, |w| {
        crate::imp::grequest_set_fortran(w, request)
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known(k: (c_int, Predefined)) -> (c_int, &'static str) {
        let name = match k.1 {
            Predefined::No => "no",
            Predefined::Address => "address",
            Predefined::Aint => "aint",
            Predefined::Int => "int",
        };
        (k.0, name)
    }

    #[test]
    fn fortran_predefined_keyvals_map_to_c_ones() {
        // mpif.h: MPI_TAG_UB = 1681915906, MPI_WIN_BASE = 1711276034, MPI_WIN_SIZE = 1711276036.
        assert_eq!(
            known(fortran_keyval(1681915906, comm_kind)),
            (0x6440_0001, "int")
        );
        assert_eq!(
            known(fortran_keyval(0x6440_0001, comm_kind)),
            (0x6440_0001, "int")
        );
        assert_eq!(
            known(fortran_keyval(1711276034, win_kind)),
            (0x6600_0001, "address")
        );
        assert_eq!(
            known(fortran_keyval(1711276036, win_kind)),
            (0x6600_0003, "aint")
        );
        let user = 0xa440_0003_u32 as c_int;
        assert_eq!(known(fortran_keyval(user, comm_kind)), (user, "no"));
    }

    #[test]
    fn values_are_stored_as_the_binding_asks() {
        let five: c_int = 5;
        let word = std::ptr::from_ref(&five).cast_mut().cast::<c_void>();
        let mut aint: MPI_Aint = 0;
        // SAFETY: `aint` is an MPI_Aint and `word` points to an int.
        unsafe {
            store(
                std::ptr::from_mut(&mut aint).cast(),
                word,
                Predefined::Int,
                1,
            )
        };
        assert_eq!(aint, 5);
        let mut int: c_int = 0;
        let raw = 77 as *mut c_void;
        // SAFETY: `int` is an int; a plain value is not dereferenced.
        unsafe {
            store(
                std::ptr::from_mut(&mut int).cast(),
                raw,
                Predefined::No,
                ATTR_INT,
            )
        };
        assert_eq!(int, 77);
        let mut ptr: *mut c_void = std::ptr::null_mut();
        // SAFETY: `ptr` is pointer-sized.
        unsafe {
            store(
                std::ptr::from_mut(&mut ptr).cast(),
                word,
                Predefined::Int,
                ATTR_PTR,
            )
        };
        assert_eq!(ptr, word);
    }
}
