//! Returning strings and values through MPI_T's output arguments.
//!
//! Strings follow MPI-4.0 §15.3.3 as MPICH implements it: `len` NULL means the caller wants no
//! string (the buffer is ignored); a NULL buffer or `*len == 0` asks for the length only
//! (`*len` becomes the string's length plus the terminating NUL); otherwise at most `*len - 1`
//! bytes are copied, NUL-terminated, and `*len` becomes the number of bytes written including
//! the NUL. Other outputs of the `*_get_info` calls may be NULL (ignored); the outputs a call
//! exists to return must not be ([`required`], `MPI_T_ERR_INVALID`).
//!
//! The pointers are the C caller's, passed on unchanged by the `MPI_T_*` implementations
//! (`crate::imp::tool*`), whose generated shims carry the `# Safety` contract (MPI's
//! preconditions on output arguments); as there, these stay safe `fn`s.
#![allow(clippy::not_unsafe_ptr_arg_deref)] // reason: see the module documentation

use super::null_argument;
use reflex_engine::Result;
use std::ffi::{c_char, c_int};

/// How many bytes of a string of `len` bytes fit a buffer of `room` bytes with its NUL.
pub fn fitting(len: usize, room: c_int) -> usize {
    len.min(usize::try_from(room).unwrap_or(0).saturating_sub(1))
}

/// The length `*len` reports for a string of `len` bytes (NUL included), saturating.
fn reported(len: usize) -> c_int {
    c_int::try_from(len + 1).unwrap_or(c_int::MAX)
}

/// Writes `text` to `buf`/`len` as the module documentation says.
pub fn put_string(text: &str, buf: *mut c_char, len: *mut c_int) {
    if len.is_null() {
        return;
    }
    // SAFETY: `len` is a non-NULL `int *` the caller passed (MPI's contract: valid).
    let room = unsafe { *len };
    if buf.is_null() || room <= 0 {
        // SAFETY: as above.
        unsafe { *len = reported(text.len()) };
        return;
    }
    let n = fitting(text.len(), room);
    // SAFETY: the caller's buffer holds `room` > n bytes (MPI's contract for `*len`).
    unsafe {
        std::ptr::copy_nonoverlapping(text.as_ptr().cast::<c_char>(), buf, n);
        *buf.add(n) = 0;
        *len = reported(n);
    }
}

/// Stores `value` through `out` unless it is NULL (optional outputs of `*_get_info`).
pub fn put<T>(out: *mut T, value: T) {
    if !out.is_null() {
        // SAFETY: a non-NULL output pointer of the right type (MPI's contract).
        unsafe { out.write(value) };
    }
}

/// Stores `value` through `out`, which must not be NULL (`MPI_T_ERR_INVALID` naming `what`).
pub fn required<T>(out: *mut T, what: &str, value: T) -> Result<()> {
    if out.is_null() {
        return Err(null_argument(what));
    }
    put(out, value);
    Ok(())
}

/// The NUL-terminated name `name` as text (`MPI_T_ERR_INVALID` when NULL).
pub fn name_arg(name: *const c_char) -> Result<String> {
    if name.is_null() {
        return Err(null_argument("name"));
    }
    // SAFETY: a non-NULL C string (MPI's contract for STRING_IN arguments).
    let text = unsafe { std::ffi::CStr::from_ptr(name) };
    Ok(text.to_string_lossy().into_owned())
}

/// Writes up to `len` indices of `items` into `out` (`MPI_T_category_get_*`).
pub fn put_indices(items: &[usize], len: c_int, out: *mut c_int) -> Result<()> {
    let Ok(len) = usize::try_from(len) else {
        return Err(super::error(
            reflex_engine::ErrorClass::TInvalid,
            format!("len {len} is negative"),
        ));
    };
    let n = len.min(items.len());
    if n == 0 {
        return Ok(());
    }
    if out.is_null() {
        return Err(null_argument("indices"));
    }
    for (i, &item) in items[..n].iter().enumerate() {
        // SAFETY: the caller's array holds `len` >= n ints (MPI's contract).
        unsafe { out.add(i).write(item as c_int) };
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn string_into(text: &str, room: c_int, with_buf: bool) -> (String, c_int) {
        let mut buf = [b'x' as c_char; 16];
        let mut len = room;
        let p = if with_buf {
            buf.as_mut_ptr()
        } else {
            std::ptr::null_mut()
        };
        put_string(text, p, &mut len);
        let written = buf.iter().take_while(|&&c| c != 0 && c != b'x' as c_char);
        let s: Vec<u8> = written.map(|&c| c as u8).collect();
        (String::from_utf8(s).unwrap(), len)
    }

    #[test]
    fn strings_follow_the_length_rules() {
        assert_eq!(string_into("hello", 16, true), ("hello".into(), 6));
        assert_eq!(string_into("hello", 3, true), ("he".into(), 3));
        assert_eq!(string_into("hello", 0, true), ("".into(), 6));
        assert_eq!(string_into("hello", 16, false), ("".into(), 6));
        assert_eq!(string_into("hello", 1, true), ("".into(), 1));
        put_string("ignored", std::ptr::null_mut(), std::ptr::null_mut());
    }

    #[test]
    fn outputs_and_indices() {
        let mut v = 0;
        put(&mut v, 5);
        assert_eq!(v, 5);
        put(std::ptr::null_mut(), 5);
        assert!(required(std::ptr::null_mut::<i32>(), "num", 1).is_err());
        let mut out = [0; 3];
        put_indices(&[4, 5, 6, 7], 3, out.as_mut_ptr()).unwrap();
        assert_eq!(out, [4, 5, 6]);
        assert!(put_indices(&[1], -1, out.as_mut_ptr()).is_err());
        assert!(put_indices(&[1], 2, std::ptr::null_mut()).is_err());
        put_indices(&[], 2, std::ptr::null_mut()).unwrap();
        assert_eq!(fitting(10, 0), 0);
    }
}
