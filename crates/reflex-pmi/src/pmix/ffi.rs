//! The PMIx C API, loaded at run time from `libpmix.so.2`: the only `unsafe` code of the PMIx
//! client.
//!
//! Layouts and constants are those of OpenPMIx 4.2.2's `pmix_common.h` (Debian's `libpmix-dev`),
//! checked by the `const` assertions below and, when the header is installed, by a C probe in
//! `abi_tests.rs`. Only the calls a client needs are bound: `PMIx_Init`, `PMIx_Get`, `PMIx_Put`,
//! `PMIx_Commit`, `PMIx_Fence`, `PMIx_Abort`, `PMIx_Finalize`, `PMIx_Error_string` and
//! `PMIx_Value_destruct`. Everything leaving this module is safe Rust: strings are copied out,
//! values returned by `PMIx_Get` are freed here (`PMIX_VALUE_RELEASE` = destruct + `free`).
//!
//! ```text
//! pmix_proc_t  (260 B, align 4)   pmix_value_t (32 B, align 8)   pmix_info_t (552 B, align 8)
//!   0 char nspace[256]              0 uint16_t type                 0 char key[512]
//! 256 uint32_t rank                 8 union data (24 B)           512 uint32_t flags
//!                                                                 520 pmix_value_t value
//! ```

use std::ffi::{c_char, c_int, CStr, CString};
use std::mem::{offset_of, size_of};

/// `PMIX_MAX_NSLEN + 1`: bytes of a namespace, NUL included.
pub(crate) const NSPACE_BYTES: usize = 256;
/// `PMIX_MAX_KEYLEN + 1`: bytes of a key, NUL included.
pub(crate) const KEY_BYTES: usize = 512;
/// `PMIX_RANK_WILDCARD` (`UINT32_MAX - 1`): job-level data.
pub(crate) const RANK_WILDCARD: u32 = u32::MAX - 1;
/// `PMIX_SUCCESS`.
pub(crate) const SUCCESS: c_int = 0;
/// `PMIX_ERR_NOT_FOUND`.
pub(crate) const ERR_NOT_FOUND: c_int = -46;
/// `PMIX_GLOBAL`: a put shared with every process of the job (`pmix_scope_t`).
const SCOPE_GLOBAL: u8 = 3;

/// Data type codes (`pmix_data_type_t`) that the client decodes.
pub(crate) mod types {
    pub(crate) const BOOL: u16 = 1;
    pub(crate) const STRING: u16 = 3;
    pub(crate) const SIZE: u16 = 4;
    pub(crate) const INT: u16 = 6;
    pub(crate) const INT32: u16 = 9;
    pub(crate) const UINT: u16 = 11;
    pub(crate) const UINT8: u16 = 12;
    pub(crate) const UINT16: u16 = 13;
    pub(crate) const UINT32: u16 = 14;
    pub(crate) const UINT64: u16 = 15;
    pub(crate) const PROC_RANK: u16 = 40;
}

/// Reserved keys (`pmix_common.h`).
pub(crate) mod keys {
    pub(crate) const JOB_SIZE: &str = "pmix.job.size";
    pub(crate) const UNIV_SIZE: &str = "pmix.univ.size";
    pub(crate) const APPNUM: &str = "pmix.appnum";
    pub(crate) const NODEID: &str = "pmix.nodeid";
    pub(crate) const LOCAL_PEERS: &str = "pmix.lpeers";
    pub(crate) const COLLECT_DATA: &str = "pmix.collect";
    pub(crate) const OPTIONAL: &str = "pmix.optional";
}

/// `pmix_proc_t`.
#[repr(C)]
pub(crate) struct RawProc {
    pub(crate) nspace: [c_char; NSPACE_BYTES],
    pub(crate) rank: u32,
}

/// The data union of `pmix_value_t`: 24 bytes (its largest members, `pmix_envar_t` and
/// `struct timeval` plus padding), 8-byte aligned. Only the members the client reads are named.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) union RawData {
    pub(crate) flag: bool,
    pub(crate) uint8: u8,
    pub(crate) uint16: u16,
    pub(crate) uint32: u32,
    pub(crate) uint64: u64,
    pub(crate) int32: i32,
    pub(crate) string: *mut c_char,
    pub(crate) size: usize,
    whole: [u64; 3],
}

/// `pmix_value_t`.
#[repr(C)]
pub(crate) struct RawValue {
    pub(crate) kind: u16,
    pub(crate) data: RawData,
}

/// `pmix_info_t`.
#[repr(C)]
pub(crate) struct RawInfo {
    pub(crate) key: [c_char; KEY_BYTES],
    pub(crate) flags: u32,
    pub(crate) value: RawValue,
}

const _: () = assert!(size_of::<RawProc>() == 260 && offset_of!(RawProc, rank) == 256);
const _: () = assert!(size_of::<RawData>() == 24);
const _: () = assert!(size_of::<RawValue>() == 32 && offset_of!(RawValue, data) == 8);
const _: () = assert!(size_of::<RawInfo>() == 552);
const _: () = assert!(offset_of!(RawInfo, flags) == 512 && offset_of!(RawInfo, value) == 520);

/// A value read with `PMIx_Get`, copied into Rust.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Value {
    Str(String),
    Uint(u64),
    Int(i64),
    Bool(bool),
    /// A type the client does not decode (its code).
    Other(u16),
}

impl Value {
    /// The value as a `u32`, for the integer types that fit.
    pub(crate) fn as_u32(&self) -> Option<u32> {
        match *self {
            Self::Uint(v) => u32::try_from(v).ok(),
            Self::Int(v) => u32::try_from(v).ok(),
            _ => None,
        }
    }
}

/// Copies a `pmix_value_t` into a [`Value`].
///
/// # Safety
/// `raw.kind` must name the union member that holds the data (PMIx's contract for values it
/// returns), and a `PMIX_STRING` must be NULL or point to a NUL-terminated string.
pub(crate) unsafe fn decode(raw: &RawValue) -> Value {
    // SAFETY: by the caller's contract each arm reads the member that `kind` names; strings
    // are copied before return.
    unsafe {
        match raw.kind {
            types::BOOL => Value::Bool(raw.data.flag),
            types::STRING if raw.data.string.is_null() => Value::Str(String::new()),
            types::STRING => Value::Str(
                CStr::from_ptr(raw.data.string)
                    .to_string_lossy()
                    .into_owned(),
            ),
            types::UINT8 => Value::Uint(raw.data.uint8.into()),
            types::UINT16 => Value::Uint(raw.data.uint16.into()),
            types::UINT32 | types::UINT | types::PROC_RANK => Value::Uint(raw.data.uint32.into()),
            types::UINT64 => Value::Uint(raw.data.uint64),
            types::SIZE => Value::Uint(raw.data.size as u64),
            types::INT | types::INT32 => Value::Int(raw.data.int32.into()),
            other => Value::Other(other),
        }
    }
}

/// Copies `text` into a fixed-size C char array, NUL-terminated (callers checked the length).
fn fill(dest: &mut [c_char], text: &str) {
    for (d, &b) in dest.iter_mut().zip(text.as_bytes()) {
        *d = b as c_char;
    }
    let end = text.len().min(dest.len() - 1);
    dest[end] = 0;
}

/// A `pmix_proc_t` for `rank` of namespace `nspace` (longer names are cut at 255 bytes).
pub(crate) fn raw_proc(nspace: &str, rank: u32) -> RawProc {
    let mut proc = RawProc {
        nspace: [0; NSPACE_BYTES],
        rank,
    };
    fill(&mut proc.nspace, nspace);
    proc
}

/// A `pmix_info_t` carrying the boolean `true` under `key` (what `PMIX_INFO_LOAD` builds).
pub(crate) fn flag_info(key: &str) -> RawInfo {
    let mut info = RawInfo {
        key: [0; KEY_BYTES],
        flags: 0,
        value: RawValue {
            kind: types::BOOL,
            data: RawData { whole: [0; 3] },
        },
    };
    fill(&mut info.key, key);
    info.value.data.flag = true;
    info
}

/// Reads a C string array back (namespaces from `PMIx_Init`).
fn read_chars(chars: &[c_char]) -> String {
    let bytes: Vec<u8> = chars
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

type InitFn = unsafe extern "C" fn(*mut RawProc, *mut RawInfo, usize) -> c_int;
type FinalizeFn = unsafe extern "C" fn(*const RawInfo, usize) -> c_int;
type AbortFn = unsafe extern "C" fn(c_int, *const c_char, *mut RawProc, usize) -> c_int;
type PutFn = unsafe extern "C" fn(u8, *const c_char, *mut RawValue) -> c_int;
type CommitFn = unsafe extern "C" fn() -> c_int;
type FenceFn = unsafe extern "C" fn(*const RawProc, usize, *const RawInfo, usize) -> c_int;
type GetFn = unsafe extern "C" fn(
    *const RawProc,
    *const c_char,
    *const RawInfo,
    usize,
    *mut *mut RawValue,
) -> c_int;
type ErrorStringFn = unsafe extern "C" fn(c_int) -> *const c_char;
type ValueDestructFn = unsafe extern "C" fn(*mut RawValue);

/// The loaded library and its entry points. The library is never unloaded: from `PMIx_Init` on
/// it runs a progress thread and keeps process-wide state, so `dlclose` could pull code from
/// under that thread (the entry points stay valid for the whole process).
pub(crate) struct Pmix {
    init: InitFn,
    finalize: FinalizeFn,
    abort: AbortFn,
    put: PutFn,
    commit: CommitFn,
    fence: FenceFn,
    get: GetFn,
    error_string: ErrorStringFn,
    value_destruct: ValueDestructFn,
    _lib: std::mem::ManuallyDrop<libloading::Library>,
}

impl std::fmt::Debug for Pmix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Pmix(libpmix)")
    }
}

/// Looks up symbol `name` as a function pointer of type `T`.
///
/// # Safety
/// `T` must be the function type of the C symbol `name` in PMIx 4.2.2's headers.
unsafe fn symbol<T: Copy>(lib: &libloading::Library, name: &str) -> Result<T, String> {
    // SAFETY: the caller guarantees that `T` matches the symbol's C prototype.
    unsafe { lib.get::<T>(name.as_bytes()) }
        .map(|s| *s)
        .map_err(|e| format!("{name}: {e}"))
}

impl Pmix {
    /// Loads `library` (e.g. `libpmix.so.2`) and resolves the client calls.
    pub(crate) fn load(library: &str) -> Result<Self, String> {
        // SAFETY: loading libpmix runs its initialisers, which only set up its own globals
        // (no PMIx call happens before PMIx_Init).
        let lib = unsafe { libloading::Library::new(library) }.map_err(|e| e.to_string())?;
        // SAFETY: each type alias above is the prototype of that symbol in pmix.h (4.2.2).
        unsafe {
            Ok(Self {
                init: symbol(&lib, "PMIx_Init")?,
                finalize: symbol(&lib, "PMIx_Finalize")?,
                abort: symbol(&lib, "PMIx_Abort")?,
                put: symbol(&lib, "PMIx_Put")?,
                commit: symbol(&lib, "PMIx_Commit")?,
                fence: symbol(&lib, "PMIx_Fence")?,
                get: symbol(&lib, "PMIx_Get")?,
                error_string: symbol(&lib, "PMIx_Error_string")?,
                value_destruct: symbol(&lib, "PMIx_Value_destruct")?,
                _lib: std::mem::ManuallyDrop::new(lib),
            })
        }
    }

    /// `PMIx_Init`: connects to the local PMIx server; returns (namespace, rank).
    pub(crate) fn init(&self) -> Result<(String, u32), c_int> {
        let mut me = raw_proc("", 0);
        // SAFETY: `me` is a valid, writable pmix_proc_t; no info array is passed.
        let rc = unsafe { (self.init)(&mut me, std::ptr::null_mut(), 0) };
        if rc != SUCCESS {
            return Err(rc);
        }
        Ok((read_chars(&me.nspace), me.rank))
    }

    /// `PMIx_Get` of `key` for `rank` of `nspace`, from the local store only (`PMIX_OPTIONAL`):
    /// `Ok(None)` when it is not there.
    pub(crate) fn get(&self, nspace: &str, rank: u32, key: &CStr) -> Result<Option<Value>, c_int> {
        let proc = raw_proc(nspace, rank);
        let info = flag_info(keys::OPTIONAL);
        let mut out: *mut RawValue = std::ptr::null_mut();
        // SAFETY: every pointer refers to a live, initialised object of the C type; PMIx
        // writes a freshly allocated pmix_value_t into `out` on success.
        let rc = unsafe { (self.get)(&proc, key.as_ptr(), &info, 1, &mut out) };
        match rc {
            SUCCESS if !out.is_null() => {
                // SAFETY: on success `out` points to a valid pmix_value_t, owned by us, that
                // PMIx filled according to its type code.
                let value = unsafe { decode(&*out) };
                // SAFETY: PMIX_VALUE_RELEASE: destruct the data, then free the malloc'ed struct;
                // `out` is not used afterwards.
                unsafe {
                    (self.value_destruct)(out);
                    libc::free(out.cast());
                }
                Ok(Some(value))
            }
            SUCCESS | ERR_NOT_FOUND => Ok(None),
            rc => Err(rc),
        }
    }

    /// `PMIx_Put(PMIX_GLOBAL, key, <string value>)` (PMIx copies the value).
    pub(crate) fn put_string(&self, key: &CStr, value: &CStr) -> Result<(), c_int> {
        let mut raw = RawValue {
            kind: types::STRING,
            data: RawData {
                string: value.as_ptr().cast_mut(),
            },
        };
        // SAFETY: `key` and the string in `raw` are NUL-terminated and outlive the call; PMIx
        // copies the value and does not write through the string pointer.
        check(unsafe { (self.put)(SCOPE_GLOBAL, key.as_ptr(), &mut raw) })
    }

    /// `PMIx_Commit`: makes the puts so far available to the next fence.
    pub(crate) fn commit(&self) -> Result<(), c_int> {
        // SAFETY: no arguments; valid after PMIx_Init.
        check(unsafe { (self.commit)() })
    }

    /// `PMIx_Fence` over the whole job with `PMIX_COLLECT_DATA`: afterwards every committed
    /// put of every process is in the local store.
    pub(crate) fn fence(&self) -> Result<(), c_int> {
        let info = flag_info(keys::COLLECT_DATA);
        // SAFETY: NULL procs with count 0 means "all processes of my namespace"; `info` is a
        // valid one-element array.
        check(unsafe { (self.fence)(std::ptr::null(), 0, &info, 1) })
    }

    /// `PMIx_Abort` of the whole namespace (may not return: the launcher kills us).
    pub(crate) fn abort(&self, code: i32, msg: &str) -> Result<(), c_int> {
        let msg = CString::new(msg.replace('\0', " ")).unwrap_or_default();
        // SAFETY: `msg` is NUL-terminated; NULL procs with count 0 means "my namespace".
        check(unsafe { (self.abort)(code, msg.as_ptr(), std::ptr::null_mut(), 0) })
    }

    /// `PMIx_Finalize`.
    pub(crate) fn finalize(&self) -> Result<(), c_int> {
        // SAFETY: no info array.
        check(unsafe { (self.finalize)(std::ptr::null(), 0) })
    }

    /// `PMIx_Error_string`: the name of a status code.
    pub(crate) fn error_string(&self, status: c_int) -> String {
        // SAFETY: PMIx returns a pointer to a static string (never freed) or NULL.
        let text = unsafe { (self.error_string)(status) };
        if text.is_null() {
            return format!("status {status}");
        }
        // SAFETY: non-NULL results are NUL-terminated static strings.
        unsafe { CStr::from_ptr(text) }
            .to_string_lossy()
            .into_owned()
    }
}

fn check(rc: c_int) -> Result<(), c_int> {
    if rc == SUCCESS {
        Ok(())
    } else {
        Err(rc)
    }
}

#[cfg(test)]
#[path = "abi_tests.rs"]
mod abi_tests;
