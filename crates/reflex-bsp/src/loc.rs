//! Source locations of BSPlib calls, BSPlib errors, and the one path that reports a fatal error.
//!
//! `bsp.h` turns every call into its `_at` variant with `__FILE__` and `__LINE__`, so a location
//! costs nothing until it is printed. Errors are reported once, where they are decided, as one
//! lowercase line `bsp: <call> at <file:line> on pid <p>: <what>` on stderr; then the whole job
//! stops with `MPI_Abort` (exit status 1), as `bsp_abort` does.

use crate::mpi::{self, Comm, MpiError};
use std::ffi::{c_char, c_int, CStr};
use std::fmt;
use std::time::{Duration, Instant};

/// The longest [`drain_stderr`] waits: a launcher that does not read must not hold the job.
const DRAIN_LIMIT: Duration = Duration::from_secs(2);

/// Where a BSPlib call was made: the caller's `__FILE__` and `__LINE__`, or unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Loc {
    file: Option<&'static CStr>,
    line: u32,
}

impl Loc {
    /// A location known only by name (tests, internal calls).
    pub const fn named(file: &'static CStr, line: u32) -> Loc {
        Loc {
            file: Some(file),
            line,
        }
    }

    /// The location passed by `bsp.h`'s macros.
    ///
    /// # Safety
    /// `file` is null or a NUL-terminated string that lives as long as the program (`__FILE__`).
    pub unsafe fn from_c(file: *const c_char, line: c_int) -> Loc {
        if file.is_null() {
            return Loc::default();
        }
        // SAFETY: the caller's contract: a static NUL-terminated string.
        let file = unsafe { CStr::from_ptr::<'static>(file) };
        Loc {
            file: Some(file),
            line: u32::try_from(line).unwrap_or(0),
        }
    }

    pub fn is_known(&self) -> bool {
        self.file.is_some()
    }

    pub fn file(&self) -> String {
        self.file
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    pub fn line(&self) -> u32 {
        self.line
    }
}

impl fmt::Display for Loc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.file {
            Some(file) => write!(f, "{}:{}", file.to_string_lossy(), self.line),
            None => f.write_str("an unknown location (call made without bsp.h's macros)"),
        }
    }
}

/// Why a BSPlib call failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BspError {
    /// A misuse of BSPlib or a resource problem, in words.
    Usage(String),
    /// An MPI call underneath failed.
    Mpi(MpiError),
    /// The debug checks found errors; process 0 has printed them already.
    Checks,
    /// An error every process detected alike at a sync (registrations or tag sizes that do not
    /// agree): process 0 reports it, and all processes stop together with exit status 1.
    Agreed(String),
}

impl From<MpiError> for BspError {
    fn from(e: MpiError) -> Self {
        BspError::Mpi(e)
    }
}

impl fmt::Display for BspError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BspError::Usage(s) => f.write_str(s),
            BspError::Mpi(e) => write!(f, "{e}"),
            BspError::Checks => f.write_str("the debug checks found errors"),
            BspError::Agreed(s) => f.write_str(s),
        }
    }
}

/// The result of a BSPlib operation.
pub type BspResult<T = ()> = Result<T, BspError>;

/// Shorthand for a usage error.
pub fn usage<T>(msg: impl Into<String>) -> BspResult<T> {
    Err(BspError::Usage(msg.into()))
}

/// Writes one line to stderr in a single write, so that lines of different processes
/// forwarded by the launcher do not interleave.
pub fn say(line: &str) {
    use std::io::Write;
    let mut text = String::with_capacity(line.len() + 1);
    text.push_str(line);
    text.push('\n');
    // Nothing sensible is left to do if stderr is gone.
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

/// Reports `err` (unless already reported) and stops the whole job with exit status 1.
pub fn fatal(call: &str, at: Loc, pid: Option<usize>, err: &BspError) -> ! {
    if *err != BspError::Checks {
        let who = pid.map(|p| format!(" on pid {p}")).unwrap_or_default();
        let at = if at.is_known() {
            format!(" at {at}")
        } else {
            String::new()
        };
        say(&format!("bsp: {call}{at}{who}: {err}"));
    }
    stop(1)
}

/// Ends the job with `code`: `MPI_Abort` when MPI runs, else a plain exit.
///
/// Before aborting it waits until the launcher has read what this process wrote to stderr: an
/// abort kills every process and the launcher's forwarders, and with MPICH's Hydra a message
/// still in the pipe was lost in about one run in three (tests/bsp, 2 ranks failing at once).
pub fn stop(code: c_int) -> ! {
    if mpi::is_running().unwrap_or(false) {
        drain_stderr();
        mpi::abort(Comm::WORLD.handle(), code)
    }
    std::process::exit(code)
}

/// Waits, at most [`DRAIN_LIMIT`], until a pipe on stderr holds no unread bytes.
fn drain_stderr() {
    // SAFETY: an all-zero `stat` is a valid value of this plain C struct.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fd 2 and a valid out-pointer; fstat only fills the struct.
    if unsafe { libc::fstat(2, &mut st) } != 0 || st.st_mode & libc::S_IFMT != libc::S_IFIFO {
        return;
    }
    let deadline = Instant::now() + DRAIN_LIMIT;
    loop {
        let mut unread: c_int = 0;
        // SAFETY: FIONREAD stores the number of unread bytes of the pipe in an int.
        let rc = unsafe { libc::ioctl(2, libc::FIONREAD, &mut unread) };
        if rc != 0 || unread == 0 || Instant::now() >= deadline {
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}
