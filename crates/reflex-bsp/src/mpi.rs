//! The few MPI calls BSPlib needs, declared against the MPICH ABI (`libmpi.so.12`), with thin
//! checked wrappers.
//!
//! Only the standard MPI C API is used, so the library runs on any MPICH-ABI `libmpi`: Debian's
//! MPICH and Reflex's own. The handle values below are MPICH's (`mpi.h`: handles are `int`,
//! `MPI_Aint` is `long`). The symbols are left undefined in `libbsp.so` and resolved against the
//! `libmpi` that the program links (`mpicc` always adds it), see the crate README.
//!
//! Communicators and the window carry `MPI_ERRORS_RETURN`, so every failure comes back here as a
//! [`MpiError`] that the caller reports with its BSPlib context.

use std::ffi::{c_char, c_int, c_void};
use std::fmt;

/// `MPI_Aint` of the MPICH ABI on LP64 (`typedef long MPI_Aint`).
pub type Aint = isize;

/// `MPI_COMM_WORLD` (mpi.h: `((MPI_Comm)0x44000000)`).
pub const COMM_WORLD: c_int = 0x4400_0000;
/// `MPI_COMM_NULL` (mpi.h: `((MPI_Comm)0x04000000)`).
const COMM_NULL: c_int = 0x0400_0000;
/// `MPI_INFO_NULL` (mpi.h: `((MPI_Info)0x1c000000)`).
const INFO_NULL: c_int = 0x1c00_0000;
/// `MPI_BYTE` (mpi.h: `((MPI_Datatype)0x4c00010d)`).
const BYTE: c_int = 0x4c00_010d;
/// `MPI_LONG` (mpi.h: `((MPI_Datatype)0x4c000807)`), the C type of `i64` on LP64.
const LONG: c_int = 0x4c00_0807;
/// `MPI_ERRORS_RETURN` (mpi.h: `((MPI_Errhandler)0x54000001)`).
const ERRORS_RETURN: c_int = 0x5400_0001;
/// `MPI_UNDEFINED` (mpi.h: `(-32766)`), the colour of ranks left out of a split.
const UNDEFINED: c_int = -32766;
/// `MPI_MODE_NOCHECK` (mpi.h: 1024): no conflicting lock is ever taken on the window.
const MODE_NOCHECK: c_int = 1024;
/// `MPI_MAX_ERROR_STRING` (mpi.h: 512).
const MAX_ERROR_STRING: usize = 512;

/// Declares the MPI functions once: as imports from `libmpi` in the library, and as stand-ins
/// that fail with `MPI_ERR_OTHER` in unit tests (which run without MPI and test the logic only).
macro_rules! mpi_functions {
    ($(fn $name:ident($($arg:ident: $ty:ty),* $(,)?);)*) => {
        #[cfg(not(test))]
        extern "C" {
            $(pub fn $name($($arg: $ty),*) -> c_int;)*
        }
        $(
            #[cfg(test)]
            #[allow(non_snake_case)] // (why: the stand-ins carry the MPI names they replace)
            pub unsafe extern "C" fn $name($($arg: $ty),*) -> c_int {
                let _ = ($($arg,)*);
                16 // MPI_ERR_OTHER
            }
        )*
    };
}

mod ffi {
    use super::Aint;
    use std::ffi::{c_char, c_int, c_void};

    mpi_functions! {
        fn MPI_Initialized(flag: *mut c_int);
        fn MPI_Finalized(flag: *mut c_int);
        fn MPI_Init(argc: *mut c_int, argv: *mut *mut *mut c_char);
        fn MPI_Finalize();
        fn MPI_Abort(comm: c_int, code: c_int);
        fn MPI_Error_string(code: c_int, text: *mut c_char, len: *mut c_int);
        fn MPI_Comm_rank(comm: c_int, rank: *mut c_int);
        fn MPI_Comm_size(comm: c_int, size: *mut c_int);
        fn MPI_Comm_split(comm: c_int, color: c_int, key: c_int, out: *mut c_int);
        fn MPI_Comm_free(comm: *mut c_int);
        fn MPI_Comm_set_errhandler(comm: c_int, handler: c_int);
        fn MPI_Barrier(comm: c_int);
        fn MPI_Bcast(buf: *mut c_void, n: c_int, ty: c_int, root: c_int, comm: c_int);
        fn MPI_Alltoall(sbuf: *const c_void, sn: c_int, sty: c_int, rbuf: *mut c_void, rn: c_int, rty: c_int, comm: c_int);
        fn MPI_Alltoallv(
            sbuf: *const c_void, sn: *const c_int, sd: *const c_int, sty: c_int,
            rbuf: *mut c_void, rn: *const c_int, rd: *const c_int, rty: c_int, comm: c_int,
        );
        fn MPI_Allgather(sbuf: *const c_void, sn: c_int, sty: c_int, rbuf: *mut c_void, rn: c_int, rty: c_int, comm: c_int);
        fn MPI_Gatherv(
            sbuf: *const c_void, sn: c_int, sty: c_int, rbuf: *mut c_void,
            rn: *const c_int, rd: *const c_int, rty: c_int, root: c_int, comm: c_int,
        );
        fn MPI_Get_address(location: *const c_void, address: *mut Aint);
        fn MPI_Win_create_dynamic(info: c_int, comm: c_int, win: *mut c_int);
        fn MPI_Win_set_errhandler(win: c_int, handler: c_int);
        fn MPI_Win_attach(win: c_int, base: *mut c_void, size: Aint);
        fn MPI_Win_detach(win: c_int, base: *const c_void);
        fn MPI_Win_free(win: *mut c_int);
        fn MPI_Win_lock_all(assert: c_int, win: c_int);
        fn MPI_Win_unlock_all(win: c_int);
        fn MPI_Win_flush_all(win: c_int);
        fn MPI_Win_sync(win: c_int);
        fn MPI_Put(
            origin: *const c_void, on: c_int, oty: c_int, target: c_int,
            disp: Aint, tn: c_int, tty: c_int, win: c_int,
        );
        fn MPI_Get(
            origin: *mut c_void, on: c_int, oty: c_int, target: c_int,
            disp: Aint, tn: c_int, tty: c_int, win: c_int,
        );
    }
}

/// A failed MPI call: its name and the error code it returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MpiError {
    pub call: &'static str,
    pub code: c_int,
}

impl fmt::Display for MpiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut text = [0 as c_char; MAX_ERROR_STRING];
        let mut len: c_int = 0;
        // SAFETY: `text` holds MPI_MAX_ERROR_STRING bytes as the standard requires; `len` is a valid
        // out-pointer. MPI_Error_string may be called at any time, even before MPI_Init.
        let rc = unsafe { ffi::MPI_Error_string(self.code, text.as_mut_ptr(), &mut len) };
        let len = usize::try_from(len).unwrap_or(0).min(MAX_ERROR_STRING);
        if rc != 0 || len == 0 {
            return write!(f, "{} failed with error code {}", self.call, self.code);
        }
        let bytes: Vec<u8> = text[..len].iter().map(|&c| c as u8).collect();
        write!(
            f,
            "{} failed: {}",
            self.call,
            String::from_utf8_lossy(&bytes).trim_end()
        )
    }
}

/// The result of an MPI call.
pub type MpiResult<T = ()> = Result<T, MpiError>;

fn check(call: &'static str, rc: c_int) -> MpiResult {
    if rc == 0 {
        Ok(())
    } else {
        Err(MpiError { call, code: rc })
    }
}

/// A count of elements as MPI's `int`.
fn count(call: &'static str, n: usize) -> MpiResult<c_int> {
    // MPI_ERR_COUNT (2): the only way a count can be wrong here is to exceed `int`.
    c_int::try_from(n).map_err(|_| MpiError { call, code: 2 })
}

/// Whether `MPI_Init` has been called (and `MPI_Finalize` not yet).
pub fn is_running() -> MpiResult<bool> {
    let (mut init, mut fini) = (0, 0);
    // SAFETY: both are valid out-pointers; these two calls are allowed before MPI_Init.
    check("MPI_Initialized", unsafe {
        ffi::MPI_Initialized(&mut init)
    })?;
    // SAFETY: as above.
    check("MPI_Finalized", unsafe { ffi::MPI_Finalized(&mut fini) })?;
    Ok(init != 0 && fini == 0)
}

/// `MPI_Init` with the program's arguments (null pointers when there are none).
///
/// # Safety
/// `argc` and `argv` are null or point to `main`'s arguments.
pub unsafe fn init(argc: *mut c_int, argv: *mut *mut *mut c_char) -> MpiResult {
    // SAFETY: the caller passes main's arguments or nulls, which MPI_Init accepts.
    check("MPI_Init", unsafe { ffi::MPI_Init(argc, argv) })
}

/// `MPI_Finalize`.
pub fn finalize() -> MpiResult {
    // SAFETY: no arguments; MPI is running (callers check).
    check("MPI_Finalize", unsafe { ffi::MPI_Finalize() })
}

/// `MPI_Abort`, then the process exits with `code` should MPI return.
pub fn abort(comm: c_int, code: c_int) -> ! {
    // SAFETY: plain handle and integer; MPI_Abort is valid on any communicator of a running MPI.
    unsafe { ffi::MPI_Abort(comm, code) };
    std::process::exit(code)
}

/// The address MPI uses for `ptr` as a displacement in a dynamic window.
pub fn address_of(ptr: usize) -> MpiResult<Aint> {
    let mut addr: Aint = 0;
    // SAFETY: MPI_Get_address only computes the address; it never dereferences `ptr`.
    check("MPI_Get_address", unsafe {
        ffi::MPI_Get_address(ptr as *const c_void, &mut addr)
    })?;
    Ok(addr)
}

/// A communicator owned by BSPlib (freed by [`Comm::free`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Comm(c_int);

impl Comm {
    /// `MPI_COMM_WORLD`, for queries before `bsp_begin` and for aborting.
    pub const WORLD: Comm = Comm(COMM_WORLD);

    /// The raw handle (for `MPI_Abort`).
    pub fn handle(self) -> c_int {
        self.0
    }

    pub fn rank(self) -> MpiResult<usize> {
        let mut r = 0;
        // SAFETY: valid handle and out-pointer.
        check("MPI_Comm_rank", unsafe {
            ffi::MPI_Comm_rank(self.0, &mut r)
        })?;
        Ok(r as usize)
    }

    pub fn size(self) -> MpiResult<usize> {
        let mut n = 0;
        // SAFETY: valid handle and out-pointer.
        check("MPI_Comm_size", unsafe {
            ffi::MPI_Comm_size(self.0, &mut n)
        })?;
        Ok(n as usize)
    }

    /// The ranks with `member` get a new communicator (errors returned); the others get `None`.
    pub fn split(self, member: bool, key: usize) -> MpiResult<Option<Comm>> {
        let mut out = COMM_NULL;
        let color = if member { 0 } else { UNDEFINED };
        let key = count("MPI_Comm_split", key)?;
        // SAFETY: valid handle and out-pointer.
        check("MPI_Comm_split", unsafe {
            ffi::MPI_Comm_split(self.0, color, key, &mut out)
        })?;
        if out == COMM_NULL {
            return Ok(None);
        }
        // SAFETY: `out` is the communicator just created.
        let rc = unsafe { ffi::MPI_Comm_set_errhandler(out, ERRORS_RETURN) };
        check("MPI_Comm_set_errhandler", rc)?;
        Ok(Some(Comm(out)))
    }

    pub fn free(mut self) -> MpiResult {
        // SAFETY: the communicator was created by `split` and is freed once (self is consumed).
        check("MPI_Comm_free", unsafe { ffi::MPI_Comm_free(&mut self.0) })
    }

    pub fn barrier(self) -> MpiResult {
        // SAFETY: valid handle.
        check("MPI_Barrier", unsafe { ffi::MPI_Barrier(self.0) })
    }

    /// Sends `send[j*k..(j+1)*k]` to rank j and receives rank j's block into `recv` likewise.
    pub fn alltoall_i64(self, send: &[i64], recv: &mut [i64]) -> MpiResult {
        let n = self.size()?;
        if send.len() != recv.len() || send.len() % n.max(1) != 0 {
            return Err(MpiError {
                call: "MPI_Alltoall",
                code: 2,
            });
        }
        let k = count("MPI_Alltoall", send.len() / n.max(1))?;
        // SAFETY: both buffers hold size*k longs, as the counts say.
        let rc = unsafe {
            ffi::MPI_Alltoall(
                send.as_ptr().cast(),
                k,
                LONG,
                recv.as_mut_ptr().cast(),
                k,
                LONG,
                self.0,
            )
        };
        check("MPI_Alltoall", rc)
    }

    /// Every rank contributes `send`; `recv` gets rank j's block at `j*send.len()`.
    pub fn allgather_i64(self, send: &[i64], recv: &mut [i64]) -> MpiResult {
        let k = count("MPI_Allgather", send.len())?;
        if recv.len() != send.len() * self.size()? {
            return Err(MpiError {
                call: "MPI_Allgather",
                code: 2,
            });
        }
        // SAFETY: `recv` holds size*k longs, `send` k longs.
        let rc = unsafe {
            ffi::MPI_Allgather(
                send.as_ptr().cast(),
                k,
                LONG,
                recv.as_mut_ptr().cast(),
                k,
                LONG,
                self.0,
            )
        };
        check("MPI_Allgather", rc)
    }

    /// Byte all-to-all: `send` holds the blocks for each rank in order (`scounts`), `recv` receives
    /// rank j's block at the sum of `rcounts[..j]`.
    pub fn alltoallv_bytes(
        self,
        send: &[u8],
        scounts: &[usize],
        recv: &mut [u8],
        rcounts: &[usize],
    ) -> MpiResult {
        let (sn, sd) = counts_displs("MPI_Alltoallv", scounts, send.len())?;
        let (rn, rd) = counts_displs("MPI_Alltoallv", rcounts, recv.len())?;
        // SAFETY: counts and displacements were checked to lie within the two buffers.
        let rc = unsafe {
            ffi::MPI_Alltoallv(
                send.as_ptr().cast(),
                sn.as_ptr(),
                sd.as_ptr(),
                BYTE,
                recv.as_mut_ptr().cast(),
                rn.as_ptr(),
                rd.as_ptr(),
                BYTE,
                self.0,
            )
        };
        check("MPI_Alltoallv", rc)
    }

    /// Gathers every rank's bytes at `root`: the root gets them concatenated in rank order, with
    /// each rank's length; the other ranks get empty vectors.
    pub fn gather_bytes(self, send: &[u8], root: usize) -> MpiResult<Vec<Vec<u8>>> {
        let me = self.rank()?;
        let n = self.size()?;
        let mut lens = vec![0i64; n];
        self.allgather_i64(&[send.len() as i64], &mut lens)?;
        let lens: Vec<usize> = lens.iter().map(|&l| l.max(0) as usize).collect();
        let mut all = vec![0u8; if me == root { lens.iter().sum() } else { 0 }];
        let (rn, rd) = if me == root {
            counts_displs("MPI_Gatherv", &lens, all.len())?
        } else {
            (Vec::new(), Vec::new())
        };
        let sn = count("MPI_Gatherv", send.len())?;
        let root_c = count("MPI_Gatherv", root)?;
        // SAFETY: at the root, counts and displacements lie within `all`; elsewhere the receive
        // arguments are not significant.
        let rc = unsafe {
            ffi::MPI_Gatherv(
                send.as_ptr().cast(),
                sn,
                BYTE,
                all.as_mut_ptr().cast(),
                rn.as_ptr(),
                rd.as_ptr(),
                BYTE,
                root_c,
                self.0,
            )
        };
        check("MPI_Gatherv", rc)?;
        Ok(split_blocks(&all, if me == root { &lens } else { &[] }))
    }

    /// Broadcasts one `i64` from `root`.
    pub fn bcast_i64(self, value: i64, root: usize) -> MpiResult<i64> {
        let mut v = value;
        let root = count("MPI_Bcast", root)?;
        // SAFETY: one long at a valid address.
        let rc = unsafe { ffi::MPI_Bcast((&mut v as *mut i64).cast(), 1, LONG, root, self.0) };
        check("MPI_Bcast", rc)?;
        Ok(v)
    }
}

/// MPI count and displacement arrays for blocks of `counts` bytes laid end to end in `total`.
fn counts_displs(
    call: &'static str,
    counts: &[usize],
    total: usize,
) -> MpiResult<(Vec<c_int>, Vec<c_int>)> {
    let mut n = Vec::with_capacity(counts.len());
    let mut d = Vec::with_capacity(counts.len());
    let mut at = 0usize;
    for &c in counts {
        n.push(count(call, c)?);
        d.push(count(call, at)?);
        at += c;
    }
    if at > total {
        return Err(MpiError { call, code: 2 });
    }
    Ok((n, d))
}

fn split_blocks(all: &[u8], lens: &[usize]) -> Vec<Vec<u8>> {
    let mut at = 0;
    lens.iter()
        .map(|&l| {
            let block = all[at..at + l].to_vec();
            at += l;
            block
        })
        .collect()
}

/// The one dynamic window of a BSP run; always inside a `lock_all` epoch between `open` and `close`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Win(c_int);

impl Win {
    /// `MPI_Win_create_dynamic` on `comm`, errors returned, then `MPI_Win_lock_all(NOCHECK)`.
    pub fn open(comm: Comm) -> MpiResult<Win> {
        let mut w = 0;
        // SAFETY: valid handles and out-pointer.
        let rc = unsafe { ffi::MPI_Win_create_dynamic(INFO_NULL, comm.0, &mut w) };
        check("MPI_Win_create_dynamic", rc)?;
        // SAFETY: `w` is the window just created.
        check("MPI_Win_set_errhandler", unsafe {
            ffi::MPI_Win_set_errhandler(w, ERRORS_RETURN)
        })?;
        // SAFETY: as above; nobody ever takes an exclusive lock on it, hence NOCHECK.
        check("MPI_Win_lock_all", unsafe {
            ffi::MPI_Win_lock_all(MODE_NOCHECK, w)
        })?;
        Ok(Win(w))
    }

    /// Ends the epoch and frees the window (collective).
    pub fn close(mut self) -> MpiResult {
        // SAFETY: the window is in the lock_all epoch opened by `open`.
        check("MPI_Win_unlock_all", unsafe {
            ffi::MPI_Win_unlock_all(self.0)
        })?;
        // SAFETY: freed once (self is consumed).
        check("MPI_Win_free", unsafe { ffi::MPI_Win_free(&mut self.0) })
    }

    /// Exposes `len` bytes at `base` to remote access.
    ///
    /// # Safety
    /// `base..base+len` is memory of the program that stays valid until [`Win::detach`], and does
    /// not overlap memory attached before.
    pub unsafe fn attach(self, base: usize, len: usize) -> MpiResult {
        let len = Aint::try_from(len).map_err(|_| MpiError {
            call: "MPI_Win_attach",
            code: 2,
        })?;
        // SAFETY: the caller's contract.
        check("MPI_Win_attach", unsafe {
            ffi::MPI_Win_attach(self.0, base as *mut c_void, len)
        })
    }

    /// Withdraws memory attached at `base`; no access to it may be in flight.
    pub fn detach(self, base: usize) -> MpiResult {
        // SAFETY: MPI only looks the address up among the attached regions.
        check("MPI_Win_detach", unsafe {
            ffi::MPI_Win_detach(self.0, base as *const c_void)
        })
    }

    /// Completes, at origin and target, every put and get this process issued.
    pub fn flush_all(self) -> MpiResult {
        // SAFETY: valid window inside its lock_all epoch.
        check("MPI_Win_flush_all", unsafe {
            ffi::MPI_Win_flush_all(self.0)
        })
    }

    /// Synchronises the public and private copies (a memory barrier in the unified model).
    pub fn sync(self) -> MpiResult {
        // SAFETY: valid window inside its lock_all epoch.
        check("MPI_Win_sync", unsafe { ffi::MPI_Win_sync(self.0) })
    }

    /// Starts writing `len` bytes from `src` to address `disp` of `target`.
    ///
    /// # Safety
    /// `src..src+len` stays readable and unchanged until the next [`Win::flush_all`]; the target
    /// range lies in memory attached by `target`.
    pub unsafe fn put(self, src: *const u8, len: usize, target: usize, disp: Aint) -> MpiResult {
        let n = count("MPI_Put", len)?;
        let t = count("MPI_Put", target)?;
        // SAFETY: the caller's contract.
        check("MPI_Put", unsafe {
            ffi::MPI_Put(src.cast(), n, BYTE, t, disp, n, BYTE, self.0)
        })
    }

    /// Starts reading `len` bytes at address `disp` of `target` into `dst`.
    ///
    /// # Safety
    /// `dst..dst+len` stays writable and unused until the next [`Win::flush_all`]; the source range
    /// lies in memory attached by `target`.
    pub unsafe fn get(self, dst: *mut u8, len: usize, target: usize, disp: Aint) -> MpiResult {
        let n = count("MPI_Get", len)?;
        let t = count("MPI_Get", target)?;
        // SAFETY: the caller's contract.
        check("MPI_Get", unsafe {
            ffi::MPI_Get(dst.cast(), n, BYTE, t, disp, n, BYTE, self.0)
        })
    }
}
