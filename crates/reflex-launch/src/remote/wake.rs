//! Waking the event loop of `mpiexec -hosts` from another thread: a socket pair whose read end
//! is in the loop's poll set. A thread that finished work for the loop (connecting to the
//! daemons of a spawned job) writes a byte; the loop drains the bytes and looks at the work.
//! One unread byte is enough to wake it, so a full socket (nothing more to say) is fine.

use std::io::{self, Read, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::UnixStream;

/// The loop's end.
#[derive(Debug)]
pub(super) struct Wake {
    read: UnixStream,
    write: UnixStream,
}

/// A thread's end.
#[derive(Debug)]
pub(super) struct Waker(UnixStream);

impl Wake {
    pub(super) fn new() -> io::Result<Self> {
        let (read, write) = UnixStream::pair()?;
        read.set_nonblocking(true)?;
        write.set_nonblocking(true)?;
        Ok(Self { read, write })
    }

    /// An end for a thread (`None` if the descriptor cannot be duplicated).
    pub(super) fn sender(&self) -> Option<Waker> {
        self.write.try_clone().ok().map(Waker)
    }

    /// Reads whatever the threads wrote.
    pub(super) fn drain(&self) {
        let mut buf = [0u8; 64];
        while matches!((&self.read).read(&mut buf), Ok(n) if n > 0) {}
    }

    pub(super) fn fd(&self) -> BorrowedFd<'_> {
        self.read.as_fd()
    }
}

impl Waker {
    /// Wakes the loop.
    pub(super) fn wake(&self) {
        let _ = (&self.0).write(&[1]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

    fn readable(wake: &Wake) -> bool {
        let mut fds = [PollFd::new(wake.fd(), PollFlags::POLLIN)];
        poll(&mut fds, PollTimeout::ZERO).unwrap() == 1
    }

    #[test]
    fn a_thread_wakes_the_loop_until_it_drains() {
        let wake = Wake::new().unwrap();
        assert!(!readable(&wake));
        let waker = wake.sender().unwrap();
        std::thread::spawn(move || {
            for _ in 0..100_000 {
                waker.wake(); // far more than the socket holds: never blocks
            }
        })
        .join()
        .unwrap();
        assert!(readable(&wake));
        wake.drain();
        assert!(!readable(&wake));
    }
}
