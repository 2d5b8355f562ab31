//! Small helpers the implementations share: wrapping user buffers, writing statuses and strings.

use crate::ffi::*;
use reflex_base::buf::{RecvBuf, SendBuf};
use reflex_engine::{Datatype, ErrorClass, MpiError, Result, Status};
use std::ffi::{c_char, c_int, c_void};
use std::ptr::addr_of_mut;

/// `count` elements of `dt` at `p`, to be read: the buffer wraps exactly the bytes the elements
/// touch, which start below `p` when the type has negative displacements ([`Datatype::span`]).
pub fn send_buf(p: *const c_void, count: usize, dt: &Datatype) -> Result<SendBuf> {
    let (lo, len) = dt.span(count)?;
    let start = p.cast::<u8>().wrapping_offset(lo);
    // SAFETY: MPI requires the caller's send buffer to hold `count` elements of `dt`, i.e. the
    // `len` bytes from `p + lo`, and to stay untouched until the operation completes; the kinds
    // check rejected NULL with data.
    Ok(unsafe { SendBuf::from_raw(start, len) })
}

/// `count` elements of `dt` at `p`, to be written (the bytes they touch, as for [`send_buf`]).
pub fn recv_buf(p: *mut c_void, count: usize, dt: &Datatype) -> Result<RecvBuf> {
    let (lo, len) = dt.span(count)?;
    let start = p.cast::<u8>().wrapping_offset(lo);
    // SAFETY: MPI requires the caller's receive buffer to hold `count` elements of `dt` (the `len`
    // bytes from `p + lo`) and to be left alone until the operation completes.
    Ok(unsafe { RecvBuf::from_raw(start, len) })
}

pub use crate::kinds::is_in_place;

/// The C status of an engine status (`MPI_ERROR` is written by multi-completion calls only).
pub fn c_status(st: &Status) -> MPI_Status {
    let bytes = st.bytes as u64;
    MPI_Status {
        count_lo: bytes as u32 as c_int,
        count_hi_and_cancelled: (((bytes >> 32) as c_int) << 1) | c_int::from(st.cancelled),
        MPI_SOURCE: st.source,
        MPI_TAG: st.tag,
        MPI_ERROR: 0,
    }
}

/// The byte count a C status carries.
pub fn status_bytes(st: &MPI_Status) -> u64 {
    (st.count_lo as u32 as u64) | (((st.count_hi_and_cancelled as u32 >> 1) as u64) << 32)
}

/// Writes `st` to `p` unless `p` is `MPI_STATUS_IGNORE` (or NULL), leaving its `MPI_ERROR` as it
/// was: calls that complete one operation never change that field (MPI-3.1 section 3.2.5).
pub fn write_status(p: *mut MPI_Status, st: &Status) {
    if p.is_null() || p as usize == STATUS_IGNORE {
        return;
    }
    let c = c_status(st);
    // SAFETY: the caller passed a writable MPI_Status (MPI contract), checked non-ignore above;
    // each field is written in place, none is read.
    unsafe {
        addr_of_mut!((*p).count_lo).write(c.count_lo);
        addr_of_mut!((*p).count_hi_and_cancelled).write(c.count_hi_and_cancelled);
        addr_of_mut!((*p).MPI_SOURCE).write(c.MPI_SOURCE);
        addr_of_mut!((*p).MPI_TAG).write(c.MPI_TAG);
    }
}

/// Writes `st` to `p` with its `MPI_ERROR`, as the calls that complete several operations do.
pub fn write_status_and_error(p: *mut MPI_Status, st: &Status) {
    if p.is_null() || p as usize == STATUS_IGNORE {
        return;
    }
    let error = st.error.as_ref().map_or(0, |e| e.class as c_int);
    // SAFETY: the caller passed a writable MPI_Status (MPI contract), checked non-ignore above.
    unsafe {
        p.write(MPI_Status {
            MPI_ERROR: error,
            ..c_status(st)
        })
    };
}

/// Writes one int output.
pub fn write<T>(p: *mut T, value: T) {
    // SAFETY: the kinds check made sure output pointers are non-NULL; MPI requires them writable.
    unsafe { p.write(value) };
}

/// Copies `text` into a C buffer of `max` bytes (NUL-terminated) and stores its length.
pub fn write_string(dst: *mut c_char, len: *mut c_int, text: &str, max: usize) -> Result<()> {
    if dst.is_null() {
        return Err(MpiError::new(
            ErrorClass::Arg,
            "string output argument is NULL",
        ));
    }
    let bytes = &text.as_bytes()[..text.len().min(max - 1)];
    // SAFETY: MPI requires the output buffer to hold `max` bytes (MPI_MAX_* constants); we write at
    // most max-1 bytes plus the terminator.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst.cast::<u8>(), bytes.len());
        *dst.add(bytes.len()) = 0;
    }
    if !len.is_null() {
        write(len, bytes.len() as c_int);
    }
    Ok(())
}

/// The `n` ints at `p` (an input array of the call); a negative `n` or a NULL array with
/// entries is `MPI_ERR_ARG`.
pub fn int_array<'a>(p: *const c_int, n: c_int, what: &str) -> Result<&'a [c_int]> {
    raw_array(p, n, what)
}

/// The `n` elements at `p` (an input array of the call), checked like [`int_array`].
pub fn raw_array<'a, T>(p: *const T, n: c_int, what: &str) -> Result<&'a [T]> {
    let n = usize::try_from(n)
        .map_err(|_| MpiError::new(ErrorClass::Arg, format!("{what} count {n} is negative")))?;
    array(p, n, what)
}

/// The `n` values of the caller's array `p` (a NULL array is an error unless `n` is 0).
pub fn array<'a, T>(p: *const T, n: usize, what: &str) -> Result<&'a [T]> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(MpiError::new(ErrorClass::Arg, format!("{what} is NULL")));
    }
    // SAFETY: MPI requires the array to hold `n` elements for the duration of the call.
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

/// Writes `values` into the output array `p` (which MPI requires to hold them all).
pub fn write_ints(p: *mut c_int, values: impl IntoIterator<Item = c_int>) -> Result<()> {
    for (i, v) in values.into_iter().enumerate() {
        if p.is_null() {
            return Err(MpiError::new(
                ErrorClass::Arg,
                "an output array is NULL but has values to receive",
            ));
        }
        // SAFETY: the caller's array holds every value written (MPI contract of the call).
        unsafe { p.add(i).write(v) };
    }
    Ok(())
}

/// A NUL-terminated input string of the call (`what` names it in the error for NULL).
pub fn c_string(p: *const c_char, what: &str) -> Result<String> {
    if p.is_null() {
        return Err(MpiError::new(ErrorClass::Arg, format!("{what} is NULL")));
    }
    // SAFETY: MPI requires a NUL-terminated string that stays valid during the call.
    Ok(unsafe { std::ffi::CStr::from_ptr(p) }
        .to_string_lossy()
        .into_owned())
}
