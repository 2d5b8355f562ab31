//! The C functions of `bsp.h`. Each one converts its C arguments (pointers, `int`s, the caller's
//! `__FILE__`/`__LINE__`) and hands over to [`runtime::with_run`], which reports errors and
//! panics with the call's name and location; nothing unwinds into C.
//!
//! The `_at` variants are what `bsp.h`'s macros call; the plain names (`bsp_sync`, `bsp_put`,
//! ...) are exported too, for callers that bypass the macros (function pointers, other
//! languages), and behave the same without a source location.

use crate::loc::{usage, BspResult, Loc};
use crate::ops::{buffer, non_negative};
use crate::runtime::{self, with_run};
use crate::sync::{self, SyncCall};
use std::ffi::{c_char, c_double, c_int, c_void, CStr};

/// The C bytes at `ptr` as a slice.
///
/// # Safety
/// `ptr..ptr+len` is readable for the life of the slice (any pointer when `len` is 0).
unsafe fn slice<'a>(ptr: *const c_void, len: usize) -> &'a [u8] {
    if len == 0 || ptr.is_null() {
        return &[];
    }
    // SAFETY: the caller's contract.
    unsafe { std::slice::from_raw_parts(ptr.cast(), len) }
}

/// Copies `src` to the C buffer `dst`.
///
/// # Safety
/// `dst` is writable for `src.len()` bytes (may be null when `src` is empty).
unsafe fn copy_out(src: &[u8], dst: *mut c_void) {
    if !src.is_empty() {
        // SAFETY: the caller's contract; a C buffer never overlaps BSPlib's own memory.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst.cast(), src.len()) };
    }
}

/// Stores `v` through a C out-pointer (ignored when null).
///
/// # Safety
/// `out` is null or writable.
unsafe fn store(out: *mut c_int, v: usize) -> BspResult {
    let Ok(v) = c_int::try_from(v) else {
        return usage(format!("{v} does not fit in an int"));
    };
    if !out.is_null() {
        // SAFETY: the caller's contract.
        unsafe { *out = v };
    }
    Ok(())
}

/// `bsp_begin(maxprocs)`: starts the SPMD section on at most `maxprocs` processes.
///
/// # Safety
/// `file` is null or a static string (`__FILE__`).
#[no_mangle]
pub unsafe extern "C" fn bsp_begin_at(maxprocs: c_int, file: *const c_char, line: c_int) {
    // SAFETY: the caller's contract.
    runtime::begin(maxprocs, unsafe { Loc::from_c(file, line) });
}

/// `bsp_end()`: ends the SPMD section; afterwards only pid 0 continues.
///
/// # Safety
/// `file` is null or a static string (`__FILE__`).
#[no_mangle]
pub unsafe extern "C" fn bsp_end_at(file: *const c_char, line: c_int) {
    // SAFETY: the caller's contract.
    runtime::end(unsafe { Loc::from_c(file, line) });
}

/// `bsp_init(spmd, argc, argv)`: the first statement of `main` when `bsp_begin` is not in `main`.
///
/// # Safety
/// `argc`/`argv` are `main`'s; `spmd` is null or a function.
#[no_mangle]
pub unsafe extern "C" fn bsp_init(
    spmd: Option<extern "C" fn()>,
    argc: c_int,
    argv: *mut *mut c_char,
) {
    // SAFETY: the caller's contract.
    unsafe { runtime::init(spmd, argc, argv) };
}

/// `bsp_pid()`.
#[no_mangle]
pub extern "C" fn bsp_pid() -> c_int {
    runtime::pid() as c_int
}

/// `bsp_nprocs()`.
#[no_mangle]
pub extern "C" fn bsp_nprocs() -> c_int {
    runtime::nprocs() as c_int
}

/// `bsp_time()`: seconds since `bsp_begin` (a monotonic clock).
#[no_mangle]
pub extern "C" fn bsp_time() -> c_double {
    with_run("bsp_time", Loc::default(), |bsp| {
        Ok(bsp.start.elapsed().as_secs_f64())
    })
}

/// `bsp_sync()`.
///
/// # Safety
/// `file` is null or a static string (`__FILE__`).
#[no_mangle]
pub unsafe extern "C" fn bsp_sync_at(file: *const c_char, line: c_int) {
    // SAFETY: the caller's contract.
    let at = unsafe { Loc::from_c(file, line) };
    with_run("bsp_sync", at, |bsp| sync::sync(bsp, at, SyncCall::Sync));
}

/// `bsp_push_reg(ident, size)`.
///
/// # Safety
/// `ident..ident+size` stays valid memory while registered; `file` as for `bsp_sync_at`.
#[no_mangle]
pub unsafe extern "C" fn bsp_push_reg_at(
    ident: *const c_void,
    size: c_int,
    file: *const c_char,
    line: c_int,
) {
    // SAFETY: the caller's contract.
    let at = unsafe { Loc::from_c(file, line) };
    with_run("bsp_push_reg", at, |bsp| {
        bsp.push_reg(ident as usize, size, at)
    });
}

/// `bsp_pop_reg(ident)`.
///
/// # Safety
/// `file` as for `bsp_sync_at`.
#[no_mangle]
pub unsafe extern "C" fn bsp_pop_reg_at(ident: *const c_void, file: *const c_char, line: c_int) {
    // SAFETY: the caller's contract.
    let at = unsafe { Loc::from_c(file, line) };
    with_run("bsp_pop_reg", at, |bsp| bsp.pop_reg(ident as usize, at));
}

/// `bsp_put(pid, src, dst, offset, nbytes)`: `src` is copied before the call returns.
///
/// # Safety
/// `src` is readable for `nbytes`; `file` as for `bsp_sync_at`.
#[no_mangle]
pub unsafe extern "C" fn bsp_put_at(
    pid: c_int,
    src: *const c_void,
    dst: *mut c_void,
    offset: c_int,
    nbytes: c_int,
    file: *const c_char,
    line: c_int,
) {
    // SAFETY: the caller's contract.
    let at = unsafe { Loc::from_c(file, line) };
    with_run("bsp_put", at, |bsp| {
        let (pid, offset, n) = bsp.transfer_args(pid, offset, nbytes)?;
        let src = buffer("the source", src as usize, n)?;
        // SAFETY: the caller's contract; checked non-null when n > 0.
        bsp.put(
            pid,
            unsafe { slice(src as *const c_void, n) },
            dst as usize,
            offset,
            at,
        )
    });
}

/// `bsp_get(pid, src, offset, dst, nbytes)`: `dst` receives the value at the sync.
///
/// # Safety
/// `dst` is writable for `nbytes` until the sync; `file` as for `bsp_sync_at`.
#[no_mangle]
pub unsafe extern "C" fn bsp_get_at(
    pid: c_int,
    src: *const c_void,
    offset: c_int,
    dst: *mut c_void,
    nbytes: c_int,
    file: *const c_char,
    line: c_int,
) {
    // SAFETY: the caller's contract.
    let at = unsafe { Loc::from_c(file, line) };
    with_run("bsp_get", at, |bsp| {
        let (pid, offset, n) = bsp.transfer_args(pid, offset, nbytes)?;
        let dst = buffer("the destination", dst as usize, n)?;
        bsp.get(pid, src as usize, offset, dst, n)
    });
}

/// `bsp_hpput(pid, src, dst, offset, nbytes)`: unbuffered; `src` must not change before the sync.
///
/// # Safety
/// `src` is readable for `nbytes` until the sync; `file` as for `bsp_sync_at`.
#[no_mangle]
pub unsafe extern "C" fn bsp_hpput_at(
    pid: c_int,
    src: *const c_void,
    dst: *mut c_void,
    offset: c_int,
    nbytes: c_int,
    file: *const c_char,
    line: c_int,
) {
    // SAFETY: the caller's contract.
    let at = unsafe { Loc::from_c(file, line) };
    with_run("bsp_hpput", at, |bsp| {
        let (pid, offset, n) = bsp.transfer_args(pid, offset, nbytes)?;
        let src = buffer("the source", src as usize, n)?;
        // SAFETY: the caller's contract.
        unsafe { bsp.hpput(pid, src, dst as usize, offset, n, at) }
    });
}

/// `bsp_hpget(pid, src, offset, dst, nbytes)`: unbuffered; `dst` is defined after the sync.
///
/// # Safety
/// `dst` is writable for `nbytes` until the sync; `file` as for `bsp_sync_at`.
#[no_mangle]
pub unsafe extern "C" fn bsp_hpget_at(
    pid: c_int,
    src: *const c_void,
    offset: c_int,
    dst: *mut c_void,
    nbytes: c_int,
    file: *const c_char,
    line: c_int,
) {
    // SAFETY: the caller's contract.
    let at = unsafe { Loc::from_c(file, line) };
    with_run("bsp_hpget", at, |bsp| {
        let (pid, offset, n) = bsp.transfer_args(pid, offset, nbytes)?;
        let dst = buffer("the destination", dst as usize, n)?;
        // SAFETY: the caller's contract.
        unsafe { bsp.hpget(pid, src as usize, offset, dst, n, at) }
    });
}

/// `bsp_send(pid, tag, payload, nbytes)`: the tag has the current tag size; both are copied.
///
/// # Safety
/// `tag` is readable for the tag size, `payload` for `nbytes`; `file` as for `bsp_sync_at`.
#[no_mangle]
pub unsafe extern "C" fn bsp_send_at(
    pid: c_int,
    tag: *const c_void,
    payload: *const c_void,
    nbytes: c_int,
    file: *const c_char,
    line: c_int,
) {
    // SAFETY: the caller's contract.
    let at = unsafe { Loc::from_c(file, line) };
    with_run("bsp_send", at, |bsp| {
        let (pid, n) = (bsp.check_pid(pid)?, non_negative("nbytes", nbytes)?);
        let t = bsp.bsmp.tagsize();
        buffer("the tag", tag as usize, t)?;
        buffer("the payload", payload as usize, n)?;
        // SAFETY: the caller's contract; both checked non-null when their length is not 0.
        let (tag, payload) = unsafe { (slice(tag, t), slice(payload, n)) };
        bsp.bsmp.send(pid, tag, payload)
    });
}

/// `bsp_set_tagsize(&size)`: the new size applies from the next sync; `*size` gets the old one.
///
/// # Safety
/// `tag_nbytes` points to an `int`; `file` as for `bsp_sync_at`.
#[no_mangle]
pub unsafe extern "C" fn bsp_set_tagsize_at(
    tag_nbytes: *mut c_int,
    file: *const c_char,
    line: c_int,
) {
    // SAFETY: the caller's contract.
    let at = unsafe { Loc::from_c(file, line) };
    with_run("bsp_set_tagsize", at, |bsp| {
        if tag_nbytes.is_null() {
            return usage("the size pointer is NULL");
        }
        // SAFETY: the caller's contract; checked non-null.
        let wanted = non_negative("the tag size", unsafe { *tag_nbytes })?;
        let old = bsp.bsmp.set_tagsize(wanted);
        // SAFETY: as above.
        unsafe { store(tag_nbytes, old) }
    });
}

/// `bsp_qsize(&packets, &accum_nbytes)`: messages left in the queue and their payload bytes.
///
/// # Safety
/// Both pointers are null or writable.
#[no_mangle]
pub unsafe extern "C" fn bsp_qsize(packets: *mut c_int, accum_nbytes: *mut c_int) {
    with_run("bsp_qsize", Loc::default(), |bsp| {
        let (n, bytes) = bsp.bsmp.qsize();
        // SAFETY: the caller's contract.
        unsafe { store(packets, n).and_then(|()| store(accum_nbytes, bytes)) }
    });
}

/// `bsp_get_tag(&status, tag)`: `status` is the payload size of the first message, or -1 when
/// the queue is empty; its tag is copied to `tag`.
///
/// # Safety
/// `status` points to an `int`; `tag` is writable for the message's tag size.
#[no_mangle]
pub unsafe extern "C" fn bsp_get_tag(status: *mut c_int, tag: *mut c_void) {
    with_run("bsp_get_tag", Loc::default(), |bsp| {
        if status.is_null() {
            return usage("the status pointer is NULL");
        }
        let Some((t, payload)) = bsp.bsmp.peek() else {
            // SAFETY: checked non-null; the caller's contract.
            unsafe { *status = -1 };
            return Ok(());
        };
        buffer("the tag buffer", tag as usize, t.len())?;
        // SAFETY: the caller's contract; checked non-null when the tag is not empty.
        unsafe {
            copy_out(t, tag);
            store(status, payload.len())
        }
    });
}

/// `bsp_move(payload, reception_nbytes)`: copies at most `reception_nbytes` bytes of the first
/// message and removes it from the queue.
///
/// # Safety
/// `payload` is writable for `reception_nbytes`.
#[no_mangle]
pub unsafe extern "C" fn bsp_move(payload: *mut c_void, reception_nbytes: c_int) {
    with_run("bsp_move", Loc::default(), |bsp| {
        let room = non_negative("reception_nbytes", reception_nbytes)?;
        let Some((_, data)) = bsp.bsmp.peek() else {
            return usage("the message queue is empty");
        };
        let n = data.len().min(room);
        buffer("the payload buffer", payload as usize, n)?;
        // SAFETY: the caller's contract; checked non-null when n > 0.
        unsafe { copy_out(&data[..n], payload) };
        bsp.bsmp.advance();
        Ok(())
    });
}

/// `bsp_hpmove(&tag_ptr, &payload_ptr)`: points into the first message (valid until the sync),
/// removes it from the queue and returns its payload size, or -1 when the queue is empty.
///
/// # Safety
/// Both pointers are writable.
#[no_mangle]
pub unsafe extern "C" fn bsp_hpmove(
    tag_ptr: *mut *const c_void,
    payload_ptr: *mut *const c_void,
) -> c_int {
    with_run("bsp_hpmove", Loc::default(), |bsp| {
        if tag_ptr.is_null() || payload_ptr.is_null() {
            return usage("a result pointer is NULL");
        }
        let Some((t, data)) = bsp.bsmp.peek() else {
            return Ok(-1);
        };
        let Ok(n) = c_int::try_from(data.len()) else {
            return usage("the message is larger than an int");
        };
        // SAFETY: the caller's contract; checked non-null. The bytes stay in the inbox until the sync.
        unsafe {
            *tag_ptr = t.as_ptr().cast();
            *payload_ptr = data.as_ptr().cast();
        }
        bsp.bsmp.advance();
        Ok(n)
    })
}

/// `bsp_abort(...)` after `bsp.h` formatted the message: prints it and stops every process.
///
/// # Safety
/// `msg` is null or a NUL-terminated string; `file` as for `bsp_sync_at`.
#[no_mangle]
pub unsafe extern "C" fn bsp_abort_msg_at(
    msg: *const c_char,
    file: *const c_char,
    line: c_int,
) -> ! {
    // SAFETY: the caller's contract.
    let at = unsafe { Loc::from_c(file, line) };
    let text = if msg.is_null() {
        String::new()
    } else {
        // SAFETY: the caller's contract.
        unsafe { CStr::from_ptr(msg) }
            .to_string_lossy()
            .into_owned()
    };
    let pid = std::panic::catch_unwind(runtime::pid).unwrap_or(0);
    let at = if at.is_known() {
        format!(" at {at}")
    } else {
        String::new()
    };
    crate::loc::say(&format!("bsp_abort{at} on pid {pid}: {}", text.trim_end()));
    crate::loc::stop(1)
}

/// Declares the plain entry points, which call their `_at` variant without a location.
macro_rules! without_location {
    ($(fn $plain:ident($($arg:ident: $ty:ty),*) $(-> $ret:ty)? => $at:ident;)*) => {$(
        /// The same as the `_at` variant of this function, without a source location.
        ///
        /// # Safety
        /// As for the `_at` variant.
        #[no_mangle]
        pub unsafe extern "C" fn $plain($($arg: $ty),*) $(-> $ret)? {
            // SAFETY: the caller's contract is the `_at` variant's; a null file is allowed.
            unsafe { $at($($arg,)* std::ptr::null(), 0) }
        }
    )*};
}

without_location! {
    fn bsp_begin(maxprocs: c_int) => bsp_begin_at;
    fn bsp_end() => bsp_end_at;
    fn bsp_sync() => bsp_sync_at;
    fn bsp_push_reg(ident: *const c_void, size: c_int) => bsp_push_reg_at;
    fn bsp_pop_reg(ident: *const c_void) => bsp_pop_reg_at;
    fn bsp_put(pid: c_int, src: *const c_void, dst: *mut c_void, offset: c_int, nbytes: c_int) => bsp_put_at;
    fn bsp_get(pid: c_int, src: *const c_void, offset: c_int, dst: *mut c_void, nbytes: c_int) => bsp_get_at;
    fn bsp_hpput(pid: c_int, src: *const c_void, dst: *mut c_void, offset: c_int, nbytes: c_int) => bsp_hpput_at;
    fn bsp_hpget(pid: c_int, src: *const c_void, offset: c_int, dst: *mut c_void, nbytes: c_int) => bsp_hpget_at;
    fn bsp_send(pid: c_int, tag: *const c_void, payload: *const c_void, nbytes: c_int) => bsp_send_at;
    fn bsp_set_tagsize(tag_nbytes: *mut c_int) => bsp_set_tagsize_at;
    fn bsp_abort(msg: *const c_char) -> ! => bsp_abort_msg_at;
}
