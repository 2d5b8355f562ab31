//! Attribute caching (MPI-3.1 section 6.7, and the MPI-1 names `MPI_Keyval_*`, `MPI_Attr_*`):
//! keyvals, set/get/delete on any object kind, and the copy and delete callbacks run at
//! `MPI_Comm_dup`/`MPI_Type_dup`, `MPI_Comm_free`/`MPI_Type_free` and `MPI_Finalize`.
//!
//! The callbacks are application code and may call MPI (a delete callback often frees what the
//! attribute points to and calls `MPI_Comm_get_attr`): every call below first copies what it
//! needs out of the tables, calls the callback holding no reference into them, and looks the
//! tables up again afterwards. A callback that returns an error code makes the MPI call fail
//! with exactly that code (as MPICH does); `MPI_Comm_dup` then frees the half-made duplicate.
//! Order: copies run in the order the attributes were set, deletions in the reverse order.

use super::env::{get_predefined, predefined_slot};
use super::util::write;
use crate::attr::{Keyval, Obj, ObjKind, KEYVAL_INVALID};
use crate::ffi::*;
use crate::handles;
use crate::state::Mpi;
use reflex_engine::{CommId, ErrorClass, MpiError, Result};
use std::ffi::{c_int, c_void};

/// `MPI_Comm_copy_attr_function` (also `MPI_Copy_function` and the datatype/window variants:
/// every MPICH handle is an `int`).
type CopyFn =
    unsafe extern "C" fn(c_int, c_int, *mut c_void, *mut c_void, *mut c_void, *mut c_int) -> c_int;
/// `MPI_Comm_delete_attr_function` (also `MPI_Delete_function`).
type DeleteFn = unsafe extern "C" fn(c_int, c_int, *mut c_void, *mut c_void) -> c_int;
/// MPICH's copy proxy: (callback, handle, keyval, extra state, attribute type, value, copy, flag).
type CopyProxy = unsafe extern "C" fn(
    *const c_void,
    c_int,
    c_int,
    *mut c_void,
    c_int,
    *mut c_void,
    *mut *mut c_void,
    *mut c_int,
) -> c_int;
/// MPICH's delete proxy: (callback, handle, keyval, attribute type, value, extra state).
type DeleteProxy =
    unsafe extern "C" fn(*const c_void, c_int, c_int, c_int, *mut c_void, *mut c_void) -> c_int;
/// The attribute type handed to proxies: an address-sized integer (`MPIR_ATTR_AINT`; MPICH's
/// Fortran proxies do not look at it).
const ATTR_AINT: c_int = 1;

fn callback_result(code: c_int) -> Result<()> {
    match code {
        SUCCESS => Ok(()),
        code => Err(crate::errors::existing(code)),
    }
}

fn predefined_error(keyval: c_int) -> MpiError {
    MpiError::new(
        ErrorClass::Keyval,
        format!("keyval {keyval:#x} is predefined and cannot be set, deleted or freed"),
    )
}

/// Runs the delete callback of an attribute (through the keyval's proxy, if it has one).
fn call_delete(kv: Keyval, handle: c_int, keyval: c_int, value: *mut c_void) -> Result<()> {
    if kv.delete.is_null() {
        return Ok(());
    }
    if let Some((_, proxy)) = kv.proxy {
        // SAFETY: registered by MPII_Keyval_set_proxy as a delete proxy (DeleteProxy).
        let p: DeleteProxy = unsafe { std::mem::transmute(proxy) };
        // SAFETY: the proxy is called with the callback it was registered for.
        return callback_result(unsafe {
            p(kv.delete, handle, keyval, ATTR_AINT, value, kv.extra)
        });
    }
    // SAFETY: the pointer was given as an MPI delete callback, whose C signature is DeleteFn.
    let f: DeleteFn = unsafe { std::mem::transmute(kv.delete) };
    // SAFETY: a C callback called with the arguments the standard defines.
    callback_result(unsafe { f(handle, keyval, value, kv.extra) })
}

/// Runs the copy callback of an attribute: the new value, or `None` when it is not copied.
fn call_copy(
    kv: Keyval,
    handle: c_int,
    keyval: c_int,
    value: *mut c_void,
) -> Result<Option<*mut c_void>> {
    if kv.copy.is_null() {
        return Ok(None);
    }
    let mut out: *mut c_void = std::ptr::null_mut();
    let mut flag: c_int = 0;
    let out_ptr: *mut *mut c_void = &mut out;
    let rc = match kv.proxy {
        Some((proxy, _)) => {
            // SAFETY: registered by MPII_Keyval_set_proxy as a copy proxy (CopyProxy).
            let p: CopyProxy = unsafe { std::mem::transmute(proxy) };
            let args = (kv.extra, ATTR_AINT, value, out_ptr);
            // SAFETY: the proxy gets its callback and valid pointers to two locals.
            unsafe {
                p(
                    kv.copy, handle, keyval, args.0, args.1, args.2, args.3, &mut flag,
                )
            }
        }
        None => {
            // SAFETY: the pointer was given as an MPI copy callback, whose C signature is CopyFn.
            let f: CopyFn = unsafe { std::mem::transmute(kv.copy) };
            // SAFETY: a C callback called with valid pointers to two locals.
            unsafe { f(handle, keyval, kv.extra, value, out_ptr.cast(), &mut flag) }
        }
    };
    callback_result(rc).map(|()| (flag != 0).then_some(out))
}

/// Deletes attribute `index` from `obj` (C handle `handle`), calling its delete callback.
fn delete_one(w: &mut Mpi, obj: Obj, handle: c_int, index: u32) -> Result<()> {
    let Some(value) = w.objects.attrs.get(obj, index) else {
        return Ok(());
    };
    let (kv, keyval) = (w.objects.attrs.keyval(index), w.objects.attrs.handle(index));
    call_delete(kv, handle, keyval, value)?;
    w.objects.attrs.remove(obj, index);
    Ok(())
}

/// Deletes every attribute of `obj`, the last set first (at free and finalize).
pub fn delete_all(w: &mut Mpi, obj: Obj, handle: c_int) -> Result<()> {
    while let Some((index, _)) = w.objects.attrs.last(obj) {
        delete_one(w, obj, handle, index)?;
    }
    Ok(())
}

/// Copies the attributes of `from` (C handle `handle`) onto `to` through their copy callbacks.
pub fn copy_all(w: &mut Mpi, from: Obj, handle: c_int, to: Obj) -> Result<()> {
    for (index, value) in w.objects.attrs.list(from) {
        let (kv, keyval) = (w.objects.attrs.keyval(index), w.objects.attrs.handle(index));
        if let Some(copied) = call_copy(kv, handle, keyval, value)? {
            w.objects.attrs.set(to, index, copied);
        }
    }
    Ok(())
}

/// `MPI_Finalize`'s first step: `MPI_COMM_SELF` is freed as if by `MPI_Comm_free` (its
/// attributes deleted, last set first), then `MPI_COMM_WORLD`'s attributes are deleted.
pub fn finalize_attrs(w: &mut Mpi) -> Result<()> {
    for id in [reflex_engine::COMM_SELF, reflex_engine::COMM_WORLD] {
        delete_all(w, Obj::Comm(id), handles::comm_handle(id))?;
    }
    Ok(())
}

/// `MPI_Comm_create_keyval`.
pub fn comm_create_keyval(
    w: &mut Mpi,
    comm_copy_attr_fn: *const c_void,
    comm_delete_attr_fn: *const c_void,
    comm_keyval: *mut c_int,
    extra_state: *mut c_void,
) -> Result<()> {
    let k = w.objects.attrs.create_keyval(
        ObjKind::Comm,
        comm_copy_attr_fn,
        comm_delete_attr_fn,
        extra_state,
    )?;
    write(comm_keyval, k);
    Ok(())
}

/// Frees the keyval `*keyval` of `kind` and sets it to `MPI_KEYVAL_INVALID`.
pub(crate) fn free_keyval(w: &mut Mpi, keyval: *mut c_int, kind: ObjKind) -> Result<()> {
    // SAFETY: the kinds check made sure the pointer is non-NULL.
    let k = unsafe { *keyval };
    if predefined_slot(k).is_some() {
        return Err(predefined_error(k));
    }
    let index = w.objects.attrs.lookup(k, kind)?;
    w.objects.attrs.free_keyval(index);
    write(keyval, KEYVAL_INVALID);
    Ok(())
}

/// `MPI_Comm_free_keyval`.
pub fn comm_free_keyval(w: &mut Mpi, comm_keyval: *mut c_int) -> Result<()> {
    free_keyval(w, comm_keyval, ObjKind::Comm)
}

/// `MPI_Type_create_keyval` (the attributes themselves: `type_query.rs`).
pub fn type_create_keyval(
    w: &mut Mpi,
    type_copy_attr_fn: *const c_void,
    type_delete_attr_fn: *const c_void,
    type_keyval: *mut c_int,
    extra_state: *mut c_void,
) -> Result<()> {
    let k = w.objects.attrs.create_keyval(
        ObjKind::Datatype,
        type_copy_attr_fn,
        type_delete_attr_fn,
        extra_state,
    )?;
    write(type_keyval, k);
    Ok(())
}

/// `MPI_Type_free_keyval`.
pub fn type_free_keyval(w: &mut Mpi, type_keyval: *mut c_int) -> Result<()> {
    free_keyval(w, type_keyval, ObjKind::Datatype)
}

/// Sets attribute `keyval` on `obj` (C handle `handle`, kind `kind`): a value already set is
/// deleted first (its callback runs).
pub fn set_attr(
    w: &mut Mpi,
    obj: Obj,
    handle: c_int,
    kind: ObjKind,
    keyval: c_int,
    value: *mut c_void,
) -> Result<()> {
    if predefined_slot(keyval).is_some() {
        return Err(predefined_error(keyval));
    }
    let index = w.objects.attrs.lookup(keyval, kind)?;
    if let Some(old) = w.objects.attrs.get(obj, index) {
        let kv = w.objects.attrs.keyval(index);
        call_delete(kv, handle, keyval, old)?;
    }
    w.objects.attrs.set(obj, index, value);
    Ok(())
}

/// Reads attribute `keyval` of `obj` into `*attribute_val`, setting `flag`.
pub fn get_attr(
    w: &mut Mpi,
    obj: Obj,
    kind: ObjKind,
    keyval: c_int,
    attribute_val: *mut c_void,
    flag: *mut c_int,
) -> Result<()> {
    if attribute_val.is_null() {
        return Err(MpiError::new(
            ErrorClass::Arg,
            "output argument attribute_val is NULL",
        ));
    }
    let index = w.objects.attrs.lookup_in_use(keyval, kind)?;
    let value = w.objects.attrs.get(obj, index);
    if let Some(v) = value {
        write(attribute_val.cast::<*mut c_void>(), v);
    }
    write(flag, c_int::from(value.is_some()));
    Ok(())
}

/// Deletes attribute `keyval` of `obj` (deleting one that is not set does nothing, as in MPICH).
pub fn delete_attr(
    w: &mut Mpi,
    obj: Obj,
    handle: c_int,
    kind: ObjKind,
    keyval: c_int,
) -> Result<()> {
    if predefined_slot(keyval).is_some() {
        return Err(predefined_error(keyval));
    }
    let index = w.objects.attrs.lookup_in_use(keyval, kind)?;
    delete_one(w, obj, handle, index)
}

/// `MPI_Comm_set_attr`.
pub fn comm_set_attr(
    w: &mut Mpi,
    comm: CommId,
    comm_keyval: c_int,
    attribute_val: *mut c_void,
) -> Result<()> {
    let (obj, handle) = (Obj::Comm(comm), handles::comm_handle(comm));
    set_attr(w, obj, handle, ObjKind::Comm, comm_keyval, attribute_val)
}

/// `MPI_Comm_get_attr`: user attributes and the predefined ones (`MPI_TAG_UB` ...).
pub fn comm_get_attr(
    w: &mut Mpi,
    comm: CommId,
    comm_keyval: c_int,
    attribute_val: *mut c_void,
    flag: *mut c_int,
) -> Result<()> {
    if let Some(slot) = predefined_slot(comm_keyval).filter(|_| !attribute_val.is_null()) {
        return get_predefined(w, slot, attribute_val, flag);
    }
    let obj = Obj::Comm(comm);
    get_attr(w, obj, ObjKind::Comm, comm_keyval, attribute_val, flag)
}

/// `MPI_Comm_delete_attr`.
pub fn comm_delete_attr(w: &mut Mpi, comm: CommId, comm_keyval: c_int) -> Result<()> {
    let (obj, handle) = (Obj::Comm(comm), handles::comm_handle(comm));
    delete_attr(w, obj, handle, ObjKind::Comm, comm_keyval)
}

/// `MPI_Keyval_create` (MPI-1 name; the callbacks have the same C signatures).
pub fn keyval_create(
    w: &mut Mpi,
    copy_fn: *const c_void,
    delete_fn: *const c_void,
    keyval: *mut c_int,
    extra_state: *mut c_void,
) -> Result<()> {
    comm_create_keyval(w, copy_fn, delete_fn, keyval, extra_state)
}

/// `MPI_Keyval_free` (MPI-1 name).
pub fn keyval_free(w: &mut Mpi, keyval: *mut c_int) -> Result<()> {
    comm_free_keyval(w, keyval)
}

/// `MPI_Attr_put` (MPI-1 name).
pub fn attr_put(
    w: &mut Mpi,
    comm: CommId,
    keyval: c_int,
    attribute_val: *mut c_void,
) -> Result<()> {
    comm_set_attr(w, comm, keyval, attribute_val)
}

/// `MPI_Attr_get` (MPI-1 name).
pub fn attr_get(
    w: &mut Mpi,
    comm: CommId,
    keyval: c_int,
    attribute_val: *mut c_void,
    flag: *mut c_int,
) -> Result<()> {
    comm_get_attr(w, comm, keyval, attribute_val, flag)
}

/// `MPI_Attr_delete` (MPI-1 name).
pub fn attr_delete(w: &mut Mpi, comm: CommId, keyval: c_int) -> Result<()> {
    comm_delete_attr(w, comm, keyval)
}
