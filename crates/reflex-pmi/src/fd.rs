//! Adoption of the inherited `PMI_FD` socket: the only `unsafe` code of this crate.
//!
//! Hydra and Slurm hand each rank one end of an AF_UNIX socketpair as a bare file descriptor
//! number in `PMI_FD` (launchers.md §2.1). Turning that number into an owned [`UnixStream`] is
//! `unsafe` because ownership of a raw fd cannot be proven to the compiler; this module checks
//! what can be checked (the fd is open, is a socket, and is adopted at most once per process)
//! and marks the descriptor close-on-exec so that programs the rank starts do not keep the PMI
//! connection open.

use std::os::fd::{FromRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once `PMI_FD` has been adopted: adopting it twice would close it twice.
static ADOPTED: AtomicBool = AtomicBool::new(false);

/// Takes ownership of the inherited PMI socket `fd`. Fails if `fd` is not an open socket or
/// was already adopted by this process.
pub(crate) fn adopt_pmi_fd(fd: RawFd) -> Result<UnixStream, String> {
    if fd < 0 {
        return Err("is negative".to_owned());
    }
    check_socket(fd)?;
    if ADOPTED.swap(true, Ordering::SeqCst) {
        return Err("was already adopted by this process (one pmi client per process)".to_owned());
    }
    // SAFETY: `fd` is open and a socket (checked above). The launcher created it for this
    // process's PMI client alone and nothing else in the process refers to it by contract of the
    // PMI_FD variable; the ADOPTED flag makes this the only owner within the process.
    let stream = unsafe { UnixStream::from_raw_fd(fd) };
    // SAFETY: fcntl on an fd we own; F_SETFD with FD_CLOEXEC reads no memory of ours.
    let rc = unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    if rc < 0 {
        return Err(format!(
            "cannot set close-on-exec: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(stream)
}

/// Checks that `fd` is open and refers to a socket.
fn check_socket(fd: RawFd) -> Result<(), String> {
    // SAFETY: `libc::stat` is plain old data; an all-zero value is a valid instance.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat writes into `st`, which is a valid, exclusively borrowed stat buffer; it
    // does not take ownership of `fd` and fails cleanly with EBADF if `fd` is not open.
    let rc = unsafe { libc::fstat(fd, &mut st) };
    if rc < 0 {
        return Err(format!(
            "is not an open file descriptor: {}",
            std::io::Error::last_os_error()
        ));
    }
    if st.st_mode & libc::S_IFMT != libc::S_IFSOCK {
        return Err("is not a socket".to_owned());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_what_is_not_an_open_socket() {
        assert!(adopt_pmi_fd(-1).unwrap_err().contains("negative"));
        let err = check_socket(1_000_000).unwrap_err();
        assert!(err.contains("not an open file descriptor"), "{err}");
        let file = std::fs::File::open("/dev/null").unwrap();
        let err = check_socket(std::os::fd::AsRawFd::as_raw_fd(&file)).unwrap_err();
        assert_eq!(err, "is not a socket");
    }
}
